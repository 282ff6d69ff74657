//! Instruction files, nested memory, changed files and date changes through a real
//! daemon, on a monorepo-shaped tree in a temp dir (HOME and the managed root point into
//! the test's own temp dir).

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{Daemon, NewSession};
use serde_json::{Value, json};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Writes `text` to `path` with an mtime a second past `was`'s, so a stat check sees the
/// change whatever the filesystem's timestamp granularity (no sleeping for the clock).
fn write_after(path: &Path, text: &str, was: &Path) {
    let before = std::fs::metadata(was).unwrap().modified().unwrap();
    write(path, text);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(before + Duration::from_secs(1))
        .unwrap();
}

/// A monorepo: root CLAUDE.md that only includes AGENTS.md, prose naming npm scopes,
/// nested package instructions, a conditional rule, user and managed files.
fn tree(d: &Daemon) -> std::path::PathBuf {
    let root = d.dir.path().join("repo");
    write(
        &d.dir.path().join("managed/CLAUDE.md"),
        "Managed policy: never push to main.",
    );
    write(
        &d.dir.path().join("user-home/.claude/CLAUDE.md"),
        "User: prefer short answers.",
    );
    write(&root.join("CLAUDE.md"), "@AGENTS.md\n");
    write(
        &root.join("AGENTS.md"),
        "# Agents\nThe packages `@scope/core` and @types/node are npm names, not files.\nSee @scope/core for the core.\n\n```\n@secret.md\n```\n",
    );
    write(&root.join("secret.md"), "must never load");
    write(
        &root.join("packages/api/CLAUDE.md"),
        "API package: use axum.",
    );
    write(
        &root.join("packages/web/CLAUDE.md"),
        "Web package: use vite.",
    );
    write(
        &root.join(".claude/rules/typescript.md"),
        "---\npaths: \"**/*.ts\"\n---\nTypeScript: strict mode only.",
    );
    write(&root.join("packages/api/src/main.rs"), "fn main() {}\n");
    write(
        &root.join("packages/web/src/app.ts"),
        "export const x = 1;\n",
    );
    root
}

fn session(d: &Daemon, cwd: &Path) -> String {
    NewSession::at(cwd).start_date("2026-11-29").create(d)
}

fn compile(d: &Daemon, sid: &str, now: &str) -> Value {
    d.call("context.compile", json!({"session_id": sid, "now": now}))
}

fn first_text(req: &Value) -> String {
    req["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

fn read_turn(i: usize, path: &Path, result: &str) -> Value {
    json!([
        {"type": "assistant", "message_id": format!("m{i}"),
         "content": [{"type": "tool_use", "id": format!("r{i}"), "name": "Read", "input": {"file_path": path}}]},
        {"type": "user", "content": [{"type": "tool_result", "tool_use_id": format!("r{i}"), "content": result}]}
    ])
}

fn attachments_of(d: &Daemon, sid: &str, uuids: &Value) -> Vec<Value> {
    let recs = d.call("transcript.read", json!({"session_id": sid, "limit": 5000}));
    let wanted: Vec<&str> = uuids
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_str().unwrap())
        .collect();
    recs["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| wanted.contains(&r["uuid"].as_str().unwrap()))
        .map(|r| r["attachment"].clone())
        .collect()
}

const T0: &str = "2026-11-29T10:00:00Z";

#[test]
fn startup_chain_is_memoized_in_messages_0() {
    let mut d = Daemon::start();
    let root = tree(&d);
    let sid = session(&d, &root);
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "hi"}]}),
    );
    let c = compile(&d, &sid, T0);
    let text = first_text(&c["request"]);
    let tmp = d.dir.path().display().to_string();
    insta::assert_snapshot!("monorepo_messages_0", text.replace(&tmp, "[TMP]"));
    let order: Vec<usize> = ["Managed policy", "User: prefer", "@AGENTS.md", "# Agents"]
        .iter()
        .map(|needle| {
            text.find(needle)
                .unwrap_or_else(|| panic!("{needle} missing"))
        })
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    assert!(
        !text.contains("must never load"),
        "an include inside a code block loaded"
    );
    assert!(
        !text.contains("API package"),
        "nested files are not startup files"
    );
    assert!(
        !text.contains("TypeScript: strict"),
        "conditional rules are not startup files"
    );

    // Editing an instruction file mid-session does not rewrite messages[0].
    write(&root.join("AGENTS.md"), "# Agents\nchanged");
    let body = d.compile_body_with(json!({"session_id": sid, "now": T0}));
    assert!(body.contains("npm names"));
    d.kill9();
    d.spawn();
    assert_eq!(
        d.compile_body_with(json!({"session_id": sid, "now": T0})),
        body
    );

    // A cwd change resets the memo: the edited file shows up now.
    d.call(
        "session.update",
        json!({"session_id": sid, "cwd": root.join("packages")}),
    );
    let c = compile(&d, &sid, T0);
    let text = first_text(&c["request"]);
    assert!(text.contains("# Agents\nchanged"), "{text}");
    assert!(!text.contains("npm names"));
}

#[test]
fn nested_memory_and_conditional_rules_inject_once_on_touch() {
    let d = Daemon::start();
    let root = tree(&d);
    let sid = session(&d, &root);
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "look at the api"}]}),
    );
    let c = compile(&d, &sid, T0);
    assert_eq!(c["metadata"]["attachments_added"], json!([]));

    d.call("transcript.append", json!({"session_id": sid, "records": read_turn(1, &root.join("packages/api/src/main.rs"), "1\tfn main() {}")}));
    let c = compile(&d, &sid, T0);
    let added = attachments_of(&d, &sid, &c["metadata"]["attachments_added"]);
    assert_eq!(added.len(), 1);
    assert_eq!(added[0]["type"], "nested_memory");
    let content = added[0]["content"].as_str().unwrap();
    assert!(content.contains("API package: use axum."));
    assert!(!content.contains("Web package"));
    // It sits after the tool result in the request.
    assert!(
        c["request"]["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .to_string()
            .contains("API package")
    );

    // Same directory again: nothing new.
    d.call("transcript.append", json!({"session_id": sid, "records": read_turn(2, &root.join("packages/api/src/main.rs"), "1\tfn main() {}")}));
    let c = compile(&d, &sid, T0);
    assert_eq!(c["metadata"]["attachments_added"], json!([]));

    // A .ts file: the web package's CLAUDE.md and the conditional rule, once.
    d.call(
        "context.touch_paths",
        json!({"session_id": sid, "paths": [root.join("packages/web/src/app.ts")]}),
    );
    let c = compile(&d, &sid, T0);
    let added = attachments_of(&d, &sid, &c["metadata"]["attachments_added"]);
    let content = added[0]["content"].as_str().unwrap();
    assert!(content.contains("Web package: use vite."));
    assert!(content.contains("TypeScript: strict mode only."));
    d.call(
        "context.touch_paths",
        json!({"session_id": sid, "paths": [root.join("packages/web/src/other.ts")]}),
    );
    let c = compile(&d, &sid, T0);
    assert_eq!(c["metadata"]["attachments_added"], json!([]));
}

#[test]
fn a_file_the_agent_read_as_a_normal_file_is_not_injected_again() {
    let d = Daemon::start();
    let root = tree(&d);
    let sid = session(&d, &root);
    let api_md = root.join("packages/api/CLAUDE.md");
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": read_turn(1, &api_md, "1\tAPI package: use axum.")}),
    );
    let c = compile(&d, &sid, T0);
    let added = attachments_of(&d, &sid, &c["metadata"]["attachments_added"]);
    assert!(
        added
            .iter()
            .all(|a| !a["content"].as_str().unwrap_or("").contains("API package")),
        "{added:?}"
    );
}

fn snippet_of(d: &Daemon, sid: &str, c: &Value) -> Option<String> {
    attachments_of(d, sid, &c["metadata"]["attachments_added"])
        .into_iter()
        .find(|a| a["type"] == "edited_text_file")
        .map(|a| a["snippet"].as_str().unwrap().to_string())
}

#[test]
fn external_edits_of_seen_files_become_changed_files() {
    let d = Daemon::start();
    let root = tree(&d);
    let sid = session(&d, &root);
    let file = root.join("notes.txt");
    let original: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    write(&file, &original);
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": read_turn(1, &file, "(file content)")}),
    );
    compile(&d, &sid, T0);

    // A plain write.
    write_after(
        &file,
        &original.replace("line 15\n", "line fifteen\n"),
        &file,
    );
    let c = compile(&d, &sid, T0);
    insta::assert_snapshot!(
        "plain_write_snippet",
        snippet_of(&d, &sid, &c).expect("a changed_files attachment")
    );
    let c = compile(&d, &sid, T0);
    assert!(snippet_of(&d, &sid, &c).is_none(), "reported twice");

    // An atomic save: write elsewhere, rename over.
    let tmp = root.join(".notes.txt.tmp");
    write_after(
        &tmp,
        &original
            .replace("line 15\n", "line fifteen\n")
            .replace("line 30\n", "line thirty\n"),
        &file,
    );
    std::fs::rename(&tmp, &file).unwrap();
    let c = compile(&d, &sid, T0);
    insta::assert_snapshot!(
        "atomic_rename_snippet",
        snippet_of(&d, &sid, &c).expect("a changed_files attachment")
    );

    // Deletion: the file leaves the read state, nothing is announced.
    std::fs::remove_file(&file).unwrap();
    let c = compile(&d, &sid, T0);
    assert!(snippet_of(&d, &sid, &c).is_none());
    write(&file, "back again\n");
    let c = compile(&d, &sid, T0);
    assert!(
        snippet_of(&d, &sid, &c).is_none(),
        "a deleted file is no longer tracked"
    );
}

#[test]
fn the_agents_own_edit_is_not_reported_back() {
    let d = Daemon::start();
    let root = tree(&d);
    let sid = session(&d, &root);
    let file = root.join("src.txt");
    write(&file, "a\nb\nc\n");
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": read_turn(1, &file, "a b c")}),
    );
    compile(&d, &sid, T0);
    // The agent edits the file with its Edit tool; the result arrives after the write.
    d.call("transcript.append", json!({"session_id": sid, "records": [
        {"type": "assistant", "message_id": "m2", "content": [{"type": "tool_use", "id": "e1", "name": "Edit",
          "input": {"file_path": file, "old_string": "b", "new_string": "B"}}]}
    ]}));
    write_after(&file, "a\nB\nc\n", &file);
    d.call("transcript.append", json!({"session_id": sid, "records": [
        {"type": "user", "content": [{"type": "tool_result", "tool_use_id": "e1", "content": "edited"}]}
    ]}));
    let c = compile(&d, &sid, T0);
    assert!(snippet_of(&d, &sid, &c).is_none());
}

#[test]
fn midnight_brings_a_date_change_and_keeps_messages_0() {
    let d = Daemon::start();
    let root = tree(&d);
    let sid = session(&d, &root);
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "late night"}]}),
    );
    let before = compile(&d, &sid, "2026-11-29T23:59:00Z");
    d.call("transcript.append", json!({"session_id": sid, "records": [
        {"type": "assistant", "content": "still here"}, {"type": "user", "content": "after midnight"}]}));
    let after = compile(&d, &sid, "2026-11-30T00:01:00Z");
    assert_eq!(
        first_text(&before["request"]),
        first_text(&after["request"])
    );
    assert!(first_text(&after["request"]).contains("Today's date is 2026-11-29."));
    let added = attachments_of(&d, &sid, &after["metadata"]["attachments_added"]);
    assert_eq!(
        added,
        vec![json!({"type": "date_change", "date": "2026-11-30"})]
    );
    let again = compile(&d, &sid, "2026-11-30T00:02:00Z");
    assert_eq!(again["metadata"]["attachments_added"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_see_file_changes_and_instruction_loads() {
    let d = Daemon::start();
    let root = tree(&d);
    let sid = session(&d, &root);
    let client = d.client().await;
    let mut sub = client.subscribe(&sid).await.unwrap();
    let file = root.join("watched.txt");
    write(&file, "one\n");
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": read_turn(1, &file, "one")}),
    );
    write(&file, "two\n");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let ev = tokio::time::timeout_at(deadline, sub.next())
            .await
            .expect("file_changed in time")
            .unwrap()
            .unwrap();
        if let ctxd_protocol::SessionEvent::FileChanged { path, change, .. } = ev {
            assert_eq!(path, file.display().to_string());
            assert_eq!(change, "changed");
            break;
        }
    }
    d.call(
        "context.touch_paths",
        json!({"session_id": sid, "paths": [root.join("packages/api/x.rs")]}),
    );
    d.call("context.compile", json!({"session_id": sid, "now": T0}));
    loop {
        let ev = tokio::time::timeout_at(deadline, sub.next())
            .await
            .expect("instructions_loaded in time")
            .unwrap()
            .unwrap();
        if let ctxd_protocol::SessionEvent::InstructionsLoaded { reason, paths, .. } = ev {
            assert_eq!(reason, "nested");
            assert!(paths.iter().any(|p| p.ends_with("packages/api/CLAUDE.md")));
            break;
        }
    }
}

/// `settings.output_style` names a style of the (trusted) project's
/// `.claude/output-styles`, the user's, or ctxd's own: its prompt goes into the system
/// prompt (memoized), and a style that does not keep the coding instructions takes their
/// place.
#[test]
fn the_selected_output_style_is_in_the_system_prompt() {
    let d = Daemon::start();
    let project = d.dir.path().join("styled");
    let styles = project.join(".claude/output-styles");
    std::fs::create_dir_all(&styles).unwrap();
    std::fs::write(
        styles.join("terse.md"),
        "---\nname: Terse\ndescription: Few words\n---\nAnswer in one line, no lists.\n",
    )
    .unwrap();
    let system_of = |style: &str| {
        let s = d.call(
            "session.create",
            serde_json::json!({"cwd": project, "no_git": true,
                               "settings": {"output_style": style, "hooks": {"trust_project": true}}}),
        );
        let sid = s["session"]["session_id"].as_str().unwrap().to_string();
        d.call(
            "transcript.append",
            serde_json::json!({"session_id": sid, "records": [{"type": "user", "content": "hi"}]}),
        );
        let c = d.call("context.compile", serde_json::json!({"session_id": sid}));
        let text: String = c["request"]["system"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["text"].as_str().unwrap().to_string())
            .collect();
        let names: Vec<String> = c["metadata"]["system_sections"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect();
        (text, names)
    };
    let (text, names) = system_of("terse");
    assert!(
        text.contains("# Output style: Terse\nAnswer in one line, no lists."),
        "{text}"
    );
    assert!(!names.contains(&"doing_tasks".to_string()), "{names:?}");
    let (text, names) = system_of("Explanatory");
    assert!(text.contains("# Output style: Explanatory\n"), "{text}");
    assert!(
        names.contains(&"doing_tasks".to_string()),
        "the built-ins keep them"
    );
    let (text, names) = system_of("default");
    assert!(!text.contains("Output style"), "{text}");
    assert!(names.contains(&"doing_tasks".to_string()));
}
