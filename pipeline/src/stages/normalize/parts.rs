//! Stage 1 of normalising, per record: drop what is never sent, strip blocks the role
//! may not carry, replace refused media, drop thinking the model cannot read, drop blank
//! text, add short ids.

use ctxd_protocol::{ContentBlock, RecordKind, ToolResultBlock, ToolResultContent};

use super::*;
use crate::attachments;
use crate::message::{Lineage, REMINDER_OPEN, Source, system_reminder};

pub(super) fn rejected_note(kind: &str) -> String {
    format!("[{kind} removed: the provider rejected it]")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PartKind {
    Attachment,
    /// A user record holding only tool results: it continues the open response.
    ToolResults,
    User,
    Assistant,
}

pub(super) struct Part<'a> {
    pub(super) kind: PartKind,
    pub(super) message_id: Option<&'a str>,
    pub(super) blocks: Vec<Block<'a>>,
}

pub(super) fn prepare<'a>(
    record: &'a Record,
    opts: &NormalizeOptions<'a>,
    repairs: &mut Vec<String>,
) -> Option<Part<'a>> {
    if record.is_virtual || record.is_sidechain {
        return None;
    }
    let role = match record.kind {
        RecordKind::System => return None,
        RecordKind::Attachment => return attachment_part(record, opts, repairs),
        RecordKind::User => Role::User,
        RecordKind::Assistant => Role::Assistant,
    };

    let at = transcript_position(opts, record);
    let whole = at
        .and_then(|(_, i)| opts.facts(i))
        .filter(|f| f.whole && opts.rejected_media.is_empty());
    let Some(facts) = whole else {
        let blocks = sendable_blocks(record, role, at, opts, repairs);
        if blocks.is_empty() {
            return None;
        }
        let kind = kind_of(role, results_only(blocks.iter().map(|b| &**b)));
        return Some(part(record, kind, blocks, opts, false));
    };
    // Known, from when the transcript took the record in, to pass on whole: nothing to
    // look at in its blocks, and the short id, when shown, is already added.
    let tagged = if opts.short_ids {
        facts
            .tagged
            .get_or_init(|| short_id_block(record).map(Box::new))
            .as_deref()
    } else {
        None
    };
    let mut blocks: Vec<Block<'a>> = record
        .content
        .iter()
        .enumerate()
        .map(|(index, b)| match tagged {
            Some(t) if t.at as usize == index => Block::of_record(&t.block, tag_source(at)),
            _ => Block::of_record(b, source(at, index)),
        })
        .collect();
    if let Some(t) = tagged.filter(|t| t.at as usize == record.content.len()) {
        blocks.push(Block::of_record(&t.block, tag_source(at)));
    }
    if blocks.is_empty() {
        return None;
    }
    let kind = kind_of(role, facts.results_only);
    Some(part(record, kind, blocks, opts, tagged.is_some()))
}

/// A typed user message's block that carries its short id (`[id:xxxxxx]`, for snip),
/// worked out by the first compile that shows ids and kept with the record's other
/// facts: a record known whole is then shown with its id without a digest and a copy of
/// its text on every compile.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tagged {
    /// The index of the record's block the id is added to, or the number of its blocks
    /// when the id is a block of its own after them.
    pub(crate) at: u32,
    pub(crate) block: ContentBlock,
}

/// The short id `part` would add to `record`'s blocks, passed on whole: `None` when it
/// would add none.
fn short_id_block(record: &Record) -> Option<Tagged> {
    let blocks: Vec<Block<'_>> = record
        .content
        .iter()
        .map(|b| Block::of_record(b, None))
        .collect();
    let opts = NormalizeOptions {
        supports_thinking: true,
        rejected_media: &BTreeSet::new(),
        short_ids: true,
        transcript: None,
    };
    let role = match record.kind {
        RecordKind::User => Role::User,
        _ => return None,
    };
    let kind = kind_of(role, results_only(&record.content));
    let shown = part(record, kind, blocks, &opts, false).blocks;
    let changed = shown
        .iter()
        .zip(&record.content)
        .position(|(b, own)| !std::ptr::eq(&**b, own))
        .or((shown.len() > record.content.len()).then_some(record.content.len()))?;
    Some(Tagged {
        at: u32::try_from(changed).ok()?,
        block: shown.into_iter().nth(changed)?.into_owned(),
    })
}

/// Whether normalising passes every block of `record` on as it is, whatever its options
/// but refused media: a user or assistant record whose blocks `sendable_blocks` keeps
/// every one, each the record's own (nothing dropped or changed, so nothing repaired),
/// even for a model without thinking. Asked once per record, as the transcript takes it
/// in; `prepare` then skips looking at its blocks.
pub(crate) fn passes_whole(record: &Record) -> bool {
    let role = match record.kind {
        RecordKind::User => Role::User,
        RecordKind::Assistant => Role::Assistant,
        RecordKind::System | RecordKind::Attachment => return false,
    };
    if record.is_virtual || record.is_sidechain {
        return false;
    }
    let strictest = NormalizeOptions {
        supports_thinking: false,
        rejected_media: &BTreeSet::new(),
        short_ids: false,
        transcript: None,
    };
    let blocks = sendable_blocks(record, role, None, &strictest, &mut Vec::new());
    blocks.len() == record.content.len()
        && blocks
            .iter()
            .zip(&record.content)
            .all(|(b, own)| std::ptr::eq(&**b, own))
}

/// The record's blocks as they may be sent (stage 1, block by block), with a repair
/// line for each kind of block dropped.
fn sendable_blocks<'a>(
    record: &'a Record,
    role: Role,
    at: Option<(Lineage, u32)>,
    opts: &NormalizeOptions,
    repairs: &mut Vec<String>,
) -> Vec<Block<'a>> {
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
        let block = sendable(record, (index, at), block, opts, repairs);
        match drop_blank(block) {
            (Some(block), blanks) => {
                blank_dropped += blanks;
                blocks.push(block);
            }
            (None, blanks) => blank_dropped += blanks,
        }
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
    blocks
}

/// The record's part of `kind` ([`kind_of`]), of the blocks it sends (`tagged`: they
/// already carry the record's short id).
fn part<'a>(
    record: &'a Record,
    kind: PartKind,
    mut blocks: Vec<Block<'a>>,
    opts: &NormalizeOptions,
    tagged: bool,
) -> Part<'a> {
    // Only what a person typed gets an id: those are the ranges snip lets the model name.
    if opts.short_ids
        && !tagged
        && kind == PartKind::User
        && !record.is_meta
        && !record.is_compact_summary
    {
        append_short_id(&mut blocks, &record.uuid);
    }
    Part {
        kind,
        message_id: record.message_id.as_deref(),
        blocks,
    }
}

/// The kind of part a message of `role` makes: a user message of nothing but tool
/// results continues the open response.
fn kind_of(role: Role, results_only: bool) -> PartKind {
    match role {
        Role::Assistant => PartKind::Assistant,
        Role::User if results_only => PartKind::ToolResults,
        Role::User => PartKind::User,
    }
}

/// Whether every block is a tool result (true of none).
pub(super) fn results_only<'b>(blocks: impl IntoIterator<Item = &'b ContentBlock>) -> bool {
    blocks
        .into_iter()
        .all(|b| matches!(b, ContentBlock::ToolResult { .. }))
}

/// An attachment's part: its rendered text as a reminder, then the images queued with it
/// (unless the provider refused them).
fn attachment_part<'a>(
    record: &'a Record,
    opts: &NormalizeOptions<'a>,
    repairs: &mut Vec<String>,
) -> Option<Part<'a>> {
    let at = transcript_position(opts, record);
    // Rendered once, as the transcript took the record in, when it is the transcript's.
    let shown = match at.and_then(|(_, i)| opts.facts(i)) {
        Some(facts) => Block::of_record(facts.reminder.as_deref()?, reminder_source(at)),
        None => Block::new(reminder(record)?),
    };
    let mut blocks = vec![shown];
    for (index, block) in record.content.iter().enumerate() {
        if !matches!(block, ContentBlock::Image { .. }) {
            continue;
        }
        blocks.push(if refused(opts, record, index) {
            Block::new(strip_rejected(block.clone(), &record.uuid, index, repairs))
        } else {
            Block::of_record(block, source(at, index))
        });
    }
    Some(Part {
        kind: PartKind::Attachment,
        message_id: None,
        blocks,
    })
}

/// The block as it may be sent: without the record's own cache marker (the compile
/// places the markers) or what only a response may hold (an SDK dump's nulls), refused
/// media replaced by a note.
fn sendable<'a>(
    record: &Record,
    (index, at): (usize, Option<(Lineage, u32)>),
    block: &'a ContentBlock,
    opts: &NormalizeOptions,
    repairs: &mut Vec<String>,
) -> Block<'a> {
    let mut block = Block::of_record(block, source(at, index));
    if block.cache_control().is_some()
        && let Some(slot) = block.to_mut().cache_control_mut()
    {
        *slot = None;
    }
    if !block.is_request_form() {
        block.to_mut().to_request_form();
    }
    let may_hold_media = matches!(
        *block,
        ContentBlock::Image { .. }
            | ContentBlock::Document { .. }
            | ContentBlock::ToolResult { .. }
    );
    if may_hold_media && refused(opts, record, index) {
        block = Block::new(strip_rejected(
            block.into_owned(),
            &record.uuid,
            index,
            repairs,
        ));
    }
    block
}

/// Blank text dropped: the block itself when it is blank text (`None`), else the blank
/// text blocks inside a tool result; with how many were dropped.
fn drop_blank(mut block: Block<'_>) -> (Option<Block<'_>>, usize) {
    match &*block {
        ContentBlock::Text { text, .. } if is_blank(text) => (None, 1),
        ContentBlock::ToolResult {
            content: ToolResultContent::Blocks(inner),
            ..
        } if inner.iter().any(is_blank_result_text) => {
            let mut dropped = 0;
            if let ContentBlock::ToolResult {
                content: ToolResultContent::Blocks(inner),
                ..
            } = block.to_mut()
            {
                let before = inner.len();
                inner.retain(|b| !is_blank_result_text(b));
                dropped = before - inner.len();
            }
            (Some(block), dropped)
        }
        _ => (Some(block), 0),
    }
}

/// Whether `record` is the transcript's own, and where: its lineage and position.
fn transcript_position(opts: &NormalizeOptions, record: &Record) -> Option<(Lineage, u32)> {
    let t = opts.transcript.as_ref()?;
    // The projection borrows the transcript's records and a stage's copies live
    // elsewhere, so the address tells which one this is.
    let offset = std::ptr::from_ref(record)
        .addr()
        .checked_sub(t.records.as_ptr().addr())?;
    let i = offset / std::mem::size_of::<Record>();
    let own = t.records.get(i).is_some_and(|r| std::ptr::eq(r, record));
    Some((t.lineage, u32::try_from(i).ok().filter(|_| own)?))
}

/// An attachment's reminder block: its rendered text as a `<system-reminder>`; `None`
/// when the record is no attachment or has nothing to say.
pub(crate) fn reminder(record: &Record) -> Option<ContentBlock> {
    if record.kind != RecordKind::Attachment {
        return None;
    }
    let text = attachments::render(record)?;
    Some(ContentBlock::text(system_reminder(&text)))
}

/// Where an attachment's rendered reminder is: past every index of the record's blocks.
fn reminder_source(at: Option<(Lineage, u32)>) -> Option<Source> {
    let (lineage, record) = at?;
    Some(Source {
        lineage,
        record,
        block: u32::MAX,
    })
}

/// The source of a record's block that carries its short id: below the reminder's, past
/// any block index.
fn tag_source(at: Option<(Lineage, u32)>) -> Option<Source> {
    let (lineage, record) = at?;
    Some(Source {
        lineage,
        record,
        block: u32::MAX - 1,
    })
}

fn source(at: Option<(Lineage, u32)>, index: usize) -> Option<Source> {
    let (lineage, record) = at?;
    Some(Source {
        lineage,
        record,
        block: u32::try_from(index).ok()?,
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
pub(super) fn allowed(role: Role, block: &ContentBlock) -> bool {
    match block {
        ContentBlock::Text { .. } => true,
        ContentBlock::Image { .. }
        | ContentBlock::Document { .. }
        | ContentBlock::ToolResult { .. } => role == Role::User,
        ContentBlock::Thinking { .. }
        | ContentBlock::RedactedThinking { .. }
        | ContentBlock::ToolUse { .. } => role == Role::Assistant,
        // ctxd does not know which role may send it: the provider decides.
        ContentBlock::Other(_) => true,
    }
}

pub(super) fn is_blank_result_text(b: &ToolResultBlock) -> bool {
    matches!(b, ToolResultBlock::Text { text , .. } if is_blank(text))
}

/// `text.trim().is_empty()`, looking from the start only: every text block of every
/// compile is asked, and almost all of them answer at their first character.
fn is_blank(text: &str) -> bool {
    text.chars().all(char::is_whitespace)
}

fn strip_rejected(
    mut block: ContentBlock,
    uuid: &str,
    index: usize,
    repairs: &mut Vec<String>,
) -> ContentBlock {
    match &mut block {
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
            ..
        } => {
            let mut removed = 0usize;
            for b in inner.iter_mut() {
                let kind = match b {
                    ToolResultBlock::Image { .. } => "image",
                    ToolResultBlock::Document { .. } => "document",
                    _ => continue,
                };
                *b = ToolResultBlock::Text {
                    extra: Default::default(),
                    text: rejected_note(kind),
                };
                removed += 1;
            }
            if removed > 0 {
                repairs.push(format!(
                    "removed {removed} rejected media block(s) from tool_result {tool_use_id} (record {uuid}, block {index})"
                ));
            }
            block
        }
        _ => block,
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
