//! When an extraction is due.

use ctxd_protocol::{ContentBlock, Record, RecordKind};

pub(crate) const FIRST_EXTRACTION_TOKENS: u64 = 10_000;
pub(crate) const EXTRACTION_GROWTH_TOKENS: u64 = 5_000;
pub(crate) const EXTRACTION_MIN_TOOL_CALLS: u32 = 3;

/// Whether an extraction should run after a model response. The first waits
/// until the context is worth noting down; later ones wait for real growth *and* a
/// natural pause: a few tool calls done, or a turn that ended in text.
///
/// `tokens_at_last` is the context size at the last extraction. A compaction shrinks the
/// context below it; the caller resets it then, or no extraction runs until the context
/// has grown back past it.
pub fn extraction_due(
    context_tokens: u64,
    tokens_at_last: Option<u64>,
    tool_calls_since_last: u32,
    last_turn_had_tool_call: bool,
) -> bool {
    match tokens_at_last {
        None => context_tokens >= FIRST_EXTRACTION_TOKENS,
        Some(last) => {
            context_tokens >= last.saturating_add(EXTRACTION_GROWTH_TOKENS)
                && (tool_calls_since_last >= EXTRACTION_MIN_TOOL_CALLS || !last_turn_had_tool_call)
        }
    }
}

pub(super) fn main_thread(r: &Record) -> bool {
    !r.is_sidechain && !r.is_virtual
}

pub(super) fn is_main_assistant(r: &Record) -> bool {
    r.kind == RecordKind::Assistant && main_thread(r)
}

/// Index of the first record after `uuid` (0 when `uuid` is None or not in `view`).
/// Searched from the end: the record last summarised is recent, and the gate asks after
/// every response, so a search from the start would walk the whole history each time (a
/// transcript's uuids are unique, so both directions find the same record).
pub fn after(view: &[&Record], uuid: Option<&str>) -> usize {
    uuid.and_then(|u| view.iter().rposition(|r| r.uuid == u))
        .map_or(0, |i| i + 1)
}

/// `tool_use` blocks in main-thread assistant records after the record `since_uuid` (all
/// of them when it is None or not found).
pub fn tool_calls_since(view: &[&Record], since_uuid: Option<&str>) -> u32 {
    let n = view[after(view, since_uuid)..]
        .iter()
        .filter(|r| is_main_assistant(r))
        .flat_map(|r| &r.content)
        .filter(|b| matches!(b, ContentBlock::ToolUse { .. }))
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Whether the last main-thread assistant response (every record sharing its message id;
/// just the record when it has none) contains a `tool_use`.
pub fn last_turn_had_tool_call(view: &[&Record]) -> bool {
    let Some(last) = view.iter().rev().find(|r| is_main_assistant(r)) else {
        return false;
    };
    let has_call = |r: &Record| {
        r.content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolUse { .. }))
    };
    match &last.message_id {
        None => has_call(last),
        Some(id) => view
            .iter()
            .filter(|r| is_main_assistant(r) && r.message_id.as_ref() == Some(id))
            .any(|r| has_call(r)),
    }
}
