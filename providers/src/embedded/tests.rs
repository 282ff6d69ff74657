//! The embedded summariser on hand-built sessions (on real Claude Code transcripts, which
//! need the engine's importer, in `ctxd_engine::import::summary_tests`).

use ctxd_protocol::Record;
use serde_json::{Value, json};

use super::render::tokens;
use super::*;
use crate::SummaryInput;
use crate::prompt::SECTION_TITLES;

fn rec(mut v: Value, seq: u64) -> Record {
    v["uuid"] = json!(format!("r{seq}"));
    v["seq"] = json!(seq);
    v["timestamp"] = json!("2026-03-01T10:00:00.000Z");
    serde_json::from_value(v).unwrap()
}

fn session(values: Vec<Value>) -> Vec<Record> {
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| rec(v, i as u64 + 1))
        .collect()
}

fn user(text: &str) -> Value {
    json!({"type": "user", "content": [{"type": "text", "text": text}]})
}

fn assistant(blocks: Value) -> Value {
    json!({"type": "assistant", "content": blocks})
}

fn result(id: &str, content: &str, is_error: bool) -> Value {
    json!({"type": "user", "content": [
        {"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error}
    ]})
}

/// A small but realistic coding session: a request, reads and edits, a failing build and
/// its fix, a reminder, a follow-up request, a todo list and an unanswered last message.
fn realistic() -> Vec<Record> {
    session(vec![
        user("Add a --verbose flag to the CLI in src/main.rs and make the tests pass."),
        assistant(json!([
            {"type": "text", "text": "I'll start by reading the CLI entry point. Then I will add the flag."},
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/repo/src/main.rs"}}
        ])),
        result(
            "t1",
            "fn main() {\n    let args = Args::parse();\n    run(args);\n}",
            false,
        ),
        assistant(json!([
            {"type": "tool_use", "id": "t2", "name": "Edit", "input": {
                "file_path": "/repo/src/main.rs",
                "old_string": "struct Args {",
                "new_string": "struct Args {\n    #[arg(short, long)]\n    verbose: bool,"
            }}
        ])),
        result("t2", "The file /repo/src/main.rs has been updated.", false),
        assistant(json!([
            {"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": "cd /repo && cargo test 2>&1 | tail -20"}}
        ])),
        result(
            "t3",
            "error[E0425]: cannot find value `verbose` in this scope\n --> src/main.rs:42:9",
            true,
        ),
        assistant(json!([
            {"type": "text", "text": "The flag is not passed to run(); I'll pass it explicitly.\n\nThat should fix the build."},
            {"type": "tool_use", "id": "t4", "name": "Edit", "input": {
                "file_path": "/repo/src/main.rs",
                "old_string": "run(args);",
                "new_string": "run(args, args.verbose);"
            }}
        ])),
        result("t4", "The file /repo/src/main.rs has been updated.", false),
        json!({"type": "user", "is_meta": true, "content": [
            {"type": "text", "text": "<system-reminder>\nThe user opened README.md\n</system-reminder>"}
        ]}),
        json!({"type": "user", "content": [
            {"type": "text", "text": "<system-reminder>\nTodo list is empty\n</system-reminder>"},
            {"type": "text", "text": "Also print the elapsed time when verbose is on.\nKeep it on stderr."}
        ]}),
        assistant(json!([
            {"type": "tool_use", "id": "t5", "name": "TodoWrite", "input": {"todos": [
                {"content": "Add --verbose flag", "status": "completed", "activeForm": "Adding"},
                {"content": "Print elapsed time in verbose mode", "status": "in_progress", "activeForm": "Printing"},
                {"content": "Update README", "status": "pending", "activeForm": "Updating"}
            ]}}
        ])),
        result("t5", "Todos have been modified successfully.", false),
        assistant(json!([
            {"type": "tool_use", "id": "t6", "name": "Write", "input": {
                "file_path": "/repo/docs/verbose.md",
                "content": "# Verbose mode\n\nPass `--verbose` to print timings on stderr.\n"
            }},
            {"type": "tool_use", "id": "t7", "name": "Grep", "input": {"pattern": "elapsed", "path": "/repo/src"}}
        ])),
        result(
            "t6",
            "File created successfully at: /repo/docs/verbose.md",
            false,
        ),
        result("t7", "No matches found", false),
        assistant(json!([
            {"type": "text", "text": "Added the elapsed-time print; next I'll update the README."}
        ])),
        user("Use milliseconds, not seconds."),
    ])
}

fn summarise_records(records: &[Record], budget: u64) -> String {
    let refs: Vec<&Record> = records.iter().collect();
    summarise(&SummaryInput {
        records: &refs,
        messages: &[],
        custom_instructions: None,
        head_truncated: false,
        max_summary_tokens: budget,
    })
}

#[test]
fn realistic_session_snapshot() {
    let records = realistic();
    let text = summarise_records(&records, 20_000);
    assert_eq!(text, summarise_records(&records, 20_000), "deterministic");
    insta::assert_snapshot!("realistic_session", text);
}

#[test]
fn realistic_session_facts() {
    let text = summarise_records(&realistic(), 20_000);
    for (i, title) in SECTION_TITLES.iter().enumerate() {
        assert!(text.contains(&format!("{}. {title}:\n", i + 1)), "{title}");
    }
    // Every typed message verbatim; no reminders, no tool results.
    assert!(
        text.contains("Add a --verbose flag to the CLI in src/main.rs and make the tests pass.")
    );
    assert!(text.contains("Also print the elapsed time when verbose is on.\nKeep it on stderr."));
    assert!(text.contains("Use milliseconds, not seconds."));
    assert!(!text.contains("system-reminder"));
    assert!(!text.contains("The user opened README.md"));
    assert!(text.contains("/repo/src/main.rs (read, edited)"));
    assert!(text.contains("/repo/docs/verbose.md (written)"));
    assert!(text.contains("Bash: error[E0425]: cannot find value `verbose` in this scope"));
    assert!(text.contains("then: The flag is not passed to run(); I'll pass it explicitly."));
    assert!(text.contains("[in_progress] Print elapsed time in verbose mode"));
    assert!(text.contains("[pending] Update README"));
    assert!(!text.contains("[completed]"));
    assert!(text.contains("Rust (.rs)"));
    assert!(text.contains("Commands run: cargo test, tail"));
    assert!(text.contains("Use milliseconds, not seconds.\n") || text.ends_with("seconds."));
}

#[test]
fn budgets_are_respected_by_giving_up_detail_in_order() {
    let records = realistic();
    let full = summarise_records(&records, 20_000);
    let full_tokens = tokens(&full);
    for budget in [full_tokens - 1, full_tokens * 3 / 4, full_tokens / 2] {
        let text = summarise_records(&records, budget);
        assert!(tokens(&text) <= budget, "{budget}: {}", tokens(&text));
        assert!(text.contains("Use milliseconds, not seconds."));
        assert!(text.contains("Add a --verbose flag"));
    }
    // Problem solving goes first.
    let slightly = summarise_records(&records, full_tokens - 1);
    assert!(slightly.contains("Problem Solving:\n   - "), "{slightly}");
}

#[test]
fn a_tiny_budget_keeps_the_first_and_last_user_message() {
    let mut values = vec![user("First: build the importer.")];
    for i in 0..40 {
        values.push(user(&format!(
            "middle message number {i} with some words in it"
        )));
        values.push(assistant(
            json!([{"type": "text", "text": format!("Reply {i}.")}]),
        ));
    }
    values.push(user("Last: ship it."));
    let records = session(values);
    let text = summarise_records(&records, 50);
    assert!(text.contains("First: build the importer."), "{text}");
    assert!(text.contains("Last: ship it."), "{text}");
    assert!(text.contains("user messages omitted"), "{text}");

    // With room for some, the newest are preferred after the first.
    let text = summarise_records(&records, 400);
    assert!(tokens(&text) <= 400);
    let gap = text.find("user messages omitted").unwrap();
    assert!(text.contains("middle message number 0 "), "{text}");
    assert!(text.contains("middle message number 39 "), "{text}");
    assert!(
        text[gap..].matches("middle message").count()
            > text[..gap].matches("middle message").count(),
        "{text}"
    );
}

#[test]
fn an_earlier_summary_is_carried_forward() {
    let first = summarise_records(&realistic(), 20_000);
    let records = session(vec![
        json!({"type": "system", "subtype": "compact_boundary"}),
        json!({"type": "user", "is_compact_summary": true, "content": [{"type": "text", "text":
            format!("This session continues an earlier conversation. Summary:\n{first}")}]}),
        user("Now add a --quiet flag too."),
        assistant(json!([
            {"type": "tool_use", "id": "q1", "name": "Edit", "input": {
                "file_path": "/repo/src/cli.rs", "old_string": "a", "new_string": "b"}}
        ])),
        result("q1", "ok", false),
    ]);
    let second = summarise_records(&records, 20_000);
    // The original request stays the primary request.
    let primary = second.split("\n\n2.").next().unwrap();
    assert!(primary.contains("Add a --verbose flag"), "{second}");
    // Old and new user messages, in order, each once.
    let old = second.find("Also print the elapsed time").unwrap();
    let new = second.find("Now add a --quiet flag too.").unwrap();
    assert!(old < new);
    assert_eq!(
        second.matches("Use milliseconds, not seconds.").count(),
        1,
        "{second}"
    );
    assert!(second.contains("/repo/src/main.rs (read, edited)"));
    assert!(second.contains("/repo/src/cli.rs (edited)"));
    assert!(
        second.contains("[pending] Update README"),
        "tasks carried: {second}"
    );
    // Summarising again is stable.
    assert_eq!(second, summarise_records(&records, 20_000));
}

#[test]
fn task_tools_build_the_pending_list() {
    let records = session(vec![
        user("Plan the migration."),
        assistant(json!([
            {"type": "tool_use", "id": "a", "name": "TaskCreate", "input": {"subject": "Write the schema"}},
            {"type": "tool_use", "id": "b", "name": "TaskCreate", "input": {"subject": "Backfill rows"}},
            {"type": "tool_use", "id": "c", "name": "TaskUpdate", "input": {"taskId": "1", "status": "completed"}}
        ])),
    ]);
    let text = summarise_records(&records, 20_000);
    assert!(text.contains("[pending] #2 Backfill rows"), "{text}");
    assert!(!text.contains("Write the schema\n"), "{text}");
}

#[test]
fn commands_and_user_messages_leave_out_what_the_user_did_not_type_or_run() {
    let records = session(vec![
        user("Commit the key rotation work."),
        assistant(json!([
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command":
                "git add -A && git commit -m \"$(cat <<'EOF'\nfeat: Add Key with rotation and expiry\n\nCo-Authored-By: Claude <noreply@anthropic.com>\nEOF\n)\""}}
        ])),
        result("t1", "[main 1a2b3c4] feat: Add Key", false),
        user("[Request interrupted by user for tool use]"),
        user(
            "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>",
        ),
        user("Now push it."),
        assistant(json!([
            {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "git push origin main"}}
        ])),
        result("t2", "ok", false),
    ]);
    let text = summarise_records(&records, 20_000);
    assert_eq!(text, summarise_records(&records, 20_000));
    assert!(
        text.contains("Commands run: git add, git commit, git push"),
        "{text}"
    );
    for word in ["feat", "Co-Authored-By", "EOF", "Key"] {
        let commands = text
            .lines()
            .find(|l| l.contains("Commands run:"))
            .unwrap_or_default();
        assert!(!commands.contains(word), "{word} in {commands}");
    }
    let users = text
        .split("6. All User Messages:\n")
        .nth(1)
        .and_then(|s| s.split("\n7.").next())
        .unwrap();
    assert!(users.contains("Commit the key rotation work."), "{users}");
    assert!(users.contains("Now push it."), "{users}");
    assert!(!users.contains("interrupted"), "{users}");
    assert!(!users.contains("task-notification"), "{users}");
}

/// `/compact Focus on …`: the summary states the instructions, and the files they name
/// come first in section 3.
#[test]
fn instructions_are_stated_and_order_what_they_name_first() {
    let records = realistic();
    let refs: Vec<&Record> = records.iter().collect();
    let plain = summarise_records(&records, 20_000);
    let focused = summarise(&SummaryInput {
        records: &refs,
        messages: &[],
        custom_instructions: Some("Focus on the verbose docs"),
        head_truncated: false,
        max_summary_tokens: 20_000,
    });
    assert!(!plain.contains("focus on"));
    assert!(
        focused.contains("The user asked this summary to focus on: Focus on the verbose docs"),
        "{focused}"
    );
    let files = |text: &str| -> Vec<String> {
        let start = text.find("3. ").unwrap();
        let end = text[start..]
            .find("\n4. ")
            .map_or(text.len(), |e| start + e);
        text[start..end]
            .lines()
            .filter(|l| l.trim_start().starts_with("- /"))
            .map(str::to_string)
            .collect()
    };
    let (before, after) = (files(&plain), files(&focused));
    assert!(
        after.first().is_some_and(|f| f.contains("verbose.md")),
        "{after:?}"
    );
    assert!(
        !before.first().is_some_and(|f| f.contains("verbose.md")),
        "{before:?}"
    );
    assert_eq!(before.len(), after.len());
}
