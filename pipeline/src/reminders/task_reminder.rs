//! Task reminders: when the session has task tools and none was
//! used for `SILENT_TURNS` assistant turns, a gentle reminder with the current tasks, at
//! most once every `SILENT_TURNS` turns.
//!
//! Two flavours, as in Claude Code: sessions with `TodoWrite` get a `todo_reminder` (the
//! list is the last `TodoWrite` input), sessions with `TaskCreate`/`TaskUpdate` a
//! `task_reminder` (the list is folded from every create and update). An assistant turn
//! is one provider response (its split records count once). Counting runs over the
//! projection, so a compaction starts it afresh; the task list is read from the whole main
//! thread, because the tasks outlive a compaction.

use super::kinds::{TASK_REMINDER, TODO_REMINDER};
use std::collections::BTreeMap;
use std::fmt::Write as _;

use ctxd_protocol::{ContentBlock, Record, RecordKind};
use serde_json::{Value, json};

use crate::records::result_text;

/// Assistant turns without a task tool before a reminder, and between two reminders.
pub(crate) const SILENT_TURNS: usize = 10;

pub(crate) const TODO_WRITE: &str = "TodoWrite";
pub(crate) const TASK_CREATE: &str = "TaskCreate";
pub(crate) const TASK_UPDATE: &str = "TaskUpdate";

/// Which task tools the session offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    Todo,
    Tasks,
}

/// The flavour the registered tools call for (the task tools win when both are there,
/// as they replace `TodoWrite`).
pub fn flavour<'a>(tool_names: impl IntoIterator<Item = &'a str>) -> Option<Flavour> {
    let mut todo = false;
    let mut tasks = false;
    for n in tool_names {
        todo |= n == TODO_WRITE;
        tasks |= n == TASK_UPDATE;
    }
    if tasks {
        Some(Flavour::Tasks)
    } else if todo {
        Some(Flavour::Todo)
    } else {
        None
    }
}

fn is_task_tool(name: &str) -> bool {
    matches!(name, TODO_WRITE | TASK_CREATE | TASK_UPDATE)
}

/// Turns since a task tool was used and since the last reminder, over `view`.
pub(crate) fn silent_turns<R: std::borrow::Borrow<Record>>(view: &[R]) -> (usize, usize) {
    let mut since_use = 0usize;
    let mut since_reminder = 0usize;
    let mut last_response: Option<&str> = None;
    for r in view.iter().map(std::borrow::Borrow::borrow) {
        if r.is_sidechain {
            continue;
        }
        match r.kind {
            RecordKind::Assistant => {
                let used = r
                    .content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::ToolUse { name, .. } if is_task_tool(name)));
                // A response split over several records is one turn.
                let same = r.message_id.is_some() && r.message_id.as_deref() == last_response;
                if !same {
                    since_use += 1;
                    since_reminder += 1;
                }
                if used {
                    since_use = 0;
                }
                last_response = r.message_id.as_deref();
            }
            RecordKind::Attachment => {
                let t = r
                    .attachment
                    .as_ref()
                    .and_then(|a| a.get("type"))
                    .and_then(Value::as_str);
                if matches!(t, Some(TODO_REMINDER | TASK_REMINDER)) {
                    since_reminder = 0;
                }
            }
            _ => {}
        }
    }
    (since_use, since_reminder)
}

/// The reminder this compile adds, if one is due. `view` is the projection, `all` the
/// whole transcript (where the current tasks come from).
pub fn decide<R: std::borrow::Borrow<Record>>(
    view: &[R],
    all: &[Record],
    flavour: Option<Flavour>,
) -> Option<Value> {
    let flavour = flavour?;
    let (since_use, since_reminder) = silent_turns(view);
    if since_use < SILENT_TURNS || since_reminder < SILENT_TURNS {
        return None;
    }
    Some(match flavour {
        Flavour::Todo => {
            let todos = last_todos(all);
            json!({"type": TODO_REMINDER, "itemCount": todos.len(), "content": todos})
        }
        Flavour::Tasks => {
            let tasks = current_tasks(all);
            json!({"type": TASK_REMINDER, "itemCount": tasks.len(), "content": tasks})
        }
    })
}

fn main_tool_uses(all: &[Record]) -> impl Iterator<Item = (&str, &str, &Value)> {
    all.iter()
        .filter(|r| r.kind == RecordKind::Assistant && !r.is_sidechain)
        .flat_map(|r| r.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolUse {
                id, name, input, ..
            } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
}

/// The todo list of the last `TodoWrite` call.
fn last_todos(all: &[Record]) -> Vec<Value> {
    main_tool_uses(all)
        .filter(|(_, name, _)| *name == TODO_WRITE)
        .last()
        .and_then(|(_, _, input)| input.get("todos")?.as_array().cloned())
        .unwrap_or_default()
}

/// The task list folded from `TaskCreate` (id from its result, `Task #N ...`, else the
/// next number) and `TaskUpdate` (fields replaced; status `deleted` removes the task).
fn current_tasks(all: &[Record]) -> Vec<Value> {
    let results: BTreeMap<&str, String> = all
        .iter()
        .filter(|r| r.kind == RecordKind::User && !r.is_sidechain)
        .flat_map(|r| r.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                ..
            } => Some((tool_use_id.as_str(), result_text(content))),
            _ => None,
        })
        .collect();
    let mut tasks: BTreeMap<u64, serde_json::Map<String, Value>> = BTreeMap::new();
    let mut next = 1u64;
    for (id, name, input) in main_tool_uses(all) {
        match name {
            TASK_CREATE => {
                let task_id = results.get(id).and_then(|t| task_number(t)).unwrap_or(next);
                next = next.max(task_id + 1);
                let mut task = serde_json::Map::new();
                task.insert("id".into(), json!(task_id.to_string()));
                task.insert("status".into(), json!("pending"));
                for key in ["subject", "description", "activeForm"] {
                    if let Some(v) = input.get(key) {
                        task.insert(key.into(), v.clone());
                    }
                }
                tasks.insert(task_id, task);
            }
            TASK_UPDATE => {
                let Some(task_id) = input.get("taskId").and_then(|v| match v {
                    Value::String(s) => s.trim_start_matches('#').parse().ok(),
                    Value::Number(n) => n.as_u64(),
                    _ => None,
                }) else {
                    continue;
                };
                if input.get("status").and_then(Value::as_str) == Some("deleted") {
                    tasks.remove(&task_id);
                    continue;
                }
                if let Some(task) = tasks.get_mut(&task_id) {
                    for key in ["subject", "description", "activeForm", "status", "owner"] {
                        if let Some(v) = input.get(key) {
                            task.insert(key.into(), v.clone());
                        }
                    }
                }
            }
            _ => {}
        }
    }
    tasks.into_values().map(Value::Object).collect()
}

/// `N` of the first `#N` in a `TaskCreate` result.
fn task_number(text: &str) -> Option<u64> {
    let at = text.find('#')?;
    let digits: String = text[at + 1..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Model-facing text of `todo_reminder` and `task_reminder`.
pub fn render(kind: &str, obj: &serde_json::Map<String, Value>) -> Option<String> {
    let items: &[Value] = obj
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let (mut text, list) = match kind {
        TODO_REMINDER => (
            "The todo list (TodoWrite) has not been used for a while. If the current work has \
             steps worth tracking, update it; if the list no longer matches what you are doing, \
             clean it up. Use it only where it helps: this is a gentle reminder, ignore it if it \
             does not apply, and never mention it to the user."
                .to_string(),
            items
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    format!(
                        "{}. [{}] {}",
                        i + 1,
                        str_of(t, "status"),
                        str_of(t, "content")
                    )
                })
                .collect::<Vec<_>>(),
        ),
        TASK_REMINDER => (
            "The task tools have not been used for a while. If the current work has steps worth \
             tracking, add them with TaskCreate and keep their status current with TaskUpdate \
             (in_progress when you start one, completed when it is done); if the list is stale, \
             clean it up. Use them only where they help: this is a gentle reminder, ignore it if \
             it does not apply, and never mention it to the user."
                .to_string(),
            items
                .iter()
                .map(|t| {
                    let id = match t.get("id") {
                        Some(Value::String(s)) => s.clone(),
                        Some(v) => v.to_string(),
                        None => "?".into(),
                    };
                    format!("#{id}. [{}] {}", str_of(t, "status"), str_of(t, "subject"))
                })
                .collect::<Vec<_>>(),
        ),
        _ => return None,
    };
    if !list.is_empty() {
        let heading = if kind == TODO_REMINDER {
            "Current todo list:"
        } else {
            "Current tasks:"
        };
        let _ = write!(text, "\n\n{heading}\n{}", list.join("\n"));
    }
    Some(text)
}

#[cfg(test)]
mod tests;
