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

/// One setting replayed over a directory: its name and each transcript's totals, in
/// the order of `files`.
pub struct Variant {
    pub name: String,
    pub totals: Vec<ReplayTotals>,
}

/// How much more than `claude_code` lean may cost on one session before it is listed
/// as a loss.
const LOSS_TOLERANCE: f64 = 0.01;

/// `ctx replay DIR --compare`: per transcript `claude_code` against `lean`, the
/// sessions where lean costs more than `claude_code` by over 1 %, what each lever
/// saved (lean without it, less lean), and the frontier: pooled cost against premature
/// clears for every setting tried. `variants[0]` is `claude_code`, `variants[1]` lean
/// as asked; the rest are lean with one lever flipped, named `lean without LEVER` (on
/// as asked) or `lean with LEVER` (off as asked).
pub fn frontier(files: &[String], variants: &[Variant]) -> String {
    let mut out = String::new();
    let w = &mut out;
    let (Some(base), Some(lean)) = (variants.first(), variants.get(1)) else {
        return out;
    };
    let pooled: Vec<ReplayTotals> = variants
        .iter()
        .map(|v| ReplayTotals::pooled(&v.totals))
        .collect();
    let _ = writeln!(
        w,
        "{} transcripts, {} model calls, recorded ${:.4}",
        files.len(),
        pooled[0].calls,
        pooled[0].recorded_cost
    );
    let _ = writeln!(
        w,
        "{:<48} {:>6} {:>11} {:>11} {:>9} {:>11}",
        "transcript", "calls", "claude_code", "lean", "lean/cc", "premature"
    );
    let mut losses = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let (Some(b), Some(l)) = (base.totals.get(i), lean.totals.get(i)) else {
            continue;
        };
        let vs = if b.simulated_cost == 0.0 {
            1.0
        } else {
            l.simulated_cost / b.simulated_cost
        };
        if vs > 1.0 + LOSS_TOLERANCE {
            losses.push((f.as_str(), vs));
        }
        let name: String = f.chars().take(48).collect();
        let _ = writeln!(
            w,
            "{name:<48} {:>6} {:>10.3}x {:>10.3}x {:>9.3} {:>5}/{}",
            b.calls, b.cost_ratio, l.cost_ratio, vs, l.premature, l.cleared
        );
    }
    let _ = writeln!(
        w,
        "lean costs more than claude_code by over {}:",
        pct(LOSS_TOLERANCE)
    );
    if losses.is_empty() {
        let _ = writeln!(w, "  (no session)");
    }
    for (f, vs) in &losses {
        let _ = writeln!(w, "  {f} ({vs:.3}x)");
    }
    let _ = writeln!(
        w,
        "savings by lever (lean without it less lean, or lean less lean with it; of claude_code's ${:.4}):",
        pooled[0].simulated_cost
    );
    let _ = writeln!(
        w,
        "  {:<32} ${:>9.4} ({})",
        "all of lean",
        pooled[0].simulated_cost - pooled[1].simulated_cost,
        pct(share(
            pooled[0].simulated_cost - pooled[1].simulated_cost,
            pooled[0].simulated_cost
        ))
    );
    for (v, p) in variants.iter().zip(&pooled).skip(2) {
        // A lever that is on saved what lean without it costs more; one that is off
        // would save what lean with it costs less (negative: it would cost more).
        let (lever, saved) = match (
            v.name.strip_prefix("lean without "),
            v.name.strip_prefix("lean with "),
        ) {
            (Some(l), _) => (l.to_string(), p.simulated_cost - pooled[1].simulated_cost),
            (None, Some(l)) => (
                format!("{l} (off; if on)"),
                pooled[1].simulated_cost - p.simulated_cost,
            ),
            (None, None) => continue,
        };
        let _ = writeln!(
            w,
            "  {lever:<32} ${saved:>9.4} ({})",
            pct(share(saved, pooled[0].simulated_cost))
        );
    }
    let _ = writeln!(
        w,
        "frontier (pooled): cost against recorded and claude_code, premature clears:"
    );
    for (v, p) in variants.iter().zip(&pooled) {
        let _ = writeln!(
            w,
            "  {:<40} {:.3}x recorded  {:.3}x claude_code  {:>4} cleared  {:>3} premature ({})  compactions {}/{}",
            v.name,
            p.cost_ratio,
            share(p.simulated_cost, pooled[0].simulated_cost),
            p.cleared,
            p.premature,
            pct(p.premature_rate),
            p.compactions,
            p.source_compactions
        );
    }
    out
}

fn share(a: f64, b: f64) -> f64 {
    if b == 0.0 { 0.0 } else { a / b }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(sim: f64, rec: f64, cleared: u64, premature: u64) -> ReplayTotals {
        let mut t = ReplayTotals {
            sessions: 1,
            calls: 100,
            tokens_sent: 1_000_000,
            predicted_cache_read_share: 0.95,
            simulated_cost: sim,
            recorded_cost: rec,
            compactions: 1,
            source_compactions: 1,
            cleared,
            premature,
            ..ReplayTotals::default()
        };
        t.cost_ratio = sim / rec;
        t.premature_rate = if cleared == 0 {
            0.0
        } else {
            premature as f64 / cleared as f64
        };
        t
    }

    #[test]
    fn the_frontier_report_names_losses_levers_and_every_setting() {
        let files = vec!["a.jsonl".to_string(), "b.jsonl".to_string()];
        let variant = |name: &str, a: ReplayTotals, b: ReplayTotals| Variant {
            name: name.into(),
            totals: vec![a, b],
        };
        let variants = vec![
            variant(
                "claude_code",
                totals(9.0, 10.0, 0, 0),
                totals(4.0, 4.0, 0, 0),
            ),
            variant("lean", totals(7.5, 10.0, 10, 0), totals(4.1, 4.0, 2, 1)),
            variant(
                "lean without choose_ttl",
                totals(8.8, 10.0, 10, 0),
                totals(4.0, 4.0, 2, 1),
            ),
            variant(
                "lean with priced_clears",
                totals(7.6, 10.0, 4, 0),
                totals(4.1, 4.0, 1, 1),
            ),
        ];
        insta::assert_snapshot!(frontier(&files, &variants));
    }
}
