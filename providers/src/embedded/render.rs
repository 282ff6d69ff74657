//! Rendering the facts under a token budget: the nine sections, with detail given up
//! in a fixed order until the text fits.

use std::fmt::Write as _;

use ctxd_protocol::ContentBlock;

use super::facts::{Facts, Step, UserItem};
use super::{INDENT, LEFT_OUT, NONE};
use crate::prompt::SECTION_TITLES;
use ctxd_pipeline::text::{clip, cut_middle};
use ctxd_pipeline::tokens::{block_tokens, scaled};

/// How much of each section is shown. `full` shows everything; `fit` tightens one knob
/// at a time.
#[derive(Debug, Clone)]
struct Knobs {
    reasoning_last: usize,
    /// 2: everything, 1: tools only, 0: left out.
    concepts: u8,
    current_steps: usize,
    current_chars: usize,
    excerpts: bool,
    errors_last: usize,
    files_max: usize,
    pending_max: usize,
    primary_chars: usize,
    next_chars: usize,
    /// How many user items are shown (the rest are elided from the middle).
    users_keep: usize,
    /// Last resort: a kept user message longer than this is cut in the middle.
    users_cut: Option<usize>,
}

impl Knobs {
    fn full(f: &Facts) -> Knobs {
        Knobs {
            reasoning_last: 10,
            concepts: 2,
            current_steps: 12,
            current_chars: 1_000,
            excerpts: true,
            errors_last: usize::MAX,
            files_max: usize::MAX,
            pending_max: usize::MAX,
            primary_chars: 2_000,
            next_chars: 1_000,
            users_keep: f.users.len(),
            users_cut: None,
        }
    }
}

type Tighten = fn(&mut Knobs);

/// The order in which detail is given up before user messages are elided.
const BEFORE_USERS: &[Tighten] = &[
    |k| k.reasoning_last = 5,
    |k| k.reasoning_last = 2,
    |k| k.reasoning_last = 0,
    |k| k.concepts = 1,
    |k| k.concepts = 0,
    |k| (k.current_steps, k.current_chars) = (6, 400),
    |k| (k.current_steps, k.current_chars) = (3, 200),
    |k| (k.current_steps, k.current_chars) = (1, 160),
    |k| k.excerpts = false,
    |k| k.errors_last = 5,
    |k| k.files_max = 20,
    |k| k.pending_max = 5,
    |k| k.primary_chars = 500,
    |k| k.next_chars = 300,
];

/// After user messages are down to what fits (at least the first and the last).
const AFTER_USERS: &[Tighten] = &[
    |k| k.errors_last = 1,
    |k| k.files_max = 5,
    |k| k.pending_max = 1,
    |k| k.primary_chars = 200,
    |k| k.next_chars = 100,
    |k| (k.current_steps, k.current_chars) = (0, 0),
    |k| k.errors_last = 0,
    |k| k.files_max = 0,
    |k| k.pending_max = 0,
];

pub(super) fn tokens(text: &str) -> u64 {
    scaled(block_tokens(&ContentBlock::text(text)))
}

pub(super) fn fit(f: &Facts, budget: u64) -> String {
    let mut k = Knobs::full(f);
    let fits = |k: &Knobs| {
        let text = render(f, k);
        (tokens(&text) <= budget, text)
    };
    let (ok, text) = fits(&k);
    if ok {
        return text;
    }
    for tighten in BEFORE_USERS {
        tighten(&mut k);
        let (ok, text) = fits(&k);
        if ok {
            return text;
        }
    }
    // The most user items that fit, by bisection (fewer items never render longer).
    let fit_users = |k: &mut Knobs| -> Option<String> {
        let floor = f.users.len().min(2);
        let (mut lo, mut hi) = (floor, f.users.len());
        k.users_keep = lo;
        let (ok, text) = fits(k);
        if !ok {
            return None;
        }
        let mut best = text;
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            k.users_keep = mid;
            match fits(k) {
                (true, text) => {
                    lo = mid;
                    best = text;
                }
                (false, _) => hi = mid - 1,
            }
        }
        k.users_keep = lo;
        Some(best)
    };
    if let Some(text) = fit_users(&mut k) {
        return text;
    }
    for tighten in AFTER_USERS {
        tighten(&mut k);
        if let Some(text) = fit_users(&mut k) {
            return text;
        }
    }
    // Even the first and the last message do not fit: keep both, but cut very long ones.
    let chars = usize::try_from(budget.saturating_mul(3) / 2).unwrap_or(usize::MAX);
    k.users_keep = f.users.len().min(2);
    k.users_cut = Some(chars.max(2_000));
    render(f, &k)
}

fn render(f: &Facts, k: &Knobs) -> String {
    let sections = [
        request(f, k),
        concepts(f, k),
        files(f, k),
        errors(f, k),
        problem_solving(f, k),
        user_messages(f, k),
        pending(f, k),
        current_work(f, k),
        next_step(f, k),
    ];
    let mut out = String::new();
    for (i, (title, body)) in SECTION_TITLES.iter().zip(sections).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "{}. {title}:", i + 1);
        out.push_str(&body);
    }
    out.truncate(out.trim_end().len());
    out
}

/// 1. The request.
fn request(f: &Facts, k: &Knobs) -> String {
    let mut s = String::new();
    match &f.primary {
        Some(p) => line(&mut s, &clip(p, k.primary_chars)),
        None => line(&mut s, NONE),
    }
    if f.head_truncated {
        line(
            &mut s,
            "(The earliest part of the conversation was not available to this summary.)",
        );
    }
    if let Some(focus) = &f.focus {
        line(
            &mut s,
            &format!("The user asked this summary to focus on: {focus}"),
        );
    }
    s
}

/// 2. Concepts.
fn concepts(f: &Facts, k: &Knobs) -> String {
    let mut s = String::new();
    if k.concepts == 0 {
        line(&mut s, LEFT_OUT);
    } else if f.tools.is_empty() && f.languages.is_empty() {
        line(&mut s, NONE);
    } else {
        if !f.tools.is_empty() {
            let tools: Vec<String> = f.tools.iter().map(|(n, c)| format!("{n} ({c})")).collect();
            item(&mut s, &format!("Tools used: {}", capped(&tools, 30, ", ")));
        }
        if k.concepts > 1 {
            if !f.languages.is_empty() {
                item(
                    &mut s,
                    &format!("Languages and file types: {}", f.languages.join(", ")),
                );
            }
            if !f.commands.is_empty() {
                item(
                    &mut s,
                    &format!("Commands run: {}", capped(&f.commands, 30, ", ")),
                );
            }
            if !f.lookups.is_empty() {
                item(
                    &mut s,
                    &format!("Looked up: {}", capped(&f.lookups, 10, "; ")),
                );
            }
        }
    }
    s
}

/// 3. Files.
fn files(f: &Facts, k: &Knobs) -> String {
    let mut s = String::new();
    if f.files.is_empty() {
        line(&mut s, NONE);
    }
    for file in f.files.iter().take(k.files_max) {
        let actions = if file.actions.is_empty() {
            String::new()
        } else {
            format!(" ({})", file.actions.join(", "))
        };
        item(&mut s, &format!("{}{actions}", file.path));
        if k.excerpts {
            // The latest two changes say most about the file's current state.
            let skip = file.excerpts.len().saturating_sub(2);
            for (tool, code) in file.excerpts.iter().skip(skip) {
                let _ = writeln!(s, "{INDENT}  new code ({tool}):");
                for code_line in clip(code, 240).lines().take(6) {
                    let sep = if code_line.is_empty() { "" } else { " " };
                    let _ = writeln!(s, "{INDENT}  >{sep}{code_line}");
                }
            }
        }
    }
    if f.files.len() > k.files_max {
        line(
            &mut s,
            &format!("({} more files not listed)", f.files.len() - k.files_max),
        );
    }
    s
}

/// 4. Errors.
fn errors(f: &Facts, k: &Knobs) -> String {
    let mut s = String::new();
    if f.errors.is_empty() {
        line(&mut s, NONE);
    }
    let skip = f.errors.len().saturating_sub(k.errors_last);
    if skip > 0 {
        line(&mut s, &format!("({skip} earlier errors not listed)"));
    }
    for e in f.errors.iter().skip(skip) {
        item(&mut s, &format!("{}: {}", e.tool, e.message));
        if let Some(then) = &e.then {
            let _ = writeln!(s, "{INDENT}  then: {then}");
        }
    }
    s
}

/// 5. Problem solving.
fn problem_solving(f: &Facts, k: &Knobs) -> String {
    let mut s = String::new();
    if k.reasoning_last == 0 {
        line(&mut s, LEFT_OUT);
    } else if f.reasoning.is_empty() {
        line(&mut s, NONE);
    } else {
        let skip = f.reasoning.len().saturating_sub(k.reasoning_last);
        for r in f.reasoning.iter().skip(skip) {
            item(&mut s, r);
        }
    }
    s
}

/// 6. User messages.
fn user_messages(f: &Facts, k: &Knobs) -> String {
    let mut s = String::new();
    if f.users.is_empty() {
        line(&mut s, NONE);
    }
    let n = f.users.len();
    let keep = k.users_keep.min(n);
    let head = if keep == n { n } else { (keep / 4).max(1) };
    let tail = keep - head.min(keep);
    let omitted: u64 = f.users[head..n - tail].iter().map(UserItem::count).sum();
    for (i, u) in f.users.iter().enumerate() {
        if i == head && omitted > 0 {
            line(&mut s, &omitted_line(omitted));
        }
        if i >= head && i < n - tail {
            continue;
        }
        match u {
            UserItem::Message(m) => match k.users_cut {
                Some(max) => item(&mut s, &cut_middle(m, max)),
                None => item(&mut s, m),
            },
            UserItem::Omitted(c) => line(&mut s, &omitted_line(*c)),
        }
    }
    s
}

/// 7. Pending tasks.
fn pending(f: &Facts, k: &Knobs) -> String {
    let mut s = String::new();
    if f.pending.is_empty() {
        line(&mut s, NONE);
    }
    for p in f.pending.iter().take(k.pending_max) {
        item(&mut s, p);
    }
    if f.pending.len() > k.pending_max {
        line(
            &mut s,
            &format!(
                "({} more tasks not listed)",
                f.pending.len() - k.pending_max
            ),
        );
    }
    s
}

/// 8. Current work.
fn current_work(f: &Facts, k: &Knobs) -> String {
    let mut s = String::new();
    if f.current.is_empty() {
        line(&mut s, NONE);
    } else if k.current_steps == 0 {
        line(&mut s, LEFT_OUT);
    } else {
        let skip = f.current.len().saturating_sub(k.current_steps);
        if skip > 0 {
            line(
                &mut s,
                &format!("({skip} earlier steps of this turn not shown)"),
            );
        }
        for step in f.current.iter().skip(skip) {
            match step {
                Step::Text(t) => line(&mut s, &clip(t, k.current_chars)),
                Step::Call(c) => item(&mut s, &format!("called {}", clip(c, k.current_chars))),
            }
        }
    }
    s
}

/// 9. Next step.
fn next_step(f: &Facts, k: &Knobs) -> String {
    let mut s = String::new();
    match &f.next {
        Some(next) => line(&mut s, &clip(next, k.next_chars)),
        None => line(&mut s, "None."),
    }

    s
}

fn line(s: &mut String, text: &str) {
    s.push_str(INDENT);
    s.push_str(text);
    s.push('\n');
}

/// A list item. Multi-line text keeps its own lines untouched, so user messages appear
/// verbatim.
fn item(s: &mut String, text: &str) {
    s.push_str(INDENT);
    s.push_str("- ");
    s.push_str(text);
    s.push('\n');
}

/// The first `max` entries joined, and how many more there are.
fn capped(list: &[String], max: usize, sep: &str) -> String {
    let mut out = list.iter().take(max).cloned().collect::<Vec<_>>().join(sep);
    if list.len() > max {
        let _ = write!(out, " and {} more", list.len() - max);
    }
    out
}

pub(super) fn omitted_line(n: u64) -> String {
    let noun = if n == 1 { "message" } else { "messages" };
    format!("(… {n} user {noun} omitted …)")
}
