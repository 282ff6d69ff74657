//! What depends on the transport a call came over: subscriptions need a WebSocket,
//! `session.unsubscribe` takes its id by name like every other method, and a batch is
//! bounded with our own error code (jsonrpsee's batch codes collide with ours).

use std::borrow::Cow;

use ctxd_protocol::{RESPONSE_TOO_BIG, TOO_MANY_CALLS_IN_BATCH, WEBSOCKET_REQUIRED};
use jsonrpsee::MethodResponse;
use jsonrpsee::core::middleware::{Batch, BatchEntry, BatchEntryErr, Notification, RpcServiceT};
use jsonrpsee::server::HttpRequest;
use jsonrpsee::types::error::TOO_BIG_BATCH_RESPONSE_CODE;
use jsonrpsee::types::{ErrorObjectOwned, Id, Request};

use ctxd_pipeline::limits::{MAX_RESPONSE_BYTES, MAX_RPC_BATCH};
use serde_json::Value;
use serde_json::value::RawValue;

/// Marks a request that arrived as a plain HTTP POST (not a WebSocket upgrade).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlainHttp;

/// HTTP middleware: tags plain HTTP requests so the RPC layer can tell the transports
/// apart (WebSocket calls inherit the upgrade request's extensions, untagged).
pub(crate) fn mark_plain_http<B>(mut req: HttpRequest<B>) -> HttpRequest<B> {
    if !jsonrpsee::server::ws::is_upgrade_request(&req) {
        req.extensions_mut().insert(PlainHttp);
    }
    req
}

/// RPC middleware applying the transport rules before a call reaches its method.
#[derive(Debug, Clone)]
pub(crate) struct TransportRules<S>(pub S);

impl<S> RpcServiceT for TransportRules<S>
where
    S: RpcServiceT<
            MethodResponse = MethodResponse,
            BatchResponse = MethodResponse,
            NotificationResponse = MethodResponse,
        > + Send
        + Sync
        + Clone
        + 'static,
{
    type MethodResponse = MethodResponse;
    type NotificationResponse = MethodResponse;
    type BatchResponse = MethodResponse;

    fn call<'a>(
        &self,
        mut req: Request<'a>,
    ) -> impl Future<Output = Self::MethodResponse> + Send + 'a {
        let service = self.0.clone();
        async move {
            match apply_rules(&mut req) {
                Ok(()) => service.call(req).await,
                Err(e) => MethodResponse::error(req.id, e),
            }
        }
    }

    fn batch<'a>(
        &self,
        mut batch: Batch<'a>,
    ) -> impl Future<Output = Self::BatchResponse> + Send + 'a {
        let service = self.0.clone();
        async move {
            if batch.len() > MAX_RPC_BATCH as usize {
                return MethodResponse::error(Id::Null, too_many_calls(batch.len()));
            }
            for entry in batch.iter_mut() {
                if let Ok(BatchEntry::Call(req)) = entry
                    && let Err(e) = apply_rules(req)
                {
                    *entry = Err(BatchEntryErr::new(req.id.clone(), e));
                }
            }
            own_codes(service.batch(batch).await)
        }
    }

    fn notification<'a>(
        &self,
        n: Notification<'a>,
    ) -> impl Future<Output = Self::NotificationResponse> + Send + 'a {
        self.0.notification(n)
    }
}

/// A batch longer than `MAX_RPC_BATCH`: refused whole, before any call runs, with our
/// code (jsonrpsee's own limit answers -32010, which is our `PROMPT_TOO_LONG`, so the
/// server is configured without it).
fn too_many_calls(calls: usize) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(
        TOO_MANY_CALLS_IN_BATCH,
        format!(
            "too many calls in a batch: {calls}, the daemon takes at most {MAX_RPC_BATCH} \
             (max_batch_calls); split the batch"
        ),
        Some(serde_json::json!({
            "bound": "max_batch_calls",
            "limit": MAX_RPC_BATCH,
            "calls": calls,
        })),
    )
}

/// jsonrpsee answers a batch whose whole response is too large with -32011, which is
/// our `COMPACTION_FAILED`: that answer becomes `RESPONSE_TOO_BIG` (-32008, what a single
/// oversized response gets). A batch's own answers (an array) pass unchanged.
fn own_codes(rp: MethodResponse) -> MethodResponse {
    if rp.is_batch() || rp.as_error_code() != Some(TOO_BIG_BATCH_RESPONSE_CODE) {
        return rp;
    }
    let extensions = rp.extensions().clone();
    MethodResponse::error(
        Id::Null,
        ErrorObjectOwned::owned(
            RESPONSE_TOO_BIG,
            format!(
                "the batch's response would exceed {MAX_RESPONSE_BYTES} bytes \
                 (max_response_bytes); the calls up to the overflow ran: send fewer calls \
                 per batch"
            ),
            Some(serde_json::json!({
                "bound": "max_response_bytes",
                "limit": MAX_RESPONSE_BYTES,
            })),
        ),
    )
    .with_extensions(extensions)
}

/// The subscribe and unsubscribe methods of every subscription, as the method table
/// names them.
static SUBSCRIPTION_METHODS: std::sync::LazyLock<Vec<(&'static str, &'static str)>> =
    std::sync::LazyLock::new(|| {
        ctxd_protocol::method_table()
            .iter()
            .filter_map(|m| m.subscription.as_ref().map(|s| (m.name, s.unsubscribe)))
            .collect()
    });

/// The transport rules for one call: refuse subscriptions over plain HTTP, take an
/// unsubscribe's id by name.
fn apply_rules(req: &mut Request<'_>) -> Result<(), ErrorObjectOwned> {
    let method: &str = &req.method;
    let unsubscribe = SUBSCRIPTION_METHODS.iter().any(|(_, u)| *u == method);
    let subscription_method = unsubscribe || SUBSCRIPTION_METHODS.iter().any(|(s, _)| *s == method);
    if subscription_method && req.extensions.get::<PlainHttp>().is_some() {
        return Err(websocket_required(&req.method));
    }
    if unsubscribe && let Some(positional) = unsubscribe_params(req.params.as_deref())? {
        req.params = Some(Cow::Owned(positional));
    }
    Ok(())
}

fn websocket_required(method: &str) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(
        WEBSOCKET_REQUIRED,
        format!(
            "{method} needs a WebSocket connection: subscriptions stream notifications, \
             which a plain HTTP POST cannot carry; connect with a WebSocket upgrade on the \
             same socket"
        ),
        Some(serde_json::json!({ "method": method, "transport": "http" })),
    )
}

/// `{"subscription": id}` → `[id]`, the form jsonrpsee's unsubscribe reads. Positional
/// params pass unchanged; any other member is refused, as for every method.
fn unsubscribe_params(
    params: Option<&RawValue>,
) -> Result<Option<Box<RawValue>>, ErrorObjectOwned> {
    let invalid = |field: &str, reason: &str| {
        ErrorObjectOwned::owned(
            ctxd_protocol::INVALID_PARAMS,
            format!("invalid params: {field}: {reason}"),
            Some(serde_json::json!({ "field": field, "reason": reason })),
        )
    };
    let Some(raw) = params else {
        return Err(invalid("subscription", "missing field `subscription`"));
    };
    let value: Value =
        serde_json::from_str(raw.get()).map_err(|e| invalid("params", &e.to_string()))?;
    let Value::Object(mut map) = value else {
        return Ok(None);
    };
    let id = map
        .remove("subscription")
        .ok_or_else(|| invalid("subscription", "missing field `subscription`"))?;
    if let Some(unknown) = map.keys().next() {
        return Err(invalid(
            unknown,
            &format!("unknown field `{unknown}`, expected `subscription`"),
        ));
    }
    serde_json::value::to_raw_value(&[id])
        .map(Some)
        .map_err(|e| invalid("subscription", &e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_string()).unwrap()
    }

    #[test]
    fn unsubscribe_by_name_becomes_positional() {
        let p = unsubscribe_params(Some(&raw(r#"{"subscription":42}"#))).unwrap();
        assert_eq!(p.unwrap().get(), "[42]");
        assert!(unsubscribe_params(Some(&raw("[42]"))).unwrap().is_none());
        let e = unsubscribe_params(Some(&raw(r#"{"subscription":1,"x":2}"#))).unwrap_err();
        assert_eq!(
            e.data().unwrap().get(),
            r#"{"field":"x","reason":"unknown field `x`, expected `subscription`"}"#
        );
        assert!(unsubscribe_params(Some(&raw("{}"))).is_err());
    }

    /// jsonrpsee's "batch response too large" (-32011, our COMPACTION_FAILED) reaches
    /// the client as RESPONSE_TOO_BIG; a batch's array of answers, whatever codes it
    /// holds, passes unchanged.
    #[test]
    fn an_oversized_batch_response_gets_the_response_too_big_code() {
        let rp = MethodResponse::error(
            Id::Null,
            jsonrpsee::types::error::reject_too_big_batch_response(10),
        );
        let out = own_codes(rp);
        assert_eq!(out.as_error_code(), Some(RESPONSE_TOO_BIG));
        let v: Value = serde_json::from_str(out.as_json().get()).unwrap();
        assert_eq!(v["error"]["data"]["bound"], "max_response_bytes");
        // A batch whose call failed with our COMPACTION_FAILED is answered as it is.
        let mut answers = jsonrpsee::core::server::BatchResponseBuilder::new_with_limit(1 << 20);
        answers
            .append(MethodResponse::error(
                Id::Number(1),
                ErrorObjectOwned::owned(ctxd_protocol::COMPACTION_FAILED, "x", None::<()>),
            ))
            .unwrap();
        let batch = MethodResponse::from_batch(answers.finish());
        let text = batch.as_json().get().to_string();
        assert_eq!(own_codes(batch).as_json().get(), text);
        assert!(text.contains("-32011"));
    }
}
