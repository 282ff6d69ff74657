//! Method names and the table that ties each to its params and result types.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

use crate::agents::*;
use crate::attachments::*;
use crate::cache::{CacheReportParams, CacheReportResponse, UsageParams, UsageResponse};
use crate::capabilities::*;
use crate::compile::{
    AckResponse, CompactParams, CompactionReport, CompileParams, CompileResponse,
    ProvideSummaryParams, ReplacementsResponse, ReportErrorParams, ReportReadParams, SnipParams,
    SnipResponse, TouchPathsParams,
};
use crate::event::{SessionNotification, SubscribeParams};
use crate::handshake::{InitializeParams, InitializeResult, SubscriptionId, UnsubscribeParams};
use crate::hooks::*;
use crate::memory::*;
use crate::send::{SendParams, SendResponse, TurnEvent};
use crate::session::*;
use crate::transcript::*;

pub const DAEMON_INITIALIZE: &str = "daemon.initialize";
pub const DAEMON_STATUS: &str = "daemon.status";
pub const DAEMON_SHUTDOWN: &str = "daemon.shutdown";
pub const DAEMON_PING: &str = "daemon.ping";
pub const SESSION_CREATE: &str = "session.create";
pub const SESSION_LIST: &str = "session.list";
pub const SESSION_GET: &str = "session.get";
pub const SESSION_UPDATE: &str = "session.update";
pub const SESSION_FORK: &str = "session.fork";
pub const SESSION_DELETE: &str = "session.delete";
pub const SESSION_IMPORT: &str = "session.import";
pub const AGENT_START: &str = "agent.start";
pub const AGENT_FINISH: &str = "agent.finish";
pub const AGENT_LIST: &str = "agent.list";
pub const SESSION_SUBSCRIBE: &str = "session.subscribe";
pub const SESSION_UNSUBSCRIBE: &str = "session.unsubscribe";
/// Notification method of the subscription.
pub const SESSION_EVENT: &str = "session.event";
pub const TRANSCRIPT_APPEND: &str = "transcript.append";
pub const TRANSCRIPT_READ: &str = "transcript.read";
pub const TRANSCRIPT_REJECT_MEDIA: &str = "transcript.reject_media";
pub const CAPABILITIES_SET_TOOLS: &str = "capabilities.set_tools";
pub const CAPABILITIES_LIST_TOOLS: &str = "capabilities.list_tools";
pub const CAPABILITIES_MCP_CONNECT: &str = "capabilities.mcp_connect";
pub const CAPABILITIES_MCP_SET_INSTRUCTIONS: &str = "capabilities.mcp_set_instructions";
pub const CAPABILITIES_MCP_DISCONNECT: &str = "capabilities.mcp_disconnect";
pub const CAPABILITIES_SET_AGENTS: &str = "capabilities.set_agents";
pub const CAPABILITIES_DISCOVER_TOOLS: &str = "capabilities.discover_tools";
pub const CAPABILITIES_INVOKE_SKILL: &str = "capabilities.invoke_skill";
pub const CAPABILITIES_SKILLS: &str = "capabilities.skills";
pub const CAPABILITIES_GET: &str = "capabilities.get";
pub const CONTEXT_COMPILE: &str = "context.compile";
pub const CONTEXT_REPLACEMENTS: &str = "context.replacements";
pub const CONTEXT_SNIP: &str = "context.snip";
pub const CONTEXT_TOUCH_PATHS: &str = "context.touch_paths";
pub const CONTEXT_REPORT_READ: &str = "context.report_read";
pub const CONTEXT_COMPACT: &str = "context.compact";
pub const CONTEXT_SEND: &str = "context.send";
pub const CONTEXT_CANCEL: &str = "context.cancel";
pub const CONTEXT_SEND_STREAM: &str = "context.send_stream";
/// Notification method of `context.send_stream`.
pub const CONTEXT_SEND_EVENT: &str = "context.send_event";
pub const CONTEXT_SEND_UNSUBSCRIBE: &str = "context.send_unsubscribe";
pub const MEMORY_GET: &str = "memory.get";
pub const MEMORY_UPDATE: &str = "memory.update";
pub const MEMORY_EXTRACT: &str = "memory.extract";
pub const COLLAPSE_LIST: &str = "context.collapse_list";
pub const COLLAPSE_UNDO: &str = "context.collapse_undo";
pub const CONTEXT_REPORT_ERROR: &str = "context.report_error";
pub const CONTEXT_PROVIDE_SUMMARY: &str = "context.provide_summary";
pub const TRANSCRIPT_PARSE_CLAUDE_CODE: &str = "transcript.parse_claude_code";
pub const CONTEXT_USAGE: &str = "context.usage";
pub const CONTEXT_CACHE_REPORT: &str = "context.cache_report";
pub const RPC_DISCOVER: &str = "rpc.discover";
pub const HOOKS_LIST: &str = "hooks.list";
pub const HOOKS_PRE_TOOL_USE: &str = "hooks.pre_tool_use";
pub const HOOKS_POST_TOOL_USE: &str = "hooks.post_tool_use";
pub const HOOKS_USER_PROMPT_SUBMIT: &str = "hooks.user_prompt_submit";
pub const HOOKS_SESSION_START: &str = "hooks.session_start";
pub const HOOKS_STOP: &str = "hooks.stop";
pub const HOOKS_STOP_FAILURE: &str = "hooks.stop_failure";
pub const HOOKS_SUBAGENT_START: &str = "hooks.subagent_start";
pub const HOOKS_SUBAGENT_STOP: &str = "hooks.subagent_stop";
pub const HOOKS_NOTIFICATION: &str = "hooks.notification";
pub const HOOKS_SESSION_END: &str = "hooks.session_end";
pub const HOOKS_PERMISSION_REQUEST: &str = "hooks.permission_request";
pub const SESSION_SET_PLAN_MODE: &str = "session.set_plan_mode";
pub const TRANSCRIPT_QUEUE: &str = "transcript.queue";
pub const TRANSCRIPT_QUEUED: &str = "transcript.queued";
pub const TRANSCRIPT_TAKE_QUEUED: &str = "transcript.take_queued";
pub const CONTEXT_SET_SECTION: &str = "context.set_section";
pub const CONTEXT_REMOVE_SECTION: &str = "context.remove_section";
pub const CONTEXT_RESET_SECTIONS: &str = "context.reset_sections";

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

macro_rules! method {
    ($name:expr, $summary:expr, $p:ty, $r:ty) => {
        MethodSpec {
            name: $name,
            summary: $summary,
            params: inline::<$p>,
            result: schema::<$r>,
            subscription: None,
        }
    };
}

/// Every method the daemon serves, in documentation order. `rpc.discover` itself is
/// listed by the OpenRPC document's convention rather than here.
pub fn method_table() -> Vec<MethodSpec> {
    vec![
        method!(
            DAEMON_INITIALIZE,
            "Handshake: client info and protocol version in; server info, negotiated version, capabilities and limits out. Another major version is refused.",
            InitializeParams,
            InitializeResult
        ),
        method!(
            DAEMON_STATUS,
            "Protocol version, daemon version, paths, uptime.",
            NoParams,
            DaemonStatus
        ),
        method!(DAEMON_PING, "No-op round trip.", NoParams, PingResponse),
        method!(
            DAEMON_SHUTDOWN,
            "Stop the daemon cleanly after answering.",
            NoParams,
            ShutdownResponse
        ),
        method!(
            SESSION_CREATE,
            "Create a session for a working directory.",
            SessionCreateParams,
            SessionCreateResponse
        ),
        method!(
            SESSION_LIST,
            "List sessions, newest first.",
            SessionListParams,
            SessionListResponse
        ),
        method!(
            SESSION_GET,
            "One session.",
            SessionIdParams,
            SessionGetResponse
        ),
        method!(
            SESSION_UPDATE,
            "Change settings, model profile, system prompt or title.",
            SessionUpdateParams,
            SessionGetResponse
        ),
        method!(
            SESSION_FORK,
            "Copy a session's transcript up to a record into a new session.",
            SessionForkParams,
            SessionForkResponse
        ),
        method!(
            SESSION_DELETE,
            "Delete a session, its transcript and its files.",
            SessionIdParams,
            SessionDeleteResponse
        ),
        method!(
            SESSION_IMPORT,
            "Import a Claude Code JSONL transcript into a new session (all or nothing).",
            SessionImportParams,
            SessionImportResponse
        ),
        method!(
            AGENT_START,
            "Start a sub-agent for one of the session's tool calls: a thread of its own (system prompt, tools, thresholds, compaction), starting from the session's file state; SubagentStart hooks run.",
            AgentStartParams,
            AgentStartResponse
        ),
        method!(
            AGENT_FINISH,
            "Give a sub-agent's answer to its session as the tool result of the call that started it.",
            AgentFinishParams,
            AgentFinishResponse
        ),
        method!(
            AGENT_LIST,
            "A session's sub-agents and their threads.",
            SessionIdParams,
            AgentListResponse
        ),
        MethodSpec {
            name: SESSION_SUBSCRIBE,
            summary: "Stream a session's events (WebSocket only), first replaying records after after_seq. Returns the subscription id; events arrive as session.event notifications.",
            params: inline::<SubscribeParams>,
            result: schema::<SubscriptionId>,
            subscription: Some(SubscriptionSpec {
                notification: SESSION_EVENT,
                unsubscribe: SESSION_UNSUBSCRIBE,
                item: schema::<SessionNotification>,
            }),
        },
        method!(
            SESSION_UNSUBSCRIBE,
            "End a subscription (WebSocket only, on the connection that made it). false when it was not active.",
            UnsubscribeParams,
            bool
        ),
        method!(
            TRANSCRIPT_APPEND,
            "Append records atomically, optionally guarded by the expected last uuid.",
            AppendParams,
            AppendResponse
        ),
        method!(
            TRANSCRIPT_READ,
            "Read a page of records.",
            ReadParams,
            ReadResponse
        ),
        method!(
            TRANSCRIPT_REJECT_MEDIA,
            "Mark an image or document the provider refused; later compiles strip it.",
            RejectMediaParams,
            RejectMediaResponse
        ),
        method!(
            CAPABILITIES_SET_TOOLS,
            "Replace the session's tool list.",
            ToolsSetParams,
            ToolsSetResponse
        ),
        method!(
            CAPABILITIES_LIST_TOOLS,
            "The session's tool list.",
            SessionIdParams,
            ToolsListResponse
        ),
        method!(
            CAPABILITIES_MCP_CONNECT,
            "Report an MCP server connected (name, instructions, tools); announced in system before the first compile, as mcp_instructions_delta after it.",
            McpConnectParams,
            CapabilityChangeResponse
        ),
        method!(
            CAPABILITIES_MCP_SET_INSTRUCTIONS,
            "Report that a connected MCP server changed its instructions (announced as mcp_instructions_delta).",
            McpSetInstructionsParams,
            CapabilityChangeResponse
        ),
        method!(
            CAPABILITIES_MCP_DISCONNECT,
            "Report an MCP server disconnected; its tools leave with it and the removal is announced.",
            McpDisconnectParams,
            CapabilityChangeResponse
        ),
        method!(
            CAPABILITIES_SET_AGENTS,
            "Replace the available agent types; changes are announced with agent_listing_delta.",
            SetAgentsParams,
            CapabilityChangeResponse
        ),
        method!(
            CAPABILITIES_DISCOVER_TOOLS,
            "Mark deferred tools as found by tool search: their full schema is sent from the next compile on.",
            DiscoverToolsParams,
            CapabilityChangeResponse
        ),
        method!(
            CAPABILITIES_INVOKE_SKILL,
            "Record a skill invocation made outside a Skill tool_use (compaction restores invoked skills).",
            InvokeSkillParams,
            AckResponse
        ),
        method!(
            CAPABILITIES_SKILLS,
            "The session's skills: listed, pending, dormant (conditional), omitted, invoked; skipped files.",
            SessionIdParams,
            SkillsResponse
        ),
        method!(
            CAPABILITIES_GET,
            "Tools (sent, deferred, discovered), MCP servers, agent types and what has been announced.",
            SessionIdParams,
            CapabilitiesResponse
        ),
        method!(
            CONTEXT_COMPILE,
            "Compile the exact Messages API request for the next model call.",
            CompileParams,
            CompileResponse
        ),
        method!(
            CONTEXT_SNIP,
            "Remove a range of messages by their short ids; recorded as a snip boundary.",
            SnipParams,
            SnipResponse
        ),
        method!(
            CONTEXT_COMPACT,
            "Compact the session now (manual), with optional extra instructions.",
            CompactParams,
            CompactionReport
        ),
        method!(
            CONTEXT_SEND,
            "Compile, send to the session's provider (settings.provider), and append the answer as it came; one turn at a time per session.",
            SendParams,
            SendResponse
        ),
        MethodSpec {
            name: CONTEXT_SEND_STREAM,
            summary: "Run a context.send turn and stream it (WebSocket only): started, the provider's events as they come, then finished (the appended message) or failed. Ending the subscription cancels the turn.",
            params: inline::<SendParams>,
            result: schema::<SubscriptionId>,
            subscription: Some(SubscriptionSpec {
                notification: CONTEXT_SEND_EVENT,
                unsubscribe: CONTEXT_SEND_UNSUBSCRIBE,
                item: schema::<TurnEvent>,
            }),
        },
        method!(
            CONTEXT_SEND_UNSUBSCRIBE,
            "End a context.send_stream subscription, cancelling its turn if it still runs (nothing is appended). false when it was not active.",
            UnsubscribeParams,
            bool
        ),
        method!(
            CONTEXT_CANCEL,
            "Cancel the session's running context.send turn: the provider call stops and nothing is appended. ok is false when no turn runs.",
            SessionIdParams,
            AckResponse
        ),
        method!(
            MEMORY_GET,
            "The session's memory document, its version and last summarised record.",
            SessionIdParams,
            MemoryGetResponse
        ),
        method!(
            MEMORY_UPDATE,
            "Write the memory document (optimistic: expected_version must be current).",
            MemoryUpdateParams,
            MemoryUpdateResponse
        ),
        method!(
            MEMORY_EXTRACT,
            "Run an extraction now with the session's summariser and wait for it.",
            SessionIdParams,
            MemoryUpdateResponse
        ),
        method!(
            COLLAPSE_LIST,
            "The session's collapses (staged, committed, undone), oldest first.",
            SessionIdParams,
            CollapseListResponse
        ),
        method!(
            COLLAPSE_UNDO,
            "Undo a collapse: its span reappears in the view.",
            CollapseUndoParams,
            AckResponse
        ),
        method!(
            CONTEXT_REPORT_ERROR,
            "Report that the provider refused a compiled request; compacts reactively and returns the next request.",
            ReportErrorParams,
            CompileResponse
        ),
        method!(
            CONTEXT_PROVIDE_SUMMARY,
            "Answer a summary_requested event (client summariser).",
            ProvideSummaryParams,
            AckResponse
        ),
        method!(
            CONTEXT_TOUCH_PATHS,
            "Report paths the agent touched; their instruction files follow as nested_memory.",
            TouchPathsParams,
            AckResponse
        ),
        method!(
            CONTEXT_REPORT_READ,
            "Report that the model has seen a file as it is now on disk (changed_files baseline).",
            ReportReadParams,
            AckResponse
        ),
        method!(
            TRANSCRIPT_PARSE_CLAUDE_CODE,
            "Convert a Claude Code JSONL transcript to records without storing anything.",
            ParseClaudeCodeParams,
            ParseClaudeCodeResponse
        ),
        method!(
            CONTEXT_REPLACEMENTS,
            "The frozen fates of the session's tool results (content-replacement records).",
            SessionIdParams,
            ReplacementsResponse
        ),
        method!(
            CONTEXT_USAGE,
            "What fills the context window now, by category (Claude Code's /context); changes nothing.",
            UsageParams,
            UsageResponse
        ),
        method!(
            CONTEXT_CACHE_REPORT,
            "Every model call's reported cache reads next to ctxd's prediction, with cache breaks and their causes.",
            CacheReportParams,
            CacheReportResponse
        ),
        method!(
            HOOKS_LIST,
            "The session's settings files and configured hooks, with their source file and whether they run.",
            SessionIdParams,
            HooksListResponse
        ),
        method!(
            HOOKS_PRE_TOOL_USE,
            "Run PreToolUse hooks before the client runs a tool: allow, deny or ask, a reason, updatedInput, context.",
            PreToolUseParams,
            HookOutcome
        ),
        method!(
            HOOKS_POST_TOOL_USE,
            "Run PostToolUse hooks after a tool ran; context and blocking feedback are appended for the model.",
            PostToolUseParams,
            HookOutcome
        ),
        method!(
            HOOKS_USER_PROMPT_SUBMIT,
            "Run UserPromptSubmit hooks on a prompt without appending it (transcript.append runs them itself).",
            UserPromptSubmitParams,
            HookOutcome
        ),
        method!(
            HOOKS_SESSION_START,
            "Run SessionStart hooks with source resume or clear; their context is appended.",
            SessionStartParams,
            HookOutcome
        ),
        method!(
            HOOKS_STOP,
            "Run Stop hooks when the agent would stop; a block appends the reason for the model.",
            StopParams,
            HookOutcome
        ),
        method!(
            HOOKS_STOP_FAILURE,
            "Run StopFailure hooks when a turn ended on an API error (output ignored).",
            StopFailureParams,
            HookOutcome
        ),
        method!(
            HOOKS_SUBAGENT_START,
            "Run SubagentStart hooks; their context is returned for the sub-agent.",
            SubagentStartParams,
            HookOutcome
        ),
        method!(
            HOOKS_SUBAGENT_STOP,
            "Run SubagentStop hooks when a sub-agent would stop; a block returns the reason.",
            SubagentStopParams,
            HookOutcome
        ),
        method!(
            HOOKS_NOTIFICATION,
            "Run Notification hooks for a message to the user.",
            NotificationParams,
            HookOutcome
        ),
        method!(
            HOOKS_SESSION_END,
            "Run SessionEnd hooks when the session ends (output ignored).",
            SessionEndParams,
            HookOutcome
        ),
        method!(
            HOOKS_PERMISSION_REQUEST,
            "Run PermissionRequest hooks before asking the user to allow a tool call: decision allow (with updated_input) or deny (with reason), or none (ask the user).",
            PermissionRequestParams,
            HookOutcome
        ),
        method!(
            SESSION_SET_PLAN_MODE,
            "Switch plan mode on or off (and name the plan file); the next compile carries the entry or exit reminder.",
            PlanModeParams,
            PlanModeResponse
        ),
        method!(
            TRANSCRIPT_QUEUE,
            "Queue user input (text, images) typed while a turn runs; the agent's next compile delivers it as a queued_command attachment once the current tool results are in.",
            QueueParams,
            QueueResponse
        ),
        method!(
            TRANSCRIPT_QUEUED,
            "The queued input still waiting, oldest first (all agents, or one: main for the main thread).",
            QueuedParams,
            QueuedResponse
        ),
        method!(
            TRANSCRIPT_TAKE_QUEUED,
            "A sub-agent takes its queued input: appended as its sidechain queued_command records and returned with their text.",
            TakeQueuedParams,
            TakeQueuedResponse
        ),
        method!(
            CONTEXT_SET_SECTION,
            "Register (or replace, by name) a dynamic system section: memoized (frozen at its first compile until compaction or reset) or uncached (recomputed every compile; needs a reason).",
            SetSectionParams,
            AckResponse
        ),
        method!(
            CONTEXT_REMOVE_SECTION,
            "Remove a registered dynamic system section (ok is false when there was none).",
            RemoveSectionParams,
            AckResponse
        ),
        method!(
            CONTEXT_RESET_SECTIONS,
            "Drop the memo of memoized system sections: the next compile computes them again.",
            SessionIdParams,
            AckResponse
        ),
    ]
}
