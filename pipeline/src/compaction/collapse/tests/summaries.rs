//! Span summaries (snapshots, determinism, the cap) and the session settings.

use super::*;

// ---- summaries ----------------------------------------------------------------

fn realistic() -> T {
    let mut t = T::default();
    t.user("The parser test fails on empty input.\nHere is the log: ...")
        .tool(
            "t1",
            "Read",
            json!({"file_path": "/repo/src/parser.rs"}),
            &"fn parse() {}\n".repeat(300),
        )
        .tool(
            "t2",
            "Bash",
            json!({"command": "cargo test parser"}),
            &"test output\n".repeat(200),
        );
    t.push(
        "a",
        json!({"type": "assistant", "message_id": "m-e", "content": [{"type": "tool_use", "id": "t3", "name": "Edit", "input": {"file_path": "/repo/src/parser.rs", "old_string": "a", "new_string": "b"}}]}),
    );
    t.push(
        "r",
        json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": "t3", "is_error": true,
               "content": "<tool_use_error>String to replace not found in file.</tool_use_error>"}]}),
    );
    t.tool(
        "t4",
        "Edit",
        json!({"file_path": "/repo/src/parser.rs", "old_string": "fn parse() {}", "new_string": "fn parse() { todo!() }"}),
        "ok",
    )
    .tool(
        "t5",
        "Bash",
        json!({"command": "cargo test parser"}),
        &"test result: ok\n".repeat(40),
    );
    t.push(
        "x",
        json!({"type": "attachment", "attachment": {"type": "date_change", "date": "2026-11-30"}}),
    );
    t.reply("The empty-input case now returns an empty AST.\n\nAll parser tests pass.")
        .user("Good. Also run clippy on the crate.")
        .tool(
            "t6",
            "Bash",
            json!({"command": "cargo clippy"}),
            &"warning: unused\n".repeat(50),
        )
        .tool(
            "t7",
            "Write",
            json!({"file_path": "/repo/src/lib.rs", "content": "pub mod parser;"}),
            "ok",
        )
        .reply("Clippy is clean after removing the unused import in lib.rs.");
    t
}

#[test]
fn summary_snapshot() {
    let t = realistic();
    let v = t.view();
    let text = summarize_span(&v);
    insta::assert_snapshot!("summary", text);
    let c = Collapse {
        id: span_id(&v[0].uuid, &v[v.len() - 1].uuid),
        first_uuid: v[0].uuid.clone(),
        last_uuid: v[v.len() - 1].uuid.clone(),
        record_count: v.len(),
        tokens: records_tokens(&v),
        summary: text,
        status: CollapseStatus::Committed,
    };
    insta::assert_snapshot!("collapsed_record", render(&c));
}

#[test]
fn summary_is_deterministic_and_within_its_cap() {
    let t = realistic();
    let v = t.view();
    assert_eq!(summarize_span(&v), summarize_span(&v));
    // A huge span: many users, files, tools and errors; the cap is 600 tokens.
    let mut t = T::default();
    for i in 0..200 {
        t.user(&format!("request number {i}: {}", "please ".repeat(40)));
        t.tool(
            &format!("r{i}"),
            &match i % 3 {
                0 => "Read".to_string(),
                1 => "Edit".to_string(),
                _ => format!("mcp__server__tool{}", i % 20),
            },
            json!({"file_path": format!("/very/long/path/number/{i}/{}.rs", "n".repeat(60))}),
            &"z".repeat(4000),
        );
        t.reply(&"conclusion ".repeat(60));
    }
    let v = t.view();
    let text = summarize_span(&v);
    assert!(
        text_tokens(&text) <= MAX_SUMMARY_TOKENS,
        "{}",
        text_tokens(&text)
    );
    assert!(text.contains("User messages (200):"));
    insta::assert_snapshot!("summary_capped", text);
    // Small spans: a tenth of their tokens, at least 50.
    for n in 1..6 {
        let t = rounds(n);
        let v = t.view();
        let cap = summary_cap(records_tokens(&v));
        let text = summarize_span(&v);
        assert!(
            text_tokens(&text) <= cap,
            "{n}: {} > {cap}",
            text_tokens(&text)
        );
        assert!(cap <= (records_tokens(&v) / 10).max(MIN_SUMMARY_TOKENS));
    }
    let tiny = rec("t", 1, json!({"type": "user", "content": "hi"}));
    let text = summarize_span(&[&tiny]);
    assert_eq!(text, "User messages (1):\n- hi");
}

#[test]
fn settings_from_the_session_config() {
    let cfg: CollapseConfig = serde_json::from_value(json!({"enabled": true})).unwrap();
    let s = CollapseSettings::from(&cfg);
    assert_eq!(
        s,
        CollapseSettings {
            enabled: true,
            ..CollapseSettings::default()
        }
    );
    assert_eq!(span_id("a", "b"), span_id("a", "b"));
    assert_ne!(span_id("a", "b"), span_id("a", "c"));
}
