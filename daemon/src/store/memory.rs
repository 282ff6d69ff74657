//! Session memory documents and their history.

use rusqlite::{Connection, OptionalExtension, params};

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

pub fn get(conn: &Connection, session: &str) -> Result<Option<MemoryRow>> {
    Ok(conn
        .query_row(
            "SELECT document, version, last_summarized_uuid, tokens_at_extraction, writer, updated_at FROM session_memory WHERE session_id = ?1",
            [session],
            |r| {
                Ok(MemoryRow {
                    document: r.get(0)?,
                    version: r.get::<_, i64>(1)? as u64,
                    last_summarized_uuid: r.get(2)?,
                    tokens_at_extraction: r.get::<_, Option<i64>>(3)?.map(|v| v as u64),
                    writer: r.get(4)?,
                    updated_at: r.get(5)?,
                })
            },
        )
        .optional()?)
}

/// Writes a new version if `expected` is the current one (0 = no document yet).
pub fn put(conn: &Connection, session: &str, expected: u64, row: &MemoryRow) -> Result<u64> {
    let current = get(conn, session)?.map_or(0, |m| m.version);
    if current != expected {
        return Err(Error::Conflict {
            expected: format!("memory version {expected}"),
            actual: format!("memory version {current}"),
        });
    }
    let version = current + 1;
    conn.execute(
        "INSERT INTO session_memory (session_id, document, version, last_summarized_uuid, tokens_at_extraction, writer, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (session_id) DO UPDATE SET document = ?2, version = ?3, last_summarized_uuid = ?4, tokens_at_extraction = ?5, writer = ?6, updated_at = ?7",
        params![session, row.document, version as i64, row.last_summarized_uuid, row.tokens_at_extraction.map(|t| t as i64), row.writer, row.updated_at],
    )?;
    conn.execute(
        "INSERT INTO session_memory_history (session_id, version, document, last_summarized_uuid, writer, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![session, version as i64, row.document, row.last_summarized_uuid, row.writer, row.updated_at],
    )?;
    Ok(version)
}

/// A compaction shrinks the context: the extraction gates measure growth afresh.
pub fn reset_gate(conn: &Connection, session: &str) -> Result<()> {
    conn.execute(
        "UPDATE session_memory SET tokens_at_extraction = NULL WHERE session_id = ?1",
        [session],
    )?;
    Ok(())
}
