//! The lean policy (`settings.policy: "lean"`): clears tool results the model no longer
//! needs, earlier than Claude Code would, where the cost of doing it is lowest. The
//! rules and the reasons for them are in `docs/policy.md`.
//!
//! Two rules pick candidates, oldest first:
//!
//! - **superseded**: a later call of the same kind produced the same thing again — the
//!   same file read with the same range, the same shell command, the same search — or a
//!   later `Write` replaced the whole file a read showed. The later result is what is
//!   true now; the earlier one is a stale copy.
//! - **stale**: a result of a tool whose output can be produced again, whose subject (the
//!   file it read, or the call itself) has not been touched for `stale_after_rounds`
//!   model responses, and which is not among the `keep_recent` most recent such results.
//!   With `touch_by_use`, a response that uses one of the result's distinctive items
//!   (`items`: the definition the premature-clear measure uses) touches it too: the
//!   model is still working with what it showed.
//!
//! Clearing a result rewrites the provider's cache from that result on, so a batch is
//! cleared only where that costs little: when the cache has gone cold anyway (the gap
//! since the last response is longer than the cache's TTL), or, while it is warm, for the
//! longest run of candidates at the end of the view whose tokens are at least
//! `warm_min_ratio_pct` percent of the tokens after them that would be written again.
//! What is cleared is frozen like time-based microcompact's clears, so a restart or a
//! fork shows the same bytes.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use ctxd_protocol::{ContentBlock, LeanSettings, Record, RecordKind, ToolResultContent};
use serde_json::Value;

use super::items;
use super::microcompact::{CLEARED, last_assistant_time};
use crate::budget::Fate;
use crate::tokens::block_tokens;

/// Tools whose output can be produced again by calling them again: the stale rule's
/// candidates. Edits and writes are left out: their results are short confirmations.
const REPRODUCIBLE: [&str; 9] = [
    "Read",
    "Bash",
    "PowerShell",
    "Grep",
    "Glob",
    "LS",
    "WebSearch",
    "WebFetch",
    "NotebookRead",
];

/// Tools that rewrite a whole file from their input alone.
const WHOLE_FILE_WRITES: [&str; 1] = ["Write"];

/// Tools that change a file: they touch its subject, so its reads stay fresh.
const FILE_CHANGES: [&str; 4] = ["Edit", "MultiEdit", "Write", "NotebookEdit"];

/// Why a result was cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rule {
    Superseded,
    Stale,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Superseded => "superseded",
            Rule::Stale => "stale",
        }
    }
}

/// When the stage runs: the cache state it decides against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CacheClock {
    pub(crate) now: DateTime<Utc>,
    /// The TTL the previous request was cached with, in seconds.
    pub(crate) ttl_secs: i64,
    /// The prefix is written again whatever the clears (the model changed): a cold
    /// point like a lapsed cache.
    pub(crate) rewritten: bool,
}

/// The cost model's terms for a warm clear (`cost::warm_clear_saving`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClearPricing {
    pub(crate) prices: ctxd_protocol::models::Prices,
    pub(crate) warm_calls: f64,
}

/// One tool call of the view and what is known of it.
struct Call<'r> {
    id: &'r str,
    name: &'r str,
    input: &'r Value,
    /// The model response (counted from the start of the view) that made the call.
    round: usize,
    /// Where its result is in the view, once it has one.
    result_at: Option<usize>,
    result_tokens: u64,
}

fn str_field<'v>(input: &'v Value, keys: &[&str]) -> Option<&'v str> {
    keys.iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
}

/// The file a call reads or changes.
fn file_of<'r>(call: &Call<'r>) -> Option<&'r str> {
    match call.name {
        "Read" | "NotebookRead" | "Edit" | "MultiEdit" | "Write" | "NotebookEdit" => {
            str_field(call.input, &["file_path", "notebook_path"])
        }
        _ => None,
    }
}

/// What a later call must equal to supersede this one's result: the tool and its whole
/// input (for a read: path and range), so only a true repetition counts.
fn repeat_key(call: &Call<'_>) -> Option<String> {
    REPRODUCIBLE
        .contains(&call.name)
        .then(|| format!("{}\u{0}{}", call.name, call.input))
}

/// The subject whose last touch dates a result for the stale rule.
fn subject(call: &Call<'_>) -> String {
    match file_of(call) {
        Some(path) => format!("file\u{0}{path}"),
        None => format!("call\u{0}{}", call.id),
    }
}

/// The tokens a result adds as the model sees it (a persisted result: its preview).
fn result_tokens(block: &ContentBlock, fate: Option<&Fate>) -> u64 {
    match fate {
        Some(Fate::Replaced(s)) => (s.chars().count() as u64).div_ceil(4),
        _ => block_tokens(block),
    }
}

fn is_cleared_text(content: &ToolResultContent) -> bool {
    matches!(content, ToolResultContent::Text(t) if t == CLEARED)
}

/// The view, read once: its calls in order, with their results' positions and sizes.
struct Scan<'r> {
    calls: Vec<Call<'r>>,
    /// Per position of the view, the tokens of the user and assistant content there.
    sizes: Vec<u64>,
    /// The calls whose result the view already shows cleared.
    already: Vec<&'r str>,
    /// The model's responses, each record with its round (a response may span records).
    responses: Vec<(usize, &'r Record)>,
    /// How many model responses the view holds.
    rounds: usize,
}

fn scan<'r>(view: &[&'r Record], fates: &BTreeMap<String, Fate>) -> Scan<'r> {
    let mut out: Vec<Call<'r>> = Vec::new();
    let mut responses = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut sizes = Vec::with_capacity(view.len());
    let mut already: Vec<&str> = Vec::new();
    let mut round = 0usize;
    let mut last_message: Option<&str> = None;
    for (at, r) in view.iter().enumerate() {
        let mut size = 0u64;
        match r.kind {
            RecordKind::Assistant => {
                let message = r.message_id.as_deref();
                if message.is_none() || message != last_message {
                    round += 1;
                }
                last_message = message;
                responses.push((round, *r));
                for b in &r.content {
                    size += block_tokens(b);
                    if let ContentBlock::ToolUse {
                        id, name, input, ..
                    } = b
                        && !index.contains_key(id.as_str())
                    {
                        index.insert(id, out.len());
                        out.push(Call {
                            id,
                            name,
                            input,
                            round,
                            result_at: None,
                            result_tokens: 0,
                        });
                    }
                }
            }
            RecordKind::User => {
                for b in &r.content {
                    size += block_tokens(b);
                    if let ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        ..
                    } = b
                        && let Some(&i) = index.get(tool_use_id.as_str())
                        && out[i].result_at.is_none()
                    {
                        if is_cleared_text(content) {
                            already.push(out[i].id);
                        }
                        out[i].result_at = Some(at);
                        out[i].result_tokens = result_tokens(b, fates.get(tool_use_id));
                    }
                }
            }
            _ => {}
        }
        sizes.push(size);
    }
    Scan {
        calls: out,
        sizes,
        already,
        responses,
        rounds: round,
    }
}

/// The results the rules select, oldest first, with the rule that selected each.
/// A repetition that lost some of what the earlier result showed (the command's output
/// changed, the file was edited between the reads) does not stand in for it: the
/// earlier result is then judged by the stale rule like any other.
fn candidates(
    view: &[&Record],
    calls: &[Call<'_>],
    rounds: usize,
    settings: &LeanSettings,
) -> Vec<(usize, Rule)> {
    let mut later_keys: HashMap<String, usize> = HashMap::new();
    let mut last_write: HashMap<&str, usize> = HashMap::new();
    let mut last_touch: HashMap<String, usize> = HashMap::new();
    for (i, c) in calls.iter().enumerate() {
        if c.result_at.is_some()
            && let Some(k) = repeat_key(c)
        {
            later_keys.insert(k, i);
        }
        if let Some(path) = file_of(c) {
            if WHOLE_FILE_WRITES.contains(&c.name) {
                last_write.insert(path, i);
            }
            if FILE_CHANGES.contains(&c.name) || c.name == "Read" {
                last_touch.insert(subject(c), c.round);
            }
        }
    }
    // The most recent reproducible results are kept whatever their age.
    let keep = settings.keep_recent as usize;
    let reproducible: Vec<usize> = (0..calls.len())
        .filter(|&i| calls[i].result_at.is_some() && REPRODUCIBLE.contains(&calls[i].name))
        .collect();
    let protected = &reproducible[reproducible.len().saturating_sub(keep)..];
    let mut out = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        if c.result_at.is_none() || !REPRODUCIBLE.contains(&c.name) {
            continue;
        }
        let repeated = repeat_key(c).is_some_and(|k| later_keys.get(&k).is_some_and(|&j| j > i));
        let rewritten = file_of(c).is_some_and(|p| last_write.get(p).is_some_and(|&j| j > i));
        if (repeated || rewritten) && held_by_successor(view, calls, i) {
            out.push((i, Rule::Superseded));
            continue;
        }
        let touched = last_touch.get(&subject(c)).copied().unwrap_or(c.round);
        let age = rounds.saturating_sub(touched.max(c.round));
        let stale = settings
            .stale_after_rounds
            .is_some_and(|after| age >= after as usize);
        if stale && !protected.contains(&i) {
            out.push((i, Rule::Stale));
        }
    }
    out
}

/// What the policy clears in one compile.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Decision {
    /// The results to clear now, oldest first, each with its rule.
    pub(crate) clears: Vec<(String, Rule)>,
    /// The cache had gone cold: the whole request is written again.
    pub(crate) cold: bool,
    /// With priced clears on a warm cache: the best expected saving of a batch at the
    /// end, in dollars (cleared when positive).
    pub(crate) saving: Option<f64>,
}

/// The results to clear now: none when clearing now would cost more than it saves.
/// `warm_allowed` is false while another lever edits the warm cache (pinned cache
/// edits): then only a cold cache is cleared. With `pricing`, a warm batch is weighed
/// by the cost model instead of `warm_min_ratio_pct`.
pub fn decide(
    view: &[&Record],
    cleared: &BTreeMap<String, Fate>,
    fates: &BTreeMap<String, Fate>,
    settings: &LeanSettings,
    clock: CacheClock,
    warm_allowed: bool,
    pricing: Option<ClearPricing>,
) -> Decision {
    let Scan {
        calls,
        sizes,
        already,
        responses,
        rounds,
    } = scan(view, fates);
    let mut open: Vec<(usize, Rule)> = candidates(view, &calls, rounds, settings)
        .into_iter()
        .filter(|(i, _)| {
            let id = calls[*i].id;
            !cleared.contains_key(id) && !already.contains(&id)
        })
        .collect();
    if settings.touch_by_use && open.iter().any(|(_, rule)| *rule == Rule::Stale) {
        let after = settings.stale_after_rounds.unwrap_or(u32::MAX);
        let horizon = rounds.saturating_sub(after as usize);
        let mut used = String::new();
        for (_, r) in responses.iter().filter(|(round, _)| *round > horizon) {
            items::push_used(&r.content, &mut used);
        }
        let used = items::Used::new(used);
        open.retain(|(i, rule)| *rule != Rule::Stale || !used_by(view, &calls[*i], &used));
    }
    let cold = clock.rewritten
        || last_assistant_time(view)
            .is_some_and(|t| clock.now.signed_duration_since(t).num_seconds() > clock.ttl_secs);
    if open.is_empty() {
        return Decision {
            clears: Vec::new(),
            cold,
            saving: None,
        };
    }
    let mut saving = None;
    let from = match (cold, warm_allowed, pricing) {
        (true, _, _) => 0,
        (false, true, Some(p)) => {
            let (from, best) = priced_batch_start(&calls, &sizes, &open, p);
            saving = Some(best);
            from
        }
        (false, true, None) => warm_batch_start(&calls, &sizes, &open, settings.warm_min_ratio_pct),
        (false, false, _) => open.len(),
    };
    Decision {
        clears: open[from..]
            .iter()
            .map(|(i, rule)| (calls[*i].id.to_string(), *rule))
            .collect(),
        cold,
        saving,
    }
}

/// While the cache is warm, priced: the first candidate of the run at the end whose
/// clear the cost model expects to save the most, `open.len()` if none saves anything;
/// and the best expected saving found (negative when none pays).
fn priced_batch_start(
    calls: &[Call<'_>],
    sizes: &[u64],
    open: &[(usize, Rule)],
    pricing: ClearPricing,
) -> (usize, f64) {
    let mut best = (open.len(), f64::NEG_INFINITY);
    let mut cleared_tokens = 0u64;
    for k in (0..open.len()).rev() {
        let c = &calls[open[k].0];
        cleared_tokens += c.result_tokens;
        let at = c.result_at.unwrap_or(0);
        let after: u64 = sizes[at..].iter().sum();
        let rewritten = after.saturating_sub(cleared_tokens);
        let saving = super::cost::warm_clear_saving(
            &pricing.prices,
            pricing.warm_calls,
            cleared_tokens,
            rewritten,
        );
        if saving > best.1 {
            best = (k, saving);
        }
    }
    if best.1 > 0.0 {
        best
    } else {
        (open.len(), best.1)
    }
}

/// Whether `used` (what the responses since the stale horizon wrote) uses one of the
/// call's result's distinctive items: a touch that keeps a stale candidate. Only
/// candidates the clock alone would clear are asked, so a compile pays for the few
/// results about to go, not for the whole view.
fn used_by(view: &[&Record], call: &Call<'_>, used: &items::Used) -> bool {
    if used.is_empty() {
        return false;
    }
    let Some(content) = call
        .result_at
        .and_then(|at| result_content(view[at], call.id))
    else {
        return false;
    };
    let text = crate::records::result_text(content);
    used.first_used(&items::distinctive(&text)).is_some()
}

/// Whether what supersedes call `i` (the last repetition with a result, else the last
/// whole-file write of its file) holds every distinctive item of its result, so that
/// clearing it takes nothing out of the request.
fn held_by_successor(view: &[&Record], calls: &[Call<'_>], i: usize) -> bool {
    let c = &calls[i];
    let key = repeat_key(c);
    let path = file_of(c);
    let later = &calls[i + 1..];
    let successor = later
        .iter()
        .rev()
        .find(|l| l.result_at.is_some() && key.is_some() && repeat_key(l) == key)
        .or_else(|| {
            later.iter().rev().find(|l| {
                WHOLE_FILE_WRITES.contains(&l.name) && path.is_some() && file_of(l) == path
            })
        });
    let text_of = |call: &Call<'_>| {
        call.result_at
            .and_then(|at| result_content(view[at], call.id))
            .map(crate::records::result_text)
    };
    let (Some(successor), Some(old)) = (successor, text_of(c)) else {
        return false;
    };
    let new = if WHOLE_FILE_WRITES.contains(&successor.name) {
        str_field(successor.input, &["content"]).map(str::to_owned)
    } else {
        text_of(successor)
    };
    let Some(new) = new else { return false };
    let held = items::Used::new(new);
    items::distinctive(&old).iter().all(|item| held.uses(item))
}

/// The content of the call's result in the record that holds it.
fn result_content<'r>(record: &'r Record, id: &str) -> Option<&'r ToolResultContent> {
    record.content.iter().find_map(|b| match b {
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            ..
        } if tool_use_id == id => Some(content),
        _ => None,
    })
}

/// While the cache is warm: the first candidate of the longest run at the end worth
/// clearing (its tokens against those written again after it), `open.len()` if none.
fn warm_batch_start(calls: &[Call<'_>], sizes: &[u64], open: &[(usize, Rule)], pct: u32) -> usize {
    let mut best = open.len();
    let mut cleared_tokens = 0u64;
    for k in (0..open.len()).rev() {
        let c = &calls[open[k].0];
        cleared_tokens += c.result_tokens;
        let at = c.result_at.unwrap_or(0);
        let after: u64 = sizes[at..].iter().sum();
        let rewritten = after.saturating_sub(cleared_tokens);
        if cleared_tokens * 100 >= u64::from(pct) * rewritten {
            best = k;
        }
    }
    best
}

#[cfg(test)]
mod tests;
