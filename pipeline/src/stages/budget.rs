//! Tool-result budget.
//!
//! Two limits decide whether the model sees a tool result whole or as a
//! `<persisted-output>` block pointing at a file that holds it:
//! - per tool: a result longer than the tool's threshold (`min(declared, 50,000)`; tools
//!   that declare no limit, like Claude Code's Read, are exempt: persisting a Read only
//!   to have the model Read it back would loop);
//! - per API-level user message: when the fresh results of one message plus the ones
//!   already shown exceed 200,000 characters, the largest fresh ones are persisted until
//!   the message fits.
//!
//! Every result's fate is decided once, the first time a compile shows it, and then
//! frozen: a kept result stays whole and a replaced one replays its stored string, even
//! when the frozen ones alone exceed the budget. Re-deciding would change bytes the
//! model already saw and break the prompt cache. `plan` decides (pure); the engine writes
//! the files and stores the fates in one transaction; `apply` replays them (pure).

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};

use ctxd_protocol::{
    ContentBlock, Record, RecordKind, ToolResultBlock, ToolResultContent, ToolSpec,
};
use serde::{Deserialize, Serialize};

use super::projection::Shown;

pub(crate) const DEFAULT_MAX_RESULT_SIZE_CHARS: u64 = 50_000;
pub(crate) const MAX_TOOL_RESULTS_PER_MESSAGE_CHARS: u64 = 200_000;
const PREVIEW_CHARS: usize = 2_000;
/// A preview is cut back to a line end only if that keeps at least this much.
const PREVIEW_MIN_LINE_CUT: usize = 1_000;

/// What the model is shown for one tool result, forever.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Fate {
    /// Seen and kept whole.
    Kept,
    /// Seen as exactly this string.
    Replaced(String),
}

/// Per-tool thresholds for one session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolLimits {
    /// Registered tools: `Some(declared)` or `None` for "declares no limit".
    declared: HashMap<String, Option<u64>>,
    /// Operator overrides by tool name (Claude Code's per-tool feature-flag override):
    /// taken as they are, not clamped.
    overrides: BTreeMap<String, u64>,
}

impl ToolLimits {
    pub fn new(tools: &[ToolSpec], overrides: &BTreeMap<String, u64>) -> Self {
        ToolLimits {
            declared: tools
                .iter()
                .map(|t| (t.name.clone(), t.max_result_size_chars))
                .collect(),
            overrides: overrides.clone(),
        }
    }

    /// `None`: never persisted (and never a candidate for the message budget).
    pub(crate) fn threshold(&self, tool: &str) -> Option<u64> {
        if let Some(o) = self.overrides.get(tool) {
            return Some(*o);
        }
        match self.declared.get(tool) {
            Some(Some(d)) => Some((*d).min(DEFAULT_MAX_RESULT_SIZE_CHARS)),
            Some(None) => None,
            None => Some(DEFAULT_MAX_RESULT_SIZE_CHARS),
        }
    }
}

/// A decision for one fresh result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Keep,
    /// Write `content` to `file_name` under the session's tool-results directory; the
    /// model sees `replacement`.
    Persist {
        file_name: String,
        content: String,
        replacement: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// In transcript order.
    pub decisions: Vec<(String, Decision)>,
}

/// Tool names by tool_use id, from the assistant records.
pub(crate) fn tool_names<R: Borrow<Record>>(records: &[R]) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for r in records
        .iter()
        .map(Borrow::borrow)
        .filter(|r| r.kind == RecordKind::Assistant)
    {
        for b in &r.content {
            if let ContentBlock::ToolUse { id, name, .. } = b {
                out.entry(id.clone()).or_insert_with(|| name.clone());
            }
        }
    }
    out
}

fn has_media(content: &ToolResultContent) -> bool {
    matches!(content, ToolResultContent::Blocks(b) if b.iter().any(|x| !matches!(x, ToolResultBlock::Text { .. })))
}

/// Characters the model would read.
pub(crate) fn result_chars(content: &ToolResultContent) -> u64 {
    match content {
        ToolResultContent::Text(t) => t.chars().count() as u64,
        ToolResultContent::Blocks(b) => b
            .iter()
            .map(|x| match x {
                ToolResultBlock::Text { text, .. } => text.chars().count() as u64,
                _ => 0,
            })
            .sum(),
    }
}

fn is_empty_result(content: &ToolResultContent) -> bool {
    match content {
        ToolResultContent::Text(t) => t.trim().is_empty(),
        ToolResultContent::Blocks(b) => b
            .iter()
            .all(|x| matches!(x, ToolResultBlock::Text { text , .. } if text.trim().is_empty())),
    }
}

/// The file body and extension a persisted result gets.
fn persisted_body(content: &ToolResultContent) -> (String, &'static str) {
    match content {
        ToolResultContent::Text(t) => (t.clone(), "txt"),
        ToolResultContent::Blocks(b) => {
            (serde_json::to_string_pretty(b).unwrap_or_default(), "json")
        }
    }
}

/// `N bytes` below 1 KiB, else KB/MB/GB with one decimal and a trailing `.0` dropped.
pub(crate) fn format_size(bytes: u64) -> String {
    let kb = bytes as f64 / 1024.0;
    if kb < 1.0 {
        return format!("{bytes} bytes");
    }
    let fmt = |v: f64, unit: &str| {
        let s = format!("{v:.1}");
        let s = s.strip_suffix(".0").unwrap_or(&s).to_string();
        format!("{s}{unit}")
    };
    if kb < 1024.0 {
        return fmt(kb, "KB");
    }
    let mb = kb / 1024.0;
    if mb < 1024.0 {
        return fmt(mb, "MB");
    }
    fmt(mb / 1024.0, "GB")
}

/// The first 2,000 characters, cut back to the last newline when that newline lies past
/// character 1,000. Returns the preview and whether anything was cut.
pub(crate) fn preview(content: &str) -> (&str, bool) {
    let end = content
        .char_indices()
        .nth(PREVIEW_CHARS)
        .map_or(content.len(), |(i, _)| i);
    if end == content.len() {
        return (content, false);
    }
    let head = &content[..end];
    match head.rfind('\n') {
        Some(nl) if head[..nl].chars().count() > PREVIEW_MIN_LINE_CUT => (&head[..nl], true),
        _ => (head, true),
    }
}

/// The exact block the model sees in place of a persisted result.
pub(crate) fn persisted_output(path: &str, content: &str) -> String {
    let (pv, cut) = preview(content);
    format!(
        "<persisted-output>\nOutput too large ({}). Full output saved to: {}\n\nPreview (first 2KB):\n{}{}</persisted-output>",
        format_size(content.len() as u64),
        path,
        pv,
        if cut { "\n...\n" } else { "\n" }
    )
}

struct Candidate<'a> {
    id: &'a str,
    content: &'a ToolResultContent,
    chars: u64,
    /// May be persisted (no media, the tool has a threshold).
    eligible: bool,
    threshold: Option<u64>,
}

/// Groups tool results per API-level user message: a new provider message id (or an
/// assistant record without one) starts a new group.
fn groups<R: Borrow<Record>>(records: &[R]) -> Vec<Vec<(&str, &ToolResultContent)>> {
    let mut out: Vec<Vec<(&str, &ToolResultContent)>> = vec![Vec::new()];
    let mut current_msg: Option<&str> = None;
    let mut seen_assistant = false;
    for r in records.iter().map(Borrow::borrow) {
        if r.is_virtual || r.is_sidechain {
            continue;
        }
        match r.kind {
            RecordKind::Assistant => {
                let id = r.message_id.as_deref();
                if !seen_assistant || id.is_none() || id != current_msg {
                    out.push(Vec::new());
                }
                seen_assistant = true;
                current_msg = id;
            }
            RecordKind::User => {
                for b in &r.content {
                    if let ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        ..
                    } = b
                        && let Some(g) = out.last_mut()
                    {
                        g.push((tool_use_id.as_str(), content));
                    }
                }
            }
            _ => {}
        }
    }
    out.retain(|g| !g.is_empty());
    out
}

/// Decides the fate of every result the projection shows for the first time.
/// `results_dir` is the absolute path of the session's tool-results directory.
pub fn plan<R: Borrow<Record>>(
    records: &[R],
    fates: &BTreeMap<String, Fate>,
    limits: &ToolLimits,
    results_dir: &str,
) -> Plan {
    let names = tool_names(records);
    let mut plan = Plan::default();
    let mut decided: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for group in groups(records) {
        let mut frozen_chars = 0u64;
        let mut fresh: Vec<Candidate<'_>> = Vec::new();
        for (id, content) in group {
            if !decided.insert(id) {
                continue; // a duplicate id: normalisation drops it
            }
            match fates.get(id) {
                Some(Fate::Replaced(s)) => frozen_chars += s.chars().count() as u64,
                Some(Fate::Kept) => {
                    if !has_media(content) {
                        frozen_chars += result_chars(content);
                    }
                }
                None => {
                    let threshold = names
                        .get(id)
                        .map_or(Some(DEFAULT_MAX_RESULT_SIZE_CHARS), |n| limits.threshold(n));
                    let media = has_media(content);
                    fresh.push(Candidate {
                        id,
                        content,
                        chars: result_chars(content),
                        eligible: !media && threshold.is_some() && !is_empty_result(content),
                        threshold,
                    });
                }
            }
        }
        let mut persist: Vec<bool> = fresh
            .iter()
            .map(|c| c.eligible && c.threshold.is_some_and(|t| c.chars > t))
            .collect();
        // As in Claude Code, fresh results the budget may not touch (exempt tools, media)
        // are left out of the sum: counting them could only push out their neighbours.
        let mut total: u64 = frozen_chars
            + fresh
                .iter()
                .zip(&persist)
                .filter(|(c, p)| c.eligible && !**p)
                .map(|(c, _)| c.chars)
                .sum::<u64>();
        if total > MAX_TOOL_RESULTS_PER_MESSAGE_CHARS {
            let mut order: Vec<usize> = (0..fresh.len())
                .filter(|&i| fresh[i].eligible && !persist[i])
                .collect();
            // Largest first; ties keep transcript order so the choice is deterministic.
            order.sort_by(|&a, &b| fresh[b].chars.cmp(&fresh[a].chars).then(a.cmp(&b)));
            for i in order {
                if total <= MAX_TOOL_RESULTS_PER_MESSAGE_CHARS {
                    break;
                }
                persist[i] = true;
                total -= fresh[i].chars;
            }
        }
        for (c, p) in fresh.iter().zip(persist) {
            let decision = if p {
                let (content, ext) = persisted_body(c.content);
                let file_name = format!("{}.{ext}", sanitize(c.id));
                let path = format!("{}/{file_name}", results_dir.trim_end_matches('/'));
                let replacement = persisted_output(&path, &content);
                Decision::Persist {
                    file_name,
                    content,
                    replacement,
                }
            } else {
                Decision::Keep
            };
            plan.decisions.push((c.id.to_string(), decision));
        }
    }
    plan
}

/// Tool-use ids come from clients; keep file names inside the directory.
/// The file name of a tool id's output, one per id: an id of letters, digits, `_` and
/// `-` (every id a provider issues) is its own name; any other id is its first 40 such
/// characters, a `.` (which no such id holds) and the SHA-256 of the whole id, so that
/// `toolu_x/1` and `toolu_x_1` never share a file. The record keeps the id itself.
fn sanitize(id: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !id.is_empty() && id.chars().all(plain) {
        return id.to_string();
    }
    use sha2::Digest;
    let kept: String = id
        .chars()
        .map(|c| if plain(c) { c } else { '_' })
        .take(40)
        .collect();
    format!(
        "{kept}.{}",
        hex::encode(sha2::Sha256::digest(id.as_bytes()))
    )
}

/// The projection as the model sees it: frozen replacements applied, empty results
/// turned into a short note. Records that need no change are borrowed.
pub fn apply<'a>(records: &[&'a Record], fates: &BTreeMap<String, Fate>) -> Vec<Shown<'a>> {
    apply_from(records, 0, fates)
}

/// `apply(records, fates)[from..]`, without the records before `from` (whose tool
/// calls still name the results after it).
pub fn apply_from<'a>(
    records: &[&'a Record],
    from: usize,
    fates: &BTreeMap<String, Fate>,
) -> Vec<Shown<'a>> {
    // Only an empty result needs its tool's name; most compiles have none to name.
    let names = std::cell::OnceCell::new();
    records
        .get(from..)
        .unwrap_or_default()
        .iter()
        .copied()
        .map(|r| {
            if r.kind != RecordKind::User
                || !r.content.iter().any(|b| match b {
                    ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        ..
                    } => {
                        matches!(fates.get(tool_use_id), Some(Fate::Replaced(_)))
                            || is_empty_result(content)
                    }
                    _ => false,
                })
            {
                return Shown::Kept(r);
            }
            // Built block by block: a replaced result's own content is never copied.
            let content = r
                .content
                .iter()
                .map(|b| {
                    let ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                        cache_control,
                        cache_reference,
                        ..
                    } = b
                    else {
                        return b.clone();
                    };
                    let shown = if let Some(Fate::Replaced(s)) = fates.get(tool_use_id.as_str()) {
                        s.clone()
                    } else if is_empty_result(content) {
                        let name = names
                            .get_or_init(|| tool_names(records))
                            .get(tool_use_id.as_str())
                            .map_or("tool", String::as_str);
                        format!("({name} completed with no output)")
                    } else {
                        return b.clone();
                    };
                    ContentBlock::ToolResult {
                        extra: Default::default(),
                        tool_use_id: tool_use_id.clone(),
                        content: ToolResultContent::Text(shown),
                        is_error: *is_error,
                        cache_control: cache_control.clone(),
                        cache_reference: cache_reference.clone(),
                    }
                })
                .collect();
            Shown::Changed(Box::new(r.with_content(content)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn output_file_names_are_one_per_id() {
        use super::sanitize;
        assert_eq!(sanitize("toolu_01AbC-d"), "toolu_01AbC-d");
        let (slash, underscore) = (sanitize("toolu_x/1"), sanitize("toolu_x_1"));
        assert_ne!(slash, underscore);
        assert!(slash.starts_with("toolu_x_1.") && slash.len() == "toolu_x_1.".len() + 64);
        assert_ne!(sanitize("../x"), sanitize("__x"));
        assert!(!sanitize("../../etc/passwd").contains('/'));
        assert_ne!(sanitize(""), "");
    }

    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(format_size(0), "0 bytes");
        assert_eq!(format_size(1023), "1023 bytes");
        assert_eq!(format_size(1024), "1KB");
        assert_eq!(format_size(1536), "1.5KB");
        assert_eq!(format_size(120_000), "117.2KB");
        assert_eq!(format_size(1024 * 1024), "1MB");
        assert_eq!(format_size(5 * 1024 * 1024 + 300 * 1024), "5.3MB");
        assert_eq!(format_size(3 * 1024 * 1024 * 1024), "3GB");
    }

    #[test]
    fn preview_cuts_on_a_late_newline_only() {
        let s = format!("{}\n{}", "a".repeat(1500), "b".repeat(1000));
        assert_eq!(preview(&s), (&s[..1500], true));
        let s = format!("{}\n{}", "a".repeat(500), "b".repeat(3000));
        let (p, cut) = preview(&s);
        assert!(cut);
        assert_eq!(p.chars().count(), 2000);
        let s = "short\noutput".to_string();
        assert_eq!(preview(&s), (s.as_str(), false));
    }

    #[test]
    fn persisted_output_block_is_exact() {
        let content = format!("{}\n{}", "x".repeat(1200), "y".repeat(50_000));
        let block = persisted_output("/h/sessions/s/tool-results/t1.txt", &content);
        let expected = format!(
            "<persisted-output>\nOutput too large (50KB). Full output saved to: /h/sessions/s/tool-results/t1.txt\n\nPreview (first 2KB):\n{}\n...\n</persisted-output>",
            "x".repeat(1200)
        );
        assert_eq!(block, expected);
        let small = persisted_output("/p", "hello");
        assert_eq!(
            small,
            "<persisted-output>\nOutput too large (5 bytes). Full output saved to: /p\n\nPreview (first 2KB):\nhello\n</persisted-output>"
        );
    }

    #[test]
    fn thresholds() {
        let tools = vec![
            spec("Bash", Some(30_000)),
            spec("Read", None),
            spec("Mcp", Some(100_000)),
        ];
        let l = ToolLimits::new(&tools, &BTreeMap::from([("Big".to_string(), 500_000)]));
        assert_eq!(l.threshold("Bash"), Some(30_000));
        assert_eq!(l.threshold("Read"), None);
        assert_eq!(l.threshold("Mcp"), Some(50_000));
        assert_eq!(l.threshold("Unregistered"), Some(50_000));
        assert_eq!(l.threshold("Big"), Some(500_000));
    }

    pub(crate) fn spec(name: &str, max: Option<u64>) -> ToolSpec {
        ToolSpec {
            extra: Default::default(),
            name: name.into(),
            description: None,
            input_schema: None,
            server_type: None,
            max_result_size_chars: max,
            mcp_server: None,
            defer_loading: false,
        }
    }
}

#[cfg(test)]
mod plan_tests;
