//! Persisted tool outputs as rows: the source of truth of the `<persisted-output>` files
//! when several daemons share a PostgreSQL database. Every daemon that loads the session
//! writes the missing files from here (create-once). The SQLite store has no such table:
//! its files live under the one home that also holds the database.

use super::db::{Db, Dialect, params};
use crate::error::Result;

/// Stores an output; the same path always has the same content, so a second insert is
/// a replay and changes nothing. Nothing on SQLite.
pub fn put(db: &mut dyn Db, session: &str, path: &str, content: &str) -> Result<()> {
    if db.dialect() == Dialect::Sqlite {
        return Ok(());
    }
    db.execute(
        "INSERT INTO persisted_outputs (session_id, path, content) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
        params![session, path, content],
    )?;
    Ok(())
}

/// `(path, length in bytes)` of every output of the session.
pub fn list(db: &mut dyn Db, session: &str) -> Result<Vec<(String, u64)>> {
    db.query_map(
        "SELECT path, octet_length(content) FROM persisted_outputs WHERE session_id = ?1 ORDER BY path",
        params![session],
        |r| Ok((r.text(0)?, r.u64(1)?)),
    )
}

pub fn content(db: &mut dyn Db, session: &str, path: &str) -> Result<Option<String>> {
    db.query_opt(
        "SELECT content FROM persisted_outputs WHERE session_id = ?1 AND path = ?2",
        params![session, path],
    )?
    .map(|mut r| r.take_text(0))
    .transpose()
}

/// A fork shows its parent's replacements, so it needs the same files. Nothing on
/// SQLite (the fork reads the parent's files, which stay while it points at them).
pub fn copy(db: &mut dyn Db, from: &str, to: &str) -> Result<()> {
    if db.dialect() == Dialect::Sqlite {
        return Ok(());
    }
    db.execute(
        "INSERT INTO persisted_outputs (session_id, path, content) SELECT CAST(?2 AS TEXT), path, content FROM persisted_outputs WHERE session_id = ?1",
        params![from, to],
    )?;
    Ok(())
}
