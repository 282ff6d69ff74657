//! Running a daemon: resolve paths, claim the socket, open the store, serve until told to
//! stop. Everything the daemon writes lives under its home.

use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use thiserror::Error;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Notify;

use crate::rpc::{RpcContext, serve};
use ctxd_engine::{DiscoveryDefaults, Engine};
use ctxd_pipeline::clock::{Clock, SystemClock};

#[derive(Debug, Error)]
pub enum StartError {
    #[error("another ctxd is already serving {0}")]
    AlreadyRunning(PathBuf),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("another ctxd (pid {pid}) already uses the home {home}")]
    HomeInUse { home: PathBuf, pid: String },
    #[error("refusing the socket directory {dir}: {why}; choose another --socket")]
    UnsafeSocketDir { dir: PathBuf, why: String },
    #[error(
        "{0} exists and is not a socket; refusing to replace it (remove it or choose another --socket)"
    )]
    SocketPathOccupied(PathBuf),
    #[error("socket path {0} is too long for a Unix socket (at most 107 bytes)")]
    SocketPathTooLong(PathBuf),
    #[error("cannot determine a home directory; pass --home or set CTXD_HOME")]
    NoHome,
    #[error("store: {0}")]
    Store(#[from] ctxd_engine::Error),
    #[error("rpc: {0}")]
    Rpc(String),
}

/// Where the daemon lives.
#[derive(Debug, Clone)]
pub struct Paths {
    pub home: PathBuf,
    pub socket: PathBuf,
}

impl Paths {
    /// Flags and environment win; then `directories`. An explicit home without an explicit
    /// socket puts the socket inside that home so one variable isolates a whole daemon.
    pub fn resolve(home: Option<PathBuf>, socket: Option<PathBuf>) -> Result<Paths, StartError> {
        let dirs = directories::ProjectDirs::from("dev", "ctxd", "ctxd");
        // The clients' rule, so that they find the daemon where it listens.
        let socket = ctxd_protocol::socket::resolve_socket(socket, home.as_deref());
        let home = match home {
            Some(h) => h,
            None => dirs
                .as_ref()
                .map(|d| d.data_dir().to_path_buf())
                .ok_or(StartError::NoHome)?,
        };
        Ok(Paths { home, socket })
    }

    pub fn database(&self) -> PathBuf {
        self.home.join("ctxd.db")
    }
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> StartError + 'a {
    move |source| StartError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// A claimed socket: the listener plus the lock that proves no other daemon owns it.
pub(crate) struct Claimed {
    pub(crate) listener: UnixListener,
    pub(crate) lock: std::fs::File,
    pub(crate) socket: PathBuf,
    /// Whether the daemon bound the socket file itself, and so removes it when it stops.
    /// An inherited one belongs to the service manager, which keeps listening on it to
    /// start the next daemon.
    pub(crate) bound: bool,
}

/// The listening socket a service manager passed (systemd's socket activation: fd 3 with
/// `LISTEN_FDS` and `LISTEN_PID` naming this process), if any. `listenfd` checks that it
/// is a Unix stream socket, marks it close-on-exec (hooks never inherit it) and clears the
/// variables from the environment, which is why this runs first thing in `main`, before
/// any other thread may read the environment.
pub fn inherited_listener() -> Result<Option<std::os::unix::net::UnixListener>, StartError> {
    listenfd::ListenFd::from_env()
        .take_unix_listener(0)
        .map_err(|source| StartError::Io {
            what: "take the inherited socket (LISTEN_FDS)",
            path: PathBuf::from("fd 3"),
            source,
        })
}

/// Serves on a listener the service manager bound: the socket path is its, the lock beside
/// it still keeps a second daemon off it.
fn adopt(listener: std::os::unix::net::UnixListener) -> Result<Claimed, StartError> {
    let path = PathBuf::from("fd 3");
    listener
        .set_nonblocking(true)
        .map_err(io("set non-blocking", &path))?;
    let socket = listener
        .local_addr()
        .ok()
        .and_then(|a| a.as_pathname().map(Path::to_path_buf))
        .ok_or_else(|| StartError::UnsafeSocketDir {
            dir: path.clone(),
            why: "the inherited socket has no path clients could find".into(),
        })?;
    let lock = try_lock_file(&socket.with_extension("lock"), || {
        StartError::AlreadyRunning(socket.clone())
    })?;
    let listener = UnixListener::from_std(listener).map_err(io("adopt", &socket))?;
    Ok(Claimed {
        listener,
        lock,
        socket,
        bound: false,
    })
}

/// Makes sure the socket's directory exists and is safe to serve from. A missing
/// directory is created 0700; an existing one is never changed (it may be `/tmp` or
/// someone's home), only refused when others could swap the socket in it.
fn prepare_socket_dir(dir: &Path) -> Result<(), StartError> {
    use std::os::unix::fs::MetadataExt;
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(io("create socket directory", dir));
        }
        Err(e) => return Err(io("inspect socket directory", dir)(e)),
    };
    if !meta.is_dir() {
        return Err(StartError::UnsafeSocketDir {
            dir: dir.to_path_buf(),
            why: "it is not a directory".into(),
        });
    }
    let mode = meta.mode();
    let sticky = mode & 0o1000 != 0;
    if mode & 0o022 != 0 && !sticky {
        let who = if mode & 0o002 != 0 {
            "every user"
        } else {
            "its group"
        };
        return Err(StartError::UnsafeSocketDir {
            dir: dir.to_path_buf(),
            why: format!(
                "it is writable by {who} (mode {:o}) without the sticky bit, so others could replace the socket",
                mode & 0o7777
            ),
        });
    }
    let own = ctxd_protocol::socket::own_uid();
    if meta.uid() != own && meta.uid() != 0 {
        return Err(StartError::UnsafeSocketDir {
            dir: dir.to_path_buf(),
            why: format!(
                "it belongs to uid {}, not to this user ({own}) or root",
                meta.uid()
            ),
        });
    }
    Ok(())
}

/// The daemon's effective uid: the socket directory's owner and every peer must match it
/// (or be root).
/// Takes an exclusive `flock` on `path` (created if missing) without waiting.
fn try_lock_file(
    path: &Path,
    busy: impl FnOnce() -> StartError,
) -> Result<std::fs::File, StartError> {
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(io("open lock file", path))?;
    match lock.try_lock() {
        Ok(()) => Ok(lock),
        Err(std::fs::TryLockError::WouldBlock) => Err(busy()),
        Err(std::fs::TryLockError::Error(e)) => Err(io("lock", path)(e)),
    }
}

/// Claims the home: one daemon per home, whatever sockets they were given, so two
/// daemons never serve the same database. The lock file holds the owner's pid.
pub(crate) fn lock_home(home: &Path) -> Result<std::fs::File, StartError> {
    use std::io::{Read, Seek, Write};
    let path = home.join("daemon.lock");
    let mut lock = try_lock_file(&path, || {
        let pid = std::fs::read_to_string(&path).unwrap_or_default();
        StartError::HomeInUse {
            home: home.to_path_buf(),
            pid: pid.trim().to_string(),
        }
    })?;
    let mut old = String::new();
    let _ = lock.read_to_string(&mut old);
    let write = lock
        .set_len(0)
        .and_then(|()| lock.rewind())
        .and_then(|()| write!(lock, "{}", std::process::id()));
    if let Err(e) = write {
        tracing::warn!(error = %e, "could not write the pid into the home lock");
    }
    Ok(lock)
}

/// Claims `socket`: its directory (created 0700 when missing, refused when unsafe), an
/// exclusive lock beside the socket (so two daemons starting at once cannot both win), a
/// live-peer probe, replacement of a stale socket (never of anything else), and the socket
/// itself 0600.
pub(crate) async fn claim_socket(socket: &Path) -> Result<Claimed, StartError> {
    use std::os::unix::fs::FileTypeExt;
    if socket.as_os_str().len() > 107 {
        return Err(StartError::SocketPathTooLong(socket.to_path_buf()));
    }
    let dir = socket.parent().unwrap_or(Path::new("/"));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    prepare_socket_dir(dir)?;

    let lock_path = socket.with_extension("lock");
    let lock = try_lock_file(&lock_path, || {
        StartError::AlreadyRunning(socket.to_path_buf())
    })?;

    match std::fs::symlink_metadata(socket) {
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(io("inspect socket path", socket)(e)),
        Ok(meta) if !meta.file_type().is_socket() => {
            return Err(StartError::SocketPathOccupied(socket.to_path_buf()));
        }
        Ok(_) => match UnixStream::connect(socket).await {
            Ok(_) => return Err(StartError::AlreadyRunning(socket.to_path_buf())),
            Err(e)
                if e.kind() == ErrorKind::ConnectionRefused || e.kind() == ErrorKind::NotFound =>
            {
                tracing::info!(socket = %socket.display(), "replacing stale socket");
                std::fs::remove_file(socket).map_err(io("remove stale socket", socket))?;
            }
            Err(e) => return Err(io("probe socket", socket)(e)),
        },
    }
    let listener = UnixListener::bind(socket).map_err(io("bind", socket))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
        .map_err(io("restrict socket", socket))?;
    Ok(Claimed {
        listener,
        lock,
        socket: socket.to_path_buf(),
        bound: true,
    })
}

/// What a daemon is started with besides its paths.
pub struct Options {
    /// The clock (tests pin it); the system clock when absent.
    pub clock: Option<Arc<dyn Clock>>,
    /// Managed-policy root and the user's home for instruction files.
    pub discovery: DiscoveryDefaults,
    /// Summariser of sessions that choose none.
    pub summariser: ctxd_protocol::SummariserConfig,
    /// Bounds on connections, requests and memory.
    pub limits: ctxd_pipeline::limits::Limits,
    /// Where sessions are stored (SQLite in the home unless a PostgreSQL URL is given).
    pub store: ctxd_engine::StoreConfig,
    /// The HTTP front door (`--http`), off when absent.
    pub http: Option<crate::proxy::ProxyOptions>,
    /// The paths the log file and its rotated copies may occupy, when the log goes to a
    /// file (`--log-file`): the daemon's own files, never reported as changes.
    pub log_files: Vec<PathBuf>,
    /// Retention run by the daemon on a schedule; none when absent.
    pub retention: Option<crate::retention::RetentionOptions>,
    /// Where `GET /metrics` is served (`--metrics`); nowhere when absent.
    pub metrics: Option<std::net::SocketAddr>,
    /// A listening socket passed by a service manager ([`inherited_listener`]): served
    /// instead of binding `Paths::socket`.
    pub listener: Option<std::os::unix::net::UnixListener>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            clock: None,
            discovery: DiscoveryDefaults::default(),
            summariser: ctxd_protocol::SummariserConfig::Embedded,
            limits: ctxd_pipeline::limits::Limits::default(),
            store: ctxd_engine::StoreConfig::default(),
            http: None,
            log_files: Vec::new(),
            retention: None,
            metrics: None,
            listener: None,
        }
    }
}

/// The home's lock (`HOME/daemon.lock`): no other daemon serves the home while it is
/// held. `run` hands it back when the daemon has stopped; the `ctxd` binary lets it go
/// only as the process exits, so whoever waits on it (`ctx daemon stop`) sees a daemon
/// that has exited, not one still shutting its runtime down.
#[must_use = "dropping it frees the home for another daemon"]
pub struct HomeLock {
    _file: std::fs::File,
}

/// Runs a daemon until `shutdown` resolves or a client asks it to stop. Returns the
/// home's lock, still held.
pub async fn run(
    paths: Paths,
    mut options: Options,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<HomeLock, StartError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&paths.home)
        .map_err(io("create home", &paths.home))?;
    // Paths shown to the model (persisted outputs) must be absolute.
    let paths = Paths {
        home: std::fs::canonicalize(&paths.home).map_err(io("resolve home", &paths.home))?,
        socket: paths.socket,
    };
    let home_lock = lock_home(&paths.home)?;
    let claimed = match options.listener.take() {
        Some(inherited) => {
            let claimed = adopt(inherited)?;
            if claimed.socket != paths.socket {
                tracing::info!(configured = %paths.socket.display(), inherited = %claimed.socket.display(), "serving the inherited socket instead of the configured one");
            }
            claimed
        }
        None => claim_socket(&paths.socket).await?,
    };
    let paths = Paths {
        socket: claimed.socket.clone(),
        ..paths
    };
    let db = paths.database();
    let config = options.store.clone();
    let store = tokio::task::spawn_blocking(move || config.open(&db))
        .await
        .map_err(|e| StartError::Rpc(e.to_string()))??;
    let clock = options.clock.unwrap_or_else(|| Arc::new(SystemClock));
    let engine = Arc::new(
        Engine::new(store.clone(), &paths.home, clock.clone())
            .with_own_files(own_files(&paths, &options.log_files))
            .with_discovery(options.discovery)
            .with_summariser(options.summariser)
            .with_limits(options.limits.clone()),
    );
    engine.start_watching().await?;
    engine.start_remote();
    tracing::info!(socket = %paths.socket.display(), home = %paths.home.display(), store = %store.describe(), "ctxd listening");
    let stop_http = Arc::new(Notify::new());
    let proxy = match &options.http {
        Some(http) => {
            let (proxy, listener) =
                crate::proxy::bind(http, &paths.home, engine.clone(), &options.limits)
                    .await
                    .map_err(|e| StartError::Rpc(e.to_string()))?;
            let stop = stop_http.clone();
            tokio::spawn(crate::proxy::serve(proxy.clone(), listener, async move {
                stop.notified().await;
            }));
            Some(proxy)
        }
        None => None,
    };
    let retention = Arc::new(crate::retention::RetentionStats::default());
    let stop_retention = Arc::new(Notify::new());
    let retention_task = options
        .retention
        .clone()
        .filter(crate::retention::RetentionOptions::enabled)
        .map(|r| {
            tracing::info!(idle_days = ?r.idle_days, max_store_bytes = ?r.max_store_bytes, every_s = r.every.as_secs(), "retention on a schedule");
            tokio::spawn(crate::retention::worker(
                engine.clone(),
                r,
                clock,
                retention.clone(),
                stop_retention.clone(),
            ))
        });
    let sqlite_db =
        matches!(options.store, ctxd_engine::StoreConfig::Sqlite).then(|| paths.database());
    let metrics = Arc::new(
        crate::metrics::Metrics::new(sqlite_db).map_err(|e| StartError::Rpc(e.to_string()))?,
    );
    let stop_metrics = Arc::new(Notify::new());
    if let Some(addr) = options.metrics {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| StartError::Rpc(format!("--metrics {addr}: {e}")))?;
        tracing::info!(%addr, "serving GET /metrics");
        let (metrics, engine, retention, proxy) = (
            metrics.clone(),
            engine.clone(),
            retention.clone(),
            proxy.clone(),
        );
        let render: Arc<dyn Fn() -> futures::future::BoxFuture<'static, String> + Send + Sync> =
            Arc::new(move || {
                let (metrics, engine, retention, proxy) = (
                    metrics.clone(),
                    engine.clone(),
                    retention.clone(),
                    proxy.clone(),
                );
                Box::pin(async move { metrics.render(&engine, &retention, proxy.as_deref()).await })
            });
        tokio::spawn(crate::metrics::serve(
            listener,
            render,
            stop_metrics.clone(),
        ));
    }
    let ctx = RpcContext {
        engine,
        proxy,
        retention,
        metrics,
        shutdown: Arc::new(Notify::new()),
        socket: paths.socket.clone(),
    };
    let Claimed {
        listener,
        lock,
        socket,
        bound,
    } = claimed;
    // The socket file goes when serving ends, before the lock is released. Made only when
    // bound here: the guard removes the file whenever it is dropped.
    let socket_file = bound.then(|| SocketFile(socket));
    let result = serve(listener, ctx, &options.limits, shutdown)
        .await
        .map_err(|e| StartError::Rpc(e.to_string()));
    stop_http.notify_one();
    stop_retention.notify_one();
    stop_metrics.notify_one();
    if let Some(task) = retention_task {
        // A pass under way finishes its delete before the store closes.
        let _ = task.await;
    }
    drop(socket_file);
    drop(lock);
    store.close();
    tracing::info!("ctxd stopped");
    result.map(|()| HomeLock { _file: home_lock })
}

/// The files the daemon writes on its own: its database (with SQLite's side files), its
/// locks, its socket, and its log and output when they go to a file. A session may watch
/// their directory (a home or log inside a project); they must not be reported, or every
/// line logged about a change would be the next change.
fn own_files(paths: &Paths, log_files: &[PathBuf]) -> Vec<PathBuf> {
    let db = paths.database();
    let mut files: Vec<PathBuf> = ["-wal", "-shm", "-journal"]
        .iter()
        .map(|suffix| {
            let mut name = db.clone().into_os_string();
            name.push(suffix);
            PathBuf::from(name)
        })
        .collect();
    files.push(db);
    files.push(paths.home.join("daemon.lock"));
    files.push(paths.socket.clone());
    files.push(paths.socket.with_extension("lock"));
    files.extend(log_files.iter().cloned());
    for fd in ["/proc/self/fd/1", "/proc/self/fd/2"] {
        if std::fs::metadata(fd).is_ok_and(|m| m.is_file())
            && let Ok(target) = std::fs::read_link(fd)
        {
            files.push(target);
        }
    }
    files
}

struct SocketFile(PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
