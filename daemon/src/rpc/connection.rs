//! One accepted connection: HTTP/1.1 (POST, or a WebSocket upgrade) served by hyper with
//! deadlines, so a client that connects and sends nothing, or never finishes its body,
//! cannot hold a connection slot for long. Also the refusal answer for connections that
//! are not served.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Body, Bytes, Frame, Incoming};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use super::ids::{Ids, Swaps, examine};
use super::slot::Counted;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request body that must arrive completely before a deadline.
pub(crate) struct DeadlineBody {
    inner: Incoming,
    deadline: Pin<Box<tokio::time::Sleep>>,
    limit: Duration,
}

impl Body for DeadlineBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            let msg = format!(
                "request body not received within {} ms (request_timeout)",
                self.limit.as_millis()
            );
            return Poll::Ready(Some(Err(msg.into())));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// What the service failed with (hyper only logs it). A concrete type, because a boxed
/// `dyn Error` here trips the compiler's lifetime inference inside `tokio::spawn`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ServiceError(String);

/// Serves one connection until it closes or `stopped` resolves (then gracefully). A
/// WebSocket upgrade is served by our own loop (`ws`), anything else by `svc`, with the
/// body read here first: a call whose id jsonrpsee cannot hold (`ids`) has it swapped
/// before `svc` decodes it, and back in the answer.
pub(crate) async fn serve_connection<S>(
    io: Counted,
    svc: S,
    ws: super::ws::Context,
    timeout: Duration,
    stopped: impl Future<Output = ()>,
) -> Result<(), hyper::Error>
where
    S: tower_service::Service<
            hyper::Request<Full<Bytes>>,
            Response = hyper::Response<jsonrpsee::server::HttpBody>,
            Error = BoxError,
        > + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    let max_request = u32::try_from(ws.max_message).unwrap_or(u32::MAX);
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let mut svc = svc.clone();
        let upgrade = jsonrpsee::server::ws::is_upgrade_request(&req).then(|| ws.clone());
        let req = req.map(|inner| DeadlineBody {
            inner,
            deadline: Box::pin(tokio::time::sleep(timeout)),
            limit: timeout,
        });
        async move {
            if let Some(ws) = upgrade {
                return Ok::<_, ServiceError>(super::ws::accept(req, ws));
            }
            let (req, swaps) = match read_call(req, max_request).await {
                Ok(read) => read,
                Err(answer) => return Ok(answer),
            };
            let served = match std::future::poll_fn(|cx| svc.poll_ready(cx)).await {
                Ok(()) => svc.call(req).await,
                Err(e) => Err(e),
            };
            let response = served.map_err(|e| ServiceError(e.to_string()))?;
            match swaps {
                Some(swaps) => Ok(restore_ids(response, &swaps).await),
                None => Ok(response),
            }
        }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(timeout)
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    tokio::pin!(conn, stopped);
    tokio::select! {
        res = &mut conn => res,
        () = &mut stopped => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    }
}

type HttpResponse = hyper::Response<jsonrpsee::server::HttpBody>;

/// A POST's whole body, with its ids made ones jsonrpsee holds; other requests pass with
/// an empty body (jsonrpsee refuses them without reading one). `Err` is the answer to a
/// body that cannot be read, as jsonrpsee gives it.
async fn read_call(
    req: hyper::Request<DeadlineBody>,
    max: u32,
) -> Result<(hyper::Request<Full<Bytes>>, Option<Swaps>), HttpResponse> {
    use jsonrpsee::server::http::response;
    let (parts, body) = req.into_parts();
    if parts.method != hyper::Method::POST {
        return Ok((hyper::Request::from_parts(parts, Full::default()), None));
    }
    let declared = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > u64::from(max)) {
        return Err(response::too_large(max));
    }
    let bytes = match Limited::new(body, max as usize).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<LengthLimitError>() => return Err(response::too_large(max)),
        Err(e) => {
            tracing::warn!(error = %e, "reading a request body failed");
            return Err(response::internal_error());
        }
    };
    let (bytes, swaps) = match examine(&bytes) {
        Ids::AsTheyAre => (bytes, None),
        Ids::Swapped { body, swaps } => (Bytes::from(body), Some(swaps)),
        Ids::Refused(answer) => return Err(response::ok_response(answer)),
    };
    Ok((hyper::Request::from_parts(parts, Full::new(bytes)), swaps))
}

/// `response` with the client's own ids back in place of ours.
async fn restore_ids(response: HttpResponse, swaps: &Swaps) -> HttpResponse {
    let (parts, body) = response.into_parts();
    let text = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            tracing::warn!(error = %e, "reading an answer back failed");
            return jsonrpsee::server::http::response::internal_error();
        }
    };
    let restored = swaps.restore(&String::from_utf8_lossy(&text));
    let mut parts = parts;
    parts.headers.remove(hyper::header::CONTENT_LENGTH);
    hyper::Response::from_parts(parts, jsonrpsee::server::HttpBody::from(restored))
}

/// Answers a connection that will not be served with a JSON-RPC error in an HTTP response
/// (what both HTTP and WebSocket clients can read), after giving its request head a moment
/// to arrive so the client is not cut off mid-write.
pub(crate) async fn refuse(mut stream: UnixStream, status: &str, error: serde_json::Value) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    let read_head = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), read_head).await;
    let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": error}).to_string();
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}
