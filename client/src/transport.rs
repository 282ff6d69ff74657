//! The WebSocket connection under `Client`.
//!
//! The calling task writes its own request frame and then reads the socket itself, so a
//! lone caller gets its answer without a hand-over between tasks. A reader task reads
//! too, for whatever arrives when no call is waiting: notifications, the daemon's pings,
//! the end of the connection. Whoever reads routes each answer to the call waiting for it
//! and each notification to its subscription. The jsonrpsee client this replaces handed
//! every call to a background task and back, and armed a timer on its own timer thread
//! per call: a no-op call cost about 50 µs more than the daemon's part of it.
//!
//! The framing is the protocol crate's (`ctxd_protocol::ws_frame`), read from the
//! server's side.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use base64::Engine as _;
use ctxd_protocol::ws_frame::{self, Event, Reader, Sender};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{mpsc, oneshot};

use crate::ClientError;

/// The largest message either way (the daemon's response bound).
pub(crate) const MAX_MESSAGE: usize = 256 * 1024 * 1024;
/// How long a call waits for its answer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// Notifications a subscription holds before its reader is too far behind and the
/// subscription is ended (jsonrpsee's default).
const SUBSCRIPTION_BUFFER: usize = 1024;
/// Bytes one turn of reading takes at most before it lets another task in.
const READ_BUDGET: usize = 1024 * 1024;
/// The longest HTTP answer to the upgrade request.
const MAX_HANDSHAKE: usize = 16 * 1024;
/// RFC 6455 §1.3.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

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

struct Writer {
    half: OwnedWriteHalf,
    masks: Masks,
    frame: Vec<u8>,
}

impl Writer {
    /// A frame went out: room kept for a large one goes with it.
    fn done(&mut self) {
        if self.frame.capacity() > 1024 * 1024 {
            self.frame = Vec::new();
        }
    }
}

pub(crate) struct Shared {
    writer: Arc<tokio::sync::Mutex<Writer>>,
    routes: Mutex<Routes>,
    next_id: AtomicU64,
    /// The socket's read side. Whoever waits for something reads it: a caller for its
    /// answer, the reader task for notifications and pings (`read_some`).
    read_half: OwnedReadHalf,
    /// What was read and not yet taken; one reader at a time.
    frames: Mutex<Reader>,
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

/// A frame mask per frame, unpredictable as RFC 6455 §5.3 asks (xorshift64*, seeded by
/// the process's random hasher keys).
struct Masks(u64);

impl Masks {
    fn new() -> Masks {
        let seed = RandomState::new().hash_one(std::time::SystemTime::now());
        Masks(seed | 1)
    }

    fn next(&mut self) -> [u8; 4] {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let [a, b, c, d, ..] = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D).to_be_bytes();
        [a, b, c, d]
    }
}

fn transport(e: impl std::fmt::Display) -> ClientError {
    ClientError::Transport(e.to_string())
}

/// `key`'s `Sec-WebSocket-Accept` (RFC 6455 §4.2.2).
fn accept_key(key: &str) -> String {
    use sha1::Digest as _;
    let digest = sha1::Sha1::new()
        .chain_update(key.as_bytes())
        .chain_update(ACCEPT_GUID.as_bytes())
        .finalize();
    base64::engine::general_purpose::STANDARD.encode(digest)
}

/// Checks the daemon's answer to the upgrade request.
fn check_handshake(head: &str, key: &str) -> Result<(), ClientError> {
    let status = head.lines().next().unwrap_or_default();
    if !status.starts_with("HTTP/1.1 101") {
        return Err(transport(format!(
            "the daemon refused the WebSocket upgrade: {status}"
        )));
    }
    let want = accept_key(key);
    let accepted = head.lines().any(|line| {
        line.split_once(':').is_some_and(|(name, value)| {
            name.trim().eq_ignore_ascii_case("sec-websocket-accept") && value.trim() == want
        })
    });
    if accepted {
        Ok(())
    } else {
        Err(transport(
            "the daemon's WebSocket answer does not carry the accept key for our key",
        ))
    }
}

impl Connection {
    /// Upgrades `stream` to a WebSocket and starts its reader.
    pub(crate) async fn open(mut stream: UnixStream) -> Result<Connection, ClientError> {
        let mut masks = Masks::new();
        let mut nonce = [0u8; 16];
        for chunk in nonce.chunks_mut(4) {
            chunk.copy_from_slice(&masks.next());
        }
        let key = base64::engine::general_purpose::STANDARD.encode(nonce);
        let request = format!(
            "GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(transport)?;
        let mut received = Vec::new();
        let head_end = loop {
            if let Some(at) = received.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            if received.len() > MAX_HANDSHAKE {
                return Err(transport("the daemon's WebSocket answer is too long"));
            }
            let mut chunk = [0u8; 1024];
            match stream.read(&mut chunk).await.map_err(transport)? {
                0 => {
                    return Err(transport(
                        "the daemon closed the connection during the upgrade",
                    ));
                }
                n => received.extend_from_slice(&chunk[..n]),
            }
        };
        check_handshake(&String::from_utf8_lossy(&received[..head_end]), &key)?;
        let (read, write) = stream.into_split();
        let mut frames = Reader::new(Sender::Server, MAX_MESSAGE);
        frames.push(&received[head_end..]);
        let shared = Arc::new(Shared {
            writer: Arc::new(tokio::sync::Mutex::new(Writer {
                half: write,
                masks,
                frame: Vec::new(),
            })),
            routes: Mutex::new(Routes::default()),
            next_id: AtomicU64::new(1),
            read_half: read,
            frames: Mutex::new(frames),
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
        self.shared.send(ws_frame::TEXT, &body).await?;
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
                    ready = shared.read_half.readable() => match ready {
                        Ok(()) => shared.read_some().await,
                        Err(e) => shared.close(format!("reading from ctxd: {e}")),
                    },
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
    /// Call `id` of `method`, as the text of its frame.
    fn encode(id: u64, method: &str, params: &P) -> Result<Vec<u8>, ClientError> {
        let request = Request {
            jsonrpc: "2.0",
            id,
            method,
            params,
        };
        serde_json::to_vec(&request).map_err(transport)
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

    /// Writes one frame; callers take turns. A frame, once begun, is always finished:
    /// what the socket does not take at once is written by a task of its own, which a
    /// caller that gives up (a timeout around the call, a `select!`) does not cancel. A
    /// half-written frame would break the connection for every other call on it.
    async fn send(&self, opcode: u8, payload: &[u8]) -> Result<(), ClientError> {
        if payload.len() > MAX_MESSAGE {
            return Err(transport(format!(
                "a request of {} bytes is over the {MAX_MESSAGE}-byte message bound",
                payload.len()
            )));
        }
        let mut writer = Arc::clone(&self.writer).lock_owned().await;
        let Writer { half, masks, frame } = &mut *writer;
        frame.clear();
        ws_frame::write_masked_frame(opcode, payload, masks.next(), frame);
        let mut sent = 0;
        while sent < frame.len() {
            match half.try_write(&frame[sent..]) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(transport(format!("writing to ctxd: {e}"))),
            }
        }
        if sent == frame.len() {
            writer.done();
            return Ok(());
        }
        let rest = tokio::spawn(async move {
            let written = {
                let Writer { half, frame, .. } = &mut *writer;
                half.write_all(&frame[sent..]).await
            };
            writer.done();
            written
        });
        match rest.await {
            Ok(written) => written.map_err(|e| transport(format!("writing to ctxd: {e}"))),
            Err(e) => Err(transport(format!("writing to ctxd: {e}"))),
        }
    }

    /// Reads what the socket holds now, without waiting on it, and hands out every whole
    /// message; answers the daemon's pings and its close.
    async fn read_some(self: &Arc<Self>) {
        let (replies, ended) = self.take_frames();
        for (opcode, payload) in replies {
            if let Err(e) = self.send(opcode, &payload).await {
                self.close(e.to_string());
                return;
            }
        }
        if let Some(why) = ended {
            self.close(why);
        }
    }

    /// The synchronous part of `read_some`, under the frames' lock: the frames to send
    /// back, and why the connection ended, if it did. Takes at most `READ_BUDGET` bytes:
    /// the rest is read on the next turn (the socket stays readable, so that comes at
    /// once), and the lock is never held long.
    fn take_frames(self: &Arc<Self>) -> (Vec<(u8, Vec<u8>)>, Option<String>) {
        let mut frames = self
            .frames
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut replies = Vec::new();
        let mut taken = 0;
        let mut ended = None;
        loop {
            // Every whole event read so far, those before the end included.
            loop {
                match frames.next_event() {
                    Ok(Some(Event::Message(m))) => self.route(&m),
                    Ok(Some(Event::Ping(payload))) => replies.push((ws_frame::PONG, payload)),
                    Ok(Some(Event::Pong)) => {}
                    Ok(Some(Event::Close(code))) => {
                        let code = code.unwrap_or(ws_frame::CLOSE_NORMAL);
                        replies.push((ws_frame::CLOSE, code.to_be_bytes().to_vec()));
                        let why = format!("ctxd closed the connection (code {code})");
                        return (replies, Some(why));
                    }
                    Ok(Some(Event::TooBig)) => {
                        let why =
                            format!("a message from ctxd is over the {MAX_MESSAGE}-byte bound");
                        return (replies, Some(why));
                    }
                    Ok(None) => break,
                    Err(e) => {
                        let why = format!("ctxd broke the WebSocket protocol: {e}");
                        return (replies, Some(why));
                    }
                }
            }
            if ended.is_some() || taken >= READ_BUDGET {
                return (replies, ended);
            }
            match self.read_half.try_read(frames.spare()) {
                Ok(0) => ended = Some("ctxd closed the connection".to_string()),
                Ok(n) => {
                    frames.filled(n);
                    taken += n;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return (replies, None),
                Err(e) => ended = Some(format!("reading from ctxd: {e}")),
            }
        }
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
        self.send(ws_frame::TEXT, &body).await
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
/// pings, the end of the connection.
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
        match live.read_half.readable().await {
            Ok(()) => live.read_some().await,
            Err(e) => live.close(format!("reading from ctxd: {e}")),
        }
    }
}

#[cfg(test)]
#[path = "transport_tests.rs"]
mod tests;
