//! Session rows.

use ctxd_protocol::{
    AgentInfo, ModelProfile, SessionInfo, SessionSettings, SystemPrompt, ToolSpec,
};

use super::db::{Db, Dialect, Row, params};

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
    /// Set when the session holds a sub-agent's thread.
    pub agent: Option<AgentInfo>,
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
            agent: self.agent.clone(),
        }
    }
}

const COLUMNS: &str = "id, cwd, original_cwd, model_profile, settings, additional_dirs, system_prompt, start_date, git_snapshot, parent_session_id, forked_from_uuid, title, created_at, updated_at, agent";

fn from_row(row: Row) -> Result<SessionRow> {
    let system = match row.opt_text(6)? {
        Some(s) => Some(serde_json::from_str(&s)?),
        None => None,
    };
    Ok(SessionRow {
        id: row.text(0)?,
        cwd: row.text(1)?,
        original_cwd: row.text(2)?,
        model: row.json(3)?,
        settings: row.json(4)?,
        additional_directories: row.json(5)?,
        system,
        start_date: row.text(7)?,
        git_snapshot: row.opt_text(8)?,
        parent_session_id: row.opt_text(9)?,
        forked_from_uuid: row.opt_text(10)?,
        title: row.opt_text(11)?,
        created_at: row.text(12)?,
        updated_at: row.text(13)?,
        agent: match row.opt_text(14)? {
            Some(a) => Some(serde_json::from_str(&a)?),
            None => None,
        },
    })
}

pub fn insert(db: &mut dyn Db, s: &SessionRow) -> Result<()> {
    let system = s.system.as_ref().map(serde_json::to_string).transpose()?;
    let (model, settings, dirs) = (
        serde_json::to_string(&s.model)?,
        serde_json::to_string(&s.settings)?,
        serde_json::to_string(&s.additional_directories)?,
    );
    let agent = s.agent.as_ref().map(serde_json::to_string).transpose()?;
    db.execute(
        &format!("INSERT INTO sessions ({COLUMNS}, agent_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"),
        params![
            &s.id,
            &s.cwd,
            &s.original_cwd,
            &model,
            &settings,
            &dirs,
            system.as_ref(),
            &s.start_date,
            s.git_snapshot.as_ref(),
            s.parent_session_id.as_ref(),
            s.forked_from_uuid.as_ref(),
            s.title.as_ref(),
            &s.created_at,
            &s.updated_at,
            agent.as_ref(),
            s.agent.as_ref().map(|a| &a.agent_id),
        ],
    )?;
    Ok(())
}

/// Rewrites the mutable columns of a session.
pub fn update(db: &mut dyn Db, s: &SessionRow) -> Result<()> {
    let system = s.system.as_ref().map(serde_json::to_string).transpose()?;
    let (model, settings) = (
        serde_json::to_string(&s.model)?,
        serde_json::to_string(&s.settings)?,
    );
    let agent = s.agent.as_ref().map(serde_json::to_string).transpose()?;
    let n = db.execute(
        "UPDATE sessions SET cwd = ?2, model_profile = ?3, settings = ?4, system_prompt = ?5, title = ?6, updated_at = ?7, agent = ?8 WHERE id = ?1",
        params![
            &s.id,
            &s.cwd,
            &model,
            &settings,
            system.as_ref(),
            s.title.as_ref(),
            &s.updated_at,
            agent.as_ref(),
        ],
    )?;
    if n == 0 {
        return Err(Error::SessionNotFound(s.id.clone()));
    }
    Ok(())
}

pub fn touch(db: &mut dyn Db, id: &str, now: &str) -> Result<()> {
    db.execute(
        "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
        params![id, now],
    )?;
    Ok(())
}

pub fn get(db: &mut dyn Db, id: &str) -> Result<SessionRow> {
    db.query_opt(
        &format!("SELECT {COLUMNS} FROM sessions WHERE id = ?1"),
        params![id],
    )?
    .map(from_row)
    .transpose()?
    .ok_or_else(|| Error::SessionNotFound(id.to_string()))
}

/// The session's revision (bumped by every write transaction of a shared store; always
/// 0 on SQLite, where one daemon owns the database).
pub fn revision(db: &mut dyn Db, id: &str) -> Result<u64> {
    match db.dialect() {
        Dialect::Sqlite => Ok(0),
        Dialect::Postgres => db
            .query_opt("SELECT revision FROM sessions WHERE id = ?1", params![id])?
            .map_or(Ok(0), |r| r.u64(0)),
    }
}

pub fn exists(db: &mut dyn Db, id: &str) -> Result<bool> {
    Ok(db
        .query_opt("SELECT 1 FROM sessions WHERE id = ?1", params![id])?
        .is_some())
}

/// Newest first; sub-agents' threads are listed by [`agents`].
pub fn list(db: &mut dyn Db, limit: u32) -> Result<Vec<SessionRow>> {
    db.query_map(
        &format!("SELECT {COLUMNS} FROM sessions WHERE agent_id IS NULL ORDER BY created_at DESC, id DESC LIMIT ?1"),
        params![limit],
        from_row,
    )
}

/// Every main session (not a sub-agent's thread), least recently updated first:
/// `(id, updated_at, bytes)`, where `bytes` is the length of its records' stored JSON and
/// of its threads' (what deleting it frees, near enough, on either backend).
pub fn by_age(db: &mut dyn Db) -> Result<Vec<(String, String, u64)>> {
    db.query_map(
        "SELECT s.id, s.updated_at, \
           COALESCE((SELECT SUM(length(r.body)) FROM records r WHERE r.session_id = s.id \
             OR r.session_id IN (SELECT c.id FROM sessions c WHERE c.parent_session_id = s.id)), 0) \
         FROM sessions s WHERE s.agent_id IS NULL ORDER BY s.updated_at, s.id",
        params![],
        |r| Ok((r.text(0)?, r.text(1)?, r.u64(2)?)),
    )
}

pub fn count(db: &mut dyn Db) -> Result<u64> {
    db.query_one("SELECT count(*) FROM sessions", params![])?
        .u64(0)
}

pub fn delete(db: &mut dyn Db, id: &str) -> Result<bool> {
    // The session's collection state goes with it (foreign keys cascade).
    db.context_changed();
    Ok(db.execute("DELETE FROM sessions WHERE id = ?1", params![id])? > 0)
}

/// The session holding sub-agent `agent_id`'s thread of session `parent`.
pub fn agent_thread(db: &mut dyn Db, parent: &str, agent_id: &str) -> Result<Option<String>> {
    db.query_opt(
        "SELECT id FROM sessions WHERE parent_session_id = ?1 AND agent_id = ?2",
        params![parent, agent_id],
    )?
    .map(|r| r.text(0))
    .transpose()
}

/// The sessions holding the sub-agents of `parent`, in the order they started.
pub fn agents(db: &mut dyn Db, parent: &str) -> Result<Vec<SessionRow>> {
    db.query_map(
        &format!("SELECT {COLUMNS} FROM sessions WHERE parent_session_id = ?1 AND agent_id IS NOT NULL ORDER BY created_at, id"),
        params![parent],
        from_row,
    )
}

pub fn set_tools(db: &mut dyn Db, id: &str, tools: &[ToolSpec]) -> Result<()> {
    db.execute("DELETE FROM tools WHERE session_id = ?1", params![id])?;
    for (i, t) in tools.iter().enumerate() {
        let spec = serde_json::to_string(t)?;
        db.execute(
            "INSERT INTO tools (session_id, position, name, spec) VALUES (?1, ?2, ?3, ?4)",
            params![id, i, &t.name, &spec],
        )?;
    }
    Ok(())
}

pub fn tools(db: &mut dyn Db, id: &str) -> Result<Vec<ToolSpec>> {
    db.query_map(
        "SELECT spec FROM tools WHERE session_id = ?1 ORDER BY position",
        params![id],
        |r| r.json(0),
    )
}

pub fn add_rejected_media(db: &mut dyn Db, id: &str, uuid: &str, index: u32) -> Result<()> {
    db.execute(
        "INSERT INTO rejected_media (session_id, record_uuid, block_index) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
        params![id, uuid, index],
    )?;
    Ok(())
}

pub fn rejected_media(db: &mut dyn Db, id: &str) -> Result<Vec<(String, u32)>> {
    db.query_map(
        "SELECT record_uuid, block_index FROM rejected_media WHERE session_id = ?1 ORDER BY record_uuid, block_index",
        params![id],
        |r| Ok((r.text(0)?, r.u32(1)?)),
    )
}

/// A session row with only what the schema requires: for store tests of tables that
/// reference sessions.
#[cfg(test)]
pub(crate) fn insert_bare(db: &mut dyn Db, id: &str) -> Result<()> {
    db.execute(
        "INSERT INTO sessions (id, cwd, original_cwd, model_profile, settings, start_date, created_at, updated_at) VALUES (?1,'/','/','{}','{}','2026-01-01','t','t')",
        params![id],
    )?;
    Ok(())
}
