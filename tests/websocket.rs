//! Black-box tests of the WebSocket transport, driven frame by frame as a client library
//! would: a real `ctxd` on a temp socket, a plain Unix socket on this side.

use crate::common;

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use common::Daemon;
use serde_json::{Value, json};

const TEXT: u8 = 0x1;
const CONTINUATION: u8 = 0x0;
const CLOSE: u8 = 0x8;
const PING: u8 = 0x9;
const PONG: u8 = 0xA;
const MASK: [u8; 4] = [0x5a, 0x17, 0xc3, 0x2e];

/// A WebSocket client on a blocking socket, as small as the protocol allows.
struct Ws(UnixStream);

impl Ws {
    fn connect(socket: &Path) -> Ws {
        Ws::connect_sending(socket, &[])
    }

    /// Connects, writing `early` in the same write as the upgrade request.
    fn connect_sending(socket: &Path, early: &[u8]) -> Ws {
        let mut s = UnixStream::connect(socket).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut upgrade =
            b"GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
              Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
                .to_vec();
        upgrade.extend_from_slice(early);
        s.write_all(&upgrade).unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            s.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        let head = String::from_utf8(head).unwrap();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        // RFC 6455 §1.3's own key and answer.
        assert!(
            head.to_ascii_lowercase()
                .contains("sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo="),
            "{head}"
        );
        Ws(s)
    }

    fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![u8::from(fin) << 7 | opcode];
        match payload.len() {
            n @ 0..=125 => out.push(0x80 | u8::try_from(n).unwrap()),
            n @ 126..=0xFFFF => {
                out.push(0x80 | 126);
                out.extend_from_slice(&u16::try_from(n).unwrap().to_be_bytes());
            }
            n => {
                out.push(0x80 | 127);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        out.extend_from_slice(&MASK);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ MASK[i % 4]));
        out
    }

    fn send(&mut self, opcode: u8, payload: &[u8]) {
        self.0.write_all(&Ws::frame(true, opcode, payload)).unwrap();
    }

    fn text(&mut self, v: &Value) {
        self.send(TEXT, v.to_string().as_bytes());
    }

    /// The next frame from the server: opcode and payload. `None` once the socket ends.
    fn read_frame(&mut self) -> Option<(u8, Vec<u8>)> {
        let mut head = [0u8; 2];
        match self.0.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => return None,
            Err(e) => panic!("reading a frame: {e}"),
        }
        assert_eq!(head[0] & 0xF0, 0x80, "final, no reserved bits");
        assert_eq!(head[1] & 0x80, 0, "server frames are not masked");
        let len = match head[1] {
            126 => {
                let mut b = [0u8; 2];
                self.0.read_exact(&mut b).unwrap();
                u16::from_be_bytes(b) as usize
            }
            127 => {
                let mut b = [0u8; 8];
                self.0.read_exact(&mut b).unwrap();
                usize::try_from(u64::from_be_bytes(b)).unwrap()
            }
            n => n as usize,
        };
        let mut body = vec![0u8; len];
        self.0.read_exact(&mut body).unwrap();
        Some((head[0] & 0x0F, body))
    }

    /// The next JSON-RPC message, answering the server's pings on the way.
    fn answer(&mut self) -> Value {
        loop {
            match self.read_frame() {
                Some((TEXT, body)) => return serde_json::from_slice(&body).unwrap(),
                Some((PING, body)) => self.send(PONG, &body),
                other => panic!("expected a text frame, got {other:?}"),
            }
        }
    }

    fn call(&mut self, v: &Value) -> Value {
        self.text(v);
        self.answer()
    }
}

/// What a body gets over a plain HTTP POST.
fn over_http(d: &Daemon, body: &str) -> Value {
    let (_, text) = d.raw_http(body);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// A call gets the same answer over a WebSocket as over HTTP: errors of every kind,
/// batches, the batch bound, methods that wait on the store.
#[test]
fn websocket_answers_are_those_of_http() {
    let d = Daemon::start();
    let mut ws = Ws::connect(&d.socket);
    let too_many: Vec<Value> = (0..1001)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "daemon.ping"}))
        .collect();
    let bodies = [
        r#"{"jsonrpc":"2.0","id":1,"method":"daemon.ping"}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":"a","method":"daemon.ping","params":{"x":1}}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":1,"method":"daemon.ping""#.to_string(),
        r#"{"jsonrpc":"2.0","id":2,"method":5}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":3,"method":"nope.nothing"}"#.to_string(),
        r#"  [{"jsonrpc":"2.0","id":4,"method":"daemon.ping"},{"jsonrpc":"2.0","id":5,"method":"nope"},7]"#.to_string(),
        "[]".to_string(),
        "17".to_string(),
        r#"{"jsonrpc":"2.0","id":6,"method":"session.get","params":{"session_id":"missing"}}"#
            .to_string(),
        r#"{"jsonrpc":"2.0","id":7,"method":"session.list","params":{}}"#.to_string(),
        serde_json::to_string(&too_many).unwrap(),
    ];
    for body in &bodies {
        ws.send(TEXT, body.as_bytes());
        let got = ws.answer();
        assert_eq!(got, over_http(&d, body), "{body}");
    }
    // A notification is not answered: the next answer is the call's after it.
    ws.text(&json!({"jsonrpc": "2.0", "method": "daemon.ping"}));
    assert_eq!(
        ws.call(&json!({"jsonrpc": "2.0", "id": 9, "method": "daemon.ping"}))["id"],
        9
    );
}

/// Calls written back to back, some answered at once and some after the store, are all
/// answered, each once.
#[test]
fn pipelined_calls_are_each_answered_once() {
    let d = Daemon::start();
    let mut ws = Ws::connect(&d.socket);
    let mut burst = Vec::new();
    for i in 0..60 {
        let call = if i % 3 == 0 {
            json!({"jsonrpc": "2.0", "id": i, "method": "session.create", "params": {"cwd": "/tmp", "no_git": true}})
        } else {
            json!({"jsonrpc": "2.0", "id": i, "method": "daemon.ping"})
        };
        burst.extend(Ws::frame(true, TEXT, call.to_string().as_bytes()));
    }
    ws.0.write_all(&burst).unwrap();
    let mut ids: Vec<i64> = (0..60)
        .map(|_| ws.answer()["id"].as_i64().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..60).collect::<Vec<_>>());
    assert_eq!(d.session_count(), 20);
}

/// A project whose Stop hook waits until something is written to a FIFO; the session,
/// and the FIFO. Opening the FIFO for writing waits for the hook to open it for reading.
fn gated_stop(d: &Daemon) -> (Value, std::path::PathBuf) {
    let project = d.dir.path().join("proj");
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    let gate = d.dir.path().join("gate");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&gate)
            .status()
            .unwrap()
            .success()
    );
    let hook = format!("cat '{}' > /dev/null", gate.display());
    std::fs::write(
        project.join(".claude").join("settings.json"),
        json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": hook, "timeout": 60}]}]}})
            .to_string(),
    )
    .unwrap();
    let sid = d.call(
        "session.create",
        json!({"cwd": project, "no_git": true, "settings": {"hooks": {"trust_project": true}}}),
    )["session"]["session_id"]
        .clone();
    (sid, gate)
}

fn stop_call(id: u64, sid: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "hooks.stop", "params": {"session_id": sid}})
}

fn ping(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "daemon.ping"})
}

/// The next close frame's code, past any pings.
fn close_code(ws: &mut Ws) -> Vec<u8> {
    loop {
        match ws.read_frame() {
            Some((CLOSE, body)) => return body,
            Some((PING, _)) => {}
            other => panic!("expected a close, got {other:?}"),
        }
    }
}

/// A call that waits (here on a hook, which waits on a FIFO until the test writes to it)
/// does not hold up the calls behind it on the same connection.
#[test]
fn a_waiting_call_does_not_hold_up_the_next_one() {
    let d = Daemon::start();
    let (sid, gate) = gated_stop(&d);
    let mut ws = Ws::connect(&d.socket);
    let mut both = Ws::frame(true, TEXT, stop_call(1, &sid).to_string().as_bytes());
    both.extend(Ws::frame(true, TEXT, ping(2).to_string().as_bytes()));
    ws.0.write_all(&both).unwrap();
    assert_eq!(ws.answer()["id"], 2, "the ping waited for the hook");
    std::fs::write(&gate, b"go").unwrap();
    let stop = ws.answer();
    assert_eq!(stop["id"], 1);
    assert_eq!(stop["result"]["results"][0]["exit_code"], 0, "{stop}");
}

/// When the daemon stops, a call still running on a WebSocket finishes, and its answer
/// goes out before the connection's close.
#[test]
fn a_call_in_flight_when_the_daemon_stops_answers_before_the_close() {
    let mut d = Daemon::start();
    let (sid, gate) = gated_stop(&d);
    let mut busy = Ws::connect(&d.socket);
    let mut idle = Ws::connect(&d.socket);
    busy.text(&stop_call(1, &sid));
    // Answered after the stop call was read: that call is in flight.
    assert_eq!(busy.call(&ping(2))["id"], 2);
    assert_eq!(d.call("daemon.shutdown", json!({}))["stopping"], true);
    // The idle connection, with nothing in flight, is closed at once: the stop is under way.
    assert_eq!(close_code(&mut idle), 1001u16.to_be_bytes().to_vec());
    std::fs::write(&gate, b"go").unwrap();
    let stop = busy.answer();
    assert_eq!(stop["id"], 1, "{stop}");
    assert_eq!(stop["result"]["results"][0]["exit_code"], 0, "{stop}");
    assert_eq!(close_code(&mut busy), 1001u16.to_be_bytes().to_vec());
    assert_eq!(busy.read_frame(), None);
    assert!(d.terminate().success());
}

/// A message in fragments, with the client's ping between them: the ping is answered
/// with its payload, the message as a whole.
#[test]
fn fragments_join_and_a_clients_ping_is_answered() {
    let d = Daemon::start();
    let mut ws = Ws::connect(&d.socket);
    let call = br#"{"jsonrpc":"2.0","id":11,"method":"daemon.ping"}"#;
    let mut bytes = Ws::frame(false, TEXT, &call[..10]);
    bytes.extend(Ws::frame(true, PING, b"are you there"));
    bytes.extend(Ws::frame(false, CONTINUATION, &call[10..30]));
    bytes.extend(Ws::frame(true, CONTINUATION, &call[30..]));
    ws.0.write_all(&bytes).unwrap();
    assert_eq!(ws.read_frame(), Some((PONG, b"are you there".to_vec())));
    let answer = ws.answer();
    assert_eq!(answer["id"], 11);
    assert_eq!(answer["result"]["pong"], true);
}

/// A call written right behind the upgrade request, before its answer came, is answered.
#[test]
fn a_call_sent_with_the_upgrade_request_is_answered() {
    let d = Daemon::start();
    let call = br#"{"jsonrpc":"2.0","id":12,"method":"daemon.ping"}"#;
    let mut ws = Ws::connect_sending(&d.socket, &Ws::frame(true, TEXT, call));
    assert_eq!(ws.answer()["id"], 12);
}

/// A message over `max_request_bytes` is refused with REQUEST_TOO_BIG, and the
/// connection goes on: just over the bound, far over it (never held whole), and in
/// fragments with a ping between them; a message of exactly the bound is served.
#[test]
fn a_message_over_the_bound_is_refused_and_the_connection_goes_on() {
    let d = Daemon::start_with(&["--max-request-bytes", "4096"]);
    let mut ws = Ws::connect(&d.socket);
    let refused = |ws: &mut Ws| {
        let answer = ws.answer();
        assert_eq!(
            answer["error"]["code"],
            ctxd_protocol::REQUEST_TOO_BIG,
            "{answer}"
        );
        assert_eq!(answer["id"], Value::Null);
    };
    let padded = |id: u64, pad: usize| json!({"jsonrpc": "2.0", "id": id, "method": "daemon.ping", "params": {"pad": "x".repeat(pad)}});
    ws.text(&padded(1, 5000));
    refused(&mut ws);
    ws.text(&padded(2, 1 << 20));
    refused(&mut ws);
    let body = padded(3, 3000).to_string();
    let (a, b) = body.as_bytes().split_at(body.len() / 2);
    // In one write, so that the daemon reads the ping and the message's end together:
    // the refusal still comes after the pong, where the message's end stood.
    let sequence = [
        Ws::frame(false, TEXT, a),
        Ws::frame(true, PING, b"hi"),
        Ws::frame(false, CONTINUATION, b),
        Ws::frame(true, CONTINUATION, &[b' '; 2000]),
    ]
    .concat();
    ws.0.write_all(&sequence).unwrap();
    assert_eq!(ws.read_frame(), Some((PONG, b"hi".to_vec())));
    refused(&mut ws);
    // A pong of the client's own is no refusal: the next answer is the next call's.
    ws.send(PONG, b"");
    ws.send(PONG, &[0; 16]);
    let fits = json!({"jsonrpc": "2.0", "id": 4, "method": "daemon.ping"});
    let exact = format!("{fits}{}", " ".repeat(4096 - fits.to_string().len()));
    ws.send(TEXT, exact.as_bytes());
    assert_eq!(ws.answer()["result"]["pong"], true);
}

/// A frame the protocol forbids (a client frame without a mask) closes the connection
/// with status 1002, and the daemon serves on.
#[test]
fn a_protocol_error_closes_with_1002() {
    let d = Daemon::start();
    let mut ws = Ws::connect(&d.socket);
    ws.0.write_all(&[0x81, 0x02, b'{', b'}']).unwrap();
    assert_eq!(
        ws.read_frame(),
        Some((CLOSE, 1002u16.to_be_bytes().to_vec()))
    );
    assert_eq!(ws.read_frame(), None);
    assert_eq!(d.call("daemon.ping", json!({}))["pong"], true);
}

/// A 64-bit frame length with its most significant bit set is not a size but a broken
/// frame (RFC 6455 §5.2): 1002, not 1009.
#[test]
fn an_impossible_frame_length_closes_with_1002() {
    let d = Daemon::start();
    let mut ws = Ws::connect(&d.socket);
    let mut frame = vec![0x81, 0x80 | 127];
    frame.extend_from_slice(&(1u64 << 63).to_be_bytes());
    frame.extend_from_slice(&MASK);
    ws.0.write_all(&frame).unwrap();
    assert_eq!(close_code(&mut ws), 1002u16.to_be_bytes().to_vec());
    assert_eq!(d.call("daemon.ping", json!({}))["pong"], true);
}

/// A client that pings without ever reading holds a bounded number of pongs: past it the
/// daemon stops reading the client (whose writes then block), instead of buffering a
/// pong for every ping.
#[test]
fn a_ping_flood_from_a_client_that_never_reads_is_bounded() {
    let d = Daemon::start();
    let before = d.rss_kib();
    let mut ws = Ws::connect(&d.socket);
    ws.0.set_write_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let burst: Vec<u8> = (0..256)
        .flat_map(|_| Ws::frame(true, PING, &[b'p'; 125]))
        .collect();
    let mut sent = 0usize;
    let blocked = loop {
        match ws.0.write_all(&burst) {
            Ok(()) => sent += burst.len(),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                break true;
            }
            Err(e) => panic!("writing pings: {e}"),
        }
        if sent > 160 << 20 {
            break false;
        }
    };
    let held = d.rss_kib().saturating_sub(before);
    assert!(
        blocked,
        "the daemon read {sent} bytes of pings while none of its pongs was read"
    );
    // A few pongs, and the socket's and tungstenite's read buffers.
    assert!(held < 24 * 1024, "the daemon grew by {held} KiB");
    assert_eq!(d.call("daemon.ping", json!({}))["pong"], true);
}

/// The client's close frame is answered with the same code, then the socket ends.
#[test]
fn a_clients_close_is_answered() {
    let d = Daemon::start();
    let mut ws = Ws::connect(&d.socket);
    ws.send(CLOSE, &1000u16.to_be_bytes());
    assert_eq!(
        ws.read_frame(),
        Some((CLOSE, 1000u16.to_be_bytes().to_vec()))
    );
    assert_eq!(ws.read_frame(), None);
}

/// A client that answers the daemon's pings stays; one that does not is closed after
/// three intervals without a word.
#[test]
fn a_silent_client_is_closed_and_an_answering_one_stays() {
    let d = Daemon::start_with(&["--ws-ping-interval-ms", "100"]);
    let mut answering = Ws::connect(&d.socket);
    let silent_since = std::time::Instant::now();
    let mut silent = Ws::connect(&d.socket);
    // Five pings answered span five intervals, more than the three a silent one gets.
    for _ in 0..5 {
        match answering.read_frame() {
            Some((PING, body)) => answering.send(PONG, &body),
            other => panic!("expected a ping, got {other:?}"),
        }
    }
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "daemon.ping"});
    assert_eq!(answering.call(&ping)["result"]["pong"], true);
    let mut pings = 0;
    let close = loop {
        match silent.read_frame() {
            Some((PING, _)) => pings += 1,
            Some((CLOSE, body)) => break body,
            other => panic!("expected a ping or a close, got {other:?}"),
        }
    };
    assert_eq!(close, 1001u16.to_be_bytes().to_vec());
    // Pinged at one and two intervals, closed at the third.
    assert!(pings >= 2, "closed after {pings} pings");
    assert!(silent_since.elapsed() >= Duration::from_millis(300));
    assert_eq!(silent.read_frame(), None);
}

/// `daemon.shutdown` closes open WebSocket connections with 1001 ("going away") and the
/// daemon exits.
#[test]
fn shutdown_closes_websocket_connections() {
    let mut d = Daemon::start();
    let mut ws = Ws::connect(&d.socket);
    let mut other = Ws::connect(&d.socket);
    let answer = ws.call(&json!({"jsonrpc": "2.0", "id": 1, "method": "daemon.shutdown"}));
    assert_eq!(answer["result"]["stopping"], true);
    for conn in [&mut ws, &mut other] {
        let close = loop {
            match conn.read_frame() {
                Some((CLOSE, body)) => break body,
                Some((PING, _)) => {}
                other => panic!("expected a close, got {other:?}"),
            }
        };
        assert_eq!(close, 1001u16.to_be_bytes().to_vec());
        assert_eq!(conn.read_frame(), None);
    }
    assert!(d.terminate().success());
}

/// RFC 6455 §8.1: a text message that is not UTF-8 closes the connection with 1007,
/// also when the bad byte sequence is split across fragments; a valid sequence split the
/// same way is fine.
#[test]
fn text_that_is_not_utf8_closes_with_1007() {
    let d = Daemon::start();
    let mut ws = Ws::connect(&d.socket);
    let call = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.ping\",\"params\":{\"é\":1}}";
    let at = call.find('é').unwrap() + 1;
    let mut split = Ws::frame(false, TEXT, &call.as_bytes()[..at]);
    split.extend(Ws::frame(true, CONTINUATION, &call.as_bytes()[at..]));
    ws.0.write_all(&split).unwrap();
    assert_eq!(ws.answer()["id"], 1, "a split character is one character");
    ws.send(
        TEXT,
        b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"\xff\xfe\"}",
    );
    assert_eq!(close_code(&mut ws), 1007u16.to_be_bytes().to_vec());
    assert_eq!(ws.read_frame(), None);
    assert_eq!(d.call("daemon.ping", json!({}))["pong"], true);
}

/// A close frame with a one-byte payload is malformed (§5.5.1); a close code no peer may
/// send (1005, 1006, below 1000) is not echoed back: both are answered with 1002.
#[test]
fn a_malformed_close_is_answered_with_1002() {
    let d = Daemon::start();
    for payload in [
        vec![0x03],
        1005u16.to_be_bytes().to_vec(),
        999u16.to_be_bytes().to_vec(),
    ] {
        let mut ws = Ws::connect(&d.socket);
        ws.send(CLOSE, &payload);
        let close = close_code(&mut ws);
        assert_eq!(close[..2], 1002u16.to_be_bytes(), "after {payload:?}");
        assert_eq!(ws.read_frame(), None);
    }
    // A code a peer may send (an application's own) is echoed.
    let mut ws = Ws::connect(&d.socket);
    ws.send(CLOSE, &4000u16.to_be_bytes());
    assert_eq!(close_code(&mut ws), 4000u16.to_be_bytes().to_vec());
}

/// Every number and string is an id, and the answer carries it as it came (the same
/// JSON text); an object or an array is not an id: -32600 with `id: null`. Over both
/// transports, single and in a batch.
#[test]
fn every_json_rpc_id_gets_its_answer() {
    let d = Daemon::start();
    let mut ws = Ws::connect(&d.socket);
    for id in [
        "-1",
        "1.5",
        "1e3",
        "0",
        "18446744073709551616",
        "\"x\"",
        "null",
    ] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"daemon.ping"}}"#);
        let want = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"pong":true}}}}"#);
        let (_, http) = d.raw_http(&body);
        assert_eq!(http, want, "over HTTP");
        ws.send(TEXT, body.as_bytes());
        let (opcode, text) = loop {
            match ws.read_frame() {
                Some((PING, b)) => ws.send(PONG, &b),
                Some(frame) => break frame,
                None => panic!("no answer to id {id}"),
            }
        };
        assert_eq!(opcode, TEXT);
        assert_eq!(String::from_utf8(text).unwrap(), want, "over WebSocket");
    }
    for id in ["{}", "[1]", "true"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"daemon.ping"}}"#);
        let answer = over_http(&d, &body);
        assert_eq!(answer["error"]["code"], -32600, "{id}: {answer}");
        assert_eq!(answer["id"], Value::Null);
        ws.send(TEXT, body.as_bytes());
        assert_eq!(ws.answer(), answer);
    }
    let batch = r#"[{"jsonrpc":"2.0","id":-7,"method":"daemon.ping"},{"jsonrpc":"2.0","id":{},"method":"daemon.ping"},{"jsonrpc":"2.0","id":2.5,"method":"nope"}]"#;
    let answers: Vec<Value> = serde_json::from_str(&d.raw_http(batch).1).unwrap();
    assert_eq!(answers.len(), 3);
    assert_eq!(answers[0]["id"], -7);
    assert_eq!(answers[0]["result"]["pong"], true);
    assert_eq!(answers[1]["id"], Value::Null);
    assert_eq!(answers[1]["error"]["code"], -32600);
    assert_eq!(answers[2]["id"], 2.5);
    assert_eq!(answers[2]["error"]["code"], -32601);
    ws.send(TEXT, batch.as_bytes());
    assert_eq!(ws.answer(), Value::Array(answers));
}

/// `daemon.status`'s WebSocket figures, read over HTTP.
fn ws_status(d: &Daemon) -> Value {
    d.call("daemon.status", json!({}))["websocket"].clone()
}

/// Waits until `done` holds of the daemon's WebSocket figures (each look is a call).
fn wait_for_status(d: &Daemon, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let status = ws_status(d);
        if done(&status) {
            return status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never {what}: {status}"
        );
        std::thread::yield_now();
    }
}

/// A session of about 10 MB (100 records of 100 KB).
fn large_session(d: &Daemon) -> String {
    let sid =
        d.call("session.create", json!({"cwd": "/tmp", "no_git": true}))["session"]["session_id"]
            .as_str()
            .unwrap()
            .to_string();
    let text = "x".repeat(100_000);
    for batch in 0..10 {
        let records: Vec<Value> = (0..10)
            .map(|i| {
                json!({"type": "user", "message": {"role": "user", "content": format!("{batch}/{i} {text}")}})
            })
            .collect();
        d.call(
            "transcript.append",
            json!({"session_id": sid, "records": records}),
        );
    }
    sid
}

/// A client that pipelines 150 reads of a 10 MB session and never reads an answer holds
/// what one connection may queue (16 MiB) plus the answers of the calls already running
/// (at most 4), not 150 answers; another client is served meanwhile; and when it goes,
/// everything it held goes.
#[test]
fn a_client_that_never_reads_holds_a_bounded_queue() {
    let d = Daemon::start();
    let sid = large_session(&d);
    let before = d.rss_kib();
    let mut ws = Ws::connect(&d.socket);
    let mut burst = Vec::new();
    for i in 0..150 {
        let read = json!({"jsonrpc": "2.0", "id": i, "method": "transcript.read", "params": {"session_id": sid, "limit": 5000}});
        burst.extend(Ws::frame(true, TEXT, read.to_string().as_bytes()));
    }
    ws.0.write_all(&burst).unwrap();
    let full = wait_for_status(&d, "full", |s| {
        s["queued_bytes"].as_u64().unwrap() >= 16 << 20 && s["calls_running"] == 0
    });
    let held = d.rss_kib().saturating_sub(before);
    assert!(
        full["answers_waiting"].as_u64().unwrap() <= 4,
        "at most 4 calls in flight: {full}"
    );
    assert!(
        full["queued_bytes"].as_u64().unwrap() < (16 << 20) + 11_000_000,
        "16 MiB and one answer at most: {full}"
    );
    // 16 MiB queued and at most 4 answers of about 10 MB, plus what building each
    // answer takes and the allocator keeps: far below 150 answers (1.5 GB and more).
    assert!(held < 400 * 1024, "the daemon grew by {held} KiB: {full}");
    assert_eq!(d.call("daemon.ping", json!({}))["pong"], true);
    drop(ws);
    wait_for_status(&d, "empty", |s| {
        s["connections"] == 0 && s["queued_bytes"] == 0 && s["answers_waiting"] == 0
    });
}

/// A subscriber with `include_records` that never reads while 40 MB are appended is
/// ended with `lagged {ended: true}` once its connection stays full: what it would have
/// queued is not held, and it can resume from `last_seq`.
#[test]
fn a_subscriber_too_far_behind_is_ended_with_lagged() {
    let d = Daemon::start();
    let sid =
        d.call("session.create", json!({"cwd": "/tmp", "no_git": true}))["session"]["session_id"]
            .as_str()
            .unwrap()
            .to_string();
    let mut ws = Ws::connect(&d.socket);
    let sub = ws.call(&json!({"jsonrpc": "2.0", "id": 1, "method": "session.subscribe", "params": {"session_id": sid, "include_records": true}}));
    assert!(
        sub["result"].is_number() || sub["result"].is_string(),
        "{sub}"
    );
    let before = d.rss_kib();
    let text = "y".repeat(1_000_000);
    for i in 0..40 {
        let record =
            json!({"type": "user", "message": {"role": "user", "content": format!("{i} {text}")}});
        d.call(
            "transcript.append",
            json!({"session_id": sid, "records": [record]}),
        );
    }
    let held = d.rss_kib().saturating_sub(before);
    assert!(held < 150 * 1024, "the daemon grew by {held} KiB");
    wait_for_status(&d, "the subscription ended", |s| s["subscriptions"] == 0);
    // Everything sent arrives in order, then the end.
    let mut last_seq = 0;
    let lagged = loop {
        let note = ws.answer();
        let event = &note["params"]["result"];
        match event["kind"].as_str() {
            Some("records_appended") => {
                for r in event["full_records"].as_array().unwrap() {
                    let seq = r["seq"].as_u64().unwrap();
                    assert_eq!(seq, last_seq + 1, "in order, none twice");
                    last_seq = seq;
                }
            }
            Some("lagged") => break event.clone(),
            _ => {}
        }
    };
    assert_eq!(lagged["ended"], true, "{lagged}");
    assert_eq!(lagged["last_seq"], last_seq);
    assert!(
        last_seq < 40,
        "the subscriber was ended before it had everything"
    );
    // Resuming from last_seq delivers the rest.
    let resumed = ws.call(&json!({"jsonrpc": "2.0", "id": 2, "method": "session.subscribe", "params": {"session_id": sid, "after_seq": last_seq}}));
    assert!(resumed.get("result").is_some(), "{resumed}");
    while last_seq < 40 {
        let note = ws.answer();
        let event = &note["params"]["result"];
        if event["kind"] == "records_appended" {
            for r in event["records"].as_array().unwrap() {
                assert_eq!(r["seq"].as_u64().unwrap(), last_seq + 1);
                last_seq += 1;
            }
        }
    }
}

/// Subscriptions are counted in the metrics when they open or are refused, as calls are:
/// `session.subscribe` to a session and to none, `context.send_stream` on a session
/// without a provider.
#[test]
fn subscriptions_are_counted_when_they_open_or_are_refused() {
    let d = Daemon::start();
    let sid =
        d.call("session.create", json!({"cwd": "/tmp", "no_git": true}))["session"]["session_id"]
            .as_str()
            .unwrap()
            .to_string();
    let calls = |method: &str, outcome: &str| {
        let text = d.call("daemon.metrics", json!({}))["text"]
            .as_str()
            .unwrap()
            .to_string();
        common::metric(
            &text,
            "ctxd_rpc_calls_total",
            &[("method", method), ("outcome", outcome)],
        )
        .unwrap_or(0.0)
    };
    let mut ws = Ws::connect(&d.socket);
    let ok = ws.call(&json!({"jsonrpc": "2.0", "id": 1, "method": "session.subscribe", "params": {"session_id": sid}}));
    assert!(ok["result"].is_number() || ok["result"].is_string(), "{ok}");
    let refused = ws.call(&json!({"jsonrpc": "2.0", "id": 2, "method": "session.subscribe", "params": {"session_id": "no-such-session"}}));
    assert_eq!(
        refused["error"]["code"],
        ctxd_protocol::SESSION_NOT_FOUND,
        "{refused}"
    );
    let turn = ws.call(&json!({"jsonrpc": "2.0", "id": 3, "method": "context.send_stream", "params": {"session_id": "no-such-session"}}));
    assert!(turn["error"]["code"].is_i64(), "{turn}");
    assert_eq!(calls("session.subscribe", "ok"), 1.0);
    assert_eq!(calls("session.subscribe", "error"), 1.0);
    assert_eq!(calls("context.send_stream", "error"), 1.0);
}
