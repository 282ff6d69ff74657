//! The engine's error type. The RPC edge maps each variant to a JSON-RPC error code.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    /// Bad input from a client; `field` is the JSON path of the offending value.
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("session {0} not found")]
    SessionNotFound(String),
    #[error("record {0} not found in this session")]
    RecordNotFound(String),
    #[error("record uuid {0} is already used in this session")]
    DuplicateRecord(String),
    #[error("transcript changed: expected last record {expected}, found {actual}")]
    Conflict { expected: String, actual: String },
    /// A shared store: another daemon wrote the session after this daemon's copy was
    /// current, so a decision made from the copy was not stored.
    #[error(
        "session {0} was written by another daemon while this one decided from its copy; nothing was written: retry"
    )]
    WrittenElsewhere(String),
    #[error("prompt too long: {estimated} tokens estimated, blocking limit {limit}")]
    PromptTooLong { estimated: u64, limit: u64 },
    /// A hook refused the operation; nothing was written.
    #[error("blocked by a {event} hook: {reason}")]
    HookBlocked { event: String, reason: String },
    #[error("compaction failed: {0}")]
    CompactionFailed(String),
    #[error("session {0} has a turn running: wait for it")]
    TurnInProgress(String),
    /// The model provider failed or refused; nothing was appended.
    #[error("the provider failed: {message}")]
    Provider {
        status: Option<u16>,
        kind: Option<String>,
        message: String,
    },
    #[error("storage: {0}")]
    Storage(String),
    #[error("internal: {0}")]
    Internal(String),
}

impl Error {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::Storage(e.to_string())
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Internal(format!("json: {e}"))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
