//! The ctxd wire contract: every JSON-RPC method name, its params and result types,
//! the session event stream, error codes, and the OpenRPC document generated from them.
//!
//! It also holds where the daemon's socket is (`socket`), the one rule clients and the
//! daemon must agree on outside the wire. This crate depends on serde, serde_json,
//! schemars and libc only, so any client can embed it without pulling in the
//! daemon.

pub mod agents;
pub mod attachments;
pub mod cache;
pub mod capabilities;
pub mod compile;
pub mod error;
pub mod event;
pub mod handshake;
pub mod hooks;
pub mod memory;
pub mod methods;
pub mod models;
pub mod openrpc;
pub mod prompt;
pub mod record;
pub mod reference;
mod request_form;
pub mod send;
pub mod session;
pub mod settings;
pub mod socket;
pub mod transcript;

/// Version of the wire contract, `MAJOR.MINOR`. An incompatible change bumps the major;
/// an additive one (a method, an optional param, a result field, an event kind) bumps the
/// minor. See `handshake` for negotiation.
pub const PROTOCOL_VERSION: &str = "1.4";

pub use agents::{
    AgentFinishParams, AgentFinishResponse, AgentInstructions, AgentListResponse, AgentStartParams,
    AgentStartResponse, AgentThread,
};
pub use attachments::{
    AttachmentSettings, MemorySelector, PlanModeParams, PlanModeResponse, QueueParams,
    QueueResponse, QueuedEntry, QueuedParams, QueuedResponse, RelevantMemorySettings,
    RemoveSectionParams, SetSectionParams, SourceReport, SourceStatus, TakeQueuedParams,
    TakeQueuedResponse, UncachedSectionReport,
};
pub use cache::{
    CacheBreak, CacheCall, CacheMetadata, CacheReportParams, CacheReportResponse, RequestFlags,
    UsageCategory, UsageParams, UsageResponse,
};
pub use capabilities::{
    AgentType, CapabilitiesResponse, CapabilityChangeResponse, DiscoverToolsParams,
    InvokeSkillParams, McpConnectParams, McpDisconnectParams, McpResource, McpServerState,
    McpSetInstructionsParams, SetAgentsParams, SkillInfo, SkillsResponse, SkippedSkill, ToolState,
};
pub use compile::{
    AckResponse, AddedAttachment, CompactParams, CompactionReport, CompactionShortfall,
    CompileFormat, CompileMetadata, CompileParams, CompileResponse, ContextState, CostExpectation,
    MicrocompactReport, Pace, PolicyClear, ProvideSummaryParams, Replacement, ReplacementsResponse,
    ReportErrorParams, ReportReadParams, SectionLayout, SnipParams, SnipResponse, TokenEstimate,
    TouchPathsParams,
};
pub use error::{
    COMPACTION_FAILED, CONFLICT, DUPLICATE_RECORD, ERROR_CODES, HOOK_BLOCKED, INTERNAL,
    INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, PEER_REFUSED, PROMPT_TOO_LONG,
    PROVIDER_FAILED, RECORD_NOT_FOUND, REQUEST_TOO_BIG, RESPONSE_TOO_BIG, SESSION_NOT_FOUND,
    STORAGE, TOO_MANY_CALLS_IN_BATCH, TOO_MANY_CONNECTIONS, TOO_MANY_SUBSCRIPTIONS,
    TURN_IN_PROGRESS, UNSUPPORTED_PROTOCOL_VERSION, WEBSOCKET_REQUIRED,
};
pub use event::{SessionEvent, SessionNotification, SubscribeParams};
pub use handshake::{
    Capabilities, InitializeParams, InitializeResult, Limits, PeerInfo, SubscriptionCapabilities,
    SubscriptionId, UnsubscribeParams, negotiate, parse_version,
};
pub use hooks::{
    ClientSessionStart, ConfiguredHook, HookContextRef, HookEvent, HookOutcome, HookRunReport,
    HookSettings, HookSourceFile, HooksListResponse, NotificationParams, PermissionRequestParams,
    PostToolUseParams, PreToolUseParams, SessionEndParams, SessionStartParams, StopFailureParams,
    StopParams, SubagentStartParams, SubagentStopParams, UserPromptSubmitParams,
};
pub use memory::{
    CollapseInfo, CollapseListResponse, CollapseUndoParams, MemoryGetResponse, MemoryUpdateParams,
    MemoryUpdateResponse,
};
// The method table's names are generated from the one table (a constant per method,
// the `method` markers, the handler trait), so they are re-exported whole.
pub use methods::*;
pub use prompt::{
    ModelProfile, ModelProfileInput, SectionCaching, SectionSource, SystemPrompt, SystemSection,
    ToolSpec,
};
pub use record::{
    CacheControl, CacheCreation, ContentBlock, Extra, MediaSource, MessageInput, Record,
    RecordInput, RecordKind, ToolResultBlock, ToolResultContent, Usage,
};
pub use send::{
    BlockDelta, ProviderConfig, SendParams, SendResponse, StreamEvent, TurnEvent, TurnRecovery,
};
pub use session::{
    AgentInfo, SessionCreateParams, SessionCreateResponse, SessionDeleteResponse,
    SessionForkParams, SessionForkResponse, SessionGetResponse, SessionIdParams,
    SessionImportParams, SessionImportResponse, SessionInfo, SessionListParams,
    SessionListResponse, SessionUpdateParams, ToolsListResponse, ToolsSetParams, ToolsSetResponse,
    merge_patch,
};
pub use settings::{
    CollapseConfig, ContextPolicy, InstructionSettings, LeanSettings, MemoryExtractor,
    MemorySettings, MicrocompactSettings, ProviderContextManagement, ProxyMode, ProxySettings,
    ServerCompactionMode, SessionSettings, SummariserConfig,
};
pub use transcript::{
    AppendParams, AppendResponse, AppendedRecord, CLAUDE_CODE_ENVELOPE, CLAUDE_CODE_RECORDED_CALLS,
    ImportStats, ParseClaudeCodeParams, ParseClaudeCodeResponse, ReadParams, ReadResponse,
    RejectMediaParams, RejectMediaResponse, ToolResultReplacement,
};
