//! `ctx session new|list|show|fork|rm|set`.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use ctx_client::Client;
use ctxd_protocol::*;

use super::{Ctx, resolve_session, session_line, settings};
use crate::output::{outln, print_json};

#[derive(Subcommand, Debug)]
pub enum SessionCmd {
    /// Create a session.
    New {
        /// Working directory [default: the current directory].
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// A title shown by `session list`.
        #[arg(long)]
        title: Option<String>,
        /// Model name put into compiled requests.
        #[arg(long)]
        model: Option<String>,
        /// Context window of the model, in tokens.
        #[arg(long)]
        context_window: Option<u64>,
        /// The model's maximum output tokens per response.
        #[arg(long)]
        max_output_tokens: Option<u64>,
        /// Initial settings, KEY=VALUE as for `session set` (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
    /// List sessions, newest first.
    List {
        /// At most this many sessions [default: 100].
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Show one session (as JSON).
    Show {
        /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
        session: String,
    },
    /// Copy a session's transcript (up to a record) into a new session.
    Fork {
        /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
        session: String,
        /// Copy up to and including this record uuid [default: all].
        #[arg(long)]
        up_to: Option<String>,
    },
    /// Delete a session, its transcript and its files.
    Rm {
        /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
        session: String,
    },
    /// Change settings: `ctx session set SID snip_enabled=true collapse.enabled=true`.
    /// Keys are dotted paths into the settings (see `ctx session set SID --list`); values
    /// are JSON when they parse, else text; `KEY=null` restores the default.
    Set {
        /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
        session: String,
        /// Settings to change, e.g. `snip_enabled=true`, `microcompact.time_based=true`,
        /// `memory.extractor=external`, `summariser={"kind":"embedded"}`.
        #[arg(value_name = "KEY=VALUE")]
        edits: Vec<String>,
        /// A JSON object of settings merged into the current ones.
        #[arg(long, value_name = "JSON")]
        set_json: Option<String>,
        /// Print every setting and its current value, then exit.
        #[arg(long)]
        list: bool,
    },
}

pub async fn run(ctx: &Ctx, client: &Client, cmd: &SessionCmd) -> Result<()> {
    match cmd {
        SessionCmd::New {
            cwd,
            title,
            model,
            context_window,
            max_output_tokens,
            set,
        } => {
            let cwd = match cwd {
                Some(c) => std::path::absolute(c)?,
                None => std::env::current_dir()?,
            };
            let profile = (model.is_some()
                || context_window.is_some()
                || max_output_tokens.is_some())
            .then(|| {
                let mut m = ModelProfile::default();
                if let Some(x) = model {
                    m.model.clone_from(x);
                }
                if let Some(x) = context_window {
                    m.context_window = *x;
                }
                if let Some(x) = max_output_tokens {
                    m.max_output_tokens = *x;
                }
                m
            });
            let settings = if set.is_empty() {
                None
            } else {
                let mut v = serde_json::json!({});
                settings::apply(&mut v, set)?;
                Some(serde_json::from_value(v).context("--set")?)
            };
            let s = client
                .session_create(SessionCreateParams {
                    cwd: cwd.display().to_string(),
                    model: profile,
                    title: title.clone(),
                    settings,
                    ..Default::default()
                })
                .await
                .map(|r| r.session)?;
            if ctx.json {
                print_json(&serde_json::json!({ "session_id": s.session_id, "session": s }))?;
            } else {
                outln!("{}", s.session_id);
            }
        }
        SessionCmd::List { limit } => {
            let list = client
                .session_list(ctxd_protocol::SessionListParams { limit: *limit })
                .await
                .map(|r| r.sessions)?;
            if ctx.json {
                print_json(&serde_json::json!({ "sessions": list }))?;
            } else {
                for s in &list {
                    outln!("{}", session_line(s));
                }
            }
        }
        SessionCmd::Show { session } => {
            print_json(&resolve_session(client, session).await?)?;
        }
        SessionCmd::Fork { session, up_to } => {
            let sid = super::session_id(client, session).await?;
            let s = client
                .session_fork(ctxd_protocol::SessionForkParams {
                    session_id: sid.clone(),
                    up_to_uuid: up_to.clone(),
                })
                .await
                .map(|r| r.session)?;
            if ctx.json {
                print_json(&serde_json::json!({ "session_id": s.session_id, "session": s }))?;
            } else {
                outln!("{}", s.session_id);
            }
        }
        SessionCmd::Rm { session } => {
            let sid = super::session_id(client, session).await?;
            let deleted = client
                .session_delete(ctxd_protocol::SessionIdParams {
                    session_id: sid.clone(),
                })
                .await
                .map(|r| r.deleted)?;
            if ctx.json {
                print_json(&serde_json::json!({ "deleted": deleted }))?;
            } else {
                outln!("deleted {sid}");
            }
        }
        SessionCmd::Set {
            session,
            edits,
            set_json,
            list,
        } => set(ctx, client, session, edits, set_json.as_deref(), *list).await?,
    }
    Ok(())
}

/// Every settings key with its effective value: the defaults filled in, so `--list`
/// shows what can be set.
fn effective(settings: &SessionSettings) -> Result<serde_json::Value> {
    let mut v = serde_json::to_value(settings)?;
    let defaults = serde_json::json!({
        "snip_enabled": false,
        "plan_mode": false,
        "autocompact": true,
        "microcompact": MicrocompactSettings::default(),
        "memory": MemorySettings::default(),
        "collapse": CollapseConfig::default(),
        "instructions": {"disabled": false, "allow_external_includes": false},
        "attachments": {
            "collect_timeout_ms": 1000,
            "task_reminder": true,
            "relevant_memories": {"enabled": true, "auto_memory": true, "selector": "offline"},
        },
        "hooks": {"disabled": false, "trust_project": false},
        "summariser": {"kind": "embedded"},
        "language": null,
        "output_style": null,
        "cache_diagnostics": false,
    });
    let mut full = defaults;
    settings::merge(&mut full, std::mem::take(&mut v))?;
    Ok(full)
}

async fn set(
    ctx: &Ctx,
    client: &Client,
    session: &str,
    edits: &[String],
    set_json: Option<&str>,
    list: bool,
) -> Result<()> {
    let s = resolve_session(client, session).await?;
    if list {
        let mut lines = Vec::new();
        settings::flatten("", &effective(&s.settings)?, &mut lines);
        if ctx.json {
            print_json(&s.settings)?;
        } else {
            for (k, v) in lines {
                outln!("{k} = {v}");
            }
        }
        return Ok(());
    }
    if edits.is_empty() && set_json.is_none() {
        bail!("nothing to set: give KEY=VALUE pairs or --set-json (see --list for the keys)");
    }
    let before = serde_json::to_value(&s.settings)?;
    let mut v = before.clone();
    if let Some(j) = set_json {
        let patch = serde_json::from_str(j).context("--set-json is not JSON")?;
        settings::merge(&mut v, patch)?;
    }
    settings::apply(&mut v, edits)?;
    // The daemon merges what it is sent: send what changed, `null` for what went.
    let patch = settings::diff(&before, &v);
    let updated: SessionGetResponse = client
        .call(
            SESSION_UPDATE,
            serde_json::json!({ "session_id": s.session_id, "settings": patch }),
        )
        .await?;
    if ctx.json {
        print_json(&updated.session.settings)?;
    } else {
        let mut lines = Vec::new();
        settings::flatten(
            "",
            &serde_json::to_value(&updated.session.settings)?,
            &mut lines,
        );
        outln!("session {} settings:", s.session_id);
        for (k, v) in lines.iter().filter(|(k, _)| !k.is_empty()) {
            outln!("  {k} = {v}");
        }
    }
    Ok(())
}
