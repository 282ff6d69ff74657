"""Generated from protocol/openrpc.json by scripts/openrpc-py-types.py: do not edit.

OpenRPC 1.3.2, ctxd 1.4: a TypedDict per schema, and
`Methods` / `AsyncMethods`, one typed method per RPC method.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict, Union


_AckResponseRequired = TypedDict("_AckResponseRequired", {"ok": "bool"})
_AckResponseOptional = TypedDict("_AckResponseOptional", {}, total=False)


class AckResponse(_AckResponseRequired, _AckResponseOptional):
    pass


_AddedAttachmentRequired = TypedDict("_AddedAttachmentRequired", {"type": "str", "uuid": "str"})
_AddedAttachmentOptional = TypedDict("_AddedAttachmentOptional", {}, total=False)


class AddedAttachment(_AddedAttachmentRequired, _AddedAttachmentOptional):
    """An attachment record a compile appended, and its attachment type."""


_AgentFinishResponseRequired = TypedDict("_AgentFinishResponseRequired", {"agent": "AgentInfo", "seq": "int", "uuid": "str"})
_AgentFinishResponseOptional = TypedDict("_AgentFinishResponseOptional", {}, total=False)


class AgentFinishResponse(_AgentFinishResponseRequired, _AgentFinishResponseOptional):
    pass


_AgentInfoRequired = TypedDict("_AgentInfoRequired", {"agent_id": "str", "agent_type": "str", "parent_session_id": "str", "tool_use_id": "str"})
_AgentInfoOptional = TypedDict("_AgentInfoOptional", {"finished_at": "Optional[str]", "result_uuid": "Optional[str]"}, total=False)


class AgentInfo(_AgentInfoRequired, _AgentInfoOptional):
    """What a session row says of the sub-agent whose thread it holds."""


AgentInstructions = "Union[Literal[\"full\"], Literal[\"light\"]]"


_AgentListResponseRequired = TypedDict("_AgentListResponseRequired", {"agents": "List[AgentThread]"})
_AgentListResponseOptional = TypedDict("_AgentListResponseOptional", {}, total=False)


class AgentListResponse(_AgentListResponseRequired, _AgentListResponseOptional):
    pass


_AgentStartResponseRequired = TypedDict("_AgentStartResponseRequired", {"session": "SessionInfo"})
_AgentStartResponseOptional = TypedDict("_AgentStartResponseOptional", {"additional_context": "List[str]"}, total=False)


class AgentStartResponse(_AgentStartResponseRequired, _AgentStartResponseOptional):
    pass


_AgentThreadRequired = TypedDict("_AgentThreadRequired", {"agent_id": "str", "agent_type": "str", "parent_session_id": "str", "record_count": "int", "session_id": "str", "tool_use_id": "str"})
_AgentThreadOptional = TypedDict("_AgentThreadOptional", {"finished_at": "Optional[str]", "result_uuid": "Optional[str]"}, total=False)


class AgentThread(_AgentThreadRequired, _AgentThreadOptional):
    """A sub-agent and the session holding its thread."""


_AgentTypeRequired = TypedDict("_AgentTypeRequired", {"description": "str", "type": "str"})
_AgentTypeOptional = TypedDict("_AgentTypeOptional", {"tools": "Optional[List[str]]"}, total=False)


class AgentType(_AgentTypeRequired, _AgentTypeOptional):
    """One agent type the agent's `Agent` tool can start."""


_AppendResponseRequired = TypedDict("_AppendResponseRequired", {"appended": "List[AppendedRecord]"})
_AppendResponseOptional = TypedDict("_AppendResponseOptional", {"last_uuid": "Optional[str]"}, total=False)


class AppendResponse(_AppendResponseRequired, _AppendResponseOptional):
    pass


_AppendedRecordRequired = TypedDict("_AppendedRecordRequired", {"seq": "int", "uuid": "str"})
_AppendedRecordOptional = TypedDict("_AppendedRecordOptional", {}, total=False)


class AppendedRecord(_AppendedRecordRequired, _AppendedRecordOptional):
    pass


_AttachmentSettingsRequired = TypedDict("_AttachmentSettingsRequired", {})
_AttachmentSettingsOptional = TypedDict("_AttachmentSettingsOptional", {"collect_timeout_ms": "Optional[int]", "relevant_memories": "RelevantMemorySettings", "task_reminder": "Optional[bool]"}, total=False)


class AttachmentSettings(_AttachmentSettingsRequired, _AttachmentSettingsOptional):
    """Attachment collection. Every field is optional; absent means the default."""


_BackupResponseRequired = TypedDict("_BackupResponseRequired", {"bytes": "int", "elapsed_ms": "int", "path": "str"})
_BackupResponseOptional = TypedDict("_BackupResponseOptional", {}, total=False)


class BackupResponse(_BackupResponseRequired, _BackupResponseOptional):
    """`daemon.backup`: the copy written."""


BlockDelta = "Dict[str, Any]"


_CacheBreakRequired = TypedDict("_CacheBreakRequired", {"cause": "str", "previous_read_tokens": "int", "read_tokens": "int"})
_CacheBreakOptional = TypedDict("_CacheBreakOptional", {"changes": "List[str]", "gap_secs": "Optional[int]"}, total=False)


class CacheBreak(_CacheBreakRequired, _CacheBreakOptional):
    """Why the cache read dropped."""


_CacheCallRequired = TypedDict("_CacheCallRequired", {"cache_creation_tokens": "int", "cache_read_tokens": "int", "input_tokens": "int", "output_tokens": "int", "seq": "int", "timestamp": "str", "uuid": "str"})
_CacheCallOptional = TypedDict("_CacheCallOptional", {"agrees": "Optional[bool]", "cache_break": "Optional[CacheBreak]", "cost_usd": "Optional[float]", "expected_drop": "Optional[str]", "model": "Optional[str]", "predicted_read_tokens": "Optional[int]", "provider_miss_reason": "Dict[str, Any]", "server_cleared_tokens": "Optional[int]"}, total=False)


class CacheCall(_CacheCallRequired, _CacheCallOptional):
    """One model call (an assistant response with usage) of the session."""


_CacheControlRequired = TypedDict("_CacheControlRequired", {"type": "str"})
_CacheControlOptional = TypedDict("_CacheControlOptional", {"scope": "Optional[str]", "ttl": "Optional[str]"}, total=False)


class CacheControl(_CacheControlRequired, _CacheControlOptional):
    """Anthropic prompt-cache marker. Placed by ctxd only; clients never send it."""


_CacheCreationRequired = TypedDict("_CacheCreationRequired", {})
_CacheCreationOptional = TypedDict("_CacheCreationOptional", {"ephemeral_1h_input_tokens": "int", "ephemeral_5m_input_tokens": "int"}, total=False)


class CacheCreation(_CacheCreationRequired, _CacheCreationOptional):
    """`usage.cache_creation`: the cache writes of a response by TTL."""


_CacheMetadataRequired = TypedDict("_CacheMetadataRequired", {"flags": "RequestFlags", "predicted_read_tokens": "int", "prefix_bytes": "int", "request_tokens": "int"})
_CacheMetadataOptional = TypedDict("_CacheMetadataOptional", {"expected_break": "Optional[str]", "first_difference": "Optional[str]", "headers": "Dict[str, Any]", "latch_notes": "List[str]"}, total=False)


class CacheMetadata(_CacheMetadataRequired, _CacheMetadataOptional):
    """What the provider's prompt cache is predicted to serve of a compiled request,
    against the previous compile of the same session. Cache markers are ignored: they are
    not part of the cache key.
    """


_CacheReportResponseRequired = TypedDict("_CacheReportResponseRequired", {"breaks": "int", "calls": "List[CacheCall]"})
_CacheReportResponseOptional = TypedDict("_CacheReportResponseOptional", {"agreed": "int", "cost_usd": "float", "diagnosed": "int"}, total=False)


class CacheReportResponse(_CacheReportResponseRequired, _CacheReportResponseOptional):
    pass


_CapabilitiesRequired = TypedDict("_CapabilitiesRequired", {"default_summariser": "str", "file_watching": "bool", "methods": "List[str]", "subscriptions": "SubscriptionCapabilities", "transports": "List[str]"})
_CapabilitiesOptional = TypedDict("_CapabilitiesOptional", {}, total=False)


class Capabilities(_CapabilitiesRequired, _CapabilitiesOptional):
    """What this daemon offers."""


_CapabilitiesResponseRequired = TypedDict("_CapabilitiesResponseRequired", {"agents": "List[AgentType]", "announced_agent_types": "List[str]", "announced_deferred_tools": "List[str]", "announced_mcp_servers": "List[str]", "mcp_servers": "List[McpServerState]", "tools": "List[ToolState]"})
_CapabilitiesResponseOptional = TypedDict("_CapabilitiesResponseOptional", {}, total=False)


class CapabilitiesResponse(_CapabilitiesResponseRequired, _CapabilitiesResponseOptional):
    pass


_CapabilityChangeResponseRequired = TypedDict("_CapabilityChangeResponseRequired", {"announced_by": "str", "tool_count": "int"})
_CapabilityChangeResponseOptional = TypedDict("_CapabilityChangeResponseOptional", {}, total=False)


class CapabilityChangeResponse(_CapabilityChangeResponseRequired, _CapabilityChangeResponseOptional):
    """What a capability change did."""


ClientSessionStart = "Literal[\"resume\", \"clear\"]"


_CollapseConfigRequired = TypedDict("_CollapseConfigRequired", {})
_CollapseConfigOptional = TypedDict("_CollapseConfigOptional", {"block_at_pct": "int", "commit_at_pct": "int", "enabled": "bool", "keep_recent_rounds": "int", "span_rounds": "int", "stage_at_pct": "int", "target_pct": "int"}, total=False)


class CollapseConfig(_CollapseConfigRequired, _CollapseConfigOptional):
    """Context collapse thresholds, as percentages of the effective window."""


_CollapseInfoRequired = TypedDict("_CollapseInfoRequired", {"first_uuid": "str", "id": "str", "last_uuid": "str", "record_count": "int", "status": "str", "summary": "str", "tokens": "int"})
_CollapseInfoOptional = TypedDict("_CollapseInfoOptional", {}, total=False)


class CollapseInfo(_CollapseInfoRequired, _CollapseInfoOptional):
    pass


_CollapseListResponseRequired = TypedDict("_CollapseListResponseRequired", {"collapses": "List[CollapseInfo]"})
_CollapseListResponseOptional = TypedDict("_CollapseListResponseOptional", {}, total=False)


class CollapseListResponse(_CollapseListResponseRequired, _CollapseListResponseOptional):
    pass


_CompactionReportRequired = TypedDict("_CompactionReportRequired", {"boundary_uuid": "str", "head_truncated_rounds": "int", "kept_records": "int", "kind": "str", "micros": "int", "post_tokens": "int", "pre_tokens": "int", "restored_files": "List[str]", "summarised_records": "int", "summariser": "str", "summary_chars": "int", "trigger": "str"})
_CompactionReportOptional = TypedDict("_CompactionReportOptional", {"restore_skipped": "List[str]", "session_memory_skipped": "Optional[str]", "target_tokens": "int", "tightenings": "int"}, total=False)


class CompactionReport(_CompactionReportRequired, _CompactionReportOptional):
    """What one compaction did."""


_CompactionShortfallRequired = TypedDict("_CompactionShortfallRequired", {"best_tokens": "int", "reason": "str", "target_tokens": "int"})
_CompactionShortfallOptional = TypedDict("_CompactionShortfallOptional", {}, total=False)


class CompactionShortfall(_CompactionShortfallRequired, _CompactionShortfallOptional):
    """How far a compaction stayed from its target."""


CompileFormat = "Union[Literal[\"anthropic\"], Literal[\"openai_chat\"]]"


_CompileMetadataRequired = TypedDict("_CompileMetadataRequired", {"attachments_added": "List[str]", "cache": "CacheMetadata", "context": "ContextState", "kept": "List[str]", "last_seq": "int", "message_count": "int", "microcompact": "MicrocompactReport", "projected_records": "int", "repairs": "List[str]", "replaced": "List[str]", "request_bytes": "int", "request_sha256": "str", "snip_tokens_freed": "int", "system_sections": "List[SectionLayout]", "tokens": "TokenEstimate"})
_CompileMetadataOptional = TypedDict("_CompileMetadataOptional", {"added_attachments": "List[AddedAttachment]", "attachment_sources": "List[SourceReport]", "autocompact_skipped": "Optional[str]", "compaction": "Optional[CompactionReport]", "compaction_shortfall": "Optional[CompactionShortfall]", "cost": "Optional[CostExpectation]", "hook_contexts": "List[HookContextRef]", "last_uuid": "Optional[str]", "non_public": "List[str]", "placeholder_tools": "List[str]", "stream_required": "bool", "uncached_sections": "List[UncachedSectionReport]"}, total=False)


class CompileMetadata(_CompileMetadataRequired, _CompileMetadataOptional):
    pass


_CompileResponseRequired = TypedDict("_CompileResponseRequired", {"metadata": "CompileMetadata", "request": "Dict[str, Any]"})
_CompileResponseOptional = TypedDict("_CompileResponseOptional", {}, total=False)


class CompileResponse(_CompileResponseRequired, _CompileResponseOptional):
    pass


_ConfiguredHookRequired = TypedDict("_ConfiguredHookRequired", {"active": "bool", "command": "str", "event": "HookEvent", "file": "str", "source": "str", "timeout_secs": "float"})
_ConfiguredHookOptional = TypedDict("_ConfiguredHookOptional", {"inactive_reason": "Optional[str]", "matcher": "Optional[str]"}, total=False)


class ConfiguredHook(_ConfiguredHookRequired, _ConfiguredHookOptional):
    """One configured hook command, as `hooks.list` reports it."""


ContentBlock = "Dict[str, Any]"


ContextPolicy = "Union[Literal[\"claude_code\"], Literal[\"lean\"]]"


_ContextStateRequired = TypedDict("_ContextStateRequired", {"above_autocompact": "bool", "at_blocking_limit": "bool", "autocompact_threshold": "int", "blocking_limit": "int", "effective_tokens": "int", "effective_window": "int", "is_above_error": "bool", "is_above_warning": "bool", "percent_left": "int", "warning_threshold": "int"})
_ContextStateOptional = TypedDict("_ContextStateOptional", {}, total=False)


class ContextState(_ContextStateRequired, _ContextStateOptional):
    """Where the context stands against the session's limits."""


_CostExpectationRequired = TypedDict("_CostExpectationRequired", {"expected_warm_calls": "float", "pace": "Pace", "prices": "Prices", "request_tokens": "int", "ttl": "str", "ttl_1h_saving": "float", "write_tokens": "int"})
_CostExpectationOptional = TypedDict("_CostExpectationOptional", {"clear_saving": "Optional[float]"}, total=False)


class CostExpectation(_CostExpectationRequired, _CostExpectationOptional):
    """The lean policy's cost model at one compile (`metadata.cost`): its inputs and the
    savings it expected, in US dollars, so a reader can see why it acted.
    """


_DaemonStatusRequired = TypedDict("_DaemonStatusRequired", {"daemon_version": "str", "home": "str", "pid": "int", "protocol_version": "str", "sessions": "int", "socket": "str", "uptime_ms": "int"})
_DaemonStatusOptional = TypedDict("_DaemonStatusOptional", {"loaded_sessions": "int", "store_error": "Optional[str]", "websocket": "WebSocketStatus"}, total=False)


class DaemonStatus(_DaemonStatusRequired, _DaemonStatusOptional):
    pass


_GcDeletedRequired = TypedDict("_GcDeletedRequired", {"bytes": "int", "reason": "str", "session_id": "str", "updated_at": "str"})
_GcDeletedOptional = TypedDict("_GcDeletedOptional", {}, total=False)


class GcDeleted(_GcDeletedRequired, _GcDeletedOptional):
    """One session `daemon.gc` deleted."""


_GcResponseRequired = TypedDict("_GcResponseRequired", {"deleted": "List[GcDeleted]", "dry_run": "bool", "kept_bytes": "int"})
_GcResponseOptional = TypedDict("_GcResponseOptional", {}, total=False)


class GcResponse(_GcResponseRequired, _GcResponseOptional):
    """`daemon.gc`: the sessions deleted (or, on a dry run, that would be)."""


_HookContextRefRequired = TypedDict("_HookContextRefRequired", {"hook_event_name": "str", "type": "str", "uuid": "str"})
_HookContextRefOptional = TypedDict("_HookContextRefOptional", {}, total=False)


class HookContextRef(_HookContextRefRequired, _HookContextRefOptional):
    """A hook context the compiled request carries (`metadata.hook_contexts`)."""


HookEvent = "Union[Literal[\"SessionStart\", \"UserPromptSubmit\", \"PreToolUse\", \"PostToolUse\", \"PreCompact\", \"PostCompact\", \"InstructionsLoaded\", \"CwdChanged\", \"FileChanged\", \"Stop\", \"StopFailure\", \"SubagentStart\", \"SubagentStop\", \"Notification\"], Literal[\"SessionEnd\"], Literal[\"PermissionRequest\"]]"


_HookOutcomeRequired = TypedDict("_HookOutcomeRequired", {"ran": "int"})
_HookOutcomeOptional = TypedDict("_HookOutcomeOptional", {"additional_context": "List[str]", "appended": "List[AppendedRecord]", "continue": "bool", "decision": "Optional[str]", "errors": "List[str]", "last_uuid": "Optional[str]", "reason": "Optional[str]", "results": "List[HookRunReport]", "stop_reason": "Optional[str]", "suppress_output": "bool", "system_messages": "List[str]", "updated_input": "Dict[str, Any]"}, total=False)


class HookOutcome(_HookOutcomeRequired, _HookOutcomeOptional):
    """The merged result of every hook an event ran (they run in parallel; results are
    merged in configuration order, so the answer does not depend on timing).
    """


_HookRunReportRequired = TypedDict("_HookRunReportRequired", {"command": "str", "duration_ms": "int", "output_cut": "bool", "source": "str", "timed_out": "bool"})
_HookRunReportOptional = TypedDict("_HookRunReportOptional", {"decision": "Optional[str]", "error": "Optional[str]", "exit_code": "Optional[int]"}, total=False)


class HookRunReport(_HookRunReportRequired, _HookRunReportOptional):
    """What one hook command did."""


_HookSettingsRequired = TypedDict("_HookSettingsRequired", {})
_HookSettingsOptional = TypedDict("_HookSettingsOptional", {"disabled": "bool", "transcript_path": "Optional[str]", "trust_project": "bool"}, total=False)


class HookSettings(_HookSettingsRequired, _HookSettingsOptional):
    """Per-session hook switches (`settings.hooks`)."""


_HookSourceFileRequired = TypedDict("_HookSourceFileRequired", {"file": "str", "hooks": "int", "source": "str", "status": "str"})
_HookSourceFileOptional = TypedDict("_HookSourceFileOptional", {"error": "Optional[str]"}, total=False)


class HookSourceFile(_HookSourceFileRequired, _HookSourceFileOptional):
    """One settings file the daemon looked at for a session."""


_HooksListResponseRequired = TypedDict("_HooksListResponseRequired", {"files": "List[HookSourceFile]", "hooks": "List[ConfiguredHook]"})
_HooksListResponseOptional = TypedDict("_HooksListResponseOptional", {"all_disabled": "Optional[str]"}, total=False)


class HooksListResponse(_HooksListResponseRequired, _HooksListResponseOptional):
    pass


_ImportStatsRequired = TypedDict("_ImportStatsRequired", {"assistant": "int", "attachment": "int", "lines": "int", "records": "int", "skipped": "Dict[str, Any]", "system": "int", "tool_result": "int", "tool_use": "int", "user": "int"})
_ImportStatsOptional = TypedDict("_ImportStatsOptional", {"agents": "int", "replacements": "int", "warnings": "List[str]"}, total=False)


class ImportStats(_ImportStatsRequired, _ImportStatsOptional):
    pass


_InitializeResultRequired = TypedDict("_InitializeResultRequired", {"capabilities": "Capabilities", "limits": "Limits", "protocol_version": "str", "server_info": "PeerInfo", "server_protocol_version": "str"})
_InitializeResultOptional = TypedDict("_InitializeResultOptional", {}, total=False)


class InitializeResult(_InitializeResultRequired, _InitializeResultOptional):
    pass


_InstructionSettingsRequired = TypedDict("_InstructionSettingsRequired", {})
_InstructionSettingsOptional = TypedDict("_InstructionSettingsOptional", {"agents_md": "Optional[bool]", "allow_external_includes": "bool", "disabled": "bool", "excludes": "List[str]", "managed_root": "Optional[str]"}, total=False)


class InstructionSettings(_InstructionSettingsRequired, _InstructionSettingsOptional):
    """How instruction files are discovered for a session."""


_LeanSettingsRequired = TypedDict("_LeanSettingsRequired", {})
_LeanSettingsOptional = TypedDict("_LeanSettingsOptional", {"choose_ttl": "bool", "keep_recent": "int", "priced_clears": "bool", "stale_after_rounds": "Optional[int]", "touch_by_use": "bool", "warm_min_ratio_pct": "int"}, total=False)


class LeanSettings(_LeanSettingsRequired, _LeanSettingsOptional):
    """`settings.lean`: the lean policy's rules."""


_LimitsRequired = TypedDict("_LimitsRequired", {"max_append_records": "int", "max_batch_calls": "int", "max_connections": "int", "max_loaded_sessions": "int", "max_read_page": "int", "max_record_bytes": "int", "max_request_bytes": "int", "max_response_bytes": "int", "max_subscriptions_per_connection": "int"})
_LimitsOptional = TypedDict("_LimitsOptional", {}, total=False)


class Limits(_LimitsRequired, _LimitsOptional):
    """Bounds the daemon enforces; exceeding one is an error, never a crash."""


_McpResourceRequired = TypedDict("_McpResourceRequired", {"uri": "str"})
_McpResourceOptional = TypedDict("_McpResourceOptional", {"description": "Optional[str]", "mime_type": "Optional[str]", "name": "Optional[str]", "text": "Optional[str]"}, total=False)


class McpResource(_McpResourceRequired, _McpResourceOptional):
    """An MCP resource a client registered, as `resources/read` gave it."""


_McpServerStateRequired = TypedDict("_McpServerStateRequired", {"in_system": "bool", "instructions_chars": "int", "name": "str", "tools": "List[str]"})
_McpServerStateOptional = TypedDict("_McpServerStateOptional", {}, total=False)


class McpServerState(_McpServerStateRequired, _McpServerStateOptional):
    pass


MediaSource = "Dict[str, Any]"


MemoryExtractor = "Union[Literal[\"off\"], Literal[\"daemon\"], Literal[\"external\"]]"


_MemoryGetResponseRequired = TypedDict("_MemoryGetResponseRequired", {"document": "str", "extracting": "bool", "path": "str", "version": "int"})
_MemoryGetResponseOptional = TypedDict("_MemoryGetResponseOptional", {"last_summarized_uuid": "Optional[str]", "updated_at": "Optional[str]", "writer": "Optional[str]"}, total=False)


class MemoryGetResponse(_MemoryGetResponseRequired, _MemoryGetResponseOptional):
    pass


MemorySelector = "Union[Literal[\"offline\"], Literal[\"model\"]]"


_MemorySettingsRequired = TypedDict("_MemorySettingsRequired", {})
_MemorySettingsOptional = TypedDict("_MemorySettingsOptional", {"compact": "Optional[bool]", "extractor": "MemoryExtractor"}, total=False)


class MemorySettings(_MemorySettingsRequired, _MemorySettingsOptional):
    pass


_MemoryUpdateResponseRequired = TypedDict("_MemoryUpdateResponseRequired", {"version": "int"})
_MemoryUpdateResponseOptional = TypedDict("_MemoryUpdateResponseOptional", {}, total=False)


class MemoryUpdateResponse(_MemoryUpdateResponseRequired, _MemoryUpdateResponseOptional):
    pass


_MessageInputRequired = TypedDict("_MessageInputRequired", {})
_MessageInputOptional = TypedDict("_MessageInputOptional", {"content": "Union[str, List[ContentBlock]]", "id": "Optional[str]", "model": "Optional[str]", "role": "Optional[str]", "stop_reason": "Optional[str]", "type": "Optional[str]", "usage": "Optional[Usage]"}, total=False)


class MessageInput(_MessageInputRequired, _MessageInputOptional):
    """A Messages API message as a client hands it over whole: an SDK `Message` dumped as
    JSON, with or without `exclude_none`.
    """


_MetricsResponseRequired = TypedDict("_MetricsResponseRequired", {"text": "str"})
_MetricsResponseOptional = TypedDict("_MetricsResponseOptional", {}, total=False)


class MetricsResponse(_MetricsResponseRequired, _MetricsResponseOptional):
    """`daemon.metrics`: the metrics as a Prometheus scrape would read them."""


_MicrocompactReportRequired = TypedDict("_MicrocompactReportRequired", {"cache_edits_added": "List[str]", "cache_edits_pinned": "int", "time_based_cleared": "List[str]"})
_MicrocompactReportOptional = TypedDict("_MicrocompactReportOptional", {"policy_cleared": "List[PolicyClear]"}, total=False)


class MicrocompactReport(_MicrocompactReportRequired, _MicrocompactReportOptional):
    """What microcompact did in this compile."""


_MicrocompactSettingsRequired = TypedDict("_MicrocompactSettingsRequired", {})
_MicrocompactSettingsOptional = TypedDict("_MicrocompactSettingsOptional", {"cached": "bool", "cached_keep_recent": "int", "cached_trigger": "int", "gap_minutes": "int", "keep_recent": "int", "time_based": "bool"}, total=False)


class MicrocompactSettings(_MicrocompactSettingsRequired, _MicrocompactSettingsOptional):
    """Microcompact switches. Both paths are off by default, as in Claude Code."""


_ModelProfileRequired = TypedDict("_ModelProfileRequired", {})
_ModelProfileOptional = TypedDict("_ModelProfileOptional", {"context_window": "Optional[int]", "max_output_tokens": "Optional[int]", "model": "Optional[str]", "supports_thinking": "Optional[bool]"}, total=False)


class ModelProfile(_ModelProfileRequired, _ModelProfileOptional):
    """What the session's model can hold and produce. A field left out is taken from the
    model catalogue ([`crate::models`]) for a listed model; a model the catalogue does not
    list needs at least `context_window`.
    """


_PaceRequired = TypedDict("_PaceRequired", {"calls": "int", "over_1h": "int", "within_1h": "int", "within_5m": "int"})
_PaceOptional = TypedDict("_PaceOptional", {}, total=False)


class Pace(_PaceRequired, _PaceOptional):
    """Gaps between a session's consecutive model calls, by length."""


_ParseClaudeCodeResponseRequired = TypedDict("_ParseClaudeCodeResponseRequired", {"records": "List[RecordInput]", "replacements": "List[ToolResultReplacement]", "source_lines": "List[int]", "stats": "ImportStats"})
_ParseClaudeCodeResponseOptional = TypedDict("_ParseClaudeCodeResponseOptional", {"cwd": "Optional[str]", "first_timestamp": "Optional[str]"}, total=False)


class ParseClaudeCodeResponse(_ParseClaudeCodeResponseRequired, _ParseClaudeCodeResponseOptional):
    pass


_PeerInfoRequired = TypedDict("_PeerInfoRequired", {"name": "str", "version": "str"})
_PeerInfoOptional = TypedDict("_PeerInfoOptional", {}, total=False)


class PeerInfo(_PeerInfoRequired, _PeerInfoOptional):
    """Name and version of the program on one end of the connection."""


_PingResponseRequired = TypedDict("_PingResponseRequired", {"pong": "bool"})
_PingResponseOptional = TypedDict("_PingResponseOptional", {}, total=False)


class PingResponse(_PingResponseRequired, _PingResponseOptional):
    pass


_PlanModeResponseRequired = TypedDict("_PlanModeResponseRequired", {"plan_exists": "bool", "plan_file": "str", "plan_mode": "bool"})
_PlanModeResponseOptional = TypedDict("_PlanModeResponseOptional", {}, total=False)


class PlanModeResponse(_PlanModeResponseRequired, _PlanModeResponseOptional):
    pass


_PolicyClearRequired = TypedDict("_PolicyClearRequired", {"rule": "str", "tool_use_id": "str"})
_PolicyClearOptional = TypedDict("_PolicyClearOptional", {}, total=False)


class PolicyClear(_PolicyClearRequired, _PolicyClearOptional):
    """One result the lean policy cleared, and why."""


_PricesRequired = TypedDict("_PricesRequired", {"cache_read": "float", "cache_write_1h": "float", "cache_write_5m": "float", "input": "float", "output": "float"})
_PricesOptional = TypedDict("_PricesOptional", {}, total=False)


class Prices(_PricesRequired, _PricesOptional):
    """Prices of one model, dollars per million tokens."""


ProviderConfig = "Dict[str, Any]"


_ProviderContextManagementRequired = TypedDict("_ProviderContextManagementRequired", {"edits": "List[Dict[str, Any]]"})
_ProviderContextManagementOptional = TypedDict("_ProviderContextManagementOptional", {}, total=False)


class ProviderContextManagement(_ProviderContextManagementRequired, _ProviderContextManagementOptional):
    """`settings.provider_context_management`."""


ProxyMode = "Union[Literal[\"observe\"], Literal[\"manage\"]]"


_ProxySettingsRequired = TypedDict("_ProxySettingsRequired", {})
_ProxySettingsOptional = TypedDict("_ProxySettingsOptional", {"conversation": "Optional[str]", "mode": "ProxyMode"}, total=False)


class ProxySettings(_ProxySettingsRequired, _ProxySettingsOptional):
    """`settings.proxy`."""


_ProxyStatusResponseRequired = TypedDict("_ProxyStatusResponseRequired", {"bytes_down": "int", "bytes_up": "int", "listening": "bool", "requests": "int", "sessions_seen": "int"})
_ProxyStatusResponseOptional = TypedDict("_ProxyStatusResponseOptional", {"anthropic_base_url": "Optional[str]", "listen": "Optional[str]", "openai_base_url": "Optional[str]"}, total=False)


class ProxyStatusResponse(_ProxyStatusResponseRequired, _ProxyStatusResponseOptional):
    """The HTTP front door's state. Its base URLs carry the home's secret: they are for the
    user's own shell (`ctx proxy env`), which is why only the socket's owner may ask.
    """


_QueueResponseRequired = TypedDict("_QueueResponseRequired", {"pending": "int", "queue_id": "str"})
_QueueResponseOptional = TypedDict("_QueueResponseOptional", {}, total=False)


class QueueResponse(_QueueResponseRequired, _QueueResponseOptional):
    pass


_QueuedEntryRequired = TypedDict("_QueuedEntryRequired", {"content": "List[ContentBlock]", "queue_id": "str", "queued_at": "str"})
_QueuedEntryOptional = TypedDict("_QueuedEntryOptional", {"agent_id": "Optional[str]"}, total=False)


class QueuedEntry(_QueuedEntryRequired, _QueuedEntryOptional):
    pass


_QueuedResponseRequired = TypedDict("_QueuedResponseRequired", {"entries": "List[QueuedEntry]"})
_QueuedResponseOptional = TypedDict("_QueuedResponseOptional", {}, total=False)


class QueuedResponse(_QueuedResponseRequired, _QueuedResponseOptional):
    pass


_ReadResponseRequired = TypedDict("_ReadResponseRequired", {"records": "List[Record]"})
_ReadResponseOptional = TypedDict("_ReadResponseOptional", {"next_after_seq": "Optional[int]"}, total=False)


class ReadResponse(_ReadResponseRequired, _ReadResponseOptional):
    pass


_RecordRequired = TypedDict("_RecordRequired", {"seq": "int", "timestamp": "str", "type": "RecordKind", "uuid": "str"})
_RecordOptional = TypedDict("_RecordOptional", {"attachment": "Any", "content": "List[ContentBlock]", "data": "Any", "foreign_usage": "bool", "is_compact_summary": "bool", "is_meta": "bool", "is_sidechain": "bool", "is_virtual": "bool", "message_extra": "Optional[Dict[str, Any]]", "message_id": "Optional[str]", "meta": "Any", "model": "Optional[str]", "parent_uuid": "Optional[str]", "stop_reason": "Optional[str]", "subtype": "Optional[str]", "usage": "Optional[Usage]"}, total=False)


class Record(_RecordRequired, _RecordOptional):
    """A stored record: the input with every daemon-filled field resolved."""


_RecordInputRequired = TypedDict("_RecordInputRequired", {})
_RecordInputOptional = TypedDict("_RecordInputOptional", {"attachment": "Dict[str, Any]", "content": "Union[str, List[ContentBlock]]", "data": "Dict[str, Any]", "foreign_usage": "bool", "is_compact_summary": "bool", "is_meta": "bool", "is_sidechain": "bool", "is_virtual": "bool", "message": "Optional[MessageInput]", "message_extra": "Optional[Dict[str, Any]]", "message_id": "Optional[str]", "meta": "Dict[str, Any]", "model": "Optional[str]", "parent_uuid": "Optional[str]", "stop_reason": "Optional[str]", "subtype": "Optional[str]", "timestamp": "Optional[str]", "type": "Optional[RecordKind]", "usage": "Optional[Usage]", "uuid": "Optional[str]"}, total=False)


class RecordInput(_RecordInputRequired, _RecordInputOptional):
    """A record as a client appends it. Optional fields are filled by the daemon."""


RecordKind = "Literal[\"user\", \"assistant\", \"system\", \"attachment\"]"


_RejectMediaResponseRequired = TypedDict("_RejectMediaResponseRequired", {"rejected": "bool"})
_RejectMediaResponseOptional = TypedDict("_RejectMediaResponseOptional", {}, total=False)


class RejectMediaResponse(_RejectMediaResponseRequired, _RejectMediaResponseOptional):
    pass


_RelevantMemorySettingsRequired = TypedDict("_RelevantMemorySettingsRequired", {})
_RelevantMemorySettingsOptional = TypedDict("_RelevantMemorySettingsOptional", {"auto_memory": "Optional[bool]", "directories": "List[str]", "enabled": "Optional[bool]", "selector": "MemorySelector"}, total=False)


class RelevantMemorySettings(_RelevantMemorySettingsRequired, _RelevantMemorySettingsOptional):
    """Where relevant memories come from and how they are chosen."""


_ReplacementRequired = TypedDict("_ReplacementRequired", {"decided_seq": "int", "stage": "str", "tool_use_id": "str"})
_ReplacementOptional = TypedDict("_ReplacementOptional", {"replacement": "Optional[str]"}, total=False)


class Replacement(_ReplacementRequired, _ReplacementOptional):
    pass


_ReplacementsResponseRequired = TypedDict("_ReplacementsResponseRequired", {"replacements": "List[Replacement]"})
_ReplacementsResponseOptional = TypedDict("_ReplacementsResponseOptional", {}, total=False)


class ReplacementsResponse(_ReplacementsResponseRequired, _ReplacementsResponseOptional):
    pass


_RequestFlagsRequired = TypedDict("_RequestFlagsRequired", {})
_RequestFlagsOptional = TypedDict("_RequestFlagsOptional", {"betas": "List[str]", "cache_scope": "Optional[str]", "cache_ttl": "Optional[str]", "extra": "Dict[str, Any]"}, total=False)


class RequestFlags(_RequestFlagsRequired, _RequestFlagsOptional):
    """Request-level flags a client asks for. They change the provider's cache key, so ctxd
    latches them per session once first sent: later compiles keep sending what was
    latched until a compaction starts a new history.
    """


SectionCaching = "Union[Literal[\"memoized\"], Literal[\"uncached\"]]"


_SectionLayoutRequired = TypedDict("_SectionLayoutRequired", {"chars": "int", "class": "str", "name": "str"})
_SectionLayoutOptional = TypedDict("_SectionLayoutOptional", {"block": "Optional[int]"}, total=False)


class SectionLayout(_SectionLayoutRequired, _SectionLayoutOptional):
    """Where one system section landed."""


SectionSource = "Literal[\"current_time\"]"


_SendResponseRequired = TypedDict("_SendResponseRequired", {"message": "Dict[str, Any]", "request_sha256": "str", "retries": "int", "seq": "int", "uuid": "str"})
_SendResponseOptional = TypedDict("_SendResponseOptional", {"recovery": "Optional[TurnRecovery]", "stop_reason": "Optional[str]", "usage": "Optional[Usage]"}, total=False)


class SendResponse(_SendResponseRequired, _SendResponseOptional):
    """What a turn sent and got back."""


ServerCompactionMode = "Literal[\"threshold\", \"on_demand\"]"


_SessionCreateResponseRequired = TypedDict("_SessionCreateResponseRequired", {"session": "SessionInfo"})
_SessionCreateResponseOptional = TypedDict("_SessionCreateResponseOptional", {}, total=False)


class SessionCreateResponse(_SessionCreateResponseRequired, _SessionCreateResponseOptional):
    pass


_SessionDeleteResponseRequired = TypedDict("_SessionDeleteResponseRequired", {"deleted": "bool"})
_SessionDeleteResponseOptional = TypedDict("_SessionDeleteResponseOptional", {}, total=False)


class SessionDeleteResponse(_SessionDeleteResponseRequired, _SessionDeleteResponseOptional):
    pass


_SessionForkResponseRequired = TypedDict("_SessionForkResponseRequired", {"session": "SessionInfo"})
_SessionForkResponseOptional = TypedDict("_SessionForkResponseOptional", {}, total=False)


class SessionForkResponse(_SessionForkResponseRequired, _SessionForkResponseOptional):
    pass


_SessionGetResponseRequired = TypedDict("_SessionGetResponseRequired", {"session": "SessionInfo"})
_SessionGetResponseOptional = TypedDict("_SessionGetResponseOptional", {}, total=False)


class SessionGetResponse(_SessionGetResponseRequired, _SessionGetResponseOptional):
    pass


_SessionImportResponseRequired = TypedDict("_SessionImportResponseRequired", {"session": "SessionInfo", "session_id": "str", "stats": "ImportStats"})
_SessionImportResponseOptional = TypedDict("_SessionImportResponseOptional", {}, total=False)


class SessionImportResponse(_SessionImportResponseRequired, _SessionImportResponseOptional):
    pass


_SessionInfoRequired = TypedDict("_SessionInfoRequired", {"additional_directories": "List[str]", "created_at": "str", "cwd": "str", "model": "ModelProfile", "original_cwd": "str", "record_count": "int", "session_id": "str", "settings": "SessionSettings", "start_date": "str", "updated_at": "str"})
_SessionInfoOptional = TypedDict("_SessionInfoOptional", {"agent": "Optional[AgentInfo]", "forked_from_uuid": "Optional[str]", "last_uuid": "Optional[str]", "parent_session_id": "Optional[str]", "title": "Optional[str]"}, total=False)


class SessionInfo(_SessionInfoRequired, _SessionInfoOptional):
    """A session as the daemon reports it."""


_SessionListResponseRequired = TypedDict("_SessionListResponseRequired", {"sessions": "List[SessionInfo]"})
_SessionListResponseOptional = TypedDict("_SessionListResponseOptional", {}, total=False)


class SessionListResponse(_SessionListResponseRequired, _SessionListResponseOptional):
    pass


SessionNotification = "Dict[str, Any]"


_SessionSettingsRequired = TypedDict("_SessionSettingsRequired", {})
_SessionSettingsOptional = TypedDict("_SessionSettingsOptional", {"attachments": "AttachmentSettings", "autocompact": "Optional[bool]", "autocompact_pct_override": "Optional[int]", "blocking_limit_margin": "Optional[int]", "cache_diagnostics": "bool", "collapse": "CollapseConfig", "hooks": "HookSettings", "instructions": "InstructionSettings", "language": "Optional[str]", "lean": "LeanSettings", "memory": "MemorySettings", "microcompact": "MicrocompactSettings", "output_style": "Optional[str]", "plan_file": "Optional[str]", "plan_mode": "bool", "platform": "Optional[str]", "policy": "ContextPolicy", "provider": "Optional[ProviderConfig]", "provider_context_management": "Optional[ProviderContextManagement]", "proxy": "Optional[ProxySettings]", "snip_enabled": "bool", "summariser": "Optional[SummariserConfig]", "tool_result_size_overrides": "Dict[str, Any]"}, total=False)


class SessionSettings(_SessionSettingsRequired, _SessionSettingsOptional):
    """Feature switches and knobs of one session. Unknown keys are rejected."""


_ShutdownResponseRequired = TypedDict("_ShutdownResponseRequired", {"stopping": "bool"})
_ShutdownResponseOptional = TypedDict("_ShutdownResponseOptional", {}, total=False)


class ShutdownResponse(_ShutdownResponseRequired, _ShutdownResponseOptional):
    pass


_SkillInfoRequired = TypedDict("_SkillInfoRequired", {"base": "str", "description": "str", "invoked": "bool", "name": "str", "path": "str", "source": "str", "state": "str"})
_SkillInfoOptional = TypedDict("_SkillInfoOptional", {"allowed_tools": "List[str]", "model": "Optional[str]", "paths": "List[str]", "when_to_use": "Optional[str]"}, total=False)


class SkillInfo(_SkillInfoRequired, _SkillInfoOptional):
    """Where one skill stands in a session."""


_SkillsResponseRequired = TypedDict("_SkillsResponseRequired", {"listing_budget_chars": "int", "skills": "List[SkillInfo]"})
_SkillsResponseOptional = TypedDict("_SkillsResponseOptional", {"removed": "List[str]", "skipped": "List[SkippedSkill]"}, total=False)


class SkillsResponse(_SkillsResponseRequired, _SkillsResponseOptional):
    pass


_SkippedSkillRequired = TypedDict("_SkippedSkillRequired", {"path": "str", "reason": "str"})
_SkippedSkillOptional = TypedDict("_SkippedSkillOptional", {}, total=False)


class SkippedSkill(_SkippedSkillRequired, _SkippedSkillOptional):
    """A skill file that could not be used."""


_SnipResponseRequired = TypedDict("_SnipResponseRequired", {"boundary_uuid": "str", "removed": "List[str]", "tokens_freed": "int", "widened_by": "int"})
_SnipResponseOptional = TypedDict("_SnipResponseOptional", {}, total=False)


class SnipResponse(_SnipResponseRequired, _SnipResponseOptional):
    pass


_SourceReportRequired = TypedDict("_SourceReportRequired", {"attachments": "int", "micros": "int", "name": "str", "status": "SourceStatus"})
_SourceReportOptional = TypedDict("_SourceReportOptional", {"reason": "Optional[str]"}, total=False)


class SourceReport(_SourceReportRequired, _SourceReportOptional):
    """One attachment source's run in a compile (`metadata.attachment_sources`), in the
    fixed order of attachment kinds.
    """


SourceStatus = "Union[Literal[\"ok\"], Literal[\"skipped\"], Literal[\"failed\"]]"


StreamEvent = "Dict[str, Any]"


_SubscriptionCapabilitiesRequired = TypedDict("_SubscriptionCapabilitiesRequired", {"buffer_events": "int", "include_records": "bool", "resumable": "bool"})
_SubscriptionCapabilitiesOptional = TypedDict("_SubscriptionCapabilitiesOptional", {}, total=False)


class SubscriptionCapabilities(_SubscriptionCapabilitiesRequired, _SubscriptionCapabilitiesOptional):
    pass


SubscriptionId = "Union[int, str]"


SummariserConfig = "Dict[str, Any]"


_SystemPromptRequired = TypedDict("_SystemPromptRequired", {})
_SystemPromptOptional = TypedDict("_SystemPromptOptional", {"dynamic": "List[SystemSection]", "static": "List[SystemSection]"}, total=False)


class SystemPrompt(_SystemPromptRequired, _SystemPromptOptional):
    """The client's system prompt: static sections before the dynamic boundary, dynamic
    sections after it. Absent → ctxd's default agent contract.
    """


_SystemSectionRequired = TypedDict("_SystemSectionRequired", {"name": "str"})
_SystemSectionOptional = TypedDict("_SystemSectionOptional", {"caching": "Optional[SectionCaching]", "reason": "Optional[str]", "source": "Optional[SectionSource]", "text": "str"}, total=False)


class SystemSection(_SystemSectionRequired, _SystemSectionOptional):
    """One section of the system prompt."""


_TakeQueuedResponseRequired = TypedDict("_TakeQueuedResponseRequired", {"records": "List[Record]", "texts": "List[str]"})
_TakeQueuedResponseOptional = TypedDict("_TakeQueuedResponseOptional", {}, total=False)


class TakeQueuedResponse(_TakeQueuedResponseRequired, _TakeQueuedResponseOptional):
    pass


_TokenEstimateRequired = TypedDict("_TokenEstimateRequired", {"anchor_tokens": "int", "estimated_tail_tokens": "int", "estimated_tokens": "int"})
_TokenEstimateOptional = TypedDict("_TokenEstimateOptional", {"anchor_uuid": "Optional[str]"}, total=False)


class TokenEstimate(_TokenEstimateRequired, _TokenEstimateOptional):
    pass


ToolResultBlock = "Dict[str, Any]"


ToolResultContent = "Union[str, List[ToolResultBlock]]"


_ToolResultReplacementRequired = TypedDict("_ToolResultReplacementRequired", {"replacement": "str", "tool_use_id": "str"})
_ToolResultReplacementOptional = TypedDict("_ToolResultReplacementOptional", {}, total=False)


class ToolResultReplacement(_ToolResultReplacementRequired, _ToolResultReplacementOptional):
    pass


_ToolSpecRequired = TypedDict("_ToolSpecRequired", {"name": "str"})
_ToolSpecOptional = TypedDict("_ToolSpecOptional", {"defer_loading": "bool", "description": "Optional[str]", "input_schema": "Dict[str, Any]", "max_result_size_chars": "Optional[int]", "mcp_server": "Optional[str]", "type": "Optional[str]"}, total=False)


class ToolSpec(_ToolSpecRequired, _ToolSpecOptional):
    """A tool schema registered by the client."""


_ToolStateRequired = TypedDict("_ToolStateRequired", {"name": "str", "state": "str"})
_ToolStateOptional = TypedDict("_ToolStateOptional", {"mcp_server": "Optional[str]"}, total=False)


class ToolState(_ToolStateRequired, _ToolStateOptional):
    """One tool as the next compile sends it."""


_ToolsListResponseRequired = TypedDict("_ToolsListResponseRequired", {"tools": "List[ToolSpec]"})
_ToolsListResponseOptional = TypedDict("_ToolsListResponseOptional", {}, total=False)


class ToolsListResponse(_ToolsListResponseRequired, _ToolsListResponseOptional):
    pass


_ToolsSetResponseRequired = TypedDict("_ToolsSetResponseRequired", {"count": "int"})
_ToolsSetResponseOptional = TypedDict("_ToolsSetResponseOptional", {}, total=False)


class ToolsSetResponse(_ToolsSetResponseRequired, _ToolsSetResponseOptional):
    pass


TurnEvent = "Dict[str, Any]"


_TurnRecoveryRequired = TypedDict("_TurnRecoveryRequired", {"by": "str", "error": "str", "refused_request_sha256": "str"})
_TurnRecoveryOptional = TypedDict("_TurnRecoveryOptional", {"token_gap": "Optional[int]"}, total=False)


class TurnRecovery(_TurnRecoveryRequired, _TurnRecoveryOptional):
    """How a turn recovered from a request the provider found too long."""


_UncachedSectionReportRequired = TypedDict("_UncachedSectionReportRequired", {"changed": "bool", "name": "str", "reason": "str"})
_UncachedSectionReportOptional = TypedDict("_UncachedSectionReportOptional", {}, total=False)


class UncachedSectionReport(_UncachedSectionReportRequired, _UncachedSectionReportOptional):
    """An uncached system section in a compile (`metadata.uncached_sections`): it is
    recomputed every compile, and a change breaks the prompt cache from there on.
    """


_UsageRequired = TypedDict("_UsageRequired", {})
_UsageOptional = TypedDict("_UsageOptional", {"cache_creation": "Optional[CacheCreation]", "cache_creation_input_tokens": "int", "cache_read_input_tokens": "int", "input_tokens": "int", "iterations": "Dict[str, Any]", "output_tokens": "int", "server_tool_use": "Dict[str, Any]", "service_tier": "Any"}, total=False)


class Usage(_UsageRequired, _UsageOptional):
    """Provider-reported token usage of one model response, as the Messages API reports it.
    The four counts are read by the estimator and the cache report (a `null` count is
    stored as 0); every other field (`cache_creation`, `server_tool_use`, `service_tier`,
    `iterations`, and what the API adds later) is kept as it came.
    """


_UsageCategoryRequired = TypedDict("_UsageCategoryRequired", {"name": "str", "percent": "float", "tokens": "int"})
_UsageCategoryOptional = TypedDict("_UsageCategoryOptional", {}, total=False)


class UsageCategory(_UsageCategoryRequired, _UsageCategoryOptional):
    """One category of the window."""


_UsageResponseRequired = TypedDict("_UsageResponseRequired", {"attachments": "int", "autocompact_threshold": "int", "categories": "List[UsageCategory]", "context_window": "int", "messages": "int", "model": "str", "used_tokens": "int"})
_UsageResponseOptional = TypedDict("_UsageResponseOptional", {}, total=False)


class UsageResponse(_UsageResponseRequired, _UsageResponseOptional):
    pass


_WebSocketStatusRequired = TypedDict("_WebSocketStatusRequired", {"answers_waiting": "int", "calls_running": "int", "connections": "int", "queued_bytes": "int", "subscriptions": "int"})
_WebSocketStatusOptional = TypedDict("_WebSocketStatusOptional", {}, total=False)


class WebSocketStatus(_WebSocketStatusRequired, _WebSocketStatusOptional):
    """What the daemon holds for its WebSocket clients, summed over connections."""


class Methods:
    """Every method of the document, typed; `call` does the work."""

    def call(self, method: str, **params: Any) -> Any:  # pragma: no cover
        raise NotImplementedError

    def daemon_initialize(self, *, client_info: PeerInfo, protocol_version: str) -> InitializeResult:
        """Handshake: client info and protocol version in; server info, negotiated version, capabilities and limits out. Another major version is refused."""
        params = {k: v for k, v in [("client_info", client_info), ("protocol_version", protocol_version)] if v is not None}
        return self.call("daemon.initialize", **params)

    def daemon_status(self) -> DaemonStatus:
        """Protocol version, daemon version, paths, uptime."""
        params: Dict[str, Any] = {}
        return self.call("daemon.status", **params)

    def daemon_ping(self) -> PingResponse:
        """No-op round trip."""
        params: Dict[str, Any] = {}
        return self.call("daemon.ping", **params)

    def daemon_shutdown(self) -> ShutdownResponse:
        """Stop the daemon cleanly after answering."""
        params: Dict[str, Any] = {}
        return self.call("daemon.shutdown", **params)

    def proxy_status(self) -> ProxyStatusResponse:
        """The HTTP front door (`ctxd --http`): whether it listens, its base URLs (secret included), sessions seen and bytes forwarded."""
        params: Dict[str, Any] = {}
        return self.call("proxy.status", **params)

    def daemon_backup(self, *, path: str) -> BackupResponse:
        """Write a consistent copy of the SQLite store to a new file while the daemon runs (a PostgreSQL store answers an error pointing to pg_dump)."""
        params = {k: v for k, v in [("path", path)] if v is not None}
        return self.call("daemon.backup", **params)

    def daemon_gc(self, *, dry_run: Optional[bool] = None, idle_days: Optional[int] = None, max_store_bytes: Optional[int] = None, now: Optional[str] = None) -> GcResponse:
        """Delete sessions idle for idle_days, then the least recently updated until the rest fit max_store_bytes; dry_run only says which."""
        params = {k: v for k, v in [("dry_run", dry_run), ("idle_days", idle_days), ("max_store_bytes", max_store_bytes), ("now", now)] if v is not None}
        return self.call("daemon.gc", **params)

    def daemon_metrics(self) -> MetricsResponse:
        """The daemon's counters and gauges in the Prometheus text format: calls and errors by method, call latencies, sessions stored and loaded, store size, context.send turns and tokens, retention, the front door's traffic, uptime."""
        params: Dict[str, Any] = {}
        return self.call("daemon.metrics", **params)

    def session_create(self, *, cwd: str, additional_directories: Optional[List[str]] = None, model: Optional[ModelProfile] = None, no_git: Optional[bool] = None, settings: Optional[SessionSettings] = None, start_date: Optional[str] = None, system: Optional[SystemPrompt] = None, title: Optional[str] = None, tools: Optional[List[ToolSpec]] = None) -> SessionCreateResponse:
        """Create a session for a working directory."""
        params = {k: v for k, v in [("cwd", cwd), ("additional_directories", additional_directories), ("model", model), ("no_git", no_git), ("settings", settings), ("start_date", start_date), ("system", system), ("title", title), ("tools", tools)] if v is not None}
        return self.call("session.create", **params)

    def session_list(self, *, limit: Optional[int] = None) -> SessionListResponse:
        """List sessions, newest first."""
        params = {k: v for k, v in [("limit", limit)] if v is not None}
        return self.call("session.list", **params)

    def session_get(self, *, session_id: str) -> SessionGetResponse:
        """One session."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return self.call("session.get", **params)

    def session_update(self, *, session_id: str, cwd: Optional[str] = None, model: Optional[ModelProfile] = None, settings: Optional[SessionSettings] = None, system: Optional[SystemPrompt] = None, title: Optional[str] = None) -> SessionGetResponse:
        """Change settings, model profile, system prompt or title."""
        params = {k: v for k, v in [("session_id", session_id), ("cwd", cwd), ("model", model), ("settings", settings), ("system", system), ("title", title)] if v is not None}
        return self.call("session.update", **params)

    def session_fork(self, *, session_id: str, up_to_uuid: Optional[str] = None) -> SessionForkResponse:
        """Copy a session's transcript up to a record into a new session."""
        params = {k: v for k, v in [("session_id", session_id), ("up_to_uuid", up_to_uuid)] if v is not None}
        return self.call("session.fork", **params)

    def session_delete(self, *, session_id: str) -> SessionDeleteResponse:
        """Delete a session, its transcript and its files."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return self.call("session.delete", **params)

    def session_import(self, *, cwd: Optional[str] = None, fallback_cwd: Optional[str] = None, jsonl: Optional[str] = None, model: Optional[ModelProfile] = None, path: Optional[str] = None, title: Optional[str] = None) -> SessionImportResponse:
        """Import a Claude Code JSONL transcript into a new session (all or nothing)."""
        params = {k: v for k, v in [("cwd", cwd), ("fallback_cwd", fallback_cwd), ("jsonl", jsonl), ("model", model), ("path", path), ("title", title)] if v is not None}
        return self.call("session.import", **params)

    def agent_start(self, *, agent_type: str, session_id: str, tool_use_id: str, agent_id: Optional[str] = None, instructions: Optional[AgentInstructions] = None, model: Optional[ModelProfile] = None, prompt: Optional[str] = None, settings: Optional[SessionSettings] = None, system: Optional[SystemPrompt] = None, tools: Optional[List[ToolSpec]] = None) -> AgentStartResponse:
        """Start a sub-agent for one of the session's tool calls: a thread of its own (system prompt, tools, thresholds, compaction), starting from the session's file state; SubagentStart hooks run."""
        params = {k: v for k, v in [("agent_type", agent_type), ("session_id", session_id), ("tool_use_id", tool_use_id), ("agent_id", agent_id), ("instructions", instructions), ("model", model), ("prompt", prompt), ("settings", settings), ("system", system), ("tools", tools)] if v is not None}
        return self.call("agent.start", **params)

    def agent_finish(self, *, agent_id: str, session_id: str, is_error: Optional[bool] = None, result: Optional[Dict[str, Any]] = None) -> AgentFinishResponse:
        """Give a sub-agent's answer to its session as the tool result of the call that started it."""
        params = {k: v for k, v in [("agent_id", agent_id), ("session_id", session_id), ("is_error", is_error), ("result", result)] if v is not None}
        return self.call("agent.finish", **params)

    def agent_list(self, *, session_id: str) -> AgentListResponse:
        """A session's sub-agents and their threads."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return self.call("agent.list", **params)

    def session_subscribe(self, *, session_id: str, after_seq: Optional[int] = None, include_records: Optional[bool] = None) -> SubscriptionId:
        """Stream a session's events (WebSocket only), first replaying records after after_seq. Returns the subscription id; events arrive as session.event notifications."""
        params = {k: v for k, v in [("session_id", session_id), ("after_seq", after_seq), ("include_records", include_records)] if v is not None}
        return self.call("session.subscribe", **params)

    def session_unsubscribe(self, *, subscription: SubscriptionId) -> bool:
        """End a subscription (WebSocket only, on the connection that made it). false when it was not active."""
        params = {k: v for k, v in [("subscription", subscription)] if v is not None}
        return self.call("session.unsubscribe", **params)

    def transcript_append(self, *, records: List[RecordInput], session_id: str, agent_id: Optional[str] = None, expected_last_uuid: Optional[str] = None) -> AppendResponse:
        """Append records atomically, optionally guarded by the expected last uuid."""
        params = {k: v for k, v in [("records", records), ("session_id", session_id), ("agent_id", agent_id), ("expected_last_uuid", expected_last_uuid)] if v is not None}
        return self.call("transcript.append", **params)

    def transcript_read(self, *, session_id: str, after_seq: Optional[int] = None, agent_id: Optional[str] = None, limit: Optional[int] = None) -> ReadResponse:
        """Read a page of records."""
        params = {k: v for k, v in [("session_id", session_id), ("after_seq", after_seq), ("agent_id", agent_id), ("limit", limit)] if v is not None}
        return self.call("transcript.read", **params)

    def transcript_reject_media(self, *, block_index: int, record_uuid: str, session_id: str) -> RejectMediaResponse:
        """Mark an image or document the provider refused; later compiles strip it."""
        params = {k: v for k, v in [("block_index", block_index), ("record_uuid", record_uuid), ("session_id", session_id)] if v is not None}
        return self.call("transcript.reject_media", **params)

    def capabilities_set_tools(self, *, session_id: str, tools: List[ToolSpec]) -> ToolsSetResponse:
        """Replace the session's tool list."""
        params = {k: v for k, v in [("session_id", session_id), ("tools", tools)] if v is not None}
        return self.call("capabilities.set_tools", **params)

    def capabilities_list_tools(self, *, session_id: str) -> ToolsListResponse:
        """The session's tool list."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return self.call("capabilities.list_tools", **params)

    def capabilities_mcp_connect(self, *, name: str, session_id: str, instructions: Optional[str] = None, resources: Optional[List[McpResource]] = None, tools: Optional[List[ToolSpec]] = None) -> CapabilityChangeResponse:
        """Report an MCP server connected (name, instructions, tools); announced in system before the first compile, as mcp_instructions_delta after it."""
        params = {k: v for k, v in [("name", name), ("session_id", session_id), ("instructions", instructions), ("resources", resources), ("tools", tools)] if v is not None}
        return self.call("capabilities.mcp_connect", **params)

    def capabilities_mcp_set_instructions(self, *, name: str, session_id: str, instructions: Optional[str] = None) -> CapabilityChangeResponse:
        """Report that a connected MCP server changed its instructions (announced as mcp_instructions_delta)."""
        params = {k: v for k, v in [("name", name), ("session_id", session_id), ("instructions", instructions)] if v is not None}
        return self.call("capabilities.mcp_set_instructions", **params)

    def capabilities_mcp_disconnect(self, *, name: str, session_id: str) -> CapabilityChangeResponse:
        """Report an MCP server disconnected; its tools leave with it and the removal is announced."""
        params = {k: v for k, v in [("name", name), ("session_id", session_id)] if v is not None}
        return self.call("capabilities.mcp_disconnect", **params)

    def capabilities_set_agents(self, *, agents: List[AgentType], session_id: str) -> CapabilityChangeResponse:
        """Replace the available agent types; changes are announced with agent_listing_delta."""
        params = {k: v for k, v in [("agents", agents), ("session_id", session_id)] if v is not None}
        return self.call("capabilities.set_agents", **params)

    def capabilities_discover_tools(self, *, names: List[str], session_id: str) -> CapabilityChangeResponse:
        """Mark deferred tools as found by tool search: their full schema is sent from the next compile on."""
        params = {k: v for k, v in [("names", names), ("session_id", session_id)] if v is not None}
        return self.call("capabilities.discover_tools", **params)

    def capabilities_invoke_skill(self, *, name: str, session_id: str) -> AckResponse:
        """Record a skill invocation made outside a Skill tool_use (compaction restores invoked skills)."""
        params = {k: v for k, v in [("name", name), ("session_id", session_id)] if v is not None}
        return self.call("capabilities.invoke_skill", **params)

    def capabilities_skills(self, *, session_id: str) -> SkillsResponse:
        """The session's skills: listed, pending, dormant (conditional), omitted, invoked; skipped files."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return self.call("capabilities.skills", **params)

    def capabilities_get(self, *, session_id: str) -> CapabilitiesResponse:
        """Tools (sent, deferred, discovered), MCP servers, agent types and what has been announced."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return self.call("capabilities.get", **params)

    def context_compile(self, *, session_id: str, agent_id: Optional[str] = None, flags: Optional[RequestFlags] = None, format: Optional[CompileFormat] = None, now: Optional[str] = None, side_request: Optional[bool] = None) -> CompileResponse:
        """Compile the exact Messages API request for the next model call."""
        params = {k: v for k, v in [("session_id", session_id), ("agent_id", agent_id), ("flags", flags), ("format", format), ("now", now), ("side_request", side_request)] if v is not None}
        return self.call("context.compile", **params)

    def context_snip(self, *, from_id: str, session_id: str, to_id: str) -> SnipResponse:
        """Remove a range of messages by their short ids; recorded as a snip boundary."""
        params = {k: v for k, v in [("from_id", from_id), ("session_id", session_id), ("to_id", to_id)] if v is not None}
        return self.call("context.snip", **params)

    def context_compact(self, *, session_id: str, instructions: Optional[str] = None) -> CompactionReport:
        """Compact the session now (manual), with optional extra instructions."""
        params = {k: v for k, v in [("session_id", session_id), ("instructions", instructions)] if v is not None}
        return self.call("context.compact", **params)

    def context_send(self, *, session_id: str, agent_id: Optional[str] = None) -> SendResponse:
        """Compile, send to the session's provider (settings.provider), and append the answer as it came; one turn at a time per session."""
        params = {k: v for k, v in [("session_id", session_id), ("agent_id", agent_id)] if v is not None}
        return self.call("context.send", **params)

    def context_send_stream(self, *, session_id: str, agent_id: Optional[str] = None) -> SubscriptionId:
        """Run a context.send turn and stream it (WebSocket only): started, the provider's events as they come, then finished (the appended message) or failed. Ending the subscription cancels the turn."""
        params = {k: v for k, v in [("session_id", session_id), ("agent_id", agent_id)] if v is not None}
        return self.call("context.send_stream", **params)

    def context_send_unsubscribe(self, *, subscription: SubscriptionId) -> bool:
        """End a context.send_stream subscription, cancelling its turn if it still runs (nothing is appended). false when it was not active."""
        params = {k: v for k, v in [("subscription", subscription)] if v is not None}
        return self.call("context.send_unsubscribe", **params)

    def context_cancel(self, *, session_id: str) -> AckResponse:
        """Cancel the session's running context.send turn: the provider call stops and nothing is appended. ok is false when no turn runs."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return self.call("context.cancel", **params)

    def memory_get(self, *, session_id: str) -> MemoryGetResponse:
        """The session's memory document, its version and last summarised record."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return self.call("memory.get", **params)

    def memory_update(self, *, document: str, expected_version: int, session_id: str, last_summarized_uuid: Optional[str] = None, writer: Optional[str] = None) -> MemoryUpdateResponse:
        """Write the memory document (optimistic: expected_version must be current)."""
        params = {k: v for k, v in [("document", document), ("expected_version", expected_version), ("session_id", session_id), ("last_summarized_uuid", last_summarized_uuid), ("writer", writer)] if v is not None}
        return self.call("memory.update", **params)

    def memory_extract(self, *, session_id: str) -> MemoryUpdateResponse:
        """Run an extraction now with the session's summariser and wait for it."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return self.call("memory.extract", **params)

    def context_collapse_list(self, *, session_id: str) -> CollapseListResponse:
        """The session's collapses (staged, committed, undone), oldest first."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return self.call("context.collapse_list", **params)

    def context_collapse_undo(self, *, collapse_id: str, session_id: str) -> AckResponse:
        """Undo a collapse: its span reappears in the view."""
        params = {k: v for k, v in [("collapse_id", collapse_id), ("session_id", session_id)] if v is not None}
        return self.call("context.collapse_undo", **params)

    def context_report_error(self, *, kind: str, session_id: str, block_index: Optional[int] = None, record_uuid: Optional[str] = None, token_gap: Optional[int] = None) -> CompileResponse:
        """Report that the provider refused a compiled request; compacts reactively and returns the next request."""
        params = {k: v for k, v in [("kind", kind), ("session_id", session_id), ("block_index", block_index), ("record_uuid", record_uuid), ("token_gap", token_gap)] if v is not None}
        return self.call("context.report_error", **params)

    def context_provide_summary(self, *, request_id: str, error: Optional[str] = None, prompt_too_long: Optional[bool] = None, text: Optional[str] = None, token_gap: Optional[int] = None) -> AckResponse:
        """Answer a summary_requested event (client summariser)."""
        params = {k: v for k, v in [("request_id", request_id), ("error", error), ("prompt_too_long", prompt_too_long), ("text", text), ("token_gap", token_gap)] if v is not None}
        return self.call("context.provide_summary", **params)

    def context_touch_paths(self, *, paths: List[str], session_id: str) -> AckResponse:
        """Report paths the agent touched; their instruction files follow as nested_memory."""
        params = {k: v for k, v in [("paths", paths), ("session_id", session_id)] if v is not None}
        return self.call("context.touch_paths", **params)

    def context_report_read(self, *, path: str, session_id: str) -> AckResponse:
        """Report that the model has seen a file as it is now on disk (changed_files baseline)."""
        params = {k: v for k, v in [("path", path), ("session_id", session_id)] if v is not None}
        return self.call("context.report_read", **params)

    def transcript_parse_claude_code(self, *, jsonl: str) -> ParseClaudeCodeResponse:
        """Convert a Claude Code JSONL transcript to records without storing anything."""
        params = {k: v for k, v in [("jsonl", jsonl)] if v is not None}
        return self.call("transcript.parse_claude_code", **params)

    def context_replacements(self, *, session_id: str) -> ReplacementsResponse:
        """The frozen fates of the session's tool results (content-replacement records)."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return self.call("context.replacements", **params)

    def context_usage(self, *, session_id: str) -> UsageResponse:
        """What the next request would fill the context window with, by category (Claude Code's /context), counting the attachments its compile would add; changes nothing."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return self.call("context.usage", **params)

    def context_cache_report(self, *, session_id: str) -> CacheReportResponse:
        """Every model call's reported cache reads next to ctxd's prediction, with cache breaks and their causes."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return self.call("context.cache_report", **params)

    def hooks_list(self, *, session_id: str) -> HooksListResponse:
        """The session's settings files and configured hooks, with their source file and whether they run."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return self.call("hooks.list", **params)

    def hooks_pre_tool_use(self, *, session_id: str, tool_input: Dict[str, Any], tool_name: str, tool_use_id: Optional[str] = None) -> HookOutcome:
        """Run PreToolUse hooks before the client runs a tool: allow, deny or ask, a reason, updatedInput, context."""
        params = {k: v for k, v in [("session_id", session_id), ("tool_input", tool_input), ("tool_name", tool_name), ("tool_use_id", tool_use_id)] if v is not None}
        return self.call("hooks.pre_tool_use", **params)

    def hooks_post_tool_use(self, *, session_id: str, tool_input: Dict[str, Any], tool_name: str, tool_response: Dict[str, Any], tool_use_id: Optional[str] = None) -> HookOutcome:
        """Run PostToolUse hooks after a tool ran; context and blocking feedback are appended for the model."""
        params = {k: v for k, v in [("session_id", session_id), ("tool_input", tool_input), ("tool_name", tool_name), ("tool_response", tool_response), ("tool_use_id", tool_use_id)] if v is not None}
        return self.call("hooks.post_tool_use", **params)

    def hooks_user_prompt_submit(self, *, prompt: str, session_id: str) -> HookOutcome:
        """Run UserPromptSubmit hooks on a prompt without appending it (transcript.append runs them itself)."""
        params = {k: v for k, v in [("prompt", prompt), ("session_id", session_id)] if v is not None}
        return self.call("hooks.user_prompt_submit", **params)

    def hooks_session_start(self, *, session_id: str, source: ClientSessionStart) -> HookOutcome:
        """Run SessionStart hooks with source resume or clear; their context is appended."""
        params = {k: v for k, v in [("session_id", session_id), ("source", source)] if v is not None}
        return self.call("hooks.session_start", **params)

    def hooks_stop(self, *, session_id: str, last_assistant_message: Optional[str] = None, stop_hook_active: Optional[bool] = None) -> HookOutcome:
        """Run Stop hooks when the agent would stop; a block appends the reason for the model."""
        params = {k: v for k, v in [("session_id", session_id), ("last_assistant_message", last_assistant_message), ("stop_hook_active", stop_hook_active)] if v is not None}
        return self.call("hooks.stop", **params)

    def hooks_stop_failure(self, *, error: str, session_id: str, error_details: Optional[str] = None, last_assistant_message: Optional[str] = None) -> HookOutcome:
        """Run StopFailure hooks when a turn ended on an API error (output ignored)."""
        params = {k: v for k, v in [("error", error), ("session_id", session_id), ("error_details", error_details), ("last_assistant_message", last_assistant_message)] if v is not None}
        return self.call("hooks.stop_failure", **params)

    def hooks_subagent_start(self, *, agent_id: str, agent_type: str, session_id: str) -> HookOutcome:
        """Run SubagentStart hooks; their context is returned for the sub-agent."""
        params = {k: v for k, v in [("agent_id", agent_id), ("agent_type", agent_type), ("session_id", session_id)] if v is not None}
        return self.call("hooks.subagent_start", **params)

    def hooks_subagent_stop(self, *, agent_id: str, agent_type: str, session_id: str, agent_transcript_path: Optional[str] = None, last_assistant_message: Optional[str] = None, stop_hook_active: Optional[bool] = None) -> HookOutcome:
        """Run SubagentStop hooks when a sub-agent would stop; a block returns the reason."""
        params = {k: v for k, v in [("agent_id", agent_id), ("agent_type", agent_type), ("session_id", session_id), ("agent_transcript_path", agent_transcript_path), ("last_assistant_message", last_assistant_message), ("stop_hook_active", stop_hook_active)] if v is not None}
        return self.call("hooks.subagent_stop", **params)

    def hooks_notification(self, *, message: str, session_id: str, notification_type: Optional[str] = None, title: Optional[str] = None) -> HookOutcome:
        """Run Notification hooks for a message to the user."""
        params = {k: v for k, v in [("message", message), ("session_id", session_id), ("notification_type", notification_type), ("title", title)] if v is not None}
        return self.call("hooks.notification", **params)

    def hooks_session_end(self, *, session_id: str, reason: Optional[str] = None) -> HookOutcome:
        """Run SessionEnd hooks when the session ends (output ignored)."""
        params = {k: v for k, v in [("session_id", session_id), ("reason", reason)] if v is not None}
        return self.call("hooks.session_end", **params)

    def hooks_permission_request(self, *, session_id: str, tool_input: Dict[str, Any], tool_name: str, tool_use_id: Optional[str] = None) -> HookOutcome:
        """Run PermissionRequest hooks before asking the user to allow a tool call: decision allow (with updated_input) or deny (with reason), or none (ask the user)."""
        params = {k: v for k, v in [("session_id", session_id), ("tool_input", tool_input), ("tool_name", tool_name), ("tool_use_id", tool_use_id)] if v is not None}
        return self.call("hooks.permission_request", **params)

    def session_set_plan_mode(self, *, enabled: bool, session_id: str, plan_file: Optional[str] = None) -> PlanModeResponse:
        """Switch plan mode on or off (and name the plan file); the next compile carries the entry or exit reminder."""
        params = {k: v for k, v in [("enabled", enabled), ("session_id", session_id), ("plan_file", plan_file)] if v is not None}
        return self.call("session.set_plan_mode", **params)

    def transcript_queue(self, *, session_id: str, agent_id: Optional[str] = None, content: Optional[List[ContentBlock]] = None, text: Optional[str] = None) -> QueueResponse:
        """Queue user input (text, images) typed while a turn runs; the agent's next compile delivers it as a queued_command attachment once the current tool results are in."""
        params = {k: v for k, v in [("session_id", session_id), ("agent_id", agent_id), ("content", content), ("text", text)] if v is not None}
        return self.call("transcript.queue", **params)

    def transcript_queued(self, *, session_id: str, agent_id: Optional[str] = None) -> QueuedResponse:
        """The queued input still waiting, oldest first (all agents, or one: main for the main thread)."""
        params = {k: v for k, v in [("session_id", session_id), ("agent_id", agent_id)] if v is not None}
        return self.call("transcript.queued", **params)

    def transcript_take_queued(self, *, agent_id: str, session_id: str) -> TakeQueuedResponse:
        """A sub-agent takes its queued input: appended as its sidechain queued_command records and returned with their text."""
        params = {k: v for k, v in [("agent_id", agent_id), ("session_id", session_id)] if v is not None}
        return self.call("transcript.take_queued", **params)

    def context_set_section(self, *, section: SystemSection, session_id: str) -> AckResponse:
        """Register (or replace, by name) a dynamic system section: memoized (frozen at its first compile until compaction or reset) or uncached (recomputed every compile; needs a reason)."""
        params = {k: v for k, v in [("section", section), ("session_id", session_id)] if v is not None}
        return self.call("context.set_section", **params)

    def context_remove_section(self, *, name: str, session_id: str) -> AckResponse:
        """Remove a registered dynamic system section (ok is false when there was none)."""
        params = {k: v for k, v in [("name", name), ("session_id", session_id)] if v is not None}
        return self.call("context.remove_section", **params)

    def context_reset_sections(self, *, session_id: str) -> AckResponse:
        """Drop the memo of memoized system sections: the next compile computes them again."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return self.call("context.reset_sections", **params)

    def rpc_discover(self) -> Dict[str, Any]:
        """This document."""
        params: Dict[str, Any] = {}
        return self.call("rpc.discover", **params)


class AsyncMethods:
    """Every method of the document, typed; `call` does the work."""

    async def call(self, method: str, **params: Any) -> Any:  # pragma: no cover
        raise NotImplementedError

    async def daemon_initialize(self, *, client_info: PeerInfo, protocol_version: str) -> InitializeResult:
        """Handshake: client info and protocol version in; server info, negotiated version, capabilities and limits out. Another major version is refused."""
        params = {k: v for k, v in [("client_info", client_info), ("protocol_version", protocol_version)] if v is not None}
        return await self.call("daemon.initialize", **params)

    async def daemon_status(self) -> DaemonStatus:
        """Protocol version, daemon version, paths, uptime."""
        params: Dict[str, Any] = {}
        return await self.call("daemon.status", **params)

    async def daemon_ping(self) -> PingResponse:
        """No-op round trip."""
        params: Dict[str, Any] = {}
        return await self.call("daemon.ping", **params)

    async def daemon_shutdown(self) -> ShutdownResponse:
        """Stop the daemon cleanly after answering."""
        params: Dict[str, Any] = {}
        return await self.call("daemon.shutdown", **params)

    async def proxy_status(self) -> ProxyStatusResponse:
        """The HTTP front door (`ctxd --http`): whether it listens, its base URLs (secret included), sessions seen and bytes forwarded."""
        params: Dict[str, Any] = {}
        return await self.call("proxy.status", **params)

    async def daemon_backup(self, *, path: str) -> BackupResponse:
        """Write a consistent copy of the SQLite store to a new file while the daemon runs (a PostgreSQL store answers an error pointing to pg_dump)."""
        params = {k: v for k, v in [("path", path)] if v is not None}
        return await self.call("daemon.backup", **params)

    async def daemon_gc(self, *, dry_run: Optional[bool] = None, idle_days: Optional[int] = None, max_store_bytes: Optional[int] = None, now: Optional[str] = None) -> GcResponse:
        """Delete sessions idle for idle_days, then the least recently updated until the rest fit max_store_bytes; dry_run only says which."""
        params = {k: v for k, v in [("dry_run", dry_run), ("idle_days", idle_days), ("max_store_bytes", max_store_bytes), ("now", now)] if v is not None}
        return await self.call("daemon.gc", **params)

    async def daemon_metrics(self) -> MetricsResponse:
        """The daemon's counters and gauges in the Prometheus text format: calls and errors by method, call latencies, sessions stored and loaded, store size, context.send turns and tokens, retention, the front door's traffic, uptime."""
        params: Dict[str, Any] = {}
        return await self.call("daemon.metrics", **params)

    async def session_create(self, *, cwd: str, additional_directories: Optional[List[str]] = None, model: Optional[ModelProfile] = None, no_git: Optional[bool] = None, settings: Optional[SessionSettings] = None, start_date: Optional[str] = None, system: Optional[SystemPrompt] = None, title: Optional[str] = None, tools: Optional[List[ToolSpec]] = None) -> SessionCreateResponse:
        """Create a session for a working directory."""
        params = {k: v for k, v in [("cwd", cwd), ("additional_directories", additional_directories), ("model", model), ("no_git", no_git), ("settings", settings), ("start_date", start_date), ("system", system), ("title", title), ("tools", tools)] if v is not None}
        return await self.call("session.create", **params)

    async def session_list(self, *, limit: Optional[int] = None) -> SessionListResponse:
        """List sessions, newest first."""
        params = {k: v for k, v in [("limit", limit)] if v is not None}
        return await self.call("session.list", **params)

    async def session_get(self, *, session_id: str) -> SessionGetResponse:
        """One session."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return await self.call("session.get", **params)

    async def session_update(self, *, session_id: str, cwd: Optional[str] = None, model: Optional[ModelProfile] = None, settings: Optional[SessionSettings] = None, system: Optional[SystemPrompt] = None, title: Optional[str] = None) -> SessionGetResponse:
        """Change settings, model profile, system prompt or title."""
        params = {k: v for k, v in [("session_id", session_id), ("cwd", cwd), ("model", model), ("settings", settings), ("system", system), ("title", title)] if v is not None}
        return await self.call("session.update", **params)

    async def session_fork(self, *, session_id: str, up_to_uuid: Optional[str] = None) -> SessionForkResponse:
        """Copy a session's transcript up to a record into a new session."""
        params = {k: v for k, v in [("session_id", session_id), ("up_to_uuid", up_to_uuid)] if v is not None}
        return await self.call("session.fork", **params)

    async def session_delete(self, *, session_id: str) -> SessionDeleteResponse:
        """Delete a session, its transcript and its files."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return await self.call("session.delete", **params)

    async def session_import(self, *, cwd: Optional[str] = None, fallback_cwd: Optional[str] = None, jsonl: Optional[str] = None, model: Optional[ModelProfile] = None, path: Optional[str] = None, title: Optional[str] = None) -> SessionImportResponse:
        """Import a Claude Code JSONL transcript into a new session (all or nothing)."""
        params = {k: v for k, v in [("cwd", cwd), ("fallback_cwd", fallback_cwd), ("jsonl", jsonl), ("model", model), ("path", path), ("title", title)] if v is not None}
        return await self.call("session.import", **params)

    async def agent_start(self, *, agent_type: str, session_id: str, tool_use_id: str, agent_id: Optional[str] = None, instructions: Optional[AgentInstructions] = None, model: Optional[ModelProfile] = None, prompt: Optional[str] = None, settings: Optional[SessionSettings] = None, system: Optional[SystemPrompt] = None, tools: Optional[List[ToolSpec]] = None) -> AgentStartResponse:
        """Start a sub-agent for one of the session's tool calls: a thread of its own (system prompt, tools, thresholds, compaction), starting from the session's file state; SubagentStart hooks run."""
        params = {k: v for k, v in [("agent_type", agent_type), ("session_id", session_id), ("tool_use_id", tool_use_id), ("agent_id", agent_id), ("instructions", instructions), ("model", model), ("prompt", prompt), ("settings", settings), ("system", system), ("tools", tools)] if v is not None}
        return await self.call("agent.start", **params)

    async def agent_finish(self, *, agent_id: str, session_id: str, is_error: Optional[bool] = None, result: Optional[Dict[str, Any]] = None) -> AgentFinishResponse:
        """Give a sub-agent's answer to its session as the tool result of the call that started it."""
        params = {k: v for k, v in [("agent_id", agent_id), ("session_id", session_id), ("is_error", is_error), ("result", result)] if v is not None}
        return await self.call("agent.finish", **params)

    async def agent_list(self, *, session_id: str) -> AgentListResponse:
        """A session's sub-agents and their threads."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return await self.call("agent.list", **params)

    async def session_subscribe(self, *, session_id: str, after_seq: Optional[int] = None, include_records: Optional[bool] = None) -> SubscriptionId:
        """Stream a session's events (WebSocket only), first replaying records after after_seq. Returns the subscription id; events arrive as session.event notifications."""
        params = {k: v for k, v in [("session_id", session_id), ("after_seq", after_seq), ("include_records", include_records)] if v is not None}
        return await self.call("session.subscribe", **params)

    async def session_unsubscribe(self, *, subscription: SubscriptionId) -> bool:
        """End a subscription (WebSocket only, on the connection that made it). false when it was not active."""
        params = {k: v for k, v in [("subscription", subscription)] if v is not None}
        return await self.call("session.unsubscribe", **params)

    async def transcript_append(self, *, records: List[RecordInput], session_id: str, agent_id: Optional[str] = None, expected_last_uuid: Optional[str] = None) -> AppendResponse:
        """Append records atomically, optionally guarded by the expected last uuid."""
        params = {k: v for k, v in [("records", records), ("session_id", session_id), ("agent_id", agent_id), ("expected_last_uuid", expected_last_uuid)] if v is not None}
        return await self.call("transcript.append", **params)

    async def transcript_read(self, *, session_id: str, after_seq: Optional[int] = None, agent_id: Optional[str] = None, limit: Optional[int] = None) -> ReadResponse:
        """Read a page of records."""
        params = {k: v for k, v in [("session_id", session_id), ("after_seq", after_seq), ("agent_id", agent_id), ("limit", limit)] if v is not None}
        return await self.call("transcript.read", **params)

    async def transcript_reject_media(self, *, block_index: int, record_uuid: str, session_id: str) -> RejectMediaResponse:
        """Mark an image or document the provider refused; later compiles strip it."""
        params = {k: v for k, v in [("block_index", block_index), ("record_uuid", record_uuid), ("session_id", session_id)] if v is not None}
        return await self.call("transcript.reject_media", **params)

    async def capabilities_set_tools(self, *, session_id: str, tools: List[ToolSpec]) -> ToolsSetResponse:
        """Replace the session's tool list."""
        params = {k: v for k, v in [("session_id", session_id), ("tools", tools)] if v is not None}
        return await self.call("capabilities.set_tools", **params)

    async def capabilities_list_tools(self, *, session_id: str) -> ToolsListResponse:
        """The session's tool list."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return await self.call("capabilities.list_tools", **params)

    async def capabilities_mcp_connect(self, *, name: str, session_id: str, instructions: Optional[str] = None, resources: Optional[List[McpResource]] = None, tools: Optional[List[ToolSpec]] = None) -> CapabilityChangeResponse:
        """Report an MCP server connected (name, instructions, tools); announced in system before the first compile, as mcp_instructions_delta after it."""
        params = {k: v for k, v in [("name", name), ("session_id", session_id), ("instructions", instructions), ("resources", resources), ("tools", tools)] if v is not None}
        return await self.call("capabilities.mcp_connect", **params)

    async def capabilities_mcp_set_instructions(self, *, name: str, session_id: str, instructions: Optional[str] = None) -> CapabilityChangeResponse:
        """Report that a connected MCP server changed its instructions (announced as mcp_instructions_delta)."""
        params = {k: v for k, v in [("name", name), ("session_id", session_id), ("instructions", instructions)] if v is not None}
        return await self.call("capabilities.mcp_set_instructions", **params)

    async def capabilities_mcp_disconnect(self, *, name: str, session_id: str) -> CapabilityChangeResponse:
        """Report an MCP server disconnected; its tools leave with it and the removal is announced."""
        params = {k: v for k, v in [("name", name), ("session_id", session_id)] if v is not None}
        return await self.call("capabilities.mcp_disconnect", **params)

    async def capabilities_set_agents(self, *, agents: List[AgentType], session_id: str) -> CapabilityChangeResponse:
        """Replace the available agent types; changes are announced with agent_listing_delta."""
        params = {k: v for k, v in [("agents", agents), ("session_id", session_id)] if v is not None}
        return await self.call("capabilities.set_agents", **params)

    async def capabilities_discover_tools(self, *, names: List[str], session_id: str) -> CapabilityChangeResponse:
        """Mark deferred tools as found by tool search: their full schema is sent from the next compile on."""
        params = {k: v for k, v in [("names", names), ("session_id", session_id)] if v is not None}
        return await self.call("capabilities.discover_tools", **params)

    async def capabilities_invoke_skill(self, *, name: str, session_id: str) -> AckResponse:
        """Record a skill invocation made outside a Skill tool_use (compaction restores invoked skills)."""
        params = {k: v for k, v in [("name", name), ("session_id", session_id)] if v is not None}
        return await self.call("capabilities.invoke_skill", **params)

    async def capabilities_skills(self, *, session_id: str) -> SkillsResponse:
        """The session's skills: listed, pending, dormant (conditional), omitted, invoked; skipped files."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return await self.call("capabilities.skills", **params)

    async def capabilities_get(self, *, session_id: str) -> CapabilitiesResponse:
        """Tools (sent, deferred, discovered), MCP servers, agent types and what has been announced."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return await self.call("capabilities.get", **params)

    async def context_compile(self, *, session_id: str, agent_id: Optional[str] = None, flags: Optional[RequestFlags] = None, format: Optional[CompileFormat] = None, now: Optional[str] = None, side_request: Optional[bool] = None) -> CompileResponse:
        """Compile the exact Messages API request for the next model call."""
        params = {k: v for k, v in [("session_id", session_id), ("agent_id", agent_id), ("flags", flags), ("format", format), ("now", now), ("side_request", side_request)] if v is not None}
        return await self.call("context.compile", **params)

    async def context_snip(self, *, from_id: str, session_id: str, to_id: str) -> SnipResponse:
        """Remove a range of messages by their short ids; recorded as a snip boundary."""
        params = {k: v for k, v in [("from_id", from_id), ("session_id", session_id), ("to_id", to_id)] if v is not None}
        return await self.call("context.snip", **params)

    async def context_compact(self, *, session_id: str, instructions: Optional[str] = None) -> CompactionReport:
        """Compact the session now (manual), with optional extra instructions."""
        params = {k: v for k, v in [("session_id", session_id), ("instructions", instructions)] if v is not None}
        return await self.call("context.compact", **params)

    async def context_send(self, *, session_id: str, agent_id: Optional[str] = None) -> SendResponse:
        """Compile, send to the session's provider (settings.provider), and append the answer as it came; one turn at a time per session."""
        params = {k: v for k, v in [("session_id", session_id), ("agent_id", agent_id)] if v is not None}
        return await self.call("context.send", **params)

    async def context_send_stream(self, *, session_id: str, agent_id: Optional[str] = None) -> SubscriptionId:
        """Run a context.send turn and stream it (WebSocket only): started, the provider's events as they come, then finished (the appended message) or failed. Ending the subscription cancels the turn."""
        params = {k: v for k, v in [("session_id", session_id), ("agent_id", agent_id)] if v is not None}
        return await self.call("context.send_stream", **params)

    async def context_send_unsubscribe(self, *, subscription: SubscriptionId) -> bool:
        """End a context.send_stream subscription, cancelling its turn if it still runs (nothing is appended). false when it was not active."""
        params = {k: v for k, v in [("subscription", subscription)] if v is not None}
        return await self.call("context.send_unsubscribe", **params)

    async def context_cancel(self, *, session_id: str) -> AckResponse:
        """Cancel the session's running context.send turn: the provider call stops and nothing is appended. ok is false when no turn runs."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return await self.call("context.cancel", **params)

    async def memory_get(self, *, session_id: str) -> MemoryGetResponse:
        """The session's memory document, its version and last summarised record."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return await self.call("memory.get", **params)

    async def memory_update(self, *, document: str, expected_version: int, session_id: str, last_summarized_uuid: Optional[str] = None, writer: Optional[str] = None) -> MemoryUpdateResponse:
        """Write the memory document (optimistic: expected_version must be current)."""
        params = {k: v for k, v in [("document", document), ("expected_version", expected_version), ("session_id", session_id), ("last_summarized_uuid", last_summarized_uuid), ("writer", writer)] if v is not None}
        return await self.call("memory.update", **params)

    async def memory_extract(self, *, session_id: str) -> MemoryUpdateResponse:
        """Run an extraction now with the session's summariser and wait for it."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return await self.call("memory.extract", **params)

    async def context_collapse_list(self, *, session_id: str) -> CollapseListResponse:
        """The session's collapses (staged, committed, undone), oldest first."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return await self.call("context.collapse_list", **params)

    async def context_collapse_undo(self, *, collapse_id: str, session_id: str) -> AckResponse:
        """Undo a collapse: its span reappears in the view."""
        params = {k: v for k, v in [("collapse_id", collapse_id), ("session_id", session_id)] if v is not None}
        return await self.call("context.collapse_undo", **params)

    async def context_report_error(self, *, kind: str, session_id: str, block_index: Optional[int] = None, record_uuid: Optional[str] = None, token_gap: Optional[int] = None) -> CompileResponse:
        """Report that the provider refused a compiled request; compacts reactively and returns the next request."""
        params = {k: v for k, v in [("kind", kind), ("session_id", session_id), ("block_index", block_index), ("record_uuid", record_uuid), ("token_gap", token_gap)] if v is not None}
        return await self.call("context.report_error", **params)

    async def context_provide_summary(self, *, request_id: str, error: Optional[str] = None, prompt_too_long: Optional[bool] = None, text: Optional[str] = None, token_gap: Optional[int] = None) -> AckResponse:
        """Answer a summary_requested event (client summariser)."""
        params = {k: v for k, v in [("request_id", request_id), ("error", error), ("prompt_too_long", prompt_too_long), ("text", text), ("token_gap", token_gap)] if v is not None}
        return await self.call("context.provide_summary", **params)

    async def context_touch_paths(self, *, paths: List[str], session_id: str) -> AckResponse:
        """Report paths the agent touched; their instruction files follow as nested_memory."""
        params = {k: v for k, v in [("paths", paths), ("session_id", session_id)] if v is not None}
        return await self.call("context.touch_paths", **params)

    async def context_report_read(self, *, path: str, session_id: str) -> AckResponse:
        """Report that the model has seen a file as it is now on disk (changed_files baseline)."""
        params = {k: v for k, v in [("path", path), ("session_id", session_id)] if v is not None}
        return await self.call("context.report_read", **params)

    async def transcript_parse_claude_code(self, *, jsonl: str) -> ParseClaudeCodeResponse:
        """Convert a Claude Code JSONL transcript to records without storing anything."""
        params = {k: v for k, v in [("jsonl", jsonl)] if v is not None}
        return await self.call("transcript.parse_claude_code", **params)

    async def context_replacements(self, *, session_id: str) -> ReplacementsResponse:
        """The frozen fates of the session's tool results (content-replacement records)."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return await self.call("context.replacements", **params)

    async def context_usage(self, *, session_id: str) -> UsageResponse:
        """What the next request would fill the context window with, by category (Claude Code's /context), counting the attachments its compile would add; changes nothing."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return await self.call("context.usage", **params)

    async def context_cache_report(self, *, session_id: str) -> CacheReportResponse:
        """Every model call's reported cache reads next to ctxd's prediction, with cache breaks and their causes."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return await self.call("context.cache_report", **params)

    async def hooks_list(self, *, session_id: str) -> HooksListResponse:
        """The session's settings files and configured hooks, with their source file and whether they run."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return await self.call("hooks.list", **params)

    async def hooks_pre_tool_use(self, *, session_id: str, tool_input: Dict[str, Any], tool_name: str, tool_use_id: Optional[str] = None) -> HookOutcome:
        """Run PreToolUse hooks before the client runs a tool: allow, deny or ask, a reason, updatedInput, context."""
        params = {k: v for k, v in [("session_id", session_id), ("tool_input", tool_input), ("tool_name", tool_name), ("tool_use_id", tool_use_id)] if v is not None}
        return await self.call("hooks.pre_tool_use", **params)

    async def hooks_post_tool_use(self, *, session_id: str, tool_input: Dict[str, Any], tool_name: str, tool_response: Dict[str, Any], tool_use_id: Optional[str] = None) -> HookOutcome:
        """Run PostToolUse hooks after a tool ran; context and blocking feedback are appended for the model."""
        params = {k: v for k, v in [("session_id", session_id), ("tool_input", tool_input), ("tool_name", tool_name), ("tool_response", tool_response), ("tool_use_id", tool_use_id)] if v is not None}
        return await self.call("hooks.post_tool_use", **params)

    async def hooks_user_prompt_submit(self, *, prompt: str, session_id: str) -> HookOutcome:
        """Run UserPromptSubmit hooks on a prompt without appending it (transcript.append runs them itself)."""
        params = {k: v for k, v in [("prompt", prompt), ("session_id", session_id)] if v is not None}
        return await self.call("hooks.user_prompt_submit", **params)

    async def hooks_session_start(self, *, session_id: str, source: ClientSessionStart) -> HookOutcome:
        """Run SessionStart hooks with source resume or clear; their context is appended."""
        params = {k: v for k, v in [("session_id", session_id), ("source", source)] if v is not None}
        return await self.call("hooks.session_start", **params)

    async def hooks_stop(self, *, session_id: str, last_assistant_message: Optional[str] = None, stop_hook_active: Optional[bool] = None) -> HookOutcome:
        """Run Stop hooks when the agent would stop; a block appends the reason for the model."""
        params = {k: v for k, v in [("session_id", session_id), ("last_assistant_message", last_assistant_message), ("stop_hook_active", stop_hook_active)] if v is not None}
        return await self.call("hooks.stop", **params)

    async def hooks_stop_failure(self, *, error: str, session_id: str, error_details: Optional[str] = None, last_assistant_message: Optional[str] = None) -> HookOutcome:
        """Run StopFailure hooks when a turn ended on an API error (output ignored)."""
        params = {k: v for k, v in [("error", error), ("session_id", session_id), ("error_details", error_details), ("last_assistant_message", last_assistant_message)] if v is not None}
        return await self.call("hooks.stop_failure", **params)

    async def hooks_subagent_start(self, *, agent_id: str, agent_type: str, session_id: str) -> HookOutcome:
        """Run SubagentStart hooks; their context is returned for the sub-agent."""
        params = {k: v for k, v in [("agent_id", agent_id), ("agent_type", agent_type), ("session_id", session_id)] if v is not None}
        return await self.call("hooks.subagent_start", **params)

    async def hooks_subagent_stop(self, *, agent_id: str, agent_type: str, session_id: str, agent_transcript_path: Optional[str] = None, last_assistant_message: Optional[str] = None, stop_hook_active: Optional[bool] = None) -> HookOutcome:
        """Run SubagentStop hooks when a sub-agent would stop; a block returns the reason."""
        params = {k: v for k, v in [("agent_id", agent_id), ("agent_type", agent_type), ("session_id", session_id), ("agent_transcript_path", agent_transcript_path), ("last_assistant_message", last_assistant_message), ("stop_hook_active", stop_hook_active)] if v is not None}
        return await self.call("hooks.subagent_stop", **params)

    async def hooks_notification(self, *, message: str, session_id: str, notification_type: Optional[str] = None, title: Optional[str] = None) -> HookOutcome:
        """Run Notification hooks for a message to the user."""
        params = {k: v for k, v in [("message", message), ("session_id", session_id), ("notification_type", notification_type), ("title", title)] if v is not None}
        return await self.call("hooks.notification", **params)

    async def hooks_session_end(self, *, session_id: str, reason: Optional[str] = None) -> HookOutcome:
        """Run SessionEnd hooks when the session ends (output ignored)."""
        params = {k: v for k, v in [("session_id", session_id), ("reason", reason)] if v is not None}
        return await self.call("hooks.session_end", **params)

    async def hooks_permission_request(self, *, session_id: str, tool_input: Dict[str, Any], tool_name: str, tool_use_id: Optional[str] = None) -> HookOutcome:
        """Run PermissionRequest hooks before asking the user to allow a tool call: decision allow (with updated_input) or deny (with reason), or none (ask the user)."""
        params = {k: v for k, v in [("session_id", session_id), ("tool_input", tool_input), ("tool_name", tool_name), ("tool_use_id", tool_use_id)] if v is not None}
        return await self.call("hooks.permission_request", **params)

    async def session_set_plan_mode(self, *, enabled: bool, session_id: str, plan_file: Optional[str] = None) -> PlanModeResponse:
        """Switch plan mode on or off (and name the plan file); the next compile carries the entry or exit reminder."""
        params = {k: v for k, v in [("enabled", enabled), ("session_id", session_id), ("plan_file", plan_file)] if v is not None}
        return await self.call("session.set_plan_mode", **params)

    async def transcript_queue(self, *, session_id: str, agent_id: Optional[str] = None, content: Optional[List[ContentBlock]] = None, text: Optional[str] = None) -> QueueResponse:
        """Queue user input (text, images) typed while a turn runs; the agent's next compile delivers it as a queued_command attachment once the current tool results are in."""
        params = {k: v for k, v in [("session_id", session_id), ("agent_id", agent_id), ("content", content), ("text", text)] if v is not None}
        return await self.call("transcript.queue", **params)

    async def transcript_queued(self, *, session_id: str, agent_id: Optional[str] = None) -> QueuedResponse:
        """The queued input still waiting, oldest first (all agents, or one: main for the main thread)."""
        params = {k: v for k, v in [("session_id", session_id), ("agent_id", agent_id)] if v is not None}
        return await self.call("transcript.queued", **params)

    async def transcript_take_queued(self, *, agent_id: str, session_id: str) -> TakeQueuedResponse:
        """A sub-agent takes its queued input: appended as its sidechain queued_command records and returned with their text."""
        params = {k: v for k, v in [("agent_id", agent_id), ("session_id", session_id)] if v is not None}
        return await self.call("transcript.take_queued", **params)

    async def context_set_section(self, *, section: SystemSection, session_id: str) -> AckResponse:
        """Register (or replace, by name) a dynamic system section: memoized (frozen at its first compile until compaction or reset) or uncached (recomputed every compile; needs a reason)."""
        params = {k: v for k, v in [("section", section), ("session_id", session_id)] if v is not None}
        return await self.call("context.set_section", **params)

    async def context_remove_section(self, *, name: str, session_id: str) -> AckResponse:
        """Remove a registered dynamic system section (ok is false when there was none)."""
        params = {k: v for k, v in [("name", name), ("session_id", session_id)] if v is not None}
        return await self.call("context.remove_section", **params)

    async def context_reset_sections(self, *, session_id: str) -> AckResponse:
        """Drop the memo of memoized system sections: the next compile computes them again."""
        params = {k: v for k, v in [("session_id", session_id)] if v is not None}
        return await self.call("context.reset_sections", **params)

    async def rpc_discover(self) -> Dict[str, Any]:
        """This document."""
        params: Dict[str, Any] = {}
        return await self.call("rpc.discover", **params)
