//! `ctx`: the command-line client of ctxd.

mod capabilities;
mod replay;
mod worker;

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use ctx_client::{Client, ClientError, ensure_daemon, resolve_socket};
use ctxd_protocol::*;

#[derive(Parser, Debug)]
#[command(
    name = "ctx",
    version,
    about = "Command-line client of the ctxd context engine"
)]
struct Cli {
    /// The daemon's Unix socket.
    #[arg(long, env = "CTXD_SOCKET", global = true)]
    socket: Option<PathBuf>,
    /// The daemon's home, passed on when ctx starts a daemon.
    #[arg(long, env = "CTXD_HOME", global = true)]
    home: Option<PathBuf>,
    /// Do not start a daemon when none answers.
    #[arg(long, global = true)]
    no_start: bool,
    /// Machine-readable output: one JSON value.
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
    /// Session management.
    Session {
        #[command(subcommand)]
        action: SessionCmd,
    },
    /// Append records (JSON lines, one record each) from FILE or stdin.
    Append {
        session: String,
        /// File of JSON lines; `-` or absent reads stdin.
        file: Option<PathBuf>,
        /// Fail unless this is the transcript's last record (`none` = empty transcript).
        #[arg(long)]
        expect_last: Option<String>,
    },
    /// Print a page of the transcript.
    Read {
        session: String,
        #[arg(long, default_value_t = 0)]
        after: u64,
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Print the compiled request body for the next model call.
    Compile {
        session: String,
        /// Mark the second-to-last message (fire-and-forget side request).
        #[arg(long)]
        side: bool,
    },
    /// The frozen fates of a session's tool results (what the model saw instead).
    Replacements { session: String },
    /// Follow a session's events, one JSON object per line.
    Events { session: String },
    /// Import the bundled sample Claude Code session, compile it, and show what ctxd did.
    Demo,
    /// Replay a Claude Code transcript through the pipeline, compiling before every model
    /// call of the original session.
    Replay {
        file: PathBuf,
        /// Working directory of the replay session (default: the transcript's).
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Context window of the model profile.
        #[arg(long)]
        context_window: Option<u64>,
        /// Max output tokens of the model profile.
        #[arg(long)]
        max_output_tokens: Option<u64>,
    },
    /// Compact the session now, with the session's summariser.
    Compact {
        session: String,
        /// Extra instructions for the summary.
        #[arg(long)]
        instructions: Option<String>,
    },
    /// Session memory: show, edit or extract now.
    Memory {
        #[command(subcommand)]
        action: MemoryCmd,
    },
    /// Run an external session-memory extractor for sessions whose
    /// `settings.memory.extractor` is `external`.
    MemoryWorker {
        /// Sessions to serve (default: every session that exists at start).
        #[arg(long = "session")]
        sessions: Vec<String>,
        /// Summariser as JSON (default `{"kind":"embedded"}`).
        #[arg(long)]
        summariser: Option<String>,
        /// Extract once for each session and exit.
        #[arg(long)]
        once: bool,
    },
    /// Context collapse: list or undo.
    Collapse {
        #[command(subcommand)]
        action: CollapseCmd,
    },
    /// Remove a range of messages by their short ids (snip must be enabled).
    Snip {
        session: String,
        from_id: String,
        to_id: String,
    },
    /// A session's skills: listed, pending, dormant (conditional), omitted, invoked.
    Skills { session: String },
    /// A session's tools (sent, deferred, discovered), MCP servers, agent types and what
    /// the model was told.
    Capabilities { session: String },
    /// Import a Claude Code JSONL transcript as a new session.
    Import {
        file: PathBuf,
        /// Working directory of the new session (default: the transcript's).
        #[arg(long)]
        cwd: Option<PathBuf>,
        #[arg(long)]
        title: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
enum MemoryCmd {
    /// Print the memory document.
    Show { session: String },
    /// Edit the document in $EDITOR and write it back (refused if it changed meanwhile).
    Edit { session: String },
    /// Extract now with the session's summariser.
    Extract { session: String },
}

#[derive(Subcommand, Debug)]
enum CollapseCmd {
    /// List the session's collapses.
    List { session: String },
    /// Undo a collapse: its span reappears.
    Undo { session: String, id: String },
}

#[derive(Subcommand, Debug)]
enum DaemonCmd {
    /// Protocol version, paths, uptime.
    Status,
    /// Stop the daemon.
    Stop,
}

#[derive(Subcommand, Debug)]
enum SessionCmd {
    /// Create a session.
    New {
        /// Working directory [default: the current directory].
        #[arg(long)]
        cwd: Option<PathBuf>,
        #[arg(long)]
        title: Option<String>,
        #[arg(long)]
        model: Option<String>,
        #[arg(long)]
        context_window: Option<u64>,
        #[arg(long)]
        max_output_tokens: Option<u64>,
    },
    /// List sessions, newest first.
    List {
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Show one session.
    Show { session: String },
    /// Copy a session's transcript (up to a record) into a new session.
    Fork {
        session: String,
        #[arg(long)]
        up_to: Option<String>,
    },
    /// Delete a session.
    Rm { session: String },
}

fn print_json<T: serde::Serialize>(v: &T) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, v)?;
    writeln!(out)?;
    Ok(())
}

fn session_line(s: &SessionInfo) -> String {
    format!(
        "{}  {}  {} records  {}{}",
        s.session_id,
        s.created_at,
        s.record_count,
        s.cwd,
        s.title
            .as_deref()
            .map(|t| format!("  ({t})"))
            .unwrap_or_default()
    )
}

fn read_input(file: Option<&PathBuf>) -> Result<String> {
    Ok(ctx_client::text::read_utf8(
        file.map_or(std::path::Path::new("-"), |p| p.as_path()),
    )?)
}

/// JSON lines → values, reporting the line of any malformed one before anything is sent.
fn parse_lines(text: &str) -> Result<Vec<serde_json::Value>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(line)
            .with_context(|| format!("line {}: not a JSON record", i + 1))?;
        out.push(v);
    }
    Ok(out)
}

async fn connect(cli: &Cli, socket: &std::path::Path) -> Result<Client> {
    let r = if cli.no_start {
        Client::connect(socket).await
    } else {
        ensure_daemon(socket, cli.home.as_deref()).await
    };
    r.map_err(|e| match e {
        ClientError::Connect { path, .. } => {
            anyhow::anyhow!(
                "no ctxd answers on {} (start one with `ctxd`, or drop --no-start)",
                path.display()
            )
        }
        other => other.into(),
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli).await {
        eprintln!("ctx: {e:#}");
        std::process::exit(1);
    }
}

async fn run(cli: Cli) -> Result<()> {
    let socket = resolve_socket(cli.socket.clone(), cli.home.as_deref());
    if let Command::Daemon {
        action: DaemonCmd::Stop,
    } = &cli.command
    {
        let c = match Client::connect(&socket).await {
            Ok(c) => c,
            Err(_) => {
                if cli.json {
                    print_json(&serde_json::json!({ "stopping": false, "running": false }))?;
                } else {
                    println!("no ctxd running on {}", socket.display());
                }
                return Ok(());
            }
        };
        let r = c.shutdown().await?;
        if cli.json {
            print_json(&r)?;
        } else {
            println!("ctxd on {} is stopping", socket.display());
        }
        return Ok(());
    }
    if let Command::MemoryWorker {
        sessions,
        summariser,
        once,
    } = &cli.command
    {
        let cfg = match summariser {
            Some(j) => serde_json::from_str(j)
                .context("--summariser is not a valid summariser configuration")?,
            None => SummariserConfig::Embedded,
        };
        connect(&cli, &socket).await?;
        return worker::run(&socket, sessions.clone(), cfg, *once).await;
    }
    let client = connect(&cli, &socket).await?;
    match &cli.command {
        Command::Daemon {
            action: DaemonCmd::Status,
        } => {
            let s = client.status().await?;
            if cli.json {
                print_json(&s)?;
            } else {
                println!(
                    "ctxd {} (protocol {}) pid {} up {} ms\nsocket {}\nhome   {}\nsessions {}",
                    s.daemon_version,
                    s.protocol_version,
                    s.pid,
                    s.uptime_ms,
                    s.socket,
                    s.home,
                    s.sessions
                );
            }
        }
        // Handled before connecting: stopping must never start a daemon.
        Command::Daemon {
            action: DaemonCmd::Stop,
        } => {}
        Command::Session { action } => session_cmd(&cli, &client, action).await?,
        Command::Append {
            session,
            file,
            expect_last,
        } => {
            let text = read_input(file.as_ref())?;
            let records = parse_lines(&text)?;
            if records.is_empty() {
                bail!("no records in the input");
            }
            let expected = expect_last
                .as_ref()
                .map(|e| if e == "none" { None } else { Some(e.clone()) });
            let r = client.append_values(session, records, expected).await?;
            if cli.json {
                print_json(&r)?;
            } else {
                for a in &r.appended {
                    println!("{} {}", a.seq, a.uuid);
                }
            }
        }
        Command::Read {
            session,
            after,
            limit,
        } => {
            let r = client
                .read(ReadParams {
                    session_id: session.clone(),
                    after_seq: *after,
                    limit: *limit,
                })
                .await?;
            if cli.json {
                print_json(&r)?;
            } else {
                let mut out = std::io::stdout().lock();
                for rec in &r.records {
                    serde_json::to_writer(&mut out, rec)?;
                    writeln!(out)?;
                }
                if let Some(n) = r.next_after_seq {
                    eprintln!("more: ctx read {session} --after {n}");
                }
            }
        }
        Command::Compile { session, side } => {
            let r = client
                .compile(CompileParams {
                    session_id: session.clone(),
                    side_request: *side,
                    now: None,
                })
                .await?;
            if cli.json {
                let mut out = std::io::stdout().lock();
                serde_json::to_writer(&mut out, &r)?;
                writeln!(out)?;
            } else {
                let mut out = std::io::stdout().lock();
                out.write_all(r.request.get().as_bytes())?;
                writeln!(out)?;
                eprintln!(
                    "{} messages, ~{} tokens, {} bytes, sha256 {}",
                    r.metadata.message_count,
                    r.metadata.tokens.estimated_tokens,
                    r.metadata.request_bytes,
                    r.metadata.request_sha256
                );
            }
        }
        Command::Replacements { session } => {
            let r: ReplacementsResponse = client
                .call(
                    CONTEXT_REPLACEMENTS,
                    SessionIdParams {
                        session_id: session.clone(),
                    },
                )
                .await?;
            if cli.json {
                print_json(&r)?;
            } else {
                for rep in &r.replacements {
                    match &rep.replacement {
                        Some(text) => println!(
                            "{:<40} {:<12} seq {:<6} replaced ({} chars): {}",
                            rep.tool_use_id,
                            rep.stage,
                            rep.decided_seq,
                            text.chars().count(),
                            text.lines().nth(1).unwrap_or("")
                        ),
                        None => println!(
                            "{:<40} {:<12} seq {:<6} kept whole",
                            rep.tool_use_id, rep.stage, rep.decided_seq
                        ),
                    }
                }
            }
        }
        Command::Events { session } => {
            let mut sub = client.subscribe(session).await?;
            let mut out = std::io::stdout().lock();
            while let Some(ev) = sub.next().await {
                let ev = ev.map_err(|e| anyhow::anyhow!("event stream: {e}"))?;
                serde_json::to_writer(&mut out, &ev)?;
                writeln!(out)?;
                out.flush()?;
                if matches!(ev, SessionEvent::SessionDeleted { .. }) {
                    break;
                }
            }
        }
        Command::Demo => demo(&cli, &client).await?,
        Command::Replay {
            file,
            cwd,
            context_window,
            max_output_tokens,
        } => {
            let model = if context_window.is_some() || max_output_tokens.is_some() {
                let mut m = ModelProfile::default();
                if let Some(w) = context_window {
                    m.context_window = *w;
                }
                if let Some(o) = max_output_tokens {
                    m.max_output_tokens = *o;
                }
                Some(m)
            } else {
                None
            };
            let summary = replay::replay(
                &client,
                file,
                replay::ReplayOptions {
                    cwd: cwd.as_deref(),
                    model,
                    json: cli.json,
                },
            )
            .await?;
            if cli.json {
                eprintln!("{}", serde_json::to_string(&summary)?);
            } else {
                println!(
                    "replayed {} records into {}: {} compiles, {} at/above the autocompact threshold, {} blocked",
                    summary.records,
                    summary.session_id,
                    summary.compiles,
                    summary.autocompact_points,
                    summary.blocked
                );
                for c in &summary.compactions {
                    println!(
                        "compacted ({}, {} via {}): ~{} → ~{} tokens, summary {} chars, {:.2} ms",
                        c.trigger,
                        c.kind,
                        c.summariser,
                        c.pre_tokens,
                        c.post_tokens,
                        c.summary_chars,
                        c.micros as f64 / 1000.0
                    );
                }
                println!(
                    "estimator error over {} answered calls: median {:.2}%, p90 {:.2}%",
                    summary.error_samples, summary.median_abs_error_pct, summary.p90_abs_error_pct
                );
                println!(
                    "{:.2} s for {:.2} MB ({:.2} s/MB)",
                    summary.seconds,
                    summary.source_bytes as f64 / 1e6,
                    summary.seconds / (summary.source_bytes as f64 / 1e6).max(1e-9)
                );
            }
        }
        Command::Compact {
            session,
            instructions,
        } => {
            let spinner =
                (!cli.json && std::io::IsTerminal::is_terminal(&std::io::stderr())).then(|| {
                    tokio::spawn(async {
                        let frames = ['|', '/', '-', '\\'];
                        let started = std::time::Instant::now();
                        for i in 0usize.. {
                            eprint!(
                                "\r{} compacting… {:.0}s",
                                frames[i % 4],
                                started.elapsed().as_secs_f64()
                            );
                            tokio::time::sleep(std::time::Duration::from_millis(120)).await;
                        }
                    })
                });
            let r: Result<CompactionReport, _> = client
                .call(
                    CONTEXT_COMPACT,
                    CompactParams {
                        session_id: session.clone(),
                        instructions: instructions.clone(),
                    },
                )
                .await;
            if let Some(s) = spinner {
                s.abort();
                eprint!("\r\x1b[2K");
            }
            let r = r?;
            if cli.json {
                print_json(&r)?;
            } else {
                println!(
                    "compacted {} records with the {} summariser in {:.1} ms: ~{} → ~{} tokens (summary {} chars{}{})",
                    r.summarised_records,
                    r.summariser,
                    r.micros as f64 / 1000.0,
                    r.pre_tokens,
                    r.post_tokens,
                    r.summary_chars,
                    if r.restored_files.is_empty() {
                        String::new()
                    } else {
                        format!(", restored {}", r.restored_files.join(", "))
                    },
                    if r.head_truncated_rounds > 0 {
                        format!(", {} oldest rounds dropped to fit", r.head_truncated_rounds)
                    } else {
                        String::new()
                    }
                );
            }
        }
        Command::MemoryWorker { .. } => {}
        Command::Memory { action } => match action {
            MemoryCmd::Show { session } => {
                let m: MemoryGetResponse = client
                    .call(
                        MEMORY_GET,
                        SessionIdParams {
                            session_id: session.clone(),
                        },
                    )
                    .await?;
                if cli.json {
                    print_json(&m)?;
                } else {
                    print!("{}", m.document);
                    eprintln!(
                        "version {}{}; {}",
                        m.version,
                        m.last_summarized_uuid
                            .as_deref()
                            .map(|u| format!(", covers up to {u}"))
                            .unwrap_or_default(),
                        m.path
                    );
                }
            }
            MemoryCmd::Edit { session } => {
                let m: MemoryGetResponse = client
                    .call(
                        MEMORY_GET,
                        SessionIdParams {
                            session_id: session.clone(),
                        },
                    )
                    .await?;
                let dir = std::env::temp_dir().join(format!("ctx-memory-{}", std::process::id()));
                std::fs::create_dir_all(&dir)?;
                let file = dir.join("summary.md");
                std::fs::write(&file, &m.document)?;
                let editor = std::env::var("VISUAL")
                    .or_else(|_| std::env::var("EDITOR"))
                    .unwrap_or_else(|_| "vi".into());
                let status = std::process::Command::new("sh")
                    .arg("-c")
                    .arg(format!("{editor} \"$1\""))
                    .arg("sh")
                    .arg(&file)
                    .status()
                    .context("running the editor")?;
                let edited = std::fs::read_to_string(&file)?;
                let _ = std::fs::remove_dir_all(&dir);
                if !status.success() {
                    bail!("the editor exited with {status}; nothing written");
                }
                if edited == m.document {
                    println!("unchanged");
                } else {
                    let r: MemoryUpdateResponse = client
                        .call(
                            MEMORY_UPDATE,
                            MemoryUpdateParams {
                                session_id: session.clone(),
                                document: edited,
                                expected_version: m.version,
                                last_summarized_uuid: None,
                                writer: Some("user".into()),
                            },
                        )
                        .await?;
                    println!("memory version {}", r.version);
                }
            }
            MemoryCmd::Extract { session } => {
                let r: MemoryUpdateResponse = client
                    .call(
                        MEMORY_EXTRACT,
                        SessionIdParams {
                            session_id: session.clone(),
                        },
                    )
                    .await?;
                if cli.json {
                    print_json(&r)?;
                } else {
                    println!("memory version {}", r.version);
                }
            }
        },
        Command::Skills { session } => capabilities::skills(&client, session, cli.json).await?,
        Command::Capabilities { session } => {
            capabilities::capabilities(&client, session, cli.json).await?
        }
        Command::Collapse { action } => match action {
            CollapseCmd::List { session } => {
                let r: CollapseListResponse = client
                    .call(
                        COLLAPSE_LIST,
                        SessionIdParams {
                            session_id: session.clone(),
                        },
                    )
                    .await?;
                if cli.json {
                    print_json(&r)?;
                } else {
                    for c in &r.collapses {
                        println!(
                            "{}  {:<9} {} records, ~{} tokens: {}",
                            c.id,
                            c.status,
                            c.record_count,
                            c.tokens,
                            c.summary.lines().next().unwrap_or("")
                        );
                    }
                }
            }
            CollapseCmd::Undo { session, id } => {
                let _: AckResponse = client
                    .call(
                        COLLAPSE_UNDO,
                        CollapseUndoParams {
                            session_id: session.clone(),
                            collapse_id: id.clone(),
                        },
                    )
                    .await?;
                if !cli.json {
                    println!("undone {id}");
                } else {
                    print_json(&serde_json::json!({"ok": true}))?;
                }
            }
        },
        Command::Snip {
            session,
            from_id,
            to_id,
        } => {
            let r: SnipResponse = client
                .call(
                    CONTEXT_SNIP,
                    SnipParams {
                        session_id: session.clone(),
                        from_id: from_id.clone(),
                        to_id: to_id.clone(),
                    },
                )
                .await?;
            if cli.json {
                print_json(&r)?;
            } else {
                println!(
                    "snipped {} records (~{} tokens) as {}",
                    r.removed.len(),
                    r.tokens_freed,
                    r.boundary_uuid
                );
            }
        }
        Command::Import { file, cwd, title } => {
            let jsonl = ctx_client::text::read_utf8(file)?;
            let r = client
                .import(SessionImportParams {
                    jsonl,
                    cwd: cwd.as_ref().map(|c| c.display().to_string()),
                    fallback_cwd: std::env::current_dir()
                        .ok()
                        .map(|c| c.display().to_string()),
                    model: None,
                    title: title.clone(),
                })
                .await?;
            for w in &r.stats.warnings {
                eprintln!("warning: {w}");
            }
            if cli.json {
                print_json(&r)?;
            } else {
                println!("{}", r.session_id);
                let s = &r.stats;
                eprintln!(
                    "imported {} records ({} user, {} assistant, {} system, {} attachment; {} tool_use, {} tool_result) from {} lines; skipped {:?}",
                    s.records,
                    s.user,
                    s.assistant,
                    s.system,
                    s.attachment,
                    s.tool_use,
                    s.tool_result,
                    s.lines,
                    s.skipped
                );
            }
        }
    }
    Ok(())
}

/// A real (redacted) Claude Code session shipped with ctxd, MIT-licensed: see
/// tests/fixtures/claude-code/spotter/LICENSE.
const SAMPLE_SESSION: &str =
    include_str!("../../tests/fixtures/claude-code/spotter/tool_heavy.jsonl");

async fn demo(cli: &Cli, client: &Client) -> Result<()> {
    let status = client.status().await?;
    let imported = client
        .import(SessionImportParams {
            jsonl: SAMPLE_SESSION.to_string(),
            cwd: None,
            fallback_cwd: None,
            model: None,
            title: Some("ctxd demo: bundled Claude Code session".into()),
        })
        .await?;
    let compiled = client
        .compile(CompileParams {
            session_id: imported.session_id.clone(),
            side_request: false,
            now: None,
        })
        .await?;
    if cli.json {
        print_json(&serde_json::json!({
            "session_id": imported.session_id,
            "stats": imported.stats,
            "metadata": compiled.metadata,
            "request": compiled.request,
        }))?;
        return Ok(());
    }
    let s = &imported.stats;
    let m = &compiled.metadata;
    println!(
        "ctxd {} (protocol {}) on {}",
        status.daemon_version, status.protocol_version, status.socket
    );
    println!("imported the bundled session as {}", imported.session_id);
    println!(
        "  {} lines -> {} records ({} user, {} assistant, {} system); {} tool calls; skipped {:?}",
        s.lines, s.records, s.user, s.assistant, s.system, s.tool_use, s.skipped
    );
    println!("compiled the next request:");
    println!(
        "  {} messages, {} bytes, ~{} tokens (anchor {} + estimated tail {}), sha256 {}",
        m.message_count,
        m.request_bytes,
        m.tokens.estimated_tokens,
        m.tokens.anchor_tokens,
        m.tokens.estimated_tail_tokens,
        &m.request_sha256[..16]
    );
    println!("  system sections:");
    for sec in &m.system_sections {
        println!("    {:<36} {:<14} {} chars", sec.name, sec.class, sec.chars);
    }
    if !m.repairs.is_empty() {
        println!("  normalisation repairs:");
        for r in &m.repairs {
            println!("    {r}");
        }
    }
    println!(
        "see the whole request with: ctx compile {}",
        imported.session_id
    );
    Ok(())
}

async fn session_cmd(cli: &Cli, client: &Client, action: &SessionCmd) -> Result<()> {
    match action {
        SessionCmd::New {
            cwd,
            title,
            model,
            context_window,
            max_output_tokens,
        } => {
            let cwd = match cwd {
                Some(c) => std::path::absolute(c)?,
                None => std::env::current_dir()?,
            };
            let profile =
                if model.is_some() || context_window.is_some() || max_output_tokens.is_some() {
                    let mut m = ModelProfile::default();
                    if let Some(x) = model {
                        m.model = x.clone();
                    }
                    if let Some(x) = context_window {
                        m.context_window = *x;
                    }
                    if let Some(x) = max_output_tokens {
                        m.max_output_tokens = *x;
                    }
                    Some(m)
                } else {
                    None
                };
            let s = client
                .create_session(SessionCreateParams {
                    cwd: cwd.display().to_string(),
                    model: profile,
                    title: title.clone(),
                    ..Default::default()
                })
                .await?;
            if cli.json {
                print_json(&serde_json::json!({ "session_id": s.session_id, "session": s }))?;
            } else {
                println!("{}", s.session_id);
            }
        }
        SessionCmd::List { limit } => {
            let list = client.list_sessions(*limit).await?;
            if cli.json {
                print_json(&serde_json::json!({ "sessions": list }))?;
            } else {
                for s in &list {
                    println!("{}", session_line(s));
                }
            }
        }
        SessionCmd::Show { session } => {
            let s = client.get_session(session).await?;
            print_json(&s)?;
        }
        SessionCmd::Fork { session, up_to } => {
            let s = client.fork_session(session, up_to.clone()).await?;
            if cli.json {
                print_json(&serde_json::json!({ "session_id": s.session_id, "session": s }))?;
            } else {
                println!("{}", s.session_id);
            }
        }
        SessionCmd::Rm { session } => {
            let deleted = client.delete_session(session).await?;
            if cli.json {
                print_json(&serde_json::json!({ "deleted": deleted }))?;
            } else {
                println!("deleted {session}");
            }
        }
    }
    Ok(())
}
