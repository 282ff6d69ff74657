//! Chat Completions traffic recorded like Messages-API traffic: the request's messages
//! read as the Messages API's (so one mapping, one fingerprint and one record shape serve
//! both), the answer folded by the engine's `ChatFolder`.
//!
//! - `system` and `developer` messages are system messages (kept whole by the recording);
//! - a user message's text parts are text blocks, other parts kept as they came;
//! - an assistant message's text is a text block, each of its `tool_calls` a `tool_use`
//!   block (`arguments` parsed; kept as a string when it is not JSON), as the folded
//!   answer records them, so a history sent back matches what was recorded;
//! - consecutive `tool` messages are one user message of `tool_result` blocks;
//! - `tools[].function` is a tool (`name`, `description`, `parameters` as its
//!   `input_schema`).

use serde_json::{Value, json};

/// The request as the Messages API would carry it; `None` when it has no messages.
pub(super) fn as_messages_request(chat: &Value) -> Option<Value> {
    let mut messages: Vec<Value> = Vec::new();
    for m in chat.get("messages")?.as_array()? {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
        match role {
            "system" | "developer" => messages.push(json!({"role": "system",
                "content": m.get("content").cloned().unwrap_or(Value::Null)})),
            "assistant" => {
                let mut blocks = text_blocks(m.get("content"));
                for call in m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let args = call
                        .pointer("/function/arguments")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    let input = if args.is_empty() {
                        json!({})
                    } else {
                        serde_json::from_str(args).unwrap_or_else(|_| Value::String(args.into()))
                    };
                    blocks.push(json!({"type": "tool_use",
                        "id": call.get("id").cloned().unwrap_or(Value::Null),
                        "name": call.pointer("/function/name").cloned().unwrap_or(Value::Null),
                        "input": input}));
                }
                messages.push(json!({"role": "assistant", "content": blocks}));
            }
            "tool" => {
                let result = json!({"type": "tool_result",
                    "tool_use_id": m.get("tool_call_id").cloned().unwrap_or(Value::Null),
                    "content": m.get("content").cloned().unwrap_or(Value::Null)});
                let joined = messages.last_mut().filter(|p| {
                    p["role"] == "user"
                        && p["content"]
                            .as_array()
                            .is_some_and(|c| c.iter().all(|b| b["type"] == "tool_result"))
                });
                match joined.and_then(|p| p["content"].as_array_mut()) {
                    Some(blocks) => blocks.push(result),
                    None => messages.push(json!({"role": "user", "content": [result]})),
                }
            }
            _ => messages.push(json!({"role": "user", "content": user_blocks(m.get("content"))})),
        }
    }
    let mut out = json!({"messages": messages});
    if let Some(model) = chat.get("model") {
        out["model"] = model.clone();
    }
    if let Some(tools) = chat.get("tools").and_then(Value::as_array) {
        out["tools"] = tools
            .iter()
            .filter_map(|t| {
                let f = t.get("function")?;
                let mut tool = json!({"name": f.get("name")?,
                    "input_schema": f.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object"}))});
                if let Some(d) = f.get("description") {
                    tool["description"] = d.clone();
                }
                Some(tool)
            })
            .collect();
    }
    Some(out)
}

/// An assistant's content as text blocks (empty text dropped, as the folded answer has
/// none).
fn text_blocks(content: Option<&Value>) -> Vec<Value> {
    let text: String = match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    };
    if text.is_empty() {
        Vec::new()
    } else {
        vec![json!({"type": "text", "text": text})]
    }
}

fn user_blocks(content: Option<&Value>) -> Value {
    match content {
        Some(Value::String(s)) => json!([{"type": "text", "text": s}]),
        Some(Value::Array(parts)) => Value::Array(
            parts
                .iter()
                .map(
                    |p| match (p.get("type").and_then(Value::as_str), p.get("text")) {
                        (Some("text"), Some(t)) => json!({"type": "text", "text": t}),
                        _ => p.clone(),
                    },
                )
                .collect(),
        ),
        _ => json!([]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_loop_reads_as_the_messages_api() {
        let chat = json!({"model": "gpt-x", "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Read a"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"p\":\"a\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "read", "arguments": "not json"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "A"},
            {"role": "tool", "tool_call_id": "c2", "content": "B"}],
            "tools": [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]});
        let m = as_messages_request(&chat).unwrap();
        assert_eq!(
            m["messages"][0],
            json!({"role": "system", "content": "Be brief."})
        );
        assert_eq!(m["messages"][2]["content"][0]["input"], json!({"p": "a"}));
        assert_eq!(m["messages"][2]["content"][1]["input"], "not json");
        assert_eq!(m["messages"].as_array().unwrap().len(), 4);
        assert_eq!(m["messages"][3]["content"][1]["tool_use_id"], "c2");
        assert_eq!(m["tools"][0]["name"], "read");
    }
}
