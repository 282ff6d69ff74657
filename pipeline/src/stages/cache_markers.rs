//! The message cache breakpoint: the last message's last block that may carry a marker
//! (not thinking, not kept verbatim: [`ContentBlock::takes_marker`]), else the nearest
//! such block before it; for a fire-and-forget side request the same from the
//! second-to-last message (so it does not extend the main conversation's cache chain).

use ctxd_protocol::{CacheControl, ContentBlock};

use super::message::{ApiMessage, BlockMut};
use super::system::SystemBlock;

/// Gives every cache marker of the request the session's latched TTL.
pub(crate) fn set_ttl<B: BlockMut>(
    system: &mut [SystemBlock],
    tools: &mut [serde_json::Value],
    messages: &mut [ApiMessage<B>],
    ttl: &str,
) {
    let set = |c: &mut CacheControl| c.ttl = Some(ttl.to_string());
    for b in system {
        if let Some(c) = &mut b.cache_control {
            set(c);
        }
    }
    for t in tools {
        if let Some(c) = t.get_mut("cache_control").and_then(|c| c.as_object_mut()) {
            c.insert("ttl".into(), serde_json::Value::String(ttl.to_string()));
        }
    }
    for m in messages {
        for b in &mut m.content {
            if b.block().cache_control().is_some()
                && let Some(Some(c)) = b.block_mut().cache_control_mut()
            {
                set(c);
            }
        }
    }
}

pub(crate) fn mark_messages<B: BlockMut>(messages: &mut [ApiMessage<B>], side_request: bool) {
    let n = messages.len();
    let target = if side_request {
        n.checked_sub(2)
    } else {
        n.checked_sub(1)
    };
    let Some(target) = target else { return };
    let Some(b) = messages[..=target]
        .iter_mut()
        .rev()
        .flat_map(|m| m.content.iter_mut().rev())
        .find(|b| b.block().takes_marker())
    else {
        return;
    };
    if let Some(slot) = b.block_mut().cache_control_mut() {
        *slot = Some(CacheControl::ephemeral());
    }
}

/// With cached microcompact on, every tool result up to the message breakpoint carries
/// `cache_reference = tool_use_id`, so a later `cache_edits` block can name it.
pub(crate) fn mark_cache_references<B: BlockMut>(
    messages: &mut [ApiMessage<B>],
    side_request: bool,
) {
    let n = messages.len();
    let upto = if side_request { n.saturating_sub(1) } else { n };
    for m in &mut messages[..upto] {
        for b in &mut m.content {
            if let ContentBlock::ToolResult {
                tool_use_id,
                cache_reference,
                ..
            } = b.block()
                && cache_reference.as_ref() != Some(tool_use_id)
                && let ContentBlock::ToolResult {
                    tool_use_id,
                    cache_reference,
                    ..
                } = b.block_mut()
            {
                *cache_reference = Some(tool_use_id.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxd_protocol::ContentBlock;

    #[test]
    fn skips_thinking_and_honours_side_requests() {
        let mut m = vec![
            ApiMessage::user(vec![ContentBlock::text("a")]),
            ApiMessage::assistant(vec![
                ContentBlock::text("b"),
                ContentBlock::Thinking {
                    extra: Default::default(),
                    thinking: "t".into(),
                    signature: "s".into(),
                },
            ]),
        ];
        mark_messages(&mut m, false);
        assert_eq!(
            m[1].content[0],
            ContentBlock::Text {
                extra: Default::default(),
                text: "b".into(),
                cache_control: Some(CacheControl::ephemeral())
            }
        );
        let mut m2 = m.clone();
        for msg in &mut m2 {
            for b in &mut msg.content {
                if let Some(s) = b.cache_control_mut() {
                    *s = None;
                }
            }
        }
        mark_messages(&mut m2, true);
        assert_eq!(
            m2[0].content[0],
            ContentBlock::Text {
                extra: Default::default(),
                text: "a".into(),
                cache_control: Some(CacheControl::ephemeral())
            }
        );
    }
}
