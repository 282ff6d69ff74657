//! `context.compile`: the exact Messages API request body, plus what was decided.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompileParams {
    pub session_id: String,
    /// A fire-and-forget side request: the message cache breakpoint goes on the
    /// second-to-last message so the side request does not extend the main cache chain.
    #[serde(default)]
    pub side_request: bool,
}

/// Where one system section landed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SectionLayout {
    pub name: String,
    /// `static`, `boundary`, `memoized`, `uncached` or `system_context`.
    pub class: String,
    /// Index of the `system` block that carries it (`null` for the boundary itself).
    pub block: Option<u32>,
    pub chars: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TokenEstimate {
    /// Estimated input tokens of the request's messages (anchored on the last usage).
    pub estimated_tokens: u64,
    /// uuid of the assistant record whose usage anchors the estimate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor_uuid: Option<String>,
    /// Tokens proven by the anchor's usage.
    pub anchor_tokens: u64,
    /// Estimated tokens of what follows the anchor (safety factor applied).
    pub estimated_tail_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompileMetadata {
    pub tokens: TokenEstimate,
    pub message_count: u32,
    pub system_sections: Vec<SectionLayout>,
    /// Records of the transcript that the projection covers (after the last boundary).
    pub projected_records: u32,
    /// Last transcript sequence number the compile saw.
    pub last_seq: u64,
    /// Hex SHA-256 of the request body bytes.
    pub request_sha256: String,
    pub request_bytes: u64,
    /// What normalisation repaired, one line per repair.
    pub repairs: Vec<String>,
    /// tool_use ids whose results this compile decided to persist (their fate is now
    /// frozen as a `<persisted-output>` block).
    pub replaced: Vec<String>,
    /// tool_use ids seen for the first time and kept whole.
    pub kept: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Replacement {
    pub tool_use_id: String,
    /// `budget` (tool-result budget) or `microcompact` (time-based clearing).
    pub stage: String,
    /// The exact string shown instead of the result; absent when it was kept whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
    /// The transcript's last sequence number when the fate was decided.
    pub decided_seq: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplacementsResponse {
    pub replacements: Vec<Replacement>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CompileResponse {
    /// The Messages API request body, exactly as ctxd serialised it (kept raw so that
    /// decoding and re-encoding cannot reorder its bytes).
    #[schemars(with = "serde_json::Value")]
    pub request: Box<serde_json::value::RawValue>,
    pub metadata: CompileMetadata,
}
