//! `ctxd`: the context-engine daemon.

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use tracing_subscriber::EnvFilter;

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
    #[arg(long, env = "CTXD_HOME")]
    home: Option<PathBuf>,
    /// Managed-policy root for instruction files (CLAUDE.md, .claude/rules).
    #[arg(long, env = "CTXD_MANAGED_ROOT", default_value = "/etc/claude-code")]
    managed_root: PathBuf,
    /// Default summariser of sessions that choose none, as JSON, e.g.
    /// `{"kind":"anthropic","api_key_env":"ANTHROPIC_API_KEY","model":"claude-haiku-4-5"}`.
    /// Default: `{"kind":"embedded"}` (offline).
    #[arg(long, env = "CTXD_SUMMARISER")]
    summariser: Option<String>,
    /// Log filter (tracing EnvFilter syntax); also read from CTXD_LOG.
    #[arg(long, env = "CTXD_LOG", default_value = "info")]
    log: String,
    /// Log line format: `text` for people, `json` (one object per line) for collectors.
    #[arg(long, env = "CTXD_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum LogFormat {
    Text,
    Json,
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "no SIGTERM handler; relying on SIGINT");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT: stopping"),
        _ = term.recv() => tracing::info!("SIGTERM: stopping"),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let logs = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_new(&args.log).unwrap_or_else(|_| EnvFilter::new("info")))
        .with_writer(std::io::stderr);
    match args.log_format {
        LogFormat::Text => logs
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => logs.json().init(),
    }
    let paths = ctxd::daemon::Paths::resolve(args.home, args.socket)?;
    let summariser = match &args.summariser {
        Some(json) => serde_json::from_str(json)
            .context("--summariser / CTXD_SUMMARISER is not a valid summariser configuration")?,
        None => ctxd_protocol::SummariserConfig::Embedded,
    };
    let options = ctxd::daemon::Options {
        clock: None,
        summariser,
        discovery: ctxd::engine::DiscoveryDefaults {
            managed_root: args.managed_root,
            ..Default::default()
        },
    };
    ctxd::daemon::run(paths, options, shutdown_signal())
        .await
        .context("ctxd")?;
    Ok(())
}
