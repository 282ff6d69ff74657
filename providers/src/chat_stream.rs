//! A streamed Chat Completions answer as the Messages API's stream events, so that one
//! grammar reaches `context.send_stream` subscribers and one assembler folds every
//! provider's answer into the assistant message that is recorded.
//!
//! - the first chunk opens the message (`message_start`, its `id` and `model`);
//! - `delta.content` is a text block, each `delta.tool_calls[i]` a `tool_use` block (the
//!   call's `id` and `name`, its `arguments` as `input_json_delta` pieces); a block
//!   stops when the next begins;
//! - `finish_reason` becomes `stop_reason` (`stop` → `end_turn`, `length` →
//!   `max_tokens`, `tool_calls` → `tool_use`, `content_filter` → `refusal`, others as
//!   given), sent with the usage when the stream ends (`[DONE]`), since servers send the
//!   usage in a last chunk of its own;
//! - `usage.prompt_tokens_details.cached_tokens` is the cache read; `input_tokens` is
//!   the rest of `prompt_tokens`, so the sum the estimate anchors on is `prompt_tokens`;
//! - reasoning text some servers stream (`reasoning_content`) is not recorded: it has no
//!   signature another call could verify, and the next compile would drop it.

use serde_json::{Value, json};

use super::stream_error::StreamError;

#[derive(Debug, Default)]
pub(crate) struct ChatStream {
    started: bool,
    /// Blocks started so far; the last one is open unless `closed`.
    blocks: usize,
    open: Option<Open>,
    finish_reason: Option<String>,
    usage: Option<Value>,
    done: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    /// The chunk's `tool_calls[].index` of the open call.
    Tool(u64),
}

fn malformed(what: impl Into<String>) -> StreamError {
    StreamError::Malformed(what.into())
}

impl ChatStream {
    /// The events one chunk stands for.
    pub(crate) fn chunk(&mut self, chunk: &Value) -> Result<Vec<Value>, StreamError> {
        if let Some(error) = chunk.get("error") {
            return Err(StreamError::Provider {
                status: None,
                kind: error
                    .get("type")
                    .or_else(|| error.get("code"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("an error chunk")
                    .to_string(),
            });
        }
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            out.push(json!({"type": "message_start", "message": {
                "id": chunk.get("id").cloned().unwrap_or(Value::Null),
                "type": "message",
                "role": "assistant",
                "model": chunk.get("model").cloned().unwrap_or(Value::Null),
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            }}));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage.clone());
        }
        let choice = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first());
        let Some(choice) = choice else {
            return Ok(out);
        };
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            if self.open != Some(Open::Text) {
                self.begin(&mut out, Open::Text, json!({"type": "text", "text": ""}));
            }
            out.push(
                json!({"type": "content_block_delta", "index": self.blocks - 1,
                "delta": {"type": "text_delta", "text": text}}),
            );
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
            if self.open != Some(Open::Tool(index)) {
                let id = call.get("id").and_then(Value::as_str).ok_or_else(|| {
                    // Calls are numbered in the order they begin, so a lower number than
                    // the open call's is one that already began.
                    malformed(match self.open {
                        Some(Open::Tool(open)) if index < open => {
                            format!("tool call {index} continued after another began")
                        }
                        _ => format!("tool call {index} begins without an id"),
                    })
                })?;
                let name = call
                    .pointer("/function/name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                self.begin(
                    &mut out,
                    Open::Tool(index),
                    json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                );
            }
            if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str)
                && !args.is_empty()
            {
                out.push(
                    json!({"type": "content_block_delta", "index": self.blocks - 1,
                    "delta": {"type": "input_json_delta", "partial_json": args}}),
                );
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_string());
        }
        Ok(out)
    }

    fn begin(&mut self, out: &mut Vec<Value>, open: Open, block: Value) {
        self.close(out);
        out.push(
            json!({"type": "content_block_start", "index": self.blocks, "content_block": block}),
        );
        self.blocks += 1;
        self.open = Some(open);
    }

    fn close(&mut self, out: &mut Vec<Value>) {
        if self.open.take().is_some() {
            out.push(json!({"type": "content_block_stop", "index": self.blocks - 1}));
        }
    }

    /// The events that end the message (`[DONE]`, or the stream's end after a
    /// `finish_reason`). A stream that never began, or ended without a finish, is
    /// malformed.
    pub(crate) fn finish(&mut self) -> Result<Vec<Value>, StreamError> {
        if self.done {
            return Ok(Vec::new());
        }
        if !self.started {
            return Err(malformed("the stream ended before its first chunk"));
        }
        let Some(reason) = self.finish_reason.clone() else {
            return Err(malformed("the stream ended before a finish_reason"));
        };
        self.done = true;
        let mut out = Vec::new();
        self.close(&mut out);
        let stop_reason = match reason.as_str() {
            "stop" => "end_turn",
            "length" => "max_tokens",
            "tool_calls" | "function_call" => "tool_use",
            "content_filter" => "refusal",
            other => other,
        };
        let mut delta = json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null}});
        if let Some(u) = &self.usage {
            let count = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            let prompt = count("/prompt_tokens");
            let cached = count("/prompt_tokens_details/cached_tokens").min(prompt);
            delta["usage"] = json!({
                "input_tokens": prompt - cached,
                "cache_read_input_tokens": cached,
                "cache_creation_input_tokens": 0,
                "output_tokens": count("/completion_tokens"),
            });
        }
        out.push(delta);
        out.push(json!({"type": "message_stop"}));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::stream::Assembler;
    use super::*;

    fn fold(chunks: &[Value]) -> Value {
        let mut s = ChatStream::default();
        let mut a = Assembler::default();
        for c in chunks {
            for e in s.chunk(c).unwrap() {
                a.apply(&e).unwrap();
            }
        }
        for e in s.finish().unwrap() {
            a.apply(&e).unwrap();
        }
        a.finish().unwrap()
    }

    #[test]
    fn text_and_tool_calls_become_blocks_with_the_calls_ids() {
        let c = |delta: Value, finish: Value| json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "qwen", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        let message = fold(&[
            c(json!({"role": "assistant", "content": ""}), Value::Null),
            c(json!({"content": "Let me "}), Value::Null),
            c(json!({"content": "look."}), Value::Null),
            c(
                json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "Read", "arguments": ""}}]}),
                Value::Null,
            ),
            c(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"file_path\":"}}]}),
                Value::Null,
            ),
            c(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"/a\"}"}}]}),
                Value::Null,
            ),
            c(
                json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "Grep", "arguments": "{}"}}]}),
                Value::Null,
            ),
            c(json!({}), json!("tool_calls")),
            json!({"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 800}}}),
        ]);
        assert_eq!(
            message,
            json!({
                "id": "chatcmpl-1", "type": "message", "role": "assistant", "model": "qwen",
                "content": [
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "call_a", "name": "Read", "input": {"file_path": "/a"}},
                    {"type": "tool_use", "id": "call_b", "name": "Grep", "input": {}},
                ],
                "stop_reason": "tool_use", "stop_sequence": null,
                "usage": {"input_tokens": 200, "cache_read_input_tokens": 800, "cache_creation_input_tokens": 0, "output_tokens": 20},
            })
        );
    }

    #[test]
    fn an_error_chunk_and_an_unfinished_stream_are_refused() {
        let mut s = ChatStream::default();
        let err = s
            .chunk(&json!({"error": {"message": "model overloaded", "type": "server_error"}}))
            .unwrap_err();
        assert_eq!(err.to_string(), "model overloaded");
        let mut s = ChatStream::default();
        s.chunk(&json!({"id": "x", "choices": [{"delta": {"content": "hi"}}]}))
            .unwrap();
        assert!(
            s.finish()
                .unwrap_err()
                .to_string()
                .contains("finish_reason")
        );
        assert!(ChatStream::default().finish().is_err());
    }

    #[test]
    fn a_call_without_an_id_is_named_for_what_it_is() {
        let mut s = ChatStream::default();
        let first = json!({"id": "c", "model": "m", "choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "Read", "arguments": ""}}]}}]});
        let err = s.chunk(&first).unwrap_err();
        assert!(
            err.to_string().contains("tool call 0 begins without an id"),
            "{err}"
        );
        let mut s = ChatStream::default();
        let call = |i: u64, id: Option<&str>| json!({"choices": [{"delta": {"tool_calls": [{"index": i, "id": id, "function": {"name": "Read", "arguments": "{}"}}]}}]});
        s.chunk(&call(0, Some("a"))).unwrap();
        s.chunk(&call(1, Some("b"))).unwrap();
        let err = s.chunk(&call(0, None)).unwrap_err();
        assert!(
            err.to_string()
                .contains("tool call 0 continued after another began"),
            "{err}"
        );
    }
}
