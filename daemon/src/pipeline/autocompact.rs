//! Compaction's pure parts (SPEC §8 step 5; seed 001 "第三层压缩"): which rounds to drop
//! when the summary request itself is too long, the texts of the new history, and the
//! post-compact file restores. The engine runs the summariser and stores the result.
//!
//! The new history is `[compact boundary, summary message, kept tail, attachments, hook
//! results]`; the raw transcript is never rewritten — the projection starts at the
//! boundary.

use std::ops::Range;

use ctxd_protocol::{ContentBlock, Record, RecordInput, RecordKind};
use serde_json::{Value, json};

use super::{attachments, tokens};

/// Consecutive failures after which autocompact stops trying (until a success or a
/// manual compact).
pub const MAX_CONSECUTIVE_FAILURES: u32 = 3;
/// Head-truncation retries of a summary request that is itself too long.
pub const MAX_TRUNCATION_RETRIES: u32 = 3;
/// Share of the rounds dropped per retry when the provider gave no token gap.
const DROP_SHARE: f64 = 0.2;
/// Files restored after a compaction, and their token caps.
pub const RESTORE_MAX_FILES: usize = 5;
pub const RESTORE_MAX_FILE_TOKENS: u64 = 5_000;
pub const RESTORE_MAX_TOTAL_TOKENS: u64 = 50_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    Auto,
    Manual,
    /// After the provider refused a request (prompt too long, media too large).
    Reactive,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Auto => "auto",
            Trigger::Manual => "manual",
            Trigger::Reactive => "reactive",
        }
    }
}

fn is_user_typed(r: &Record) -> bool {
    r.kind == RecordKind::User
        && !r.is_meta
        && !r
            .content
            .iter()
            .all(|b| matches!(b, ContentBlock::ToolResult { .. }))
}

/// API rounds of the projection: each starts at a user-typed message and runs to the
/// next one, so dropping whole rounds never splits a tool_use from its result or the
/// records of one response.
pub fn api_rounds(view: &[&Record]) -> Vec<Range<usize>> {
    let mut starts: Vec<usize> = view
        .iter()
        .enumerate()
        .filter(|(_, r)| is_user_typed(r))
        .map(|(i, _)| i)
        .collect();
    if starts.first() != Some(&0) {
        starts.insert(0, 0);
    }
    let mut out = Vec::with_capacity(starts.len());
    for (k, &s) in starts.iter().enumerate() {
        let e = starts.get(k + 1).copied().unwrap_or(view.len());
        if s < e {
            out.push(s..e);
        }
    }
    out
}

/// How many more of the oldest rounds to drop: enough to cover the provider's reported
/// gap when known, else about a fifth of them; at least one, never all.
pub fn rounds_to_drop(
    view: &[&Record],
    rounds: &[Range<usize>],
    already: usize,
    token_gap: Option<u64>,
) -> usize {
    let left = rounds.len().saturating_sub(already);
    if left <= 1 {
        return 0;
    }
    let max = left - 1;
    let n = match token_gap {
        Some(gap) => {
            let mut freed = 0u64;
            let mut n = 0;
            for r in &rounds[already..] {
                if freed >= gap || n >= max {
                    break;
                }
                freed += view[r.clone()]
                    .iter()
                    .map(|rec| tokens::record_tokens(rec, attachments::render))
                    .sum::<u64>();
                n += 1;
            }
            n
        }
        None => ((left as f64) * DROP_SHARE).ceil() as usize,
    };
    n.clamp(1, max)
}

/// The summary message the model sees first in the new history (our own words).
pub fn summary_message(summary: &str, tail_kept: bool, trigger: Trigger) -> String {
    let mut s = String::from(
        "This session continues an earlier conversation that grew too long for the context window. \
         The summary below was written from that conversation and stands in for it.\n\n",
    );
    s.push_str(summary.trim());
    s.push('\n');
    if tail_kept {
        s.push_str("\nThe most recent messages follow verbatim after this summary.\n");
    }
    if trigger == Trigger::Auto {
        s.push_str(
            "\nContinue the work from where it stopped, without asking the user anything further. \
             Do not recap the summary or say that the conversation was compacted; pick up the last task directly.",
        );
    }
    s
}

/// The boundary's payload.
pub fn boundary_data(
    trigger: Trigger,
    pre_tokens: u64,
    summarised: &[&Record],
    summariser: &str,
    dropped_rounds: usize,
) -> Value {
    json!({
        "trigger": trigger.as_str(),
        "pre_tokens": pre_tokens,
        "summarised_records": summarised.len(),
        "first_summarised_uuid": summarised.first().map(|r| r.uuid.clone()),
        "last_summarised_uuid": summarised.last().map(|r| r.uuid.clone()),
        "summariser": summariser,
        "head_truncated_rounds": dropped_rounds,
    })
}

/// The head of every new history: the compact boundary, then the summary message.
pub fn head_records(boundary: Value, summary_message: String, timestamp: &str) -> Vec<RecordInput> {
    vec![
        RecordInput {
            kind: Some(RecordKind::System),
            subtype: Some(super::projection::COMPACT_BOUNDARY.into()),
            data: Some(boundary),
            timestamp: Some(timestamp.to_string()),
            ..RecordInput::default()
        },
        RecordInput {
            kind: Some(RecordKind::User),
            is_compact_summary: true,
            content: vec![ContentBlock::text(summary_message)],
            timestamp: Some(timestamp.to_string()),
            ..RecordInput::default()
        },
    ]
}

/// What every new history re-announces after its summary (and kept tail): the restored
/// files, then the plan state (the plan file when it exists, the full plan-mode reminder
/// when the session is in plan mode; see `plan_mode::after_compaction`).
pub fn rebuild_attachments(restored: &[Value], plan: &[Value]) -> Vec<Value> {
    let mut out = restored.to_vec();
    out.extend_from_slice(plan);
    out
}

/// Files read most recently (Read tool inputs), newest first, unique.
pub fn recently_read(view: &[&Record], limit: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in view
        .iter()
        .rev()
        .filter(|r| r.kind == RecordKind::Assistant)
    {
        for b in r.content.iter().rev() {
            if let ContentBlock::ToolUse { name, input, .. } = b
                && name == "Read"
                && let Some(p) = input.get("file_path").and_then(Value::as_str)
                && !out.iter().any(|x| x == p)
            {
                out.push(p.to_string());
            }
        }
        if out.len() >= limit * 3 {
            break;
        }
    }
    out
}

/// Renders restored files within the caps: each at most 5,000 tokens, all at most
/// 50,000; `files` are `(path, content)` newest first.
pub fn restore_attachments(files: &[(String, String)]) -> Vec<Value> {
    let mut total = 0u64;
    let mut out = Vec::new();
    for (path, content) in files.iter().take(RESTORE_MAX_FILES) {
        if total >= RESTORE_MAX_TOTAL_TOKENS {
            break;
        }
        let budget = RESTORE_MAX_FILE_TOKENS.min(RESTORE_MAX_TOTAL_TOKENS - total);
        let max_chars = (budget * 4) as usize;
        let mut numbered = String::new();
        let mut cut_lines = 0usize;
        let lines: Vec<&str> = content.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let next = format!("{:>6}\t{}\n", i + 1, line);
            if numbered.chars().count() + next.chars().count() > max_chars {
                cut_lines = lines.len() - i;
                break;
            }
            numbered.push_str(&next);
        }
        let mut text = format!(
            "The file {path} as it is now (restored after the conversation was compacted):\n{numbered}"
        );
        if cut_lines > 0 {
            text.push_str(&format!(
                "... [{cut_lines} more lines not shown; read the file for the rest]\n"
            ));
        }
        total += tokens::scaled((text.chars().count() as u64).div_ceil(4)).min(budget);
        out.push(json!({"type": "compact_file_reference", "filename": path, "content": text}));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(uuid: &str, v: Value) -> Record {
        let mut v = v;
        v["uuid"] = json!(uuid);
        v["seq"] = json!(1);
        v["timestamp"] = json!("2026-11-29T10:00:00Z");
        serde_json::from_value(v).unwrap()
    }

    fn convo() -> Vec<Record> {
        let mut out = Vec::new();
        for i in 0..10 {
            out.push(r(&format!("p{i}"), json!({"type": "user", "content": [{"type": "text", "text": format!("question {i} {}", "x".repeat(400))}]})));
            out.push(r(&format!("a{i}"), json!({"type": "assistant", "content": [{"type": "tool_use", "id": format!("t{i}"), "name": "Read", "input": {"file_path": format!("/f{}", i % 3)}}]})));
            out.push(r(&format!("u{i}"), json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "ok"}]})));
        }
        out
    }

    #[test]
    fn rounds_never_split_pairs() {
        let c = convo();
        let v: Vec<&Record> = c.iter().collect();
        let rounds = api_rounds(&v);
        assert_eq!(rounds.len(), 10);
        assert!(rounds.iter().all(|r| r.len() == 3));
    }

    #[test]
    fn drop_a_fifth_or_the_gap() {
        let c = convo();
        let v: Vec<&Record> = c.iter().collect();
        let rounds = api_rounds(&v);
        assert_eq!(rounds_to_drop(&v, &rounds, 0, None), 2);
        assert_eq!(rounds_to_drop(&v, &rounds, 8, None), 1);
        assert_eq!(rounds_to_drop(&v, &rounds, 9, None), 0);
        // Each round is ~110 raw tokens: a 250-token gap takes three rounds.
        assert_eq!(rounds_to_drop(&v, &rounds, 0, Some(250)), 3);
        assert_eq!(rounds_to_drop(&v, &rounds, 0, Some(1_000_000)), 9);
    }

    #[test]
    fn recently_read_is_newest_first_and_unique() {
        let c = convo();
        let v: Vec<&Record> = c.iter().collect();
        assert_eq!(recently_read(&v, 5), vec!["/f0", "/f2", "/f1"]);
    }

    #[test]
    fn restored_files_are_capped() {
        let big = "y".repeat(100).clone() + "\n";
        let files: Vec<(String, String)> = (0..7)
            .map(|i| (format!("/f{i}"), big.repeat(1000)))
            .collect();
        let out = restore_attachments(&files);
        assert_eq!(out.len(), 5);
        for a in &out {
            let text = a["content"].as_str().unwrap();
            assert!(text.chars().count() <= 20_000 + 400, "{}", text.len());
            assert!(text.contains("more lines not shown"));
        }
    }

    #[test]
    fn new_histories_open_with_boundary_and_summary_and_reannounce_plan_mode() {
        let head = head_records(
            json!({"trigger": "auto"}),
            "the summary".into(),
            "2026-11-29T10:00:00Z",
        );
        assert_eq!(head[0].kind, Some(RecordKind::System));
        assert_eq!(head[0].subtype.as_deref(), Some("compact_boundary"));
        assert!(head[1].is_compact_summary);
        let files = vec![json!({"type": "compact_file_reference", "filename": "/a"})];
        assert_eq!(rebuild_attachments(&files, &[]), files);
        let plan = crate::pipeline::plan_mode::after_compaction(true, "/p.md", None);
        let with_plan = rebuild_attachments(&files, &plan);
        assert_eq!(with_plan.len(), 2);
        assert_eq!(with_plan[1]["type"], "plan_mode");
        assert_eq!(with_plan[1]["reminderType"], "full");
    }

    #[test]
    fn summary_message_wording() {
        let m = summary_message("1. Primary request: x", true, Trigger::Auto);
        assert!(m.contains("1. Primary request: x"));
        assert!(m.contains("verbatim"));
        assert!(m.contains("Do not recap"));
        let m = summary_message("s", false, Trigger::Manual);
        assert!(!m.contains("verbatim") && !m.contains("Do not recap"));
    }
}
