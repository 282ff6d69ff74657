//! Context collapse.
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

use std::collections::HashMap;
use std::ops::Range;

use ctxd_protocol::{CollapseConfig, CollapseInfo, ContentBlock, Record, RecordKind};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::autocompact::api_rounds;
use crate::projection::{COMPACT_BOUNDARY, Shown};
use crate::{attachments, tokens};

/// The assumed summary of a span not yet summarised: a tenth of it, at least this.
pub(super) const MIN_SUMMARY_TOKENS: u64 = 50;
/// The offline summary never exceeds this, however large the span.
pub(super) const MAX_SUMMARY_TOKENS: u64 = 600;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollapseSettings {
    pub enabled: bool,
    pub(crate) stage_at_pct: u8,
    pub(crate) commit_at_pct: u8,
    pub(crate) block_at_pct: u8,
    pub(crate) keep_recent_rounds: usize,
    /// Rounds per span.
    pub(crate) span_rounds: usize,
    /// Stage and commit until the estimate is below this.
    pub(crate) target_pct: u8,
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
pub(super) fn at_least(estimate: u64, window: u64, pct: u8) -> bool {
    window > 0 && u128::from(estimate) * 100 >= u128::from(window) * u128::from(pct)
}

pub(super) fn text_tokens(text: &str) -> u64 {
    tokens::scaled((text.chars().count() as u64).div_ceil(4))
}

/// The assumed size of a summary not yet written.
pub(super) fn assumed_summary_tokens(span_tokens: u64) -> u64 {
    (span_tokens / 10).max(MIN_SUMMARY_TOKENS)
}

pub(super) fn plan_savings(span_tokens: u64) -> u64 {
    span_tokens.saturating_sub(assumed_summary_tokens(span_tokens))
}

/// Tokens a collapse frees once committed: its span minus the record that replaces it.
pub fn savings(c: &Collapse) -> u64 {
    c.tokens.saturating_sub(text_tokens(&render(c)))
}

pub(super) fn records_tokens(records: &[&Record]) -> u64 {
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
pub(super) fn clean_cuts(view: &[&Record]) -> Vec<bool> {
    // Keyed by (is a tool id, id): tool ids and message ids are different namespaces, and
    // a tool id that happens to equal a message id must not join two unrelated intervals.
    let mut extent: HashMap<(bool, &str), (usize, usize)> = HashMap::new();
    for (i, r) in view.iter().enumerate() {
        let tool_ids = r
            .content
            .iter()
            .filter_map(|b| b.tool_use_id().or_else(|| b.tool_result_id()));
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

pub(super) fn positions<'v>(view: &'v [&Record]) -> HashMap<&'v str, usize> {
    view.iter()
        .enumerate()
        .map(|(i, r)| (r.uuid.as_str(), i))
        .collect()
}

/// The inclusive index range of `c` in the view, if both ends are there in order.
pub(super) fn span_range(pos: &HashMap<&str, usize>, c: &Collapse) -> Option<(usize, usize)> {
    let s = *pos.get(c.first_uuid.as_str())?;
    let e = *pos.get(c.last_uuid.as_str())?;
    (s <= e).then_some((s, e))
}

pub(super) fn is_compaction_record(r: &Record) -> bool {
    r.is_compact_summary
        || (r.kind == RecordKind::System && r.subtype.as_deref() == Some(COMPACT_BOUNDARY))
        || crate::projection::server_compaction(r).is_some()
}

pub(super) struct Candidate {
    range: Range<usize>,
    tokens: u64,
    /// Shorter than `span_rounds` only because the recent rounds follow: it would grow.
    young_short: bool,
}

/// Every span that could be staged now, oldest first, ignoring the estimate.
pub(super) fn candidates(
    view: &[&Record],
    collapses: &[Collapse],
    s: &CollapseSettings,
) -> Vec<Candidate> {
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

pub(super) fn synthetic(first: &Record, c: &Collapse) -> Record {
    Record {
        seq: first.seq,
        parent_uuid: first.parent_uuid.clone(),
        is_meta: true,
        ..Record::new(
            RecordKind::User,
            format!("collapse-{}", c.id),
            first.timestamp.clone(),
            vec![ContentBlock::text(render(c))],
        )
    }
}

/// The view with every applicable committed collapse's span replaced by one synthetic
/// user record; all other records are borrowed unchanged. A span applies when both its
/// uuids are in the view, in order, at clean cuts (so no pair or response is split);
/// overlapping spans resolve to the one starting first, then the longer, then the
/// smaller id.
pub fn apply<'a>(view: &[&'a Record], collapses: &[Collapse]) -> Vec<Shown<'a>> {
    if !collapses
        .iter()
        .any(|c| c.status == CollapseStatus::Committed)
    {
        // Nothing to fold: the cut positions would go unused.
        return view.iter().map(|r| Shown::Kept(r)).collect();
    }
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
                out.push(Shown::Changed(Box::new(synthetic(view[s], c))));
                i = e + 1;
                next.next();
            }
            _ => {
                out.push(Shown::Kept(view[i]));
                i += 1;
            }
        }
    }
    out
}

mod summary;
pub use summary::*;

#[cfg(test)]
mod tests;
