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
