//! Normalising's tests. Here, the builders and the legality check they share; the rules
//! one by one in `rules`, whole transcripts as Claude Code writes them in `combined`,
//! random transcripts in `property`, where unchanged blocks come from in `sources`.

use std::collections::HashSet;

use super::*;
use crate::attachments;
use crate::message::{REMINDER_OPEN, system_reminder};
use ctxd_protocol::{
    CacheControl, ContentBlock, MediaSource, RecordKind, ToolResultBlock, ToolResultContent,
};
use serde_json::{Value, json};

// ---- builders -----------------------------------------------------------------

fn rec(kind: RecordKind, uuid: &str, content: Vec<ContentBlock>) -> Record {
    Record::new(kind, uuid, "2025-01-01T00:00:00Z", content)
}
fn user(uuid: &str, content: Vec<ContentBlock>) -> Record {
    rec(RecordKind::User, uuid, content)
}
fn asst(uuid: &str, mid: &str, content: Vec<ContentBlock>) -> Record {
    let mut r = rec(RecordKind::Assistant, uuid, content);
    r.message_id = Some(mid.into());
    r
}
fn att(uuid: &str, v: Value) -> Record {
    let mut r = rec(RecordKind::Attachment, uuid, vec![]);
    r.is_meta = true;
    r.attachment = Some(v);
    r
}
fn note(uuid: &str, text: &str) -> Record {
    att(uuid, json!({"type": "note", "content": text}))
}
fn text(s: &str) -> ContentBlock {
    ContentBlock::text(s)
}
fn tu(id: &str) -> ContentBlock {
    ContentBlock::ToolUse {
        extra: Default::default(),
        id: id.into(),
        name: "Read".into(),
        input: json!({}),
        cache_control: None,
    }
}
fn tr(id: &str, s: &str) -> ContentBlock {
    ContentBlock::ToolResult {
        extra: Default::default(),
        tool_use_id: id.into(),
        content: ToolResultContent::Text(s.into()),
        is_error: false,
        cache_control: None,
        cache_reference: None,
    }
}
/// A successful result of several blocks.
fn tr_blocks(id: &str, blocks: Vec<ToolResultBlock>) -> ContentBlock {
    ContentBlock::ToolResult {
        extra: Default::default(),
        tool_use_id: id.into(),
        content: ToolResultContent::Blocks(blocks),
        is_error: false,
        cache_control: None,
        cache_reference: None,
    }
}
/// Text carrying a cache marker of its record's own.
fn marked(s: &str) -> ContentBlock {
    let mut b = text(s);
    if let Some(slot) = b.cache_control_mut() {
        *slot = Some(CacheControl::ephemeral());
    }
    b
}
fn think(s: &str) -> ContentBlock {
    ContentBlock::Thinking {
        extra: Default::default(),
        thinking: s.into(),
        signature: "sig".into(),
    }
}
fn source() -> MediaSource {
    MediaSource::Base64 {
        extra: Default::default(),
        media_type: "image/png".into(),
        data: "AAAA".into(),
    }
}
fn image() -> ContentBlock {
    ContentBlock::Image {
        extra: Default::default(),
        source: source(),
        cache_control: None,
    }
}
fn reminder(s: &str) -> String {
    system_reminder(s)
}

/// A normalisation's result with blocks of its own, to compare with literals.
#[derive(Debug, Clone, PartialEq)]
struct Out {
    messages: Vec<ApiMessage>,
    repairs: Vec<String>,
}

fn run_with(
    records: &[Record],
    thinking: bool,
    short_ids: bool,
    rejected: &BTreeSet<(String, u32)>,
) -> Out {
    let out = normalize(
        records,
        &NormalizeOptions {
            supports_thinking: thinking,
            rejected_media: rejected,
            short_ids,
            transcript: None,
        },
    );
    let repairs = out.repairs.clone();
    let messages = out.into_owned_messages();
    assert_legal(&messages, thinking);
    Out { messages, repairs }
}
fn run(records: &[Record]) -> Out {
    run_with(records, true, false, &BTreeSet::new())
}
fn u(content: Vec<ContentBlock>) -> ApiMessage {
    ApiMessage::user(content)
}
fn a(content: Vec<ContentBlock>) -> ApiMessage {
    ApiMessage::assistant(content)
}
fn missing(id: &str) -> ContentBlock {
    ContentBlock::ToolResult {
        extra: Default::default(),
        tool_use_id: id.into(),
        content: ToolResultContent::Text(MISSING_RESULT.into()),
        is_error: true,
        cache_control: None,
        cache_reference: None,
    }
}

/// Everything the Messages API demands of `messages`, except the leading user turn,
/// which the caller provides.
fn assert_legal(msgs: &[ApiMessage], thinking: bool) {
    let mut all_uses: HashSet<String> = HashSet::new();
    for (i, m) in msgs.iter().enumerate() {
        assert!(!m.content.is_empty(), "empty message {i}: {msgs:#?}");
        if i > 0 {
            assert_ne!(
                msgs[i - 1].role,
                m.role,
                "roles do not alternate at {i}: {msgs:#?}"
            );
        }
        for b in &m.content {
            match b {
                ContentBlock::Text { text, .. } => {
                    assert!(!text.trim().is_empty(), "blank text in {i}: {msgs:#?}");
                }
                ContentBlock::ToolResult {
                    content: ToolResultContent::Blocks(inner),
                    ..
                } => assert!(!inner.iter().any(is_blank_result_text), "blank inner text"),
                _ => {}
            }
            let mut b = b.clone();
            if let Some(slot) = b.cache_control_mut() {
                assert!(slot.is_none(), "cache_control left on a block");
            }
            assert!(allowed(m.role, &b), "{} in {:?}", b.type_name(), m.role);
            assert!(thinking || !b.is_thinking(), "thinking without support");
        }
        match m.role {
            Role::Assistant => {
                assert!(
                    m.content.iter().any(|b| !b.is_thinking()),
                    "thinking-only assistant"
                );
                let uses = tool_use_ids(&m.content);
                for id in &uses {
                    assert!(all_uses.insert(id.to_string()), "duplicate tool_use {id}");
                }
                if !uses.is_empty() {
                    let next = msgs
                        .get(i + 1)
                        .expect("tool_use without a following message");
                    assert_eq!(next.role, Role::User);
                    for id in &uses {
                        let n = next
                            .content
                            .iter()
                            .filter(|b| matches!(b, ContentBlock::ToolResult { tool_use_id, .. } if tool_use_id == id))
                            .count();
                        assert_eq!(n, 1, "tool_use {id} has {n} results");
                    }
                }
                if i + 1 == msgs.len() {
                    assert!(
                        !m.content.last().is_some_and(ContentBlock::is_thinking),
                        "trailing thinking"
                    );
                }
            }
            Role::User => {
                let prev_uses = match i.checked_sub(1).map(|p| &msgs[p]) {
                    Some(p) if p.role == Role::Assistant => tool_use_ids(&p.content),
                    _ => Vec::new(),
                };
                let mut results_done = false;
                for b in &m.content {
                    match b {
                        ContentBlock::ToolResult { tool_use_id, .. } => {
                            assert!(!results_done, "tool_result after other content: {m:#?}");
                            assert!(
                                prev_uses.contains(&tool_use_id.as_str()),
                                "orphan result {tool_use_id}"
                            );
                        }
                        other => {
                            results_done = true;
                            let has_results = m
                                .content
                                .iter()
                                .any(|b| matches!(b, ContentBlock::ToolResult { .. }));
                            assert!(
                                !(has_results && is_reminder(other)),
                                "unfolded reminder beside results"
                            );
                        }
                    }
                }
            }
        }
    }
}

mod combined;
mod property;
mod rules;
mod sources;
