//! Content-replacement records: the frozen fate of every tool result a compile showed.

use std::collections::BTreeMap;

use super::db::{Db, Row, params};
use crate::error::Result;
use ctxd_pipeline::budget::Fate;

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

fn fate(r: &Row, i: usize) -> Result<Fate> {
    Ok(r.opt_text(i)?.map_or(Fate::Kept, Fate::Replaced))
}

pub fn load(db: &mut dyn Db, session: &str, stage: &str) -> Result<BTreeMap<String, Fate>> {
    let rows = db.query_map(
        "SELECT tool_use_id, replacement FROM content_replacements WHERE session_id = ?1 AND stage = ?2",
        params![session, stage],
        |r| Ok((r.text(0)?, fate(&r, 1)?)),
    )?;
    Ok(rows.into_iter().collect())
}

pub fn all(db: &mut dyn Db, session: &str) -> Result<Vec<FateRow>> {
    db.query_map(
        "SELECT stage, tool_use_id, replacement, decided_seq FROM content_replacements WHERE session_id = ?1 ORDER BY decided_seq, stage, tool_use_id",
        params![session],
        |r| {
            Ok(FateRow {
                stage: r.text(0)?,
                tool_use_id: r.text(1)?,
                fate: fate(&r, 2)?,
                decided_seq: r.u64(3)?,
            })
        },
    )
}

/// Inserts fates; an existing fate is never overwritten (decided once).
pub fn insert(
    db: &mut dyn Db,
    session: &str,
    stage: &str,
    fates: &[(String, Fate)],
    seq: u64,
) -> Result<()> {
    let mut rows = Vec::with_capacity(fates.len() * 5);
    for (id, fate) in fates {
        let rep = match fate {
            Fate::Kept => None,
            Fate::Replaced(s) => Some(s.as_str()),
        };
        rows.extend_from_slice(params![session, stage, id, rep, seq]);
    }
    // A compile of a long session can decide thousands at once: a few statements.
    db.insert_many(
        "INSERT INTO content_replacements (session_id, stage, tool_use_id, replacement, decided_seq)",
        "ON CONFLICT DO NOTHING",
        5,
        &rows,
    )?;
    Ok(())
}

/// Copies every fate of `from` to `to` (forks replay the parent's decisions).
pub fn copy(db: &mut dyn Db, from: &str, to: &str) -> Result<()> {
    db.execute(
        "INSERT INTO content_replacements (session_id, stage, tool_use_id, replacement, decided_seq) SELECT CAST(?2 AS TEXT), stage, tool_use_id, replacement, decided_seq FROM content_replacements WHERE session_id = ?1",
        params![from, to],
    )?;
    Ok(())
}

/// Whether any other session's replacements point into `dir` (a fork still needs the
/// parent's persisted files).
pub fn referenced_elsewhere(db: &mut dyn Db, session: &str, dir: &str) -> Result<bool> {
    // PostgreSQL's LIKE, unlike SQLite's, minds ASCII case: both match the paths ctxd
    // wrote itself, which never differ from `dir` only in case.
    let pattern = format!("%{}%", dir.replace('%', "\\%").replace('_', "\\_"));
    db.query_one(
        "SELECT EXISTS (SELECT 1 FROM content_replacements WHERE session_id != ?1 AND replacement LIKE ?2 ESCAPE '\\')",
        params![session, &pattern],
    )?
    .bool(0)
}
