//! Session rows.

use ctxd_protocol::{ModelProfile, SessionInfo, SessionSettings, SystemPrompt, ToolSpec};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::error::{Error, Result};

/// Everything stored about a session besides its transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRow {
    pub id: String,
    pub cwd: String,
    pub original_cwd: String,
    pub model: ModelProfile,
    pub settings: SessionSettings,
    pub additional_directories: Vec<String>,
    pub system: Option<SystemPrompt>,
    pub start_date: String,
    pub git_snapshot: Option<String>,
    pub parent_session_id: Option<String>,
    pub forked_from_uuid: Option<String>,
    pub title: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl SessionRow {
    pub fn info(&self, record_count: u64, last_uuid: Option<String>) -> SessionInfo {
        SessionInfo {
            session_id: self.id.clone(),
            cwd: self.cwd.clone(),
            original_cwd: self.original_cwd.clone(),
            model: self.model.clone(),
            settings: self.settings.clone(),
            additional_directories: self.additional_directories.clone(),
            start_date: self.start_date.clone(),
            parent_session_id: self.parent_session_id.clone(),
            forked_from_uuid: self.forked_from_uuid.clone(),
            title: self.title.clone(),
            created_at: self.created_at.clone(),
            updated_at: self.updated_at.clone(),
            record_count,
            last_uuid,
        }
    }
}

const COLUMNS: &str = "id, cwd, original_cwd, model_profile, settings, additional_dirs, system_prompt, start_date, git_snapshot, parent_session_id, forked_from_uuid, title, created_at, updated_at";

fn json_col<T: serde::de::DeserializeOwned>(row: &Row<'_>, idx: usize) -> rusqlite::Result<T> {
    let text: String = row.get(idx)?;
    serde_json::from_str(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn from_row(row: &Row<'_>) -> rusqlite::Result<SessionRow> {
    let system: Option<String> = row.get(6)?;
    let system = match system {
        Some(s) => Some(serde_json::from_str(&s).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(6, rusqlite::types::Type::Text, Box::new(e))
        })?),
        None => None,
    };
    Ok(SessionRow {
        id: row.get(0)?,
        cwd: row.get(1)?,
        original_cwd: row.get(2)?,
        model: json_col(row, 3)?,
        settings: json_col(row, 4)?,
        additional_directories: json_col(row, 5)?,
        system,
        start_date: row.get(7)?,
        git_snapshot: row.get(8)?,
        parent_session_id: row.get(9)?,
        forked_from_uuid: row.get(10)?,
        title: row.get(11)?,
        created_at: row.get(12)?,
        updated_at: row.get(13)?,
    })
}

pub fn insert(conn: &Connection, s: &SessionRow) -> Result<()> {
    let system = s.system.as_ref().map(serde_json::to_string).transpose()?;
    conn.execute(
        &format!("INSERT INTO sessions ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"),
        params![
            s.id,
            s.cwd,
            s.original_cwd,
            serde_json::to_string(&s.model)?,
            serde_json::to_string(&s.settings)?,
            serde_json::to_string(&s.additional_directories)?,
            system,
            s.start_date,
            s.git_snapshot,
            s.parent_session_id,
            s.forked_from_uuid,
            s.title,
            s.created_at,
            s.updated_at,
        ],
    )?;
    Ok(())
}

/// Rewrites the mutable columns of a session.
pub fn update(conn: &Connection, s: &SessionRow) -> Result<()> {
    let system = s.system.as_ref().map(serde_json::to_string).transpose()?;
    let n = conn.execute(
        "UPDATE sessions SET cwd = ?2, model_profile = ?3, settings = ?4, system_prompt = ?5, title = ?6, updated_at = ?7 WHERE id = ?1",
        params![
            s.id,
            s.cwd,
            serde_json::to_string(&s.model)?,
            serde_json::to_string(&s.settings)?,
            system,
            s.title,
            s.updated_at,
        ],
    )?;
    if n == 0 {
        return Err(Error::SessionNotFound(s.id.clone()));
    }
    Ok(())
}

pub fn touch(conn: &Connection, id: &str, now: &str) -> Result<()> {
    conn.execute(
        "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
        params![id, now],
    )?;
    Ok(())
}

pub fn get(conn: &Connection, id: &str) -> Result<SessionRow> {
    conn.query_row(
        &format!("SELECT {COLUMNS} FROM sessions WHERE id = ?1"),
        [id],
        from_row,
    )
    .optional()?
    .ok_or_else(|| Error::SessionNotFound(id.to_string()))
}

pub fn exists(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn
        .query_row("SELECT 1 FROM sessions WHERE id = ?1", [id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Newest first.
pub fn list(conn: &Connection, limit: u32) -> Result<Vec<SessionRow>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {COLUMNS} FROM sessions ORDER BY created_at DESC, id DESC LIMIT ?1"
    ))?;
    let rows = stmt.query_map([limit], from_row)?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

pub fn count(conn: &Connection) -> Result<u64> {
    Ok(conn.query_row("SELECT count(*) FROM sessions", [], |r| r.get::<_, i64>(0))? as u64)
}

pub fn delete(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn.execute("DELETE FROM sessions WHERE id = ?1", [id])? > 0)
}

pub fn set_tools(conn: &Connection, id: &str, tools: &[ToolSpec]) -> Result<()> {
    conn.execute("DELETE FROM tools WHERE session_id = ?1", [id])?;
    let mut stmt = conn
        .prepare("INSERT INTO tools (session_id, position, name, spec) VALUES (?1, ?2, ?3, ?4)")?;
    for (i, t) in tools.iter().enumerate() {
        stmt.execute(params![id, i as i64, t.name, serde_json::to_string(t)?])?;
    }
    Ok(())
}

pub fn tools(conn: &Connection, id: &str) -> Result<Vec<ToolSpec>> {
    let mut stmt =
        conn.prepare("SELECT spec FROM tools WHERE session_id = ?1 ORDER BY position")?;
    let rows = stmt.query_map([id], |r| json_col::<ToolSpec>(r, 0))?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

pub fn add_rejected_media(conn: &Connection, id: &str, uuid: &str, index: u32) -> Result<()> {
    conn.execute(
        "INSERT OR IGNORE INTO rejected_media (session_id, record_uuid, block_index) VALUES (?1, ?2, ?3)",
        params![id, uuid, index],
    )?;
    Ok(())
}

pub fn rejected_media(conn: &Connection, id: &str) -> Result<Vec<(String, u32)>> {
    let mut stmt = conn.prepare(
        "SELECT record_uuid, block_index FROM rejected_media WHERE session_id = ?1 ORDER BY record_uuid, block_index",
    )?;
    let rows = stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}
