//! Error codes (JSON-RPC reserves -32768..-32000 for itself; ours sit in the
//! -32000..-32099 "server error" range). The server library (jsonrpsee) answers a few
//! transport failures itself with codes of that range too; they are listed here, so
//! the document names every code a client can receive, and never reused for ours.

/// The request is not valid JSON.
pub const PARSE_ERROR: i32 = -32700;
/// The request is JSON but not a JSON-RPC request (or an empty batch).
pub const INVALID_REQUEST: i32 = -32600;
/// No method of that name.
pub const METHOD_NOT_FOUND: i32 = -32601;
/// Bad params: a malformed record, an unknown setting. `data.field` names the field.
pub const INVALID_PARAMS: i32 = -32602;
/// The session does not exist.
pub const SESSION_NOT_FOUND: i32 = -32001;
/// `expected_last_uuid` did not match the transcript's last record; or, on a store shared
/// by several daemons, another daemon wrote the session while this one was deciding from
/// its copy (`data.written_elsewhere`). Nothing changed either way: retry.
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
/// `daemon.initialize` asked for a protocol major version this daemon does not speak.
/// `data` carries `requested` and `supported`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32030;
/// The method needs a WebSocket connection (subscriptions); it was called over HTTP.
pub const WEBSOCKET_REQUIRED: i32 = -32031;
/// A hook refused the operation (e.g. a `UserPromptSubmit` hook blocked the prompt):
/// nothing was written. The message carries the hook's reason; `data` has
/// `hook_event_name` and `reason`.
pub const HOOK_BLOCKED: i32 = -32050;
/// `context.send` while another turn of the same session runs.
pub const TURN_IN_PROGRESS: i32 = -32060;
/// The model provider failed or refused the turn (after its retries); nothing was
/// appended. `data.status` is the provider's HTTP status when it answered with one.
pub const PROVIDER_FAILED: i32 = -32061;
/// Storage failed; nothing was written.
pub const STORAGE: i32 = -32020;
/// An internal error; nothing was written.
pub const INTERNAL: i32 = -32603;
/// The daemon already serves its maximum number of connections (`ctxd
/// --max-connections`); retry later. `data.bound` is `"max_connections"`, `data.limit`
/// the number. Sent as the body of an HTTP 503 before the connection is closed.
pub const TOO_MANY_CONNECTIONS: i32 = -32040;
/// The connecting process runs as neither the daemon's user nor root (checked with
/// SO_PEERCRED). Sent as the body of an HTTP 403 before the connection is closed.
pub const PEER_REFUSED: i32 = -32041;
/// A JSON-RPC batch holds more calls than the daemon takes in one request; none of them
/// ran. `data.bound` is `"max_batch_calls"`, `data.limit` the number, `data.calls` the
/// batch's length. Split the batch.
pub const TOO_MANY_CALLS_IN_BATCH: i32 = -32042;
/// (jsonrpsee's) The connection already has its maximum number of subscriptions
/// (`limits.max_subscriptions_per_connection`).
pub const TOO_MANY_SUBSCRIPTIONS: i32 = -32006;
/// (jsonrpsee's) The request body or WebSocket message is larger than
/// `limits.max_request_bytes`.
pub const REQUEST_TOO_BIG: i32 = -32007;
/// (jsonrpsee's) The response (of one call, or of a whole batch) would be larger than
/// `limits.max_response_bytes`. The call did run; of a batch, the calls up to the one
/// whose answer overflowed ran, the rest did not.
pub const RESPONSE_TOO_BIG: i32 = -32008;

/// Every error code a method may answer with, for the OpenRPC document's
/// `components.errors`: (name, code, what it means).
pub const ERROR_CODES: &[(&str, i32, &str)] = &[
    ("ParseError", PARSE_ERROR, "The request is not valid JSON."),
    (
        "InvalidRequest",
        INVALID_REQUEST,
        "The request is not a JSON-RPC 2.0 request (or is an empty batch).",
    ),
    (
        "MethodNotFound",
        METHOD_NOT_FOUND,
        "No method of that name.",
    ),
    (
        "InvalidParams",
        INVALID_PARAMS,
        "Bad params: data.field names the offending field. Nothing changed.",
    ),
    (
        "SessionNotFound",
        SESSION_NOT_FOUND,
        "The session does not exist.",
    ),
    (
        "Conflict",
        CONFLICT,
        "expected_last_uuid is not the transcript's last record, or (a store shared by several daemons) another daemon wrote the session while this one decided from its copy (data.written_elsewhere). Nothing changed: retry.",
    ),
    (
        "RecordNotFound",
        RECORD_NOT_FOUND,
        "A referenced record does not exist in the session.",
    ),
    (
        "DuplicateRecord",
        DUPLICATE_RECORD,
        "A record uuid is already used in the session. Nothing changed.",
    ),
    (
        "PromptTooLong",
        PROMPT_TOO_LONG,
        "The compiled request is at or above the blocking limit: compact first.",
    ),
    (
        "CompactionFailed",
        COMPACTION_FAILED,
        "Compaction failed; the transcript is unchanged.",
    ),
    ("Storage", STORAGE, "Storage failed; nothing was written."),
    (
        "UnsupportedProtocolVersion",
        UNSUPPORTED_PROTOCOL_VERSION,
        "daemon.initialize asked for another major version: data.requested, data.supported.",
    ),
    (
        "WebSocketRequired",
        WEBSOCKET_REQUIRED,
        "A subscription method was called over plain HTTP; use a WebSocket.",
    ),
    (
        "TooManyConnections",
        TOO_MANY_CONNECTIONS,
        "The daemon serves its maximum number of connections (HTTP 503): retry later.",
    ),
    (
        "PeerRefused",
        PEER_REFUSED,
        "The connecting process runs as neither the daemon's user nor root (HTTP 403).",
    ),
    (
        "TooManyCallsInBatch",
        TOO_MANY_CALLS_IN_BATCH,
        "The batch holds more calls than limits.max_batch_calls (data.bound, data.limit, data.calls); none ran: split it.",
    ),
    (
        "TooManySubscriptions",
        TOO_MANY_SUBSCRIPTIONS,
        "The connection has limits.max_subscriptions_per_connection subscriptions already.",
    ),
    (
        "RequestTooBig",
        REQUEST_TOO_BIG,
        "The request (HTTP body or WebSocket message) is larger than limits.max_request_bytes.",
    ),
    (
        "ResponseTooBig",
        RESPONSE_TOO_BIG,
        "The response (of a call or a whole batch) would exceed limits.max_response_bytes. The call ran; of a batch, the calls up to the overflow ran.",
    ),
    (
        "HookBlocked",
        HOOK_BLOCKED,
        "A hook refused the operation (data.hook_event_name, data.reason). Nothing was written.",
    ),
    (
        "TurnInProgress",
        TURN_IN_PROGRESS,
        "context.send while another turn of the same session runs: wait for it.",
    ),
    (
        "ProviderFailed",
        PROVIDER_FAILED,
        "The model provider failed or refused the turn after its retries (data.status, data.kind); nothing was appended.",
    ),
    (
        "Internal",
        INTERNAL,
        "An internal error; nothing was written.",
    ),
];
