//! The accept loop. Like mini-redis, it takes its listener and its shutdown signal from
//! the caller, so tests can run a real server in-process on a temp socket.
//!
//! Every accepted connection is checked before it is served: the peer must run as the
//! daemon's user or as root (SO_PEERCRED), and a connection slot must be free
//! (`Limits::max_connections`). Refused connections get a JSON-RPC error and are closed.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ctxd_protocol::{PEER_REFUSED, TOO_MANY_CONNECTIONS};
use jsonrpsee::server::middleware::rpc::RpcServiceBuilder;
use jsonrpsee::server::{BatchRequestConfig, Server, ServerConfig, stop_channel};
use serde_json::json;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Semaphore;

use super::connection::{refuse, serve_connection};
use super::slot::Counted;
use super::transport::{TransportRules, mark_plain_http};
use super::{RpcContext, build_module};
use ctxd_pipeline::limits::MAX_REFUSING_CONNECTIONS;
use ctxd_pipeline::limits::MAX_SUBSCRIPTIONS_PER_CONNECTION;
use ctxd_pipeline::limits::{Limits, MAX_RESPONSE_BYTES};

/// Logs the connection limit being hit: at once, then at most every 10 s with a count.
#[derive(Default)]
struct LimitLog {
    refused: AtomicU64,
    last: std::sync::Mutex<Option<Instant>>,
}

impl LimitLog {
    fn note(&self, limit: usize) {
        let n = self.refused.fetch_add(1, Ordering::Relaxed) + 1;
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        if last.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
            *last = Some(Instant::now());
            self.refused.store(0, Ordering::Relaxed);
            tracing::warn!(
                limit,
                refused = n,
                "connection limit reached: refusing new connections (--max-connections)"
            );
        }
    }
}

fn peer_allowed(stream: &UnixStream, own: u32) -> Result<(), String> {
    match stream.peer_cred() {
        Ok(cred) if cred.uid() == own || cred.uid() == 0 => Ok(()),
        Ok(cred) => Err(format!(
            "peer uid {} (pid {:?}) is neither the daemon's user ({own}) nor root",
            cred.uid(),
            cred.pid()
        )),
        Err(e) => Err(format!("cannot read peer credentials: {e}")),
    }
}

/// Serves JSON-RPC (HTTP POST through jsonrpsee, WebSocket through `ws`) on `listener`
/// until `shutdown` resolves or a client calls `daemon.shutdown`; then lets in-flight
/// connections finish.
pub(crate) async fn serve(
    listener: UnixListener,
    ctx: RpcContext,
    limits: &Limits,
    shutdown: impl Future<Output = ()>,
) -> Result<(), jsonrpsee::core::RegisterMethodError> {
    let stop_notify = ctx.shutdown.clone();
    let module = build_module(ctx)?;
    let ping = limits.ws_ping_interval;
    let config = ServerConfig::builder()
        .max_request_body_size(limits.max_request_bytes)
        .max_response_body_size(MAX_RESPONSE_BYTES)
        // Our slots below are the limit; jsonrpsee's own guard (which answers with a
        // plain-text 429) must never be the one that refuses.
        .max_connections(u32::MAX >> 1)
        // MAX_RPC_BATCH is enforced by `TransportRules` with our code: jsonrpsee's limit
        // answers -32010, our PROMPT_TOO_LONG.
        .set_batch_request_config(BatchRequestConfig::Unlimited)
        // WebSocket upgrades never reach jsonrpsee: `ws` serves them.
        .http_only()
        .build();
    let svc_builder = Server::builder()
        .set_config(config)
        .set_http_middleware(tower::ServiceBuilder::new().map_request(mark_plain_http))
        .set_rpc_middleware(RpcServiceBuilder::new().layer_fn(TransportRules))
        .to_service_builder();
    let methods: jsonrpsee::Methods = module.into();
    let (stop_handle, server_handle) = stop_channel();
    let ws = super::ws::Context {
        methods: methods.clone(),
        max_message: limits.max_request_bytes as usize,
        max_response: MAX_RESPONSE_BYTES as usize,
        max_subscriptions: MAX_SUBSCRIPTIONS_PER_CONNECTION,
        ping_interval: ping,
        stop: stop_handle.clone(),
    };
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let refusing = Arc::new(Semaphore::new(MAX_REFUSING_CONNECTIONS));
    let limit_log = LimitLog::default();
    let own = ctxd_protocol::socket::own_uid();
    let timeout = limits.request_timeout;
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Typically EMFILE: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
            () = stop_notify.notified() => break,
        };
        let refusal = if let Err(why) = peer_allowed(&stream, own) {
            tracing::warn!(reason = %why, "refusing a connection from another user");
            Some((
                "403 Forbidden",
                json!({"code": PEER_REFUSED, "message": format!("connection refused: {why}")}),
            ))
        } else {
            match slots.clone().try_acquire_owned() {
                Ok(slot) => {
                    let svc = svc_builder
                        .clone()
                        .build(methods.clone(), stop_handle.clone());
                    let stopped = stop_handle.clone().shutdown();
                    let ws = ws.clone();
                    tokio::spawn(async move {
                        let io = Counted {
                            stream,
                            _slot: slot,
                        };
                        if let Err(e) = serve_connection(io, svc, ws, timeout, stopped).await {
                            tracing::debug!(error = %e, "connection ended with an error");
                        }
                    });
                    continue;
                }
                Err(_) => {
                    limit_log.note(limits.max_connections);
                    Some((
                        "503 Service Unavailable",
                        json!({
                            "code": TOO_MANY_CONNECTIONS,
                            "message": format!(
                                "too many connections: the daemon serves at most {} at once (max_connections); retry later",
                                limits.max_connections
                            ),
                            "data": {"bound": "max_connections", "limit": limits.max_connections},
                        }),
                    ))
                }
            }
        };
        if let Some((status, error)) = refusal
            && let Ok(permit) = refusing.clone().try_acquire_owned()
        {
            tokio::spawn(async move {
                refuse(stream, status, error).await;
                drop(permit);
            });
        }
    }
    // Our own copies of the stop handle would keep `stopped()` pending forever.
    drop((stop_handle, ws));
    let _ = server_handle.stop();
    server_handle.stopped().await;
    Ok(())
}
