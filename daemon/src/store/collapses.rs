//! The collapse store and its commit log.

use rusqlite::{Connection, params};

use crate::error::Result;
use crate::pipeline::collapse::{Collapse, CollapseStatus};

fn status_text(s: CollapseStatus) -> &'static str {
    match s {
        CollapseStatus::Staged => "staged",
        CollapseStatus::Committed => "committed",
        CollapseStatus::Undone => "undone",
    }
}

fn parse_status(s: &str) -> CollapseStatus {
    match s {
        "committed" => CollapseStatus::Committed,
        "undone" => CollapseStatus::Undone,
        _ => CollapseStatus::Staged,
    }
}

pub fn load(conn: &Connection, session: &str) -> Result<Vec<Collapse>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, first_uuid, last_uuid, record_count, tokens, summary, status FROM collapses WHERE session_id = ?1 ORDER BY position",
    )?;
    let rows = stmt.query_map([session], |r| {
        Ok(Collapse {
            id: r.get(0)?,
            first_uuid: r.get(1)?,
            last_uuid: r.get(2)?,
            record_count: r.get::<_, i64>(3)? as usize,
            tokens: r.get::<_, i64>(4)? as u64,
            summary: r.get(5)?,
            status: parse_status(&r.get::<_, String>(6)?),
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

pub fn insert(conn: &Connection, session: &str, c: &Collapse) -> Result<()> {
    conn.execute(
        "INSERT INTO collapses (session_id, id, position, first_uuid, last_uuid, record_count, tokens, summary, status)
         VALUES (?1, ?2, (SELECT COALESCE(MAX(position), 0) + 1 FROM collapses WHERE session_id = ?1), ?3, ?4, ?5, ?6, ?7, ?8)",
        params![session, c.id, c.first_uuid, c.last_uuid, c.record_count as i64, c.tokens as i64, c.summary, status_text(c.status)],
    )?;
    Ok(())
}

pub fn set_status(conn: &Connection, session: &str, id: &str, s: CollapseStatus) -> Result<()> {
    conn.execute(
        "UPDATE collapses SET status = ?3 WHERE session_id = ?1 AND id = ?2",
        params![session, id, status_text(s)],
    )?;
    Ok(())
}

pub fn commit(conn: &Connection, session: &str, id: &str, seq: u64) -> Result<()> {
    conn.execute(
        "UPDATE collapses SET status = 'committed', committed_seq = ?3 WHERE session_id = ?1 AND id = ?2",
        params![session, id, seq as i64],
    )?;
    Ok(())
}

/// `(collapse id, seq at commit)` of committed collapses.
pub fn commit_seqs(conn: &Connection, session: &str) -> Result<Vec<(String, u64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, committed_seq FROM collapses WHERE session_id = ?1 AND status = 'committed' AND committed_seq IS NOT NULL",
    )?;
    let rows = stmt.query_map([session], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

pub fn log(conn: &Connection, session: &str, id: &str, action: &str, at: &str) -> Result<()> {
    conn.execute(
        "INSERT INTO collapse_log (session_id, seq, collapse_id, action, at)
         VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM collapse_log WHERE session_id = ?1), ?2, ?3, ?4)",
        params![session, id, action, at],
    )?;
    Ok(())
}
