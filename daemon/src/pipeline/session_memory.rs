//! Session memory (SPEC §2 and §8; seed 000 "七", seed 001 "Session memory compact"): a
//! structured notes document kept up to date in the background, so that a later compaction
//! can use the notes as its summary instead of re-reading the whole history.
//!
//! Everything here is pure: the document's shape and caps, the extraction gates, the
//! embedded (model-free) extractor, and which raw tail a session-memory compact keeps.
//! The engine decides when to run an extraction, stores the document and
//! `last_summarized_message_id`, and builds the compacted history.
//!
//! # The document
//!
//! Ten sections, in the order of [`SECTIONS`]. Each section is rendered as
//!
//! ```text
//! # Heading
//! _description_
//!
//! body (only when the section has one)
//!
//! ```
//!
//! so an empty section is exactly `# Heading\n_description_\n\n` and [`template`] is the
//! ten empty sections. Every function that returns a document re-renders it in this
//! canonical shape: headings and descriptions are always ours, bodies have their lines'
//! trailing whitespace and their leading and trailing blank lines removed.
//!
//! Reading a document back (ours or a model's) is lenient, because models drift:
//! - a heading is a line of one to three `#`, a space and one of our headings (ASCII case
//!   ignored), outside a fenced code block; any other line is body text, so a `# comment`
//!   inside a shell snippet stays where it is;
//! - the first non-blank body line is dropped when it is the section's description (with
//!   or without its underscores, whitespace ignored), because we render our own;
//! - a heading that appears twice collects both bodies;
//! - text before the first heading is not part of the structure and is dropped (models
//!   sometimes open with a sentence about their answer); it still counts as content for
//!   [`is_template`].
//!
//! # Caps
//!
//! Sizes are characters / 4, like the rest of the daemon's estimates. [`enforce_caps`]
//! cuts each section body to [`MAX_SECTION_TOKENS`], then, if the whole document is still
//! over [`MAX_TOTAL_TOKENS`], cuts the largest bodies to one common size (the largest that
//! fits), so small sections are never sacrificed for a big one. Cuts fall on line
//! boundaries and leave a note saying how many lines went; the Worklog keeps its newest
//! lines, every other section its oldest (a section's first lines usually hold its
//! substance, a log's last lines its most recent steps). `enforce_caps` is idempotent.

use std::collections::{HashMap, HashSet};

use ctxd_protocol::{ContentBlock, Record, RecordKind, ToolResultContent};
use serde_json::Value;

use super::message::REMINDER_OPEN;
use super::projection::COMPACT_BOUNDARY;
use super::records::{self, file_action, result_text};
use super::{attachments, tokens};

/// The sections, in order: (heading, one-line description). The descriptions tell a model
/// (and a reader) what belongs where; they are our own words.
pub const SECTIONS: [(&str, &str); 10] = [
    (
        "Session Title",
        "A short, distinctive title for this session: a few words, no filler.",
    ),
    (
        "Current State",
        "What is being worked on right now, what was just finished, and the next step.",
    ),
    (
        "Task Specification",
        "What the user asked for: goals, requirements, constraints and the decisions they made.",
    ),
    (
        "Files and Functions",
        "The files and functions that matter: what each one holds and what was done to it.",
    ),
    (
        "Workflow",
        "The commands that were run (build, test, lint, run) and how to read their output.",
    ),
    (
        "Errors and Corrections",
        "Errors that came up and how they were fixed; approaches that failed; corrections from the user.",
    ),
    (
        "Codebase and System Documentation",
        "How the relevant parts of the system fit together: components, data flow, conventions.",
    ),
    (
        "Learnings",
        "What worked, what did not, what to avoid, and what the user prefers.",
    ),
    (
        "Key Results",
        "Answers, findings and results the user asked for, stated exactly.",
    ),
    (
        "Worklog",
        "A terse log of the steps taken, one line each, oldest first.",
    ),
];

const TITLE: usize = 0;
const STATE: usize = 1;
const TASK: usize = 2;
const FILES: usize = 3;
const WORKFLOW: usize = 4;
const ERRORS: usize = 5;
const RESULTS: usize = 8;
const WORKLOG: usize = 9;
const N: usize = SECTIONS.len();

pub const MAX_SECTION_TOKENS: u64 = 2_000;
pub const MAX_TOTAL_TOKENS: u64 = 12_000;

/// Characters per estimated token (the daemon-wide rule, see `tokens`).
const CHARS_PER_TOKEN: usize = 4;

fn chars(s: &str) -> usize {
    s.chars().count()
}

fn token_chars(tokens: u64) -> usize {
    usize::try_from(tokens)
        .unwrap_or(usize::MAX)
        .saturating_mul(CHARS_PER_TOKEN)
}

// ---------------------------------------------------------------------------------------
// Parsing and rendering.

/// A document read back into our ten sections.
#[derive(Debug, Default)]
struct Doc {
    bodies: [String; N],
    /// Non-blank text before the first heading.
    preamble: bool,
    /// Which of our headings appeared.
    present: [bool; N],
}

/// Which of our sections `line` opens, if it is a heading (see the module docs).
fn heading_index(line: &str) -> Option<usize> {
    let hashes = line.len() - line.trim_start_matches('#').len();
    if !(1..=3).contains(&hashes) {
        return None;
    }
    let rest = line[hashes..].strip_prefix(' ')?.trim();
    SECTIONS
        .iter()
        .position(|(h, _)| h.eq_ignore_ascii_case(rest))
}

fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

fn squeeze(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

fn is_description(line: &str, index: usize) -> bool {
    let t = line.trim().trim_matches(|c| c == '_' || c == '*');
    squeeze(t) == squeeze(SECTIONS[index].1)
}

fn parse(doc: &str) -> Doc {
    let mut lines: [Vec<&str>; N] = Default::default();
    let mut parsed = Doc::default();
    let mut current: Option<usize> = None;
    let mut in_fence = false;
    for line in doc.lines() {
        let line = line.trim_end();
        if !in_fence && let Some(i) = heading_index(line) {
            current = Some(i);
            parsed.present[i] = true;
            continue;
        }
        if is_fence(line) {
            in_fence = !in_fence;
        }
        match current {
            Some(i) => lines[i].push(line),
            None => parsed.preamble |= !line.trim().is_empty(),
        }
    }
    for (i, body) in lines.iter().enumerate() {
        let mut body: &[&str] = body;
        while body.first().is_some_and(|l| l.trim().is_empty()) {
            body = &body[1..];
        }
        if body.first().is_some_and(|l| is_description(l, i)) {
            body = &body[1..];
        }
        parsed.bodies[i] = trim_blank_lines(&body.join("\n"));
    }
    parsed
}

fn trim_blank_lines(body: &str) -> String {
    let lines: Vec<&str> = body.lines().map(str::trim_end).collect();
    let start = lines.iter().position(|l| !l.is_empty());
    let end = lines.iter().rposition(|l| !l.is_empty());
    match (start, end) {
        (Some(s), Some(e)) => lines[s..=e].join("\n"),
        _ => String::new(),
    }
}

fn render(bodies: &[String; N]) -> String {
    let mut out = String::new();
    for ((heading, description), body) in SECTIONS.iter().zip(bodies) {
        out.push_str("# ");
        out.push_str(heading);
        out.push_str("\n_");
        out.push_str(description);
        out.push_str("_\n");
        if !body.is_empty() {
            out.push('\n');
            out.push_str(body);
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

/// The empty document: per section `# Heading\n_description_\n\n`, in [`SECTIONS`] order.
pub fn template() -> String {
    render(&Default::default())
}

/// True when no section holds anything beyond its heading and description (whitespace
/// ignored). An empty string is a template too: it holds no notes either.
pub fn is_template(doc: &str) -> bool {
    let parsed = parse(doc);
    !parsed.preamble && parsed.bodies.iter().all(|b| b.trim().is_empty())
}

// ---------------------------------------------------------------------------------------
// Caps.

const CAP_NOTE_TAIL: &str = "cut here to keep this section within the session-memory limits]_";

fn cap_note(lines: usize) -> String {
    let s = if lines == 1 { "" } else { "s" };
    format!("_[{lines} line{s} {CAP_NOTE_TAIL}")
}

fn is_cap_note(line: &str) -> bool {
    let t = line.trim();
    t.starts_with("_[") && t.ends_with(CAP_NOTE_TAIL)
}

/// The Worklog's newest lines matter most; every other section's oldest.
fn keeps_newest(index: usize) -> bool {
    index == WORKLOG
}

/// Cuts `body` to at most `limit` characters on line boundaries, with the note made by
/// `note(lines_cut)` where the lines went (after the kept head, or before the kept tail
/// when `newest`). Earlier cap notes are dropped first, so cutting again never stacks
/// them. When not one whole line fits, the first (newest: last) line is cut inside,
/// marked with `…`; when not even the note fits, the note alone is returned (it says
/// more than an empty section).
fn cut(body: &str, limit: usize, newest: bool, note: &dyn Fn(usize) -> String) -> String {
    if chars(body) <= limit {
        return body.to_string();
    }
    let mut lines: Vec<&str> = body.lines().filter(|l| !is_cap_note(l)).collect();
    let stripped = lines.join("\n");
    if chars(&stripped) <= limit {
        return stripped;
    }
    if newest {
        lines.reverse();
    }
    let total = lines.len();
    // The most lines whose text, a newline each and the note fit.
    let mut best = 0;
    let mut used = 0;
    for (k, line) in lines.iter().enumerate() {
        used += chars(line) + 1;
        if used + chars(&note(total - k - 1)) <= limit {
            best = k + 1;
        } else {
            break;
        }
    }
    let mut kept: Vec<String> = lines[..best].iter().map(|l| (*l).to_string()).collect();
    let mut cut_lines = total - best;
    if best == 0 {
        let n = note(total);
        let room = limit.saturating_sub(chars(&n) + 2);
        if room > 0
            && let Some(first) = lines.first()
        {
            let part: String = if newest {
                let skip = chars(first).saturating_sub(room);
                first.chars().skip(skip).collect()
            } else {
                first.chars().take(room).collect()
            };
            kept.push(if newest {
                format!("…{part}")
            } else {
                format!("{part}…")
            });
        }
        cut_lines = total;
    }
    if newest {
        kept.reverse();
        kept.insert(0, note(cut_lines));
    } else {
        kept.push(note(cut_lines));
    }
    kept.join("\n")
}

/// Each section within [`MAX_SECTION_TOKENS`], the whole document within
/// [`MAX_TOTAL_TOKENS`] (see the module docs); the result is in canonical shape.
pub fn enforce_caps(doc: &str) -> String {
    let parsed = parse(doc);
    let section_limit = token_chars(MAX_SECTION_TOKENS);
    let bodies: [String; N] =
        std::array::from_fn(|i| cut(&parsed.bodies[i], section_limit, keeps_newest(i), &cap_note));
    let total_limit = token_chars(MAX_TOTAL_TOKENS);
    let rendered = render(&bodies);
    if chars(&rendered) <= total_limit {
        return rendered;
    }
    let cut_all = |limit: usize| -> [String; N] {
        std::array::from_fn(|i| cut(&bodies[i], limit, keeps_newest(i), &cap_note))
    };
    // The largest common body size that fits. A smaller limit never yields a longer
    // document, so a binary search finds it.
    let (mut lo, mut hi) = (0usize, bodies.iter().map(|b| chars(b)).max().unwrap_or(0));
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if chars(&render(&cut_all(mid))) <= total_limit {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    render(&cut_all(lo))
}

/// The document as it goes into a session-memory compact summary: each section cut to
/// `max_section_tokens`, with a note where lines were cut that points to the full notes
/// at `full_path` (the model can read them there when it needs the detail).
pub fn for_summary(doc: &str, max_section_tokens: u64, full_path: &str) -> String {
    let parsed = parse(doc);
    let limit = token_chars(max_section_tokens);
    let note = |n: usize| {
        let s = if n == 1 { "" } else { "s" };
        format!("_[{n} more line{s} of this section in the full notes: {full_path}]_")
    };
    let bodies: [String; N] =
        std::array::from_fn(|i| cut(&parsed.bodies[i], limit, keeps_newest(i), &note));
    render(&bodies)
}

/// A model's updated document, accepted against the `previous` one: `None` when it holds
/// none of our headings (not a notes document at all, so keeping it would wipe the notes);
/// otherwise sections the model left out keep their previous body (it was told to return
/// every section, so a missing one is an omission, not a deletion), then the caps.
pub fn accept_update(previous: &str, updated: &str) -> Option<String> {
    let new = parse(updated);
    if !new.present.contains(&true) {
        return None;
    }
    let old = parse(previous);
    let bodies: [String; N] = std::array::from_fn(|i| {
        if new.present[i] {
            new.bodies[i].clone()
        } else {
            old.bodies[i].clone()
        }
    });
    Some(enforce_caps(&render(&bodies)))
}

// ---------------------------------------------------------------------------------------
// Extraction gates.

pub const FIRST_EXTRACTION_TOKENS: u64 = 10_000;
pub const EXTRACTION_GROWTH_TOKENS: u64 = 5_000;
pub const EXTRACTION_MIN_TOOL_CALLS: u32 = 3;

/// Whether an extraction should run after a model response (SPEC §8). The first waits
/// until the context is worth noting down; later ones wait for real growth *and* a
/// natural pause: a few tool calls done, or a turn that ended in text.
///
/// `tokens_at_last` is the context size at the last extraction. A compaction shrinks the
/// context below it; the caller resets it then, or no extraction runs until the context
/// has grown back past it.
pub fn extraction_due(
    context_tokens: u64,
    tokens_at_last: Option<u64>,
    tool_calls_since_last: u32,
    last_turn_had_tool_call: bool,
) -> bool {
    match tokens_at_last {
        None => context_tokens >= FIRST_EXTRACTION_TOKENS,
        Some(last) => {
            context_tokens >= last.saturating_add(EXTRACTION_GROWTH_TOKENS)
                && (tool_calls_since_last >= EXTRACTION_MIN_TOOL_CALLS || !last_turn_had_tool_call)
        }
    }
}

fn main_thread(r: &Record) -> bool {
    !r.is_sidechain && !r.is_virtual
}

fn is_main_assistant(r: &Record) -> bool {
    r.kind == RecordKind::Assistant && main_thread(r)
}

/// Index of the first record after `uuid` (0 when `uuid` is None or not in `view`).
fn after(view: &[&Record], uuid: Option<&str>) -> usize {
    uuid.and_then(|u| view.iter().position(|r| r.uuid == u))
        .map_or(0, |i| i + 1)
}

/// `tool_use` blocks in main-thread assistant records after the record `since_uuid` (all
/// of them when it is None or not found).
pub fn tool_calls_since(view: &[&Record], since_uuid: Option<&str>) -> u32 {
    let n = view[after(view, since_uuid)..]
        .iter()
        .filter(|r| is_main_assistant(r))
        .flat_map(|r| &r.content)
        .filter(|b| matches!(b, ContentBlock::ToolUse { .. }))
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Whether the last main-thread assistant response (every record sharing its message id;
/// just the record when it has none) contains a `tool_use`.
pub fn last_turn_had_tool_call(view: &[&Record]) -> bool {
    let Some(last) = view.iter().rev().find(|r| is_main_assistant(r)) else {
        return false;
    };
    let has_call = |r: &Record| {
        r.content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolUse { .. }))
    };
    match &last.message_id {
        None => has_call(last),
        Some(id) => view
            .iter()
            .filter(|r| is_main_assistant(r) && r.message_id.as_ref() == Some(id))
            .any(|r| has_call(r)),
    }
}

// ---------------------------------------------------------------------------------------
// The embedded extractor.

/// Caps the embedded extractor keeps on its own, in characters, so that its sections
/// together stay under the document cap and `enforce_caps` only has to cut text a model
/// wrote. Lists drop their oldest entries first (the Task Specification keeps the first
/// request too), leaving one marker that counts them.
const TITLE_CHARS: usize = 100;
const STATE_CHARS: usize = 3_000;
const TASK_CHARS: usize = 6_000;
const TASK_ITEM_CHARS: usize = 1_500;
const FILES_CHARS: usize = 5_000;
const WORKFLOW_CHARS: usize = 2_400;
const COMMAND_CHARS: usize = 160;
const ERRORS_CHARS: usize = 4_000;
const ERROR_LINE_CHARS: usize = 200;
const RESULTS_CHARS: usize = 5_000;
const RESULT_ITEM_CHARS: usize = 800;
const WORKLOG_CHARS: usize = 5_000;
const WORKLOG_LINE_CHARS: usize = 80;

fn clip(s: &str, max: usize) -> String {
    if chars(s) <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
        out = out.trim_end().to_string();
        out.push('…');
        out
    }
}

/// Raw text placed in a body (title, current state) must not read back as one of our
/// headings: such lines get a markdown escape, which renders the same.
fn defuse(text: &str) -> String {
    text.lines()
        .map(|l| {
            if heading_index(l.trim_end()).is_some() {
                format!("\\{l}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn first_line(s: &str) -> &str {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// One list entry: `- ` then the text, further lines indented two spaces so they stay
/// inside the entry when the list is read back.
fn item(text: &str) -> String {
    let mut out = String::from("- ");
    for (k, line) in trim_blank_lines(text).lines().enumerate() {
        if k > 0 {
            out.push('\n');
            if !line.is_empty() {
                out.push_str("  ");
            }
        }
        out.push_str(line);
    }
    out
}

/// A section body read as a list: entries start at `- ` in the first column; lines before
/// the first entry (a model's prose) form one leading entry, so nothing is lost.
#[derive(Debug, Default)]
struct List {
    items: Vec<String>,
    /// Entries dropped by earlier caps, counted by the marker.
    omitted: u64,
}

const MARKER_OPEN: &str = "- (… ";
const MARKER_CLOSE: &str = " earlier entries left out)";

fn marker(n: u64) -> String {
    format!("{MARKER_OPEN}{n}{MARKER_CLOSE}")
}

impl List {
    fn parse(body: &str) -> List {
        let mut list = List::default();
        let mut current: Vec<&str> = Vec::new();
        let flush = |current: &mut Vec<&str>, items: &mut Vec<String>| {
            let text = trim_blank_lines(&current.join("\n"));
            if !text.is_empty() {
                items.push(text);
            }
            current.clear();
        };
        for line in body.lines() {
            // Cap notes carry no facts; the list keeps its own count instead.
            if is_cap_note(line) {
                continue;
            }
            if let Some(n) = line
                .strip_prefix(MARKER_OPEN)
                .and_then(|r| r.strip_suffix(MARKER_CLOSE))
                .and_then(|n| n.parse::<u64>().ok())
            {
                flush(&mut current, &mut list.items);
                list.omitted += n;
                continue;
            }
            if line.starts_with("- ") {
                flush(&mut current, &mut list.items);
            }
            current.push(line);
        }
        flush(&mut current, &mut list.items);
        list
    }

    /// The marker sits after the `keep_first` entries that are never dropped.
    fn render(&self, keep_first: usize) -> String {
        let mut lines: Vec<String> = Vec::with_capacity(self.items.len() + 1);
        for (k, it) in self.items.iter().enumerate() {
            if k == keep_first.min(self.items.len()) && self.omitted > 0 {
                lines.push(marker(self.omitted));
            }
            lines.push(it.clone());
        }
        if self.omitted > 0 && keep_first >= self.items.len() {
            lines.push(marker(self.omitted));
        }
        lines.join("\n")
    }

    fn push_unique(&mut self, entry: String) {
        if !self.items.contains(&entry) {
            self.items.push(entry);
        }
    }

    /// Drops the oldest entries after the first `keep_first` until the body fits.
    fn cap(&mut self, max_chars: usize, keep_first: usize) {
        while chars(&self.render(keep_first)) > max_chars && self.items.len() > keep_first {
            self.items.remove(keep_first);
            self.omitted += 1;
        }
    }
}

#[derive(Debug, Default)]
struct Response {
    has_call: bool,
    last_text: Option<String>,
}

/// What the new records say, gathered in one pass.
#[derive(Debug, Default)]
struct Facts {
    /// What the user typed, in order (not tool results, reminders or interruptions).
    users: Vec<String>,
    last_assistant_text: Option<String>,
    /// The final text of each response that called no tool, in order.
    conclusions: Vec<String>,
    /// (path, actions), in first-seen order.
    files: Vec<(String, Vec<String>)>,
    commands: Vec<String>,
    errors: Vec<String>,
}

fn push_unique(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

fn user_text(r: &Record) -> Option<String> {
    if r.is_meta || r.is_compact_summary {
        return None;
    }
    let text = r
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } if !text.trim_start().starts_with(REMINDER_OPEN) => {
                Some(text.trim())
            }
            _ => None,
        })
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    (!text.is_empty() && !records::is_harness_text(&text)).then_some(text)
}

fn command_of(input: &Value) -> Option<&str> {
    input
        .get("command")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
}

fn path_of(input: &Value) -> Option<&str> {
    records::path_of(input).filter(|p| !p.trim().is_empty())
}

/// A command as the Workflow shows it: its first line, clipped, marked when more follows.
fn command_line(cmd: &str) -> String {
    let first = first_line(cmd);
    let mut line = clip(first, COMMAND_CHARS);
    if cmd.trim().lines().count() > 1 && !line.ends_with('…') {
        line.push_str(" …");
    }
    code(&line)
}

fn code(s: &str) -> String {
    if s.contains('`') {
        s.to_string()
    } else {
        format!("`{s}`")
    }
}

fn error_line(call: Option<&(String, Value)>, content: &ToolResultContent) -> String {
    let text = result_text(content);
    let message = first_line(&text)
        .replace("<tool_use_error>", "")
        .replace("</tool_use_error>", "");
    let message = clip(message.trim(), ERROR_LINE_CHARS);
    let message = if message.is_empty() {
        "(no message)".to_string()
    } else {
        message
    };
    match call {
        None => format!("a tool: {message}"),
        Some((name, input)) => {
            let what = command_of(input)
                .map(command_line)
                .or_else(|| path_of(input).map(code));
            match what {
                Some(w) => format!("{name} {w}: {message}"),
                None => format!("{name}: {message}"),
            }
        }
    }
}

impl Facts {
    fn gather(records: &[&Record]) -> Facts {
        let mut f = Facts::default();
        let mut calls: HashMap<&str, (String, Value)> = HashMap::new();
        let mut answered: HashSet<&str> = HashSet::new();
        // (path, action) of each file call, by tool_use id, in call order.
        let mut file_calls: Vec<(&str, String, &'static str)> = Vec::new();
        let mut responses: HashMap<&str, Response> = HashMap::new();
        let mut response_order: Vec<&str> = Vec::new();

        for r in records.iter().copied().filter(|r| main_thread(r)) {
            match r.kind {
                RecordKind::User => {
                    for block in &r.content {
                        let ContentBlock::ToolResult {
                            tool_use_id,
                            content,
                            is_error,
                            ..
                        } = block
                        else {
                            continue;
                        };
                        let call = calls.get(tool_use_id.as_str());
                        if let Some((id, path, action)) = file_calls
                            .iter()
                            .find(|(id, _, _)| *id == tool_use_id.as_str())
                        {
                            answered.insert(*id);
                            let label = if *is_error {
                                format!("{action} (failed)")
                            } else {
                                (*action).to_string()
                            };
                            f.file_action(path, label);
                        }
                        if *is_error {
                            push_unique(&mut f.errors, error_line(call, content));
                        }
                    }
                    if let Some(text) = user_text(r) {
                        f.users.push(text);
                    }
                }
                RecordKind::Assistant => {
                    let key = r.message_id.as_deref().unwrap_or(r.uuid.as_str());
                    if !responses.contains_key(key) {
                        response_order.push(key);
                    }
                    let response = responses.entry(key).or_default();
                    for block in &r.content {
                        match block {
                            ContentBlock::Text { text, .. } if !text.trim().is_empty() => {
                                let text = trim_blank_lines(text);
                                response.last_text = Some(text.clone());
                                f.last_assistant_text = Some(text);
                            }
                            ContentBlock::ToolUse {
                                id, name, input, ..
                            } => {
                                response.has_call = true;
                                calls.insert(id.as_str(), (name.clone(), input.clone()));
                                if matches!(name.as_str(), "Bash" | "PowerShell")
                                    && let Some(cmd) = command_of(input)
                                {
                                    push_unique(&mut f.commands, command_line(cmd));
                                }
                                if let Some(action) = file_action(name)
                                    && let Some(path) = path_of(input)
                                {
                                    f.file_entry(path);
                                    file_calls.push((id.as_str(), path.to_string(), action));
                                }
                            }
                            _ => {}
                        }
                    }
                }
                RecordKind::System | RecordKind::Attachment => {}
            }
        }
        // A call whose result never came still says what was attempted.
        for (id, path, action) in &file_calls {
            if !answered.contains(id) {
                f.file_action(path, (*action).to_string());
            }
        }
        for key in response_order {
            if let Some(Response {
                has_call: false,
                last_text: Some(text),
            }) = responses.remove(key)
            {
                push_unique(&mut f.conclusions, text);
            }
        }
        f
    }

    fn file_entry(&mut self, path: &str) -> usize {
        match self.files.iter().position(|(p, _)| p == path) {
            Some(i) => i,
            None => {
                self.files.push((path.to_string(), Vec::new()));
                self.files.len() - 1
            }
        }
    }

    fn file_action(&mut self, path: &str, action: String) {
        let i = self.file_entry(path);
        push_unique(&mut self.files[i].1, action);
    }
}

/// `- `path`: action, action` entries: the path and actions of one, if it is one.
fn parse_file_item(entry: &str) -> Option<(&str, Vec<String>)> {
    if entry.contains('\n') {
        return None;
    }
    let rest = entry.strip_prefix("- `")?;
    let (path, actions) = match rest.split_once("`: ") {
        Some((p, a)) => (p, a),
        None => (rest.strip_suffix('`')?, ""),
    };
    let actions = actions
        .split(", ")
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .collect();
    Some((path, actions))
}

fn file_item(path: &str, actions: &[String]) -> String {
    if actions.is_empty() {
        format!("- `{path}`")
    } else {
        format!("- `{path}`: {}", actions.join(", "))
    }
}

/// The embedded extractor: fills the notes from `previous` (the current document) plus the
/// records of `view` after `last_summarized_uuid` (all of them when it is None or not
/// found), without a model, deterministically. Section by section:
///
/// - **Session Title**: the first line of the first thing the user typed (clipped); once
///   set it is kept.
/// - **Current State**: the last assistant text among the new records, replacing the old
///   one; kept when there is none.
/// - **Task Specification**: each user message as an entry, appended unless already there;
///   capped keeping the first request and the newest.
/// - **Files and Functions**: `path`: actions for each path named by a Read, Edit,
///   MultiEdit, Write, NotebookEdit, Glob or Grep call (read, edited, written, searched;
///   "(failed)" when the result was an error); an existing entry gains the new actions.
/// - **Workflow**: the first line of each Bash (or PowerShell) `command`, appended unless
///   already there.
/// - **Errors and Corrections**: each error result as `tool what: first line`, appended
///   unless already there.
/// - **Codebase and System Documentation**, **Learnings**: kept as they are (they need
///   judgement a model-free extractor does not have).
/// - **Key Results**: the final text of each response that called no tool (the answer
///   that ended a turn), appended unless already there, clipped.
/// - **Worklog**: one `- <first 80 characters of the message>` line per new user message.
///
/// Lists drop their oldest entries (behind a counting marker) to stay within their share
/// of the caps; then [`enforce_caps`]. Records are the main thread's user and assistant
/// records; what the user "typed" excludes meta records, compact summaries,
/// `<system-reminder>` blocks, tool results and interruption markers.
pub fn extract_embedded(
    previous: &str,
    view: &[&Record],
    last_summarized_uuid: Option<&str>,
) -> String {
    let mut bodies = parse(previous).bodies;
    let facts = Facts::gather(&view[after(view, last_summarized_uuid)..]);

    if bodies[TITLE].trim().is_empty()
        && let Some(first) = facts.users.first()
    {
        bodies[TITLE] = defuse(&clip(first_line(first), TITLE_CHARS));
    }

    if let Some(text) = &facts.last_assistant_text {
        bodies[STATE] = defuse(&clip(text, STATE_CHARS));
    }

    let mut task = List::parse(&bodies[TASK]);
    for text in &facts.users {
        task.push_unique(item(&clip(text, TASK_ITEM_CHARS)));
    }
    task.cap(TASK_CHARS, 1);
    bodies[TASK] = task.render(1);

    let mut files = List::parse(&bodies[FILES]);
    for (path, actions) in &facts.files {
        let existing = files
            .items
            .iter()
            .position(|e| parse_file_item(e).is_some_and(|(p, _)| p == path));
        match existing {
            Some(i) => {
                let mut merged = parse_file_item(&files.items[i])
                    .map(|(_, a)| a)
                    .unwrap_or_default();
                for a in actions {
                    push_unique(&mut merged, a.clone());
                }
                files.items[i] = file_item(path, &merged);
            }
            None => files.items.push(file_item(path, actions)),
        }
    }
    files.cap(FILES_CHARS, 0);
    bodies[FILES] = files.render(0);

    for (index, entries, max, clip_to) in [
        (WORKFLOW, &facts.commands, WORKFLOW_CHARS, usize::MAX),
        (ERRORS, &facts.errors, ERRORS_CHARS, usize::MAX),
        (
            RESULTS,
            &facts.conclusions,
            RESULTS_CHARS,
            RESULT_ITEM_CHARS,
        ),
    ] {
        let mut list = List::parse(&bodies[index]);
        for e in entries {
            list.push_unique(item(&clip(e, clip_to)));
        }
        list.cap(max, 0);
        bodies[index] = list.render(0);
    }

    let mut log = List::parse(&bodies[WORKLOG]);
    for text in &facts.users {
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        log.items.push(item(&clip(&flat, WORKLOG_LINE_CHARS)));
    }
    log.cap(WORKLOG_CHARS, 0);
    bodies[WORKLOG] = log.render(0);

    let bodies: [String; N] = std::array::from_fn(|i| trim_blank_lines(&bodies[i]));
    enforce_caps(&render(&bodies))
}

/// The uuid the next extraction marks as summarised: the last record of `view` at which
/// the history can be cut, or None when there is none (an empty view included). A cut
/// after record `i` is safe when
/// - no `tool_use` at or before `i` has its result after `i` (the pair would be split
///   between the notes and the kept tail);
/// - no `tool_use` of the last assistant response is still unanswered at or before `i`
///   (its result may yet arrive); unanswered calls of earlier responses were abandoned and
///   never block;
/// - the record after `i` does not continue the response `i` belongs to.
pub fn safe_last_summarized(view: &[&Record]) -> Option<String> {
    let mut result_at: HashMap<&str, usize> = HashMap::new();
    for (i, r) in view.iter().enumerate() {
        for b in &r.content {
            if let ContentBlock::ToolResult { tool_use_id, .. } = b {
                result_at.entry(tool_use_id.as_str()).or_insert(i);
            }
        }
    }
    let last_assistant = view.iter().rposition(|r| is_main_assistant(r));
    let in_last_response = |i: usize| match last_assistant {
        None => false,
        Some(l) => {
            i == l
                || (view[i].kind == RecordKind::Assistant
                    && view[l].message_id.is_some()
                    && view[i].message_id == view[l].message_id)
        }
    };
    // Cuts at or after this index are blocked by a call that may still be answered.
    let mut pending_from = usize::MAX;
    // The latest index a call seen so far is answered at.
    let mut open_until = 0usize;
    let mut best: Option<usize> = None;
    for (i, r) in view.iter().enumerate() {
        for b in &r.content {
            if let ContentBlock::ToolUse { id, .. } = b {
                match result_at.get(id.as_str()) {
                    Some(&at) if at > i => open_until = open_until.max(at),
                    Some(_) => {}
                    None if in_last_response(i) => pending_from = pending_from.min(i),
                    None => {}
                }
            }
        }
        let continues = view.get(i + 1).is_some_and(|next| {
            r.message_id.is_some()
                && next.kind == RecordKind::Assistant
                && next.message_id == r.message_id
        });
        if open_until <= i && i < pending_from && !continues {
            best = Some(i);
        }
    }
    best.map(|i| view[i].uuid.clone())
}

// ---------------------------------------------------------------------------------------
// Session-memory compact: the kept tail.

/// How much of the recent history a session-memory compact keeps verbatim (unscaled
/// tokens of `tokens::record_tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepLimits {
    pub min_tokens: u64,
    pub min_text_messages: usize,
    pub max_tokens: u64,
}

impl KeepLimits {
    /// SPEC §8's numbers, made for a 200k window; smaller windows scale them
    /// (`autocompact::RoomBudget`).
    pub const REFERENCE: KeepLimits = KeepLimits {
        min_tokens: 10_000,
        min_text_messages: 5,
        max_tokens: 40_000,
    };
}

fn is_text_message(r: &Record) -> bool {
    matches!(r.kind, RecordKind::User | RecordKind::Assistant)
        && r.content
            .iter()
            .any(|b| matches!(b, ContentBlock::Text { text, .. } if !text.trim().is_empty()))
}

/// Index into `view` (starting at the last compact boundary) of the first record a
/// session-memory compact keeps verbatim (SPEC §8 step 5), or None when
/// `last_summarized_uuid` is not in `view`.
///
/// The tail starts right after the last summarised record and is widened backwards, one
/// record at a time, until it holds at least `limits.min_tokens` tokens and
/// `limits.min_text_messages` text messages (user or assistant records with a non-empty
/// text block), or at least `limits.max_tokens` tokens (so the text-message rule holds
/// only while it fits): recent work stays word for word even when the notes were written
/// just now. A tail already past the maximum is not
/// shortened (the notes do not cover it). Then the cut moves back until no kept
/// `tool_result` lacks its `tool_use` and no response is split (same message id), since
/// the API rejects the first and the second would show half an answer. Never below the
/// floor: index 0, or 1 when `view[0]` is the compact boundary itself. Tokens are the
/// unscaled estimate of `tokens::record_tokens`.
pub fn keep_start(
    view: &[&Record],
    last_summarized_uuid: &str,
    limits: KeepLimits,
) -> Option<usize> {
    let last = view.iter().position(|r| r.uuid == last_summarized_uuid)?;
    let floor = usize::from(view.first().is_some_and(|r| {
        r.kind == RecordKind::System && r.subtype.as_deref() == Some(COMPACT_BOUNDARY)
    }));
    let mut start = (last + 1).max(floor);
    let size = |r: &Record| tokens::record_tokens(r, attachments::render);
    let mut total: u64 = view[start..].iter().map(|r| size(r)).sum();
    let mut texts = view[start..].iter().filter(|r| is_text_message(r)).count();
    let enough = |total: u64, texts: usize| {
        total >= limits.max_tokens
            || (total >= limits.min_tokens && texts >= limits.min_text_messages)
    };
    while !enough(total, texts) && start > floor {
        start -= 1;
        total += size(view[start]);
        texts += usize::from(is_text_message(view[start]));
    }
    Some(preserve_pairs(view, start, floor))
}

/// Moves `start` back (not below `floor`) until the tail splits no tool_use/tool_result
/// pair and no response. Repeated, because taking in a response can take in results whose
/// calls lie further back.
fn preserve_pairs(view: &[&Record], mut start: usize, floor: usize) -> usize {
    let mut use_at: HashMap<&str, usize> = HashMap::new();
    let mut response_start: HashMap<&str, usize> = HashMap::new();
    for (i, r) in view.iter().enumerate() {
        if r.kind != RecordKind::Assistant {
            continue;
        }
        if let Some(id) = &r.message_id {
            response_start.entry(id.as_str()).or_insert(i);
        }
        for b in &r.content {
            if let ContentBlock::ToolUse { id, .. } = b {
                use_at.entry(id.as_str()).or_insert(i);
            }
        }
    }
    loop {
        let mut s = start;
        for r in &view[start..] {
            if r.kind == RecordKind::Assistant
                && let Some(&first) = r.message_id.as_deref().and_then(|m| response_start.get(m))
            {
                s = s.min(first);
            }
            for b in &r.content {
                if let ContentBlock::ToolResult { tool_use_id, .. } = b
                    && let Some(&at) = use_at.get(tool_use_id.as_str())
                {
                    s = s.min(at);
                }
            }
        }
        let s = s.max(floor);
        if s >= start {
            return start;
        }
        start = s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(uuid: &str, v: Value) -> Record {
        let mut v = v;
        v["uuid"] = json!(uuid);
        v["seq"] = json!(1);
        v["timestamp"] = json!("2026-11-29T10:00:00Z");
        serde_json::from_value(v).unwrap()
    }

    fn user(uuid: &str, text: &str) -> Record {
        rec(
            uuid,
            json!({"type": "user", "content": [{"type": "text", "text": text}]}),
        )
    }

    fn assistant(uuid: &str, text: &str) -> Record {
        rec(
            uuid,
            json!({"type": "assistant", "content": [{"type": "text", "text": text}]}),
        )
    }

    fn call(uuid: &str, id: &str, name: &str, input: Value) -> Record {
        rec(
            uuid,
            json!({"type": "assistant", "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}),
        )
    }

    fn result(uuid: &str, id: &str, text: &str, is_error: bool) -> Record {
        rec(
            uuid,
            json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": text, "is_error": is_error}]}),
        )
    }

    fn with_message_id(mut r: Record, id: &str) -> Record {
        r.message_id = Some(id.into());
        r
    }

    fn refs(records: &[Record]) -> Vec<&Record> {
        records.iter().collect()
    }

    fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
        let start = doc
            .find(&format!("# {heading}\n"))
            .unwrap_or_else(|| panic!("no {heading}"));
        let rest = &doc[start + heading.len() + 3..];
        let end = rest.find("\n# ").map_or(rest.len(), |e| e + 1);
        &rest[..end]
    }

    /// `doc` with `body` under the section `heading` (after its description).
    fn with(doc: &str, heading: &str, body: &str) -> String {
        let (h, d) = SECTIONS.iter().find(|(h, _)| *h == heading).unwrap();
        let open = format!("# {h}\n_{d}_\n");
        assert!(doc.contains(&open));
        doc.replace(&open, &format!("{open}\n{body}\n"))
    }

    // -- document ------------------------------------------------------------------------

    #[test]
    fn template_shape() {
        let t = template();
        assert!(t.starts_with(
            "# Session Title\n_A short, distinctive title for this session: a few words, no filler._\n\n# Current State\n"
        ));
        assert!(t.ends_with(
            "# Worklog\n_A terse log of the steps taken, one line each, oldest first._\n\n"
        ));
        let headings: Vec<&str> = t.lines().filter(|l| l.starts_with("# ")).collect();
        assert_eq!(headings.len(), 10);
        for ((h, d), line) in SECTIONS.iter().zip(&headings) {
            assert_eq!(*line, format!("# {h}"));
            assert!(t.contains(&format!("# {h}\n_{d}_\n\n")));
        }
        assert_eq!(enforce_caps(&t), t, "the template is canonical");
    }

    #[test]
    fn template_detection_ignores_whitespace_and_descriptions() {
        assert!(is_template(&template()));
        assert!(is_template(""));
        assert!(is_template("  \n"));
        // Descriptions without underscores, odd spacing, missing sections, CRLF.
        let loose = "#  Session Title \r\n\r\nA short, distinctive title for this session:  a few words, no filler.\r\n## Worklog\n\n";
        assert!(is_template(loose));
        let filled = with(&template(), "Worklog", "- read the parser");
        assert!(!is_template(&filled));
        assert!(!is_template("some notes without headings"));
        // A heading-looking line inside a code block is body text.
        let fenced = with(
            &template(),
            "Workflow",
            "```sh\n# Learnings\ncargo test\n```",
        );
        assert!(!is_template(&fenced));
        let out = enforce_caps(&fenced);
        assert!(
            out.contains("_\n\n```sh\n# Learnings\ncargo test\n```\n\n# Errors and Corrections\n")
        );
        assert_eq!(enforce_caps(&out), out);
    }

    #[test]
    fn canonical_rendering_drops_preamble_and_restores_descriptions() {
        let doc = "Here are the notes:\n\n# current state\n\nParser fixed.   \n\n\n# Session Title\n_old description_\nParser work\n";
        let out = enforce_caps(doc);
        assert!(!out.contains("Here are the notes"));
        assert!(out.contains("# Current State\n_What is being worked on right now, what was just finished, and the next step._\n\nParser fixed.\n\n# Task"));
        // An unknown description is body text: only ours is recognised.
        assert!(section(&out, "Session Title").contains("_old description_\nParser work"));
        assert_eq!(enforce_caps(&out), out);
    }

    fn numbered(prefix: &str, n: usize, width: usize) -> String {
        (0..n)
            .map(|i| format!("{prefix} {i:04} {}", "x".repeat(width)))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_section_over_its_cap_is_cut_on_lines_with_a_note() {
        // 300 lines of 40 characters: 12,300 characters, over the 8,000 of one section.
        let body = numbered("- entry", 300, 26);
        let doc = with(&template(), "Key Results", &body);
        let out = enforce_caps(&doc);
        let kept = section(&out, "Key Results");
        assert!(kept.contains("- entry 0000 "), "the head stays");
        assert!(!kept.contains("- entry 0299 "));
        let body_text = kept.split_once("_\n\n").unwrap().1.trim_end();
        assert!(body_text.chars().count() <= 8_000);
        let last = body_text.lines().last().unwrap();
        assert!(is_cap_note(last), "{last}");
        assert!(last.starts_with("_[10"), "{last}");
        assert!(
            body_text
                .lines()
                .all(|l| l.starts_with("- entry") || is_cap_note(l))
        );
        for (h, _) in SECTIONS {
            assert!(out.contains(&format!("# {h}\n")));
        }
        assert_eq!(enforce_caps(&out), out, "idempotent");
    }

    #[test]
    fn the_worklog_keeps_its_newest_lines() {
        let body = numbered("- step", 300, 30);
        let doc = with(&template(), "Worklog", &body);
        let out = enforce_caps(&doc);
        let kept = section(&out, "Worklog");
        let body_text = kept.split_once("_\n\n").unwrap().1;
        assert!(is_cap_note(body_text.lines().next().unwrap()));
        assert!(kept.contains("- step 0299 "));
        assert!(!kept.contains("- step 0000 "));
    }

    #[test]
    fn one_long_line_is_cut_inside() {
        let doc = with(&template(), "Current State", &"y".repeat(20_000));
        let out = enforce_caps(&doc);
        let body = section(&out, "Current State")
            .split_once("_\n\n")
            .unwrap()
            .1
            .trim_end();
        assert!(body.chars().count() <= 8_000);
        assert!(body.starts_with("yyyy"));
        assert!(body.lines().next().unwrap().ends_with('…'));
        assert!(is_cap_note(body.lines().last().unwrap()));
    }

    #[test]
    fn the_total_cap_cuts_the_largest_sections_to_one_size() {
        // Seven sections of 7,994 characters (under their own cap) and one short one:
        // ~57,000 characters in all, over the 48,000 of the document.
        let mut doc = template();
        for (h, _) in &SECTIONS[1..8] {
            doc = with(&doc, h, &numbered("- e", 195, 31));
        }
        doc = with(&doc, "Worklog", "- short");
        let out = enforce_caps(&doc);
        assert!(out.chars().count() <= 48_000, "{}", out.chars().count());
        assert!(out.chars().count() > 46_000, "cuts no more than needed");
        assert!(
            section(&out, "Worklog").contains("- short\n"),
            "small sections untouched"
        );
        let sizes: Vec<usize> = SECTIONS[1..8]
            .iter()
            .map(|(h, _)| section(&out, h).chars().count())
            .collect();
        let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        assert!(max - min < 120, "evenly cut: {sizes:?}");
        assert_eq!(enforce_caps(&out), out, "idempotent");
    }

    #[test]
    fn for_summary_points_to_the_full_notes() {
        let body = numbered("- fact", 100, 30);
        let doc = enforce_caps(&with(&template(), "Files and Functions", &body));
        let out = for_summary(&doc, 200, "/home/u/.ctxd/sessions/s1/session-memory.md");
        let kept = section(&out, "Files and Functions");
        let body_text = kept.split_once("_\n\n").unwrap().1.trim_end();
        assert!(body_text.chars().count() <= 800);
        assert!(body_text.ends_with(
            "more lines of this section in the full notes: /home/u/.ctxd/sessions/s1/session-memory.md]_"
        ));
        assert!(kept.contains("- fact 0000 "));
        // Sections within the limit are untouched, and the headings all stay.
        assert_eq!(for_summary(&template(), 200, "/x"), template());
        assert_eq!(out.lines().filter(|l| l.starts_with("# ")).count(), 10);
    }

    #[test]
    fn accepting_a_model_update() {
        let previous = with(
            &with(&template(), "Learnings", "- prefer small commits"),
            "Worklog",
            "- began",
        );
        let updated = "# Session Title\nParser fix\n\n# Worklog\n- began\n- fixed the parser\n";
        let out = accept_update(&previous, updated).unwrap();
        assert!(section(&out, "Session Title").contains("Parser fix"));
        assert!(
            section(&out, "Learnings").contains("- prefer small commits"),
            "missing section kept"
        );
        assert!(section(&out, "Worklog").contains("- fixed the parser"));
        assert_eq!(
            accept_update(&previous, "I could not update the notes."),
            None
        );
    }

    // -- gates ---------------------------------------------------------------------------

    #[test]
    fn extraction_gate_table() {
        // (context, tokens at last, tool calls since, last turn called a tool) → due
        let table = [
            (9_999, None, 10, false, false),
            (10_000, None, 0, true, true),
            (14_999, Some(10_000), 5, false, false),
            (15_000, Some(10_000), 2, true, false),
            (15_000, Some(10_000), 3, true, true),
            (15_000, Some(10_000), 0, false, true),
            (40_000, Some(60_000), 9, false, false),
        ];
        for (ctx, last, calls, tool_turn, due) in table {
            assert_eq!(
                extraction_due(ctx, last, calls, tool_turn),
                due,
                "{ctx} {last:?} {calls} {tool_turn}"
            );
        }
    }

    #[test]
    fn counting_tool_calls() {
        let mut side = call("s", "t9", "Read", json!({}));
        side.is_sidechain = true;
        let records = vec![
            user("u1", "go"),
            rec(
                "a1",
                json!({"type": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": {}},
                    {"type": "tool_use", "id": "t2", "name": "Read", "input": {}}
                ]}),
            ),
            result("r1", "t1", "ok", false),
            result("r2", "t2", "ok", false),
            side,
            call("a2", "t3", "Bash", json!({"command": "ls"})),
            result("r3", "t3", "ok", false),
        ];
        let v = refs(&records);
        assert_eq!(
            tool_calls_since(&v, None),
            3,
            "sidechain calls do not count"
        );
        assert_eq!(tool_calls_since(&v, Some("unknown")), 3);
        assert_eq!(tool_calls_since(&v, Some("a1")), 1);
        assert_eq!(tool_calls_since(&v, Some("r3")), 0);
        assert_eq!(tool_calls_since(&[], None), 0);
    }

    #[test]
    fn last_turn_tool_call_looks_at_the_whole_response() {
        let records = vec![
            user("u1", "go"),
            with_message_id(call("a1", "t1", "Read", json!({})), "m1"),
            result("r1", "t1", "ok", false),
            with_message_id(assistant("a2", "done"), "m1"),
        ];
        assert!(last_turn_had_tool_call(&refs(&records)));
        let records = vec![
            user("u1", "go"),
            call("a1", "t1", "Read", json!({})),
            result("r1", "t1", "ok", false),
            assistant("a2", "done"),
        ];
        assert!(!last_turn_had_tool_call(&refs(&records)));
        assert!(!last_turn_had_tool_call(&[]));
    }

    // -- embedded extraction ---------------------------------------------------------------

    fn session() -> Vec<Record> {
        vec![
            user(
                "u1",
                "Fix the flaky test in the parser crate.\nIt fails about one run in ten on CI.",
            ),
            rec(
                "m1",
                json!({"type": "user", "is_meta": true, "content": [{"type": "text", "text": "<system-reminder>\nclaudeMd\n</system-reminder>"}]}),
            ),
            with_message_id(assistant("a1", "I'll look at the test first."), "msg_1"),
            with_message_id(
                call(
                    "a2",
                    "t1",
                    "Read",
                    json!({"file_path": "/repo/parser/tests/roundtrip.rs"}),
                ),
                "msg_1",
            ),
            result("r1", "t1", "fn roundtrip() { ... }", false),
            with_message_id(
                call(
                    "a3",
                    "t2",
                    "Grep",
                    json!({"pattern": "HashMap", "path": "/repo/parser/src"}),
                ),
                "msg_2",
            ),
            result(
                "r2",
                "t2",
                "/repo/parser/src/table.rs:12: use std::collections::HashMap;",
                false,
            ),
            with_message_id(
                call(
                    "a4",
                    "t3",
                    "Edit",
                    json!({"file_path": "/repo/parser/src/table.rs", "old_string": "HashMap", "new_string": "BTreeMap"}),
                ),
                "msg_3",
            ),
            result(
                "r3",
                "t3",
                "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>",
                true,
            ),
            with_message_id(
                call(
                    "a5",
                    "t4",
                    "Read",
                    json!({"file_path": "/repo/parser/src/table.rs"}),
                ),
                "msg_4",
            ),
            result("r4", "t4", "use std::collections::HashMap;", false),
            with_message_id(
                call(
                    "a6",
                    "t5",
                    "Edit",
                    json!({"file_path": "/repo/parser/src/table.rs", "old_string": "HashMap", "new_string": "BTreeMap"}),
                ),
                "msg_5",
            ),
            result("r5", "t5", "ok", false),
            with_message_id(
                call(
                    "a7",
                    "t6",
                    "Bash",
                    json!({"command": "cargo test -p parser"}),
                ),
                "msg_6",
            ),
            result(
                "r6",
                "t6",
                "error[E0412]: cannot find type `BTreeMap` in this scope\n --> src/table.rs:40",
                true,
            ),
            with_message_id(
                call(
                    "a8",
                    "t7",
                    "Edit",
                    json!({"file_path": "/repo/parser/src/table.rs", "old_string": "use std::collections::HashMap;", "new_string": "use std::collections::BTreeMap;"}),
                ),
                "msg_7",
            ),
            result("r7", "t7", "ok", false),
            with_message_id(
                call(
                    "a9",
                    "t8",
                    "Bash",
                    json!({"command": "cargo test -p parser"}),
                ),
                "msg_8",
            ),
            result("r8", "t8", "test result: ok. 42 passed; 0 failed", false),
            rec(
                "x1",
                json!({"type": "attachment", "attachment": {"type": "date_change", "date": "2026-11-30"}}),
            ),
            with_message_id(
                assistant(
                    "a10",
                    "The test was flaky because `table.rs` iterated a `HashMap`, whose order changes between runs.\nI switched it to a `BTreeMap`; all 42 parser tests pass.",
                ),
                "msg_9",
            ),
            user("u2", "[Request interrupted by user]"),
            user("u3", "Great. Also add a changelog entry for it."),
            with_message_id(
                call(
                    "a11",
                    "t9",
                    "Write",
                    json!({"file_path": "/repo/CHANGELOG.md", "content": "- parser: deterministic table order"}),
                ),
                "msg_10",
            ),
            result("r9", "t9", "ok", false),
            with_message_id(
                assistant("a12", "Added the entry under Unreleased in CHANGELOG.md."),
                "msg_11",
            ),
        ]
    }

    #[test]
    fn embedded_extraction_of_a_realistic_session() {
        let records = session();
        let v = refs(&records);
        let doc = extract_embedded(&template(), &v, None);
        insta::assert_snapshot!("embedded_realistic_session", doc);

        // Nothing new since the last summarised record: nothing changes.
        let last = safe_last_summarized(&v).unwrap();
        assert_eq!(last, "a12");
        assert_eq!(extract_embedded(&doc, &v, Some(&last)), doc);
        // And the same input always gives the same bytes.
        assert_eq!(extract_embedded(&template(), &v, None), doc);
    }

    #[test]
    fn embedded_extraction_is_incremental() {
        let records = session();
        let v = refs(&records);
        let cut = v.iter().position(|r| r.uuid == "u2").unwrap();
        let first = extract_embedded("", &v[..cut], None);
        let last = safe_last_summarized(&v[..cut]).unwrap();
        assert_eq!(last, "a10");
        let second = extract_embedded(&first, &v, Some(&last));
        // Two extractions in turn give what one over everything gives (the snapshot).
        assert_eq!(second, extract_embedded(&template(), &v, None));

        // A title, once set, is kept; model-written sections are kept too.
        let edited = second
            .replacen("Fix the flaky test in the parser crate.", "Parser flakiness", 1)
            .replace(
                "# Learnings\n_What worked, what did not, what to avoid, and what the user prefers._\n",
                "# Learnings\n_What worked, what did not, what to avoid, and what the user prefers._\n\n- Read before Edit.\n",
            );
        let more = [user("u4", "Now open a PR.")];
        let mut all: Vec<&Record> = v.clone();
        all.extend(more.iter());
        let third = extract_embedded(&edited, &all, Some("a12"));
        assert!(section(&third, "Session Title").contains("Parser flakiness"));
        assert!(section(&third, "Learnings").contains("- Read before Edit."));
        assert!(section(&third, "Worklog").ends_with("- Now open a PR.\n\n"));
        assert!(section(&third, "Task Specification").contains("- Now open a PR."));
    }

    #[test]
    fn embedded_lists_drop_their_oldest_entries_behind_a_marker() {
        let records: Vec<Record> = (0..120)
            .map(|i| {
                user(
                    &format!("u{i}"),
                    &format!("request number {i} {}", "z".repeat(60)),
                )
            })
            .collect();
        let v = refs(&records);
        let doc = extract_embedded("", &v, None);
        let task = section(&doc, "Task Specification");
        assert!(
            task.contains("- request number 0 "),
            "the first request stays"
        );
        assert!(task.contains("- request number 119 "));
        assert!(task.contains(" earlier entries left out)"));
        assert!(chars(task) <= TASK_CHARS + 200);
        let log = section(&doc, "Worklog");
        assert!(!log.contains("- request number 0 "));
        assert!(log.contains("- request number 119 "));
        assert!(chars(&doc) <= 48_000);
        // The marker's count carries over.
        let more = [user("u120", "one more")];
        let mut all = v.clone();
        all.extend(more.iter());
        let next = extract_embedded(&doc, &all, Some("u119"));
        let count = |d: &str| -> u64 {
            let t = section(d, "Worklog");
            let at = t.find(MARKER_OPEN).unwrap() + MARKER_OPEN.len();
            t[at..].split(' ').next().unwrap().parse().unwrap()
        };
        assert!(count(&next) > count(&doc));
        assert_eq!(extract_embedded(&next, &all, Some("u120")), next);
    }

    #[test]
    fn raw_text_that_looks_like_a_heading_is_escaped() {
        let records = [
            user("u1", "# Learnings"),
            assistant("a1", "## Worklog\ndone"),
        ];
        let doc = extract_embedded("", &refs(&records), None);
        assert!(section(&doc, "Session Title").contains("\\# Learnings"));
        assert!(section(&doc, "Current State").contains("\\## Worklog\ndone"));
        assert_eq!(doc.lines().filter(|l| l.starts_with('#')).count(), 10);
    }

    // -- safe cut ----------------------------------------------------------------------------

    #[test]
    fn safe_last_summarized_never_splits_a_pair_or_a_response() {
        assert_eq!(safe_last_summarized(&[]), None);
        // A call still waiting for its result.
        let records = vec![
            user("u1", "go"),
            assistant("a0", "ok"),
            call("a1", "t1", "Read", json!({})),
        ];
        assert_eq!(safe_last_summarized(&refs(&records)).as_deref(), Some("a0"));
        // Parallel calls answered one by one: not between them.
        let records = vec![
            user("u1", "go"),
            rec(
                "a1",
                json!({"type": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": {}},
                    {"type": "tool_use", "id": "t2", "name": "Read", "input": {}}
                ]}),
            ),
            result("r1", "t1", "ok", false),
            result("r2", "t2", "ok", false),
            user("u2", "next"),
        ];
        let v = refs(&records);
        assert_eq!(safe_last_summarized(&v).as_deref(), Some("u2"));
        assert_eq!(safe_last_summarized(&v[..4]).as_deref(), Some("r2"));
        assert_eq!(safe_last_summarized(&v[..3]).as_deref(), Some("u1"));
        // A response split over records is not cut inside.
        let records = vec![
            user("u1", "go"),
            with_message_id(assistant("a1", "thinking aloud"), "m1"),
            with_message_id(assistant("a2", "and the answer"), "m1"),
        ];
        let v = refs(&records);
        assert_eq!(safe_last_summarized(&v).as_deref(), Some("a2"));
        assert_eq!(safe_last_summarized(&v[..2]).as_deref(), Some("a1"));
        // An abandoned call (interrupted, never answered) does not block for ever.
        let records = vec![
            user("u1", "go"),
            call("a1", "t1", "Bash", json!({"command": "sleep 100"})),
            user("u2", "[Request interrupted by user]"),
            assistant("a2", "stopped"),
        ];
        assert_eq!(safe_last_summarized(&refs(&records)).as_deref(), Some("a2"));
    }

    // -- keep_start ---------------------------------------------------------------------------

    /// `tokens` of text (4 characters each).
    fn sized_user(uuid: &str, tokens: usize) -> Record {
        user(uuid, &"w".repeat(tokens * 4))
    }

    fn sized_result(uuid: &str, id: &str, tokens: usize) -> Record {
        result(uuid, id, &"r".repeat(tokens * 4), false)
    }

    fn boundary() -> Record {
        rec(
            "b",
            json!({"type": "system", "subtype": "compact_boundary"}),
        )
    }

    #[test]
    fn keep_start_needs_both_minimums() {
        // Six text messages of 3,000 tokens.
        let mut records = vec![boundary()];
        for i in 0..6 {
            records.push(sized_user(&format!("u{i}"), 3_000));
        }
        let v = refs(&records);
        // After u5 nothing is left: widen until 10,000 tokens (4 messages), then on to 5
        // text messages.
        assert_eq!(keep_start(&v, "u5", KeepLimits::REFERENCE), Some(2));
        // Already enough after u0: no widening.
        assert_eq!(keep_start(&v, "u0", KeepLimits::REFERENCE), Some(2));
        assert_eq!(keep_start(&v, "unknown", KeepLimits::REFERENCE), None);
    }

    #[test]
    fn keep_start_wants_text_messages_not_tool_results() {
        // Big tool results reach the token minimum quickly; text messages are needed too.
        let mut records = vec![boundary()];
        for i in 0..5 {
            records.push(user(&format!("u{i}"), "short request"));
            records.push(call(&format!("a{i}"), &format!("t{i}"), "Read", json!({})));
            records.push(sized_result(&format!("r{i}"), &format!("t{i}"), 6_000));
        }
        let v = refs(&records);
        // The tail after r4 is empty. Tokens suffice after two results, but five text
        // messages need u0; 30,000 tokens stay under the maximum.
        assert_eq!(keep_start(&v, "r4", KeepLimits::REFERENCE), Some(1));
    }

    #[test]
    fn keep_start_stops_at_the_maximum() {
        let mut records = vec![boundary()];
        for i in 0..10 {
            records.push(call(&format!("a{i}"), &format!("t{i}"), "Bash", json!({})));
            records.push(sized_result(&format!("r{i}"), &format!("t{i}"), 15_000));
        }
        let v = refs(&records);
        // No text messages at all: widening stops once 40,000 tokens are kept (three
        // results), then the cut moves back to the first result's call.
        let start = keep_start(&v, "r9", KeepLimits::REFERENCE).unwrap();
        assert_eq!(v[start].uuid, "a7");
        let kept: u64 = v[start..]
            .iter()
            .map(|r| tokens::record_tokens(r, attachments::render))
            .sum();
        assert!((40_000..55_000).contains(&kept), "{kept}");
    }

    #[test]
    fn keep_start_scales_with_its_limits() {
        let mut records = vec![boundary()];
        for i in 0..10 {
            records.push(sized_user(&format!("u{i}"), 1_000));
        }
        let v = refs(&records);
        // The reference limits want 10,000 tokens: all ten messages.
        assert_eq!(keep_start(&v, "u9", KeepLimits::REFERENCE), Some(1));
        // A small window's limits: the maximum (2,500) is reached before five text
        // messages, and it wins.
        let small = KeepLimits {
            min_tokens: 1_000,
            min_text_messages: 5,
            max_tokens: 2_500,
        };
        assert_eq!(keep_start(&v, "u9", small), Some(8));
    }

    #[test]
    fn keep_start_takes_in_the_call_of_a_kept_result() {
        let records = vec![
            boundary(),
            user("u0", "hello"),
            call("a1", "t1", "Read", json!({})),
            sized_result("r1", "t1", 12_000),
            user("u1", "one"),
            user("u2", "two"),
            user("u3", "three"),
            user("u4", "four"),
        ];
        let v = refs(&records);
        // Widening stops at r1 (12,000 tokens, 5 text messages? no: 4) — it goes on to
        // a1 then u0 for the fifth text message.
        assert_eq!(keep_start(&v, "u4", KeepLimits::REFERENCE), Some(1));
        // With the text minimum met by the tail, the cut would land on r1: it moves back
        // to include a1.
        let mut records = records;
        records.push(user("u5", "five"));
        let v = refs(&records);
        assert_eq!(keep_start(&v, "u5", KeepLimits::REFERENCE), Some(2));
    }

    #[test]
    fn keep_start_never_splits_a_response() {
        let records = vec![
            boundary(),
            user("u0", "go"),
            with_message_id(assistant("a1", &"t".repeat(4 * 4_000)), "m1"),
            with_message_id(call("a2", "t1", "Read", json!({})), "m1"),
            sized_result("r1", "t1", 10),
            with_message_id(assistant("a3", &"t".repeat(4 * 11_000)), "m2"),
            user("u1", "a"),
            user("u2", "b"),
            user("u3", "c"),
            user("u4", "d"),
        ];
        let v = refs(&records);
        // Widening from the end: u4..a3 hold 11,004 tokens and 5 text messages, so the
        // cut lands on a3, whole response m2. Starting after r1 gives the same.
        assert_eq!(keep_start(&v, "r1", KeepLimits::REFERENCE), Some(5));
        // Starting after a2 keeps r1 whose call a2 is in m1: the whole response comes.
        assert_eq!(keep_start(&v, "a2", KeepLimits::REFERENCE), Some(2));
    }

    #[test]
    fn keep_start_never_goes_past_the_boundary() {
        let records = vec![boundary(), user("u0", "a"), user("u1", "b")];
        let v = refs(&records);
        assert_eq!(
            keep_start(&v, "u1", KeepLimits::REFERENCE),
            Some(1),
            "the boundary is not kept"
        );
        assert_eq!(keep_start(&v, "b", KeepLimits::REFERENCE), Some(1));
        // Without a boundary record, index 0 is the floor.
        assert_eq!(keep_start(&v[1..], "u1", KeepLimits::REFERENCE), Some(0));
    }
}
