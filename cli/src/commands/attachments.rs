//! `ctx plan` and `ctx queue`: the attachments ctxd produces itself that a user drives
//! (plan mode, input queued while a turn runs).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use clap::{Args, ValueEnum};
use ctx_client::Client;
use ctxd_protocol::{
    ContentBlock, PlanModeParams, PlanModeResponse, QueueParams, QueueResponse, QueuedParams,
    QueuedResponse, SESSION_SET_PLAN_MODE, TRANSCRIPT_QUEUE, TRANSCRIPT_QUEUED,
};

use super::{Ctx, session_id};
use crate::output::{outln, print_json};

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
    session: String,
    /// Switch plan mode on or off.
    state: OnOff,
    /// The plan file named to the model (default HOME/sessions/SID/plan.md).
    #[arg(long)]
    file: Option<String>,
}

#[derive(Args, Debug)]
pub struct QueueArgs {
    /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
    session: String,
    /// The text to queue; omitted with --list.
    text: Option<String>,
    /// An image to send along (PNG, JPEG, GIF or WebP); repeatable.
    #[arg(long = "image")]
    images: Vec<PathBuf>,
    /// The sub-agent the input is for (default: the main thread).
    #[arg(long)]
    agent: Option<String>,
    /// List what is waiting instead of queueing.
    #[arg(long)]
    list: bool,
}

pub async fn plan(ctx: &Ctx, client: &Client, a: &PlanArgs) -> Result<()> {
    let r: PlanModeResponse = client
        .call(
            SESSION_SET_PLAN_MODE,
            PlanModeParams {
                session_id: session_id(client, &a.session).await?,
                enabled: a.state == OnOff::On,
                plan_file: a.file.clone(),
            },
        )
        .await?;
    if ctx.json {
        return print_json(&r);
    }
    let file = if r.plan_exists {
        "exists"
    } else {
        "not written yet"
    };
    outln!(
        "plan mode {}; plan file {} ({file})",
        if r.plan_mode { "on" } else { "off" },
        r.plan_file
    );
    Ok(())
}

/// The media type of an image file, from its extension.
fn media_type(path: &std::path::Path) -> Result<&'static str> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    Ok(match ext.as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        _ => bail!(
            "{}: not an image ctx can send (png, jpg, gif, webp)",
            path.display()
        ),
    })
}

pub async fn queue(ctx: &Ctx, client: &Client, a: &QueueArgs) -> Result<()> {
    let sid = session_id(client, &a.session).await?;
    if a.list {
        let r: QueuedResponse = client
            .call(
                TRANSCRIPT_QUEUED,
                QueuedParams {
                    session_id: sid,
                    agent_id: a.agent.clone(),
                },
            )
            .await?;
        if ctx.json {
            return print_json(&r);
        }
        for e in &r.entries {
            let text: Vec<&str> = e
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            outln!(
                "{}  {:<10} {}",
                e.queued_at,
                e.agent_id.as_deref().unwrap_or("main"),
                text.join(" ")
            );
        }
        return Ok(());
    }
    let mut content = Vec::new();
    for path in &a.images {
        let media = media_type(path)?;
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        content.push(serde_json::from_value(serde_json::json!({
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": media,
                "data": base64::engine::general_purpose::STANDARD.encode(bytes),
            }
        }))?);
    }
    if a.text.is_none() && content.is_empty() {
        bail!("nothing to queue: give TEXT or --image (or --list)");
    }
    let r: QueueResponse = client
        .call(
            TRANSCRIPT_QUEUE,
            QueueParams {
                session_id: sid,
                text: a.text.clone(),
                content,
                agent_id: a.agent.clone(),
            },
        )
        .await?;
    if ctx.json {
        return print_json(&r);
    }
    outln!(
        "queued {} ({} waiting); the next compile delivers it",
        r.queue_id,
        r.pending
    );
    Ok(())
}
