//! Stage 4 of normalising, layout: tool results first, `<system-reminder>` siblings
//! folded into the last result, no trailing thinking on the final assistant message.

use ctxd_protocol::{ContentBlock, ToolResultBlock, ToolResultContent};

use super::*;
use crate::message::{BlockMut, REMINDER_OPEN};

pub(super) fn is_reminder<B: BlockMut>(b: &B) -> bool {
    matches!(b.block(), ContentBlock::Text { text, .. } if text.starts_with(REMINDER_OPEN))
}

/// Tool results first (the API wants them at the head of the turn), then the rest.
/// Reminders beside results go inside the last result so they add no turn boundary.
pub(super) fn layout_user(blocks: &mut Vec<Block<'_>>) {
    let is_result = |b: &Block<'_>| matches!(**b, ContentBlock::ToolResult { .. });
    // Mostly there is nothing to move: no result at all, or results already first with
    // no reminder after them.
    let leading = blocks.iter().take_while(|b| is_result(b)).count();
    if !blocks[leading..]
        .iter()
        .any(|b| is_result(b) || (leading > 0 && is_reminder(b)))
    {
        return;
    }
    let (mut results, rest): (Vec<Block<'_>>, Vec<Block<'_>>) = std::mem::take(blocks)
        .into_iter()
        .partition(|b| matches!(**b, ContentBlock::ToolResult { .. }));
    if results.is_empty() {
        *blocks = rest;
        return;
    }
    let (reminders, rest): (Vec<Block<'_>>, Vec<Block<'_>>) =
        rest.into_iter().partition(is_reminder);
    if !reminders.is_empty()
        && let Some(ContentBlock::ToolResult { content, .. }) =
            results.last_mut().map(Block::to_mut)
    {
        let mut inner = match std::mem::take(content) {
            ToolResultContent::Text(s) if s.trim().is_empty() => Vec::new(),
            ToolResultContent::Text(s) => vec![ToolResultBlock::Text {
                extra: Default::default(),
                text: s,
            }],
            ToolResultContent::Blocks(v) => v,
        };
        inner.extend(reminders.into_iter().filter_map(|b| match b.into_owned() {
            ContentBlock::Text { text, .. } => Some(ToolResultBlock::Text {
                extra: Default::default(),
                text,
            }),
            _ => None,
        }));
        *content = ToolResultContent::Blocks(inner);
    }
    results.extend(rest);
    *blocks = results;
}

pub(super) fn trim_trailing_thinking(msgs: &mut Vec<Msg<'_>>, repairs: &mut Vec<String>) {
    let Some(last) = msgs.last_mut() else {
        return;
    };
    if last.role != Role::Assistant {
        return;
    }
    let before = last.blocks.len();
    while last.blocks.last().is_some_and(|b| b.is_thinking()) {
        last.blocks.pop();
    }
    if last.blocks.len() < before {
        repairs.push(format!(
            "removed {} trailing thinking block(s) from the final assistant message",
            before - last.blocks.len()
        ));
    }
    // Hollow assistants were dropped earlier, so this cannot empty the message; stay total
    // anyway. Such a message had no tool_use, so nothing loses its pairing.
    if last.blocks.is_empty() {
        msgs.pop();
    }
}
