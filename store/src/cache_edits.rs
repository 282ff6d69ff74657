//! Pinned cache edits of cached microcompact.

use super::db::{Db, params};
use crate::error::Result;
use ctxd_pipeline::microcompact::PinnedEdit;

/// Edits sent since the compact boundary `boundary_uuid`, in the order they were sent.
pub fn load(db: &mut dyn Db, session: &str, boundary_uuid: &str) -> Result<Vec<PinnedEdit>> {
    db.query_map(
        "SELECT message_index, tool_use_ids FROM cache_edits WHERE session_id = ?1 AND boundary_uuid = ?2 ORDER BY position",
        params![session, boundary_uuid],
        |r| {
            Ok(PinnedEdit {
                message_index: r.u32(0)?,
                tool_use_ids: r.json(1)?,
            })
        },
    )
}

pub fn push(
    db: &mut dyn Db,
    session: &str,
    boundary_uuid: &str,
    edit: &PinnedEdit,
    seq: u64,
) -> Result<()> {
    let ids = serde_json::to_string(&edit.tool_use_ids)?;
    db.execute(
        "INSERT INTO cache_edits (session_id, position, boundary_uuid, message_index, tool_use_ids, decided_seq)
         VALUES (?1, (SELECT COALESCE(MAX(position), 0) + 1 FROM cache_edits WHERE session_id = ?1), ?2, ?3, ?4, ?5)",
        params![session, boundary_uuid, edit.message_index, &ids, seq],
    )?;
    Ok(())
}

/// Drops the session's edits (time-based clearing rebuilt the prefix; the edited cache
/// has expired).
pub fn reset(db: &mut dyn Db, session: &str) -> Result<()> {
    db.execute(
        "DELETE FROM cache_edits WHERE session_id = ?1",
        params![session],
    )?;
    Ok(())
}

pub fn copy(db: &mut dyn Db, from: &str, to: &str) -> Result<()> {
    db.execute(
        "INSERT INTO cache_edits (session_id, position, boundary_uuid, message_index, tool_use_ids, decided_seq)
         SELECT CAST(?2 AS TEXT), position, boundary_uuid, message_index, tool_use_ids, decided_seq FROM cache_edits WHERE session_id = ?1",
        params![from, to],
    )?;
    Ok(())
}
