//! `context.send`: ctxd makes the model call itself. The session's provider
//! (`settings.provider`) gets the compiled request, streamed; the answer is appended as
//! the provider returned it and returned to the caller.

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
        /// The whole call's bound, from the first byte sent to the last received
        /// (default 600).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_secs: Option<u64>,
        /// Retries on 408, 429, 5xx and 529, and on an `overloaded_error` event before
        /// any content (default 2); `retry-after` is honoured.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_retries: Option<u32>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendParams {
    pub session_id: String,
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
    /// The compile's request hash: the bytes that were sent, less `stream`.
    pub request_sha256: String,
}
