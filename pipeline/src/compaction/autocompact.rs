//! Compaction's pure parts: which rounds to drop
//! when the summary request itself is too long, the texts of the new history, and the
//! post-compact file restores. The engine runs the summariser and stores the result.
//!
//! The new history is `[compact boundary, summary message, kept tail, attachments, hook
//! results]`; the raw transcript is never rewritten — the projection starts at the
//! boundary.

use std::fmt::Write as _;
use std::ops::Range;

use ctxd_protocol::{ContentBlock, Record, RecordInput, RecordKind};
use serde_json::{Value, json};

use crate::{attachments, session_memory, tokens};

/// Consecutive failures after which autocompact stops trying (until a success or a
/// manual compact).
pub const MAX_CONSECUTIVE_FAILURES: u32 = 3;
/// Head-truncation retries of a summary request that is itself too long.
pub const MAX_TRUNCATION_RETRIES: u32 = 3;
/// Share of the rounds dropped per retry when the provider gave no token gap.
const DROP_SHARE: f64 = 0.2;
/// Files restored after a compaction, and their token caps (for the reference window).
pub const RESTORE_MAX_FILES: usize = 5;
pub(crate) const RESTORE_MAX_FILE_TOKENS: u64 = 5_000;
pub(crate) const RESTORE_MAX_TOTAL_TOKENS: u64 = 50_000;
/// The longest summary asked of a summariser (for the reference window).
pub(crate) const SUMMARY_MAX_TOKENS: u64 = 20_000;
/// Per-section size of the session memory when it stands in as the summary (for the
/// reference window).
pub(crate) const NOTES_SECTION_TOKENS: u64 = 1_500;
/// The autocompact threshold the fixed caps above (and session-memory compact's kept
/// tail) were made for: W = 200,000 with O ≥ 20,000.
pub(crate) const REFERENCE_THRESHOLD: u64 = 167_000;
/// How many times a compaction tightens its caps before it settles for what it has.
pub const TIGHTENINGS: u32 = 3;

/// The caps one compaction works within. A compaction must leave the next compile's
/// estimate at or below `target`, half the autocompact threshold, or it has not made
/// room. The reference caps fit a 200k window; smaller thresholds scale them down in
/// proportion, and [`RoomBudget::tightened`] halves them again when the first try still
/// lands above the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoomBudget {
    /// At most this after a compaction: half the autocompact threshold.
    pub target: u64,
    /// The autocompact threshold itself: a new history at or above it is refused.
    pub threshold: u64,
    pub summary_tokens: u64,
    pub notes_section_tokens: u64,
    pub restore_file_tokens: u64,
    pub restore_total_tokens: u64,
    pub keep: session_memory::KeepLimits,
}

/// `v × threshold / reference`, never above `v`.
fn scale(v: u64, threshold: u64) -> u64 {
    let t = threshold.min(REFERENCE_THRESHOLD);
    u64::try_from(u128::from(v) * u128::from(t) / u128::from(REFERENCE_THRESHOLD)).unwrap_or(v)
}

impl RoomBudget {
    /// The caps for a session whose autocompact threshold is `threshold` and whose model
    /// writes at most `max_output` tokens per response.
    pub fn new(threshold: u64, max_output: u64) -> RoomBudget {
        let keep = session_memory::KeepLimits::REFERENCE;
        RoomBudget {
            target: threshold / 2,
            threshold,
            summary_tokens: scale(SUMMARY_MAX_TOKENS, threshold).min(max_output.max(1)),
            notes_section_tokens: scale(NOTES_SECTION_TOKENS, threshold),
            restore_file_tokens: scale(RESTORE_MAX_FILE_TOKENS, threshold),
            restore_total_tokens: scale(RESTORE_MAX_TOTAL_TOKENS, threshold),
            keep: session_memory::KeepLimits {
                min_tokens: scale(keep.min_tokens, threshold),
                max_tokens: scale(keep.max_tokens, threshold),
                min_text_messages: keep.min_text_messages,
            },
        }
    }

    /// The caps after `level` tightenings: every size halved per level; at the last
    /// level no file is restored at all.
    pub fn tightened(&self, level: u32) -> RoomBudget {
        let half = |v: u64| v >> level.min(63);
        let restore = |v: u64| if level >= TIGHTENINGS { 0 } else { half(v) };
        RoomBudget {
            summary_tokens: half(self.summary_tokens).max(1),
            notes_section_tokens: half(self.notes_section_tokens).max(1),
            restore_file_tokens: restore(self.restore_file_tokens),
            restore_total_tokens: restore(self.restore_total_tokens),
            keep: session_memory::KeepLimits {
                min_tokens: half(self.keep.min_tokens),
                max_tokens: half(self.keep.max_tokens),
                min_text_messages: self.keep.min_text_messages,
            },
            ..*self
        }
    }
}

/// Whether anything was said since the history began at its compact boundary. What a
/// compaction writes itself (the summary, copies of the kept tail, re-announced
/// attachments) does not count, so a compaction never follows another without new
/// messages in between. A view without a boundary has never been compacted.
pub fn new_messages_since_boundary(view: &[&Record]) -> bool {
    let compacted = view
        .first()
        .is_some_and(|r| crate::projection::is_compact_boundary(r));
    !compacted
        || view.iter().skip(1).any(|r| {
            matches!(r.kind, RecordKind::User | RecordKind::Assistant)
                && !r.is_compact_summary
                && r.meta.as_ref().and_then(|m| m.get(COPIED_FROM)).is_none()
        })
}

/// The `meta` key of a record a session-memory compact copied into the new history.
pub const COPIED_FROM: &str = "copied_from";

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
        None => crate::saturate::usize_from_f64(((left as f64) * DROP_SHARE).ceil()),
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
            subtype: Some(crate::projection::COMPACT_BOUNDARY.into()),
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

/// Files read most recently (Read tool inputs whose result the model got without an
/// error), newest first, unique. A Read the client refused, or one with no result yet,
/// showed the model nothing of the file, so nothing of it is restored.
pub fn recently_read(view: &[&Record], limit: usize) -> Vec<String> {
    let succeeded: std::collections::HashSet<&str> = view
        .iter()
        .filter(|r| r.kind == RecordKind::User)
        .flat_map(|r| r.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id,
                is_error: false,
                ..
            } => Some(tool_use_id.as_str()),
            _ => None,
        })
        .collect();
    let mut out: Vec<String> = Vec::new();
    for r in view
        .iter()
        .rev()
        .filter(|r| r.kind == RecordKind::Assistant)
    {
        for b in r.content.iter().rev() {
            if let ContentBlock::ToolUse {
                id, name, input, ..
            } = b
                && name == "Read"
                && succeeded.contains(id.as_str())
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

/// Renders restored files within the caps: each at most `file_tokens`, all at most
/// `total_tokens` (the daemon's estimate); `files` are `(path, content)` newest first.
/// A file that would get no lines at all is left out.
pub fn restore_attachments(
    files: &[(String, String)],
    file_tokens: u64,
    total_tokens: u64,
) -> Vec<Value> {
    let mut total = 0u64;
    let mut out = Vec::new();
    for (path, content) in files.iter().take(RESTORE_MAX_FILES) {
        if total >= total_tokens {
            break;
        }
        let budget = file_tokens.min(total_tokens - total);
        let head = format!(
            "The file {path} as it is now (restored after the conversation was compacted):\n"
        );
        // Characters that keep the whole text within `budget` under the estimate.
        let max_chars = usize::try_from(budget.saturating_mul(3))
            .unwrap_or(usize::MAX)
            .saturating_sub(head.chars().count() + 80);
        let mut numbered = String::new();
        let mut chars = 0usize;
        let mut cut_lines = 0usize;
        let lines: Vec<&str> = content.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let next = format!("{:>6}\t{}\n", i + 1, line);
            let n = next.chars().count();
            if chars + n > max_chars {
                cut_lines = lines.len() - i;
                break;
            }
            chars += n;
            numbered.push_str(&next);
        }
        if numbered.is_empty() && !lines.is_empty() {
            continue;
        }
        let mut text = head + &numbered;
        if cut_lines > 0 {
            let _ = writeln!(
                text,
                "... [{cut_lines} more lines not shown; read the file for the rest]"
            );
        }
        total += tokens::scaled((text.chars().count() as u64).div_ceil(4));
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
    fn a_read_that_failed_or_has_no_result_is_not_recently_read() {
        let c = [
            r(
                "a1",
                json!({"type": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/etc/shadow"}}]}),
            ),
            r(
                "u1",
                json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "Permission denied", "is_error": true}]}),
            ),
            r(
                "a2",
                json!({"type": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/w/ok.rs"}}]}),
            ),
            r(
                "u2",
                json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "fn main() {}"}]}),
            ),
            r(
                "a3",
                json!({"type": "assistant", "content": [{"type": "tool_use", "id": "t3", "name": "Read", "input": {"file_path": "/w/pending.rs"}}]}),
            ),
        ];
        let v: Vec<&Record> = c.iter().collect();
        assert_eq!(recently_read(&v, 5), vec!["/w/ok.rs"]);
    }

    #[test]
    fn restored_files_are_capped() {
        let big = "y".repeat(100).clone() + "\n";
        let files: Vec<(String, String)> = (0..7)
            .map(|i| (format!("/f{i}"), big.repeat(1000)))
            .collect();
        let out = restore_attachments(&files, RESTORE_MAX_FILE_TOKENS, RESTORE_MAX_TOTAL_TOKENS);
        assert_eq!(out.len(), 5);
        for a in &out {
            let text = a["content"].as_str().unwrap();
            let estimate = tokens::scaled((text.chars().count() as u64).div_ceil(4));
            assert!(estimate <= RESTORE_MAX_FILE_TOKENS, "{estimate}");
            assert!(estimate > RESTORE_MAX_FILE_TOKENS * 9 / 10, "{estimate}");
            assert!(text.contains("more lines not shown"));
        }
        // A tight total: fewer files, and none that would show no line.
        let out = restore_attachments(&files, 1_000, 1_500);
        assert_eq!(out.len(), 2);
        assert!(restore_attachments(&files, 10, 10).is_empty());
        assert!(restore_attachments(&files, 0, 0).is_empty());
    }

    #[test]
    fn the_budget_scales_with_the_threshold_and_tightens() {
        let big = RoomBudget::new(167_000, 32_000);
        assert_eq!(big.target, 83_500);
        assert_eq!(big.summary_tokens, 20_000);
        assert_eq!(big.restore_total_tokens, 50_000);
        assert_eq!(big.keep, session_memory::KeepLimits::REFERENCE);
        // A larger window keeps the reference caps; the output limit caps the summary.
        let larger = RoomBudget::new(967_000, 8_000);
        assert_eq!(larger.summary_tokens, 8_000);
        assert_eq!(larger.keep.max_tokens, 40_000);
        // W = 40,000, O = 8,000: threshold 19,000.
        let small = RoomBudget::new(19_000, 8_000);
        assert_eq!(small.target, 9_500);
        assert_eq!(small.summary_tokens, 2_275);
        assert_eq!(small.keep.min_tokens, 1_137);
        assert_eq!(small.keep.max_tokens, 4_550);
        assert_eq!(small.keep.min_text_messages, 5);
        let t = small.tightened(1);
        assert_eq!(t.summary_tokens, 1_137);
        assert_eq!(t.restore_total_tokens, small.restore_total_tokens / 2);
        assert_eq!(t.target, small.target);
        let last = small.tightened(TIGHTENINGS);
        assert_eq!(last.restore_total_tokens, 0);
        assert!(last.summary_tokens >= 1);
    }

    #[test]
    fn only_new_messages_allow_another_compaction() {
        let boundary = r(
            "b",
            json!({"type": "system", "subtype": "compact_boundary"}),
        );
        let summary = r(
            "s",
            json!({"type": "user", "is_compact_summary": true, "content": [{"type": "text", "text": "sum"}]}),
        );
        let copy = r(
            "c",
            json!({"type": "user", "content": [{"type": "text", "text": "kept"}], "meta": {"copied_from": "x"}}),
        );
        let file = r(
            "f",
            json!({"type": "attachment", "attachment": {"type": "compact_file_reference"}}),
        );
        let said = r(
            "n",
            json!({"type": "user", "content": [{"type": "text", "text": "next"}]}),
        );
        assert!(new_messages_since_boundary(&[&said]));
        assert!(!new_messages_since_boundary(&[
            &boundary, &summary, &copy, &file
        ]));
        assert!(new_messages_since_boundary(&[
            &boundary, &summary, &copy, &file, &said
        ]));
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
        let plan = crate::plan_mode::after_compaction(true, "/p.md", None);
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
