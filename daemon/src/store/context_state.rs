//! Instruction memo, loaded instruction paths, touched paths and file read state.

use std::collections::BTreeSet;

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionMemo {
    pub claude_md: Option<String>,
    pub boundary_uuid: String,
    pub announced_date: String,
}

pub fn memo(conn: &Connection, session: &str) -> Result<Option<InstructionMemo>> {
    Ok(conn
        .query_row(
            "SELECT claude_md, boundary_uuid, announced_date FROM instruction_state WHERE session_id = ?1",
            [session],
            |r| {
                Ok(InstructionMemo {
                    claude_md: r.get(0)?,
                    boundary_uuid: r.get(1)?,
                    announced_date: r.get(2)?,
                })
            },
        )
        .optional()?)
}

pub fn set_memo(conn: &Connection, session: &str, m: &InstructionMemo) -> Result<()> {
    conn.execute(
        "INSERT INTO instruction_state (session_id, claude_md, boundary_uuid, announced_date) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (session_id) DO UPDATE SET claude_md = ?2, boundary_uuid = ?3, announced_date = ?4",
        params![session, m.claude_md, m.boundary_uuid, m.announced_date],
    )?;
    Ok(())
}

pub fn loaded(conn: &Connection, session: &str) -> Result<BTreeSet<String>> {
    let mut stmt =
        conn.prepare_cached("SELECT path FROM loaded_instructions WHERE session_id = ?1")?;
    let rows = stmt.query_map([session], |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<rusqlite::Result<BTreeSet<_>>>()?)
}

pub fn add_loaded(conn: &Connection, session: &str, paths: &[String]) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT OR IGNORE INTO loaded_instructions (session_id, path) VALUES (?1, ?2)",
    )?;
    for p in paths {
        stmt.execute(params![session, p])?;
    }
    Ok(())
}

pub fn clear_loaded(conn: &Connection, session: &str) -> Result<()> {
    conn.execute(
        "DELETE FROM loaded_instructions WHERE session_id = ?1",
        [session],
    )?;
    Ok(())
}

pub fn touched(conn: &Connection, session: &str) -> Result<Vec<String>> {
    let mut stmt =
        conn.prepare_cached("SELECT path FROM touched_paths WHERE session_id = ?1 ORDER BY path")?;
    let rows = stmt.query_map([session], |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

pub fn add_touched(conn: &Connection, session: &str, paths: &[String]) -> Result<()> {
    let mut stmt = conn
        .prepare_cached("INSERT OR IGNORE INTO touched_paths (session_id, path) VALUES (?1, ?2)")?;
    for p in paths {
        stmt.execute(params![session, p])?;
    }
    Ok(())
}

pub fn clear_touched(conn: &Connection, session: &str) -> Result<()> {
    conn.execute("DELETE FROM touched_paths WHERE session_id = ?1", [session])?;
    Ok(())
}

/// What the model has seen of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadState {
    pub path: String,
    pub size: u64,
    pub mtime_ns: i64,
    pub sha256: String,
    pub content: Option<String>,
}

pub fn read_states(conn: &Connection, session: &str) -> Result<Vec<ReadState>> {
    let mut stmt = conn.prepare_cached(
        "SELECT path, size, mtime_ns, sha256, content FROM file_read_state WHERE session_id = ?1 ORDER BY path",
    )?;
    let rows = stmt.query_map([session], |r| {
        Ok(ReadState {
            path: r.get(0)?,
            size: r.get::<_, i64>(1)? as u64,
            mtime_ns: r.get(2)?,
            sha256: r.get(3)?,
            content: r.get(4)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

pub fn put_read_state(conn: &Connection, session: &str, s: &ReadState) -> Result<()> {
    conn.execute(
        "INSERT INTO file_read_state (session_id, path, size, mtime_ns, sha256, content) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (session_id, path) DO UPDATE SET size = ?3, mtime_ns = ?4, sha256 = ?5, content = ?6",
        params![session, s.path, s.size as i64, s.mtime_ns, s.sha256, s.content],
    )?;
    Ok(())
}

pub fn remove_read_state(conn: &Connection, session: &str, path: &str) -> Result<()> {
    conn.execute(
        "DELETE FROM file_read_state WHERE session_id = ?1 AND path = ?2",
        params![session, path],
    )?;
    Ok(())
}

pub fn clear_read_state(conn: &Connection, session: &str) -> Result<()> {
    conn.execute(
        "DELETE FROM file_read_state WHERE session_id = ?1",
        [session],
    )?;
    Ok(())
}

/// Every (session, path) with read state, to re-register watches after a restart.
pub fn all_watched(conn: &Connection) -> Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare("SELECT session_id, path FROM file_read_state")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Copies instruction and read state to a fork.
pub fn copy(conn: &Connection, from: &str, to: &str) -> Result<()> {
    conn.execute(
        "INSERT INTO instruction_state (session_id, claude_md, boundary_uuid, announced_date) SELECT ?2, claude_md, boundary_uuid, announced_date FROM instruction_state WHERE session_id = ?1",
        params![from, to],
    )?;
    conn.execute(
        "INSERT INTO loaded_instructions (session_id, path) SELECT ?2, path FROM loaded_instructions WHERE session_id = ?1",
        params![from, to],
    )?;
    conn.execute(
        "INSERT INTO file_read_state (session_id, path, size, mtime_ns, sha256, content) SELECT ?2, path, size, mtime_ns, sha256, content FROM file_read_state WHERE session_id = ?1",
        params![from, to],
    )?;
    Ok(())
}

/// Autocompact's consecutive failures.
pub fn compaction_failures(conn: &Connection, session: &str) -> Result<u32> {
    Ok(conn
        .query_row(
            "SELECT consecutive_failures FROM compaction_state WHERE session_id = ?1",
            [session],
            |r| r.get::<_, i64>(0),
        )
        .optional()?
        .unwrap_or(0) as u32)
}

pub fn set_compaction_failures(
    conn: &Connection,
    session: &str,
    n: u32,
    error: Option<&str>,
) -> Result<()> {
    conn.execute(
        "INSERT INTO compaction_state (session_id, consecutive_failures, last_error) VALUES (?1, ?2, ?3)
         ON CONFLICT (session_id) DO UPDATE SET consecutive_failures = ?2, last_error = ?3",
        params![session, n, error],
    )?;
    Ok(())
}
