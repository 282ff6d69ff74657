//! Model-facing text of attachment records. The caller wraps the text in
//! `<system-reminder>`; this module only decides the words.
//!
//! Every attachment type has a renderer of its own (several live beside the stage that
//! makes the attachment: `plan_mode`, `task_reminder`, `relevant_memories`, the capability
//! deltas and skills); Claude Code's own field names are understood too, so imported
//! records read the same. A client's attachment of a type ctxd does not know shows its
//! `content` or `text`; only an unknown type with neither falls back to a generic listing
//! of its fields.

use std::fmt::Write as _;

use ctxd_protocol::{Record, RecordInput, RecordKind};

use super::kinds::{AttachmentKind, HOOK_ADDITIONAL_CONTEXT, HOOK_BLOCKING_ERROR};
use serde_json::{Map, Value};

/// The text an attachment record shows the model, or `None` when it shows nothing
/// (not an attachment, hidden, or nothing to say).
pub fn render(record: &Record) -> Option<String> {
    let obj = record.attachment.as_ref()?.as_object()?;
    if obj.get("hidden").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or("unknown");
    let own = typed(AttachmentKind::of(kind), obj);
    if own.is_none() && AttachmentKind::of(kind).silent_when_empty() {
        return None;
    }
    let text = own
        .or_else(|| str_field(obj, "content"))
        .or_else(|| str_field(obj, "text"))
        .unwrap_or_else(|| generic(kind, obj));
    // An empty reminder costs tokens and tells the model nothing.
    if text.trim().is_empty() {
        None
    } else {
        Some(text)
    }
}

/// The words of a kind ctxd knows; `None` for one it does not (its `content`, `text` or
/// fields are shown instead) or when the attachment lacks what its kind needs.
fn typed(kind: AttachmentKind<'_>, obj: &Map<String, Value>) -> Option<String> {
    use AttachmentKind as K;
    match kind {
        K::DateChange => {
            // Ours say `date`; Claude Code's `newDate`.
            let date = str_field(obj, "date").or_else(|| str_field(obj, "newDate"))?;
            Some(format!(
                "The date has changed: today's date is now {date}. Do not mention this \
                 to the user unless it is relevant to their request."
            ))
        }
        K::HookAdditionalContext => hook_context_text(obj),
        K::HookBlockingError => hook_feedback_text(obj),
        K::QueuedCommands => queued_text(obj),
        K::DeferredToolsDelta => super::capabilities::render_deferred(obj),
        K::AgentListingDelta => super::capabilities::render_agents(obj),
        K::McpInstructionsDelta => super::capabilities::render_mcp(obj),
        K::SkillListing => super::skills::render_listing(obj),
        K::InvokedSkills => super::skills::render_invoked(obj),
        K::QueuedCommand => queued_command_text(obj),
        K::EditedTextFile | K::ChangedFiles => edited_text(obj),
        K::NestedMemory => nested_text(obj),
        K::AtMention => super::mentions::render(obj),
        K::PlanFile | K::PlanFileReference => plan_file_text(obj),
        K::PlanMode | K::PlanModeExit | K::PlanModeReentry => {
            super::plan_mode::render(kind.as_str(), obj)
        }
        K::TodoReminder | K::TaskReminder => super::task_reminder::render(kind.as_str(), obj),
        K::RelevantMemories => super::relevant_memories::render(obj),
        K::Other(_) => None,
    }
}

/// One queued input (`transcript.queue`, or Claude Code's record): the text the user sent
/// mid-turn, framed so the model answers it and carries on. Its images follow the text as
/// image blocks of the record.
fn queued_command_text(obj: &Map<String, Value>) -> Option<String> {
    let prompt = obj.get("prompt").and_then(value_text).unwrap_or_default();
    if prompt.trim().is_empty() {
        return Some(String::new());
    }
    Some(queued_frame(&prompt))
}

/// An externally changed file: ours carry their text; Claude Code's only the snippet.
fn edited_text(obj: &Map<String, Value>) -> Option<String> {
    if let Some(text) = str_field(obj, "content") {
        return Some(text);
    }
    let path = str_field(obj, "filename")?;
    let snippet = str_field(obj, "snippet")?;
    Some(super::changed_files::render_attachment(&path, &snippet))
}

/// Instruction files: ours carry the rendered blocks; Claude Code's one file as
/// `{path, content}`.
fn nested_text(obj: &Map<String, Value>) -> Option<String> {
    match obj.get("content")? {
        Value::String(s) => Some(s.clone()),
        Value::Object(file) => {
            let path = str_field(file, "path")?;
            let text = str_field(file, "content")?;
            Some(format!("Contents of {path}:\n\n{text}"))
        }
        _ => None,
    }
}

/// The plan re-injected after a compaction.
fn plan_file_text(obj: &Map<String, Value>) -> Option<String> {
    let path = ["planFilePath", "plan_file_path", "path"]
        .iter()
        .find_map(|k| str_field(obj, k))?;
    let content = ["planContent", "plan_content", "content"]
        .iter()
        .find_map(|k| str_field(obj, k))
        .unwrap_or_default();
    Some(format!(
        "The plan written earlier in this session is at {path}; continue from it where it \
         still applies. Its current contents:\n\n{content}"
    ))
}

/// The hook event an attachment came from: ours (`hook_event_name`) or an imported
/// Claude Code record's (`hookEvent`, `hookName`).
fn hook_event(obj: &Map<String, Value>) -> Option<String> {
    ["hook_event_name", "hookEvent", "hookName"]
        .iter()
        .find_map(|k| str_field(obj, k))
}

/// `content` is one string (ours) or a list of strings, one per hook (Claude Code's).
/// Blank context renders as nothing (an empty string), not as a generic dump.
fn hook_context_text(obj: &Map<String, Value>) -> Option<String> {
    let text = obj.get("content").and_then(value_text).unwrap_or_default();
    if text.trim().is_empty() {
        return Some(String::new());
    }
    Some(match hook_event(obj) {
        Some(e) => format!("Context added by the user's {e} hook:\n{text}"),
        None => format!("Context added by a user hook:\n{text}"),
    })
}

/// Blocking feedback (exit code 2 or `decision: "block"`) the model must act on.
fn hook_feedback_text(obj: &Map<String, Value>) -> Option<String> {
    let nested = obj.get("blockingError").and_then(Value::as_object);
    let reason =
        str_field(obj, "reason").or_else(|| nested.and_then(|n| str_field(n, "blockingError")))?;
    let command =
        str_field(obj, "command").or_else(|| nested.and_then(|n| str_field(n, "command")));
    let event = hook_event(obj).unwrap_or_else(|| "a".into());
    Some(match command {
        Some(c) => format!("Feedback from the user's {event} hook (`{c}`):\n{reason}"),
        None => format!("Feedback from the user's {event} hook:\n{reason}"),
    })
}

/// The hook contexts among the records a request shows (`metadata.hook_contexts`).
pub(crate) fn hook_contexts(view: &[&Record]) -> Vec<ctxd_protocol::HookContextRef> {
    view.iter()
        .filter_map(|r| {
            let obj = r.attachment.as_ref()?.as_object()?;
            let kind = obj.get("type")?.as_str()?;
            if kind != HOOK_ADDITIONAL_CONTEXT && kind != HOOK_BLOCKING_ERROR {
                return None;
            }
            Some(ctxd_protocol::HookContextRef {
                uuid: r.uuid.clone(),
                kind: kind.to_string(),
                hook_event_name: hook_event(obj).unwrap_or_default(),
            })
        })
        .collect()
}

fn str_field(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Queued input arrives either as one `prompt` (a string or content blocks) or as a list
/// of `commands` (strings or objects carrying the text under a few common keys).
fn queued_text(obj: &Map<String, Value>) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    if let Some(prompt) = obj.get("prompt") {
        parts.extend(value_text(prompt));
    }
    if let Some(Value::Array(commands)) = obj.get("commands") {
        parts.extend(commands.iter().filter_map(value_text));
    }
    let parts: Vec<String> = parts.into_iter().filter(|p| !p.trim().is_empty()).collect();
    if parts.is_empty() {
        None
    } else {
        Some(queued_frame(&parts.join("\n")))
    }
}

/// Input typed while the model worked, framed so the model answers it and carries on.
fn queued_frame(prompt: &str) -> String {
    format!(
        "The user sent this message while you were working:\n{prompt}\n\nAddress it, then \
         continue with your task."
    )
}

fn value_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let texts: Vec<String> = items.iter().filter_map(value_text).collect();
            if texts.is_empty() {
                None
            } else {
                Some(texts.join("\n"))
            }
        }
        Value::Object(o) => ["text", "prompt", "value", "content"]
            .iter()
            .find_map(|k| o.get(*k).and_then(value_text)),
        _ => None,
    }
}

/// An attachment of a type ctxd does not know, with no `content` or `text`: its fields,
/// one per line, values as their text (never a JSON dump of the record).
fn generic(kind: &str, obj: &Map<String, Value>) -> String {
    let mut out = format!("Context of type {kind}:");
    for (k, v) in obj.iter().filter(|(k, _)| k.as_str() != "type") {
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Null => continue,
            other => value_text(other).unwrap_or_else(|| other.to_string()),
        };
        let _ = write!(out, "\n- {k}: {text}");
    }
    out
}

/// An attachment record as the engine appends it (injected context, not user input).
pub fn record(attachment: Value, timestamp: &str) -> RecordInput {
    RecordInput {
        kind: Some(RecordKind::Attachment),
        is_meta: true,
        attachment: Some(attachment),
        timestamp: Some(timestamp.to_string()),
        ..RecordInput::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxd_protocol::RecordKind;
    use serde_json::json;

    fn att(v: Value) -> Record {
        Record {
            seq: 1,
            is_meta: true,
            attachment: Some(v),
            ..Record::new(RecordKind::Attachment, "u1", "2025-01-01T00:00:00Z", vec![])
        }
    }

    #[test]
    fn content_field_is_used() {
        let r = att(json!({"type": "nested_memory", "content": "rules here"}));
        assert_eq!(render(&r).as_deref(), Some("rules here"));
    }

    #[test]
    fn text_field_is_used() {
        let r = att(json!({"type": "whatever", "text": "hello"}));
        assert_eq!(render(&r).as_deref(), Some("hello"));
    }

    #[test]
    fn date_change_mentions_date_and_discretion() {
        let r = att(json!({"type": "date_change", "date": "2025-03-04"}));
        let t = render(&r).unwrap();
        assert!(t.contains("2025-03-04"));
        assert!(t.contains("Do not mention"));
    }

    #[test]
    fn hook_additional_context_names_its_event() {
        let r = att(json!({"type": "hook_additional_context", "content": "ctx from hook"}));
        assert_eq!(
            render(&r).as_deref(),
            Some("Context added by a user hook:\nctx from hook")
        );
        let r = att(json!({"type": "hook_additional_context",
            "hook_event_name": "SessionStart", "content": "TEXT"}));
        assert_eq!(
            render(&r).as_deref(),
            Some("Context added by the user's SessionStart hook:\nTEXT")
        );
        // Claude Code's own records: a list of contexts and `hookName`.
        let r = att(json!({"type": "hook_additional_context",
            "hookName": "UserPromptSubmit", "content": ["a", "b"]}));
        assert_eq!(
            render(&r).as_deref(),
            Some("Context added by the user's UserPromptSubmit hook:\na\nb")
        );
        let r = att(json!({"type": "hook_additional_context", "content": [" "]}));
        assert_eq!(render(&r), None);
    }

    #[test]
    fn hook_blocking_error_names_hook_and_command() {
        let r = att(
            json!({"type": "hook_blocking_error", "hook_event_name": "Stop",
            "command": "./check.sh", "reason": "tests fail"}),
        );
        assert_eq!(
            render(&r).as_deref(),
            Some("Feedback from the user's Stop hook (`./check.sh`):\ntests fail")
        );
        let r = att(
            json!({"type": "hook_blocking_error", "hookName": "PostToolUse",
            "blockingError": {"blockingError": "lint failed", "command": "lint"}}),
        );
        assert!(render(&r).unwrap().contains("lint failed"));
    }

    #[test]
    fn hook_contexts_lists_hook_records_only() {
        let a = att(
            json!({"type": "hook_additional_context", "hook_event_name": "SessionStart", "content": "x"}),
        );
        let b = att(json!({"type": "date_change", "date": "2025-03-04"}));
        let got = hook_contexts(&[&a, &b]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].hook_event_name, "SessionStart");
        assert_eq!(got[0].kind, "hook_additional_context");
    }

    #[test]
    fn queued_commands_prompt_and_commands() {
        let framed = |p: &str| Some(queued_frame(p));
        let r = att(json!({"type": "queued_commands", "prompt": "do X"}));
        assert_eq!(render(&r), framed("do X"));
        let r = att(json!({"type": "queued_commands", "commands": ["a", {"value": "b"}, 3]}));
        assert_eq!(render(&r), framed("a\nb"));
        let r = att(json!({"type": "queued_commands",
            "prompt": [{"type": "text", "text": "p1"}, {"type": "image"}]}));
        assert_eq!(render(&r), framed("p1"));
        // Claude Code's queued_command reads as ours does.
        let ours = att(json!({"type": "queued_command", "prompt": "p1"}));
        assert_eq!(render(&ours), framed("p1"));
    }

    #[test]
    fn unknown_types_list_their_fields() {
        let r = att(json!({"type": "teammate_note", "from": "ana", "items": ["a", "b"]}));
        let t = render(&r).unwrap();
        assert_eq!(
            t,
            "Context of type teammate_note:\n- from: ana\n- items: a\nb"
        );
    }

    #[test]
    fn every_type_ctxd_makes_renders_as_prose() {
        let cases = [
            json!({"type": "queued_command", "prompt": "also fix the docs"}),
            json!({"type": "edited_text_file", "filename": "/w/a.rs", "snippet": "1\tx"}),
            json!({"type": "nested_memory", "content": {"path": "/w/CLAUDE.md", "content": "rules"}}),
            json!({"type": "plan_file_reference", "planFilePath": "/p.md", "planContent": "1. x"}),
            json!({"type": "plan_mode", "reminderType": "full", "planFilePath": "/p.md", "planExists": false}),
            json!({"type": "plan_mode", "reminderType": "sparse", "planFilePath": "/p.md", "planExists": true}),
            json!({"type": "plan_mode_exit", "planFilePath": "/p.md", "planExists": true}),
            json!({"type": "plan_mode_reentry", "planFilePath": "/p.md", "planExists": true}),
            json!({"type": "todo_reminder", "content": [{"content": "x", "status": "pending"}], "itemCount": 1}),
            json!({"type": "task_reminder", "content": [{"id": "1", "subject": "x", "status": "pending"}], "itemCount": 1}),
            json!({"type": "relevant_memories", "memories": [{"path": "/m/a.md", "content": "note", "header": "Memory /m/a.md:"}]}),
            json!({"type": "date_change", "date": "2025-03-04"}),
            json!({"type": "date_change", "newDate": "2025-03-04"}),
            json!({"type": "changed_files", "filename": "/w/a.rs", "snippet": "1\tx"}),
            json!({"type": "queued_commands", "prompt": "and the docs"}),
            json!({"type": "plan_file", "plan_file_path": "/p.md", "plan_content": "1. x"}),
        ];
        for v in cases {
            let t = render(&att(v.clone())).unwrap_or_else(|| panic!("{v} renders"));
            assert!(
                !t.contains('{') && !t.starts_with("Context of type"),
                "{v}: {t}"
            );
        }
    }

    #[test]
    fn capability_deltas_read_as_sentences_in_both_shapes() {
        let ours = att(
            json!({"type": "deferred_tools_delta", "added_names": ["mcp__j__get"], "removed_names": ["old"]}),
        );
        let t = render(&ours).unwrap();
        assert!(t.contains("tool search") && t.contains("\nmcp__j__get"));
        assert!(t.contains("no longer available") && t.ends_with("\nold"));
        let cc = att(
            json!({"type": "deferred_tools_delta", "addedNames": ["x"], "addedLines": ["x"], "removedNames": []}),
        );
        assert!(render(&cc).unwrap().ends_with("\nx"));
        let agents = att(
            json!({"type": "agent_listing_delta", "added_types": ["e"], "added_lines": ["- e: explores (Tools: All tools)"], "removed_types": [], "initial": true}),
        );
        assert_eq!(
            render(&agents).unwrap(),
            "Available agent types for the Agent tool:\n- e: explores (Tools: All tools)"
        );
        let mcp = att(
            json!({"type": "mcp_instructions_delta", "added_names": ["j"], "added_blocks": ["## j\nUse it."], "removed_names": ["k"]}),
        );
        let t = render(&mcp).unwrap();
        assert!(t.starts_with(
            "# MCP Server Instructions\n\nThe following MCP servers have provided instructions"
        ));
        assert!(t.contains("## j\nUse it.") && t.ends_with("instructions no longer apply:\nk"));
        let empty = att(
            json!({"type": "mcp_instructions_delta", "added_names": [], "added_blocks": [], "removed_names": []}),
        );
        assert_eq!(render(&empty), None);
        let skills = att(
            json!({"type": "skill_listing", "content": "- review: Reviews", "names": ["review"]}),
        );
        assert_eq!(
            render(&skills).unwrap(),
            "The following skills are available for use with the Skill tool:\n\n- review: Reviews"
        );
        for r in [ours, agents, mcp, skills] {
            assert!(!render(&r).unwrap().contains('{'), "no JSON dumps");
        }
    }

    #[test]
    fn hidden_renders_nothing() {
        let r = att(json!({"type": "date_change", "date": "2025-03-04", "hidden": true}));
        assert_eq!(render(&r), None);
    }

    #[test]
    fn missing_or_blank_renders_nothing() {
        let mut r = att(json!({}));
        r.attachment = None;
        assert_eq!(render(&r), None);
        assert_eq!(render(&att(json!("not an object"))), None);
        assert_eq!(render(&att(json!({"type": "x", "content": "  "}))), None);
    }

    /// A client may send the same attachment with its keys in any order (JSON objects
    /// are unordered): the model must see the same bytes.
    #[test]
    fn key_order_does_not_change_the_text() {
        let parse = |t: &str| att(serde_json::from_str(t).unwrap());
        let a = parse(r#"{"type": "t", "z": 1, "a": {"y": [1, 2], "b": null}}"#);
        let b = parse(r#"{"a": {"b": null, "y": [1, 2]}, "z": 1, "type": "t"}"#);
        let text = render(&a).unwrap();
        assert_eq!(Some(text.clone()), render(&b));
        assert!(text.starts_with("Context of type t:\n"), "{text}");
    }
}
