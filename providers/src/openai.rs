//! The OpenAI-compatible chat-completions summariser (`POST {base_url}/chat/completions`),
//! meant for local servers (llama.cpp, vLLM, Ollama, LM Studio) as much as for OpenAI.
//!
//! The conversation is flattened to text, because chat servers disagree on tool-call
//! shapes and many local ones support none:
//! - a system message with our system prompt;
//! - each message keeps its role, its text blocks joined by blank lines;
//! - a `tool_use` becomes the assistant line `[called NAME with {json input}]`;
//! - a `tool_result` becomes the user text `[result of NAME (ID)]: …` (`[error from …]` when
//!   the call failed);
//! - images and documents become `[image]` / `[document]`, thinking is dropped;
//! - the last user message carries the compact prompt (see `prompt::request_messages`,
//!   which this starts from, so both providers send the same conversation).
//!
//! `max_tokens` is sent (not `max_completion_tokens`): it is what local servers accept.

use std::time::Duration;

use ctxd_protocol::{ContentBlock, ToolResultBlock, ToolResultContent};
use reqwest::header::{AUTHORIZATION, HeaderMap};
use serde_json::{Value, json};

use super::ProviderError;
use super::http::{self, Call, EnvLookup, RetryPolicy};
use ctxd_pipeline::message::{ApiMessage, Role};

pub(crate) struct OpenAi {
    client: reqwest::Client,
    url: String,
    api_key_env: Option<String>,
    model: String,
    timeout: Duration,
    retry: RetryPolicy,
    max_tokens: u64,
}

pub(crate) struct Settings<'a> {
    pub(crate) base_url: &'a str,
    pub(crate) api_key_env: Option<&'a str>,
    pub(crate) model: &'a str,
    pub(crate) timeout_secs: Option<u64>,
    pub(crate) max_retries: Option<u32>,
    pub(crate) max_output_tokens: Option<u64>,
}

impl OpenAi {
    pub fn new(s: Settings<'_>) -> Result<OpenAi, ProviderError> {
        if s.model.trim().is_empty() {
            return Err(ProviderError::Misconfigured(
                "model must not be empty".into(),
            ));
        }
        Ok(OpenAi {
            client: http::client()?,
            url: http::join_url(s.base_url, "/chat/completions")?,
            api_key_env: s
                .api_key_env
                .filter(|v| !v.trim().is_empty())
                .map(str::to_string),
            model: s.model.to_string(),
            timeout: http::timeout(s.timeout_secs)?,
            retry: RetryPolicy::new(s.max_retries),
            max_tokens: super::anthropic::max_tokens(s.max_output_tokens)?,
        })
    }

    #[cfg(test)]
    pub(crate) fn set_retry_delays(&mut self, base: Duration) {
        self.retry.base_delay = base;
    }

    /// One text completion of `messages` under `system` (summaries and session-memory
    /// extractions share the transport, the key handling and the retries).
    pub(crate) async fn complete(
        &self,
        system: &str,
        messages: &[ApiMessage],
        env: &EnvLookup,
    ) -> Result<String, ProviderError> {
        let mut headers = HeaderMap::new();
        let key = match &self.api_key_env {
            Some(var) => {
                let key = http::api_key(env, var, "OpenAI-compatible")?;
                headers.insert(
                    AUTHORIZATION,
                    http::secret_header(var, &format!("Bearer {key}"))?,
                );
                Some(key)
            }
            None => None,
        };
        let body = json!({
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": chat_from(system, messages),
        });
        let call = Call {
            provider: "openai",
            url: &self.url,
            headers,
            timeout: self.timeout,
            retry: self.retry,
            secret: key.as_deref(),
        };
        let answer = http::post_json(&self.client, &call, &body).await?;
        response_text(&answer)
    }
}

/// The chat-format conversation (see the module docs) under `system`.
pub(crate) fn chat_from(system: &str, messages: &[ApiMessage]) -> Vec<Value> {
    // Tool names by id, so results can say which tool they answer.
    let names: Vec<(&str, &str)> = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, name, .. } => Some((id.as_str(), name.as_str())),
            _ => None,
        })
        .collect();
    let mut out = vec![json!({"role": "system", "content": system})];
    for m in messages {
        let parts: Vec<String> = m
            .content
            .iter()
            .filter_map(|b| block_text(b, &names))
            .collect();
        if parts.is_empty() {
            continue;
        }
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        out.push(json!({"role": role, "content": parts.join("\n\n")}));
    }
    out
}

fn block_text(block: &ContentBlock, names: &[(&str, &str)]) -> Option<String> {
    Some(match block {
        ContentBlock::Text { text, .. } => text.clone(),
        ContentBlock::Image { .. } => "[image]".into(),
        ContentBlock::Document { .. } => "[document]".into(),
        ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => return None,
        ContentBlock::Other(fields) => ctxd_pipeline::text::verbatim_block_text(fields, 2_000),
        ContentBlock::ToolUse { name, input, .. } => {
            let json = serde_json::to_string(input).unwrap_or_default();
            format!("[called {name} with {json}]")
        }
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
            ..
        } => {
            let name = names
                .iter()
                .find(|(id, _)| id == tool_use_id)
                .map_or("a tool", |(_, n)| n);
            let label = if *is_error { "error from" } else { "result of" };
            let text = match content {
                ToolResultContent::Text(t) => t.clone(),
                ToolResultContent::Blocks(blocks) => blocks
                    .iter()
                    .map(|b| match b {
                        ToolResultBlock::Text { text, .. } => text.clone(),
                        ToolResultBlock::Image { .. } => "[image]".into(),
                        ToolResultBlock::Document { .. } => "[document]".into(),
                        ToolResultBlock::ToolReference { tool_name, .. } => {
                            ctxd_pipeline::tool_plan::tool_reference_text(tool_name)
                        }
                        ToolResultBlock::Other(fields) => {
                            ctxd_pipeline::text::verbatim_block_text(fields, 2_000)
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            };
            format!("[{label} {name} ({tool_use_id})]: {text}")
        }
    })
}

/// `choices[0].message.content`: a string, or (some servers) a list of text parts.
pub(crate) fn response_text(answer: &Value) -> Result<String, ProviderError> {
    let content = answer.pointer("/choices/0/message/content");
    let text = match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .concat(),
        _ => String::new(),
    };
    if text.trim().is_empty() {
        let finish = answer
            .pointer("/choices/0/finish_reason")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        return Err(ProviderError::Failed(format!(
            "the model returned no text (finish_reason: {finish})"
        )));
    }
    Ok(text)
}

#[cfg(test)]
mod tests;
