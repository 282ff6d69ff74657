//! Stage 2 of normalising: one provider response becomes one assistant message,
//! consecutive user content merges, attachments wait until the open response's tool
//! results are in.

use ctxd_protocol::ContentBlock;

use super::*;

pub(super) struct Msg<'a> {
    pub(super) role: Role,
    /// For assistant messages: the provider id of the response merged in last.
    pub(super) message_id: Option<&'a str>,
    pub(super) blocks: Vec<Block<'a>>,
}

fn is_results_only(blocks: &[Block<'_>]) -> bool {
    !blocks.is_empty()
        && blocks
            .iter()
            .all(|b| matches!(**b, ContentBlock::ToolResult { .. }))
}

/// The assistant message a part of response `id` belongs to: the last message, or the one
/// before a user message that so far holds only tool results (parallel tool calls are
/// written as use, result, use, result under one id).
fn split_target(out: &[Msg<'_>], id: Option<&str>) -> Option<usize> {
    let id = id?;
    let last = out.len().checked_sub(1)?;
    let candidate = match out[last].role {
        Role::Assistant => last,
        Role::User if is_results_only(&out[last].blocks) => last.checked_sub(1)?,
        Role::User => return None,
    };
    let m = &out[candidate];
    (m.role == Role::Assistant && m.message_id == Some(id)).then_some(candidate)
}

fn push_user<'a>(out: &mut Vec<Msg<'a>>, blocks: Vec<Block<'a>>) {
    match out.last_mut() {
        Some(m) if m.role == Role::User => m.blocks.extend(blocks),
        _ => out.push(Msg {
            role: Role::User,
            message_id: None,
            blocks,
        }),
    }
}

/// `records`: how many records the parts come from, the most messages they can make.
pub(super) fn assemble<'a>(
    parts: impl Iterator<Item = Part<'a>>,
    records: usize,
    repairs: &mut Vec<String>,
) -> Vec<Msg<'a>> {
    let mut out: Vec<Msg<'a>> = Vec::with_capacity(records);
    // Attachments that arrived while a response was still open (its tool results, or more
    // of its parts, may follow): emitting them at once could split a tool_use from its
    // result or a response from its own continuation.
    let mut held: Vec<Block<'a>> = Vec::new();
    let mut open = false;
    for part in parts {
        match part.kind {
            PartKind::Attachment if open => held.extend(part.blocks),
            PartKind::Attachment => push_user(&mut out, part.blocks),
            PartKind::ToolResults => push_user(&mut out, part.blocks),
            PartKind::User => {
                if !held.is_empty() {
                    push_user(&mut out, std::mem::take(&mut held));
                }
                open = false;
                push_user(&mut out, part.blocks);
            }
            PartKind::Assistant => {
                if let Some(i) = split_target(&out, part.message_id) {
                    out[i].blocks.extend(part.blocks);
                    continue;
                }
                if !held.is_empty() {
                    push_user(&mut out, std::mem::take(&mut held));
                }
                open = true;
                match out.last_mut() {
                    Some(m) if m.role == Role::Assistant => {
                        repairs.push(format!(
                            "merged consecutive assistant messages with different message ids ({} then {})",
                            id_name(m.message_id),
                            id_name(part.message_id)
                        ));
                        m.blocks.extend(part.blocks);
                        m.message_id = part.message_id;
                    }
                    _ => out.push(Msg {
                        role: Role::Assistant,
                        message_id: part.message_id,
                        blocks: part.blocks,
                    }),
                }
            }
        }
    }
    if !held.is_empty() {
        push_user(&mut out, held);
    }
    out
}

pub(super) fn id_name(id: Option<&str>) -> &str {
    id.unwrap_or("<none>")
}
