//! Session-memory compact: which raw tail is kept verbatim after the notes.

use crate::projection::COMPACT_BOUNDARY;
use crate::{attachments, tokens};
use ctxd_protocol::{ContentBlock, Record, RecordKind};
use std::collections::HashMap;

/// How much of the recent history a session-memory compact keeps verbatim (unscaled
/// tokens of `tokens::record_tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepLimits {
    pub(crate) min_tokens: u64,
    pub(crate) min_text_messages: usize,
    pub(crate) max_tokens: u64,
}

impl KeepLimits {
    /// Claude Code's numbers, made for a 200k window; smaller windows scale them
    /// (`autocompact::RoomBudget`).
    pub const REFERENCE: KeepLimits = KeepLimits {
        min_tokens: 10_000,
        min_text_messages: 5,
        max_tokens: 40_000,
    };
}

pub(super) fn is_text_message(r: &Record) -> bool {
    matches!(r.kind, RecordKind::User | RecordKind::Assistant)
        && r.content
            .iter()
            .any(|b| matches!(b, ContentBlock::Text { text, .. } if !text.trim().is_empty()))
}

/// Index into `view` (starting at the last compact boundary) of the first record a
/// session-memory compact keeps verbatim, or None when
/// `last_summarized_uuid` is not in `view`.
///
/// The tail starts right after the last summarised record and is widened backwards, one
/// record at a time, until it holds at least `limits.min_tokens` tokens and
/// `limits.min_text_messages` text messages (user or assistant records with a non-empty
/// text block), or at least `limits.max_tokens` tokens (so the text-message rule holds
/// only while it fits): recent work stays word for word even when the notes were written
/// just now. A tail already past the maximum is not
/// shortened (the notes do not cover it). Then the cut moves back until no kept
/// `tool_result` lacks its `tool_use` and no response is split (same message id), since
/// the API rejects the first and the second would show half an answer. Never below the
/// floor: index 0, or 1 when `view[0]` is the compact boundary itself. Tokens are the
/// unscaled estimate of `tokens::record_tokens`.
pub fn keep_start(
    view: &[&Record],
    last_summarized_uuid: &str,
    limits: KeepLimits,
) -> Option<usize> {
    let last = view.iter().position(|r| r.uuid == last_summarized_uuid)?;
    let floor = usize::from(view.first().is_some_and(|r| {
        (r.kind == RecordKind::System && r.subtype.as_deref() == Some(COMPACT_BOUNDARY))
            || crate::projection::server_compaction(r) == Some(true)
    }));
    let mut start = (last + 1).max(floor);
    let size = |r: &Record| tokens::record_tokens(r, attachments::render);
    let mut total: u64 = view[start..].iter().map(|r| size(r)).sum();
    let mut texts = view[start..].iter().filter(|r| is_text_message(r)).count();
    let enough = |total: u64, texts: usize| {
        total >= limits.max_tokens
            || (total >= limits.min_tokens && texts >= limits.min_text_messages)
    };
    while !enough(total, texts) && start > floor {
        start -= 1;
        total += size(view[start]);
        texts += usize::from(is_text_message(view[start]));
    }
    Some(preserve_pairs(view, start, floor))
}

/// Moves `start` back (not below `floor`) until the tail splits no tool_use/tool_result
/// pair and no response. Repeated, because taking in a response can take in results whose
/// calls lie further back.
pub(super) fn preserve_pairs(view: &[&Record], mut start: usize, floor: usize) -> usize {
    let mut use_at: HashMap<&str, usize> = HashMap::new();
    let mut response_start: HashMap<&str, usize> = HashMap::new();
    for (i, r) in view.iter().enumerate() {
        if r.kind != RecordKind::Assistant {
            continue;
        }
        if let Some(id) = &r.message_id {
            response_start.entry(id.as_str()).or_insert(i);
        }
        for b in &r.content {
            if let ContentBlock::ToolUse { id, .. } = b {
                use_at.entry(id.as_str()).or_insert(i);
            }
        }
    }
    loop {
        let mut s = start;
        for r in &view[start..] {
            if r.kind == RecordKind::Assistant
                && let Some(&first) = r.message_id.as_deref().and_then(|m| response_start.get(m))
            {
                s = s.min(first);
            }
            for b in &r.content {
                if let ContentBlock::ToolResult { tool_use_id, .. } = b
                    && let Some(&at) = use_at.get(tool_use_id.as_str())
                {
                    s = s.min(at);
                }
            }
        }
        let s = s.max(floor);
        if s >= start {
            return start;
        }
        start = s;
    }
}
