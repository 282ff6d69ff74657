//! `ctx memory show|edit|extract` and `ctx memory-worker`.

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use ctx_client::Client;
use ctxd_protocol::*;

use super::{Ctx, feature_off, resolve_session, session_id};
use crate::output::{outln, print_json};

#[derive(Subcommand, Debug)]
pub enum MemoryCmd {
    /// Print the memory document.
    Show {
        /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
        session: String,
    },
    /// Edit the document in $EDITOR and write it back (refused if it changed meanwhile).
    Edit {
        /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
        session: String,
    },
    /// Extract now with the session's summariser.
    Extract {
        /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
        session: String,
    },
}

#[derive(Args, Debug)]
pub struct WorkerArgs {
    /// Sessions to serve (repeatable) [default: every session that exists at start].
    #[arg(long = "session")]
    pub sessions: Vec<String>,
    /// Summariser as JSON [default: `{"kind":"embedded"}`].
    #[arg(long)]
    pub summariser: Option<String>,
    /// Extract once for each session and exit.
    #[arg(long)]
    pub once: bool,
}

async fn get(client: &Client, sid: &str) -> Result<MemoryGetResponse> {
    Ok(client
        .call(
            MEMORY_GET,
            SessionIdParams {
                session_id: sid.to_string(),
            },
        )
        .await?)
}

pub async fn run(ctx: &Ctx, client: &Client, cmd: &MemoryCmd) -> Result<()> {
    match cmd {
        MemoryCmd::Show { session } => {
            let m = get(client, &session_id(client, session).await?).await?;
            if ctx.json {
                return print_json(&m);
            }
            outln!("{}", m.document.trim_end_matches('\n'));
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
        MemoryCmd::Edit { session } => {
            let sid = session_id(client, session).await?;
            let m = get(client, &sid).await?;
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
                outln!("unchanged");
                return Ok(());
            }
            let r: MemoryUpdateResponse = client
                .call(
                    MEMORY_UPDATE,
                    MemoryUpdateParams {
                        session_id: sid,
                        document: edited,
                        expected_version: m.version,
                        last_summarized_uuid: None,
                        writer: Some("user".into()),
                    },
                )
                .await?;
            outln!("memory version {}", r.version);
        }
        MemoryCmd::Extract { session } => {
            let s = resolve_session(client, session).await?;
            if s.settings.memory.extractor == MemoryExtractor::Off {
                return Err(feature_off(
                    "session memory",
                    &s.session_id,
                    "memory.extractor=daemon",
                ));
            }
            let r: MemoryUpdateResponse = client
                .call(
                    MEMORY_EXTRACT,
                    SessionIdParams {
                        session_id: s.session_id,
                    },
                )
                .await?;
            if ctx.json {
                print_json(&r)?;
            } else {
                outln!("memory version {}", r.version);
            }
        }
    }
    Ok(())
}

/// Runs the external extractor; warns about named sessions that would never ask for it.
pub async fn worker(ctx: &Ctx, a: &WorkerArgs) -> Result<()> {
    let cfg = match &a.summariser {
        Some(j) => serde_json::from_str(j)
            .context("--summariser is not a valid summariser configuration")?,
        None => SummariserConfig::Embedded,
    };
    let client = ctx.connect().await?;
    let mut sessions = Vec::new();
    for arg in &a.sessions {
        let s = resolve_session(&client, arg).await?;
        if s.settings.memory.extractor != MemoryExtractor::External && !a.once {
            eprintln!(
                "ctx: {}",
                feature_off(
                    "the external memory extractor",
                    &s.session_id,
                    "memory.extractor=external"
                )
            );
        }
        sessions.push(s.session_id);
    }
    drop(client);
    crate::worker::run(&ctx.socket, sessions, cfg, a.once).await
}
