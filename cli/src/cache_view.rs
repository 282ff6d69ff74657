//! Text views of prompt-cache care: `ctx context` (the window by category, as a grid of
//! one-percent cells) and `ctx cache` (every call's cache reads next to ctxd's
//! prediction, with the breaks and their causes).

use std::fmt::Write;

use ctxd_protocol::{CacheReportResponse, UsageResponse};

use crate::output::count;

/// Cells of the grid: one per percent of the window.
const COLUMNS: usize = 10;
const ROWS: usize = 10;

/// How each category is drawn: plain-text letter, ANSI colour, label.
fn style(name: &str) -> (char, &'static str, &'static str) {
    match name {
        "system" => ('S', "38;5;246", "System prompt"),
        "tools" => ('T', "38;5;135", "Tools"),
        "instruction_files" => ('I', "38;5;214", "Instruction files"),
        "messages" => ('M', "38;5;39", "Messages"),
        "attachments" => ('A', "38;5;80", "Attachments"),
        "tool_results" => ('R', "38;5;70", "Tool results"),
        "free_space" => ('.', "38;5;240", "Free space"),
        "autocompact_buffer" => ('~', "38;5;167", "Autocompact buffer"),
        _ => ('?', "0", "Other"),
    }
}

pub fn tokens_short(n: u64) -> String {
    if n >= 1000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        n.to_string()
    }
}

/// Cells per category, summing to exactly `COLUMNS * ROWS` (largest remainders).
fn cells(u: &UsageResponse) -> Vec<usize> {
    let total = (COLUMNS * ROWS) as f64;
    let window = u.context_window.max(1) as f64;
    let exact: Vec<f64> = u
        .categories
        .iter()
        .map(|c| c.tokens as f64 * total / window)
        .collect();
    let mut out: Vec<usize> = exact
        .iter()
        .map(|e| ctxd_pipeline::saturate::usize_from_f64(e.floor()))
        .collect();
    let mut left = (COLUMNS * ROWS).saturating_sub(out.iter().sum());
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_by(|a, b| {
        (exact[*b] - exact[*b].floor())
            .total_cmp(&(exact[*a] - exact[*a].floor()))
            .then(a.cmp(b))
    });
    for k in order {
        if left == 0 {
            break;
        }
        out[k] += 1;
        left -= 1;
    }
    out
}

/// The `/context` picture. `color` draws ANSI-coloured squares; without it every cell is
/// its category's letter, so the text reads the same in a log or a test.
pub fn render_context(u: &UsageResponse, color: bool) -> String {
    let mut grid: Vec<(char, &str)> = Vec::with_capacity(COLUMNS * ROWS);
    for (c, n) in u.categories.iter().zip(cells(u)) {
        let (letter, ansi, _) = style(&c.name);
        grid.extend(std::iter::repeat_n((letter, ansi), n));
    }
    let used_pct = if u.context_window == 0 {
        0.0
    } else {
        u.used_tokens as f64 * 100.0 / u.context_window as f64
    };
    let mut legend = vec![
        format!(
            "{} · {}/{} tokens ({:.0}%)",
            u.model,
            tokens_short(u.used_tokens),
            tokens_short(u.context_window),
            used_pct
        ),
        String::new(),
    ];
    for c in &u.categories {
        let (letter, ansi, label) = style(&c.name);
        let mark = if color {
            format!("\x1b[{ansi}m■\x1b[0m")
        } else {
            letter.to_string()
        };
        legend.push(format!(
            "{mark} {label}: {} tokens ({:.1}%)",
            tokens_short(c.tokens),
            c.percent
        ));
    }
    legend.push(String::new());
    legend.push(format!(
        "{}, {}; autocompact at {} tokens",
        crate::output::count(u.messages, "message"),
        crate::output::count(u.attachments, "attachment"),
        tokens_short(u.autocompact_threshold)
    ));
    let mut out = String::from("Context usage\n");
    for row in 0..ROWS.max(legend.len()) {
        let mut line = String::new();
        if row < ROWS {
            for col in 0..COLUMNS {
                let (letter, ansi) = grid[row * COLUMNS + col];
                if color {
                    let sym = match letter {
                        '.' => '□',
                        '~' => '▨',
                        _ => '■',
                    };
                    let _ = write!(line, "\x1b[{ansi}m{sym}\x1b[0m ");
                } else {
                    line.push(letter);
                    line.push(' ');
                }
            }
        } else {
            line.push_str(&" ".repeat(COLUMNS * 2));
        }
        if let Some(l) = legend.get(row) {
            line.push_str("  ");
            line.push_str(l);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `ctx cache`: a table of calls, then every break with its cause.
pub fn render_cache(r: &CacheReportResponse) -> String {
    let mut out = format!(
        "{:>6}  {:<20}  {:>10}  {:>10}  {:>9}  {:>8}  {}\n{:>6}  {:<20}  {:>10}  {:>10}  {:>9}  {:>8}\n",
        "seq",
        "time (UTC)",
        "predicted",
        "read",
        "written",
        "input",
        "note",
        "",
        "",
        "(tokens)",
        "(tokens)",
        "(tokens)",
        "(tokens)"
    );
    for c in &r.calls {
        let mut note = match (&c.cache_break, &c.expected_drop) {
            (Some(b), _) => format!("BREAK: {}", b.cause),
            (None, Some(e)) => format!("expected drop ({e})"),
            (None, None) => String::new(),
        };
        if let Some(cleared) = c.server_cleared_tokens {
            note = join_note(note, format!("provider cleared {cleared} tokens"));
        }
        if let Some(reason) = &c.provider_miss_reason {
            let said = match reason.get("type").and_then(|t| t.as_str()) {
                Some(kind) => format!("provider: {kind}"),
                None => "provider: no miss".to_string(),
            };
            let verdict = match c.agrees {
                Some(true) => ", agrees",
                Some(false) => ", DISAGREES",
                None => "",
            };
            note = join_note(note, format!("{said}{verdict}"));
        }
        let _ = writeln!(
            out,
            "{:>6}  {:<20}  {:>10}  {:>10}  {:>9}  {:>8}  {}",
            c.seq,
            c.timestamp.get(..19).unwrap_or(&c.timestamp),
            c.predicted_read_tokens
                .map_or_else(|| "-".to_string(), |p| p.to_string()),
            c.cache_read_tokens,
            c.cache_creation_tokens,
            c.input_tokens,
            note
        );
    }
    let _ = writeln!(
        out,
        "\n{}, {}",
        count(ctxd_pipeline::saturate::u64_of(r.calls.len()), "call"),
        count(r.breaks, "cache break")
    );
    if r.cost_usd > 0.0 {
        let _ = writeln!(
            out,
            "cost ${:.4} at the model catalogue's list prices",
            r.cost_usd
        );
    }
    if r.diagnosed > 0 {
        let _ = writeln!(
            out,
            "the provider diagnosed {}; ctxd's reading agreed on {} ({:.0}%)",
            count(r.diagnosed, "call"),
            r.agreed,
            100.0 * r.agreed as f64 / r.diagnosed as f64
        );
    }
    for c in r.calls.iter().filter(|c| c.cache_break.is_some()) {
        let Some(b) = &c.cache_break else { continue };
        let _ = write!(
            out,
            "  seq {}: {} → {} read tokens: {}",
            c.seq, b.previous_read_tokens, b.read_tokens, b.cause
        );
        if let Some(g) = b.gap_secs {
            let _ = write!(out, " ({g} s after the previous call)");
        }
        out.push('\n');
        for ch in &b.changes {
            let _ = writeln!(out, "      {ch}");
        }
    }
    out
}

fn join_note(a: String, b: String) -> String {
    if a.is_empty() { b } else { format!("{a}; {b}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxd_protocol::{CacheBreak, CacheCall, UsageCategory};

    fn usage() -> UsageResponse {
        let cat = |name: &str, tokens: u64| UsageCategory {
            name: name.into(),
            tokens,
            percent: (tokens as f64 * 1000.0 / 200_000.0).round() / 10.0,
        };
        UsageResponse {
            model: "claude-sonnet-4-5".into(),
            context_window: 200_000,
            used_tokens: 52_000,
            autocompact_threshold: 167_000,
            categories: vec![
                cat("system", 4_000),
                cat("tools", 12_000),
                cat("instruction_files", 3_000),
                cat("messages", 9_000),
                cat("attachments", 1_000),
                cat("tool_results", 24_000),
                cat("free_space", 114_000),
                cat("autocompact_buffer", 33_000),
            ],
            attachments: 4,
            messages: 31,
        }
    }

    #[test]
    fn plain_grid_has_a_cell_per_percent_and_a_legend() {
        let text = render_context(&usage(), false);
        let grid: String = text
            .lines()
            .skip(1)
            .take(ROWS)
            .map(|l| l.get(..COLUMNS * 2).unwrap_or(l).replace(' ', ""))
            .collect();
        assert_eq!(grid.chars().count(), 100);
        assert_eq!(grid.matches('R').count(), 12);
        assert_eq!(grid.matches('.').count(), 57);
        assert!(text.contains("claude-sonnet-4-5 · 52.0k/200.0k tokens (26%)"));
        assert!(text.contains("R Tool results: 24.0k tokens (12.0%)"));
        assert!(!text.contains('\x1b'));
        insta::assert_snapshot!(text);
        let colored = render_context(&usage(), true);
        assert!(colored.contains("\x1b[38;5;70m■"));
    }

    #[test]
    fn cache_table_lists_breaks_with_causes() {
        let r = CacheReportResponse {
            calls: vec![CacheCall {
                uuid: "u".into(),
                seq: 12,
                timestamp: "2026-11-29T10:13:00Z".into(),
                input_tokens: 3,
                cache_creation_tokens: 48_000,
                cache_read_tokens: 0,
                output_tokens: 20,
                predicted_read_tokens: Some(47_000),
                expected_drop: None,
                cache_break: Some(CacheBreak {
                    cause: "ttl_expiry".into(),
                    changes: vec![],
                    gap_secs: Some(720),
                    previous_read_tokens: 50_000,
                    read_tokens: 0,
                }),
                server_cleared_tokens: Some(9_000),
                provider_miss_reason: Some(
                    serde_json::json!({"type": "messages_changed", "cache_missed_input_tokens": 47_000}),
                ),
                agrees: Some(true),
                model: None,
                cost_usd: None,
            }],
            breaks: 1,
            diagnosed: 1,
            agreed: 1,
            cost_usd: 0.4215,
        };
        let t = render_cache(&r);
        assert!(
            t.contains("cost $0.4215 at the model catalogue's list prices"),
            "{t}"
        );
        assert!(
            t.contains("provider cleared 9000 tokens; provider: messages_changed, agrees"),
            "{t}"
        );
        assert!(
            t.contains("the provider diagnosed 1 call; ctxd's reading agreed on 1 (100%)"),
            "{t}"
        );
        assert!(t.contains("BREAK: ttl_expiry"));
        assert!(t.contains("seq 12: 50000 → 0 read tokens: ttl_expiry (720 s after"));
        assert!(t.contains("1 call, 1 cache break\n"), "{t}");
    }
}
