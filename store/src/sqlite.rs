//! The embedded backend: one SQLite file. One write connection runs every write in a
//! `BEGIN IMMEDIATE` transaction (WAL, `synchronous=NORMAL`, foreign keys, busy timeout):
//! a writer thread takes it for the writes queued on a channel (those queued together
//! share one transaction, each in its own savepoint), and a short write takes it on its
//! caller's thread when nothing is queued (two thread hand-offs cost about as much as an
//! append's inserts). Reads use pooled read-only connections on the blocking
//! pool. One daemon owns the file (the home lock), so no other process writes it and no
//! cross-daemon coordination is needed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use include_dir::Dir;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use rusqlite_migration::{M, Migrations};

use super::db::{Db, Dialect, Param, Row, Value};
use super::{Backend, MIGRATIONS_DIR, WriteJob, WriterQueue};
use crate::error::{Error, Result};
use ctxd_pipeline::sync::lock;

/// Read connections kept open between reads.
const POOLED_READERS: usize = 8;
/// Distinct statements the store runs, with room: each stays prepared.
const STATEMENT_CACHE: usize = 128;
/// When the WAL is checkpointed, in frames.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checkpoints {
    /// Past this many the checkpointer thread is asked for a checkpoint (SQLite's own
    /// automatic threshold)...
    pub(crate) asked: i32,
    /// ... and past this many the commit checkpoints itself: the bound on the WAL's size
    /// should the checkpointer fall behind.
    pub(crate) forced: i32,
}

/// The page size of a database ctxd creates. A record's body is often several KB (a tool
/// result, a file read), and every page a commit changes is a WAL frame of its own, two
/// write calls each: with 8 KB pages an import writes about half as many frames as with
/// SQLite's default 4 KB, and fewer bodies spill into overflow pages. A database created
/// with another page size keeps it (changing it would mean rewriting the file).
pub const PAGE_SIZE: u32 = 8192;

/// 1,000 frames, and 16,000 (128 MB at [`PAGE_SIZE`]).
const CHECKPOINTS: Checkpoints = Checkpoints {
    asked: 1_000,
    forced: 16_000,
};

/// What one database's checkpoints did: the events a waiter (a test) can wait on.
#[derive(Default)]
pub(crate) struct CheckpointLog {
    /// Passive checkpoints the checkpointer thread ran.
    ran: Mutex<u64>,
    ran_more: std::sync::Condvar,
    /// Forced checkpoints the writer's commit hook found refused (the checkpointer
    /// holding the checkpoint lock).
    refused: AtomicU64,
}

impl CheckpointLog {
    fn note_ran(&self) {
        *lock(&self.ran) += 1;
        self.ran_more.notify_all();
    }

    fn note_refused(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// Waits until the checkpointer has run `n` checkpoints, at most `within`; whether
    /// it has.
    #[cfg(test)]
    fn wait_ran(&self, n: u64, within: std::time::Duration) -> bool {
        let guard = lock(&self.ran);
        match self
            .ran_more
            .wait_timeout_while(guard, within, |ran| *ran < n)
        {
            Ok((ran, _)) => *ran >= n,
            Err(_) => false,
        }
    }

    #[cfg(test)]
    fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

thread_local! {
    /// Frames in the WAL after the last commit of the write connection this thread
    /// holds: the commit hook is a plain function, so [`Writer::run`] lends it the
    /// writer's count, thresholds and log through these for the job it runs.
    static WAL_FRAMES: std::cell::Cell<i32> = const { std::cell::Cell::new(0) };
    static THRESHOLDS: std::cell::Cell<Checkpoints> = const { std::cell::Cell::new(CHECKPOINTS) };
    static LOG: std::cell::RefCell<Option<Arc<CheckpointLog>>> = const { std::cell::RefCell::new(None) };
}

/// The write connection's commit hook, in place of SQLite's automatic checkpoint: a
/// checkpoint copies pages into the database file and syncs it, which the commit that
/// happens to cross the threshold — and every write queued behind it — would otherwise
/// wait for. The checkpointer thread does it on its own connection instead, beside the
/// writer (a passive checkpoint copies what was committed when it began and never blocks
/// the writer); here only past the hard bound.
///
/// The hook never fails: SQLite reports a hook's error as the error of the statement that
/// committed, although the transaction is committed, so a failed or busy checkpoint here
/// (the checkpointer running its own) would tell a client that a stored write failed. It
/// is logged, and the next commit past the bound tries again.
fn on_commit(wal: &rusqlite::hooks::Wal, frames: std::ffi::c_int) -> rusqlite::Result<()> {
    if frames >= THRESHOLDS.get().forced {
        match wal.checkpoint() {
            Ok(()) => WAL_FRAMES.set(0),
            Err(e) => {
                WAL_FRAMES.set(frames);
                LOG.with_borrow(|log| log.as_deref().map(CheckpointLog::note_refused));
                tracing::debug!(error = %e, frames, "forced checkpoint did not run");
            }
        }
    } else {
        WAL_FRAMES.set(frames);
    }
    Ok(())
}

/// Starts the checkpointer: one passive checkpoint per request, requests while one runs
/// folded into the next. It ends when its sender (the writer) is dropped.
fn spawn_checkpointer(
    path: &Path,
    log: Arc<CheckpointLog>,
) -> Result<std::sync::mpsc::SyncSender<()>> {
    let conn = Connection::open(path)?;
    configure(&conn)?;
    let (tx, rx) = std::sync::mpsc::sync_channel::<()>(1);
    std::thread::Builder::new()
        .name("ctxd-sqlite-checkpoint".into())
        .spawn(move || {
            while rx.recv().is_ok() {
                match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                    Ok(()) => log.note_ran(),
                    Err(e) => tracing::debug!(error = %e, "checkpoint failed"),
                }
            }
        })
        .map_err(|e| Error::Internal(format!("spawn checkpointer: {e}")))?;
    Ok(tx)
}

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match *self {
            Param::Null => ValueRef::Null,
            Param::Int(v) => ValueRef::Integer(v),
            Param::Uint(v) => ValueRef::Integer(
                crate::db::signed(v)
                    .map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?,
            ),
            Param::Text(s) => ValueRef::Text(s.as_bytes()),
            Param::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

/// A connection (or the transaction open on it) behind the neutral [`Db`] face.
pub(crate) struct SqliteDb<'c> {
    conn: &'c Connection,
    /// The body wrote what a collection reads ([`Db::context_changed`]).
    context_changed: bool,
}

impl<'c> SqliteDb<'c> {
    pub(crate) fn new(conn: &'c Connection) -> SqliteDb<'c> {
        SqliteDb {
            conn,
            context_changed: false,
        }
    }
}

fn value(v: ValueRef<'_>) -> Result<Value> {
    Ok(match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Text(t) => Value::Text(
            String::from_utf8(t.to_vec())
                .map_err(|e| Error::Storage(format!("text column is not UTF-8: {e}")))?,
        ),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
        ValueRef::Real(f) => return Err(Error::Storage(format!("unexpected real value {f}"))),
    })
}

impl Db for SqliteDb<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        Ok(stmt.execute(rusqlite::params_from_iter(params.iter()))? as u64)
    }

    fn try_insert(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Option<u64>> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        inserted(stmt.execute(rusqlite::params_from_iter(params.iter())))
    }

    fn try_insert_each(
        &mut self,
        sql: &str,
        width: usize,
        params: &[Param<'_>],
    ) -> Result<Option<usize>> {
        // Prepared once for the rows, not looked up in the statement cache for each.
        let mut stmt = self.conn.prepare_cached(sql)?;
        for (i, row) in super::db::rows_of(width, params)?.enumerate() {
            if inserted(stmt.execute(rusqlite::params_from_iter(row.iter())))?.is_none() {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    fn query_each(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        each: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        let n = stmt.column_count();
        let mut rows = stmt.query(rusqlite::params_from_iter(params.iter()))?;
        while let Some(r) = rows.next()? {
            let mut cols = Vec::with_capacity(n);
            for i in 0..n {
                cols.push(value(r.get_ref(i)?)?);
            }
            each(Row(cols))?;
        }
        Ok(())
    }

    fn context_changed(&mut self) {
        self.context_changed = true;
    }
}

/// An insert's outcome: the rows it changed, or `None` when a constraint refused it.
fn inserted(r: rusqlite::Result<usize>) -> Result<Option<u64>> {
    match r {
        Ok(n) => Ok(Some(n as u64)),
        Err(rusqlite::Error::SqliteFailure(f, _))
            if f.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// The settings a database file keeps: its page size, which only a new file takes, and
/// WAL mode. The page size comes first: once in WAL mode it can no longer change.
pub(crate) fn set_file_format(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "page_size", PAGE_SIZE)?;
    conn.pragma_update(None, "journal_mode", "WAL")
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(())
}

/// The SQLite migrations: every `NN-name/up.sql` directly under `migrations/`, in name
/// order (the PostgreSQL ones live in their own subdirectory and are not among them).
fn migrations() -> Result<Migrations<'static>> {
    let mut dirs: Vec<&'static Dir<'static>> = MIGRATIONS_DIR
        .dirs()
        .filter(|d| d.path().file_name().is_some_and(|n| n != "postgres"))
        .collect();
    dirs.sort_by_key(|d| d.path());
    let mut steps = Vec::with_capacity(dirs.len());
    for d in dirs {
        let up = MIGRATIONS_DIR
            .get_file(d.path().join("up.sql"))
            .and_then(|f| f.contents_utf8())
            .ok_or_else(|| {
                Error::Storage(format!("migrations: {} has no up.sql", d.path().display()))
            })?;
        steps.push(M::up(up));
    }
    Ok(Migrations::new(steps))
}

/// Applies every migration the database has not seen (`PRAGMA user_version`).
pub fn migrate(conn: &mut Connection) -> Result<()> {
    migrations()?
        .to_latest(conn)
        .map_err(|e| Error::Storage(format!("migrations: {e}")))
}

pub(crate) struct Sqlite {
    path: PathBuf,
    writer: WriterQueue,
    /// The write connection, taken by the writer thread for each queued write and by
    /// [`Backend::run_inline`] on its caller's thread.
    write_conn: Arc<Mutex<Writer>>,
    /// Writes queued and not yet run: a write runs on its caller's thread only while
    /// this is zero, so it never overtakes one queued before it.
    queued: Arc<AtomicUsize>,
    /// Moves on with every committed write of what a collection reads.
    context_generation: Arc<AtomicU64>,
    readers: Mutex<Vec<Connection>>,
    #[cfg_attr(not(test), allow(dead_code))]
    checkpoints: Arc<CheckpointLog>,
}

/// The write connection and what its commits need.
struct Writer {
    conn: Connection,
    /// Frames in the WAL after its last commit.
    frames: i32,
    thresholds: Checkpoints,
    log: Arc<CheckpointLog>,
    checkpointer: std::sync::mpsc::SyncSender<()>,
    /// Moves on with every committed write of what a collection reads.
    generation: Arc<AtomicU64>,
}

impl Writer {
    /// Runs one job on the calling thread, then asks the checkpointer for a checkpoint
    /// when its commit left the WAL past the threshold.
    fn run(&mut self, job: WriteJob) {
        self.run_group(vec![job]);
    }

    /// Runs jobs queued together in one transaction ([`run_group`]), and then what
    /// [`Writer::run`] does after a commit.
    fn run_group(&mut self, jobs: Vec<WriteJob>) {
        // Stays negative unless the jobs commit pages (the hook is called only then).
        WAL_FRAMES.set(-1);
        THRESHOLDS.set(self.thresholds);
        LOG.set(Some(self.log.clone()));
        // A job alone needs no savepoint: its transaction is its own. And a savepoint is
        // not free: each page its job changes is first copied into a sub-journal.
        match <[WriteJob; 1]>::try_from(jobs) {
            Ok([job]) => run(&mut self.conn, job, &self.generation),
            Err(jobs) => run_group(&mut self.conn, jobs, &self.generation),
        }
        let committed = WAL_FRAMES.get();
        LOG.set(None);
        if committed >= 0 {
            self.frames = committed;
            if committed >= self.thresholds.asked {
                // Full: one is already asked for, and it will copy these frames too.
                let _ = self.checkpointer.try_send(());
            }
        }
    }

    /// Whether a write's commit could take the WAL past the forced bound, and so run a
    /// whole checkpoint itself: one the writer thread should run, not an async worker.
    fn near_forced(&self) -> bool {
        self.frames >= self.thresholds.forced - self.thresholds.asked
    }
}

/// Runs one job in a `BEGIN IMMEDIATE` transaction that commits only when the job's
/// body succeeds. A committed job that changed what a collection reads moves
/// `generation` on before it is reported done, so whoever waited for it sees the change.
fn run(conn: &mut Connection, job: WriteJob, generation: &AtomicU64) {
    // One daemon owns the file: a loaded copy is always current (`current_at` is moot).
    let WriteJob {
        session,
        body,
        done,
        ..
    } = job;
    let result = (|| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut db = SqliteDb::new(&tx);
        body(&mut db)?;
        let context_changed = db.context_changed;
        tx.commit()?;
        if context_changed {
            generation.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    })();
    if let Err(e) = &result {
        tracing::debug!(session = %session, error = %e, "write rolled back");
    }
    done(result);
}

/// How long the writer thread keeps looking for the next write before it sleeps, when
/// writes are seconds apart (an agent's compiles, each queueing its log row).
const WRITER_SPIN: Duration = Duration::from_micros(200);

/// The longest it keeps looking while writes come close together.
const WRITER_SPIN_MAX: Duration = Duration::from_millis(1);

/// How long to look for the next write, given how long the writer waited for the last
/// one: the longest look while writes come less than [`WRITER_SPIN_MAX`] apart (a burst
/// of turns or of sessions), so the next one is met awake even after a short gap; the
/// shortest once they are further apart, so a quiet daemon spends no more than that on
/// a write.
fn spin_window(waited: Duration) -> Duration {
    if waited > WRITER_SPIN_MAX {
        WRITER_SPIN
    } else {
        WRITER_SPIN_MAX
    }
}

/// The next queued write and how long the writer waited for it, `None` once the queue
/// is closed and empty. A write queued within `window` of the last one is taken while
/// the writer still looks for it: waking a sleeping writer costs the sender a system
/// call and the writer's core an interrupt, which a compile (whose log row is queued at
/// its end) would pay every time.
fn next_job(
    rx: &std::sync::mpsc::Receiver<WriteJob>,
    window: Duration,
) -> Option<(WriteJob, Duration)> {
    let start = Instant::now();
    let until = start + window;
    let job = loop {
        match rx.try_recv() {
            Ok(job) => break job,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => return None,
            Err(std::sync::mpsc::TryRecvError::Empty) if Instant::now() < until => {
                std::thread::yield_now();
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => break rx.recv().ok()?,
        }
    };
    Some((job, start.elapsed()))
}

/// At most this many queued writes share one transaction.
const GROUP_MAX: usize = 32;

/// Runs writes that were queued together in one `BEGIN IMMEDIATE` transaction, each in a
/// savepoint of its own: a job whose body fails is rolled back alone and reported so,
/// and the others commit together. Under a steady stream of small writes (a compile's
/// log row after each compile) the pages they share are written to the WAL once per
/// group instead of once per write. Each job is reported done only after the commit; if
/// the transaction itself fails, nothing of the group is stored and every job is told.
fn run_group(conn: &mut Connection, jobs: Vec<WriteJob>, generation: &AtomicU64) {
    let mut dones = Vec::with_capacity(jobs.len());
    let mut bodies = Vec::with_capacity(jobs.len());
    for job in jobs {
        dones.push(job.done);
        bodies.push((job.session, job.body));
    }
    let mut results: Vec<Result<()>> = Vec::with_capacity(dones.len());
    let committed = (|| -> Result<bool> {
        let mut tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut context_changed = false;
        for (session, body) in bodies {
            let savepoint = tx.savepoint()?;
            let mut db = SqliteDb::new(&savepoint);
            let result = body(&mut db);
            let changed = db.context_changed;
            let ok = result.is_ok();
            if let Err(e) = &result {
                tracing::debug!(session = %session, error = %e, "write rolled back");
            }
            // Kept before the savepoint ends: should the transaction fail now, this job
            // is still told its own error.
            results.push(result);
            if ok {
                savepoint.commit()?;
                context_changed |= changed;
            } else {
                // Rolls back to the savepoint, then releases it.
                savepoint.finish()?;
            }
        }
        tx.commit()?;
        Ok(context_changed)
    })();
    match committed {
        Ok(context_changed) => {
            if context_changed {
                generation.fetch_add(1, Ordering::SeqCst);
            }
            for (done, result) in dones.into_iter().zip(results) {
                done(result);
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, writes = dones.len(), "a group of writes rolled back");
            let mut results = results.into_iter();
            for done in dones {
                // A job's own failure says more than the transaction's.
                done(match results.next() {
                    Some(Err(own)) => Err(own),
                    _ => Err(Error::Storage(format!(
                        "the transaction this write shared failed, nothing of it was stored: {e}"
                    ))),
                });
            }
        }
    }
}

impl Sqlite {
    /// Opens (creating if needed) the database, applies migrations and starts the writer.
    pub fn open(path: &Path) -> Result<Sqlite> {
        Sqlite::open_with(path, CHECKPOINTS)
    }

    fn open_with(path: &Path, checkpoints: Checkpoints) -> Result<Sqlite> {
        let mut conn = Connection::open(path)?;
        set_file_format(&conn)?;
        configure(&conn)?;
        migrate(&mut conn)?;
        conn.wal_hook(Some(on_commit));
        let log = Arc::new(CheckpointLog::default());
        let generation = Arc::new(AtomicU64::new(0));
        let write_conn = Arc::new(Mutex::new(Writer {
            conn,
            frames: 0,
            thresholds: checkpoints,
            log: log.clone(),
            checkpointer: spawn_checkpointer(path, log.clone())?,
            generation: generation.clone(),
        }));
        let queued = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = std::sync::mpsc::channel::<WriteJob>();
        let (writer, left) = (write_conn.clone(), queued.clone());
        std::thread::Builder::new()
            .name("ctxd-sqlite-writer".into())
            .spawn(move || {
                let mut window = WRITER_SPIN;
                while let Some((job, waited)) = next_job(&rx, window) {
                    window = spin_window(waited);
                    let mut jobs = vec![job];
                    jobs.extend(rx.try_iter().take(GROUP_MAX - 1));
                    let n = jobs.len();
                    let mut w = lock(&writer);
                    w.run_group(jobs);
                    left.fetch_sub(n, Ordering::SeqCst);
                }
            })
            .map_err(|e| Error::Internal(format!("spawn writer: {e}")))?;
        Ok(Sqlite {
            path: path.to_path_buf(),
            writer: WriterQueue::new(tx),
            write_conn,
            queued,
            context_generation: generation,
            readers: Mutex::new(Vec::new()),
            checkpoints: log,
        })
    }
}

impl Backend for Sqlite {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn submit(&self, job: WriteJob) -> std::result::Result<(), WriteJob> {
        self.queued.fetch_add(1, Ordering::SeqCst);
        self.writer.submit(job).inspect_err(|_| {
            self.queued.fetch_sub(1, Ordering::SeqCst);
        })
    }

    fn run_inline(&self, job: WriteJob) -> std::result::Result<(), WriteJob> {
        if self.queued.load(Ordering::SeqCst) != 0 || !self.writer.is_open() {
            return Err(job);
        }
        let Ok(mut w) = self.write_conn.try_lock() else {
            return Err(job);
        };
        // A write queued since the first look runs first.
        if self.queued.load(Ordering::SeqCst) != 0 || w.near_forced() {
            return Err(job);
        }
        w.run(job);
        Ok(())
    }

    fn context_generation(&self) -> Option<u64> {
        // The daemon owns the file: every write of it went through this writer.
        Some(self.context_generation.load(Ordering::SeqCst))
    }

    fn read(&self, body: &mut dyn FnMut(&mut dyn Db) -> Result<()>) -> Result<()> {
        let pooled = lock(&self.readers).pop();
        let conn = match pooled {
            Some(c) => c,
            None => {
                let c = Connection::open_with_flags(
                    &self.path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )?;
                configure(&c)?;
                c
            }
        };
        // One read transaction for the whole body: its statements see one snapshot (as
        // PostgreSQL's `REPEATABLE READ` readers do), and the WAL read lock and snapshot
        // check are taken once instead of once per statement.
        let result = match conn.prepare_cached("BEGIN").and_then(|mut s| s.execute([])) {
            Ok(_) => {
                let result = body(&mut SqliteDb::new(&conn));
                let ended = conn
                    .prepare_cached("COMMIT")
                    .and_then(|mut s| s.execute([]));
                match (result, ended) {
                    (Ok(()), Err(e)) => Err(e.into()),
                    (result, _) => result,
                }
            }
            Err(e) => Err(e.into()),
        };
        if !conn.is_autocommit() {
            // The body failed in a way that left the transaction open: never pool it so.
            if conn.execute_batch("ROLLBACK").is_err() {
                return result;
            }
        }
        let mut pool = lock(&self.readers);
        if pool.len() < POOLED_READERS {
            pool.push(conn);
        }
        result
    }

    fn close(&self) {
        self.writer.close();
    }

    fn describe(&self) -> String {
        self.path.display().to_string()
    }

    fn backup(&self, dest: &Path) -> Result<()> {
        // `VACUUM INTO` copies one read snapshot, so appends committed meanwhile are
        // either wholly in the copy or not at all, and the writer is never held; it runs
        // on a connection of its own, since a pooled reader is always in a transaction.
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        configure(&conn)?;
        let dest_text = dest
            .to_str()
            .ok_or_else(|| Error::invalid("path", format!("{} is not UTF-8", dest.display())))?;
        conn.execute("VACUUM INTO ?1", [dest_text])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
