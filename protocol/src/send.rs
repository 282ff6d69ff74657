//! `context.send`: ctxd makes the model call itself. The session's provider
//! (`settings.provider`) gets the compiled request, streamed; the answer is appended as
//! the provider returned it and returned to the caller. `context.send_stream` runs the
//! same turn and streams it to the caller as it comes.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::record::Usage;

/// The model provider `context.send` calls for a session. The key is read from the
/// named environment variable of the daemon at each call: never stored, logged or
/// shown in an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ProviderConfig {
    /// The Anthropic Messages API (`POST {base_url}/v1/messages`, streamed).
    Anthropic {
        /// Default `https://api.anthropic.com`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base_url: Option<String>,
        /// Name of the environment variable (of the daemon) holding the API key.
        api_key_env: String,
        /// More HTTP headers to send (not the key; `anthropic-beta` values are added to
        /// those the compile needs).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
        /// One attempt's bound, from the first byte sent to the last received (default
        /// 600); a retry gets its own.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_secs: Option<u64>,
        /// Retries on 408, 429, 5xx and 529, and on an `overloaded_error` event before
        /// any content (default 2); `retry-after` is honoured.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_retries: Option<u32>,
    },
    /// An OpenAI-compatible Chat Completions server (`POST {base_url}/chat/completions`,
    /// streamed): vLLM, llama.cpp's server, Ollama, LM Studio, OpenRouter, OpenAI. The
    /// compiled request is translated as `context.compile {format: "openai_chat"}` does.
    OpenaiCompatible {
        /// The API root, with its version path: `http://127.0.0.1:8080/v1`,
        /// `https://api.openai.com/v1`.
        base_url: String,
        /// Name of the environment variable holding the key, sent as `Authorization:
        /// Bearer`. Absent: no key is sent (local servers need none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        api_key_env: Option<String>,
        /// More HTTP headers to send (not the key).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
        /// One attempt's bound (default 600); a retry gets its own.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_secs: Option<u64>,
        /// Retries on 408, 429 and 5xx (default 2); `retry-after` is honoured.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_retries: Option<u32>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendParams {
    pub session_id: String,
    /// A sub-agent of `session_id` whose thread this call addresses (see `agent.start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

impl SendParams {
    /// A turn of the session's main thread.
    pub fn main(session_id: impl Into<String>) -> SendParams {
        SendParams {
            session_id: session_id.into(),
            agent_id: None,
        }
    }
}

/// What a turn sent and got back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SendResponse {
    /// The message as the provider streamed it (every block and field), as appended.
    pub message: serde_json::Value,
    /// The appended record.
    pub uuid: String,
    pub seq: u64,
    pub stop_reason: Option<String>,
    pub usage: Option<Usage>,
    /// Attempts beyond the first (429, 529, 5xx, overloaded).
    pub retries: u32,
    /// The compile's request hash: the bytes that were sent, less `stream` (after a
    /// recovery, those of the retried request).
    pub request_sha256: String,
    /// The provider said the request was too long, ctxd made room and sent it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<TurnRecovery>,
}

/// How a turn recovered from a request the provider found too long.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnRecovery {
    /// The provider's refusal, as it said it.
    pub error: String,
    /// How many tokens over the limit the request was, when the provider said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_gap: Option<u64>,
    /// `collapse` (the staged collapses were committed) or `compaction` (a reactive
    /// compaction ran).
    pub by: String,
    /// The refused request's hash.
    pub refused_request_sha256: String,
}

/// One `context.send_event` notification of a `context.send_stream` turn. The events
/// come in this order: `started`, the provider's `event`s, then `finished` or `failed`
/// (the last one; the subscription ends after it). `retrying` and `recovering` mean the
/// events so far are void: the next attempt streams again from `message_start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TurnEvent {
    /// The compiled request is being sent.
    Started {
        session_id: String,
        request_sha256: String,
    },
    /// One event of the provider's stream, as the provider sent it (fields and event
    /// types ctxd does not know included). For an OpenAI-compatible provider, its chunks
    /// translated into the same grammar.
    Event {
        #[schemars(with = "StreamEvent")]
        event: serde_json::Value,
    },
    /// The attempt failed in a way that may pass; the next starts after `delay_ms`.
    Retrying {
        attempt: u32,
        delay_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        message: String,
    },
    /// The provider said the request is too long; ctxd makes room and sends it again.
    Recovering {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token_gap: Option<u64>,
    },
    /// The answer was appended: what `context.send` answers.
    Finished { response: Box<SendResponse> },
    /// The turn failed and nothing was appended: the JSON-RPC error `context.send` would
    /// have answered.
    Failed {
        code: i32,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<serde_json::Value>,
    },
}

/// The Messages API's stream events, as `TurnEvent::Event` carries them (documentation
/// of the grammar; the daemon forwards each event's JSON as the provider sent it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// The message, with empty `content` and the input side of `usage`.
    MessageStart {
        message: serde_json::Value,
    },
    /// Block `index` begins (its text, thinking or input still empty).
    ContentBlockStart {
        index: u32,
        content_block: serde_json::Value,
    },
    ContentBlockDelta {
        index: u32,
        delta: BlockDelta,
    },
    ContentBlockStop {
        index: u32,
    },
    /// Top-level fields that changed (`stop_reason`, `stop_sequence`) and the final
    /// output side of `usage`.
    MessageDelta {
        delta: serde_json::Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<serde_json::Value>,
    },
    MessageStop,
    Ping,
    /// The provider failed mid-stream (`error.type`: `overloaded_error`, ...).
    Error {
        error: serde_json::Value,
    },
}

/// A piece of a content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BlockDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    /// A piece of a `tool_use` input's JSON text; the pieces joined parse at the stop.
    InputJsonDelta {
        partial_json: String,
    },
    CitationsDelta {
        citation: serde_json::Value,
    },
}
