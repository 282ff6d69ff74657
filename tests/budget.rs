//! The tool-result budget through a real daemon: frozen fates survive recompiles,
//! restarts and forks, and the persisted file holds the full output.

use crate::common;

use common::Daemon;
use serde_json::{Value, json};

fn tool_result_texts(req: &Value) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for m in req["messages"].as_array().unwrap() {
        for b in m["content"].as_array().unwrap() {
            if b["type"] == "tool_result" {
                out.insert(
                    b["tool_use_id"].as_str().unwrap().to_string(),
                    b["content"].to_string(),
                );
            }
        }
    }
    out
}

#[test]
fn worked_case_is_frozen_across_compiles_restart_and_fork() {
    let mut d = Daemon::start();
    let sid = d.call(
        "session.create",
        json!({"cwd": "/tmp", "no_git": true,
               // Out of the way of the per-tool threshold, so the message budget decides.
               "settings": {"tool_result_size_overrides": {"Fetch": 1000000}},
               "tools": [{"name": "Fetch", "input_schema": {"type": "object"}, "max_result_size_chars": 100000}]}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let a = format!("{}\n{}", "a".repeat(1500), "A".repeat(118_499));
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "user", "content": "fetch three pages"},
            {"type": "assistant", "message_id": "m1", "content": [
                {"type": "tool_use", "id": "toolu_A", "name": "Fetch", "input": {"u": 1}},
                {"type": "tool_use", "id": "toolu_B", "name": "Fetch", "input": {"u": 2}},
                {"type": "tool_use", "id": "toolu_C", "name": "Fetch", "input": {"u": 3}}]},
            {"type": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_A", "content": a},
                {"type": "tool_result", "tool_use_id": "toolu_B", "content": "b".repeat(90_000)},
                {"type": "tool_result", "tool_use_id": "toolu_C", "content": "c".repeat(20_000)}]}
        ]}),
    );
    let first = d.call("context.compile", json!({"session_id": sid}));
    assert_eq!(first["metadata"]["replaced"], json!(["toolu_A"]));
    let shown = tool_result_texts(&first["request"]);
    let a_shown: String = serde_json::from_str(&shown["toolu_A"]).unwrap();
    let path = d
        .home
        .join("sessions")
        .join(&sid)
        .join("tool-results/toolu_A.txt");
    let expected = format!(
        "<persisted-output>\nOutput too large (117.2KB). Full output saved to: {}\n\nPreview (first 2KB):\n{}\n...\n</persisted-output>",
        path.display(),
        "a".repeat(1500)
    );
    assert_eq!(a_shown, expected);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        a,
        "the full output is readable"
    );
    assert_eq!(shown["toolu_B"].len(), 90_002);
    assert_eq!(shown["toolu_C"].len(), 20_002);

    let body = d.compile_body(&sid);
    for _ in 0..10 {
        let again = d.call("context.compile", json!({"session_id": sid}));
        assert_eq!(again["metadata"]["replaced"], json!([]));
        assert_eq!(tool_result_texts(&again["request"]), shown);
    }
    assert_eq!(d.compile_body(&sid), body);

    d.kill9();
    d.spawn();
    assert_eq!(d.compile_body(&sid), body, "restart changed the request");

    let fork = d.call("session.fork", json!({"session_id": sid}))["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let forked = d.call("context.compile", json!({"session_id": fork}));
    assert_eq!(tool_result_texts(&forked["request"]), shown);
    // Deleting the parent keeps the file the fork's replacement points at.
    d.call("session.delete", json!({"session_id": sid}));
    assert!(path.exists());

    let reps = d.call("context.replacements", json!({"session_id": fork}));
    let reps = reps["replacements"].as_array().unwrap();
    assert_eq!(reps.len(), 3);
    let a_rep = reps.iter().find(|r| r["tool_use_id"] == "toolu_A").unwrap();
    assert_eq!(a_rep["replacement"], expected);
    assert!(
        reps.iter()
            .find(|r| r["tool_use_id"] == "toolu_B")
            .unwrap()
            .get("replacement")
            .is_none()
    );
}

#[test]
fn import_replays_content_replacement_records() {
    let d = Daemon::start();
    let lines = [
        json!({"type": "user", "uuid": "u1", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/p", "message": {"role": "user", "content": "go"}}),
        json!({"type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-01-01T00:00:01Z", "message": {"id": "m1", "role": "assistant", "model": "x", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}, {"type": "tool_use", "id": "t2", "name": "Bash", "input": {}}]}}),
        json!({"type": "user", "uuid": "u2", "parentUuid": "a1", "timestamp": "2026-01-01T00:00:02Z", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "z".repeat(80_000)}, {"type": "tool_result", "tool_use_id": "t2", "content": "y".repeat(70_000)}]}}),
        json!({"type": "content-replacement", "sessionId": "s", "replacements": [{"kind": "tool-result", "toolUseId": "t1", "replacement": "<persisted-output>\nwhat the model saw\n</persisted-output>"}]}),
    ];
    let jsonl: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let r = d.call("session.import", json!({"jsonl": jsonl.join("\n")}));
    assert_eq!(r["stats"]["replacements"], 1);
    let sid = r["session_id"].as_str().unwrap();
    let c = d.call(
        "context.compile",
        json!({"session_id": sid, "now": "2026-01-01T00:00:05Z"}),
    );
    let shown = tool_result_texts(&c["request"]);
    assert_eq!(
        shown["t1"],
        json!("<persisted-output>\nwhat the model saw\n</persisted-output>").to_string()
    );
    // Seen on resume: kept whole even though it is over Bash's default threshold.
    assert_eq!(shown["t2"].len(), 70_002);
    assert_eq!(c["metadata"]["replaced"], json!([]));
}
