//! Pinned cache edits of cached microcompact.

use rusqlite::{Connection, params};

use crate::error::Result;
use crate::pipeline::microcompact::PinnedEdit;

/// Edits sent since the compact boundary `boundary_uuid`, in the order they were sent.
pub fn load(conn: &Connection, session: &str, boundary_uuid: &str) -> Result<Vec<PinnedEdit>> {
    let mut stmt = conn.prepare_cached(
        "SELECT message_index, tool_use_ids FROM cache_edits WHERE session_id = ?1 AND boundary_uuid = ?2 ORDER BY position",
    )?;
    let rows = stmt.query_map(params![session, boundary_uuid], |r| {
        let ids: String = r.get(1)?;
        Ok((r.get::<_, i64>(0)?, ids))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (index, ids) = row?;
        out.push(PinnedEdit {
            message_index: index as u32,
            tool_use_ids: serde_json::from_str(&ids)?,
        });
    }
    Ok(out)
}

pub fn push(
    conn: &Connection,
    session: &str,
    boundary_uuid: &str,
    edit: &PinnedEdit,
    seq: u64,
) -> Result<()> {
    conn.execute(
        "INSERT INTO cache_edits (session_id, position, boundary_uuid, message_index, tool_use_ids, decided_seq)
         VALUES (?1, (SELECT COALESCE(MAX(position), 0) + 1 FROM cache_edits WHERE session_id = ?1), ?2, ?3, ?4, ?5)",
        params![session, boundary_uuid, edit.message_index, serde_json::to_string(&edit.tool_use_ids)?, seq as i64],
    )?;
    Ok(())
}

/// Drops the session's edits (time-based clearing rebuilt the prefix; the edited cache
/// has expired).
pub fn reset(conn: &Connection, session: &str) -> Result<()> {
    conn.execute("DELETE FROM cache_edits WHERE session_id = ?1", [session])?;
    Ok(())
}

pub fn copy(conn: &Connection, from: &str, to: &str) -> Result<()> {
    conn.execute(
        "INSERT INTO cache_edits (session_id, position, boundary_uuid, message_index, tool_use_ids, decided_seq)
         SELECT ?2, position, boundary_uuid, message_index, tool_use_ids, decided_seq FROM cache_edits WHERE session_id = ?1",
        params![from, to],
    )?;
    Ok(())
}
