//! The shared backend: one PostgreSQL database served by any number of daemons.
//!
//! Like SQLite, one writer thread per daemon runs every write transaction (so this
//! daemon's writes keep their order); each starts with `ctxd_lock_session`, which takes
//! the session's advisory lock until commit — writes to one session are serialised
//! across daemons — and bumps its revision. Reads run on a bounded pool of connections
//! in `REPEATABLE READ, READ ONLY` transactions, so a load sees one snapshot. A lost
//! connection fails the call that needed it with a storage error and is re-opened by the
//! next one, so the daemon recovers when the database returns.

mod db;
pub mod migrate;
pub(crate) mod notify;
mod own_writes;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use postgres::{Client, IsolationLevel, NoTls};
use tokio::sync::mpsc::UnboundedReceiver;

use self::db::{Appended, PgDb, Statements};
use self::notify::{Remote, RemoteWhat};
use self::own_writes::OwnWrites;
use super::db::{Db, Dialect, params};
use super::{Backend, Body, WriteJob, WriterQueue};
use crate::error::{Error, Result};
use ctxd_pipeline::sync::lock;

/// How long connecting may take before the call fails.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest a write waits for another daemon's lock on its session.
const LOCK_TIMEOUT: &str = "30s";

/// Read connections per daemon unless configured.
pub const DEFAULT_POOL: usize = 8;

/// How long a call waits for the database before it fails with the storage error
/// (`--store-timeout-ms`): above the lock timeout, so a write that waits for another
/// daemon's lock gets the lock's own error first.
pub(crate) const DEFAULT_DEADLINE: Duration = Duration::from_secs(40);

/// How a daemon reaches its database.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// `postgres://…` or `postgresql://…` (a Unix socket: `postgresql:///db?host=/dir`).
    pub(crate) url: String,
    /// Read connections open at once; reads beyond wait for one.
    pub(crate) pool: usize,
    /// How long one call waits for the database.
    pub deadline: Duration,
}

/// One connection and the statements prepared on it.
struct Conn {
    client: Client,
    statements: Statements,
}

/// Connects within [`CONNECT_TIMEOUT`], the start-up exchange included: the client's own
/// timeout covers the TCP connect only, and a listener that accepts and never answers
/// would hold the connect (and the daemon's start) forever. The attempt runs on a thread
/// of its own, left behind when the time runs out.
pub(crate) fn connect(config: &postgres::Config) -> Result<Client> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let config = config.clone();
    std::thread::Builder::new()
        .name("ctxd-pg-connect".into())
        .spawn(move || {
            let _ = tx.send(config.connect(NoTls));
        })
        .map_err(|e| Error::Storage(format!("postgres: cannot start a connect: {e}")))?;
    match rx.recv_timeout(CONNECT_TIMEOUT) {
        Ok(r) => {
            r.map_err(|e| Error::Storage(format!("postgres: the database is unreachable: {e}")))
        }
        Err(_) => Err(Error::Storage(format!(
            "postgres: the database did not answer within {} s of connecting",
            CONNECT_TIMEOUT.as_secs()
        ))),
    }
}

fn open(config: &postgres::Config) -> Result<Conn> {
    Ok(Conn {
        client: connect(config)?,
        statements: HashMap::new(),
    })
}

/// The URL without its password, for logs and status.
fn shown(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('@') {
            Some((auth, host)) => {
                let user = auth.split(':').next().unwrap_or_default();
                format!("{scheme}://{user}@{host}")
            }
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

pub(crate) fn config(url: &str) -> Result<postgres::Config> {
    let mut config: postgres::Config = url
        .parse()
        .map_err(|e| Error::Storage(format!("store URL {}: {e}", shown(url))))?;
    config.connect_timeout(CONNECT_TIMEOUT);
    config.application_name("ctxd");
    config.options(&format!("-c lock_timeout={LOCK_TIMEOUT}"));
    Ok(config)
}

pub(crate) struct Postgres {
    config: postgres::Config,
    url: String,
    instance: String,
    pool: usize,
    writer: WriterQueue,
    readers: Mutex<Vec<Conn>>,
    own: Arc<OwnWrites>,
    publisher: Mutex<Option<SyncSender<String>>>,
    remote: Mutex<Option<UnboundedReceiver<Remote>>>,
    stop: Arc<AtomicBool>,
}

/// Runs one write transaction: the session's lock first (which gives the session its
/// new revision), then the body, then the append notes, then the commit. The revision
/// is pending in `own` from the lock until the outcome is known.
fn run(
    conn: &mut Conn,
    instance: &str,
    own: &OwnWrites,
    job: (&str, Option<u64>, Body),
) -> Result<()> {
    let (session, current_at, body) = job;
    let mut tx = conn.client.transaction()?;
    let mut appended = Appended::default();
    let mut db = PgDb {
        tx: &mut tx,
        statements: &mut conn.statements,
        appended: &mut appended,
    };
    let dbx: &mut dyn Db = &mut db;
    let revision = dbx
        .query_one("SELECT ctxd_lock_session(?1)", params![session])?
        .opt_u64(0)?;
    if let (Some(known), Some(now)) = (current_at, revision)
        && !own.cover(session, known, now.saturating_sub(1))
    {
        return Err(Error::WrittenElsewhere(session.to_string()));
    }
    if let Some(r) = revision {
        own.begin(session, r);
    }
    let settle = |outcome: std::result::Result<(), bool>| match (revision, outcome) {
        (Some(r), Ok(())) => own.committed(session, r),
        (Some(_), Err(unknown)) => own.abandoned(session, unknown),
        (None, _) => {}
    };
    let written =
        body(dbx).and_then(|()| announce(&mut tx, &mut conn.statements, &mut appended, instance));
    if let Err(e) = written {
        // Settled before the rollback (when `tx` drops), while the lock still holds.
        settle(Err(false));
        return Err(e);
    }
    match tx.commit() {
        Ok(()) => {
            settle(Ok(()));
            Ok(())
        }
        Err(e) => {
            settle(Err(true));
            Err(e.into())
        }
    }
}

/// `NOTIFY`s the appends of a write transaction, inside it: delivered when it commits.
fn announce(
    tx: &mut postgres::Transaction<'_>,
    statements: &mut Statements,
    appended: &mut Appended,
    instance: &str,
) -> Result<()> {
    for (sid, first_seq, last_seq) in std::mem::take(&mut appended.0) {
        let note = Remote {
            from: instance.to_string(),
            session_id: sid,
            what: RemoteWhat::Appended {
                first_seq,
                last_seq,
            },
        };
        if let Some(payload) = note.payload() {
            let mut db = PgDb {
                tx: &mut *tx,
                statements: &mut *statements,
                appended: &mut Appended::default(),
            };
            let dbx: &mut dyn Db = &mut db;
            dbx.execute(
                "SELECT pg_notify(?1, ?2)",
                params![notify::CHANNEL, &payload],
            )?;
        }
    }
    Ok(())
}

fn writer_loop(
    config: postgres::Config,
    instance: String,
    own: Arc<OwnWrites>,
    jobs: std::sync::mpsc::Receiver<WriteJob>,
) {
    let mut conn: Option<Conn> = None;
    while let Ok(WriteJob {
        session,
        current_at,
        body,
        done,
    }) = jobs.recv()
    {
        if conn.as_ref().is_none_or(|c| c.client.is_closed()) {
            conn = None;
            match open(&config) {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    done(Err(e));
                    continue;
                }
            }
        }
        let Some(c) = conn.as_mut() else { continue };
        let result = run(c, &instance, &own, (&session, current_at, body));
        if c.client.is_closed() {
            conn = None;
        }
        done(result);
    }
}

impl Postgres {
    /// Connects, checks the schema (an empty database is migrated; an older or newer one
    /// is refused) and starts the writer, the listener and the publisher.
    pub fn open(options: &PgOptions) -> Result<Postgres> {
        let config = config(&options.url)?;
        let mut client = connect(&config)?;
        let (applied, latest) = (migrate::applied(&mut client)?, migrate::latest()?);
        if applied == 0 {
            let (_, now) = migrate::migrate(&mut client)?;
            tracing::info!(version = now, "migrated an empty database");
        } else if applied < latest {
            return Err(Error::Storage(format!(
                "the database schema is at migration {applied}, this ctxd needs {latest}: run `ctxd migrate --store {}` (once, for every daemon of this database)",
                shown(&options.url)
            )));
        } else if applied > latest {
            return Err(migrate::newer(applied, latest));
        }
        drop(client);
        let instance = uuid::Uuid::new_v4().to_string();
        let own = Arc::new(OwnWrites::default());
        let (jobs_tx, jobs_rx) = std::sync::mpsc::channel::<WriteJob>();
        let (w_config, w_instance, w_own) = (config.clone(), instance.clone(), own.clone());
        spawn("ctxd-pg-writer", move || {
            writer_loop(w_config, w_instance, w_own, jobs_rx);
        })?;
        let (pub_tx, pub_rx) = std::sync::mpsc::sync_channel(notify::PUBLISH_QUEUE);
        let p_config = config.clone();
        spawn("ctxd-pg-publisher", move || {
            notify::publish(p_config, pub_rx);
        })?;
        let (remote_tx, remote_rx) = tokio::sync::mpsc::unbounded_channel();
        let stop = Arc::new(AtomicBool::new(false));
        let (l_config, l_instance, l_stop) = (config.clone(), instance.clone(), stop.clone());
        spawn("ctxd-pg-listener", move || {
            notify::listen(l_config, l_instance, remote_tx, l_stop);
        })?;
        Ok(Postgres {
            config,
            url: options.url.clone(),
            instance,
            pool: options.pool.max(1),
            writer: WriterQueue::new(jobs_tx),
            readers: Mutex::new(Vec::new()),
            own,
            publisher: Mutex::new(Some(pub_tx)),
            remote: Mutex::new(Some(remote_rx)),
            stop,
        })
    }

    fn pooled(&self) -> Result<Conn> {
        loop {
            match lock(&self.readers).pop() {
                Some(c) if !c.client.is_closed() => return Ok(c),
                Some(_) => continue,
                None => return open(&self.config),
            }
        }
    }

    fn give_back(&self, conn: Conn) {
        let mut pool = lock(&self.readers);
        if !conn.client.is_closed() && pool.len() < self.pool {
            pool.push(conn);
        }
    }
}

impl Drop for Postgres {
    /// A blocking client closes its connection by running a small runtime of its own,
    /// which panics on a thread that drives async tasks — where the last handle to the
    /// store may well be dropped. The pooled connections are closed on a thread of their
    /// own instead.
    fn drop(&mut self) {
        let readers = std::mem::take(&mut *lock(&self.readers));
        if readers.is_empty() {
            return;
        }
        if let Ok(h) = std::thread::Builder::new()
            .name("ctxd-pg-close".into())
            .spawn(move || drop(readers))
        {
            let _ = h.join();
        }
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map(|_| ())
        .map_err(|e| Error::Internal(format!("spawn {name}: {e}")))
}

impl Backend for Postgres {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn submit(&self, job: WriteJob) -> std::result::Result<(), WriteJob> {
        self.writer.submit(job)
    }

    fn read(&self, body: &mut dyn FnMut(&mut dyn Db) -> Result<()>) -> Result<()> {
        let mut conn = self.pooled()?;
        let result = (|| {
            let mut tx = conn
                .client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()?;
            let mut appended = Appended::default();
            body(&mut PgDb {
                tx: &mut tx,
                statements: &mut conn.statements,
                appended: &mut appended,
            })?;
            tx.commit()?;
            Ok(())
        })();
        self.give_back(conn);
        result
    }

    fn read_limit(&self) -> Option<usize> {
        Some(self.pool)
    }

    fn still_current(&self, session: &str, known: u64) -> Result<Option<u64>> {
        let mut conn = self.pooled()?;
        let stored = conn
            .client
            .query_opt("SELECT revision FROM sessions WHERE id = $1", &[&session])
            .map_err(Error::from)
            .and_then(|r| {
                r.map(|r| {
                    let v = r.get::<_, i64>(0);
                    u64::try_from(v)
                        .map_err(|_| Error::Storage(format!("session revision {v} is negative")))
                })
                .transpose()
            });
        self.give_back(conn);
        Ok(stored?.filter(|&now| self.own.cover(session, known, now)))
    }

    fn instance(&self) -> Option<&str> {
        Some(&self.instance)
    }

    fn publish(&self, note: &Remote) {
        if let Some(q) = lock(&self.publisher).as_ref() {
            notify::enqueue(q, note);
        }
    }

    fn remote(&self) -> Option<UnboundedReceiver<Remote>> {
        lock(&self.remote).take()
    }

    fn close(&self) {
        self.writer.close();
        lock(&self.publisher).take();
        self.stop.store(true, Ordering::Relaxed);
    }

    fn describe(&self) -> String {
        shown(&self.url)
    }
}

/// `ctxd migrate` for a PostgreSQL database: `(before, after)` versions.
pub(crate) fn migrate_url(url: &str) -> Result<(i64, i64)> {
    let mut client = connect(&config(url)?)?;
    migrate::migrate(&mut client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            shown("postgres://me:secret@db.example/ctxd"),
            "postgres://me@db.example/ctxd"
        );
        assert_eq!(
            shown("postgresql:///ctxd?host=/tmp/pg"),
            "postgresql:///ctxd?host=/tmp/pg"
        );
    }
}
