//! Turns the projection into a legal Messages API `messages` array (SPEC §3.4).
//!
//! Stages, in order:
//! 1. per record: drop what is never sent, strip blocks the role may not carry, replace
//!    refused media, drop thinking the model cannot read, drop blank text, add short ids;
//! 2. assembly: one provider response becomes one assistant message, consecutive user
//!    content merges, attachments wait until the open response's tool results are in;
//! 3. message repairs: duplicate tool_use ids, thinking-only assistants, tool_use /
//!    tool_result pairing, and re-merging neighbours of messages that became empty;
//! 4. layout: tool results first, `<system-reminder>` siblings folded into the last
//!    result, no trailing thinking on the final assistant message.
//!
//! Every stage is total and order-preserving, so the same records always yield the same
//! messages (the compiled request must be byte-identical across restarts).

use std::collections::{BTreeSet, HashSet};

use ctxd_protocol::{ContentBlock, Record, RecordKind, ToolResultBlock, ToolResultContent};
use sha2::{Digest, Sha256};

use super::attachments;
use super::message::{ApiMessage, Block, BlockMut, REMINDER_OPEN, Role, system_reminder};

pub struct NormalizeOptions<'a> {
    pub supports_thinking: bool,
    /// (record uuid, block index) of media the provider refused.
    pub rejected_media: &'a BTreeSet<(String, u32)>,
    /// Append "[id:xxxxxx]" short ids to user messages (snip).
    pub short_ids: bool,
}

/// The messages borrow every block they pass on unchanged from the records.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalized<'a> {
    pub messages: Vec<ApiMessage<Block<'a>>>,
    /// One human-readable line per repair, in the order they were made.
    pub repairs: Vec<String>,
}

impl Normalized<'_> {
    /// The messages with blocks of their own, for a caller that keeps them past the
    /// records.
    pub fn into_owned_messages(self) -> Vec<ApiMessage> {
        self.messages
            .into_iter()
            .map(ApiMessage::into_owned)
            .collect()
    }
}

const MISSING_RESULT: &str =
    "[Tool result missing: the tool call was interrupted before it returned]";

fn rejected_note(kind: &str) -> String {
    format!("[{kind} removed: the provider rejected it]")
}

/// Six base-36 characters derived from the uuid. The model quotes these back to name
/// ranges, so the derivation must never change.
pub fn short_id(uuid: &str) -> String {
    const ALPHABET: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let digest = Sha256::digest(uuid.as_bytes());
    let mut n = digest
        .iter()
        .take(8)
        .fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
    let mut out = [b'0'; 6];
    for slot in out.iter_mut().rev() {
        // `n % 36` is below 36, so the index is always in range.
        *slot = ALPHABET[(n % 36) as usize];
        n /= 36;
    }
    out.iter().map(|&b| char::from(b)).collect()
}

/// Generic over borrowed or owned records so the caller's projection (which borrows
/// every record it does not rewrite) is never copied.
pub fn normalize<'a, R: std::borrow::Borrow<Record>>(
    records: &'a [R],
    opts: &NormalizeOptions,
) -> Normalized<'a> {
    let mut repairs = Vec::new();
    let parts: Vec<Part> = records
        .iter()
        .map(std::borrow::Borrow::borrow)
        .filter_map(|r| prepare(r, opts, &mut repairs))
        .collect();
    let mut msgs = assemble(parts, &mut repairs);
    drop_duplicate_tool_uses(&mut msgs, &mut repairs);
    drop_hollow_assistants(&mut msgs, &mut repairs);
    coalesce(&mut msgs, &mut repairs);
    pair_tool_results(&mut msgs, &mut repairs);
    // Only user messages holding nothing but orphan results can empty here; the
    // assistant before such a message had no tool_use, so re-merging cannot unpair.
    coalesce(&mut msgs, &mut repairs);
    for m in &mut msgs {
        if m.role == Role::User {
            layout_user(&mut m.blocks);
        }
    }
    trim_trailing_thinking(&mut msgs, &mut repairs);
    if msgs.first().is_some_and(|m| m.role == Role::Assistant) {
        repairs.push(
            "messages start with an assistant message; the caller's user context must precede it"
                .into(),
        );
    }
    Normalized {
        messages: msgs
            .into_iter()
            .map(|m| ApiMessage {
                role: m.role,
                content: m.blocks,
            })
            .collect(),
        repairs,
    }
}

// ---------------------------------------------------------------------------------------
// Stage 1: records to parts

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PartKind {
    Attachment,
    /// A user record holding only tool results: it continues the open response.
    ToolResults,
    User,
    Assistant,
}

struct Part<'a> {
    kind: PartKind,
    message_id: Option<&'a str>,
    blocks: Vec<Block<'a>>,
}

fn prepare<'a>(
    record: &'a Record,
    opts: &NormalizeOptions,
    repairs: &mut Vec<String>,
) -> Option<Part<'a>> {
    if record.is_virtual || record.is_sidechain {
        return None;
    }
    let role = match record.kind {
        RecordKind::System => return None,
        RecordKind::Attachment => {
            let text = attachments::render(record)?;
            let mut blocks = vec![Block::new(ContentBlock::text(system_reminder(&text)))];
            // Images queued with input follow its text (unless the provider refused them).
            for (index, block) in record.content.iter().enumerate() {
                if !matches!(block, ContentBlock::Image { .. }) {
                    continue;
                }
                let refused = refused(opts, record, index);
                blocks.push(if refused {
                    Block::new(strip_rejected(block.clone(), &record.uuid, index, repairs))
                } else {
                    Block::Kept(block)
                });
            }
            return Some(Part {
                kind: PartKind::Attachment,
                message_id: None,
                blocks,
            });
        }
        RecordKind::User => Role::User,
        RecordKind::Assistant => Role::Assistant,
    };

    let mut blocks = Vec::with_capacity(record.content.len());
    let mut thinking_dropped = 0usize;
    let mut blank_dropped = 0usize;
    for (index, block) in record.content.iter().enumerate() {
        if !allowed(role, block) {
            repairs.push(format!(
                "dropped {} block {index} of record {}: not allowed in {} messages",
                block.type_name(),
                record.uuid,
                role_name(role)
            ));
            continue;
        }
        if block.is_thinking() && !opts.supports_thinking {
            thinking_dropped += 1;
            continue;
        }
        let mut block = Block::Kept(block);
        if block.cache_control().is_some()
            && let Some(slot) = block.to_mut().cache_control_mut()
        {
            *slot = None;
        }
        let may_hold_media = matches!(
            *block,
            ContentBlock::Image { .. }
                | ContentBlock::Document { .. }
                | ContentBlock::ToolResult { .. }
        );
        let rejected = may_hold_media && refused(opts, record, index);
        if rejected {
            block = Block::new(strip_rejected(
                block.into_owned(),
                &record.uuid,
                index,
                repairs,
            ));
        }
        match &*block {
            ContentBlock::Text { text, .. } if text.trim().is_empty() => {
                blank_dropped += 1;
                continue;
            }
            ContentBlock::ToolResult {
                content: ToolResultContent::Blocks(inner),
                ..
            } if inner.iter().any(is_blank_result_text) => {
                if let ContentBlock::ToolResult {
                    content: ToolResultContent::Blocks(inner),
                    ..
                } = block.to_mut()
                {
                    let before = inner.len();
                    inner.retain(|b| !is_blank_result_text(b));
                    blank_dropped += before - inner.len();
                }
            }
            _ => {}
        }
        blocks.push(block);
    }
    if thinking_dropped > 0 {
        repairs.push(format!(
            "dropped {thinking_dropped} thinking block(s) of record {}: the model does not support thinking",
            record.uuid
        ));
    }
    if blank_dropped > 0 {
        repairs.push(format!(
            "dropped {blank_dropped} empty text block(s) of record {}",
            record.uuid
        ));
    }
    if blocks.is_empty() {
        return None;
    }

    let results_only = blocks
        .iter()
        .all(|b| matches!(**b, ContentBlock::ToolResult { .. }));
    let kind = match role {
        Role::Assistant => PartKind::Assistant,
        Role::User if results_only => PartKind::ToolResults,
        Role::User => PartKind::User,
    };
    // Only what a person typed gets an id: those are the ranges snip lets the model name.
    if opts.short_ids && kind == PartKind::User && !record.is_meta && !record.is_compact_summary {
        append_short_id(&mut blocks, &record.uuid);
    }
    Some(Part {
        kind,
        message_id: record.message_id.as_deref(),
        blocks,
    })
}

/// Whether the provider refused the media of block `index` of `record`.
fn refused(opts: &NormalizeOptions, record: &Record, index: usize) -> bool {
    // The set is keyed by owned uuids; most sessions have none refused, so skip the copy.
    !opts.rejected_media.is_empty()
        && u32::try_from(index)
            .is_ok_and(|i| opts.rejected_media.contains(&(record.uuid.clone(), i)))
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

/// The block types the Messages API accepts from each role.
fn allowed(role: Role, block: &ContentBlock) -> bool {
    match block {
        ContentBlock::Text { .. } => true,
        ContentBlock::Image { .. }
        | ContentBlock::Document { .. }
        | ContentBlock::ToolResult { .. } => role == Role::User,
        ContentBlock::Thinking { .. }
        | ContentBlock::RedactedThinking { .. }
        | ContentBlock::ToolUse { .. } => role == Role::Assistant,
    }
}

fn is_blank_result_text(b: &ToolResultBlock) -> bool {
    matches!(b, ToolResultBlock::Text { text } if text.trim().is_empty())
}

fn strip_rejected(
    block: ContentBlock,
    uuid: &str,
    index: usize,
    repairs: &mut Vec<String>,
) -> ContentBlock {
    match block {
        ContentBlock::Image { .. } | ContentBlock::Document { .. } => {
            let kind = block.type_name();
            repairs.push(format!(
                "removed rejected {kind} (record {uuid}, block {index})"
            ));
            ContentBlock::text(rejected_note(kind))
        }
        ContentBlock::ToolResult {
            tool_use_id,
            content: ToolResultContent::Blocks(inner),
            is_error,
            cache_control,
            cache_reference,
        } => {
            let mut removed = 0usize;
            let inner = inner
                .into_iter()
                .map(|b| match b {
                    ToolResultBlock::Image { .. } => {
                        removed += 1;
                        ToolResultBlock::Text {
                            text: rejected_note("image"),
                        }
                    }
                    ToolResultBlock::Document { .. } => {
                        removed += 1;
                        ToolResultBlock::Text {
                            text: rejected_note("document"),
                        }
                    }
                    other => other,
                })
                .collect();
            if removed > 0 {
                repairs.push(format!(
                    "removed {removed} rejected media block(s) from tool_result {tool_use_id} (record {uuid}, block {index})"
                ));
            }
            ContentBlock::ToolResult {
                tool_use_id,
                content: ToolResultContent::Blocks(inner),
                is_error,
                cache_control,
                cache_reference,
            }
        }
        other => other,
    }
}

fn append_short_id(blocks: &mut Vec<Block<'_>>, uuid: &str) {
    let tag = format!("[id:{}]", short_id(uuid));
    // A reminder is not what the user typed, and one beside tool results is folded away
    // into the result, which would carry the id off with it.
    let last_text = blocks.iter().rposition(
        |b| matches!(&**b, ContentBlock::Text { text, .. } if !text.starts_with(REMINDER_OPEN)),
    );
    match last_text.map(|i| blocks[i].to_mut()) {
        Some(ContentBlock::Text { text, .. }) => {
            text.push('\n');
            text.push_str(&tag);
        }
        _ => blocks.push(Block::new(ContentBlock::text(tag))),
    }
}

// ---------------------------------------------------------------------------------------
// Stage 2: assembly

struct Msg<'a> {
    role: Role,
    /// For assistant messages: the provider id of the response merged in last.
    message_id: Option<&'a str>,
    blocks: Vec<Block<'a>>,
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

fn assemble<'a>(parts: Vec<Part<'a>>, repairs: &mut Vec<String>) -> Vec<Msg<'a>> {
    let mut out: Vec<Msg<'a>> = Vec::new();
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

fn id_name(id: Option<&str>) -> &str {
    id.unwrap_or("<none>")
}

// ---------------------------------------------------------------------------------------
// Stage 3: message repairs

fn drop_duplicate_tool_uses(msgs: &mut [Msg<'_>], repairs: &mut Vec<String>) {
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
fn drop_hollow_assistants(msgs: &mut Vec<Msg<'_>>, repairs: &mut Vec<String>) {
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
fn coalesce(msgs: &mut Vec<Msg<'_>>, repairs: &mut Vec<String>) {
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

fn tool_use_ids<B: BlockMut>(blocks: &[B]) -> Vec<&str> {
    blocks
        .iter()
        .filter_map(|b| b.block().tool_use_id())
        .collect()
}

/// Makes the user message after each assistant message carry exactly one result per
/// tool_use, and no other results. Expects alternating roles.
fn pair_tool_results(msgs: &mut Vec<Msg<'_>>, repairs: &mut Vec<String>) {
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

// ---------------------------------------------------------------------------------------
// Stage 4: layout

fn is_reminder<B: BlockMut>(b: &B) -> bool {
    matches!(b.block(), ContentBlock::Text { text, .. } if text.starts_with(REMINDER_OPEN))
}

/// Tool results first (the API wants them at the head of the turn), then the rest.
/// Reminders beside results go inside the last result so they add no turn boundary.
fn layout_user(blocks: &mut Vec<Block<'_>>) {
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
            ToolResultContent::Text(s) => vec![ToolResultBlock::Text { text: s }],
            ToolResultContent::Blocks(v) => v,
        };
        inner.extend(reminders.into_iter().filter_map(|b| match b.into_owned() {
            ContentBlock::Text { text, .. } => Some(ToolResultBlock::Text { text }),
            _ => None,
        }));
        *content = ToolResultContent::Blocks(inner);
    }
    results.extend(rest);
    *blocks = results;
}

fn trim_trailing_thinking(msgs: &mut Vec<Msg<'_>>, repairs: &mut Vec<String>) {
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

#[cfg(test)]
#[path = "normalize_tests.rs"]
mod tests;
