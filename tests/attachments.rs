//! The attachments ctxd produces itself, through a real daemon: plan mode, task
//! reminders, queued input, relevant memories (from an isolated HOME), AGENTS.md, the
//! collection's time bound, and byte-identical compiles across a restart.

use crate::common;

use std::path::Path;

use common::{Daemon, NewSession};
use serde_json::{Value, json};

const T0: &str = "2026-11-29T10:00:00Z";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn session(d: &Daemon, cwd: &Path, settings: Value, tools: Value) -> String {
    NewSession::at(cwd)
        .start_date("2026-11-29")
        .settings(settings)
        .tools(tools)
        .create(d)
}

fn append(d: &Daemon, sid: &str, records: Value) {
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": records}),
    );
}

fn compile(d: &Daemon, sid: &str) -> Value {
    d.call("context.compile", json!({"session_id": sid, "now": T0}))
}

fn records(d: &Daemon, sid: &str) -> Vec<Value> {
    d.call("transcript.read", json!({"session_id": sid, "limit": 5000}))["records"]
        .as_array()
        .unwrap()
        .clone()
}

fn attachment_types(d: &Daemon, sid: &str) -> Vec<String> {
    records(d, sid)
        .iter()
        .filter_map(|r| r["attachment"]["type"].as_str().map(str::to_string))
        .collect()
}

fn prompt(text: &str) -> Value {
    json!({"type": "user", "content": [{"type": "text", "text": text}]})
}

fn tool(name: &str) -> Value {
    json!({"name": name, "input_schema": {"type": "object"}})
}

/// Every attachment ctxd makes itself, in one session: AGENTS.md in messages[0], plan
/// mode, a task reminder, queued input (with an image) and a relevant memory. A restart
/// then compiles the same bytes.
#[test]
fn every_new_attachment_compiles_byte_identically_after_a_restart() {
    let mut d = Daemon::start();
    let repo = d.dir.path().join("repo");
    write(&repo.join("CLAUDE.md"), "Claude instructions.");
    write(
        &repo.join("AGENTS.md"),
        "Agent instructions for every tool.",
    );
    // Claude Code's auto-memory directory of this project, under the test's HOME.
    let slug: String = repo
        .display()
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let mem = d
        .dir
        .path()
        .join("user-home/.claude/projects")
        .join(slug)
        .join("memory");
    write(
        &mem.join("MEMORY.md"),
        "- [parser](parser.md): parser notes\n",
    );
    write(
        &mem.join("parser.md"),
        "---\nname: parser-quirks\ndescription: Known quirks of the config parser\n---\nThe parser rejects tabs in keys.\n",
    );
    write(
        &mem.join("deploy.md"),
        "---\nname: deploy\ndescription: Release steps\n---\nTag, push, wait for CI.\n",
    );
    let sid = session(
        &d,
        &repo,
        json!({"plan_mode": true, "attachments": {"collect_timeout_ms": 20000}}),
        json!([tool("Read"), tool("TodoWrite")]),
    );

    append(
        &d,
        &sid,
        json!([prompt("plan a fix for the config parser quirks")]),
    );
    let first = compile(&d, &sid);
    let body = first["request"].to_string();
    assert!(body.contains("(AGENTS.md, project instructions"), "{body}");
    let claude_at = body.find("Claude instructions.").unwrap();
    assert!(body.find("Agent instructions for every tool.").unwrap() > claude_at);
    assert!(body.contains("Plan mode is active."));
    assert!(body.contains("The parser rejects tabs in keys."));
    assert!(!body.contains("Tag, push, wait for CI."));
    let reports = first["metadata"]["attachment_sources"].as_array().unwrap();
    let names: Vec<&str> = reports
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "queued_commands",
            "at_mentions",
            "date_change",
            "changed_files",
            "nested_memory",
            "plan_mode",
            "task_reminder",
            "relevant_memories"
        ]
    );
    assert!(reports.iter().all(|r| r["status"] == "ok"), "{reports:?}");

    // Ten silent assistant turns: the todo reminder, with the list of the last TodoWrite.
    append(
        &d,
        &sid,
        json!([{"type": "assistant", "message_id": "m0", "content": [
            {"type": "tool_use", "id": "td", "name": "TodoWrite", "input": {"todos": [
                {"content": "Reproduce the bug", "status": "in_progress", "activeForm": "Reproducing"}]}}]},
            {"type": "user", "content": [{"type": "tool_result", "tool_use_id": "td", "content": "ok"}]}]),
    );
    for i in 0..10 {
        append(
            &d,
            &sid,
            json!([{"type": "assistant", "message_id": format!("m{}", i + 1), "content": [
                {"type": "tool_use", "id": format!("r{i}"), "name": "Read", "input": {"file_path": "/nowhere"}}]},
                {"type": "user", "content": [{"type": "tool_result", "tool_use_id": format!("r{i}"), "content": "x"}]}]),
        );
    }
    // Input queued mid-turn, with an image.
    d.call(
        "transcript.queue",
        json!({"session_id": sid, "text": "also check the lexer", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}),
    );
    let second = compile(&d, &sid);
    let body = second["request"].to_string();
    assert!(body.contains("The todo list (TodoWrite) has not been used for a while."));
    assert!(body.contains("1. [in_progress] Reproduce the bug"));
    assert!(
        body.contains("The user sent this message while you were working:\\nalso check the lexer")
    );
    assert!(body.contains("iVBORw0KGgo="));
    assert_eq!(
        attachment_types(&d, &sid),
        [
            "plan_mode",
            "relevant_memories",
            "queued_command",
            "todo_reminder"
        ]
    );

    // A sparse reminder on the next turn, then plan mode off (exit) and on again
    // (re-entry and a full reminder), and a memoized section of the client's.
    append(
        &d,
        &sid,
        json!([{"type": "assistant", "content": [{"type": "text", "text": "noted"}]}, prompt("go on")]),
    );
    compile(&d, &sid);
    for enabled in [false, true] {
        d.call(
            "session.set_plan_mode",
            json!({"session_id": sid, "enabled": enabled}),
        );
        compile(&d, &sid);
    }
    d.call(
        "context.set_section",
        json!({"session_id": sid, "section": {"name": "team", "text": "Team: parsers."}}),
    );
    let types = attachment_types(&d, &sid);
    assert_eq!(
        types[4..],
        [
            "plan_mode",
            "plan_mode_exit",
            "plan_mode_reentry",
            "plan_mode"
        ]
    );

    let before = d.compile_body_with(json!({"session_id": sid, "now": T0}));
    assert!(before.contains("Team: parsers."));
    d.kill9();
    d.spawn();
    let after = d.compile_body_with(json!({"session_id": sid, "now": T0}));
    assert_eq!(before, after);
    assert_eq!(
        attachment_types(&d, &sid).len(),
        types.len(),
        "a restart adds nothing"
    );
}

#[test]
fn plan_mode_switches_by_rpc_and_announces_exit_and_reentry() {
    let d = Daemon::start();
    let cwd = d.dir.path().join("w");
    std::fs::create_dir_all(&cwd).unwrap();
    let sid = session(&d, &cwd, json!({}), json!([]));
    let on = d.call(
        "session.set_plan_mode",
        json!({"session_id": sid, "enabled": true}),
    );
    let plan_file = d.home.join("sessions").join(&sid).join("plan.md");
    assert_eq!(on["plan_file"], plan_file.display().to_string());
    assert_eq!(on["plan_exists"], false);
    append(&d, &sid, json!([prompt("one")]));
    compile(&d, &sid);
    append(
        &d,
        &sid,
        json!([{"type": "assistant", "content": [{"type": "text", "text": "planned"}]}, prompt("two")]),
    );
    compile(&d, &sid);
    write(&plan_file, "1. do it");
    d.call(
        "session.set_plan_mode",
        json!({"session_id": sid, "enabled": false}),
    );
    let body = compile(&d, &sid)["request"].to_string();
    assert!(body.contains(&format!("The plan is at {}", plan_file.display())));
    let on = d.call(
        "session.set_plan_mode",
        json!({"session_id": sid, "enabled": true, "plan_file": "docs/PLAN.md"}),
    );
    assert_eq!(
        on["plan_file"],
        cwd.join("docs/PLAN.md").display().to_string()
    );
    let body = compile(&d, &sid)["request"].to_string();
    assert!(body.contains("## Re-entering plan mode"));
    let recs = records(&d, &sid);
    let plan: Vec<String> = recs
        .iter()
        .filter_map(|r| {
            let a = &r["attachment"];
            let t = a["type"].as_str()?;
            Some(match a["reminderType"].as_str() {
                Some(kind) => format!("{t}:{kind}"),
                None => t.to_string(),
            })
        })
        .collect();
    assert_eq!(
        plan,
        [
            "plan_mode:full",
            "plan_mode:sparse",
            "plan_mode_exit",
            "plan_mode_reentry",
            "plan_mode:full"
        ]
    );
    // Bad input changes nothing and names its field.
    let err = d
        .try_call(
            "session.set_plan_mode",
            json!({"session_id": sid, "enabled": "yes"}),
        )
        .unwrap_err();
    assert_eq!(err["data"]["field"], "enabled");
}

/// A memory selector that never answers: the relevant-memories source is skipped once
/// the collection's bound runs out, reported, and the compile goes on.
#[test]
fn a_source_that_never_answers_is_skipped_and_reported() {
    let d = Daemon::start();
    // Accepts connections (the kernel's backlog) and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let cwd = d.dir.path().join("w");
    let mem = d.dir.path().join("notes");
    write(
        &mem.join("a.md"),
        "---\nname: a\ndescription: parser notes\n---\nparser",
    );
    let sid = session(
        &d,
        &cwd,
        json!({
            "summariser": {"kind": "openai", "base_url": format!("http://127.0.0.1:{port}/v1"), "model": "m"},
            "attachments": {"collect_timeout_ms": 300, "relevant_memories": {
                "auto_memory": false, "directories": [mem], "selector": "model"}},
        }),
        json!([]),
    );
    append(&d, &sid, json!([prompt("the parser")]));
    let m = compile(&d, &sid)["metadata"].clone();
    let report = m["attachment_sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "relevant_memories")
        .unwrap()
        .clone();
    assert_eq!(report["status"], "skipped", "{report}");
    assert!(
        report["reason"]
            .as_str()
            .unwrap()
            .contains("time bound (300 ms)")
    );
    // The other sources ran.
    assert!(
        m["attachment_sources"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["name"] != "relevant_memories")
            .all(|r| r["status"] == "ok")
    );
    drop(silent);
}

/// Which uncached sections changed is judged against the previous compile as stored,
/// so a restart in between still names the section that breaks the cache.
#[test]
fn an_uncached_change_is_still_named_after_a_restart() {
    let mut d = Daemon::start();
    let cwd = d.dir.path().join("w");
    std::fs::create_dir_all(&cwd).unwrap();
    let sid = session(&d, &cwd, json!({}), json!([]));
    d.call(
        "context.set_section",
        json!({"session_id": sid, "section": {"name": "clock", "caching": "uncached",
               "reason": "the model needs the time of day", "source": "current_time"}}),
    );
    append(&d, &sid, json!([prompt("hi")]));
    let at = |d: &Daemon, now: &str| {
        d.call("context.compile", json!({"session_id": sid, "now": now}))["metadata"].clone()
    };
    at(&d, "2026-11-29T10:00:00Z");
    // A graceful stop: the compile's log, written after its answer, is flushed.
    assert!(d.terminate().success());
    d.spawn();
    let same = at(&d, "2026-11-29T10:00:00Z");
    assert_eq!(same["uncached_sections"][0]["changed"], false, "{same}");
    let later = at(&d, "2026-11-29T10:05:00Z");
    assert_eq!(later["uncached_sections"][0]["changed"], true, "{later}");
    assert_eq!(later["cache"]["expected_break"], "uncached_section:clock");
}

/// Memoized sections freeze at their first compile; uncached ones are recomputed every
/// compile and named when they break the cache; a reset or a compaction recomputes.
#[test]
fn memoized_sections_freeze_and_uncached_ones_are_reported() {
    let d = Daemon::start();
    let cwd = d.dir.path().join("w");
    std::fs::create_dir_all(&cwd).unwrap();
    let sid = session(&d, &cwd, json!({"platform": "plan9"}), json!([]));
    let set = |section: Value| {
        d.call(
            "context.set_section",
            json!({"session_id": sid, "section": section}),
        )
    };
    set(json!({"name": "team", "text": "Team: compilers."}));
    set(
        json!({"name": "clock", "caching": "uncached", "reason": "the model needs the time of day",
               "source": "current_time"}),
    );
    append(&d, &sid, json!([prompt("hi")]));
    let at = |now: &str| d.call("context.compile", json!({"session_id": sid, "now": now}));
    let first = at("2026-11-29T10:00:00Z");
    let body = first["request"].to_string();
    assert!(body.contains("Platform: plan9"));
    assert!(body.contains("Team: compilers."));
    assert!(body.contains("# Current time"));
    assert_eq!(
        first["metadata"]["uncached_sections"],
        json!([{"name": "clock", "reason": "the model needs the time of day", "changed": false}])
    );
    // A new registration of a memoized section does not show until a reset.
    set(json!({"name": "team", "text": "Team: runtime."}));
    let second = at("2026-11-29T10:05:00Z");
    let body = second["request"].to_string();
    assert!(body.contains("Team: compilers.") && !body.contains("Team: runtime."));
    assert_eq!(second["metadata"]["uncached_sections"][0]["changed"], true);
    assert_eq!(
        second["metadata"]["cache"]["expected_break"],
        "uncached_section:clock"
    );
    // The same instant: nothing changed, nothing breaks.
    let again = at("2026-11-29T10:05:00Z");
    assert_eq!(again["metadata"]["uncached_sections"][0]["changed"], false);
    assert!(again["metadata"]["cache"]["first_difference"].is_null());
    d.call("context.reset_sections", json!({"session_id": sid}));
    let body = at("2026-11-29T10:05:00Z")["request"].to_string();
    assert!(body.contains("Team: runtime."));
    // Compaction recomputes too.
    set(json!({"name": "team", "text": "Team: tools."}));
    d.call("context.compact", json!({"session_id": sid}));
    let body = at("2026-11-29T10:05:00Z")["request"].to_string();
    assert!(body.contains("Team: tools."));
    assert_eq!(
        d.call(
            "context.remove_section",
            json!({"session_id": sid, "name": "team"})
        )["ok"],
        true
    );
    let body = at("2026-11-29T10:05:00Z")["request"].to_string();
    assert!(!body.contains("Team: tools."));
    // A fork carries the memo: it compiles what its parent compiles, even after the
    // registration moved on.
    set(json!({"name": "lang", "text": "Rust first."}));
    let parent = d.compile_body_with(json!({"session_id": sid, "now": "2026-11-29T10:05:00Z"}));
    set(json!({"name": "lang", "text": "Go first."}));
    let fork = d.call("session.fork", json!({"session_id": sid}))["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let forked = d.compile_body_with(json!({"session_id": fork, "now": "2026-11-29T10:05:00Z"}));
    assert_eq!(parent, forked);
    assert!(forked.contains("Rust first."));
    // An uncached section without a reason is refused, naming the field.
    let err = d
        .try_call(
            "context.set_section",
            json!({"session_id": sid, "section": {"name": "x", "text": "y", "caching": "uncached"}}),
        )
        .unwrap_err();
    assert_eq!(err["data"]["field"], "section.reason");
}

/// `@` mentions in a prompt attach the file's lines (a range when given), a directory's
/// entries, and say why a path outside the workspace or missing is not attached; each
/// prompt's mentions are attached once, and a restart compiles the same bytes.
#[test]
fn at_mentions_attach_files_and_directories_inside_the_workspace() {
    let mut d = Daemon::start();
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let lines: String = (1..=30).map(|i| format!("line {i} of a.rs\n")).collect();
    write(&work.path().join("src/a.rs"), &lines);
    write(&work.path().join("docs/guide.md"), "# guide\n");
    write(&work.path().join("docs/api/index.md"), "# api\n");
    write(&outside.path().join("secret.txt"), "the outside secret\n");
    let sid = session(&d, work.path(), json!({}), json!([]));
    let secret = outside.path().join("secret.txt");
    append(
        &d,
        &sid,
        json!([{"type": "user", "content": format!(
            "look at @src/a.rs#L3-5, @docs/ and @{} and @missing.rs; mail me@example.com",
            secret.display())}]),
    );
    let first = compile(&d, &sid);
    let text = first["request"]["messages"].to_string();
    assert!(
        text.contains("The user mentioned @src/a.rs#L3-5: the file "),
        "{text}"
    );
    assert!(text.contains("lines 3-5 of 30"), "{text}");
    assert!(text.contains("     3\\tline 3 of a.rs"), "{text}");
    assert!(!text.contains("line 6 of a.rs"), "only the range");
    assert!(text.contains("the directory "), "{text}");
    assert!(
        text.contains("- api/") && text.contains("- guide.md"),
        "{text}"
    );
    assert!(text.contains("it lies outside the session's working directories"));
    assert!(
        !text.contains("the outside secret"),
        "nothing outside is read"
    );
    assert!(text.contains("@missing.rs, which could not be attached: there is no such file"));
    assert!(
        !text.contains("example.com, which"),
        "an address is no mention"
    );
    let sources = first["metadata"]["attachment_sources"].as_array().unwrap();
    let mentions = sources.iter().find(|s| s["name"] == "at_mentions").unwrap();
    assert_eq!(mentions["attachments"], 4, "{mentions}");
    // Once per prompt: the next compile adds none; a restart gives the same bytes.
    let again = d.compile_body_with(json!({"session_id": sid, "now": T0}));
    assert_eq!(again.matches("The user mentioned").count(), 4);
    d.terminate();
    d.spawn();
    assert_eq!(
        d.compile_body_with(json!({"session_id": sid, "now": T0})),
        again
    );
    // A whole file without a range: every line, numbered.
    append(
        &d,
        &sid,
        json!([{"type": "assistant", "content": "ok"}, {"type": "user", "content": "and @src/a.rs"}]),
    );
    let whole = compile(&d, &sid)["request"]["messages"].to_string();
    assert!(whole.contains("lines 1-30 of 30"), "{whole}");
    assert!(whole.contains("    30\\tline 30 of a.rs"));
}

/// `@server:uri` names a resource of a connected MCP server: attached from the text the
/// client registered, or with why not (no such server, no such resource, not read).
#[test]
fn mcp_resource_mentions_attach_what_the_client_registered() {
    let d = Daemon::start();
    let work = tempfile::tempdir().unwrap();
    let sid = session(&d, work.path(), json!({}), json!([]));
    let bad = d
        .try_call(
            "capabilities.mcp_connect",
            json!({"session_id": sid, "name": "docs", "resources": [
                {"uri": "guide://intro", "text": "a"}, {"uri": "guide://intro", "text": "b"}]}),
        )
        .unwrap_err();
    assert!(
        bad["message"]
            .as_str()
            .unwrap()
            .contains("registered twice"),
        "{bad}"
    );
    d.call(
        "capabilities.mcp_connect",
        json!({"session_id": sid, "name": "docs", "resources": [
            {"uri": "guide://intro", "name": "Intro", "mime_type": "text/markdown", "text": "Start with the tutorial."},
            {"uri": "guide://later", "name": "Later"}]}),
    );
    append(
        &d,
        &sid,
        json!([{"type": "user", "content":
            "read @docs:guide://intro, @docs:guide://later, @docs:guide://none and @wiki:page"}]),
    );
    let c = compile(&d, &sid);
    let text = c["request"]["messages"].to_string();
    assert!(
        text.contains("The user mentioned @docs:guide://intro: the resource guide://intro (Intro) of the MCP server docs"),
        "{text}"
    );
    assert!(text.contains("Start with the tutorial."), "{text}");
    assert!(
        text.contains("the content of guide://later was not read"),
        "{text}"
    );
    assert!(text.contains("offers no resource guide://none"), "{text}");
    assert!(
        text.contains("no MCP server named wiki is connected"),
        "{text}"
    );
    let sources = c["metadata"]["attachment_sources"].as_array().unwrap();
    let mentions = sources.iter().find(|s| s["name"] == "at_mentions").unwrap();
    assert_eq!(mentions["attachments"], 4, "{mentions}");
}

/// An `@`-mentioned file is one the model has seen, as after a Read: it is watched (a
/// subscriber hears of an edit) and an edit on disk afterwards comes back as a
/// changed-file reminder. The compile's metadata says what each attachment it added is,
/// beside the uuids it always listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mentioned_file_edited_afterwards_comes_back_as_a_changed_file() {
    let d = Daemon::start();
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("src/a.rs");
    write(&file, "fn a() {}\n");
    let sid = session(&d, work.path(), json!({}), json!([]));
    append(&d, &sid, json!([prompt("look at @src/a.rs")]));
    let first = compile(&d, &sid);
    let uuids = first["metadata"]["attachments_added"].as_array().unwrap();
    let added = first["metadata"]["added_attachments"].as_array().unwrap();
    let listed: Vec<&Value> = added.iter().map(|a| &a["uuid"]).collect();
    assert_eq!(listed, uuids.iter().collect::<Vec<_>>(), "{added:?}");
    let stored = records(&d, &sid);
    for a in added {
        let record = stored.iter().find(|r| r["uuid"] == a["uuid"]).unwrap();
        assert_eq!(record["attachment"]["type"], a["type"], "{a}");
    }
    assert!(added.iter().any(|a| a["type"] == "at_mention"), "{added:?}");

    append(
        &d,
        &sid,
        json!([{"type": "assistant", "content": "read it"}, prompt("and now?")]),
    );
    let client = d.client().await;
    let mut sub = client.subscribe(&sid).await.unwrap();
    write(&file, "fn a() { changed_on_disk() }\n");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let ev = tokio::time::timeout_at(deadline, sub.next())
            .await
            .expect("file_changed for the mentioned file in time")
            .unwrap()
            .unwrap();
        if let ctxd_protocol::SessionEvent::FileChanged { path, .. } = ev {
            assert_eq!(path, file.display().to_string());
            break;
        }
    }
    let next = compile(&d, &sid);
    // Absent when the compile added nothing.
    let types: Vec<&str> = next["metadata"]["added_attachments"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| a["type"].as_str().unwrap())
        .collect();
    assert!(types.contains(&"edited_text_file"), "{types:?}");
    assert!(
        next["request"]["messages"]
            .to_string()
            .contains("changed_on_disk"),
        "{}",
        next["request"]["messages"]
    );
}
