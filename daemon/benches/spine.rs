//! `cargo bench -p ctxd --bench spine`: the spine's costs next to their floors.
//!
//! 1. compile of the largest fixture session vs serde_json serialising the same output;
//! 2. an RPC no-op round trip over the socket vs a raw Unix-socket echo of the same bytes;
//! 3. batched appends per second vs raw rusqlite inserts with the same WAL settings.
//!
//! Prints medians and ratios. Set `CTXD_BENCH_ITERS` to change the sample count.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxd::clock::SystemClock;
use ctxd::engine::Engine;
use ctxd::store::Store;
use ctxd_protocol::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

fn engine(dir: &Path) -> Arc<Engine> {
    std::fs::create_dir_all(dir).unwrap();
    let store = Store::open(&dir.join("bench.db")).unwrap();
    Arc::new(Engine::new(store, dir, Arc::new(SystemClock)))
}

async fn bench_compile(dir: &Path, path: PathBuf) {
    let e = engine(dir);
    let (info, stats) = e
        .import_claude_code(SessionImportParams {
            jsonl: std::fs::read_to_string(&path).unwrap(),
            cwd: None,
            fallback_cwd: Some("/tmp".into()),
            model: None,
            title: None,
        })
        .await
        .unwrap();
    let p = CompileParams {
        session_id: info.session_id.clone(),
        side_request: false,
        now: None,
        flags: None,
    };
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
        stats.records,
        first.body.len(),
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
    let n = iters() * 10;
    let mut rpc = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        client.ping().await.unwrap();
        rpc.push(t.elapsed());
    }

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
    let mut echo = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        s.write_all(msg).await.unwrap();
        s.read_exact(&mut back).await.unwrap();
        echo.push(t.elapsed());
    }
    let (r, e) = (median(rpc), median(echo));
    println!(
        "rpc      daemon.ping over WebSocket on the socket: median {:?}; raw Unix-socket echo of the same bytes {:?}; ratio {:.1}x",
        r,
        e,
        r.as_secs_f64() / e.as_secs_f64()
    );
    let _ = tx.send(());
    let _ = server.await;
}

fn record_json(i: usize) -> RecordInput {
    serde_json::from_value(serde_json::json!({
        "type": if i.is_multiple_of(2) { "user" } else { "assistant" },
        "content": format!("message {i}: {}", "lorem ipsum dolor sit amet ".repeat(8)),
    }))
    .unwrap()
}

async fn bench_append(dir: &Path) {
    const BATCH: usize = 100;
    let batches = (iters() / 4).max(10);
    let e = engine(&dir.join("append"));
    let sid = e
        .create_session(SessionCreateParams {
            cwd: "/tmp".into(),
            no_git: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .session_id;
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
    }
    let engine_batch = median(times);

    // The floor: raw rusqlite inserts of comparable rows in the same WAL settings.
    let conn = rusqlite::Connection::open(dir.join("raw.db")).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
    conn.execute_batch("CREATE TABLE r (s TEXT, seq INTEGER, uuid TEXT, body TEXT, PRIMARY KEY (s, seq)) WITHOUT ROWID")
        .unwrap();
    let mut times = Vec::new();
    let mut seq = 0i64;
    for b in 0..batches {
        let bodies: Vec<String> = (0..BATCH)
            .map(|i| serde_json::to_string(&record_json(b * BATCH + i)).unwrap())
            .collect();
        let t = Instant::now();
        let tx = conn.unchecked_transaction().unwrap();
        {
            let mut st = tx
                .prepare_cached("INSERT INTO r VALUES (?1, ?2, ?3, ?4)")
                .unwrap();
            for body in &bodies {
                seq += 1;
                st.execute(rusqlite::params![
                    "s",
                    seq,
                    uuid::Uuid::now_v7().to_string(),
                    body
                ])
                .unwrap();
            }
        }
        tx.commit().unwrap();
        times.push(t.elapsed());
    }
    let raw_batch = median(times);
    let per_sec = |d: Duration| BATCH as f64 / d.as_secs_f64();
    println!(
        "append   batches of {BATCH}: engine {:.0} records/s (median batch {:?}); raw rusqlite {:.0} records/s ({:?}); ratio {:.2}x",
        per_sec(engine_batch),
        engine_batch,
        per_sec(raw_batch),
        raw_batch,
        engine_batch.as_secs_f64() / raw_batch.as_secs_f64()
    );
}

/// Compile of the largest fixture with the budget (steady state: every fate frozen, so
/// `plan` only looks decisions up) vs the same compile with the budget stage removed.
async fn bench_budget(dir: &Path) {
    use ctxd::pipeline::budget::{self, Fate, ToolLimits};
    use ctxd::pipeline::compile::{CompileInput, SessionView, compile};
    use std::collections::{BTreeMap, BTreeSet};

    let path = largest_fixture();
    let e = engine(dir);
    let (info, _) = e
        .import_claude_code(SessionImportParams {
            jsonl: std::fs::read_to_string(&path).unwrap(),
            cwd: None,
            fallback_cwd: Some("/tmp".into()),
            model: None,
            title: None,
        })
        .await
        .unwrap();
    let records = e
        .read(ReadParams {
            session_id: info.session_id.clone(),
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
                platform: "linux",
                section_memo: None,
                previous_uncached: None,
            },
            records: &records,
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
    let e = engine(dir);
    let (info, _) = e
        .import_claude_code(SessionImportParams {
            jsonl: std::fs::read_to_string(&path).unwrap(),
            cwd: None,
            fallback_cwd: Some("/tmp".into()),
            model: None,
            title: None,
        })
        .await
        .unwrap();
    let p = CompileParams {
        session_id: info.session_id.clone(),
        side_request: false,
        now: None,
        flags: None,
    };
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
    // The largest file (mostly sub-agent records) and the largest main thread.
    bench_compile(dir.path(), largest_fixture()).await;
    bench_compile(
        &dir.path().join("b"),
        fixtures().join("spotter/subagent.jsonl"),
    )
    .await;
    bench_budget(&dir.path().join("budget")).await;
    bench_cache(&dir.path().join("cache")).await;
    bench_rpc(dir.path()).await;
    bench_append(dir.path()).await;
}
