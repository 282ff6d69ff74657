//! Compaction through a real daemon: autocompact in the same compile, the circuit
//! breaker, head truncation of a too-long summary request, the post-compact history, and
//! recovery from a reported prompt_too_long.

use crate::common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use common::Daemon;
use serde_json::{Value, json};

/// W = 20,000, O = 2,000 → E = 18,000; the override puts autocompact at 28 % of it,
/// 5,040 tokens.
fn small_session(d: &Daemon, cwd: &Path, settings: Value) -> String {
    let mut settings = settings;
    settings["autocompact_pct_override"] = json!(28);
    d.call(
        "session.create",
        json!({"cwd": cwd, "no_git": true, "start_date": "2026-11-29",
               "model": {"context_window": 20000, "max_output_tokens": 2000},
               "settings": settings}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}

const T0: &str = "2026-11-29T10:00:00Z";

/// Four turns of about 1,500 tokens each: over the 5,040 threshold.
fn grow(d: &Daemon, sid: &str, turns: usize, tag: &str) {
    for i in 0..turns {
        d.call(
            "transcript.append",
            json!({"session_id": sid, "records": [
                {"type": "user", "content": format!("{tag} question {i}: {}", "please look at this ".repeat(300)), "timestamp": T0},
                {"type": "assistant", "content": format!("{tag} answer {i}"), "timestamp": T0}
            ]}),
        );
    }
}

fn records(d: &Daemon, sid: &str) -> Vec<Value> {
    d.call("transcript.read", json!({"session_id": sid, "limit": 5000}))["records"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn autocompact_runs_in_the_same_compile_and_replays_byte_identically() {
    let mut d = Daemon::start();
    let sid = small_session(&d, d.dir.path(), json!({}));
    grow(&d, &sid, 4, "early");
    d.call("transcript.append", json!({"session_id": sid, "records": [{"type": "user", "content": "and now the next step", "timestamp": T0}]}));
    let c = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    let report = &c["metadata"]["compaction"];
    assert_eq!(report["trigger"], "auto", "{}", c["metadata"]);
    assert_eq!(report["summariser"], "embedded");
    assert!(report["pre_tokens"].as_u64().unwrap() >= 5_040);
    assert!(report["post_tokens"].as_u64().unwrap() < report["pre_tokens"].as_u64().unwrap());
    assert_eq!(c["metadata"]["context"]["above_autocompact"], false);
    // The new history: messages[0] holds the user context and the summary.
    let first = c["request"]["messages"][0].to_string();
    assert!(first.contains("continues an earlier conversation"));
    assert!(
        first.contains("and now the next step"),
        "user messages kept verbatim in the summary"
    );
    // Only the summary (with the user context) and nothing of the raw history.
    let msgs = c["request"]["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 1, "{}", c["request"]);
    // The raw transcript is whole; the boundary and the summary follow it.
    let recs = records(&d, &sid);
    let b = recs
        .iter()
        .position(|r| r["subtype"] == "compact_boundary")
        .unwrap();
    assert_eq!(recs[b]["data"]["trigger"], "auto");
    assert_eq!(recs[b + 1]["is_compact_summary"], true);
    assert!(
        recs[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("early question 0")
    );

    let body = d.compile_body_with(json!({"session_id": sid, "now": T0}));
    assert_eq!(
        d.compile_body_with(json!({"session_id": sid, "now": T0})),
        body
    );
    d.kill9();
    d.spawn();
    assert_eq!(
        d.compile_body_with(json!({"session_id": sid, "now": T0})),
        body
    );
}

#[test]
fn the_breaker_opens_after_three_failures_and_a_manual_compact_resets_it() {
    let d = Daemon::start();
    // Nothing listens on port 1: every summary attempt fails fast.
    let broken = json!({"summariser": {"kind": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m", "max_retries": 0, "timeout_secs": 5}});
    let sid = small_session(&d, d.dir.path(), broken);
    grow(&d, &sid, 4, "a");
    for attempt in 1..=3 {
        let c = d.call("context.compile", json!({"session_id": sid, "now": T0}));
        let why = c["metadata"]["autocompact_skipped"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            why.starts_with("autocompact failed"),
            "attempt {attempt}: {why}"
        );
        assert!(c["metadata"].get("compaction").is_none());
    }
    let c = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    assert!(
        c["metadata"]["autocompact_skipped"]
            .as_str()
            .unwrap()
            .contains("circuit breaker")
    );

    d.call(
        "session.update",
        json!({"session_id": sid, "settings": {"summariser": {"kind": "embedded"}}}),
    );
    let c = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    assert!(
        c["metadata"]["autocompact_skipped"]
            .as_str()
            .unwrap()
            .contains("circuit breaker"),
        "still open"
    );
    let report = d.call("context.compact", json!({"session_id": sid}));
    assert_eq!(report["trigger"], "manual");
    // Closed again: a new overflow compacts automatically.
    grow(&d, &sid, 4, "b");
    let c = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    assert_eq!(c["metadata"]["compaction"]["trigger"], "auto");
}

/// A client that runs "the model" for the daemon: answers `summary_requested` events
/// with the scripted replies, in order.
async fn scripted_client(d: &Daemon, sid: &str, script: Vec<Value>) -> Arc<Mutex<Vec<Value>>> {
    let client = d.client().await;
    let mut sub = client.subscribe(sid).await.unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    tokio::spawn(async move {
        let mut script = script.into_iter();
        while let Some(Ok(ev)) = sub.next().await {
            if let ctxd_protocol::SessionEvent::SummaryRequested {
                request_id,
                request,
                ..
            } = ev
            {
                seen2.lock().unwrap().push(request);
                let mut reply = script
                    .next()
                    .unwrap_or(json!({"text": "<summary>fallback</summary>"}));
                reply["request_id"] = json!(request_id);
                let _: Value = client.call("context.provide_summary", reply).await.unwrap();
            }
        }
    });
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_too_long_summary_request_drops_the_oldest_rounds_then_succeeds() {
    let d = Daemon::start();
    let sid = small_session(
        &d,
        d.dir.path(),
        json!({"summariser": {"kind": "client", "timeout_secs": 20}}),
    );
    grow(&d, &sid, 6, "r");
    let seen = scripted_client(
        &d,
        &sid,
        vec![
            json!({"prompt_too_long": true, "token_gap": 100}),
            json!({"prompt_too_long": true}),
            json!({"text": "<analysis>thinking it over</analysis>\n<summary>1. The user asked for six things.</summary>"}),
        ],
    )
    .await;
    let d2 = d.socket.clone();
    let sid2 = sid.clone();
    let report: Value = tokio::task::spawn_blocking(move || {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "context.compact", "params": {"session_id": sid2}}).to_string();
        let (_, text) = common::raw_http(&d2, &body);
        serde_json::from_str::<Value>(&text).unwrap()["result"].clone()
    })
    .await
    .unwrap();
    assert_eq!(report["summariser"], "client");
    assert!(
        report["head_truncated_rounds"].as_u64().unwrap() >= 2,
        "{report}"
    );
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 3);
    let n = |r: &Value| r["messages"].as_array().unwrap().len();
    assert!(n(&requests[1]) < n(&requests[0]) && n(&requests[2]) < n(&requests[1]));
    assert!(
        requests[0].get("tools").is_none(),
        "the summary request offers no tools"
    );
    let recs = records(&d, &sid);
    let summary = recs
        .iter()
        .find(|r| r["is_compact_summary"] == true)
        .unwrap();
    let text = summary["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("The user asked for six things."));
    assert!(
        !text.contains("thinking it over"),
        "the analysis is stripped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_truncations_are_the_limit() {
    let d = Daemon::start();
    let sid = small_session(
        &d,
        d.dir.path(),
        json!({"summariser": {"kind": "client", "timeout_secs": 20}}),
    );
    grow(&d, &sid, 8, "r");
    let always_too_long = (0..10).map(|_| json!({"prompt_too_long": true})).collect();
    let seen = scripted_client(&d, &sid, always_too_long).await;
    let socket = d.socket.clone();
    let sid2 = sid.clone();
    let err: Value = tokio::task::spawn_blocking(move || {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "context.compact", "params": {"session_id": sid2}}).to_string();
        let (_, text) = common::raw_http(&socket, &body);
        serde_json::from_str::<Value>(&text).unwrap()["error"].clone()
    })
    .await
    .unwrap();
    assert_eq!(err["code"], ctxd_protocol::COMPACTION_FAILED);
    assert_eq!(
        seen.lock().unwrap().len(),
        4,
        "one try and three truncated retries"
    );
    assert!(
        records(&d, &sid)
            .iter()
            .all(|r| r["subtype"] != "compact_boundary"),
        "nothing written"
    );
}

#[test]
fn post_compact_history_restores_recent_files_within_caps() {
    let d = Daemon::start();
    let work = d.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let big = work.join("big.rs");
    std::fs::write(&big, "fn line() {}\n".repeat(20_000)).unwrap();
    let small = work.join("small.rs");
    std::fs::write(&small, "fn small() {}\n").unwrap();
    // A full-size window: the restored files alone would cross a small one's threshold.
    let sid = d.call(
        "session.create",
        json!({"cwd": work, "no_git": true, "start_date": "2026-11-29"}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "user", "content": "read both", "timestamp": T0},
            {"type": "assistant", "message_id": "m1", "timestamp": T0, "content": [
                {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": big}},
                {"type": "tool_use", "id": "r2", "name": "Read", "input": {"file_path": small}}]},
            {"type": "user", "timestamp": T0, "content": [
                {"type": "tool_result", "tool_use_id": "r1", "content": "(big)"},
                {"type": "tool_result", "tool_use_id": "r2", "content": "(small)"}]}
        ]}),
    );
    let report = d.call("context.compact", json!({"session_id": sid}));
    assert_eq!(
        report["restored_files"],
        json!([small.display().to_string(), big.display().to_string()])
    );
    let recs = records(&d, &sid);
    let b = recs
        .iter()
        .position(|r| r["subtype"] == "compact_boundary")
        .unwrap();
    let tail: Vec<&Value> = recs[b..].iter().collect();
    assert_eq!(tail[1]["is_compact_summary"], true);
    assert_eq!(tail[2]["attachment"]["type"], "compact_file_reference");
    assert_eq!(tail[3]["attachment"]["type"], "compact_file_reference");
    let big_text = tail[3]["attachment"]["content"].as_str().unwrap();
    assert!(big_text.chars().count() <= 20_500, "{}", big_text.len());
    assert!(big_text.contains("more lines not shown"));
    // The projection starts at the boundary. Compiled on the daemon's clock, like the
    // compaction itself: a fixed `now` on another day would add a date_change record.
    let c = d.call("context.compile", json!({"session_id": sid}));
    assert_eq!(c["metadata"]["projected_records"], 4);
    assert!(!c["request"].to_string().contains("read both\""));
}

#[test]
fn a_reported_prompt_too_long_compacts_and_returns_the_next_request() {
    let d = Daemon::start();
    let sid = small_session(&d, d.dir.path(), json!({"autocompact": false}));
    grow(&d, &sid, 3, "x");
    let c = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    assert!(c["metadata"].get("compaction").is_none());
    let r = d.call(
        "context.report_error",
        json!({"session_id": sid, "kind": "prompt_too_long", "token_gap": 1200}),
    );
    assert_eq!(r["metadata"]["compaction"]["trigger"], "reactive");
    assert!(
        r["request"]["messages"][0]
            .to_string()
            .contains("continues an earlier conversation")
    );
    let err = d
        .try_call(
            "context.report_error",
            json!({"session_id": sid, "kind": "nonsense"}),
        )
        .unwrap_err();
    assert_eq!(err["data"]["field"], "kind");
}

/// A session whose system prompt takes `prompt_tokens` of the small window (threshold
/// 5,040, target 2,520).
fn session_with_prompt(d: &Daemon, prompt_tokens: usize) -> String {
    d.call(
        "session.create",
        json!({"cwd": d.dir.path(), "no_git": true, "start_date": "2026-11-29",
               "model": {"context_window": 20000, "max_output_tokens": 2000},
               "settings": {"memory": {"extractor": "off"}, "autocompact_pct_override": 28},
               "system": {"static": [{"name": "rules", "text": "be careful. ".repeat(prompt_tokens * 3 / 12)}]}}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn boundaries(d: &Daemon, sid: &str) -> usize {
    records(d, sid)
        .iter()
        .filter(|r| r["subtype"] == "compact_boundary")
        .count()
}

#[test]
fn a_compaction_that_cannot_get_below_the_threshold_is_refused_and_not_retried_without_new_messages()
 {
    let d = Daemon::start();
    // The system prompt alone (~6,000 tokens) is above the threshold.
    let sid = session_with_prompt(&d, 6_000);
    grow(&d, &sid, 1, "early");
    let c = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    let m = &c["metadata"];
    assert!(m.get("compaction").is_none(), "{m}");
    let skipped = m["autocompact_skipped"].as_str().unwrap();
    assert!(skipped.contains("cannot make room"), "{skipped}");
    let shortfall = &m["compaction_shortfall"];
    assert_eq!(shortfall["target_tokens"], 2_520);
    assert!(
        shortfall["best_tokens"].as_u64().unwrap() >= 5_040,
        "{shortfall}"
    );
    assert_eq!(boundaries(&d, &sid), 0, "nothing written");

    // Nothing new: no second attempt, the metadata still says why.
    let again = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    let skipped = again["metadata"]["autocompact_skipped"].as_str().unwrap();
    assert!(skipped.contains("waits for new messages"), "{skipped}");
    assert_eq!(again["metadata"]["compaction_shortfall"], *shortfall);
    assert_eq!(again["request"], c["request"]);

    // A new message: one more attempt (the breaker counts it).
    grow(&d, &sid, 1, "later");
    let third = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    let skipped = third["metadata"]["autocompact_skipped"].as_str().unwrap();
    assert!(
        skipped.starts_with("autocompact failed") && skipped.contains("cannot make room"),
        "{skipped}"
    );
    assert_eq!(boundaries(&d, &sid), 0);
}

#[test]
fn a_compaction_above_half_the_threshold_says_so() {
    let d = Daemon::start();
    // The system prompt (~3,000 tokens) alone is above the target of 2,520.
    let sid = session_with_prompt(&d, 3_000);
    grow(&d, &sid, 2, "early");
    let c = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    let m = &c["metadata"];
    let report = &m["compaction"];
    assert_eq!(report["kind"], "full", "{m}");
    assert_eq!(report["target_tokens"], 2_520);
    let post = report["post_tokens"].as_u64().unwrap();
    assert!((2_520..5_040).contains(&post), "{report}");
    assert_eq!(m["compaction_shortfall"]["best_tokens"], post);
    assert_eq!(
        m["context"]["effective_tokens"], post,
        "the check used the compile's estimate"
    );
    // Below the threshold: the next compile does not compact again.
    let next = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    assert!(next["metadata"].get("compaction").is_none());
    assert!(next["metadata"].get("compaction_shortfall").is_none());
    assert_eq!(boundaries(&d, &sid), 1);
}

/// Input queued mid-turn and delivered as a `queued_command` attachment is a message of
/// the user's: the embedded summary lists it under "All User Messages", so the request
/// after `context.compact` still carries it.
#[test]
fn a_delivered_queued_message_is_among_the_summarys_user_messages() {
    let d = Daemon::start();
    let sid = small_session(&d, d.dir.path(), json!({}));
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "user", "content": "fix the parser", "timestamp": T0},
            {"type": "assistant", "content": [{"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "/nowhere"}}], "timestamp": T0},
            {"type": "user", "content": [{"type": "tool_result", "tool_use_id": "r1", "content": "x"}], "timestamp": T0},
        ]}),
    );
    d.call(
        "transcript.queue",
        json!({"session_id": sid, "text": "also update the changelog"}),
    );
    let delivered = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    assert!(
        delivered["request"]
            .to_string()
            .contains("also update the changelog")
    );
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "assistant", "content": "fixed; changelog next", "timestamp": T0}]}),
    );
    d.call("context.compact", json!({"session_id": sid}));
    let next = d.call("context.compile", json!({"session_id": sid, "now": T0}));
    let body = next["request"]["messages"].to_string();
    let users = body
        .split("All User Messages")
        .nth(1)
        .expect("a summary with its user messages");
    assert!(users.contains("fix the parser"), "{body}");
    assert!(users.contains("also update the changelog"), "{body}");
}
