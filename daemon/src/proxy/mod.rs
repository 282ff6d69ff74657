//! The HTTP front door (`ctxd --http 127.0.0.1:PORT`): the Messages API and Chat
//! Completions served on loopback under a secret path, forwarded to an upstream, each
//! conversation recorded as a session (`conversation`).
//!
//! Observe mode forwards the client's body byte for byte and the upstream's answer chunk
//! by chunk as it arrives; the recording reads a copy of the chunks on the side and
//! appends only once the answer ended whole, so an error or a dropped stream records
//! nothing. Credentials pass through in headers and are never stored or logged.

mod chat;
mod conversation;
mod manage;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use ctxd_engine::Engine;
use futures::{Stream, StreamExt};
use http_body_util::{BodyExt, Full, Limited, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::Value;
use tokio::sync::mpsc;

pub(crate) use conversation::Conversations;

/// The public Messages API, the default upstream.
pub const DEFAULT_UPSTREAM_ANTHROPIC: &str = "https://api.anthropic.com";
/// The public Chat Completions API, the default OpenAI-format upstream.
pub const DEFAULT_UPSTREAM_OPENAI: &str = "https://api.openai.com";

/// The file in the home holding the front door's secret.
const SECRET_FILE: &str = "proxy-secret";
/// How long an upstream may stay silent (before its head, or between two chunks).
const UPSTREAM_IDLE: Duration = Duration::from_secs(600);
/// Headers that describe one hop, not the request; the rest go upstream as they came.
const HOP_HEADERS: [&str; 10] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
];

/// What `--http` asks for.
#[derive(Debug, Clone)]
pub struct ProxyOptions {
    pub addr: SocketAddr,
    pub upstream_anthropic: String,
    pub upstream_openai: String,
}

/// A running front door, shared by its connections and `proxy.status`.
pub(crate) struct Proxy {
    addr: SocketAddr,
    secret: String,
    upstream_anthropic: String,
    upstream_openai: String,
    client: reqwest::Client,
    engine: Arc<Engine>,
    max_request_bytes: usize,
    request_timeout: Duration,
    slots: Arc<tokio::sync::Semaphore>,
    pub(crate) conversations: Conversations,
    requests: AtomicU64,
    bytes_up: AtomicU64,
    bytes_down: AtomicU64,
}

/// What `proxy.status` reports.
pub(crate) struct Status {
    pub(crate) listen: String,
    pub(crate) base_url: String,
    pub(crate) sessions_seen: u64,
    pub(crate) requests: u64,
    pub(crate) bytes_up: u64,
    pub(crate) bytes_down: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("--http {0}: the front door listens on loopback only")]
    NotLoopback(SocketAddr),
    #[error("{0}")]
    Io(String),
}

/// The secret of this home, made once (0600) on first use.
fn secret(home: &Path) -> Result<String, ProxyError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = home.join(SECRET_FILE);
    if let Ok(text) = std::fs::read_to_string(&path) {
        let s = text.trim();
        if s.len() >= 32 && s.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Ok(s.to_string());
        }
    }
    let made = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| ProxyError::Io(format!("{}: {e}", path.display())))?;
    f.write_all(made.as_bytes())
        .map_err(|e| ProxyError::Io(format!("{}: {e}", path.display())))?;
    Ok(made)
}

impl Proxy {
    pub(crate) fn status(&self) -> Status {
        Status {
            listen: self.addr.to_string(),
            base_url: format!("http://{}/{}", self.addr, self.secret),
            sessions_seen: self.conversations.sessions_seen(),
            requests: self.requests.load(Ordering::Relaxed),
            bytes_up: self.bytes_up.load(Ordering::Relaxed),
            bytes_down: self.bytes_down.load(Ordering::Relaxed),
        }
    }
}

/// Binds the front door; serving starts with [`serve`].
pub(crate) async fn bind(
    options: &ProxyOptions,
    home: &Path,
    engine: Arc<Engine>,
    limits: &ctxd_pipeline::limits::Limits,
) -> Result<(Arc<Proxy>, tokio::net::TcpListener), ProxyError> {
    if !options.addr.ip().is_loopback() {
        return Err(ProxyError::NotLoopback(options.addr));
    }
    let secret = secret(home)?;
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| ProxyError::Io(format!("--http {}: {e}", options.addr)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| ProxyError::Io(e.to_string()))?;
    // An error means a provider is already installed, which is just as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .read_timeout(UPSTREAM_IDLE)
        .build()
        .map_err(|e| ProxyError::Io(format!("the HTTP client: {e}")))?;
    let proxy = Proxy {
        addr,
        secret,
        upstream_anthropic: options.upstream_anthropic.trim_end_matches('/').to_string(),
        upstream_openai: options.upstream_openai.trim_end_matches('/').to_string(),
        client,
        engine: engine.clone(),
        max_request_bytes: usize::try_from(limits.max_request_bytes).unwrap_or(usize::MAX),
        request_timeout: limits.request_timeout,
        slots: Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1))),
        conversations: Conversations::new(engine, proxy_cwd(home)),
        requests: AtomicU64::new(0),
        bytes_up: AtomicU64::new(0),
        bytes_down: AtomicU64::new(0),
    };
    tracing::info!(listen = %addr, "HTTP front door listening");
    Ok((Arc::new(proxy), listener))
}

fn proxy_cwd(home: &Path) -> PathBuf {
    home.to_path_buf()
}

/// Serves connections until `stopped` resolves.
pub(crate) async fn serve(
    proxy: Arc<Proxy>,
    listener: tokio::net::TcpListener,
    stopped: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(stopped);
    loop {
        let accepted = tokio::select! {
            () = &mut stopped => return,
            a = listener.accept() => a,
        };
        let Ok((stream, _)) = accepted else { continue };
        let _ = stream.set_nodelay(true);
        // Past `max_connections` a connection is answered, not served: its requests get
        // the API's overloaded error, which SDKs retry.
        let slot = proxy.slots.clone().try_acquire_owned().ok();
        let proxy = proxy.clone();
        tokio::spawn(async move {
            let timeout = proxy.request_timeout;
            let served = slot.is_some();
            let service = hyper::service::service_fn(move |req| {
                let proxy = proxy.clone();
                async move {
                    if !served {
                        return Ok::<_, Infallible>(error(
                            StatusCode::SERVICE_UNAVAILABLE,
                            "overloaded_error",
                            "ctxd's front door is serving all the connections it may",
                        ));
                    }
                    Ok(handle(&proxy, req).await)
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(timeout)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            drop(slot);
        });
    }
}

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// An error in the API's shape.
fn error(status: StatusCode, kind: &str, message: &str) -> Response<Body> {
    let body = serde_json::json!({"type": "error", "error": {"type": kind, "message": message}});
    let mut r = Response::new(
        Full::new(Bytes::from(body.to_string()))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

/// Compares without stopping at the first difference, so timing does not tell how much of
/// a guess was right.
fn same_secret(given: &str, secret: &str) -> bool {
    given.len() == secret.len()
        && given
            .bytes()
            .zip(secret.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Route {
    Messages,
    Other,
    Chat,
}

fn route(method: &hyper::Method, path: &str) -> Option<Route> {
    match (method.as_str(), path) {
        ("POST", "/v1/messages") => Some(Route::Messages),
        ("POST", "/v1/messages/count_tokens") => Some(Route::Other),
        ("GET", p) if p == "/v1/models" || p.starts_with("/v1/models/") => Some(Route::Other),
        ("POST", "/v1/chat/completions") => Some(Route::Chat),
        _ => None,
    }
}

async fn handle(proxy: &Arc<Proxy>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path();
    let rest = path
        .strip_prefix('/')
        .and_then(|p| p.split_once('/'))
        .filter(|(s, _)| same_secret(s, &proxy.secret))
        .map(|(_, r)| format!("/{r}"));
    let Some(rest) = rest else {
        return error(StatusCode::NOT_FOUND, "not_found_error", "Not found");
    };
    let Some(route) = route(req.method(), &rest) else {
        return error(
            StatusCode::NOT_FOUND,
            "not_found_error",
            "ctxd's front door serves POST /v1/messages, POST /v1/messages/count_tokens, GET /v1/models and POST /v1/chat/completions",
        );
    };
    let base = if route == Route::Chat {
        &proxy.upstream_openai
    } else {
        &proxy.upstream_anthropic
    };
    let url = match req.uri().query() {
        Some(q) => format!("{base}{rest}?{q}"),
        None => format!("{base}{rest}"),
    };
    let method = req.method().clone();
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in req.headers() {
        let n = name.as_str();
        // The answer is read (to record it), so it must come uncompressed; ctxd's own
        // headers are for ctxd.
        if HOP_HEADERS.contains(&n) || n == "accept-encoding" || n.starts_with("x-ctxd-") {
            continue;
        }
        headers.append(name.clone(), value.clone());
    }
    let betas: Vec<String> = req
        .headers()
        .get_all("anthropic-beta")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|b| b.trim().to_string())
        .filter(|b| !b.is_empty())
        .collect();
    let mode_header = req.headers().get("x-ctxd-mode").and_then(|v| {
        if v.as_bytes().eq_ignore_ascii_case(b"manage") {
            Some(ctxd_protocol::ProxyMode::Manage)
        } else if v.as_bytes().eq_ignore_ascii_case(b"observe") {
            Some(ctxd_protocol::ProxyMode::Observe)
        } else {
            None
        }
    });
    let session_header = req
        .headers()
        .get("x-ctxd-session")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = match tokio::time::timeout(
        proxy.request_timeout,
        Limited::new(req.into_body(), proxy.max_request_bytes).collect(),
    )
    .await
    {
        Ok(Ok(b)) => b.to_bytes(),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "request_too_large",
                &format!(
                    "the request body is over ctxd's {} bytes",
                    proxy.max_request_bytes
                ),
            );
        }
        Ok(Err(_)) => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "the request body could not be read",
            );
        }
        Err(_) => {
            return error(
                StatusCode::REQUEST_TIMEOUT,
                "timeout_error",
                "the request body did not arrive in time",
            );
        }
    };
    proxy.requests.fetch_add(1, Ordering::Relaxed);
    // What to record is decided before the body goes: a body that is not JSON is still
    // forwarded (the upstream says what is wrong with it) but records nothing.
    let recording = (route != Route::Other)
        .then(|| serde_json::from_slice::<Value>(&body).ok())
        .flatten()
        .and_then(|request| match route {
            Route::Chat => chat::as_messages_request(&request),
            _ => Some(request),
        })
        .and_then(|request| {
            let key = conversation::key(session_header.as_deref(), &request)?;
            Some((key, request))
        });
    // Without the header, the setting of the conversation's session decides. Chat
    // Completions are observed only.
    let mode = match (mode_header, &recording) {
        _ if route == Route::Chat => ctxd_protocol::ProxyMode::Observe,
        (Some(m), _) => m,
        (None, Some((key, _))) => proxy.conversations.mode(key).await,
        (None, None) => ctxd_protocol::ProxyMode::Observe,
    };
    if route == Route::Messages && mode == ctxd_protocol::ProxyMode::Manage {
        return manage::manage(proxy, &url, headers, &body, session_header).await;
    }
    let sent = body.len();
    let sent_at = chrono::Utc::now();
    let upstream = proxy
        .client
        .request(method, &url)
        .headers(headers)
        .body(body)
        .send()
        .await;
    let upstream = match upstream {
        Ok(r) => r,
        Err(e) => return unreachable_upstream(&e),
    };
    proxy
        .bytes_up
        .fetch_add(u64::try_from(sent).unwrap_or(u64::MAX), Ordering::Relaxed);
    forward_response(
        proxy,
        upstream,
        recording.map(|(key, request)| Recorder {
            key,
            request,
            streamed: false,
            chat: route == Route::Chat,
            answer_to: None,
            // A Chat Completions request keys another cache than its Messages reading.
            sent: (route == Route::Messages).then(|| conversation::Sent {
                betas: betas.clone(),
                at: sent_at,
            }),
        }),
    )
}

/// The upstream's answer on its way back, recorded by `recorder` when it succeeded.
fn forward_response(
    proxy: &Arc<Proxy>,
    upstream: reqwest::Response,
    recorder: Option<Recorder>,
) -> Response<Body> {
    let status = upstream.status();
    let records = recorder.is_some() && status.is_success();
    let mut response = Response::builder().status(status.as_u16());
    for (name, value) in upstream.headers() {
        // A recorded answer goes chunked: its end is sent only once it is recorded, so a
        // client that saw the whole answer finds it in the session.
        let length_kept = name.as_str() == "content-length" && !records;
        if HOP_HEADERS.contains(&name.as_str()) && !length_kept {
            continue;
        }
        response = response.header(name.as_str(), value.as_bytes());
    }
    let streamed = upstream
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let side = match recorder {
        Some(mut recorder) if status.is_success() => {
            let (tx, rx) = mpsc::unbounded_channel();
            recorder.streamed = streamed;
            let proxy = proxy.clone();
            // The recording reads its copy of the answer on its own, off the forwarding
            // path.
            tokio::spawn(async move { recorder.run(&proxy, rx).await });
            Some(tx)
        }
        _ => None,
    };
    let tee = Tee {
        inner: Box::pin(upstream.bytes_stream()),
        side,
        seen: 0,
        proxy: proxy.clone(),
        recorded: None,
    };
    let body = StreamBody::new(tee.map(|r| r.map(Frame::data)));
    match response.body(BodyExt::boxed_unsync(body)) {
        Ok(r) => r,
        Err(_) => error(
            StatusCode::BAD_GATEWAY,
            "api_error",
            "the upstream answered with a head ctxd cannot pass on",
        ),
    }
}

/// The answer when the upstream could not be reached: logged (without its URL), and a
/// 502 in the API's shape for the client.
fn unreachable_upstream(e: &reqwest::Error) -> Response<Body> {
    tracing::warn!(error = %without_url(e), "the upstream did not answer");
    error(
        StatusCode::BAD_GATEWAY,
        "api_error",
        "ctxd could not reach the upstream API",
    )
}

/// A reqwest error as text without its URL, which holds the secret-free upstream path
/// but may hold a user's query string.
fn without_url(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    if let Some(url) = e.url() {
        text = text.replace(url.as_str(), "the upstream");
    }
    text
}

/// What the recording is told of the answer.
enum Piece {
    Chunk(Bytes),
    /// The answer ended whole; told when the recording is done (or gave up), so the
    /// client's answer ends only once the session holds it.
    End(tokio::sync::oneshot::Sender<()>),
}

/// The upstream's answer on its way to the client, a copy of each chunk sent to the
/// recording. A failed or oversized answer drops the copy's channel, which tells the
/// recording to record nothing.
struct Tee {
    inner: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    side: Option<mpsc::UnboundedSender<Piece>>,
    seen: usize,
    proxy: Arc<Proxy>,
    recorded: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl Stream for Tee {
    type Item = std::io::Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(recorded) = self.recorded.as_mut() {
            return match Pin::new(recorded).poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(_) => {
                    self.recorded = None;
                    Poll::Ready(None)
                }
            };
        }
        match self.inner.as_mut().poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(chunk))) => {
                self.proxy.bytes_down.fetch_add(
                    u64::try_from(chunk.len()).unwrap_or(u64::MAX),
                    Ordering::Relaxed,
                );
                self.seen = self.seen.saturating_add(chunk.len());
                if self.seen > ctxd_pipeline::limits::MAX_PROVIDER_ANSWER_BYTES {
                    self.side = None;
                }
                if let Some(side) = &self.side
                    && side.send(Piece::Chunk(chunk.clone())).is_err()
                {
                    self.side = None;
                }
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(Some(Err(e))) => {
                self.side = None;
                Poll::Ready(Some(Err(std::io::Error::other(without_url(&e)))))
            }
            Poll::Ready(None) => {
                if let Some(side) = self.side.take() {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    if side.send(Piece::End(tx)).is_ok() {
                        self.recorded = Some(rx);
                        return self.poll_next(cx);
                    }
                }
                Poll::Ready(None)
            }
        }
    }
}

/// Records one exchange once its answer has ended whole.
struct Recorder {
    key: String,
    request: Value,
    streamed: bool,
    /// The answer is a Chat Completions one, folded into the message it stands for.
    chat: bool,
    /// Managed: the session the request's messages already went to; only the answer is
    /// left to append.
    answer_to: Option<String>,
    /// Observed: how the client's own request went up.
    sent: Option<conversation::Sent>,
}

impl Recorder {
    async fn run(self, proxy: &Proxy, mut rx: mpsc::UnboundedReceiver<Piece>) {
        // Dropped (and so told) on every path out.
        let mut done = None;
        let answer = if self.streamed {
            fold_stream(&mut rx, &mut done, self.chat).await
        } else {
            let mut all = Vec::new();
            while let Some(piece) = rx.recv().await {
                match piece {
                    Piece::Chunk(c) => all.extend_from_slice(&c),
                    Piece::End(tx) => {
                        done = Some(tx);
                        break;
                    }
                }
            }
            if done.is_some() {
                let whole = serde_json::from_slice::<Value>(&all)
                    .map_err(|e| format!("the answer is not JSON: {e}"));
                if self.chat {
                    whole.and_then(|a| ctxd_providers::ChatFolder::whole(&a))
                } else {
                    whole
                }
            } else {
                Err("the answer did not end".to_string())
            }
        };
        let answer = match answer {
            Ok(a) if a.get("type").and_then(Value::as_str) == Some("message") => a,
            Ok(_) => {
                tracing::debug!("the answer is not a message; nothing recorded");
                return;
            }
            Err(e) => {
                tracing::debug!(reason = %e, "the exchange is not recorded");
                return;
            }
        };
        let recorded = match &self.answer_to {
            Some(session) => proxy
                .conversations
                .record_answer(&self.key, session, answer)
                .await
                .map(|()| session.clone()),
            None => proxy
                .conversations
                .record(
                    &self.key,
                    &self.request,
                    Some(answer),
                    false,
                    self.sent.as_ref(),
                )
                .await
                .map(|r| r.session_id),
        };
        match recorded {
            Ok(session) => tracing::debug!(%session, "proxied exchange recorded"),
            Err(e) => tracing::warn!(reason = %e, "a proxied exchange could not be recorded"),
        }
        if let Some(done) = done {
            let _ = done.send(());
        }
    }
}

/// The streamed answer folded into its message, by the engine's own folding (of Chat
/// Completions chunks when `chat`).
async fn fold_stream(
    rx: &mut mpsc::UnboundedReceiver<Piece>,
    done: &mut Option<tokio::sync::oneshot::Sender<()>>,
    chat: bool,
) -> Result<Value, String> {
    use eventsource_stream::Eventsource;
    let end = Arc::new(std::sync::Mutex::new(None));
    let seen_end = end.clone();
    let chunks = futures::stream::unfold(rx, move |rx| {
        let seen_end = seen_end.clone();
        async move {
            match rx.recv().await {
                Some(Piece::Chunk(c)) => Some((Ok::<_, Infallible>(c), rx)),
                Some(Piece::End(tx)) => {
                    *ctxd_pipeline::sync::lock(&seen_end) = Some(tx);
                    None
                }
                None => None,
            }
        }
    });
    let mut events = std::pin::pin!(chunks.eventsource());
    let mut folder = ctxd_providers::MessageFolder::default();
    let mut chat_folder = ctxd_providers::ChatFolder::default();
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| e.to_string())?;
        if chat && event.data.trim() == "[DONE]" {
            continue;
        }
        let data: Value = serde_json::from_str(&event.data)
            .map_err(|e| format!("an event that is not JSON: {e}"))?;
        if chat {
            chat_folder.chunk(&data)?;
        } else {
            folder.apply(&data)?;
        }
    }
    *done = ctxd_pipeline::sync::lock(&end).take();
    if done.is_none() {
        return Err("the stream did not end".to_string());
    }
    if chat {
        chat_folder.finish()
    } else {
        folder.finish()
    }
}
