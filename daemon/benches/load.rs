//! `cargo bench -p ctxd --bench load`: one session shared by many clients, as a daemon
//! that several agents and tools attach to is used.
//!
//! A real `ctxd` process (the package's own binary) on a temporary socket and home; the
//! session is the largest fixture, imported. Then, for each client count N (1, 8, 64, 256;
//! `CTXD_LOAD_CLIENTS=1,8` to choose), N clients over HTTP with keep-alive, or over the
//! WebSocket (`ctx-client`), each loop for `CTXD_LOAD_SECS` (default 5) seconds: five
//! appends of a prompt and an answer of realistic sizes (about 1 KB and 2 KB), then a
//! compile. Eight subscribers follow the session meanwhile and check that every appended
//! record reaches them once, in order.
//!
//! Reported per run: operations a second, p50 and p99 of each method as the client saw it,
//! the daemon's own CPU time per operation (from `/proc`, so the load client's cost is
//! kept apart), the daemon's resident memory after the run, and what the subscribers saw
//! (lost, reordered). `CTXD_LOAD_STORE=postgresql://…` runs the daemon on PostgreSQL;
//! `CTXD_LOAD_TRANSPORT=http|ws` runs one transport only. The session has a 1M window, so
//! no run reaches a compaction.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench panics on what it did not expect

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

const SUBSCRIBERS: usize = 8;
const APPENDS_PER_COMPILE: usize = 5;

fn env_list(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(name).ok().map_or_else(
        || default.to_vec(),
        |v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
    )
}

fn secs() -> Duration {
    Duration::from_secs(
        std::env::var("CTXD_LOAD_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(5),
    )
}

/// The daemon under load.
struct Daemon {
    child: Child,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Daemon {
    fn start() -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("ctxd.sock");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctxd"));
        cmd.arg("--home")
            .arg(dir.path().join("home"))
            .arg("--socket")
            .arg(&socket)
            .arg("--managed-root")
            .arg(dir.path().join("managed"))
            .env("HOME", dir.path().join("user-home"))
            .args(["--max-connections", "1024"])
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        // `CTXD_LOAD_LOG=FILE` keeps the daemon's log (at `CTXD_LOG`, default `info`)
        // to see where a slow call went.
        match std::env::var_os("CTXD_LOAD_LOG") {
            Some(path) => {
                let log = std::fs::File::create(path).unwrap();
                cmd.env(
                    "CTXD_LOG",
                    std::env::var("CTXD_LOG").unwrap_or_else(|_| "info".into()),
                )
                .stderr(log);
            }
            None => {
                cmd.env("CTXD_LOG", "error").stderr(Stdio::null());
            }
        }
        if let Ok(url) = std::env::var("CTXD_LOAD_STORE") {
            cmd.arg("--store").arg(url);
        }
        let child = cmd.spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::os::unix::net::UnixStream::connect(&socket).is_err() {
            assert!(Instant::now() < deadline, "ctxd did not come up");
            std::thread::sleep(Duration::from_millis(20));
        }
        Daemon {
            child,
            socket,
            _dir: dir,
        }
    }

    /// The daemon's CPU time so far (user and system), from `/proc`.
    fn cpu(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        // utime and stime are the 14th and 15th fields, counted from the pid.
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        // SAFETY: sysconf has no preconditions.
        let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100);
        Duration::from_micros(ticks * 1_000_000 / hz)
    }

    fn rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kib: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap();
        kib / 1024.0
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 connection kept alive, as an agent's HTTP client keeps it.
struct Http {
    reader: BufReader<tokio::net::unix::OwnedReadHalf>,
    writer: tokio::net::unix::OwnedWriteHalf,
}

impl Http {
    async fn connect(socket: &Path) -> Http {
        let (r, w) = UnixStream::connect(socket).await.unwrap().into_split();
        Http {
            reader: BufReader::new(r),
            writer: w,
        }
    }

    async fn call(&mut self, method: &str, params: &Value) -> Value {
        let body =
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
        let head = format!(
            "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        self.writer.write_all(head.as_bytes()).await.unwrap();
        self.writer.write_all(body.as_bytes()).await.unwrap();
        let mut length = None;
        let mut chunked = false;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).await.unwrap();
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = Some(v.trim().parse::<usize>().unwrap());
            }
            if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
                chunked = true;
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut out = Vec::new();
        if chunked {
            loop {
                let mut size = String::new();
                self.reader.read_line(&mut size).await.unwrap();
                let n = usize::from_str_radix(size.trim(), 16).unwrap();
                let mut chunk = vec![0u8; n + 2];
                self.reader.read_exact(&mut chunk).await.unwrap();
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&chunk[..n]);
            }
        } else {
            out.resize(length.unwrap(), 0);
            self.reader.read_exact(&mut out).await.unwrap();
        }
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert!(v.get("error").is_none(), "{method}: {v}");
        v
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Transport {
    Http,
    Ws,
}

enum Conn {
    Http(Http),
    Ws(ctx_client::Client),
}

impl Conn {
    async fn open(t: Transport, socket: &Path) -> Conn {
        match t {
            Transport::Http => Conn::Http(Http::connect(socket).await),
            Transport::Ws => Conn::Ws(ctx_client::Client::connect(socket).await.unwrap()),
        }
    }

    async fn call(&mut self, method: &str, params: Value) {
        match self {
            Conn::Http(h) => {
                h.call(method, &params).await;
            }
            Conn::Ws(c) => {
                let _: Value = c.call(method, params).await.unwrap();
            }
        }
    }
}

fn prompt(client: usize, i: u64) -> Value {
    json!({"type": "user", "content": format!("Client {client}, step {i}: {}", "please look at the parser and say what it does with a line that is not JSON. ".repeat(12))})
}

fn answer(client: usize, i: u64) -> Value {
    json!({"type": "assistant", "content": [{"type": "text", "text": format!("Answer {client}/{i}: {}", "The parser reads each line, skips blank ones and reports the first that fails with its number. ".repeat(20))}]})
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ctxd_pipeline::saturate::usize_from_f64(((sorted.len() - 1) as f64 * p).round());
    sorted[i.min(sorted.len() - 1)]
}

struct Run {
    ops: u64,
    appends: Vec<Duration>,
    compiles: Vec<Duration>,
    wall: Duration,
    cpu: Duration,
    rss_mib: f64,
    delivered: u64,
    lost: u64,
    reordered: u64,
}

async fn run(d: &Daemon, sid: &str, transport: Transport, clients: usize) -> Run {
    let stop = Arc::new(AtomicBool::new(false));
    // Subscribers first: every record appended from now on must reach each of them.
    let mut subs = Vec::new();
    for _ in 0..SUBSCRIBERS {
        let c = ctx_client::Client::connect(&d.socket).await.unwrap();
        let mut sub = c.subscribe(sid).await.unwrap();
        let stop = stop.clone();
        subs.push(tokio::spawn(async move {
            let _keep = c;
            let (mut last, mut seen, mut reordered) = (0u64, 0u64, 0u64);
            loop {
                let next = tokio::time::timeout(Duration::from_millis(500), sub.next()).await;
                let event = match next {
                    Ok(Some(Ok(e))) => e,
                    Ok(_) => break,
                    Err(_) if stop.load(Ordering::Relaxed) => break,
                    Err(_) => continue,
                };
                if let ctxd_protocol::SessionEvent::RecordsAppended { records, .. } = event {
                    for r in records {
                        if last != 0 && r.seq != last + 1 {
                            reordered += 1;
                        }
                        last = r.seq;
                        seen += 1;
                    }
                }
            }
            (seen, reordered)
        }));
    }
    let appended = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + secs();
    let cpu0 = d.cpu();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for k in 0..clients {
        let socket = d.socket.clone();
        let sid = sid.to_string();
        let appended = appended.clone();
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::open(transport, &socket).await;
            let (mut appends, mut compiles) = (Vec::new(), Vec::new());
            let mut i = 0u64;
            while Instant::now() < deadline {
                for _ in 0..APPENDS_PER_COMPILE {
                    let t = Instant::now();
                    conn.call(
                        "transcript.append",
                        json!({"session_id": sid, "records": [prompt(k, i), answer(k, i)]}),
                    )
                    .await;
                    appends.push(t.elapsed());
                    appended.fetch_add(2, Ordering::Relaxed);
                    i += 1;
                }
                let t = Instant::now();
                conn.call("context.compile", json!({"session_id": sid}))
                    .await;
                compiles.push(t.elapsed());
            }
            (appends, compiles)
        }));
    }
    let (mut appends, mut compiles) = (Vec::new(), Vec::new());
    for t in tasks {
        let (a, c) = t.await.unwrap();
        appends.extend(a);
        compiles.extend(c);
    }
    let wall = started.elapsed();
    let cpu = d.cpu().saturating_sub(cpu0);
    stop.store(true, Ordering::Relaxed);
    let expected = appended.load(Ordering::Relaxed);
    let (mut delivered, mut lost, mut reordered) = (0, 0, 0);
    for s in subs {
        let (seen, out_of_order) = s.await.unwrap();
        delivered += seen;
        lost += expected.saturating_sub(seen);
        reordered += out_of_order;
    }
    appends.sort();
    compiles.sort();
    Run {
        ops: (appends.len() + compiles.len()) as u64,
        appends,
        compiles,
        wall,
        cpu,
        rss_mib: d.rss_mib(),
        delivered,
        lost,
        reordered,
    }
}

fn largest_fixture() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/claude-code");
    let mut files = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                files.push(p);
            }
        }
    }
    files
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .unwrap()
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let counts = env_list("CTXD_LOAD_CLIENTS", &[1, 8, 64, 256]);
    let transports: Vec<Transport> = match std::env::var("CTXD_LOAD_TRANSPORT").as_deref() {
        Ok("http") => vec![Transport::Http],
        Ok("ws") => vec![Transport::Ws],
        _ => vec![Transport::Http, Transport::Ws],
    };
    let store = if std::env::var("CTXD_LOAD_STORE").is_ok() {
        "postgresql"
    } else {
        "sqlite"
    };
    let fixture = largest_fixture();
    println!(
        "load on one session ({store}; {} imported; {} s a run; {SUBSCRIBERS} subscribers)",
        fixture.file_name().unwrap().to_string_lossy(),
        secs().as_secs()
    );
    println!(
        "{:<5} {:>7} {:>9} {:>10} {:>10} {:>11} {:>11} {:>12} {:>8} {:>6} {:>9}",
        "via",
        "clients",
        "ops/s",
        "append p50",
        "append p99",
        "compile p50",
        "compile p99",
        "cpu/op (ms)",
        "rss MiB",
        "lost",
        "reordered"
    );
    for transport in transports {
        for &n in &counts {
            // A fresh daemon and session per run, so one run's history does not slow the next.
            let d = Daemon::start();
            let sid = rt.block_on(async {
                let mut h = Http::connect(&d.socket).await;
                let r = h
                    .call(
                        "session.import",
                        // A 1M window: the run measures appends and compiles, not the
                        // compaction the growing session would reach at 200k.
                        &json!({"jsonl": std::fs::read_to_string(&fixture).unwrap(),
                                "model": {"model": "claude-sonnet-4-5", "context_window": 1_000_000,
                                          "max_output_tokens": 64_000}}),
                    )
                    .await;
                r["result"]["session_id"].as_str().unwrap().to_string()
            });
            let r = rt.block_on(run(&d, &sid, transport, n));
            let ms = |x: Duration| x.as_secs_f64() * 1000.0;
            println!(
                "{:<5} {:>7} {:>9.0} {:>10.2} {:>10.2} {:>11.2} {:>11.2} {:>12.3} {:>8.1} {:>6} {:>9}",
                format!("{transport:?}").to_lowercase(),
                n,
                r.ops as f64 / r.wall.as_secs_f64(),
                ms(percentile(&r.appends, 0.5)),
                ms(percentile(&r.appends, 0.99)),
                ms(percentile(&r.compiles, 0.5)),
                ms(percentile(&r.compiles, 0.99)),
                ms(r.cpu) / r.ops.max(1) as f64,
                r.rss_mib,
                r.lost,
                r.reordered,
            );
            let _ = r.delivered;
        }
    }
}
