//! Prompt-cache care: request flags and their latches, the predicted cache
//! prefix of every compile, cache breaks seen in reported usage, and the usage picture
//! of the context window (`context.usage`, Claude Code's `/context`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Request-level flags a client asks for. They change the provider's cache key, so ctxd
/// latches them per session once first sent: later compiles keep sending what was
/// latched until a compaction starts a new history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestFlags {
    /// Beta features, sent as the `anthropic-beta` header. Sticky: a beta once sent stays
    /// until the latch resets; a new one is added (and breaks the cache once).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub betas: Vec<String>,
    /// Prompt-cache TTL of every cache marker: `5m` (the provider's default) or `1h`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_ttl: Option<String>,
    /// `org` (the default: the public API's organisation-wide cache) or `global`
    /// (Claude Code's extension, not in the public API: the static system prefix is
    /// cached with `scope: "global"` when no MCP tools are present, and the compile's
    /// headers carry the beta it needs). `auto` is accepted as the old name of `global`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
    /// Extra top-level request parameters (e.g. `thinking`, `temperature`,
    /// `output_config`). The request's own fields (`model`, `max_tokens`, `system`,
    /// `tools`, `messages`) cannot be set here.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// What the provider's prompt cache is predicted to serve of a compiled request,
/// against the previous compile of the same session. Cache markers are ignored: they are
/// not part of the cache key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CacheMetadata {
    /// Estimated tokens the cache will serve: the longest identical prefix that ends
    /// where the previous request wrote a cache entry and that a breakpoint of this
    /// request can reach.
    pub predicted_read_tokens: u64,
    /// Bytes of the identical prefix (system, then tools, then messages; canonical
    /// serialisation without cache markers).
    pub prefix_bytes: u64,
    /// Estimated tokens of the whole request, counted the same way as the prediction.
    pub request_tokens: u64,
    /// Where this request first differs from the previous one: `model`, `flags`,
    /// `system[i]`, `tools[NAME]` or `messages[i]`. Absent when the previous request is
    /// a prefix of this one (or there is none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<String>,
    /// The difference is expected: `first_compile`, `compaction`, `cache_edit`,
    /// `time_based_microcompact`, `lean_policy` (the lean policy cleared results),
    /// `ttl_expiry` (the last model call answered longer ago
    /// than the latched TTL: nothing is predicted read), `server_context_edit` (the
    /// provider's context editing cleared part of the last request: it rewrites the
    /// prefix from the first cleared result), `uncached_section:NAME` (an uncached
    /// system section changed; `metadata.uncached_sections` gives its reason), or, for a
    /// client's own request seen by the HTTP front door, `history_edited` (its messages
    /// differ from those it sent before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_break: Option<String>,
    /// The flags this request carries (what the latch holds).
    pub flags: RequestFlags,
    /// HTTP headers to send with the body (`anthropic-beta`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Changes the client asked for that the latch refused (the latched value was
    /// sent), and latched additions that break the cache once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latch_notes: Vec<String>,
}

/// `context.cache_report`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CacheReportParams {
    pub session_id: String,
}

/// Why the cache read dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CacheBreak {
    /// `client_change` (the compiled requests differ; `changes` names what),
    /// `ttl_expiry` (the gap since the previous call exceeded the TTL) or
    /// `server_eviction` (nothing changed and the TTL had not run out).
    pub cause: String,
    /// What changed, one line each (e.g. `tools added: Foo`, `system +120 chars`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<String>,
    /// Seconds between the previous call and this request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_secs: Option<u64>,
    /// Cache-read tokens of the previous call and of this one.
    pub previous_read_tokens: u64,
    pub read_tokens: u64,
}

/// One model call (an assistant response with usage) of the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CacheCall {
    /// uuid and sequence number of the record carrying the usage.
    pub uuid: String,
    pub seq: u64,
    pub timestamp: String,
    pub input_tokens: u64,
    pub cache_creation_tokens: u64,
    pub cache_read_tokens: u64,
    pub output_tokens: u64,
    /// What ctxd predicted for the request of this call, when ctxd compiled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_read_tokens: Option<u64>,
    /// The drop in cache reads was expected: `compaction` (ctxd's or the provider's),
    /// `cache_edit`, `time_based_microcompact`, `lean_policy`, `ttl_expiry` (the compile saw the TTL
    /// run out), `server_context_edit` (the provider's context editing cleared part
    /// of this call's request) or `history_edited` (a client's request through the HTTP
    /// front door whose messages differ from those it sent before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_drop: Option<String>,
    /// Set when the cache read fell below 95% of the previous call's and by at least
    /// 2,000 tokens, without an expected cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_break: Option<CacheBreak>,
    /// Input tokens the provider's context editing cleared from this call's request
    /// (`context_management.applied_edits[].cleared_input_tokens`, summed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cleared_tokens: Option<u64>,
    /// The provider's own diagnosis (`diagnostics.cache_miss_reason` of the response,
    /// as it came; `null` when the provider had none yet), when the request asked for
    /// it (`settings.cache_diagnostics`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_miss_reason: Option<serde_json::Value>,
    /// Whether ctxd and the provider agree on this call: both saw the cache miss (ctxd:
    /// an expected drop, a break, or a miss its compile predicted) or neither did. Absent when the provider gave no
    /// verdict (no diagnosis, still pending, previous message not found, unavailable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agrees: Option<bool>,
    /// The model that answered (the response's `model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The call's cost in US dollars at the model catalogue's list prices (uncached
    /// input, cache writes by TTL, cache reads, output); absent for a model the
    /// catalogue does not list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CacheReportResponse {
    pub calls: Vec<CacheCall>,
    /// Unexpected breaks among `calls`.
    pub breaks: u64,
    /// Calls the provider gave a verdict on (`agrees` set), and those where ctxd's
    /// reading agreed with it.
    #[serde(default)]
    pub diagnosed: u64,
    #[serde(default)]
    pub agreed: u64,
    /// The session's cost so far in US dollars: the sum of the calls' `cost_usd`
    /// (calls of models the catalogue does not list count nothing).
    #[serde(default)]
    pub cost_usd: f64,
}

/// `context.usage`: what fills the window now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageParams {
    pub session_id: String,
}

/// One category of the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UsageCategory {
    /// `system`, `tools`, `instruction_files`, `messages`, `attachments`,
    /// `tool_results`, `free_space` or `autocompact_buffer`.
    pub name: String,
    pub tokens: u64,
    /// Share of the context window, in percent (one decimal).
    pub percent: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UsageResponse {
    pub model: String,
    pub context_window: u64,
    /// The estimate that drives the thresholds (anchored on the last usage).
    pub used_tokens: u64,
    pub autocompact_threshold: u64,
    /// Categories in display order; they sum to the context window.
    pub categories: Vec<UsageCategory>,
    /// Attachment records in the view, those the next compile would append included.
    pub attachments: u64,
    /// Messages of the request that would be compiled now.
    pub messages: u64,
}
