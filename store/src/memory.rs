//! Session memory documents and their history.

use super::db::{Db, params};
use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryRow {
    pub document: String,
    pub version: u64,
    pub last_summarized_uuid: Option<String>,
    pub tokens_at_extraction: Option<u64>,
    pub writer: String,
    pub updated_at: String,
}

pub fn get(db: &mut dyn Db, session: &str) -> Result<Option<MemoryRow>> {
    db.query_opt(
        "SELECT document, version, last_summarized_uuid, tokens_at_extraction, writer, updated_at FROM session_memory WHERE session_id = ?1",
        params![session],
    )?
    .map(|r| {
        Ok(MemoryRow {
            document: r.text(0)?,
            version: r.u64(1)?,
            last_summarized_uuid: r.opt_text(2)?,
            tokens_at_extraction: r.opt_u64(3)?,
            writer: r.text(4)?,
            updated_at: r.text(5)?,
        })
    })
    .transpose()
}

/// Writes a new version if `expected` is the current one (0 = no document yet).
pub fn put(db: &mut dyn Db, session: &str, expected: u64, row: &MemoryRow) -> Result<u64> {
    let current = get(db, session)?.map_or(0, |m| m.version);
    if current != expected {
        return Err(Error::Conflict {
            expected: format!("memory version {expected}"),
            actual: format!("memory version {current}"),
        });
    }
    let version = current + 1;
    let tokens = row.tokens_at_extraction;
    db.execute(
        "INSERT INTO session_memory (session_id, document, version, last_summarized_uuid, tokens_at_extraction, writer, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (session_id) DO UPDATE SET document = ?2, version = ?3, last_summarized_uuid = ?4, tokens_at_extraction = ?5, writer = ?6, updated_at = ?7",
        params![session, &row.document, version, row.last_summarized_uuid.as_ref(), tokens, &row.writer, &row.updated_at],
    )?;
    db.execute(
        "INSERT INTO session_memory_history (session_id, version, document, last_summarized_uuid, writer, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![session, version, &row.document, row.last_summarized_uuid.as_ref(), &row.writer, &row.updated_at],
    )?;
    Ok(version)
}

/// A compaction shrinks the context: the extraction gates measure growth afresh.
pub fn reset_gate(db: &mut dyn Db, session: &str) -> Result<()> {
    db.execute(
        "UPDATE session_memory SET tokens_at_extraction = NULL WHERE session_id = ?1",
        params![session],
    )?;
    Ok(())
}
