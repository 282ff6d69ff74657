//! Facts read off transcript records, shared by the stages that summarise or cut them
//! (snip, collapse, session memory, the embedded summariser).

use ctxd_protocol::{ContentBlock, Record, RecordKind, ToolResultBlock, ToolResultContent};
use serde_json::Value;

/// How Claude Code marks a turn the user interrupted (a user message, not a request).
pub const INTERRUPTED: &str = "[Request interrupted by user";

/// Input fields of file tools that name the file.
pub const PATH_FIELDS: [&str; 3] = ["file_path", "notebook_path", "path"];

/// What a call to a file tool did to its file; `None` for other tools.
pub fn file_action(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "Read" => "read",
        "Edit" | "MultiEdit" | "NotebookEdit" => "edited",
        "Write" => "written",
        "Glob" | "Grep" => "searched",
        _ => return None,
    })
}

/// The file a tool input names, from the first path field present.
pub fn path_of(input: &Value) -> Option<&str> {
    PATH_FIELDS
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
}

/// The text of a tool result; media are left out.
pub fn result_text(content: &ToolResultContent) -> String {
    match content {
        ToolResultContent::Text(t) => t.clone(),
        ToolResultContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                ToolResultBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// A message the user typed: not injected context, not a compaction summary, not a
/// record of tool results only.
pub fn is_user_typed(r: &Record) -> bool {
    typed_prompt(r.kind, r.is_meta, r.is_compact_summary, &r.content)
}

/// [`is_user_typed`] on a record's parts, for records not stored yet (the append path's
/// `UserPromptSubmit` hooks).
pub fn typed_prompt(
    kind: RecordKind,
    is_meta: bool,
    is_compact_summary: bool,
    content: &[ContentBlock],
) -> bool {
    kind == RecordKind::User
        && !is_meta
        && !is_compact_summary
        && !content
            .iter()
            .all(|b| matches!(b, ContentBlock::ToolResult { .. }))
}

/// Whether the newest provider response (all records of its message id) has a
/// `tool_use` whose `tool_result` is not in yet: nothing may be placed after it until the
/// whole batch of results is in.
pub fn awaiting_tool_results<R: std::borrow::Borrow<Record>>(view: &[R]) -> bool {
    let records: Vec<&Record> = view
        .iter()
        .map(std::borrow::Borrow::borrow)
        .filter(|r| !r.is_sidechain)
        .collect();
    let Some(last) = records
        .iter()
        .rposition(|r| r.kind == RecordKind::Assistant)
    else {
        return false;
    };
    let id = records[last].message_id.as_deref();
    let same_response = |r: &Record| {
        std::ptr::eq(r, records[last])
            || (id.is_some() && r.kind == RecordKind::Assistant && r.message_id.as_deref() == id)
    };
    let first = records
        .iter()
        .position(|r| same_response(r))
        .unwrap_or(last);
    let mut pending: Vec<&str> = Vec::new();
    for r in records[first..].iter().filter(|r| same_response(r)) {
        for b in &r.content {
            if let ContentBlock::ToolUse { id, .. } = b {
                pending.push(id);
            }
        }
    }
    for r in &records[first..] {
        for b in &r.content {
            if let ContentBlock::ToolResult { tool_use_id, .. } = b {
                pending.retain(|p| *p != tool_use_id);
            }
        }
    }
    !pending.is_empty()
}
