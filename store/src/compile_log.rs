//! What keyed the provider's cache in each compile (fingerprints, newest units) and the
//! latched request flags.

use super::db::{Db, params};
use crate::error::Result;
use ctxd_pipeline::cache_break::Fingerprint;
use ctxd_pipeline::cache_prefix::{self, KeyShape};
use ctxd_pipeline::latch::Latched;

/// Rows kept per session: enough to attribute the breaks of any recent call.
pub(crate) const KEEP: u64 = 256;

/// Compiles between two prunings of the log.
pub(crate) const PRUNE_EVERY: u64 = 32;

/// The newest compile's cache key and its history, or `None` before any compile.
pub struct Newest {
    pub id: u64,
    pub boundary_uuid: String,
    pub shape: Option<KeyShape>,
}

pub fn newest(db: &mut dyn Db, session: &str) -> Result<Option<Newest>> {
    let row = db.query_opt(
        "SELECT l.id, l.boundary_uuid, l.fingerprint, u.units, u.tool_names FROM compile_log AS l
         LEFT JOIN compile_units AS u ON u.session_id = l.session_id AND u.id = l.id
         WHERE l.session_id = ?1 ORDER BY l.id DESC LIMIT 1",
        params![session],
    )?;
    let Some(row) = row else {
        return Ok(None);
    };
    let fp: Fingerprint = row.json(2)?;
    // Units written by another build of ctxd that cannot be read only cost one
    // prediction: treat them as absent.
    let units = row.opt_blob(3)?;
    let shape = match (
        units.and_then(|u| cache_prefix::decode_units(&u)),
        row.opt_text(4)?,
    ) {
        (Some(units), Some(names)) => Some(KeyShape {
            model: fp.model.clone(),
            flags_hash: fp.flags_hash,
            units,
            tool_names: serde_json::from_str(&names)?,
            // The fingerprint holds the lifetime the markers carried.
            ttl_1h: Some(fp.ttl_is_1h()),
        }),
        _ => None,
    };
    Ok(Some(Newest {
        id: row.u64(0)?,
        boundary_uuid: row.text(1)?,
        shape,
    }))
}

/// Fingerprints, oldest first; the newest `limit` when given.
pub fn fingerprints(
    db: &mut dyn Db,
    session: &str,
    limit: Option<u64>,
) -> Result<Vec<Fingerprint>> {
    let limit = limit.map_or(i64::MAX, |l| i64::try_from(l).unwrap_or(i64::MAX));
    let mut out = db.query_map(
        "SELECT fingerprint FROM compile_log WHERE session_id = ?1 ORDER BY id DESC LIMIT ?2",
        params![session, limit],
        |r| r.json(0),
    )?;
    out.reverse();
    Ok(out)
}

/// Stores a compile, and its units as the session's newest (they replace the previous
/// compile's). The log is pruned to its last `KEEP` rows once every `PRUNE_EVERY`
/// compiles, so it holds fewer than `KEEP + PRUNE_EVERY` rows: deleting the oldest row
/// at each compile wrote two more pages (the oldest rows' and their index's) every time.
pub fn insert(
    db: &mut dyn Db,
    session: &str,
    id: u64,
    boundary_uuid: &str,
    fp: &Fingerprint,
    shape: &KeyShape,
) -> Result<()> {
    let (fp, units, names) = (
        serde_json::to_string(fp)?,
        cache_prefix::encode_units(&shape.units),
        serde_json::to_string(&shape.tool_names)?,
    );
    db.execute(
        "INSERT INTO compile_log (session_id, id, boundary_uuid, fingerprint) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (session_id, id) DO UPDATE SET boundary_uuid = excluded.boundary_uuid,
           fingerprint = excluded.fingerprint",
        params![session, id, boundary_uuid, &fp],
    )?;
    db.execute(
        "INSERT INTO compile_units (session_id, id, units, tool_names) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (session_id) DO UPDATE SET id = excluded.id, units = excluded.units,
           tool_names = excluded.tool_names",
        params![session, id, units.as_slice(), &names],
    )?;
    if id.is_multiple_of(PRUNE_EVERY) {
        db.execute(
            "DELETE FROM compile_log WHERE session_id = ?1 AND id <= ?2",
            params![session, id.saturating_sub(KEEP)],
        )?;
    }
    Ok(())
}

pub fn latch(db: &mut dyn Db, session: &str) -> Result<Option<Latched>> {
    db.query_opt(
        "SELECT boundary_uuid, flags FROM request_latches WHERE session_id = ?1",
        params![session],
    )?
    .map(|r| {
        Ok(Latched {
            boundary_uuid: r.text(0)?,
            flags: r.json(1)?,
        })
    })
    .transpose()
}

pub fn set_latch(db: &mut dyn Db, session: &str, l: &Latched) -> Result<()> {
    let flags = serde_json::to_string(&l.flags)?;
    db.execute(
        "INSERT INTO request_latches (session_id, boundary_uuid, flags) VALUES (?1, ?2, ?3)
         ON CONFLICT (session_id) DO UPDATE SET boundary_uuid = excluded.boundary_uuid, flags = excluded.flags",
        params![session, &l.boundary_uuid, &flags],
    )?;
    Ok(())
}

/// A fork continues its parent's request chain: the provider's cache is keyed by
/// content, so the fork's first request reads what the parent wrote.
pub fn copy(db: &mut dyn Db, from: &str, to: &str) -> Result<()> {
    db.execute(
        "INSERT INTO compile_log (session_id, id, boundary_uuid, fingerprint)
         SELECT CAST(?2 AS TEXT), id, boundary_uuid, fingerprint FROM compile_log WHERE session_id = ?1",
        params![from, to],
    )?;
    db.execute(
        "INSERT INTO compile_units (session_id, id, units, tool_names)
         SELECT CAST(?2 AS TEXT), id, units, tool_names FROM compile_units WHERE session_id = ?1",
        params![from, to],
    )?;
    db.execute(
        "INSERT INTO request_latches (session_id, boundary_uuid, flags)
         SELECT CAST(?2 AS TEXT), boundary_uuid, flags FROM request_latches WHERE session_id = ?1",
        params![from, to],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;

    fn units_of(db: &mut dyn Db, session: &str) -> Result<Vec<i64>> {
        db.query_map(
            "SELECT id FROM compile_units WHERE session_id = ?1",
            params![session],
            |r| r.int(0),
        )
    }

    fn ids(db: &mut dyn Db, session: &str) -> Result<Vec<u64>> {
        db.query_map(
            "SELECT id FROM compile_log WHERE session_id = ?1 ORDER BY id",
            params![session],
            |r| r.u64(0),
        )
    }

    fn shape() -> KeyShape {
        KeyShape {
            tool_names: vec!["Read".into()],
            ..KeyShape::default()
        }
    }

    /// A session keeps the units of its newest compile only, and a fork takes them and
    /// then keeps its own; the newest row reads back with its shape.
    #[tokio::test]
    async fn only_the_newest_compile_keeps_its_units() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("ctxd.db")).unwrap();
        let (units, fork_units, newest) = store
            .write("a", |db| {
                for id in ["a", "b"] {
                    crate::sessions::insert_bare(db, id)?;
                }
                for id in [1, 2, 5] {
                    insert(db, "a", id, "", &Fingerprint::default(), &shape())?;
                }
                copy(db, "a", "b")?;
                assert_eq!(units_of(db, "b")?, [5]);
                insert(db, "b", 6, "", &Fingerprint::default(), &shape())?;
                let newest = newest(db, "a")?.map(|n| (n.id, n.shape.map(|s| s.tool_names)));
                Ok((units_of(db, "a")?, units_of(db, "b")?, newest))
            })
            .await
            .unwrap();
        assert_eq!(units, [5]);
        assert_eq!(fork_units, [6]);
        assert_eq!(newest, Some((5, Some(vec!["Read".to_string()]))));
    }

    /// Pruned every few compiles, the log always holds at least the newest `KEEP`
    /// compiles, and never `KEEP + PRUNE_EVERY` rows.
    #[tokio::test]
    async fn the_log_keeps_the_newest_compiles_between_prunings() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("ctxd.db")).unwrap();
        store
            .write("a", |db| {
                crate::sessions::insert_bare(db, "a")?;
                for id in 1..=KEEP + 3 * PRUNE_EVERY {
                    insert(db, "a", id, "", &Fingerprint::default(), &shape())?;
                    let kept = ids(db, "a")?;
                    let newest: Vec<u64> = (id.saturating_sub(KEEP) + 1..=id).collect();
                    assert!(kept.ends_with(&newest), "after compile {id}");
                    assert!(
                        (kept.len() as u64) < KEEP + PRUNE_EVERY,
                        "after compile {id}"
                    );
                }
                Ok(())
            })
            .await
            .unwrap();
    }
}
