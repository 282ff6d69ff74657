//! Running a daemon: resolve paths, claim the socket, open the store, serve until told to
//! stop. Everything the daemon writes lives under its home.

use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use thiserror::Error;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Notify;

use crate::clock::{Clock, SystemClock};
use crate::engine::{DiscoveryDefaults, Engine};
use crate::rpc::{RpcContext, serve};
use crate::store::Store;

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
    #[error("socket path {0} is too long for a Unix socket (at most 107 bytes)")]
    SocketPathTooLong(PathBuf),
    #[error("cannot determine a home directory; pass --home or set CTXD_HOME")]
    NoHome,
    #[error("store: {0}")]
    Store(#[from] crate::error::Error),
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
        let explicit_home = home.is_some();
        let home = match home {
            Some(h) => h,
            None => dirs
                .as_ref()
                .map(|d| d.data_dir().to_path_buf())
                .ok_or(StartError::NoHome)?,
        };
        let socket = match socket {
            Some(s) => s,
            None if explicit_home => home.join("ctxd.sock"),
            None => default_socket(dirs.as_ref()),
        };
        Ok(Paths { home, socket })
    }

    pub fn database(&self) -> PathBuf {
        self.home.join("ctxd.db")
    }
}

/// The runtime directory when the platform has one, else a per-user directory in /tmp.
pub fn default_socket(dirs: Option<&directories::ProjectDirs>) -> PathBuf {
    if let Some(rt) = dirs.and_then(|d| d.runtime_dir()) {
        return rt.join("ctxd.sock");
    }
    let uid = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
        .unwrap_or(0);
    PathBuf::from(format!("/tmp/ctxd-{uid}")).join("ctxd.sock")
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> StartError + 'a {
    move |source| StartError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// A claimed socket: the listener plus the lock that proves no other daemon owns it.
pub struct Claimed {
    pub listener: UnixListener,
    pub lock: std::fs::File,
    pub socket: PathBuf,
}

/// Claims `socket`: directory 0700, an exclusive lock beside the socket (so two daemons
/// starting at once cannot both win), a live-peer probe, stale-file replacement, and the
/// socket itself 0600.
pub async fn claim_socket(socket: &Path) -> Result<Claimed, StartError> {
    if socket.as_os_str().len() > 107 {
        return Err(StartError::SocketPathTooLong(socket.to_path_buf()));
    }
    let dir = socket.parent().unwrap_or(Path::new("/"));
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io("create socket directory", dir))?;
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(io("restrict socket directory", dir))?;

    let lock_path = socket.with_extension("lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io("open lock file", &lock_path))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(StartError::AlreadyRunning(socket.to_path_buf()));
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io("lock", &lock_path)(e)),
    }

    if socket.exists() {
        match UnixStream::connect(socket).await {
            Ok(_) => return Err(StartError::AlreadyRunning(socket.to_path_buf())),
            Err(e)
                if e.kind() == ErrorKind::ConnectionRefused || e.kind() == ErrorKind::NotFound =>
            {
                tracing::info!(socket = %socket.display(), "replacing stale socket");
                std::fs::remove_file(socket).map_err(io("remove stale socket", socket))?;
            }
            Err(e) => return Err(io("probe socket", socket)(e)),
        }
    }
    let listener = UnixListener::bind(socket).map_err(io("bind", socket))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
        .map_err(io("restrict socket", socket))?;
    Ok(Claimed {
        listener,
        lock,
        socket: socket.to_path_buf(),
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
}

impl Default for Options {
    fn default() -> Self {
        Options {
            clock: None,
            discovery: DiscoveryDefaults::default(),
            summariser: ctxd_protocol::SummariserConfig::Embedded,
        }
    }
}

/// Runs a daemon until `shutdown` resolves or a client asks it to stop.
pub async fn run(
    paths: Paths,
    options: Options,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), StartError> {
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
    let claimed = claim_socket(&paths.socket).await?;
    let db = paths.database();
    let store = tokio::task::spawn_blocking(move || Store::open(&db))
        .await
        .map_err(|e| StartError::Rpc(e.to_string()))??;
    let clock = options.clock.unwrap_or_else(|| Arc::new(SystemClock));
    let engine = Arc::new(
        Engine::new(store.clone(), &paths.home, clock)
            .with_discovery(options.discovery)
            .with_summariser(options.summariser),
    );
    engine.start_watching().await?;
    tracing::info!(socket = %paths.socket.display(), home = %paths.home.display(), "ctxd listening");
    let ctx = RpcContext {
        engine,
        shutdown: Arc::new(Notify::new()),
        socket: paths.socket.clone(),
    };
    let Claimed {
        listener,
        lock,
        socket,
    } = claimed;
    // The socket file goes when serving ends, before the lock is released.
    let socket_file = SocketFile(socket);
    let result = serve(listener, ctx, shutdown)
        .await
        .map_err(|e| StartError::Rpc(e.to_string()));
    drop(socket_file);
    drop(lock);
    store.close();
    tracing::info!("ctxd stopped");
    result
}

struct SocketFile(PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
