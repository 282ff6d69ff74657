//! The memo of memoized dynamic system sections (one per session, tied to a boundary).

use std::collections::BTreeMap;

use super::db::{Db, params};
use crate::error::{Error, Result};
use ctxd_pipeline::sections::SectionMemo;

pub fn load(db: &mut dyn Db, session: &str) -> Result<Option<SectionMemo>> {
    let Some(mut row) = db.query_opt(
        "SELECT boundary_uuid, texts FROM section_memo WHERE session_id = ?1",
        params![session],
    )?
    else {
        return Ok(None);
    };
    let (boundary_uuid, texts) = (row.take_text(0)?, row.take_text(1)?);
    let texts: BTreeMap<String, String> = serde_json::from_str(&texts)
        .map_err(|e| Error::Storage(format!("section memo of {session}: {e}")))?;
    Ok(Some(SectionMemo {
        boundary_uuid,
        texts,
    }))
}

pub fn set(db: &mut dyn Db, session: &str, memo: &SectionMemo) -> Result<()> {
    let texts = serde_json::to_string(&memo.texts).map_err(|e| Error::Internal(e.to_string()))?;
    db.execute(
        "INSERT INTO section_memo (session_id, boundary_uuid, texts) VALUES (?1, ?2, ?3)
         ON CONFLICT (session_id) DO UPDATE SET boundary_uuid = excluded.boundary_uuid, texts = excluded.texts",
        params![session, memo.boundary_uuid.as_str(), &texts],
    )?;
    Ok(())
}

pub fn clear(db: &mut dyn Db, session: &str) -> Result<()> {
    db.execute(
        "DELETE FROM section_memo WHERE session_id = ?1",
        params![session],
    )?;
    Ok(())
}

/// A fork shows what its parent showed: the memo goes with it.
pub fn copy(db: &mut dyn Db, from: &str, to: &str) -> Result<()> {
    db.execute(
        "INSERT INTO section_memo (session_id, boundary_uuid, texts)
         SELECT CAST(?2 AS TEXT), boundary_uuid, texts FROM section_memo WHERE session_id = ?1",
        params![from, to],
    )?;
    Ok(())
}
