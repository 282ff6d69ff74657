//! Session memory and context collapse through a real daemon.

use crate::common;

use std::time::Duration;

use common::{Daemon, NewSession};
use serde_json::{Value, json};

const T0: &str = "2026-11-29T10:00:00Z";

fn session(d: &Daemon, model: Value, settings: Value) -> String {
    NewSession::at(d.dir.path())
        .start_date("2026-11-29")
        .model(model)
        .settings(settings)
        .create(d)
}

fn round(d: &Daemon, sid: &str, i: usize, chars: usize) {
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "user", "content": format!("round {i}: {}", "w".repeat(chars)), "timestamp": T0},
            {"type": "assistant", "content": format!("reply {i}"), "timestamp": T0}
        ]}),
    );
}

fn collapses(d: &Daemon, sid: &str) -> Vec<Value> {
    d.call("context.collapse_list", json!({"session_id": sid}))["collapses"]
        .as_array()
        .unwrap()
        .clone()
}

/// E = 80,000: stage at 64,000, commit at 72,000, block at 76,000; autocompact's own
/// threshold (67,000) lies between, so only collapse keeps it from firing.
fn collapse_session(d: &Daemon) -> String {
    session(
        d,
        json!({"context_window": 100000, "max_output_tokens": 20000}),
        json!({"collapse": {"enabled": true}}),
    )
}

#[test]
fn collapse_folds_old_rounds_in_the_view_only_and_survives_restart_and_undo() {
    let mut d = Daemon::start();
    let sid = collapse_session(&d);
    let mut committed = None;
    for i in 0..40 {
        round(&d, &sid, i, 8_000);
        let c = d.call("context.compile", json!({"session_id": sid, "now": T0}));
        assert!(
            c["metadata"].get("compaction").is_none(),
            "autocompact fired at round {i} while collapse was active: {}",
            c["metadata"]
        );
        if collapses(&d, &sid)
            .iter()
            .any(|c| c["status"] == "committed")
        {
            committed = Some(c);
            break;
        }
    }
    let c = committed.expect("a collapse was committed");
    let req = c["request"].to_string();
    assert!(
        req.contains("<collapsed id="),
        "the view shows the collapse"
    );
    let whole = format!("round 0: {}", "w".repeat(8_000));
    assert!(!req.contains(&whole), "the folded span is not sent");
    assert!(
        req.contains("round 0"),
        "the summary names the folded messages"
    );
    // The transcript keeps everything.
    let recs = d.call("transcript.read", json!({"session_id": sid, "limit": 5000}));
    assert!(recs.to_string().contains(&whole));

    let body = d.compile_body_with(json!({"session_id": sid, "now": T0}));
    d.kill9();
    d.spawn();
    assert_eq!(
        d.compile_body_with(json!({"session_id": sid, "now": T0})),
        body
    );

    let id = collapses(&d, &sid)
        .iter()
        .find(|c| c["status"] == "committed")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    d.call(
        "context.collapse_undo",
        json!({"session_id": sid, "collapse_id": id}),
    );
    let after = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    assert!(
        after["request"].to_string().contains(&whole),
        "undo brings the span back"
    );
    let err = d
        .try_call(
            "context.collapse_undo",
            json!({"session_id": sid, "collapse_id": "nope"}),
        )
        .unwrap_err();
    assert_eq!(err["data"]["field"], "collapse_id");
}

/// At a 64,000 window with 8,000 of output (E = 56,000) collapse stages at 44,800, below
/// the autocompact threshold (49,000): it stages before any compaction. A setting that
/// puts the staging point at or above the threshold is refused with the reason.
#[test]
fn collapse_stages_before_autocompact_at_a_64k_window() {
    let d = Daemon::start();
    let small = json!({"context_window": 64000, "max_output_tokens": 8000});
    let sid = session(&d, small.clone(), json!({"collapse": {"enabled": true}}));
    let mut staged = false;
    for i in 0..40 {
        round(&d, &sid, i, 8_000);
        let c = d.call("context.compile", json!({"session_id": sid, "now": T0}));
        assert!(
            c["metadata"].get("compaction").is_none(),
            "autocompact fired at round {i} before collapse staged anything: {}",
            c["metadata"]["context"]
        );
        if !collapses(&d, &sid).is_empty() {
            staged = true;
            break;
        }
    }
    assert!(staged, "collapse staged a span");
    let err = d
        .try_call(
            "session.create",
            json!({"cwd": d.dir.path(), "no_git": true, "model": small,
                   "settings": {"collapse": {"enabled": true}, "autocompact_pct_override": 75}}),
        )
        .unwrap_err();
    assert_eq!(
        err["data"]["field"], "settings.collapse.stage_at_pct",
        "{err}"
    );
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("autocompact threshold"),
        "{err}"
    );
}

/// Like a real agent: each answer carries the provider's usage (here the estimate the
/// compile gave), and the next user message follows; compiles sit between them.
#[test]
fn collapse_undo_leaves_the_accounting_as_a_restart_would_see_it() {
    let mut d = Daemon::start();
    let sid = collapse_session(&d);
    let mut last = None;
    for i in 0..40 {
        d.call(
            "transcript.append",
            json!({"session_id": sid, "records": [
                {"type": "user", "content": format!("round {i}: {}", "w".repeat(8_000)), "timestamp": T0}
            ]}),
        );
        let c = d.call("context.compile", json!({"session_id": sid, "now": T0}));
        let used = c["metadata"]["tokens"]["estimated_tokens"]
            .as_u64()
            .unwrap();
        if collapses(&d, &sid)
            .iter()
            .any(|c| c["status"] == "committed")
        {
            last = Some(c);
            break;
        }
        d.call(
            "transcript.append",
            json!({"session_id": sid, "records": [
                {"type": "assistant", "content": format!("reply {i}"), "timestamp": T0,
                 "usage": {"input_tokens": used, "output_tokens": 10}}
            ]}),
        );
    }
    let c = last.expect("a collapse was committed");
    let m = &c["metadata"];
    assert!(
        m["context"]["effective_tokens"].as_u64() < m["tokens"]["estimated_tokens"].as_u64(),
        "the commit after the anchor is subtracted: {m}"
    );
    for c in collapses(&d, &sid) {
        if c["status"] == "committed" {
            d.call(
                "context.collapse_undo",
                json!({"session_id": sid, "collapse_id": c["id"]}),
            );
        }
    }
    // Collapse and autocompact off for the comparison, so neither compile changes the
    // history.
    d.call(
        "session.update",
        json!({"session_id": sid, "settings": {"collapse": {"enabled": false}, "autocompact": false}}),
    );
    let before = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    assert_eq!(
        before["metadata"]["context"]["effective_tokens"],
        before["metadata"]["tokens"]["estimated_tokens"],
        "the undone collapse saves nothing"
    );
    d.kill9();
    d.spawn();
    let after = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    // All but the cache prediction, which compares with the request before it, and the
    // time each attachment source took.
    let without_cache = |c: &Value| {
        let mut m = c["metadata"].clone();
        m.as_object_mut().unwrap().remove("cache");
        for s in m["attachment_sources"].as_array_mut().unwrap() {
            s.as_object_mut().unwrap().remove("micros");
        }
        m
    };
    assert_eq!(without_cache(&before), without_cache(&after));
    assert_eq!(before["request"], after["request"]);
}

/// Rounds of 8,000 characters, each answered with the compile's own estimate as usage,
/// until a collapse commits; the compile that committed it.
fn rounds_until_a_commit(d: &Daemon, sid: &str) -> Value {
    for i in 0..40 {
        d.call(
            "transcript.append",
            json!({"session_id": sid, "records": [
                {"type": "user", "content": format!("round {i}: {}", "w".repeat(8_000)), "timestamp": T0}
            ]}),
        );
        let c = d.call("context.compile", json!({"session_id": sid, "now": T0}));
        if collapses(d, sid).iter().any(|c| c["status"] == "committed") {
            return c;
        }
        let used = c["metadata"]["context"]["effective_tokens"]
            .as_u64()
            .unwrap();
        d.call(
            "transcript.append",
            json!({"session_id": sid, "records": [
                {"type": "assistant", "content": format!("reply {i}"), "timestamp": T0,
                 "usage": {"input_tokens": used, "output_tokens": 10}}
            ]}),
        );
    }
    panic!("no collapse was committed");
}

/// A usage anchor that came after a commit counted the view without the collapsed
/// span. When the collapse is undone the span is back in the request, so the estimate
/// counts it again (also after a restart) until a newer anchor counts it itself.
#[test]
fn an_undone_collapse_is_counted_again_until_a_newer_anchor_counts_it() {
    let mut d = Daemon::start();
    let sid = collapse_session(&d);
    let committed = rounds_until_a_commit(&d, &sid);
    // The answer to the collapsed request: its usage is the collapsed view's size.
    let used = committed["metadata"]["context"]["effective_tokens"]
        .as_u64()
        .unwrap();
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "assistant", "content": "noted", "timestamp": T0,
             "usage": {"input_tokens": used, "output_tokens": 10}}
        ]}),
    );
    // Collapse and autocompact off, so no compile below changes the history.
    d.call(
        "session.update",
        json!({"session_id": sid, "settings": {"collapse": {"enabled": false}, "autocompact": false}}),
    );
    let collapsed = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    let collapsed_tokens = collapsed["metadata"]["context"]["effective_tokens"]
        .as_u64()
        .unwrap();
    let collapsed_messages = collapsed["metadata"]["message_count"].as_u64().unwrap();
    for c in collapses(&d, &sid) {
        if c["status"] == "committed" {
            d.call(
                "context.collapse_undo",
                json!({"session_id": sid, "collapse_id": c["id"]}),
            );
        }
    }
    let undone = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    let m = &undone["metadata"];
    assert!(
        m["message_count"].as_u64().unwrap() > collapsed_messages,
        "the span is back: {m}"
    );
    let undone_tokens = m["context"]["effective_tokens"].as_u64().unwrap();
    assert!(
        undone_tokens > collapsed_tokens + 2_000,
        "the span is counted again: {collapsed_tokens} -> {undone_tokens}"
    );
    assert!(
        undone_tokens > m["tokens"]["estimated_tokens"].as_u64().unwrap(),
        "{m}"
    );
    d.kill9();
    d.spawn();
    let restarted = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    assert_eq!(
        restarted["metadata"]["context"],
        undone["metadata"]["context"]
    );
    // A newer anchor counts the whole view itself: nothing is added any more.
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "assistant", "content": "again", "timestamp": T0,
             "usage": {"input_tokens": undone_tokens, "output_tokens": 10}}
        ]}),
    );
    let later = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    assert_eq!(
        later["metadata"]["context"]["effective_tokens"],
        later["metadata"]["tokens"]["estimated_tokens"]
    );
}

/// Rounds of about 2,700 tokens, each compiled, until a collapse is staged.
fn stage_a_collapse(d: &Daemon, sid: &str) {
    for i in 0..40 {
        round(d, sid, i, 8_000);
        d.call("context.compile", json!({"session_id": sid, "now": T0}));
        if collapses(d, sid).iter().any(|c| c["status"] == "staged") {
            return;
        }
    }
}

#[test]
fn a_reported_overflow_drains_staged_collapses_before_compacting() {
    let d = Daemon::start();
    let sid = collapse_session(&d);
    stage_a_collapse(&d, &sid);
    let list = collapses(&d, &sid);
    assert!(list.iter().any(|c| c["status"] == "staged"), "{list:?}");
    assert!(list.iter().all(|c| c["status"] != "committed"));
    let r = d.call(
        "context.report_error",
        json!({"session_id": sid, "kind": "prompt_too_long"}),
    );
    assert!(
        r["metadata"].get("compaction").is_none(),
        "drained instead of compacting"
    );
    assert!(
        collapses(&d, &sid)
            .iter()
            .all(|c| c["status"] == "committed")
    );
    assert!(r["request"].to_string().contains("<collapsed id="));
}

fn tool_turn(d: &Daemon, sid: &str, i: usize, chars: usize) {
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "user", "content": format!("task {i}: {}", "q".repeat(chars)), "timestamp": T0},
            {"type": "assistant", "message_id": format!("m{i}"), "timestamp": T0, "content": [{"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {"command": format!("make step{i}")}}]},
            {"type": "user", "timestamp": T0, "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "ok"}]},
            {"type": "assistant", "message_id": format!("n{i}"), "timestamp": T0, "content": format!("step {i} done")}
        ]}),
    );
}

async fn wait_for_version(d: &Daemon, sid: &str, at_least: u64) -> Value {
    for _ in 0..200 {
        let m = d.call("memory.get", json!({"session_id": sid}));
        if m["version"].as_u64().unwrap() >= at_least && m["extracting"] == false {
            return m;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no memory version {at_least}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_extraction_follows_the_gates_and_feeds_session_memory_compact() {
    let d = Daemon::start();
    // W = 60,000, O = 8,000 → E = 52,000, autocompact at 39,000.
    let sid = session(
        &d,
        json!({"context_window": 60000, "max_output_tokens": 8000}),
        json!({}),
    );
    tool_turn(&d, &sid, 0, 4_000);
    // An extraction is claimed within the append that makes it due, before the append
    // is answered: nothing running now means none was started.
    let m = d.call("memory.get", json!({"session_id": sid}));
    assert_eq!(
        (m["version"].as_u64(), m["extracting"].as_bool()),
        (Some(0), Some(false)),
        "below 10k tokens: no extraction"
    );
    for i in 1..8 {
        tool_turn(&d, &sid, i, 6_000);
    }
    let m = wait_for_version(&d, &sid, 1).await;
    assert!(
        m["document"].as_str().unwrap().contains("make step"),
        "{}",
        m["document"]
    );
    let path = m["path"].as_str().unwrap().to_string();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        m["document"].as_str().unwrap()
    );
    // Grow past the threshold: the memory becomes the summary, the tail stays verbatim.
    for i in 8..30 {
        tool_turn(&d, &sid, i, 6_000);
    }
    let _ = wait_for_version(&d, &sid, 2).await;
    // Notes that cover the history up to its end (the first call waits for a running
    // extraction, the second runs one over what came after): the kept tail is then the
    // scaled minimum, which fits half the threshold. Notes that stop early leave an
    // uncovered tail that may not (then the full compact runs: see the compaction tests).
    d.call("memory.extract", json!({"session_id": sid}));
    d.call("memory.extract", json!({"session_id": sid}));
    let c = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    let report = &c["metadata"]["compaction"];
    assert_eq!(report["trigger"], "auto", "{}", c["metadata"]);
    assert_eq!(report["kind"], "session_memory", "{report}");
    assert!(report["kept_records"].as_u64().unwrap() > 0);
    assert!(
        c["request"]
            .to_string()
            .contains("most recent messages follow verbatim")
    );
}

#[test]
fn memory_writes_are_optimistic() {
    let d = Daemon::start();
    let sid = session(&d, json!({}), json!({"memory": {"extractor": "external"}}));
    let m = d.call("memory.get", json!({"session_id": sid}));
    assert_eq!(m["version"], 0);
    let v = d.call("memory.update", json!({"session_id": sid, "document": "# Session Title\nmine\n", "expected_version": 0, "writer": "worker"}));
    assert_eq!(v["version"], 1);
    let err = d
        .try_call(
            "memory.update",
            json!({"session_id": sid, "document": "stale", "expected_version": 0}),
        )
        .unwrap_err();
    assert_eq!(err["code"], ctxd_protocol::CONFLICT);
    assert!(
        d.call("memory.get", json!({"session_id": sid}))["document"]
            .as_str()
            .unwrap()
            .contains("mine")
    );
}

/// A "model server" that accepts connections, reads the request and never answers.
fn silent_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let count = std::sync::Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            c.fetch_add(1, Ordering::SeqCst);
            held.push(stream); // keep it open, say nothing
        }
    });
    (url, count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_extractor_never_blocks_appends_and_runs_once_at_a_time() {
    let d = Daemon::start();
    let (url, connections) = silent_server();
    let sid = session(
        &d,
        json!({"context_window": 200000, "max_output_tokens": 8000}),
        json!({"summariser": {"kind": "openai", "base_url": url, "model": "m", "max_retries": 0, "timeout_secs": 50}}),
    );
    for i in 0..6 {
        tool_turn(&d, &sid, i, 6_000);
    }
    // The extraction is hanging on the silent server now; appends go on regardless.
    for _ in 0..100 {
        if connections.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 1);
    for i in 6..16 {
        let t = std::time::Instant::now();
        tool_turn(&d, &sid, i, 6_000);
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "an append waited for the extractor"
        );
    }
    let c = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    assert!(c["request"].is_object());
    let m = d.call("memory.get", json!({"session_id": sid}));
    assert_eq!(m["extracting"], true);
    assert_eq!(m["version"], 0);
    // Extractions are claimed within the append that makes them due, and the hanging
    // one holds the session's slot: no append above could start a second one.
    assert_eq!(
        connections.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "a second extraction started"
    );
}

/// A reported overflow whose only staged collapse covers records a compaction already
/// took out of the view frees nothing by committing it: the recovery compacts instead of
/// returning the same request.
#[test]
fn a_reported_overflow_never_returns_the_same_request() {
    let d = Daemon::start();
    let sid = collapse_session(&d);
    stage_a_collapse(&d, &sid);
    assert!(collapses(&d, &sid).iter().any(|c| c["status"] == "staged"));
    d.call("context.compact", json!({"session_id": sid}));
    round(&d, &sid, 100, 8_000);
    let before = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    let r = d.call(
        "context.report_error",
        json!({"session_id": sid, "kind": "prompt_too_long"}),
    );
    assert_ne!(
        r["request"], before["request"],
        "the recovery returned the request the provider refused"
    );
    assert!(
        r["metadata"]["context"]["effective_tokens"].as_u64()
            < before["metadata"]["context"]["effective_tokens"].as_u64(),
        "it made room"
    );
}
