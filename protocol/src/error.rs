//! Application error codes (JSON-RPC reserves -32768..-32000 for itself; ours sit in
//! the -32000..-32099 "server error" range).

/// Bad params: a malformed record, an unknown setting. `data.field` names the field.
pub const INVALID_PARAMS: i32 = -32602;
/// The session does not exist.
pub const SESSION_NOT_FOUND: i32 = -32001;
/// `expected_last_uuid` did not match the transcript's last record.
pub const CONFLICT: i32 = -32002;
/// A referenced record does not exist in the session.
pub const RECORD_NOT_FOUND: i32 = -32003;
/// A record uuid is already used in the session.
pub const DUPLICATE_RECORD: i32 = -32004;
/// The compiled request is at or above the blocking limit: compact first.
pub const PROMPT_TOO_LONG: i32 = -32010;
/// Compaction failed (the summariser refused or failed, or the result would not fit):
/// the transcript is unchanged.
pub const COMPACTION_FAILED: i32 = -32011;
/// A hook refused the operation (e.g. a `UserPromptSubmit` hook blocked the prompt):
/// nothing was written. The message carries the hook's reason; `data` has
/// `hook_event_name` and `reason`.
pub const HOOK_BLOCKED: i32 = -32030;
/// Storage failed; nothing was written.
pub const STORAGE: i32 = -32020;
/// An internal error; nothing was written.
pub const INTERNAL: i32 = -32603;
