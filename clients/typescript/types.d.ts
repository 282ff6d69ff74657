// Generated from protocol/openrpc.json by scripts/openrpc-ts-types.py: do not edit.
// OpenRPC 1.3.2, ctxd 1.4.

export type AckResponse = {
  ok: boolean;
};

/**
 * An attachment record a compile appended, and its attachment type.
 */
export type AddedAttachment = {
  /**
   * The attachment's `type`; empty for a record without one.
   */
  type: string;
  uuid: string;
};

export type AgentFinishResponse = {
  agent: AgentInfo;
  seq: number;
  /**
   * The parent's new record: a user message holding the tool result.
   */
  uuid: string;
};

/**
 * What a session row says of the sub-agent whose thread it holds.
 */
export type AgentInfo = {
  /**
   * Unique within the parent session.
   */
  agent_id: string;
  /**
   * The agent's type (`general-purpose`, `Explore`, ...): what SubagentStart and
   * SubagentStop matchers match.
   */
  agent_type: string;
  /**
   * Set by `agent.finish`: when the answer went to the parent.
   */
  finished_at?: string | null;
  /**
   * The session that started it.
   */
  parent_session_id: string;
  /**
   * The uuid of the parent's record holding the answer.
   */
  result_uuid?: string | null;
  /**
   * The parent's `tool_use` whose result the agent's answer becomes.
   */
  tool_use_id: string;
};

/**
 * The instructions a sub-agent starts with.
 */
export type AgentInstructions = "full" | "light";

export type AgentListResponse = {
  /**
   * The session's sub-agents, in the order they started.
   */
  agents: Array<AgentThread>;
};

export type AgentStartResponse = {
  /**
   * Context the SubagentStart hooks added (already in the thread).
   */
  additional_context?: Array<string>;
  /**
   * The agent's thread: a session of its own, with `agent` set.
   */
  session: SessionInfo;
};

/**
 * A sub-agent and the session holding its thread.
 */
export type AgentThread = {
  /**
   * Unique within the parent session.
   */
  agent_id: string;
  /**
   * The agent's type (`general-purpose`, `Explore`, ...): what SubagentStart and
   * SubagentStop matchers match.
   */
  agent_type: string;
  /**
   * Set by `agent.finish`: when the answer went to the parent.
   */
  finished_at?: string | null;
  /**
   * The session that started it.
   */
  parent_session_id: string;
  record_count: number;
  /**
   * The uuid of the parent's record holding the answer.
   */
  result_uuid?: string | null;
  session_id: string;
  /**
   * The parent's `tool_use` whose result the agent's answer becomes.
   */
  tool_use_id: string;
};

/**
 * One agent type the agent's `Agent` tool can start.
 */
export type AgentType = {
  /**
   * When to use it (one line in the listing).
   */
  description: string;
  /**
   * The tools it may use; absent → all tools.
   */
  tools?: Array<string> | null;
  type: string;
};

export type AppendResponse = {
  appended: Array<AppendedRecord>;
  /**
   * The transcript's last uuid after this append.
   */
  last_uuid?: string | null;
};

export type AppendedRecord = {
  seq: number;
  uuid: string;
};

/**
 * Attachment collection. Every field is optional; absent means the default.
 */
export type AttachmentSettings = {
  /**
   * Total time one compile may spend collecting attachments, in milliseconds (default
   * 1000). A source still running then is skipped and reported in
   * `metadata.attachment_sources`; the compile goes on without it.
   */
  collect_timeout_ms?: number | null;
  /**
   * Memory files relevant to the newest prompt (`relevant_memories`).
   */
  relevant_memories?: RelevantMemorySettings;
  /**
   * Remind the model of its task tools after 10 silent assistant turns (default on).
   */
  task_reminder?: boolean | null;
};

/**
 * `daemon.backup`: the copy written.
 */
export type BackupResponse = {
  /**
   * The copy's size in bytes.
   */
  bytes: number;
  /**
   * How long the copy took.
   */
  elapsed_ms: number;
  path: string;
};

/**
 * A piece of a content block.
 */
export type BlockDelta = {
  text: string;
  type: "text_delta";
} | {
  thinking: string;
  type: "thinking_delta";
} | {
  signature: string;
  type: "signature_delta";
} | {
  partial_json: string;
  type: "input_json_delta";
} | {
  citation: unknown;
  type: "citations_delta";
};

/**
 * Why the cache read dropped.
 */
export type CacheBreak = {
  /**
   * `client_change` (the compiled requests differ; `changes` names what),
   * `ttl_expiry` (the gap since the previous call exceeded the TTL) or
   * `server_eviction` (nothing changed and the TTL had not run out).
   */
  cause: string;
  /**
   * What changed, one line each (e.g. `tools added: Foo`, `system +120 chars`).
   */
  changes?: Array<string>;
  /**
   * Seconds between the previous call and this request.
   */
  gap_secs?: number | null;
  /**
   * Cache-read tokens of the previous call and of this one.
   */
  previous_read_tokens: number;
  read_tokens: number;
};

/**
 * One model call (an assistant response with usage) of the session.
 */
export type CacheCall = {
  /**
   * Whether ctxd and the provider agree on this call: both saw the cache miss (ctxd:
   * an expected drop, a break, or a miss its compile predicted) or neither did. Absent when the provider gave no
   * verdict (no diagnosis, still pending, previous message not found, unavailable).
   */
  agrees?: boolean | null;
  /**
   * Set when the cache read fell below 95% of the previous call's and by at least
   * 2,000 tokens, without an expected cause.
   */
  cache_break?: CacheBreak | null;
  cache_creation_tokens: number;
  cache_read_tokens: number;
  /**
   * The call's cost in US dollars at the model catalogue's list prices (uncached
   * input, cache writes by TTL, cache reads, output); absent for a model the
   * catalogue does not list.
   */
  cost_usd?: number | null;
  /**
   * The drop in cache reads was expected: `compaction` (ctxd's or the provider's),
   * `cache_edit`, `time_based_microcompact`, `lean_policy`, `ttl_expiry` (the compile saw the TTL
   * run out), `server_context_edit` (the provider's context editing cleared part
   * of this call's request) or `history_edited` (a client's request through the HTTP
   * front door whose messages differ from those it sent before).
   */
  expected_drop?: string | null;
  input_tokens: number;
  /**
   * The model that answered (the response's `model`).
   */
  model?: string | null;
  output_tokens: number;
  /**
   * What ctxd predicted for the request of this call, when ctxd compiled it.
   */
  predicted_read_tokens?: number | null;
  /**
   * The provider's own diagnosis (`diagnostics.cache_miss_reason` of the response,
   * as it came; `null` when the provider had none yet), when the request asked for
   * it (`settings.cache_diagnostics`).
   */
  provider_miss_reason?: unknown;
  seq: number;
  /**
   * Input tokens the provider's context editing cleared from this call's request
   * (`context_management.applied_edits[].cleared_input_tokens`, summed).
   */
  server_cleared_tokens?: number | null;
  timestamp: string;
  /**
   * uuid and sequence number of the record carrying the usage.
   */
  uuid: string;
};

/**
 * Anthropic prompt-cache marker. Placed by ctxd only; clients never send it.
 */
export type CacheControl = {
  scope?: string | null;
  /**
   * `1h` when the session latched the one-hour TTL; absent for the default five
   * minutes.
   */
  ttl?: string | null;
  type: string;
};

/**
 * `usage.cache_creation`: the cache writes of a response by TTL.
 */
export type CacheCreation = {
  ephemeral_1h_input_tokens?: number;
  ephemeral_5m_input_tokens?: number;
  [key: string]: unknown;
};

/**
 * What the provider's prompt cache is predicted to serve of a compiled request,
 * against the previous compile of the same session. Cache markers are ignored: they are
 * not part of the cache key.
 */
export type CacheMetadata = {
  /**
   * The difference is expected: `first_compile`, `compaction`, `cache_edit`,
   * `time_based_microcompact`, `lean_policy` (the lean policy cleared results),
   * `ttl_expiry` (the last model call answered longer ago
   * than the latched TTL: nothing is predicted read), `server_context_edit` (the
   * provider's context editing cleared part of the last request: it rewrites the
   * prefix from the first cleared result), `uncached_section:NAME` (an uncached
   * system section changed; `metadata.uncached_sections` gives its reason), or, for a
   * client's own request seen by the HTTP front door, `history_edited` (its messages
   * differ from those it sent before).
   */
  expected_break?: string | null;
  /**
   * Where this request first differs from the previous one: `model`, `flags`,
   * `system[i]`, `tools[NAME]` or `messages[i]`. Absent when the previous request is
   * a prefix of this one (or there is none).
   */
  first_difference?: string | null;
  /**
   * The flags this request carries (what the latch holds).
   */
  flags: RequestFlags;
  /**
   * HTTP headers to send with the body (`anthropic-beta`).
   */
  headers?: {
    [key: string]: unknown;
  };
  /**
   * Changes the client asked for that the latch refused (the latched value was
   * sent), and latched additions that break the cache once.
   */
  latch_notes?: Array<string>;
  /**
   * Estimated tokens the cache will serve: the longest identical prefix that ends
   * where the previous request wrote a cache entry and that a breakpoint of this
   * request can reach.
   */
  predicted_read_tokens: number;
  /**
   * Bytes of the identical prefix (system, then tools, then messages; canonical
   * serialisation without cache markers).
   */
  prefix_bytes: number;
  /**
   * Estimated tokens of the whole request, counted the same way as the prediction.
   */
  request_tokens: number;
};

export type CacheReportResponse = {
  agreed?: number;
  /**
   * Unexpected breaks among `calls`.
   */
  breaks: number;
  calls: Array<CacheCall>;
  /**
   * The session's cost so far in US dollars: the sum of the calls' `cost_usd`
   * (calls of models the catalogue does not list count nothing).
   */
  cost_usd?: number;
  /**
   * Calls the provider gave a verdict on (`agrees` set), and those where ctxd's
   * reading agreed with it.
   */
  diagnosed?: number;
};

/**
 * What this daemon offers.
 */
export type Capabilities = {
  /**
   * Summariser of sessions that choose none (`embedded`, `anthropic`, `openai`,
   * `client`).
   */
  default_summariser: string;
  /**
   * Instruction and seen files are watched, so `file_changed` events flow.
   */
  file_watching: boolean;
  /**
   * Every method it serves (`rpc.discover` documents them).
   */
  methods: Array<string>;
  /**
   * `session.subscribe` (WebSocket only) replays from `after_seq` and can carry whole
   * records.
   */
  subscriptions: SubscriptionCapabilities;
  /**
   * `http` (one call per POST) and `websocket` (calls and subscriptions).
   */
  transports: Array<string>;
};

export type CapabilitiesResponse = {
  agents: Array<AgentType>;
  announced_agent_types: Array<string>;
  /**
   * What the model has been told in the current history (the fold of its delta
   * records): deferred tool names, agent types, MCP servers with instructions.
   */
  announced_deferred_tools: Array<string>;
  announced_mcp_servers: Array<string>;
  mcp_servers: Array<McpServerState>;
  /**
   * The tools sent (in registration order; server-side tools go after the others in
   * the request), the discovered ones (in discovery order), then the deferred ones
   * still to be found.
   */
  tools: Array<ToolState>;
};

/**
 * What a capability change did.
 */
export type CapabilityChangeResponse = {
  /**
   * Announced at the next compile: in `system` (before the first compile) or as a
   * delta attachment (after it).
   */
  announced_by: string;
  /**
   * Tools of the session now (session tools and connected servers' tools).
   */
  tool_count: number;
};

/**
 * The `SessionStart` sources a client reports (the others ctxd fires itself).
 */
export type ClientSessionStart = "resume" | "clear";

/**
 * Context collapse thresholds, as percentages of the effective window.
 */
export type CollapseConfig = {
  block_at_pct?: number;
  commit_at_pct?: number;
  enabled?: boolean;
  /**
   * The most recent API rounds are never collapsed.
   */
  keep_recent_rounds?: number;
  /**
   * API rounds folded into one collapse.
   */
  span_rounds?: number;
  stage_at_pct?: number;
  /**
   * Commit until the estimate is below this.
   */
  target_pct?: number;
};

export type CollapseInfo = {
  first_uuid: string;
  id: string;
  last_uuid: string;
  record_count: number;
  /**
   * `staged`, `committed` or `undone`.
   */
  status: string;
  summary: string;
  tokens: number;
};

export type CollapseListResponse = {
  collapses: Array<CollapseInfo>;
};

/**
 * What one compaction did.
 */
export type CompactionReport = {
  boundary_uuid: string;
  head_truncated_rounds: number;
  /**
   * Records kept verbatim after the summary (session-memory compact).
   */
  kept_records: number;
  /**
   * `full` (summariser) or `session_memory` (the session's notes as the summary).
   */
  kind: string;
  /**
   * Wall time of the compaction in microseconds.
   */
  micros: number;
  /**
   * Estimate of the new history.
   */
  post_tokens: number;
  pre_tokens: number;
  /**
   * Recently read files left out, each with why (`PATH: outside the session's
   * workspace`, unreadable, too large). Only files whose Read succeeded are candidates.
   */
  restore_skipped?: Array<string>;
  /**
   * Files re-read from disk into the new history.
   */
  restored_files: Array<string>;
  /**
   * Why session-memory compact was not used (autocompact tries it first).
   */
  session_memory_skipped?: string | null;
  /**
   * Records summarised, and rounds dropped from the head to make the request fit.
   */
  summarised_records: number;
  summariser: string;
  summary_chars: number;
  /**
   * Half the autocompact threshold: `post_tokens` should be at most this.
   */
  target_tokens?: number;
  /**
   * How many times the caps (summary, notes, kept tail, restored files) were halved
   * to reach the target.
   */
  tightenings?: number;
  /**
   * `auto`, `manual` or `reactive`.
   */
  trigger: string;
};

/**
 * How far a compaction stayed from its target.
 */
export type CompactionShortfall = {
  /**
   * The estimate of the smallest new history compaction could build.
   */
  best_tokens: number;
  reason: string;
  /**
   * Half the autocompact threshold: what a compaction must leave at most.
   */
  target_tokens: number;
};

/**
 * The API a compiled request is written for.
 */
export type CompileFormat = "anthropic" | "openai_chat";

export type CompileMetadata = {
  /**
   * The records of `attachments_added`, in the same order, each with what it
   * attached: its attachment `type` (`at_mention`, `queued_command`, ...).
   */
  added_attachments?: Array<AddedAttachment>;
  /**
   * Each attachment source of this compile: ok, skipped (still running when the
   * collection's time bound ran out) or failed, in the fixed order of kinds.
   */
  attachment_sources?: Array<SourceReport>;
  /**
   * Attachment records this compile collected and appended to the transcript
   * (queued_command, date_change, edited_text_file, nested_memory, plan_mode, the task
   * reminder, relevant_memories), in that order.
   */
  attachments_added: Array<string>;
  /**
   * Autocompact was due but skipped or failed: why.
   */
  autocompact_skipped?: string | null;
  /**
   * What the provider's prompt cache is predicted to serve, and the latched flags.
   */
  cache: CacheMetadata;
  /**
   * Set when this compile compacted the history first (autocompact or recovery).
   */
  compaction?: CompactionReport | null;
  /**
   * Compaction cannot make the room it must: this compile's compaction left more than
   * half the autocompact threshold, or the last attempt could not get below the
   * threshold at all (the system prompt, tools and instructions alone may be too
   * large). Autocompact then waits for new messages instead of compacting again.
   */
  compaction_shortfall?: CompactionShortfall | null;
  context: ContextState;
  /**
   * The lean policy's cost model at this compile: the session's pace, the prices,
   * and what it expected of the lifetime it chose and of the clears it weighed.
   */
  cost?: CostExpectation | null;
  /**
   * Hook contexts (`hook_additional_context`, `hook_blocking_error` records) the
   * request carries, in transcript order.
   */
  hook_contexts?: Array<HookContextRef>;
  /**
   * tool_use ids seen for the first time and kept whole.
   */
  kept: Array<string>;
  /**
   * Last transcript sequence number the compile saw.
   */
  last_seq: number;
  /**
   * The transcript's last uuid after this compile (attachments move it): pass it as
   * `expected_last_uuid` to the next append.
   */
  last_uuid?: string | null;
  message_count: number;
  microcompact: MicrocompactReport;
  /**
   * Keys of the body the public Messages API does not define, present because the
   * session opted in to Claude Code's extensions: `cache_control.scope` (its beta
   * header is in `cache.headers`), `cache_reference`, `cache_edits`. Empty by default.
   */
  non_public?: Array<string>;
  /**
   * Tools the messages call that the session does not define, sent as placeholder
   * definitions (the public API refuses a request whose messages call an undefined
   * tool): an imported transcript, or a tool since removed.
   */
  placeholder_tools?: Array<string>;
  /**
   * Records of the transcript that the projection covers (after the last boundary).
   */
  projected_records: number;
  /**
   * What normalisation repaired, one line per repair.
   */
  repairs: Array<string>;
  /**
   * tool_use ids whose results this compile decided to persist (their fate is now
   * frozen as a `<persisted-output>` block).
   */
  replaced: Array<string>;
  request_bytes: number;
  /**
   * Hex SHA-256 of the request body bytes.
   */
  request_sha256: string;
  /**
   * Tokens removed by snips after the usage anchor (subtracted before the threshold
   * tests, because the anchor's usage still counts them).
   */
  snip_tokens_freed: number;
  /**
   * The official SDK sends this request only streamed: with its `max_tokens` a
   * non-streamed call may run past ten minutes (`messages.stream(**body)` or
   * `stream=True`).
   */
  stream_required?: boolean;
  system_sections: Array<SectionLayout>;
  tokens: TokenEstimate;
  /**
   * Uncached system sections (recomputed every compile) with their reason, and
   * whether their text changed since the previous compile, which breaks the cache.
   */
  uncached_sections?: Array<UncachedSectionReport>;
};

export type CompileResponse = {
  metadata: CompileMetadata;
  /**
   * The Messages API request body, exactly as ctxd serialised it (kept raw so that
   * decoding and re-encoding cannot reorder its bytes).
   */
  request: unknown;
};

/**
 * One configured hook command, as `hooks.list` reports it.
 */
export type ConfiguredHook = {
  /**
   * Whether it runs when its event fires and its matcher matches.
   */
  active: boolean;
  command: string;
  event: HookEvent;
  /**
   * The settings file it comes from.
   */
  file: string;
  /**
   * Why it does not run (policy, unsupported type, duplicate command, bad matcher).
   */
  inactive_reason?: string | null;
  /**
   * The matcher as written (`null` or `*` or empty: everything).
   */
  matcher?: string | null;
  /**
   * `managed`, `user`, `project` or `local`.
   */
  source: string;
  /**
   * Seconds before the hook's process group is killed.
   */
  timeout_secs: number;
};

/**
 * One content block, in the Anthropic Messages API shape. The types ctxd reasons about
 * are decoded; every field ctxd has no slot for (`citations`, `caller`, `context`, ...)
 * is kept in the block's `extra`, and a block of any other type (server tool calls and
 * their results, MCP blocks, `compaction`, what the API adds later) in [`ContentBlock::Other`]:
 * all of them are compiled back as the same JSON value.
 */
export type ContentBlock = ({
  cache_control?: CacheControl | null;
  text: string;
  type: "text";
  [key: string]: unknown;
}) | ({
  cache_control?: CacheControl | null;
  source: MediaSource;
  type: "image";
  [key: string]: unknown;
}) | ({
  cache_control?: CacheControl | null;
  source: MediaSource;
  title?: string | null;
  type: "document";
  [key: string]: unknown;
}) | {
  signature?: string;
  thinking: string;
  type: "thinking";
  [key: string]: unknown;
} | {
  data: string;
  type: "redacted_thinking";
  [key: string]: unknown;
} | ({
  cache_control?: CacheControl | null;
  id: string;
  input: unknown;
  name: string;
  type: "tool_use";
  [key: string]: unknown;
}) | ({
  cache_control?: CacheControl | null;
  /**
   * Set by ctxd when cached microcompact is on, so `cache_edits` can name the
   * result. Clients never send it.
   */
  cache_reference?: string | null;
  content?: ToolResultContent;
  is_error?: boolean;
  tool_use_id: string;
  type: "tool_result";
  [key: string]: unknown;
}) | {
  type: string;
  [key: string]: unknown;
};

/**
 * `settings.policy`.
 */
export type ContextPolicy = "claude_code" | "lean";

/**
 * Where the context stands against the session's limits.
 */
export type ContextState = {
  above_autocompact: boolean;
  at_blocking_limit: boolean;
  /**
   * Autocompact threshold: `E - 13000`, lowered by the percentage override.
   */
  autocompact_threshold: number;
  /**
   * `E - 3000` (or the configured margin).
   */
  blocking_limit: number;
  /**
   * Estimate minus what snips freed since the anchor.
   */
  effective_tokens: number;
  /**
   * `W - min(O, 20000)`.
   */
  effective_window: number;
  is_above_error: boolean;
  is_above_warning: boolean;
  percent_left: number;
  /**
   * `autocompact_threshold - 20000`.
   */
  warning_threshold: number;
};

/**
 * The lean policy's cost model at one compile (`metadata.cost`): its inputs and the
 * savings it expected, in US dollars, so a reader can see why it acted.
 */
export type CostExpectation = {
  /**
   * The warm batch of clears weighed, when there were candidates: what it is
   * expected to save over the expected warm calls, less its rewrite.
   */
  clear_saving?: number | null;
  /**
   * Calls the session is expected to make before its cache next goes cold.
   */
  expected_warm_calls: number;
  /**
   * The session's pace: gaps between its model calls so far, by length.
   */
  pace: Pace;
  /**
   * The prices the model was priced at, dollars per million tokens.
   */
  prices: Prices;
  /**
   * Tokens of this request, and of those the cache must write (all of them on a cold
   * cache, else what was added since the previous call).
   */
  request_tokens: number;
  /**
   * `5m` or `1h`: the lifetime this request's cache markers carry.
   */
  ttl: string;
  /**
   * What writing with the one-hour lifetime is expected to save against five
   * minutes, over the next gap (negative: it costs more).
   */
  ttl_1h_saving: number;
  write_tokens: number;
};

export type DaemonStatus = {
  daemon_version: string;
  home: string;
  /**
   * Sessions whose transcript is held in memory now (at most `ctxd
   * --max-loaded-sessions`, plus any in use at the moment the bound was applied).
   */
  loaded_sessions?: number;
  pid: number;
  protocol_version: string;
  /**
   * Sessions in the store; the loaded ones only when `store_error` is set.
   */
  sessions: number;
  socket: string;
  /**
   * Set when the store did not answer the count in time (a database that is down):
   * the daemon still answers, and says so.
   */
  store_error?: string | null;
  uptime_ms: number;
  /**
   * What the daemon holds for its WebSocket clients now.
   */
  websocket?: WebSocketStatus;
};

/**
 * One session `daemon.gc` deleted.
 */
export type GcDeleted = {
  /**
   * The stored JSON of its records and its threads' records, in bytes.
   */
  bytes: number;
  /**
   * `idle` (past `idle_days`) or `quota` (over `max_store_bytes`).
   */
  reason: string;
  session_id: string;
  updated_at: string;
};

/**
 * `daemon.gc`: the sessions deleted (or, on a dry run, that would be).
 */
export type GcResponse = {
  /**
   * Least recently updated first.
   */
  deleted: Array<GcDeleted>;
  dry_run: boolean;
  /**
   * The stored JSON of the records of the sessions kept, in bytes.
   */
  kept_bytes: number;
};

/**
 * A hook context the compiled request carries (`metadata.hook_contexts`).
 */
export type HookContextRef = {
  hook_event_name: string;
  /**
   * `hook_additional_context` or `hook_blocking_error`.
   */
  type: string;
  /**
   * The attachment record.
   */
  uuid: string;
};

/**
 * A hook event, named exactly as in Claude Code's settings files.
 */
export type HookEvent = ("SessionStart" | "UserPromptSubmit" | "PreToolUse" | "PostToolUse" | "PreCompact" | "PostCompact" | "InstructionsLoaded" | "CwdChanged" | "FileChanged" | "Stop" | "StopFailure" | "SubagentStart" | "SubagentStop" | "Notification") | "SessionEnd" | "PermissionRequest";

/**
 * The merged result of every hook an event ran (they run in parallel; results are
 * merged in configuration order, so the answer does not depend on timing).
 */
export type HookOutcome = {
  /**
   * Context the hooks added for the model (already appended to the transcript as a
   * `hook_additional_context` record where the event allows it; see `appended`).
   */
  additional_context?: Array<string>;
  /**
   * Records ctxd appended to the transcript for this event (hook context, blocking
   * feedback for the model).
   */
  appended?: Array<AppendedRecord>;
  /**
   * `false` when a hook asked the agent to stop (`"continue": false`).
   */
  continue?: boolean;
  /**
   * `PreToolUse`: `allow`, `deny` or `ask` (deny beats ask beats allow); other events:
   * `block` when a hook blocked (exit code 2, or `decision: "block"`). Absent: no
   * hook decided anything, carry on as usual.
   */
  decision?: string | null;
  /**
   * Non-blocking errors for the user, in configuration order.
   */
  errors?: Array<string>;
  /**
   * The transcript's last uuid when records were appended.
   */
  last_uuid?: string | null;
  /**
   * Hook commands that ran.
   */
  ran: number;
  /**
   * Why (the hooks' reasons or exit-2 stderr, in configuration order). For a
   * `PreToolUse` deny this is what the model should be told.
   */
  reason?: string | null;
  /**
   * Each hook that ran, in configuration order.
   */
  results?: Array<HookRunReport>;
  /**
   * Shown to the user when `continue` is false.
   */
  stop_reason?: string | null;
  /**
   * A hook asked that its output be hidden from the user's transcript view.
   */
  suppress_output?: boolean;
  /**
   * Messages for the user (`systemMessage`), in configuration order.
   */
  system_messages?: Array<string>;
  /**
   * `PreToolUse`: the tool input to run instead of the model's.
   */
  updated_input?: unknown;
};

/**
 * What one hook command did.
 */
export type HookRunReport = {
  command: string;
  /**
   * `allow`, `deny`, `ask`, `block` or `approve`, when the hook decided something.
   */
  decision?: string | null;
  duration_ms: number;
  /**
   * A non-blocking error to show the user (exit code other than 0 and 2, a timeout,
   * output that is not valid hook JSON).
   */
  error?: string | null;
  /**
   * `null` when the process was killed (timeout) or could not start.
   */
  exit_code?: number | null;
  /**
   * stdout or stderr went over 64 KB and was cut.
   */
  output_cut: boolean;
  source: string;
  timed_out: boolean;
};

/**
 * Per-session hook switches (`settings.hooks`).
 */
export type HookSettings = {
  /**
   * Run no hooks for this session (replays set this).
   */
  disabled?: boolean;
  /**
   * The `transcript_path` hooks receive. Absent → ctxd exports the session as
   * Claude Code JSONL to `HOME/sessions/SID/transcript.jsonl` before a hook runs.
   */
  transcript_path?: string | null;
  /**
   * Trust the session's project directory when the session is created, so its
   * `.claude/settings.json` and `settings.local.json` may run hooks (for scripted
   * use; people run `ctx trust DIR`). A project directory's hooks run only once it
   * is in the trust list (`HOME/trusted-projects`).
   */
  trust_project?: boolean;
};

/**
 * One settings file the daemon looked at for a session.
 */
export type HookSourceFile = {
  error?: string | null;
  file: string;
  /**
   * Hook commands the file configures.
   */
  hooks: number;
  /**
   * `managed`, `user`, `project` or `local`.
   */
  source: string;
  /**
   * `loaded`, `absent`, `invalid` (with `error`) or `untrusted` (with `error`).
   */
  status: string;
};

export type HooksListResponse = {
  /**
   * Set when no hook runs for this session at all, and why.
   */
  all_disabled?: string | null;
  /**
   * Settings files in precedence order (managed, user, project, local).
   */
  files: Array<HookSourceFile>;
  /**
   * Every configured hook, in precedence order.
   */
  hooks: Array<ConfiguredHook>;
};

export type ImportStats = {
  /**
   * Sub-agent threads imported as threads of their own (`agent.list`): the sidechain
   * records of each agent linked to the call that started it.
   */
  agents?: number;
  assistant: number;
  attachment: number;
  /**
   * Lines read, blank lines excluded.
   */
  lines: number;
  records: number;
  /**
   * Tool-result replacements taken from `content-replacement` lines.
   */
  replacements?: number;
  /**
   * UI-only lines skipped, by their `type` (`progress`, `file-history-snapshot`, ...).
   */
  skipped: {
    [key: string]: unknown;
  };
  system: number;
  tool_result: number;
  tool_use: number;
  user: number;
  /**
   * What the import did that the user should know about although it succeeded, e.g.
   * lines skipped because they repeat an earlier line's uuid (with their count and
   * the first such line). `ctx import` prints each on stderr.
   */
  warnings?: Array<string>;
};

export type InitializeResult = {
  capabilities: Capabilities;
  limits: Limits;
  /**
   * The version both sides speak: the client's major, the lower of the two minors.
   */
  protocol_version: string;
  server_info: PeerInfo;
  /**
   * The daemon's own protocol version.
   */
  server_protocol_version: string;
};

/**
 * How instruction files are discovered for a session.
 */
export type InstructionSettings = {
  /**
   * Read `AGENTS.md` beside every `CLAUDE.md` (right after it); default on.
   */
  agents_md?: boolean | null;
  /**
   * Let managed, project and local files `@include` files outside the working
   * directories.
   */
  allow_external_includes?: boolean;
  /**
   * Do not load instruction files at all.
   */
  disabled?: boolean;
  /**
   * `claudeMdExcludes`: globs over absolute paths; never applied to managed files.
   */
  excludes?: Array<string>;
  /**
   * Managed-policy root; the daemon's `--managed-root` (default `/etc/claude-code`)
   * when absent.
   */
  managed_root?: string | null;
};

/**
 * `settings.lean`: the lean policy's rules.
 */
export type LeanSettings = {
  /**
   * Each call's cache markers take the lifetime the cost model prices lower: one hour
   * when the chance of a gap between five minutes and an hour before the next call
   * (from the session's own pace) makes the saved rewrite worth the dearer write,
   * five minutes otherwise. Off: the latched `cache_ttl`. Default on.
   */
  choose_ttl?: boolean;
  /**
   * The most recent results of reproducible tools are never cleared as stale.
   */
  keep_recent?: number;
  /**
   * While the cache is warm, a batch is cleared when the cost model expects it to
   * save more over the session's expected remaining warm calls than its rewrite
   * costs, instead of by `warm_min_ratio_pct`. Default off: on real sessions its
   * clears cost more than they saved (docs/policy.md).
   */
  priced_clears?: boolean;
  /**
   * A reproducible tool's result is stale once this many model responses have
   * followed the last touch of its subject (the file it read, else the call itself)
   * or, with `touch_by_use`, the last response that used one of its items. Default
   * `null`: nothing goes stale (on real sessions every age tried cleared results the
   * model named again; docs/policy.md).
   */
  stale_after_rounds?: number | null;
  /**
   * A later model response that uses one of a result's distinctive items (a line,
   * path, identifier or long number of it, in its text or a tool call's input)
   * touches the result, so it goes stale only `stale_after_rounds` responses after
   * its last use. Default on.
   */
  touch_by_use?: boolean;
  /**
   * While the provider's cache is warm, a batch is cleared only if its tokens are at
   * least this percentage of the tokens after it that the cache must write again
   * (a cold cache clears every candidate).
   */
  warm_min_ratio_pct?: number;
};

/**
 * Bounds the daemon enforces; exceeding one is an error, never a crash.
 */
export type Limits = {
  /**
   * Records one `transcript.append` may carry; more is refused whole (-32602,
   * `data.field = "records"`).
   */
  max_append_records: number;
  /**
   * Calls in one JSON-RPC batch; a longer batch is refused whole (-32042).
   */
  max_batch_calls: number;
  /**
   * Connections served at once; one more is answered with HTTP 503 carrying
   * JSON-RPC error -32040 and closed (retry later).
   */
  max_connections: number;
  /**
   * Sessions held in memory at once; beyond it the least recently used idle one is
   * unloaded and reloaded from the store on its next use (same bytes). Not an error.
   */
  max_loaded_sessions: number;
  /**
   * Records per `transcript.read` page.
   */
  max_read_page: number;
  /**
   * Size of one record as JSON, in bytes; larger is refused (-32602, `data.field =
   * "records[i]"`).
   */
  max_record_bytes: number;
  /**
   * Largest request (HTTP body or WebSocket message) in bytes.
   */
  max_request_bytes: number;
  /**
   * Largest response in bytes.
   */
  max_response_bytes: number;
  /**
   * Subscriptions on one WebSocket connection.
   */
  max_subscriptions_per_connection: number;
};

/**
 * An MCP resource a client registered, as `resources/read` gave it.
 */
export type McpResource = {
  description?: string | null;
  mime_type?: string | null;
  name?: string | null;
  /**
   * Its text; absent when the client did not read it (a mention then says so).
   */
  text?: string | null;
  uri: string;
};

export type McpServerState = {
  /**
   * Its instructions sit in the system section (it was connected before the first
   * compile); otherwise they are announced as deltas.
   */
  in_system: boolean;
  instructions_chars: number;
  name: string;
  tools: Array<string>;
};

/**
 * Where an image's or document's bytes are.
 */
export type MediaSource = {
  data: string;
  media_type: string;
  type: "base64";
  [key: string]: unknown;
} | {
  type: "url";
  url: string;
  [key: string]: unknown;
} | {
  data: string;
  media_type: string;
  type: "text";
  [key: string]: unknown;
} | {
  file_id: string;
  type: "file";
  [key: string]: unknown;
} | {
  type: string;
  [key: string]: unknown;
};

/**
 * Who keeps the session's memory document up to date.
 */
export type MemoryExtractor = "off" | "daemon" | "external";

export type MemoryGetResponse = {
  /**
   * The notes document (the empty template before the first extraction).
   */
  document: string;
  /**
   * An extraction is running now.
   */
  extracting: boolean;
  last_summarized_uuid?: string | null;
  /**
   * Readable copy of the document on disk.
   */
  path: string;
  updated_at?: string | null;
  /**
   * 0 before the first write; pass it as `expected_version` when writing.
   */
  version: number;
  writer?: string | null;
};

export type MemorySelector = "offline" | "model";

export type MemorySettings = {
  /**
   * Try session-memory compact before the full compact (default true).
   */
  compact?: boolean | null;
  extractor?: MemoryExtractor;
};

export type MemoryUpdateResponse = {
  version: number;
};

/**
 * A Messages API message as a client hands it over whole: an SDK `Message` dumped as
 * JSON, with or without `exclude_none`.
 */
export type MessageInput = {
  content?: string | Array<ContentBlock>;
  id?: string | null;
  model?: string | null;
  /**
   * `user` or `assistant`; must agree with the record's `type`.
   */
  role?: string | null;
  stop_reason?: string | null;
  /**
   * `message` when given.
   */
  type?: string | null;
  usage?: Usage | null;
  [key: string]: unknown;
};

/**
 * `daemon.metrics`: the metrics as a Prometheus scrape would read them.
 */
export type MetricsResponse = {
  /**
   * Prometheus text exposition format 0.0.4 (`# HELP`, `# TYPE`, then one sample a
   * line), the metrics named `ctxd_*`.
   */
  text: string;
};

/**
 * What microcompact did in this compile.
 */
export type MicrocompactReport = {
  /**
   * Results newly deleted by a cache edit in this compile.
   */
  cache_edits_added: Array<string>;
  /**
   * Pinned cache edits re-sent in this request.
   */
  cache_edits_pinned: number;
  /**
   * Results the lean policy cleared in this compile, oldest first.
   */
  policy_cleared?: Array<PolicyClear>;
  /**
   * Results cleared by the time-based path in this compile.
   */
  time_based_cleared: Array<string>;
};

/**
 * Microcompact switches. Both paths are off by default, as in Claude Code.
 */
export type MicrocompactSettings = {
  /**
   * Cached (cache warm): delete old results server-side with `cache_edits`. Only for
   * providers that accept cache edits.
   */
  cached?: boolean;
  /**
   * Cached path keeps this many most recent compactable results.
   */
  cached_keep_recent?: number;
  /**
   * Cached path fires when more than this many compactable results are live.
   */
  cached_trigger?: number;
  /**
   * Pause since the last assistant response that counts as a cold cache.
   */
  gap_minutes?: number;
  /**
   * Most recent compactable results kept (at least 1).
   */
  keep_recent?: number;
  /**
   * Time-based (cache cold): clear old results after a pause.
   */
  time_based?: boolean;
};

/**
 * What the session's model can hold and produce. A field left out is taken from the
 * model catalogue ([`crate::models`]) for a listed model; a model the catalogue does not
 * list needs at least `context_window`.
 */
export type ModelProfile = {
  /**
   * The catalogue's window for a listed model; required otherwise.
   */
  context_window?: number | null;
  /**
   * What Claude Code asks for on a listed model (128,000 on `claude-opus-5-5`), else
   * the model's limit up to 32,000; 32,000 for a model not listed.
   */
  max_output_tokens?: number | null;
  /**
   * `claude-sonnet-4-5` when absent.
   */
  model?: string | null;
  supports_thinking?: boolean | null;
};

/**
 * Gaps between a session's consecutive model calls, by length.
 */
export type Pace = {
  calls: number;
  over_1h: number;
  /**
   * Over five minutes, at most an hour: a five-minute entry is gone, an hour's is not.
   */
  within_1h: number;
  /**
   * At most five minutes (a tool loop, or a quick reply).
   */
  within_5m: number;
};

export type ParseClaudeCodeResponse = {
  cwd?: string | null;
  first_timestamp?: string | null;
  records: Array<RecordInput>;
  replacements: Array<ToolResultReplacement>;
  /**
   * The 1-based source line of each record.
   */
  source_lines: Array<number>;
  stats: ImportStats;
};

/**
 * Name and version of the program on one end of the connection.
 */
export type PeerInfo = {
  name: string;
  version: string;
};

export type PingResponse = {
  pong: boolean;
};

export type PlanModeResponse = {
  /**
   * Whether that file exists now.
   */
  plan_exists: boolean;
  /**
   * The plan file path the model is told.
   */
  plan_file: string;
  plan_mode: boolean;
};

/**
 * One result the lean policy cleared, and why.
 */
export type PolicyClear = {
  /**
   * `superseded` (a later call produced it again) or `stale` (its subject, and with
   * `settings.lean.touch_by_use` its items, untouched for
   * `settings.lean.stale_after_rounds` responses).
   */
  rule: string;
  tool_use_id: string;
};

/**
 * Prices of one model, dollars per million tokens.
 */
export type Prices = {
  cache_read: number;
  /**
   * Writing the cache with the one-hour TTL.
   */
  cache_write_1h: number;
  /**
   * Writing the cache with the default five-minute TTL.
   */
  cache_write_5m: number;
  input: number;
  output: number;
};

/**
 * The model provider `context.send` calls for a session. The key is read from the
 * named environment variable of the daemon at each call: never stored, logged or
 * shown in an event.
 */
export type ProviderConfig = ({
  /**
   * Name of the environment variable (of the daemon) holding the API key.
   */
  api_key_env: string;
  /**
   * Default `https://api.anthropic.com`.
   */
  base_url?: string | null;
  /**
   * More HTTP headers to send (not the key; `anthropic-beta` values are added to
   * those the compile needs).
   */
  headers?: {
    [key: string]: unknown;
  };
  kind: "anthropic";
  /**
   * Retries on 408, 429, 5xx and 529, and on an `overloaded_error` event before
   * any content (default 2); `retry-after` is honoured.
   */
  max_retries?: number | null;
  /**
   * One attempt's bound, from the first byte sent to the last received (default
   * 600); a retry gets its own.
   */
  timeout_secs?: number | null;
}) | ({
  /**
   * Name of the environment variable holding the key, sent as `Authorization:
   * Bearer`. Absent: no key is sent (local servers need none).
   */
  api_key_env?: string | null;
  /**
   * The API root, with its version path: `http://127.0.0.1:8080/v1`,
   * `https://api.openai.com/v1`.
   */
  base_url: string;
  /**
   * More HTTP headers to send (not the key).
   */
  headers?: {
    [key: string]: unknown;
  };
  kind: "openai_compatible";
  /**
   * Retries on 408, 429 and 5xx (default 2); `retry-after` is honoured.
   */
  max_retries?: number | null;
  /**
   * One attempt's bound (default 600); a retry gets its own.
   */
  timeout_secs?: number | null;
});

/**
 * `settings.provider_context_management`.
 */
export type ProviderContextManagement = {
  /**
   * The edits, each an object with its `type` and that edit's options, sent as given.
   */
  edits: Array<{
    [key: string]: unknown;
  }>;
};

/**
 * `settings.proxy.mode`.
 */
export type ProxyMode = "observe" | "manage";

/**
 * `settings.proxy`.
 */
export type ProxySettings = {
  /**
   * The conversation whose traffic made the session: `header:NAME` (the
   * `x-ctxd-session` header), `claude-code:ID` (Claude Code's session id) or
   * `content:SHA256` (its first message). The front door finds the session by it again
   * after a restart. Absent on a session ctxd did not make from traffic.
   */
  conversation?: string | null;
  /**
   * How the front door serves requests that go to this session when they carry no
   * `x-ctxd-mode` header: `observe` (the default) or `manage`.
   */
  mode?: ProxyMode;
};

/**
 * The HTTP front door's state. Its base URLs carry the home's secret: they are for the
 * user's own shell (`ctx proxy env`), which is why only the socket's owner may ask.
 */
export type ProxyStatusResponse = {
  /**
   * `ANTHROPIC_BASE_URL` for a client: `http://127.0.0.1:PORT/SECRET`.
   */
  anthropic_base_url?: string | null;
  /**
   * Answer bytes passed back to clients.
   */
  bytes_down: number;
  /**
   * Request body bytes sent upstream.
   */
  bytes_up: number;
  /**
   * The address it listens on (`127.0.0.1:PORT`).
   */
  listen?: string | null;
  /**
   * Whether `ctxd --http` started the front door; the other fields are absent when not.
   */
  listening: boolean;
  /**
   * `OPENAI_BASE_URL` for a client: the same with `/v1`.
   */
  openai_base_url?: string | null;
  /**
   * Requests forwarded since the daemon started.
   */
  requests: number;
  /**
   * Sessions the front door's traffic made since the daemon started (forks included).
   */
  sessions_seen: number;
};

export type QueueResponse = {
  /**
   * Entries now waiting for the same agent, this one included.
   */
  pending: number;
  queue_id: string;
};

export type QueuedEntry = {
  /**
   * Absent for the main thread.
   */
  agent_id?: string | null;
  content: Array<ContentBlock>;
  queue_id: string;
  queued_at: string;
};

export type QueuedResponse = {
  /**
   * Oldest first.
   */
  entries: Array<QueuedEntry>;
};

export type ReadResponse = {
  /**
   * Pass as `after_seq` to get the next page; absent when this page reached the end.
   */
  next_after_seq?: number | null;
  records: Array<Record>;
};

/**
 * A stored record: the input with every daemon-filled field resolved.
 */
export type Record = {
  attachment?: unknown;
  content?: Array<ContentBlock>;
  data?: unknown;
  /**
   * `usage` measured a request ctxd did not compile: never the estimate's anchor.
   */
  foreign_usage?: boolean;
  is_compact_summary?: boolean;
  is_meta?: boolean;
  is_sidechain?: boolean;
  is_virtual?: boolean;
  /**
   * The provider message's other top-level fields (`stop_sequence`, `container`,
   * `context_management`, ...), as it sent them.
   */
  message_extra?: {
    [key: string]: unknown;
  } | null;
  message_id?: string | null;
  meta?: unknown;
  model?: string | null;
  parent_uuid?: string | null;
  /**
   * Position in the session's transcript, starting at 1, gap-free.
   */
  seq: number;
  stop_reason?: string | null;
  subtype?: string | null;
  timestamp: string;
  type: RecordKind;
  usage?: Usage | null;
  uuid: string;
};

/**
 * A record as a client appends it. Optional fields are filled by the daemon.
 */
export type RecordInput = {
  /**
   * Attachment records: a structured runtime patch with a string `type` field.
   */
  attachment?: unknown;
  /**
   * Content blocks of user and assistant records. A plain string is accepted as one
   * text block.
   */
  content?: string | Array<ContentBlock>;
  /**
   * System records: structured payload (e.g. `{"trigger":"auto","pre_tokens":167000}`).
   */
  data?: unknown;
  /**
   * `usage` measured a request ctxd did not compile (another agent's transcript, as an
   * import brings in): kept and shown, but never the anchor of ctxd's estimate.
   */
  foreign_usage?: boolean;
  /**
   * A user record holding the summary written by a compaction.
   */
  is_compact_summary?: boolean;
  /**
   * Injected context rather than something the user typed.
   */
  is_meta?: boolean;
  /**
   * Belongs to a sub-agent's thread, not the main thread: never sent.
   */
  is_sidechain?: boolean;
  /**
   * UI-only: stored, never sent to the model.
   */
  is_virtual?: boolean;
  /**
   * The message as the provider returned it and the official SDK dumps it
   * (`message.model_dump(mode="json")`, as Claude Code's transcript lines carry it):
   * its `content`, `id`, `model`, `stop_reason` and `usage` become the record's, its
   * other fields are kept in `message_extra`. Give either this or the record's own
   * message fields, not both.
   */
  message?: MessageInput | null;
  /**
   * Set from `message`; a client may also give it directly.
   */
  message_extra?: {
    [key: string]: unknown;
  } | null;
  /**
   * The provider's message id; records of one response share it.
   */
  message_id?: string | null;
  /**
   * Opaque client metadata (e.g. a tool's structured output). Stored, never sent.
   */
  meta?: unknown;
  model?: string | null;
  parent_uuid?: string | null;
  stop_reason?: string | null;
  /**
   * System records: `compact_boundary`, `snip_boundary`, `informational`, ...
   */
  subtype?: string | null;
  /**
   * RFC 3339. Replays pass the original time; the daemon's clock is used when absent.
   */
  timestamp?: string | null;
  type?: RecordKind | null;
  /**
   * Provider usage; assistant records only.
   */
  usage?: Usage | null;
  /**
   * Client-chosen id (a replay keeps the original); generated (UUIDv7) when absent.
   */
  uuid?: string | null;
};

/**
 * What a record is. Only `user` and `assistant` records become API messages directly;
 * `attachment` records are rendered as `<system-reminder>` user content, `system` records
 * (compact boundary, snip boundary, informational) steer the projection and are never sent.
 */
export type RecordKind = "user" | "assistant" | "system" | "attachment";

export type RejectMediaResponse = {
  rejected: boolean;
};

/**
 * Where relevant memories come from and how they are chosen.
 */
export type RelevantMemorySettings = {
  /**
   * Read Claude Code's auto-memory directory of the project
   * (`~/.claude/projects/<project-slug>/memory/`); default on.
   */
  auto_memory?: boolean | null;
  /**
   * Further memory directories (absolute, or relative to the session's cwd).
   */
  directories?: Array<string>;
  /**
   * Default on.
   */
  enabled?: boolean | null;
  /**
   * Who picks the files: the offline scorer (default) or the session's model
   * provider (its summariser) as a side query.
   */
  selector?: MemorySelector;
};

export type Replacement = {
  /**
   * The transcript's last sequence number when the fate was decided.
   */
  decided_seq: number;
  /**
   * The exact string shown instead of the result; absent when it was kept whole.
   */
  replacement?: string | null;
  /**
   * `budget` (tool-result budget) or `microcompact` (time-based clearing).
   */
  stage: string;
  tool_use_id: string;
};

export type ReplacementsResponse = {
  replacements: Array<Replacement>;
};

/**
 * Request-level flags a client asks for. They change the provider's cache key, so ctxd
 * latches them per session once first sent: later compiles keep sending what was
 * latched until a compaction starts a new history.
 */
export type RequestFlags = {
  /**
   * Beta features, sent as the `anthropic-beta` header. Sticky: a beta once sent stays
   * until the latch resets; a new one is added (and breaks the cache once).
   */
  betas?: Array<string>;
  /**
   * `org` (the default: the public API's organisation-wide cache) or `global`
   * (Claude Code's extension, not in the public API: the static system prefix is
   * cached with `scope: "global"` when no MCP tools are present, and the compile's
   * headers carry the beta it needs). `auto` is accepted as the old name of `global`.
   */
  cache_scope?: string | null;
  /**
   * Prompt-cache TTL of every cache marker: `5m` (the provider's default) or `1h`.
   */
  cache_ttl?: string | null;
  /**
   * Extra top-level request parameters (e.g. `thinking`, `temperature`,
   * `output_config`). The request's own fields (`model`, `max_tokens`, `system`,
   * `tools`, `messages`) cannot be set here.
   */
  extra?: {
    [key: string]: unknown;
  };
};

/**
 * How a dynamic system section is cached.
 */
export type SectionCaching = "memoized" | "uncached";

/**
 * Where one system section landed.
 */
export type SectionLayout = {
  /**
   * Index of the `system` block that carries it (`null` for the boundary itself).
   */
  block?: number | null;
  chars: number;
  /**
   * `static`, `boundary`, `memoized`, `uncached` or `system_context`.
   */
  class: string;
  name: string;
};

/**
 * A section text ctxd computes itself.
 */
export type SectionSource = "current_time";

/**
 * What a turn sent and got back.
 */
export type SendResponse = {
  /**
   * The message as the provider streamed it (every block and field), as appended.
   */
  message: unknown;
  /**
   * The provider said the request was too long, ctxd made room and sent it again.
   */
  recovery?: TurnRecovery | null;
  /**
   * The compile's request hash: the bytes that were sent, less `stream` (after a
   * recovery, those of the retried request).
   */
  request_sha256: string;
  /**
   * Attempts beyond the first (429, 529, 5xx, overloaded).
   */
  retries: number;
  seq: number;
  stop_reason?: string | null;
  usage?: Usage | null;
  /**
   * The appended record.
   */
  uuid: string;
};

/**
 * When the provider's compaction runs (`SummariserConfig::Server`).
 */
export type ServerCompactionMode = "threshold" | "on_demand";

export type SessionCreateResponse = {
  session: SessionInfo;
};

export type SessionDeleteResponse = {
  deleted: boolean;
};

export type SessionForkResponse = {
  session: SessionInfo;
};

export type SessionGetResponse = {
  session: SessionInfo;
};

export type SessionImportResponse = {
  session: SessionInfo;
  session_id: string;
  stats: ImportStats;
};

/**
 * A session as the daemon reports it.
 */
export type SessionInfo = {
  additional_directories: Array<string>;
  /**
   * Set when the session is a sub-agent's thread (see `agent.start`).
   */
  agent?: AgentInfo | null;
  created_at: string;
  cwd: string;
  forked_from_uuid?: string | null;
  last_uuid?: string | null;
  model: ModelProfile;
  original_cwd: string;
  parent_session_id?: string | null;
  /**
   * Number of records in the transcript.
   */
  record_count: number;
  session_id: string;
  settings: SessionSettings;
  /**
   * The local date at session start (`YYYY-MM-DD`): `currentDate` in `messages[0]`.
   */
  start_date: string;
  title?: string | null;
  updated_at: string;
};

export type SessionListResponse = {
  sessions: Array<SessionInfo>;
};

/**
 * One `session.event` notification: an event, stamped with where the session's
 * transcript stood when it was delivered.
 */
export type SessionNotification = {
  /**
   * Caused by a call made on this same connection (its own compile, append, ...).
   */
  own?: boolean;
  /**
   * The session's sequence number: the last transcript `seq` delivered on this
   * subscription. Resume with `after_seq` set to it.
   */
  seq: number;
} & (({
  /**
   * The records themselves, when the subscription asked for `include_records`.
   */
  full_records?: Array<Record> | null;
  kind: "records_appended";
  records: Array<AppendedRecord>;
  session_id: string;
}) | {
  kind: "session_updated";
  session_id: string;
} | {
  kind: "session_deleted";
  session_id: string;
} | {
  ended?: boolean;
  kind: "lagged";
  last_seq: number;
  missed: number;
  session_id: string;
} | {
  /**
   * Attachment records in the model's view.
   */
  attachments: number;
  effective_window: number;
  estimated_tokens: number;
  kind: "compiled";
  message_count: number;
  percent_left: number;
  request_sha256: string;
  session_id: string;
} | {
  kind: "instructions_loaded";
  paths: Array<string>;
  reason: string;
  session_id: string;
} | {
  change: string;
  kind: "file_changed";
  path: string;
  session_id: string;
} | {
  boundary_uuid: string;
  kind: "compacted";
  post_tokens: number;
  pre_tokens: number;
  session_id: string;
  trigger: string;
} | {
  kind: "summary_requested";
  request: unknown;
  request_id: string;
  session_id: string;
  timeout_secs: number;
} | {
  kind: "memory_updated";
  session_id: string;
  version: number;
  writer: string;
} | ({
  context_tokens: number;
  kind: "extraction_due";
  session_id: string;
  since_uuid?: string | null;
  version: number;
}) | {
  collapse_id: string;
  kind: "collapse_changed";
  session_id: string;
  status: string;
} | ({
  kind: "warning";
  message: string;
  path?: string | null;
  session_id: string;
  source: string;
}) | {
  kind: "capabilities_changed";
  session_id: string;
  what: string;
} | {
  estimated_tokens: number;
  kind: "warning_state_changed";
  level: string;
  percent_left: number;
  session_id: string;
} | {
  command: string;
  hook_event_name: string;
  kind: "hook_started";
  session_id: string;
  /**
   * `managed`, `user`, `project` or `local`.
   */
  source: string;
} | ({
  command: string;
  /**
   * `allow`, `deny`, `ask`, `block` or `approve`, when the hook decided something.
   */
  decision?: string | null;
  duration_ms: number;
  /**
   * A non-blocking error for the user.
   */
  error?: string | null;
  /**
   * `null` when the process was killed (timeout) or could not start.
   */
  exit_code?: number | null;
  hook_event_name: string;
  kind: "hook_finished";
  /**
   * stdout or stderr went over 64 KB and was cut.
   */
  output_cut: boolean;
  session_id: string;
  source: string;
  timed_out: boolean;
}) | ({
  error?: string | null;
  file: string;
  hooks: number;
  kind: "hooks_config_changed";
  session_id: string;
  source: string;
  /**
   * `loaded`, `absent`, `invalid` or `untrusted`.
   */
  status: string;
}) | {
  kind: "turn_started";
  request_sha256: string;
  session_id: string;
} | ({
  error?: string | null;
  kind: "turn_finished";
  ok: boolean;
  /**
   * A recovery from a too-long request ran (`collapse` or `compaction`).
   */
  recovered_by?: string | null;
  retries: number;
  session_id: string;
  stop_reason?: string | null;
  uuid?: string | null;
}) | {
  break: CacheBreak;
  kind: "cache_break";
  record_seq: number;
  session_id: string;
  /**
   * The assistant record carrying the call's usage, and its sequence number.
   */
  uuid: string;
});

/**
 * Feature switches and knobs of one session. Unknown keys are rejected.
 */
export type SessionSettings = {
  /**
   * The attachments ctxd collects itself.
   */
  attachments?: AttachmentSettings;
  /**
   * Compact automatically when the estimate reaches the autocompact threshold.
   * Default on.
   */
  autocompact?: boolean | null;
  /**
   * Lowers (never raises) the autocompact threshold to this percentage of the
   * effective window.
   */
  autocompact_pct_override?: number | null;
  /**
   * Raises the blocking limit's margin: compiles fail (prompt too long) at
   * `effective window - this` instead of `effective window - 3000`.
   */
  blocking_limit_margin?: number | null;
  /**
   * Ask the provider why the cache missed: each compile after a model response sends
   * `diagnostics: {previous_message_id}` naming that response (a field of the public
   * Messages API), with the beta header `cache-diagnosis-2026-04-07` for servers that
   * still want it. Off by default.
   */
  cache_diagnostics?: boolean;
  /**
   * Context collapse (off unless enabled).
   */
  collapse?: CollapseConfig;
  /**
   * Hooks from Claude Code's settings files.
   */
  hooks?: HookSettings;
  /**
   * Instruction files (the CLAUDE.md chain).
   */
  instructions?: InstructionSettings;
  /**
   * Response language, rendered as a dynamic system section.
   */
  language?: string | null;
  /**
   * The lean policy's parameters (read only when `policy` is `lean`).
   */
  lean?: LeanSettings;
  /**
   * Session memory: background notes, and session-memory compact.
   */
  memory?: MemorySettings;
  /**
   * Microcompact: clearing old tool results.
   */
  microcompact?: MicrocompactSettings;
  /**
   * Name of an output style: the project's `.claude/output-styles/*.md` (once the
   * project is trusted, and never a file linking out of it), else the
   * user's (`~/.claude/output-styles`), else a built-in one (`explanatory`,
   * `learning`; `default` is none). Its prompt becomes a memoized system section; a
   * style without `keep-coding-instructions` replaces the default coding
   * instructions. A name found nowhere is named to the model alone.
   */
  output_style?: string | null;
  /**
   * The plan file named to the model in plan mode (absolute, or relative to the cwd);
   * `HOME/sessions/SID/plan.md` when absent.
   */
  plan_file?: string | null;
  /**
   * Plan mode: the model plans and changes nothing (see `session.set_plan_mode`).
   */
  plan_mode?: boolean;
  /**
   * The platform the environment section names (`linux`, `macos`, ...); the daemon's
   * own when absent.
   */
  platform?: string | null;
  /**
   * How eagerly tool results the model no longer needs are cleared: `claude_code`
   * (the default) clears them only as Claude Code does; `lean` also clears results a
   * later call superseded and stale ones, where the cache is rewritten cheaply.
   */
  policy?: ContextPolicy;
  /**
   * The model provider `context.send` calls (none: `context.send` is refused and
   * the client sends the compiled request itself).
   */
  provider?: ProviderConfig | null;
  /**
   * The provider's context editing: the Messages API's `context_management`
   * (`{edits: [...]}`: `clear_tool_uses_20250919`, `clear_thinking_20251015`, with
   * their documented options), sent as given with the beta header
   * `context-management-2025-06-27`, latched per history like the request flags.
   * While a `clear_tool_uses_20250919` edit is set, the provider owns the clearing of
   * tool results: ctxd's microcompact clears nothing.
   */
  provider_context_management?: ProviderContextManagement | null;
  /**
   * The HTTP front door's part (`ctxd --http`): set on every session it made from
   * traffic, so a client tells a proxied session from others; settable on any session
   * to serve its traffic in manage mode.
   */
  proxy?: ProxySettings | null;
  /**
   * Append `[id:xxxxxx]` short ids to user messages so ranges can be snipped.
   */
  snip_enabled?: boolean;
  /**
   * Who writes compaction summaries; the daemon's default (embedded) when absent.
   */
  summariser?: SummariserConfig | null;
  /**
   * Per-tool persistence thresholds in characters, by tool name, that replace the
   * declared `min(max_result_size_chars, 50000)` (like Claude Code's per-tool flag
   * override). Not clamped.
   */
  tool_result_size_overrides?: {
    [key: string]: unknown;
  };
};

export type ShutdownResponse = {
  stopping: boolean;
};

/**
 * Where one skill stands in a session.
 */
export type SkillInfo = {
  allowed_tools?: Array<string>;
  base: string;
  description: string;
  invoked: boolean;
  model?: string | null;
  /**
   * The name the `Skill` tool takes (the skill's directory, or the command file's
   * path below `commands/` joined with `:`).
   */
  name: string;
  path: string;
  /**
   * `paths:` patterns (gitignore-style, relative to `base`); empty → unconditional.
   */
  paths?: Array<string>;
  /**
   * `user`, `project`, `user_command` or `project_command`.
   */
  source: string;
  /**
   * `listed` (announced to the model), `pending` (announced at the next compile),
   * `dormant` (conditional, no matching path touched yet) or `omitted` (announced by
   * name count only: the listing's budget was spent).
   */
  state: string;
  when_to_use?: string | null;
};

export type SkillsResponse = {
  /**
   * Characters the listing may take (about 1% of the context window).
   */
  listing_budget_chars: number;
  /**
   * Announced earlier but gone from disk (announced as removed at the next compile).
   */
  removed?: Array<string>;
  skills: Array<SkillInfo>;
  skipped?: Array<SkippedSkill>;
};

/**
 * A skill file that could not be used.
 */
export type SkippedSkill = {
  path: string;
  reason: string;
};

export type SnipResponse = {
  /**
   * The `snip_boundary` system record that holds the removal.
   */
  boundary_uuid: string;
  /**
   * uuids removed from the projection (the transcript keeps them).
   */
  removed: Array<string>;
  tokens_freed: number;
  /**
   * Records added to the named range so no tool_use/tool_result pair is split.
   */
  widened_by: number;
};

/**
 * One attachment source's run in a compile (`metadata.attachment_sources`), in the
 * fixed order of attachment kinds.
 */
export type SourceReport = {
  /**
   * Attachments it added.
   */
  attachments: number;
  /**
   * Wall time of the source, in microseconds (the bound, when skipped).
   */
  micros: number;
  /**
   * `queued_commands`, `date_change`, `changed_files`, `nested_memory`, `plan_mode`,
   * `task_reminder` or `relevant_memories`.
   */
  name: string;
  reason?: string | null;
  status: SourceStatus;
};

/**
 * How one attachment source fared in a compile.
 */
export type SourceStatus = "ok" | "skipped" | "failed";

/**
 * The Messages API's stream events, as `TurnEvent::Event` carries them (documentation
 * of the grammar; the daemon forwards each event's JSON as the provider sent it).
 */
export type StreamEvent = {
  message: unknown;
  type: "message_start";
} | {
  content_block: unknown;
  index: number;
  type: "content_block_start";
} | {
  delta: BlockDelta;
  index: number;
  type: "content_block_delta";
} | {
  index: number;
  type: "content_block_stop";
} | {
  delta: unknown;
  type: "message_delta";
  usage?: unknown;
} | {
  type: "message_stop";
} | {
  type: "ping";
} | {
  error: unknown;
  type: "error";
};

export type SubscriptionCapabilities = {
  /**
   * Events buffered per session before a slow subscriber gets `lagged`.
   */
  buffer_events: number;
  include_records: boolean;
  resumable: boolean;
};

/**
 * A subscription's id: a number or a string, echoed back exactly.
 */
export type SubscriptionId = number | string;

/**
 * A summariser back end.
 */
export type SummariserConfig = {
  kind: "embedded";
} | ({
  /**
   * Name of the environment variable (of the daemon) holding the API key.
   */
  api_key_env: string;
  /**
   * Default `https://api.anthropic.com`.
   */
  base_url?: string | null;
  kind: "anthropic";
  max_output_tokens?: number | null;
  max_retries?: number | null;
  model: string;
  timeout_secs?: number | null;
}) | ({
  api_key_env?: string | null;
  /**
   * e.g. `http://127.0.0.1:8080/v1`.
   */
  base_url: string;
  kind: "openai";
  max_output_tokens?: number | null;
  max_retries?: number | null;
  model: string;
  timeout_secs?: number | null;
}) | ({
  kind: "provider";
  max_output_tokens?: number | null;
  model?: string | null;
}) | ({
  /**
   * Replace the provider's summarisation prompt.
   */
  instructions?: string | null;
  kind: "server";
  mode?: ServerCompactionMode;
  /**
   * `threshold`: the response stops after the compaction block.
   */
  pause_after_compaction?: boolean;
  /**
   * `threshold`: input tokens past which the provider compacts (the API's
   * default, 150,000, when absent).
   */
  trigger_tokens?: number | null;
}) | ({
  kind: "client";
  timeout_secs?: number | null;
});

/**
 * The client's system prompt: static sections before the dynamic boundary, dynamic
 * sections after it. Absent → ctxd's default agent contract.
 */
export type SystemPrompt = {
  dynamic?: Array<SystemSection>;
  static?: Array<SystemSection>;
};

/**
 * One section of the system prompt.
 */
export type SystemSection = {
  /**
   * Dynamic sections only; static sections are always part of the cached prefix.
   */
  caching?: SectionCaching | null;
  name: string;
  /**
   * Required for `uncached` sections: why this section may break the cache.
   */
  reason?: string | null;
  /**
   * Computed by ctxd instead of given as `text`: `current_time` (the compile's instant
   * in the daemon's time zone). Recomputed every compile when `uncached`, once when
   * memoized.
   */
  source?: SectionSource | null;
  /**
   * The section's text (ignored when `source` computes it).
   */
  text?: string;
};

export type TakeQueuedResponse = {
  /**
   * The appended records, oldest first, each with the text the model should read.
   */
  records: Array<Record>;
  /**
   * Model-facing text of each record (wrap it in `<system-reminder>`).
   */
  texts: Array<string>;
};

export type TokenEstimate = {
  /**
   * Tokens proven by the anchor's usage.
   */
  anchor_tokens: number;
  /**
   * uuid of the assistant record whose usage anchors the estimate.
   */
  anchor_uuid?: string | null;
  /**
   * Estimated tokens of what follows the anchor (safety factor applied).
   */
  estimated_tail_tokens: number;
  /**
   * Estimated input tokens of the request's messages (anchored on the last usage).
   */
  estimated_tokens: number;
};

/**
 * A block inside a tool result. Other fields and other types are kept as with
 * [`ContentBlock`].
 */
export type ToolResultBlock = {
  text: string;
  type: "text";
  [key: string]: unknown;
} | {
  source: MediaSource;
  type: "image";
  [key: string]: unknown;
} | ({
  source: MediaSource;
  title?: string | null;
  type: "document";
  [key: string]: unknown;
}) | {
  tool_name: string;
  type: "tool_reference";
  [key: string]: unknown;
} | {
  type: string;
  [key: string]: unknown;
};

/**
 * A tool result's content: a plain string or a list of text/image/document blocks.
 */
export type ToolResultContent = string | Array<ToolResultBlock>;

export type ToolResultReplacement = {
  replacement: string;
  tool_use_id: string;
};

/**
 * A tool schema registered by the client.
 */
export type ToolSpec = {
  /**
   * Deferred tools are found through tool search instead of being sent in full.
   */
  defer_loading?: boolean;
  description?: string | null;
  /**
   * JSON Schema of the input. Absent for server-side tools, which carry `type`.
   */
  input_schema?: unknown;
  /**
   * Results longer than `min(this, 50000)` characters are persisted; absent → never.
   */
  max_result_size_chars?: number | null;
  /**
   * MCP server that provides the tool (MCP tools turn the system cache scope to org).
   */
  mcp_server?: string | null;
  name: string;
  /**
   * Server-side tool type (e.g. `web_search_20250305`); sent after the regular tools.
   */
  type?: string | null;
  [key: string]: unknown;
};

/**
 * One tool as the next compile sends it.
 */
export type ToolState = {
  mcp_server?: string | null;
  name: string;
  /**
   * `sent` (full schema), `deferred` (findable by tool search, not sent),
   * `discovered` (deferred, found, sent in full) or `server` (server-side tool).
   */
  state: string;
};

export type ToolsListResponse = {
  tools: Array<ToolSpec>;
};

export type ToolsSetResponse = {
  count: number;
};

/**
 * One `context.send_event` notification of a `context.send_stream` turn. The events
 * come in this order: `started`, the provider's `event`s, then `finished` or `failed`
 * (the last one; the subscription ends after it). `retrying` and `recovering` mean the
 * events so far are void: the next attempt streams again from `message_start`.
 */
export type TurnEvent = {
  kind: "started";
  request_sha256: string;
  session_id: string;
} | {
  event: StreamEvent;
  kind: "event";
} | ({
  attempt: number;
  delay_ms: number;
  kind: "retrying";
  message: string;
  status?: number | null;
}) | ({
  kind: "recovering";
  message: string;
  token_gap?: number | null;
}) | {
  kind: "finished";
  response: SendResponse;
} | {
  code: number;
  data?: unknown;
  kind: "failed";
  message: string;
};

/**
 * How a turn recovered from a request the provider found too long.
 */
export type TurnRecovery = {
  /**
   * `collapse` (the staged collapses were committed) or `compaction` (a reactive
   * compaction ran).
   */
  by: string;
  /**
   * The provider's refusal, as it said it.
   */
  error: string;
  /**
   * The refused request's hash.
   */
  refused_request_sha256: string;
  /**
   * How many tokens over the limit the request was, when the provider said.
   */
  token_gap?: number | null;
};

/**
 * An uncached system section in a compile (`metadata.uncached_sections`): it is
 * recomputed every compile, and a change breaks the prompt cache from there on.
 */
export type UncachedSectionReport = {
  /**
   * Its text differs from the previous compile's.
   */
  changed: boolean;
  name: string;
  /**
   * Why the section may break the cache (required when it is registered).
   */
  reason: string;
};

/**
 * Provider-reported token usage of one model response, as the Messages API reports it.
 * The four counts are read by the estimator and the cache report (a `null` count is
 * stored as 0); every other field (`cache_creation`, `server_tool_use`, `service_tier`,
 * `iterations`, and what the API adds later) is kept as it came.
 */
export type Usage = {
  /**
   * The cache writes split by TTL. Absent when the provider did not split them.
   */
  cache_creation?: CacheCreation | null;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
  input_tokens?: number;
  /**
   * Server-side compaction: the usage of each sampling iteration of the response.
   */
  iterations?: unknown;
  output_tokens?: number;
  /**
   * Server tool calls billed with this response (`web_search_requests`, ...).
   */
  server_tool_use?: unknown;
  service_tier?: unknown;
  [key: string]: unknown;
};

/**
 * One category of the window.
 */
export type UsageCategory = {
  /**
   * `system`, `tools`, `instruction_files`, `messages`, `attachments`,
   * `tool_results`, `free_space` or `autocompact_buffer`.
   */
  name: string;
  /**
   * Share of the context window, in percent (one decimal).
   */
  percent: number;
  tokens: number;
};

export type UsageResponse = {
  /**
   * Attachment records in the view, those the next compile would append included.
   */
  attachments: number;
  autocompact_threshold: number;
  /**
   * Categories in display order; they sum to the context window.
   */
  categories: Array<UsageCategory>;
  context_window: number;
  /**
   * Messages of the request that would be compiled now.
   */
  messages: number;
  model: string;
  /**
   * The estimate that drives the thresholds (anchored on the last usage).
   */
  used_tokens: number;
};

/**
 * What the daemon holds for its WebSocket clients, summed over connections.
 */
export type WebSocketStatus = {
  /**
   * Calls that have their answer and wait for room in their connection's queue.
   */
  answers_waiting: number;
  /**
   * Calls running in tasks of their own (at most 4 per connection).
   */
  calls_running: number;
  /**
   * Open WebSocket connections.
   */
  connections: number;
  /**
   * Bytes of answers and notifications taken for clients and not yet written to their
   * sockets (each connection stops being read past 16 MiB of its own).
   */
  queued_bytes: number;
  /**
   * Open subscriptions on them.
   */
  subscriptions: number;
};

/** Every method: its params (by name) and its result. */
export interface Methods {
  /**
   * Handshake: client info and protocol version in; server info, negotiated version, capabilities and limits out. Another major version is refused.
   */
  "daemon.initialize": {
    params: {
      client_info: PeerInfo;
      /**
       * The protocol version the client was written against, `MAJOR.MINOR` (e.g. `1.1`);
       * a bare `MAJOR` means its first minor.
       */
      protocol_version: string;
    };
    result: InitializeResult;
  };
  /**
   * Protocol version, daemon version, paths, uptime.
   */
  "daemon.status": {
    params: { [key: string]: unknown };
    result: DaemonStatus;
  };
  /**
   * No-op round trip.
   */
  "daemon.ping": {
    params: { [key: string]: unknown };
    result: PingResponse;
  };
  /**
   * Stop the daemon cleanly after answering.
   */
  "daemon.shutdown": {
    params: { [key: string]: unknown };
    result: ShutdownResponse;
  };
  /**
   * The HTTP front door (`ctxd --http`): whether it listens, its base URLs (secret included), sessions seen and bytes forwarded.
   */
  "proxy.status": {
    params: { [key: string]: unknown };
    result: ProxyStatusResponse;
  };
  /**
   * Write a consistent copy of the SQLite store to a new file while the daemon runs (a PostgreSQL store answers an error pointing to pg_dump).
   */
  "daemon.backup": {
    params: {
      /**
       * Absolute path of the copy, a file that does not exist yet in a directory that
       * does (the daemon writes it, so a relative path would name its own directory).
       */
      path: string;
    };
    result: BackupResponse;
  };
  /**
   * Delete sessions idle for idle_days, then the least recently updated until the rest fit max_store_bytes; dry_run only says which.
   */
  "daemon.gc": {
    params: {
      /**
       * Say what would be deleted; delete nothing.
       */
      dry_run?: boolean;
      /**
       * Delete the sessions (with their sub-agents' threads) not updated for this many
       * days (at least 1).
       */
      idle_days?: number | null;
      /**
       * Then delete the least recently updated sessions until the stored JSON of the
       * remaining ones' records is at most this many bytes.
       */
      max_store_bytes?: number | null;
      /**
       * RFC 3339 time the idle days count back from; the daemon's clock when absent.
       */
      now?: string | null;
    };
    result: GcResponse;
  };
  /**
   * The daemon's counters and gauges in the Prometheus text format: calls and errors by method, call latencies, sessions stored and loaded, store size, context.send turns and tokens, retention, the front door's traffic, uptime.
   */
  "daemon.metrics": {
    params: { [key: string]: unknown };
    result: MetricsResponse;
  };
  /**
   * Create a session for a working directory.
   */
  "session.create": {
    params: {
      /**
       * Working directory (absolute). The CLI passes its current directory.
       */
      cwd: string;
      additional_directories?: Array<string>;
      model?: ModelProfile | null;
      /**
       * Skip the git snapshot (imports of sessions from other machines).
       */
      no_git?: boolean;
      settings?: SessionSettings | null;
      /**
       * Local date override (`YYYY-MM-DD`); defaults to today.
       */
      start_date?: string | null;
      system?: SystemPrompt | null;
      title?: string | null;
      tools?: Array<ToolSpec>;
    };
    result: SessionCreateResponse;
  };
  /**
   * List sessions, newest first.
   */
  "session.list": {
    params: {
      limit?: number | null;
    };
    result: SessionListResponse;
  };
  /**
   * One session.
   */
  "session.get": {
    params: {
      session_id: string;
    };
    result: SessionGetResponse;
  };
  /**
   * Change settings, model profile, system prompt or title.
   */
  "session.update": {
    params: {
      session_id: string;
      /**
       * A new working directory (absolute). Resets the memoized user context, as a
       * compaction does; discovery still walks from the original cwd.
       */
      cwd?: string | null;
      model?: ModelProfile | null;
      /**
       * A JSON merge patch (RFC 7396) on the session's settings: objects merge key by
       * key, `null` removes a key (it takes its default again), any other value replaces
       * what was there. `{"snip_enabled": true}` changes that one setting only.
       */
      settings?: SessionSettings | null;
      system?: SystemPrompt | null;
      title?: string | null;
    };
    result: SessionGetResponse;
  };
  /**
   * Copy a session's transcript up to a record into a new session.
   */
  "session.fork": {
    params: {
      session_id: string;
      /**
       * Copy the transcript up to and including this record; absent → all of it.
       */
      up_to_uuid?: string | null;
    };
    result: SessionForkResponse;
  };
  /**
   * Delete a session, its transcript and its files.
   */
  "session.delete": {
    params: {
      session_id: string;
    };
    result: SessionDeleteResponse;
  };
  /**
   * Import a Claude Code JSONL transcript into a new session (all or nothing).
   */
  "session.import": {
    params: {
      /**
       * Working directory for the new session; defaults to the transcript's `cwd`.
       */
      cwd?: string | null;
      /**
       * Used when neither `cwd` nor the transcript names a working directory.
       */
      fallback_cwd?: string | null;
      /**
       * The transcript's text, one JSON object per line. Empty when `path` names it.
       */
      jsonl?: string;
      model?: ModelProfile | null;
      /**
       * The transcript's file, absolute, which the daemon reads itself (it runs on the
       * caller's machine as the caller's user): a long transcript then never travels whole
       * in a request, nor is held whole by the daemon. Instead of `jsonl`.
       */
      path?: string | null;
      title?: string | null;
    };
    result: SessionImportResponse;
  };
  /**
   * Start a sub-agent for one of the session's tool calls: a thread of its own (system prompt, tools, thresholds, compaction), starting from the session's file state; SubagentStart hooks run.
   */
  "agent.start": {
    params: {
      agent_type: string;
      /**
       * The parent session.
       */
      session_id: string;
      /**
       * The parent's `tool_use` that starts the agent: a call in its transcript that has
       * no result yet.
       */
      tool_use_id: string;
      /**
       * Unique within the parent; a fresh one when absent.
       */
      agent_id?: string | null;
      instructions?: AgentInstructions;
      /**
       * The agent's model profile; the parent's when absent.
       */
      model?: ModelProfile | null;
      /**
       * The task, appended as the thread's first user message.
       */
      prompt?: string | null;
      /**
       * A JSON merge patch on the parent's settings (as `session.update` takes): the
       * agent's own thresholds, budget or summariser.
       */
      settings?: SessionSettings | null;
      /**
       * The agent's own system prompt; the default contract when absent.
       */
      system?: SystemPrompt | null;
      /**
       * The agent's tools; the parent's when absent.
       */
      tools?: Array<ToolSpec> | null;
    };
    result: AgentStartResponse;
  };
  /**
   * Give a sub-agent's answer to its session as the tool result of the call that started it.
   */
  "agent.finish": {
    params: {
      agent_id: string;
      /**
       * The parent session.
       */
      session_id: string;
      is_error?: boolean;
      /**
       * The tool result's content (a string or content blocks); the text of the agent's
       * last answer when absent.
       */
      result?: unknown;
    };
    result: AgentFinishResponse;
  };
  /**
   * A session's sub-agents and their threads.
   */
  "agent.list": {
    params: {
      session_id: string;
    };
    result: AgentListResponse;
  };
  /**
   * Stream a session's events (WebSocket only), first replaying records after after_seq. Returns the subscription id; events arrive as session.event notifications.
   */
  "session.subscribe": {
    params: {
      session_id: string;
      /**
       * Resume: first replay, as `records_appended` events read from the store, every
       * record with `seq > after_seq`, then stream. Absent → stream from now on. Only
       * records are replayed; other event kinds are not stored (their effects are: read
       * the session, its memory or its collapses).
       */
      after_seq?: number | null;
      /**
       * Put the whole records in `records_appended.full_records`.
       */
      include_records?: boolean;
    };
    result: SubscriptionId;
  };
  /**
   * End a subscription (WebSocket only, on the connection that made it). false when it was not active.
   */
  "session.unsubscribe": {
    params: {
      subscription: SubscriptionId;
    };
    result: boolean;
  };
  /**
   * Append records atomically, optionally guarded by the expected last uuid.
   */
  "transcript.append": {
    params: {
      /**
       * Written atomically: all of them or, on any error, none.
       */
      records: Array<RecordInput>;
      session_id: string;
      /**
       * A sub-agent of `session_id` whose thread this call addresses (see `agent.start`).
       */
      agent_id?: string | null;
      /**
       * Optimistic concurrency: the uuid the caller believes is the transcript's last
       * record (`null` for "the transcript is empty"). Omit the field to append
       * unconditionally.
       */
      expected_last_uuid?: string | null;
    };
    result: AppendResponse;
  };
  /**
   * Read a page of records.
   */
  "transcript.read": {
    params: {
      session_id: string;
      /**
       * Return records with `seq > after_seq` (0 = from the start).
       */
      after_seq?: number;
      /**
       * A sub-agent of `session_id` whose thread this call addresses (see `agent.start`).
       */
      agent_id?: string | null;
      /**
       * Page size; default 500, at most 5000.
       */
      limit?: number | null;
    };
    result: ReadResponse;
  };
  /**
   * Mark an image or document the provider refused; later compiles strip it.
   */
  "transcript.reject_media": {
    params: {
      /**
       * Index of the image/document block in the record's content (for a tool result,
       * the tool_result block's index: all its media is stripped).
       */
      block_index: number;
      record_uuid: string;
      session_id: string;
    };
    result: RejectMediaResponse;
  };
  /**
   * Replace the session's tool list.
   */
  "capabilities.set_tools": {
    params: {
      session_id: string;
      /**
       * The complete tool list, in the order the model should see it.
       */
      tools: Array<ToolSpec>;
    };
    result: ToolsSetResponse;
  };
  /**
   * The session's tool list.
   */
  "capabilities.list_tools": {
    params: {
      session_id: string;
    };
    result: ToolsListResponse;
  };
  /**
   * Report an MCP server connected (name, instructions, tools); announced in system before the first compile, as mcp_instructions_delta after it.
   */
  "capabilities.mcp_connect": {
    params: {
      /**
       * The server's name, as the agent shows it (`## NAME` in the instructions).
       */
      name: string;
      session_id: string;
      /**
       * What the server says about using its tools and resources. Servers connected
       * before the session's first compile land in the system section "MCP Server
       * Instructions"; later ones are announced with `mcp_instructions_delta`.
       */
      instructions?: string | null;
      /**
       * Resources the server offers that a prompt may mention (`@NAME:URI`), with the
       * content the client read from the server: ctxd does not speak MCP itself.
       */
      resources?: Array<McpResource>;
      /**
       * The server's tools; `mcp_server` is set to the server's name. Tools registered
       * with `defer_loading` are found through tool search.
       */
      tools?: Array<ToolSpec>;
    };
    result: CapabilityChangeResponse;
  };
  /**
   * Report that a connected MCP server changed its instructions (announced as mcp_instructions_delta).
   */
  "capabilities.mcp_set_instructions": {
    params: {
      name: string;
      session_id: string;
      /**
       * The new instructions; absent or empty → the server has none any more.
       */
      instructions?: string | null;
    };
    result: CapabilityChangeResponse;
  };
  /**
   * Report an MCP server disconnected; its tools leave with it and the removal is announced.
   */
  "capabilities.mcp_disconnect": {
    params: {
      name: string;
      session_id: string;
    };
    result: CapabilityChangeResponse;
  };
  /**
   * Replace the available agent types; changes are announced with agent_listing_delta.
   */
  "capabilities.set_agents": {
    params: {
      agents: Array<AgentType>;
      session_id: string;
    };
    result: CapabilityChangeResponse;
  };
  /**
   * Mark deferred tools as found by tool search: their full schema is sent from the next compile on.
   */
  "capabilities.discover_tools": {
    params: {
      names: Array<string>;
      session_id: string;
    };
    result: CapabilityChangeResponse;
  };
  /**
   * Record a skill invocation made outside a Skill tool_use (compaction restores invoked skills).
   */
  "capabilities.invoke_skill": {
    params: {
      name: string;
      session_id: string;
    };
    result: AckResponse;
  };
  /**
   * The session's skills: listed, pending, dormant (conditional), omitted, invoked; skipped files.
   */
  "capabilities.skills": {
    params: {
      session_id: string;
    };
    result: SkillsResponse;
  };
  /**
   * Tools (sent, deferred, discovered), MCP servers, agent types and what has been announced.
   */
  "capabilities.get": {
    params: {
      session_id: string;
    };
    result: CapabilitiesResponse;
  };
  /**
   * Compile the exact Messages API request for the next model call.
   */
  "context.compile": {
    params: {
      session_id: string;
      /**
       * A sub-agent of `session_id` whose thread this call addresses (see `agent.start`).
       */
      agent_id?: string | null;
      /**
       * Request-level flags (beta headers, cache TTL and scope, extra parameters). Latched
       * per session once sent: see `metadata.cache`.
       */
      flags?: RequestFlags | null;
      /**
       * The wire format of `request`: the Messages API (default), or a Chat Completions
       * body translated from it for OpenAI-compatible servers.
       */
      format?: CompileFormat;
      /**
       * The instant (RFC 3339) at which time-based decisions are taken; the daemon's clock
       * when absent. Replays pass the original time.
       */
      now?: string | null;
      /**
       * A fire-and-forget side request: the message cache breakpoint goes on the
       * second-to-last message so the side request does not extend the main cache chain.
       */
      side_request?: boolean;
    };
    result: CompileResponse;
  };
  /**
   * Remove a range of messages by their short ids; recorded as a snip boundary.
   */
  "context.snip": {
    params: {
      from_id: string;
      session_id: string;
      to_id: string;
    };
    result: SnipResponse;
  };
  /**
   * Compact the session now (manual), with optional extra instructions.
   */
  "context.compact": {
    params: {
      session_id: string;
      /**
       * Extra instructions for the summariser.
       */
      instructions?: string | null;
    };
    result: CompactionReport;
  };
  /**
   * Compile, send to the session's provider (settings.provider), and append the answer as it came; one turn at a time per session.
   */
  "context.send": {
    params: {
      session_id: string;
      /**
       * A sub-agent of `session_id` whose thread this call addresses (see `agent.start`).
       */
      agent_id?: string | null;
    };
    result: SendResponse;
  };
  /**
   * Run a context.send turn and stream it (WebSocket only): started, the provider's events as they come, then finished (the appended message) or failed. Ending the subscription cancels the turn.
   */
  "context.send_stream": {
    params: {
      session_id: string;
      /**
       * A sub-agent of `session_id` whose thread this call addresses (see `agent.start`).
       */
      agent_id?: string | null;
    };
    result: SubscriptionId;
  };
  /**
   * End a context.send_stream subscription, cancelling its turn if it still runs (nothing is appended). false when it was not active.
   */
  "context.send_unsubscribe": {
    params: {
      subscription: SubscriptionId;
    };
    result: boolean;
  };
  /**
   * Cancel the session's running context.send turn: the provider call stops and nothing is appended. ok is false when no turn runs.
   */
  "context.cancel": {
    params: {
      session_id: string;
    };
    result: AckResponse;
  };
  /**
   * The session's memory document, its version and last summarised record.
   */
  "memory.get": {
    params: {
      session_id: string;
    };
    result: MemoryGetResponse;
  };
  /**
   * Write the memory document (optimistic: expected_version must be current).
   */
  "memory.update": {
    params: {
      document: string;
      /**
       * The version the writer read; a stale write is refused (conflict).
       */
      expected_version: number;
      session_id: string;
      /**
       * The last record the document now accounts for (unchanged when absent).
       */
      last_summarized_uuid?: string | null;
      /**
       * Who writes (shown in the history), e.g. `worker`, `user`.
       */
      writer?: string | null;
    };
    result: MemoryUpdateResponse;
  };
  /**
   * Run an extraction now with the session's summariser and wait for it.
   */
  "memory.extract": {
    params: {
      session_id: string;
    };
    result: MemoryUpdateResponse;
  };
  /**
   * The session's collapses (staged, committed, undone), oldest first.
   */
  "context.collapse_list": {
    params: {
      session_id: string;
    };
    result: CollapseListResponse;
  };
  /**
   * Undo a collapse: its span reappears in the view.
   */
  "context.collapse_undo": {
    params: {
      collapse_id: string;
      session_id: string;
    };
    result: AckResponse;
  };
  /**
   * Report that the provider refused a compiled request; compacts reactively and returns the next request.
   */
  "context.report_error": {
    params: {
      /**
       * `prompt_too_long` or `media_too_large`.
       */
      kind: string;
      session_id: string;
      block_index?: number | null;
      /**
       * For `media_too_large`: the record and block holding the refused media.
       */
      record_uuid?: string | null;
      /**
       * How many tokens over the limit the request was, when the provider said.
       */
      token_gap?: number | null;
    };
    result: CompileResponse;
  };
  /**
   * Answer a summary_requested event (client summariser).
   */
  "context.provide_summary": {
    params: {
      request_id: string;
      /**
       * Set instead of `text` when the model call failed.
       */
      error?: string | null;
      /**
       * The model said the request was too long (by this many tokens, if known).
       */
      prompt_too_long?: boolean;
      /**
       * The model's text (analysis and all; ctxd extracts the summary).
       */
      text?: string | null;
      token_gap?: number | null;
    };
    result: AckResponse;
  };
  /**
   * Report paths the agent touched; their instruction files follow as nested_memory.
   */
  "context.touch_paths": {
    params: {
      /**
       * Absolute paths (relative ones are taken against the session's cwd).
       */
      paths: Array<string>;
      session_id: string;
    };
    result: AckResponse;
  };
  /**
   * Report that the model has seen a file as it is now on disk (changed_files baseline).
   */
  "context.report_read": {
    params: {
      path: string;
      session_id: string;
    };
    result: AckResponse;
  };
  /**
   * Convert a Claude Code JSONL transcript to records without storing anything.
   */
  "transcript.parse_claude_code": {
    params: {
      jsonl: string;
    };
    result: ParseClaudeCodeResponse;
  };
  /**
   * The frozen fates of the session's tool results (content-replacement records).
   */
  "context.replacements": {
    params: {
      session_id: string;
    };
    result: ReplacementsResponse;
  };
  /**
   * What the next request would fill the context window with, by category (Claude Code's /context), counting the attachments its compile would add; changes nothing.
   */
  "context.usage": {
    params: {
      session_id: string;
    };
    result: UsageResponse;
  };
  /**
   * Every model call's reported cache reads next to ctxd's prediction, with cache breaks and their causes.
   */
  "context.cache_report": {
    params: {
      session_id: string;
    };
    result: CacheReportResponse;
  };
  /**
   * The session's settings files and configured hooks, with their source file and whether they run.
   */
  "hooks.list": {
    params: {
      session_id: string;
    };
    result: HooksListResponse;
  };
  /**
   * Run PreToolUse hooks before the client runs a tool: allow, deny or ask, a reason, updatedInput, context.
   */
  "hooks.pre_tool_use": {
    params: {
      session_id: string;
      /**
       * The tool input the model produced (a JSON object).
       */
      tool_input: {
        [key: string]: unknown;
      };
      tool_name: string;
      tool_use_id?: string | null;
    };
    result: HookOutcome;
  };
  /**
   * Run PostToolUse hooks after a tool ran; context and blocking feedback are appended for the model.
   */
  "hooks.post_tool_use": {
    params: {
      session_id: string;
      /**
       * The tool input the model produced (a JSON object).
       */
      tool_input: {
        [key: string]: unknown;
      };
      tool_name: string;
      /**
       * What the tool returned.
       */
      tool_response: unknown;
      tool_use_id?: string | null;
    };
    result: HookOutcome;
  };
  /**
   * Run UserPromptSubmit hooks on a prompt without appending it (transcript.append runs them itself).
   */
  "hooks.user_prompt_submit": {
    params: {
      prompt: string;
      session_id: string;
    };
    result: HookOutcome;
  };
  /**
   * Run SessionStart hooks with source resume or clear; their context is appended.
   */
  "hooks.session_start": {
    params: {
      session_id: string;
      /**
       * `resume` (a client re-attaches to the session) or `clear`. ctxd fires `startup`
       * itself when a session is created and `compact` after every compaction.
       */
      source: ClientSessionStart;
    };
    result: HookOutcome;
  };
  /**
   * Run Stop hooks when the agent would stop; a block appends the reason for the model.
   */
  "hooks.stop": {
    params: {
      session_id: string;
      last_assistant_message?: string | null;
      /**
       * True when the agent is already continuing because a Stop hook blocked before.
       */
      stop_hook_active?: boolean;
    };
    result: HookOutcome;
  };
  /**
   * Run StopFailure hooks when a turn ended on an API error (output ignored).
   */
  "hooks.stop_failure": {
    params: {
      /**
       * The kind of API error that ended the turn (the matcher matches it).
       */
      error: string;
      session_id: string;
      error_details?: string | null;
      last_assistant_message?: string | null;
    };
    result: HookOutcome;
  };
  /**
   * Run SubagentStart hooks; their context is returned for the sub-agent.
   */
  "hooks.subagent_start": {
    params: {
      agent_id: string;
      /**
       * The matcher matches it.
       */
      agent_type: string;
      session_id: string;
    };
    result: HookOutcome;
  };
  /**
   * Run SubagentStop hooks when a sub-agent would stop; a block returns the reason.
   */
  "hooks.subagent_stop": {
    params: {
      agent_id: string;
      agent_type: string;
      session_id: string;
      agent_transcript_path?: string | null;
      last_assistant_message?: string | null;
      stop_hook_active?: boolean;
    };
    result: HookOutcome;
  };
  /**
   * Run Notification hooks for a message to the user.
   */
  "hooks.notification": {
    params: {
      message: string;
      session_id: string;
      /**
       * e.g. `permission_prompt`, `idle_prompt` (the matcher matches it).
       */
      notification_type?: string | null;
      title?: string | null;
    };
    result: HookOutcome;
  };
  /**
   * Run SessionEnd hooks when the session ends (output ignored).
   */
  "hooks.session_end": {
    params: {
      session_id: string;
      /**
       * `clear`, `logout`, `prompt_input_exit` or `other` (the default); the matcher
       * matches it.
       */
      reason?: string | null;
    };
    result: HookOutcome;
  };
  /**
   * Run PermissionRequest hooks before asking the user to allow a tool call: decision allow (with updated_input) or deny (with reason), or none (ask the user).
   */
  "hooks.permission_request": {
    params: {
      session_id: string;
      /**
       * The tool input the model produced (a JSON object).
       */
      tool_input: {
        [key: string]: unknown;
      };
      /**
       * The tool (the matcher matches it).
       */
      tool_name: string;
      tool_use_id?: string | null;
    };
    result: HookOutcome;
  };
  /**
   * Switch plan mode on or off (and name the plan file); the next compile carries the entry or exit reminder.
   */
  "session.set_plan_mode": {
    params: {
      /**
       * On or off. The next compile carries the entry (or exit) reminder.
       */
      enabled: boolean;
      session_id: string;
      /**
       * The plan file named to the model (absolute, or relative to the session's cwd);
       * absent keeps the current one (default `HOME/sessions/SID/plan.md`).
       */
      plan_file?: string | null;
    };
    result: PlanModeResponse;
  };
  /**
   * Queue user input (text, images) typed while a turn runs; the agent's next compile delivers it as a queued_command attachment once the current tool results are in.
   */
  "transcript.queue": {
    params: {
      session_id: string;
      /**
       * The sub-agent the input is for; absent (or `"main"`, as `transcript.queued`
       * names it) → the main thread. A main-thread compile never consumes a sub-agent's
       * input (see `transcript.take_queued`).
       */
      agent_id?: string | null;
      /**
       * Text and image blocks (pasted images).
       */
      content?: Array<ContentBlock>;
      /**
       * Text of the input (may be combined with `content`).
       */
      text?: string | null;
    };
    result: QueueResponse;
  };
  /**
   * The queued input still waiting, oldest first (all agents, or one: main for the main thread).
   */
  "transcript.queued": {
    params: {
      session_id: string;
      /**
       * Only this agent's entries (`main` for the main thread); absent → all.
       */
      agent_id?: string | null;
    };
    result: QueuedResponse;
  };
  /**
   * A sub-agent takes its queued input: appended as its sidechain queued_command records and returned with their text.
   */
  "transcript.take_queued": {
    params: {
      agent_id: string;
      session_id: string;
    };
    result: TakeQueuedResponse;
  };
  /**
   * Register (or replace, by name) a dynamic system section: memoized (frozen at its first compile until compaction or reset) or uncached (recomputed every compile; needs a reason).
   */
  "context.set_section": {
    params: {
      /**
       * `caching: uncached` needs a `reason`. A memoized section keeps the text it had at
       * its first compile until a compaction or `context.reset_sections`.
       */
      section: SystemSection;
      session_id: string;
    };
    result: AckResponse;
  };
  /**
   * Remove a registered dynamic system section (ok is false when there was none).
   */
  "context.remove_section": {
    params: {
      name: string;
      session_id: string;
    };
    result: AckResponse;
  };
  /**
   * Drop the memo of memoized system sections: the next compile computes them again.
   */
  "context.reset_sections": {
    params: {
      session_id: string;
    };
    result: AckResponse;
  };
  /**
   * This document.
   */
  "rpc.discover": {
    params: { [key: string]: unknown };
    result: { [key: string]: unknown };
  };
}
