//! `ctx compile`, `ctx replacements`, `ctx snip`, `ctx compact`.

use std::io::Write;

use anyhow::Result;
use clap::Args;
use ctx_client::Client;
use ctxd_protocol::*;

use super::{Ctx, feature_off, resolve_session, session_id};
use crate::output::{outln, print_json};

#[derive(Args, Debug)]
pub struct CompileArgs {
    /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
    session: String,
    /// A side request: the cache breakpoint goes on the second-to-last message.
    #[arg(long)]
    side: bool,
}

#[derive(Args, Debug)]
pub struct SendArgs {
    /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
    session: String,
    /// A prompt to append first, as the user's message.
    prompt: Option<String>,
}

#[derive(Args, Debug)]
pub struct SessionArg {
    /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
    pub session: String,
}

#[derive(Args, Debug)]
pub struct SnipArgs {
    /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
    session: String,
    /// Short id (`[id:xxxxxx]` in the compiled request) of the first message to remove.
    from_id: String,
    /// Short id of the last message to remove.
    to_id: String,
}

#[derive(Args, Debug)]
pub struct CompactArgs {
    /// Session: its id, `last` (the one updated most recently), or the unique start or end of its id.
    session: String,
    /// Extra instructions for the summary.
    #[arg(long)]
    instructions: Option<String>,
}

pub async fn compile(ctx: &Ctx, client: &Client, a: &CompileArgs) -> Result<()> {
    let r = client
        .compile(CompileParams {
            session_id: session_id(client, &a.session).await?,
            side_request: a.side,
            ..Default::default()
        })
        .await?;
    let mut out = std::io::stdout().lock();
    if ctx.json {
        serde_json::to_writer(&mut out, &r)?;
    } else {
        out.write_all(r.request.get().as_bytes())?;
        eprintln!(
            "{}, ~{} tokens, {} bytes, sha256 {}",
            crate::output::count(r.metadata.message_count, "message"),
            r.metadata.tokens.estimated_tokens,
            r.metadata.request_bytes,
            r.metadata.request_sha256
        );
    }
    writeln!(out)?;
    Ok(())
}

/// `ctx send`: the prompt (when given) appended, one turn through the session's
/// provider, and what the model answered: text as text, each tool call on a line.
pub async fn send(ctx: &Ctx, client: &Client, a: &SendArgs) -> Result<()> {
    let sid = session_id(client, &a.session).await?;
    if let Some(prompt) = &a.prompt {
        client
            .append_values(
                &sid,
                vec![serde_json::json!({"type": "user", "content": prompt})],
                None,
            )
            .await?;
    }
    let turn = client.call::<_, SendResponse>(
        CONTEXT_SEND,
        SendParams {
            session_id: sid.clone(),
        },
    );
    // Ctrl-C stops the turn in the daemon too: otherwise the provider call would run on
    // and its answer be appended after ctx had gone.
    let sent = tokio::select! {
        sent = turn => sent?,
        _ = tokio::signal::ctrl_c() => {
            let _: AckResponse = client
                .call(CONTEXT_CANCEL, SessionIdParams { session_id: sid })
                .await?;
            anyhow::bail!("cancelled: the turn was stopped and nothing was appended");
        }
    };
    if ctx.json {
        return print_json(&sent);
    }
    for block in sent.message["content"].as_array().into_iter().flatten() {
        match block["type"].as_str().unwrap_or("") {
            "text" => outln!("{}", block["text"].as_str().unwrap_or("")),
            "tool_use" => outln!(
                "[tool call {} {}: {}]",
                block["name"].as_str().unwrap_or("?"),
                block["id"].as_str().unwrap_or("?"),
                block["input"]
            ),
            "thinking" | "redacted_thinking" => {}
            other => outln!("[{other} block]"),
        }
    }
    let usage = sent.usage.unwrap_or_default();
    outln!(
        "({}; {} tokens in, {} read from the cache, {} written to it; {} out{})",
        sent.stop_reason.as_deref().unwrap_or("no stop reason"),
        usage.input_tokens,
        usage.cache_read_input_tokens,
        usage.cache_creation_input_tokens,
        usage.output_tokens,
        match sent.retries {
            0 => String::new(),
            1 => "; retried once".to_string(),
            n => format!("; retried {n} times"),
        }
    );
    Ok(())
}

pub async fn replacements(ctx: &Ctx, client: &Client, a: &SessionArg) -> Result<()> {
    let r: ReplacementsResponse = client
        .call(
            CONTEXT_REPLACEMENTS,
            SessionIdParams {
                session_id: session_id(client, &a.session).await?,
            },
        )
        .await?;
    if ctx.json {
        return print_json(&r);
    }
    for rep in &r.replacements {
        match &rep.replacement {
            Some(text) => outln!(
                "{:<40} {:<12} seq {:<6} replaced ({} chars): {}",
                rep.tool_use_id,
                rep.stage,
                rep.decided_seq,
                text.chars().count(),
                text.lines().nth(1).unwrap_or("")
            ),
            None => outln!(
                "{:<40} {:<12} seq {:<6} kept whole",
                rep.tool_use_id,
                rep.stage,
                rep.decided_seq
            ),
        }
    }
    Ok(())
}

pub async fn snip(ctx: &Ctx, client: &Client, a: &SnipArgs) -> Result<()> {
    let s = resolve_session(client, &a.session).await?;
    if !s.settings.snip_enabled {
        return Err(feature_off("snip", &s.session_id, "snip_enabled=true"));
    }
    let r: SnipResponse = client
        .call(
            CONTEXT_SNIP,
            SnipParams {
                session_id: s.session_id,
                from_id: a.from_id.clone(),
                to_id: a.to_id.clone(),
            },
        )
        .await?;
    if ctx.json {
        print_json(&r)?;
    } else {
        outln!(
            "snipped {} (~{} tokens) as {}",
            crate::output::count(r.removed.len() as u64, "record"),
            r.tokens_freed,
            r.boundary_uuid
        );
    }
    Ok(())
}

pub async fn compact(ctx: &Ctx, client: &Client, a: &CompactArgs) -> Result<()> {
    let sid = session_id(client, &a.session).await?;
    let spinner = (!ctx.json && std::io::IsTerminal::is_terminal(&std::io::stderr())).then(|| {
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
                session_id: sid,
                instructions: a.instructions.clone(),
            },
        )
        .await;
    if let Some(s) = spinner {
        s.abort();
        eprint!("\r\x1b[2K");
    }
    let r = r?;
    if ctx.json {
        return print_json(&r);
    }
    outln!(
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
    Ok(())
}
