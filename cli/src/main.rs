//! `ctx`: the command-line client of ctxd. Parsing and dispatch only; each command
//! group lives in `commands/`.

mod cache_view;
mod clears;
mod commands;
mod cost;
mod output;
mod policy_report;
mod replay;
mod worker;

use std::path::PathBuf;

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};

use commands::Ctx;
use commands::attachments::{PlanArgs, QueueArgs};
use commands::collapse::CollapseCmd;
use commands::context::{CompactArgs, CompileArgs, SessionArg, SnipArgs};
use commands::daemon::DaemonCmd;
use commands::demo::{DemoArgs, ReplayArgs};
use commands::events::EventsArgs;
use commands::memory::{MemoryCmd, WorkerArgs};
use commands::session::SessionCmd;
use commands::transcript::{AppendArgs, ImportArgs, ReadArgs};

#[derive(Parser, Debug)]
#[command(
    name = "ctx",
    version,
    about = "Command-line client of the ctxd context engine",
    after_help = "A session may be named by its id, by `last` (the one updated most recently), or by the start or the end of its id when only one id starts or ends so (the end is random, so a few characters usually suffice)."
)]
struct Cli {
    /// The daemon's Unix socket [default: as ctxd resolves it].
    #[arg(long, env = "CTXD_SOCKET", global = true)]
    socket: Option<PathBuf>,
    /// The daemon's home, passed on when ctx starts a daemon.
    #[arg(long, env = "CTXD_HOME", global = true)]
    home: Option<PathBuf>,
    /// Do not start a daemon when none answers.
    #[arg(long, global = true)]
    no_start: bool,
    /// Machine-readable output: one JSON value (one per line for streams).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Daemon control.
    Daemon {
        #[command(subcommand)]
        action: DaemonCmd,
    },
    /// Session management and settings.
    Session {
        #[command(subcommand)]
        action: SessionCmd,
    },
    /// Append records (JSON lines, one record each) from FILE or stdin.
    Append(AppendArgs),
    /// Print a page of the transcript.
    Read(ReadArgs),
    /// Print the compiled request body for the next model call.
    Compile(CompileArgs),
    /// Send the next request to the session's provider (`settings.provider`) and print
    /// the answer; with PROMPT, append it first.
    Send(commands::context::SendArgs),
    /// The frozen fates of a session's tool results (what the model saw instead).
    Replacements(SessionArg),
    /// Follow a session's events, one JSON object per line (exits non-zero if the
    /// daemon goes away).
    Events(EventsArgs),
    /// The session's settings files and hooks, with their source file.
    Hooks(SessionArg),
    /// Trust a project directory, so its `.claude/settings.json` and
    /// `settings.local.json` may run hooks (also below it); `--remove` takes it back,
    /// `--list` shows the trust list.
    Trust(commands::hooks::TrustArgs),
    /// Import the bundled sample Claude Code session, compile it, and show what ctxd did.
    Demo(DemoArgs),
    /// Replay a Claude Code transcript through the pipeline, compiling before every model
    /// call of the original session.
    Replay(ReplayArgs),
    /// What fills the context window, by category (Claude Code's /context).
    Context(SessionArg),
    /// Every model call's cache reads next to ctxd's prediction, and the cache breaks.
    Cache(SessionArg),
    /// Compact the session now, with the session's summariser.
    Compact(CompactArgs),
    /// Session memory: show, edit or extract now.
    Memory {
        #[command(subcommand)]
        action: MemoryCmd,
    },
    /// Run an external session-memory extractor for sessions whose
    /// `memory.extractor` setting is `external`.
    MemoryWorker(WorkerArgs),
    /// Context collapse: list or undo.
    Collapse {
        #[command(subcommand)]
        action: CollapseCmd,
    },
    /// Remove a range of messages by their short ids (needs `snip_enabled=true`).
    Snip(SnipArgs),
    /// Import a Claude Code JSONL transcript as a new session.
    Import(ImportArgs),
    /// Write a session as a Claude Code JSONL transcript to stdout; `ctx import` reads
    /// it back to a session that compiles the same request.
    Export(commands::export::ExportArgs),
    /// Write a consistent copy of the daemon's SQLite store to a new file while it runs.
    Backup(commands::export::BackupArgs),
    /// Retention: delete sessions idle for N days, then the least recently updated over
    /// a size quota (`--dry-run` only lists them).
    Gc(commands::export::GcArgs),
    /// A session's skills: listed, pending, dormant (conditional), omitted, invoked.
    Skills(SessionArg),
    /// A session's tools (sent, deferred, discovered), MCP servers, agent types and what
    /// the model was told.
    Capabilities(SessionArg),
    /// Switch plan mode on or off: the model plans and changes nothing.
    Plan(PlanArgs),
    /// Queue input typed while a turn runs; the next compile delivers it (`--list` shows
    /// what waits).
    Queue(QueueArgs),
    /// The daemon's HTTP front door (`ctxd --http`): the base URLs for a shell, its state.
    Proxy {
        #[command(subcommand)]
        action: commands::proxy::ProxyCmd,
    },
    /// Print a shell completion script: `source <(ctx completions bash)`.
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli).await {
        if output::is_broken_pipe(&e) {
            // The reader went away (`ctx events | head -1`): nothing left to say.
            std::process::exit(0);
        }
        eprintln!("ctx: {e:#}");
        std::process::exit(1);
    }
}

async fn run(cli: Cli) -> Result<()> {
    let ctx = Ctx::new(cli.socket, cli.home, cli.no_start, cli.json);
    // Commands that must not start a daemon, or that need none.
    match &cli.command {
        Command::Daemon { action } => return commands::daemon::run(&ctx, action).await,
        Command::Proxy { action } => return commands::proxy::run(&ctx, action).await,
        Command::MemoryWorker(a) => return commands::memory::worker(&ctx, a).await,
        Command::Completions { shell } => {
            // clap_complete panics on a failed write; written here, a closed pipe
            // (`ctx completions bash | head -1`) is the quiet exit every command has.
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut Cli::command(), "ctx", &mut script);
            std::io::Write::write_all(&mut std::io::stdout().lock(), &script)?;
            return Ok(());
        }
        _ => {}
    }
    let client = ctx.connect().await?;
    let c = &client;
    match &cli.command {
        Command::Session { action } => commands::session::run(&ctx, c, action).await,
        Command::Append(a) => commands::transcript::append(&ctx, c, a).await,
        Command::Read(a) => commands::transcript::read(&ctx, c, a).await,
        Command::Import(a) => commands::transcript::import(&ctx, c, a).await,
        Command::Export(a) => commands::export::export(&ctx, c, a).await,
        Command::Backup(a) => commands::export::backup(&ctx, c, a).await,
        Command::Gc(a) => commands::export::gc(&ctx, c, a).await,
        Command::Compile(a) => commands::context::compile(&ctx, c, a).await,
        Command::Send(a) => commands::context::send(&ctx, c, a).await,
        Command::Replacements(a) => commands::context::replacements(&ctx, c, a).await,
        Command::Snip(a) => commands::context::snip(&ctx, c, a).await,
        Command::Compact(a) => commands::context::compact(&ctx, c, a).await,
        Command::Events(a) => commands::events::run(c, a).await,
        Command::Hooks(a) => commands::hooks::show(&ctx, c, a).await,
        Command::Trust(a) => commands::hooks::trust(&ctx, c, a).await,
        Command::Memory { action } => commands::memory::run(&ctx, c, action).await,
        Command::Collapse { action } => commands::collapse::run(&ctx, c, action).await,
        Command::Demo(a) => commands::demo::demo(&ctx, c, a).await,
        Command::Replay(a) => commands::demo::replay(&ctx, c, a).await,
        Command::Context(a) => commands::cache::context(&ctx, c, a).await,
        Command::Cache(a) => commands::cache::cache(&ctx, c, a).await,
        Command::Skills(a) => commands::capabilities::skills(&ctx, c, a).await,
        Command::Capabilities(a) => commands::capabilities::capabilities(&ctx, c, a).await,
        Command::Plan(a) => commands::attachments::plan(&ctx, c, a).await,
        Command::Queue(a) => commands::attachments::queue(&ctx, c, a).await,
        Command::Daemon { .. }
        | Command::Proxy { .. }
        | Command::MemoryWorker(_)
        | Command::Completions { .. } => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every argument and option of every command explains itself in `--help`.
    #[test]
    fn every_argument_has_help_text() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let builtin = matches!(arg.get_id().as_str(), "help" | "version");
                if !builtin && arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.get_about().is_none() && sub.get_name() != "help" {
                    missing.push(format!("{path} {} (no about)", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "ctx", &mut missing);
        assert!(missing.is_empty(), "arguments without help: {missing:#?}");
        Cli::command().debug_assert();
    }
}
