//! The bounds the server enforces, in one place so that `daemon.initialize` reports
//! exactly what the server is configured with.

use ctxd_protocol::Limits;

/// Largest request and response: big enough for a large import, and responses carry
/// whole compiled requests.
pub const MAX_BODY: u32 = 256 * 1024 * 1024;
/// Calls in one batch.
pub const MAX_BATCH: u32 = 1_000;
/// Connections served at once (jsonrpsee answers HTTP 429 beyond it). Editors, agents,
/// workers and CLI calls each hold one; 100 was hit by ordinary use.
pub const MAX_CONNECTIONS: u32 = 4_096;
/// jsonrpsee's default, stated so it can be reported.
pub const MAX_SUBSCRIPTIONS_PER_CONNECTION: u32 = 1_024;

pub fn limits() -> Limits {
    Limits {
        max_request_bytes: MAX_BODY.into(),
        max_response_bytes: MAX_BODY.into(),
        max_batch_calls: MAX_BATCH.into(),
        max_connections: MAX_CONNECTIONS.into(),
        max_subscriptions_per_connection: MAX_SUBSCRIPTIONS_PER_CONNECTION.into(),
        max_read_page: crate::engine::MAX_READ_PAGE.into(),
    }
}
