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

/// Inserts records whose `seq` and `uuid` are already assigned.
pub fn insert_all(db: &mut dyn Db, session: &str, records: &[Record]) -> Result<()> {
    for r in records {
        insert_one(db, session, r, &serde_json::to_string(r)?)?;
    }
    noted(db, session, records);
    Ok(())
}

/// [`insert_all`] of records serialised beforehand, `bodies[i]` being `records[i]` as
/// JSON: a caller with many records serialises them off the store's writer, in parallel.
pub fn insert_serialised(
    db: &mut dyn Db,
    session: &str,
    records: &[Record],
    bodies: &[String],
) -> Result<()> {
    if records.len() != bodies.len() {
        return Err(Error::Internal(format!(
            "{} records with {} bodies",
            records.len(),
            bodies.len()
        )));
    }
    for (r, body) in records.iter().zip(bodies) {
        insert_one(db, session, r, body)?;
    }
    noted(db, session, records);
    Ok(())
}

fn insert_one(db: &mut dyn Db, session: &str, r: &Record, body: &str) -> Result<()> {
    let inserted = db.try_insert(
        "INSERT INTO records (session_id, seq, uuid, parent_uuid, kind, timestamp, message_id, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            session,
            r.seq as i64,
            &r.uuid,
            r.parent_uuid.as_ref(),
            r.kind.as_str(),
            &r.timestamp,
            r.message_id.as_ref(),
            body,
        ],
    )?;
    match inserted {
        Some(_) => Ok(()),
        None => Err(Error::DuplicateRecord(r.uuid.clone())),
    }
}

fn noted(db: &mut dyn Db, session: &str, records: &[Record]) {
    if let (Some(first), Some(last)) = (records.first(), records.last()) {
        db.appended(session, first.seq, last.seq);
    }
}

/// Records with `seq > after`, at most `limit` of them, in order.
pub fn page(db: &mut dyn Db, session: &str, after: u64, limit: u32) -> Result<Vec<Record>> {
    db.query_map(
        "SELECT body FROM records WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
        params![session, after as i64, limit],
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
