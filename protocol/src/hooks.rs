//! Hooks: Claude Code's `settings.json` hooks, run by the daemon. The daemon
//! fires the events it sees itself (`SessionStart`, `UserPromptSubmit` on appends of a
//! typed prompt, `PreCompact`, `PostCompact`, `InstructionsLoaded`, `CwdChanged`,
//! `FileChanged`); the client asks over `hooks.*` for the events of its own loop (tool
//! calls, stopping, sub-agents, notifications).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::transcript::AppendedRecord;

/// A hook event, named exactly as in Claude Code's settings files.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    PreCompact,
    PostCompact,
    InstructionsLoaded,
    CwdChanged,
    FileChanged,
    Stop,
    StopFailure,
    SubagentStart,
    SubagentStop,
    Notification,
    /// The session ends (the client says why: `clear`, `logout`, `prompt_input_exit`,
    /// `other`); output is ignored.
    SessionEnd,
    /// A permission dialog would be shown for a tool call; a hook may allow or deny it.
    PermissionRequest,
}

impl HookEvent {
    pub const ALL: [HookEvent; 16] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PreCompact,
        HookEvent::PostCompact,
        HookEvent::InstructionsLoaded,
        HookEvent::CwdChanged,
        HookEvent::FileChanged,
        HookEvent::Stop,
        HookEvent::StopFailure,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::Notification,
        HookEvent::SessionEnd,
        HookEvent::PermissionRequest,
    ];

    /// The name used in settings files and in `hook_event_name`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::PostCompact => "PostCompact",
            HookEvent::InstructionsLoaded => "InstructionsLoaded",
            HookEvent::CwdChanged => "CwdChanged",
            HookEvent::FileChanged => "FileChanged",
            HookEvent::Stop => "Stop",
            HookEvent::StopFailure => "StopFailure",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::Notification => "Notification",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::PermissionRequest => "PermissionRequest",
        }
    }

    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

impl std::fmt::Display for HookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Per-session hook switches (`settings.hooks`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HookSettings {
    /// Run no hooks for this session (replays set this).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    /// The `transcript_path` hooks receive. Absent → ctxd exports the session as
    /// Claude Code JSONL to `HOME/sessions/SID/transcript.jsonl` before a hook runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<String>,
    /// Trust the session's project directory when the session is created, so its
    /// `.claude/settings.json` and `settings.local.json` may run hooks (for scripted
    /// use; people run `ctx trust DIR`). A project directory's hooks run only once it
    /// is in the trust list (`HOME/trusted-projects`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trust_project: bool,
}

impl HookSettings {
    pub fn is_default(&self) -> bool {
        *self == HookSettings::default()
    }
}

/// One configured hook command, as `hooks.list` reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfiguredHook {
    pub event: HookEvent,
    /// The matcher as written (`null` or `*` or empty: everything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    pub command: String,
    /// Seconds before the hook's process group is killed.
    pub timeout_secs: f64,
    /// `managed`, `user`, `project` or `local`.
    pub source: String,
    /// The settings file it comes from.
    pub file: String,
    /// Whether it runs when its event fires and its matcher matches.
    pub active: bool,
    /// Why it does not run (policy, unsupported type, duplicate command, bad matcher).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inactive_reason: Option<String>,
}

/// One settings file the daemon looked at for a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookSourceFile {
    /// `managed`, `user`, `project` or `local`.
    pub source: String,
    pub file: String,
    /// `loaded`, `absent`, `invalid` (with `error`) or `untrusted` (with `error`).
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Hook commands the file configures.
    pub hooks: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HooksListResponse {
    /// Settings files in precedence order (managed, user, project, local).
    pub files: Vec<HookSourceFile>,
    /// Every configured hook, in precedence order.
    pub hooks: Vec<ConfiguredHook>,
    /// Set when no hook runs for this session at all, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_disabled: Option<String>,
}

/// What one hook command did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HookRunReport {
    pub command: String,
    pub source: String,
    /// `null` when the process was killed (timeout) or could not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
    /// `allow`, `deny`, `ask`, `block` or `approve`, when the hook decided something.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// stdout or stderr went over 64 KB and was cut.
    pub output_cut: bool,
    /// A non-blocking error to show the user (exit code other than 0 and 2, a timeout,
    /// output that is not valid hook JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The merged result of every hook an event ran (they run in parallel; results are
/// merged in configuration order, so the answer does not depend on timing).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct HookOutcome {
    /// Hook commands that ran.
    pub ran: u32,
    /// `PreToolUse`: `allow`, `deny` or `ask` (deny beats ask beats allow); other events:
    /// `block` when a hook blocked (exit code 2, or `decision: "block"`). Absent: no
    /// hook decided anything, carry on as usual.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// Why (the hooks' reasons or exit-2 stderr, in configuration order). For a
    /// `PreToolUse` deny this is what the model should be told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `PreToolUse`: the tool input to run instead of the model's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<serde_json::Value>,
    /// Context the hooks added for the model (already appended to the transcript as a
    /// `hook_additional_context` record where the event allows it; see `appended`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_context: Vec<String>,
    /// `false` when a hook asked the agent to stop (`"continue": false`).
    #[serde(rename = "continue", default = "yes")]
    pub continue_: bool,
    /// Shown to the user when `continue` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// A hook asked that its output be hidden from the user's transcript view.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suppress_output: bool,
    /// Messages for the user (`systemMessage`), in configuration order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub system_messages: Vec<String>,
    /// Non-blocking errors for the user, in configuration order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Records ctxd appended to the transcript for this event (hook context, blocking
    /// feedback for the model).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub appended: Vec<AppendedRecord>,
    /// The transcript's last uuid when records were appended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_uuid: Option<String>,
    /// Each hook that ran, in configuration order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<HookRunReport>,
}

fn yes() -> bool {
    true
}

impl HookOutcome {
    /// Nothing ran: carry on.
    pub fn nothing() -> HookOutcome {
        HookOutcome {
            continue_: true,
            ..HookOutcome::default()
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PreToolUseParams {
    pub session_id: String,
    pub tool_name: String,
    /// The tool input the model produced (a JSON object).
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub tool_input: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostToolUseParams {
    pub session_id: String,
    pub tool_name: String,
    /// The tool input the model produced (a JSON object).
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub tool_input: serde_json::Value,
    /// What the tool returned.
    pub tool_response: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserPromptSubmitParams {
    pub session_id: String,
    pub prompt: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionStartParams {
    pub session_id: String,
    /// `resume` (a client re-attaches to the session) or `clear`. ctxd fires `startup`
    /// itself when a session is created and `compact` after every compaction.
    pub source: ClientSessionStart,
}

/// The `SessionStart` sources a client reports (the others ctxd fires itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientSessionStart {
    Resume,
    Clear,
}

impl ClientSessionStart {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientSessionStart::Resume => "resume",
            ClientSessionStart::Clear => "clear",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopParams {
    pub session_id: String,
    /// True when the agent is already continuing because a Stop hook blocked before.
    #[serde(default)]
    pub stop_hook_active: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_assistant_message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopFailureParams {
    pub session_id: String,
    /// The kind of API error that ended the turn (the matcher matches it).
    pub error: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_details: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_assistant_message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubagentStartParams {
    pub session_id: String,
    pub agent_id: String,
    /// The matcher matches it.
    pub agent_type: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubagentStopParams {
    pub session_id: String,
    pub agent_id: String,
    pub agent_type: String,
    #[serde(default)]
    pub stop_hook_active: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_transcript_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_assistant_message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotificationParams {
    pub session_id: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// e.g. `permission_prompt`, `idle_prompt` (the matcher matches it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notification_type: Option<String>,
}

/// `hooks.session_end`: the session is ending.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionEndParams {
    pub session_id: String,
    /// `clear`, `logout`, `prompt_input_exit` or `other` (the default); the matcher
    /// matches it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `hooks.permission_request`: the client would ask the user to allow a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PermissionRequestParams {
    pub session_id: String,
    /// The tool (the matcher matches it).
    pub tool_name: String,
    /// The tool input the model produced (a JSON object).
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub tool_input: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

/// A hook context the compiled request carries (`metadata.hook_contexts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HookContextRef {
    /// The attachment record.
    pub uuid: String,
    /// `hook_additional_context` or `hook_blocking_error`.
    #[serde(rename = "type")]
    pub kind: String,
    pub hook_event_name: String,
}
