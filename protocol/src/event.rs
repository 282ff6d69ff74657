//! The per-session event stream (`session.subscribe`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::record::Record;
use crate::transcript::AppendedRecord;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubscribeParams {
    pub session_id: String,
    /// Resume: first replay, as `records_appended` events read from the store, every
    /// record with `seq > after_seq`, then stream. Absent → stream from now on. Only
    /// records are replayed; other event kinds are not stored (their effects are: read
    /// the session, its memory or its collapses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_seq: Option<u64>,
    /// Put the whole records in `records_appended.full_records`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_records: bool,
}

impl SubscribeParams {
    /// The session's events from now on, without whole records.
    pub fn from_now(session_id: impl Into<String>) -> SubscribeParams {
        SubscribeParams {
            session_id: session_id.into(),
            after_seq: None,
            include_records: false,
        }
    }
}

/// One `session.event` notification: an event, stamped with where the session's
/// transcript stood when it was delivered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionNotification {
    /// The session's sequence number: the last transcript `seq` delivered on this
    /// subscription. Resume with `after_seq` set to it.
    pub seq: u64,
    /// Caused by a call made on this same connection (its own compile, append, ...).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub own: bool,
    #[serde(flatten)]
    pub event: SessionEvent,
}

/// One event of a session. Later protocol versions add kinds; clients ignore kinds they
/// do not know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SessionEvent {
    /// Records were appended (one event per acknowledged batch).
    RecordsAppended {
        session_id: String,
        records: Vec<AppendedRecord>,
        /// The records themselves, when the subscription asked for `include_records`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        full_records: Option<Vec<Record>>,
    },
    /// Session settings, model, system prompt or tools changed.
    SessionUpdated { session_id: String },
    /// The session was deleted; the stream ends after this event.
    SessionDeleted { session_id: String },
    /// The subscriber fell behind and this many events were dropped. Records are not
    /// lost: the next `records_appended` replays them from the store, after `last_seq`
    /// (the last seq delivered before the gap). Other dropped events are gone.
    ///
    /// `ended: true`: the connection had more unread than the daemon queues for it for
    /// too long, so this subscription stops here; subscribe again with `after_seq:
    /// last_seq` to have the missed records replayed.
    Lagged {
        session_id: String,
        missed: u64,
        last_seq: u64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        ended: bool,
    },
    /// A compile finished: where the window stands (what a statusline shows).
    Compiled {
        session_id: String,
        estimated_tokens: u64,
        effective_window: u64,
        percent_left: u64,
        message_count: u32,
        /// Attachment records in the model's view.
        attachments: u64,
        request_sha256: String,
    },
    /// Instruction files entered the model's view: `reason` is `startup` (the memoized
    /// chain of `messages[0]`) or `nested` (a `nested_memory` attachment).
    InstructionsLoaded {
        session_id: String,
        reason: String,
        paths: Vec<String>,
    },
    /// A file the model has seen changed on disk (`change`: `changed` or `removed`).
    FileChanged {
        session_id: String,
        path: String,
        change: String,
    },
    /// The history was compacted: the projection now starts at `boundary_uuid`.
    Compacted {
        session_id: String,
        trigger: String,
        boundary_uuid: String,
        pre_tokens: u64,
        post_tokens: u64,
    },
    /// The session's summariser is `client`: run this Anthropic Messages request with a
    /// model and answer with `context.provide_summary` (same `request_id`).
    SummaryRequested {
        session_id: String,
        request_id: String,
        request: serde_json::Value,
        timeout_secs: u64,
    },
    /// The session's memory document has a new version.
    MemoryUpdated {
        session_id: String,
        version: u64,
        writer: String,
    },
    /// Session memory is due for an extraction (`settings.memory.extractor` is
    /// `external`): a worker should read the transcript after `since_uuid` and write
    /// the memory with `memory.update`.
    ExtractionDue {
        session_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since_uuid: Option<String>,
        context_tokens: u64,
        version: u64,
    },
    /// A collapse was staged, committed or undone.
    CollapseChanged {
        session_id: String,
        collapse_id: String,
        status: String,
    },
    /// Something the client should know although nothing failed: `source` says what
    /// (`skills`: a skill file was skipped; `path` names it).
    Warning {
        session_id: String,
        source: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        message: String,
    },
    /// A watched capability source changed on disk (`what`: `skills`); the next compile
    /// reflects it.
    CapabilitiesChanged { session_id: String, what: String },
    /// The context crossed a threshold: `level` is `ok`, `warning`, `autocompact` or
    /// `blocking`.
    WarningStateChanged {
        session_id: String,
        level: String,
        percent_left: u64,
        estimated_tokens: u64,
    },
    /// A hook command started (`hook_event_name` is the Claude Code event name).
    HookStarted {
        session_id: String,
        hook_event_name: String,
        command: String,
        /// `managed`, `user`, `project` or `local`.
        source: String,
    },
    /// A hook command finished (or was killed at its timeout).
    HookFinished {
        session_id: String,
        hook_event_name: String,
        command: String,
        source: String,
        /// `null` when the process was killed (timeout) or could not start.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        timed_out: bool,
        duration_ms: u64,
        /// `allow`, `deny`, `ask`, `block` or `approve`, when the hook decided something.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decision: Option<String>,
        /// stdout or stderr went over 64 KB and was cut.
        output_cut: bool,
        /// A non-blocking error for the user.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A settings file with hooks for this session changed; the new configuration
    /// applies from the next event. `hooks` counts the commands that file configures now.
    HooksConfigChanged {
        session_id: String,
        source: String,
        file: String,
        /// `loaded`, `absent`, `invalid` or `untrusted`.
        status: String,
        hooks: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A `context.send` turn began: the compiled request (`request_sha256`) is being
    /// sent to the session's provider.
    TurnStarted {
        session_id: String,
        request_sha256: String,
    },
    /// The turn ended: `ok` with the appended record (which also arrives as
    /// `records_appended`), or failed with `error` and nothing appended.
    TurnFinished {
        session_id: String,
        ok: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uuid: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<String>,
        retries: u32,
        /// A recovery from a too-long request ran (`collapse` or `compaction`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        recovered_by: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A model call's cache reads fell below 95% of the previous call's, by at least
    /// 2,000 tokens, with no compaction or cache edit in between.
    CacheBreak {
        session_id: String,
        /// The assistant record carrying the call's usage, and its sequence number.
        uuid: String,
        record_seq: u64,
        #[serde(rename = "break")]
        cache_break: crate::cache::CacheBreak,
    },
}
