//! Queued user input (`transcript.queue`), oldest first per agent.

use ctxd_protocol::{ContentBlock, QueuedEntry};

use super::db::{Db, params};
use crate::error::{Error, Result};

/// The main thread's agent id in the table.
const MAIN: &str = "";

fn agent_key(agent: Option<&str>) -> &str {
    agent.unwrap_or(MAIN)
}

pub fn insert(db: &mut dyn Db, session: &str, e: &QueuedEntry) -> Result<()> {
    db.context_changed();
    let content =
        serde_json::to_string(&e.content).map_err(|err| Error::Internal(err.to_string()))?;
    db.execute(
        "INSERT INTO queued_input (session_id, queue_id, agent_id, content, queued_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            session,
            e.queue_id.as_str(),
            agent_key(e.agent_id.as_deref()),
            &content,
            e.queued_at.as_str()
        ],
    )?;
    Ok(())
}

/// Entries of one agent (`Some(None)` is the main thread) or of all (`None`), oldest
/// first (queue ids are time-ordered uuids).
pub fn list(
    db: &mut dyn Db,
    session: &str,
    agent: Option<Option<&str>>,
) -> Result<Vec<QueuedEntry>> {
    let rows = match agent.map(agent_key) {
        Some(key) => db.query(
            "SELECT queue_id, agent_id, content, queued_at FROM queued_input
             WHERE session_id = ?1 AND agent_id = ?2 ORDER BY queue_id",
            params![session, key],
        )?,
        None => db.query(
            "SELECT queue_id, agent_id, content, queued_at FROM queued_input
             WHERE session_id = ?1 ORDER BY queue_id",
            params![session],
        )?,
    };
    let mut out = Vec::with_capacity(rows.len());
    for mut r in rows {
        let (queue_id, agent, content, queued_at) = (
            r.take_text(0)?,
            r.take_text(1)?,
            r.take_text(2)?,
            r.take_text(3)?,
        );
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

pub fn remove(db: &mut dyn Db, session: &str, ids: &[String]) -> Result<()> {
    db.context_changed();
    for id in ids {
        db.execute(
            "DELETE FROM queued_input WHERE session_id = ?1 AND queue_id = ?2",
            params![session, id.as_str()],
        )?;
    }
    Ok(())
}
