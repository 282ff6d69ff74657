//! The attachments ctxd produces itself: their settings, the compile report of
//! their collection, plan mode, queued input and client-registered system sections.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::prompt::SystemSection;
use crate::record::{ContentBlock, Record};

/// Attachment collection. Every field is optional; absent means the default.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachmentSettings {
    /// Total time one compile may spend collecting attachments, in milliseconds (default
    /// 1000). A source still running then is skipped and reported in
    /// `metadata.attachment_sources`; the compile goes on without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collect_timeout_ms: Option<u64>,
    /// Remind the model of its task tools after 10 silent assistant turns (default on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_reminder: Option<bool>,
    /// Memory files relevant to the newest prompt (`relevant_memories`).
    #[serde(default, skip_serializing_if = "RelevantMemorySettings::is_default")]
    pub relevant_memories: RelevantMemorySettings,
}

impl AttachmentSettings {
    pub fn is_default(&self) -> bool {
        *self == AttachmentSettings::default()
    }
}

/// Where relevant memories come from and how they are chosen.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RelevantMemorySettings {
    /// Default on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Read Claude Code's auto-memory directory of the project
    /// (`~/.claude/projects/<project-slug>/memory/`); default on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_memory: Option<bool>,
    /// Further memory directories (absolute, or relative to the session's cwd).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub directories: Vec<String>,
    /// Who picks the files: the offline scorer (default) or the session's model
    /// provider (its summariser) as a side query.
    #[serde(default, skip_serializing_if = "MemorySelector::is_default")]
    pub selector: MemorySelector,
}

impl RelevantMemorySettings {
    pub fn is_default(&self) -> bool {
        *self == RelevantMemorySettings::default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemorySelector {
    /// BM25 over names, descriptions and bodies against the newest prompt; no model.
    #[default]
    Offline,
    /// Ask the session's summariser model for at most 5 file names (JSON); the offline
    /// scorer when the summariser is the embedded one or the query fails.
    Model,
}

impl MemorySelector {
    pub fn is_default(&self) -> bool {
        *self == MemorySelector::Offline
    }
}

/// How one attachment source fared in a compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceStatus {
    /// Ran to the end (possibly with nothing to add).
    Ok,
    /// Still running when the collection's time bound ran out: left out of this compile.
    Skipped,
    /// Failed: left out of this compile; `reason` says why.
    Failed,
}

/// One attachment source's run in a compile (`metadata.attachment_sources`), in the
/// fixed order of attachment kinds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SourceReport {
    /// `queued_commands`, `date_change`, `changed_files`, `nested_memory`, `plan_mode`,
    /// `task_reminder` or `relevant_memories`.
    pub name: String,
    pub status: SourceStatus,
    /// Wall time of the source, in microseconds (the bound, when skipped).
    pub micros: u64,
    /// Attachments it added.
    pub attachments: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// An uncached system section in a compile (`metadata.uncached_sections`): it is
/// recomputed every compile, and a change breaks the prompt cache from there on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UncachedSectionReport {
    pub name: String,
    /// Why the section may break the cache (required when it is registered).
    pub reason: String,
    /// Its text differs from the previous compile's.
    pub changed: bool,
}

/// `session.set_plan_mode`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanModeParams {
    pub session_id: String,
    /// On or off. The next compile carries the entry (or exit) reminder.
    pub enabled: bool,
    /// The plan file named to the model (absolute, or relative to the session's cwd);
    /// absent keeps the current one (default `HOME/sessions/SID/plan.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_file: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlanModeResponse {
    pub plan_mode: bool,
    /// The plan file path the model is told.
    pub plan_file: String,
    /// Whether that file exists now.
    pub plan_exists: bool,
}

/// `transcript.queue`: user input typed while a turn runs. It is delivered as a
/// `queued_command` attachment by the next compile of its agent, once the current batch
/// of tool results is in (never between a `tool_use` and its `tool_result`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueueParams {
    pub session_id: String,
    /// Text of the input (may be combined with `content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Text and image blocks (pasted images).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<ContentBlock>,
    /// The sub-agent the input is for; absent (or `"main"`, as `transcript.queued`
    /// names it) → the main thread. A main-thread compile never consumes a sub-agent's
    /// input (see `transcript.take_queued`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QueueResponse {
    pub queue_id: String,
    /// Entries now waiting for the same agent, this one included.
    pub pending: u32,
}

/// `transcript.queued`: what is waiting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueuedParams {
    pub session_id: String,
    /// Only this agent's entries (`main` for the main thread); absent → all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueuedEntry {
    pub queue_id: String,
    /// Absent for the main thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub content: Vec<ContentBlock>,
    pub queued_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueuedResponse {
    /// Oldest first.
    pub entries: Vec<QueuedEntry>,
}

/// `transcript.take_queued`: a sub-agent's runtime takes its queued input, appended as
/// sub-agent (sidechain) `queued_command` records it puts into its own request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TakeQueuedParams {
    pub session_id: String,
    pub agent_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TakeQueuedResponse {
    /// The appended records, oldest first, each with the text the model should read.
    pub records: Vec<Record>,
    /// Model-facing text of each record (wrap it in `<system-reminder>`).
    pub texts: Vec<String>,
}

/// `context.set_section`: register (or replace, by name) a dynamic system section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetSectionParams {
    pub session_id: String,
    /// `caching: uncached` needs a `reason`. A memoized section keeps the text it had at
    /// its first compile until a compaction or `context.reset_sections`.
    pub section: SystemSection,
}

/// `context.remove_section`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveSectionParams {
    pub session_id: String,
    pub name: String,
}
