//! `cargo bench -p ctxd --bench sources`: the context sources of issue 3.
//!
//! 1. latency from an external write of a seen file to the `file_changed` event on a
//!    subscription (median over repeated writes);
//! 2. time to load (discover, include, render) a chain of 50 instruction files;
//! 3. a compile of a session that has seen 100 files of 20 KB: none changed, and one
//!    changed before each compile (the diff against what the model saw).
//!
//! `CTXD_BENCH_ONLY=chain,watch,seen` runs those parts only.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it did not expect

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxd_engine::Store;
use ctxd_engine::discovery::{self, DiscoveryConfig};
use ctxd_engine::{DiscoveryDefaults, Engine};
use ctxd_pipeline::clock::SystemClock;
use ctxd_protocol::{AppendParams, CompileParams, RecordInput, SessionCreateParams, SessionEvent};

fn iters() -> usize {
    std::env::var("CTXD_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// 10 directories from the root of the tree down to cwd; each has a CLAUDE.md that
/// includes four files (one of which includes another): 50 files in all.
fn chain_of_50(root: &Path) -> std::path::PathBuf {
    let mut dir = root.to_path_buf();
    for level in 0..10 {
        dir = dir.join(format!("level{level}"));
        write(
            &dir.join("CLAUDE.md"),
            &format!(
                "# Level {level}\nRules for this level.\n@docs/a.md\n@docs/b.md\n@docs/c.md\n"
            ),
        );
        write(
            &dir.join("docs/a.md"),
            &format!("a{level}: {}\n@d.md\n", "text ".repeat(40)),
        );
        write(
            &dir.join("docs/d.md"),
            &format!("d{level}: {}\n", "text ".repeat(40)),
        );
        write(
            &dir.join("docs/b.md"),
            &format!("b{level}: {}\n", "text ".repeat(40)),
        );
        write(
            &dir.join("docs/c.md"),
            &format!("c{level}: {}\n", "text ".repeat(40)),
        );
    }
    dir
}

fn bench_chain(tmp: &Path) {
    let cwd = chain_of_50(&tmp.join("tree"));
    let mut cfg = DiscoveryConfig::new(&cwd, tmp.join("nohome"));
    cfg.managed_root = tmp.join("nomanaged");
    cfg.allow_external_includes = true;
    let chain = discovery::startup_chain(&cfg);
    assert_eq!(chain.len(), 50, "the tree should hold 50 instruction files");
    let times: Vec<Duration> = (0..iters())
        .map(|_| {
            let t = Instant::now();
            let chain = discovery::startup_chain(&cfg);
            let text = discovery::render_claude_md(&chain).unwrap();
            assert!(text.len() > 10_000);
            t.elapsed()
        })
        .collect();
    println!(
        "chain    50 instruction files (10 levels, includes 2 deep): load + render median {:?}",
        median(times)
    );
}

async fn watching_engine(tmp: &Path, db: &str) -> Arc<Engine> {
    let store = Store::open(&tmp.join(db)).unwrap();
    let engine = Arc::new(
        Engine::new(store, tmp, Arc::new(SystemClock)).with_discovery(DiscoveryDefaults {
            managed_root: tmp.join("nomanaged"),
            user_home: tmp.join("nohome"),
        }),
    );
    engine.start_watching().await.unwrap();
    engine
}

/// A watching engine on database `db` with a session whose cwd is the directory `work`
/// under `tmp` (created): the engine, that directory and the session id.
async fn watched_session(tmp: &Path, db: &str, work: &str) -> (Arc<Engine>, PathBuf, String) {
    let engine = watching_engine(tmp, db).await;
    let work = tmp.join(work);
    std::fs::create_dir_all(&work).unwrap();
    let sid = engine
        .create_session(SessionCreateParams {
            cwd: work.display().to_string(),
            no_git: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .session_id;
    (engine, work, sid)
}

async fn bench_watch(tmp: &Path) {
    let (engine, work, sid) = watched_session(tmp, "w.db", "work").await;
    let file = work.join("seen.txt");
    write(&file, "v0\n");
    engine
        .report_read(&sid, &file.display().to_string())
        .await
        .unwrap();
    let mut rx = engine.subscribe(&sid).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut times = Vec::new();
    for i in 0..iters() {
        let t = Instant::now();
        write(&file, &format!("v{}\n", i + 1));
        loop {
            match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
                Ok(Ok(e)) if matches!(e.event, SessionEvent::FileChanged { .. }) => break,
                Ok(Ok(_)) => continue,
                other => panic!("no file_changed event: {other:?}"),
            }
        }
        times.push(t.elapsed());
        // Let the debouncer settle so writes do not share a batch.
        tokio::time::sleep(Duration::from_millis(150)).await;
        while rx.try_recv().is_ok() {}
    }
    let mut sorted = times.clone();
    sorted.sort();
    println!(
        "watch    external write -> file_changed event: median {:?}, p90 {:?} over {} writes",
        median(times),
        sorted[sorted.len() * 9 / 10],
        sorted.len()
    );
}

const SEEN_FILES: usize = 100;
const SEEN_FILE_BYTES: usize = 20 * 1024;

/// A file of about `SEEN_FILE_BYTES` whose line `changed` (if any) differs.
fn seen_text(changed: Option<usize>) -> String {
    (0..SEEN_FILE_BYTES / 32)
        .map(|l| {
            if Some(l) == changed {
                format!("line {l:>5}: changed {:>13}\n", "")
            } else {
                format!("line {l:>5}: the same text here\n")
            }
        })
        .collect()
}

async fn bench_seen(tmp: &Path) {
    let (engine, work, sid) = watched_session(tmp, "seen.db", "seen-work").await;
    for i in 0..SEEN_FILES {
        let f = work.join(format!("f{i}.txt"));
        write(&f, &seen_text(None));
        engine
            .report_read(&sid, &f.display().to_string())
            .await
            .unwrap();
    }
    let prompt: RecordInput =
        serde_json::from_value(serde_json::json!({"type": "user", "content": "go on"})).unwrap();
    engine
        .append(AppendParams {
            session_id: sid.clone(),
            agent_id: None,
            records: vec![prompt],
            expected_last_uuid: None,
        })
        .await
        .unwrap();
    let p = CompileParams {
        session_id: sid,
        ..Default::default()
    };
    engine.compile(p.clone()).await.unwrap();
    let n = iters() * 4;
    let mut unchanged = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        engine.compile(p.clone()).await.unwrap();
        unchanged.push(t.elapsed());
    }
    let mut one_changed = Vec::with_capacity(n);
    for k in 0..n {
        // A different line each time, in a different file: the file is then announced
        // with a diff against the content the model last saw.
        write(
            &work.join(format!("f{}.txt", k % SEEN_FILES)),
            &seen_text(Some(k % (SEEN_FILE_BYTES / 32))),
        );
        let t = Instant::now();
        engine.compile(p.clone()).await.unwrap();
        one_changed.push(t.elapsed());
    }
    println!(
        "seen     compile with {SEEN_FILES} seen files of {} KB: none changed, median {:?}; one changed before each compile, median {:?}",
        SEEN_FILE_BYTES / 1024,
        median(unchanged),
        median(one_changed)
    );
}

/// `CTXD_BENCH_ONLY=seen` runs that part only.
fn wanted(part: &str) -> bool {
    std::env::var("CTXD_BENCH_ONLY").map_or(true, |only| only.split(',').any(|p| p == part))
}

#[tokio::main]
async fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    if wanted("chain") {
        bench_chain(dir.path());
    }
    if wanted("watch") {
        bench_watch(dir.path()).await;
    }
    if wanted("seen") {
        bench_seen(dir.path()).await;
    }
}
