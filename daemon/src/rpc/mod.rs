//! The JSON-RPC edge: turns calls into engine operations and engine events into
//! notifications. Knows the protocol; knows no SQL.

mod attachments;
mod connection;
mod hooks;
mod limits;
mod methods;
mod server;
mod subscription;
mod transport;

#[cfg(test)]
pub(crate) use methods::parse as parse_params;
pub use methods::{RpcContext, build_module};
pub use server::serve;

use ctxd_protocol as proto;
use jsonrpsee::types::ErrorObjectOwned;
use serde_json::json;

use crate::error::Error;

/// Maps an engine error to its documented JSON-RPC error.
pub fn to_rpc_error(e: Error) -> ErrorObjectOwned {
    let msg = e.to_string();
    match e {
        Error::Invalid { field, message } => ErrorObjectOwned::owned(
            proto::INVALID_PARAMS,
            msg,
            Some(json!({ "field": field, "reason": message })),
        ),
        Error::SessionNotFound(id) => ErrorObjectOwned::owned(
            proto::SESSION_NOT_FOUND,
            msg,
            Some(json!({ "session_id": id })),
        ),
        Error::RecordNotFound(id) => {
            ErrorObjectOwned::owned(proto::RECORD_NOT_FOUND, msg, Some(json!({ "uuid": id })))
        }
        Error::DuplicateRecord(id) => {
            ErrorObjectOwned::owned(proto::DUPLICATE_RECORD, msg, Some(json!({ "uuid": id })))
        }
        Error::Conflict { expected, actual } => ErrorObjectOwned::owned(
            proto::CONFLICT,
            msg,
            Some(json!({ "expected_last_uuid": expected, "actual_last_uuid": actual })),
        ),
        Error::PromptTooLong { estimated, limit } => ErrorObjectOwned::owned(
            proto::PROMPT_TOO_LONG,
            msg,
            Some(json!({ "estimated_tokens": estimated, "blocking_limit": limit })),
        ),
        Error::HookBlocked { event, reason } => ErrorObjectOwned::owned(
            proto::HOOK_BLOCKED,
            msg,
            Some(json!({ "hook_event_name": event, "reason": reason })),
        ),
        Error::CompactionFailed(_) => {
            ErrorObjectOwned::owned(proto::COMPACTION_FAILED, msg, None::<()>)
        }
        Error::Storage(_) => {
            tracing::error!(error = %msg, "storage error");
            ErrorObjectOwned::owned(proto::STORAGE, msg, None::<()>)
        }
        Error::Internal(_) => {
            tracing::error!(error = %msg, "internal error");
            ErrorObjectOwned::owned(proto::INTERNAL, msg, None::<()>)
        }
    }
}
