//! `ctx replay`: feeds a Claude Code transcript to a fresh session record by record and
//! compiles wherever the original agent called the model (before each new assistant
//! response), reporting what the pipeline saw and decided.

use std::io::{IsTerminal, Write};
use std::path::Path;

use anyhow::{Context, Result};
use ctx_client::{Client, ClientError};
use ctxd_protocol::*;
use serde::Serialize;

/// One compile of the replay.
#[derive(Debug, Serialize)]
pub struct ReplayStep {
    /// 1-based line of the source record about to be answered.
    pub source_line: u64,
    pub estimated_tokens: u64,
    pub anchor_tokens: u64,
    /// The estimate after snip, as tested against the threshold.
    pub effective_tokens: u64,
    pub autocompact_threshold: u64,
    /// The estimate is at or above the autocompact threshold.
    pub autocompact: bool,
    pub at_blocking_limit: bool,
    /// Input side of the answered record's recorded usage (input + cache creation +
    /// cache read), when it has usage: what the estimate should have predicted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual_input_tokens: Option<u64>,
    pub messages: u32,
    pub request_bytes: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replaced: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub time_based_cleared: Vec<String>,
    /// The compile compacted first: tokens before and after, summary size, wall time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionReport>,
    /// Autocompact was due but did not run (breaker open, failure).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autocompact_skipped: Option<String>,
}

pub struct ReplayOptions<'a> {
    pub cwd: Option<&'a Path>,
    pub model: Option<ModelProfile>,
    pub json: bool,
    /// Keep the replay's session afterwards (it is deleted otherwise).
    pub keep: bool,
}

#[derive(Debug, Default, Serialize)]
pub struct ReplaySummary {
    pub session_id: String,
    pub records: u64,
    pub compiles: u64,
    pub autocompact_points: u64,
    /// Compactions ctxd performed during the replay.
    pub compactions: Vec<CompactionReport>,
    pub blocked: u64,
    /// Relative estimator error over compiles whose answer carries usage.
    pub error_samples: u64,
    pub median_abs_error_pct: f64,
    pub p90_abs_error_pct: f64,
    pub source_bytes: u64,
    pub seconds: f64,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

pub async fn replay(
    client: &Client,
    file: &Path,
    opts: ReplayOptions<'_>,
) -> Result<ReplaySummary> {
    let started = std::time::Instant::now();
    let jsonl =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let parsed: ParseClaudeCodeResponse = client
        .call(
            TRANSCRIPT_PARSE_CLAUDE_CODE,
            ParseClaudeCodeParams {
                jsonl: jsonl.clone(),
            },
        )
        .await?;
    let cwd = match (opts.cwd, &parsed.cwd) {
        (Some(c), _) => std::path::absolute(c)?.display().to_string(),
        (None, Some(c)) => c.clone(),
        (None, None) => std::env::current_dir()?.display().to_string(),
    };
    let start_date = parsed
        .first_timestamp
        .as_deref()
        .and_then(|t| t.get(..10))
        .map(str::to_string);
    let session = client
        .create_session(SessionCreateParams {
            cwd,
            model: opts.model,
            start_date,
            no_git: true,
            title: Some(format!("replay of {}", file.display())),
            // A replay must not run the project's hooks, nor add their context.
            settings: Some(SessionSettings {
                hooks: HookSettings {
                    disabled: true,
                    ..HookSettings::default()
                },
                ..SessionSettings::default()
            }),
            ..Default::default()
        })
        .await?;
    let sid = session.session_id.clone();
    let result = feed(
        client,
        &sid,
        parsed.records,
        &parsed.source_lines,
        jsonl.len(),
        opts.json,
        started,
    )
    .await;
    // The replay session is scaffolding: removed unless the user keeps it.
    if !opts.keep {
        let _ = client.delete_session(&sid).await;
    }
    result
}

/// Appends the records one by one, compiling before each new model response.
async fn feed(
    client: &Client,
    sid: &str,
    records: Vec<RecordInput>,
    source_lines: &[u64],
    source_bytes: usize,
    json: bool,
    started: std::time::Instant,
) -> Result<ReplaySummary> {
    let total = records.len();
    let progress = !json && std::io::stderr().is_terminal();
    let mut summary = ReplaySummary {
        session_id: sid.to_string(),
        records: total as u64,
        source_bytes: source_bytes as u64,
        ..ReplaySummary::default()
    };
    let mut errors: Vec<f64> = Vec::new();
    let mut last_response: Option<Option<String>> = None;
    let mut strip_usage = false;
    let mut out = std::io::stdout().lock();
    for (i, record) in records.into_iter().enumerate() {
        let is_main_assistant = record.kind == Some(RecordKind::Assistant) && !record.is_sidechain;
        let new_response = is_main_assistant
            && match (&last_response, &record.message_id) {
                (Some(Some(prev)), Some(id)) => prev != id,
                _ => true,
            };
        if new_response {
            let step = compile_step(
                client,
                sid,
                &record,
                source_lines.get(i).copied().unwrap_or(0),
            )
            .await?;
            summary.compiles += 1;
            summary.autocompact_points += u64::from(step.autocompact);
            if let Some(c) = &step.compaction {
                summary.compactions.push(c.clone());
                // The source's later usage numbers measure the original, uncompacted
                // history; they would re-trigger compaction at once. Until the source
                // compacts itself, ctxd estimates from its own boundary instead.
                strip_usage = true;
            }
            summary.blocked += u64::from(step.at_blocking_limit);
            // Only anchored estimates are comparable: the first call's system prompt and
            // tools are the original agent's, not ours.
            if let Some(actual) = step
                .actual_input_tokens
                .filter(|a| *a > 0 && step.anchor_tokens > 0)
            {
                errors.push((step.estimated_tokens as f64 - actual as f64) / actual as f64 * 100.0);
            }
            if json {
                serde_json::to_writer(&mut out, &step)?;
                writeln!(out)?;
            }
        }
        if is_main_assistant {
            last_response = Some(record.message_id.clone());
        } else if record.kind == Some(RecordKind::User) && !record.is_sidechain {
            // A user turn in between: the next assistant record is a new call even if a
            // client reused an id.
            let results_only = record
                .content
                .iter()
                .all(|b| matches!(b, ContentBlock::ToolResult { .. }));
            if !results_only {
                last_response = None;
            }
        }
        let mut record = record;
        if record.kind == Some(RecordKind::System)
            && record.subtype.as_deref() == Some("compact_boundary")
        {
            strip_usage = false;
        }
        if strip_usage {
            record.usage = None;
        }
        client
            .append(AppendParams {
                session_id: sid.to_string(),
                records: vec![record],
                expected_last_uuid: None,
            })
            .await
            .with_context(|| {
                format!(
                    "appending the record of line {}",
                    source_lines.get(i).copied().unwrap_or(0)
                )
            })?;
        if progress && (i % 8 == 0 || i + 1 == total) {
            let width = 30;
            let done = (i + 1) * width / total.max(1);
            eprint!(
                "\r[{}{}] {}/{} records",
                "#".repeat(done),
                " ".repeat(width - done),
                i + 1,
                total
            );
        }
    }
    if progress {
        eprintln!();
    }
    let mut abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
    abs.sort_by(|a, b| a.total_cmp(b));
    summary.error_samples = abs.len() as u64;
    summary.median_abs_error_pct = percentile(&abs, 0.5);
    summary.p90_abs_error_pct = percentile(&abs, 0.9);
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

async fn compile_step(
    client: &Client,
    sid: &str,
    answered: &RecordInput,
    source_line: u64,
) -> Result<ReplayStep> {
    let actual_input_tokens = answered
        .usage
        .map(|u| u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens);
    let r = client
        .compile(CompileParams {
            session_id: sid.to_string(),
            side_request: false,
            now: answered.timestamp.clone(),
        })
        .await;
    match r {
        Ok(c) => {
            let m = c.metadata;
            Ok(ReplayStep {
                source_line,
                estimated_tokens: m.tokens.estimated_tokens,
                anchor_tokens: m.tokens.anchor_tokens,
                effective_tokens: m.context.effective_tokens,
                autocompact_threshold: m.context.autocompact_threshold,
                // The decision: it fired (and compacted) or was due.
                autocompact: m.context.above_autocompact || m.compaction.is_some(),
                at_blocking_limit: false,
                actual_input_tokens,
                messages: m.message_count,
                request_bytes: m.request_bytes,
                replaced: m.replaced,
                time_based_cleared: m.microcompact.time_based_cleared,
                compaction: m.compaction,
                autocompact_skipped: m.autocompact_skipped,
            })
        }
        Err(ClientError::Rpc { code, data, .. }) if code == PROMPT_TOO_LONG => {
            let get = |k: &str| {
                data.as_ref()
                    .and_then(|d| d.get(k))
                    .and_then(|v| v.as_u64())
                    .unwrap_or(0)
            };
            Ok(ReplayStep {
                source_line,
                estimated_tokens: get("estimated_tokens"),
                anchor_tokens: 0,
                effective_tokens: get("estimated_tokens"),
                autocompact_threshold: 0,
                autocompact: true,
                at_blocking_limit: true,
                actual_input_tokens,
                messages: 0,
                request_bytes: 0,
                replaced: Vec::new(),
                time_based_cleared: Vec::new(),
                compaction: None,
                autocompact_skipped: None,
            })
        }
        Err(e) => Err(e.into()),
    }
}
