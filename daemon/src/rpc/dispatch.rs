//! Calls to the method table for our own WebSocket connections: what jsonrpsee's
//! `RpcService` and `handle_rpc_call` do (jsonrpsee-server 0.26, MIT), which it keeps
//! private to its own transport. The decoding, the error answers and the batch rules are
//! theirs, so a call gets the same answer over either transport.
//!
//! Why the connection loop is ours rather than jsonrpsee's WebSocket server: a client
//! that never reads must not grow the daemon, so each connection counts what is queued
//! for it in bytes and stops being read past 16 MiB (`outbox.rs`); jsonrpsee's transport
//! bounds its queue in messages, and one answer can be hundreds of megabytes. The ids
//! jsonrpsee cannot hold are rewritten on the raw text before decoding (`ids.rs`), which
//! its transport has no place for either. The framing, handshake and masking are
//! tungstenite's; only this adapter is a copy, built on jsonrpsee's public types
//! (`MethodCallback`, `MethodSink`, `BoundedSubscriptions`), so a release that changes
//! them fails to compile here rather than answering differently.

use std::sync::Arc;

use futures::future::{BoxFuture, FutureExt};
use jsonrpsee::MethodResponse;
use jsonrpsee::core::middleware::{Batch, BatchEntry, BatchEntryErr, Notification, RpcServiceT};
use jsonrpsee::core::server::{
    BatchResponseBuilder, BoundedSubscriptions, MethodCallback, MethodSink, Methods,
    SubscriptionState,
};
use jsonrpsee::server::IdProvider;
use jsonrpsee::types::error::{ErrorCode, reject_too_many_subscriptions};
use jsonrpsee::types::{ErrorObject, Id, Params, Request};
use jsonrpsee::{ConnectionId, Extensions};
use serde_json::value::RawValue;

/// One connection's view of the method table: its id, its sink for subscription
/// messages, its subscription slots.
#[derive(Clone)]
pub(crate) struct Dispatch {
    pub(crate) methods: Methods,
    pub(crate) conn_id: ConnectionId,
    pub(crate) max_response: usize,
    pub(crate) subscriptions: BoundedSubscriptions,
    pub(crate) sink: MethodSink,
    pub(crate) id_provider: Arc<dyn IdProvider>,
}

impl RpcServiceT for Dispatch {
    type MethodResponse = MethodResponse;
    type NotificationResponse = MethodResponse;
    type BatchResponse = MethodResponse;

    fn call<'a>(&self, req: Request<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        let Request {
            id,
            method,
            params,
            extensions,
            ..
        } = req;
        let params = Params::new(params.as_ref().map(|p| RawValue::get(p)));
        let ready = |rp: MethodResponse| futures::future::ready(rp).boxed();
        let Some((_, callback)) = self.methods.method_with_name(&method) else {
            let rp = MethodResponse::error(id, ErrorObject::from(ErrorCode::MethodNotFound));
            return ready(rp.with_extensions(extensions));
        };
        let conn_id = self.conn_id;
        let max = self.max_response;
        let fut: BoxFuture<'a, MethodResponse> = match callback {
            MethodCallback::Async(callback) => (callback)(
                id.into_owned(),
                params.into_owned(),
                conn_id,
                max,
                extensions,
            ),
            MethodCallback::Sync(callback) => ready((callback)(id, params, max, extensions)),
            MethodCallback::Subscription(callback) => match self.subscriptions.acquire() {
                Some(permit) => {
                    let state = SubscriptionState {
                        conn_id,
                        id_provider: &*self.id_provider,
                        subscription_permit: permit,
                    };
                    (callback)(id, params, self.sink.clone(), state, extensions)
                }
                None => {
                    let refusal = reject_too_many_subscriptions(self.subscriptions.max());
                    ready(MethodResponse::error(id, refusal).with_extensions(extensions))
                }
            },
            // Unsubscribing is never refused for want of a slot.
            MethodCallback::Unsubscription(callback) => {
                ready((callback)(id, params, conn_id, max, extensions))
            }
        };
        fut
    }

    fn batch<'a>(&self, batch: Batch<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        let mut answers = BatchResponseBuilder::new_with_limit(self.max_response);
        let service = self.clone();
        async move {
            let mut got_notification = false;
            for entry in batch {
                let rp = match entry {
                    Ok(BatchEntry::Call(req)) => service.call(req).await,
                    Ok(BatchEntry::Notification(n)) => {
                        got_notification = true;
                        service.notification(n).await;
                        continue;
                    }
                    Err(err) => {
                        let (err, id) = err.into_parts();
                        MethodResponse::error(id, err)
                    }
                };
                if let Err(too_big) = answers.append(rp) {
                    return too_big;
                }
            }
            if answers.is_empty() && got_notification {
                MethodResponse::notification()
            } else {
                // An empty batch is answered as an invalid request.
                MethodResponse::from_batch(answers.finish())
            }
        }
    }

    fn notification<'a>(
        &self,
        n: Notification<'a>,
    ) -> impl Future<Output = MethodResponse> + Send + 'a {
        futures::future::ready(MethodResponse::notification().with_extensions(n.extensions))
    }
}

/// A service that answers calls, notifications and batches alike with a
/// `MethodResponse`: `Dispatch`, and the middleware in front of it.
pub(crate) trait Answers:
    RpcServiceT<
        MethodResponse = MethodResponse,
        BatchResponse = MethodResponse,
        NotificationResponse = MethodResponse,
    > + Send
{
}

impl<S> Answers for S where
    S: RpcServiceT<
            MethodResponse = MethodResponse,
            BatchResponse = MethodResponse,
            NotificationResponse = MethodResponse,
        > + Send
{
}

/// Answers one WebSocket message: a call, a notification, or a batch of them. A message
/// that is neither an object nor an array is a parse error.
pub(crate) async fn handle_message<S>(
    data: &[u8],
    service: &S,
    extensions: &Extensions,
) -> MethodResponse
where
    S: Answers,
{
    let first = data.iter().take(128).position(|b| !b.is_ascii_whitespace());
    let body = match first {
        Some(at) => &data[at..],
        None => &[][..],
    };
    match body.first() {
        Some(b'{') => single(body, service, extensions).await,
        Some(b'[') => batch(body, service, extensions).await,
        _ => MethodResponse::error(Id::Null, ErrorObject::from(ErrorCode::ParseError)),
    }
}

async fn single<S>(body: &[u8], service: &S, extensions: &Extensions) -> MethodResponse
where
    S: Answers,
{
    if let Ok(mut req) = serde_json::from_slice::<Request>(body) {
        *req.extensions_mut() = extensions.clone();
        service.call(req).await
    } else if let Ok(mut n) = serde_json::from_slice::<Notification>(body) {
        *n.extensions_mut() = extensions.clone();
        service.notification(n).await
    } else {
        let (id, code) = jsonrpsee::core::server::helpers::prepare_error(body);
        MethodResponse::error(id, ErrorObject::from(code))
    }
}

async fn batch<S>(body: &[u8], service: &S, extensions: &Extensions) -> MethodResponse
where
    S: Answers,
{
    let Ok(calls) = serde_json::from_slice::<Vec<&RawValue>>(body) else {
        return MethodResponse::error(Id::Null, ErrorObject::from(ErrorCode::ParseError));
    };
    let mut entries = Vec::with_capacity(calls.len());
    for c in calls {
        if let Ok(mut req) = serde_json::from_str::<Request>(c.get()) {
            *req.extensions_mut() = extensions.clone();
            entries.push(Ok(BatchEntry::Call(req)));
        } else if let Ok(mut n) = serde_json::from_str::<Notification>(c.get()) {
            *n.extensions_mut() = extensions.clone();
            entries.push(Ok(BatchEntry::Notification(n)));
        } else {
            let id = serde_json::from_str::<jsonrpsee::types::InvalidRequest>(c.get())
                .map_or(Id::Null, |e| e.id);
            entries.push(Err(BatchEntryErr::new(
                id,
                ErrorCode::InvalidRequest.into(),
            )));
        }
    }
    service.batch(Batch::from(entries)).await
}
