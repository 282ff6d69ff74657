//! The accept loop. Like mini-redis, it takes its listener and its shutdown signal from
//! the caller, so tests can run a real server in-process on a temp socket.

use std::future::Future;

use jsonrpsee::server::middleware::rpc::RpcServiceBuilder;
use jsonrpsee::server::{
    BatchRequestConfig, Server, ServerConfig, serve_with_graceful_shutdown, stop_channel,
};
use tokio::net::UnixListener;

use super::limits::{MAX_BATCH, MAX_BODY, MAX_CONNECTIONS, MAX_SUBSCRIPTIONS_PER_CONNECTION};
use super::transport::{TransportRules, mark_plain_http};
use super::{RpcContext, build_module};

/// Serves JSON-RPC (HTTP POST and WebSocket) on `listener` until `shutdown` resolves or a
/// client calls `daemon.shutdown`; then lets in-flight connections finish.
pub async fn serve(
    listener: UnixListener,
    ctx: RpcContext,
    shutdown: impl Future<Output = ()>,
) -> Result<(), jsonrpsee::core::RegisterMethodError> {
    let stop_notify = ctx.shutdown.clone();
    let module = build_module(ctx)?;
    let config = ServerConfig::builder()
        .max_request_body_size(MAX_BODY)
        .max_response_body_size(MAX_BODY)
        .set_batch_request_config(BatchRequestConfig::Limit(MAX_BATCH))
        .max_connections(MAX_CONNECTIONS)
        .max_subscriptions_per_connection(MAX_SUBSCRIPTIONS_PER_CONNECTION)
        .build();
    let svc_builder = Server::builder()
        .set_config(config)
        .set_http_middleware(tower::ServiceBuilder::new().map_request(mark_plain_http))
        .set_rpc_middleware(RpcServiceBuilder::new().layer_fn(TransportRules))
        .to_service_builder();
    let methods: jsonrpsee::Methods = module.into();
    let (stop_handle, server_handle) = stop_channel();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let svc = svc_builder.clone().build(methods.clone(), stop_handle.clone());
                    let stopped = stop_handle.clone().shutdown();
                    tokio::spawn(async move {
                        if let Err(e) = serve_with_graceful_shutdown(stream, svc, stopped).await {
                            tracing::debug!(error = %e, "connection ended with an error");
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
            _ = &mut shutdown => break,
            _ = stop_notify.notified() => break,
        }
    }
    // Our own copy of the stop handle would keep `stopped()` pending forever.
    drop(stop_handle);
    let _ = server_handle.stop();
    server_handle.stopped().await;
    Ok(())
}
