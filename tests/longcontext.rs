//! Token accounting, thresholds, microcompact and snip through a real daemon.

use crate::common;

use std::time::Duration;

use common::Daemon;
use serde_json::{Value, json};

fn session(d: &Daemon, extra: Value) -> String {
    let mut params = json!({"cwd": "/tmp/p", "no_git": true, "start_date": "2026-11-29"});
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            p.insert(k.clone(), v.clone());
        }
    }
    d.call("session.create", params)["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn append(d: &Daemon, sid: &str, records: Value) -> Value {
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": records}),
    )
}

/// One tool turn at `ts`: an assistant tool_use and its result.
fn tool_turn(i: usize, tool: &str, ts: &str) -> Value {
    json!([
        {"type": "assistant", "message_id": format!("m{i}"), "timestamp": ts,
         "content": [{"type": "tool_use", "id": format!("t{i}"), "name": tool, "input": {"i": i}}]},
        {"type": "user", "timestamp": ts,
         "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": format!("output {i} {}", "z".repeat(200))}]}
    ])
}

fn results(req: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in req["messages"].as_array().unwrap() {
        for b in m["content"].as_array().unwrap() {
            if b["type"] == "tool_result" {
                out.push((
                    b["tool_use_id"].as_str().unwrap().to_string(),
                    b["content"].to_string(),
                ));
            }
        }
    }
    out
}

/// Forks `sid`, then kills the daemon (-9) and starts it again: the session and its fork
/// compile at `now` to `body` (the fork with its own id in place of `sid`).
fn restart_and_fork_compile_alike(d: &mut Daemon, sid: &str, now: &str, body: &str) {
    let fork = d.call("session.fork", json!({"session_id": sid}))["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    d.kill9();
    d.spawn();
    assert_eq!(
        d.compile_body_with(json!({"session_id": sid, "now": now})),
        body
    );
    assert_eq!(
        d.compile_body_with(json!({"session_id": fork, "now": now})),
        body.replace(sid, &fork)
    );
}

#[test]
fn thresholds_in_metadata() {
    let d = Daemon::start();
    for (o, expected) in [(8_000, 179_000), (32_000, 167_000)] {
        let sid = session(
            &d,
            json!({"model": {"context_window": 200000, "max_output_tokens": o}}),
        );
        append(&d, &sid, json!([{"type": "user", "content": "hi"}]));
        let c = d.call("context.compile", json!({"session_id": sid}));
        assert_eq!(c["metadata"]["context"]["autocompact_threshold"], expected);
        assert_eq!(
            c["metadata"]["context"]["warning_threshold"],
            expected - 20_000
        );
        assert_eq!(c["metadata"]["context"]["above_autocompact"], false);
        assert_eq!(c["metadata"]["context"]["percent_left"], 100);
    }
    let sid = session(&d, json!({"settings": {"autocompact_pct_override": 50}}));
    append(&d, &sid, json!([{"type": "user", "content": "hi"}]));
    let c = d.call("context.compile", json!({"session_id": sid}));
    assert_eq!(c["metadata"]["context"]["autocompact_threshold"], 90_000);
}

/// A small window keeps its thresholds in order and in proportion (docs/long-context.md's
/// table): at 20,000 with 8,000 of output and about 5,000 tokens of tools, the first
/// compile is neither near the warning nor the autocompact threshold.
#[test]
fn a_small_windows_first_compile_is_not_already_full() {
    let d = Daemon::start();
    let tools: Vec<Value> = (0..5)
        .map(|i| {
            json!({"name": format!("tool_{i}"), "description": "d".repeat(3_000),
                   "input_schema": {"type": "object", "properties": {}}})
        })
        .collect();
    let sid = session(
        &d,
        json!({"model": {"context_window": 20000, "max_output_tokens": 8000}, "tools": tools}),
    );
    append(&d, &sid, json!([{"type": "user", "content": "hi"}]));
    let c = d.call("context.compile", json!({"session_id": sid}));
    let ctx = &c["metadata"]["context"];
    assert_eq!(ctx["autocompact_threshold"], 10_500, "{ctx}");
    assert_eq!(ctx["warning_threshold"], 8_400, "{ctx}");
    assert_eq!(ctx["blocking_limit"], 11_700, "{ctx}");
    assert_eq!(ctx["is_above_warning"], false, "{ctx}");
    assert_eq!(ctx["is_above_error"], false, "{ctx}");
    assert!(ctx["percent_left"].as_u64().unwrap() > 20, "{ctx}");
}

/// A usage the client marks `foreign_usage` (another agent's history) anchors nothing;
/// the same usage appended as a response to ctxd's own request does.
#[test]
fn a_foreign_usage_appended_does_not_anchor_the_estimate() {
    let d = Daemon::start();
    for (foreign, anchor) in [(true, 0), (false, 50_010)] {
        let sid = session(&d, json!({}));
        append(
            &d,
            &sid,
            json!([
                {"type": "user", "content": "hi"},
                {"type": "assistant", "content": "ok", "foreign_usage": foreign,
                 "usage": {"input_tokens": 50000, "output_tokens": 10}},
                {"type": "user", "content": "more"}
            ]),
        );
        let c = d.call("context.compile", json!({"session_id": sid}));
        assert_eq!(
            c["metadata"]["tokens"]["anchor_tokens"], anchor,
            "{foreign}"
        );
        let records = d.call("transcript.read", json!({"session_id": sid}));
        assert_eq!(
            records["records"][1]["foreign_usage"]
                .as_bool()
                .unwrap_or(false),
            foreign
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_limit_refuses_to_compile_and_events_announce_levels() {
    let d = Daemon::start();
    // W = 20,000, O = 2,000 → E = 18,000; autocompact 15,750 (the buffer is at most E/8:
    // Claude Code's fixed 13,000 would leave 5,000); blocking 17,550 (at most E/40).
    let sid = session(
        &d,
        json!({"model": {"context_window": 20000, "max_output_tokens": 2000}, "settings": {"autocompact": false}}),
    );
    let client = d.client().await;
    let mut sub = client.subscribe(&sid).await.unwrap();
    append(
        &d,
        &sid,
        json!([{"type": "user", "content": "a".repeat(46_000)}]),
    );
    let c = d.call("context.compile", json!({"session_id": sid}));
    assert_eq!(c["metadata"]["context"]["above_autocompact"], true);
    append(
        &d,
        &sid,
        json!([
            {"type": "assistant", "content": "ok", "usage": {"input_tokens": 16000, "output_tokens": 10}},
            {"type": "user", "content": "b".repeat(8_000)}
        ]),
    );
    let err = d
        .try_call("context.compile", json!({"session_id": sid}))
        .unwrap_err();
    assert_eq!(err["code"], ctxd_protocol::PROMPT_TOO_LONG);
    assert_eq!(err["data"]["blocking_limit"], 17_550);
    let mut levels = Vec::new();
    while levels.len() < 2 {
        let ev = tokio::time::timeout(Duration::from_secs(10), sub.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let ctxd_protocol::SessionEvent::WarningStateChanged { level, .. } = ev {
            levels.push(level);
        }
    }
    assert_eq!(levels, vec!["autocompact", "blocking"]);
}

#[test]
fn time_based_microcompact_clears_all_but_the_recent_and_stays_cleared() {
    let mut d = Daemon::start();
    let sid = session(
        &d,
        json!({"settings": {"microcompact": {"time_based": true}}}),
    );
    append(
        &d,
        &sid,
        json!([{"type": "user", "content": "go", "timestamp": "2026-11-29T10:00:00Z"}]),
    );
    for i in 0..8 {
        let tool = if i == 1 { "Task" } else { "Read" };
        append(&d, &sid, tool_turn(i, tool, "2026-11-29T10:00:00Z"));
    }
    let at = |m: u32| format!("2026-11-29T{:02}:{:02}:00Z", 10 + m / 60, m % 60);
    let early = d.call("context.compile", json!({"session_id": sid, "now": at(59)}));
    assert_eq!(
        early["metadata"]["microcompact"]["time_based_cleared"],
        json!([])
    );
    let late = d.call("context.compile", json!({"session_id": sid, "now": at(61)}));
    // 7 Read results; all but the 5 most recent are cleared; Task is not compactable.
    assert_eq!(
        late["metadata"]["microcompact"]["time_based_cleared"],
        json!(["t0", "t2"])
    );
    let shown = results(&late["request"]);
    assert_eq!(shown[0].1, "\"[Old tool result content cleared]\"");
    assert!(shown[1].1.contains("output 1"), "Task untouched");
    assert_eq!(shown[2].1, "\"[Old tool result content cleared]\"");
    assert!(shown[3].1.contains("output 3"));
    let body = d.compile_body_with(json!({"session_id": sid, "now": at(200)}));
    let again = d.call(
        "context.compile",
        json!({"session_id": sid, "now": at(200)}),
    );
    assert_eq!(
        again["metadata"]["microcompact"]["time_based_cleared"],
        json!([])
    );
    assert_eq!(results(&again["request"]), shown);
    d.kill9();
    d.spawn();
    assert_eq!(
        d.compile_body_with(json!({"session_id": sid, "now": at(200)})),
        body
    );
    // The transcript itself still holds every result.
    let recs = d.call("transcript.read", json!({"session_id": sid}));
    assert!(recs.to_string().contains("output 0"));
}

/// One call of `tool` with `input` at `ts`, and its result: the same long line every
/// time, so a repetition holds everything an earlier result showed.
fn call_turn(i: usize, tool: &str, input: Value, ts: &str) -> Value {
    json!([
        {"type": "assistant", "message_id": format!("m{i}"), "timestamp": ts,
         "content": [{"type": "tool_use", "id": format!("t{i}"), "name": tool, "input": input}]},
        {"type": "user", "timestamp": ts,
         "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": format!("run {i}\n{}", "z".repeat(400))}]}
    ])
}

#[test]
fn lean_policy_clears_superseded_results_once_and_for_good() {
    let mut d = Daemon::start();
    let lean = |sid: &str| {
        let ts = "2026-11-29T10:00:00Z";
        append(
            &d,
            sid,
            json!([{"type": "user", "content": "go", "timestamp": ts}]),
        );
        append(
            &d,
            sid,
            call_turn(0, "Bash", json!({"command": "cargo test"}), ts),
        );
        append(
            &d,
            sid,
            call_turn(1, "Read", json!({"file_path": "/tmp/p/a.rs"}), ts),
        );
        append(
            &d,
            sid,
            call_turn(2, "Bash", json!({"command": "cargo test"}), ts),
        );
    };
    let plain = session(&d, json!({}));
    // The warm clear by `warm_min_ratio_pct` (the cost model's is in lean_tests.rs).
    let sid = session(
        &d,
        json!({"settings": {"policy": "lean", "lean": {"priced_clears": false}}}),
    );
    lean(&plain);
    lean(&sid);
    let at = |m: u32| format!("2026-11-29T10:{m:02}:00Z");
    // Warm (the first run's 100 tokens would have the cache write the rest again) and
    // the default policy: nothing.
    let warm = d.call("context.compile", json!({"session_id": sid, "now": at(4)}));
    assert_eq!(warm["metadata"]["microcompact"].get("policy_cleared"), None);
    let default = d.call(
        "context.compile",
        json!({"session_id": plain, "now": at(6)}),
    );
    assert_eq!(
        default["metadata"]["microcompact"].get("policy_cleared"),
        None
    );
    // Cold: the first run of the command is superseded by the second.
    let cold = d.call("context.compile", json!({"session_id": sid, "now": at(6)}));
    assert_eq!(
        cold["metadata"]["microcompact"]["policy_cleared"],
        json!([{"tool_use_id": "t0", "rule": "superseded"}])
    );
    assert_eq!(cold["metadata"]["cache"]["expected_break"], "lean_policy");
    let shown = results(&cold["request"]);
    assert_eq!(shown[0].1, "\"[Old tool result content cleared]\"");
    assert!(shown[1].1.contains("run 1") && shown[2].1.contains("run 2"));
    // Frozen: later compiles, a restart and a fork show the same bytes.
    let body = d.compile_body_with(json!({"session_id": sid, "now": at(7)}));
    assert!(body.contains("[Old tool result content cleared]"));
    restart_and_fork_compile_alike(&mut d, &sid, &at(7), &body);
    // The transcript keeps the result.
    let recs = d.call("transcript.read", json!({"session_id": sid}));
    assert!(recs.to_string().contains("run 0"));
}

#[test]
fn a_priced_warm_clear_is_frozen_across_restart_and_fork() {
    let mut d = Daemon::start();
    let sid = session(
        &d,
        json!({"settings": {"policy": "lean", "lean": {"priced_clears": true}}}),
    );
    let ts = "2026-11-29T10:00:00Z";
    append(
        &d,
        &sid,
        json!([{"type": "user", "content": "go", "timestamp": ts}]),
    );
    for (i, tool, input) in [
        (0, "Bash", json!({"command": "cargo test"})),
        (1, "Read", json!({"file_path": "/tmp/p/a.rs"})),
        (2, "Bash", json!({"command": "cargo test"})),
    ] {
        append(&d, &sid, call_turn(i, tool, input, ts));
    }
    // Warm, where three times the rewrite is not met (the test above): the calls come
    // seconds apart, so reading the cleared run no more over the expected warm calls
    // outweighs writing the rest again.
    let now = "2026-11-29T10:04:00Z";
    let warm = d.call("context.compile", json!({"session_id": sid, "now": now}));
    assert_eq!(
        warm["metadata"]["microcompact"]["policy_cleared"],
        json!([{"tool_use_id": "t0", "rule": "superseded"}])
    );
    assert!(warm["metadata"]["cost"]["clear_saving"].as_f64().unwrap() > 0.0);
    let body = d.compile_body_with(json!({"session_id": sid, "now": now}));
    assert!(body.contains("[Old tool result content cleared]"));
    restart_and_fork_compile_alike(&mut d, &sid, now, &body);
}

/// Forty tool calls, `gap_secs` apart from 10:00, the last with a 2,000-character
/// result; the time of the last.
fn paced_session(d: &Daemon, sid: &str, gap_secs: i64) -> chrono::DateTime<chrono::Utc> {
    let start: chrono::DateTime<chrono::Utc> = "2026-11-29T10:00:00Z".parse().unwrap();
    let at = |i: i64| (start + chrono::Duration::seconds(i * gap_secs)).to_rfc3339();
    append(
        d,
        sid,
        json!([{"type": "user", "content": "go", "timestamp": at(0)}]),
    );
    for (n, i) in (0..40).enumerate() {
        let mut turn = tool_turn(n, "Grep", &at(i));
        if i == 39 {
            turn[1]["content"][0]["content"] = json!("w".repeat(2_000));
        }
        append(d, sid, turn);
    }
    start + chrono::Duration::seconds(39 * gap_secs)
}

#[test]
fn lean_policy_writes_an_hour_only_where_a_person_waits() {
    let mut d = Daemon::start();
    let compile = |d: &Daemon, sid: &str, now: chrono::DateTime<chrono::Utc>| {
        let now = (now + chrono::Duration::seconds(30)).to_rfc3339();
        d.call("context.compile", json!({"session_id": sid, "now": now}))
    };
    // A tool loop (calls seconds apart): a five-minute entry never lapses, so the
    // hour's dearer write of the new result buys nothing.
    let looping = session(&d, json!({"settings": {"policy": "lean"}}));
    let last = paced_session(&d, &looping, 2);
    let c = compile(&d, &looping, last);
    assert_eq!(
        c["metadata"]["cost"]["ttl"], "5m",
        "{}",
        c["metadata"]["cost"]
    );
    assert_eq!(c["metadata"]["cost"]["pace"]["within_5m"], 39);
    assert!(c["metadata"]["cost"]["ttl_1h_saving"].as_f64().unwrap() < 0.0);
    assert!(!c["request"].to_string().contains("\"ttl\":\"1h\""));
    // The same calls twenty minutes apart: every five-minute entry lapses, an hour's
    // does not.
    let waiting = session(&d, json!({"settings": {"policy": "lean"}}));
    let last = paced_session(&d, &waiting, 1_200);
    let c = compile(&d, &waiting, last);
    assert_eq!(
        c["metadata"]["cost"]["ttl"], "1h",
        "{}",
        c["metadata"]["cost"]
    );
    assert_eq!(c["metadata"]["cost"]["pace"]["within_1h"], 39);
    assert!(c["request"].to_string().contains("\"ttl\":\"1h\""));
    // The default policy keeps the latched lifetime and reports no cost model.
    let plain = session(&d, json!({}));
    let last = paced_session(&d, &plain, 1_200);
    let c = compile(&d, &plain, last);
    assert!(c["metadata"].get("cost").is_none());
    assert!(!c["request"].to_string().contains("\"ttl\":\"1h\""));
    // A restart and a fork choose as the session did.
    let now = (last + chrono::Duration::seconds(30)).to_rfc3339();
    let body = d.compile_body_with(json!({"session_id": waiting, "now": now}));
    restart_and_fork_compile_alike(&mut d, &waiting, &now, &body);
}

#[test]
fn cached_microcompact_pins_its_edits() {
    let d = Daemon::start();
    let sid = session(
        &d,
        json!({"settings": {"microcompact": {"cached": true, "cached_trigger": 3, "cached_keep_recent": 2}}}),
    );
    append(&d, &sid, json!([{"type": "user", "content": "go"}]));
    for i in 0..5 {
        append(&d, &sid, tool_turn(i, "Grep", "2026-11-29T10:00:00Z"));
    }
    let c = d.call(
        "context.compile",
        json!({"session_id": sid, "now": "2026-11-29T10:00:00Z"}),
    );
    assert_eq!(
        c["metadata"]["microcompact"]["cache_edits_added"],
        json!(["t0", "t1", "t2"])
    );
    let find_edits = |req: &Value| -> Vec<(usize, Value)> {
        let mut out = Vec::new();
        for (i, m) in req["messages"].as_array().unwrap().iter().enumerate() {
            for b in m["content"].as_array().unwrap() {
                if b["type"] == "cache_edits" {
                    out.push((i, b["edits"].clone()));
                }
            }
        }
        out
    };
    let first = find_edits(&c["request"]);
    assert_eq!(first.len(), 1);
    let (index, edits) = first[0].clone();
    assert_eq!(edits[0], json!({"type": "delete", "cache_reference": "t0"}));
    // Every result carries its cache_reference; local content is untouched.
    for m in c["request"]["messages"].as_array().unwrap() {
        for b in m["content"].as_array().unwrap() {
            if b["type"] == "tool_result" {
                assert_eq!(b["cache_reference"], b["tool_use_id"]);
                assert!(b["content"].as_str().unwrap().starts_with("output"));
            }
        }
    }
    for n in 0..5 {
        append(
            &d,
            &sid,
            json!([{"type": "assistant", "content": format!("thinking {n}")}, {"type": "user", "content": format!("more {n}")}]),
        );
        let later = d.call(
            "context.compile",
            json!({"session_id": sid, "now": "2026-11-29T10:00:00Z"}),
        );
        let edits_now = find_edits(&later["request"]);
        assert_eq!(edits_now[0], (index, edits.clone()), "pinned edit moved");
        assert_eq!(later["metadata"]["microcompact"]["cache_edits_pinned"], 1);
    }
}

#[test]
fn snip_removes_a_range_that_survives_restart() {
    let mut d = Daemon::start();
    let sid = session(&d, json!({"settings": {"snip_enabled": true}}));
    append(
        &d,
        &sid,
        json!([
            {"type": "user", "content": "first question"},
            {"type": "assistant", "content": "first answer", "usage": {"input_tokens": 1000, "output_tokens": 10}},
            {"type": "user", "content": "second question"},
            {"type": "assistant", "message_id": "m2", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
            {"type": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x".repeat(4000)}]},
            {"type": "assistant", "content": "second answer"},
            {"type": "user", "content": "third question"}
        ]),
    );
    let c = d.call("context.compile", json!({"session_id": sid}));
    let text = c["request"].to_string();
    let ids: Vec<String> = text
        .match_indices("[id:")
        .map(|(i, _)| text[i + 4..i + 10].to_string())
        .collect();
    assert_eq!(ids.len(), 3, "{text}");
    let before = c["metadata"]["tokens"]["estimated_tokens"]
        .as_u64()
        .unwrap();
    let r = d.call(
        "context.snip",
        json!({"session_id": sid, "from_id": ids[1], "to_id": ids[1]}),
    );
    // The second question's turn: the prompt only (pairs stay whole: its tool use and
    // result come with it only when named).
    assert_eq!(r["removed"].as_array().unwrap().len(), 1);
    let r2 = d.call(
        "context.snip",
        json!({"session_id": sid, "from_id": ids[0], "to_id": ids[0]}),
    );
    assert_eq!(r2["removed"].as_array().unwrap().len(), 1);
    let after = d.call("context.compile", json!({"session_id": sid}));
    let t = after["request"].to_string();
    assert!(!t.contains("second question") && !t.contains("first question"));
    assert!(t.contains("third question"));
    assert!(after["metadata"]["snip_tokens_freed"].as_u64().unwrap() > 0);
    assert!(
        after["metadata"]["context"]["effective_tokens"]
            .as_u64()
            .unwrap()
            < before + 100
    );
    let body = d.compile_body(&sid);
    d.kill9();
    d.spawn();
    assert_eq!(d.compile_body(&sid), body);
    // Unknown ids are refused, naming the field.
    let err = d
        .try_call(
            "context.snip",
            json!({"session_id": sid, "from_id": "nope00", "to_id": ids[2]}),
        )
        .unwrap_err();
    assert_eq!(err["data"]["field"], "from_id");
}

/// Client numbers at their extremes: refused with the field named, and where a number
/// still reaches the arithmetic (a snip boundary's `tokens_freed`) it saturates. The
/// test binary drives a debug build of ctxd, where an overflow would panic.
#[test]
fn extreme_client_numbers_are_refused_or_saturate_without_a_panic() {
    let d = Daemon::start();
    let field = |method: &str, params: Value| {
        d.try_call(method, params).unwrap_err()["data"]["field"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let create = |model: Value, settings: Value| json!({"cwd": "/tmp/p", "no_git": true, "model": model, "settings": settings});
    assert_eq!(
        field(
            "session.create",
            create(
                json!({"context_window": u64::MAX, "max_output_tokens": 8000}),
                json!({})
            )
        ),
        "model.context_window"
    );
    assert_eq!(
        field(
            "session.create",
            create(json!({}), json!({"blocking_limit_margin": u64::MAX}))
        ),
        "settings.blocking_limit_margin"
    );
    let sid = session(
        &d,
        json!({"model": {"context_window": 40000, "max_output_tokens": 8000}}),
    );
    assert_eq!(
        field(
            "session.update",
            json!({"session_id": sid, "settings": {"blocking_limit_margin": 32000}})
        ),
        "settings.blocking_limit_margin"
    );
    assert_eq!(
        field(
            "transcript.append",
            json!({"session_id": sid, "records": [
                {"type": "user", "content": "hi"},
                {"type": "assistant", "content": "ok", "usage": {"input_tokens": u64::MAX, "output_tokens": u64::MAX}}
            ]})
        ),
        "records[1].usage.input_tokens"
    );
    // Nothing of the refused batch was written.
    let read = d.call("transcript.read", json!({"session_id": sid}));
    assert_eq!(read["records"].as_array().unwrap().len(), 0);

    append(
        &d,
        &sid,
        json!([
            {"type": "user", "content": "hi"},
            {"type": "assistant", "content": "ok", "usage": {"input_tokens": 1000000000, "output_tokens": 1000000000, "cache_read_input_tokens": 1000000000, "cache_creation_input_tokens": 1000000000}},
            {"type": "system", "subtype": "snip_boundary", "data": {"removed_uuids": [], "tokens_freed": u64::MAX}},
            {"type": "system", "subtype": "snip_boundary", "data": {"removed_uuids": [], "tokens_freed": u64::MAX}},
            {"type": "user", "content": "again"}
        ]),
    );
    let c = d.call(
        "context.compile",
        json!({"session_id": sid, "now": "2026-11-29T10:00:00Z"}),
    );
    let m = &c["metadata"];
    assert_eq!(m["tokens"]["anchor_tokens"], 4_000_000_000u64);
    assert_eq!(m["context"]["effective_tokens"], 0, "{m}");
    assert_eq!(m["snip_tokens_freed"], u64::MAX);
}
