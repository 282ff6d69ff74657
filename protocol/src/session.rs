//! Sessions: model profile, settings, system prompt sections.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the session's model can hold and produce. A field left out is taken from the
/// model catalogue ([`crate::models`]) for a listed model; a model the catalogue does not
/// list needs at least `context_window`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "ModelProfileInput")]
pub struct ModelProfile {
    /// Model name put into the compiled request.
    pub model: String,
    /// Context window in tokens.
    pub context_window: u64,
    /// Maximum output tokens per response (the request's `max_tokens`).
    pub max_output_tokens: u64,
    /// Whether the model accepts thinking blocks in the history.
    pub supports_thinking: bool,
}

/// A model profile as a client gives it: any field may be left to the catalogue.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelProfileInput {
    /// `claude-sonnet-4-5` when absent.
    #[serde(default)]
    pub model: Option<String>,
    /// The catalogue's window for a listed model; required otherwise.
    #[serde(default)]
    pub context_window: Option<u64>,
    /// The model's output limit, at most 32,000; 32,000 for a model not listed.
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    #[serde(default)]
    pub supports_thinking: Option<bool>,
}

impl TryFrom<ModelProfileInput> for ModelProfile {
    type Error = String;
    fn try_from(i: ModelProfileInput) -> Result<Self, String> {
        let model = i.model.unwrap_or_else(default_model);
        let entry = crate::models::lookup(&model);
        let context_window = match (i.context_window, entry) {
            (Some(w), _) => w,
            (None, Some(e)) => e.context_window,
            (None, None) => {
                return Err(format!(
                    "model {model:?} is not in ctxd's model catalogue: give its context_window (and max_output_tokens)"
                ));
            }
        };
        Ok(ModelProfile {
            context_window,
            max_output_tokens: i.max_output_tokens.unwrap_or_else(|| {
                entry.map_or_else(default_max_output, crate::models::default_max_output)
            }),
            supports_thinking: i
                .supports_thinking
                .unwrap_or_else(|| entry.is_none_or(|e| e.thinking)),
            model,
        })
    }
}

fn default_model() -> String {
    "claude-sonnet-4-5".into()
}
fn default_context_window() -> u64 {
    200_000
}
fn default_max_output() -> u64 {
    32_000
}

impl Default for ModelProfile {
    fn default() -> Self {
        ModelProfile {
            model: default_model(),
            context_window: default_context_window(),
            max_output_tokens: default_max_output(),
            supports_thinking: true,
        }
    }
}

/// Feature switches and knobs of one session. Unknown keys are rejected.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionSettings {
    /// Lowers (never raises) the autocompact threshold to this percentage of the
    /// effective window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autocompact_pct_override: Option<u8>,
    /// Response language, rendered as a dynamic system section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Name of an output style: the project's `.claude/output-styles/*.md`, else the
    /// user's (`~/.claude/output-styles`), else a built-in one (`explanatory`,
    /// `learning`; `default` is none). Its prompt becomes a memoized system section; a
    /// style without `keep-coding-instructions` replaces the default coding
    /// instructions. A name found nowhere is named to the model alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_style: Option<String>,
    /// Plan mode: the model plans and changes nothing (see `session.set_plan_mode`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plan_mode: bool,
    /// The plan file named to the model in plan mode (absolute, or relative to the cwd);
    /// `HOME/sessions/SID/plan.md` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_file: Option<String>,
    /// The platform the environment section names (`linux`, `macos`, ...); the daemon's
    /// own when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// The attachments ctxd collects itself.
    #[serde(
        default,
        skip_serializing_if = "crate::attachments::AttachmentSettings::is_default"
    )]
    pub attachments: crate::attachments::AttachmentSettings,
    /// Append `[id:xxxxxx]` short ids to user messages so ranges can be snipped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub snip_enabled: bool,
    /// Ask the provider why the cache missed: each compile after a model response sends
    /// `diagnostics: {previous_message_id}` naming that response (a field of the public
    /// Messages API), with the beta header `cache-diagnosis-2026-04-07` for servers that
    /// still want it. Off by default.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cache_diagnostics: bool,
    /// The provider's context editing: the Messages API's `context_management`
    /// (`{edits: [...]}`: `clear_tool_uses_20250919`, `clear_thinking_20251015`, with
    /// their documented options), sent as given with the beta header
    /// `context-management-2025-06-27`, latched per history like the request flags.
    /// While a `clear_tool_uses_20250919` edit is set, the provider owns the clearing of
    /// tool results: ctxd's microcompact clears nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_context_management: Option<ProviderContextManagement>,
    /// Per-tool persistence thresholds in characters, by tool name, that replace the
    /// declared `min(max_result_size_chars, 50000)` (like Claude Code's per-tool flag
    /// override). Not clamped.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub tool_result_size_overrides: std::collections::BTreeMap<String, u64>,
    /// Raises the blocking limit's margin: compiles fail (prompt too long) at
    /// `effective window - this` instead of `effective window - 3000`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking_limit_margin: Option<u64>,
    /// Microcompact: clearing old tool results.
    #[serde(default, skip_serializing_if = "MicrocompactSettings::is_default")]
    pub microcompact: MicrocompactSettings,
    /// How eagerly tool results the model no longer needs are cleared: `claude_code`
    /// (the default) clears them only as Claude Code does; `lean` also clears results a
    /// later call superseded and stale ones, where the cache is rewritten cheaply.
    #[serde(default, skip_serializing_if = "ContextPolicy::is_default")]
    pub policy: ContextPolicy,
    /// The lean policy's parameters (read only when `policy` is `lean`).
    #[serde(default, skip_serializing_if = "LeanSettings::is_default")]
    pub lean: LeanSettings,
    /// Instruction files (the CLAUDE.md chain).
    #[serde(default, skip_serializing_if = "InstructionSettings::is_default")]
    pub instructions: InstructionSettings,
    /// Who writes compaction summaries; the daemon's default (embedded) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summariser: Option<SummariserConfig>,
    /// Compact automatically when the estimate reaches the autocompact threshold.
    /// Default on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autocompact: Option<bool>,
    /// Session memory: background notes, and session-memory compact.
    #[serde(default, skip_serializing_if = "MemorySettings::is_default")]
    pub memory: MemorySettings,
    /// Context collapse (off unless enabled).
    #[serde(default, skip_serializing_if = "CollapseConfig::is_default")]
    pub collapse: CollapseConfig,
    /// Hooks from Claude Code's settings files.
    #[serde(
        default,
        skip_serializing_if = "crate::hooks::HookSettings::is_default"
    )]
    pub hooks: crate::hooks::HookSettings,
    /// The model provider `context.send` calls (none: `context.send` is refused and
    /// the client sends the compiled request itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<crate::send::ProviderConfig>,
}

/// `settings.provider_context_management`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderContextManagement {
    /// The edits, each an object with its `type` and that edit's options, sent as given.
    pub edits: Vec<serde_json::Map<String, serde_json::Value>>,
}

/// Who keeps the session's memory document up to date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryExtractor {
    /// ctxd extracts in the background after model responses (the session's summariser).
    #[default]
    Daemon,
    /// ctxd only announces `extraction_due`; an attached worker writes the memory.
    External,
    Off,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemorySettings {
    #[serde(default)]
    pub extractor: MemoryExtractor,
    /// Try session-memory compact before the full compact (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact: Option<bool>,
}

impl MemorySettings {
    pub fn is_default(&self) -> bool {
        *self == MemorySettings::default()
    }
}

/// Context collapse thresholds, as percentages of the effective window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CollapseConfig {
    #[serde(default)]
    pub enabled: bool,
    #[serde(default = "pct80")]
    pub stage_at_pct: u8,
    #[serde(default = "pct90")]
    pub commit_at_pct: u8,
    #[serde(default = "pct95")]
    pub block_at_pct: u8,
    /// Commit until the estimate is below this.
    #[serde(default = "pct70")]
    pub target_pct: u8,
    /// The most recent API rounds are never collapsed.
    #[serde(default = "four")]
    pub keep_recent_rounds: u32,
    /// API rounds folded into one collapse.
    #[serde(default = "four")]
    pub span_rounds: u32,
}

fn pct70() -> u8 {
    70
}
fn pct80() -> u8 {
    80
}
fn pct90() -> u8 {
    90
}
fn pct95() -> u8 {
    95
}
fn four() -> u32 {
    4
}

impl Default for CollapseConfig {
    fn default() -> Self {
        CollapseConfig {
            enabled: false,
            stage_at_pct: 80,
            commit_at_pct: 90,
            block_at_pct: 95,
            target_pct: 70,
            keep_recent_rounds: 4,
            span_rounds: 4,
        }
    }
}

impl CollapseConfig {
    pub fn is_default(&self) -> bool {
        *self == CollapseConfig::default()
    }
}

/// A summariser back end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SummariserConfig {
    /// Offline, no model: the nine sections filled from the transcript itself.
    Embedded,
    /// Anthropic Messages API.
    Anthropic {
        /// Default `https://api.anthropic.com`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base_url: Option<String>,
        /// Name of the environment variable (of the daemon) holding the API key.
        api_key_env: String,
        model: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_secs: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_retries: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_output_tokens: Option<u64>,
    },
    /// An OpenAI-compatible chat-completions server (local servers included).
    #[serde(rename = "openai")]
    OpenAi {
        /// e.g. `http://127.0.0.1:8080/v1`.
        base_url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        api_key_env: Option<String>,
        model: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_secs: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_retries: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_output_tokens: Option<u64>,
    },
    /// The session's own `settings.provider` (its URL, key variable, timeout and
    /// retries), with the session's model unless `model` names another.
    Provider {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_output_tokens: Option<u64>,
    },
    /// The provider compacts on its own servers and returns a `compaction` block that
    /// starts the next history (Anthropic only, through `settings.provider`).
    /// `threshold`: the compile asks the provider to compact past `trigger_tokens`
    /// (`compact_20260112`), and ctxd's autocompact stands aside. `on_demand`: ctxd
    /// decides when (autocompact, `context.compact`, recovery) and asks the provider to
    /// summarise (`compaction: {type: "summarize"}`). In both modes `context.compact`
    /// asks on demand.
    Server {
        #[serde(default)]
        mode: ServerCompactionMode,
        /// `threshold`: input tokens past which the provider compacts (the API's
        /// default, 150,000, when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trigger_tokens: Option<u64>,
        /// `threshold`: the response stops after the compaction block.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pause_after_compaction: bool,
        /// Replace the provider's summarisation prompt.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instructions: Option<String>,
    },
    /// Ask an attached client to run the model (`summary_requested` event, answered by
    /// `context.provide_summary`).
    Client {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_secs: Option<u64>,
    },
}

/// When the provider's compaction runs (`SummariserConfig::Server`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ServerCompactionMode {
    #[default]
    Threshold,
    OnDemand,
}

/// How instruction files are discovered for a session.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstructionSettings {
    /// Do not load instruction files at all.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    /// Managed-policy root; the daemon's `--managed-root` (default `/etc/claude-code`)
    /// when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_root: Option<String>,
    /// `claudeMdExcludes`: globs over absolute paths; never applied to managed files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excludes: Vec<String>,
    /// Let managed, project and local files `@include` files outside the working
    /// directories.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_external_includes: bool,
    /// Read `AGENTS.md` beside every `CLAUDE.md` (right after it); default on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents_md: Option<bool>,
}

impl InstructionSettings {
    pub fn is_default(&self) -> bool {
        *self == InstructionSettings::default()
    }
}

/// Microcompact switches. Both paths are off by default, as in Claude Code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MicrocompactSettings {
    /// Time-based (cache cold): clear old results after a pause.
    #[serde(default)]
    pub time_based: bool,
    /// Pause since the last assistant response that counts as a cold cache.
    #[serde(default = "default_gap")]
    pub gap_minutes: u32,
    /// Most recent compactable results kept (at least 1).
    #[serde(default = "default_keep")]
    pub keep_recent: u32,
    /// Cached (cache warm): delete old results server-side with `cache_edits`. Only for
    /// providers that accept cache edits.
    #[serde(default)]
    pub cached: bool,
    /// Cached path fires when more than this many compactable results are live.
    #[serde(default = "default_cached_trigger")]
    pub cached_trigger: u32,
    /// Cached path keeps this many most recent compactable results.
    #[serde(default = "default_cached_keep")]
    pub cached_keep_recent: u32,
}

fn default_gap() -> u32 {
    60
}
fn default_keep() -> u32 {
    5
}
fn default_cached_trigger() -> u32 {
    20
}
fn default_cached_keep() -> u32 {
    8
}

impl Default for MicrocompactSettings {
    fn default() -> Self {
        MicrocompactSettings {
            time_based: false,
            gap_minutes: default_gap(),
            keep_recent: default_keep(),
            cached: false,
            cached_trigger: default_cached_trigger(),
            cached_keep_recent: default_cached_keep(),
        }
    }
}

impl MicrocompactSettings {
    pub fn is_default(&self) -> bool {
        *self == MicrocompactSettings::default()
    }
}

/// `settings.policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContextPolicy {
    /// Clear tool results as Claude Code does (microcompact, when enabled).
    #[default]
    ClaudeCode,
    /// Also clear superseded and stale results of reproducible tools (`settings.lean`).
    Lean,
}

impl ContextPolicy {
    pub fn is_default(&self) -> bool {
        *self == ContextPolicy::default()
    }
}

/// `settings.lean`: the lean policy's rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LeanSettings {
    /// A reproducible tool's result is stale once this many model responses have
    /// followed the last touch of its subject (the file it read, else the call itself).
    #[serde(default = "default_stale_after")]
    pub stale_after_rounds: u32,
    /// The most recent results of reproducible tools are never cleared as stale.
    #[serde(default = "default_lean_keep")]
    pub keep_recent: u32,
    /// While the provider's cache is warm, a batch is cleared only if its tokens are at
    /// least this percentage of the tokens after it that the cache must write again
    /// (a cold cache clears every candidate).
    #[serde(default = "default_warm_ratio")]
    pub warm_min_ratio_pct: u32,
}

fn default_stale_after() -> u32 {
    12
}
fn default_lean_keep() -> u32 {
    6
}
fn default_warm_ratio() -> u32 {
    300
}

impl Default for LeanSettings {
    fn default() -> Self {
        LeanSettings {
            stale_after_rounds: default_stale_after(),
            keep_recent: default_lean_keep(),
            warm_min_ratio_pct: default_warm_ratio(),
        }
    }
}

impl LeanSettings {
    pub fn is_default(&self) -> bool {
        *self == LeanSettings::default()
    }
}

/// How a dynamic system section is cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SectionCaching {
    /// Computed once; reset only by clear or compact.
    Memoized,
    /// Recomputed every turn; breaks the cache whenever it changes, so it needs a reason.
    Uncached,
}

/// One section of the system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SystemSection {
    pub name: String,
    /// The section's text (ignored when `source` computes it).
    #[serde(default)]
    pub text: String,
    /// Dynamic sections only; static sections are always part of the cached prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caching: Option<SectionCaching>,
    /// Required for `uncached` sections: why this section may break the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Computed by ctxd instead of given as `text`: `current_time` (the compile's instant
    /// in the daemon's time zone). Recomputed every compile when `uncached`, once when
    /// memoized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SectionSource>,
}

/// A section text ctxd computes itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SectionSource {
    /// `# Current time` with the compile's date, time and UTC offset.
    CurrentTime,
}

/// The client's system prompt: static sections before the dynamic boundary, dynamic
/// sections after it. Absent → ctxd's default agent contract.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SystemPrompt {
    #[serde(default, rename = "static")]
    pub static_sections: Vec<SystemSection>,
    #[serde(default, rename = "dynamic")]
    pub dynamic_sections: Vec<SystemSection>,
}

/// A tool schema registered by the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the input. Absent for server-side tools, which carry `type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<serde_json::Value>,
    /// Server-side tool type (e.g. `web_search_20250305`); sent after the regular tools.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub server_type: Option<String>,
    /// Results longer than `min(this, 50000)` characters are persisted; absent → never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_result_size_chars: Option<u64>,
    /// MCP server that provides the tool (MCP tools turn the system cache scope to org).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_server: Option<String>,
    /// Deferred tools are found through tool search instead of being sent in full.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub defer_loading: bool,
    /// Every other field of the tool definition (`strict`, `input_examples`,
    /// `allowed_callers`, a server tool's `max_uses`, `allowed_domains`,
    /// `user_location`, ...): sent in the tool as given.
    #[serde(flatten)]
    pub extra: crate::record::Extra,
}

/// A session as the daemon reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionInfo {
    pub session_id: String,
    pub cwd: String,
    pub original_cwd: String,
    pub model: ModelProfile,
    pub settings: SessionSettings,
    pub additional_directories: Vec<String>,
    /// The local date at session start (`YYYY-MM-DD`): `currentDate` in `messages[0]`.
    pub start_date: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from_uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// Number of records in the transcript.
    pub record_count: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_uuid: Option<String>,
    /// Set when the session is a sub-agent's thread (see `agent.start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<crate::agents::AgentInfo>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionCreateParams {
    /// Working directory (absolute). The CLI passes its current directory.
    pub cwd: String,
    #[serde(default)]
    pub model: Option<ModelProfile>,
    #[serde(default)]
    pub settings: Option<SessionSettings>,
    #[serde(default)]
    pub additional_directories: Vec<String>,
    #[serde(default)]
    pub system: Option<SystemPrompt>,
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    #[serde(default)]
    pub title: Option<String>,
    /// Local date override (`YYYY-MM-DD`); defaults to today.
    #[serde(default)]
    pub start_date: Option<String>,
    /// Skip the git snapshot (imports of sessions from other machines).
    #[serde(default)]
    pub no_git: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionCreateResponse {
    pub session: SessionInfo,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionListParams {
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionListResponse {
    pub sessions: Vec<SessionInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionIdParams {
    pub session_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionGetResponse {
    pub session: SessionInfo,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionForkParams {
    pub session_id: String,
    /// Copy the transcript up to and including this record; absent → all of it.
    #[serde(default)]
    pub up_to_uuid: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionForkResponse {
    pub session: SessionInfo,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionDeleteResponse {
    pub deleted: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionUpdateParams {
    pub session_id: String,
    /// A new working directory (absolute). Resets the memoized user context, as a
    /// compaction does; discovery still walks from the original cwd.
    #[serde(default)]
    pub cwd: Option<String>,
    /// A JSON merge patch (RFC 7396) on the session's settings: objects merge key by
    /// key, `null` removes a key (it takes its default again), any other value replaces
    /// what was there. `{"snip_enabled": true}` changes that one setting only.
    #[serde(default)]
    #[schemars(with = "Option<SessionSettings>")]
    pub settings: Option<serde_json::Value>,
    #[serde(default)]
    pub model: Option<ModelProfile>,
    #[serde(default)]
    pub system: Option<SystemPrompt>,
    #[serde(default)]
    pub title: Option<String>,
}

impl SessionUpdateParams {
    /// An update of `session_id`'s settings alone, to `settings` wherever they set a
    /// value.
    pub fn settings(session_id: &str, settings: SessionSettings) -> SessionUpdateParams {
        SessionUpdateParams {
            session_id: session_id.to_string(),
            cwd: None,
            settings: serde_json::to_value(settings).ok(),
            model: None,
            system: None,
            title: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsSetParams {
    pub session_id: String,
    /// The complete tool list, in the order the model should see it.
    pub tools: Vec<ToolSpec>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolsSetResponse {
    pub count: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsListResponse {
    pub tools: Vec<ToolSpec>,
}

/// Import of a Claude Code JSONL transcript into a new session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionImportParams {
    /// The transcript's text, one JSON object per line.
    pub jsonl: String,
    /// Working directory for the new session; defaults to the transcript's `cwd`.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Used when neither `cwd` nor the transcript names a working directory.
    #[serde(default)]
    pub fallback_cwd: Option<String>,
    #[serde(default)]
    pub model: Option<ModelProfile>,
    #[serde(default)]
    pub title: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ImportStats {
    /// Lines read, blank lines excluded.
    pub lines: u64,
    pub records: u64,
    pub user: u64,
    pub assistant: u64,
    pub system: u64,
    pub attachment: u64,
    pub tool_use: u64,
    pub tool_result: u64,
    /// Tool-result replacements taken from `content-replacement` lines.
    #[serde(default)]
    pub replacements: u64,
    /// UI-only lines skipped, by their `type` (`progress`, `file-history-snapshot`, ...).
    pub skipped: std::collections::BTreeMap<String, u64>,
    /// What the import did that the user should know about although it succeeded, e.g.
    /// lines skipped because they repeat an earlier line's uuid (with their count and
    /// the first such line). `ctx import` prints each on stderr.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Sub-agent threads imported as threads of their own (`agent.list`): the sidechain
    /// records of each agent linked to the call that started it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub agents: u64,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionImportResponse {
    pub session_id: String,
    pub session: SessionInfo,
    pub stats: ImportStats,
}

/// Applies a JSON merge patch (RFC 7396) to `target`.
pub fn merge_patch(target: &mut serde_json::Value, patch: serde_json::Value) {
    use serde_json::Value;
    match patch {
        Value::Object(fields) => {
            if !target.is_object() {
                *target = Value::Object(serde_json::Map::new());
            }
            if let Value::Object(t) = target {
                for (k, v) in fields {
                    if v.is_null() {
                        t.remove(&k);
                    } else {
                        merge_patch(t.entry(k).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *target = other,
    }
}

#[cfg(test)]
mod merge_tests {
    use super::merge_patch;
    use serde_json::json;

    #[test]
    fn rfc_7396_examples() {
        let mut t = json!({"a": "b", "c": {"d": "e", "f": "g"}});
        merge_patch(&mut t, json!({"a": "z", "c": {"f": null}}));
        assert_eq!(t, json!({"a": "z", "c": {"d": "e"}}));
        let mut t = json!({"a": [1]});
        merge_patch(&mut t, json!({"a": {"b": 1}}));
        assert_eq!(t, json!({"a": {"b": 1}}));
        let mut t = json!({"a": 1});
        merge_patch(&mut t, json!({"b": null}));
        assert_eq!(t, json!({"a": 1}));
    }
}
