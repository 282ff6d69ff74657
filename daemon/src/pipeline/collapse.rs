//! Context collapse (SPEC §2 "Collapse store + commit log", §8 step 4 and "Recovery").
//! Claude Code did not publish its algorithm; this design is ours.
//!
//! Collapse is a *projection*. Older spans of the conversation are folded into short
//! summaries kept in the collapse store; the raw transcript is never touched, and every
//! compile replays the commit log over the projection (after snip, before the fates of
//! tool results are applied). A collapse is `staged` (summary written, not yet shown),
//! `committed` (shown in place of its span) or `undone` (shown raw again, for good).
//!
//! * **Spans.** A span is a run of whole, consecutive API rounds (`autocompact::api_rounds`:
//!   each starts at a user-typed message), oldest first. It never holds one of the last
//!   `keep_recent_rounds` rounds (at least 1, so a tool call still in flight is never
//!   folded), a compact boundary or compact summary (the only account of what came before
//!   a compaction), or any record of another collapse, whatever its status: an undone
//!   collapse stays raw, otherwise undo and re-collapse would thrash. Rounds can still be
//!   joined by a pair (a user record holding a tool result *and* text starts a round) or
//!   by one response's records, so a span may only start and end at a *clean cut*: a
//!   position no tool-use id and no provider message id straddles. A span takes
//!   `span_rounds` rounds, or the next clean cut after them; a shorter run next to a
//!   barrier is taken as it is (it can never grow), a shorter run next to the recent
//!   rounds only when the full spans do not reach the target (it grows as the
//!   conversation goes on).
//! * **Thresholds** are percentages of the effective window E, compared exactly
//!   (`estimate × 100 ≥ E × pct`). The estimate is the request as compiled, committed
//!   collapses applied. At `stage_at_pct` (80) spans are staged, oldest first, until the
//!   estimate minus the savings of everything staged is below `target_pct` (70); a
//!   planned span's savings are its tokens minus an assumed summary of 10% (at least 50
//!   tokens), a stored collapse's are its tokens minus its rendered record. At
//!   `commit_at_pct` (90) staged collapses are committed in log order until the projected
//!   estimate is below `target_pct`. After a reported `prompt_too_long` the engine drains:
//!   every staged collapse is committed whatever the estimate (once), then reactive
//!   compact. While collapse is active (enabled, and something is committed or the
//!   estimate is at the stage level) autocompact stands aside, up to `block_at_pct` (95),
//!   where autocompact and the blocking limit take over. E = 0 (unknown window) stages and
//!   commits nothing except a drain.
//! * **The view.** Each committed collapse whose first and last uuids are both in the
//!   projection, in that order, at clean cuts, is replaced by one synthetic user record
//!   (`is_meta`, uuid `collapse-<id>`, seq, timestamp and parent of the span's first
//!   record) holding one text block:
//!   `<collapsed id="ID" messages="N">`, a line saying N earlier messages are folded and
//!   that `collapse undo ID` restores them, a blank line, the summary, `</collapsed>`.
//!   N is the stored record count, so the bytes never change once shown. Spans that do not
//!   apply (a record was snipped or compacted away) are ignored; of overlapping spans the
//!   one starting first (then the longer) wins. Everything else is borrowed unchanged.
//!   Since spans sit at clean cuts, the result pairs every `tool_use` with its
//!   `tool_result` exactly as the input did (property-tested); the normaliser merges the
//!   synthetic record with the next user message.
//! * **Summaries.** The engine's summariser writes them; `summarize_span` is the
//!   deterministic offline one (embedded summariser): user messages' first lines, files
//!   touched and how, tools with counts, tool errors, reminders, the last assistant text.
//!   It fits 10% of the span's tokens, at least 50 and at most 600, by giving up detail
//!   in a fixed order, then cutting.
//! * **The caller's part.** Plan on the view the model sees (fates applied, same uuids)
//!   so savings are honest; a usage anchor older than a commit still counts the folded
//!   span, so subtract `savings` of collapses committed after the anchor, as with snip's
//!   `tokens_freed`. The switch only stops staging and committing; it never unfolds (undo
//!   does). Committed collapses whose span is no longer in the projection (after a
//!   compaction) simply stop applying.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use ctxd_protocol::{CollapseConfig, CollapseInfo, ContentBlock, Record, RecordKind};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::autocompact::api_rounds;
use super::message::REMINDER_OPEN;
use super::projection::COMPACT_BOUNDARY;
use super::records::{file_action, is_user_typed, path_of, result_text};
use super::{attachments, tokens};

/// The assumed summary of a span not yet summarised: a tenth of it, at least this.
const MIN_SUMMARY_TOKENS: u64 = 50;
/// The offline summary never exceeds this, however large the span.
const MAX_SUMMARY_TOKENS: u64 = 600;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollapseSettings {
    pub enabled: bool,
    pub stage_at_pct: u8,
    pub commit_at_pct: u8,
    pub block_at_pct: u8,
    pub keep_recent_rounds: usize,
    /// Rounds per span.
    pub span_rounds: usize,
    /// Stage and commit until the estimate is below this.
    pub target_pct: u8,
}

impl Default for CollapseSettings {
    fn default() -> Self {
        CollapseSettings {
            enabled: false,
            stage_at_pct: 80,
            commit_at_pct: 90,
            block_at_pct: 95,
            keep_recent_rounds: 4,
            span_rounds: 4,
            target_pct: 70,
        }
    }
}

impl From<&CollapseConfig> for CollapseSettings {
    fn from(c: &CollapseConfig) -> Self {
        CollapseSettings {
            enabled: c.enabled,
            stage_at_pct: c.stage_at_pct,
            commit_at_pct: c.commit_at_pct,
            block_at_pct: c.block_at_pct,
            keep_recent_rounds: usize::try_from(c.keep_recent_rounds).unwrap_or(usize::MAX),
            span_rounds: usize::try_from(c.span_rounds).unwrap_or(usize::MAX),
            target_pct: c.target_pct,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollapseStatus {
    Staged,
    Committed,
    Undone,
}

impl CollapseStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CollapseStatus::Staged => "staged",
            CollapseStatus::Committed => "committed",
            CollapseStatus::Undone => "undone",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Collapse {
    pub id: String,
    pub first_uuid: String,
    pub last_uuid: String,
    pub record_count: usize,
    /// Estimated tokens of the span (safety factor applied).
    pub tokens: u64,
    pub summary: String,
    pub status: CollapseStatus,
}

impl Collapse {
    /// The wire shape of `context.collapse_list`.
    pub fn info(&self) -> CollapseInfo {
        CollapseInfo {
            id: self.id.clone(),
            first_uuid: self.first_uuid.clone(),
            last_uuid: self.last_uuid.clone(),
            record_count: u64::try_from(self.record_count).unwrap_or(u64::MAX),
            tokens: self.tokens,
            summary: self.summary.clone(),
            status: self.status.as_str().into(),
        }
    }
}

/// A span to stage: (first_uuid, last_uuid, the records). Pure selection.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanPlan<'a> {
    pub first_uuid: String,
    pub last_uuid: String,
    pub records: Vec<&'a Record>,
    /// Estimated tokens of the span (safety factor applied).
    pub tokens: u64,
}

impl SpanPlan<'_> {
    /// The staged collapse for this span with `summary`; its id is `span_id`.
    pub fn to_collapse(&self, summary: String) -> Collapse {
        Collapse {
            id: span_id(&self.first_uuid, &self.last_uuid),
            first_uuid: self.first_uuid.clone(),
            last_uuid: self.last_uuid.clone(),
            record_count: self.records.len(),
            tokens: self.tokens,
            summary,
            status: CollapseStatus::Staged,
        }
    }
}

/// A stable id for the span `first..=last`: the same span gets the same id on every
/// replay, so the rendered record (which names it) is the same bytes.
pub fn span_id(first_uuid: &str, last_uuid: &str) -> String {
    let digest = Sha256::digest(format!("{first_uuid}\n{last_uuid}").as_bytes());
    format!("c{}", hex::encode(&digest[..4]))
}

// ---------------------------------------------------------------------------------------
// Thresholds and savings

/// `estimate` is at or above `pct`% of `window`. Exact integer comparison, so the
/// boundary does not depend on rounding; an unknown window (0) is never reached.
fn at_least(estimate: u64, window: u64, pct: u8) -> bool {
    window > 0 && u128::from(estimate) * 100 >= u128::from(window) * u128::from(pct)
}

fn text_tokens(text: &str) -> u64 {
    tokens::scaled((text.chars().count() as u64).div_ceil(4))
}

/// The assumed size of a summary not yet written.
fn assumed_summary_tokens(span_tokens: u64) -> u64 {
    (span_tokens / 10).max(MIN_SUMMARY_TOKENS)
}

fn plan_savings(span_tokens: u64) -> u64 {
    span_tokens.saturating_sub(assumed_summary_tokens(span_tokens))
}

/// Tokens a collapse frees once committed: its span minus the record that replaces it.
pub fn savings(c: &Collapse) -> u64 {
    c.tokens.saturating_sub(text_tokens(&render(c)))
}

fn records_tokens(records: &[&Record]) -> u64 {
    tokens::scaled(
        records
            .iter()
            .map(|r| tokens::record_tokens(r, attachments::render))
            .sum(),
    )
}

// ---------------------------------------------------------------------------------------
// Where spans may lie

/// `clean[b]` says no tool-use id and no provider message id has records both before
/// position `b` and at or after it, so cutting the view there splits no pair and no
/// response. `clean` has `view.len() + 1` entries; both ends are always clean.
fn clean_cuts(view: &[&Record]) -> Vec<bool> {
    // Keyed by (is a tool id, id): tool ids and message ids are different namespaces, and
    // a tool id that happens to equal a message id must not join two unrelated intervals.
    let mut extent: HashMap<(bool, &str), (usize, usize)> = HashMap::new();
    for (i, r) in view.iter().enumerate() {
        let tool_ids = r.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
            _ => None,
        });
        let keys = r
            .message_id
            .as_deref()
            .map(|m| (false, m))
            .into_iter()
            .chain(tool_ids.map(|t| (true, t)));
        for key in keys {
            extent.entry(key).or_insert((i, i)).1 = i;
        }
    }
    // Cuts first+1..=last are straddled; a difference array marks them in one pass.
    let mut diff = vec![0i64; view.len() + 2];
    for &(first, last) in extent.values() {
        if first < last {
            diff[first + 1] += 1;
            diff[last + 1] -= 1;
        }
    }
    let mut open = 0i64;
    (0..=view.len())
        .map(|b| {
            open += diff[b];
            open == 0
        })
        .collect()
}

fn positions<'v>(view: &'v [&Record]) -> HashMap<&'v str, usize> {
    view.iter()
        .enumerate()
        .map(|(i, r)| (r.uuid.as_str(), i))
        .collect()
}

/// The inclusive index range of `c` in the view, if both ends are there in order.
fn span_range(pos: &HashMap<&str, usize>, c: &Collapse) -> Option<(usize, usize)> {
    let s = *pos.get(c.first_uuid.as_str())?;
    let e = *pos.get(c.last_uuid.as_str())?;
    (s <= e).then_some((s, e))
}

fn is_compaction_record(r: &Record) -> bool {
    r.is_compact_summary
        || (r.kind == RecordKind::System && r.subtype.as_deref() == Some(COMPACT_BOUNDARY))
}

struct Candidate {
    range: Range<usize>,
    tokens: u64,
    /// Shorter than `span_rounds` only because the recent rounds follow: it would grow.
    young_short: bool,
}

/// Every span that could be staged now, oldest first, ignoring the estimate.
fn candidates(view: &[&Record], collapses: &[Collapse], s: &CollapseSettings) -> Vec<Candidate> {
    let rounds = api_rounds(view);
    let limit = rounds.len().saturating_sub(s.keep_recent_rounds.max(1));
    let span_rounds = s.span_rounds.max(1);
    let clean = clean_cuts(view);
    let pos = positions(view);
    let covered: Vec<(usize, usize)> = collapses
        .iter()
        .filter_map(|c| span_range(&pos, c))
        .collect();
    let eligible: Vec<bool> = rounds[..limit]
        .iter()
        .map(|r| {
            !view[r.clone()].iter().any(|rec| is_compaction_record(rec))
                && !covered.iter().any(|&(cs, ce)| cs < r.end && r.start <= ce)
        })
        .collect();

    let mut out = Vec::new();
    let mut k = 0;
    while k < limit {
        if !eligible[k] || !clean[rounds[k].start] {
            k += 1;
            continue;
        }
        let mut last_clean = None;
        let mut full = None;
        let mut j = k;
        while j < limit && eligible[j] {
            if clean[rounds[j].end] {
                last_clean = Some(j);
                if j + 1 - k >= span_rounds {
                    full = Some(j);
                    break;
                }
            }
            j += 1;
        }
        let Some(b) = full.or(last_clean) else {
            // No clean place to end before the barrier: nothing here can be folded.
            k = j.max(k + 1);
            continue;
        };
        let range = rounds[k].start..rounds[b].end;
        out.push(Candidate {
            tokens: records_tokens(&view[range.clone()]),
            range,
            young_short: full.is_none() && j == limit,
        });
        k = b + 1;
    }
    out
}

/// Spans to stage now, oldest first. Empty when disabled, below `stage_at_pct`, or when
/// what is already staged brings the estimate under `target_pct`. Otherwise spans are
/// added until the staged savings would bring the estimate under `target_pct` or no
/// candidate is left. `view` is the projection the model sees (snip applied, fates
/// applied, no collapse applied); `estimate` is the compiled request's (committed
/// collapses applied).
pub fn plan_stage<'a>(
    view: &[&'a Record],
    collapses: &[Collapse],
    estimate: u64,
    effective_window: u64,
    s: &CollapseSettings,
) -> Vec<SpanPlan<'a>> {
    if !s.enabled || !at_least(estimate, effective_window, s.stage_at_pct) {
        return Vec::new();
    }
    let pos = positions(view);
    let staged: u64 = collapses
        .iter()
        .filter(|c| c.status == CollapseStatus::Staged && span_range(&pos, c).is_some())
        .map(savings)
        .sum();
    let mut projected = estimate.saturating_sub(staged);
    let above_target = |p: u64| at_least(p, effective_window, s.target_pct);
    if !above_target(projected) {
        return Vec::new();
    }
    let all = candidates(view, collapses, s);
    let mut chosen: Vec<&Candidate> = Vec::new();
    // Full spans (and short ones a barrier fixed) first; a young short span only if they
    // do not suffice, because waiting lets it grow into a full one.
    for young in [false, true] {
        for c in all.iter().filter(|c| c.young_short == young) {
            if !above_target(projected) {
                break;
            }
            let saved = plan_savings(c.tokens);
            if saved == 0 {
                continue;
            }
            chosen.push(c);
            projected = projected.saturating_sub(saved);
        }
    }
    chosen.sort_by_key(|c| c.range.start);
    chosen
        .into_iter()
        .map(|c| {
            let records: Vec<&'a Record> = view[c.range.clone()].to_vec();
            SpanPlan {
                first_uuid: view[c.range.start].uuid.clone(),
                last_uuid: view[c.range.end - 1].uuid.clone(),
                records,
                tokens: c.tokens,
            }
        })
        .collect()
}

/// Which staged collapses to commit now (ids, in log order, which is oldest first):
/// at `commit_at_pct`, the oldest staged until the projected estimate is below
/// `target_pct`; with `drain` (after a reported `prompt_too_long`) every staged one.
pub fn to_commit(
    collapses: &[Collapse],
    estimate: u64,
    effective_window: u64,
    s: &CollapseSettings,
    drain: bool,
) -> Vec<String> {
    let staged = collapses
        .iter()
        .filter(|c| c.status == CollapseStatus::Staged);
    if !s.enabled {
        return Vec::new();
    }
    if drain {
        return staged.map(|c| c.id.clone()).collect();
    }
    if !at_least(estimate, effective_window, s.commit_at_pct) {
        return Vec::new();
    }
    let mut projected = estimate;
    let mut out = Vec::new();
    for c in staged {
        if !at_least(projected, effective_window, s.target_pct) {
            break;
        }
        out.push(c.id.clone());
        projected = projected.saturating_sub(savings(c));
    }
    out
}

/// Whether autocompact stands aside: collapse is enabled and active (something is
/// committed, or the estimate is at the stage level) and the estimate is below
/// `block_at_pct`, where autocompact and the blocking limit take over again.
pub fn autocompact_stands_aside(
    collapses: &[Collapse],
    estimate: u64,
    effective_window: u64,
    s: &CollapseSettings,
) -> bool {
    if !s.enabled || effective_window == 0 {
        return false;
    }
    let active = collapses
        .iter()
        .any(|c| c.status == CollapseStatus::Committed)
        || at_least(estimate, effective_window, s.stage_at_pct);
    active && !at_least(estimate, effective_window, s.block_at_pct)
}

// ---------------------------------------------------------------------------------------
// The view

/// The text of the record that stands for a committed collapse.
pub fn render(c: &Collapse) -> String {
    let mut text = format!(
        "<collapsed id=\"{id}\" messages=\"{n}\">\n{n} earlier messages are folded into this \
         summary to save context. The originals are kept; `collapse undo {id}` restores them.\n",
        id = c.id,
        n = c.record_count,
    );
    let summary = c.summary.trim();
    if !summary.is_empty() {
        text.push('\n');
        text.push_str(summary);
        text.push('\n');
    }
    text.push_str("</collapsed>");
    text
}

fn synthetic(first: &Record, c: &Collapse) -> Record {
    Record {
        uuid: format!("collapse-{}", c.id),
        seq: first.seq,
        parent_uuid: first.parent_uuid.clone(),
        kind: RecordKind::User,
        timestamp: first.timestamp.clone(),
        content: vec![ContentBlock::text(render(c))],
        message_id: None,
        model: None,
        stop_reason: None,
        usage: None,
        is_meta: true,
        is_virtual: false,
        is_sidechain: false,
        is_compact_summary: false,
        subtype: None,
        attachment: None,
        data: None,
        meta: None,
    }
}

/// The view with every applicable committed collapse's span replaced by one synthetic
/// user record; all other records are borrowed unchanged. A span applies when both its
/// uuids are in the view, in order, at clean cuts (so no pair or response is split);
/// overlapping spans resolve to the one starting first, then the longer, then the
/// smaller id.
pub fn apply<'a>(view: &[&'a Record], collapses: &[Collapse]) -> Vec<Cow<'a, Record>> {
    let pos = positions(view);
    let clean = clean_cuts(view);
    let mut spans: Vec<(usize, usize, &Collapse)> = collapses
        .iter()
        .filter(|c| c.status == CollapseStatus::Committed)
        .filter_map(|c| span_range(&pos, c).map(|(s, e)| (s, e, c)))
        .filter(|&(s, e, _)| clean[s] && clean[e + 1])
        .collect();
    spans.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(b.1.cmp(&a.1))
            .then_with(|| a.2.id.cmp(&b.2.id))
    });
    let mut accepted: Vec<(usize, usize, &Collapse)> = Vec::new();
    for span in spans {
        if accepted.last().is_none_or(|&(_, e, _)| span.0 > e) {
            accepted.push(span);
        }
    }

    let mut out = Vec::with_capacity(view.len());
    let mut next = accepted.iter().peekable();
    let mut i = 0;
    while i < view.len() {
        match next.peek() {
            Some(&&(s, e, c)) if s == i => {
                out.push(Cow::Owned(synthetic(view[s], c)));
                i = e + 1;
                next.next();
            }
            _ => {
                out.push(Cow::Borrowed(view[i]));
                i += 1;
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// The offline summary

#[derive(Debug, Default)]
struct Facts {
    /// First line of each user-typed message, in order.
    users: Vec<String>,
    /// (path, actions), in order of first touch.
    files: Vec<(String, Vec<&'static str>)>,
    tools: BTreeMap<String, usize>,
    /// (tool, first line of the error), in order.
    errors: Vec<(String, String)>,
    reminders: BTreeMap<String, usize>,
    outcome: Option<String>,
}

fn first_line(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned)
}

fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Facts {
    fn gather(records: &[&Record]) -> Facts {
        let mut f = Facts::default();
        let mut tool_names: HashMap<&str, &str> = HashMap::new();
        for r in records.iter().filter(|r| !r.is_virtual && !r.is_sidechain) {
            match r.kind {
                RecordKind::User => f.user(r, &tool_names),
                RecordKind::Assistant => f.assistant(r, &mut tool_names),
                RecordKind::Attachment => {
                    if attachments::render(r).is_some() {
                        let kind = r.attachment_type().unwrap_or("attachment").to_string();
                        *f.reminders.entry(kind).or_default() += 1;
                    }
                }
                RecordKind::System => {}
            }
        }
        f
    }

    fn user(&mut self, r: &Record, tool_names: &HashMap<&str, &str>) {
        if is_user_typed(r) {
            let line = r
                .content
                .iter()
                .find_map(|b| match b {
                    ContentBlock::Text { text, .. } if !text.starts_with(REMINDER_OPEN) => {
                        first_line(text)
                    }
                    _ => None,
                })
                .or_else(|| {
                    r.content.iter().find_map(|b| match b {
                        ContentBlock::Image { .. } => Some("[image]".to_string()),
                        ContentBlock::Document { .. } => Some("[document]".to_string()),
                        _ => None,
                    })
                });
            self.users.extend(line);
        }
        for b in &r.content {
            if let ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error: true,
                ..
            } = b
            {
                let tool = tool_names
                    .get(tool_use_id.as_str())
                    .copied()
                    .unwrap_or("tool");
                let text = result_text(content);
                let text = text.trim();
                // Claude Code wraps tool errors in a tag that says nothing itself.
                let text = text
                    .strip_prefix("<tool_use_error>")
                    .map(|t| t.strip_suffix("</tool_use_error>").unwrap_or(t))
                    .unwrap_or(text);
                let line = first_line(text).unwrap_or_else(|| "(no message)".into());
                self.errors.push((tool.to_string(), line));
            }
        }
    }

    fn assistant<'r>(&mut self, r: &'r Record, tool_names: &mut HashMap<&'r str, &'r str>) {
        for b in &r.content {
            match b {
                ContentBlock::ToolUse {
                    id, name, input, ..
                } => {
                    tool_names.insert(id, name);
                    *self.tools.entry(name.clone()).or_default() += 1;
                    let path = path_of(input);
                    if let (Some(action), Some(path)) = (file_action(name), path) {
                        self.touch(path, action);
                    }
                }
                ContentBlock::Text { text, .. } if !text.trim().is_empty() => {
                    self.outcome = Some(squash(text));
                }
                _ => {}
            }
        }
    }

    fn touch(&mut self, path: &str, action: &'static str) {
        match self.files.iter_mut().find(|(p, _)| p == path) {
            Some((_, actions)) => {
                if !actions.contains(&action) {
                    actions.push(action);
                }
            }
            None => self.files.push((path.to_string(), vec![action])),
        }
    }
}

/// How much of each kind of fact a rendering shows. Levels give detail up in a fixed
/// order: middle user messages and reminders first, then line width, files, errors.
struct Detail {
    users: usize,
    width: usize,
    files: usize,
    tools: usize,
    errors: usize,
    reminders: bool,
}

const LEVELS: [Detail; 6] = [
    Detail {
        users: usize::MAX,
        width: 160,
        files: 12,
        tools: 12,
        errors: 3,
        reminders: true,
    },
    Detail {
        users: 6,
        width: 100,
        files: 8,
        tools: 8,
        errors: 2,
        reminders: false,
    },
    Detail {
        users: 4,
        width: 72,
        files: 5,
        tools: 6,
        errors: 1,
        reminders: false,
    },
    Detail {
        users: 2,
        width: 48,
        files: 3,
        tools: 4,
        errors: 0,
        reminders: false,
    },
    Detail {
        users: 1,
        width: 32,
        files: 1,
        tools: 3,
        errors: 0,
        reminders: false,
    },
    Detail {
        users: 1,
        width: 24,
        files: 0,
        tools: 2,
        errors: 0,
        reminders: false,
    },
];

fn cut(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let keep = width.saturating_sub(3);
    format!("{}...", s.chars().take(keep).collect::<String>())
}

/// Paths are cut from the left: the file name says more than the root.
fn cut_left(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    let keep = width.saturating_sub(3);
    format!("...{}", s.chars().skip(n - keep).collect::<String>())
}

fn counted(entries: &BTreeMap<String, usize>, limit: usize) -> String {
    // Most used first; the map's order breaks ties by name.
    let mut list: Vec<(&String, &usize)> = entries.iter().collect();
    list.sort_by(|a, b| b.1.cmp(a.1));
    let mut parts: Vec<String> = list
        .iter()
        .take(limit)
        .map(|(name, n)| match n {
            1 => (*name).clone(),
            _ => format!("{name} x{n}"),
        })
        .collect();
    if list.len() > limit {
        parts.push(format!("+{} more", list.len() - limit));
    }
    parts.join(", ")
}

fn render_facts(f: &Facts, d: &Detail) -> String {
    let mut lines: Vec<String> = Vec::new();
    if !f.users.is_empty() {
        lines.push(format!("User messages ({}):", f.users.len()));
        let n = f.users.len();
        let shown: Vec<usize> = if n <= d.users {
            (0..n).collect()
        } else if d.users <= 1 {
            vec![0]
        } else {
            // The first ones set the span's task, the last one where it ended up.
            (0..d.users - 1).chain([n - 1]).collect()
        };
        for (k, &i) in shown.iter().enumerate() {
            if k > 0 && i != shown[k - 1] + 1 {
                lines.push(format!("- ... {} more", i - shown[k - 1] - 1));
            }
            lines.push(format!("- {}", cut(&f.users[i], d.width)));
        }
        if let Some(&last) = shown.last()
            && last + 1 < n
        {
            lines.push(format!("- ... {} more", n - last - 1));
        }
    }
    if !f.files.is_empty() {
        if d.files == 0 {
            lines.push(format!("Files: {} touched", f.files.len()));
        } else {
            let mut parts: Vec<String> = f
                .files
                .iter()
                .take(d.files)
                .map(|(p, a)| format!("{} ({})", cut_left(p, d.width), a.join(", ")))
                .collect();
            if f.files.len() > d.files {
                parts.push(format!("+{} more", f.files.len() - d.files));
            }
            lines.push(format!("Files: {}", parts.join("; ")));
        }
    }
    if !f.tools.is_empty() {
        lines.push(format!("Tools: {}", counted(&f.tools, d.tools)));
    }
    if !f.errors.is_empty() {
        if d.errors == 0 {
            lines.push(format!("Errors: {}", f.errors.len()));
        } else {
            let mut parts: Vec<String> = f
                .errors
                .iter()
                .take(d.errors)
                .map(|(tool, msg)| format!("{tool}: {}", cut(msg, d.width)))
                .collect();
            if f.errors.len() > d.errors {
                parts.push(format!("+{} more", f.errors.len() - d.errors));
            }
            lines.push(format!("Errors ({}): {}", f.errors.len(), parts.join("; ")));
        }
    }
    if d.reminders && !f.reminders.is_empty() {
        lines.push(format!("Reminders: {}", counted(&f.reminders, 8)));
    }
    if let Some(outcome) = &f.outcome {
        lines.push(format!("Outcome: {}", cut(outcome, d.width * 2)));
    }
    if lines.is_empty() {
        lines.push("No messages or tool calls.".into());
    }
    lines.join("\n")
}

/// The summary's token cap for a span of `span_tokens`: a tenth, within 50..=600.
fn summary_cap(span_tokens: u64) -> u64 {
    (span_tokens / 10).clamp(MIN_SUMMARY_TOKENS, MAX_SUMMARY_TOKENS)
}

/// The most characters whose estimate stays within `cap` tokens.
fn max_chars(cap: u64) -> usize {
    // scaled(ceil(c / 4)) <= cap  <=>  ceil(c / 4) <= floor(3 * cap / 4).
    usize::try_from(cap * 3 / 4 * 4).unwrap_or(usize::MAX)
}

/// Deterministic offline summary of a span: user messages' first lines, files touched,
/// tools with counts, tool errors, reminders, the last assistant text. At most a tenth of
/// the span's estimated tokens (at least 50) and at most 600, under the daemon's estimate.
pub fn summarize_span(records: &[&Record]) -> String {
    let limit = max_chars(summary_cap(records_tokens(records)));
    let facts = Facts::gather(records);
    let mut text = String::new();
    for d in &LEVELS {
        text = render_facts(&facts, d);
        if text.chars().count() <= limit {
            return text;
        }
    }
    cut(&text, limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn rec(uuid: &str, seq: u64, v: Value) -> Record {
        let mut v = v;
        // Stored records carry blocks; tests write plain strings for brevity.
        if let Some(text) = v["content"].as_str() {
            v["content"] = json!([{"type": "text", "text": text}]);
        }
        v["uuid"] = json!(uuid);
        v["seq"] = json!(seq);
        v["timestamp"] = json!(format!("2026-11-29T10:{:02}:00Z", seq % 60));
        serde_json::from_value(v).unwrap()
    }

    /// A transcript builder: seq and uuids are assigned in order.
    #[derive(Default)]
    struct T {
        records: Vec<Record>,
    }

    impl T {
        fn push(&mut self, prefix: &str, v: Value) -> &mut Self {
            let seq = self.records.len() as u64 + 1;
            self.records.push(rec(&format!("{prefix}{seq}"), seq, v));
            self
        }
        fn user(&mut self, text: &str) -> &mut Self {
            self.push("u", json!({"type": "user", "content": text}))
        }
        fn tool(&mut self, id: &str, name: &str, input: Value, result: &str) -> &mut Self {
            self.push(
                "a",
                json!({"type": "assistant", "message_id": format!("m-{id}"),
                       "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}),
            );
            self.push(
                "r",
                json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": result}]}),
            )
        }
        fn reply(&mut self, text: &str) -> &mut Self {
            self.push("a", json!({"type": "assistant", "content": text}))
        }
        fn view(&self) -> Vec<&Record> {
            self.records.iter().collect()
        }
    }

    /// `n` rounds of: prompt, one Read with a ~1,000-character result, a reply.
    fn rounds(n: usize) -> T {
        let mut t = T::default();
        for i in 0..n {
            t.user(&format!("question {i}"))
                .tool(
                    &format!("t{i}"),
                    "Read",
                    json!({"file_path": format!("/src/f{i}.rs")}),
                    &"x".repeat(1000),
                )
                .reply(&format!("answer {i}"));
        }
        t
    }

    fn on() -> CollapseSettings {
        CollapseSettings {
            enabled: true,
            ..CollapseSettings::default()
        }
    }

    fn round_starts(view: &[&Record]) -> Vec<usize> {
        api_rounds(view).iter().map(|r| r.start).collect()
    }

    fn index_of(view: &[&Record], uuid: &str) -> usize {
        view.iter().position(|r| r.uuid == uuid).unwrap()
    }

    fn committed(plan: &SpanPlan<'_>, summary: &str) -> Collapse {
        Collapse {
            status: CollapseStatus::Committed,
            ..plan.to_collapse(summary.into())
        }
    }

    // ---- plan_stage ---------------------------------------------------------------

    #[test]
    fn below_the_stage_level_or_disabled_nothing_is_staged() {
        let t = rounds(20);
        let v = t.view();
        assert!(plan_stage(&v, &[], 79_999, 100_000, &on()).is_empty());
        let off = CollapseSettings::default();
        assert!(plan_stage(&v, &[], 99_000, 100_000, &off).is_empty());
        assert!(plan_stage(&v, &[], 99_000, 0, &on()).is_empty());
        assert!(!plan_stage(&v, &[], 80_000, 100_000, &on()).is_empty());
    }

    #[test]
    fn oldest_whole_rounds_until_the_target() {
        let t = rounds(20);
        let v = t.view();
        let starts = round_starts(&v);
        // One span of 4 rounds is ~1,400 tokens and saves ~1,260.
        let one = plan_stage(&v, &[], 10_000, 12_000, &on());
        let per_span = one[0].tokens;
        assert!(per_span > 1_300 && per_span < 1_500, "{per_span}");
        // 80% of 12,000 = 9,600 stages; target 70% = 8,400: 10,000 needs two spans.
        assert_eq!(one.len(), 2);
        assert_eq!(one[0].first_uuid, v[starts[0]].uuid);
        assert_eq!(one[0].last_uuid, v[starts[4] - 1].uuid);
        assert_eq!(one[1].first_uuid, v[starts[4]].uuid);
        assert_eq!(one[1].records.len(), 16);
        // A huge estimate takes every full span but never the last four rounds.
        let all = plan_stage(&v, &[], 1_000_000, 1_000_000, &on());
        assert_eq!(all.len(), 4);
        let last = index_of(&v, &all[3].last_uuid);
        assert_eq!(last + 1, starts[16]);
        for p in &all {
            let s = index_of(&v, &p.first_uuid);
            let e = index_of(&v, &p.last_uuid);
            assert!(starts.contains(&s) && starts.contains(&(e + 1)));
            assert_eq!(p.records.len(), e - s + 1);
        }
    }

    #[test]
    fn staged_savings_count_before_new_spans() {
        let t = rounds(20);
        let v = t.view();
        let first = plan_stage(&v, &[], 10_000, 12_000, &on());
        let staged: Vec<Collapse> = first.iter().map(|p| p.to_collapse("s".into())).collect();
        // What is staged already reaches the target: nothing more.
        assert!(plan_stage(&v, &staged, 10_000, 12_000, &on()).is_empty());
        // More pressure: the next span starts after the staged ones.
        let more = plan_stage(&v, &staged, 11_500, 12_000, &on());
        assert_eq!(more.len(), 1);
        assert_eq!(more[0].first_uuid, v[round_starts(&v)[8]].uuid);
    }

    #[test]
    fn existing_collapses_of_any_status_are_never_crossed() {
        let t = rounds(20);
        let v = t.view();
        let starts = round_starts(&v);
        // Undone covering rounds 2..=5, committed covering 9..=9.
        let undone = Collapse {
            id: "u".into(),
            first_uuid: v[starts[2]].uuid.clone(),
            last_uuid: v[starts[6] - 1].uuid.clone(),
            record_count: 16,
            tokens: 1,
            summary: String::new(),
            status: CollapseStatus::Undone,
        };
        let done = Collapse {
            id: "c".into(),
            first_uuid: v[starts[9]].uuid.clone(),
            last_uuid: v[starts[10] - 1].uuid.clone(),
            status: CollapseStatus::Committed,
            ..undone.clone()
        };
        let plans = plan_stage(&v, &[undone, done], 1_000_000, 1_000_000, &on());
        let spans: Vec<(usize, usize)> = plans
            .iter()
            .map(|p| (index_of(&v, &p.first_uuid), index_of(&v, &p.last_uuid)))
            .collect();
        // Rounds 0-1 (short: an undone collapse follows), 6-8 (short: a committed one
        // follows), 10-13 (full), then rounds 14-15 (young) because the target is far.
        assert_eq!(
            spans,
            vec![
                (starts[0], starts[2] - 1),
                (starts[6], starts[9] - 1),
                (starts[10], starts[14] - 1),
                (starts[14], starts[16] - 1),
            ]
        );
    }

    #[test]
    fn a_young_short_span_waits_unless_needed() {
        let t = rounds(10); // rounds 0-5 eligible: one full span and a young pair
        let v = t.view();
        let plans = plan_stage(&v, &[], 8_000, 10_000, &on());
        assert_eq!(plans.len(), 1);
        let plans = plan_stage(&v, &[], 1_000_000, 1_000_000, &on());
        assert_eq!(plans.len(), 2);
        assert_eq!(plans[1].records.len(), 8);
    }

    #[test]
    fn pairs_and_responses_are_never_split() {
        let mut t = T::default();
        for i in 0..12 {
            t.user(&format!("q{i} {}", "y".repeat(800)));
            if i == 3 {
                // A result sent together with typed text starts a round while its
                // tool_use sits in the previous one: rounds 3 and 4 are joined.
                t.push(
                    "a",
                    json!({"type": "assistant", "message_id": "m-x", "content": [{"type": "tool_use", "id": "tx", "name": "Bash", "input": {}}]}),
                );
                t.push(
                    "u",
                    json!({"type": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "tx", "content": "interrupted"},
                        {"type": "text", "text": "stop, do this instead"}]}),
                );
            }
            if i == 6 {
                // One response split over records with a typed message between them
                // (a client's odd order): rounds 6 and 7 are joined.
                t.push(
                    "a",
                    json!({"type": "assistant", "message_id": "m-s", "content": "part one"}),
                );
                t.user("between");
                t.push(
                    "a",
                    json!({"type": "assistant", "message_id": "m-s", "content": "part two"}),
                );
            }
            t.reply("ok");
        }
        let v = t.view();
        let clean = clean_cuts(&v);
        let s = CollapseSettings {
            span_rounds: 1,
            keep_recent_rounds: 1,
            ..on()
        };
        let plans = plan_stage(&v, &[], 1_000_000, 1_000_000, &s);
        assert!(!plans.is_empty());
        let starts = round_starts(&v);
        for p in &plans {
            let a = index_of(&v, &p.first_uuid);
            let b = index_of(&v, &p.last_uuid);
            assert!(clean[a] && clean[b + 1], "{a}..={b}");
            assert!(starts.contains(&a));
        }
        let ids: Vec<&str> = plans
            .iter()
            .flat_map(|p| p.records.iter())
            .flat_map(|r| r.content.iter())
            .filter_map(|b| match b {
                ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        assert!(ids.contains(&"tx"));
        let joined = plans
            .iter()
            .find(|p| {
                p.records
                    .iter()
                    .any(|r| r.message_id.as_deref() == Some("m-s"))
            })
            .unwrap();
        let parts = joined
            .records
            .iter()
            .filter(|r| r.message_id.as_deref() == Some("m-s"))
            .count();
        assert_eq!(parts, 2);
    }

    #[test]
    fn compaction_records_are_never_folded() {
        let mut t = T::default();
        t.push(
            "b",
            json!({"type": "system", "subtype": "compact_boundary", "data": {}}),
        );
        t.push(
            "s",
            json!({"type": "user", "is_compact_summary": true, "content": "z".repeat(4000)}),
        );
        for i in 0..10 {
            t.user(&format!("q{i} {}", "y".repeat(2000))).reply("ok");
        }
        let v = t.view();
        let plans = plan_stage(&v, &[], 1_000_000, 1_000_000, &on());
        assert!(!plans.is_empty());
        for p in &plans {
            assert!(p.records.iter().all(|r| !is_compaction_record(r)));
        }
    }

    // ---- to_commit / stands aside -----------------------------------------------

    fn staged(id: &str, tokens: u64) -> Collapse {
        Collapse {
            id: id.into(),
            first_uuid: format!("{id}-first"),
            last_uuid: format!("{id}-last"),
            record_count: 10,
            tokens,
            summary: "short".into(),
            status: CollapseStatus::Staged,
        }
    }

    #[test]
    fn commit_at_the_commit_level_until_the_target() {
        let s = on();
        let mut log = vec![
            staged("a", 11_000),
            staged("b", 11_000),
            staged("c", 11_000),
        ];
        log.insert(
            0,
            Collapse {
                status: CollapseStatus::Committed,
                ..staged("z", 10_000)
            },
        );
        // Below 90%: nothing, however much is staged.
        assert!(to_commit(&log, 89_999, 100_000, &s, false).is_empty());
        // Each saves ~10,940: 92,000 → a → ~81,060 → b → ~70,110 → c; 90,000 stops after b.
        assert_eq!(
            to_commit(&log, 92_000, 100_000, &s, false),
            vec!["a", "b", "c"]
        );
        assert_eq!(to_commit(&log, 90_000, 100_000, &s, false), vec!["a", "b"]);
        // Drain ignores the estimate.
        assert_eq!(to_commit(&log, 10, 100_000, &s, true), vec!["a", "b", "c"]);
        assert_eq!(to_commit(&log, 10, 0, &s, true), vec!["a", "b", "c"]);
        assert!(to_commit(&log, 99_000, 100_000, &CollapseSettings::default(), true).is_empty());
        assert!(to_commit(&log, 99_000, 0, &s, false).is_empty());
    }

    #[test]
    fn autocompact_stands_aside_only_while_collapse_is_active() {
        let s = on();
        let none: Vec<Collapse> = Vec::new();
        let one = vec![Collapse {
            status: CollapseStatus::Committed,
            ..staged("a", 1_000)
        }];
        // Disabled: never.
        let off = CollapseSettings::default();
        assert!(!autocompact_stands_aside(&one, 85_000, 100_000, &off));
        // Enabled but inactive (nothing committed, below the stage level).
        assert!(!autocompact_stands_aside(&none, 50_000, 100_000, &s));
        // Active: at the stage level, or something committed.
        assert!(autocompact_stands_aside(&none, 80_000, 100_000, &s));
        assert!(autocompact_stands_aside(&one, 50_000, 100_000, &s));
        assert!(autocompact_stands_aside(&one, 94_999, 100_000, &s));
        // At the block level autocompact takes over.
        assert!(!autocompact_stands_aside(&one, 95_000, 100_000, &s));
        assert!(!autocompact_stands_aside(&none, 99_000, 100_000, &s));
    }

    // ---- apply --------------------------------------------------------------------

    #[test]
    fn a_committed_span_becomes_one_record() {
        let t = rounds(12);
        let v = t.view();
        let plans = plan_stage(&v, &[], 1_000_000, 1_000_000, &on());
        let c = committed(&plans[0], "Did things.");
        let out = apply(&v, std::slice::from_ref(&c));
        assert_eq!(out.len(), v.len() - plans[0].records.len() + 1);
        let first = &out[0];
        assert!(matches!(first, Cow::Owned(_)));
        assert_eq!(first.uuid, format!("collapse-{}", c.id));
        assert_eq!(first.seq, v[0].seq);
        assert_eq!(first.timestamp, v[0].timestamp);
        assert_eq!(first.kind, RecordKind::User);
        assert!(first.is_meta);
        assert_eq!(first.content.len(), 1);
        let ContentBlock::Text { text, .. } = &first.content[0] else {
            panic!("text")
        };
        assert_eq!(text, &render(&c));
        assert!(text.starts_with(&format!("<collapsed id=\"{}\" messages=\"16\">", c.id)));
        assert!(text.ends_with("Did things.\n</collapsed>"));
        // The rest is borrowed, the very same records.
        for (o, r) in out[1..].iter().zip(&v[16..]) {
            assert!(matches!(o, Cow::Borrowed(_)));
            assert!(std::ptr::eq(o.as_ref(), *r));
        }
        // Deterministic.
        assert_eq!(out, apply(&v, std::slice::from_ref(&c)));
    }

    #[test]
    fn staged_undone_and_missing_spans_are_not_applied() {
        let t = rounds(12);
        let v = t.view();
        let plans = plan_stage(&v, &[], 1_000_000, 1_000_000, &on());
        let c = committed(&plans[1], "s");
        let raw = |out: &[Cow<'_, Record>]| {
            out.len() == v.len() && out.iter().all(|o| matches!(o, Cow::Borrowed(_)))
        };
        let staged = plans[1].to_collapse("s".into());
        assert!(raw(&apply(&v, &[staged])));
        let undone = Collapse {
            status: CollapseStatus::Undone,
            ..c.clone()
        };
        assert!(raw(&apply(&v, &[undone])));
        // First record snipped (or compacted) away: the whole collapse is ignored.
        let without: Vec<&Record> = v
            .iter()
            .copied()
            .filter(|r| r.uuid != c.first_uuid)
            .collect();
        let out = apply(&without, std::slice::from_ref(&c));
        assert_eq!(out.len(), without.len());
        // Ends reversed: ignored too.
        let reversed = Collapse {
            first_uuid: c.last_uuid.clone(),
            last_uuid: c.first_uuid.clone(),
            ..c.clone()
        };
        assert!(raw(&apply(&v, &[reversed])));
        // Both applied, in view order, whatever the log order.
        let c0 = committed(&plans[0], "s0");
        let out = apply(&v, &[c.clone(), c0.clone()]);
        assert_eq!(out.len(), v.len() - 32 + 2);
        assert_eq!(out[0].uuid, format!("collapse-{}", c0.id));
        assert_eq!(out[1].uuid, format!("collapse-{}", c.id));
    }

    #[test]
    fn a_span_that_would_split_a_pair_is_not_applied() {
        let t = rounds(6);
        let v = t.view();
        // Ends on the tool_use, before its result.
        let c = Collapse {
            id: "bad".into(),
            first_uuid: v[0].uuid.clone(),
            last_uuid: v[1].uuid.clone(),
            record_count: 2,
            tokens: 10,
            summary: String::new(),
            status: CollapseStatus::Committed,
        };
        assert_eq!(apply(&v, &[c]).len(), v.len());
    }

    #[test]
    fn overlapping_commits_resolve_to_the_outer_first() {
        let t = rounds(12);
        let v = t.view();
        let starts = round_starts(&v);
        let mk = |id: &str, a: usize, b: usize| Collapse {
            id: id.into(),
            first_uuid: v[starts[a]].uuid.clone(),
            last_uuid: v[starts[b] - 1].uuid.clone(),
            record_count: 1,
            tokens: 1,
            summary: String::new(),
            status: CollapseStatus::Committed,
        };
        let out = apply(
            &v,
            &[mk("inner", 1, 2), mk("outer", 0, 3), mk("late", 2, 5)],
        );
        assert_eq!(out[0].uuid, "collapse-outer");
        assert_eq!(out.len(), v.len() - starts[3] + 1);
    }

    // ---- property -----------------------------------------------------------------

    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn chance(&mut self, percent: u64) -> bool {
            self.below(100) < percent
        }
    }

    /// A messy but plausible transcript: split responses, parallel calls, results spread
    /// over records or sent with typed text, attachments, meta records, a call in flight.
    fn random_view(g: &mut Lcg) -> T {
        let mut t = T::default();
        let mut tool = 0;
        let turns = 1 + g.below(14);
        for turn in 0..turns {
            if g.chance(15) {
                t.push(
                    "x",
                    json!({"type": "attachment", "attachment": {"type": "date_change", "date": "2026-11-30"}}),
                );
            }
            t.user(&format!(
                "turn {turn} {}",
                "w".repeat(g.below(400) as usize)
            ));
            let steps = g.below(4);
            for step in 0..steps {
                let mid = format!("m{turn}-{step}");
                if g.chance(30) {
                    t.push(
                        "a",
                        json!({"type": "assistant", "message_id": mid, "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}]}),
                    );
                }
                let calls = 1 + g.below(3);
                let ids: Vec<String> = (0..calls)
                    .map(|_| {
                        tool += 1;
                        format!("t{tool}")
                    })
                    .collect();
                for id in &ids {
                    t.push(
                        "a",
                        json!({"type": "assistant", "message_id": mid, "content": [{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "ls"}}]}),
                    );
                }
                let last_turn = turn + 1 == turns && step + 1 == steps;
                if last_turn && g.chance(30) {
                    break; // in flight: no results yet
                }
                let together = g.chance(50);
                let with_text = g.chance(15);
                let result = |id: &str, g: &mut Lcg| json!({"type": "tool_result", "tool_use_id": id, "content": "o".repeat(g.below(300) as usize), "is_error": g.chance(10)});
                if together {
                    let mut blocks: Vec<Value> = ids.iter().map(|id| result(id, g)).collect();
                    if with_text {
                        blocks.push(json!({"type": "text", "text": "and also this"}));
                    }
                    t.push("r", json!({"type": "user", "content": blocks}));
                } else {
                    for id in &ids {
                        let b = result(id, g);
                        t.push("r", json!({"type": "user", "content": [b]}));
                    }
                }
                if g.chance(20) {
                    t.push(
                        "x",
                        json!({"type": "user", "is_meta": true, "content": "<system-reminder>note</system-reminder>"}),
                    );
                }
            }
            if g.chance(80) {
                t.reply(&format!("done {turn}"));
            }
        }
        t
    }

    /// Tool ids whose use has no result after it, or whose result has no use before it.
    fn orphans<R: std::borrow::Borrow<Record>>(view: &[R]) -> Vec<String> {
        let mut seen_use: Vec<&str> = Vec::new();
        let mut out = Vec::new();
        let mut answered: Vec<&str> = Vec::new();
        for r in view.iter().map(std::borrow::Borrow::borrow) {
            for b in &r.content {
                match b {
                    ContentBlock::ToolUse { id, .. } => seen_use.push(id),
                    ContentBlock::ToolResult { tool_use_id, .. } => {
                        if seen_use.contains(&tool_use_id.as_str()) {
                            answered.push(tool_use_id);
                        } else {
                            out.push(format!("result {tool_use_id}"));
                        }
                    }
                    _ => {}
                }
            }
        }
        for id in seen_use {
            if !answered.contains(&id) {
                out.push(format!("use {id}"));
            }
        }
        out.sort();
        out
    }

    #[test]
    fn property_apply_never_orphans_a_tool_pair() {
        let mut g = Lcg(0xc011_a95e);
        let mut applied_any = 0;
        for case in 0..400 {
            let t = random_view(&mut g);
            let v = t.view();
            let s = CollapseSettings {
                span_rounds: 1 + g.below(4) as usize,
                keep_recent_rounds: g.below(4) as usize,
                ..on()
            };
            let total = records_tokens(&v);
            let mut log: Vec<Collapse> = plan_stage(&v, &[], total, total.max(1), &s)
                .iter()
                .map(|p| {
                    let summary = summarize_span(&p.records);
                    let mut c = p.to_collapse(summary);
                    if g.chance(80) {
                        c.status = CollapseStatus::Committed;
                    }
                    c
                })
                .collect();
            // Arbitrary ranges too: apply must refuse the ones that would split a pair.
            for k in 0..g.below(4) {
                let a = g.below(v.len() as u64) as usize;
                let b = a + g.below((v.len() - a) as u64) as usize;
                log.push(Collapse {
                    id: format!("r{k}"),
                    first_uuid: v[a].uuid.clone(),
                    last_uuid: v[b].uuid.clone(),
                    record_count: b - a + 1,
                    tokens: 0,
                    summary: "random".into(),
                    status: CollapseStatus::Committed,
                });
            }
            let out = apply(&v, &log);
            assert_eq!(out, apply(&v, &log), "case {case}: not deterministic");
            let before = orphans(&v);
            let after = orphans(&out);
            assert!(
                after.iter().all(|o| before.contains(o)),
                "case {case}: {after:?} vs {before:?}"
            );
            // Records of one response are never separated by a collapse record.
            for (i, r) in out.iter().enumerate() {
                let Some(m) = &r.message_id else { continue };
                let last = out
                    .iter()
                    .rposition(|x| x.message_id.as_ref() == Some(m))
                    .unwrap();
                assert!(
                    out[i..=last]
                        .iter()
                        .all(|x| !x.uuid.starts_with("collapse-")),
                    "case {case}: response {m} split"
                );
            }
            // Planned spans: whole rounds, clean, outside the recent rounds.
            let rounds = api_rounds(&v);
            let recent_start = rounds
                .get(rounds.len().saturating_sub(s.keep_recent_rounds.max(1)))
                .map_or(v.len(), |r| r.start);
            let clean = clean_cuts(&v);
            for c in log.iter().filter(|c| !c.id.starts_with('r')) {
                let a = index_of(&v, &c.first_uuid);
                let b = index_of(&v, &c.last_uuid);
                assert!(b < recent_start, "case {case}");
                assert!(clean[a] && clean[b + 1], "case {case}");
                assert!(rounds.iter().any(|r| r.start == a), "case {case}");
                assert!(rounds.iter().any(|r| r.end == b + 1), "case {case}");
            }
            applied_any += usize::from(out.len() < v.len());
        }
        assert!(
            applied_any > 100,
            "only {applied_any} cases folded anything"
        );
    }

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
}
