//! Method names and the table that ties each to its params and result types.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

use crate::capabilities::*;
use crate::compile::{
    AckResponse, CompactParams, CompactionReport, CompileParams, CompileResponse,
    ProvideSummaryParams, ReplacementsResponse, ReportErrorParams, ReportReadParams, SnipParams,
    SnipResponse, TouchPathsParams,
};
use crate::event::{SessionEvent, SubscribeParams};
use crate::memory::*;
use crate::session::*;
use crate::transcript::*;

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
pub const MEMORY_GET: &str = "memory.get";
pub const MEMORY_UPDATE: &str = "memory.update";
pub const MEMORY_EXTRACT: &str = "memory.extract";
pub const COLLAPSE_LIST: &str = "context.collapse_list";
pub const COLLAPSE_UNDO: &str = "context.collapse_undo";
pub const CONTEXT_REPORT_ERROR: &str = "context.report_error";
pub const CONTEXT_PROVIDE_SUMMARY: &str = "context.provide_summary";
pub const TRANSCRIPT_PARSE_CLAUDE_CODE: &str = "transcript.parse_claude_code";
pub const RPC_DISCOVER: &str = "rpc.discover";

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
    pub sessions: u64,
    /// Sessions whose transcript is held in memory now (at most `ctxd
    /// --max-loaded-sessions`, plus any in use at the moment the bound was applied).
    #[serde(default)]
    pub loaded_sessions: u64,
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
    pub params: fn(&mut SchemaGenerator) -> Schema,
    pub result: fn(&mut SchemaGenerator) -> Schema,
    /// Subscriptions: the notification method and its unsubscribe method.
    pub subscription: Option<(&'static str, &'static str)>,
}

fn schema<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

macro_rules! method {
    ($name:expr, $summary:expr, $p:ty, $r:ty) => {
        MethodSpec {
            name: $name,
            summary: $summary,
            params: schema::<$p>,
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
            DAEMON_STATUS,
            "Handshake: protocol version, daemon version, paths, uptime.",
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
        MethodSpec {
            name: SESSION_SUBSCRIBE,
            summary: "Stream a session's events (WebSocket only).",
            params: schema::<SubscribeParams>,
            result: schema::<SessionEvent>,
            subscription: Some((SESSION_EVENT, SESSION_UNSUBSCRIBE)),
        },
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
    ]
}
