//! `ctx backup`: a copy of the store; `ctx gc`: retention; `ctx export`: a session as a Claude Code JSONL transcript that `ctx import` reads
//! back to a session compiling the same bytes.
//!
//! Built here from `transcript.read` pages rather than by the daemon: the stored record
//! already holds everything an import kept of its line (the unmapped fields in
//! `meta.claude_code`, the message's other fields in `message_extra`, a system line's
//! fields in `data`), so each record is written back as the line it came from, and the
//! page is never held whole by either process.

use std::io::{BufWriter, Write};

use anyhow::Result;
use clap::Args;
use ctx_client::Client;
use ctxd_protocol::*;
use serde_json::{Map, Value};

use super::{Ctx, session_id};
use crate::output::{outln, print_json};
use ctxd_protocol::CLAUDE_CODE_ENVELOPE as ENVELOPE;

#[derive(Args, Debug)]
pub struct GcArgs {
    /// Delete sessions not updated for this many days (at least 1).
    #[arg(long)]
    idle_days: Option<u32>,
    /// Then delete the least recently updated sessions until the stored JSON of the
    /// rest's records is at most this many bytes.
    #[arg(long)]
    max_store_bytes: Option<u64>,
    /// List what would be deleted; delete nothing.
    #[arg(long)]
    dry_run: bool,
}

pub async fn gc(ctx: &Ctx, client: &Client, a: &GcArgs) -> Result<()> {
    let r = client
        .daemon_gc(GcParams {
            idle_days: a.idle_days,
            max_store_bytes: a.max_store_bytes,
            dry_run: a.dry_run,
            now: None,
        })
        .await?;
    if ctx.json {
        return print_json(&r);
    }
    let verb = if r.dry_run { "would delete" } else { "deleted" };
    for d in &r.deleted {
        outln!(
            "{verb} {} ({}, updated {}, {} bytes)",
            d.session_id,
            d.reason,
            d.updated_at,
            d.bytes
        );
    }
    outln!(
        "{verb} {}; {} bytes of records kept",
        crate::output::count(r.deleted.len() as u64, "session"),
        r.kept_bytes
    );
    Ok(())
}

#[derive(Args, Debug)]
pub struct BackupArgs {
    /// The copy: a new file (the daemon writes it; an existing file is refused).
    file: std::path::PathBuf,
}

pub async fn backup(ctx: &Ctx, client: &Client, a: &BackupArgs) -> Result<()> {
    // The daemon resolves no path of ours: it gets the absolute one.
    let path = std::path::absolute(&a.file)?;
    let r = client
        .daemon_backup(BackupParams {
            path: path.display().to_string(),
        })
        .await?;
    if ctx.json {
        return print_json(&r);
    }
    outln!("{} ({} bytes, {} ms)", r.path, r.bytes, r.elapsed_ms);
    Ok(())
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
    session: String,
}

/// Records per `transcript.read` page: the daemon's bound.
const PAGE: u32 = 5000;

pub async fn export(_ctx: &Ctx, client: &Client, a: &ExportArgs) -> Result<()> {
    let sid = session_id(client, &a.session).await?;
    let session = client
        .session_get(SessionIdParams {
            session_id: sid.clone(),
        })
        .await?
        .session;
    let agents = client
        .agent_list(SessionIdParams {
            session_id: sid.clone(),
        })
        .await?
        .agents;
    let replacements: ReplacementsResponse = client
        .call(
            CONTEXT_REPLACEMENTS,
            SessionIdParams {
                session_id: sid.clone(),
            },
        )
        .await?;
    let envelope = Envelope {
        cwd: &session.cwd,
        session_id: &sid,
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    write_thread(client, &sid, None, &envelope, &mut out).await?;
    // A sub-agent's thread goes back as the sidechain lines it was split from, naming
    // the agent and the call that started it, so the import splits it off again.
    for thread in &agents {
        write_thread(client, &sid, Some(&thread.agent), &envelope, &mut out).await?;
    }
    if let Some(line) = replacement_line(&replacements.replacements, &envelope) {
        serde_json::to_writer(&mut out, &line)?;
        writeln!(out)?;
    }
    out.flush()?;
    Ok(())
}

/// What every line of one export carries.
struct Envelope<'a> {
    cwd: &'a str,
    session_id: &'a str,
}

async fn write_thread(
    client: &Client,
    sid: &str,
    agent: Option<&AgentInfo>,
    envelope: &Envelope<'_>,
    out: &mut impl Write,
) -> Result<()> {
    let mut after_seq = 0;
    loop {
        let page = client
            .transcript_read(ReadParams {
                session_id: sid.to_owned(),
                agent_id: agent.map(|a| a.agent_id.clone()),
                after_seq,
                limit: Some(PAGE),
            })
            .await?;
        for record in &page.records {
            serde_json::to_writer(&mut *out, &line_of(record, agent, envelope))?;
            writeln!(out)?;
        }
        match page.next_after_seq {
            Some(next) if next > after_seq => after_seq = next,
            _ => return Ok(()),
        }
    }
}

/// The line a record was imported from, as far as the record tells it: the inverse of
/// the import's mapping (engine/src/import/claude_code_line.rs).
fn line_of(r: &Record, agent: Option<&AgentInfo>, envelope: &Envelope<'_>) -> Value {
    let mut line = Map::new();
    // Kept fields first, so the envelope written after them wins.
    if let Some(Value::Object(kept)) = r.meta.as_ref().and_then(|m| m.get("claude_code")) {
        for (k, v) in kept {
            // A field the import maps itself never comes from a kept copy: a kept
            // `parentUuid` is the one before relinking, whose parent the file lacks.
            if !ENVELOPE.contains(&k.as_str()) {
                line.insert(k.clone(), v.clone());
            }
        }
    }
    if r.kind == RecordKind::System
        && let Some(data) = &r.data
    {
        match data {
            // The import put every field of a system line here, in snake_case, which
            // it reads back unchanged.
            Value::Object(fields) => {
                for (k, v) in fields {
                    if !ENVELOPE.contains(&k.as_str()) {
                        line.insert(k.clone(), v.clone());
                    }
                }
            }
            other => {
                line.insert("data".into(), other.clone());
            }
        }
    }
    line.insert("type".into(), r.kind.as_str().into());
    line.insert("uuid".into(), r.uuid.clone().into());
    line.insert(
        "parentUuid".into(),
        r.parent_uuid.clone().map_or(Value::Null, Value::String),
    );
    line.insert("timestamp".into(), r.timestamp.clone().into());
    line.insert("cwd".into(), envelope.cwd.into());
    line.insert("sessionId".into(), envelope.session_id.into());
    for (key, on) in [
        ("isMeta", r.is_meta),
        ("isCompactSummary", r.is_compact_summary),
        ("isVisibleInTranscriptOnly", r.is_virtual),
    ] {
        if on {
            line.insert(key.into(), Value::Bool(true));
        }
    }
    if let Some(agent) = agent {
        line.insert("isSidechain".into(), Value::Bool(true));
        line.insert("agentId".into(), agent.agent_id.clone().into());
        line.insert("parentToolUseID".into(), agent.tool_use_id.clone().into());
    } else if r.is_sidechain {
        line.insert("isSidechain".into(), Value::Bool(true));
    }
    match r.kind {
        RecordKind::User | RecordKind::Assistant => {
            line.insert("message".into(), message_of(r));
        }
        RecordKind::Attachment => {
            if let Some(a) = &r.attachment {
                line.insert("attachment".into(), a.clone());
            }
        }
        RecordKind::System => match r.subtype.as_deref() {
            // The line it was imported from had this type and no subtype.
            Some(t) if CLAUDE_CODE_RECORDED_CALLS.contains(&t) => {
                line.insert("type".into(), t.into());
            }
            Some(subtype) => {
                line.insert("subtype".into(), subtype.into());
            }
            None => {}
        },
    }
    Value::Object(line)
}

/// The message of a user or assistant line: its role and content, an assistant's id,
/// model, stop reason and usage, and the message's other fields as they came.
fn message_of(r: &Record) -> Value {
    let mut m = r.message_extra.clone().unwrap_or_default();
    m.insert("role".into(), r.kind.as_str().into());
    m.insert(
        "content".into(),
        serde_json::to_value(&r.content).unwrap_or(Value::Null),
    );
    if r.kind == RecordKind::Assistant {
        for (key, value) in [
            ("id", &r.message_id),
            ("model", &r.model),
            ("stop_reason", &r.stop_reason),
        ] {
            if let Some(v) = value {
                m.insert(key.into(), v.clone().into());
            }
        }
        if let Some(u) = &r.usage {
            m.insert(
                "usage".into(),
                serde_json::to_value(u).unwrap_or(Value::Null),
            );
        }
    }
    Value::Object(m)
}

/// The `content-replacement` line of what the model was shown instead of results: the
/// tool-result budget's frozen replacements, which an import freezes again.
fn replacement_line(replacements: &[Replacement], envelope: &Envelope<'_>) -> Option<Value> {
    let items: Vec<Value> = replacements
        .iter()
        .filter(|r| r.stage == "budget")
        .filter_map(|r| {
            let text = r.replacement.as_ref()?;
            Some(serde_json::json!({
                "kind": "tool-result",
                "toolUseId": r.tool_use_id,
                "replacement": text,
            }))
        })
        .collect();
    (!items.is_empty()).then(|| {
        serde_json::json!({
            "type": "content-replacement",
            "sessionId": envelope.session_id,
            "cwd": envelope.cwd,
            "replacements": items,
        })
    })
}
