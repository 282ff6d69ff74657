//! Content-replacement records: the frozen fate of every tool result a compile showed.

use std::collections::BTreeMap;

use rusqlite::{Connection, params};

use crate::error::Result;
use crate::pipeline::budget::Fate;

pub const BUDGET: &str = "budget";
pub const MICROCOMPACT: &str = "microcompact";

/// One stored fate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FateRow {
    pub stage: String,
    pub tool_use_id: String,
    pub fate: Fate,
    pub decided_seq: u64,
}

pub fn load(conn: &Connection, session: &str, stage: &str) -> Result<BTreeMap<String, Fate>> {
    let mut stmt = conn.prepare_cached(
        "SELECT tool_use_id, replacement FROM content_replacements WHERE session_id = ?1 AND stage = ?2",
    )?;
    let rows = stmt.query_map(params![session, stage], |r| {
        let id: String = r.get(0)?;
        let rep: Option<String> = r.get(1)?;
        Ok((id, rep.map_or(Fate::Kept, Fate::Replaced)))
    })?;
    Ok(rows.collect::<rusqlite::Result<BTreeMap<_, _>>>()?)
}

pub fn all(conn: &Connection, session: &str) -> Result<Vec<FateRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT stage, tool_use_id, replacement, decided_seq FROM content_replacements WHERE session_id = ?1 ORDER BY decided_seq, stage, tool_use_id",
    )?;
    let rows = stmt.query_map([session], |r| {
        let rep: Option<String> = r.get(2)?;
        Ok(FateRow {
            stage: r.get(0)?,
            tool_use_id: r.get(1)?,
            fate: rep.map_or(Fate::Kept, Fate::Replaced),
            decided_seq: r.get::<_, i64>(3)? as u64,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Inserts fates; an existing fate is never overwritten (decided once).
pub fn insert(
    conn: &Connection,
    session: &str,
    stage: &str,
    fates: &[(String, Fate)],
    seq: u64,
) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT OR IGNORE INTO content_replacements (session_id, stage, tool_use_id, replacement, decided_seq) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (id, fate) in fates {
        let rep = match fate {
            Fate::Kept => None,
            Fate::Replaced(s) => Some(s.as_str()),
        };
        stmt.execute(params![session, stage, id, rep, seq as i64])?;
    }
    Ok(())
}

/// Copies every fate of `from` to `to` (forks replay the parent's decisions).
pub fn copy(conn: &Connection, from: &str, to: &str) -> Result<()> {
    conn.execute(
        "INSERT INTO content_replacements (session_id, stage, tool_use_id, replacement, decided_seq) SELECT ?2, stage, tool_use_id, replacement, decided_seq FROM content_replacements WHERE session_id = ?1",
        params![from, to],
    )?;
    Ok(())
}

/// Whether any other session's replacements point into `dir` (a fork still needs the
/// parent's persisted files).
pub fn referenced_elsewhere(conn: &Connection, session: &str, dir: &str) -> Result<bool> {
    let pattern = format!("%{}%", dir.replace('%', "\\%").replace('_', "\\_"));
    Ok(conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM content_replacements WHERE session_id != ?1 AND replacement LIKE ?2 ESCAPE '\\')",
        params![session, pattern],
        |r| r.get::<_, bool>(0),
    )?)
}
