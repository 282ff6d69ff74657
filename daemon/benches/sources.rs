//! `cargo bench -p ctxd --bench sources`: the context sources of issue 3.
//!
//! 1. latency from an external write of a seen file to the `file_changed` event on a
//!    subscription (median over repeated writes);
//! 2. time to load (discover, include, render) a chain of 50 instruction files.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it did not expect

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxd::clock::SystemClock;
use ctxd::discovery::{self, DiscoveryConfig};
use ctxd::engine::{DiscoveryDefaults, Engine};
use ctxd::store::Store;
use ctxd_protocol::{SessionCreateParams, SessionEvent};

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

async fn bench_watch(tmp: &Path) {
    let store = Store::open(&tmp.join("w.db")).unwrap();
    let engine = Arc::new(
        Engine::new(store, tmp, Arc::new(SystemClock)).with_discovery(DiscoveryDefaults {
            managed_root: tmp.join("nomanaged"),
            user_home: tmp.join("nohome"),
        }),
    );
    engine.start_watching().await.unwrap();
    let work = tmp.join("work");
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

#[tokio::main]
async fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    bench_chain(dir.path());
    bench_watch(dir.path()).await;
}
