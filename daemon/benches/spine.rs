//! `cargo bench -p ctxd --bench spine`: the spine's costs next to their floors.
//!
//! 1. compile of a session vs serde_json serialising the same output (the session: the
//!    file named by `CTXD_BENCH_SESSION`, else the largest fixture and the sub-agent one);
//! 2. import of the same file vs serde_json parsing its lines;
//!    and a compile after each of a series of appended turns (a prompt and its answer)
//!    vs serde_json serialising that compile's request (`turn`);
//! 3. growth: compile time over the session repeated 1×, 4× and 16× (each copy after a
//!    compact boundary, so the model sees about one copy while the history grows);
//! 4. an RPC no-op round trip over the socket (with `ctx-client`, and with bare WebSocket
//!    frames written and read on the caller's task) vs a raw Unix-socket echo of the same
//!    bytes;
//! 5. batched appends per second vs raw rusqlite inserts with the same WAL settings (into a
//!    minimal table, and the engine's own rows replayed into its records table), each
//!    batch through the engine followed by the same batch through both floors.
//!
//! Prints medians and ratios. Set `CTXD_BENCH_ITERS` to change the sample count,
//! `CTXD_BENCH_ONLY` (comma-separated part names) to run some parts only,
//! `CTXD_BENCH_TURN_GAP_MS` to pause that long before each of `turn`'s compiles.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it did not expect

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxd::clock::SystemClock;
use ctxd::engine::Engine;
use ctxd::store::Store;
use ctxd_protocol::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The daemon's allocator (`src/main.rs`), so the bench measures what the daemon runs;
/// the serde_json and rusqlite floors run on it too.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn iters() -> usize {
    std::env::var("CTXD_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/claude-code")
}

fn largest_fixture() -> PathBuf {
    let mut best = (0, PathBuf::new());
    for dir in ["spotter", "viewer"] {
        for e in std::fs::read_dir(fixtures().join(dir)).unwrap().flatten() {
            let len = e.metadata().unwrap().len();
            if e.path().extension().is_some_and(|x| x == "jsonl") && len > best.0 {
                best = (len, e.path());
            }
        }
    }
    best.1
}

/// An engine as the daemon runs one: with its file watcher (which vouches for skill
/// folders and instruction files between compiles).
async fn engine(dir: &Path) -> Arc<Engine> {
    std::fs::create_dir_all(dir).unwrap();
    let store = Store::open(&dir.join("bench.db")).unwrap();
    let e = Arc::new(Engine::new(store, dir, Arc::new(SystemClock)));
    e.start_watching().await.unwrap();
    e
}

/// The sessions the compile and import benches run on.
fn sessions() -> Vec<PathBuf> {
    match std::env::var_os("CTXD_BENCH_SESSION") {
        Some(p) => vec![PathBuf::from(p)],
        None => vec![largest_fixture(), fixtures().join("spotter/subagent.jsonl")],
    }
}

fn import_params(jsonl: String) -> SessionImportParams {
    SessionImportParams {
        jsonl,
        cwd: None,
        fallback_cwd: Some("/tmp".into()),
        model: None,
        title: None,
    }
}

const WARM_UP_IMPORTS: usize = 3;

/// Import of the file vs serde_json parsing each of its lines into a `Value` (the floor
/// of reading it at all).
async fn bench_import(dir: &Path, path: &Path) {
    let e = engine(dir).await;
    let jsonl = std::fs::read_to_string(path).unwrap();
    // The first imports grow an empty database and WAL and fault in fresh memory: they
    // are not what a running daemon pays, and ten samples of them made the median noise.
    for _ in 0..WARM_UP_IMPORTS {
        e.import_claude_code(import_params(jsonl.clone()))
            .await
            .unwrap();
    }
    let n = (iters() / 5).max(5);
    let mut import = Vec::with_capacity(n);
    let mut parse = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        e.import_claude_code(import_params(jsonl.clone()))
            .await
            .unwrap();
        import.push(t.elapsed());
        let t = Instant::now();
        let values: Vec<serde_json::Value> = jsonl
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        parse.push(t.elapsed());
        assert!(!values.is_empty());
    }
    let (i, p) = (median(import), median(parse));
    let mb = jsonl.len() as f64 / 1e6;
    println!(
        "import   {} ({:.2} MB): median {:?} = {:.1} MB/s; serde_json parse of its lines {:?} = {:.0} MB/s; import at {:.1}% of the parse rate",
        path.file_name().unwrap().to_string_lossy(),
        mb,
        i,
        mb / i.as_secs_f64(),
        p,
        mb / p.as_secs_f64(),
        p.as_secs_f64() / i.as_secs_f64() * 100.0
    );
}

/// The session `times` times over: copy k's uuids and tool ids made unique, each copy
/// after a compact boundary and its summary (Claude Code's own record shapes).
fn repeated(jsonl: &str, times: usize) -> String {
    let uuid = regex::Regex::new(r"[0-9a-f]{8}(-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")
        .unwrap();
    let tool = regex::Regex::new(r"(toolu_[A-Za-z0-9]+)").unwrap();
    let mut out = String::with_capacity(jsonl.len() * times + times * 512);
    for k in 0..times {
        let copy = uuid.replace_all(jsonl, |c: &regex::Captures<'_>| format!("{k:08x}{}", &c[1]));
        let copy = tool.replace_all(&copy, |c: &regex::Captures<'_>| format!("{}x{k}", &c[1]));
        let mut first = true;
        for line in copy.lines().filter(|l| !l.trim().is_empty()) {
            if k > 0 && first {
                let boundary = format!("{k:08x}-0000-7000-8000-00000000b0b0");
                let summary = format!("{k:08x}-0000-7000-8000-00000000b0b1");
                out.push_str(
                    &serde_json::json!({
                        "parentUuid": null, "isSidechain": false, "type": "system",
                        "subtype": "compact_boundary", "content": "Conversation compacted",
                        "isMeta": false, "timestamp": "2026-01-01T00:00:00.000Z",
                        "uuid": boundary, "level": "info",
                        "compactMetadata": {"trigger": "auto", "preTokens": 150000},
                    })
                    .to_string(),
                );
                out.push('\n');
                out.push_str(&serde_json::json!({
                    "parentUuid": boundary, "isSidechain": false, "type": "user",
                    "isCompactSummary": true, "uuid": summary,
                    "timestamp": "2026-01-01T00:00:00.000Z",
                    "message": {"role": "user", "content": "This session is being continued from a previous conversation. Summary: the work so far."},
                }).to_string());
                out.push('\n');
                let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
                v["parentUuid"] = serde_json::json!(summary);
                out.push_str(&v.to_string());
                out.push('\n');
                first = false;
                continue;
            }
            first = false;
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Compile time over the same session repeated 1×, 4× and 16×: what the model sees stays
/// about one copy, so a compile should cost about the same however long the history.
async fn bench_growth(dir: &Path, path: &Path) {
    let jsonl = std::fs::read_to_string(path).unwrap();
    let n = (iters() / 4).max(10);
    let mut rows = Vec::new();
    // `CTXD_BENCH_GROWTH=16` measures that size only (e.g. under a profiler).
    let sizes: Vec<usize> = match std::env::var("CTXD_BENCH_GROWTH") {
        Ok(v) => v.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        Err(_) => vec![1, 4, 16],
    };
    for times in sizes {
        let (e, p, records) =
            imported(&dir.join(format!("x{times}")), repeated(&jsonl, times)).await;
        e.compile(p.clone()).await.unwrap();
        let mut t = Vec::with_capacity(n);
        for _ in 0..n {
            let s = Instant::now();
            e.compile(p.clone()).await.unwrap();
            t.push(s.elapsed());
        }
        rows.push((times, records, median(t)));
    }
    let base = rows[0].2.as_secs_f64();
    let cells: Vec<String> = rows
        .iter()
        .map(|(x, r, d)| format!("{x}x ({r} records) {d:?} = {:.2}", d.as_secs_f64() / base))
        .collect();
    println!(
        "growth   {}: compile median {}",
        path.file_name().unwrap().to_string_lossy(),
        cells.join("; ")
    );
}

/// A fresh engine with `jsonl` imported: the engine, the compile call of the session, and
/// how many records it holds.
async fn imported(dir: &Path, jsonl: String) -> (Arc<Engine>, CompileParams, u64) {
    let e = engine(dir).await;
    let (info, stats) = e.import_claude_code(import_params(jsonl)).await.unwrap();
    let p = CompileParams {
        session_id: info.session_id,
        ..Default::default()
    };
    (e, p, stats.records)
}

async fn bench_compile(dir: &Path, path: PathBuf) {
    let (e, p, records) = imported(dir, std::fs::read_to_string(&path).unwrap()).await;
    let first = e.compile(p.clone()).await.unwrap();
    let value: serde_json::Value = serde_json::from_str(&first.body).unwrap();
    let n = iters();
    let mut compile = Vec::with_capacity(n);
    let mut serialise = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let c = e.compile(p.clone()).await.unwrap();
        compile.push(t.elapsed());
        assert_eq!(c.body.len(), first.body.len());
        let t = Instant::now();
        let s = serde_json::to_string(&value).unwrap();
        serialise.push(t.elapsed());
        assert!(!s.is_empty());
    }
    let (c, s) = (median(compile), median(serialise));
    println!(
        "compile  {} ({} records, {} request bytes): median {:?}; serde_json::to_string of the same request {:?}; ratio {:.2}x",
        path.file_name().unwrap().to_string_lossy(),
        records,
        first.body.len(),
        c,
        s,
        c.as_secs_f64() / s.as_secs_f64()
    );
}

/// A compile after each turn (a prompt and its answer appended) vs serde_json
/// serialising that compile's request: the agent's loop, where the request grows at its
/// end and the rest is copied from the previous one.
async fn bench_turn(dir: &Path, path: PathBuf) {
    let (e, p, records) = imported(dir, std::fs::read_to_string(&path).unwrap()).await;
    e.compile(p.clone()).await.unwrap();
    let n = iters();
    // The time a model takes to answer, if given: an agent's compiles are seconds apart.
    let gap = std::env::var("CTXD_BENCH_TURN_GAP_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis);
    let mut compile = Vec::with_capacity(n);
    let mut serialise = Vec::with_capacity(n);
    let mut bytes = 0;
    for i in 0..n {
        let turn: Vec<RecordInput> = serde_json::from_value(serde_json::json!([
            {"type": "user", "content": format!("turn {i}: and now the lexer's {i}th case")},
            // With its usage, as a provider reports it: the estimate anchors there.
            {"type": "assistant", "message_id": format!("msg_turn_{i}"),
             "usage": {"input_tokens": 3, "cache_read_input_tokens": 20_000 + 60 * i, "output_tokens": 40},
             "content": [{"type": "text", "text": format!("Done with case {i}. {}", "The lexer now takes it. ".repeat(4))}]},
        ]))
        .unwrap();
        e.append(AppendParams {
            session_id: p.session_id.clone(),
            records: turn,
            expected_last_uuid: None,
        })
        .await
        .unwrap();
        if let Some(gap) = gap {
            tokio::time::sleep(gap).await;
        }
        let t = Instant::now();
        let c = e.compile(p.clone()).await.unwrap();
        compile.push(t.elapsed());
        let value: serde_json::Value = serde_json::from_str(&c.body).unwrap();
        let t = Instant::now();
        let s = serde_json::to_string(&value).unwrap();
        serialise.push(t.elapsed());
        assert_eq!(s.len(), c.body.len());
        bytes = c.body.len();
    }
    let (c, s) = (median(compile), median(serialise));
    println!(
        "turn     {} ({} records, then {n} turns; last request {bytes} bytes): compile after each turn, median {:?}; serde_json::to_string of the same request {:?}; ratio {:.2}x",
        path.file_name().unwrap().to_string_lossy(),
        records,
        c,
        s,
        c.as_secs_f64() / s.as_secs_f64()
    );
}

async fn bench_rpc(dir: &Path) {
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
    // In turn, one of each: the machine's load moves all alike, so the ratios hold
    // where separate loops would each catch a different moment.
    let n = iters() * 10;
    let (mut rpc, mut frames, mut echo) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for _ in 0..n {
        let t = Instant::now();
        client.ping().await.unwrap();
        rpc.push(t.elapsed());
        let t = Instant::now();
        let answer = raw.call(msg).await;
        frames.push(t.elapsed());
        assert!(answer.starts_with(br#"{"jsonrpc":"2.0""#), "{answer:?}");
        let t = Instant::now();
        s.write_all(msg).await.unwrap();
        s.read_exact(&mut back).await.unwrap();
        echo.push(t.elapsed());
    }
    let (r, f, e) = (median(rpc), median(frames), median(echo));
    println!(
        "rpc      daemon.ping over WebSocket on the socket: median {:?} with ctx-client, {:?} with bare frames; raw Unix-socket echo of the same bytes {:?}; ratio {:.1}x / {:.1}x",
        r,
        f,
        e,
        r.as_secs_f64() / e.as_secs_f64(),
        f.as_secs_f64() / e.as_secs_f64()
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
        let mut frame = vec![0x80 | opcode, 0x80 | payload.len() as u8];
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

fn record_json(i: usize) -> RecordInput {
    serde_json::from_value(serde_json::json!({
        "type": if i.is_multiple_of(2) { "user" } else { "assistant" },
        "content": format!("message {i}: {}", "lorem ipsum dolor sit amet ".repeat(8)),
    }))
    .unwrap()
}

/// Median time of one batch of `BATCH` appends to a fresh session with `settings`. With
/// `floors`, each batch is followed by the same batch through both raw floors, so the
/// three are measured in turn and the machine's load moves them alike.
async fn engine_batches(
    dir: &Path,
    settings: Option<SessionSettings>,
    batches: usize,
    mut floors: Option<&mut Floors>,
) -> Duration {
    let e = engine(dir).await;
    let sid = e
        .create_session(SessionCreateParams {
            cwd: "/tmp".into(),
            no_git: true,
            settings,
            ..Default::default()
        })
        .await
        .unwrap()
        .session_id;
    if let Some(f) = floors.as_deref_mut() {
        f.attach(&dir.join("bench.db"));
    }
    let mut times = Vec::new();
    for b in 0..batches {
        let records: Vec<RecordInput> = (0..BATCH).map(|i| record_json(b * BATCH + i)).collect();
        let t = Instant::now();
        e.append(AppendParams {
            session_id: sid.clone(),
            records,
            expected_last_uuid: None,
        })
        .await
        .unwrap();
        times.push(t.elapsed());
        if let Some(f) = floors.as_deref_mut() {
            f.batch(b);
        }
    }
    median(times)
}

const BATCH: usize = 100;

/// Batched appends vs raw rusqlite inserts. The engine twice: with the session's
/// defaults, whose post-sampling hook starts a session-memory extraction in the
/// background every 5,000 new tokens (about every batch here, as these records carry no
/// usage), and with that extractor off, which is the append path alone. Two floors, run
/// in turn with the second: the minimal table, and the very rows the engine stored
/// replayed into its own table.
async fn bench_append(dir: &Path) {
    let batches = (iters() / 4).max(10);
    let defaults = engine_batches(&dir.join("append"), None, batches, None).await;
    let mut quiet = SessionSettings::default();
    quiet.memory.extractor = MemoryExtractor::Off;
    let mut floors = Floors::new(dir);
    let alone = engine_batches(
        &dir.join("append-alone"),
        Some(quiet),
        batches,
        Some(&mut floors),
    )
    .await;
    let (minimal, same_rows) = (median(floors.minimal), median(floors.same_rows));
    let per_sec = |d: Duration| BATCH as f64 / d.as_secs_f64();
    let pct = |engine: Duration, raw: Duration| raw.as_secs_f64() / engine.as_secs_f64() * 100.0;
    println!(
        "append   batches of {BATCH}: engine {:.0} records/s (median batch {alone:?}) with the session-memory extractor off, {:.0} records/s ({defaults:?}) with the defaults; \
         raw rusqlite into a minimal table {:.0} records/s ({minimal:?}): engine at {:.0}% / {:.0}%; raw rusqlite storing the engine's own rows in its records table {:.0} records/s ({same_rows:?}): engine at {:.0}% / {:.0}%",
        per_sec(alone),
        per_sec(defaults),
        per_sec(minimal),
        pct(alone, minimal),
        pct(defaults, minimal),
        per_sec(same_rows),
        pct(alone, same_rows),
        pct(defaults, same_rows),
    );
}

/// A fresh database with the store's settings (its page size, WAL, `synchronous=NORMAL`).
fn raw_connection(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_update(None, "page_size", ctxd::store::PAGE_SIZE)
        .unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
    conn
}

/// Time of one batch of raw inserts (`rows` prepared beforehand) in one transaction.
fn raw_batch<P: rusqlite::Params>(
    conn: &rusqlite::Connection,
    sql: &str,
    rows: Vec<P>,
) -> Duration {
    let t = Instant::now();
    let tx = conn.unchecked_transaction().unwrap();
    {
        let mut st = tx.prepare_cached(sql).unwrap();
        for row in rows {
            st.execute(row).unwrap();
        }
    }
    tx.commit().unwrap();
    t.elapsed()
}

/// A row of ctxd's `records` table, as read back from the engine's database.
type RecordRow = (
    String,
    i64,
    String,
    Option<String>,
    String,
    String,
    Option<String>,
    String,
);

/// The floors of the append bench, fed one batch at a time:
/// - `minimal`: the records' input serialised beforehand, a fresh uuid each, into a
///   four-column table (the floor of earlier runs);
/// - `same_rows`: what SQLite alone costs for what the engine stored: the batch's rows
///   read back from the engine's database and inserted into a fresh copy of ctxd's
///   `records` table as its migrations leave it (its keys and foreign key included).
struct Floors {
    minimal_db: rusqlite::Connection,
    same_db: rusqlite::Connection,
    engine_db: Option<rusqlite::Connection>,
    session: String,
    minimal: Vec<Duration>,
    same_rows: Vec<Duration>,
}

impl Floors {
    fn new(dir: &Path) -> Floors {
        let minimal_db = raw_connection(&dir.join("raw.db"));
        minimal_db
            .execute_batch("CREATE TABLE r (s TEXT, seq INTEGER, uuid TEXT, body TEXT, PRIMARY KEY (s, seq)) WITHOUT ROWID")
            .unwrap();
        let same_db = raw_connection(&dir.join("raw-records.db"));
        same_db.pragma_update(None, "foreign_keys", "ON").unwrap();
        Floors {
            minimal_db,
            same_db,
            engine_db: None,
            session: String::new(),
            minimal: Vec::new(),
            same_rows: Vec::new(),
        }
    }

    /// Copies the engine's tables and sessions, once its session exists.
    fn attach(&mut self, engine_db: &Path) {
        let src = rusqlite::Connection::open(engine_db).unwrap();
        let schema: Vec<String> = src
            .prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name IN ('sessions', 'records') ORDER BY name = 'records'")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(schema.len(), 2);
        for table in &schema {
            self.same_db.execute_batch(table).unwrap();
        }
        let sessions: Vec<(String, String)> = src
            .prepare("SELECT id, created_at FROM sessions")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            sessions.len(),
            1,
            "the engine's database holds the bench's session"
        );
        self.session = sessions[0].0.clone();
        for (id, at) in &sessions {
            self.same_db.execute(
                "INSERT INTO sessions (id, cwd, original_cwd, model_profile, settings, start_date, created_at, updated_at) VALUES (?1, '/tmp', '/tmp', '{}', '{}', '2026-01-01', ?2, ?2)",
                rusqlite::params![id, at],
            )
            .unwrap();
        }
        self.engine_db = Some(src);
    }

    /// Batch `b` through both floors, right after the engine stored it.
    fn batch(&mut self, b: usize) {
        let first = (b * BATCH) as i64;
        let minimal: Vec<_> = (0..BATCH)
            .map(|i| {
                let body = serde_json::to_string(&record_json(b * BATCH + i)).unwrap();
                (
                    "s",
                    first + i as i64 + 1,
                    uuid::Uuid::now_v7().to_string(),
                    body,
                )
            })
            .collect();
        self.minimal.push(raw_batch(
            &self.minimal_db,
            "INSERT INTO r VALUES (?1, ?2, ?3, ?4)",
            minimal,
        ));
        let src = self
            .engine_db
            .as_ref()
            .expect("attached before the first batch");
        let rows: Vec<RecordRow> = src
            .prepare_cached("SELECT session_id, seq, uuid, parent_uuid, kind, timestamp, message_id, body FROM records WHERE session_id = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq")
            .unwrap()
            .query_map(rusqlite::params![self.session, first, first + BATCH as i64], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(rows.len(), BATCH);
        self.same_rows.push(raw_batch(
            &self.same_db,
            "INSERT INTO records (session_id, seq, uuid, parent_uuid, kind, timestamp, message_id, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            rows,
        ));
    }
}

/// Compile of the largest fixture with the budget (steady state: every fate frozen, so
/// `plan` only looks decisions up) vs the same compile with the budget stage removed.
async fn bench_budget(dir: &Path) {
    use ctxd::pipeline::budget::{self, Fate, ToolLimits};
    use ctxd::pipeline::compile::{CompileInput, SessionView, compile};
    use std::collections::{BTreeMap, BTreeSet};

    let path = largest_fixture();
    let (e, p, _) = imported(dir, std::fs::read_to_string(&path).unwrap()).await;
    let records = e
        .read(ReadParams {
            session_id: p.session_id.clone(),
            after_seq: 0,
            limit: Some(5000),
        })
        .await
        .unwrap()
        .records;
    let model = ModelProfile::default();
    let settings = SessionSettings::default();
    let rejected = BTreeSet::new();
    let limits = ToolLimits::new(&[], &BTreeMap::new());
    let mut fates: BTreeMap<String, Fate> = BTreeMap::new();
    for (id, d) in budget::plan(&records, &fates, &limits, "/tmp/tool-results").decisions {
        let fate = match d {
            budget::Decision::Keep => Fate::Kept,
            budget::Decision::Persist { replacement, .. } => Fate::Replaced(replacement),
        };
        fates.insert(id, fate);
    }
    let empty = BTreeMap::new();
    let flags = RequestFlags::default();
    let run = |fates: &BTreeMap<String, Fate>, with_plan: bool| {
        let t = Instant::now();
        if with_plan {
            let view = ctxd::pipeline::projection::project(&records);
            let p = budget::plan(&view, fates, &limits, "/tmp/tool-results");
            assert!(p.decisions.is_empty());
        }
        let c = compile(&CompileInput {
            session: SessionView {
                model: &model,
                settings: &settings,
                system: None,
                cwd: "/tmp",
                additional_directories: &[],
                start_date: "2026-01-01",
                git_snapshot: None,
                claude_md: None,
                mcp_instructions: None,
                platform: "linux",
                section_memo: None,
                previous_uncached: None,
                utc_offset: ctxd::clock::utc(),
            },
            records: &records,
            projection: None,
            tools: &[],
            rejected_media: &rejected,
            fates,
            cleared: &BTreeMap::new(),
            pinned_edits: &[],
            collapses: &[],
            collapse_commits: &[],
            now: chrono::Utc::now(),
            side_request: false,
            flags: &flags,
            previous: None,
            previous_digest: None,
            previous_wire: None,
            usage_picture: false,
        })
        .unwrap();
        assert!(!c.body.is_empty());
        t.elapsed()
    };
    let n = iters();
    let with: Vec<Duration> = (0..n).map(|_| run(&fates, true)).collect();
    let without: Vec<Duration> = (0..n).map(|_| run(&empty, false)).collect();
    let (w, wo) = (median(with), median(without));
    println!(
        "budget   {} ({} records, {} frozen fates): compile with the budget {:?}; without {:?}; overhead {:.1}%",
        path.file_name().unwrap().to_string_lossy(),
        records.len(),
        fates.len(),
        w,
        wo,
        (w.as_secs_f64() / wo.as_secs_f64() - 1.0) * 100.0
    );
}

/// The predicted cache prefix: its share of a compile (hashing while the body is
/// written, then one comparison of units) against the compile itself.
async fn bench_cache(dir: &Path) {
    use ctxd::pipeline::cache_prefix::predict;
    let path = largest_fixture();
    let (e, p, _) = imported(dir, std::fs::read_to_string(&path).unwrap()).await;
    let first = e.compile(p.clone()).await.unwrap();
    let n = iters();
    let mut compile = Vec::with_capacity(n);
    let mut compare = Vec::with_capacity(n);
    let mut last = first;
    for _ in 0..n {
        let t = Instant::now();
        let c = e.compile(p.clone()).await.unwrap();
        compile.push(t.elapsed());
        let t = Instant::now();
        let pred = predict(Some(&last.shape), &c.shape);
        compare.push(t.elapsed());
        assert_eq!(pred.first_difference, None);
        last = c;
    }
    let (c, k) = (median(compile), median(compare));
    println!(
        "cache    {} ({} units, {} request bytes): compile {:?}; comparing with the previous request {:?} ({:.1}% of the compile); units are hashed as the body is written, no second serialisation",
        path.file_name().unwrap().to_string_lossy(),
        last.shape.units.len(),
        last.body.len(),
        c,
        k,
        k.as_secs_f64() / c.as_secs_f64() * 100.0
    );
}

#[tokio::main]
async fn main() {
    // `cargo test --benches` runs this binary with --bench absent; keep that cheap.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // By default the largest file (mostly sub-agent records) and the largest main thread.
    for (i, path) in sessions().into_iter().enumerate() {
        let d = dir.path().join(format!("s{i}"));
        if wanted("compile") {
            bench_compile(&d.join("compile"), path.clone()).await;
        }
        if wanted("turn") {
            bench_turn(&d.join("turn"), path.clone()).await;
        }
        if wanted("import") {
            bench_import(&d.join("import"), &path).await;
        }
        if wanted("growth") {
            bench_growth(&d.join("growth"), &path).await;
        }
    }
    if wanted("budget") {
        bench_budget(&dir.path().join("budget")).await;
    }
    if wanted("cache") {
        bench_cache(&dir.path().join("cache")).await;
    }
    if wanted("rpc") {
        bench_rpc(dir.path()).await;
    }
    if wanted("append") {
        bench_append(dir.path()).await;
    }
}

/// `CTXD_BENCH_ONLY=compile,growth` runs those parts only (e.g. under a profiler).
fn wanted(part: &str) -> bool {
    std::env::var("CTXD_BENCH_ONLY").map_or(true, |only| only.split(',').any(|p| p.trim() == part))
}
