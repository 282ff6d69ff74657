//! `context.compile {format: "openai_chat"}`: every real session translated into a Chat
//! Completions body that the official OpenAI SDK's request types accept, with each tool
//! result answering a call of the assistant message before it, snapshotted.

use crate::common;

use common::{Daemon, pretty_preserving};
use serde_json::{Value, json};

/// The JSON schema of `CompletionCreateParams` generated from the official OpenAI SDK's
/// types (`scripts/chat-request-schema.py`): every object closed to keys it lacks.
fn chat_request_validator() -> jsonschema::Validator {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../protocol/schema/chat-completions-request.schema.json"
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::draft202012::new(&schema).unwrap()
}

fn assert_accepted(v: &jsonschema::Validator, body: &Value, what: &str) {
    let errors: Vec<String> = v
        .iter_errors(body)
        .take(5)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what}: not a Chat Completions request: {errors:#?}"
    );
}

/// Every `tool` message answers a call of the assistant message before it, and every
/// call is answered.
fn assert_calls_answered(body: &Value, what: &str) {
    let mut open: Vec<String> = Vec::new();
    for m in body["messages"].as_array().unwrap() {
        match m["role"].as_str().unwrap() {
            "assistant" => {
                assert!(open.is_empty(), "{what}: calls {open:?} were not answered");
                open = m["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| c["id"].as_str().unwrap().to_string())
                    .collect();
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap();
                let at = open.iter().position(|o| o == id);
                assert!(
                    at.is_some(),
                    "{what}: a result for {id}, which was not called"
                );
                open.retain(|o| o != id);
            }
            _ => assert!(open.is_empty(), "{what}: calls {open:?} were not answered"),
        }
    }
}

#[test]
fn every_fixture_translates_into_a_request_the_openai_sdk_accepts() {
    let d = Daemon::start();
    let validator = chat_request_validator();
    let mut translated = 0;
    for f in common::fixture_files() {
        let name = f
            .strip_prefix(common::fixtures())
            .unwrap()
            .display()
            .to_string();
        let jsonl = std::fs::read_to_string(&f).unwrap();
        let r = match d.try_call(
            "session.import",
            json!({"jsonl": jsonl, "fallback_cwd": "/tmp/openai-chat"}),
        ) {
            Ok(r) => r,
            // A single line of a kind that is not conversation (a snapshot, a summary).
            Err(e) if e.to_string().contains("holds no records") => continue,
            Err(e) => panic!("{name}: {e}"),
        };
        let sid = r["session_id"].as_str().unwrap();
        let last = d.call("transcript.read", json!({"session_id": sid, "limit": 5000}))["records"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["timestamp"]
            .clone();
        let messages = d.call("context.compile", json!({"session_id": sid, "now": last}));
        let raw =
            d.compile_body_with(json!({"session_id": sid, "now": last, "format": "openai_chat"}));
        let body: Value = serde_json::from_str(&raw).unwrap();
        assert_accepted(&validator, &body, &name);
        assert_calls_answered(&body, &name);
        assert_eq!(body["model"], messages["request"]["model"], "{name}");
        assert_eq!(body["messages"][0]["role"], "system", "{name}");
        assert!(
            !raw.contains("cache_control"),
            "{name}: a cache marker is left"
        );
        assert!(!raw.contains("\"thinking\""), "{name}: thinking is left");
        // Every call of the compiled request is kept, under the same id.
        let calls: Vec<&str> = messages["request"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["content"].as_array().into_iter().flatten())
            .filter(|b| b["type"] == "tool_use")
            .map(|b| b["id"].as_str().unwrap())
            .collect();
        let translated_calls: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        assert_eq!(calls, translated_calls, "{name}");
        // Deterministic: the same compile gives the same bytes.
        let again =
            d.compile_body_with(json!({"session_id": sid, "now": last, "format": "openai_chat"}));
        assert_eq!(raw, again, "{name}");
        let snap = name.replace(['/', '.'], "_");
        insta::assert_snapshot!(snap, pretty_preserving(&raw));
        translated += 1;
    }
    assert!(
        translated >= 5,
        "only {translated} fixtures were translated"
    );
}

/// The schema check can fail: it refuses what the SDK's request types do not define.
#[test]
fn the_chat_schema_refuses_what_the_sdk_does_not_define() {
    let v = chat_request_validator();
    let good = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    assert!(v.is_valid(&good));
    for bad in [
        json!({"model": "m", "messages": [{"role": "user", "content": "hi", "cache_control": {"type": "ephemeral"}}]}),
        json!({"model": "m", "messages": [], "system": "s"}),
        json!({"model": "m", "messages": [{"role": "tool", "content": "x"}]}),
    ] {
        assert!(!v.is_valid(&bad), "accepted {bad}");
    }
}
