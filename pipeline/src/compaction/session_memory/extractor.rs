//! The embedded (model-free) extractor: the notes filled from the transcript itself.

use crate::message::REMINDER_OPEN;
use crate::records::{self, file_action, result_text};
use crate::text::{clip, first_line};
use ctxd_protocol::{ContentBlock, Record, RecordKind, ToolResultContent};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

use super::*;

/// Caps the embedded extractor keeps on its own, in characters, so that its sections
/// together stay under the document cap and `enforce_caps` only has to cut text a model
/// wrote. Lists drop their oldest entries first (the Task Specification keeps the first
/// request too), leaving one marker that counts them.
pub(super) const TITLE_CHARS: usize = 100;
pub(super) const STATE_CHARS: usize = 3_000;
pub(super) const TASK_CHARS: usize = 6_000;
pub(super) const TASK_ITEM_CHARS: usize = 1_500;
pub(super) const FILES_CHARS: usize = 5_000;
pub(super) const WORKFLOW_CHARS: usize = 2_400;
pub(super) const COMMAND_CHARS: usize = 160;
pub(super) const ERRORS_CHARS: usize = 4_000;
pub(super) const ERROR_LINE_CHARS: usize = 200;
pub(super) const RESULTS_CHARS: usize = 5_000;
pub(super) const RESULT_ITEM_CHARS: usize = 800;
pub(super) const WORKLOG_CHARS: usize = 5_000;
pub(super) const WORKLOG_LINE_CHARS: usize = 80;

/// Raw text placed in a body (title, current state) must not read back as one of our
/// headings: such lines get a markdown escape, which renders the same.
pub(super) fn defuse(text: &str) -> String {
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

/// One list entry: `- ` then the text, further lines indented two spaces so they stay
/// inside the entry when the list is read back.
pub(super) fn item(text: &str) -> String {
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
pub(super) struct List {
    items: Vec<String>,
    /// Entries dropped by earlier caps, counted by the marker.
    omitted: u64,
}

pub(super) const MARKER_OPEN: &str = "- (… ";
pub(super) const MARKER_CLOSE: &str = " earlier entries left out)";

pub(super) fn marker(n: u64) -> String {
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

    /// Drops the oldest entries after the first `keep_first` until the body fits. The
    /// rendered size is counted, not rendered, at each step: the list can be long.
    fn cap(&mut self, max_chars: usize, keep_first: usize) {
        let lens: Vec<usize> = self.items.iter().map(|i| chars(i)).collect();
        // `render`'s size: the entries, the marker line when entries are omitted, and
        // one newline between lines.
        let size = |entries: usize, count: usize, omitted: u64| {
            let marker_chars = if omitted > 0 {
                chars(&marker(omitted))
            } else {
                0
            };
            let lines = count + usize::from(omitted > 0);
            entries + marker_chars + lines.saturating_sub(1)
        };
        let mut entries: usize = lens.iter().sum();
        let mut dropped = 0;
        while self.items.len() - dropped > keep_first
            && size(
                entries,
                self.items.len() - dropped,
                self.omitted + dropped as u64,
            ) > max_chars
        {
            entries -= lens[keep_first + dropped];
            dropped += 1;
        }
        if dropped > 0 {
            self.items.drain(keep_first..keep_first + dropped);
            self.omitted += dropped as u64;
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct Response {
    has_call: bool,
    last_text: Option<String>,
}

/// What the new records say, gathered in one pass.
#[derive(Debug, Default)]
pub(super) struct Facts {
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

pub(super) fn push_unique(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

pub(super) fn user_text(r: &Record) -> Option<String> {
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

pub(super) fn command_of(input: &Value) -> Option<&str> {
    input
        .get("command")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
}

pub(super) fn path_of(input: &Value) -> Option<&str> {
    records::path_of(input).filter(|p| !p.trim().is_empty())
}

/// A command as the Workflow shows it: its first line, clipped, marked when more follows.
pub(super) fn command_line(cmd: &str) -> String {
    let first = first_line(cmd).unwrap_or("");
    let mut line = clip(first, COMMAND_CHARS);
    if cmd.trim().lines().count() > 1 && !line.ends_with('…') {
        line.push_str(" …");
    }
    code(&line)
}

pub(super) fn code(s: &str) -> String {
    if s.contains('`') {
        s.to_string()
    } else {
        format!("`{s}`")
    }
}

pub(super) fn error_line(call: Option<&(String, Value)>, content: &ToolResultContent) -> String {
    let text = result_text(content);
    let message = first_line(&text)
        .unwrap_or("")
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
pub(super) fn parse_file_item(entry: &str) -> Option<(&str, Vec<String>)> {
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

pub(super) fn file_item(path: &str, actions: &[String]) -> String {
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
        bodies[TITLE] = defuse(&clip(first_line(first).unwrap_or(""), TITLE_CHARS));
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

#[cfg(test)]
mod cap_tests {
    use super::*;
    use proptest::prelude::*;

    /// The rule `cap` implements, as it reads: render, drop the oldest, again.
    fn cap_by_rendering(list: &mut List, max_chars: usize, keep_first: usize) {
        while chars(&list.render(keep_first)) > max_chars && list.items.len() > keep_first {
            list.items.remove(keep_first);
            list.omitted += 1;
        }
    }

    proptest! {
        #[test]
        fn counting_caps_like_rendering(
            items in prop::collection::vec("[a-zé\\- ]{0,30}", 0..40),
            omitted in prop_oneof![Just(0u64), 1u64..20, 9u64..11, 99u64..101],
            max_chars in 0usize..600,
            keep_first in 0usize..5,
        ) {
            let mut counted = List { items: items.clone(), omitted };
            let mut rendered = List { items, omitted };
            counted.cap(max_chars, keep_first);
            cap_by_rendering(&mut rendered, max_chars, keep_first);
            prop_assert_eq!(counted.items, rendered.items);
            prop_assert_eq!(counted.omitted, rendered.omitted);
        }
    }
}
