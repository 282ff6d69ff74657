//! The JSON-RPC edge: turns calls into engine operations and engine events into
//! notifications. Knows the protocol; knows no SQL.

mod connection;
mod context;
mod dispatch;
mod ids;
mod limits;
mod methods;
mod outbox;
mod oversize;
mod send_stream;
mod server;
mod slot;
mod subscription;
mod transport;
mod ws;

pub(crate) use context::RpcContext;
#[cfg(test)]
pub(crate) use context::parse as parse_params;
pub(crate) use methods::build_module;
pub(crate) use outbox::status as websocket_status;
pub(crate) use server::serve;

use ctxd_protocol as proto;
use jsonrpsee::types::ErrorObjectOwned;
use serde_json::json;

use ctxd_engine::Error;

/// Maps an engine error to its documented JSON-RPC error.
pub(crate) fn to_rpc_error(e: Error) -> ErrorObjectOwned {
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
        Error::WrittenElsewhere(id) => ErrorObjectOwned::owned(
            proto::CONFLICT,
            msg,
            Some(json!({ "session_id": id, "written_elsewhere": true })),
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
        Error::TurnInProgress(id) => ErrorObjectOwned::owned(
            proto::TURN_IN_PROGRESS,
            msg,
            Some(json!({ "session_id": id })),
        ),
        Error::Provider { status, kind, .. } => ErrorObjectOwned::owned(
            proto::PROVIDER_FAILED,
            msg,
            Some(json!({ "status": status, "kind": kind })),
        ),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// One error of each kind. The match is exhaustive, so a new variant does not compile
    /// until it is listed here too.
    fn one_of_each() -> Vec<Error> {
        let all = vec![
            Error::invalid("f", "m"),
            Error::SessionNotFound("s".into()),
            Error::RecordNotFound("r".into()),
            Error::DuplicateRecord("r".into()),
            Error::Conflict {
                expected: "a".into(),
                actual: "b".into(),
            },
            Error::WrittenElsewhere("s".into()),
            Error::PromptTooLong {
                estimated: 2,
                limit: 1,
            },
            Error::HookBlocked {
                event: "Stop".into(),
                reason: "no".into(),
            },
            Error::CompactionFailed("x".into()),
            Error::TurnInProgress("s".into()),
            Error::Provider {
                status: Some(529),
                kind: None,
                message: "x".into(),
            },
            Error::Storage("x".into()),
            Error::Internal("x".into()),
        ];
        for e in &all {
            match e {
                Error::Invalid { .. }
                | Error::SessionNotFound(_)
                | Error::RecordNotFound(_)
                | Error::DuplicateRecord(_)
                | Error::Conflict { .. }
                | Error::WrittenElsewhere(_)
                | Error::PromptTooLong { .. }
                | Error::HookBlocked { .. }
                | Error::CompactionFailed(_)
                | Error::TurnInProgress(_)
                | Error::Provider { .. }
                | Error::Storage(_)
                | Error::Internal(_) => {}
            }
        }
        all
    }

    /// Every code the server can answer with is in the OpenRPC document: the engine's
    /// (through `to_rpc_error`), the transport's and the accept loop's, and those
    /// jsonrpsee sends itself. jsonrpsee's batch codes (-32010, -32011) collide with ours
    /// and must never come from jsonrpsee (the batch is bounded and its oversized
    /// response renamed in `transport.rs`).
    #[test]
    fn every_code_the_server_can_emit_is_documented() {
        use jsonrpsee::types::error as js;
        let doc = proto::openrpc::document();
        let documented: std::collections::BTreeSet<i64> = doc["components"]["errors"]
            .as_object()
            .unwrap()
            .values()
            .map(|e| e["code"].as_i64().unwrap())
            .collect();
        let mut emitted: Vec<i32> = one_of_each()
            .into_iter()
            .map(|e| to_rpc_error(e).code())
            .collect();
        emitted.extend([
            // Ours, outside the engine.
            proto::UNSUPPORTED_PROTOCOL_VERSION,
            proto::WEBSOCKET_REQUIRED,
            proto::TOO_MANY_CONNECTIONS,
            proto::PEER_REFUSED,
            proto::TOO_MANY_CALLS_IN_BATCH,
            // jsonrpsee's own, as configured (batches enabled and unlimited there).
            js::PARSE_ERROR_CODE,
            js::INVALID_REQUEST_CODE,
            js::METHOD_NOT_FOUND_CODE,
            js::INVALID_PARAMS_CODE,
            js::INTERNAL_ERROR_CODE,
            js::TOO_MANY_SUBSCRIPTIONS_CODE,
            js::OVERSIZED_REQUEST_CODE,
            js::OVERSIZED_RESPONSE_CODE,
        ]);
        for code in emitted {
            assert!(
                documented.contains(&i64::from(code)),
                "code {code} is not in the document's components.errors"
            );
        }
        assert_eq!(proto::REQUEST_TOO_BIG, js::OVERSIZED_REQUEST_CODE);
        assert_eq!(proto::RESPONSE_TOO_BIG, js::OVERSIZED_RESPONSE_CODE);
        assert_eq!(
            proto::TOO_MANY_SUBSCRIPTIONS,
            js::TOO_MANY_SUBSCRIPTIONS_CODE
        );
        // The documented names of -32010/-32011/-32001 are ours, never jsonrpsee's.
        let name_of = |code: i32| {
            doc["components"]["errors"]
                .as_object()
                .unwrap()
                .iter()
                .find(|(_, e)| e["code"] == code)
                .map(|(n, _)| n.clone())
        };
        assert_eq!(
            name_of(js::TOO_BIG_BATCH_REQUEST_CODE).as_deref(),
            Some("PromptTooLong")
        );
        assert_eq!(
            name_of(js::TOO_BIG_BATCH_RESPONSE_CODE).as_deref(),
            Some("CompactionFailed")
        );
        assert_eq!(
            name_of(js::UNKNOWN_ERROR_CODE).as_deref(),
            Some("SessionNotFound")
        );
    }
}
