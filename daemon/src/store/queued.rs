//! Queued user input (`transcript.queue`), oldest first per agent.

use ctxd_protocol::{ContentBlock, QueuedEntry};
use rusqlite::{Connection, params};

use crate::error::{Error, Result};

/// The main thread's agent id in the table.
const MAIN: &str = "";

fn agent_key(agent: Option<&str>) -> &str {
    agent.unwrap_or(MAIN)
}

pub fn insert(conn: &Connection, session: &str, e: &QueuedEntry) -> Result<()> {
    let content =
        serde_json::to_string(&e.content).map_err(|err| Error::Internal(err.to_string()))?;
    conn.execute(
        "INSERT INTO queued_input (session_id, queue_id, agent_id, content, queued_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![session, e.queue_id, agent_key(e.agent_id.as_deref()), content, e.queued_at],
    )?;
    Ok(())
}

/// Entries of one agent (`Some(None)` is the main thread) or of all (`None`), oldest
/// first (queue ids are time-ordered uuids).
pub fn list(
    conn: &Connection,
    session: &str,
    agent: Option<Option<&str>>,
) -> Result<Vec<QueuedEntry>> {
    let mut stmt = conn.prepare_cached(
        "SELECT queue_id, agent_id, content, queued_at FROM queued_input
         WHERE session_id = ?1 AND (?2 IS NULL OR agent_id = ?2) ORDER BY queue_id",
    )?;
    let key = agent.map(agent_key);
    let rows = stmt.query_map(params![session, key], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (queue_id, agent, content, queued_at) = row?;
        let content: Vec<ContentBlock> = serde_json::from_str(&content)
            .map_err(|e| Error::Storage(format!("queued input {queue_id}: {e}")))?;
        out.push(QueuedEntry {
            queue_id,
            agent_id: (!agent.is_empty()).then_some(agent),
            content,
            queued_at,
        });
    }
    Ok(out)
}

pub fn remove(conn: &Connection, session: &str, ids: &[String]) -> Result<()> {
    let mut stmt =
        conn.prepare_cached("DELETE FROM queued_input WHERE session_id = ?1 AND queue_id = ?2")?;
    for id in ids {
        stmt.execute(params![session, id])?;
    }
    Ok(())
}
