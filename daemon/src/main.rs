//! `ctxd`: the context-engine daemon.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use ctxd_pipeline::limits::Limits;
use tracing_subscriber::EnvFilter;

mod config_file;
mod log_file;

/// A compile, an import and an append allocate and free many small blocks (records,
/// content blocks, JSON values); mimalloc does that markedly faster than the system's
/// allocator (see docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "ctxd",
    version,
    about = "Context engine daemon for coding agents"
)]
struct Args {
    /// Unix socket to serve on [default: $CTXD_HOME/ctxd.sock when a home is given, else
    /// the user's runtime directory].
    #[arg(long, env = "CTXD_SOCKET")]
    socket: Option<PathBuf>,
    /// Directory for the database and session files [default: the user's data directory].
    #[arg(long, env = "CTXD_HOME", global = true)]
    home: Option<PathBuf>,
    /// Where sessions are stored: `sqlite` (the default: `ctxd.db` in the home, no setup)
    /// or a PostgreSQL URL shared by several daemons, e.g. `postgres://user@host/ctxd` or
    /// `postgresql:///ctxd?host=/run/postgresql` (a Unix socket directory).
    /// A password belongs in `CTXD_STORE` or `--store-file`, never on the command line
    /// (every user of the machine can read a process's arguments).
    #[arg(long, env = "CTXD_STORE", global = true)]
    store: Option<String>,
    /// A file holding the store URL (its first line), for a URL with a password.
    #[arg(long, env = "CTXD_STORE_FILE", global = true, conflicts_with = "store")]
    store_file: Option<PathBuf>,
    /// PostgreSQL read connections of this daemon (besides one writer, one listener and
    /// one publisher); reads beyond wait for one.
    #[arg(long, env = "CTXD_STORE_POOL", default_value_t = ctxd_engine::DEFAULT_POOL, global = true)]
    store_pool: usize,
    /// How long a call waits for a PostgreSQL store that does not answer before it fails
    /// with the storage error (-32020), in milliseconds.
    #[arg(long, env = "CTXD_STORE_TIMEOUT_MS", default_value_t = 40_000, value_parser = clap::value_parser!(u64).range(100..=3_600_000), global = true)]
    store_timeout_ms: u64,
    /// Managed-policy root for instruction files (CLAUDE.md, .claude/rules).
    #[arg(long, env = "CTXD_MANAGED_ROOT", default_value = "/etc/claude-code")]
    managed_root: PathBuf,
    /// Default summariser of sessions that choose none, as JSON, e.g.
    /// `{"kind":"anthropic","api_key_env":"ANTHROPIC_API_KEY","model":"claude-haiku-4-5"}`.
    /// Default: `{"kind":"embedded"}` (offline).
    #[arg(long, env = "CTXD_SUMMARISER")]
    summariser: Option<String>,
    /// Connections served at once; the next one gets a JSON-RPC error (-32040).
    #[arg(long, env = "CTXD_MAX_CONNECTIONS", default_value_t = Limits::default().max_connections)]
    max_connections: usize,
    /// Sessions kept loaded in memory; the least recently used beyond this is unloaded.
    #[arg(long, env = "CTXD_MAX_LOADED_SESSIONS", default_value_t = Limits::default().max_loaded_sessions)]
    max_loaded_sessions: usize,
    /// Largest request body (HTTP) or message (WebSocket), in bytes.
    #[arg(long, env = "CTXD_MAX_REQUEST_BYTES", default_value_t = Limits::default().max_request_bytes)]
    max_request_bytes: u32,
    /// Milliseconds a connection has to send a request head, and a request its whole body.
    #[arg(long, env = "CTXD_REQUEST_TIMEOUT_MS", default_value_t = Limits::default().request_timeout.as_millis() as u64)]
    request_timeout_ms: u64,
    /// Milliseconds between WebSocket pings; a socket silent for three is closed.
    #[arg(long, env = "CTXD_WS_PING_INTERVAL_MS", default_value_t = Limits::default().ws_ping_interval.as_millis() as u64)]
    ws_ping_interval_ms: u64,
    /// Log filter (tracing EnvFilter syntax: a default level, then `target=level` per
    /// module, e.g. `info,ctxd_engine=debug`); also read from CTXD_LOG.
    #[arg(long, env = "CTXD_LOG", default_value = "info")]
    log: String,
    /// Write the log to this file (a relative path is in the home) instead of stderr,
    /// rotated by size: `FILE.1` is the newest rotated copy.
    #[arg(long, env = "CTXD_LOG_FILE")]
    log_file: Option<PathBuf>,
    /// Size in bytes past which the log file is rotated.
    #[arg(long, env = "CTXD_LOG_MAX_BYTES", default_value_t = 10 << 20, value_parser = clap::value_parser!(u64).range(log_file::MIN_MAX_BYTES..=1 << 40))]
    log_max_bytes: u64,
    /// Rotated log files kept besides the current one; older ones are deleted.
    #[arg(long, env = "CTXD_LOG_MAX_FILES", default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=1000))]
    log_max_files: u16,
    /// Log line format: `text` for people, `json` (one object per line) for collectors.
    #[arg(long, env = "CTXD_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Retention run by the daemon: delete the sessions (with their sub-agents' threads
    /// and files) not updated for this many days, at start and then every
    /// `--retention-interval-secs`. Off when neither this nor `--retention-max-store-bytes`
    /// is given.
    #[arg(long, env = "CTXD_RETENTION_IDLE_DAYS", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    retention_idle_days: Option<u32>,
    /// Retention run by the daemon: then delete the least recently updated sessions until
    /// the stored JSON of the rest's records is at most this many bytes.
    #[arg(long, env = "CTXD_RETENTION_MAX_STORE_BYTES")]
    retention_max_store_bytes: Option<u64>,
    /// Seconds between two retention passes.
    #[arg(long, env = "CTXD_RETENTION_INTERVAL_SECS", default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    retention_interval_secs: u64,
    /// Serve the metrics of `daemon.metrics` as `GET /metrics` (Prometheus text format) on
    /// this TCP address, e.g. `127.0.0.1:9187`. Off by default.
    #[arg(long, env = "CTXD_METRICS")]
    metrics: Option<std::net::SocketAddr>,
    /// Print the effective configuration (flags, then the environment, then
    /// `CTXD_HOME/config.toml`, then the defaults) as TOML, passwords masked, and exit.
    #[arg(long)]
    print_config: bool,
    /// Serve the Messages API (and Chat Completions) on this loopback address, e.g.
    /// `127.0.0.1:8719`, under a secret path (`ctx proxy env` prints the base URLs),
    /// forwarding to the upstreams below and recording each conversation as a session.
    /// Off by default.
    #[arg(long, env = "CTXD_HTTP")]
    http: Option<std::net::SocketAddr>,
    /// The Messages API the front door forwards to.
    #[arg(long, env = "CTXD_UPSTREAM_ANTHROPIC", default_value = ctxd::proxy::DEFAULT_UPSTREAM_ANTHROPIC)]
    upstream_anthropic: String,
    /// The Chat Completions API the front door forwards `/v1/chat/completions` to.
    #[arg(long, env = "CTXD_UPSTREAM_OPENAI", default_value = ctxd::proxy::DEFAULT_UPSTREAM_OPENAI)]
    upstream_openai: String,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Apply the store's pending schema migrations and exit. A PostgreSQL database shared
    /// by several daemons is upgraded only this way (once, before starting the new
    /// version); an empty one, and SQLite, are also migrated when a daemon starts.
    Migrate,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum LogFormat {
    Text,
    Json,
}

/// stderr for logs, where a failed write (a full disk under a redirected stderr) loses
/// the line instead of failing the caller: tracing-subscriber reports writer errors with
/// `eprintln!`, which panics when stderr itself is what fails, and a panic inside a
/// request handler would drop the client's connection without an answer.
struct LossyStderr;

impl std::io::Write for LossyStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = std::io::stderr().write_all(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}

/// SIGTERM or SIGINT. The handlers are registered here, before the daemon serves: one
/// registered when the future is first polled missed a SIGTERM sent right after the
/// daemon answered its first call, and the default action killed it uncleanly.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let (term, int) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    async move {
        match (term, int) {
            (Ok(mut term), Ok(mut int)) => tokio::select! {
                _ = int.recv() => tracing::info!("SIGINT: stopping"),
                _ = term.recv() => tracing::info!("SIGTERM: stopping"),
            },
            (term, int) => {
                let e = term.err().or(int.err()).map(|e| e.to_string());
                tracing::warn!(error = ?e, "no signal handler; relying on SIGINT");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}

/// The targets that write a request's or response's body whole (the HTTP body, a
/// call's params and answer, a SQL statement's parameters), with the most verbose level
/// that does not: a body holds records, and records hold what a user pasted, secrets
/// included. They are capped so whatever the filter asks.
const BODY_LOGGING_TARGETS: [(&str, &str); 7] = [
    ("jsonrpsee-http", "debug"),
    ("jsonrpsee-server", "debug"),
    ("jsonrpsee-core", "debug"),
    ("jsonrpsee_core", "debug"),
    ("jsonrpsee_server", "debug"),
    ("tokio_postgres", "info"),
    ("postgres", "info"),
];

/// Targets that log every raw file-system event they see, with the most verbose level
/// that does not: when the log goes to a file in a watched directory, each of those
/// lines is itself an event, logged in turn, without end.
const PER_EVENT_LOGGING_TARGETS: [(&str, &str); 1] = [("notify", "debug")];

/// Whether a PostgreSQL URL carries a password: `scheme://user:PASSWORD@host` or a
/// `password=` parameter.
fn url_has_password(url: &str) -> bool {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = after_scheme.split(['/', '?']).next().unwrap_or_default();
    let in_userinfo = authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'));
    let in_query = url
        .split_once('?')
        .is_some_and(|(_, q)| q.split('&').any(|kv| kv.starts_with("password=")));
    in_userinfo || in_query
}

/// The log filter of `--log` / `CTXD_LOG` (EnvFilter syntax), with the body-logging
/// targets capped. A filter that does not parse is an error: a daemon meant to log a
/// module at `debug` that silently logged at `info` would be found out too late.
///
/// A cap is a directive `target=level`, which sets that target's level rather than
/// lowering it; so it is added only when the filter asks somewhere for more than the cap
/// (then the capped targets log at the cap). Under `info` those targets stay at `info`
/// instead of logging every connection at `debug`.
fn log_filter(spec: &str) -> anyhow::Result<EnvFilter> {
    use tracing_subscriber::filter::LevelFilter;
    let mut filter = EnvFilter::builder()
        .parse(spec)
        .with_context(|| format!("log / CTXD_LOG: {spec:?} is not a log filter"))?;
    let asked = filter.max_level_hint().unwrap_or(LevelFilter::TRACE);
    for (target, level) in BODY_LOGGING_TARGETS
        .into_iter()
        .chain(PER_EVENT_LOGGING_TARGETS)
    {
        let cap: LevelFilter = level.parse().unwrap_or(LevelFilter::INFO);
        if asked > cap
            && let Ok(d) = format!("{target}={level}").parse()
        {
            filter = filter.add_directive(d);
        }
    }
    Ok(filter)
}

/// Starts logging: to stderr, or to the rotated file of `--log-file`. Returns the paths
/// the log file may occupy (none on stderr).
fn init_logging(args: &Args) -> anyhow::Result<Vec<PathBuf>> {
    let filter = log_filter(&args.log)?;
    let Some(file) = &args.log_file else {
        let logs = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(|| LossyStderr);
        match args.log_format {
            LogFormat::Text => logs
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .init(),
            LogFormat::Json => logs.json().init(),
        }
        return Ok(Vec::new());
    };
    let home = ctxd::daemon::Paths::resolve(args.home.clone(), None)?.home;
    let path = home.join(file);
    let max_files = usize::from(args.log_max_files);
    let writer = log_file::LogFile::open(&path, args.log_max_bytes, max_files)?;
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(writer);
    match args.log_format {
        LogFormat::Text => logs.init(),
        LogFormat::Json => logs.json().init(),
    }
    Ok(log_file::LogFile::paths(&path, max_files))
}

/// The configuration a daemon would run with, as TOML a config file could hold (plus the
/// home and the resolved socket), passwords masked.
fn effective_config(
    args: &Args,
    paths: &ctxd::daemon::Paths,
    file: &std::path::Path,
) -> anyhow::Result<String> {
    use toml::Value;
    let int = |n: u64| -> anyhow::Result<Value> {
        Ok(Value::Integer(
            i64::try_from(n).context("a value over the TOML integer range")?,
        ))
    };
    let path = |p: &std::path::Path| Value::String(p.display().to_string());
    let mut t = toml::Table::new();
    t.insert("home".into(), path(&paths.home));
    t.insert("socket".into(), path(&paths.socket));
    t.insert(
        "store".into(),
        Value::String(
            args.store
                .as_deref()
                .map_or_else(|| "sqlite".to_string(), config_file::mask_password),
        ),
    );
    if let Some(f) = &args.store_file {
        t.insert("store_file".into(), path(f));
    }
    t.insert("store_pool".into(), int(args.store_pool as u64)?);
    t.insert("store_timeout_ms".into(), int(args.store_timeout_ms)?);
    t.insert("managed_root".into(), path(&args.managed_root));
    if let Some(s) = &args.summariser {
        t.insert("summariser".into(), Value::String(s.clone()));
    }
    t.insert("max_connections".into(), int(args.max_connections as u64)?);
    t.insert(
        "max_loaded_sessions".into(),
        int(args.max_loaded_sessions as u64)?,
    );
    t.insert(
        "max_request_bytes".into(),
        int(u64::from(args.max_request_bytes))?,
    );
    t.insert("request_timeout_ms".into(), int(args.request_timeout_ms)?);
    t.insert("ws_ping_interval_ms".into(), int(args.ws_ping_interval_ms)?);
    t.insert("log".into(), Value::String(args.log.clone()));
    if let Some(f) = &args.log_file {
        t.insert("log_file".into(), path(&paths.home.join(f)));
    }
    t.insert("log_max_bytes".into(), int(args.log_max_bytes)?);
    t.insert("log_max_files".into(), int(u64::from(args.log_max_files))?);
    if let Some(d) = args.retention_idle_days {
        t.insert("retention_idle_days".into(), int(u64::from(d))?);
    }
    if let Some(b) = args.retention_max_store_bytes {
        t.insert("retention_max_store_bytes".into(), int(b)?);
    }
    if let Some(addr) = args.metrics {
        t.insert("metrics".into(), Value::String(addr.to_string()));
    }
    t.insert(
        "retention_interval_secs".into(),
        int(args.retention_interval_secs)?,
    );
    let format = match args.log_format {
        LogFormat::Text => "text",
        LogFormat::Json => "json",
    };
    t.insert("log_format".into(), Value::String(format.into()));
    Ok(format!(
        "# ctxd's effective configuration: flags, then the environment, then {}, then the defaults\n{}",
        file.display(),
        toml::to_string(&t)?
    ))
}

fn main() -> anyhow::Result<()> {
    // First, while this is the only thread: taking it clears `LISTEN_*` from the
    // environment, which is unsound once other threads may read it.
    let inherited = ctxd::daemon::inherited_listener()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("start the runtime")?;
    let home_lock = runtime.block_on(daemon_main(inherited))?;
    // The runtime's threads end first; the home's lock goes with the process, which the
    // kernel releases at exit.
    drop(runtime);
    if let Some(lock) = home_lock {
        std::mem::forget(lock);
    }
    Ok(())
}

async fn daemon_main(
    inherited: Option<std::os::unix::net::UnixListener>,
) -> anyhow::Result<Option<ctxd::daemon::HomeLock>> {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cmd = <Args as clap::CommandFactory>::command();
    // Once for the home (where the config file is) and for what the command line and the
    // environment set; then again with the file's values below them.
    let first = cmd
        .clone()
        .try_get_matches_from(&argv)
        .unwrap_or_else(|e| e.exit());
    let first_args =
        <Args as clap::FromArgMatches>::from_arg_matches(&first).unwrap_or_else(|e| e.exit());
    let config_path = ctxd::daemon::Paths::resolve(first_args.home, None)?
        .home
        .join(config_file::FILE_NAME);
    let argv = config_file::merged_args(&cmd, &first, &config_path, &argv)?;
    let matches = cmd.try_get_matches_from(&argv).unwrap_or_else(|e| e.exit());
    let mut args =
        <Args as clap::FromArgMatches>::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let store_on_command_line =
        first.value_source("store") == Some(clap::parser::ValueSource::CommandLine);
    if args.print_config {
        let paths = ctxd::daemon::Paths::resolve(args.home.clone(), args.socket.clone())?;
        print!("{}", effective_config(&args, &paths, &config_path)?);
        return Ok(None);
    }
    let log_files = init_logging(&args)?;
    // A write past RLIMIT_FSIZE raises SIGXFSZ, whose default action kills the daemon;
    // with a handler installed the write fails with EFBIG and reaches the caller as a
    // storage error like any other full disk.
    let mut xfsz =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::from_raw(libc::SIGXFSZ))
            .context("install a SIGXFSZ handler")?;
    tokio::spawn(async move {
        while xfsz.recv().await.is_some() {
            tracing::warn!("a write exceeded the file size limit (SIGXFSZ)");
        }
    });
    if store_on_command_line && args.store.as_deref().is_some_and(url_has_password) {
        anyhow::bail!(
            "--store holds a password, which every user of this machine can read in the process's arguments: give the URL in CTXD_STORE or in a file named by --store-file"
        );
    }
    if let Some(file) = &args.store_file {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("reading the store URL from {}", file.display()))?;
        let url = text.lines().next().unwrap_or_default().trim().to_string();
        anyhow::ensure!(!url.is_empty(), "{} holds no store URL", file.display());
        args.store = Some(url);
    }
    let mut store = ctxd_engine::StoreConfig::parse(args.store.as_deref(), args.store_pool)
        .context("--store / CTXD_STORE")?;
    if let ctxd_engine::StoreConfig::Postgres(o) = &mut store {
        o.deadline = std::time::Duration::from_millis(args.store_timeout_ms);
    }
    let paths = ctxd::daemon::Paths::resolve(args.home, args.socket)?;
    if let Some(Command::Migrate) = args.command {
        let db = paths.database();
        if matches!(store, ctxd_engine::StoreConfig::Sqlite) {
            std::fs::create_dir_all(&paths.home).context("create the home")?;
        }
        let said = tokio::task::spawn_blocking(move || store.migrate(&db))
            .await
            .context("migrate")?
            .context("ctxd migrate")?;
        println!("{said}");
        return Ok(None);
    }
    let summariser = match &args.summariser {
        Some(json) => serde_json::from_str(json)
            .context("--summariser / CTXD_SUMMARISER is not a valid summariser configuration")?,
        None => ctxd_protocol::SummariserConfig::Embedded,
    };
    let options = ctxd::daemon::Options {
        clock: None,
        summariser,
        discovery: ctxd_engine::DiscoveryDefaults {
            managed_root: args.managed_root,
            ..Default::default()
        },
        limits: Limits {
            max_connections: args.max_connections.max(1),
            max_loaded_sessions: args.max_loaded_sessions.max(1),
            max_request_bytes: args.max_request_bytes,
            request_timeout: Duration::from_millis(args.request_timeout_ms.max(1)),
            ws_ping_interval: Duration::from_millis(args.ws_ping_interval_ms.max(1)),
        },
        store,
        log_files,
        retention: Some(ctxd::retention::RetentionOptions {
            idle_days: args.retention_idle_days,
            max_store_bytes: args.retention_max_store_bytes,
            every: Duration::from_secs(args.retention_interval_secs),
        }),
        metrics: args.metrics,
        listener: inherited,
        http: args.http.map(|addr| ctxd::proxy::ProxyOptions {
            addr,
            upstream_anthropic: args.upstream_anthropic,
            upstream_openai: args.upstream_openai,
        }),
    };
    let home_lock = ctxd::daemon::run(paths, options, shutdown_signal())
        .await
        .context("ctxd")?;
    Ok(Some(home_lock))
}

#[cfg(test)]
mod tests {
    use super::{log_filter, url_has_password};

    #[test]
    fn the_watchers_per_event_lines_are_not_logged_even_at_trace() {
        for spec in ["trace", "notify=trace", "info,notify=trace"] {
            let filter = log_filter(spec).unwrap().to_string();
            assert!(filter.contains("notify=debug"), "{spec}: {filter}");
            assert!(!filter.contains("notify=trace"), "{spec}: {filter}");
        }
    }

    #[test]
    fn caps_never_raise_a_level() {
        for spec in ["info", "warn", "info,ctxd_engine=debug"] {
            let filter = log_filter(spec).unwrap().to_string();
            assert!(!filter.contains("jsonrpsee"), "{spec}: {filter}");
        }
        let filter = log_filter("info,jsonrpsee-server=trace")
            .unwrap()
            .to_string();
        assert!(filter.contains("jsonrpsee-server=debug"), "{filter}");
        assert!(!filter.contains("jsonrpsee-server=trace"), "{filter}");
    }

    #[test]
    fn a_filter_that_does_not_parse_is_an_error() {
        assert!(log_filter("info,ctxd_engine=debug").is_ok());
        let e = log_filter("info,ctxd_engine=loud").unwrap_err().to_string();
        assert!(e.contains("CTXD_LOG"), "{e}");
    }

    #[test]
    fn passwords_are_found_in_the_userinfo_and_the_query() {
        assert!(url_has_password("postgresql://u:p@h/db"));
        assert!(url_has_password("postgres://u:p@h:5432/db?sslmode=require"));
        assert!(url_has_password("postgresql:///db?host=/run&password=p"));
        assert!(!url_has_password("postgresql://u@h/db"));
        assert!(!url_has_password("postgresql:///db?host=/run/postgresql"));
        assert!(!url_has_password("postgresql://h:5432/db"));
        assert!(!url_has_password("sqlite"));
    }
}
