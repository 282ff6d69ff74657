//! WebSocket connections, served by one task each.
//!
//! jsonrpsee's own WebSocket transport spends three tasks on a call: the reader spawns
//! the call, which hands its answer over a channel to a writer. Each hand-over can be a
//! thread wake-up: a no-op call took 1.6× a raw echo of its bytes, against 1.4× here.
//!
//! Here one task reads a message, runs its call until the call first has to wait, and
//! writes the answer itself. Most calls finish in that first run. A call that has to
//! wait (the store, a hook, a model) goes on in a task of its own and sends its answer
//! through the connection's sink, as subscription messages do; the connection keeps
//! reading meanwhile. The socket is never waited on for writing: unsent bytes queue, and
//! reading pauses once too many are queued, so a client that writes without reading
//! cannot deadlock the two.
//!
//! The calls themselves go through `Dispatch` and `TransportRules`, so their answers
//! are those of the HTTP transport, which stays jsonrpsee's.

use std::future::Future;
use std::io::ErrorKind;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use jsonrpsee::core::server::{BoundedSubscriptions, MethodSink, Methods};
use jsonrpsee::server::{HttpBody, RandomIntegerIdProvider, StopHandle};
use jsonrpsee::types::error::reject_too_big_request;
use jsonrpsee::types::{ErrorObject, Id, Response, ResponsePayload};
use jsonrpsee::{ConnectionId, Extensions, MethodResponse};
use serde_json::value::RawValue;
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};

use super::connection::Counted;
use super::dispatch::{Dispatch, handle_message};
use super::transport::TransportRules;
use ctxd_protocol::ws_frame::{
    CLOSE_GOING_AWAY, CLOSE_NORMAL, CLOSE_PROTOCOL_ERROR, Event, PING, PONG, Reader, Sender, TEXT,
    write_close, write_frame,
};

/// Answers and notifications queued for one connection (jsonrpsee's default).
const MESSAGE_BUFFER: usize = 1024;
/// Unsent bytes past which the connection stops reading and taking notifications until
/// the client reads.
const MAX_UNSENT: usize = 16 * 1024 * 1024;
/// Room kept for outgoing frames between answers.
const KEEP_OUT_CAPACITY: usize = 1024 * 1024;
/// How long a closing connection waits for the client to take its last bytes.
const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// Ids of WebSocket connections start above any jsonrpsee gives (a `u32`), so events
/// are never marked `own` on a connection that did not cause them.
static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1 << 32);

/// What every WebSocket connection is served with.
#[derive(Clone)]
pub(crate) struct Context {
    pub methods: Methods,
    pub max_message: usize,
    pub max_response: usize,
    pub max_subscriptions: u32,
    /// Pinged this often; closed when nothing has come for three times as long.
    pub ping_interval: Duration,
    pub stop: StopHandle,
}

type Service = TransportRules<Dispatch>;

/// Answers a WebSocket upgrade request, and serves the connection once hyper hands it
/// over.
pub(crate) fn accept<B>(req: hyper::Request<B>, ctx: Context) -> hyper::Response<HttpBody>
where
    B: Send + 'static,
{
    let mut handshake = soketto::handshake::http::Server::new();
    let response = match handshake.receive_request(&req) {
        Ok(response) => response,
        Err(e) => {
            tracing::debug!(error = %e, "WebSocket handshake refused");
            let mut refused =
                hyper::Response::new(HttpBody::from(format!("WebSocket handshake failed: {e}")));
            *refused.status_mut() = hyper::StatusCode::BAD_REQUEST;
            return refused;
        }
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
            Ok(parts) => serve(parts.io.into_inner(), &parts.read_buf, ctx).await,
            Err(_) => tracing::error!("an upgraded connection is not the socket it came on"),
        }
    });
    response.map(|()| HttpBody::default())
}

/// The socket and what is queued for it.
struct Wire {
    io: Counted,
    reader: Reader,
    /// Frames not yet taken by the socket, from `sent`.
    out: Vec<u8>,
    sent: usize,
}

impl Wire {
    fn stream(&self) -> &UnixStream {
        &self.io.stream
    }

    fn unsent(&self) -> usize {
        self.out.len() - self.sent
    }

    /// Writes what the socket takes now, without waiting.
    fn flush(&mut self) -> std::io::Result<()> {
        while self.sent < self.out.len() {
            match self.io.stream.try_write(&self.out[self.sent..]) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        if self.sent == self.out.len() {
            self.sent = 0;
            // Memory kept for a large answer goes once the answer has.
            if self.out.capacity() > KEEP_OUT_CAPACITY {
                self.out = Vec::new();
            } else {
                self.out.clear();
            }
        }
        Ok(())
    }

    /// Queues `code`'s close frame and gives the client a moment to take what is queued.
    async fn close(&mut self, code: u16) {
        write_close(code, &mut self.out);
        let drain = async {
            while self.unsent() > 0 {
                if self.flush().is_err() || self.stream().writable().await.is_err() {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(CLOSE_GRACE, drain).await;
    }

    /// Reads what the socket holds.
    fn read(&mut self) -> std::io::Result<Got> {
        let got = try_read(&self.io.stream, self.reader.spare())?;
        if let Got::Bytes(n) = got {
            self.reader.filled(n);
        }
        Ok(got)
    }

    fn queue(&mut self, rp: MethodResponse) {
        if let Some((json, sent)) = to_send(rp) {
            self.text(&json);
            sent();
        }
    }

    /// Queues a message (an answer, a notification) as a text frame.
    fn text(&mut self, json: &RawValue) {
        write_frame(TEXT, json.get().as_bytes(), &mut self.out);
    }
}

/// What of an answer goes to the client, and what to do once it is queued. Calls and
/// batches are answered; a subscription's answer goes through its sink, and a
/// notification gets none.
fn to_send(rp: MethodResponse) -> Option<(Box<RawValue>, impl FnOnce())> {
    if !(rp.is_method_call() || rp.is_batch()) {
        return None;
    }
    let success = rp.is_success();
    let (json, on_sent, _) = rp.into_parts();
    Some((json, move || {
        if let Some(n) = on_sent {
            n.notify(success);
        }
    }))
}

/// Serves one upgraded connection until the client leaves, breaks the protocol, goes
/// silent past the ping limit, or the server stops (then in-flight calls finish first).
async fn serve(io: Counted, early: &[u8], ctx: Context) {
    let id = NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed);
    let conn_id = ConnectionId(usize::try_from(id).unwrap_or(usize::MAX));
    let mut extensions = Extensions::new();
    extensions.insert(conn_id);
    let (tx, mut outgoing) = mpsc::channel::<Box<RawValue>>(MESSAGE_BUFFER);
    let sink = MethodSink::new_with_limit(tx, u32::try_from(ctx.max_response).unwrap_or(u32::MAX));
    // Every call that goes on in a task holds a clone of `in_flight` until its answer
    // is queued; when the server stops, ours goes, and `all_done` ends with the last.
    let (in_flight, mut all_done) = mpsc::channel::<()>(1);
    let mut in_flight = Some(in_flight);
    let mut service = Some(TransportRules(Dispatch {
        methods: ctx.methods,
        conn_id,
        max_response: ctx.max_response,
        subscriptions: BoundedSubscriptions::new(ctx.max_subscriptions),
        sink: sink.clone(),
        id_provider: Arc::new(RandomIntegerIdProvider),
    }));
    let mut wire = Wire {
        io,
        reader: Reader::new(Sender::Client, ctx.max_message),
        out: Vec::new(),
        sent: 0,
    };
    wire.reader.push(early);
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
        if let (Some(service), Some(in_flight)) = (&service, &in_flight) {
            let conn = Conn {
                service,
                extensions: &extensions,
                sink: &sink,
                in_flight,
            };
            while wire.unsent() < MAX_UNSENT {
                match wire.reader.next_event() {
                    Ok(Some(event)) => {
                        if let Some(code) = handle(event, &mut wire, &conn).await {
                            wire.close(code).await;
                            return;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        tracing::debug!(error = %e, "WebSocket protocol error; closing");
                        wire.close(CLOSE_PROTOCOL_ERROR).await;
                        return;
                    }
                }
            }
        }
        if let Err(e) = wire.flush() {
            tracing::debug!(error = %e, "WebSocket write failed");
            return;
        }
        let room = wire.unsent() < MAX_UNSENT;
        tokio::select! {
            biased;
            () = &mut stopped, if service.is_some() => {
                service = None;
                in_flight = None;
            }
            None = all_done.recv(), if service.is_none() => {
                // The last calls' answers are queued: they leave before the close.
                while let Ok(message) = outgoing.try_recv() {
                    wire.text(&message);
                }
                wire.close(CLOSE_GOING_AWAY).await;
                return;
            }
            ready = wire.stream().readable(), if room => {
                let got = match ready {
                    Ok(()) if service.is_some() => wire.read(),
                    // Stopping: read only to notice the client leaving.
                    Ok(()) => discard(wire.stream()),
                    Err(e) => Err(e),
                };
                match got {
                    Ok(Got::Bytes(_)) => last_heard = Instant::now(),
                    Ok(Got::Nothing) => {}
                    Ok(Got::End) => return,
                    Err(e) => {
                        tracing::debug!(error = %e, "WebSocket read failed");
                        return;
                    }
                }
            }
            _ = wire.stream().writable(), if wire.unsent() > 0 => {}
            Some(message) = outgoing.recv(), if room => wire.text(&message),
            _ = ping.tick() => {
                if last_heard.elapsed() > silent_limit {
                    tracing::debug!(?silent_limit, "WebSocket client silent; closing");
                    wire.close(CLOSE_GOING_AWAY).await;
                    return;
                }
                write_frame(PING, b"", &mut wire.out);
            }
        }
    }
}

/// What a read found.
enum Got {
    Bytes(usize),
    /// The readiness was stale: nothing came.
    Nothing,
    /// The client closed its side.
    End,
}

/// Reads what the socket holds into `buf`, without waiting.
fn try_read(stream: &UnixStream, buf: &mut [u8]) -> std::io::Result<Got> {
    match stream.try_read(buf) {
        Ok(0) => Ok(Got::End),
        Ok(n) => Ok(Got::Bytes(n)),
        Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(Got::Nothing),
        Err(e) => Err(e),
    }
}

/// Reads and drops what the socket holds.
fn discard(stream: &UnixStream) -> std::io::Result<Got> {
    try_read(stream, &mut [0u8; 4096])
}

/// What a call needs of its connection.
struct Conn<'a> {
    service: &'a Service,
    extensions: &'a Extensions,
    sink: &'a MethodSink,
    in_flight: &'a mpsc::Sender<()>,
}

/// Acts on one event. `Some(code)` closes the connection with that code.
async fn handle(event: Event, wire: &mut Wire, conn: &Conn<'_>) -> Option<u16> {
    match event {
        Event::Message(data) => call(data, wire, conn).await,
        Event::Ping(payload) => write_frame(PONG, &payload, &mut wire.out),
        Event::Pong => {}
        Event::Close(code) => return Some(code.unwrap_or(CLOSE_NORMAL)),
        Event::TooBig => {
            let max = u32::try_from(wire.reader.max_message()).unwrap_or(u32::MAX);
            let refusal = error_json(reject_too_big_request(max));
            write_frame(TEXT, refusal.as_bytes(), &mut wire.out);
        }
    }
    None
}

/// Runs a call until it first has to wait: finished, its answer is queued here;
/// otherwise it goes on in a task of its own and answers through the sink.
async fn call(data: Vec<u8>, wire: &mut Wire, conn: &Conn<'_>) {
    let (service, extensions) = (conn.service.clone(), conn.extensions.clone());
    let mut answer: Pin<Box<dyn Future<Output = MethodResponse> + Send>> =
        Box::pin(async move { handle_message(&data, &service, &extensions).await });
    let first = std::future::poll_fn(|cx| match answer.as_mut().poll(cx) {
        Poll::Ready(rp) => Poll::Ready(Some(rp)),
        Poll::Pending => Poll::Ready(None),
    });
    if let Some(rp) = first.await {
        wire.queue(rp);
        return;
    }
    let (sink, in_flight) = (conn.sink.clone(), conn.in_flight.clone());
    tokio::spawn(async move {
        // A call whose connection has gone has no one to answer: it stops.
        let rp = tokio::select! {
            () = sink.closed() => return,
            rp = answer => rp,
        };
        if let Some((json, sent)) = to_send(rp)
            && sink.send(json).await.is_ok()
        {
            sent();
        }
        drop(in_flight);
    });
}

/// An error answer with no id, as JSON text.
fn error_json(e: ErrorObject<'_>) -> String {
    let response = Response::new(ResponsePayload::<()>::error_borrowed(e), Id::Null);
    serde_json::to_string(&response).unwrap_or_default()
}
