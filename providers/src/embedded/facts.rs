//! Facts: one pass over the records, everything the nine sections are made of.

use std::collections::{HashMap, HashSet};

use ctxd_protocol::{ContentBlock, Record, RecordKind, ToolResultContent};
use serde_json::Value;

use super::INDENT;
use ctxd_pipeline::kinds;
use ctxd_pipeline::message::REMINDER_OPEN;
use ctxd_pipeline::records::{INTERRUPTED, file_action, is_harness_text, path_of, result_text};
use ctxd_pipeline::text::clip;

#[derive(Debug, Default)]
pub(super) struct FileEntry {
    pub(super) path: String,
    pub(super) actions: Vec<String>,
    /// (tool, new code), oldest first.
    pub(super) excerpts: Vec<(String, String)>,
}

#[derive(Debug)]
pub(super) struct ErrorEntry {
    pub(super) tool: String,
    pub(super) message: String,
    pub(super) then: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum UserItem {
    Message(String),
    /// Messages an earlier summary already elided.
    Omitted(u64),
}

impl UserItem {
    pub(super) fn count(&self) -> u64 {
        match self {
            UserItem::Message(_) => 1,
            UserItem::Omitted(n) => *n,
        }
    }
}

#[derive(Debug, Clone)]
pub(super) enum Step {
    Text(String),
    Call(String),
}

#[derive(Debug, Default)]
pub(super) struct Facts {
    /// Section 1's body and whether it was carried from an earlier summary.
    pub(super) primary: Option<String>,
    pub(super) head_truncated: bool,
    pub(super) tools: Vec<(String, usize)>,
    pub(super) languages: Vec<String>,
    pub(super) commands: Vec<String>,
    pub(super) lookups: Vec<String>,
    pub(super) files: Vec<FileEntry>,
    pub(super) errors: Vec<ErrorEntry>,
    pub(super) reasoning: Vec<String>,
    pub(super) users: Vec<UserItem>,
    pub(super) pending: Vec<String>,
    /// Steps of the latest turn, oldest first.
    pub(super) current: Vec<Step>,
    pub(super) next: Option<String>,
    /// The instructions the summary was asked to follow, when given.
    pub(super) focus: Option<String>,
}

/// A tool call: (tool_use id, tool name, index into `files` and the action, if it touched
/// a file).
pub(super) type Use = (String, String, Option<(usize, &'static str)>);

pub(super) enum Todos {
    /// The list of the last TodoWrite call: (content, status).
    List(Vec<(String, String)>),
    /// Tasks built up by TaskCreate/TaskUpdate calls: (id, subject, status).
    Tasks(Vec<(String, String, String)>),
}

/// What one pass over the records carries from record to record (`Facts::gather`).
#[derive(Default)]
struct Pass {
    uses: Vec<Use>,
    use_index: HashMap<String, usize>,
    answered: HashSet<usize>,
    todos: Option<Todos>,
    /// Every step, with the record index it came from, for section 8.
    steps: Vec<(usize, Step)>,
    /// (record index, text, is an interruption marker) of each user-typed message.
    typed: Vec<(usize, String, bool)>,
    last_assistant_text: Option<usize>,
    /// Errors waiting for the assistant's next words (section 4's "then").
    awaiting_then: Vec<usize>,
}

impl Facts {
    /// Takes the summary's instructions: kept for section 1, and the files and errors
    /// that name one of their words (of four letters or more) moved first, in order.
    pub(super) fn focus_on(&mut self, focus: &str) {
        let words: Vec<String> = focus
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 4)
            .map(str::to_lowercase)
            .collect();
        let named = |text: &str| {
            let text = text.to_lowercase();
            words.iter().any(|w| text.contains(w.as_str()))
        };
        self.files.sort_by_key(|f| !named(&f.path));
        self.errors
            .sort_by_key(|e| !(named(&e.tool) || named(&e.message)));
        self.focus = Some(focus.to_string());
    }

    pub(super) fn gather(records: &[&Record], head_truncated: bool) -> Facts {
        let mut f = Facts {
            head_truncated,
            ..Facts::default()
        };
        let records: Vec<&Record> = records
            .iter()
            .copied()
            .filter(|r| {
                matches!(r.kind, RecordKind::User | RecordKind::Assistant)
                    || queued_prompt(r).is_some()
            })
            .filter(|r| !r.is_virtual && !r.is_sidechain)
            .collect();
        let carried_pending = records
            .iter()
            .find(|r| r.is_compact_summary)
            .map(|summary| f.carry(&texts(summary).join("\n\n")))
            .unwrap_or_default();
        let mut p = Pass::default();
        for (i, r) in records.iter().enumerate() {
            match r.kind {
                RecordKind::User => f.user_record(&mut p, i, r),
                RecordKind::Assistant => f.assistant_record(&mut p, i, r),
                RecordKind::Attachment => {
                    if let Some(text) = queued_prompt(r) {
                        f.users.push(UserItem::Message(text.clone()));
                        p.typed.push((i, text, false));
                    }
                }
                RecordKind::System => {}
            }
        }
        // Calls whose result never came still say what was attempted.
        for (u, (_, _, file)) in p.uses.iter().enumerate() {
            if let Some((file, action)) = file
                && !p.answered.contains(&u)
            {
                push_unique(&mut f.files[*file].actions, (*action).to_string());
            }
        }
        f.pending = match p.todos.take() {
            Some(todos) => todos.open(),
            None => carried_pending,
        };
        if f.primary.is_none() {
            f.primary = p
                .typed
                .iter()
                .find(|(_, text, interrupt)| !interrupt && is_request(text))
                .or_else(|| p.typed.iter().find(|(_, _, interrupt)| !interrupt))
                .map(|(_, text, _)| text.clone());
        }
        f.note_current_work(&p);
        f
    }

    fn user_record(&mut self, p: &mut Pass, i: usize, r: &Record) {
        for block in &r.content {
            if let ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
                ..
            } = block
            {
                self.tool_result(p, tool_use_id, content, *is_error);
            }
        }
        if r.is_meta || r.is_compact_summary {
            return;
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
                self.users.push(UserItem::Message(text.clone()));
            }
            p.typed.push((i, text, interrupt));
        }
    }

    fn tool_result(&mut self, p: &mut Pass, id: &str, content: &ToolResultContent, failed: bool) {
        let known = p.use_index.get(id).copied();
        if let Some(u) = known {
            p.answered.insert(u);
        }
        let known = known.map(|u| &p.uses[u]);
        let tool = known.map_or_else(|| "a tool".to_string(), |(_, name, _)| name.clone());
        if let Some((_, _, Some((file, action)))) = known {
            let label = if failed {
                format!("{action} (failed)")
            } else {
                (*action).to_string()
            };
            push_unique(&mut self.files[*file].actions, label);
        }
        if failed {
            self.errors.push(ErrorEntry {
                tool,
                message: error_line(&result_text(content)),
                then: None,
            });
            p.awaiting_then.push(self.errors.len() - 1);
        }
    }

    fn assistant_record(&mut self, p: &mut Pass, i: usize, r: &Record) {
        for block in &r.content {
            match block {
                ContentBlock::Text { text, .. } if !text.trim().is_empty() => {
                    let short = condense(text);
                    for e in p.awaiting_then.drain(..) {
                        self.errors[e].then = Some(short.clone());
                    }
                    self.reasoning.push(short);
                    p.last_assistant_text = Some(i);
                    p.steps.push((i, Step::Text(text.trim().to_string())));
                }
                ContentBlock::ToolUse {
                    id, name, input, ..
                } => {
                    let file = self.note_call(name, input);
                    p.use_index.entry(id.clone()).or_insert(p.uses.len());
                    p.uses.push((id.clone(), name.clone(), file));
                    note_todos(&mut p.todos, name, input);
                    p.steps.push((i, Step::Call(describe_call(name, input))));
                }
                _ => {}
            }
        }
    }

    /// Sections 8 and 9: the steps of the latest turn, and what comes next.
    fn note_current_work(&mut self, p: &Pass) {
        let real: Vec<&(usize, String, bool)> = p.typed.iter().filter(|t| !t.2).collect();
        let turn_start = real.last().map(|t| t.0);
        let take = |from: Option<usize>, to: usize| -> Vec<Step> {
            p.steps
                .iter()
                .filter(|(i, _)| from.is_none_or(|s| *i > s) && *i < to)
                .map(|(_, step)| step.clone())
                .collect()
        };
        self.current = take(turn_start, usize::MAX);
        if self.current.is_empty()
            && let Some(start) = turn_start
        {
            // The latest request has no work yet: the turn before it is the current work.
            let before = real.len().checked_sub(2).map(|k| real[k].0);
            self.current = take(before, start);
        }
        self.next = match real.last() {
            Some((i, text, _)) if p.last_assistant_text.is_none_or(|a| a < *i) => Some(format!(
                "The user's latest message has no reply yet; continue with it:\n{INDENT}{text}"
            )),
            _ => self
                .pending
                .iter()
                .find(|p| p.starts_with("[in_progress]"))
                .or_else(|| self.pending.first())
                .map(|p| format!("Continue with the pending task {p}")),
        };
    }

    /// Records one tool call's contribution to sections 2 and 3; returns the file it
    /// touched and how.
    fn note_call(&mut self, name: &str, input: &Value) -> Option<(usize, &'static str)> {
        match self.tools.iter_mut().find(|(n, _)| n == name) {
            Some((_, count)) => *count += 1,
            None => self.tools.push((name.to_string(), 1)),
        }
        if let Some(cmd) = input.get("command").and_then(Value::as_str) {
            for program in crate::commands::programs(cmd) {
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
}

impl Todos {
    /// The tasks not done yet, as section 7 lists them.
    fn open(self) -> Vec<String> {
        match self {
            Todos::List(items) => items
                .into_iter()
                .filter(|(_, status)| status != "completed")
                .map(|(content, status)| format!("[{status}] {content}"))
                .collect(),
            Todos::Tasks(tasks) => tasks
                .into_iter()
                .filter(|(_, _, status)| status != "completed" && status != "deleted")
                .map(|(id, subject, status)| format!("[{status}] #{id} {subject}"))
                .collect(),
        }
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

/// What the user typed while a turn ran, delivered as a `queued_command` attachment: a
/// message of the user's like any other.
fn queued_prompt(r: &Record) -> Option<String> {
    if r.attachment_type() != Some(kinds::QUEUED_COMMAND) {
        return None;
    }
    let prompt = r.attachment.as_ref()?.get("prompt")?;
    let text = match prompt {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.as_str().or_else(|| p.get("text").and_then(Value::as_str)))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return None,
    };
    (!text.trim().is_empty()).then_some(text)
}

pub(super) fn texts(r: &Record) -> Vec<String> {
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

/// The first non-blank line of an error, without Claude Code's `<tool_use_error>`
/// wrapper, at most 200 characters.
fn error_line(text: &str) -> String {
    let text = text
        .replace("<tool_use_error>", "")
        .replace("</tool_use_error>", "");
    clip(
        ctxd_pipeline::text::first_line(&text).unwrap_or("(no message)"),
        200,
    )
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
