//! WebSocket connections, served by one task each on tokio-tungstenite.
//!
//! jsonrpsee's own WebSocket transport spends three tasks on a call: the reader spawns
//! the call, which hands its answer over a channel to a writer, and each hand-over can be
//! a thread wake-up. Here one task reads a message, runs its call until the call first
//! has to wait, and queues the answer itself; most calls finish in that first run. A call
//! that has to wait (the store, a hook, a model) goes on in a task of its own and sends
//! its answer through the connection's sink, as subscription messages do, while the
//! connection keeps reading.
//!
//! The socket is never waited on for writing alone: reading and writing are driven
//! together, so a client that writes without reading cannot deadlock the two. What is
//! queued for the client is counted in bytes (`Outbox`): past the bound the connection is
//! not read, and at most `MAX_CALLS_IN_FLIGHT` calls run in their own tasks, so the
//! memory a client that never reads can hold is bounded.
//!
//! The framing, masking, UTF-8 and close-code rules of RFC 6455 are tungstenite's. The
//! calls go through `Dispatch` and `TransportRules`, so their answers are those of the
//! HTTP transport, which stays jsonrpsee's.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use futures::{Sink, Stream};
use hyper::header::{CONNECTION, HeaderValue, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use hyper_util::rt::TokioIo;
use jsonrpsee::core::server::{BoundedSubscriptions, MethodSink, Methods};
use jsonrpsee::server::{HttpBody, RandomIntegerIdProvider, StopHandle};
use jsonrpsee::types::error::reject_too_big_request;
use jsonrpsee::types::{ErrorObject, Id, Response, ResponsePayload};
use jsonrpsee::{ConnectionId, Extensions, MethodResponse};
use serde_json::value::RawValue;
use tokio::sync::{Semaphore, mpsc};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::error::CapacityError;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message, handshake::derive_accept_key};

use super::dispatch::{Dispatch, handle_message};
use super::ids::{Ids, Swaps, examine};
use super::outbox::{Counted as Total, Outbox};
use super::oversize::Oversize;
use super::slot::Counted;
use super::transport::TransportRules;
use ctxd_pipeline::limits::MAX_CALLS_IN_FLIGHT;
use ctxd_pipeline::limits::MAX_WS_QUEUED_BYTES;

/// Messages the connection's sink holds before its senders wait (jsonrpsee's default).
/// Whatever comes through it is taken at once and counted in the outbox.
const MESSAGE_BUFFER: usize = 1024;
/// Bytes of pongs waiting for the socket past which the client is not read: a client
/// that reads has a few pings outstanding, and tungstenite's buffer grows by doubling, so
/// pongs held to the outbox's bound alone would cost several times that bound.
const MAX_QUEUED_PONG_BYTES: usize = 64 * 1024;
/// How long a closing connection waits for the client to take its last bytes.
const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// Ids of WebSocket connections start above any jsonrpsee gives (a `u32`), so events
/// are never marked `own` on a connection that did not cause them.
static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1 << 32);

/// What every WebSocket connection is served with.
#[derive(Clone)]
pub(crate) struct Context {
    pub(crate) methods: Methods,
    pub(crate) max_message: usize,
    pub(crate) max_response: usize,
    pub(crate) max_subscriptions: u32,
    /// Pinged this often; closed when nothing has come for three times as long.
    pub(crate) ping_interval: Duration,
    pub(crate) stop: StopHandle,
}

type Service = TransportRules<Dispatch>;
type Socket = WebSocketStream<Oversize<Counted>>;

/// Answers a WebSocket upgrade request (RFC 6455 §4.2), and serves the connection once
/// hyper hands it over.
pub(crate) fn accept<B>(req: hyper::Request<B>, ctx: Context) -> hyper::Response<HttpBody>
where
    B: Send + 'static,
{
    let refused = |why: &str| {
        tracing::debug!(reason = why, "WebSocket handshake refused");
        let mut refused =
            hyper::Response::new(HttpBody::from(format!("WebSocket handshake failed: {why}")));
        *refused.status_mut() = hyper::StatusCode::BAD_REQUEST;
        refused
    };
    if req.method() != hyper::Method::GET {
        return refused("the upgrade request must be a GET");
    }
    let version = req.headers().get("sec-websocket-version");
    if version.is_none_or(|v| v.as_bytes() != b"13") {
        return refused("Sec-WebSocket-Version must be 13");
    }
    let Some(key) = req.headers().get(SEC_WEBSOCKET_KEY) else {
        return refused("no Sec-WebSocket-Key");
    };
    let Ok(accept_key) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) else {
        return refused("Sec-WebSocket-Key is not a header value");
    };
    tokio::spawn(async move {
        let upgraded = match hyper::upgrade::on(req).await {
            Ok(upgraded) => upgraded,
            Err(e) => {
                tracing::debug!(error = %e, "WebSocket upgrade failed");
                return;
            }
        };
        match upgraded.downcast::<TokioIo<Counted>>() {
            Ok(parts) => serve(parts.io.into_inner(), parts.read_buf.to_vec(), ctx).await,
            Err(_) => tracing::error!("an upgraded connection is not the socket it came on"),
        }
    });
    let mut response = hyper::Response::new(HttpBody::default());
    *response.status_mut() = hyper::StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(SEC_WEBSOCKET_ACCEPT, accept_key);
    response
}

/// Messages taken for the client and not yet handed to the socket, each with the bytes
/// it counts for in the outbox.
struct Queue {
    messages: VecDeque<(Message, usize)>,
    outbox: Arc<Outbox>,
    /// Bytes of the pongs tungstenite has buffered since the socket last took all it
    /// was given: they count in the outbox too and are held to `MAX_QUEUED_PONG_BYTES`,
    /// or a client that pings without reading would grow tungstenite's buffer without
    /// bound.
    pongs: usize,
}

impl Queue {
    /// tungstenite answers a ping with a pong of the same payload.
    fn pong_buffered(&mut self, payload: usize) {
        // A server frame's header: two bytes for a control payload (at most 125).
        let bytes = payload + 2;
        self.pongs += bytes;
        self.outbox.add(bytes);
    }

    /// The socket took everything tungstenite buffered.
    fn flushed(&mut self) {
        self.outbox.taken(std::mem::take(&mut self.pongs));
    }

    fn push_text(&mut self, json: String) {
        let bytes = json.len();
        self.outbox.add(bytes);
        self.messages.push_back((Message::text(json), bytes));
    }

    /// A message whose bytes its sender already counted in.
    fn push_counted(&mut self, json: String, bytes: usize) {
        self.messages.push_back((Message::text(json), bytes));
    }

    fn push_control(&mut self, message: Message) {
        self.messages.push_back((message, 0));
    }

    fn queue(&mut self, rp: MethodResponse, swaps: Option<&Swaps>) {
        if let Some((json, sent)) = to_send(rp, swaps) {
            self.push_text(json);
            sent();
        }
    }
}

/// What the socket did while being driven.
enum Io {
    Message(Message),
    /// The client left, or the socket failed.
    End,
    /// The client broke the protocol: close with this code.
    Broken(CloseCode, WsError),
}

/// Hands queued messages to the socket as far as it takes them, then reads the next
/// message when `read` allows. Pending until a message comes or the socket ends; writing
/// goes on meanwhile.
fn drive(
    ws: &mut Socket,
    queue: &mut Queue,
    read: impl Fn() -> bool,
    cx: &mut TaskContext<'_>,
) -> Poll<Io> {
    let mut ws = Pin::new(ws);
    while !queue.messages.is_empty() {
        match ws.as_mut().poll_ready(cx) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(e)) => return Poll::Ready(ended(&e)),
            Poll::Pending => break,
        }
        let Some((message, bytes)) = queue.messages.pop_front() else {
            break;
        };
        queue.outbox.taken(bytes);
        if let Err(e) = ws.as_mut().start_send(message) {
            return Poll::Ready(ended(&e));
        }
    }
    // Also what the socket did not take of an earlier message, and pongs.
    match ws.as_mut().poll_flush(cx) {
        Poll::Ready(Err(e)) => return Poll::Ready(ended(&e)),
        Poll::Ready(Ok(())) => queue.flushed(),
        Poll::Pending => {}
    }
    if !read() || queue.pongs >= MAX_QUEUED_PONG_BYTES {
        return Poll::Pending;
    }
    match ws.as_mut().poll_next(cx) {
        Poll::Ready(Some(Ok(message))) => Poll::Ready(Io::Message(message)),
        Poll::Ready(Some(Err(e))) => Poll::Ready(match &e {
            WsError::Utf8(_) => Io::Broken(CloseCode::Invalid, e),
            WsError::Protocol(_) => Io::Broken(CloseCode::Protocol, e),
            // RFC 6455 §5.2: the most significant bit of a 64-bit length must be 0; a
            // length with it set is not a size but a broken frame.
            WsError::Capacity(CapacityError::MessageTooLong { size, .. })
                if u64::try_from(*size).unwrap_or(u64::MAX) >> 63 != 0 =>
            {
                Io::Broken(CloseCode::Protocol, e)
            }
            WsError::Capacity(_) => Io::Broken(CloseCode::Size, e),
            _ => ended(&e),
        }),
        Poll::Ready(None) => Poll::Ready(Io::End),
        Poll::Pending => Poll::Pending,
    }
}

fn ended(e: &WsError) -> Io {
    if !matches!(e, WsError::ConnectionClosed | WsError::AlreadyClosed) {
        tracing::debug!(error = %e, "WebSocket connection failed");
    }
    Io::End
}

/// What of an answer goes to the client (its ids put back), and what to do once it is
/// queued. Calls and batches are answered; a subscription's answer goes through its
/// sink, and a notification gets none.
fn to_send(rp: MethodResponse, swaps: Option<&Swaps>) -> Option<(String, impl FnOnce())> {
    if !(rp.is_method_call() || rp.is_batch()) {
        return None;
    }
    let success = rp.is_success();
    let (json, on_sent, _) = rp.into_parts();
    let json = match swaps {
        Some(swaps) => swaps.restore(json.get()),
        None => String::from(Box::<str>::from(json)),
    };
    Some((json, move || {
        if let Some(n) = on_sent {
            n.notify(success);
        }
    }))
}

/// Queues `code`'s close frame after what is queued and gives the client a moment to take
/// it all.
async fn close(ws: &mut Socket, queue: &mut Queue, code: CloseCode) {
    queue.push_control(Message::Close(Some(CloseFrame {
        code,
        reason: "".into(),
    })));
    let drain = std::future::poll_fn(|cx| {
        if let Poll::Ready(Io::End) = drive(ws, queue, || false, cx) {
            return Poll::Ready(());
        }
        if queue.messages.is_empty() {
            return Pin::new(&mut *ws).poll_flush(cx).map(|_| ());
        }
        Poll::Pending
    });
    let _ = tokio::time::timeout(CLOSE_GRACE, drain).await;
}

/// What woke the connection.
enum Step {
    Io(Io),
    Stopping,
    AllDone,
    Outgoing(Box<RawValue>),
    Answer(String, usize),
    Tick,
}

/// Serves one upgraded connection until the client leaves, breaks the protocol, goes
/// silent past the ping limit, or the server stops (then in-flight calls finish first).
async fn serve(io: Counted, early: Vec<u8>, ctx: Context) {
    let _open = Total::connection();
    let id = NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed);
    let conn_id = ConnectionId(usize::try_from(id).unwrap_or(usize::MAX));
    let outbox = Arc::new(Outbox::new(MAX_WS_QUEUED_BYTES));
    let mut extensions = Extensions::new();
    extensions.insert(conn_id);
    extensions.insert(outbox.clone());
    let (tx, mut outgoing) = mpsc::channel::<Box<RawValue>>(MESSAGE_BUFFER);
    let sink = MethodSink::new_with_limit(tx, u32::try_from(ctx.max_response).unwrap_or(u32::MAX));
    // Every call that goes on in a task holds a clone of `in_flight` until its answer
    // is queued; when the server stops, ours goes, and `all_done` ends with the last.
    let (in_flight, mut all_done) = mpsc::channel::<()>(1);
    let mut in_flight = Some(in_flight);
    let calls = Arc::new(Semaphore::new(MAX_CALLS_IN_FLIGHT));
    // Answers of calls that ran in their own tasks, counted in the outbox by their
    // senders; at most the outbox's bound plus one answer is ever in it.
    let (answers_tx, mut answers) = mpsc::unbounded_channel::<(String, usize)>();
    let mut service = Some(TransportRules(Dispatch {
        methods: ctx.methods,
        conn_id,
        max_response: ctx.max_response,
        subscriptions: BoundedSubscriptions::new(ctx.max_subscriptions),
        sink: sink.clone(),
        id_provider: Arc::new(RandomIntegerIdProvider),
    }));
    // Messages over the bound never reach tungstenite: `Oversize` puts a pong carrying
    // `marker` in the place of each, answered -32007 while the connection goes on.
    // tungstenite's own bound is a backstop for frames `Oversize` leaves to it.
    let (io, early, marker) = Oversize::new(io, ctx.max_message, &early);
    let config = WebSocketConfig::default()
        .max_message_size(Some(ctx.max_message))
        .max_frame_size(Some(ctx.max_message));
    let mut ws = WebSocketStream::from_partially_read(io, early, Role::Server, Some(config)).await;
    let mut queue = Queue {
        messages: VecDeque::new(),
        outbox: outbox.clone(),
        pongs: 0,
    };
    // A stop handle held to the end: the server waits for every one of them, so it does
    // not finish stopping (and the daemon exit) while this connection's calls still run.
    // The one `shutdown` consumes is let go as soon as the stop is signalled.
    let _serving = ctx.stop.clone();
    let stopped = ctx.stop.shutdown();
    tokio::pin!(stopped);
    let mut ping = tokio::time::interval_at(Instant::now() + ctx.ping_interval, ctx.ping_interval);
    ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let silent_limit = ctx.ping_interval * 3;
    let mut last_heard = Instant::now();
    loop {
        let step = {
            let serving = service.is_some();
            // While stopping the connection is read only to notice the client leaving.
            let read = || !serving || (outbox.has_room() && calls.available_permits() > 0);
            tokio::select! {
                biased;
                () = &mut stopped, if service.is_some() => Step::Stopping,
                None = all_done.recv(), if service.is_none() => Step::AllDone,
                io = std::future::poll_fn(|cx| drive(&mut ws, &mut queue, read, cx)) => Step::Io(io),
                Some((json, bytes)) = answers.recv() => Step::Answer(json, bytes),
                Some(message) = outgoing.recv() => Step::Outgoing(message),
                _ = ping.tick() => Step::Tick,
            }
        };
        match step {
            Step::Stopping => {
                service = None;
                in_flight = None;
            }
            Step::AllDone => {
                // The last calls' answers are queued: they leave before the close.
                while let Ok((json, bytes)) = answers.try_recv() {
                    queue.push_counted(json, bytes);
                }
                while let Ok(message) = outgoing.try_recv() {
                    queue.push_text(String::from(Box::<str>::from(message)));
                }
                close(&mut ws, &mut queue, CloseCode::Away).await;
                break;
            }
            Step::Answer(json, bytes) => queue.push_counted(json, bytes),
            Step::Outgoing(message) => queue.push_text(String::from(Box::<str>::from(message))),
            Step::Tick => {
                if last_heard.elapsed() > silent_limit {
                    tracing::debug!(?silent_limit, "WebSocket client silent; closing");
                    close(&mut ws, &mut queue, CloseCode::Away).await;
                    break;
                }
                queue.push_control(Message::Ping(Default::default()));
            }
            Step::Io(Io::End) => break,
            Step::Io(Io::Broken(code, e)) => {
                tracing::debug!(error = %e, "WebSocket protocol error; closing");
                if code == CloseCode::Size {
                    queue.push_text(too_big(ctx.max_message));
                }
                close(&mut ws, &mut queue, code).await;
                break;
            }
            Step::Io(Io::Message(message)) => {
                last_heard = Instant::now();
                match &message {
                    Message::Ping(payload) => queue.pong_buffered(payload.len()),
                    Message::Pong(payload) if payload[..] == marker[..] => {
                        queue.push_text(too_big(ctx.max_message));
                        continue;
                    }
                    _ => {}
                }
                let (Some(service), Some(in_flight)) = (&service, &in_flight) else {
                    continue;
                };
                let data: &[u8] = match &message {
                    Message::Text(text) => text.as_bytes(),
                    Message::Binary(bytes) => bytes,
                    // Pings are answered by tungstenite; a close is answered there too,
                    // and the stream then ends.
                    Message::Ping(_) | Message::Pong(_) | Message::Close(_) | Message::Frame(_) => {
                        continue;
                    }
                };
                let conn = Conn {
                    service,
                    extensions: &extensions,
                    sink: &sink,
                    in_flight,
                    answers: &answers_tx,
                    calls: &calls,
                    outbox: &outbox,
                };
                call(data, &mut queue, &conn).await;
            }
        }
    }
    // Calls still running answer no one; whoever waits for room is let go.
    drop((answers, outgoing));
    outbox.close();
}

/// The answer to a message over the bound, with no id (it was not read).
fn too_big(max: usize) -> String {
    let max = u32::try_from(max).unwrap_or(u32::MAX);
    error_json(reject_too_big_request(max))
}

/// What a call needs of its connection.
struct Conn<'a> {
    service: &'a Service,
    extensions: &'a Extensions,
    sink: &'a MethodSink,
    in_flight: &'a mpsc::Sender<()>,
    answers: &'a mpsc::UnboundedSender<(String, usize)>,
    calls: &'a Arc<Semaphore>,
    outbox: &'a Arc<Outbox>,
}

/// Runs a call until it first has to wait: finished, its answer is queued here;
/// otherwise it goes on in a task of its own and answers through the sink once there is
/// room for it.
async fn call(data: &[u8], queue: &mut Queue, conn: &Conn<'_>) {
    let (body, swaps) = match examine(data) {
        Ids::AsTheyAre => (data.to_vec(), None),
        Ids::Swapped { body, swaps } => (body, Some(swaps)),
        Ids::Refused(answer) => {
            queue.push_text(answer);
            return;
        }
    };
    let (service, extensions) = (conn.service.clone(), conn.extensions.clone());
    let mut answer: Pin<Box<dyn Future<Output = MethodResponse> + Send>> =
        Box::pin(async move { handle_message(&body, &service, &extensions).await });
    let first = std::future::poll_fn(|cx| match answer.as_mut().poll(cx) {
        Poll::Ready(rp) => Poll::Ready(Some(rp)),
        Poll::Pending => Poll::Ready(None),
    });
    if let Some(rp) = first.await {
        queue.queue(rp, swaps.as_ref());
        return;
    }
    // The connection reads no further message while every slot is taken.
    let Ok(slot) = conn.calls.clone().try_acquire_owned() else {
        tracing::error!("a call ran with no slot free");
        return;
    };
    let (sink, in_flight, outbox) = (
        conn.sink.clone(),
        conn.in_flight.clone(),
        conn.outbox.clone(),
    );
    let answers = conn.answers.clone();
    let running = Total::running();
    tokio::spawn(async move {
        // A call whose connection has gone has no one to answer: it stops.
        let rp = tokio::select! {
            () = sink.closed() => return,
            rp = answer => rp,
        };
        drop(running);
        if let Some((json, sent)) = to_send(rp, swaps.as_ref()) {
            let waiting = Total::waiting();
            let bytes = json.len();
            outbox.reserve(bytes).await;
            drop(waiting);
            // The slot goes before the answer, so the connection, woken by the answer,
            // finds it free.
            drop(slot);
            if answers.send((json, bytes)).is_ok() {
                sent();
            } else {
                outbox.taken(bytes);
            }
        }
        drop(in_flight);
    });
}

/// An error answer with no id, as JSON text.
fn error_json(e: ErrorObject<'_>) -> String {
    let response = Response::new(ResponsePayload::<()>::error_borrowed(e), Id::Null);
    serde_json::to_string(&response).unwrap_or_default()
}
