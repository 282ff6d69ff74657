//! The collapse store and its commit log.

use super::db::{Db, params};
use crate::error::Result;
use ctxd_pipeline::collapse::{Collapse, CollapseStatus};

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

pub fn load(db: &mut dyn Db, session: &str) -> Result<Vec<Collapse>> {
    db.query_map(
        "SELECT id, first_uuid, last_uuid, record_count, tokens, summary, status FROM collapses WHERE session_id = ?1 ORDER BY position",
        params![session],
        |r| {
            Ok(Collapse {
                id: r.text(0)?,
                first_uuid: r.text(1)?,
                last_uuid: r.text(2)?,
                record_count: ctxd_pipeline::saturate::usize_of(r.u64(3)?),
                tokens: r.u64(4)?,
                summary: r.text(5)?,
                status: parse_status(&r.text(6)?),
            })
        },
    )
}

pub fn insert(db: &mut dyn Db, session: &str, c: &Collapse) -> Result<()> {
    db.execute(
        "INSERT INTO collapses (session_id, id, position, first_uuid, last_uuid, record_count, tokens, summary, status)
         VALUES (?1, ?2, (SELECT COALESCE(MAX(position), 0) + 1 FROM collapses WHERE session_id = ?1), ?3, ?4, ?5, ?6, ?7, ?8)",
        params![session, &c.id, &c.first_uuid, &c.last_uuid, c.record_count, c.tokens, &c.summary, status_text(c.status)],
    )?;
    Ok(())
}

pub fn commit(db: &mut dyn Db, session: &str, id: &str, seq: u64) -> Result<()> {
    db.execute(
        "UPDATE collapses SET status = 'committed', committed_seq = ?3 WHERE session_id = ?1 AND id = ?2",
        params![session, id, seq],
    )?;
    Ok(())
}

/// Marks a collapse undone, with the transcript's last seq at that moment.
pub fn undo(db: &mut dyn Db, session: &str, id: &str, seq: u64) -> Result<()> {
    db.execute(
        "UPDATE collapses SET status = 'undone', undone_seq = ?3 WHERE session_id = ?1 AND id = ?2",
        params![session, id, seq],
    )?;
    Ok(())
}

/// `(collapse id, seq at commit, seq at undo)` of collapses undone after a commit.
pub fn undo_seqs(db: &mut dyn Db, session: &str) -> Result<Vec<(String, u64, u64)>> {
    db.query_map(
        "SELECT id, committed_seq, undone_seq FROM collapses WHERE session_id = ?1 AND status = 'undone' AND committed_seq IS NOT NULL AND undone_seq IS NOT NULL",
        params![session],
        |r| Ok((r.text(0)?, r.u64(1)?, r.u64(2)?)),
    )
}

/// `(collapse id, seq at commit)` of committed collapses.
pub fn commit_seqs(db: &mut dyn Db, session: &str) -> Result<Vec<(String, u64)>> {
    db.query_map(
        "SELECT id, committed_seq FROM collapses WHERE session_id = ?1 AND status = 'committed' AND committed_seq IS NOT NULL",
        params![session],
        |r| Ok((r.text(0)?, r.u64(1)?)),
    )
}

pub fn log(db: &mut dyn Db, session: &str, id: &str, action: &str, at: &str) -> Result<()> {
    db.execute(
        "INSERT INTO collapse_log (session_id, seq, collapse_id, action, at)
         VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM collapse_log WHERE session_id = ?1), ?2, ?3, ?4)",
        params![session, id, action, at],
    )?;
    Ok(())
}
