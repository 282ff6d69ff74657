//! The WebSocket connection under `Client`, on tungstenite.
//!
//! The calling task writes its own request and then reads the socket itself, so a lone
//! caller gets its answer without a hand-over between tasks. A reader task reads too, for
//! whatever arrives when no call is waiting: notifications, the daemon's pings, the end
//! of the connection. Whoever reads routes each answer to the call waiting for it and
//! each notification to its subscription. The jsonrpsee client this replaces handed
//! every call to a background task and back, and armed a timer on its own timer thread
//! per call: a no-op call cost about 50 µs more than the daemon's part of it.
//!
//! tungstenite runs here as a state machine over a socket that never waits (a read or a
//! write that would block says so), behind one lock never held across an await; the
//! waiting is done on the socket's readiness, which any number of tasks may await at
//! once. (An async wrapper keeps one waker per direction, the last task's, so a caller
//! and the reader task polling the same socket could each leave the other asleep.)

use std::collections::HashMap;
use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::net::UnixStream;
use tokio::sync::{Notify, mpsc, oneshot};
use tungstenite::handshake::HandshakeError;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tungstenite::{Error as WsError, Message, WebSocket};

use crate::ClientError;

/// The largest message either way (the daemon's response bound).
pub(crate) const MAX_MESSAGE: usize = 256 * 1024 * 1024;
/// How long a call waits for its answer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// Notifications a subscription holds before its reader is too far behind and the
/// subscription is ended (jsonrpsee's default).
const SUBSCRIPTION_BUFFER: usize = 1024;
/// How long the handshake waits for the daemon's answer before it tries again.
const HANDSHAKE_RETRY: Duration = Duration::from_millis(50);
/// Messages one turn of reading routes at most before it lets another task in.
const READ_BUDGET: usize = 64;

/// The socket as tungstenite sees it: reads and writes that never wait.
struct Io(Arc<UnixStream>);

impl std::io::Read for Io {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.try_read(buf)
    }
}

impl std::io::Write for Io {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.try_write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn would_block(e: &WsError) -> bool {
    matches!(e, WsError::Io(io) if io.kind() == ErrorKind::WouldBlock)
}

/// What a waiting call gets.
type Answer = Result<Box<RawValue>, ClientError>;
/// What a waiting subscribe call gets: the subscription's id (as JSON) and its stream.
type Subscribed = Result<(String, mpsc::Receiver<Box<RawValue>>), ClientError>;

enum Waiting {
    Call(oneshot::Sender<Answer>),
    Subscribe {
        answer: oneshot::Sender<Subscribed>,
        unsubscribe: String,
    },
}

struct Route {
    items: mpsc::Sender<Box<RawValue>>,
    unsubscribe: String,
}

#[derive(Default)]
struct Routes {
    /// Why the connection ended, once it has.
    closed: Option<String>,
    calls: HashMap<u64, Waiting>,
    /// By subscription id, as the daemon writes it in JSON.
    subscriptions: HashMap<String, Route>,
}

pub(crate) struct Shared {
    stream: Arc<UnixStream>,
    socket: Mutex<WebSocket<Io>>,
    /// Bytes tungstenite holds that the socket has not taken yet.
    unflushed: AtomicBool,
    /// Told when `unflushed` is set: the reader task then waits for the socket to take
    /// them too, should their caller give up.
    flush_needed: Notify,
    routes: Mutex<Routes>,
    next_id: AtomicU64,
}

/// One connection; the reader task ends with it.
pub(crate) struct Connection {
    shared: Arc<Shared>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

fn transport(e: impl std::fmt::Display) -> ClientError {
    ClientError::Transport(e.to_string())
}

impl Connection {
    /// Upgrades `stream` to a WebSocket and starts its reader.
    pub(crate) async fn open(stream: UnixStream) -> Result<Connection, ClientError> {
        let stream = Arc::new(stream);
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE))
            .max_frame_size(Some(MAX_MESSAGE));
        let failed = |e: WsError| match e {
            WsError::Http(response) => transport(format!(
                "the daemon refused the WebSocket upgrade: {}",
                response.status()
            )),
            e => transport(format!("the WebSocket upgrade failed: {e}")),
        };
        let mut step = tungstenite::client::client_with_config(
            "ws://localhost/",
            Io(stream.clone()),
            Some(config),
        );
        let socket = loop {
            match step {
                Ok((socket, _)) => break socket,
                Err(HandshakeError::Failure(e)) => return Err(failed(e)),
                Err(HandshakeError::Interrupted(mid)) => {
                    // The request (a few hundred bytes) is written at once on a new
                    // socket, so the handshake waits for the answer; should the write
                    // have been cut short instead, the timeout tries it again.
                    let _ = tokio::time::timeout(HANDSHAKE_RETRY, stream.readable()).await;
                    step = mid.handshake();
                }
            }
        };
        let shared = Arc::new(Shared {
            stream,
            socket: Mutex::new(socket),
            unflushed: AtomicBool::new(false),
            flush_needed: Notify::new(),
            routes: Mutex::new(Routes::default()),
            next_id: AtomicU64::new(1),
        });
        let reader = tokio::spawn(read_loop(Arc::downgrade(&shared)));
        Ok(Connection { shared, reader })
    }

    /// Calls `method` and waits for its result.
    pub(crate) async fn call(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<Box<RawValue>, ClientError> {
        let (tx, rx) = oneshot::channel();
        self.request(method, params, Waiting::Call(tx), rx).await?
    }

    /// Calls a subscribe method; the subscription is routed before its first
    /// notification can arrive.
    pub(crate) async fn subscribe(
        &self,
        method: &str,
        params: &impl Serialize,
        unsubscribe: &str,
    ) -> Result<(String, mpsc::Receiver<Box<RawValue>>, Weak<Shared>), ClientError> {
        let (tx, rx) = oneshot::channel();
        let waiting = Waiting::Subscribe {
            answer: tx,
            unsubscribe: unsubscribe.to_string(),
        };
        let (id, items) = self.request(method, params, waiting, rx).await??;
        Ok((id, items, Arc::downgrade(&self.shared)))
    }

    async fn request<T>(
        &self,
        method: &str,
        params: &impl Serialize,
        waiting: Waiting,
        answer: oneshot::Receiver<T>,
    ) -> Result<T, ClientError> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        self.shared.wait_for(id, waiting)?;
        // A call dropped before its answer (cancelled, or timed out) is forgotten.
        let forget = Forget {
            shared: &self.shared,
            id,
        };
        let body = Request::encode(id, method, params)?;
        self.shared.send(body).await?;
        // The answer is read by whoever reads first: this task, when the socket has
        // something before the reader task runs, so that a lone caller is not handed its
        // answer by another task.
        let shared = &self.shared;
        let wait = async move {
            tokio::pin!(answer);
            loop {
                tokio::select! {
                    biased;
                    answer = &mut answer => return answer,
                    ready = shared.stream.readable() => match ready {
                        Ok(()) => shared.read_some().await,
                        Err(e) => shared.close(format!("reading from ctxd: {e}")),
                    },
                    ready = shared.stream.writable(), if shared.unflushed.load(Ordering::Acquire) => {
                        match ready {
                            Ok(()) => shared.flush(),
                            Err(e) => shared.close(format!("writing to ctxd: {e}")),
                        }
                    }
                }
            }
        };
        let answered = match tokio::time::timeout(REQUEST_TIMEOUT, wait).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err(self.shared.closed_error()),
            Err(_) => Err(transport(format!(
                "no answer to {method} within {} s",
                REQUEST_TIMEOUT.as_secs()
            ))),
        };
        drop(forget);
        answered
    }
}

#[derive(Serialize)]
struct Request<'a, P> {
    jsonrpc: &'static str,
    id: u64,
    method: &'a str,
    params: &'a P,
}

impl<P: Serialize> Request<'_, P> {
    /// Call `id` of `method`, as the text of its message.
    fn encode(id: u64, method: &str, params: &P) -> Result<String, ClientError> {
        let request = Request {
            jsonrpc: "2.0",
            id,
            method,
            params,
        };
        serde_json::to_string(&request).map_err(transport)
    }
}

struct Forget<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.shared.routes().calls.remove(&self.id);
    }
}

impl Shared {
    fn routes(&self) -> MutexGuard<'_, Routes> {
        // A panic while the lock was held leaves plain maps, still consistent.
        self.routes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn wait_for(&self, id: u64, waiting: Waiting) -> Result<(), ClientError> {
        let mut routes = self.routes();
        if let Some(why) = &routes.closed {
            return Err(transport(why));
        }
        routes.calls.insert(id, waiting);
        Ok(())
    }

    fn closed_error(&self) -> ClientError {
        let why = self.routes().closed.clone();
        transport(why.unwrap_or_else(|| "the connection to ctxd closed".into()))
    }

    fn socket(&self) -> MutexGuard<'_, WebSocket<Io>> {
        // tungstenite's state stays whole between calls, so a poisoned lock is usable.
        self.socket
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues one message and waits until the socket has taken it. A message, once
    /// queued, is always written whole: should its caller give up (a timeout around the
    /// call, a `select!`), the reader task writes the rest, so no half frame is left
    /// behind for the next message.
    async fn send(&self, text: String) -> Result<(), ClientError> {
        if text.len() > MAX_MESSAGE {
            return Err(transport(format!(
                "a request of {} bytes is over the {MAX_MESSAGE}-byte message bound",
                text.len()
            )));
        }
        if let Some(why) = self.routes().closed.clone() {
            return Err(transport(why));
        }
        let queued = self.socket().write(Message::text(text));
        match queued {
            Ok(()) => {}
            Err(e) if would_block(&e) => {}
            Err(e) => {
                let e = transport(format!("writing to ctxd: {e}"));
                self.close(e.to_string());
                return Err(e);
            }
        }
        self.flush();
        while self.unflushed.load(Ordering::Acquire) {
            if let Err(e) = self.stream.writable().await {
                self.close(format!("writing to ctxd: {e}"));
            }
            self.flush();
        }
        match self.routes().closed.clone() {
            Some(why) => Err(transport(why)),
            None => Ok(()),
        }
    }

    /// Writes what tungstenite holds, as far as the socket takes it now.
    fn flush(&self) {
        let flushed = self.socket().flush();
        match flushed {
            Ok(()) => self.unflushed.store(false, Ordering::Release),
            Err(e) if would_block(&e) => {
                if !self.unflushed.swap(true, Ordering::AcqRel) {
                    self.flush_needed.notify_one();
                }
            }
            Err(e) => {
                self.unflushed.store(false, Ordering::Release);
                self.close(format!("writing to ctxd: {e}"));
            }
        }
    }

    /// Routes every message that has come, a turn of at most `READ_BUDGET` at a time
    /// (letting other tasks in between); answers the daemon's pings and its close.
    async fn read_some(self: &Arc<Self>) {
        while self.read_turn() {
            tokio::task::yield_now().await;
        }
    }

    /// One turn of `read_some`, under the socket's lock; `true` when messages are left.
    fn read_turn(self: &Arc<Self>) -> bool {
        let mut socket = self.socket();
        for _ in 0..READ_BUDGET {
            let why = match socket.read() {
                Ok(Message::Text(text)) => {
                    self.route(text.as_bytes());
                    continue;
                }
                Ok(Message::Binary(bytes)) => {
                    self.route(&bytes);
                    continue;
                }
                // Pings are answered by tungstenite, on its next read or flush.
                Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => continue,
                Ok(Message::Close(frame)) => {
                    // tungstenite queued the answer to the close: it leaves now.
                    let _ = socket.flush();
                    let code = frame.map_or(1005, |f| u16::from(f.code));
                    format!("ctxd closed the connection (code {code})")
                }
                Err(e) if would_block(&e) => return false,
                Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => {
                    "ctxd closed the connection".to_string()
                }
                Err(WsError::Protocol(
                    tungstenite::error::ProtocolError::ResetWithoutClosingHandshake,
                )) => "ctxd closed the connection without a close frame".to_string(),
                Err(e) => {
                    let (code, why) = match &e {
                        WsError::Capacity(_) => (
                            CloseCode::Size,
                            format!("a message from ctxd is over the {MAX_MESSAGE}-byte bound"),
                        ),
                        WsError::Utf8(_) => (
                            CloseCode::Invalid,
                            format!("ctxd broke the WebSocket protocol: {e}"),
                        ),
                        WsError::Protocol(_) => (
                            CloseCode::Protocol,
                            format!("ctxd broke the WebSocket protocol: {e}"),
                        ),
                        _ => (CloseCode::Error, format!("reading from ctxd: {e}")),
                    };
                    let frame = CloseFrame {
                        code,
                        reason: "".into(),
                    };
                    let _ = socket.close(Some(frame));
                    let _ = socket.flush();
                    why
                }
            };
            drop(socket);
            self.close(why);
            return false;
        }
        // The budget cut the turn short: what is left may be in tungstenite's buffer,
        // which no readiness announces.
        true
    }

    /// Hands one message to whoever waits for it.
    fn route(self: &Arc<Self>, message: &[u8]) {
        let Ok(incoming) = serde_json::from_slice::<Incoming>(message) else {
            tracing::warn!("a message from ctxd that is not JSON-RPC");
            return;
        };
        let mut routes = self.routes();
        if let Some(id) = incoming.id {
            let Some(waiting) = routes.calls.remove(&id) else {
                return;
            };
            let answer = match (incoming.result, incoming.error) {
                (_, Some(e)) => Err(ClientError::Rpc {
                    code: e.code,
                    message: e.message,
                    data: e.data,
                }),
                (Some(result), None) => Ok(result.to_owned()),
                (None, None) => Err(transport("an answer with neither result nor error")),
            };
            match waiting {
                Waiting::Call(tx) => {
                    let _ = tx.send(answer);
                }
                Waiting::Subscribe {
                    answer: tx,
                    unsubscribe,
                } => {
                    let subscribed = answer.map(|sub_id| {
                        let (items, rx) = mpsc::channel(SUBSCRIPTION_BUFFER);
                        let key = sub_id.get().to_string();
                        routes
                            .subscriptions
                            .insert(key.clone(), Route { items, unsubscribe });
                        (key, rx)
                    });
                    let _ = tx.send(subscribed);
                }
            }
        } else if let Some(params) = incoming.params {
            let key = params.subscription.get();
            let Some(route) = routes.subscriptions.get(key) else {
                return;
            };
            if let Err(e) = route.items.try_send(params.result.to_owned()) {
                // Dropped (its `Drop` told the daemon), or too far behind to catch up:
                // then it ends here, and the daemon is told.
                let behind = matches!(e, mpsc::error::TrySendError::Full(_));
                if let Some(route) = routes.subscriptions.remove(key)
                    && behind
                {
                    tracing::warn!(
                        subscription = key,
                        "a subscriber fell too far behind; ending its subscription"
                    );
                    let (shared, id) = (Arc::clone(self), key.to_string());
                    tokio::spawn(async move {
                        let _ = shared.unsubscribe(&route.unsubscribe, &id).await;
                    });
                }
            }
        }
    }

    /// The connection ended: every waiting call gets `why`, every subscription ends.
    fn close(&self, why: String) {
        let mut routes = self.routes();
        if routes.closed.is_some() {
            return;
        }
        for (_, waiting) in routes.calls.drain() {
            let e = transport(&why);
            match waiting {
                Waiting::Call(tx) => {
                    let _ = tx.send(Err(e));
                }
                Waiting::Subscribe { answer, .. } => {
                    let _ = answer.send(Err(e));
                }
            }
        }
        routes.subscriptions.clear();
        routes.closed = Some(why);
    }

    /// Stops routing subscription `id`; `Some(method)` when the daemon should be told.
    pub(crate) fn forget_subscription(&self, id: &str) -> Option<String> {
        self.routes()
            .subscriptions
            .remove(id)
            .map(|route| route.unsubscribe)
    }

    /// Tells the daemon to end subscription `id` (JSON), without waiting for its answer.
    pub(crate) async fn unsubscribe(&self, method: &str, id: &str) -> Result<(), ClientError> {
        let id: &RawValue = serde_json::from_str(id).map_err(transport)?;
        let call = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = Request::encode(call, method, &serde_json::json!({ "subscription": id }))?;
        self.send(body).await
    }
}

#[derive(Deserialize)]
struct Incoming<'a> {
    id: Option<u64>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    error: Option<ErrorBody>,
    #[serde(borrow)]
    params: Option<NotificationParams<'a>>,
}

#[derive(Deserialize)]
struct ErrorBody {
    code: i32,
    message: String,
    data: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct NotificationParams<'a> {
    #[serde(borrow)]
    subscription: &'a RawValue,
    #[serde(borrow)]
    result: &'a RawValue,
}

/// Reads whatever the daemon sends while no call is there to read it: notifications,
/// pings, the end of the connection; and writes what a caller that gave up left unsent.
async fn read_loop(shared: Weak<Shared>) {
    // What came in behind the upgrade's answer is already read: no readiness announces it.
    if let Some(live) = shared.upgrade() {
        live.read_some().await;
    }
    loop {
        let Some(live) = shared.upgrade() else {
            return;
        };
        if live.routes().closed.is_some() {
            return;
        }
        let unflushed = live.unflushed.load(Ordering::Acquire);
        tokio::select! {
            ready = live.stream.readable() => match ready {
                Ok(()) => live.read_some().await,
                Err(e) => live.close(format!("reading from ctxd: {e}")),
            },
            ready = live.stream.writable(), if unflushed => match ready {
                Ok(()) => live.flush(),
                Err(e) => live.close(format!("writing to ctxd: {e}")),
            },
            () = live.flush_needed.notified() => {}
        }
    }
}

#[cfg(test)]
mod tests;
