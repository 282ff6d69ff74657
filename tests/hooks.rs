//! Hooks through a real daemon: settings files in Claude Code's format, the
//! events ctxd fires itself and those the client asks for, decisions, and the context
//! hooks add to the compiled request. What a hook may not do is `hooks_bounds.rs`.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::Daemon;
use common::hooks::*;
use ctxd_protocol::SessionEvent;
use serde_json::{Value, json};

#[test]
fn session_start_context_is_in_the_first_compile() {
    let d = Daemon::start();
    let json_out = r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"TEXT_FROM_JSON"}}"#;
    let p = project_with(
        &d,
        &hooks("SessionStart", None, &[&format!("echo '{json_out}'")]),
    );
    // A plain-text hook in the local file adds its stdout too.
    write_settings(
        &p.join(".claude").join("settings.local.json"),
        &hooks(
            "SessionStart",
            Some("startup"),
            &["echo PLAIN_TEXT_CONTEXT"],
        ),
    );
    let sid = new_session(&d, &p);
    let c = d.call("context.compile", json!({"session_id": sid}));
    let text = c["request"]["messages"].to_string();
    assert!(text.contains("TEXT_FROM_JSON"), "{text}");
    assert!(text.contains("PLAIN_TEXT_CONTEXT"), "{text}");
    assert!(text.contains("SessionStart hook"), "rendered by us: {text}");
    let carried = c["metadata"]["hook_contexts"].as_array().unwrap();
    assert_eq!(carried.len(), 1, "{}", c["metadata"]);
    assert_eq!(carried[0]["hook_event_name"], "SessionStart");
    // It was written with the session: the first record, before any prompt.
    let recs = records(&d, &sid);
    assert_eq!(recs[0]["attachment"]["type"], "hook_additional_context");
    assert_eq!(
        recs[0]["attachment"]["content"],
        json!(["TEXT_FROM_JSON", "PLAIN_TEXT_CONTEXT"])
    );
}

#[test]
fn a_blocking_user_prompt_submit_hook_refuses_the_append_and_writes_nothing() {
    let d = Daemon::start();
    let p = project_with(
        &d,
        &hooks(
            "UserPromptSubmit",
            None,
            &[
                "grep -q forbidden && { echo 'REASON: no forbidden words' >&2; exit 2; }; echo ok-context",
            ],
        ),
    );
    let sid = new_session(&d, &p);
    let before = records(&d, &sid).len();
    let err = d
        .try_call(
            "transcript.append",
            json!({"session_id": sid, "records": [{"type": "user", "content": "a forbidden prompt"}]}),
        )
        .unwrap_err();
    assert_eq!(err["code"], ctxd_protocol::HOOK_BLOCKED, "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("REASON: no forbidden words"),
        "{err}"
    );
    assert_eq!(err["data"]["hook_event_name"], "UserPromptSubmit");
    assert_eq!(records(&d, &sid).len(), before, "nothing written");

    // An allowed prompt gets the hook's stdout as context, right after it.
    let r = d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "a fine prompt"}]}),
    );
    assert_eq!(r["appended"].as_array().unwrap().len(), 2);
    let recs = records(&d, &sid);
    let n = recs.len();
    assert_eq!(recs[n - 2]["content"][0]["text"], "a fine prompt");
    assert_eq!(recs[n - 1]["attachment"]["type"], "hook_additional_context");
    assert_eq!(recs[n - 1]["attachment"]["content"], json!(["ok-context"]));
    // Tool results and injected context are not prompts: no hook runs.
    let r = d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "is_meta": true, "content": "forbidden meta"}]}),
    );
    assert_eq!(r["appended"].as_array().unwrap().len(), 1);
}

#[test]
fn pre_tool_use_denies_allows_and_rewrites_the_input() {
    let d = Daemon::start();
    let decide = r#"input=$(cat); case "$input" in *'rm -rf'*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no rm -rf"}}';; *) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"ls -la"},"additionalContext":"listing is safe"}}';; esac"#;
    let settings = json!({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": decide}]},
        {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "echo 'not in src' >&2; exit 2"}]}
    ]}});
    let p = project_with(&d, &settings);
    let sid = new_session(&d, &p);

    let o = d.call(
        "hooks.pre_tool_use",
        json!({"session_id": sid, "tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}),
    );
    assert_eq!(o["decision"], "deny");
    assert_eq!(o["reason"], "no rm -rf");
    assert!(o.get("updated_input").is_none());

    let o = d.call(
        "hooks.pre_tool_use",
        json!({"session_id": sid, "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"}),
    );
    assert_eq!(o["decision"], "allow");
    assert_eq!(o["updated_input"], json!({"command": "ls -la"}));
    assert_eq!(o["additional_context"], json!(["listing is safe"]));
    // The context was appended for the model.
    let last = o["last_uuid"].as_str().unwrap();
    let recs = records(&d, &sid);
    let rec = recs.iter().find(|r| r["uuid"] == last).unwrap();
    assert_eq!(rec["attachment"]["hook_event_name"], "PreToolUse");

    let o = d.call(
        "hooks.pre_tool_use",
        json!({"session_id": sid, "tool_name": "Edit", "tool_input": {"file_path": "/x"}}),
    );
    assert_eq!(o["decision"], "deny");
    assert_eq!(o["reason"], "not in src");
    assert_eq!(o["results"][0]["exit_code"], 2);

    let o = d.call(
        "hooks.pre_tool_use",
        json!({"session_id": sid, "tool_name": "Read", "tool_input": {"file_path": "/x"}}),
    );
    assert_eq!(o["ran"], 0);
    assert!(o.get("decision").is_none());

    // Bad input names its field and runs nothing.
    let e = d
        .try_call(
            "hooks.pre_tool_use",
            json!({"session_id": sid, "tool_name": "Bash", "tool_input": "ls"}),
        )
        .unwrap_err();
    assert_eq!(e["data"]["field"], "tool_input");
}

/// W = 20,000, O = 2,000 → autocompact at 5,000 tokens.
fn small_session(d: &Daemon, cwd: &Path, mut settings: Value) -> String {
    settings["hooks"]["trust_project"] = json!(true);
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

fn grow(d: &Daemon, sid: &str, turns: usize) {
    for i in 0..turns {
        d.call(
            "transcript.append",
            json!({"session_id": sid, "records": [
                {"type": "user", "content": format!("question {i}: {}", "please look at this ".repeat(300))},
                {"type": "assistant", "content": format!("answer {i}")}
            ]}),
        );
    }
}

#[test]
fn session_start_runs_again_after_compaction_with_source_compact() {
    let d = Daemon::start();
    let cmd = r#"case "$(cat)" in *'"source":"compact"'*) echo COMPACT_CONTEXT;; *) echo STARTUP_CONTEXT;; esac"#;
    let p = project_with(&d, &hooks("SessionStart", None, &[cmd]));
    let sid = small_session(&d, &p, json!({}));
    let first = d.call("context.compile", json!({"session_id": sid}));
    assert!(first["request"].to_string().contains("STARTUP_CONTEXT"));
    grow(&d, &sid, 4);
    let report = d.call("context.compact", json!({"session_id": sid}));
    let c = d.call("context.compile", json!({"session_id": sid}));
    let text = c["request"]["messages"].to_string();
    assert!(text.contains("COMPACT_CONTEXT"), "{text}");
    // Its record follows the new history's head (boundary, summary).
    let recs = records(&d, &sid);
    let b = recs
        .iter()
        .position(|r| r["uuid"] == report["boundary_uuid"])
        .unwrap();
    assert_eq!(recs[b + 1]["is_compact_summary"], true);
    let ctx_at = recs
        .iter()
        .rposition(|r| r["attachment"]["content"] == json!(["COMPACT_CONTEXT"]))
        .unwrap();
    assert!(ctx_at > b + 1);
    let carried = c["metadata"]["hook_contexts"].as_array().unwrap();
    assert_eq!(carried.len(), 1, "only the new history's context is shown");
    assert_eq!(carried[0]["uuid"], recs[ctx_at]["uuid"]);
}

async fn wait_for<F: Fn(&SessionEvent) -> bool>(
    sub: &mut ctx_client::Subscription<SessionEvent>,
    what: &str,
    want: F,
) -> SessionEvent {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        match tokio::time::timeout_at(deadline, sub.next()).await {
            Ok(Some(Ok(ev))) if want(&ev) => return ev,
            Ok(Some(Ok(_))) => {}
            other => panic!("no {what}: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_compact_text_reaches_the_summariser_and_post_compact_sees_the_summary() {
    let d = Daemon::start();
    let seen_summary = d.dir.path().join("post-compact-input.json");
    let p = project_with(
        &d,
        &json!({"hooks": {
            "PreCompact": [{"matcher": "manual", "hooks": [{"type": "command", "command": "echo 'Keep every parser decision: PRESERVE_PARSER_NOTES'"}]}],
            "PostCompact": [{"hooks": [{"type": "command", "command": format!("cat > {}", sh_quote(&seen_summary))}]}]
        }}),
    );
    // The client summariser is our fake provider: we see the request it gets.
    let sid = small_session(
        &d,
        &p,
        json!({"summariser": {"kind": "client", "timeout_secs": 20}}),
    );
    grow(&d, &sid, 3);
    let client = d.client().await;
    let mut sub = client.subscribe(&sid).await.unwrap();
    let socket = d.socket.clone();
    let sid2 = sid.clone();
    let compact = tokio::task::spawn_blocking(move || {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "context.compact",
            "params": {"session_id": sid2, "instructions": "Mention the tests."}})
        .to_string();
        common::raw_http(&socket, &body).1
    });
    let ev = wait_for(&mut sub, "summary_requested", |e| {
        matches!(e, SessionEvent::SummaryRequested { .. })
    })
    .await;
    let SessionEvent::SummaryRequested {
        request_id,
        request,
        ..
    } = ev
    else {
        unreachable!()
    };
    let prompt = request.to_string();
    let mine = prompt
        .find("Mention the tests.")
        .expect("caller's instructions");
    let hooks = prompt
        .find("PRESERVE_PARSER_NOTES")
        .expect("PreCompact stdout in the summary request");
    assert!(mine < hooks, "the caller's instructions come first");
    let _: Value = client
        .call(
            "context.provide_summary",
            json!({"request_id": request_id, "text": "<summary>THE_SUMMARY_TEXT</summary>"}),
        )
        .await
        .unwrap();
    let done = compact.await.unwrap();
    assert!(done.contains("\"trigger\":\"manual\""), "{done}");
    wait_for(&mut sub, "PostCompact hook_finished", |e| {
        matches!(e, SessionEvent::HookFinished { hook_event_name, .. } if hook_event_name == "PostCompact")
    })
    .await;
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(&seen_summary).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PostCompact");
    assert_eq!(input["trigger"], "manual");
    assert!(
        input["compact_summary"]
            .as_str()
            .unwrap()
            .contains("THE_SUMMARY_TEXT")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settings_file_edited_mid_session_is_announced_and_applies_to_the_next_event() {
    let d = Daemon::start();
    let p = project_with(&d, &json!({}));
    let sid = new_session(&d, &p);
    let client = d.client().await;
    let mut sub = client.subscribe(&sid).await.unwrap();
    let r = d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "before"}]}),
    );
    assert_eq!(r["appended"].as_array().unwrap().len(), 1, "no hook yet");

    write_settings(
        &project_settings(&p),
        &hooks("UserPromptSubmit", None, &["echo ADDED_MID_SESSION"]),
    );
    let ev = wait_for(&mut sub, "hooks_config_changed", |e| {
        matches!(e, SessionEvent::HooksConfigChanged { status, hooks, .. } if status == "loaded" && *hooks == 1)
    })
    .await;
    let SessionEvent::HooksConfigChanged { source, file, .. } = ev else {
        unreachable!()
    };
    assert_eq!(source, "project");
    assert_eq!(PathBuf::from(file), project_settings(&p));

    let r = d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "after"}]}),
    );
    assert_eq!(r["appended"].as_array().unwrap().len(), 2);
    let c = d.call("context.compile", json!({"session_id": sid}));
    assert!(c["request"].to_string().contains("ADDED_MID_SESSION"));
    // The hook's run was announced on the subscription.
    let ev = wait_for(&mut sub, "hook_finished", |e| {
        matches!(e, SessionEvent::HookFinished { hook_event_name, .. } if hook_event_name == "UserPromptSubmit")
    })
    .await;
    let SessionEvent::HookFinished {
        command,
        exit_code,
        output_cut,
        source,
        ..
    } = ev
    else {
        unreachable!()
    };
    assert_eq!(command, "echo ADDED_MID_SESSION");
    assert_eq!(exit_code, Some(0));
    assert!(!output_cut);
    assert_eq!(source, "project");
}

#[test]
fn stop_and_post_tool_use_feedback_reaches_the_model() {
    let d = Daemon::start();
    let p = project_with(
        &d,
        &json!({"hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "echo '{\"decision\":\"block\",\"reason\":\"the tests still fail\"}'"}]}],
            "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "echo 'lint: missing semicolon' >&2; exit 2"}]}],
            "SubagentStart": [{"matcher": "Explore", "hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"SubagentStart\",\"additionalContext\":\"for the sub-agent\"}}'"}]}]
        }}),
    );
    let sid = new_session(&d, &p);
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "fix it"}, {"type": "assistant", "content": "done"}]}),
    );
    let o = d.call(
        "hooks.stop",
        json!({"session_id": sid, "stop_hook_active": false}),
    );
    assert_eq!(o["decision"], "block");
    assert_eq!(o["reason"], "the tests still fail");
    assert_eq!(o["appended"].as_array().unwrap().len(), 1);
    let o = d.call(
        "hooks.post_tool_use",
        json!({"session_id": sid, "tool_name": "Edit", "tool_input": {"file_path": "/a.rs"}, "tool_response": {"ok": true}}),
    );
    assert_eq!(o["decision"], "block");
    let o = d.call(
        "hooks.subagent_start",
        json!({"session_id": sid, "agent_id": "a1", "agent_type": "Explore"}),
    );
    assert_eq!(o["additional_context"], json!(["for the sub-agent"]));
    assert!(
        o.get("appended").is_none(),
        "a sub-agent's context is not the main thread's"
    );
    let c = d.call("context.compile", json!({"session_id": sid}));
    let text = c["request"]["messages"].to_string();
    assert!(
        text.contains("Feedback from the user's Stop hook"),
        "{text}"
    );
    assert!(text.contains("the tests still fail"));
    assert!(text.contains("lint: missing semicolon"));
    assert!(!text.contains("for the sub-agent"));
    assert_eq!(c["metadata"]["hook_contexts"].as_array().unwrap().len(), 2);
}

/// Lines of a log a hook appends its stdin to, once it holds `n` lines (bounded wait on
/// the file itself: the hook runs fire-and-forget before anyone could subscribe).
fn log_lines(path: &Path, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let lines: Vec<Value> = std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if lines.len() >= n {
            return lines;
        }
        assert!(
            Instant::now() < deadline,
            "{} holds {} lines",
            path.display(),
            lines.len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_loaded_file_changed_and_cwd_changed_fire_and_forget() {
    let d = Daemon::start();
    let p = project(&d, "proj");
    let other = project(&d, "other");
    std::fs::write(p.join("CLAUDE.md"), "Project rules.\n").unwrap();
    let log = |n: &str| d.dir.path().join(n);
    // Each hook appends its input as one line (stdin has no newline of its own).
    let append_to = |n: &str| {
        format!(
            "cat >> {}; echo >> {}",
            sh_quote(&log(n)),
            sh_quote(&log(n))
        )
    };
    write_settings(
        &project_settings(&p),
        &json!({"hooks": {
            "InstructionsLoaded": [{"matcher": "session_start", "hooks": [{"type": "command", "command": append_to("instructions.log")}]}],
            "FileChanged": [{"matcher": ".envrc|.env", "hooks": [{"type": "command", "command": append_to("file_changed.log")}]}],
            "CwdChanged": [{"hooks": [{"type": "command", "command": append_to("cwd_changed.log")}]}]
        }}),
    );
    let sid = new_session(&d, &p);
    let loaded = log_lines(&log("instructions.log"), 1);
    assert_eq!(loaded[0]["hook_event_name"], "InstructionsLoaded");
    assert_eq!(loaded[0]["load_reason"], "session_start");
    assert_eq!(loaded[0]["memory_type"], "Project");
    assert!(
        loaded[0]["file_path"]
            .as_str()
            .unwrap()
            .ends_with("proj/CLAUDE.md")
    );

    let client = d.client().await;
    let mut sub = client.subscribe(&sid).await.unwrap();
    let is_file_changed = |e: &SessionEvent| matches!(e, SessionEvent::HookFinished { hook_event_name, .. } if hook_event_name == "FileChanged");
    std::fs::write(p.join(".envrc"), "export A=1\n").unwrap();
    wait_for(&mut sub, "FileChanged for .envrc", is_file_changed).await;
    let changed = log_lines(&log("file_changed.log"), 1);
    assert_eq!(changed[0]["event"], "add");
    assert_eq!(
        changed[0]["file_path"],
        p.join(".envrc").display().to_string()
    );
    // A file the matcher does not name fires nothing; the next edit of .envrc is a change.
    std::fs::write(p.join("unrelated.txt"), "x").unwrap();
    std::fs::write(p.join(".envrc"), "export A=2\n").unwrap();
    wait_for(&mut sub, "FileChanged for .envrc again", is_file_changed).await;
    let changed = log_lines(&log("file_changed.log"), 2);
    assert_eq!(changed.len(), 2, "{changed:?}");
    assert_eq!(changed[1]["event"], "change");

    d.call("session.update", json!({"session_id": sid, "cwd": other}));
    wait_for(&mut sub, "CwdChanged", |e| {
        matches!(e, SessionEvent::HookFinished { hook_event_name, .. } if hook_event_name == "CwdChanged")
    })
    .await;
    let moved = log_lines(&log("cwd_changed.log"), 1);
    assert_eq!(moved[0]["old_cwd"], p.display().to_string());
    assert_eq!(moved[0]["new_cwd"], other.display().to_string());
    assert_eq!(moved[0]["cwd"], other.display().to_string());
    // The watch list followed the cwd.
    std::fs::write(other.join(".env"), "B=1\n").unwrap();
    wait_for(&mut sub, "FileChanged in the new cwd", is_file_changed).await;
    let changed = log_lines(&log("file_changed.log"), 3);
    assert_eq!(
        changed[2]["file_path"],
        other.join(".env").display().to_string()
    );
}

/// `hooks.*` calls run as their connection like every other method: the hook events
/// they cause are `own` on that connection's subscription, and not on another's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hook_events_of_a_hooks_call_are_marked_own_on_its_connection() {
    let d = Daemon::start();
    let p = project_with(&d, &hooks("PostToolUse", Some("Bash"), &["true"]));
    let sid = new_session(&d, &p);
    let caller = d.client().await;
    let other = d.client().await;
    let mut mine = caller
        .session_subscribe(ctxd_protocol::SubscribeParams::from_now(&sid))
        .await
        .unwrap();
    let mut theirs = other
        .session_subscribe(ctxd_protocol::SubscribeParams::from_now(&sid))
        .await
        .unwrap();
    let _: Value = caller
        .call(
            "hooks.post_tool_use",
            json!({"session_id": sid, "tool_name": "Bash", "tool_input": {"command": "ls"},
                   "tool_response": "ok"}),
        )
        .await
        .unwrap();
    for (sub, own) in [(&mut mine, true), (&mut theirs, false)] {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let n = match tokio::time::timeout_at(deadline, sub.next()).await {
                Ok(Some(Ok(n))) => n,
                other => panic!("no hook_started: {other:?}"),
            };
            if let SessionEvent::HookStarted { .. } = n.event {
                assert_eq!(n.own, own, "{n:?}");
                break;
            }
        }
    }
}

/// `PermissionRequest` hooks allow (with a rewritten input) or deny a tool call before
/// the user is asked; `SessionEnd` hooks run with the reason as the matcher's value, and
/// their output is ignored.
#[test]
fn permission_request_decides_and_session_end_runs() {
    let d = Daemon::start();
    let log = d.dir.path().join("ended.log");
    let decide = r#"input=$(cat); case "$input" in *'"Bash"'*) echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"no shell today"}}}';; *) echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"file_path":"/tmp/safe"}}}}';; esac"#;
    let ended = format!("cat >> {}; echo ignored; exit 2", sh_quote(&log));
    let settings = json!({"hooks": {
        "PermissionRequest": [{"matcher": "Bash|Write", "hooks": [{"type": "command", "command": decide}]}],
        "SessionEnd": [{"matcher": "logout", "hooks": [{"type": "command", "command": ended}]}]
    }});
    let p = project_with(&d, &settings);
    let sid = new_session(&d, &p);
    let o = d.call(
        "hooks.permission_request",
        json!({"session_id": sid, "tool_name": "Bash", "tool_input": {"command": "ls"}}),
    );
    assert_eq!(o["decision"], "deny", "{o}");
    assert_eq!(o["reason"], "no shell today");
    let o = d.call(
        "hooks.permission_request",
        json!({"session_id": sid, "tool_name": "Write", "tool_input": {"file_path": "/etc/x"}}),
    );
    assert_eq!(o["decision"], "allow", "{o}");
    assert_eq!(o["updated_input"], json!({"file_path": "/tmp/safe"}));
    let o = d.call(
        "hooks.permission_request",
        json!({"session_id": sid, "tool_name": "Read", "tool_input": {}}),
    );
    assert_eq!(o["ran"], 0);
    let o = d.call(
        "hooks.session_end",
        json!({"session_id": sid, "reason": "clear"}),
    );
    assert_eq!(o["ran"], 0, "the matcher is the reason");
    let o = d.call(
        "hooks.session_end",
        json!({"session_id": sid, "reason": "logout"}),
    );
    assert_eq!(o["ran"], 1);
    assert!(o.get("decision").is_none(), "output ignored: {o}");
    let got: Value = serde_json::from_str(std::fs::read_to_string(&log).unwrap().trim()).unwrap();
    assert_eq!(got["hook_event_name"], "SessionEnd");
    assert_eq!(got["reason"], "logout");
    let listed = d.call("hooks.list", json!({"session_id": sid}));
    assert!(
        !listed.to_string().contains("not an event ctxd runs"),
        "{listed}"
    );
}
