//! The memo of memoized dynamic system sections (one per session, tied to a boundary).

use std::collections::BTreeMap;

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::{Error, Result};
use crate::pipeline::sections::SectionMemo;

pub fn load(conn: &Connection, session: &str) -> Result<Option<SectionMemo>> {
    let row: Option<(String, String)> = conn
        .query_row(
            "SELECT boundary_uuid, texts FROM section_memo WHERE session_id = ?1",
            [session],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    row.map(|(boundary_uuid, texts)| {
        let texts: BTreeMap<String, String> = serde_json::from_str(&texts)
            .map_err(|e| Error::Storage(format!("section memo of {session}: {e}")))?;
        Ok(SectionMemo {
            boundary_uuid,
            texts,
        })
    })
    .transpose()
}

pub fn set(conn: &Connection, session: &str, memo: &SectionMemo) -> Result<()> {
    let texts = serde_json::to_string(&memo.texts).map_err(|e| Error::Internal(e.to_string()))?;
    conn.execute(
        "INSERT INTO section_memo (session_id, boundary_uuid, texts) VALUES (?1, ?2, ?3)
         ON CONFLICT (session_id) DO UPDATE SET boundary_uuid = ?2, texts = ?3",
        params![session, memo.boundary_uuid, texts],
    )?;
    Ok(())
}

pub fn clear(conn: &Connection, session: &str) -> Result<()> {
    conn.execute("DELETE FROM section_memo WHERE session_id = ?1", [session])?;
    Ok(())
}

/// A fork shows what its parent showed: the memo goes with it.
pub fn copy(conn: &Connection, from: &str, to: &str) -> Result<()> {
    conn.execute(
        "INSERT INTO section_memo (session_id, boundary_uuid, texts)
         SELECT ?2, boundary_uuid, texts FROM section_memo WHERE session_id = ?1",
        params![from, to],
    )?;
    Ok(())
}
