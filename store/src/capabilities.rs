//! The capability state of a session (MCP servers, agent types, the MCP system memo,
//! RPC-reported discoveries and skill invocations): one JSON document per session.

use super::db::{Db, params};
use crate::error::{Error, Result};
use ctxd_pipeline::capabilities::CapabilityState;

pub fn load(db: &mut dyn Db, session: &str) -> Result<CapabilityState> {
    let text = db
        .query_opt(
            "SELECT state FROM capability_state WHERE session_id = ?1",
            params![session],
        )?
        .map(|mut r| r.take_text(0))
        .transpose()?;
    match text {
        None => Ok(CapabilityState::default()),
        Some(t) => serde_json::from_str(&t)
            .map_err(|e| Error::Storage(format!("capability state of {session}: {e}"))),
    }
}

pub fn save(db: &mut dyn Db, session: &str, state: &CapabilityState) -> Result<()> {
    let text = serde_json::to_string(state)
        .map_err(|e| Error::Internal(format!("serialise capability state: {e}")))?;
    db.execute(
        "INSERT INTO capability_state (session_id, state) VALUES (?1, ?2)
         ON CONFLICT (session_id) DO UPDATE SET state = excluded.state",
        params![session, &text],
    )?;
    Ok(())
}

/// A fork inherits the state, minus what was reported after its last record.
pub fn copy(db: &mut dyn Db, from: &str, to: &str, up_to_seq: u64) -> Result<()> {
    let state = load(db, from)?.up_to(up_to_seq);
    if state == CapabilityState::default() {
        return Ok(());
    }
    save(db, to, &state)
}
