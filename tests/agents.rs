//! Sub-agents: a thread started for one of a session's tool calls compiles on its own
//! (system prompt, tools, thresholds, compaction), starts from the session's file state,
//! answers its parent as the call's tool result, and keeps its thread across restart,
//! fork, delete and import.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::Daemon;
use serde_json::{Value, json};

const T0: &str = "2026-11-29T10:00:00Z";

fn project(d: &Daemon) -> PathBuf {
    let p = d.dir.path().join("proj");
    std::fs::create_dir_all(p.join(".claude")).unwrap();
    std::fs::write(p.join("CLAUDE.md"), "Always run the linter.\n").unwrap();
    p
}

/// A session whose last response calls the `Task` tool (`toolu_task`), unanswered.
fn parent(d: &Daemon, cwd: &Path, settings: Value) -> String {
    let sid = d.call(
        "session.create",
        json!({"cwd": cwd, "no_git": true, "start_date": "2026-11-29", "settings": settings,
               "tools": [{"name": "Read", "input_schema": {"type": "object"}},
                         {"name": "Task", "input_schema": {"type": "object"}}]}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "user", "content": "where is the config?", "timestamp": T0},
            {"type": "assistant", "message_id": "m1", "timestamp": T0,
             "usage": {"input_tokens": 3000, "output_tokens": 40},
             "content": [{"type": "tool_use", "id": "toolu_task", "name": "Task",
                          "input": {"subagent_type": "Explore", "prompt": "find the config"}}]}
        ]}),
    );
    sid
}

fn start(d: &Daemon, sid: &str, extra: Value) -> Value {
    let mut p = json!({"session_id": sid, "tool_use_id": "toolu_task", "agent_type": "Explore",
                       "agent_id": "explorer", "prompt": "Find the config file."});
    for (k, v) in extra.as_object().unwrap() {
        p[k] = v.clone();
    }
    d.call("agent.start", p)
}

fn compile(d: &Daemon, sid: &str, agent: Option<&str>) -> Value {
    let mut p = json!({"session_id": sid, "now": T0});
    if let Some(a) = agent {
        p["agent_id"] = json!(a);
    }
    d.call("context.compile", p)
}

fn body_text(c: &Value) -> String {
    c["request"].to_string()
}

fn answer(d: &Daemon, sid: &str, text: &str) {
    d.call(
        "transcript.append",
        json!({"session_id": sid, "agent_id": "explorer", "records": [
            {"type": "assistant", "message_id": "a1", "timestamp": T0,
             "usage": {"input_tokens": 500, "output_tokens": 12},
             "content": [{"type": "text", "text": text}]}
        ]}),
    );
}

#[test]
fn a_sub_agent_compiles_its_own_thread_and_answers_its_parent() {
    let d = Daemon::start();
    let cwd = project(&d);
    let sid = parent(&d, &cwd, json!({}));
    let started = start(
        &d,
        &sid,
        json!({"system": {"static": [{"name": "role", "text": "You search a codebase and report paths."}],
                          "dynamic": []},
               "tools": [{"name": "Read", "input_schema": {"type": "object"}}]}),
    );
    let thread = started["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(thread, sid);
    assert_eq!(started["session"]["agent"]["agent_id"], "explorer");
    assert_eq!(
        started["session"]["agent"]["parent_session_id"],
        sid.as_str()
    );
    assert_eq!(started["session"]["agent"]["tool_use_id"], "toolu_task");

    // The thread: its own system prompt, tools and task; nothing of the parent's turn.
    let c = compile(&d, &sid, Some("explorer"));
    let req = &c["request"];
    assert!(body_text(&c).contains("You search a codebase and report paths."));
    let tools: Vec<&str> = req["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["Read"]);
    assert!(body_text(&c).contains("Find the config file."));
    assert!(!body_text(&c).contains("where is the config?"));
    // Addressed by its own id, the same request.
    let by_id = d.compile_body_with(json!({"session_id": thread, "now": T0}));
    assert_eq!(
        by_id,
        d.compile_body_with(json!({"session_id": sid, "agent_id": "explorer", "now": T0}))
    );

    // The parent is untouched by the thread.
    let p = compile(&d, &sid, None);
    assert!(!body_text(&p).contains("Find the config file."));

    answer(&d, &sid, "The config is in config/app.toml.");
    let read = d.call(
        "transcript.read",
        json!({"session_id": sid, "agent_id": "explorer"}),
    );
    let thread_records = read["records"].as_array().unwrap();
    assert_eq!(
        thread_records.last().unwrap()["content"][0]["text"],
        "The config is in config/app.toml."
    );

    let done = d.call(
        "agent.finish",
        json!({"session_id": sid, "agent_id": "explorer"}),
    );
    assert!(done["agent"]["finished_at"].is_string());
    assert_eq!(done["agent"]["result_uuid"], done["uuid"]);
    let p = compile(&d, &sid, None);
    let msgs = p["request"]["messages"].as_array().unwrap();
    let last = &msgs.last().unwrap()["content"][0];
    assert_eq!(last["type"], "tool_result");
    assert_eq!(last["tool_use_id"], "toolu_task");
    assert_eq!(
        last["content"][0]["text"],
        "The config is in config/app.toml."
    );

    let list = d.call("agent.list", json!({"session_id": sid}));
    let agents = list["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 1);
    assert_eq!(agents[0]["agent_id"], "explorer");
    assert_eq!(agents[0]["session_id"], thread.as_str());
    assert_eq!(agents[0]["record_count"], thread_records.len());
    // Threads are not sessions one lists.
    let sessions = d.call("session.list", json!({}));
    assert!(
        sessions["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["session_id"] != thread.as_str())
    );
}

#[test]
fn the_thread_has_its_own_window_thresholds_and_compaction() {
    let d = Daemon::start();
    let cwd = project(&d);
    let sid = parent(&d, &cwd, json!({}));
    start(
        &d,
        &sid,
        json!({"model": {"model": "small-local", "context_window": 32000, "max_output_tokens": 4000}}),
    );
    let parent_tokens = &compile(&d, &sid, None)["metadata"]["context"];
    let thread_tokens = &compile(&d, &sid, Some("explorer"))["metadata"]["context"];
    assert_ne!(
        parent_tokens["autocompact_threshold"], thread_tokens["autocompact_threshold"],
        "{parent_tokens} / {thread_tokens}"
    );
    assert!(thread_tokens["autocompact_threshold"].as_u64().unwrap() < 32000);

    // A compaction of the thread leaves the parent as it was.
    answer(&d, &sid, "Found it.");
    let before = d.compile_body_with(json!({"session_id": sid, "now": T0}));
    let thread = d.call("agent.list", json!({"session_id": sid}))["agents"][0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let compacted = d.call(
        "context.compact",
        json!({"session_id": thread, "instructions": "Keep the paths."}),
    );
    assert!(
        compacted["summarised_records"].as_u64().unwrap() >= 2,
        "{compacted}"
    );
    let after = d.compile_body_with(json!({"session_id": sid, "now": T0}));
    assert_eq!(before, after);
    let c = compile(&d, &sid, Some("explorer"));
    let records = d.call("transcript.read", json!({"session_id": thread}))["records"].clone();
    assert!(
        records
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["subtype"] == "compact_boundary"),
        "the thread has its boundary"
    );
    assert!(
        body_text(&c).contains("This session continues an earlier conversation"),
        "{}",
        body_text(&c)
    );
}

#[test]
fn a_sub_agent_starts_from_what_its_parent_read() {
    let d = Daemon::start();
    let cwd = project(&d);
    let file = cwd.join("notes.txt");
    let original: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    std::fs::write(&file, &original).unwrap();
    let sid = parent(&d, &cwd, json!({}));
    d.call(
        "context.report_read",
        json!({"session_id": sid, "path": file}),
    );
    start(&d, &sid, json!({}));
    // Changed behind both threads' backs: the agent is told, as its parent would be.
    let before = std::fs::metadata(&file).unwrap().modified().unwrap();
    std::fs::write(&file, original.replace("line 10\n", "line ten\n")).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(before + Duration::from_secs(1))
        .unwrap();
    let c = compile(&d, &sid, Some("explorer"));
    assert!(body_text(&c).contains("line ten"), "{}", body_text(&c));
}

#[test]
fn light_instructions_leave_out_the_instruction_files() {
    let d = Daemon::start();
    let cwd = project(&d);
    let sid = parent(&d, &cwd, json!({}));
    start(&d, &sid, json!({}));
    assert!(body_text(&compile(&d, &sid, Some("explorer"))).contains("Always run the linter."));

    let d = Daemon::start();
    let cwd = project(&d);
    let sid = parent(&d, &cwd, json!({}));
    let s = start(&d, &sid, json!({"instructions": "light"}));
    assert_eq!(s["session"]["settings"]["instructions"]["disabled"], true);
    let c = compile(&d, &sid, Some("explorer"));
    assert!(!body_text(&c).contains("Always run the linter."));
    // The date stays.
    assert!(body_text(&c).contains("2026-11-29"), "{}", body_text(&c));
}

#[test]
fn subagent_start_hooks_give_their_context_to_the_thread() {
    let d = Daemon::start();
    let cwd = project(&d);
    std::fs::write(
        cwd.join(".claude/settings.json"),
        json!({"hooks": {"SubagentStart": [{"matcher": "Explore", "hooks": [{"type": "command",
            "command": "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"SubagentStart\",\"additionalContext\":\"Search tests/ first.\"}}'"}]}]}})
        .to_string(),
    )
    .unwrap();
    let sid = parent(&d, &cwd, json!({"hooks": {"trust_project": true}}));
    let s = start(&d, &sid, json!({}));
    assert_eq!(s["additional_context"], json!(["Search tests/ first."]));
    assert!(body_text(&compile(&d, &sid, Some("explorer"))).contains("Search tests/ first."));
    assert!(!body_text(&compile(&d, &sid, None)).contains("Search tests/ first."));
}

/// Input queued for a running sub-agent, on its thread, reaches the thread's next
/// compile and not the parent's.
#[test]
fn input_queued_on_a_thread_reaches_the_thread() {
    let d = Daemon::start();
    let cwd = project(&d);
    let sid = parent(&d, &cwd, json!({}));
    let thread = start(&d, &sid, json!({}))["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    d.call(
        "transcript.queue",
        json!({"session_id": thread, "text": "also check the tests folder"}),
    );
    assert!(
        body_text(&compile(&d, &sid, Some("explorer"))).contains("also check the tests folder")
    );
    assert!(!body_text(&compile(&d, &sid, None)).contains("also check the tests folder"));
}

/// A SubagentStop block keeps the agent going: the parent gets nothing, the thread gets
/// the reason; once the hook lets it stop, the answer goes through.
#[test]
fn a_subagent_stop_block_keeps_the_agent_going() {
    let d = Daemon::start();
    let cwd = project(&d);
    let marker = d.dir.path().join("allow");
    std::fs::write(
        cwd.join(".claude/settings.json"),
        json!({"hooks": {"SubagentStop": [{"hooks": [{"type": "command",
            "command": format!("test -e {} || {{ echo 'check the tests too' >&2; exit 2; }}", marker.display())}]}]}})
        .to_string(),
    )
    .unwrap();
    let sid = parent(&d, &cwd, json!({"hooks": {"trust_project": true}}));
    start(&d, &sid, json!({}));
    answer(&d, &sid, "Done looking.");
    let before = d.call("transcript.read", json!({"session_id": sid}));
    let e = d
        .try_call(
            "agent.finish",
            json!({"session_id": sid, "agent_id": "explorer"}),
        )
        .unwrap_err();
    assert_eq!(e["code"], -32050, "{e}");
    assert_eq!(
        d.call("transcript.read", json!({"session_id": sid})),
        before
    );
    let thread = compile(&d, &sid, Some("explorer"));
    assert!(body_text(&thread).contains("check the tests too"));
    std::fs::write(&marker, "").unwrap();
    let done = d.call(
        "agent.finish",
        json!({"session_id": sid, "agent_id": "explorer", "result": "Done, tests checked."}),
    );
    assert!(done["agent"]["finished_at"].is_string());
}

#[test]
fn sub_agents_keep_their_threads_across_restart_fork_and_delete() {
    let mut d = Daemon::start();
    let cwd = project(&d);
    let sid = parent(&d, &cwd, json!({}));
    start(&d, &sid, json!({}));
    answer(&d, &sid, "Found it in config/.");
    let thread_body =
        d.compile_body_with(json!({"session_id": sid, "agent_id": "explorer", "now": T0}));

    d.kill9();
    d.spawn();
    assert_eq!(
        d.compile_body_with(json!({"session_id": sid, "agent_id": "explorer", "now": T0})),
        thread_body
    );

    let fork = d.call("session.fork", json!({"session_id": sid}))["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let agents = d.call("agent.list", json!({"session_id": fork}));
    let forked = &agents["agents"][0];
    assert_eq!(forked["agent_id"], "explorer");
    assert_eq!(forked["parent_session_id"], fork.as_str());
    assert_eq!(
        d.compile_body_with(json!({"session_id": fork, "agent_id": "explorer", "now": T0})),
        thread_body
    );
    // The fork's agent answers the fork, not the original.
    d.call(
        "agent.finish",
        json!({"session_id": fork, "agent_id": "explorer"}),
    );
    assert!(body_text(&compile(&d, &fork, None)).contains("Found it in config/."));
    assert!(!body_text(&compile(&d, &sid, None)).contains("Found it in config/."));

    let thread = d.call("agent.list", json!({"session_id": sid}))["agents"][0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    d.call("session.delete", json!({"session_id": sid}));
    assert!(
        d.try_call("session.get", json!({"session_id": thread}))
            .is_err(),
        "the thread goes with its session"
    );
}

#[test]
fn bad_agent_calls_are_refused_and_change_nothing() {
    let d = Daemon::start();
    let cwd = project(&d);
    let sid = parent(&d, &cwd, json!({}));
    let refused = |method: &str, params: Value, says: &str| {
        let before = d.call("transcript.read", json!({"session_id": sid}));
        let agents = d.call("agent.list", json!({"session_id": sid}));
        let e = d.try_call(method, params).unwrap_err();
        assert!(
            e["message"].as_str().unwrap().contains(says),
            "{method}: {e}"
        );
        assert_eq!(
            d.call("transcript.read", json!({"session_id": sid})),
            before
        );
        assert_eq!(d.call("agent.list", json!({"session_id": sid})), agents);
    };
    refused(
        "agent.start",
        json!({"session_id": sid, "tool_use_id": "toolu_nope", "agent_type": "Explore"}),
        "no tool_use toolu_nope",
    );
    refused(
        "agent.start",
        json!({"session_id": sid, "tool_use_id": "toolu_task", "agent_type": " "}),
        "agent_type",
    );
    refused(
        "agent.start",
        json!({"session_id": sid, "tool_use_id": "toolu_task", "agent_type": "Explore", "agent_id": "main"}),
        "agent_id",
    );
    refused(
        "context.compile",
        json!({"session_id": sid, "agent_id": "ghost"}),
        "no sub-agent ghost",
    );
    refused(
        "agent.finish",
        json!({"session_id": sid, "agent_id": "ghost"}),
        "no sub-agent ghost",
    );

    let s = start(&d, &sid, json!({}));
    let thread = s["session"]["session_id"].as_str().unwrap().to_string();
    refused(
        "agent.start",
        json!({"session_id": sid, "tool_use_id": "toolu_task", "agent_type": "Explore", "agent_id": "explorer"}),
        "already has a sub-agent explorer",
    );
    refused(
        "agent.finish",
        json!({"session_id": sid, "agent_id": "explorer"}),
        "has not answered",
    );
    refused(
        "agent.finish",
        json!({"session_id": sid, "agent_id": "explorer", "result": 5}),
        "string or an array",
    );
    // A thread cannot start threads.
    d.call(
        "transcript.append",
        json!({"session_id": thread, "records": [
            {"type": "assistant", "content": [{"type": "tool_use", "id": "toolu_sub", "name": "Task", "input": {}}]}]}),
    );
    let e = d
        .try_call(
            "agent.start",
            json!({"session_id": thread, "tool_use_id": "toolu_sub", "agent_type": "Explore"}),
        )
        .unwrap_err();
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("cannot start sub-agents")
    );

    d.call(
        "agent.finish",
        json!({"session_id": sid, "agent_id": "explorer", "result": "nothing found"}),
    );
    refused(
        "agent.finish",
        json!({"session_id": sid, "agent_id": "explorer", "result": "again"}),
        "already finished",
    );
    // The call has its result now: no second agent for it.
    refused(
        "agent.start",
        json!({"session_id": sid, "tool_use_id": "toolu_task", "agent_type": "Explore", "agent_id": "second"}),
        "already has its result",
    );
}

/// Claude Code writes a sub-agent's messages into `agent_progress` lines of the main
/// transcript: imported, they are the agent's thread, linked to its Task call, and the
/// main thread is what it was.
#[test]
fn an_imported_session_keeps_its_sub_agent_threads_apart() {
    let d = Daemon::start();
    let path = common::fixtures().join("spotter/subagent.jsonl");
    let jsonl = std::fs::read_to_string(&path).unwrap();
    let imported = d.call(
        "session.import",
        json!({"jsonl": jsonl, "cwd": d.dir.path()}),
    );
    assert_eq!(imported["stats"]["agents"], 1);
    let sid = imported["session_id"].as_str().unwrap();
    let agents = d.call("agent.list", json!({"session_id": sid}))["agents"].clone();
    let a = &agents[0];
    assert_eq!(a["agent_id"], "afb92ff");
    assert_eq!(a["agent_type"], "Plan");
    assert_eq!(a["tool_use_id"], "toolu_01Cz2Pnv7qNcnK1ZiocxWhQX");
    assert!(a["result_uuid"].is_string(), "the call has its result: {a}");
    let thread = d.call(
        "transcript.read",
        json!({"session_id": sid, "agent_id": "afb92ff", "limit": 5000}),
    );
    let records = thread["records"].as_array().unwrap();
    assert_eq!(json!(records.len()), a["record_count"]);
    assert!(records.iter().all(|r| r["is_sidechain"] != true));
    assert!(records[0].to_string().contains("Draft bead content"));
    // The thread compiles on its own; the main thread holds none of it.
    let c = d.call(
        "context.compile",
        json!({"session_id": sid, "agent_id": "afb92ff"}),
    );
    assert!(
        c["request"]["messages"][0]
            .to_string()
            .contains("Draft bead content")
    );
    let main = d.call("transcript.read", json!({"session_id": sid, "limit": 5000}));
    let thread_uuids: Vec<&Value> = records.iter().map(|r| &r["uuid"]).collect();
    assert!(
        main["records"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| !thread_uuids.contains(&&r["uuid"]))
    );
}

/// Older Claude Code versions write sidechain lines (`isSidechain`, `agentId`) into the
/// main transcript, the call's result naming the agent; a sidechain no call names stays
/// where it was.
#[test]
fn inline_sidechains_become_threads_when_a_call_names_them() {
    let d = Daemon::start();
    let line = |v: Value| v.to_string();
    let jsonl = [
        line(json!({"type": "user", "uuid": "u1", "timestamp": T0, "message": {"role": "user", "content": "explore"}})),
        line(json!({"type": "assistant", "uuid": "a1", "timestamp": T0, "message": {"id": "msg_1", "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_t", "name": "Task", "input": {"subagent_type": "Explore", "prompt": "look"}}],
            "usage": {"input_tokens": 100, "output_tokens": 10}}})),
        line(json!({"type": "user", "uuid": "s1", "isSidechain": true, "agentId": "b1f5", "timestamp": T0,
            "message": {"role": "user", "content": "look"}})),
        line(json!({"type": "assistant", "uuid": "s2", "isSidechain": true, "agentId": "b1f5", "timestamp": T0,
            "message": {"id": "msg_s", "role": "assistant", "content": [{"type": "text", "text": "seen it"}],
                        "usage": {"input_tokens": 50, "output_tokens": 5}}})),
        line(json!({"type": "user", "uuid": "w1", "isSidechain": true, "agentId": "warm", "timestamp": T0,
            "message": {"role": "user", "content": "Warmup"}})),
        line(json!({"type": "user", "uuid": "u2", "timestamp": T0, "toolUseResult": {"agentId": "b1f5", "status": "completed"},
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_t", "content": "seen it"}]}})),
    ]
    .join("\n");
    let imported = d.call(
        "session.import",
        json!({"jsonl": jsonl, "cwd": d.dir.path()}),
    );
    let sid = imported["session_id"].as_str().unwrap();
    assert_eq!(imported["stats"]["agents"], 1);
    let agents = d.call("agent.list", json!({"session_id": sid}))["agents"].clone();
    assert_eq!(agents[0]["agent_id"], "b1f5");
    assert_eq!(agents[0]["agent_type"], "Explore");
    assert_eq!(agents[0]["record_count"], 2);
    let main: Vec<String> = d.call("transcript.read", json!({"session_id": sid}))["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uuid"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        main,
        ["u1", "a1", "w1", "u2"],
        "the unnamed sidechain stays"
    );
}
