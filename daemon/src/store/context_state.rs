//! Instruction memo, loaded instruction paths, touched paths and file read state.

use std::collections::BTreeSet;

use super::db::{Db, params};
use crate::error::Result;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionMemo {
    pub claude_md: Option<String>,
    pub boundary_uuid: String,
    pub announced_date: String,
}

pub fn memo(db: &mut dyn Db, session: &str) -> Result<Option<InstructionMemo>> {
    db.query_opt(
        "SELECT claude_md, boundary_uuid, announced_date FROM instruction_state WHERE session_id = ?1",
        params![session],
    )?
    .map(|r| {
        Ok(InstructionMemo {
            claude_md: r.opt_text(0)?,
            boundary_uuid: r.text(1)?,
            announced_date: r.text(2)?,
        })
    })
    .transpose()
}

pub fn set_memo(db: &mut dyn Db, session: &str, m: &InstructionMemo) -> Result<()> {
    db.execute(
        "INSERT INTO instruction_state (session_id, claude_md, boundary_uuid, announced_date) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (session_id) DO UPDATE SET claude_md = ?2, boundary_uuid = ?3, announced_date = ?4",
        params![session, m.claude_md.as_ref(), &m.boundary_uuid, &m.announced_date],
    )?;
    Ok(())
}

pub fn loaded(db: &mut dyn Db, session: &str) -> Result<BTreeSet<String>> {
    let paths = db.query_map(
        "SELECT path FROM loaded_instructions WHERE session_id = ?1",
        params![session],
        |r| r.text(0),
    )?;
    Ok(paths.into_iter().collect())
}

pub fn add_loaded(db: &mut dyn Db, session: &str, paths: &[String]) -> Result<()> {
    for p in paths {
        db.execute(
            "INSERT INTO loaded_instructions (session_id, path) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            params![session, p],
        )?;
    }
    Ok(())
}

pub fn clear_loaded(db: &mut dyn Db, session: &str) -> Result<()> {
    db.execute(
        "DELETE FROM loaded_instructions WHERE session_id = ?1",
        params![session],
    )?;
    Ok(())
}

pub fn touched(db: &mut dyn Db, session: &str) -> Result<Vec<String>> {
    db.query_map(
        "SELECT path FROM touched_paths WHERE session_id = ?1 ORDER BY path",
        params![session],
        |r| r.text(0),
    )
}

pub fn add_touched(db: &mut dyn Db, session: &str, paths: &[String]) -> Result<()> {
    for p in paths {
        db.execute(
            "INSERT INTO touched_paths (session_id, path) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            params![session, p],
        )?;
    }
    Ok(())
}

pub fn clear_touched(db: &mut dyn Db, session: &str) -> Result<()> {
    db.execute(
        "DELETE FROM touched_paths WHERE session_id = ?1",
        params![session],
    )?;
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

pub fn read_states(db: &mut dyn Db, session: &str) -> Result<Vec<ReadState>> {
    db.query_map(
        "SELECT path, size, mtime_ns, sha256, content FROM file_read_state WHERE session_id = ?1 ORDER BY path",
        params![session],
        |r| {
            Ok(ReadState {
                path: r.text(0)?,
                size: r.u64(1)?,
                mtime_ns: r.int(2)?,
                sha256: r.text(3)?,
                content: r.opt_text(4)?,
            })
        },
    )
}

pub fn put_read_state(db: &mut dyn Db, session: &str, s: &ReadState) -> Result<()> {
    db.execute(
        "INSERT INTO file_read_state (session_id, path, size, mtime_ns, sha256, content) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (session_id, path) DO UPDATE SET size = ?3, mtime_ns = ?4, sha256 = ?5, content = ?6",
        params![session, &s.path, s.size as i64, s.mtime_ns, &s.sha256, s.content.as_ref()],
    )?;
    Ok(())
}

pub fn remove_read_state(db: &mut dyn Db, session: &str, path: &str) -> Result<()> {
    db.execute(
        "DELETE FROM file_read_state WHERE session_id = ?1 AND path = ?2",
        params![session, path],
    )?;
    Ok(())
}

pub fn clear_read_state(db: &mut dyn Db, session: &str) -> Result<()> {
    db.execute(
        "DELETE FROM file_read_state WHERE session_id = ?1",
        params![session],
    )?;
    Ok(())
}

/// Every (session, path) with read state, to re-register watches after a restart.
pub fn all_watched(db: &mut dyn Db) -> Result<Vec<(String, String)>> {
    db.query_map(
        "SELECT session_id, path FROM file_read_state",
        params![],
        |r| Ok((r.text(0)?, r.text(1)?)),
    )
}

/// Copies instruction and read state to a fork.
pub fn copy(db: &mut dyn Db, from: &str, to: &str) -> Result<()> {
    db.execute(
        "INSERT INTO instruction_state (session_id, claude_md, boundary_uuid, announced_date) SELECT CAST(?2 AS TEXT), claude_md, boundary_uuid, announced_date FROM instruction_state WHERE session_id = ?1",
        params![from, to],
    )?;
    db.execute(
        "INSERT INTO loaded_instructions (session_id, path) SELECT CAST(?2 AS TEXT), path FROM loaded_instructions WHERE session_id = ?1",
        params![from, to],
    )?;
    db.execute(
        "INSERT INTO file_read_state (session_id, path, size, mtime_ns, sha256, content) SELECT CAST(?2 AS TEXT), path, size, mtime_ns, sha256, content FROM file_read_state WHERE session_id = ?1",
        params![from, to],
    )?;
    Ok(())
}

/// Autocompact's consecutive failures.
pub fn compaction_failures(db: &mut dyn Db, session: &str) -> Result<u32> {
    db.query_opt(
        "SELECT consecutive_failures FROM compaction_state WHERE session_id = ?1",
        params![session],
    )?
    .map_or(Ok(0), |r| r.u32(0))
}

pub fn set_compaction_failures(
    db: &mut dyn Db,
    session: &str,
    n: u32,
    error: Option<&str>,
) -> Result<()> {
    db.execute(
        "INSERT INTO compaction_state (session_id, consecutive_failures, last_error) VALUES (?1, ?2, ?3)
         ON CONFLICT (session_id) DO UPDATE SET consecutive_failures = ?2, last_error = ?3",
        params![session, n, error],
    )?;
    Ok(())
}
