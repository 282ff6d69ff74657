//! `ctx replay`: feeds a Claude Code transcript to a fresh session record by record and
//! compiles wherever the original agent called the model (before each new assistant
//! response), reporting what the pipeline saw and decided.

use std::io::{IsTerminal, Write};
use std::path::Path;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use ctx_client::{Client, ClientError};
use ctxd_protocol::*;
use serde::Serialize;

mod bill;
mod recorded;

use crate::clears::ClearReport;
use crate::cost::PriceTable;

/// One compile of the replay.
#[derive(Debug, Serialize)]
pub struct ReplayStep {
    /// 1-based line of the source record about to be answered (or, for a compile at a
    /// source compaction, of its compact boundary).
    pub source_line: u64,
    /// This compile stands where the source compacted, before its boundary is appended:
    /// `autocompact` says whether ctxd would have compacted there too.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub source_compaction: bool,
    /// This compile stands where the source microcompacted (a `microcompact_boundary`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub source_microcompaction: bool,
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
    /// What the lean policy cleared in this compile.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub policy_cleared: Vec<PolicyClear>,
    /// The compile compacted first: tokens before and after, summary size, wall time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionReport>,
    /// Autocompact was due but did not run (breaker open, failure).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autocompact_skipped: Option<String>,
    /// Compaction could not get down to half the threshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction_shortfall: Option<CompactionShortfall>,
    /// ctxd's predicted cache prefix against its previous request (tokens, and where
    /// the request first differs).
    pub predicted_read_tokens: u64,
    pub request_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<String>,
    /// The simulated bill of this request: reads and writes of the cache (the inferred
    /// constant prefix of the original agent included), uncached input, output.
    pub predicted_cache_read_tokens: u64,
    pub predicted_cache_write_tokens: u64,
    pub predicted_uncached_tokens: u64,
    /// The gap since the previous request exceeded the cache TTL.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cache_expired: bool,
    pub simulated_cost: f64,
    /// The source's own bill for this call, from its recorded usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_cost: Option<f64>,
    /// The lean policy's cost model at this compile (`metadata.cost`): the lifetime its
    /// markers carry, which the simulation prices this call's writes at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostExpectation>,
    /// The request the source recorded for this call (Claude Code 2.1.3xx), against
    /// this compile's, in structure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_request: Option<recorded::RecordedRequest>,
}

impl ReplayStep {
    /// The cache and cost fields before the simulation fills them.
    fn costless() -> ReplayStep {
        ReplayStep {
            source_line: 0,
            source_compaction: false,
            source_microcompaction: false,
            estimated_tokens: 0,
            anchor_tokens: 0,
            effective_tokens: 0,
            autocompact_threshold: 0,
            autocompact: false,
            at_blocking_limit: false,
            actual_input_tokens: None,
            messages: 0,
            request_bytes: 0,
            replaced: Vec::new(),
            time_based_cleared: Vec::new(),
            policy_cleared: Vec::new(),
            compaction: None,
            autocompact_skipped: None,
            compaction_shortfall: None,
            predicted_read_tokens: 0,
            request_tokens: 0,
            first_difference: None,
            predicted_cache_read_tokens: 0,
            predicted_cache_write_tokens: 0,
            predicted_uncached_tokens: 0,
            cache_expired: false,
            simulated_cost: 0.0,
            recorded_cost: None,
            recorded_request: None,
            cost: None,
        }
    }
}

pub struct ReplayOptions<'a> {
    pub cwd: Option<&'a Path>,
    pub model: Option<ModelProfile>,
    pub json: bool,
    /// Keep the replay's session afterwards (it is deleted otherwise).
    pub keep: bool,
    /// The cache TTL of every call, over what the source recorded: `Some(true)` one
    /// hour, `Some(false)` five minutes, `None` each call's own (its usage's split).
    pub cache_ttl_1h: Option<bool>,
    pub prices: PriceTable,
    /// The replay session's `settings.policy` and `settings.lean`.
    pub policy: ContextPolicy,
    pub lean: LeanSettings,
}

#[derive(Debug, Default, Serialize)]
pub struct ReplaySummary {
    /// The transcript, when a directory was replayed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Set on a sub-agent's thread: its agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// What reading the source passed over or changed: lines that are not JSON (by
    /// number), a cwd that is not an absolute path here.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
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
    /// Compactions in the source transcript (each also compiled by the replay).
    pub source_compactions: u64,
    /// Each compaction and microcompaction of the source, with what the source counted
    /// there and what ctxd counts of the same history.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub source_boundaries: Vec<SourceBoundary>,
    /// Size of the original agent's system prompt and tools, inferred from the first
    /// recorded usage, counted as a constant cached prefix.
    pub inferred_prefix_tokens: u64,
    /// `5m` or `1h` when given; `source` when each call is priced at the TTL its own
    /// usage recorded (`5m` for a call that recorded no split).
    pub cache_ttl: String,
    /// Cache writes of the source at each TTL, as priced.
    pub recorded_cache_write_5m_tokens: u64,
    pub recorded_cache_write_1h_tokens: u64,
    /// Over the compiles that answer a source call: predicted cache reads / input.
    pub predicted_cache_read_share: f64,
    /// The same share in the source's recorded usage.
    pub recorded_cache_read_share: f64,
    pub simulated_cost_total: f64,
    pub recorded_cost_total: f64,
    /// Calls the totals cover.
    pub costed_calls: u64,
    /// `claude_code` or `lean`.
    pub policy: String,
    /// Input tokens of the simulated requests (cache reads, writes and uncached input),
    /// and the part read from the cache.
    pub tokens_sent: u64,
    pub tokens_read: u64,
    /// The tool results the replay's compiles cleared, and how many were premature.
    pub clears: ClearReport,
    /// This session and its threads together (on the transcript's summary only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub totals: Option<ReplayTotals>,
    /// The sub-agents' threads, each replayed into a session of its own (their steps are
    /// not printed; their figures are not in the totals above).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ReplaySummary>,
}

/// One compaction or microcompaction of the source, side by side with ctxd.
#[derive(Debug, Default, Clone, Serialize, PartialEq)]
pub struct SourceBoundary {
    pub source_line: u64,
    /// `compact_boundary` or `microcompact_boundary`.
    pub kind: String,
    /// `auto` or `manual`, as the source recorded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// The source's count just before the boundary (`preTokens`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_pre_tokens: Option<u64>,
    /// ctxd's count of the source's own history just before the boundary, whatever ctxd
    /// itself decided earlier (a session fed the same records with autocompact off).
    pub count_at_source_compaction: u64,
    /// Whether the file holds the history the source counted: a recorded response comes
    /// before the boundary (a transcript that starts with a boundary continues a
    /// session whose history is elsewhere).
    pub history_in_file: bool,
    /// `(count - source_pre_tokens) / source_pre_tokens`, in percent, for a compaction
    /// whose history is in the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difference_pct: Option<f64>,
    /// The replay's own estimate and decision at that point (after any compaction of
    /// its own).
    pub ctxd_estimated_tokens: u64,
    pub ctxd_autocompact: bool,
    /// A microcompaction's `tokensSaved`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_saved: Option<u64>,
    /// A microcompaction's `compactedToolIds`: how many, and how many of them ctxd's
    /// replay had cleared by then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compacted_tools: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ctxd_cleared_of_them: Option<u64>,
}

const COMPACT_BOUNDARY: &str = "compact_boundary";
const MICROCOMPACT_BOUNDARY: &str = "microcompact_boundary";

/// The source's figures of a boundary record: trigger, preTokens, and for a
/// microcompaction tokensSaved and the tool ids it cleared. The import keeps a compact
/// boundary's metadata flattened in `data` (snake_case) and a microcompaction's under
/// `microcompact_metadata` as written.
fn boundary_of(record: &RecordInput, source_line: u64) -> Option<(SourceBoundary, Vec<String>)> {
    if record.kind != Some(RecordKind::System) || record.is_sidechain {
        return None;
    }
    let kind = record.subtype.as_deref()?;
    if kind != COMPACT_BOUNDARY && kind != MICROCOMPACT_BOUNDARY {
        return None;
    }
    let data = record.data.as_ref();
    let meta = if kind == COMPACT_BOUNDARY {
        data.and_then(|d| d.get("compact_metadata")).or(data)
    } else {
        data.and_then(|d| d.get("microcompact_metadata"))
    };
    let field = |camel: &str, snake: &str| meta.and_then(|m| m.get(camel).or_else(|| m.get(snake)));
    let ids: Vec<String> = field("compactedToolIds", "compacted_tool_ids")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let micro = kind == MICROCOMPACT_BOUNDARY;
    Some((
        SourceBoundary {
            source_line,
            kind: kind.to_owned(),
            trigger: field("trigger", "trigger")
                .and_then(|v| v.as_str())
                .map(str::to_owned),
            source_pre_tokens: field("preTokens", "pre_tokens").and_then(|v| v.as_u64()),
            tokens_saved: field("tokensSaved", "tokens_saved").and_then(|v| v.as_u64()),
            compacted_tools: micro.then_some(ids.len() as u64),
            ..SourceBoundary::default()
        },
        ids,
    ))
}

/// The source's own history, never compacted by ctxd: a second session fed the same
/// records (usage kept) with autocompact off, compiled only at the source's boundaries.
/// Records are sent in batches when a boundary needs them, so a replay without
/// boundaries never creates it.
struct Shadow {
    create: SessionCreateParams,
    sid: Option<String>,
    pending: Vec<RecordInput>,
}

/// Records per append to the shadow: bounds one request's size.
const SHADOW_BATCH: usize = 64;

impl Shadow {
    fn new(mut create: SessionCreateParams) -> Shadow {
        let mut settings = create.settings.take().unwrap_or_default();
        settings.autocompact = Some(false);
        create.settings = Some(settings);
        Shadow {
            create,
            sid: None,
            pending: Vec::new(),
        }
    }

    /// ctxd's count of every record held so far, at `now`.
    async fn count(&mut self, client: &Client, now: Option<String>) -> Result<u64> {
        let sid = match &self.sid {
            Some(s) => s.clone(),
            None => {
                let s = client
                    .session_create(self.create.clone())
                    .await?
                    .session
                    .session_id;
                self.sid = Some(s.clone());
                s
            }
        };
        let pending = std::mem::take(&mut self.pending);
        for batch in pending.chunks(SHADOW_BATCH) {
            client
                .transcript_append(AppendParams {
                    session_id: sid.clone(),
                    agent_id: None,
                    records: batch.to_vec(),
                    expected_last_uuid: None,
                })
                .await
                .context("appending to the replay's uncompacted copy")?;
        }
        let compiled = client
            .context_compile(CompileParams {
                session_id: sid,
                side_request: false,
                now,
                ..Default::default()
            })
            .await;
        match compiled {
            Ok(c) => Ok(c.metadata.tokens.estimated_tokens),
            // Past the blocking limit (nothing compacts this copy) the refusal still
            // carries the count.
            Err(ClientError::Rpc { code, data, .. }) if code == PROMPT_TOO_LONG => data
                .as_ref()
                .and_then(|d| d.get("estimated_tokens"))
                .and_then(serde_json::Value::as_u64)
                .context("a prompt_too_long refusal without its estimated_tokens"),
            Err(e) => Err(e.into()),
        }
    }

    async fn delete(self, client: &Client) {
        if let Some(sid) = self.sid {
            let _ = client
                .session_delete(ctxd_protocol::SessionIdParams { session_id: sid })
                .await;
        }
    }
}

/// A transcript's main thread and sub-agent threads together.
#[derive(Debug, Default, Clone, Serialize, PartialEq)]
pub struct ReplayTotals {
    pub sessions: u64,
    pub calls: u64,
    pub tokens_sent: u64,
    pub predicted_cache_read_share: f64,
    pub simulated_cost: f64,
    pub recorded_cost: f64,
    /// `simulated_cost / recorded_cost`.
    pub cost_ratio: f64,
    pub compactions: u64,
    pub source_compactions: u64,
    pub cleared: u64,
    pub premature: u64,
    pub premature_rate: f64,
}

impl ReplayTotals {
    /// Several transcripts' totals pooled: sums, and the ratios of the sums.
    pub fn pooled(all: &[ReplayTotals]) -> ReplayTotals {
        let mut t = ReplayTotals::default();
        let mut read = 0.0;
        for x in all {
            t.sessions += x.sessions;
            t.calls += x.calls;
            t.tokens_sent += x.tokens_sent;
            read += x.predicted_cache_read_share * x.tokens_sent as f64;
            t.simulated_cost += x.simulated_cost;
            t.recorded_cost += x.recorded_cost;
            t.compactions += x.compactions;
            t.source_compactions += x.source_compactions;
            t.cleared += x.cleared;
            t.premature += x.premature;
        }
        let ratio = |a: f64, b: f64| if b == 0.0 { 0.0 } else { a / b };
        t.predicted_cache_read_share = ratio(read, t.tokens_sent as f64);
        t.cost_ratio = ratio(t.simulated_cost, t.recorded_cost);
        t.premature_rate = ratio(t.premature as f64, t.cleared as f64);
        t
    }

    fn of(summaries: &[&ReplaySummary]) -> ReplayTotals {
        let mut t = ReplayTotals::default();
        let mut read = 0u64;
        for s in summaries {
            t.sessions += 1;
            t.calls += s.costed_calls;
            t.tokens_sent += s.tokens_sent;
            read += s.tokens_read;
            t.simulated_cost += s.simulated_cost_total;
            t.recorded_cost += s.recorded_cost_total;
            t.compactions += s.compactions.len() as u64;
            t.source_compactions += s.source_compactions;
            t.cleared += s.clears.results;
            t.premature += s.clears.premature;
        }
        let ratio = |a: f64, b: f64| if b == 0.0 { 0.0 } else { a / b };
        t.predicted_cache_read_share = ratio(read as f64, t.tokens_sent as f64);
        t.cost_ratio = ratio(t.simulated_cost, t.recorded_cost);
        t.premature_rate = ratio(t.premature as f64, t.cleared as f64);
        t
    }
}

/// The estimate's error percentiles and the bill's totals, into the summary.
fn summarise(summary: &mut ReplaySummary, errors: &[f64], bill: &bill::Bill) {
    let mut abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
    abs.sort_by(|a, b| a.total_cmp(b));
    summary.error_samples = abs.len() as u64;
    summary.median_abs_error_pct = percentile(&abs, 0.5);
    summary.p90_abs_error_pct = percentile(&abs, 0.9);
    bill.summarise(summary);
}

fn parse_time(t: Option<&str>) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(t?)
        .ok()
        .map(|d| d.with_timezone(&Utc))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ctxd_pipeline::saturate::usize_from_f64(((sorted.len() - 1) as f64 * p).round());
    sorted[idx.min(sorted.len() - 1)]
}

/// Claude Code's default window, which a recorded input can only exceed on a larger one.
const DEFAULT_WINDOW: u64 = 200_000;

/// The larger window Claude Code offers (the `[1m]` models).
const LARGE_WINDOW: u64 = 1_000_000;

/// The profile the source ran with, as far as the transcript tells it: the window
/// Claude Code reported (`cost-state`'s `modelUsage.*.contextWindow`), else the window of
/// the model its recorded requests asked for (`api-request`'s `params.model`), else the 1M window
/// when a recorded input passed 200,000 tokens (the model's name does not always say
/// so); the output limit it asked for (`api-request`'s `params.max_tokens`, else
/// `cost-state`'s `maxOutputTokens`). `None` when the transcript tells neither, so the
/// default profile stands. The whole file is read first, so the replay decides on that
/// window from its first call, as the source did.
fn source_profile(records: &[RecordInput]) -> Option<ModelProfile> {
    let largest = records
        .iter()
        .filter_map(|r| r.usage.as_ref())
        .map(|u| {
            u.input_tokens
                .saturating_add(u.cache_creation_input_tokens)
                .saturating_add(u.cache_read_input_tokens)
        })
        .max()
        .unwrap_or(0);
    let recorded = |subtype: &'static str| {
        records.iter().filter(move |r| {
            r.kind == Some(RecordKind::System) && r.subtype.as_deref() == Some(subtype)
        })
    };
    let per_model = |key: &'static str| {
        recorded("cost-state")
            .filter_map(|r| r.data.as_ref()?.get("modelUsage")?.as_object())
            .flat_map(|m| m.values())
            .filter_map(move |u| u.get(key)?.as_u64())
            .max()
    };
    // A transcript that records its requests is of a version whose models run on their
    // full window (before, a 1M window was asked for by name): the requested model's
    // window in the catalogue.
    let requested = recorded("api-request")
        .filter_map(|r| r.data.as_ref()?.get("params")?.get("model")?.as_str())
        .filter_map(|m| ctxd_protocol::models::lookup(m.trim_end_matches("[1m]")))
        .map(|e| e.context_window)
        .max();
    let window = per_model("contextWindow").filter(|w| *w > 0).or_else(|| {
        let past_default = (largest > DEFAULT_WINDOW).then_some(LARGE_WINDOW);
        requested.into_iter().chain(past_default).max()
    });
    let max_output = recorded("api-request")
        .filter_map(|r| r.data.as_ref()?.get("params")?.get("max_tokens")?.as_u64())
        .max()
        .or_else(|| per_model("maxOutputTokens"))
        .filter(|m| *m > 0);
    if window.is_none() && max_output.is_none() {
        return None;
    }
    let default = ModelProfile::default();
    let context_window = window.unwrap_or(default.context_window);
    Some(ModelProfile {
        context_window,
        // A profile whose output limit is not below its window is refused; the window
        // wins where the two recorded figures disagree.
        max_output_tokens: max_output
            .unwrap_or(default.max_output_tokens)
            .min(context_window.saturating_sub(1)),
        ..default
    })
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
    let model = opts
        .model
        .clone()
        .or_else(|| source_profile(&parsed.records));
    let mut warnings = parsed.stats.warnings.clone();
    let cwd = match (opts.cwd, &parsed.cwd) {
        (Some(c), _) => std::path::absolute(c)?.display().to_string(),
        (None, Some(c)) if std::path::Path::new(c).is_absolute() => c.clone(),
        (None, source) => {
            let here = std::env::current_dir()?.display().to_string();
            if let Some(c) = source {
                // Written on another machine (a Windows path, a relative one).
                warnings.push(format!(
                    "the transcript's cwd {c:?} is not an absolute path; replayed in {here}"
                ));
            }
            here
        }
    };
    let start_date = parsed
        .first_timestamp
        .as_deref()
        .and_then(|t| t.get(..10))
        .map(str::to_string);
    let main_tools = source_tools(&parsed.records);
    let session = client
        .session_create(SessionCreateParams {
            cwd,
            model: model.clone(),
            start_date,
            no_git: true,
            title: Some(format!("replay of {}", file.display())),
            tools: main_tools.clone(),
            // A replay must not run the project's hooks, nor add their context.
            settings: Some(SessionSettings {
                hooks: HookSettings {
                    disabled: true,
                    ..HookSettings::default()
                },
                policy: opts.policy,
                lean: opts.lean.clone(),
                ..SessionSettings::default()
            }),
            ..Default::default()
        })
        .await
        .map(|r| r.session)?;
    let sid = session.session_id.clone();
    let (records, lines, threads) = split_threads(parsed.records, &parsed.source_lines);
    let result = feed(
        client,
        &sid,
        &session.model.model,
        records,
        &lines,
        jsonl.len(),
        &opts,
        true,
        started,
        copy_of(&session, main_tools),
    )
    .await;
    // The replay session is scaffolding: removed unless the user keeps it.
    if !opts.keep {
        let _ = client
            .session_delete(ctxd_protocol::SessionIdParams {
                session_id: sid.clone(),
            })
            .await
            .map(|r| r.deleted);
    }
    let mut summary = result?;
    summary.warnings = warnings;
    for (agent, records, lines) in threads {
        let tools = source_tools(&records);
        let thread = client
            .session_create(SessionCreateParams {
                cwd: session.cwd.clone(),
                model: opts.model.clone().or_else(|| source_profile(&records)),
                start_date: Some(session.start_date.clone()),
                no_git: true,
                title: Some(format!("replay of agent {agent} of {}", file.display())),
                tools: tools.clone(),
                settings: Some(session.settings.clone()),
                ..Default::default()
            })
            .await
            .map(|r| r.session)?;
        let fed = feed(
            client,
            &thread.session_id,
            &thread.model.model,
            records,
            &lines,
            0,
            &opts,
            false,
            std::time::Instant::now(),
            copy_of(&thread, tools),
        )
        .await;
        if !opts.keep {
            let _ = client
                .session_delete(ctxd_protocol::SessionIdParams {
                    session_id: thread.session_id.clone(),
                })
                .await
                .map(|r| r.deleted);
        }
        let mut t = fed?;
        t.agent_id = Some(agent);
        summary.threads.push(t);
    }
    let all: Vec<&ReplaySummary> = std::iter::once(&summary)
        .chain(summary.threads.iter())
        .collect();
    summary.totals = Some(ReplayTotals::of(&all));
    Ok(summary)
}

/// A session made as `s` was, for [`Shadow`].
fn copy_of(s: &SessionInfo, tools: Vec<ToolSpec>) -> SessionCreateParams {
    SessionCreateParams {
        cwd: s.cwd.clone(),
        model: Some(s.model.clone()),
        start_date: Some(s.start_date.clone()),
        no_git: true,
        title: Some(format!("uncompacted copy of {}", s.session_id)),
        tools,
        settings: Some(s.settings.clone()),
        ..Default::default()
    }
}

/// The main thread's records (and lines), and each sub-agent's, in first-seen order, as
/// the thread's own main records.
#[allow(clippy::type_complexity)]
fn split_threads(
    records: Vec<RecordInput>,
    lines: &[u64],
) -> (
    Vec<RecordInput>,
    Vec<u64>,
    Vec<(String, Vec<RecordInput>, Vec<u64>)>,
) {
    let mut main = (Vec::new(), Vec::new());
    let mut threads: Vec<(String, Vec<RecordInput>, Vec<u64>)> = Vec::new();
    // Older transcripts name no agent on their sidechains: each chain of sidechain
    // records from its root (a record whose parent is not a sidechain record) is one
    // sub-agent's conversation.
    let mut chain_of: std::collections::HashMap<String, String> = Default::default();
    let mut chains = 0usize;
    for (i, mut r) in records.into_iter().enumerate() {
        let line = lines.get(i).copied().unwrap_or(0);
        let agent = match r.claude_code_agent() {
            Some(a) => a.to_owned(),
            None if r.is_sidechain => {
                let inherited = r
                    .parent_uuid
                    .as_ref()
                    .and_then(|p| chain_of.get(p))
                    .cloned();
                let chain = inherited.unwrap_or_else(|| {
                    chains += 1;
                    format!("sidechain-{chains}")
                });
                if let Some(u) = &r.uuid {
                    chain_of.insert(u.clone(), chain.clone());
                }
                chain
            }
            None => {
                main.0.push(r);
                main.1.push(line);
                continue;
            }
        };
        r.is_sidechain = false;
        match threads.iter_mut().find(|t| t.0 == agent) {
            Some(t) => {
                t.1.push(r);
                t.2.push(line);
            }
            None => threads.push((agent, vec![r], vec![line])),
        }
    }
    (main.0, main.1, threads)
}

/// Appends the records one by one, compiling before each new model response and at
/// each boundary of the source; the shadow session of `shadow` is removed afterwards.
#[allow(clippy::too_many_arguments)]
async fn feed(
    client: &Client,
    sid: &str,
    session_model: &str,
    records: Vec<RecordInput>,
    source_lines: &[u64],
    source_bytes: usize,
    opts: &ReplayOptions<'_>,
    steps: bool,
    started: std::time::Instant,
    shadow: SessionCreateParams,
) -> Result<ReplaySummary> {
    let mut shadow = Shadow::new(shadow);
    let fed = feed_into(
        client,
        sid,
        session_model,
        records,
        source_lines,
        source_bytes,
        opts,
        steps,
        started,
        &mut shadow,
    )
    .await;
    shadow.delete(client).await;
    fed
}

#[allow(clippy::too_many_arguments)]
async fn feed_into(
    client: &Client,
    sid: &str,
    session_model: &str,
    records: Vec<RecordInput>,
    source_lines: &[u64],
    source_bytes: usize,
    opts: &ReplayOptions<'_>,
    steps: bool,
    started: std::time::Instant,
    shadow: &mut Shadow,
) -> Result<ReplaySummary> {
    let has_boundaries = records.iter().any(|r| boundary_of(r, 0).is_some());
    let recorded_requests = recorded::Recorded::of(&records);
    // Since the last boundary of the source: whether a response with usage was recorded.
    let mut responded = false;
    let mut cleared: std::collections::HashSet<String> = Default::default();
    let json = opts.json && steps;
    let total = records.len();
    let progress = !opts.json && steps && std::io::stderr().is_terminal();
    let mut summary = ReplaySummary {
        session_id: sid.to_string(),
        records: total as u64,
        source_bytes: source_bytes as u64,
        policy: match opts.policy {
            ContextPolicy::ClaudeCode => "claude_code",
            ContextPolicy::Lean => "lean",
        }
        .into(),
        ..ReplaySummary::default()
    };
    let mut watch = crate::clears::Watch::default();
    let mut errors: Vec<f64> = Vec::new();
    let mut last_response: Option<Option<String>> = None;
    let mut strip_usage = false;
    let mut last_timestamp: Option<String> = None;
    let mut bill = bill::Bill::default();
    summary.cache_ttl = match opts.cache_ttl_1h {
        Some(true) => "1h",
        Some(false) => "5m",
        None => "source",
    }
    .into();
    let final_usage = final_usage(&records);
    // The replay's requests carry the TTL the source wrote with, so the daemon's own
    // prediction expires the cache when the source's did.
    let one_hour = opts.cache_ttl_1h.unwrap_or_else(|| {
        final_usage
            .values()
            .any(|u| u.cache_write_split().is_some_and(|(_, w1)| w1 > 0))
    });
    let flags = one_hour.then(|| RequestFlags {
        cache_ttl: Some("1h".into()),
        ..RequestFlags::default()
    });
    let mut out = std::io::stdout().lock();
    for (i, mut record) in records.into_iter().enumerate() {
        let line = source_lines.get(i).copied().unwrap_or(0);
        // A line written without a time (the bookkeeping of recorded calls) happened
        // when the line before it did; the daemon would stamp it with the wall clock,
        // far from the replay's own.
        if record.timestamp.is_none() {
            record.timestamp.clone_from(&last_timestamp);
        } else {
            last_timestamp.clone_from(&record.timestamp);
        }
        let boundary = boundary_of(&record, line);
        let is_source_boundary = boundary
            .as_ref()
            .is_some_and(|(b, _)| b.kind == COMPACT_BOUNDARY);
        if let Some((mut b, ids)) = boundary {
            let count = shadow.count(client, record.timestamp.clone()).await?;
            let (mut step, _) = compile_step(
                client,
                sid,
                record.timestamp.clone(),
                None,
                line,
                flags.as_ref(),
            )
            .await?;
            // Not a call of the source: its clears count, its request answers nothing.
            watch.compiled(&clears_of(&step), None);
            cleared.extend(clears_of(&step).into_iter().map(|(id, _)| id));
            if is_source_boundary {
                summary.source_compactions += 1;
                step.source_compaction = true;
            } else {
                step.source_microcompaction = true;
                b.ctxd_cleared_of_them =
                    Some(ids.iter().filter(|id| cleared.contains(*id)).count() as u64);
            }
            b.count_at_source_compaction = count;
            b.history_in_file = responded;
            // A microcompaction's preTokens is not the whole context's count (it is
            // followed at once by compactions whose preTokens are twice as large), so
            // only a compaction's is compared.
            b.difference_pct = b
                .source_pre_tokens
                .filter(|p| *p > 0 && is_source_boundary && responded)
                .map(|p| (count as f64 - p as f64) / p as f64 * 100.0);
            b.ctxd_estimated_tokens = step.estimated_tokens;
            b.ctxd_autocompact = step.autocompact;
            summary.source_boundaries.push(b);
            count_compile(&mut summary, &step);
            if json {
                serde_json::to_writer(&mut out, &step)?;
                writeln!(out)?;
            }
        }
        let is_main_assistant = record.kind == Some(RecordKind::Assistant) && !record.is_sidechain;
        let new_response = is_main_assistant
            && match (&last_response, &record.message_id) {
                (Some(Some(prev)), Some(id)) => prev != id,
                _ => true,
            };
        if new_response {
            let usage = record
                .message_id
                .as_ref()
                .and_then(|id| final_usage.get(id).cloned())
                .or_else(|| record.usage.clone());
            let (mut step, body) = compile_step(
                client,
                sid,
                record.timestamp.clone(),
                usage.as_ref(),
                line,
                flags.as_ref(),
            )
            .await?;
            if !recorded_requests.is_empty() {
                step.recorded_request = record
                    .claude_code("requestRef")
                    .and_then(|v| v.as_str())
                    .and_then(|id| recorded_requests.compare(id, &body));
            }
            watch.compiled(&clears_of(&step), Some(body));
            cleared.extend(clears_of(&step).into_iter().map(|(id, _)| id));
            let model = record.model.as_deref().unwrap_or(session_model);
            bill.simulate(
                &mut step,
                bill::Sim {
                    recorded: usage.as_ref(),
                    at: parse_time(record.timestamp.as_deref()),
                    prices: &opts.prices.for_model(model),
                    ttl_override: opts.cache_ttl_1h,
                    cleared_tokens: watch.cleared_tokens(),
                },
            );
            if count_compile(&mut summary, &step) {
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
            watch.responded(&record.content, line);
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
        if has_boundaries {
            shadow.pending.push(record.clone());
        }
        if is_source_boundary {
            responded = false;
        } else if is_main_assistant && record.usage.is_some() {
            responded = true;
        }
        if is_source_boundary {
            strip_usage = false;
        }
        if strip_usage {
            record.usage = None;
        }
        if record.kind == Some(RecordKind::User) {
            watch.appended(&record.content);
        }
        client
            .transcript_append(AppendParams {
                session_id: sid.to_string(),
                agent_id: None,
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
            show_progress(i + 1, total);
        }
    }
    if progress {
        eprintln!();
    }
    summarise(&mut summary, &errors, &bill);
    summary.clears = watch.report();
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// The tools the source's main thread called, in the order of first use, as the original
/// agent had them from its first call on: without them each newly used tool would be
/// added to the request as a placeholder when its first call appears, changing the tools
/// (and the cached prefix) mid-session as the source's tools never did.
fn source_tools(records: &[RecordInput]) -> Vec<ToolSpec> {
    if let Some(recorded) = recorded_tools(records) {
        return recorded;
    }
    let mut names: Vec<&str> = Vec::new();
    for r in records.iter().filter(|r| !r.is_sidechain) {
        for b in &r.content {
            if let ContentBlock::ToolUse { name, .. } = b
                && !names.contains(&name.as_str())
            {
                names.push(name);
            }
        }
    }
    names
        .into_iter()
        .map(|name| ToolSpec {
            name: name.to_string(),
            description: None,
            input_schema: Some(serde_json::json!({"type": "object"})),
            server_type: None,
            max_result_size_chars: None,
            mcp_server: None,
            defer_loading: false,
            extra: Default::default(),
        })
        .collect()
}

/// The tools the source sent with its first recorded request (a 2.1.3xx transcript's
/// first `api-request-shape`), as it sent them; `None` without one, or when one of them
/// is not a tool ctxd can send.
fn recorded_tools(records: &[RecordInput]) -> Option<Vec<ToolSpec>> {
    let shape = records.iter().find(|r| {
        !r.is_sidechain
            && r.kind == Some(RecordKind::System)
            && r.subtype.as_deref() == Some("api-request-shape")
    })?;
    let tools = shape
        .data
        .as_ref()?
        .get("shape")?
        .get("tools")?
        .as_array()?;
    tools
        .iter()
        .map(|t| {
            let mut t = t.clone();
            // Markers are ctxd's to place.
            if let Some(o) = t.as_object_mut() {
                o.remove("cache_control");
            }
            serde_json::from_value::<ToolSpec>(t).ok()
        })
        .collect()
}

/// By message id, the usage of a response's last record: a response split over records
/// carries its final usage there.
fn final_usage(records: &[RecordInput]) -> std::collections::HashMap<String, Usage> {
    records
        .iter()
        .filter(|r| !r.is_sidechain)
        .filter_map(|r| Some((r.message_id.clone()?, r.usage.clone()?)))
        .collect()
}

/// Counts a compile in the summary; whether it compacted.
fn count_compile(summary: &mut ReplaySummary, step: &ReplayStep) -> bool {
    summary.compiles += 1;
    summary.autocompact_points += u64::from(step.autocompact);
    match &step.compaction {
        Some(c) => {
            summary.compactions.push(c.clone());
            true
        }
        None => false,
    }
}

fn show_progress(done: usize, total: usize) {
    let width = 30;
    let filled = done * width / total.max(1);
    eprint!(
        "\r[{}{}] {}/{} records",
        "#".repeat(filled),
        " ".repeat(width - filled),
        done,
        total
    );
}

/// What a compile cleared, with its lever.
fn clears_of(step: &ReplayStep) -> Vec<(String, String)> {
    step.time_based_cleared
        .iter()
        .map(|id| (id.clone(), "time_based_microcompact".to_string()))
        .chain(
            step.policy_cleared
                .iter()
                .map(|c| (c.tool_use_id.clone(), c.rule.clone())),
        )
        .collect()
}

/// One compile of the replay, and the request it compiled (empty when it was refused).
async fn compile_step(
    client: &Client,
    sid: &str,
    now: Option<String>,
    answered: Option<&Usage>,
    source_line: u64,
    flags: Option<&RequestFlags>,
) -> Result<(ReplayStep, String)> {
    let actual_input_tokens = answered.map(|u| {
        u.input_tokens
            .saturating_add(u.cache_creation_input_tokens)
            .saturating_add(u.cache_read_input_tokens)
    });
    let r = client
        .context_compile(CompileParams {
            session_id: sid.to_string(),
            side_request: false,
            now,
            flags: flags.cloned(),
            ..Default::default()
        })
        .await;
    match r {
        Ok(c) => {
            let m = c.metadata;
            let body = c.request.get().to_string();
            let step = ReplayStep {
                source_line,
                source_compaction: false,
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
                policy_cleared: m.microcompact.policy_cleared,
                compaction: m.compaction,
                autocompact_skipped: m.autocompact_skipped,
                compaction_shortfall: m.compaction_shortfall,
                predicted_read_tokens: m.cache.predicted_read_tokens,
                request_tokens: m.cache.request_tokens,
                first_difference: m.cache.first_difference,
                cost: m.cost,
                ..ReplayStep::costless()
            };
            Ok((step, body))
        }
        Err(ClientError::Rpc { code, data, .. }) if code == PROMPT_TOO_LONG => {
            let get = |k: &str| {
                data.as_ref()
                    .and_then(|d| d.get(k))
                    .and_then(|v| v.as_u64())
                    .unwrap_or(0)
            };
            let step = ReplayStep {
                source_line,
                source_compaction: false,
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
                ..ReplayStep::costless()
            };
            Ok((step, String::new()))
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn recorded(subtype: &str, data: serde_json::Value) -> RecordInput {
        serde_json::from_value(json!({"type": "system", "subtype": subtype, "data": data})).unwrap()
    }

    #[test]
    fn the_source_profile_comes_from_what_the_transcript_recorded() {
        // Nothing recorded: the default profile stands.
        assert_eq!(source_profile(&[]), None);
        // The requested model's window, the requested output limit.
        let request = recorded(
            "api-request",
            json!({"params": {"model": "claude-opus-5-5", "max_tokens": 128000}}),
        );
        let p = source_profile(std::slice::from_ref(&request)).unwrap();
        assert_eq!(
            (p.context_window, p.max_output_tokens),
            (1_000_000, 128_000)
        );
        // The window Claude Code reported wins over the model's.
        let cost = recorded(
            "cost-state",
            json!({"modelUsage": {"claude-opus-5-5": {"contextWindow": 200000, "maxOutputTokens": 64000}}}),
        );
        let p = source_profile(&[request.clone(), cost.clone()]).unwrap();
        assert_eq!((p.context_window, p.max_output_tokens), (200_000, 128_000));
        let p = source_profile(std::slice::from_ref(&cost)).unwrap();
        assert_eq!((p.context_window, p.max_output_tokens), (200_000, 64_000));
        // An output limit at or above the window is not a profile the daemon takes.
        let odd = recorded(
            "cost-state",
            json!({"modelUsage": {"m": {"contextWindow": 100000, "maxOutputTokens": 128000}}}),
        );
        assert_eq!(source_profile(&[odd]).unwrap().max_output_tokens, 99_999);
        // A model the catalogue does not know says nothing of the window.
        let unknown = recorded("api-request", json!({"params": {"model": "gpt-x"}}));
        assert_eq!(source_profile(&[unknown]), None);
    }

    #[test]
    fn boundaries_read_the_figures_the_import_kept() {
        let compact = recorded(
            "compact_boundary",
            json!({"trigger": "auto", "pre_tokens": 167123}),
        );
        let (b, ids) = boundary_of(&compact, 7).unwrap();
        assert_eq!(
            (b.source_line, b.trigger.as_deref(), b.source_pre_tokens),
            (7, Some("auto"), Some(167_123))
        );
        assert!(ids.is_empty() && b.compacted_tools.is_none());
        let micro = recorded(
            "microcompact_boundary",
            json!({"microcompact_metadata": {"trigger": "auto", "preTokens": 60364,
                "tokensSaved": 21294, "compactedToolIds": ["toolu_a", "toolu_b"]}}),
        );
        let (b, ids) = boundary_of(&micro, 9).unwrap();
        assert_eq!(b.kind, "microcompact_boundary");
        assert_eq!(
            (b.source_pre_tokens, b.tokens_saved),
            (Some(60_364), Some(21_294))
        );
        assert_eq!((ids.len(), b.compacted_tools), (2, Some(2)));
        assert!(boundary_of(&recorded("informational", json!({})), 1).is_none());
    }

    #[test]
    fn sidechains_without_an_agent_split_by_their_chains() {
        let rec = |uuid: &str, parent: Option<&str>, side: bool| -> RecordInput {
            serde_json::from_value(json!({"uuid": uuid, "parent_uuid": parent, "type": "user",
                "is_sidechain": side, "content": [{"type": "text", "text": "x"}]}))
            .unwrap()
        };
        let records = vec![
            rec("m1", None, false),
            rec("a1", None, true),
            rec("a2", Some("a1"), true),
            rec("m2", Some("m1"), false),
            rec("b1", Some("m2"), true),
            rec("a3", Some("a2"), true),
        ];
        let (main, lines, threads) = split_threads(records, &[1, 2, 3, 4, 5, 6]);
        assert_eq!(main.len(), 2);
        assert_eq!(lines, vec![1, 4]);
        let shape: Vec<(&str, Vec<u64>)> = threads
            .iter()
            .map(|t| (t.0.as_str(), t.2.clone()))
            .collect();
        assert_eq!(
            shape,
            vec![("sidechain-1", vec![2, 3, 6]), ("sidechain-2", vec![5])]
        );
        assert!(threads.iter().flat_map(|t| &t.1).all(|r| !r.is_sidechain));
    }
}
