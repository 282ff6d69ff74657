//! Instruction memo, loaded instruction paths, touched paths and file read state.

use std::collections::BTreeSet;

use super::db::{Db, params};
use crate::error::Result;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionMemo {
    pub claude_md: Option<String>,
    pub boundary_uuid: String,
    pub announced_date: String,
}

pub fn memo(db: &mut dyn Db, session: &str) -> Result<Option<InstructionMemo>> {
    db.query_opt(
        "SELECT claude_md, boundary_uuid, announced_date FROM instruction_state WHERE session_id = ?1",
        params![session],
    )?
    .map(|r| {
        Ok(InstructionMemo {
            claude_md: r.opt_text(0)?,
            boundary_uuid: r.text(1)?,
            announced_date: r.text(2)?,
        })
    })
    .transpose()
}

pub fn set_memo(db: &mut dyn Db, session: &str, m: &InstructionMemo) -> Result<()> {
    db.execute(
        "INSERT INTO instruction_state (session_id, claude_md, boundary_uuid, announced_date) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (session_id) DO UPDATE SET claude_md = ?2, boundary_uuid = ?3, announced_date = ?4",
        params![session, m.claude_md.as_ref(), &m.boundary_uuid, &m.announced_date],
    )?;
    Ok(())
}

pub fn loaded(db: &mut dyn Db, session: &str) -> Result<BTreeSet<String>> {
    let paths = db.query_map(
        "SELECT path FROM loaded_instructions WHERE session_id = ?1",
        params![session],
        |r| r.text(0),
    )?;
    Ok(paths.into_iter().collect())
}

pub fn add_loaded(db: &mut dyn Db, session: &str, paths: &[String]) -> Result<()> {
    // Nothing added changes nothing a collection reads: its kept rows stand.
    if paths.is_empty() {
        return Ok(());
    }
    db.context_changed();
    for p in paths {
        db.execute(
            "INSERT INTO loaded_instructions (session_id, path) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            params![session, p],
        )?;
    }
    Ok(())
}

pub fn clear_loaded(db: &mut dyn Db, session: &str) -> Result<()> {
    db.context_changed();
    db.execute(
        "DELETE FROM loaded_instructions WHERE session_id = ?1",
        params![session],
    )?;
    Ok(())
}

pub fn touched(db: &mut dyn Db, session: &str) -> Result<Vec<String>> {
    db.query_map(
        "SELECT path FROM touched_paths WHERE session_id = ?1 ORDER BY path",
        params![session],
        |r| r.text(0),
    )
}

pub fn add_touched(db: &mut dyn Db, session: &str, paths: &[String]) -> Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    db.context_changed();
    for p in paths {
        db.execute(
            "INSERT INTO touched_paths (session_id, path) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            params![session, p],
        )?;
    }
    Ok(())
}

pub fn clear_touched(db: &mut dyn Db, session: &str) -> Result<()> {
    db.context_changed();
    db.execute(
        "DELETE FROM touched_paths WHERE session_id = ?1",
        params![session],
    )?;
    Ok(())
}

/// What the model has seen of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadState {
    pub path: String,
    pub size: u64,
    pub mtime_ns: i64,
    pub sha256: String,
    pub content: Option<String>,
}

/// What tells whether a seen file changed, without what the model saw of it: a compile
/// reads the stamps of every seen file, the content only of those that changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadStamp {
    pub path: String,
    pub size: u64,
    pub mtime_ns: i64,
    pub sha256: String,
}

pub fn read_stamps(db: &mut dyn Db, session: &str) -> Result<Vec<ReadStamp>> {
    db.query_map(
        "SELECT path, size, mtime_ns, sha256 FROM file_read_state WHERE session_id = ?1 ORDER BY path",
        params![session],
        |r| {
            Ok(ReadStamp {
                path: r.text(0)?,
                size: r.u64(1)?,
                mtime_ns: r.int(2)?,
                sha256: r.text(3)?,
            })
        },
    )
}

/// The content the model saw of `path` (`None` when not kept: too large or not text, or
/// the file is no longer among those seen).
pub fn read_content(db: &mut dyn Db, session: &str, path: &str) -> Result<Option<String>> {
    db.query_opt(
        "SELECT content FROM file_read_content WHERE session_id = ?1 AND path = ?2",
        params![session, path],
    )?
    .map_or(Ok(None), |r| r.opt_text(0))
}

pub fn put_read_state(db: &mut dyn Db, session: &str, s: &ReadState) -> Result<()> {
    db.context_changed();
    db.execute(
        "INSERT INTO file_read_state (session_id, path, size, mtime_ns, sha256) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (session_id, path) DO UPDATE SET size = ?3, mtime_ns = ?4, sha256 = ?5",
        params![session, &s.path, s.size, s.mtime_ns, &s.sha256],
    )?;
    match &s.content {
        Some(content) => db.execute(
            "INSERT INTO file_read_content (session_id, path, content) VALUES (?1, ?2, ?3)
             ON CONFLICT (session_id, path) DO UPDATE SET content = ?3",
            params![session, &s.path, content],
        )?,
        None => db.execute(
            "DELETE FROM file_read_content WHERE session_id = ?1 AND path = ?2",
            params![session, &s.path],
        )?,
    };
    Ok(())
}

pub fn remove_read_state(db: &mut dyn Db, session: &str, path: &str) -> Result<()> {
    db.context_changed();
    db.execute(
        "DELETE FROM file_read_state WHERE session_id = ?1 AND path = ?2",
        params![session, path],
    )?;
    Ok(())
}

pub fn clear_read_state(db: &mut dyn Db, session: &str) -> Result<()> {
    db.context_changed();
    db.execute(
        "DELETE FROM file_read_state WHERE session_id = ?1",
        params![session],
    )?;
    Ok(())
}

/// Every (session, path) with read state, to re-register watches after a restart.
pub fn all_watched(db: &mut dyn Db) -> Result<Vec<(String, String)>> {
    db.query_map(
        "SELECT session_id, path FROM file_read_state",
        params![],
        |r| Ok((r.text(0)?, r.text(1)?)),
    )
}

/// Copies instruction and read state to a fork.
pub fn copy(db: &mut dyn Db, from: &str, to: &str) -> Result<()> {
    db.context_changed();
    db.execute(
        "INSERT INTO instruction_state (session_id, claude_md, boundary_uuid, announced_date) SELECT CAST(?2 AS TEXT), claude_md, boundary_uuid, announced_date FROM instruction_state WHERE session_id = ?1",
        params![from, to],
    )?;
    db.execute(
        "INSERT INTO loaded_instructions (session_id, path) SELECT CAST(?2 AS TEXT), path FROM loaded_instructions WHERE session_id = ?1",
        params![from, to],
    )?;
    copy_read_state(db, from, to)
}

/// Copies the files `from` has seen, with the content it saw, to `to` (a sub-agent
/// starts with what its parent read).
pub fn copy_read_state(db: &mut dyn Db, from: &str, to: &str) -> Result<()> {
    db.context_changed();
    db.execute(
        "INSERT INTO file_read_state (session_id, path, size, mtime_ns, sha256) SELECT CAST(?2 AS TEXT), path, size, mtime_ns, sha256 FROM file_read_state WHERE session_id = ?1",
        params![from, to],
    )?;
    db.execute(
        "INSERT INTO file_read_content (session_id, path, content) SELECT CAST(?2 AS TEXT), path, content FROM file_read_content WHERE session_id = ?1",
        params![from, to],
    )?;
    Ok(())
}

/// Autocompact's consecutive failures.
pub fn compaction_failures(db: &mut dyn Db, session: &str) -> Result<u32> {
    db.query_opt(
        "SELECT consecutive_failures FROM compaction_state WHERE session_id = ?1",
        params![session],
    )?
    .map_or(Ok(0), |r| r.u32(0))
}

pub fn set_compaction_failures(
    db: &mut dyn Db,
    session: &str,
    n: u32,
    error: Option<&str>,
) -> Result<()> {
    db.execute(
        "INSERT INTO compaction_state (session_id, consecutive_failures, last_error) VALUES (?1, ?2, ?3)
         ON CONFLICT (session_id) DO UPDATE SET consecutive_failures = ?2, last_error = ?3",
        params![session, n, error],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;

    fn state(path: &str, content: Option<&str>) -> ReadState {
        ReadState {
            path: path.into(),
            size: content.map_or(7, |c| c.len() as u64),
            mtime_ns: 1,
            sha256: format!("sha of {content:?}"),
            content: content.map(str::to_string),
        }
    }

    /// The content the model saw is kept apart from the stamp, follows it on a fork, is
    /// replaced or dropped with it, and goes with the file's state.
    #[tokio::test]
    async fn content_follows_its_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let got = store
            .write("a", |tx| {
                for id in ["a", "b"] {
                    crate::sessions::insert_bare(tx, id)?;
                }
                put_read_state(tx, "a", &state("/x", Some("one")))?;
                put_read_state(tx, "a", &state("/y", Some("why")))?;
                copy(tx, "a", "b")?;
                put_read_state(tx, "a", &state("/x", Some("two")))?;
                put_read_state(tx, "a", &state("/y", None))?;
                let stamps: Vec<String> = read_stamps(tx, "a")?
                    .into_iter()
                    .map(|s| s.sha256)
                    .collect();
                let now = (read_content(tx, "a", "/x")?, read_content(tx, "a", "/y")?);
                let forked = (read_content(tx, "b", "/x")?, read_content(tx, "b", "/y")?);
                remove_read_state(tx, "b", "/x")?;
                clear_read_state(tx, "a")?;
                let left = tx.query_map(
                    "SELECT session_id, path FROM file_read_content ORDER BY session_id, path",
                    params![],
                    |r| Ok((r.text(0)?, r.text(1)?)),
                )?;
                Ok((stamps, now, forked, left))
            })
            .await
            .unwrap();
        assert_eq!(got.0, ["sha of Some(\"two\")", "sha of None"]);
        assert_eq!(got.1, (Some("two".into()), None));
        assert_eq!(got.2, (Some("one".into()), Some("why".into())));
        assert_eq!(got.3, [("b".to_string(), "/y".to_string())]);
    }
}
