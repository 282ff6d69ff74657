//! A session's settings: every feature switch and knob, each with its default.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// Name of an output style: the project's `.claude/output-styles/*.md` (once the
    /// project is trusted, and never a file linking out of it), else the
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
    /// The HTTP front door's part (`ctxd --http`): set on every session it made from
    /// traffic, so a client tells a proxied session from others; settable on any session
    /// to serve its traffic in manage mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxySettings>,
}

/// `settings.proxy`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProxySettings {
    /// The conversation whose traffic made the session: `header:NAME` (the
    /// `x-ctxd-session` header), `claude-code:ID` (Claude Code's session id) or
    /// `content:SHA256` (its first message). The front door finds the session by it again
    /// after a restart. Absent on a session ctxd did not make from traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
    /// How the front door serves requests that go to this session when they carry no
    /// `x-ctxd-mode` header: `observe` (the default) or `manage`.
    #[serde(default, skip_serializing_if = "ProxyMode::is_default")]
    pub mode: ProxyMode,
}

/// `settings.proxy.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProxyMode {
    /// The client's body goes upstream byte for byte; ctxd records the exchange.
    #[default]
    Observe,
    /// ctxd sends its own compile of the session instead of the client's messages.
    Manage,
}

impl ProxyMode {
    pub fn is_default(&self) -> bool {
        *self == ProxyMode::default()
    }
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
    /// followed the last touch of its subject (the file it read, else the call itself)
    /// or, with `touch_by_use`, the last response that used one of its items. Default
    /// `null`: nothing goes stale (on real sessions every age tried cleared results the
    /// model named again; docs/policy.md).
    #[serde(default)]
    pub stale_after_rounds: Option<u32>,
    /// The most recent results of reproducible tools are never cleared as stale.
    #[serde(default = "default_lean_keep")]
    pub keep_recent: u32,
    /// While the provider's cache is warm, a batch is cleared only if its tokens are at
    /// least this percentage of the tokens after it that the cache must write again
    /// (a cold cache clears every candidate).
    #[serde(default = "default_warm_ratio")]
    pub warm_min_ratio_pct: u32,
    /// A later model response that uses one of a result's distinctive items (a line,
    /// path, identifier or long number of it, in its text or a tool call's input)
    /// touches the result, so it goes stale only `stale_after_rounds` responses after
    /// its last use. Default on.
    #[serde(default = "default_touch_by_use")]
    pub touch_by_use: bool,
    /// Each call's cache markers take the lifetime the cost model prices lower: one hour
    /// when the chance of a gap between five minutes and an hour before the next call
    /// (from the session's own pace) makes the saved rewrite worth the dearer write,
    /// five minutes otherwise. Off: the latched `cache_ttl`. Default on.
    #[serde(default = "default_on")]
    pub choose_ttl: bool,
    /// While the cache is warm, a batch is cleared when the cost model expects it to
    /// save more over the session's expected remaining warm calls than its rewrite
    /// costs, instead of by `warm_min_ratio_pct`. Default off: on real sessions its
    /// clears cost more than they saved (docs/policy.md).
    #[serde(default)]
    pub priced_clears: bool,
}

fn default_lean_keep() -> u32 {
    6
}
fn default_warm_ratio() -> u32 {
    300
}
fn default_touch_by_use() -> bool {
    true
}
fn default_on() -> bool {
    true
}

impl Default for LeanSettings {
    fn default() -> Self {
        LeanSettings {
            stale_after_rounds: None,
            keep_recent: default_lean_keep(),
            warm_min_ratio_pct: default_warm_ratio(),
            touch_by_use: default_touch_by_use(),
            choose_ttl: true,
            priced_clears: false,
        }
    }
}

impl LeanSettings {
    pub fn is_default(&self) -> bool {
        *self == LeanSettings::default()
    }
}
