//! `ctx append`, `ctx read`, `ctx import`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use ctx_client::Client;
use ctxd_protocol::*;

use super::{Ctx, session_id};
use crate::output::{outln, print_json};

#[derive(Args, Debug)]
pub struct AppendArgs {
    /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
    session: String,
    /// File of JSON lines, one record each; `-` or absent reads stdin.
    file: Option<PathBuf>,
    /// Fail unless this is the transcript's last record (`none` = empty transcript).
    #[arg(long)]
    expect_last: Option<String>,
}

#[derive(Args, Debug)]
pub struct ReadArgs {
    /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
    session: String,
    /// Records with a seq after this one [default: from the start].
    #[arg(long, default_value_t = 0)]
    after: u64,
    /// Page size [default: 500, at most 5000].
    #[arg(long)]
    limit: Option<u32>,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// A Claude Code JSONL transcript.
    file: PathBuf,
    /// Working directory of the new session [default: the transcript's].
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// A title shown by `session list`.
    #[arg(long)]
    title: Option<String>,
}

fn read_input(file: Option<&PathBuf>) -> Result<String> {
    Ok(ctx_client::text::read_utf8(
        file.map_or(std::path::Path::new("-"), |p| p.as_path()),
    )?)
}

/// JSON lines → values, reporting the line of any malformed one before anything is sent.
/// A line is also read as a record here, so an error names the line and column of the
/// user's input and the field, not a position in the request ctx would send.
fn parse_lines(text: &str) -> Result<Vec<serde_json::Value>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(line)
            .with_context(|| format!("line {}: not a JSON record", i + 1))?;
        let de = &mut serde_json::Deserializer::from_str(line);
        if let Err(e) = serde_path_to_error::deserialize::<_, RecordInput>(de) {
            let field = e.path().to_string();
            let inner = e.into_inner();
            bail!(
                "line {}, column {}: not a record: {}{}",
                i + 1,
                inner.column(),
                if field == "." {
                    String::new()
                } else {
                    format!("{field}: ")
                },
                without_position(&inner)
            );
        }
        out.push(v);
    }
    Ok(out)
}

/// serde_json's message without its " at line L column C", which counts in the text it
/// read, not in the user's file.
fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

pub async fn append(ctx: &Ctx, client: &Client, a: &AppendArgs) -> Result<()> {
    let records = parse_lines(&read_input(a.file.as_ref())?)?;
    if records.is_empty() {
        bail!("no records in the input");
    }
    let sid = session_id(client, &a.session).await?;
    let expected = a
        .expect_last
        .as_ref()
        .map(|e| if e == "none" { None } else { Some(e.clone()) });
    let r = client.append_values(&sid, records, expected).await?;
    if ctx.json {
        print_json(&r)?;
    } else {
        for a in &r.appended {
            outln!("appended seq {} uuid {}", a.seq, a.uuid);
        }
    }
    Ok(())
}

pub async fn read(ctx: &Ctx, client: &Client, a: &ReadArgs) -> Result<()> {
    let sid = session_id(client, &a.session).await?;
    let r = client
        .transcript_read(ReadParams {
            session_id: sid.clone(),
            agent_id: None,
            after_seq: a.after,
            limit: a.limit,
        })
        .await?;
    if ctx.json {
        print_json(&r)?;
    } else {
        let mut out = std::io::stdout().lock();
        for rec in &r.records {
            serde_json::to_writer(&mut out, rec)?;
            writeln!(out)?;
        }
        if let Some(n) = r.next_after_seq {
            eprintln!("more: ctx read {sid} --after {n}");
        }
    }
    Ok(())
}

pub async fn import(ctx: &Ctx, client: &Client, a: &ImportArgs) -> Result<()> {
    // A file is named to the daemon, which reads it as it parses: a long transcript is
    // then neither sent whole nor held whole. Standard input can only be sent.
    let (jsonl, path) = if a.file.as_os_str() == "-" {
        (ctx_client::text::read_utf8(&a.file)?, None)
    } else {
        let path =
            std::fs::canonicalize(&a.file).map_err(|source| ctx_client::text::TextError::Io {
                path: a.file.display().to_string(),
                source,
            })?;
        (String::new(), Some(path.display().to_string()))
    };
    let r = client
        .session_import(SessionImportParams {
            jsonl,
            path,
            cwd: a.cwd.as_ref().map(|c| c.display().to_string()),
            fallback_cwd: std::env::current_dir()
                .ok()
                .map(|c| c.display().to_string()),
            model: None,
            title: a.title.clone(),
        })
        .await?;
    for w in &r.stats.warnings {
        eprintln!("warning: {w}");
    }
    if ctx.json {
        print_json(&r)?;
    } else {
        outln!("{}", r.session_id);
        let s = &r.stats;
        eprintln!(
            "imported {} ({} user, {} assistant, {} system, {} attachment; {} tool_use, {} tool_result) from {} lines; skipped {:?}",
            crate::output::count(s.records, "record"),
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
    Ok(())
}
