//! SQLite edge. One writer thread owns the write connection and runs every write as a
//! `BEGIN IMMEDIATE` transaction fed by a channel; reads use pooled connections on the
//! blocking pool. Nothing here ever blocks the async runtime.

pub mod cache_edits;
pub mod capabilities;
pub mod collapses;
pub mod compile_log;
pub mod context_state;
pub mod fates;
pub mod memory;
pub mod queued;
pub mod records;
pub mod sections;
pub mod sessions;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use include_dir::{Dir, include_dir};
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use rusqlite_migration::Migrations;
use tokio::sync::oneshot;

use crate::error::{Error, Result};

static MIGRATIONS_DIR: Dir = include_dir!("$CARGO_MANIFEST_DIR/../migrations");

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    writer: Mutex<Option<std::sync::mpsc::Sender<Job>>>,
    readers: Mutex<Vec<Connection>>,
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(())
}

/// Applies every migration in `migrations/` that the database has not seen.
pub fn migrate(conn: &mut Connection) -> Result<()> {
    let migrations = Migrations::from_directory(&MIGRATIONS_DIR)
        .map_err(|e| Error::Storage(format!("migrations: {e}")))?;
    migrations
        .to_latest(conn)
        .map_err(|e| Error::Storage(format!("migrations: {e}")))
}

impl Store {
    /// Opens (creating if needed) the database, applies migrations and starts the writer.
    pub fn open(path: &Path) -> Result<Store> {
        let mut conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        configure(&conn)?;
        migrate(&mut conn)?;
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("ctxd-sqlite-writer".into())
            .spawn(move || {
                let mut conn = conn;
                while let Ok(job) = rx.recv() {
                    job(&mut conn);
                }
            })
            .map_err(|e| Error::Internal(format!("spawn writer: {e}")))?;
        Ok(Store {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                writer: Mutex::new(Some(tx)),
                readers: Mutex::new(Vec::new()),
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `f` inside one `BEGIN IMMEDIATE` transaction on the writer thread. The
    /// transaction commits only when `f` returns `Ok`, so a failed batch writes nothing.
    pub async fn write<R, F>(&self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&rusqlite::Transaction<'_>) -> Result<R> + Send + 'static,
    {
        let (reply_tx, reply_rx) = oneshot::channel();
        let job: Job = Box::new(move |conn: &mut Connection| {
            let result = (|| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let value = f(&tx)?;
                tx.commit()?;
                Ok(value)
            })();
            let _ = reply_tx.send(result);
        });
        let sender = self
            .inner
            .writer
            .lock()
            .map_err(|_| Error::Internal("writer lock poisoned".into()))?
            .clone()
            .ok_or_else(|| Error::Storage("store is closed".into()))?;
        sender
            .send(job)
            .map_err(|_| Error::Storage("writer thread stopped".into()))?;
        reply_rx
            .await
            .map_err(|_| Error::Storage("writer thread dropped the reply".into()))?
    }

    /// Queues `f` like [`Store::write`] without waiting for it: bookkeeping a caller must
    /// not wait for. It is queued before this returns, so writes queued later run after
    /// it; a failure is only logged.
    pub fn write_detached<F>(&self, what: &'static str, f: F)
    where
        F: FnOnce(&rusqlite::Transaction<'_>) -> Result<()> + Send + 'static,
    {
        let job: Job = Box::new(move |conn: &mut Connection| {
            let result = (|| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                f(&tx)?;
                tx.commit()?;
                Ok::<(), Error>(())
            })();
            if let Err(e) = result {
                tracing::warn!(error = %e, "{what} not stored");
            }
        });
        let sender = self.inner.writer.lock().ok().and_then(|w| w.clone());
        if sender.and_then(|s| s.send(job).ok()).is_none() {
            tracing::warn!("{what} not stored: the store is closed");
        }
    }

    /// Runs `f` on a pooled read connection on the blocking pool.
    pub async fn read<R, F>(&self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> Result<R> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let pooled = inner.readers.lock().ok().and_then(|mut v| v.pop());
            let conn = match pooled {
                Some(c) => c,
                None => {
                    let c = Connection::open_with_flags(
                        &inner.path,
                        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                    )?;
                    configure(&c)?;
                    c
                }
            };
            let result = f(&conn);
            if let Ok(mut v) = inner.readers.lock()
                && v.len() < 8
            {
                v.push(conn);
            }
            result
        })
        .await
        .map_err(|e| Error::Internal(format!("read task: {e}")))?
    }

    /// Stops accepting writes; queued writes still finish.
    pub fn close(&self) {
        if let Ok(mut w) = self.inner.writer.lock() {
            w.take();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn migrations_apply_and_failed_write_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let r: Result<()> = store
            .write(|tx| {
                tx.execute(
                    "INSERT INTO sessions (id, cwd, original_cwd, model_profile, settings, start_date, created_at, updated_at) VALUES ('a','/','/','{}','{}','2026-01-01','t','t')",
                    [],
                )?;
                Err(Error::invalid("x", "refused"))
            })
            .await;
        assert!(r.is_err());
        let n: i64 = store
            .read(|c| Ok(c.query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))?))
            .await
            .unwrap();
        assert_eq!(n, 0);
        let v: i64 = store
            .read(|c| Ok(c.query_row("PRAGMA user_version", [], |r| r.get(0))?))
            .await
            .unwrap();
        assert!(v >= 1);
    }
}
