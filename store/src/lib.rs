//! The store: everything the engine persists, behind one handle over either backend —
//! SQLite (embedded, the default) or PostgreSQL (shared by several daemons) — and the
//! error type every layer above it answers with (`error`), since a store write runs the
//! engine's closures and carries their errors.
//!
//! Every store function (the modules below) is written once against the neutral
//! [`Db`] face. Engine code composes them in closures: `store.write(sid, |tx| ...)` runs
//! one transaction on the backend's writer thread, committed only when the closure
//! succeeds; `store.read(|c| ...)` runs on a pooled connection on the blocking pool.
//! Nothing here blocks the async runtime, except `read_short` and `write_short`, which on
//! SQLite run on the caller's thread a read or write of microseconds that a trip to
//! another thread and back would cost more than.

pub mod cache_edits;
pub mod capabilities;
pub mod collapses;
pub mod compile_log;
pub mod context_state;
pub(crate) mod db;
pub mod error;
pub mod fates;
pub mod memory;
pub mod outputs;
mod postgres;
pub mod queued;
pub mod records;
pub mod sections;
pub mod sessions;
mod sqlite;

pub use db::{Db, Dialect};
pub use postgres::notify::{Remote, RemoteWhat};
pub use postgres::{DEFAULT_POOL, PgOptions};
pub use sqlite::{PAGE_SIZE, migrate};

use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use include_dir::{Dir, include_dir};
use tokio::sync::oneshot;

use crate::error::{Error, Result};
use ctxd_pipeline::sync::lock;

static MIGRATIONS_DIR: Dir = include_dir!("$CARGO_MANIFEST_DIR/../migrations");

/// Which backend a daemon stores its sessions in.
#[derive(Debug, Clone, Default)]
pub enum StoreConfig {
    /// `ctxd.db` in the daemon's home: no setup, one daemon.
    #[default]
    Sqlite,
    /// A PostgreSQL database any number of daemons share.
    Postgres(PgOptions),
}

impl StoreConfig {
    /// `--store`: absent or `sqlite` → SQLite; a `postgres://` or `postgresql://` URL.
    pub fn parse(store: Option<&str>, pool: usize) -> Result<StoreConfig> {
        match store.map(str::trim) {
            None | Some("" | "sqlite") => Ok(StoreConfig::Sqlite),
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Ok(StoreConfig::Postgres(PgOptions {
                    url: url.to_string(),
                    pool: pool.max(1),
                    deadline: postgres::DEFAULT_DEADLINE,
                }))
            }
            Some(_) => Err(Error::invalid(
                "store",
                "must be `sqlite` or a postgres:// (postgresql://) URL",
            )),
        }
    }

    /// Opens the store (`sqlite` is the database file of the home). Blocking.
    pub fn open(&self, sqlite: &Path) -> Result<Store> {
        match self {
            StoreConfig::Sqlite => Store::open(sqlite),
            StoreConfig::Postgres(o) => Store::open_postgres(o),
        }
    }

    /// `ctxd migrate`: applies pending migrations; says what it did. Blocking.
    pub fn migrate(&self, sqlite: &Path) -> Result<String> {
        match self {
            StoreConfig::Sqlite => {
                let mut conn = rusqlite::Connection::open(sqlite)?;
                sqlite::set_file_format(&conn)?;
                migrate(&mut conn)?;
                Ok(format!("{} is up to date", sqlite.display()))
            }
            StoreConfig::Postgres(o) => {
                let (before, after) = postgres::migrate_url(&o.url)?;
                Ok(match before == after {
                    true => format!("the database is up to date (migration {after})"),
                    false => format!("migrated the database from {before} to {after}"),
                })
            }
        }
    }
}

/// What a write transaction produced, boxed so one writer thread serves every type.
type Produced = Box<dyn Any + Send>;
/// The work of one write transaction.
type Body = Box<dyn FnOnce(&mut dyn Db) -> Result<()> + Send>;

/// One write transaction for a backend's writer: `body` runs inside it (the transaction
/// commits only if it succeeds), then `done` learns the outcome.
pub(crate) struct WriteJob {
    /// The session the transaction writes (the PostgreSQL backend serialises on it).
    pub(crate) session: String,
    /// For a write that builds on a loaded copy: the revision that copy is current at.
    /// A shared backend refuses the write (`Conflict`) when another daemon wrote the
    /// session since; SQLite has no other writer and ignores it.
    pub(crate) current_at: Option<u64>,
    pub(crate) body: Body,
    pub(crate) done: Box<dyn FnOnce(Result<()>) + Send>,
}

/// The queue to a backend's writer thread. Closing it refuses new writes; queued ones
/// still run.
pub(crate) struct WriterQueue(Mutex<Option<std::sync::mpsc::Sender<WriteJob>>>);

impl WriterQueue {
    pub(crate) fn new(tx: std::sync::mpsc::Sender<WriteJob>) -> WriterQueue {
        WriterQueue(Mutex::new(Some(tx)))
    }

    /// Queues a write; hands the job back when the writer is gone or the queue closed.
    pub(crate) fn submit(&self, job: WriteJob) -> std::result::Result<(), WriteJob> {
        let sender = lock(&self.0).clone();
        match sender {
            Some(s) => s.send(job).map_err(|e| e.0),
            None => Err(job),
        }
    }

    pub fn close(&self) {
        lock(&self.0).take();
    }

    pub(crate) fn is_open(&self) -> bool {
        lock(&self.0).is_some()
    }
}

/// A storage engine: its writer, its readers.
pub(crate) trait Backend: Send + Sync {
    fn dialect(&self) -> Dialect;
    /// Queues a write; hands the job back when the writer is gone.
    fn submit(&self, job: WriteJob) -> std::result::Result<(), WriteJob>;
    /// Runs a write on the calling thread, as the writer would, when it may (on SQLite:
    /// the writer idle, nothing queued, no forced checkpoint near); hands the job back
    /// otherwise (and always, by default).
    fn run_inline(&self, job: WriteJob) -> std::result::Result<(), WriteJob> {
        Err(job)
    }
    /// Runs `body` on a read connection. Blocking: called on the blocking pool.
    fn read(&self, body: &mut dyn FnMut(&mut dyn Db) -> Result<()>) -> Result<()>;
    /// Reads that may run at once (pooled connections), if bounded.
    fn read_limit(&self) -> Option<usize> {
        None
    }
    /// A number that moves on with every committed write that [`Db::context_changed`]
    /// noted, when this daemon sees every write of the database: while it stands, what a
    /// collection read last is still what the store holds. `None` for a database other
    /// daemons write too.
    fn context_generation(&self) -> Option<u64> {
        None
    }
    /// Whether a loaded copy of `session` that was current at revision `known` still is:
    /// `Some(now)` when every revision since is this daemon's own (its writes went through
    /// the copy), `None` when another daemon wrote or the session is gone. Blocking.
    fn still_current(&self, _session: &str, known: u64) -> Result<Option<u64>> {
        // One daemon owns a SQLite file: its copies are always current.
        Ok(Some(known))
    }
    /// This daemon's id among the daemons of a shared database.
    fn instance(&self) -> Option<&str> {
        None
    }
    /// Tells the other daemons of a shared database about an event.
    fn publish(&self, _note: &Remote) {}
    /// Writes a consistent copy of the database to the new file `dest`. Blocking.
    fn backup(&self, _dest: &Path) -> Result<()> {
        Err(Error::invalid(
            "path",
            "this daemon's store is a PostgreSQL database, which ctxd does not copy: \
             back it up with `pg_dump` (docs/postgresql.md)",
        ))
    }
    /// The other daemons' notes (once: the engine takes the receiver).
    fn remote(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<Remote>> {
        None
    }
    /// Stops accepting writes; queued writes still finish.
    fn close(&self);
    /// Where the data lives, for logs and status (no password).
    fn describe(&self) -> String;
}

#[derive(Clone)]
pub struct Store {
    inner: Arc<dyn Backend>,
    /// Bounds reads to the backend's pool (PostgreSQL connections).
    read_permits: Option<Arc<tokio::sync::Semaphore>>,
    /// How long a call waits for a database across the network (PostgreSQL): past it
    /// the call fails with the storage error instead of hanging with the database.
    deadline: Option<Duration>,
}

/// A database that answered nothing within the deadline.
fn silent(deadline: Duration) -> Error {
    Error::Storage(format!(
        "the database did not answer within {} s",
        deadline.as_secs_f64()
    ))
}

/// A job whose body stores what `f` returns for `done` to hand on.
fn job<R, F>(
    session: &str,
    current_at: Option<u64>,
    f: F,
    done: impl FnOnce(Result<R>) + Send + 'static,
) -> WriteJob
where
    R: Send + 'static,
    F: FnOnce(&mut dyn Db) -> Result<R> + Send + 'static,
{
    let slot: Arc<Mutex<Option<Produced>>> = Arc::new(Mutex::new(None));
    let filled = slot.clone();
    WriteJob {
        session: session.to_string(),
        current_at,
        body: Box::new(move |db| {
            let value = f(db)?;
            *lock(&filled) = Some(Box::new(value));
            Ok(())
        }),
        done: Box::new(move |r| {
            let out = r.and_then(|()| {
                lock(&slot)
                    .take()
                    .and_then(|v| v.downcast::<R>().ok())
                    .map(|v| *v)
                    .ok_or_else(|| Error::Internal("write produced no value".into()))
            });
            done(out);
        }),
    }
}

/// Runs `f` once on a read connection of `inner`, returning what it produced.
fn read_once<R, F>(inner: &dyn Backend, f: F) -> Result<R>
where
    F: FnOnce(&mut dyn Db) -> Result<R>,
{
    let mut f = Some(f);
    let mut out = None;
    inner.read(&mut |db| {
        let f = f
            .take()
            .ok_or_else(|| Error::Internal("read body ran twice".into()))?;
        out = Some(f(db)?);
        Ok(())
    })?;
    out.ok_or_else(|| Error::Internal("read produced no value".into()))
}

impl Store {
    /// Opens (creating if needed) the SQLite database at `path`, applies migrations and
    /// starts the writer.
    pub fn open(path: &Path) -> Result<Store> {
        Ok(Store::over(Arc::new(sqlite::Sqlite::open(path)?)))
    }

    /// Connects to a PostgreSQL database (migrating it when it is empty) and starts the
    /// writer, the listener and the publisher. Blocking.
    pub(crate) fn open_postgres(options: &PgOptions) -> Result<Store> {
        let mut store = Store::over(Arc::new(postgres::Postgres::open(options)?));
        store.deadline = Some(options.deadline);
        Ok(store)
    }

    fn over(inner: Arc<dyn Backend>) -> Store {
        let read_permits = inner
            .read_limit()
            .map(|n| Arc::new(tokio::sync::Semaphore::new(n)));
        Store {
            inner,
            read_permits,
            deadline: None,
        }
    }

    pub(crate) fn dialect(&self) -> Dialect {
        self.inner.dialect()
    }

    /// See `Backend::context_generation`.
    pub fn context_generation(&self) -> Option<u64> {
        self.inner.context_generation()
    }

    /// Whether other daemons may write the same database (PostgreSQL): loaded sessions
    /// must then be checked against the store before use.
    pub fn shared(&self) -> bool {
        self.dialect() == Dialect::Postgres
    }

    /// Whether a loaded copy of `session` current at revision `known` still is (see
    /// `Backend::still_current`): the revision it is current at now, or `None`.
    pub async fn still_current(&self, session: &str, known: u64) -> Result<Option<u64>> {
        let sid = session.to_string();
        self.blocking(move |inner| inner.still_current(&sid, known))
            .await
    }

    /// This daemon's id among the daemons of a shared database.
    pub fn instance(&self) -> Option<&str> {
        self.inner.instance()
    }

    /// Tells the other daemons of a shared database about an event.
    pub fn publish(&self, note: &Remote) {
        self.inner.publish(note);
    }

    /// The other daemons' notes (the first caller gets the receiver).
    pub fn remote(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<Remote>> {
        self.inner.remote()
    }

    /// Runs `f` on the blocking pool within the read bound.
    async fn blocking<R, F>(&self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&dyn Backend) -> Result<R> + Send + 'static,
    {
        let _permit = match &self.read_permits {
            Some(s) => Some(
                s.clone()
                    .acquire_owned()
                    .await
                    .map_err(|_| Error::Storage("store is closed".into()))?,
            ),
            None => None,
        };
        let inner = self.inner.clone();
        let task = tokio::task::spawn_blocking(move || f(inner.as_ref()));
        let joined = match self.deadline {
            // The blocked thread is left to the database; the caller is answered.
            Some(d) => tokio::time::timeout(d, task).await.map_err(|_| silent(d))?,
            None => task.await,
        };
        joined.map_err(|e| Error::Internal(format!("read task: {e}")))?
    }

    /// Where the data lives (a file path or a database URL without its password).
    pub fn describe(&self) -> String {
        self.inner.describe()
    }

    /// Runs `f` inside one write transaction on the writer thread. The transaction
    /// commits only when `f` returns `Ok`, so a failed batch writes nothing. `session` is
    /// the session the transaction writes. The job is queued when this is called, so
    /// writes run in call order.
    pub fn write<R, F>(&self, session: &str, f: F) -> impl Future<Output = Result<R>> + 'static
    where
        R: Send + 'static,
        F: FnOnce(&mut dyn Db) -> Result<R> + Send + 'static,
    {
        self.dispatch_write(session, None, f, false)
    }

    /// [`Store::write`] for what a compile derived from a loaded copy current at
    /// `revision` (frozen fates, cache edits, the request latch): on a shared store it
    /// fails with `Conflict`, writing nothing, when another daemon wrote the session
    /// since, so no daemon freezes a decision made on a stale copy.
    pub fn write_current<R, F>(
        &self,
        session: &str,
        revision: u64,
        f: F,
    ) -> impl Future<Output = Result<R>> + 'static
    where
        R: Send + 'static,
        F: FnOnce(&mut dyn Db) -> Result<R> + Send + 'static,
    {
        self.dispatch_write(session, Some(revision), f, false)
    }

    /// [`Store::write`] for a write of at most a few hundred microseconds (an append of a
    /// few records): on SQLite, when the writer is idle and nothing is queued, it runs on
    /// the calling thread, where the two hand-offs to the writer thread and back would
    /// cost about as much as the write. Otherwise, and on PostgreSQL, it is queued.
    pub fn write_short<R, F>(
        &self,
        session: &str,
        f: F,
    ) -> impl Future<Output = Result<R>> + 'static
    where
        R: Send + 'static,
        F: FnOnce(&mut dyn Db) -> Result<R> + Send + 'static,
    {
        self.dispatch_write(session, None, f, true)
    }

    /// Queues the write, or with `inline` first offers it to the backend to run on this
    /// thread ([`Backend::run_inline`]).
    fn dispatch_write<R, F>(
        &self,
        session: &str,
        current_at: Option<u64>,
        f: F,
        inline: bool,
    ) -> impl Future<Output = Result<R>> + 'static
    where
        R: Send + 'static,
        F: FnOnce(&mut dyn Db) -> Result<R> + Send + 'static,
    {
        let (reply_tx, reply_rx) = oneshot::channel();
        // A write whose caller gave up before it began is not run: the caller was told
        // it failed, so it must write nothing. One that had begun may still commit.
        let abandoned = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let give_up = abandoned.clone();
        let f = move |db: &mut dyn Db| {
            if abandoned.load(std::sync::atomic::Ordering::Acquire) {
                return Err(Error::Storage(
                    "the caller gave up waiting for the database".into(),
                ));
            }
            f(db)
        };
        let job = job(session, current_at, f, move |r| {
            let _ = reply_tx.send(r);
        });
        let deadline = self.deadline;
        let submitted = match inline {
            true => self
                .inner
                .run_inline(job)
                .or_else(|job| self.inner.submit(job)),
            false => self.inner.submit(job),
        }
        .is_ok();
        async move {
            if !submitted {
                return Err(Error::Storage("store is closed".into()));
            }
            let reply = match deadline {
                Some(d) => match tokio::time::timeout(d, reply_rx).await {
                    Ok(r) => r,
                    Err(_) => {
                        give_up.store(true, std::sync::atomic::Ordering::Release);
                        return Err(silent(d));
                    }
                },
                None => reply_rx.await,
            };
            reply.map_err(|_| Error::Storage("writer thread dropped the reply".into()))?
        }
    }

    /// Queues `f` like [`Store::write`] without waiting for it: bookkeeping a caller must
    /// not wait for. It is queued before this returns, so writes queued later run after
    /// it; a failure is only logged.
    pub fn write_detached<F>(&self, what: &'static str, session: &str, f: F)
    where
        F: FnOnce(&mut dyn Db) -> Result<()> + Send + 'static,
    {
        let job = job(session, None, f, move |r: Result<()>| {
            if let Err(e) = r {
                tracing::warn!(error = %e, "{what} not stored");
            }
        });
        if self.inner.submit(job).is_err() {
            tracing::warn!("{what} not stored: the store is closed");
        }
    }

    /// Runs `f` on a pooled read connection on the blocking pool.
    pub async fn read<R, F>(&self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut dyn Db) -> Result<R> + Send + 'static,
    {
        self.blocking(move |inner| read_once(inner, f)).await
    }

    /// [`Store::read`] for a read that takes microseconds (a few indexed rows): on SQLite
    /// it runs on the calling thread, where a trip to the blocking pool and back would
    /// cost more than the read; a database across the network still gets the pool.
    pub async fn read_short<R, F>(&self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut dyn Db) -> Result<R> + Send + 'static,
    {
        if self.dialect() != Dialect::Sqlite {
            return self.read(f).await;
        }
        read_once(self.inner.as_ref(), f)
    }

    /// Writes a consistent copy of the database to `dest`, a file that must not exist yet,
    /// while writes go on; its size in bytes.
    pub async fn backup(&self, dest: PathBuf) -> Result<u64> {
        self.blocking(move |inner| {
            inner.backup(&dest)?;
            std::fs::metadata(&dest)
                .map(|m| m.len())
                .map_err(|e| Error::Storage(format!("{}: {e}", dest.display())))
        })
        .await
    }

    /// Stops accepting writes; queued writes still finish.
    pub fn close(&self) {
        self.inner.close();
    }
}

#[cfg(test)]
mod tests {
    use super::db::params;
    use super::*;

    #[tokio::test]
    async fn migrations_apply_and_failed_write_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let r: Result<()> = store
            .write("a", |tx| {
                sessions::insert_bare(tx, "a")?;
                Err(Error::invalid("x", "refused"))
            })
            .await;
        assert!(r.is_err());
        let n = store
            .read(|c| {
                c.query_one("SELECT count(*) FROM sessions", params![])?
                    .int(0)
            })
            .await
            .unwrap();
        assert_eq!(n, 0);
        let v = store
            .read(|c| c.query_one("PRAGMA user_version", params![])?.int(0))
            .await
            .unwrap();
        assert_eq!(usize::try_from(v).unwrap(), sqlite_migration_count());
    }

    #[tokio::test]
    async fn insert_many_inserts_every_row_in_order_across_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        // 131 = 64 + 64 + 2 + 1: every chunk size path, and a remainder.
        let rows = store
            .write("a", |tx| {
                tx.execute("CREATE TEMP TABLE t (a INTEGER, b TEXT)", params![])?;
                let texts: Vec<String> = (0..131).map(|i| format!("row {i}")).collect();
                let mut flat = Vec::new();
                for (i, t) in texts.iter().enumerate() {
                    flat.extend_from_slice(params![i, t]);
                }
                let n = tx.insert_many("INSERT INTO t (a, b)", "", 2, &flat)?;
                assert!(
                    tx.insert_many("INSERT INTO t (a, b)", "", 2, &flat[..3])
                        .is_err()
                );
                let got = tx.query_map("SELECT a, b FROM t ORDER BY a", params![], |r| {
                    Ok((r.int(0)?, r.text(1)?))
                })?;
                Ok((n, got))
            })
            .await
            .unwrap();
        assert_eq!(rows.0, 131);
        assert_eq!(rows.1.len(), 131);
        assert!(
            rows.1
                .iter()
                .enumerate()
                .all(|(i, (a, b))| usize::try_from(*a) == Ok(i) && *b == format!("row {i}"))
        );
    }

    /// A u64 past SQL's signed range is refused with an error, not stored wrapped to a
    /// negative number, and the transaction writes nothing.
    #[tokio::test]
    async fn an_unsigned_value_past_the_signed_range_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let at_bound = i64::MAX.cast_unsigned();
        let stored = store
            .write("a", move |tx| {
                tx.execute("CREATE TABLE t (a INTEGER)", params![])?;
                tx.execute("INSERT INTO t (a) VALUES (?1)", params![at_bound])?;
                tx.query_one("SELECT a FROM t", params![])?.u64(0)
            })
            .await
            .unwrap();
        assert_eq!(stored, at_bound);
        let past = store
            .write("a", move |tx| {
                tx.execute("INSERT INTO t (a) VALUES (?1)", params![7_u64])?;
                tx.execute("INSERT INTO t (a) VALUES (?1)", params![at_bound + 1])
            })
            .await
            .unwrap_err();
        assert!(
            past.to_string().contains("is past the largest integer"),
            "{past}"
        );
        let rows = store
            .read(|c| c.query_one("SELECT count(*) FROM t", params![])?.int(0))
            .await
            .unwrap();
        assert_eq!(rows, 1);
    }

    fn sqlite_migration_count() -> usize {
        MIGRATIONS_DIR
            .dirs()
            .filter(|d| d.path().file_name().is_some_and(|n| n != "postgres"))
            .count()
    }
}
