//! The embedded summariser on real Claude Code transcripts, imported as the engine imports
//! them: the importer is the engine's, and `ctxd-providers` depends on no engine.

use ctxd_pipeline::tokens::{block_tokens, scaled};
use ctxd_protocol::{ContentBlock, Record, RecordKind, SummariserConfig};
use ctxd_providers::{Summariser, SummaryInput};
use serde_json::{Value, json};

/// The embedded summariser's indent and empty section, as it writes them.
const INDENT: &str = "   ";
const NONE: &str = "None recorded.";

/// The embedded summariser's own token estimate of a text.
fn tokens(text: &str) -> u64 {
    scaled(block_tokens(&ContentBlock::text(text)))
}

fn texts(r: &Record) -> Vec<String> {
    r.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

fn summarise_records(records: &[Record], budget: u64) -> String {
    let refs: Vec<&Record> = records.iter().collect();
    let embedded = Summariser::new(&SummariserConfig::Embedded, None).unwrap();
    futures::executor::block_on(embedded.summarise(SummaryInput {
        records: &refs,
        messages: &[],
        custom_instructions: None,
        head_truncated: false,
        max_summary_tokens: budget,
    }))
    .unwrap()
}

/// Claude Code's JSONL → stored records, the way the engine would number them.
fn fixture(name: &str) -> Vec<Record> {
    let path = format!(
        "{}/../tests/fixtures/claude-code/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    let imported = crate::import::claude_code::parse(&text).unwrap();
    imported
        .records
        .into_iter()
        .enumerate()
        .map(|(i, input)| {
            let mut v = serde_json::to_value(&input).unwrap();
            if v.get("uuid").is_none_or(Value::is_null) {
                v["uuid"] = json!(format!("gen-{i}"));
            }
            if v.get("timestamp").is_none_or(Value::is_null) {
                v["timestamp"] = json!("2026-01-01T00:00:00Z");
            }
            v["seq"] = json!(i as u64 + 1);
            serde_json::from_value(v).unwrap()
        })
        .collect()
}

#[test]
fn claude_code_fixture() {
    let records = fixture("spotter/tool_heavy.jsonl");
    let text = summarise_records(&records, 20_000);
    assert_eq!(text, summarise_records(&records, 20_000));

    // Every user-typed message, verbatim.
    let typed: Vec<String> = records
        .iter()
        .filter(|r| r.kind == RecordKind::User && !r.is_meta && !r.is_sidechain)
        .flat_map(texts)
        .filter(|t| !t.trim_start().starts_with("<system-reminder>"))
        .filter(|t| !ctxd_pipeline::records::is_harness_text(t))
        .collect();
    assert!(typed.len() >= 3, "{typed:?}");
    for t in &typed {
        assert!(text.contains(t.as_str()), "missing {t:?} in\n{text}");
    }
    assert!(text.contains("start phoenix in background"));
    assert!(text.contains("/home/marco/projects/spotter/assets/js/app.js (read)"));
    // This session has no failing tool call.
    let errors = text.split("4. Errors and Fixes:\n").nth(1).unwrap();
    assert!(errors.starts_with(&format!("{INDENT}{NONE}")), "{errors}");
    assert!(text.contains("Commands run: mix phx.server, tail"));
    assert!(text.contains("JavaScript (.js)"));
    insta::assert_snapshot!("claude_code_tool_heavy", text);

    // A small budget is met and still quotes the first and the last message.
    let small = summarise_records(&records, 300);
    assert!(tokens(&small) <= 300, "{}", tokens(&small));
    assert!(small.contains("start phoenix in background"));
    assert!(small.contains(typed.last().unwrap().as_str()));
}

#[test]
fn claude_code_fixture_with_errors() {
    let records = fixture("spotter/short.jsonl");
    let text = summarise_records(&records, 20_000);
    let errors = text
        .split("4. Errors and Fixes:\n")
        .nth(1)
        .unwrap()
        .split("\n\n5.")
        .next()
        .unwrap();
    let failing = records
        .iter()
        .flat_map(|r| &r.content)
        .filter(|b| matches!(b, ContentBlock::ToolResult { is_error: true, .. }))
        .count();
    assert!(failing > 0);
    assert_eq!(
        errors.matches(&format!("{INDENT}- ")).count(),
        failing,
        "{errors}"
    );
}

#[test]
fn a_long_real_session_meets_its_budget() {
    let records = fixture("viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl");
    let started = std::time::Instant::now();
    let text = summarise_records(&records, 4_000);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(tokens(&text) <= 4_000, "{}", tokens(&text));
    // The slash command with arguments is the request, not the later thanks.
    let primary = text.split("\n\n2.").next().unwrap();
    assert!(primary.contains("create TODO app by Next.js"), "{text}");
    // Its failing calls all ran in sub-agents, which are not the main thread.
    assert!(
        text.contains("4. Errors and Fixes:\n   None recorded."),
        "{text}"
    );
}
