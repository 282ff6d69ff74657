//! `ctx demo` and `ctx replay`: sessions made to show or measure something, removed
//! afterwards unless `--keep`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use ctx_client::Client;
use ctxd_protocol::*;

use super::Ctx;
use crate::output::count;
use crate::output::{outln, print_json};
use crate::replay;

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Keep the demo session afterwards (it is deleted otherwise).
    #[arg(long)]
    keep: bool,
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// A Claude Code JSONL transcript, or a directory: each `*.jsonl` in it, in name
    /// order, then the pooled total.
    file: PathBuf,
    /// Working directory of the replay session [default: the transcript's].
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Context window of the model profile, in tokens.
    #[arg(long)]
    context_window: Option<u64>,
    /// Max output tokens of the model profile.
    #[arg(long)]
    max_output_tokens: Option<u64>,
    /// Keep the replay session afterwards (it is deleted otherwise).
    #[arg(long)]
    keep: bool,
    /// Cache TTL of every call in the cost simulation: `5m` or `1h`. By default each
    /// call is priced at the TTL its recorded usage shows (the 5-minute / 1-hour split of
    /// its cache writes).
    #[arg(long, value_parser = ["5m", "1h"])]
    cache_ttl: Option<String>,
    /// Price table (JSON, dollars per million tokens) instead of the built-in one.
    #[arg(long)]
    prices: Option<PathBuf>,
    /// The replay session's context policy: `claude_code` (the default) or `lean`
    /// (clears superseded and stale tool results; see docs/policy.md).
    #[arg(long, value_parser = ["claude_code", "lean"], default_value = "claude_code")]
    policy: String,
    /// The lean policy's parameters, as the JSON of `settings.lean`
    /// (e.g. `{"stale_after_rounds": 8}`).
    #[arg(long)]
    lean: Option<String>,
    /// Replay twice, under `claude_code` and under `lean`, and print both side by side
    /// with what each lever saved and every premature clear. Over a directory: also
    /// lean with each cost lever flipped, and the frontier of the settings tried.
    #[arg(long)]
    compare: bool,
}

/// The transcripts of a directory: its `*.jsonl` files, in name order.
fn transcripts(dir: &std::path::Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    Ok(files)
}

/// `ctx replay DIR`: each transcript replayed in turn, its summary printed as a file's
/// is (with `file` set), then the pooled total; with `--compare`, the frontier report.
async fn replay_dir<'a>(
    ctx: &Ctx,
    client: &Client,
    a: &'a ReplayArgs,
    options: &dyn Fn(ContextPolicy, bool) -> replay::ReplayOptions<'a>,
    policy: ContextPolicy,
) -> Result<()> {
    let files = transcripts(&a.file)?;
    let names: Vec<String> = files
        .iter()
        .map(|f| {
            f.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        })
        .collect();
    if a.compare {
        let lean = options(ContextPolicy::Lean, false).lean;
        // Each cost lever flipped from what was asked: "without" one that is on,
        // "with" one that is off.
        let flip = |name: &str, on: bool, edit: fn(&mut LeanSettings, bool)| {
            let mut l = lean.clone();
            edit(&mut l, !on);
            let how = if on { "without" } else { "with" };
            (format!("lean {how} {name}"), ContextPolicy::Lean, l)
        };
        let settings = [
            (
                "claude_code".to_string(),
                ContextPolicy::ClaudeCode,
                lean.clone(),
            ),
            ("lean".to_string(), ContextPolicy::Lean, lean.clone()),
            flip("choose_ttl", lean.choose_ttl, |l, v| {
                l.choose_ttl = v;
            }),
            flip("priced_clears", lean.priced_clears, |l, v| {
                l.priced_clears = v;
            }),
        ];
        let mut variants = Vec::new();
        for (name, policy, lean) in settings {
            let mut totals = Vec::new();
            for f in &files {
                let mut o = options(policy, false);
                o.lean = lean.clone();
                let s = replay::replay(client, f, o).await?;
                totals.push(s.totals.unwrap_or_default());
            }
            variants.push(crate::policy_report::Variant { name, totals });
        }
        let report = crate::policy_report::frontier(&names, &variants);
        outln!("{}", report.trim_end());
        return Ok(());
    }
    let mut all = Vec::new();
    for (f, name) in files.iter().zip(&names) {
        let mut summary = replay::replay(client, f, options(policy, false)).await?;
        summary.file = Some(name.clone());
        let t = summary.totals.clone().unwrap_or_default();
        if ctx.json {
            eprintln!("{}", serde_json::to_string(&summary)?);
        } else {
            outln!(
                "{name}: {} calls, simulated ${:.4} vs recorded ${:.4} ({:.3}x), {} cleared, {} premature, compactions {}/{}",
                t.calls,
                t.simulated_cost,
                t.recorded_cost,
                t.cost_ratio,
                t.cleared,
                t.premature,
                t.compactions,
                t.source_compactions
            );
        }
        all.push(t);
    }
    let total = replay::ReplayTotals::pooled(&all);
    if ctx.json {
        let line = serde_json::json!({
            "total": true,
            "transcripts": files.len(),
            "policy": if policy == ContextPolicy::Lean { "lean" } else { "claude_code" },
            "simulated_cost_total": total.simulated_cost,
            "recorded_cost_total": total.recorded_cost,
            "compactions": total.compactions,
            "source_compactions": total.source_compactions,
            "clears": {
                "results": total.cleared,
                "premature": total.premature,
                "premature_rate": total.premature_rate,
            },
            "totals": total,
        });
        eprintln!("{line}");
    } else {
        outln!(
            "total of {} transcripts: {} calls, simulated ${:.4} vs recorded ${:.4} ({:.3}x), {} cleared, {} premature ({:.1}%), compactions {}/{}",
            files.len(),
            total.calls,
            total.simulated_cost,
            total.recorded_cost,
            total.cost_ratio,
            total.cleared,
            total.premature,
            total.premature_rate * 100.0,
            total.compactions,
            total.source_compactions
        );
    }
    Ok(())
}

/// A real (redacted) Claude Code session shipped with ctxd, MIT-licensed: see
/// tests/fixtures/claude-code/spotter/LICENSE.
const SAMPLE_SESSION: &str =
    include_str!("../../../tests/fixtures/claude-code/spotter/tool_heavy.jsonl");

pub async fn demo(ctx: &Ctx, client: &Client, a: &DemoArgs) -> Result<()> {
    let status = client.daemon_status(ctxd_protocol::NoParams {}).await?;
    let imported = client
        .session_import(SessionImportParams {
            jsonl: SAMPLE_SESSION.to_string(),
            path: None,
            cwd: None,
            fallback_cwd: None,
            model: None,
            title: Some("ctxd demo: bundled Claude Code session".into()),
        })
        .await?;
    let sid = imported.session_id.clone();
    let compiled = client
        .context_compile(CompileParams {
            session_id: sid.clone(),
            side_request: false,
            ..Default::default()
        })
        .await;
    if !a.keep {
        client
            .session_delete(ctxd_protocol::SessionIdParams {
                session_id: sid.clone(),
            })
            .await
            .map(|r| r.deleted)?;
    }
    let compiled = compiled?;
    if ctx.json {
        return print_json(&serde_json::json!({
            "session_id": sid,
            "kept": a.keep,
            "stats": imported.stats,
            "metadata": compiled.metadata,
            "request": compiled.request,
        }));
    }
    let s = &imported.stats;
    let m = &compiled.metadata;
    outln!(
        "ctxd {} is running on {} (protocol {}).",
        status.daemon_version,
        status.socket,
        status.protocol_version
    );
    outln!(
        "Imported a real Claude Code session: {} of JSONL became {} ({} from the user, {} \
         from the model, {} system notes); the model called {}.",
        count(s.lines, "line"),
        count(s.records, "record"),
        s.user,
        s.assistant,
        s.system,
        count(s.tool_use, "tool")
    );
    if !s.skipped.is_empty() {
        let left_out: Vec<String> = s
            .skipped
            .iter()
            .map(|(kind, n)| format!("{n} {kind}"))
            .collect();
        outln!(
            "  Left out as Claude Code's own bookkeeping, not conversation: {} lines.",
            left_out.join(", ")
        );
    }
    outln!("The next request ctxd would send the model:");
    if m.tokens.anchor_tokens > 0 {
        outln!(
            "  {}, {} bytes, about {} tokens ({} as the last response reported, plus about \
             {} for what came after it).",
            count(m.message_count, "message"),
            m.request_bytes,
            m.tokens.estimated_tokens,
            m.tokens.anchor_tokens,
            m.tokens.estimated_tail_tokens,
        );
    } else {
        // An imported session's usage measured Claude Code's own request, not this one.
        outln!(
            "  {}, {} bytes, about {} tokens (estimated from its characters).",
            count(m.message_count, "message"),
            m.request_bytes,
            m.tokens.estimated_tokens,
        );
    }
    outln!("  Its system prompt, in the order sent:");
    for sec in &m.system_sections {
        match sec.class.as_str() {
            "boundary" => {
                outln!("    ---- above: the same in every session; below: this session's own ----");
            }
            class => outln!(
                "    {:<24} {:>6} chars  {}",
                sec.name,
                sec.chars,
                section_kind(class)
            ),
        }
    }
    if !m.repairs.is_empty() {
        outln!("  What ctxd fixed so that the API accepts the history:");
        for r in &m.repairs {
            outln!("    {r}");
        }
    }
    if a.keep {
        outln!("See the whole request with: ctx compile {sid}");
    } else {
        outln!("The demo session was removed again (`ctx demo --keep` keeps it).");
    }
    outln!(
        "The daemon keeps running in the background for your agents; stop it with `ctx daemon stop`."
    );
    Ok(())
}

/// A system section's caching class, for people.
fn section_kind(class: &str) -> &'static str {
    match class {
        "static" => "fixed text",
        "memoized" => "worked out once per session, then frozen",
        "uncached" => "worked out again for every request",
        "system_context" => "the client's system context",
        _ => "",
    }
}

pub async fn replay(ctx: &Ctx, client: &Client, a: &ReplayArgs) -> Result<()> {
    let model = (a.context_window.is_some() || a.max_output_tokens.is_some()).then(|| {
        let mut m = ModelProfile::default();
        if let Some(w) = a.context_window {
            m.context_window = w;
        }
        if let Some(o) = a.max_output_tokens {
            m.max_output_tokens = o;
        }
        m
    });
    let prices = match &a.prices {
        Some(p) => crate::cost::PriceTable::load(p)?,
        None => crate::cost::PriceTable::default(),
    };
    let lean: LeanSettings = match &a.lean {
        Some(j) => serde_json::from_str(j)
            .map_err(|e| anyhow::anyhow!("--lean is not a settings.lean object: {e}"))?,
        None => LeanSettings::default(),
    };
    let policy = if a.policy == "lean" {
        ContextPolicy::Lean
    } else {
        ContextPolicy::ClaudeCode
    };
    let options = |policy: ContextPolicy, json: bool| replay::ReplayOptions {
        cwd: a.cwd.as_deref(),
        model: model.clone(),
        json,
        keep: a.keep,
        cache_ttl_1h: a.cache_ttl.as_deref().map(|t| t == "1h"),
        prices: prices.clone(),
        policy,
        lean: lean.clone(),
    };
    if a.file.is_dir() {
        return replay_dir(ctx, client, a, &options, policy).await;
    }
    if a.compare {
        let base =
            replay::replay(client, &a.file, options(ContextPolicy::ClaudeCode, false)).await?;
        let leaner = replay::replay(client, &a.file, options(ContextPolicy::Lean, false)).await?;
        if ctx.json {
            print_json(&serde_json::json!({"claude_code": base, "lean": leaner}))?;
        } else {
            let report =
                crate::policy_report::compare(&a.file.display().to_string(), &base, &leaner);
            outln!("{}", report.trim_end());
        }
        return Ok(());
    }
    let summary = replay::replay(client, &a.file, options(policy, ctx.json)).await?;
    if ctx.json {
        eprintln!("{}", serde_json::to_string(&summary)?);
        return Ok(());
    }
    outln!(
        "replayed {} into {}{}: {} compiles, {} at/above the autocompact threshold, {} blocked",
        crate::output::count(summary.records, "record"),
        summary.session_id,
        if a.keep {
            ""
        } else {
            " (removed; --keep keeps it)"
        },
        summary.compiles,
        summary.autocompact_points,
        summary.blocked
    );
    for c in &summary.compactions {
        outln!(
            "compacted ({}, {} via {}): ~{} → ~{} tokens, summary {} chars, {:.2} ms",
            c.trigger,
            c.kind,
            c.summariser,
            c.pre_tokens,
            c.post_tokens,
            c.summary_chars,
            c.micros as f64 / 1000.0
        );
    }
    outln!(
        "estimator error over {} answered calls: median {:.2}%, p90 {:.2}%",
        summary.error_samples,
        summary.median_abs_error_pct,
        summary.p90_abs_error_pct
    );
    for t in &summary.threads {
        outln!(
            "  sub-agent {} (its own thread): {}, {} compiles, {} compactions, {} blocked; estimator error over {} calls: median {:.2}%, p90 {:.2}%",
            t.agent_id.as_deref().unwrap_or("?"),
            crate::output::count(t.records, "record"),
            t.compiles,
            t.compactions.len(),
            t.blocked,
            t.error_samples,
            t.median_abs_error_pct,
            t.p90_abs_error_pct
        );
    }
    outln!(
        "cache ({} TTL): predicted read share {:.1}% (source recorded {:.1}%); simulated cost ${:.4} vs recorded ${:.4} over {} calls; compactions: source {}, ctxd {}",
        summary.cache_ttl,
        summary.predicted_cache_read_share * 100.0,
        summary.recorded_cache_read_share * 100.0,
        summary.simulated_cost_total,
        summary.recorded_cost_total,
        summary.costed_calls,
        summary.source_compactions,
        summary.compactions.len()
    );
    outln!(
        "  (predicted: what ctxd expects the provider's cache to serve of its own compiles, \
         prefix by prefix; recorded: what the source's responses reported. Where ctxd's \
         cache is cold, the original agent's system prompt and tools are read as far as the \
         source's call read them. The simulated cost prices ctxd's predicted reads and \
         writes at the model's list prices, the recorded one the source's reported usage.)"
    );
    if let Some(t) = &summary.totals {
        outln!(
            "policy {}: {} results cleared, {} premature ({:.1}%); with its {} sub-agent thread(s): {} calls, {} tokens sent, simulated ${:.4} vs recorded ${:.4} ({:.3}x)",
            summary.policy,
            t.cleared,
            t.premature,
            t.premature_rate * 100.0,
            summary.threads.len(),
            t.calls,
            t.tokens_sent,
            t.simulated_cost,
            t.recorded_cost,
            t.cost_ratio
        );
    }
    outln!(
        "{:.2} s for {:.2} MB ({:.2} s/MB)",
        summary.seconds,
        summary.source_bytes as f64 / 1e6,
        summary.seconds / (summary.source_bytes as f64 / 1e6).max(1e-9)
    );
    Ok(())
}
