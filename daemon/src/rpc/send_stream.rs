//! `context.send_stream`: a `context.send` turn whose progress reaches the caller as it
//! comes. The turn runs to its end even when the subscriber goes; leaving only cancels
//! it (as `context.cancel` does), so an answer already being appended is not torn.

use std::pin::pin;
use std::sync::Arc;

use ctxd_protocol::*;
use jsonrpsee::{RpcModule, SubscriptionMessage, SubscriptionSink};

use super::context::{caller_of, count, parse};
use super::outbox::{LAG_GRACE, Outbox};
use super::{RpcContext, to_rpc_error};

pub(super) fn register(
    m: &mut RpcModule<RpcContext>,
) -> Result<(), jsonrpsee::core::RegisterMethodError> {
    m.register_subscription(
        method::ContextSendStream::NAME,
        method::ContextSendStream::NOTIFICATION,
        method::ContextSendStream::UNSUBSCRIBE,
        |params, pending, ctx, ext| async move {
            // Counted when the stream opens or is refused; the turn itself is counted by
            // the `send` counters.
            let started = std::time::Instant::now();
            let answered = |r: &Result<(), jsonrpsee::types::ErrorObjectOwned>| {
                count(&ctx.metrics, method::ContextSendStream::NAME, started, r);
            };
            let mut p: <method::ContextSendStream as Method>::Params = match parse(&params) {
                Ok(p) => p,
                Err(e) => {
                    answered(&Err(e.clone()));
                    pending.reject(e).await;
                    return Ok(());
                }
            };
            let engine = ctx.engine.clone();
            let mut refused = engine
                .on_thread(&mut p.session_id, &mut p.agent_id)
                .await
                .err();
            if refused.is_none() {
                // Refused before the stream opens, as `context.send` would be; the turn
                // itself checks again (two callers may pass this at once).
                refused = engine.check_turn(&p.session_id).await.err();
            }
            if let Some(e) = refused {
                let e = to_rpc_error(e);
                answered(&Err(e.clone()));
                pending.reject(e).await;
                return Ok(());
            }
            let sink = pending.accept().await?;
            answered(&Ok(()));
            let session_id = p.session_id.clone();
            let outbox = ext.get::<Arc<Outbox>>().cloned();
            let (tx, mut rx) = ctxd_providers::progress_channel();
            // Subscriptions run on WebSocket connections only, which always have an id;
            // no connection has the fallback's.
            let caller = caller_of(&ext).unwrap_or(u64::MAX);
            let mut turn = pin!(ctxd_engine::as_caller(caller, engine.send_streamed(p, &tx)));
            let mut listening = true;
            let result = loop {
                tokio::select! {
                    result = &mut turn => break result,
                    Some(event) = rx.recv() => {
                        if listening && !deliver(&sink, outbox.as_deref(), &event).await? {
                            listening = false;
                            engine.cancel_turn_of(&session_id);
                        }
                    }
                    () = sink.closed(), if listening => {
                        listening = false;
                        engine.cancel_turn_of(&session_id);
                    }
                }
            };
            if !listening {
                return Ok(());
            }
            while let Some(event) = rx.try_recv() {
                if !deliver(&sink, outbox.as_deref(), &event).await? {
                    return Ok(());
                }
            }
            let last = match result {
                Ok(response) => TurnEvent::Finished {
                    response: Box::new(response),
                },
                Err(e) => {
                    let e = to_rpc_error(e);
                    TurnEvent::Failed {
                        code: e.code(),
                        message: e.message().to_string(),
                        data: e.data().and_then(|d| serde_json::from_str(d.get()).ok()),
                    }
                }
            };
            deliver(&sink, outbox.as_deref(), &last).await?;
            Ok(())
        },
    )?;
    Ok(())
}

/// `false` when the subscriber is gone, or its connection stayed full past `LAG_GRACE`
/// (a reader that does not read leaves, as one that closes does).
async fn deliver(
    sink: &SubscriptionSink,
    outbox: Option<&Outbox>,
    event: &TurnEvent,
) -> Result<bool, serde_json::Error> {
    if let Some(outbox) = outbox
        && !outbox.room(Some(LAG_GRACE)).await
    {
        tracing::debug!("a send_stream reader fell too far behind; cancelling its turn");
        return Ok(false);
    }
    let msg: SubscriptionMessage = serde_json::value::to_raw_value(event)?.into();
    Ok(sink.send(msg).await.is_ok())
}
