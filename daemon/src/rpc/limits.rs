//! What `daemon.initialize` reports of the server's bounds: exactly what the server runs
//! with (the daemon's configured `Limits`, and the constants of `crate::limits`).

use ctxd_pipeline::limits::{
    MAX_APPEND_RECORDS, MAX_READ_PAGE, MAX_RECORD_BYTES, MAX_RESPONSE_BYTES, MAX_RPC_BATCH,
    MAX_SUBSCRIPTIONS_PER_CONNECTION,
};

pub(crate) fn limits(l: &ctxd_pipeline::limits::Limits) -> ctxd_protocol::Limits {
    ctxd_protocol::Limits {
        max_request_bytes: l.max_request_bytes.into(),
        max_response_bytes: MAX_RESPONSE_BYTES.into(),
        max_batch_calls: MAX_RPC_BATCH.into(),
        max_connections: l.max_connections as u64,
        max_subscriptions_per_connection: MAX_SUBSCRIPTIONS_PER_CONNECTION.into(),
        max_read_page: MAX_READ_PAGE.into(),
        max_append_records: MAX_APPEND_RECORDS as u64,
        max_record_bytes: MAX_RECORD_BYTES as u64,
        max_loaded_sessions: l.max_loaded_sessions as u64,
    }
}
