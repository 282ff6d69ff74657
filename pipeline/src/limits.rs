//! Every bound the daemon enforces on what clients and files can make it hold or do, in
//! one place. docs/running.md documents them in one table ("Limits"); keep the two in step.
//!
//! The configurable ones come from `ctxd` flags (see `main.rs`); the others are constants
//! because a client could not sensibly need more.

use std::time::Duration;

/// Records one `transcript.append` may carry. A larger batch is refused whole (JSON-RPC
/// `-32602`, `data.field = "records"`); split it.
pub const MAX_APPEND_RECORDS: usize = 10_000;

/// Serialised size of one record (its JSON as stored). Larger is refused, naming the
/// record (`records[i]`).
pub const MAX_RECORD_BYTES: usize = 32 * 1024 * 1024;

/// One instruction file (CLAUDE.md, rule, include): a larger file is skipped, read only up
/// to this many bytes to find out.
pub const MAX_INSTRUCTION_FILE_BYTES: u64 = 1024 * 1024;

/// All instruction files of one walk (the start-up chain or one nested lookup) together:
/// files past this total are skipped.
pub const MAX_INSTRUCTION_TOTAL_BYTES: u64 = 4 * 1024 * 1024;

/// The share of the context window (in percent, at four characters a token) that the
/// instruction files of one walk may fill, below [`MAX_INSTRUCTION_TOTAL_BYTES`]: rules
/// larger than the window would make every compile fail, and no compaction can help.
pub(crate) const INSTRUCTION_WINDOW_SHARE_PCT: u64 = 25;

/// The instruction bytes one walk may read for a window of `context_window` tokens.
pub fn instruction_total_bytes(context_window: u64) -> u64 {
    (context_window.saturating_mul(4) / 100 * INSTRUCTION_WINDOW_SHARE_PCT)
        .min(MAX_INSTRUCTION_TOTAL_BYTES)
}

/// Directory entries looked at in one `.claude/rules` folder (with its subfolders).
pub const MAX_RULE_ENTRIES: usize = 10_000;

/// Folders below a `.claude/rules` or `.claude/commands` folder that a walk enters: a
/// chain of nested folders costs each level the length of its path again, so a deep one
/// cost cubic time. Deeper folders are skipped (and logged).
pub const MAX_WALK_DEPTH: usize = 32;

/// The time one such walk may take before it stops where it is (and logs it).
pub const MAX_WALK_TIME: std::time::Duration = std::time::Duration::from_secs(2);

/// The directories above (and including) the cwd that the instruction chain looks at,
/// nearest first: a cwd thousands of levels deep is not walked to the root.
pub const MAX_ANCESTOR_DIRS: usize = 64;

/// A file an `@` mention attaches: a larger one is attached as its first lines only.
pub const MAX_MENTION_FILE_BYTES: u64 = 256 * 1024;
/// Lines of a mentioned file attached without a range (the Read tool's default).
pub const MAX_MENTION_LINES: usize = 2_000;
/// Entries of a mentioned directory listed.
pub const MAX_MENTION_ENTRIES: usize = 200;

/// One skill file (`SKILL.md`, a legacy command): a larger one is skipped and reported.
pub const MAX_SKILL_FILE_BYTES: u64 = 1024 * 1024;

/// Skills one session's discovery reads (all places together); the rest are skipped with
/// one warning.
pub const MAX_SKILLS: usize = 10_000;

/// MCP servers connected to one session at once.
pub const MAX_MCP_SERVERS: usize = 256;

/// Resources one MCP server registers (each at most `MAX_MENTION_FILE_BYTES` of text).
pub const MAX_MCP_RESOURCES: usize = 1_000;
/// The text of all of one MCP server's resources together.
pub const MAX_MCP_RESOURCE_BYTES: u64 = 4 * 1024 * 1024;

/// Tools of one session: its own and its connected servers' together.
pub const MAX_TOOLS: usize = 10_000;

/// Agent types of one session.
pub const MAX_AGENT_TYPES: usize = 1_000;

/// An MCP server's instructions, and an agent type's description, in bytes.
pub const MAX_CAPABILITY_TEXT_BYTES: usize = 256 * 1024;

/// JSON-RPC calls in one batch request.
pub const MAX_RPC_BATCH: u32 = 1_000;

/// Response bodies (a compiled request travels in one).
pub const MAX_RESPONSE_BYTES: u32 = 256 * 1024 * 1024;

/// Largest context window a model profile may declare (tokens).
pub const MAX_CONTEXT_WINDOW: u64 = 100_000_000;

/// Largest token count one usage field of a record may carry: far above any real
/// context, far below where sums of four of them could overflow.
pub const MAX_USAGE_TOKENS: u64 = 1_000_000_000;

/// The bounds a daemon is started with; `Default` is what `ctxd` uses without flags.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections served at once (HTTP requests in flight and open WebSockets); the next
    /// one is answered with a JSON-RPC error (`-32040`) and closed.
    pub max_connections: usize,
    /// Sessions whose transcript is held in memory; the least recently used is unloaded
    /// beyond this (it is reloaded from the store on its next use).
    pub max_loaded_sessions: usize,
    /// Request body (HTTP) or message (WebSocket) size.
    pub max_request_bytes: u32,
    /// Time a connection has to send a complete request head, and an HTTP request to
    /// deliver its whole body. A connection that sends nothing at all is closed after it.
    pub request_timeout: Duration,
    /// A WebSocket is pinged this often; one that answers no ping for three intervals is
    /// closed.
    pub ws_ping_interval: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 1024,
            max_loaded_sessions: 256,
            max_request_bytes: 100 * 1024 * 1024,
            request_timeout: Duration::from_secs(10),
            ws_ping_interval: Duration::from_secs(30),
        }
    }
}

// Hooks, discovery, connections, attachments and providers.

/// The longest timeout a hook in a settings file may ask for.
pub const MAX_HOOK_TIMEOUT: Duration = Duration::from_secs(600);

/// A Claude Code settings file (hooks) larger than this is refused as invalid.
pub const MAX_HOOK_SETTINGS_BYTES: u64 = 1024 * 1024;

/// Hook commands one file may configure.
pub const MAX_HOOKS_PER_FILE: usize = 1_000;

/// The trusted-projects list (`HOME/trusted-projects`) is read up to this size.
pub const MAX_TRUST_LIST_BYTES: u64 = 1024 * 1024;

/// An output style's file is read up to this size.
pub const MAX_STYLE_BYTES: u64 = 64 * 1024;

/// Output style files looked at per folder.
pub const MAX_STYLE_FILES: usize = 64;

/// Memory files considered per session, newest first (Claude Code's cap).
pub const MAX_MEMORY_FILES: usize = 200;

/// Bytes of a memory file read for scoring and surfacing.
pub const MAX_MEMORY_SCAN_BYTES: u64 = 64 * 1024;

/// Directory levels below a memory directory that are walked.
pub const MAX_MEMORY_DEPTH: usize = 4;

/// WebSocket calls running in tasks of their own, per connection, past which the connection is not
/// read until one answers: each holds its answer until there is room for it.
pub const MAX_CALLS_IN_FLIGHT: usize = 4;

/// Refusal answers (connection limit reached) being written at once; past this, refused connections are just closed.
pub const MAX_REFUSING_CONNECTIONS: usize = 64;

/// Bytes queued for one WebSocket connection past which it is not read and nothing more
/// is queued for it.
pub const MAX_WS_QUEUED_BYTES: usize = 16 * 1024 * 1024;

/// The plan file's text re-injected after a compaction is capped like an instruction file.
pub const MAX_PLAN_BYTES: u64 = 64 * 1024;

/// A seen file's content kept for diffing (`changed_files`); larger files are still
/// tracked by hash.
pub const MAX_TRACKED_FILE_BYTES: u64 = 1024 * 1024;

/// Queued inputs (`transcript.queue`) one agent of a session may have waiting.
pub const MAX_QUEUED_ENTRIES: usize = 100;

/// Hook processes running at once, daemon-wide (further hooks wait for a slot).
pub const MAX_RUNNING_HOOKS: usize = 32;

/// Bytes of one registered system-prompt section's text (`context.set_section`).
pub const MAX_SECTION_BYTES: usize = 64 * 1024;

/// The largest attachment-collection time bound a session may set
/// (`settings.attachments.collect_timeout_ms`).
pub const MAX_COLLECT_TIMEOUT_MS: u64 = 60_000;

/// Event bytes one `context.send` answer may take: what one record may hold.
pub const MAX_PROVIDER_ANSWER_BYTES: usize = MAX_RECORD_BYTES;

/// Bytes of one streamed answer as they came, SSE framing included: small deltas carry
/// several times their text in framing, and a line that never ends stops here.
pub const MAX_PROVIDER_STREAM_BYTES: usize = 2 * MAX_PROVIDER_ANSWER_BYTES;

/// Bytes of a provider's error answer that are read (its message is what matters).
pub const MAX_PROVIDER_ERROR_BYTES: usize = 64 * 1024;

/// Bytes of a provider's whole (not streamed) answer: a summary, a session-memory
/// extraction, a prompt or agent hook's verdict. Each asks for at most some tens of
/// thousands of tokens.
pub const MAX_PROVIDER_JSON_BYTES: usize = 4 * 1024 * 1024;

/// Bytes of provider events a `context.send_stream` turn queues for a reader that has not
/// taken them; past it the turn waits for the reader.
pub const MAX_PROGRESS_QUEUE_BYTES: usize = 4 * 1024 * 1024;

/// Retries one provider call may be configured with (`settings.provider.max_retries`).
pub const MAX_PROVIDER_RETRIES: u32 = 10;

/// A `retry-after` longer than this is not honoured as such: the caller's own budget
/// (and circuit breaker) matters more than one provider's pacing.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// `@` mentions taken from one prompt at most.
pub(crate) const MAX_MENTIONS: usize = 10;

/// Records one `transcript.read` page holds at most.
pub const MAX_READ_PAGE: u32 = 5_000;

/// Characters of a sub-agent's id (a name a client chose or one ctxd made).
pub const MAX_AGENT_ID_CHARS: usize = 128;

/// Levels of `@include` below a top-level instruction file: a file at this depth still
/// loads, its includes do not (Claude Code's bound).
pub const MAX_INCLUDE_DEPTH: usize = 5;

/// Subscriptions one WebSocket connection may hold (jsonrpsee's default, stated so it can
/// be reported).
pub const MAX_SUBSCRIPTIONS_PER_CONNECTION: u32 = 1_024;

/// Model calls one `agent` hook makes at most (Claude Code's bound).
pub const MAX_AGENT_HOOK_TURNS: usize = 50;

/// Tool calls of one `agent` hook's model answer that run; the ones past it are answered
/// with an error instead.
pub const MAX_AGENT_TOOL_CALLS_PER_ANSWER: usize = 16;

/// Characters of one tool result an `agent` hook's model gets back.
pub const MAX_AGENT_TOOL_OUTPUT_CHARS: usize = 20_000;

/// Bytes of a file an `agent` hook's `Read` or `Grep` opens.
pub const MAX_AGENT_READ_BYTES: u64 = 256 * 1024;

/// Paths an `agent` hook's `Glob` lists, and matches its `Grep` returns.
pub const MAX_AGENT_TOOL_ENTRIES: usize = 500;

/// Files an `agent` hook's `Grep` looks into.
pub const MAX_AGENT_GREP_FILES: usize = 2_000;
