//! `context.compile`: the exact Messages API request body, plus what was decided.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompileParams {
    pub session_id: String,
    /// A sub-agent of `session_id` whose thread this call addresses (see `agent.start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// A fire-and-forget side request: the message cache breakpoint goes on the
    /// second-to-last message so the side request does not extend the main cache chain.
    #[serde(default)]
    pub side_request: bool,
    /// The instant (RFC 3339) at which time-based decisions are taken; the daemon's clock
    /// when absent. Replays pass the original time.
    #[serde(default)]
    pub now: Option<String>,
    /// Request-level flags (beta headers, cache TTL and scope, extra parameters). Latched
    /// per session once sent: see `metadata.cache`.
    #[serde(default)]
    pub flags: Option<crate::cache::RequestFlags>,
    /// The wire format of `request`: the Messages API (default), or a Chat Completions
    /// body translated from it for OpenAI-compatible servers.
    #[serde(default, skip_serializing_if = "CompileFormat::is_default")]
    pub format: CompileFormat,
}

/// The API a compiled request is written for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompileFormat {
    /// The Anthropic Messages API (`POST /v1/messages`).
    #[default]
    Anthropic,
    /// OpenAI Chat Completions (`POST /chat/completions`): system as a system message,
    /// `tool_use` as `tool_calls`, `tool_result` as `tool` messages, images as data
    /// URLs; thinking and cache markers dropped.
    OpenaiChat,
}

impl CompileFormat {
    pub fn is_default(&self) -> bool {
        *self == CompileFormat::Anthropic
    }
}

/// Where the context stands against the session's limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContextState {
    /// `W - min(O, 20000)`.
    pub effective_window: u64,
    /// Autocompact threshold: `E - 13000`, lowered by the percentage override.
    pub autocompact_threshold: u64,
    /// `autocompact_threshold - 20000`.
    pub warning_threshold: u64,
    /// `E - 3000` (or the configured margin).
    pub blocking_limit: u64,
    /// Estimate minus what snips freed since the anchor.
    pub effective_tokens: u64,
    pub percent_left: u64,
    pub is_above_warning: bool,
    pub is_above_error: bool,
    pub above_autocompact: bool,
    pub at_blocking_limit: bool,
}

/// What microcompact did in this compile.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct MicrocompactReport {
    /// Results cleared by the time-based path in this compile.
    pub time_based_cleared: Vec<String>,
    /// Results newly deleted by a cache edit in this compile.
    pub cache_edits_added: Vec<String>,
    /// Pinned cache edits re-sent in this request.
    pub cache_edits_pinned: u32,
    /// Results the lean policy cleared in this compile, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy_cleared: Vec<PolicyClear>,
}

/// The lean policy's cost model at one compile (`metadata.cost`): its inputs and the
/// savings it expected, in US dollars, so a reader can see why it acted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CostExpectation {
    /// The prices the model was priced at, dollars per million tokens.
    pub prices: crate::models::Prices,
    /// The session's pace: gaps between its model calls so far, by length.
    pub pace: Pace,
    /// Tokens of this request, and of those the cache must write (all of them on a cold
    /// cache, else what was added since the previous call).
    pub request_tokens: u64,
    pub write_tokens: u64,
    /// `5m` or `1h`: the lifetime this request's cache markers carry.
    pub ttl: String,
    /// What writing with the one-hour lifetime is expected to save against five
    /// minutes, over the next gap (negative: it costs more).
    pub ttl_1h_saving: f64,
    /// Calls the session is expected to make before its cache next goes cold.
    pub expected_warm_calls: f64,
    /// The warm batch of clears weighed, when there were candidates: what it is
    /// expected to save over the expected warm calls, less its rewrite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear_saving: Option<f64>,
}

/// Gaps between a session's consecutive model calls, by length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Pace {
    pub calls: u64,
    /// At most five minutes (a tool loop, or a quick reply).
    pub within_5m: u64,
    /// Over five minutes, at most an hour: a five-minute entry is gone, an hour's is not.
    pub within_1h: u64,
    pub over_1h: u64,
}

/// One result the lean policy cleared, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PolicyClear {
    pub tool_use_id: String,
    /// `superseded` (a later call produced it again) or `stale` (its subject, and with
    /// `settings.lean.touch_by_use` its items, untouched for
    /// `settings.lean.stale_after_rounds` responses).
    pub rule: String,
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

/// An attachment record a compile appended, and its attachment type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AddedAttachment {
    pub uuid: String,
    /// The attachment's `type`; empty for a record without one.
    #[serde(rename = "type")]
    pub kind: String,
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
    pub context: ContextState,
    /// Tokens removed by snips after the usage anchor (subtracted before the threshold
    /// tests, because the anchor's usage still counts them).
    pub snip_tokens_freed: u64,
    pub microcompact: MicrocompactReport,
    /// Attachment records this compile collected and appended to the transcript
    /// (queued_command, date_change, edited_text_file, nested_memory, plan_mode, the task
    /// reminder, relevant_memories), in that order.
    pub attachments_added: Vec<String>,
    /// The records of `attachments_added`, in the same order, each with what it
    /// attached: its attachment `type` (`at_mention`, `queued_command`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added_attachments: Vec<AddedAttachment>,
    /// The transcript's last uuid after this compile (attachments move it): pass it as
    /// `expected_last_uuid` to the next append.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_uuid: Option<String>,
    /// Hook contexts (`hook_additional_context`, `hook_blocking_error` records) the
    /// request carries, in transcript order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hook_contexts: Vec<crate::hooks::HookContextRef>,
    /// Set when this compile compacted the history first (autocompact or recovery).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionReport>,
    /// Each attachment source of this compile: ok, skipped (still running when the
    /// collection's time bound ran out) or failed, in the fixed order of kinds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachment_sources: Vec<crate::attachments::SourceReport>,
    /// Uncached system sections (recomputed every compile) with their reason, and
    /// whether their text changed since the previous compile, which breaks the cache.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncached_sections: Vec<crate::attachments::UncachedSectionReport>,
    /// Autocompact was due but skipped or failed: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autocompact_skipped: Option<String>,
    /// What the provider's prompt cache is predicted to serve, and the latched flags.
    pub cache: crate::cache::CacheMetadata,
    /// The lean policy's cost model at this compile: the session's pace, the prices,
    /// and what it expected of the lifetime it chose and of the clears it weighed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostExpectation>,
    /// Tools the messages call that the session does not define, sent as placeholder
    /// definitions (the public API refuses a request whose messages call an undefined
    /// tool): an imported transcript, or a tool since removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placeholder_tools: Vec<String>,
    /// The official SDK sends this request only streamed: with its `max_tokens` a
    /// non-streamed call may run past ten minutes (`messages.stream(**body)` or
    /// `stream=True`).
    #[serde(default)]
    pub stream_required: bool,
    /// Keys of the body the public Messages API does not define, present because the
    /// session opted in to Claude Code's extensions: `cache_control.scope` (its beta
    /// header is in `cache.headers`), `cache_reference`, `cache_edits`. Empty by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub non_public: Vec<String>,
    /// Compaction cannot make the room it must: this compile's compaction left more than
    /// half the autocompact threshold, or the last attempt could not get below the
    /// threshold at all (the system prompt, tools and instructions alone may be too
    /// large). Autocompact then waits for new messages instead of compacting again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_shortfall: Option<CompactionShortfall>,
}

/// How far a compaction stayed from its target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompactionShortfall {
    /// Half the autocompact threshold: what a compaction must leave at most.
    pub target_tokens: u64,
    /// The estimate of the smallest new history compaction could build.
    pub best_tokens: u64,
    pub reason: String,
}

/// What one compaction did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompactionReport {
    /// `auto`, `manual` or `reactive`.
    pub trigger: String,
    pub boundary_uuid: String,
    pub pre_tokens: u64,
    /// Estimate of the new history.
    pub post_tokens: u64,
    pub summariser: String,
    pub summary_chars: u64,
    /// Records summarised, and rounds dropped from the head to make the request fit.
    pub summarised_records: u64,
    pub head_truncated_rounds: u64,
    /// Files re-read from disk into the new history.
    pub restored_files: Vec<String>,
    /// Recently read files left out, each with why (`PATH: outside the session's
    /// workspace`, unreadable, too large). Only files whose Read succeeded are candidates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restore_skipped: Vec<String>,
    /// Wall time of the compaction in microseconds.
    pub micros: u64,
    /// `full` (summariser) or `session_memory` (the session's notes as the summary).
    pub kind: String,
    /// Records kept verbatim after the summary (session-memory compact).
    pub kept_records: u64,
    /// Why session-memory compact was not used (autocompact tries it first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_memory_skipped: Option<String>,
    /// Half the autocompact threshold: `post_tokens` should be at most this.
    #[serde(default)]
    pub target_tokens: u64,
    /// How many times the caps (summary, notes, kept tail, restored files) were halved
    /// to reach the target.
    #[serde(default)]
    pub tightenings: u32,
}

/// `context.compact`: compact now (manual).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactParams {
    pub session_id: String,
    /// Extra instructions for the summariser.
    #[serde(default)]
    pub instructions: Option<String>,
}

/// `context.report_error`: the provider refused a compiled request. ctxd compacts
/// reactively and answers with the next request to send.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportErrorParams {
    pub session_id: String,
    /// `prompt_too_long` or `media_too_large`.
    pub kind: String,
    /// How many tokens over the limit the request was, when the provider said.
    #[serde(default)]
    pub token_gap: Option<u64>,
    /// For `media_too_large`: the record and block holding the refused media.
    #[serde(default)]
    pub record_uuid: Option<String>,
    #[serde(default)]
    pub block_index: Option<u32>,
}

/// `context.provide_summary`: a client's answer to `summary_requested`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProvideSummaryParams {
    pub request_id: String,
    /// The model's text (analysis and all; ctxd extracts the summary).
    #[serde(default)]
    pub text: Option<String>,
    /// Set instead of `text` when the model call failed.
    #[serde(default)]
    pub error: Option<String>,
    /// The model said the request was too long (by this many tokens, if known).
    #[serde(default)]
    pub prompt_too_long: bool,
    #[serde(default)]
    pub token_gap: Option<u64>,
}

/// `context.touch_paths`: files the agent touched through tools ctxd does not know, so
/// their directories' instruction files can follow (`nested_memory`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TouchPathsParams {
    pub session_id: String,
    /// Absolute paths (relative ones are taken against the session's cwd).
    pub paths: Vec<String>,
}

/// `context.report_read`: the model has now seen this file as it is on disk (for
/// clients whose read tool is not Claude Code's `Read`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportReadParams {
    pub session_id: String,
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AckResponse {
    pub ok: bool,
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

/// `context.snip`: remove the user message `from_id` through the user message `to_id`
/// (short ids as shown in `[id:xxxxxx]`) and everything between them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SnipParams {
    pub session_id: String,
    pub from_id: String,
    pub to_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SnipResponse {
    /// uuids removed from the projection (the transcript keeps them).
    pub removed: Vec<String>,
    pub tokens_freed: u64,
    /// Records added to the named range so no tool_use/tool_result pair is split.
    pub widened_by: u64,
    /// The `snip_boundary` system record that holds the removal.
    pub boundary_uuid: String,
}
