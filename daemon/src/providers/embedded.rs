//! The embedded summariser: offline and deterministic. It fills the nine sections from the
//! transcript itself (extractive, no model): user messages verbatim, files touched,
//! errors, the latest work. Same records → same bytes.
//!
//! Budget: the text must fit `max_summary_tokens` under the daemon's estimate (characters
//! / 4, ×4/3). Detail is given up in a fixed order: problem solving, technical concepts,
//! current work, code excerpts, then caps on errors, files, tasks and the request; user
//! messages are elided from the middle only after that, and the first and the last one
//! always stay.
//!
//! A projection that starts after an earlier compaction holds that summary as its first
//! user record. Its request, user messages, files and tasks are carried into the new
//! summary (parsed back by section title), so they survive any number of compactions.

use std::collections::{HashMap, HashSet};

use ctxd_protocol::{ContentBlock, Record, RecordKind};
use serde_json::Value;

use super::SummaryInput;
use super::prompt::SECTION_TITLES;
use crate::pipeline::message::REMINDER_OPEN;
use crate::pipeline::records::{INTERRUPTED, file_action, is_harness_text, path_of, result_text};
use crate::pipeline::tokens::{block_tokens, scaled};

const INDENT: &str = "   ";
const NONE: &str = "None recorded.";
const LEFT_OUT: &str = "(left out for length)";

pub(crate) fn summarise(input: &SummaryInput<'_>) -> String {
    let facts = Facts::gather(input.records, input.head_truncated);
    fit(&facts, input.max_summary_tokens)
}

// ---------------------------------------------------------------------------------------
// Facts: one pass over the records.

#[derive(Debug, Default)]
struct FileEntry {
    path: String,
    actions: Vec<String>,
    /// (tool, new code), oldest first.
    excerpts: Vec<(String, String)>,
}

#[derive(Debug)]
struct ErrorEntry {
    tool: String,
    message: String,
    then: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
enum UserItem {
    Message(String),
    /// Messages an earlier summary already elided.
    Omitted(u64),
}

impl UserItem {
    fn count(&self) -> u64 {
        match self {
            UserItem::Message(_) => 1,
            UserItem::Omitted(n) => *n,
        }
    }
}

#[derive(Debug, Clone)]
enum Step {
    Text(String),
    Call(String),
}

#[derive(Debug, Default)]
struct Facts {
    /// Section 1's body and whether it was carried from an earlier summary.
    primary: Option<String>,
    head_truncated: bool,
    tools: Vec<(String, usize)>,
    languages: Vec<String>,
    commands: Vec<String>,
    lookups: Vec<String>,
    files: Vec<FileEntry>,
    errors: Vec<ErrorEntry>,
    reasoning: Vec<String>,
    users: Vec<UserItem>,
    pending: Vec<String>,
    /// Steps of the latest turn, oldest first.
    current: Vec<Step>,
    next: Option<String>,
}

/// A tool call: (tool_use id, tool name, index into `files` and the action, if it touched
/// a file).
type Use = (String, String, Option<(usize, &'static str)>);

enum Todos {
    /// The list of the last TodoWrite call: (content, status).
    List(Vec<(String, String)>),
    /// Tasks built up by TaskCreate/TaskUpdate calls: (id, subject, status).
    Tasks(Vec<(String, String, String)>),
}

impl Facts {
    fn gather(records: &[&Record], head_truncated: bool) -> Facts {
        let mut f = Facts {
            head_truncated,
            ..Facts::default()
        };
        let records: Vec<&Record> = records
            .iter()
            .copied()
            .filter(|r| matches!(r.kind, RecordKind::User | RecordKind::Assistant))
            .filter(|r| !r.is_virtual && !r.is_sidechain)
            .collect();

        let mut carried_pending: Vec<String> = Vec::new();
        if let Some(summary) = records.iter().find(|r| r.is_compact_summary) {
            carried_pending = f.carry(&texts(summary).join("\n\n"));
        }

        let mut uses: Vec<Use> = Vec::new();
        let mut use_index: HashMap<String, usize> = HashMap::new();
        let mut answered: HashSet<usize> = HashSet::new();
        let mut todos: Option<Todos> = None;
        // Every step, with the record index it came from, for section 8.
        let mut steps: Vec<(usize, Step)> = Vec::new();
        // (record index, text, is an interruption marker) of each user-typed message.
        let mut typed: Vec<(usize, String, bool)> = Vec::new();
        let mut last_assistant_text: Option<usize> = None;
        let mut awaiting_then: Vec<usize> = Vec::new();

        for (i, r) in records.iter().enumerate() {
            match r.kind {
                RecordKind::User => {
                    for block in &r.content {
                        if let ContentBlock::ToolResult {
                            tool_use_id,
                            content,
                            is_error,
                            ..
                        } = block
                        {
                            let known = use_index.get(tool_use_id).map(|&u| {
                                answered.insert(u);
                                &uses[u]
                            });
                            let tool = known
                                .map(|(_, name, _)| name.clone())
                                .unwrap_or_else(|| "a tool".into());
                            if let Some((_, _, Some((file, action)))) = known {
                                let label = if *is_error {
                                    format!("{action} (failed)")
                                } else {
                                    (*action).to_string()
                                };
                                push_unique(&mut f.files[*file].actions, label);
                            }
                            if *is_error {
                                f.errors.push(ErrorEntry {
                                    tool,
                                    message: first_line(&result_text(content)),
                                    then: None,
                                });
                                awaiting_then.push(f.errors.len() - 1);
                            }
                        }
                    }
                    if r.is_meta || r.is_compact_summary {
                        continue;
                    }
                    let text = texts(r)
                        .into_iter()
                        .filter(|t| !t.trim_start().starts_with(REMINDER_OPEN))
                        .collect::<Vec<_>>()
                        .join("\n\n");
                    let interrupt = text.trim_start().starts_with(INTERRUPTED);
                    if !text.trim().is_empty() && (interrupt || !is_harness_text(&text)) {
                        // An interruption ends a turn but is not something the user said.
                        if !interrupt {
                            f.users.push(UserItem::Message(text.clone()));
                        }
                        typed.push((i, text, interrupt));
                    }
                }
                RecordKind::Assistant => {
                    for block in &r.content {
                        match block {
                            ContentBlock::Text { text, .. } if !text.trim().is_empty() => {
                                let short = condense(text);
                                for e in awaiting_then.drain(..) {
                                    f.errors[e].then = Some(short.clone());
                                }
                                f.reasoning.push(short);
                                last_assistant_text = Some(i);
                                steps.push((i, Step::Text(text.trim().to_string())));
                            }
                            ContentBlock::ToolUse {
                                id, name, input, ..
                            } => {
                                let file = f.note_call(name, input);
                                use_index.entry(id.clone()).or_insert(uses.len());
                                uses.push((id.clone(), name.clone(), file));
                                note_todos(&mut todos, name, input);
                                steps.push((i, Step::Call(describe_call(name, input))));
                            }
                            _ => {}
                        }
                    }
                }
                RecordKind::System | RecordKind::Attachment => {}
            }
        }
        // Calls whose result never came still say what was attempted.
        for (u, (_, _, file)) in uses.iter().enumerate() {
            if let Some((file, action)) = file
                && !answered.contains(&u)
            {
                push_unique(&mut f.files[*file].actions, (*action).to_string());
            }
        }

        f.pending = match todos {
            Some(Todos::List(items)) => items
                .into_iter()
                .filter(|(_, status)| status != "completed")
                .map(|(content, status)| format!("[{status}] {content}"))
                .collect(),
            Some(Todos::Tasks(tasks)) => tasks
                .into_iter()
                .filter(|(_, _, status)| status != "completed" && status != "deleted")
                .map(|(id, subject, status)| format!("[{status}] #{id} {subject}"))
                .collect(),
            None => carried_pending,
        };

        if f.primary.is_none() {
            f.primary = typed
                .iter()
                .find(|(_, text, interrupt)| !interrupt && is_request(text))
                .or_else(|| typed.iter().find(|(_, _, interrupt)| !interrupt))
                .map(|(_, text, _)| text.clone());
        }

        let real: Vec<&(usize, String, bool)> = typed.iter().filter(|t| !t.2).collect();
        let turn_start = real.last().map(|t| t.0);
        let take = |from: Option<usize>, to: usize| -> Vec<Step> {
            steps
                .iter()
                .filter(|(i, _)| from.is_none_or(|s| *i > s) && *i < to)
                .map(|(_, step)| step.clone())
                .collect()
        };
        f.current = take(turn_start, usize::MAX);
        if f.current.is_empty()
            && let Some(start) = turn_start
        {
            // The latest request has no work yet: the turn before it is the current work.
            let before = real.len().checked_sub(2).map(|k| real[k].0);
            f.current = take(before, start);
        }

        f.next = match real.last() {
            Some((i, text, _)) if last_assistant_text.is_none_or(|a| a < *i) => Some(format!(
                "The user's latest message has no reply yet; continue with it:\n{INDENT}{text}"
            )),
            _ => f
                .pending
                .iter()
                .find(|p| p.starts_with("[in_progress]"))
                .or_else(|| f.pending.first())
                .map(|p| format!("Continue with the pending task {p}")),
        };
        f
    }

    /// Records one tool call's contribution to sections 2 and 3; returns the file it
    /// touched and how.
    fn note_call(&mut self, name: &str, input: &Value) -> Option<(usize, &'static str)> {
        match self.tools.iter_mut().find(|(n, _)| n == name) {
            Some((_, count)) => *count += 1,
            None => self.tools.push((name.to_string(), 1)),
        }
        if let Some(cmd) = input.get("command").and_then(Value::as_str) {
            for program in super::commands::programs(cmd) {
                push_unique(&mut self.commands, program);
            }
        }
        match name {
            "WebSearch" => {
                if let Some(q) = input.get("query").and_then(Value::as_str) {
                    push_unique(&mut self.lookups, format!("search \"{}\"", clip(q, 120)));
                }
            }
            "WebFetch" => {
                if let Some(u) = input.get("url").and_then(Value::as_str) {
                    push_unique(&mut self.lookups, clip(u, 160));
                }
            }
            _ => {}
        }
        for field in ["pattern", "glob"] {
            if let Some(p) = input.get(field).and_then(Value::as_str)
                && matches!(name, "Glob" | "Grep")
                && let Some(lang) = language(p)
            {
                push_unique(&mut self.languages, lang);
            }
        }
        let action = file_action(name)?;
        let path = path_of(input)?;
        if let Some(lang) = language(path) {
            push_unique(&mut self.languages, lang);
        }
        let index = match self.files.iter().position(|e| e.path == path) {
            Some(i) => i,
            None => {
                self.files.push(FileEntry {
                    path: path.to_string(),
                    ..FileEntry::default()
                });
                self.files.len() - 1
            }
        };
        let entry = &mut self.files[index];
        let mut excerpt = |code: Option<&str>| {
            if let Some(code) = code.filter(|c| !c.trim().is_empty()) {
                entry.excerpts.push((name.to_string(), code.to_string()));
            }
        };
        match name {
            "Edit" => excerpt(input.get("new_string").and_then(Value::as_str)),
            "Write" => excerpt(input.get("content").and_then(Value::as_str)),
            "NotebookEdit" => excerpt(input.get("new_source").and_then(Value::as_str)),
            "MultiEdit" => {
                for edit in input
                    .get("edits")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    excerpt(edit.get("new_string").and_then(Value::as_str));
                }
            }
            _ => {}
        }
        Some((index, action))
    }

    /// Takes over what an earlier summary knew; returns its pending tasks, which count only
    /// when this projection has no task list of its own.
    fn carry(&mut self, summary: &str) -> Vec<String> {
        let Some(sections) = split_sections(summary) else {
            // Not in our shape: keep its opening as the request, so the intent survives.
            self.primary = Some(format!(
                "(from an earlier summary) {}",
                clip(summary.trim(), 2_000)
            ));
            return Vec::new();
        };
        if let Some(body) = &sections[0]
            && !body.trim().is_empty()
        {
            self.primary = Some(body.trim().to_string());
        }
        if let Some(body) = &sections[2] {
            for item in list_items(body) {
                let UserItem::Message(line) = item else {
                    continue;
                };
                let first = line.lines().next().unwrap_or_default();
                let (path, actions) = match first.rsplit_once(" (") {
                    Some((p, a)) if a.ends_with(')') => (p, a.trim_end_matches(')')),
                    _ => (first, ""),
                };
                if path.is_empty() || path.contains(' ') && !path.starts_with('/') {
                    continue;
                }
                self.files.push(FileEntry {
                    path: path.to_string(),
                    actions: actions
                        .split(", ")
                        .filter(|a| !a.is_empty())
                        .map(str::to_string)
                        .collect(),
                    excerpts: Vec::new(),
                });
            }
        }
        if let Some(body) = &sections[5] {
            self.users = list_items(body)
                .into_iter()
                .filter(|i| !matches!(i, UserItem::Message(m) if m == NONE))
                .collect();
        }
        sections[6]
            .as_deref()
            .map(|body| {
                list_items(body)
                    .into_iter()
                    .filter_map(|i| match i {
                        UserItem::Message(m) if m != NONE => Some(m),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn note_todos(todos: &mut Option<Todos>, name: &str, input: &Value) {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    match name {
        "TodoWrite" => {
            let items = input
                .get("todos")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|t| {
                    let content = s(t, "content").or_else(|| s(t, "subject"))?;
                    Some((content, s(t, "status").unwrap_or_else(|| "pending".into())))
                })
                .collect();
            *todos = Some(Todos::List(items));
        }
        "TaskCreate" | "TaskUpdate" => {
            if !matches!(todos, Some(Todos::Tasks(_))) {
                *todos = Some(Todos::Tasks(Vec::new()));
            }
            let Some(Todos::Tasks(tasks)) = todos else {
                return;
            };
            if name == "TaskCreate" {
                // The tool numbers tasks in creation order; its result is not parsed.
                let id = (tasks.len() + 1).to_string();
                let subject = s(input, "subject")
                    .or_else(|| s(input, "description"))
                    .unwrap_or_default();
                let status = s(input, "status").unwrap_or_else(|| "pending".into());
                tasks.push((id, subject, status));
            } else {
                let id = input.get("taskId").map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
                if let Some(task) = tasks.iter_mut().find(|t| Some(&t.0) == id.as_ref()) {
                    if let Some(status) = s(input, "status") {
                        task.2 = status;
                    }
                    if let Some(subject) = s(input, "subject") {
                        task.1 = subject;
                    }
                }
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// Rendering under a budget.

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

fn tokens(text: &str) -> u64 {
    scaled(block_tokens(&ContentBlock::text(text)))
}

fn fit(f: &Facts, budget: u64) -> String {
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
    let mut sections: Vec<String> = Vec::with_capacity(9);

    // 1. The request.
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
    sections.push(s);

    // 2. Concepts.
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
    sections.push(s);

    // 3. Files.
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
                s.push_str(&format!("{INDENT}  new code ({tool}):\n"));
                for code_line in clip(code, 240).lines().take(6) {
                    let sep = if code_line.is_empty() { "" } else { " " };
                    s.push_str(&format!("{INDENT}  >{sep}{code_line}\n"));
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
    sections.push(s);

    // 4. Errors.
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
            s.push_str(&format!("{INDENT}  then: {then}\n"));
        }
    }
    sections.push(s);

    // 5. Problem solving.
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
    sections.push(s);

    // 6. User messages.
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
    sections.push(s);

    // 7. Pending tasks.
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
    sections.push(s);

    // 8. Current work.
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
    sections.push(s);

    // 9. Next step.
    let mut s = String::new();
    match &f.next {
        Some(next) => line(&mut s, &clip(next, k.next_chars)),
        None => line(&mut s, "None."),
    }
    sections.push(s);

    let mut out = String::new();
    for (i, (title, body)) in SECTION_TITLES.iter().zip(sections).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{}. {title}:\n", i + 1));
        out.push_str(&body);
    }
    out.truncate(out.trim_end().len());
    out
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
        out.push_str(&format!(" and {} more", list.len() - max));
    }
    out
}

fn omitted_line(n: u64) -> String {
    let noun = if n == 1 { "message" } else { "messages" };
    format!("(… {n} user {noun} omitted …)")
}

// ---------------------------------------------------------------------------------------
// Reading an earlier summary back.

/// Section bodies by title, when the text has at least one of our headings.
fn split_sections(text: &str) -> Option<[Option<String>; 9]> {
    let mut out: [Option<String>; 9] = Default::default();
    let mut current: Option<usize> = None;
    let mut found = false;
    for raw in text.lines() {
        let bare = raw.trim().trim_start_matches(['#', '*', ' ']);
        let heading = SECTION_TITLES.iter().enumerate().find_map(|(i, title)| {
            let rest = bare.strip_prefix(&format!("{}. ", i + 1))?;
            let rest = rest.get(..title.len())?;
            rest.eq_ignore_ascii_case(title).then_some(i)
        });
        if let Some(i) = heading {
            current = Some(i);
            found = true;
            out[i].get_or_insert_with(String::new);
            continue;
        }
        if let Some(i) = current
            && let Some(body) = out[i].as_mut()
        {
            body.push_str(raw);
            body.push('\n');
        }
    }
    found.then_some(out)
}

/// List items of a section body: `- ` at an indent of at most three spaces starts an
/// item, other lines continue it; our omission lines become counts.
fn list_items(body: &str) -> Vec<UserItem> {
    let mut items: Vec<UserItem> = Vec::new();
    let mut open = false;
    for raw in body.lines() {
        let indent = raw.len() - raw.trim_start().len();
        let trimmed = raw.trim();
        if let Some(n) = parse_omitted(trimmed) {
            items.push(UserItem::Omitted(n));
            open = false;
            continue;
        }
        if indent <= 3
            && let Some(rest) = trimmed.strip_prefix("- ")
        {
            items.push(UserItem::Message(rest.to_string()));
            open = true;
            continue;
        }
        match items.last_mut() {
            Some(UserItem::Message(m)) if open => {
                m.push('\n');
                m.push_str(raw);
            }
            _ if !trimmed.is_empty() => {
                items.push(UserItem::Message(trimmed.to_string()));
                open = true;
            }
            _ => {}
        }
    }
    // Blank lines between items belong to no message.
    for item in &mut items {
        if let UserItem::Message(m) = item {
            m.truncate(m.trim_end().len());
        }
    }
    items
}

fn parse_omitted(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("(… ")?;
    if !line.contains(" omitted") {
        return None;
    }
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

// ---------------------------------------------------------------------------------------
// Text helpers.

fn texts(r: &Record) -> Vec<String> {
    r.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// Local-command echoes and argument-less slash commands (`/mcp`) are user messages but
/// not requests; a slash command with arguments is one.
fn is_request(text: &str) -> bool {
    let t = text.trim_start();
    if t.starts_with("<local-command-") {
        return false;
    }
    if !t.contains("<command-name>") {
        return true;
    }
    t.split_once("<command-args>")
        .and_then(|(_, rest)| rest.split_once("</command-args>"))
        .is_some_and(|(args, _)| !args.trim().is_empty())
}

/// The first non-blank line, without Claude Code's `<tool_use_error>` wrapper.
fn first_line(text: &str) -> String {
    let text = text
        .replace("<tool_use_error>", "")
        .replace("</tool_use_error>", "");
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(no message)");
    clip(line, 200)
}

/// The first sentence (at most 200 characters), on one line.
fn condense(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let end = flat
        .char_indices()
        .find(|&(i, c)| {
            matches!(c, '.' | '!' | '?') && flat[i + c.len_utf8()..].starts_with(' ') && i >= 10
        })
        .map(|(i, c)| i + c.len_utf8());
    clip(end.map_or(flat.as_str(), |e| &flat[..e]), 200)
}

/// At most `max` characters; a cut is marked with `…`.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn cut_middle(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let half = max / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(n - half).collect();
    format!("{head}\n[… {} characters omitted …]\n{tail}", n - 2 * half)
}

fn push_unique(list: &mut Vec<String>, value: String) {
    if !list.contains(&value) {
        list.push(value);
    }
}

/// One line saying what a call did, for section 8.
fn describe_call(name: &str, input: &Value) -> String {
    let s = |k: &str| input.get(k).and_then(Value::as_str);
    if let Some(path) = path_of(input)
        && s("pattern").is_none()
    {
        return format!("{name} {path}");
    }
    if let Some(cmd) = s("command") {
        let flat = cmd.split_whitespace().collect::<Vec<_>>().join(" ");
        return format!("{name}: {}", clip(&flat, 200));
    }
    if let Some(pattern) = s("pattern") {
        return match s("path") {
            Some(p) => format!("{name} \"{pattern}\" in {p}"),
            None => format!("{name} \"{pattern}\""),
        };
    }
    if let Some(url) = s("url") {
        return format!("{name} {url}");
    }
    if let Some(query) = s("query") {
        return format!("{name} \"{query}\"");
    }
    if let Some(description) = s("description") {
        return format!("{name}: {}", clip(description, 200));
    }
    if let Some(todos) = input.get("todos").and_then(Value::as_array) {
        return format!("{name} ({} items)", todos.len());
    }
    let json = serde_json::to_string(input).unwrap_or_default();
    format!("{name} {}", clip(&json, 200))
}

/// The language of a path or glob, from its extension or well-known file name.
fn language(path: &str) -> Option<String> {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    match name {
        "Dockerfile" => return Some("Docker".into()),
        "Makefile" => return Some("Make".into()),
        _ => {}
    }
    let (_, ext) = name.rsplit_once('.')?;
    if ext.is_empty() || ext.len() > 10 || !ext.chars().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    let ext = ext.to_ascii_lowercase();
    let lang = match ext.as_str() {
        "rs" => "Rust",
        "py" => "Python",
        "js" | "mjs" | "cjs" => "JavaScript",
        "jsx" => "JavaScript (JSX)",
        "ts" | "mts" | "cts" => "TypeScript",
        "tsx" => "TypeScript (TSX)",
        "go" => "Go",
        "java" => "Java",
        "kt" | "kts" => "Kotlin",
        "rb" => "Ruby",
        "ex" | "exs" => "Elixir",
        "heex" | "eex" => "Elixir templates",
        "erl" => "Erlang",
        "c" => "C",
        "h" => "C/C++ headers",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "C++",
        "cs" => "C#",
        "swift" => "Swift",
        "php" => "PHP",
        "sh" | "bash" | "zsh" => "Shell",
        "md" | "markdown" => "Markdown",
        "json" => "JSON",
        "toml" => "TOML",
        "yaml" | "yml" => "YAML",
        "html" | "htm" => "HTML",
        "css" => "CSS",
        "scss" | "sass" => "Sass",
        "sql" => "SQL",
        "vue" => "Vue",
        "svelte" => "Svelte",
        "lua" => "Lua",
        "zig" => "Zig",
        "hs" => "Haskell",
        "ml" | "mli" => "OCaml",
        "scala" => "Scala",
        "dart" => "Dart",
        "jl" => "Julia",
        "nix" => "Nix",
        "proto" => "Protocol Buffers",
        "tf" => "Terraform",
        _ => return Some(format!(".{ext}")),
    };
    Some(format!("{lang} (.{ext})"))
}

#[cfg(test)]
#[path = "embedded_tests.rs"]
mod tests;
