//! `ctx collapse list|undo`.

use anyhow::Result;
use clap::Subcommand;
use ctx_client::Client;
use ctxd_protocol::*;

use super::{Ctx, feature_off, resolve_session};
use crate::output::{outln, print_json};

#[derive(Subcommand, Debug)]
pub enum CollapseCmd {
    /// List the session's collapses.
    List {
        /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
        session: String,
    },
    /// Undo a collapse: its span reappears.
    Undo {
        /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
        session: String,
        /// The collapse id (from `collapse list`).
        id: String,
    },
}

pub async fn run(ctx: &Ctx, client: &Client, cmd: &CollapseCmd) -> Result<()> {
    match cmd {
        CollapseCmd::List { session } => {
            let s = resolve_session(client, session).await?;
            let r: CollapseListResponse = client
                .call(
                    COLLAPSE_LIST,
                    SessionIdParams {
                        session_id: s.session_id.clone(),
                    },
                )
                .await?;
            if ctx.json {
                return print_json(&r);
            }
            if r.collapses.is_empty() && !s.settings.collapse.enabled {
                eprintln!(
                    "ctx: {}",
                    feature_off("context collapse", &s.session_id, "collapse.enabled=true")
                );
            }
            for c in &r.collapses {
                outln!(
                    "{}  {:<9} {} records, ~{} tokens: {}",
                    c.id,
                    c.status,
                    c.record_count,
                    c.tokens,
                    c.summary.lines().next().unwrap_or("")
                );
            }
        }
        CollapseCmd::Undo { session, id } => {
            let s = resolve_session(client, session).await?;
            let _: AckResponse = client
                .call(
                    COLLAPSE_UNDO,
                    CollapseUndoParams {
                        session_id: s.session_id,
                        collapse_id: id.clone(),
                    },
                )
                .await?;
            if ctx.json {
                print_json(&serde_json::json!({"ok": true}))?;
            } else {
                outln!("undone {id}");
            }
        }
    }
    Ok(())
}
