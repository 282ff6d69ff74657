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
        .context_compile(CompileParams {
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

/// Records read back to find the prompt a failed `ctx send` left: the attachments a
/// compile appends after it come first.
const RETRY_LOOKBACK: u64 = 64;

/// Whether `prompt` is already the session's last message with no answer after it: a
/// `ctx send` whose turn failed appended it, and sending the same prompt again retries
/// that turn rather than asking twice.
async fn awaiting(client: &Client, session: &SessionInfo, prompt: &str) -> Result<bool> {
    let tail = client
        .transcript_read(ReadParams {
            session_id: session.session_id.clone(),
            agent_id: None,
            after_seq: session.record_count.saturating_sub(RETRY_LOOKBACK),
            limit: None,
        })
        .await?;
    let last_message = tail
        .records
        .iter()
        .rev()
        .find(|r| !r.is_meta && matches!(r.kind, RecordKind::User | RecordKind::Assistant));
    let Some(last) = last_message else {
        return Ok(false);
    };
    if last.kind != RecordKind::User {
        return Ok(false);
    }
    let content = serde_json::to_value(&last.content)?;
    let said = match content.as_array().map(Vec::as_slice) {
        Some([block]) if block["type"] == "text" => block["text"].as_str(),
        _ => None,
    };
    Ok(said == Some(prompt))
}

/// `ctx send`: the prompt (when given) appended, one turn through the session's
/// provider, and what the model answered: text as text, each tool call on a line.
pub async fn send(ctx: &Ctx, client: &Client, a: &SendArgs) -> Result<()> {
    let session = resolve_session(client, &a.session).await?;
    let sid = session.session_id.clone();
    if let Some(prompt) = &a.prompt
        && !awaiting(client, &session, prompt).await?
    {
        client
            .append_values(
                &sid,
                vec![serde_json::json!({"type": "user", "content": prompt})],
                None,
            )
            .await?;
    }
    let mut stream = client
        .context_send_stream(ctxd_protocol::SendParams::main(sid.as_str()))
        .await?;
    let mut shown = Shown::default();
    let finished = loop {
        // Ctrl-C stops the turn in the daemon too: otherwise the provider call would run
        // on and its answer be appended after ctx had gone.
        let event = tokio::select! {
            event = stream.next() => event,
            _ = tokio::signal::ctrl_c() => {
                let _: AckResponse = client
                    .call(CONTEXT_CANCEL, SessionIdParams { session_id: sid })
                    .await?;
                anyhow::bail!("cancelled: the turn was stopped and nothing was appended");
            }
        };
        let Some(event) = event else {
            anyhow::bail!("the daemon ended the turn's stream before its end");
        };
        let event = event?;
        if ctx.json {
            outln!("{}", serde_json::to_string(&event)?);
        }
        match event {
            TurnEvent::Finished { response } => break response,
            TurnEvent::Failed { code, message, .. } => {
                shown.end_line()?;
                anyhow::bail!("the turn failed ({code}): {message}");
            }
            TurnEvent::Event { event } if !ctx.json => shown.event(&event)?,
            TurnEvent::Retrying {
                delay_ms, message, ..
            } if !ctx.json => {
                shown.end_line()?;
                outln!("[retrying in {delay_ms} ms: {message}]");
            }
            TurnEvent::Recovering { message, .. } if !ctx.json => {
                shown.end_line()?;
                outln!("[the request was too long ({message}); making room and sending again]");
            }
            _ => {}
        }
    };
    if ctx.json {
        return Ok(());
    }
    shown.end_line()?;
    let sent = finished;
    let usage = sent.usage.unwrap_or_default();
    outln!(
        "({}; {} tokens in, {} read from the cache, {} written to it; {} out{}{})",
        sent.stop_reason.as_deref().unwrap_or("no stop reason"),
        usage.input_tokens,
        usage.cache_read_input_tokens,
        usage.cache_creation_input_tokens,
        usage.output_tokens,
        match sent.retries {
            0 => String::new(),
            1 => "; retried once".to_string(),
            n => format!("; retried {n} times"),
        },
        match &sent.recovery {
            Some(r) => format!("; recovered from a too-long request by {}", r.by),
            None => String::new(),
        }
    );
    Ok(())
}

/// What `ctx send` has printed of the streamed answer: text as it comes, a tool call as
/// one line once its input is whole.
#[derive(Default)]
struct Shown {
    /// The open tool call's name, id and input so far, by block index.
    tool: Option<(u64, String, String, String)>,
    /// Text printed without its line's end yet.
    mid_line: bool,
}

impl Shown {
    fn event(&mut self, event: &serde_json::Value) -> Result<()> {
        use std::io::Write as _;
        let index = event["index"].as_u64().unwrap_or(0);
        match event["type"].as_str().unwrap_or("") {
            "content_block_start" => {
                let block = &event["content_block"];
                match block["type"].as_str().unwrap_or("") {
                    "tool_use" => {
                        self.tool = Some((
                            index,
                            block["name"].as_str().unwrap_or("?").to_string(),
                            block["id"].as_str().unwrap_or("?").to_string(),
                            String::new(),
                        ));
                    }
                    "text" | "thinking" | "redacted_thinking" => {}
                    other => {
                        self.end_line()?;
                        outln!("[{other} block]");
                    }
                }
            }
            "content_block_delta" => {
                let delta = &event["delta"];
                match delta["type"].as_str().unwrap_or("") {
                    "text_delta" => {
                        let text = delta["text"].as_str().unwrap_or("");
                        let mut out = std::io::stdout().lock();
                        write!(out, "{text}")?;
                        out.flush()?;
                        if !text.is_empty() {
                            self.mid_line = !text.ends_with('\n');
                        }
                    }
                    "input_json_delta" => {
                        if let Some((i, _, _, input)) = &mut self.tool
                            && *i == index
                        {
                            input.push_str(delta["partial_json"].as_str().unwrap_or(""));
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some((i, name, id, input)) = self.tool.take() {
                    if i == index {
                        self.end_line()?;
                        // Compact, as the recorded input prints.
                        let input: serde_json::Value =
                            serde_json::from_str(&input).unwrap_or_else(|_| serde_json::json!({}));
                        outln!("[tool call {name} {id}: {input}]");
                    } else {
                        self.tool = Some((i, name, id, input));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn end_line(&mut self) -> Result<()> {
        if self.mid_line {
            outln!();
            self.mid_line = false;
        }
        Ok(())
    }
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
