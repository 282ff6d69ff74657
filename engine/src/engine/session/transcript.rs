//! The transcript: the records of a session in memory, and every write that grows it.
//!
//! In memory it only grows at its end, shared copy-on-write, its projection advanced on
//! every append. In the store, `insert_batch` is the one way records are added (an
//! append, an attachment, a new history, a sub-agent's first turn): inside the caller's
//! write transaction, checked against the transcript's expected last record.

use std::sync::Arc;

use ctxd_pipeline::message::Lineage;
use ctxd_pipeline::projection::LiveProjection;
use ctxd_protocol::{Record, RecordInput, RecordKind};
use ctxd_store::error::{Error, Result};
use ctxd_store::{records, sessions};
use uuid::Uuid;

use crate::engine::Loaded;

/// A session's transcript in memory, shared copy-on-write (the attachment sources and a
/// long compile read a cheap copy while they run), with its projection kept up to date
/// as it grows.
#[derive(Clone)]
pub(crate) struct Transcript {
    records: Arc<Vec<Record>>,
    live: Arc<LiveProjection>,
    /// Names this sequence of records: two transcripts of one lineage hold the same
    /// record at every position both have (see [`Transcript::lineage`]).
    lineage: Lineage,
}

impl Default for Transcript {
    fn default() -> Transcript {
        Transcript::new(Vec::new())
    }
}

impl Transcript {
    pub fn new(records: Vec<Record>) -> Transcript {
        let live = Arc::new(LiveProjection::new(
            &records,
            ctxd_pipeline::attachments::render,
        ));
        Transcript {
            records: Arc::new(records),
            live,
            lineage: Lineage::fresh(),
        }
    }

    /// Appends; copies the records first only while a copy still shares them.
    pub(crate) fn extend(&mut self, more: impl IntoIterator<Item = Record>) {
        if Arc::get_mut(&mut self.records).is_none() {
            // A copy shares these records and may grow its own way: from here on the two
            // are different sequences.
            self.lineage = Lineage::fresh();
        }
        let records = Arc::make_mut(&mut self.records);
        records.extend(more);
        Arc::make_mut(&mut self.live).advance(records, ctxd_pipeline::attachments::render);
    }

    /// The records only ever grow at their end, and a transcript that grows while a copy
    /// shares it takes a new lineage: within one lineage, a position always holds the same
    /// record. A compile uses it to know a block unchanged since the previous request
    /// without comparing it ([`ctxd_pipeline::message::Source`]).
    pub(crate) fn lineage(&self) -> Lineage {
        self.lineage
    }

    /// The projection (`pipeline::projection::project` of the records), without a scan
    /// of the history.
    pub(crate) fn view(&self) -> Vec<&Record> {
        self.live.view(&self.records)
    }

    /// Where the last compact boundary is, without a scan of the history.
    pub(crate) fn boundary(&self) -> usize {
        self.live.boundary()
    }

    /// Where the snip boundaries after the last compact boundary are, without a scan of
    /// the history.
    pub(crate) fn snip_boundaries(&self) -> &[usize] {
        self.live.snip_boundaries()
    }

    /// Per record, what normalising needs to know of it.
    pub(crate) fn facts(&self) -> &[ctxd_pipeline::normalize::RecordFacts] {
        self.live.facts()
    }

    /// How many records the projection holds.
    pub(crate) fn view_len(&self) -> usize {
        self.live.len()
    }

    /// `tokens::estimate` of the projection, with nothing before the messages.
    pub(crate) fn estimate(&self) -> ctxd_pipeline::tokens::Estimate {
        self.live.estimate()
    }

    /// The memories the projection surfaced already.
    pub(crate) fn surfaced(&self) -> &ctxd_pipeline::relevant_memories::Surfaced {
        self.live.surfaced()
    }
}

impl std::ops::Deref for Transcript {
    type Target = Vec<Record>;
    fn deref(&self) -> &Vec<Record> {
        &self.records
    }
}

impl<'a> IntoIterator for &'a Transcript {
    type Item = &'a Record;
    type IntoIter = std::slice::Iter<'a, Record>;
    fn into_iter(self) -> Self::IntoIter {
        self.records.iter()
    }
}

/// Turns validated inputs into stored records, continuing after `last`.
pub(crate) fn materialise(
    inputs: Vec<RecordInput>,
    last: Option<(u64, String)>,
    now: &str,
) -> Vec<Record> {
    let (mut seq, mut prev) = match last {
        Some((s, u)) => (s, Some(u)),
        None => (0, None),
    };
    let mut out = Vec::with_capacity(inputs.len());
    for r in inputs {
        seq += 1;
        let uuid = r.uuid.unwrap_or_else(|| Uuid::now_v7().to_string());
        let parent_uuid = r.parent_uuid.or(prev.clone());
        prev = Some(uuid.clone());
        out.push(Record {
            uuid,
            seq,
            parent_uuid,
            // validate_batch guarantees the kind is present.
            kind: r.kind.unwrap_or(RecordKind::User),
            timestamp: r.timestamp.unwrap_or_else(|| now.to_string()),
            content: r.content,
            message_id: r.message_id,
            message_extra: r.message_extra,
            model: r.model,
            stop_reason: r.stop_reason,
            usage: r.usage,
            foreign_usage: r.foreign_usage,
            is_meta: r.is_meta,
            is_virtual: r.is_virtual,
            is_sidechain: r.is_sidechain,
            is_compact_summary: r.is_compact_summary,
            subtype: r.subtype,
            attachment: r.attachment,
            data: r.data,
            meta: r.meta,
        });
    }
    out
}

/// What the engine's own appends expect the transcript to end with: the loaded copy's
/// last record. A copy that missed another daemon's append then fails the write
/// (`Conflict`) instead of building on a transcript that is not the stored one.
pub(crate) fn expect_last(l: &Loaded) -> Option<Option<String>> {
    Some(l.records.last().map(|r| r.uuid.clone()))
}

/// Inserts a batch after the transcript's last record, which must be `expected` when
/// that is given (`Conflict` otherwise). Runs inside a write transaction.
pub(crate) fn insert_batch(
    tx: &mut dyn ctxd_store::Db,
    sid: &str,
    inputs: Vec<RecordInput>,
    expected: Option<Option<String>>,
    now: &str,
) -> Result<Vec<Record>> {
    if !sessions::exists(tx, sid)? {
        return Err(Error::SessionNotFound(sid.to_string()));
    }
    let last = records::last(tx, sid)?;
    if let Some(expected) = expected {
        let actual = last.as_ref().map(|l| l.1.clone());
        if expected != actual {
            return Err(Error::Conflict {
                expected: expected.unwrap_or_else(|| "(empty transcript)".into()),
                actual: actual.unwrap_or_else(|| "(empty transcript)".into()),
            });
        }
    }
    // A uuid the session already holds fails its insert (the uuid index) with
    // `DuplicateRecord`, and the transaction writes nothing: no look-up per record first.
    let built = materialise(inputs, last, now);
    records::insert_all(tx, sid, &built)?;
    sessions::touch(tx, sid, now)?;
    Ok(built)
}
