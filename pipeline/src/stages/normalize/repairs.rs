//! Stage 3 of normalising, message repairs: duplicate tool_use ids, thinking-only
//! assistants, tool_use / tool_result pairing, and re-merging neighbours of messages that
//! became empty.

use std::collections::HashSet;

use ctxd_protocol::{ContentBlock, ToolResultContent};

use super::*;
use crate::message::BlockMut;

pub(super) const MISSING_RESULT: &str =
    "[Tool result missing: the tool call was interrupted before it returned]";

pub(super) fn drop_duplicate_tool_uses(msgs: &mut [Msg<'_>], repairs: &mut Vec<String>) {
    // Duplicates are rare: sorted, the ids show there are none without hashing any.
    let mut ids: Vec<&str> = msgs
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| &m.blocks)
        .filter_map(|b| b.tool_use_id())
        .collect();
    ids.sort_unstable();
    if ids.windows(2).all(|w| w[0] != w[1]) {
        return;
    }
    let mut seen: HashSet<&str> = HashSet::new();
    let mut duplicates: Vec<(usize, usize)> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        if m.role != Role::Assistant {
            continue;
        }
        for (k, b) in m.blocks.iter().enumerate() {
            if let ContentBlock::ToolUse { id, .. } = &**b
                && !seen.insert(id)
            {
                // Its result, if any, is dropped by pairing as an orphan or duplicate.
                repairs.push(format!("dropped duplicate tool_use {id}"));
                duplicates.push((i, k));
            }
        }
    }
    for &(i, k) in duplicates.iter().rev() {
        msgs[i].blocks.remove(k);
    }
}

/// Assistant messages with nothing but thinking (or nothing at all) are invalid turns.
pub(super) fn drop_hollow_assistants(msgs: &mut Vec<Msg<'_>>, repairs: &mut Vec<String>) {
    msgs.retain(|m| {
        if m.role != Role::Assistant || m.blocks.iter().any(|b| !b.is_thinking()) {
            return true;
        }
        if !m.blocks.is_empty() {
            repairs.push(format!(
                "dropped assistant message {} holding only thinking blocks",
                id_name(m.message_id)
            ));
        }
        false
    });
}

/// Drops empty messages and merges same-role neighbours so roles alternate again. In
/// place: on a long session the messages are a large vector, and a new one per call
/// (two calls a compile) was fresh memory to fault in as the session grew.
pub(super) fn coalesce(msgs: &mut Vec<Msg<'_>>, repairs: &mut Vec<String>) {
    msgs.retain(|m| !m.blocks.is_empty());
    // `prev` is the message kept last; returning true drops `m`, merged into it.
    msgs.dedup_by(|m, prev| {
        if prev.role != m.role {
            return false;
        }
        if m.role == Role::Assistant {
            repairs.push(format!(
                "merged assistant messages {} and {} left adjacent by a dropped message",
                id_name(prev.message_id),
                id_name(m.message_id)
            ));
            prev.message_id = m.message_id;
        }
        prev.blocks.append(&mut m.blocks);
        true
    });
}

pub(super) fn tool_use_ids<B: BlockMut>(blocks: &[B]) -> Vec<&str> {
    blocks
        .iter()
        .filter_map(|b| b.block().tool_use_id())
        .collect()
}

/// Makes the user message after each assistant message carry exactly one result per
/// tool_use, and no other results. Expects alternating roles.
pub(super) fn pair_tool_results(msgs: &mut Vec<Msg<'_>>, repairs: &mut Vec<String>) {
    let mut i = 0;
    while i < msgs.len() {
        if msgs[i].role == Role::Assistant {
            let dangling = msgs[i]
                .blocks
                .iter()
                .any(|b| matches!(**b, ContentBlock::ToolUse { .. }));
            let next_is_user = msgs.get(i + 1).is_some_and(|m| m.role == Role::User);
            if dangling && !next_is_user {
                // The API rejects a tool_use with no result after it; the next iteration
                // fills this message with synthesised results.
                msgs.insert(
                    i + 1,
                    Msg {
                        role: Role::User,
                        message_id: None,
                        blocks: Vec::new(),
                    },
                );
            }
            i += 1;
            continue;
        }
        let (before, rest) = msgs.split_at_mut(i);
        let expected: Vec<&str> = match before.last() {
            Some(prev) if prev.role == Role::Assistant => tool_use_ids(&prev.blocks),
            _ => Vec::new(),
        };
        let blocks = &mut rest[0].blocks;
        let mut answered = vec![false; expected.len()];
        blocks.retain(|b| {
            let ContentBlock::ToolResult { tool_use_id, .. } = &**b else {
                return true;
            };
            match expected.iter().position(|id| id == tool_use_id) {
                None => {
                    repairs.push(format!("dropped orphan tool_result {tool_use_id}"));
                    false
                }
                Some(j) if answered[j] => {
                    repairs.push(format!("dropped duplicate tool_result {tool_use_id}"));
                    false
                }
                Some(j) => {
                    answered[j] = true;
                    true
                }
            }
        });
        for (id, _) in expected.iter().zip(&answered).filter(|(_, done)| !**done) {
            repairs.push(format!("synthesised missing tool_result for tool_use {id}"));
            blocks.push(Block::new(ContentBlock::ToolResult {
                extra: Default::default(),
                tool_use_id: (*id).to_string(),
                content: ToolResultContent::Text(MISSING_RESULT.into()),
                is_error: true,
                cache_control: None,
                cache_reference: None,
            }));
        }
        i += 1;
    }
}
