use super::*;

use ctxd_protocol::Record;
use serde_json::Value;

use crate::{attachments, tokens};
use serde_json::json;

fn rec(uuid: &str, v: Value) -> Record {
    let mut v = v;
    v["uuid"] = json!(uuid);
    v["seq"] = json!(1);
    v["timestamp"] = json!("2026-11-29T10:00:00Z");
    serde_json::from_value(v).unwrap()
}

fn user(uuid: &str, text: &str) -> Record {
    rec(
        uuid,
        json!({"type": "user", "content": [{"type": "text", "text": text}]}),
    )
}

fn assistant(uuid: &str, text: &str) -> Record {
    rec(
        uuid,
        json!({"type": "assistant", "content": [{"type": "text", "text": text}]}),
    )
}

fn call(uuid: &str, id: &str, name: &str, input: Value) -> Record {
    rec(
        uuid,
        json!({"type": "assistant", "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}),
    )
}

fn result(uuid: &str, id: &str, text: &str, is_error: bool) -> Record {
    rec(
        uuid,
        json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": text, "is_error": is_error}]}),
    )
}

fn with_message_id(mut r: Record, id: &str) -> Record {
    r.message_id = Some(id.into());
    r
}

fn refs(records: &[Record]) -> Vec<&Record> {
    records.iter().collect()
}

fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let start = doc
        .find(&format!("# {heading}\n"))
        .unwrap_or_else(|| panic!("no {heading}"));
    let rest = &doc[start + heading.len() + 3..];
    let end = rest.find("\n# ").map_or(rest.len(), |e| e + 1);
    &rest[..end]
}

/// `doc` with `body` under the section `heading` (after its description).
fn with(doc: &str, heading: &str, body: &str) -> String {
    let (h, d) = SECTIONS.iter().find(|(h, _)| *h == heading).unwrap();
    let open = format!("# {h}\n_{d}_\n");
    assert!(doc.contains(&open));
    doc.replace(&open, &format!("{open}\n{body}\n"))
}

// -- document ------------------------------------------------------------------------

#[test]
fn template_shape() {
    let t = template();
    assert!(t.starts_with(
        "# Session Title\n_A short, distinctive title for this session: a few words, no filler._\n\n# Current State\n"
    ));
    assert!(t.ends_with(
        "# Worklog\n_A terse log of the steps taken, one line each, oldest first._\n\n"
    ));
    let headings: Vec<&str> = t.lines().filter(|l| l.starts_with("# ")).collect();
    assert_eq!(headings.len(), 10);
    for ((h, d), line) in SECTIONS.iter().zip(&headings) {
        assert_eq!(*line, format!("# {h}"));
        assert!(t.contains(&format!("# {h}\n_{d}_\n\n")));
    }
    assert_eq!(enforce_caps(&t), t, "the template is canonical");
}

#[test]
fn template_detection_ignores_whitespace_and_descriptions() {
    assert!(is_template(&template()));
    assert!(is_template(""));
    assert!(is_template("  \n"));
    // Descriptions without underscores, odd spacing, missing sections, CRLF.
    let loose = "#  Session Title \r\n\r\nA short, distinctive title for this session:  a few words, no filler.\r\n## Worklog\n\n";
    assert!(is_template(loose));
    let filled = with(&template(), "Worklog", "- read the parser");
    assert!(!is_template(&filled));
    assert!(!is_template("some notes without headings"));
    // A heading-looking line inside a code block is body text.
    let fenced = with(
        &template(),
        "Workflow",
        "```sh\n# Learnings\ncargo test\n```",
    );
    assert!(!is_template(&fenced));
    let out = enforce_caps(&fenced);
    assert!(out.contains("_\n\n```sh\n# Learnings\ncargo test\n```\n\n# Errors and Corrections\n"));
    assert_eq!(enforce_caps(&out), out);
}

#[test]
fn canonical_rendering_drops_preamble_and_restores_descriptions() {
    let doc = "Here are the notes:\n\n# current state\n\nParser fixed.   \n\n\n# Session Title\n_old description_\nParser work\n";
    let out = enforce_caps(doc);
    assert!(!out.contains("Here are the notes"));
    assert!(out.contains("# Current State\n_What is being worked on right now, what was just finished, and the next step._\n\nParser fixed.\n\n# Task"));
    // An unknown description is body text: only ours is recognised.
    assert!(section(&out, "Session Title").contains("_old description_\nParser work"));
    assert_eq!(enforce_caps(&out), out);
}

fn numbered(prefix: &str, n: usize, width: usize) -> String {
    (0..n)
        .map(|i| format!("{prefix} {i:04} {}", "x".repeat(width)))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_section_over_its_cap_is_cut_on_lines_with_a_note() {
    // 300 lines of 40 characters: 12,300 characters, over the 8,000 of one section.
    let body = numbered("- entry", 300, 26);
    let doc = with(&template(), "Key Results", &body);
    let out = enforce_caps(&doc);
    let kept = section(&out, "Key Results");
    assert!(kept.contains("- entry 0000 "), "the head stays");
    assert!(!kept.contains("- entry 0299 "));
    let body_text = kept.split_once("_\n\n").unwrap().1.trim_end();
    assert!(body_text.chars().count() <= 8_000);
    let last = body_text.lines().last().unwrap();
    assert!(is_cap_note(last), "{last}");
    assert!(last.starts_with("_[10"), "{last}");
    assert!(
        body_text
            .lines()
            .all(|l| l.starts_with("- entry") || is_cap_note(l))
    );
    for (h, _) in SECTIONS {
        assert!(out.contains(&format!("# {h}\n")));
    }
    assert_eq!(enforce_caps(&out), out, "idempotent");
}

#[test]
fn the_worklog_keeps_its_newest_lines() {
    let body = numbered("- step", 300, 30);
    let doc = with(&template(), "Worklog", &body);
    let out = enforce_caps(&doc);
    let kept = section(&out, "Worklog");
    let body_text = kept.split_once("_\n\n").unwrap().1;
    assert!(is_cap_note(body_text.lines().next().unwrap()));
    assert!(kept.contains("- step 0299 "));
    assert!(!kept.contains("- step 0000 "));
}

#[test]
fn one_long_line_is_cut_inside() {
    let doc = with(&template(), "Current State", &"y".repeat(20_000));
    let out = enforce_caps(&doc);
    let body = section(&out, "Current State")
        .split_once("_\n\n")
        .unwrap()
        .1
        .trim_end();
    assert!(body.chars().count() <= 8_000);
    assert!(body.starts_with("yyyy"));
    assert!(body.lines().next().unwrap().ends_with('…'));
    assert!(is_cap_note(body.lines().last().unwrap()));
}

#[test]
fn the_total_cap_cuts_the_largest_sections_to_one_size() {
    // Seven sections of 7,994 characters (under their own cap) and one short one:
    // ~57,000 characters in all, over the 48,000 of the document.
    let mut doc = template();
    for (h, _) in &SECTIONS[1..8] {
        doc = with(&doc, h, &numbered("- e", 195, 31));
    }
    doc = with(&doc, "Worklog", "- short");
    let out = enforce_caps(&doc);
    assert!(out.chars().count() <= 48_000, "{}", out.chars().count());
    assert!(out.chars().count() > 46_000, "cuts no more than needed");
    assert!(
        section(&out, "Worklog").contains("- short\n"),
        "small sections untouched"
    );
    let sizes: Vec<usize> = SECTIONS[1..8]
        .iter()
        .map(|(h, _)| section(&out, h).chars().count())
        .collect();
    let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
    assert!(max - min < 120, "evenly cut: {sizes:?}");
    assert_eq!(enforce_caps(&out), out, "idempotent");
}

#[test]
fn for_summary_points_to_the_full_notes() {
    let body = numbered("- fact", 100, 30);
    let doc = enforce_caps(&with(&template(), "Files and Functions", &body));
    let out = for_summary(&doc, 200, "/home/u/.ctxd/sessions/s1/session-memory.md");
    let kept = section(&out, "Files and Functions");
    let body_text = kept.split_once("_\n\n").unwrap().1.trim_end();
    assert!(body_text.chars().count() <= 800);
    assert!(body_text.ends_with(
        "more lines of this section in the full notes: /home/u/.ctxd/sessions/s1/session-memory.md]_"
    ));
    assert!(kept.contains("- fact 0000 "));
    // Sections within the limit are untouched, and the headings all stay.
    assert_eq!(for_summary(&template(), 200, "/x"), template());
    assert_eq!(out.lines().filter(|l| l.starts_with("# ")).count(), 10);
}

#[test]
fn accepting_a_model_update() {
    let previous = with(
        &with(&template(), "Learnings", "- prefer small commits"),
        "Worklog",
        "- began",
    );
    let updated = "# Session Title\nParser fix\n\n# Worklog\n- began\n- fixed the parser\n";
    let out = accept_update(&previous, updated).unwrap();
    assert!(section(&out, "Session Title").contains("Parser fix"));
    assert!(
        section(&out, "Learnings").contains("- prefer small commits"),
        "missing section kept"
    );
    assert!(section(&out, "Worklog").contains("- fixed the parser"));
    assert_eq!(
        accept_update(&previous, "I could not update the notes."),
        None
    );
}

// -- gates ---------------------------------------------------------------------------

#[test]
fn extraction_gate_table() {
    // (context, tokens at last, tool calls since, last turn called a tool) → due
    let table = [
        (9_999, None, 10, false, false),
        (10_000, None, 0, true, true),
        (14_999, Some(10_000), 5, false, false),
        (15_000, Some(10_000), 2, true, false),
        (15_000, Some(10_000), 3, true, true),
        (15_000, Some(10_000), 0, false, true),
        (40_000, Some(60_000), 9, false, false),
    ];
    for (ctx, last, calls, tool_turn, due) in table {
        assert_eq!(
            extraction_due(ctx, last, calls, tool_turn),
            due,
            "{ctx} {last:?} {calls} {tool_turn}"
        );
    }
}

#[test]
fn counting_tool_calls() {
    let mut side = call("s", "t9", "Read", json!({}));
    side.is_sidechain = true;
    let records = vec![
        user("u1", "go"),
        rec(
            "a1",
            json!({"type": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {}},
                {"type": "tool_use", "id": "t2", "name": "Read", "input": {}}
            ]}),
        ),
        result("r1", "t1", "ok", false),
        result("r2", "t2", "ok", false),
        side,
        call("a2", "t3", "Bash", json!({"command": "ls"})),
        result("r3", "t3", "ok", false),
    ];
    let v = refs(&records);
    assert_eq!(
        tool_calls_since(&v, None),
        3,
        "sidechain calls do not count"
    );
    assert_eq!(tool_calls_since(&v, Some("unknown")), 3);
    assert_eq!(tool_calls_since(&v, Some("a1")), 1);
    assert_eq!(tool_calls_since(&v, Some("r3")), 0);
    assert_eq!(tool_calls_since(&[], None), 0);
}

#[test]
fn last_turn_tool_call_looks_at_the_whole_response() {
    let records = vec![
        user("u1", "go"),
        with_message_id(call("a1", "t1", "Read", json!({})), "m1"),
        result("r1", "t1", "ok", false),
        with_message_id(assistant("a2", "done"), "m1"),
    ];
    assert!(last_turn_had_tool_call(&refs(&records)));
    let records = vec![
        user("u1", "go"),
        call("a1", "t1", "Read", json!({})),
        result("r1", "t1", "ok", false),
        assistant("a2", "done"),
    ];
    assert!(!last_turn_had_tool_call(&refs(&records)));
    assert!(!last_turn_had_tool_call(&[]));
}

// -- embedded extraction ---------------------------------------------------------------

fn session() -> Vec<Record> {
    vec![
        user(
            "u1",
            "Fix the flaky test in the parser crate.\nIt fails about one run in ten on CI.",
        ),
        rec(
            "m1",
            json!({"type": "user", "is_meta": true, "content": [{"type": "text", "text": "<system-reminder>\nclaudeMd\n</system-reminder>"}]}),
        ),
        with_message_id(assistant("a1", "I'll look at the test first."), "msg_1"),
        with_message_id(
            call(
                "a2",
                "t1",
                "Read",
                json!({"file_path": "/repo/parser/tests/roundtrip.rs"}),
            ),
            "msg_1",
        ),
        result("r1", "t1", "fn roundtrip() { ... }", false),
        with_message_id(
            call(
                "a3",
                "t2",
                "Grep",
                json!({"pattern": "HashMap", "path": "/repo/parser/src"}),
            ),
            "msg_2",
        ),
        result(
            "r2",
            "t2",
            "/repo/parser/src/table.rs:12: use std::collections::HashMap;",
            false,
        ),
        with_message_id(
            call(
                "a4",
                "t3",
                "Edit",
                json!({"file_path": "/repo/parser/src/table.rs", "old_string": "HashMap", "new_string": "BTreeMap"}),
            ),
            "msg_3",
        ),
        result(
            "r3",
            "t3",
            "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>",
            true,
        ),
        with_message_id(
            call(
                "a5",
                "t4",
                "Read",
                json!({"file_path": "/repo/parser/src/table.rs"}),
            ),
            "msg_4",
        ),
        result("r4", "t4", "use std::collections::HashMap;", false),
        with_message_id(
            call(
                "a6",
                "t5",
                "Edit",
                json!({"file_path": "/repo/parser/src/table.rs", "old_string": "HashMap", "new_string": "BTreeMap"}),
            ),
            "msg_5",
        ),
        result("r5", "t5", "ok", false),
        with_message_id(
            call(
                "a7",
                "t6",
                "Bash",
                json!({"command": "cargo test -p parser"}),
            ),
            "msg_6",
        ),
        result(
            "r6",
            "t6",
            "error[E0412]: cannot find type `BTreeMap` in this scope\n --> src/table.rs:40",
            true,
        ),
        with_message_id(
            call(
                "a8",
                "t7",
                "Edit",
                json!({"file_path": "/repo/parser/src/table.rs", "old_string": "use std::collections::HashMap;", "new_string": "use std::collections::BTreeMap;"}),
            ),
            "msg_7",
        ),
        result("r7", "t7", "ok", false),
        with_message_id(
            call(
                "a9",
                "t8",
                "Bash",
                json!({"command": "cargo test -p parser"}),
            ),
            "msg_8",
        ),
        result("r8", "t8", "test result: ok. 42 passed; 0 failed", false),
        rec(
            "x1",
            json!({"type": "attachment", "attachment": {"type": "date_change", "date": "2026-11-30"}}),
        ),
        with_message_id(
            assistant(
                "a10",
                "The test was flaky because `table.rs` iterated a `HashMap`, whose order changes between runs.\nI switched it to a `BTreeMap`; all 42 parser tests pass.",
            ),
            "msg_9",
        ),
        user("u2", "[Request interrupted by user]"),
        user("u3", "Great. Also add a changelog entry for it."),
        with_message_id(
            call(
                "a11",
                "t9",
                "Write",
                json!({"file_path": "/repo/CHANGELOG.md", "content": "- parser: deterministic table order"}),
            ),
            "msg_10",
        ),
        result("r9", "t9", "ok", false),
        with_message_id(
            assistant("a12", "Added the entry under Unreleased in CHANGELOG.md."),
            "msg_11",
        ),
    ]
}

#[test]
fn embedded_extraction_of_a_realistic_session() {
    let records = session();
    let v = refs(&records);
    let doc = extract_embedded(&template(), &v, None);
    insta::assert_snapshot!("embedded_realistic_session", doc);

    // Nothing new since the last summarised record: nothing changes.
    let last = safe_last_summarized(&v).unwrap();
    assert_eq!(last, "a12");
    assert_eq!(extract_embedded(&doc, &v, Some(&last)), doc);
    // And the same input always gives the same bytes.
    assert_eq!(extract_embedded(&template(), &v, None), doc);
}

#[test]
fn embedded_extraction_is_incremental() {
    let records = session();
    let v = refs(&records);
    let cut = v.iter().position(|r| r.uuid == "u2").unwrap();
    let first = extract_embedded("", &v[..cut], None);
    let last = safe_last_summarized(&v[..cut]).unwrap();
    assert_eq!(last, "a10");
    let second = extract_embedded(&first, &v, Some(&last));
    // Two extractions in turn give what one over everything gives (the snapshot).
    assert_eq!(second, extract_embedded(&template(), &v, None));

    // A title, once set, is kept; model-written sections are kept too.
    let edited = second
        .replacen("Fix the flaky test in the parser crate.", "Parser flakiness", 1)
        .replace(
            "# Learnings\n_What worked, what did not, what to avoid, and what the user prefers._\n",
            "# Learnings\n_What worked, what did not, what to avoid, and what the user prefers._\n\n- Read before Edit.\n",
        );
    let more = [user("u4", "Now open a PR.")];
    let mut all: Vec<&Record> = v.clone();
    all.extend(more.iter());
    let third = extract_embedded(&edited, &all, Some("a12"));
    assert!(section(&third, "Session Title").contains("Parser flakiness"));
    assert!(section(&third, "Learnings").contains("- Read before Edit."));
    assert!(section(&third, "Worklog").ends_with("- Now open a PR.\n\n"));
    assert!(section(&third, "Task Specification").contains("- Now open a PR."));
}

#[test]
fn embedded_lists_drop_their_oldest_entries_behind_a_marker() {
    let records: Vec<Record> = (0..120)
        .map(|i| {
            user(
                &format!("u{i}"),
                &format!("request number {i} {}", "z".repeat(60)),
            )
        })
        .collect();
    let v = refs(&records);
    let doc = extract_embedded("", &v, None);
    let task = section(&doc, "Task Specification");
    assert!(
        task.contains("- request number 0 "),
        "the first request stays"
    );
    assert!(task.contains("- request number 119 "));
    assert!(task.contains(" earlier entries left out)"));
    assert!(chars(task) <= TASK_CHARS + 200);
    let log = section(&doc, "Worklog");
    assert!(!log.contains("- request number 0 "));
    assert!(log.contains("- request number 119 "));
    assert!(chars(&doc) <= 48_000);
    // The marker's count carries over.
    let more = [user("u120", "one more")];
    let mut all = v.clone();
    all.extend(more.iter());
    let next = extract_embedded(&doc, &all, Some("u119"));
    let count = |d: &str| -> u64 {
        let t = section(d, "Worklog");
        let at = t.find(MARKER_OPEN).unwrap() + MARKER_OPEN.len();
        t[at..].split(' ').next().unwrap().parse().unwrap()
    };
    assert!(count(&next) > count(&doc));
    assert_eq!(extract_embedded(&next, &all, Some("u120")), next);
}

#[test]
fn raw_text_that_looks_like_a_heading_is_escaped() {
    let records = [
        user("u1", "# Learnings"),
        assistant("a1", "## Worklog\ndone"),
    ];
    let doc = extract_embedded("", &refs(&records), None);
    assert!(section(&doc, "Session Title").contains("\\# Learnings"));
    assert!(section(&doc, "Current State").contains("\\## Worklog\ndone"));
    assert_eq!(doc.lines().filter(|l| l.starts_with('#')).count(), 10);
}

// -- safe cut ----------------------------------------------------------------------------

#[test]
fn safe_last_summarized_never_splits_a_pair_or_a_response() {
    assert_eq!(safe_last_summarized(&[]), None);
    // A call still waiting for its result.
    let records = vec![
        user("u1", "go"),
        assistant("a0", "ok"),
        call("a1", "t1", "Read", json!({})),
    ];
    assert_eq!(safe_last_summarized(&refs(&records)).as_deref(), Some("a0"));
    // Parallel calls answered one by one: not between them.
    let records = vec![
        user("u1", "go"),
        rec(
            "a1",
            json!({"type": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {}},
                {"type": "tool_use", "id": "t2", "name": "Read", "input": {}}
            ]}),
        ),
        result("r1", "t1", "ok", false),
        result("r2", "t2", "ok", false),
        user("u2", "next"),
    ];
    let v = refs(&records);
    assert_eq!(safe_last_summarized(&v).as_deref(), Some("u2"));
    assert_eq!(safe_last_summarized(&v[..4]).as_deref(), Some("r2"));
    assert_eq!(safe_last_summarized(&v[..3]).as_deref(), Some("u1"));
    // A response split over records is not cut inside.
    let records = vec![
        user("u1", "go"),
        with_message_id(assistant("a1", "thinking aloud"), "m1"),
        with_message_id(assistant("a2", "and the answer"), "m1"),
    ];
    let v = refs(&records);
    assert_eq!(safe_last_summarized(&v).as_deref(), Some("a2"));
    assert_eq!(safe_last_summarized(&v[..2]).as_deref(), Some("a1"));
    // An abandoned call (interrupted, never answered) does not block for ever.
    let records = vec![
        user("u1", "go"),
        call("a1", "t1", "Bash", json!({"command": "sleep 100"})),
        user("u2", "[Request interrupted by user]"),
        assistant("a2", "stopped"),
    ];
    assert_eq!(safe_last_summarized(&refs(&records)).as_deref(), Some("a2"));
}

// -- keep_start ---------------------------------------------------------------------------

/// `tokens` of text (4 characters each).
fn sized_user(uuid: &str, tokens: usize) -> Record {
    user(uuid, &"w".repeat(tokens * 4))
}

fn sized_result(uuid: &str, id: &str, tokens: usize) -> Record {
    result(uuid, id, &"r".repeat(tokens * 4), false)
}

fn boundary() -> Record {
    rec(
        "b",
        json!({"type": "system", "subtype": "compact_boundary"}),
    )
}

#[test]
fn keep_start_needs_both_minimums() {
    // Six text messages of 3,000 tokens.
    let mut records = vec![boundary()];
    for i in 0..6 {
        records.push(sized_user(&format!("u{i}"), 3_000));
    }
    let v = refs(&records);
    // After u5 nothing is left: widen until 10,000 tokens (4 messages), then on to 5
    // text messages.
    assert_eq!(keep_start(&v, "u5", KeepLimits::REFERENCE), Some(2));
    // Already enough after u0: no widening.
    assert_eq!(keep_start(&v, "u0", KeepLimits::REFERENCE), Some(2));
    assert_eq!(keep_start(&v, "unknown", KeepLimits::REFERENCE), None);
}

#[test]
fn keep_start_wants_text_messages_not_tool_results() {
    // Big tool results reach the token minimum quickly; text messages are needed too.
    let mut records = vec![boundary()];
    for i in 0..5 {
        records.push(user(&format!("u{i}"), "short request"));
        records.push(call(&format!("a{i}"), &format!("t{i}"), "Read", json!({})));
        records.push(sized_result(&format!("r{i}"), &format!("t{i}"), 6_000));
    }
    let v = refs(&records);
    // The tail after r4 is empty. Tokens suffice after two results, but five text
    // messages need u0; 30,000 tokens stay under the maximum.
    assert_eq!(keep_start(&v, "r4", KeepLimits::REFERENCE), Some(1));
}

#[test]
fn keep_start_stops_at_the_maximum() {
    let mut records = vec![boundary()];
    for i in 0..10 {
        records.push(call(&format!("a{i}"), &format!("t{i}"), "Bash", json!({})));
        records.push(sized_result(&format!("r{i}"), &format!("t{i}"), 15_000));
    }
    let v = refs(&records);
    // No text messages at all: widening stops once 40,000 tokens are kept (three
    // results), then the cut moves back to the first result's call.
    let start = keep_start(&v, "r9", KeepLimits::REFERENCE).unwrap();
    assert_eq!(v[start].uuid, "a7");
    let kept: u64 = v[start..]
        .iter()
        .map(|r| tokens::record_tokens(r, attachments::render))
        .sum();
    assert!((40_000..55_000).contains(&kept), "{kept}");
}

#[test]
fn keep_start_scales_with_its_limits() {
    let mut records = vec![boundary()];
    for i in 0..10 {
        records.push(sized_user(&format!("u{i}"), 1_000));
    }
    let v = refs(&records);
    // The reference limits want 10,000 tokens: all ten messages.
    assert_eq!(keep_start(&v, "u9", KeepLimits::REFERENCE), Some(1));
    // A small window's limits: the maximum (2,500) is reached before five text
    // messages, and it wins.
    let small = KeepLimits {
        min_tokens: 1_000,
        min_text_messages: 5,
        max_tokens: 2_500,
    };
    assert_eq!(keep_start(&v, "u9", small), Some(8));
}

#[test]
fn keep_start_takes_in_the_call_of_a_kept_result() {
    let records = vec![
        boundary(),
        user("u0", "hello"),
        call("a1", "t1", "Read", json!({})),
        sized_result("r1", "t1", 12_000),
        user("u1", "one"),
        user("u2", "two"),
        user("u3", "three"),
        user("u4", "four"),
    ];
    let v = refs(&records);
    // Widening stops at r1 (12,000 tokens, 5 text messages? no: 4) — it goes on to
    // a1 then u0 for the fifth text message.
    assert_eq!(keep_start(&v, "u4", KeepLimits::REFERENCE), Some(1));
    // With the text minimum met by the tail, the cut would land on r1: it moves back
    // to include a1.
    let mut records = records;
    records.push(user("u5", "five"));
    let v = refs(&records);
    assert_eq!(keep_start(&v, "u5", KeepLimits::REFERENCE), Some(2));
}

#[test]
fn keep_start_never_splits_a_response() {
    let records = vec![
        boundary(),
        user("u0", "go"),
        with_message_id(assistant("a1", &"t".repeat(4 * 4_000)), "m1"),
        with_message_id(call("a2", "t1", "Read", json!({})), "m1"),
        sized_result("r1", "t1", 10),
        with_message_id(assistant("a3", &"t".repeat(4 * 11_000)), "m2"),
        user("u1", "a"),
        user("u2", "b"),
        user("u3", "c"),
        user("u4", "d"),
    ];
    let v = refs(&records);
    // Widening from the end: u4..a3 hold 11,004 tokens and 5 text messages, so the
    // cut lands on a3, whole response m2. Starting after r1 gives the same.
    assert_eq!(keep_start(&v, "r1", KeepLimits::REFERENCE), Some(5));
    // Starting after a2 keeps r1 whose call a2 is in m1: the whole response comes.
    assert_eq!(keep_start(&v, "a2", KeepLimits::REFERENCE), Some(2));
}

#[test]
fn keep_start_never_goes_past_the_boundary() {
    let records = vec![boundary(), user("u0", "a"), user("u1", "b")];
    let v = refs(&records);
    assert_eq!(
        keep_start(&v, "u1", KeepLimits::REFERENCE),
        Some(1),
        "the boundary is not kept"
    );
    assert_eq!(keep_start(&v, "b", KeepLimits::REFERENCE), Some(1));
    // Without a boundary record, index 0 is the floor.
    assert_eq!(keep_start(&v[1..], "u1", KeepLimits::REFERENCE), Some(0));
}
