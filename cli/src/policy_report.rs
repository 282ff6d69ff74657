//! `ctx replay --compare`: one transcript under both policies, side by side, with where
//! the savings came from and the premature clears. Plain text, no timings, so the same
//! transcript always prints the same report.

use std::fmt::Write as _;

use crate::replay::{ReplaySummary, ReplayTotals};

fn totals(s: &ReplaySummary) -> ReplayTotals {
    s.totals.clone().unwrap_or_default()
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// The side-by-side report of a `claude_code` and a `lean` replay of one transcript.
pub fn compare(file: &str, base: &ReplaySummary, lean: &ReplaySummary) -> String {
    let (b, l) = (totals(base), totals(lean));
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(
        w,
        "{file}: {} session(s), {} model calls",
        b.sessions, b.calls
    );
    let _ = writeln!(w, "{:<28} {:>14} {:>14}", "", "claude_code", "lean");
    let row = |w: &mut String, name: &str, x: String, y: String| {
        let _ = writeln!(w, "{name:<28} {x:>14} {y:>14}");
    };
    row(
        w,
        "tokens sent",
        b.tokens_sent.to_string(),
        l.tokens_sent.to_string(),
    );
    row(
        w,
        "predicted cache-read share",
        pct(b.predicted_cache_read_share),
        pct(l.predicted_cache_read_share),
    );
    row(
        w,
        "simulated cost",
        format!("${:.4}", b.simulated_cost),
        format!("${:.4}", l.simulated_cost),
    );
    row(
        w,
        "  against recorded",
        format!("{:.3}x", b.cost_ratio),
        format!("{:.3}x", l.cost_ratio),
    );
    row(
        w,
        "compactions (source)",
        format!("{} ({})", b.compactions, b.source_compactions),
        format!("{} ({})", l.compactions, l.source_compactions),
    );
    row(
        w,
        "results cleared",
        b.cleared.to_string(),
        l.cleared.to_string(),
    );
    row(
        w,
        "premature clears",
        format!("{} ({})", b.premature, pct(b.premature_rate)),
        format!("{} ({})", l.premature, pct(l.premature_rate)),
    );
    let _ = writeln!(
        w,
        "recorded cost ${:.4}; lean saves ${:.4} ({}) of claude_code's simulated cost",
        b.recorded_cost,
        b.simulated_cost - l.simulated_cost,
        pct(if b.simulated_cost == 0.0 {
            0.0
        } else {
            (b.simulated_cost - l.simulated_cost) / b.simulated_cost
        })
    );
    let _ = writeln!(w, "by session (lean):");
    for s in std::iter::once(lean).chain(lean.threads.iter()) {
        let _ = writeln!(
            w,
            "  {:<14} {:>3} calls  cost {:.3}x recorded  cleared {:>3}  premature {}",
            s.agent_id.as_deref().unwrap_or("main"),
            s.costed_calls,
            if s.recorded_cost_total == 0.0 {
                0.0
            } else {
                s.simulated_cost_total / s.recorded_cost_total
            },
            s.clears.results,
            s.clears.premature
        );
    }
    let _ = writeln!(
        w,
        "savings by lever (lean; tokens kept out of later requests):"
    );
    let mut levers: Vec<(String, u64, u64, u64)> = Vec::new();
    for s in std::iter::once(lean).chain(lean.threads.iter()) {
        for l in &s.clears.by_lever {
            match levers.iter_mut().find(|x| x.0 == l.lever) {
                Some(x) => {
                    x.1 += l.results;
                    x.2 += l.tokens_saved;
                    x.3 += l.premature;
                }
                None => levers.push((l.lever.clone(), l.results, l.tokens_saved, l.premature)),
            }
        }
    }
    if levers.is_empty() {
        let _ = writeln!(w, "  (nothing cleared)");
    }
    for (lever, results, saved, premature) in &levers {
        let _ = writeln!(
            w,
            "  {lever:<24} {results:>4} results  {saved:>9} tokens  {premature} premature"
        );
    }
    let _ = writeln!(w, "premature clears (lean):");
    let mut any = false;
    for s in std::iter::once(lean).chain(lean.threads.iter()) {
        for e in &s.clears.examples {
            any = true;
            let _ = writeln!(
                w,
                "  {} {} ({}), used at line {}: {:?}",
                s.agent_id.as_deref().unwrap_or("main"),
                e.tool_use_id,
                e.lever,
                e.used_at_line,
                e.item
            );
        }
    }
    if !any {
        let _ = writeln!(w, "  (none)");
    }
    out
}
