//! What every method handler shares: the context it can reach, the decoding of its
//! params, the caller it acts as, and the macro that registers an engine call. A leaf of
//! `rpc`: the method tables use it, it uses none of them.

use std::path::PathBuf;
use std::sync::Arc;

use ctxd_protocol::INVALID_PARAMS;
use jsonrpsee::types::{ErrorObjectOwned, Params};
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio::sync::Notify;

use ctxd_engine::Engine;

/// What every method can reach.
pub(crate) struct RpcContext {
    pub(crate) engine: Arc<Engine>,
    /// Notified by `daemon.shutdown`; the server's owner decides what stopping means.
    pub(crate) shutdown: Arc<Notify>,
    pub(crate) socket: PathBuf,
    /// The HTTP front door, when `--http` started one.
    pub(crate) proxy: Option<Arc<crate::proxy::Proxy>>,
    /// What the retention worker did, for `daemon.metrics`.
    pub(crate) retention: Arc<crate::retention::RetentionStats>,
    /// Calls counted as they are answered, for `daemon.metrics`.
    pub(crate) metrics: Arc<crate::metrics::Metrics>,
}

/// Decodes by-name params, naming the offending field on failure. Absent params decode
/// as an empty object so parameterless methods accept both forms.
pub(crate) fn parse<T: DeserializeOwned>(params: &Params<'_>) -> Result<T, ErrorObjectOwned> {
    let raw = params.as_str().unwrap_or("{}");
    let mut de = serde_json::Deserializer::from_str(raw);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." {
            "params".to_string()
        } else {
            path
        };
        let reason = e.inner().to_string();
        ErrorObjectOwned::owned(
            INVALID_PARAMS,
            format!("invalid params: {field}: {reason}"),
            Some(json!({ "field": field, "reason": reason })),
        )
    })
}

/// The caller a connection's calls act as: events they cause are marked `own` on that
/// connection's subscriptions.
pub(super) fn caller_of(ext: &jsonrpsee::Extensions) -> Option<u64> {
    ext.get::<jsonrpsee::ConnectionId>().map(|c| c.0 as u64)
}

/// Counts an answered call of `method` in the daemon's metrics.
pub(crate) fn count<T>(
    metrics: &crate::metrics::Metrics,
    method: &str,
    started: std::time::Instant,
    r: &Result<T, ErrorObjectOwned>,
) {
    metrics.call(
        method,
        r.as_ref().err().map(|e| e.code()),
        started.elapsed(),
    );
}

/// Registers an engine call for the table's `$method` (a marker of
/// `ctxd_protocol::method`): params decoded by name as the table's params type (naming the
/// bad field), the call run as its connection (so the events it causes are `own` there),
/// its answer checked against the table's result type, engine errors mapped, the call
/// counted in the metrics. Every method that reaches the engine is registered through
/// this.
macro_rules! async_method {
    ($module:expr, $method:ty, |$ctx:ident, $p:ident| $body:expr) => {
        $module.register_async_method(
            <$method as ctxd_protocol::Method>::NAME,
            |params, $ctx, ext| async move {
                let started = std::time::Instant::now();
                let answered: Result<
                    <$method as ctxd_protocol::Method>::Result,
                    jsonrpsee::types::ErrorObjectOwned,
                > = async {
                    let $p: <$method as ctxd_protocol::Method>::Params =
                        $crate::rpc::context::parse(&params)?;
                    // The params' text is a copy of the request's: not kept through the
                    // call (an import's is the whole transcript).
                    drop(params);
                    let call = async { $body };
                    let r: ctxd_engine::Result<<$method as ctxd_protocol::Method>::Result> =
                        match $crate::rpc::context::caller_of(&ext) {
                            Some(caller) => ctxd_engine::as_caller(caller, call).await,
                            None => call.await,
                        };
                    r.map_err($crate::rpc::to_rpc_error)
                }
                .await;
                $crate::rpc::context::count(
                    &$ctx.metrics,
                    <$method as ctxd_protocol::Method>::NAME,
                    started,
                    &answered,
                );
                answered
            },
        )
    };
}
pub(super) use async_method;

/// Registers a method of the table that answers without waiting (no engine call that
/// awaits): params decoded as the table's params type, the answer checked against its
/// result type.
macro_rules! sync_method {
    ($module:expr, $method:ty, |$ctx:ident, $p:ident| $body:expr) => {
        $module.register_method(
            <$method as ctxd_protocol::Method>::NAME,
            |params, $ctx, _| {
                let started = std::time::Instant::now();
                let answered = (|| {
                    let $p: <$method as ctxd_protocol::Method>::Params =
                        $crate::rpc::context::parse(&params)?;
                    let r: Result<
                        <$method as ctxd_protocol::Method>::Result,
                        jsonrpsee::types::ErrorObjectOwned,
                    > = $body;
                    r
                })();
                $crate::rpc::context::count(
                    &$ctx.metrics,
                    <$method as ctxd_protocol::Method>::NAME,
                    started,
                    &answered,
                );
                answered
            },
        )
    };
}
pub(super) use sync_method;
