//! Turns the projection into a legal Messages API `messages` array.
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

use std::collections::BTreeSet;

use ctxd_protocol::{ContentBlock, Record};
use sha2::{Digest, Sha256};

use super::message::{ApiMessage, Block, Role};

pub struct NormalizeOptions<'a> {
    pub supports_thinking: bool,
    /// (record uuid, block index) of media the provider refused.
    pub rejected_media: &'a BTreeSet<(String, u32)>,
    /// Append `[id:xxxxxx]` short ids to user messages (snip).
    pub short_ids: bool,
    /// The transcript the records are borrowed from, when they are: its blocks passed on
    /// unchanged carry their [`Source`](super::message::Source).
    pub transcript: Option<TranscriptRef<'a>>,
}

/// A transcript's records and lineage, and what normalising knows of each record from
/// when the transcript took it in ([`RecordFacts`]; empty when not kept).
pub struct TranscriptRef<'a> {
    pub(crate) lineage: super::message::Lineage,
    pub(crate) records: &'a [Record],
    pub(crate) facts: &'a [RecordFacts],
}

/// What normalising needs to know of a record, found once as the transcript takes it in
/// ([`RecordFacts::of`]): both depend on the record alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordFacts {
    /// Every block passes on as it is ([`passes_whole`]).
    pub(crate) whole: bool,
    /// Known whole, and a user record of tool results only: the part continues the open
    /// response. Kept so that a compile need not look at the blocks to know.
    pub(crate) results_only: bool,
    /// An attachment's reminder block, rendered; `None` for other records and for an
    /// attachment with nothing to say.
    pub(crate) reminder: Option<Box<ContentBlock>>,
    /// For a typed user message known whole: its block carrying the short id
    /// ([`Tagged`]). Worked out by the first compile that shows short ids (snip), not as
    /// the record comes in: most sessions never show them.
    pub(crate) tagged: std::sync::OnceLock<Option<Box<Tagged>>>,
}

impl RecordFacts {
    pub fn of(record: &Record) -> RecordFacts {
        let whole = passes_whole(record);
        RecordFacts {
            whole,
            results_only: whole
                && record.kind == ctxd_protocol::RecordKind::User
                && results_only(&record.content),
            reminder: reminder(record).map(Box::new),
            tagged: std::sync::OnceLock::new(),
        }
    }
}

impl<'a> NormalizeOptions<'a> {
    /// What is known of the transcript's record at `position`, when it is kept.
    fn facts(&self, position: u32) -> Option<&'a RecordFacts> {
        let t = self.transcript.as_ref()?;
        t.facts.get(usize::try_from(position).ok()?)
    }
}

/// The messages borrow every block they pass on unchanged from the records.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalized<'a> {
    pub(crate) messages: Vec<ApiMessage<Block<'a>>>,
    /// One human-readable line per repair, in the order they were made.
    pub(crate) repairs: Vec<String>,
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

/// Six base-36 characters derived from the uuid. The model quotes these back to name
/// ranges, so the derivation must never change.
pub(crate) fn short_id(uuid: &str) -> String {
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
    opts: &NormalizeOptions<'a>,
) -> Normalized<'a> {
    let mut repairs = Vec::new();
    // The parts stream into assembly instead of being collected first: a vector of one
    // part per record would be the compile's largest allocation after the body. The
    // assembly's repairs still follow every part's, in the order they were made.
    let mut assembly_repairs = Vec::new();
    let parts = records
        .iter()
        .map(std::borrow::Borrow::borrow)
        .filter_map(|r| prepare(r, opts, &mut repairs));
    let mut msgs = assemble(parts, records.len(), &mut assembly_repairs);
    repairs.append(&mut assembly_repairs);
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

mod assembly;
mod layout;
mod parts;
mod repairs;

use assembly::*;
use layout::*;
use parts::*;
pub(crate) use parts::{Tagged, passes_whole, reminder};
use repairs::*;

#[cfg(test)]
mod tests;
