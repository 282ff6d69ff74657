//! Transcript rows. Append-only: nothing here updates or deletes a single record.

use ctxd_protocol::Record;

use super::db::{Db, params};
use crate::error::{Error, Result};

/// `(seq, uuid)` of the last record, if any.
pub fn last(db: &mut dyn Db, session: &str) -> Result<Option<(u64, String)>> {
    db.query_opt(
        "SELECT seq, uuid FROM records WHERE session_id = ?1 ORDER BY seq DESC LIMIT 1",
        params![session],
    )?
    .map(|r| Ok((r.u64(0)?, r.text(1)?)))
    .transpose()
}

pub fn count(db: &mut dyn Db, session: &str) -> Result<u64> {
    db.query_one(
        "SELECT count(*) FROM records WHERE session_id = ?1",
        params![session],
    )?
    .u64(0)
}

pub fn seq_of(db: &mut dyn Db, session: &str, uuid: &str) -> Result<u64> {
    db.query_opt(
        "SELECT seq FROM records WHERE session_id = ?1 AND uuid = ?2",
        params![session, uuid],
    )?
    .map(|r| r.u64(0))
    .transpose()?
    .ok_or_else(|| Error::RecordNotFound(uuid.to_string()))
}

/// A record as its row: the columns looked up by, and the whole record as JSON. Made off
/// the store's writer (a caller with many records makes them in parallel), which then
/// only stores it.
pub struct Row {
    pub seq: u64,
    pub uuid: String,
    pub(crate) parent_uuid: Option<String>,
    pub(crate) kind: &'static str,
    pub(crate) timestamp: String,
    pub(crate) message_id: Option<String>,
    /// The record, canonically serialised.
    pub body: String,
}

impl Row {
    /// The record's row; what the row does not keep of it is freed here, on the caller's
    /// thread.
    pub fn of(r: Record) -> Result<Row> {
        let mut body = serde_json::to_string(&r)?;
        // The text grew by doubling, so up to half of it can be spare, and rows may be
        // held by the thousand (an import holds all of a session's until its write). An
        // allocator may keep a shrunk block in place, so the text is copied instead.
        if body.capacity() - body.len() > body.len() / 4 {
            body = body.as_str().to_owned();
        }
        Ok(Row {
            seq: r.seq,
            uuid: r.uuid,
            parent_uuid: r.parent_uuid,
            kind: r.kind.as_str(),
            timestamp: r.timestamp,
            message_id: r.message_id,
            body,
        })
    }

    fn columns(&self) -> Columns<'_> {
        Columns {
            seq: self.seq,
            uuid: &self.uuid,
            parent_uuid: self.parent_uuid.as_deref(),
            kind: self.kind,
            timestamp: &self.timestamp,
            message_id: self.message_id.as_deref(),
            body: &self.body,
        }
    }
}

/// One row's values, borrowed from a [`Row`] or from a record and its JSON.
struct Columns<'a> {
    seq: u64,
    uuid: &'a str,
    parent_uuid: Option<&'a str>,
    kind: &'a str,
    timestamp: &'a str,
    message_id: Option<&'a str>,
    body: &'a str,
}

impl<'a> Columns<'a> {
    fn of(r: &'a Record, body: &'a str) -> Columns<'a> {
        Columns {
            seq: r.seq,
            uuid: &r.uuid,
            parent_uuid: r.parent_uuid.as_deref(),
            kind: r.kind.as_str(),
            timestamp: &r.timestamp,
            message_id: r.message_id.as_deref(),
            body,
        }
    }
}

/// Inserts records whose `seq` and `uuid` are already assigned.
pub fn insert_all(db: &mut dyn Db, session: &str, records: &[Record]) -> Result<()> {
    let bodies = records
        .iter()
        .map(serde_json::to_string)
        .collect::<serde_json::Result<Vec<String>>>()?;
    let columns: Vec<Columns<'_>> = records
        .iter()
        .zip(&bodies)
        .map(|(r, body)| Columns::of(r, body))
        .collect();
    insert_columns(db, session, &columns)
}

/// [`insert_all`] of records already made into rows.
pub fn insert_rows(db: &mut dyn Db, session: &str, rows: &[Row]) -> Result<()> {
    let columns: Vec<Columns<'_>> = rows.iter().map(Row::columns).collect();
    insert_columns(db, session, &columns)
}

const INSERT: &str = "INSERT INTO records (session_id, seq, uuid, parent_uuid, kind, timestamp, message_id, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

fn insert_columns(db: &mut dyn Db, session: &str, rows: &[Columns<'_>]) -> Result<()> {
    const WIDTH: usize = 8;
    let mut flat = Vec::with_capacity(rows.len() * WIDTH);
    for c in rows {
        flat.extend_from_slice(params![
            session,
            c.seq,
            c.uuid,
            c.parent_uuid,
            c.kind,
            c.timestamp,
            c.message_id,
            c.body,
        ]);
    }
    if let Some(i) = db.try_insert_each(INSERT, WIDTH, &flat)? {
        let uuid = rows.get(i).map_or("", |c| c.uuid);
        return Err(Error::DuplicateRecord(uuid.to_string()));
    }
    // Tells the store which seqs (first, last) the write appended.
    if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
        db.appended(session, first.seq, last.seq);
    }
    Ok(())
}

/// Records with `seq > after`, at most `limit` of them, in order.
pub fn page(db: &mut dyn Db, session: &str, after: u64, limit: u32) -> Result<Vec<Record>> {
    db.query_map(
        "SELECT body FROM records WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
        params![session, after, limit],
        |mut r| Ok(serde_json::from_str(&r.take_text(0)?)?),
    )
}

pub fn all(db: &mut dyn Db, session: &str) -> Result<Vec<Record>> {
    page(db, session, 0, u32::MAX)
}

/// Records with `seq <= upto`, for forks.
pub fn up_to(db: &mut dyn Db, session: &str, upto: u64) -> Result<Vec<Record>> {
    let mut out = all(db, session)?;
    out.retain(|r| r.seq <= upto);
    Ok(out)
}
