//! Hooks answered by something other than a command, through a real daemon: an `http`
//! hook's endpoint, and `prompt` and `agent` hooks, which ask the session's provider (a
//! scripted Messages API here).

use crate::common;

use common::Daemon;
use common::hooks::*;
use serde_json::{Value, json};

/// A hook of type `http` gets the event's JSON in a POST; its JSON answer decides as a
/// command hook's stdout does, and a header fills only the variables `allowedEnvVars`
/// lists. A failing endpoint is a non-blocking error.
#[test]
fn http_hooks_post_the_event_and_their_answer_decides() {
    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(async {
        Mock::given(method("POST"))
            .and(path("/guard"))
            .and(header("x-team", "blue-"))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "deny",
                "permissionDecisionReason": "denied over http"}})),
            )
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/down"))
            .respond_with(ResponseTemplate::new(503))
            .mount(&server)
            .await;
    });
    let d = Daemon::start();
    let settings = json!({"env": {"TEAM": "blue", "OTHER": "secret"}, "hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "http", "url": format!("{}/guard", server.uri()),
            "headers": {"X-Team": "$TEAM-${OTHER}"}, "allowedEnvVars": ["TEAM"]}]},
        {"matcher": "Read", "hooks": [{"type": "http", "url": format!("{}/down", server.uri())}]}
    ]}});
    let p = project_with(&d, &settings);
    let sid = new_session(&d, &p);
    let o = d.call(
        "hooks.pre_tool_use",
        json!({"session_id": sid, "tool_name": "Bash", "tool_input": {"command": "ls"}}),
    );
    assert_eq!(o["decision"], "deny", "{o}");
    assert_eq!(o["reason"], "denied over http");
    let requests = rt.block_on(server.received_requests()).unwrap();
    let sent: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(sent["hook_event_name"], "PreToolUse");
    assert_eq!(sent["tool_input"]["command"], "ls");
    let o = d.call(
        "hooks.pre_tool_use",
        json!({"session_id": sid, "tool_name": "Read", "tool_input": {"file_path": "/x"}}),
    );
    assert!(o.get("decision").is_none(), "{o}");
    assert!(o["errors"][0].as_str().unwrap().contains("HTTP 503"), "{o}");
    let listed = d.call("hooks.list", json!({"session_id": sid}));
    assert!(!listed.to_string().contains("not run by ctxd"), "{listed}");
}

/// A `prompt` hook asks the session's provider: the event's JSON goes where the prompt
/// says `$ARGUMENTS`, the hook's model is asked, and `{"ok": false, "reason"}` blocks a
/// Stop (the model continues with the reason) and stops the turn on another event.
#[test]
fn prompt_hooks_ask_the_sessions_provider_and_decide_by_its_answer() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    const KEY_VAR: &str = "CTXD_TEST_HOOK_KEY";
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    let answer = |text: &str| {
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_h", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "stop_sequence": null, "usage": {"input_tokens": 50, "output_tokens": 9}}))
    };
    // Each hook's prompt gets its own answer.
    let mount = |prompt: &str, text: &str| {
        Mock::given(method("POST"))
            .and(wiremock::matchers::body_string_contains(prompt))
            .respond_with(answer(text))
            .mount(&server)
    };
    rt.block_on(async {
        mount(
            "Are the tests green?",
            "{\"ok\": false, \"reason\": \"two tests still fail\"}",
        )
        .await;
        mount(
            "Is this command safe?",
            "```json\n{\"ok\": false, \"reason\": \"it deletes the repository\"}\n```",
        )
        .await;
    });
    // The key only in the home's environment file, as for a daemon `ctx` started.
    let d = Daemon::start_with_env(&[(KEY_VAR, "")]);
    {
        use std::os::unix::fs::PermissionsExt;
        let file = d.home.join("env");
        std::fs::write(&file, format!("{KEY_VAR}=sk-hook-test\n")).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let p = project_with(
        &d,
        &json!({"hooks": {
            "Stop": [{"hooks": [{"type": "prompt", "prompt": "Are the tests green? $ARGUMENTS", "model": "claude-haiku-4-5"}]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "Is this command safe?"}]}]
        }}),
    );
    let sid = d.call(
        "session.create",
        json!({"cwd": p, "no_git": true, "start_date": "2026-11-29",
               "settings": {"hooks": {"trust_project": true},
                            "provider": {"kind": "anthropic", "base_url": server.uri(), "api_key_env": KEY_VAR}}}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let listed = d.call("hooks.list", json!({"session_id": sid}));
    assert!(
        listed.to_string().contains("Are the tests green?"),
        "the prompt hook is listed: {listed}"
    );
    let o = d.call(
        "hooks.stop",
        json!({"session_id": sid, "stop_hook_active": false, "last_assistant_message": "All done."}),
    );
    assert_eq!(o["decision"], "block", "{o}");
    assert_eq!(o["reason"], "two tests still fail");
    let o = d.call(
        "hooks.pre_tool_use",
        json!({"session_id": sid, "tool_name": "Bash", "tool_input": {"command": "rm -rf ."}, "tool_use_id": "t1"}),
    );
    assert_eq!(o["continue"], false, "{o}");
    assert_eq!(o["stop_reason"], "it deletes the repository");
    // What the provider was asked: the hook's model, the event in the prompt.
    let requests = rt.block_on(server.received_requests()).unwrap();
    assert!(
        requests
            .iter()
            .all(|r| r.headers["x-api-key"] == "sk-hook-test")
    );
    let stop: Value = requests
        .iter()
        .map(|r| serde_json::from_slice::<Value>(&r.body).unwrap())
        .find(|b| b.to_string().contains("Are the tests green?"))
        .unwrap();
    assert_eq!(stop["model"], "claude-haiku-4-5");
    let asked = stop["messages"][0].to_string();
    assert!(
        asked.contains("hook_event_name") && asked.contains("All done."),
        "{asked}"
    );
    let pre: Value = requests
        .iter()
        .map(|r| serde_json::from_slice::<Value>(&r.body).unwrap())
        .find(|b| b.to_string().contains("Is this command safe?"))
        .unwrap();
    assert!(pre["messages"][0].to_string().contains("rm -rf ."));
}

/// Without a provider a prompt hook cannot be asked: a non-blocking error, reported.
#[test]
fn a_prompt_hook_without_a_provider_is_a_reported_error_that_blocks_nothing() {
    let d = Daemon::start();
    let p = project_with(
        &d,
        &json!({"hooks": {"Stop": [{"hooks": [{"type": "prompt", "prompt": "Done?"}]}]}}),
    );
    let sid = new_session(&d, &p);
    let o = d.call(
        "hooks.stop",
        json!({"session_id": sid, "stop_hook_active": false}),
    );
    assert!(o.get("decision").is_none(), "{o}");
    let results = o["results"].as_array().unwrap();
    assert!(
        results[0]["error"]
            .as_str()
            .unwrap()
            .contains("settings.provider"),
        "{o}"
    );
}

/// An `agent` hook's model may read and search the workspace before it answers: its
/// Grep runs in the session's directory, the result goes back, and its verdict decides.
#[test]
fn agent_hooks_search_the_workspace_before_they_answer() {
    use wiremock::matchers::{body_string_contains, method};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    const KEY_VAR: &str = "CTXD_TEST_AGENT_HOOK_KEY";
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    let message = |content: Value, stop: &str| {
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_a", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": content, "stop_reason": stop, "stop_sequence": null,
            "usage": {"input_tokens": 80, "output_tokens": 20}}))
    };
    rt.block_on(async {
        Mock::given(method("POST"))
            .and(body_string_contains("tool_result"))
            .respond_with(message(
                json!([{"type": "text", "text": "{\"ok\": false, \"reason\": \"a TODO is left in src/lib.rs\"}"}]),
                "end_turn",
            ))
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(message(
                json!([{"type": "tool_use", "id": "toolu_g", "name": "Grep", "input": {"pattern": "TODO"}}]),
                "tool_use",
            ))
            .with_priority(2)
            .mount(&server)
            .await;
    });
    let d = Daemon::start_with_env(&[(KEY_VAR, "sk-agent-hook")]);
    let p = project_with(
        &d,
        &json!({"hooks": {"Stop": [{"hooks": [{"type": "agent", "prompt": "Is the work finished? $ARGUMENTS"}]}]}}),
    );
    std::fs::create_dir_all(p.join("src")).unwrap();
    std::fs::write(p.join("src/lib.rs"), "fn a() {}\n// TODO: handle errors\n").unwrap();
    let sid = d.call(
        "session.create",
        json!({"cwd": p, "no_git": true, "start_date": "2026-11-29",
               "settings": {"hooks": {"trust_project": true},
                            "provider": {"kind": "anthropic", "base_url": server.uri(), "api_key_env": KEY_VAR}}}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let o = d.call(
        "hooks.stop",
        json!({"session_id": sid, "stop_hook_active": false}),
    );
    assert_eq!(o["decision"], "block", "{o}");
    assert_eq!(o["reason"], "a TODO is left in src/lib.rs");
    let requests = rt.block_on(server.received_requests()).unwrap();
    assert_eq!(requests.len(), 2);
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    assert!(second["tools"].to_string().contains("Grep"));
    let result = &second["messages"][2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_g");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("lib.rs:2: // TODO: handle errors"),
        "{result}"
    );
}
