//! The compiled Messages API request as an OpenAI Chat Completions body, for the
//! OpenAI-compatible servers most local and hosted open models sit behind. A pure
//! function of the compiled body: every decision (what is in the window, what was
//! cleared) was taken by the pipeline; this only changes the wire form.
//!
//! - `system` becomes one `system` message, its blocks joined by blank lines (the chat
//!   templates of many local servers accept a single system message, first);
//! - a message whose parts are all text is sent as one string, its blocks joined by blank
//!   lines; images go as `image_url` parts (base64 as a data URL), PDFs as `file` parts;
//! - `tool_use` blocks become the assistant's `tool_calls` (`arguments` the input's JSON
//!   text), `tool_result` blocks become `tool` messages right after it, in order; the
//!   images a result holds follow in a user message, since `tool` messages carry text;
//! - thinking, redacted thinking and `cache_control` are dropped (the server cannot
//!   verify Anthropic's signatures; prefix caching needs no marker);
//! - blocks only Anthropic's servers produce (server tool calls and results, search
//!   results, compaction) are given to the model as text, `[TYPE: JSON]`, so what the
//!   model saw is not lost;
//! - custom tools become `function` tools; Anthropic's server tools (web search, code
//!   execution, ...) and schema-less built-ins (`bash_…`, `text_editor_…`) are left out,
//!   since only Anthropic runs or defines them;
//! - `max_tokens`, `temperature`, `top_p`, `stop_sequences` (as `stop`) and
//!   `tool_choice` carry over; other Messages API fields (`thinking`, `metadata`,
//!   `context_management`, `top_k`, ...) have no Chat Completions meaning and are dropped.
//!
//! `max_tokens` is sent, not `max_completion_tokens`: local servers accept it.

use serde_json::{Map, Value, json};

use super::tool_plan::tool_reference_text;
use crate::text::verbatim_block_text;

/// Characters of an untranslatable block given to the model as text.
const MAX_BLOCK_TEXT: usize = 100_000;

/// The Chat Completions body for the compiled Messages API `body`.
pub fn translate(body: &Value) -> Value {
    let mut out = Map::new();
    if let Some(model) = body.get("model") {
        out.insert("model".into(), model.clone());
    }
    let mut messages = Vec::new();
    let system = system_text(body.get("system"));
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match m.get("role").and_then(Value::as_str) {
            Some("assistant") => messages.extend(assistant(m.get("content"))),
            _ => messages.extend(user(m.get("content"))),
        }
    }
    out.insert("messages".into(), Value::Array(messages));
    for (from, to) in [
        ("max_tokens", "max_tokens"),
        ("temperature", "temperature"),
        ("top_p", "top_p"),
        ("stop_sequences", "stop"),
    ] {
        if let Some(v) = body.get(from).filter(|v| !v.is_null()) {
            out.insert(to.into(), v.clone());
        }
    }
    let tools: Vec<Value> = body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(function_tool)
        .collect();
    let has_tools = !tools.is_empty();
    if has_tools {
        out.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = body.get("tool_choice") {
        let (choice, parallel) = tool_choice(choice);
        if let Some(choice) = choice.filter(|_| has_tools) {
            out.insert("tool_choice".into(), choice);
        }
        if parallel == Some(false) && has_tools {
            out.insert("parallel_tool_calls".into(), Value::Bool(false));
        }
    }
    Value::Object(out)
}

fn system_text(system: Option<&Value>) -> String {
    match system {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
    }
}

/// The blocks of a message's `content` (a string is one text block).
fn blocks(content: Option<&Value>) -> Vec<Value> {
    match content {
        Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
        Some(Value::Array(b)) => b.clone(),
        _ => Vec::new(),
    }
}

fn kind(block: &Value) -> &str {
    block.get("type").and_then(Value::as_str).unwrap_or("")
}

fn text_part(text: impl Into<String>) -> Value {
    json!({"type": "text", "text": text.into()})
}

/// A block that has no Chat Completions form, as text the model can read.
fn as_text(block: &Value) -> Value {
    let text = match block {
        Value::Object(fields) => verbatim_block_text(fields, MAX_BLOCK_TEXT),
        other => other.to_string(),
    };
    text_part(text)
}

/// An image or document block as a content part.
fn media_part(block: &Value) -> Value {
    let source = block.get("source").unwrap_or(&Value::Null);
    let str_of = |k: &str| source.get(k).and_then(Value::as_str).unwrap_or("");
    match (kind(block), str_of("type")) {
        ("image", "base64") => json!({"type": "image_url", "image_url": {
            "url": format!("data:{};base64,{}", str_of("media_type"), str_of("data"))}}),
        ("image", "url") => json!({"type": "image_url", "image_url": {"url": str_of("url")}}),
        ("document", "base64") => {
            let name = block
                .get("title")
                .and_then(Value::as_str)
                .unwrap_or("document.pdf");
            json!({"type": "file", "file": {
                "file_data": format!("data:{};base64,{}", str_of("media_type"), str_of("data")),
                "filename": name}})
        }
        ("document", "text") => {
            let title = block.get("title").and_then(Value::as_str);
            let data = str_of("data");
            text_part(match title {
                Some(t) => format!("{t}\n\n{data}"),
                None => data.to_string(),
            })
        }
        _ => as_text(block),
    }
}

/// Content parts, as one string when all are text.
fn content_of(parts: Vec<Value>) -> Value {
    if parts.iter().all(|p| kind(p) == "text") {
        let texts: Vec<&str> = parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect();
        Value::String(texts.join("\n\n"))
    } else {
        Value::Array(parts)
    }
}

/// A user message: its tool results as `tool` messages, then the rest (and the results'
/// images) as one user message.
fn user(content: Option<&Value>) -> Vec<Value> {
    let mut out = Vec::new();
    let mut parts = Vec::new();
    let mut result_media = Vec::new();
    for block in blocks(content) {
        match kind(&block) {
            "tool_result" => {
                let id = block.get("tool_use_id").cloned().unwrap_or(Value::Null);
                let mut texts = Vec::new();
                for inner in blocks(block.get("content")) {
                    match kind(&inner) {
                        "text" => texts.push(
                            inner
                                .get("text")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_string(),
                        ),
                        "image" | "document" => result_media.push(media_part(&inner)),
                        "tool_reference" => texts.push(tool_reference_text(
                            inner.get("tool_name").and_then(Value::as_str).unwrap_or(""),
                        )),
                        _ => {
                            if let Some(t) = as_text(&inner).get("text").and_then(Value::as_str) {
                                texts.push(t.to_string());
                            }
                        }
                    }
                }
                out.push(json!({"role": "tool", "tool_call_id": id, "content": texts.join("\n")}));
            }
            "text" => parts.push(text_part(
                block.get("text").and_then(Value::as_str).unwrap_or(""),
            )),
            "image" | "document" => parts.push(media_part(&block)),
            "thinking" | "redacted_thinking" => {}
            _ => parts.push(as_text(&block)),
        }
    }
    result_media.extend(parts);
    if !result_media.is_empty() {
        out.push(json!({"role": "user", "content": content_of(result_media)}));
    }
    out
}

/// An assistant message: its text as `content`, its `tool_use` blocks as `tool_calls`.
fn assistant(content: Option<&Value>) -> Vec<Value> {
    let mut texts = Vec::new();
    let mut calls = Vec::new();
    for block in blocks(content) {
        match kind(&block) {
            "text" => texts.push(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            ),
            "tool_use" => {
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                calls.push(json!({
                    "id": block.get("id").cloned().unwrap_or(Value::Null),
                    "type": "function",
                    "function": {
                        "name": block.get("name").cloned().unwrap_or(Value::Null),
                        "arguments": input.to_string(),
                    },
                }));
            }
            "thinking" | "redacted_thinking" => {}
            _ => {
                if let Some(t) = as_text(&block).get("text").and_then(Value::as_str) {
                    texts.push(t.to_string());
                }
            }
        }
    }
    if texts.is_empty() && calls.is_empty() {
        return Vec::new();
    }
    let mut m = Map::new();
    m.insert("role".into(), "assistant".into());
    m.insert(
        "content".into(),
        if texts.is_empty() {
            Value::Null
        } else {
            Value::String(texts.join("\n\n"))
        },
    );
    if !calls.is_empty() {
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    vec![Value::Object(m)]
}

/// A custom tool as a `function` tool; `None` for the tools only Anthropic defines.
fn function_tool(tool: &Value) -> Option<Value> {
    if !matches!(
        tool.get("type").and_then(Value::as_str),
        None | Some("custom")
    ) {
        return None;
    }
    let mut function = Map::new();
    function.insert("name".into(), tool.get("name")?.clone());
    if let Some(d) = tool.get("description").filter(|d| d.is_string()) {
        function.insert("description".into(), d.clone());
    }
    function.insert(
        "parameters".into(),
        tool.get("input_schema")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"})),
    );
    Some(json!({"type": "function", "function": function}))
}

/// The Chat Completions `tool_choice`, and whether parallel calls are allowed.
fn tool_choice(choice: &Value) -> (Option<Value>, Option<bool>) {
    let parallel = choice
        .get("disable_parallel_tool_use")
        .and_then(Value::as_bool)
        .map(|d| !d);
    let mapped = match choice.get("type").and_then(Value::as_str) {
        Some("auto") => Some(json!("auto")),
        Some("any") => Some(json!("required")),
        Some("none") => Some(json!("none")),
        Some("tool") => choice
            .get("name")
            .map(|n| json!({"type": "function", "function": {"name": n}})),
        _ => None,
    };
    (mapped, parallel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_round_trip_becomes_tool_calls_and_tool_messages() {
        let body = json!({
            "model": "m", "max_tokens": 100,
            "system": [{"type": "text", "text": "You are.", "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "Be brief."}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "read a"}, {"type": "text", "text": "<system-reminder>x</system-reminder>", "cache_control": {"type": "ephemeral"}}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hm", "signature": "s"},
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a"}},
                    {"type": "tool_use", "id": "t2", "name": "Read", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "one"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "two"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]},
                    {"type": "text", "text": "go on"}]},
            ],
            "tools": [
                {"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}},
                {"type": "web_search_20250305", "name": "web_search"}],
            "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
            "thinking": {"type": "enabled", "budget_tokens": 10},
            "metadata": {"user_id": "u"},
        });
        assert_eq!(
            translate(&body),
            json!({
                "model": "m", "max_tokens": 100,
                "messages": [
                    {"role": "system", "content": "You are.\n\nBe brief."},
                    {"role": "user", "content": "read a\n\n<system-reminder>x</system-reminder>"},
                    {"role": "assistant", "content": "Reading.", "tool_calls": [
                        {"id": "t1", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\":\"/a\"}"}},
                        {"id": "t2", "type": "function", "function": {"name": "Read", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": "t1", "content": "one"},
                    {"role": "tool", "tool_call_id": "t2", "content": "two"},
                    {"role": "user", "content": [
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                        {"type": "text", "text": "go on"}]},
                ],
                "tools": [{"type": "function", "function": {"name": "Read", "description": "Read a file", "parameters": {"type": "object"}}}],
                "tool_choice": "auto",
                "parallel_tool_calls": false,
            })
        );
    }

    #[test]
    fn server_blocks_reach_the_model_as_text_and_a_call_only_turn_has_null_content() {
        let body = json!({"messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "N", "input": {"a": 1}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "tool_reference", "tool_name": "Grep"}]}]},
            {"role": "assistant", "content": [{"type": "web_search_tool_result", "tool_use_id": "s", "content": []}]},
        ]});
        let out = translate(&body);
        assert_eq!(out["messages"][0]["content"], Value::Null);
        assert_eq!(
            out["messages"][1]["content"],
            json!(tool_reference_text("Grep"))
        );
        let text = out["messages"][2]["content"].as_str().unwrap();
        assert!(text.starts_with("[web_search_tool_result: {"), "{text}");
        assert!(out.get("tools").is_none());
    }

    #[test]
    fn a_named_tool_choice_and_documents_translate() {
        let body = json!({
            "messages": [{"role": "user", "content": [
                {"type": "document", "title": "spec.pdf", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}},
                {"type": "document", "title": "notes", "source": {"type": "text", "media_type": "text/plain", "data": "hello"}},
                {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}]}],
            "tools": [{"name": "T", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "tool", "name": "T"},
            "stop_sequences": ["END"],
        });
        let out = translate(&body);
        assert_eq!(
            out["messages"][0]["content"],
            json!([
                {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBE", "filename": "spec.pdf"}},
                {"type": "text", "text": "notes\n\nhello"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
            ])
        );
        assert_eq!(
            out["tool_choice"],
            json!({"type": "function", "function": {"name": "T"}})
        );
        assert_eq!(out["stop"], json!(["END"]));
    }
}
