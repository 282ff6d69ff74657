//! Prompt-cache care through a real daemon: the predicted prefix of every compile, latched
//! request flags, cache breaks detected from reported usage and attributed, and the
//! usage picture.

use crate::common;

use std::time::Duration;

use common::{Daemon, NewSession};
use ctxd_protocol::SessionEvent;
use serde_json::{Value, json};

const T0: &str = "2026-11-29T10:00:00Z";

fn tools(extra: &[&str]) -> Value {
    let mut t = vec![
        json!({"name": "Read", "description": "Read a file", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}),
        json!({"name": "Bash", "description": "Run a command", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}),
    ];
    for n in extra {
        t.push(json!({"name": n, "description": "late tool"}));
    }
    Value::Array(t)
}

fn session(d: &Daemon) -> String {
    NewSession::at("/tmp/p")
        .start_date("2026-11-29")
        .tools(tools(&[]))
        .create(d)
}

fn append(d: &Daemon, sid: &str, records: Value) {
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": records}),
    );
}

fn compile_at(d: &Daemon, sid: &str, now: &str) -> Value {
    d.call("context.compile", json!({"session_id": sid, "now": now}))
}

/// One model call answered at `at` whose usage reports `read` cache-read tokens, then the
/// tool result that ends the turn.
fn call(i: u32, at: &str, read: u64) -> Value {
    json!([
        {"type": "assistant", "message_id": format!("m{i}"), "timestamp": at,
         "content": [{"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {"command": format!("echo {i}")}}],
         "usage": {"input_tokens": 3, "cache_creation_input_tokens": 500, "cache_read_input_tokens": read, "output_tokens": 20}},
        {"type": "user", "timestamp": at,
         "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": format!("out {i} {}", "x".repeat(300))}]}
    ])
}

fn at(min: u32) -> String {
    format!("2026-11-29T10:{min:02}:00Z")
}

#[test]
fn append_only_turns_predict_the_whole_previous_request_cached() {
    let d = Daemon::start();
    let sid = session(&d);
    append(
        &d,
        &sid,
        json!([{"type": "user", "content": "start", "timestamp": T0}]),
    );
    let first = compile_at(&d, &sid, T0);
    let c = &first["metadata"]["cache"];
    assert_eq!(c["predicted_read_tokens"], 0);
    assert_eq!(c["expected_break"], "first_compile");
    assert!(c.get("first_difference").is_none());
    let mut prev_tokens = c["request_tokens"].as_u64().unwrap();
    for i in 1..4 {
        append(&d, &sid, call(i, &at(i), 1000 * u64::from(i)));
        let m = &compile_at(&d, &sid, &at(i))["metadata"]["cache"];
        assert_eq!(m["predicted_read_tokens"], prev_tokens, "turn {i}: {m}");
        assert!(m.get("first_difference").is_none(), "{m}");
        assert!(m.get("expected_break").is_none(), "{m}");
        assert!(m["prefix_bytes"].as_u64().unwrap() > 0);
        prev_tokens = m["request_tokens"].as_u64().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_tool_is_named_in_the_prediction_and_the_break() {
    let d = Daemon::start();
    let sid = session(&d);
    let client = d.client().await;
    let mut sub = client.subscribe(&sid).await.unwrap();
    append(
        &d,
        &sid,
        json!([{"type": "user", "content": "start", "timestamp": T0}]),
    );
    compile_at(&d, &sid, T0);
    append(&d, &sid, call(1, &at(1), 0));
    let before = compile_at(&d, &sid, &at(1))["metadata"]["cache"]["request_tokens"]
        .as_u64()
        .unwrap();
    append(&d, &sid, call(2, &at(2), 40_000));
    d.call(
        "capabilities.set_tools",
        json!({"session_id": sid, "tools": tools(&["Deploy"])}),
    );
    let m = compile_at(&d, &sid, &at(2))["metadata"]["cache"].clone();
    assert_eq!(m["first_difference"], "tools[Deploy]");
    assert!(m.get("expected_break").is_none());
    // System and the tools before the new one can be read back, no message.
    let read = m["predicted_read_tokens"].as_u64().unwrap();
    assert!(read > 0 && read < before, "{read} of {before}");

    append(&d, &sid, call(3, &at(3), 1_200));
    let ev = loop {
        let ev = tokio::time::timeout(Duration::from_secs(10), sub.next())
            .await
            .expect("an event")
            .unwrap()
            .unwrap();
        if let SessionEvent::CacheBreak { cache_break, .. } = ev {
            break cache_break;
        }
    };
    assert_eq!(ev.cause, "client_change");
    assert_eq!(ev.changes, ["tools added: Deploy"]);
    assert_eq!((ev.previous_read_tokens, ev.read_tokens), (40_000, 1_200));

    let report = d.call("context.cache_report", json!({"session_id": sid}));
    assert_eq!(report["breaks"], 1);
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 3);
    assert!(calls.iter().all(|c| c["predicted_read_tokens"].is_u64()));
    assert_eq!(calls[2]["cache_break"]["cause"], "client_change");
}

#[test]
fn a_system_edit_is_named_and_compaction_is_an_expected_break() {
    let d = Daemon::start();
    let sid = session(&d);
    append(
        &d,
        &sid,
        json!([{"type": "user", "content": "start", "timestamp": T0}]),
    );
    compile_at(&d, &sid, T0);
    append(&d, &sid, call(1, &at(1), 0));
    d.call(
        "session.update",
        json!({"session_id": sid, "system": {"static": [{"name": "mine", "text": "You are a careful agent."}]}}),
    );
    let m = compile_at(&d, &sid, &at(1))["metadata"]["cache"].clone();
    assert_eq!(m["first_difference"], "system[0]");
    assert_eq!(
        (
            m["predicted_read_tokens"].as_u64(),
            m["prefix_bytes"].as_u64()
        ),
        (Some(0), Some(0))
    );

    d.call("context.compact", json!({"session_id": sid}));
    let m = compile_at(&d, &sid, &at(2))["metadata"]["cache"].clone();
    assert_eq!(m["expected_break"], "compaction", "{m}");
    assert!(
        m["first_difference"]
            .as_str()
            .unwrap()
            .starts_with("messages[")
    );

    // The call after the compaction reads less, and that is no break.
    append(&d, &sid, call(2, &at(3), 30_000));
    compile_at(&d, &sid, &at(3));
    d.call("context.compact", json!({"session_id": sid}));
    compile_at(&d, &sid, &at(4));
    append(&d, &sid, call(3, &at(5), 500));
    let report = d.call("context.cache_report", json!({"session_id": sid}));
    assert_eq!(report["breaks"], 0, "{report}");
    assert_eq!(report["calls"][2]["expected_drop"], "compaction");
}

#[test]
fn breaks_from_a_ttl_gap_and_from_nothing_known() {
    let d = Daemon::start();
    let sid = session(&d);
    append(
        &d,
        &sid,
        json!([{"type": "user", "content": "start", "timestamp": T0}]),
    );
    compile_at(&d, &sid, T0);
    append(&d, &sid, call(1, &at(1), 50_000));
    // Twelve minutes later: over the five-minute TTL.
    compile_at(&d, &sid, &at(13));
    append(&d, &sid, call(2, &at(13), 0));
    compile_at(&d, &sid, &at(14));
    append(&d, &sid, call(3, &at(14), 48_000));
    // A minute later, nothing changed, the reads vanish: the provider evicted.
    compile_at(&d, &sid, &at(15));
    append(&d, &sid, call(4, &at(15), 100));
    let report = d.call("context.cache_report", json!({"session_id": sid}));
    let calls = report["calls"].as_array().unwrap();
    // The twelve-minute gap was predicted (the compile expired the entry itself): an
    // expected drop, not a break.
    assert_eq!(report["breaks"], 1, "{report}");
    assert_eq!(calls[1]["expected_drop"], "ttl_expiry", "{report}");
    assert_eq!(calls[1]["predicted_read_tokens"], 0, "{report}");
    assert!(calls[1].get("cache_break").is_none());
    assert!(calls[2].get("cache_break").is_none());
    assert_eq!(calls[3]["cache_break"]["cause"], "server_eviction");
}

#[test]
fn flags_are_latched_until_compaction_and_the_prediction_survives_a_restart() {
    let mut d = Daemon::start();
    let sid = session(&d);
    append(
        &d,
        &sid,
        json!([{"type": "user", "content": "start", "timestamp": T0}]),
    );
    let flags =
        json!({"betas": ["fast-mode-2026"], "cache_ttl": "1h", "extra": {"temperature": 0.2}});
    let c = d.call(
        "context.compile",
        json!({"session_id": sid, "now": T0, "flags": flags}),
    );
    let m = &c["metadata"]["cache"];
    assert_eq!(m["headers"]["anthropic-beta"], "fast-mode-2026");
    assert_eq!(c["request"]["temperature"], 0.2);
    assert_eq!(c["request"]["tools"][1]["cache_control"]["ttl"], "1h");

    append(&d, &sid, call(1, &at(1), 0));
    // Asked without the beta and with another TTL: the latch holds and says so.
    let c = d.call(
        "context.compile",
        json!({"session_id": sid, "now": at(1), "flags": {"cache_ttl": "5m"}}),
    );
    let m = &c["metadata"]["cache"];
    assert_eq!(m["headers"]["anthropic-beta"], "fast-mode-2026");
    assert_eq!(c["request"]["temperature"], 0.2);
    let notes: Vec<&str> = m["latch_notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes.iter().any(|n| n.contains("fast-mode-2026 stays")),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|n| n.contains("asked 5m, latched 1h")),
        "{notes:?}"
    );
    assert!(m.get("first_difference").is_none(), "{m}");

    // A bad flag changes nothing and names its field.
    let e = d
        .try_call(
            "context.compile",
            json!({"session_id": sid, "flags": {"extra": {"messages": []}}}),
        )
        .unwrap_err();
    assert_eq!(e["data"]["field"], "flags.extra.messages");

    // Restart: the next compile predicts against the stored previous request.
    append(&d, &sid, call(2, &at(2), 0));
    let before_restart =
        compile_at(&d, &sid, &at(2))["metadata"]["cache"]["request_tokens"].clone();
    append(&d, &sid, call(3, &at(3), 0));
    d.kill9();
    d.spawn();
    let m = compile_at(&d, &sid, &at(3))["metadata"]["cache"].clone();
    assert_eq!(m["predicted_read_tokens"], before_restart, "{m}");
    assert_eq!(m["headers"]["anthropic-beta"], "fast-mode-2026");

    // Compaction resets the latch.
    d.call("context.compact", json!({"session_id": sid}));
    let c = compile_at(&d, &sid, &at(4));
    assert!(c["metadata"]["cache"].get("headers").is_none());
    assert!(c["request"].get("temperature").is_none());
}

/// A daemon with a session of one prompt and one answered model call.
fn one_call_session() -> (Daemon, String) {
    let d = Daemon::start();
    let sid = session(&d);
    append(
        &d,
        &sid,
        json!([{"type": "user", "content": "start", "timestamp": T0}]),
    );
    append(&d, &sid, call(1, &at(1), 0));
    (d, sid)
}

#[test]
fn usage_picture_sums_to_the_window_and_changes_nothing() {
    let (d, sid) = one_call_session();
    let before = d.call("transcript.read", json!({"session_id": sid}));
    let u = d.call("context.usage", json!({"session_id": sid}));
    let window = u["context_window"].as_u64().unwrap();
    let cats = u["categories"].as_array().unwrap();
    let names: Vec<&str> = cats.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "system",
            "tools",
            "instruction_files",
            "messages",
            "attachments",
            "tool_results",
            "free_space",
            "autocompact_buffer"
        ]
    );
    let sum: u64 = cats.iter().map(|c| c["tokens"].as_u64().unwrap()).sum();
    assert_eq!(sum, window);
    let used: u64 = cats[..6]
        .iter()
        .map(|c| c["tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(used, u["used_tokens"].as_u64().unwrap());
    assert!(cats[5]["tokens"].as_u64().unwrap() > 0, "tool results: {u}");
    let after = d.call("transcript.read", json!({"session_id": sid}));
    assert_eq!(before, after);
    let e = d
        .try_call("context.usage", json!({"session_id": "nope"}))
        .unwrap_err();
    assert_eq!(e["code"], ctxd_protocol::SESSION_NOT_FOUND);
}

/// `context.usage` pictures the next request: what its compile would append (here the
/// queued input, and the date when it moved) is counted but not appended, so the picture
/// before the compile is the picture after it (issue 52, item 5).
#[test]
fn usage_counts_the_attachments_the_next_compile_adds() {
    let (d, sid) = one_call_session();
    d.call(
        "transcript.queue",
        json!({"session_id": sid, "text": "also check the lexer, the parser and the tests"}),
    );
    let read = || d.call("transcript.read", json!({"session_id": sid}));
    let usage = || d.call("context.usage", json!({"session_id": sid}));
    let attachment_tokens = |u: &Value| {
        u["categories"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "attachments")
            .map(|c| c["tokens"].as_u64().unwrap())
            .unwrap()
    };
    let records = read();
    let before = usage();
    assert_eq!(read(), records, "the picture appends nothing");
    let compiled = d.call("context.compile", json!({"session_id": sid}));
    let added = compiled["metadata"]["added_attachments"]
        .as_array()
        .unwrap();
    assert!(
        added.iter().any(|a| a["type"] == "queued_command"),
        "{added:?}"
    );
    let after = usage();
    assert_eq!(before["attachments"], after["attachments"]);
    assert!(attachment_tokens(&before) > 0, "{before}");
    assert_eq!(attachment_tokens(&before), attachment_tokens(&after));
    assert_eq!(before["used_tokens"], after["used_tokens"]);
}

/// 27 minutes after the last model call the 5-minute entry is gone: the prediction is
/// 0 with the break named `ttl_expiry`; with the one-hour TTL latched the same gap keeps
/// the prefix (issue 41, item 8).
#[test]
fn the_prediction_expires_with_the_ttl() {
    let d = Daemon::start();
    for (ttl, expires) in [(None, true), (Some("1h"), false)] {
        let sid = session(&d);
        append(
            &d,
            &sid,
            json!([{"type": "user", "content": "start", "timestamp": T0}]),
        );
        let flags = ttl.map(|t| json!({"cache_ttl": t}));
        d.call(
            "context.compile",
            json!({"session_id": sid, "now": T0, "flags": flags}),
        );
        append(&d, &sid, call(1, &at(1), 1000));
        let soon = compile_at(&d, &sid, &at(3));
        assert!(
            soon["metadata"]["cache"]["predicted_read_tokens"]
                .as_u64()
                .unwrap()
                > 0,
            "{}",
            soon["metadata"]["cache"]
        );
        let late = &compile_at(&d, &sid, &at(28))["metadata"]["cache"];
        if expires {
            assert_eq!(late["predicted_read_tokens"], 0, "{late}");
            assert_eq!(late["expected_break"], "ttl_expiry", "{late}");
        } else {
            assert!(
                late["predicted_read_tokens"].as_u64().unwrap() > 0,
                "{late}"
            );
        }
    }
}

/// `settings.cache_diagnostics`: each compile after a response names it in
/// `diagnostics`, with its beta header, and the changing id is no part of the cache key.
#[test]
fn cache_diagnostics_name_the_previous_response_without_breaking_the_prefix() {
    let d = Daemon::start();
    let sid = d.call(
        "session.create",
        json!({"cwd": "/tmp/p", "no_git": true, "start_date": "2026-11-29", "tools": tools(&[]),
               "settings": {"cache_diagnostics": true}}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    append(
        &d,
        &sid,
        json!([{"type": "user", "content": "start", "timestamp": T0}]),
    );
    let first = compile_at(&d, &sid, T0);
    assert!(
        first["request"].get("diagnostics").is_none(),
        "no response yet"
    );
    append(&d, &sid, call(1, &at(1), 1000));
    let second = compile_at(&d, &sid, &at(1));
    assert_eq!(
        second["request"]["diagnostics"],
        json!({"previous_message_id": "m1"})
    );
    assert!(
        second["metadata"]["cache"]["headers"]["anthropic-beta"]
            .as_str()
            .unwrap()
            .contains("cache-diagnosis-2026-04-07")
    );
    // The public Messages API defines `diagnostics`: nothing non-public was sent.
    assert!(second["metadata"].get("non_public").is_none());
    append(&d, &sid, call(2, &at(2), 2000));
    let third = compile_at(&d, &sid, &at(2));
    assert_eq!(
        third["request"]["diagnostics"],
        json!({"previous_message_id": "m2"})
    );
    let c = &third["metadata"]["cache"];
    assert!(c.get("first_difference").is_none(), "{c}");
    assert_eq!(
        c["predicted_read_tokens"], second["metadata"]["cache"]["request_tokens"],
        "{c}"
    );
}
