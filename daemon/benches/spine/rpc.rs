//! Part 4: an RPC no-op round trip over the socket vs a raw Unix-socket echo.

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub(super) async fn bench_rpc(dir: &Path) {
    let socket = dir.join("rpc.sock");
    let paths = ctxd::daemon::Paths {
        home: dir.join("home"),
        socket: socket.clone(),
    };
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(ctxd::daemon::run(paths, Default::default(), async move {
        let _ = rx.await;
    }));
    let client = loop {
        if let Ok(c) = ctx_client::Client::connect(&socket).await {
            break c;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    // The floor: the same request bytes echoed over a Unix socket by a trivial server.
    let echo_path = dir.join("echo.sock");
    let listener = tokio::net::UnixListener::bind(&echo_path).unwrap();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 4096];
        loop {
            let k = match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(k) => k,
            };
            if s.write_all(&buf[..k]).await.is_err() {
                break;
            }
        }
    });
    let msg = br#"{"jsonrpc":"2.0","id":1,"method":"daemon.ping","params":{}}"#;
    let mut s = tokio::net::UnixStream::connect(&echo_path).await.unwrap();
    let mut back = vec![0u8; msg.len()];
    let mut raw = RawWebSocket::connect(&socket).await;
    // In turn, a call and an echo: the machine's load moves both alike, so the ratio
    // holds where separate loops would each catch a different moment. The client
    // library gets a loop of its own: its timer thread and background task are still
    // busy after its call returns, and that work would land on whatever is measured next.
    let n = iters() * 10;
    let (mut frames, mut echo) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let t = Instant::now();
        let answer = raw.call(msg).await;
        frames.push(t.elapsed());
        assert!(answer.starts_with(br#"{"jsonrpc":"2.0""#), "{answer:?}");
        let t = Instant::now();
        s.write_all(msg).await.unwrap();
        s.read_exact(&mut back).await.unwrap();
        echo.push(t.elapsed());
    }
    let (mut rpc, mut echo_beside) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let t = Instant::now();
        client
            .daemon_ping(ctxd_protocol::NoParams {})
            .await
            .unwrap();
        rpc.push(t.elapsed());
        let t = Instant::now();
        s.write_all(msg).await.unwrap();
        s.read_exact(&mut back).await.unwrap();
        echo_beside.push(t.elapsed());
    }
    let (f, e) = (median(frames), median(echo));
    let (r, e2) = (median(rpc), median(echo_beside));
    println!(
        "rpc      daemon.ping over WebSocket on the socket: median {f:?} with bare frames against a raw Unix-socket echo of the same bytes {e:?}: ratio {:.1}x; with ctx-client {r:?} against {e2:?} for the echo beside it: ratio {:.1}x",
        f.as_secs_f64() / e.as_secs_f64(),
        r.as_secs_f64() / e2.as_secs_f64(),
    );
    let _ = tx.send(());
    let _ = server.await;
}

/// The least a client can do: the WebSocket handshake, then one masked text frame per
/// call, its answer read on the same task. What the daemon costs, without a client
/// library's own task between the caller and the socket (`ctx-client` has one).
struct RawWebSocket(tokio::net::UnixStream);

impl RawWebSocket {
    async fn connect(path: &Path) -> RawWebSocket {
        let mut s = tokio::net::UnixStream::connect(path).await.unwrap();
        s.write_all(
            b"GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
              Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        )
        .await
        .unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            head.push(s.read_u8().await.unwrap());
        }
        assert!(
            head.starts_with(b"HTTP/1.1 101"),
            "{}",
            String::from_utf8_lossy(&head)
        );
        RawWebSocket(s)
    }

    async fn send(&mut self, opcode: u8, payload: &[u8]) {
        assert!(payload.len() < 126);
        let mask = [0x5a, 0x17, 0xc3, 0x2e];
        let mut frame = vec![0x80 | opcode, 0x80 | u8::try_from(payload.len()).unwrap()];
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.0.write_all(&frame).await.unwrap();
    }

    /// Sends `text`; answers the server's pings until the text frame that answers it.
    async fn call(&mut self, text: &[u8]) -> Vec<u8> {
        self.send(0x1, text).await;
        loop {
            let mut head = [0u8; 2];
            self.0.read_exact(&mut head).await.unwrap();
            let len = match head[1] & 0x7f {
                126 => usize::from(self.0.read_u16().await.unwrap()),
                127 => usize::try_from(self.0.read_u64().await.unwrap()).unwrap(),
                n => usize::from(n),
            };
            let mut body = vec![0u8; len];
            self.0.read_exact(&mut body).await.unwrap();
            match head[0] {
                0x81 => return body,
                0x89 => self.send(0xA, &body).await,
                0x8A => {}
                other => panic!("unexpected frame {other:#x}"),
            }
        }
    }
}
