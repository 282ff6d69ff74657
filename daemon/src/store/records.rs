//! Transcript rows. Append-only: nothing here updates or deletes a single record.

use ctxd_protocol::Record;
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::{Error, Result};

/// `(seq, uuid)` of the last record, if any.
pub fn last(conn: &Connection, session: &str) -> Result<Option<(u64, String)>> {
    Ok(conn
        .query_row(
            "SELECT seq, uuid FROM records WHERE session_id = ?1 ORDER BY seq DESC LIMIT 1",
            [session],
            |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)),
        )
        .optional()?)
}

pub fn count(conn: &Connection, session: &str) -> Result<u64> {
    Ok(conn.query_row(
        "SELECT count(*) FROM records WHERE session_id = ?1",
        [session],
        |r| r.get::<_, i64>(0),
    )? as u64)
}

pub fn uuid_exists(conn: &Connection, session: &str, uuid: &str) -> Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM records WHERE session_id = ?1 AND uuid = ?2",
            [session, uuid],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

pub fn seq_of(conn: &Connection, session: &str, uuid: &str) -> Result<u64> {
    conn.query_row(
        "SELECT seq FROM records WHERE session_id = ?1 AND uuid = ?2",
        [session, uuid],
        |r| r.get::<_, i64>(0),
    )
    .optional()?
    .map(|s| s as u64)
    .ok_or_else(|| Error::RecordNotFound(uuid.to_string()))
}

/// Inserts records whose `seq` and `uuid` are already assigned.
pub fn insert_all(conn: &Connection, session: &str, records: &[Record]) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO records (session_id, seq, uuid, parent_uuid, kind, timestamp, message_id, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for r in records {
        stmt.execute(params![
            session,
            r.seq as i64,
            r.uuid,
            r.parent_uuid,
            r.kind.as_str(),
            r.timestamp,
            r.message_id,
            serde_json::to_string(r)?,
        ])
        .map_err(|e| match e {
            rusqlite::Error::SqliteFailure(f, _)
                if f.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                Error::DuplicateRecord(r.uuid.clone())
            }
            other => other.into(),
        })?;
    }
    Ok(())
}

/// Records with `seq > after`, at most `limit` of them, in order.
pub fn page(conn: &Connection, session: &str, after: u64, limit: u32) -> Result<Vec<Record>> {
    let mut stmt = conn.prepare_cached(
        "SELECT body FROM records WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
    )?;
    let rows = stmt.query_map(params![session, after as i64, limit], |r| {
        r.get::<_, String>(0)
    })?;
    let mut out = Vec::new();
    for body in rows {
        out.push(serde_json::from_str(&body?)?);
    }
    Ok(out)
}

pub fn all(conn: &Connection, session: &str) -> Result<Vec<Record>> {
    page(conn, session, 0, u32::MAX)
}

/// Records with `seq <= upto`, for forks.
pub fn up_to(conn: &Connection, session: &str, upto: u64) -> Result<Vec<Record>> {
    let mut out = all(conn, session)?;
    out.retain(|r| r.seq <= upto);
    Ok(out)
}
