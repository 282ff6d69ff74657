//! What keyed the provider's cache in each compile (fingerprints, newest units) and the
//! latched request flags.

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Result;
use crate::pipeline::cache_break::Fingerprint;
use crate::pipeline::cache_prefix::{self, KeyShape};
use crate::pipeline::latch::Latched;

/// Rows kept per session: enough to attribute the breaks of any recent call.
pub const KEEP: u64 = 256;

/// The newest compile's cache key and its history, or `None` before any compile.
pub struct Newest {
    pub id: u64,
    pub boundary_uuid: String,
    pub shape: Option<KeyShape>,
}

pub fn newest(conn: &Connection, session: &str) -> Result<Option<Newest>> {
    let row = conn
        .query_row(
            "SELECT id, boundary_uuid, fingerprint, units, tool_names FROM compile_log
             WHERE session_id = ?1 ORDER BY id DESC LIMIT 1",
            [session],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<Vec<u8>>>(3)?,
                    r.get::<_, Option<String>>(4)?,
                ))
            },
        )
        .optional()?;
    let Some((id, boundary_uuid, fp, units, names)) = row else {
        return Ok(None);
    };
    let fp: Fingerprint = serde_json::from_str(&fp)?;
    // Units written by another build of ctxd that cannot be read only cost one
    // prediction: treat them as absent.
    let shape = match (units.and_then(|u| cache_prefix::decode_units(&u)), names) {
        (Some(units), Some(names)) => Some(KeyShape {
            model: fp.model.clone(),
            flags_hash: fp.flags_hash,
            units,
            tool_names: serde_json::from_str(&names)?,
        }),
        _ => None,
    };
    Ok(Some(Newest {
        id: id as u64,
        boundary_uuid,
        shape,
    }))
}

/// Fingerprints, oldest first; the newest `limit` when given.
pub fn fingerprints(
    conn: &Connection,
    session: &str,
    limit: Option<u64>,
) -> Result<Vec<Fingerprint>> {
    let mut stmt = conn.prepare_cached(
        "SELECT fingerprint FROM compile_log WHERE session_id = ?1 ORDER BY id DESC LIMIT ?2",
    )?;
    let limit = limit.map_or(-1, |l| l as i64);
    let rows = stmt.query_map(params![session, limit], |r| r.get::<_, String>(0))?;
    let mut out = Vec::new();
    for r in rows {
        out.push(serde_json::from_str(&r?)?);
    }
    out.reverse();
    Ok(out)
}

/// Stores a compile; only the newest row keeps its units.
pub fn insert(
    conn: &Connection,
    session: &str,
    id: u64,
    boundary_uuid: &str,
    fp: &Fingerprint,
    shape: &KeyShape,
) -> Result<()> {
    conn.execute(
        "UPDATE compile_log SET units = NULL, tool_names = NULL
         WHERE session_id = ?1 AND units IS NOT NULL",
        [session],
    )?;
    conn.execute(
        "INSERT OR REPLACE INTO compile_log (session_id, id, boundary_uuid, fingerprint, units, tool_names)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            session,
            id as i64,
            boundary_uuid,
            serde_json::to_string(fp)?,
            cache_prefix::encode_units(&shape.units),
            serde_json::to_string(&shape.tool_names)?,
        ],
    )?;
    conn.execute(
        "DELETE FROM compile_log WHERE session_id = ?1 AND id <= ?2",
        params![session, id as i64 - KEEP as i64],
    )?;
    Ok(())
}

pub fn latch(conn: &Connection, session: &str) -> Result<Option<Latched>> {
    let row = conn
        .query_row(
            "SELECT boundary_uuid, flags FROM request_latches WHERE session_id = ?1",
            [session],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
        )
        .optional()?;
    match row {
        Some((boundary_uuid, flags)) => Ok(Some(Latched {
            boundary_uuid,
            flags: serde_json::from_str(&flags)?,
        })),
        None => Ok(None),
    }
}

pub fn set_latch(conn: &Connection, session: &str, l: &Latched) -> Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO request_latches (session_id, boundary_uuid, flags) VALUES (?1, ?2, ?3)",
        params![session, l.boundary_uuid, serde_json::to_string(&l.flags)?],
    )?;
    Ok(())
}

/// A fork continues its parent's request chain: the provider's cache is keyed by
/// content, so the fork's first request reads what the parent wrote.
pub fn copy(conn: &Connection, from: &str, to: &str) -> Result<()> {
    conn.execute(
        "INSERT INTO compile_log (session_id, id, boundary_uuid, fingerprint, units, tool_names)
         SELECT ?2, id, boundary_uuid, fingerprint, units, tool_names FROM compile_log WHERE session_id = ?1",
        params![from, to],
    )?;
    conn.execute(
        "INSERT INTO request_latches (session_id, boundary_uuid, flags)
         SELECT ?2, boundary_uuid, flags FROM request_latches WHERE session_id = ?1",
        params![from, to],
    )?;
    Ok(())
}
