//! The per-session event stream (`session.subscribe`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::transcript::AppendedRecord;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubscribeParams {
    pub session_id: String,
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
    },
    /// Session settings, model, system prompt or tools changed.
    SessionUpdated { session_id: String },
    /// The session was deleted; the stream ends after this event.
    SessionDeleted { session_id: String },
    /// The subscriber fell behind and missed this many events; re-read the transcript.
    Lagged { session_id: String, missed: u64 },
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
}
