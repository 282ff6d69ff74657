//! The compiled request: snapshots of its exact layout for fixture sessions, and byte
//! identity across daemon restarts.

use crate::common;

use common::{Daemon, pretty_preserving};
use serde_json::{Value, json};

const SNAPSHOT_FIXTURES: &[&str] = &[
    "spotter/short.jsonl",
    "spotter/tool_heavy.jsonl",
    "viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
];

#[test]
fn compile_snapshots_of_fixture_sessions() {
    let d = Daemon::start();
    for name in SNAPSHOT_FIXTURES {
        let r = d.import(&common::fixtures().join(name));
        let sid = r["session_id"].as_str().unwrap();
        let body = d.compile_body_at_last(sid);
        let snap_name = name.replace(['/', '.'], "_");
        insta::assert_snapshot!(snap_name, pretty_preserving(&body));
    }
}

#[test]
fn compile_is_byte_identical_across_restarts() {
    let mut d = Daemon::start();
    let mut before = Vec::new();
    for name in SNAPSHOT_FIXTURES
        .iter()
        .chain(["viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"].iter())
    {
        let r = d.import(&common::fixtures().join(name));
        let sid = r["session_id"].as_str().unwrap().to_string();
        let body = d.compile_body(&sid);
        assert_eq!(
            body,
            d.compile_body(&sid),
            "two compiles of the same state differ"
        );
        before.push((sid, body));
    }
    // A live session with tools, a custom system prompt and settings.
    let sid = d.call(
        "session.create",
        json!({"cwd": "/tmp/project", "no_git": true, "start_date": "2026-11-29",
               "settings": {"language": "French"},
               "system": {"static": [{"name": "intro", "text": "You are a test agent."}],
                          "dynamic": [{"name": "clock", "text": "Turn 1", "caching": "uncached", "reason": "turn counter"}]},
               "tools": [{"name": "Read", "description": "Read a file", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}]}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "read a", "timestamp": "2026-11-29T10:00:00Z"}]}),
    );
    let body = d.compile_body(&sid);
    before.push((sid, body));

    d.kill9();
    d.spawn();
    for (sid, body) in &before {
        assert_eq!(
            &d.compile_body(sid),
            body,
            "compile changed across a restart"
        );
    }
}

#[test]
fn request_layout_rules() {
    let d = Daemon::start();
    let sid = d.call(
        "session.create",
        json!({"cwd": "/tmp/p", "no_git": true, "start_date": "2026-11-29",
        "tools": [
          {"name": "Read", "input_schema": {"type": "object"}},
          {"name": "web_search", "type": "web_search_20250305"},
          {"name": "Bash", "input_schema": {"type": "object"}}
        ]}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "user", "content": "list files"},
            {"type": "assistant", "message_id": "m1", "content": [{"type": "thinking", "thinking": "hmm", "signature": "sig"}]},
            {"type": "assistant", "message_id": "m1", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]},
            {"type": "attachment", "attachment": {"type": "date_change", "date": "2026-11-30"}},
            {"type": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a\nb"}]},
            {"type": "assistant", "message_id": "m2", "usage": {"input_tokens": 10, "output_tokens": 5}, "content": [{"type": "text", "text": "two files"}, {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/a"}}]}
        ]}),
    );
    let r = d.call("context.compile", json!({"session_id": sid}));
    let req = &r["request"];
    // System: the static prefix and the dynamic suffix each cached (the public API's
    // organisation scope; Claude Code's global scope is opt-in), no boundary text.
    assert_eq!(
        req["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(
        req["system"][1]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert!(
        !req["system"]
            .to_string()
            .contains("__SYSTEM_PROMPT_DYNAMIC_BOUNDARY__")
    );
    let layout = r["metadata"]["system_sections"].as_array().unwrap();
    assert!(
        layout
            .iter()
            .any(|s| s["class"] == "boundary" && s["name"] == "__SYSTEM_PROMPT_DYNAMIC_BOUNDARY__")
    );
    // Tools: marker on the last regular tool, server tool after it.
    let tools = req["tools"].as_array().unwrap();
    assert_eq!(tools[1]["name"], "Bash");
    assert_eq!(tools[1]["cache_control"]["type"], "ephemeral");
    assert_eq!(tools[2]["type"], "web_search_20250305");
    // messages[0]: user context then the prompt.
    let msgs = req["messages"].as_array().unwrap();
    let first = msgs[0]["content"][0]["text"].as_str().unwrap();
    assert!(first.starts_with("<system-reminder>"));
    assert!(first.contains("Today's date is 2026-11-29."));
    assert_eq!(msgs[0]["content"][1]["text"], "list files");
    // The split response is one assistant message; the attachment follows the result.
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs[1]["content"].as_array().unwrap().len(), 2);
    assert_eq!(msgs[2]["content"][0]["type"], "tool_result");
    assert!(msgs[2].to_string().contains("2026-11-30"));
    // The dangling t2 got a synthetic error result, and the last message carries the
    // message cache breakpoint.
    let last = msgs.last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["tool_use_id"], "t2");
    assert_eq!(last["content"][0]["is_error"], true);
    assert_eq!(last["content"][0]["cache_control"]["type"], "ephemeral");
    assert!(
        r["metadata"]["repairs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x.as_str().unwrap().contains("t2"))
    );
    // The estimate is anchored on the last usage: its 10 input tokens, and what the
    // model wrote counted as the larger of the 5 output tokens reported and the estimate
    // of the response's content (12).
    assert_eq!(r["metadata"]["tokens"]["anchor_tokens"], 22);
    let hash = r["metadata"]["request_sha256"].as_str().unwrap();
    let body = d.compile_body(&sid);
    use sha2::Digest;
    assert_eq!(hex::encode(sha2::Sha256::digest(body.as_bytes())), hash);
    // Side requests move the breakpoint to the second-to-last message.
    let side = d.call(
        "context.compile",
        json!({"session_id": sid, "side_request": true}),
    );
    let sm = side["request"]["messages"].as_array().unwrap();
    assert!(
        sm.last()
            .unwrap()
            .to_string()
            .find("cache_control")
            .is_none()
    );
    assert!(sm[sm.len() - 2].to_string().contains("cache_control"));
    let _: Value = side;
}
