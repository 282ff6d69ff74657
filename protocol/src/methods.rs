//! The method table: every method's name, params and result types, summary and, for a
//! subscription, what it streams. It is written once, in [`crate::with_methods!`], and everything
//! else is generated from it: the name constants, a marker type per method in [`method`]
//! (implementing [`Method`], so the daemon registers a handler and a client calls it with
//! the table's types), [`MethodHandlers`] (the functions a server must write, one per
//! method), [`method_table`] (and so the OpenRPC document), and the Rust client's typed
//! methods.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

/// The OpenRPC discovery method, served by convention rather than listed in the table.
pub const RPC_DISCOVER: &str = "rpc.discover";

/// A method of the table, named by its marker type in [`method`].
pub trait Method {
    /// The method's name on the wire.
    const NAME: &'static str;
    /// What it takes, by name.
    type Params: Serialize + serde::de::DeserializeOwned + JsonSchema;
    /// What it answers.
    type Result: Serialize + serde::de::DeserializeOwned + JsonSchema;
}

/// A subscription method: what each notification carries and what ends it.
pub trait SubscriptionMethod: Method {
    /// The method name of its notifications.
    const NOTIFICATION: &'static str;
    /// The method that ends it.
    const UNSUBSCRIBE: &'static str;
    /// Each notification's `result`.
    type Item: Serialize + serde::de::DeserializeOwned + JsonSchema;
}

/// Hands the method table to `$callback!`, one row per method in documentation order:
///
/// ```text
/// CONST Marker snake_name = "wire.name" (Params) -> Result: "summary"
///     [notifies NOTIFICATION_CONST = "wire.event" until UNSUBSCRIBE_CONST with Item];
/// ```
///
/// This crate builds its constants, markers and [`method_table`] from it; `ctx-client`
/// builds its typed methods from it. A method is added here and nowhere else.
#[macro_export]
macro_rules! with_methods {
    ($callback:ident) => {
        $callback! {
            DAEMON_INITIALIZE DaemonInitialize daemon_initialize = "daemon.initialize" ($crate::InitializeParams) -> $crate::InitializeResult:
                "Handshake: client info and protocol version in; server info, negotiated version, capabilities and limits out. Another major version is refused.";
            DAEMON_STATUS DaemonStatus daemon_status = "daemon.status" ($crate::NoParams) -> $crate::DaemonStatus:
                "Protocol version, daemon version, paths, uptime.";
            DAEMON_PING DaemonPing daemon_ping = "daemon.ping" ($crate::NoParams) -> $crate::PingResponse:
                "No-op round trip.";
            DAEMON_SHUTDOWN DaemonShutdown daemon_shutdown = "daemon.shutdown" ($crate::NoParams) -> $crate::ShutdownResponse:
                "Stop the daemon cleanly after answering.";
            PROXY_STATUS ProxyStatus proxy_status = "proxy.status" ($crate::NoParams) -> $crate::ProxyStatusResponse:
                "The HTTP front door (`ctxd --http`): whether it listens, its base URLs (secret included), sessions seen and bytes forwarded.";
            DAEMON_BACKUP DaemonBackup daemon_backup = "daemon.backup" ($crate::BackupParams) -> $crate::BackupResponse:
                "Write a consistent copy of the SQLite store to a new file while the daemon runs (a PostgreSQL store answers an error pointing to pg_dump).";
            DAEMON_GC DaemonGc daemon_gc = "daemon.gc" ($crate::GcParams) -> $crate::GcResponse:
                "Delete sessions idle for idle_days, then the least recently updated until the rest fit max_store_bytes; dry_run only says which.";
            DAEMON_METRICS DaemonMetrics daemon_metrics = "daemon.metrics" ($crate::NoParams) -> $crate::MetricsResponse:
                "The daemon's counters and gauges in the Prometheus text format: calls and errors by method, call latencies, sessions stored and loaded, store size, context.send turns and tokens, retention, the front door's traffic, uptime.";
            SESSION_CREATE SessionCreate session_create = "session.create" ($crate::SessionCreateParams) -> $crate::SessionCreateResponse:
                "Create a session for a working directory.";
            SESSION_LIST SessionList session_list = "session.list" ($crate::SessionListParams) -> $crate::SessionListResponse:
                "List sessions, newest first.";
            SESSION_GET SessionGet session_get = "session.get" ($crate::SessionIdParams) -> $crate::SessionGetResponse:
                "One session.";
            SESSION_UPDATE SessionUpdate session_update = "session.update" ($crate::SessionUpdateParams) -> $crate::SessionGetResponse:
                "Change settings, model profile, system prompt or title.";
            SESSION_FORK SessionFork session_fork = "session.fork" ($crate::SessionForkParams) -> $crate::SessionForkResponse:
                "Copy a session's transcript up to a record into a new session.";
            SESSION_DELETE SessionDelete session_delete = "session.delete" ($crate::SessionIdParams) -> $crate::SessionDeleteResponse:
                "Delete a session, its transcript and its files.";
            SESSION_IMPORT SessionImport session_import = "session.import" ($crate::SessionImportParams) -> $crate::SessionImportResponse:
                "Import a Claude Code JSONL transcript into a new session (all or nothing).";
            AGENT_START AgentStart agent_start = "agent.start" ($crate::AgentStartParams) -> $crate::AgentStartResponse:
                "Start a sub-agent for one of the session's tool calls: a thread of its own (system prompt, tools, thresholds, compaction), starting from the session's file state; SubagentStart hooks run.";
            AGENT_FINISH AgentFinish agent_finish = "agent.finish" ($crate::AgentFinishParams) -> $crate::AgentFinishResponse:
                "Give a sub-agent's answer to its session as the tool result of the call that started it.";
            AGENT_LIST AgentList agent_list = "agent.list" ($crate::SessionIdParams) -> $crate::AgentListResponse:
                "A session's sub-agents and their threads.";
            SESSION_SUBSCRIBE SessionSubscribe session_subscribe = "session.subscribe" ($crate::SubscribeParams) -> $crate::SubscriptionId:
                "Stream a session's events (WebSocket only), first replaying records after after_seq. Returns the subscription id; events arrive as session.event notifications."
                notifies SESSION_EVENT = "session.event" until SESSION_UNSUBSCRIBE with $crate::SessionNotification;
            SESSION_UNSUBSCRIBE SessionUnsubscribe session_unsubscribe = "session.unsubscribe" ($crate::UnsubscribeParams) -> bool:
                "End a subscription (WebSocket only, on the connection that made it). false when it was not active.";
            TRANSCRIPT_APPEND TranscriptAppend transcript_append = "transcript.append" ($crate::AppendParams) -> $crate::AppendResponse:
                "Append records atomically, optionally guarded by the expected last uuid.";
            TRANSCRIPT_READ TranscriptRead transcript_read = "transcript.read" ($crate::ReadParams) -> $crate::ReadResponse:
                "Read a page of records.";
            TRANSCRIPT_REJECT_MEDIA TranscriptRejectMedia transcript_reject_media = "transcript.reject_media" ($crate::RejectMediaParams) -> $crate::RejectMediaResponse:
                "Mark an image or document the provider refused; later compiles strip it.";
            CAPABILITIES_SET_TOOLS CapabilitiesSetTools capabilities_set_tools = "capabilities.set_tools" ($crate::ToolsSetParams) -> $crate::ToolsSetResponse:
                "Replace the session's tool list.";
            CAPABILITIES_LIST_TOOLS CapabilitiesListTools capabilities_list_tools = "capabilities.list_tools" ($crate::SessionIdParams) -> $crate::ToolsListResponse:
                "The session's tool list.";
            CAPABILITIES_MCP_CONNECT CapabilitiesMcpConnect capabilities_mcp_connect = "capabilities.mcp_connect" ($crate::McpConnectParams) -> $crate::CapabilityChangeResponse:
                "Report an MCP server connected (name, instructions, tools); announced in system before the first compile, as mcp_instructions_delta after it.";
            CAPABILITIES_MCP_SET_INSTRUCTIONS CapabilitiesMcpSetInstructions capabilities_mcp_set_instructions = "capabilities.mcp_set_instructions" ($crate::McpSetInstructionsParams) -> $crate::CapabilityChangeResponse:
                "Report that a connected MCP server changed its instructions (announced as mcp_instructions_delta).";
            CAPABILITIES_MCP_DISCONNECT CapabilitiesMcpDisconnect capabilities_mcp_disconnect = "capabilities.mcp_disconnect" ($crate::McpDisconnectParams) -> $crate::CapabilityChangeResponse:
                "Report an MCP server disconnected; its tools leave with it and the removal is announced.";
            CAPABILITIES_SET_AGENTS CapabilitiesSetAgents capabilities_set_agents = "capabilities.set_agents" ($crate::SetAgentsParams) -> $crate::CapabilityChangeResponse:
                "Replace the available agent types; changes are announced with agent_listing_delta.";
            CAPABILITIES_DISCOVER_TOOLS CapabilitiesDiscoverTools capabilities_discover_tools = "capabilities.discover_tools" ($crate::DiscoverToolsParams) -> $crate::CapabilityChangeResponse:
                "Mark deferred tools as found by tool search: their full schema is sent from the next compile on.";
            CAPABILITIES_INVOKE_SKILL CapabilitiesInvokeSkill capabilities_invoke_skill = "capabilities.invoke_skill" ($crate::InvokeSkillParams) -> $crate::AckResponse:
                "Record a skill invocation made outside a Skill tool_use (compaction restores invoked skills).";
            CAPABILITIES_SKILLS CapabilitiesSkills capabilities_skills = "capabilities.skills" ($crate::SessionIdParams) -> $crate::SkillsResponse:
                "The session's skills: listed, pending, dormant (conditional), omitted, invoked; skipped files.";
            CAPABILITIES_GET CapabilitiesGet capabilities_get = "capabilities.get" ($crate::SessionIdParams) -> $crate::CapabilitiesResponse:
                "Tools (sent, deferred, discovered), MCP servers, agent types and what has been announced.";
            CONTEXT_COMPILE ContextCompile context_compile = "context.compile" ($crate::CompileParams) -> $crate::CompileResponse:
                "Compile the exact Messages API request for the next model call.";
            CONTEXT_SNIP ContextSnip context_snip = "context.snip" ($crate::SnipParams) -> $crate::SnipResponse:
                "Remove a range of messages by their short ids; recorded as a snip boundary.";
            CONTEXT_COMPACT ContextCompact context_compact = "context.compact" ($crate::CompactParams) -> $crate::CompactionReport:
                "Compact the session now (manual), with optional extra instructions.";
            CONTEXT_SEND ContextSend context_send = "context.send" ($crate::SendParams) -> $crate::SendResponse:
                "Compile, send to the session's provider (settings.provider), and append the answer as it came; one turn at a time per session.";
            CONTEXT_SEND_STREAM ContextSendStream context_send_stream = "context.send_stream" ($crate::SendParams) -> $crate::SubscriptionId:
                "Run a context.send turn and stream it (WebSocket only): started, the provider's events as they come, then finished (the appended message) or failed. Ending the subscription cancels the turn."
                notifies CONTEXT_SEND_EVENT = "context.send_event" until CONTEXT_SEND_UNSUBSCRIBE with $crate::TurnEvent;
            CONTEXT_SEND_UNSUBSCRIBE ContextSendUnsubscribe context_send_unsubscribe = "context.send_unsubscribe" ($crate::UnsubscribeParams) -> bool:
                "End a context.send_stream subscription, cancelling its turn if it still runs (nothing is appended). false when it was not active.";
            CONTEXT_CANCEL ContextCancel context_cancel = "context.cancel" ($crate::SessionIdParams) -> $crate::AckResponse:
                "Cancel the session's running context.send turn: the provider call stops and nothing is appended. ok is false when no turn runs.";
            MEMORY_GET MemoryGet memory_get = "memory.get" ($crate::SessionIdParams) -> $crate::MemoryGetResponse:
                "The session's memory document, its version and last summarised record.";
            MEMORY_UPDATE MemoryUpdate memory_update = "memory.update" ($crate::MemoryUpdateParams) -> $crate::MemoryUpdateResponse:
                "Write the memory document (optimistic: expected_version must be current).";
            MEMORY_EXTRACT MemoryExtract memory_extract = "memory.extract" ($crate::SessionIdParams) -> $crate::MemoryUpdateResponse:
                "Run an extraction now with the session's summariser and wait for it.";
            COLLAPSE_LIST ContextCollapseList context_collapse_list = "context.collapse_list" ($crate::SessionIdParams) -> $crate::CollapseListResponse:
                "The session's collapses (staged, committed, undone), oldest first.";
            COLLAPSE_UNDO ContextCollapseUndo context_collapse_undo = "context.collapse_undo" ($crate::CollapseUndoParams) -> $crate::AckResponse:
                "Undo a collapse: its span reappears in the view.";
            CONTEXT_REPORT_ERROR ContextReportError context_report_error = "context.report_error" ($crate::ReportErrorParams) -> $crate::CompileResponse:
                "Report that the provider refused a compiled request; compacts reactively and returns the next request.";
            CONTEXT_PROVIDE_SUMMARY ContextProvideSummary context_provide_summary = "context.provide_summary" ($crate::ProvideSummaryParams) -> $crate::AckResponse:
                "Answer a summary_requested event (client summariser).";
            CONTEXT_TOUCH_PATHS ContextTouchPaths context_touch_paths = "context.touch_paths" ($crate::TouchPathsParams) -> $crate::AckResponse:
                "Report paths the agent touched; their instruction files follow as nested_memory.";
            CONTEXT_REPORT_READ ContextReportRead context_report_read = "context.report_read" ($crate::ReportReadParams) -> $crate::AckResponse:
                "Report that the model has seen a file as it is now on disk (changed_files baseline).";
            TRANSCRIPT_PARSE_CLAUDE_CODE TranscriptParseClaudeCode transcript_parse_claude_code = "transcript.parse_claude_code" ($crate::ParseClaudeCodeParams) -> $crate::ParseClaudeCodeResponse:
                "Convert a Claude Code JSONL transcript to records without storing anything.";
            CONTEXT_REPLACEMENTS ContextReplacements context_replacements = "context.replacements" ($crate::SessionIdParams) -> $crate::ReplacementsResponse:
                "The frozen fates of the session's tool results (content-replacement records).";
            CONTEXT_USAGE ContextUsage context_usage = "context.usage" ($crate::UsageParams) -> $crate::UsageResponse:
                "What the next request would fill the context window with, by category (Claude Code's /context), counting the attachments its compile would add; changes nothing.";
            CONTEXT_CACHE_REPORT ContextCacheReport context_cache_report = "context.cache_report" ($crate::CacheReportParams) -> $crate::CacheReportResponse:
                "Every model call's reported cache reads next to ctxd's prediction, with cache breaks and their causes.";
            HOOKS_LIST HooksList hooks_list = "hooks.list" ($crate::SessionIdParams) -> $crate::HooksListResponse:
                "The session's settings files and configured hooks, with their source file and whether they run.";
            HOOKS_PRE_TOOL_USE HooksPreToolUse hooks_pre_tool_use = "hooks.pre_tool_use" ($crate::PreToolUseParams) -> $crate::HookOutcome:
                "Run PreToolUse hooks before the client runs a tool: allow, deny or ask, a reason, updatedInput, context.";
            HOOKS_POST_TOOL_USE HooksPostToolUse hooks_post_tool_use = "hooks.post_tool_use" ($crate::PostToolUseParams) -> $crate::HookOutcome:
                "Run PostToolUse hooks after a tool ran; context and blocking feedback are appended for the model.";
            HOOKS_USER_PROMPT_SUBMIT HooksUserPromptSubmit hooks_user_prompt_submit = "hooks.user_prompt_submit" ($crate::UserPromptSubmitParams) -> $crate::HookOutcome:
                "Run UserPromptSubmit hooks on a prompt without appending it (transcript.append runs them itself).";
            HOOKS_SESSION_START HooksSessionStart hooks_session_start = "hooks.session_start" ($crate::SessionStartParams) -> $crate::HookOutcome:
                "Run SessionStart hooks with source resume or clear; their context is appended.";
            HOOKS_STOP HooksStop hooks_stop = "hooks.stop" ($crate::StopParams) -> $crate::HookOutcome:
                "Run Stop hooks when the agent would stop; a block appends the reason for the model.";
            HOOKS_STOP_FAILURE HooksStopFailure hooks_stop_failure = "hooks.stop_failure" ($crate::StopFailureParams) -> $crate::HookOutcome:
                "Run StopFailure hooks when a turn ended on an API error (output ignored).";
            HOOKS_SUBAGENT_START HooksSubagentStart hooks_subagent_start = "hooks.subagent_start" ($crate::SubagentStartParams) -> $crate::HookOutcome:
                "Run SubagentStart hooks; their context is returned for the sub-agent.";
            HOOKS_SUBAGENT_STOP HooksSubagentStop hooks_subagent_stop = "hooks.subagent_stop" ($crate::SubagentStopParams) -> $crate::HookOutcome:
                "Run SubagentStop hooks when a sub-agent would stop; a block returns the reason.";
            HOOKS_NOTIFICATION HooksNotification hooks_notification = "hooks.notification" ($crate::NotificationParams) -> $crate::HookOutcome:
                "Run Notification hooks for a message to the user.";
            HOOKS_SESSION_END HooksSessionEnd hooks_session_end = "hooks.session_end" ($crate::SessionEndParams) -> $crate::HookOutcome:
                "Run SessionEnd hooks when the session ends (output ignored).";
            HOOKS_PERMISSION_REQUEST HooksPermissionRequest hooks_permission_request = "hooks.permission_request" ($crate::PermissionRequestParams) -> $crate::HookOutcome:
                "Run PermissionRequest hooks before asking the user to allow a tool call: decision allow (with updated_input) or deny (with reason), or none (ask the user).";
            SESSION_SET_PLAN_MODE SessionSetPlanMode session_set_plan_mode = "session.set_plan_mode" ($crate::PlanModeParams) -> $crate::PlanModeResponse:
                "Switch plan mode on or off (and name the plan file); the next compile carries the entry or exit reminder.";
            TRANSCRIPT_QUEUE TranscriptQueue transcript_queue = "transcript.queue" ($crate::QueueParams) -> $crate::QueueResponse:
                "Queue user input (text, images) typed while a turn runs; the agent's next compile delivers it as a queued_command attachment once the current tool results are in.";
            TRANSCRIPT_QUEUED TranscriptQueued transcript_queued = "transcript.queued" ($crate::QueuedParams) -> $crate::QueuedResponse:
                "The queued input still waiting, oldest first (all agents, or one: main for the main thread).";
            TRANSCRIPT_TAKE_QUEUED TranscriptTakeQueued transcript_take_queued = "transcript.take_queued" ($crate::TakeQueuedParams) -> $crate::TakeQueuedResponse:
                "A sub-agent takes its queued input: appended as its sidechain queued_command records and returned with their text.";
            CONTEXT_SET_SECTION ContextSetSection context_set_section = "context.set_section" ($crate::SetSectionParams) -> $crate::AckResponse:
                "Register (or replace, by name) a dynamic system section: memoized (frozen at its first compile until compaction or reset) or uncached (recomputed every compile; needs a reason).";
            CONTEXT_REMOVE_SECTION ContextRemoveSection context_remove_section = "context.remove_section" ($crate::RemoveSectionParams) -> $crate::AckResponse:
                "Remove a registered dynamic system section (ok is false when there was none).";
            CONTEXT_RESET_SECTIONS ContextResetSections context_reset_sections = "context.reset_sections" ($crate::SessionIdParams) -> $crate::AckResponse:
                "Drop the memo of memoized system sections: the next compile computes them again.";
        }
    };
}

/// The constants and markers of every row.
macro_rules! define_methods {
    ($(
        $konst:ident $marker:ident $fname:ident = $name:literal ($params:ty) -> $result:ty : $summary:literal
        $(notifies $nconst:ident = $nname:literal until $unsub:ident with $item:ty)?
    ;)*) => {
        $(
            #[doc = concat!("`", $name, "`")]
            pub const $konst: &str = $name;
            $(
                #[doc = concat!("Notification method of `", $name, "`.")]
                pub const $nconst: &str = $nname;
            )?
        )*

        /// One marker type per method of the table, each implementing [`Method`].
        pub mod method {
            $(
                #[doc = $summary]
                pub struct $marker;
                impl super::Method for $marker {
                    const NAME: &'static str = $name;
                    type Params = $params;
                    type Result = $result;
                }
                $(
                    impl super::SubscriptionMethod for $marker {
                        const NOTIFICATION: &'static str = $nname;
                        const UNSUBSCRIBE: &'static str = super::$unsub;
                        type Item = $item;
                    }
                )?
            )*
        }

        /// What serving the table takes: one function per method, each registering that
        /// method's handler with the server. Generated from the table, so a method added
        /// there and not served is a missing item of the server's implementation, and the
        /// server does not compile.
        pub trait MethodHandlers {
            /// What a registration fails with.
            type Error;
            $(
                #[doc = concat!("Registers the handler of `", $name, "`.")]
                fn $fname(&mut self) -> Result<(), Self::Error>;
            )*
        }

        /// Registers every method of the table through `handlers`, in the table's order.
        pub fn register_every_method<H: MethodHandlers>(handlers: &mut H) -> Result<(), H::Error> {
            $( handlers.$fname()?; )*
            Ok(())
        }

        /// Every method the daemon serves, in documentation order. `rpc.discover` itself
        /// is listed by the OpenRPC document's convention rather than here.
        pub fn method_table() -> Vec<MethodSpec> {
            vec![$(
                MethodSpec {
                    name: $konst,
                    summary: $summary,
                    params: inline::<$params>,
                    result: schema::<$result>,
                    subscription: subscription_spec!($($nconst, $unsub, $item)?),
                }
            ),*]
        }
    };
}

macro_rules! subscription_spec {
    () => {
        None
    };
    ($nconst:ident, $unsub:ident, $item:ty) => {
        Some(SubscriptionSpec {
            notification: $nconst,
            unsubscribe: $unsub,
            item: schema::<$item>,
        })
    };
}

with_methods!(define_methods);

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DaemonStatus {
    pub protocol_version: String,
    pub daemon_version: String,
    pub pid: u32,
    pub socket: String,
    pub home: String,
    pub uptime_ms: u64,
    /// Sessions in the store; the loaded ones only when `store_error` is set.
    pub sessions: u64,
    /// Set when the store did not answer the count in time (a database that is down):
    /// the daemon still answers, and says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_error: Option<String>,
    /// Sessions whose transcript is held in memory now (at most `ctxd
    /// --max-loaded-sessions`, plus any in use at the moment the bound was applied).
    #[serde(default)]
    pub loaded_sessions: u64,
    /// What the daemon holds for its WebSocket clients now.
    #[serde(default)]
    pub websocket: WebSocketStatus,
}

/// What the daemon holds for its WebSocket clients, summed over connections.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WebSocketStatus {
    /// Open WebSocket connections.
    pub connections: u64,
    /// Open subscriptions on them.
    pub subscriptions: u64,
    /// Bytes of answers and notifications taken for clients and not yet written to their
    /// sockets (each connection stops being read past 16 MiB of its own).
    pub queued_bytes: u64,
    /// Calls running in tasks of their own (at most 4 per connection).
    pub calls_running: u64,
    /// Calls that have their answer and wait for room in their connection's queue.
    pub answers_waiting: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShutdownResponse {
    pub stopping: bool,
}

/// The HTTP front door's state. Its base URLs carry the home's secret: they are for the
/// user's own shell (`ctx proxy env`), which is why only the socket's owner may ask.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProxyStatusResponse {
    /// Whether `ctxd --http` started the front door; the other fields are absent when not.
    pub listening: bool,
    /// The address it listens on (`127.0.0.1:PORT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    /// `ANTHROPIC_BASE_URL` for a client: `http://127.0.0.1:PORT/SECRET`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anthropic_base_url: Option<String>,
    /// `OPENAI_BASE_URL` for a client: the same with `/v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openai_base_url: Option<String>,
    /// Sessions the front door's traffic made since the daemon started (forks included).
    pub sessions_seen: u64,
    /// Requests forwarded since the daemon started.
    pub requests: u64,
    /// Request body bytes sent upstream.
    pub bytes_up: u64,
    /// Answer bytes passed back to clients.
    pub bytes_down: u64,
}

/// `daemon.gc`: what retention deletes. At least one of `idle_days` and
/// `max_store_bytes` is given.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GcParams {
    /// Delete the sessions (with their sub-agents' threads) not updated for this many
    /// days (at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_days: Option<u32>,
    /// Then delete the least recently updated sessions until the stored JSON of the
    /// remaining ones' records is at most this many bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_store_bytes: Option<u64>,
    /// Say what would be deleted; delete nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// RFC 3339 time the idle days count back from; the daemon's clock when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<String>,
}

/// `daemon.gc`: the sessions deleted (or, on a dry run, that would be).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GcResponse {
    pub dry_run: bool,
    /// Least recently updated first.
    pub deleted: Vec<GcDeleted>,
    /// The stored JSON of the records of the sessions kept, in bytes.
    pub kept_bytes: u64,
}

/// One session `daemon.gc` deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GcDeleted {
    pub session_id: String,
    pub updated_at: String,
    /// The stored JSON of its records and its threads' records, in bytes.
    pub bytes: u64,
    /// `idle` (past `idle_days`) or `quota` (over `max_store_bytes`).
    pub reason: String,
}

/// `daemon.backup`: where the copy goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BackupParams {
    /// Absolute path of the copy, a file that does not exist yet in a directory that
    /// does (the daemon writes it, so a relative path would name its own directory).
    pub path: String,
}

/// `daemon.backup`: the copy written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BackupResponse {
    pub path: String,
    /// The copy's size in bytes.
    pub bytes: u64,
    /// How long the copy took.
    pub elapsed_ms: u64,
}

/// `daemon.metrics`: the metrics as a Prometheus scrape would read them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MetricsResponse {
    /// Prometheus text exposition format 0.0.4 (`# HELP`, `# TYPE`, then one sample a
    /// line), the metrics named `ctxd_*`.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PingResponse {
    pub pong: bool,
}

/// One row of the method table.
pub struct MethodSpec {
    pub name: &'static str,
    pub summary: &'static str,
    /// The params object's own schema (inlined: the document lists one param per
    /// property).
    pub params: fn(&mut SchemaGenerator) -> Schema,
    pub result: fn(&mut SchemaGenerator) -> Schema,
    /// Set on subscription methods.
    pub subscription: Option<SubscriptionSpec>,
}

/// What a subscription streams and how it ends.
pub struct SubscriptionSpec {
    /// Method name of the notifications.
    pub notification: &'static str,
    /// Method that ends the subscription.
    pub unsubscribe: &'static str,
    /// Schema of each notification's `result`.
    pub item: fn(&mut SchemaGenerator) -> Schema,
}

/// A type's schema by reference (the type lands in `components/schemas`).
fn schema<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

/// A params type's own schema, not a reference, so its properties can be listed.
fn inline<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    T::json_schema(g)
}
