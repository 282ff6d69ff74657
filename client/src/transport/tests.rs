//! The client's transport against a scripted server on a temp socket: what a real daemon
//! rarely does on cue (drop a connection mid-call, flood a subscription, ping).

use super::*;
use crate::{Client, Subscription};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixListener;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;

/// The server's side of one accepted connection.
struct Peer {
    ws: WebSocketStream<UnixStream>,
}

impl Peer {
    /// Accepts one connection and answers its upgrade request.
    async fn accept(listener: &UnixListener) -> Peer {
        Peer::accept_sending(listener, &[]).await
    }

    /// Accepts one connection and answers its upgrade request, with `early` (raw frame
    /// bytes) in the same write as the answer.
    async fn accept_sending(listener: &UnixListener, early: &[u8]) -> Peer {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            head.push(stream.read_u8().await.unwrap());
        }
        let head = String::from_utf8(head).unwrap();
        let key = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("sec-websocket-key")
                    .then(|| value.trim().to_string())
            })
            .unwrap();
        let answer = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: {}\r\n\r\n",
            derive_accept_key(key.as_bytes())
        );
        let mut answer = answer.into_bytes();
        answer.extend_from_slice(early);
        stream.write_all(&answer).await.unwrap();
        Peer {
            ws: WebSocketStream::from_raw_socket(stream, Role::Server, None).await,
        }
    }

    /// The client's next message (its pings are answered on the way, by tungstenite).
    async fn next(&mut self) -> Message {
        self.ws
            .next()
            .await
            .expect("the client closed the connection")
            .unwrap()
    }

    /// The client's next request, as JSON.
    async fn request(&mut self) -> Value {
        match self.next().await {
            Message::Text(t) => serde_json::from_str(&t).unwrap(),
            other => panic!("expected a request, got {other:?}"),
        }
    }

    async fn send_json(&mut self, v: &Value) {
        self.ws.send(Message::text(v.to_string())).await.unwrap();
    }
}

fn socket() -> (tempfile::TempDir, std::path::PathBuf, UnixListener) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sock");
    let listener = UnixListener::bind(&path).unwrap();
    (dir, path, listener)
}

/// A call waiting when the connection drops fails at once, naming why; so does the next.
#[tokio::test]
async fn a_dropped_connection_fails_the_waiting_call() {
    let (_dir, path, listener) = socket();
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        let request = peer.request().await;
        assert_eq!(request["method"], "daemon.ping");
        assert_eq!(request["params"], json!({}));
        drop(peer);
    });
    let client = Client::connect(&path).await.unwrap();
    let e = client
        .daemon_ping(ctxd_protocol::NoParams {})
        .await
        .unwrap_err();
    assert!(e.to_string().contains("closed the connection"), "{e}");
    server.await.unwrap();
    let again = client
        .daemon_ping(ctxd_protocol::NoParams {})
        .await
        .unwrap_err();
    assert!(
        again.to_string().contains("closed the connection"),
        "{again}"
    );
}

/// Answers reach their own calls whatever their order; an error answer is the call's
/// error; the server's ping is answered.
#[tokio::test]
async fn answers_reach_their_calls_in_any_order() {
    let (_dir, path, listener) = socket();
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        let first = peer.request().await;
        let second = peer.request().await;
        peer.ws.send(Message::Ping("hi".into())).await.unwrap();
        assert_eq!(peer.next().await, Message::Pong("hi".into()));
        peer.send_json(&json!({"jsonrpc": "2.0", "id": second["id"], "error": {"code": -32001, "message": "no such session", "data": {"session_id": "s"}}}))
            .await;
        peer.send_json(&json!({"jsonrpc": "2.0", "id": first["id"], "result": {"pong": true}}))
            .await;
        peer
    });
    let client = Client::connect(&path).await.unwrap();
    let (ping, status) = tokio::join!(
        client.daemon_ping(ctxd_protocol::NoParams {}),
        client.session_get(ctxd_protocol::SessionIdParams {
            session_id: "s".into()
        })
    );
    assert!(ping.unwrap().pong);
    match status.unwrap_err() {
        ClientError::Rpc { code, data, .. } => {
            assert_eq!(code, -32001);
            assert_eq!(data, Some(json!({"session_id": "s"})));
        }
        other => panic!("{other}"),
    }
    drop(server.await.unwrap());
}

/// Subscribes on `peer`'s connection: the server answers with id 77 and then writes
/// `notifications` items at once, before it answers the client's next call.
async fn subscribed(peer: &mut Peer, notifications: usize) {
    let subscribe = peer.request().await;
    assert_eq!(subscribe["method"], "session.subscribe");
    let answer = json!({"jsonrpc": "2.0", "id": subscribe["id"], "result": 77});
    peer.ws
        .feed(Message::text(answer.to_string()))
        .await
        .unwrap();
    for i in 0..notifications {
        let n = json!({"jsonrpc": "2.0", "method": "session.event", "params": {"subscription": 77, "result": {"n": i}}});
        peer.ws.feed(Message::text(n.to_string())).await.unwrap();
    }
    peer.ws.flush().await.unwrap();
}

async fn subscribe(client: &Client) -> Subscription<Value> {
    client
        .subscribe_raw(
            "session.subscribe",
            json!({"session_id": "s"}),
            "session.unsubscribe",
        )
        .await
        .unwrap()
}

async fn expect_unsubscribe(peer: &mut Peer) {
    let unsubscribe = peer.request().await;
    assert_eq!(unsubscribe["method"], "session.unsubscribe");
    assert_eq!(unsubscribe["params"], json!({"subscription": 77}));
}

/// Notifications written right behind the subscription's answer are all kept; a
/// subscriber more than the buffer behind is ended, and the daemon told.
#[tokio::test]
async fn a_subscriber_keeps_up_to_its_buffer_then_is_ended() {
    let (_dir, path, listener) = socket();
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        subscribed(&mut peer, SUBSCRIPTION_BUFFER + 10).await;
        // The ping and the unsubscribe the flood causes come in either order. The ping
        // is answered after the flood: when the call returns, the client has routed all.
        let mut two = [peer.request().await, peer.request().await];
        two.sort_by_key(|r| r["method"].as_str().unwrap().to_string());
        let [ping, unsubscribe] = two;
        assert_eq!(ping["method"], "daemon.ping");
        assert_eq!(unsubscribe["method"], "session.unsubscribe");
        assert_eq!(unsubscribe["params"], json!({"subscription": 77}));
        peer.send_json(&json!({"jsonrpc": "2.0", "id": ping["id"], "result": {"pong": true}}))
            .await;
    });
    let client = Client::connect(&path).await.unwrap();
    let mut sub = subscribe(&client).await;
    assert_eq!(sub.id(), "77");
    client
        .daemon_ping(ctxd_protocol::NoParams {})
        .await
        .unwrap();
    for i in 0..SUBSCRIPTION_BUFFER {
        assert_eq!(sub.next().await.unwrap().unwrap(), json!({"n": i}));
    }
    assert!(sub.next().await.is_none(), "ended once too far behind");
    server.await.unwrap();
}

/// Dropping a subscription tells the daemon; its items stop.
#[tokio::test]
async fn dropping_a_subscription_unsubscribes() {
    let (_dir, path, listener) = socket();
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        subscribed(&mut peer, 1).await;
        expect_unsubscribe(&mut peer).await;
        let normal = CloseFrame {
            code: CloseCode::Normal,
            reason: "".into(),
        };
        peer.ws.close(Some(normal)).await.unwrap();
        match peer.next().await {
            Message::Close(Some(frame)) => assert_eq!(frame.code, CloseCode::Normal),
            other => panic!("expected the close's answer, got {other:?}"),
        }
    });
    let client = Client::connect(&path).await.unwrap();
    let mut sub = subscribe(&client).await;
    assert_eq!(sub.next().await.unwrap().unwrap(), json!({"n": 0}));
    drop(sub);
    server.await.unwrap();
    let e = client
        .daemon_ping(ctxd_protocol::NoParams {})
        .await
        .unwrap_err();
    assert!(e.to_string().contains("code 1000"), "{e}");
}

/// A caller that gives up while its frame is still going out (a timeout around the
/// call) does not leave half a frame on the connection: the next call goes through.
#[tokio::test]
async fn a_call_given_up_mid_frame_still_finishes_its_frame() {
    const PAD: usize = 8 << 20;
    let (_dir, path, listener) = socket();
    let (gave_up_tx, gave_up_rx) = oneshot::channel();
    let server = tokio::spawn(async move {
        let mut peer = Peer::accept(&listener).await;
        // Not reading until the client has given up: its frame cannot all go out.
        gave_up_rx.await.unwrap();
        let big = peer.request().await;
        assert_eq!(big["params"]["pad"].as_str().unwrap().len(), PAD);
        let ping = peer.request().await;
        assert_eq!(ping["method"], "daemon.ping");
        peer.send_json(&json!({"jsonrpc": "2.0", "id": ping["id"], "result": {"pong": true}}))
            .await;
    });
    let client = Client::connect(&path).await.unwrap();
    let big = client.call::<_, Value>("daemon.ping", json!({"pad": "x".repeat(PAD)}));
    assert!(
        tokio::time::timeout(Duration::from_millis(50), big)
            .await
            .is_err(),
        "nothing answers it"
    );
    gave_up_tx.send(()).unwrap();
    let ping = tokio::time::timeout(
        Duration::from_secs(20),
        client.daemon_ping(ctxd_protocol::NoParams {}),
    );
    assert!(ping.await.expect("answered").unwrap().pong);
    server.await.unwrap();
}

/// A frame that came in the same read as the upgrade's answer is acted on, though no
/// readiness will announce it: here a ping, answered.
#[tokio::test]
async fn a_frame_behind_the_upgrade_answer_is_read() {
    let (_dir, path, listener) = socket();
    let server = tokio::spawn(async move {
        // A final, unmasked ping frame with a five-byte payload.
        let mut ping = vec![0x89, 5];
        ping.extend_from_slice(b"early");
        let mut peer = Peer::accept_sending(&listener, &ping).await;
        peer.next().await
    });
    let _client = Client::connect(&path).await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(20), server);
    assert_eq!(
        answer.await.expect("answered").unwrap(),
        Message::Pong("early".into())
    );
}

/// A text message from the daemon that is not UTF-8 ends the connection, naming the
/// protocol; it is never handed on as text.
#[tokio::test]
async fn text_that_is_not_utf8_ends_the_connection() {
    let (_dir, path, listener) = socket();
    let server = tokio::spawn(async move {
        let mut bad = vec![0x81, 2];
        bad.extend_from_slice(b"\xff\xfe");
        let mut peer = Peer::accept(&listener).await;
        let _ = peer.request().await;
        peer.ws.get_mut().write_all(&bad).await.unwrap();
        // The client closes with 1007.
        match peer.ws.next().await {
            Some(Ok(Message::Close(Some(frame)))) => frame.code,
            other => panic!("expected a close, got {other:?}"),
        }
    });
    let client = Client::connect(&path).await.unwrap();
    let e = client
        .daemon_ping(ctxd_protocol::NoParams {})
        .await
        .unwrap_err();
    assert!(e.to_string().contains("protocol"), "{e}");
    let code = tokio::time::timeout(Duration::from_secs(20), server);
    assert_eq!(code.await.expect("closed").unwrap(), CloseCode::Invalid);
}
