//! The capability state of a session (MCP servers, agent types, the MCP system memo,
//! RPC-reported discoveries and skill invocations): one JSON document per session.

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::{Error, Result};
use crate::pipeline::capabilities::CapabilityState;

pub fn load(conn: &Connection, session: &str) -> Result<CapabilityState> {
    let text: Option<String> = conn
        .query_row(
            "SELECT state FROM capability_state WHERE session_id = ?1",
            [session],
            |r| r.get(0),
        )
        .optional()?;
    match text {
        None => Ok(CapabilityState::default()),
        Some(t) => serde_json::from_str(&t)
            .map_err(|e| Error::Storage(format!("capability state of {session}: {e}"))),
    }
}

pub fn save(conn: &Connection, session: &str, state: &CapabilityState) -> Result<()> {
    let text = serde_json::to_string(state)
        .map_err(|e| Error::Internal(format!("serialise capability state: {e}")))?;
    conn.execute(
        "INSERT INTO capability_state (session_id, state) VALUES (?1, ?2)
         ON CONFLICT (session_id) DO UPDATE SET state = ?2",
        params![session, text],
    )?;
    Ok(())
}

/// A fork inherits the state, minus what was reported after its last record.
pub fn copy(conn: &Connection, from: &str, to: &str, up_to_seq: u64) -> Result<()> {
    let state = load(conn, from)?.up_to(up_to_seq);
    if state == CapabilityState::default() {
        return Ok(());
    }
    save(conn, to, &state)
}
