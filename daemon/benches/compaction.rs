//! `cargo bench -p ctxd --bench compaction`: a manual compact of sessions of 5,000 to
//! 40,000 records, to show its cost grows linearly with what it processes.
//!
//! Each session alternates a request, a Read call, its result and an answer. Prints the
//! median wall time per size and per 1,000 records. Set `CTXD_BENCH_ITERS` to change the
//! sample count (default 3).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it did not expect

use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxd_engine::Engine;
use ctxd_engine::Store;
use ctxd_pipeline::clock::SystemClock;
use ctxd_protocol::*;
use serde_json::json;

fn iters() -> usize {
    std::env::var("CTXD_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

fn records(n: usize) -> Vec<RecordInput> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n / 4 {
        let m = i % 50;
        for v in [
            json!({"type": "user", "content": format!("question {i}: please look at module {m} and tell me what it does")}),
            json!({"type": "assistant", "message_id": format!("m{i}"), "content": [
                {"type": "text", "text": format!("Reading module {m}.")},
                {"type": "tool_use", "id": format!("t{i}"), "name": "Read", "input": {"file_path": format!("/repo/src/m{m}.rs")}}]}),
            json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "fn x() {}\n".repeat(5)}]}),
            json!({"type": "assistant", "message_id": format!("n{i}"), "content": format!("Module {m} defines x. ").repeat(3)}),
        ] {
            out.push(serde_json::from_value(v).unwrap());
        }
    }
    out
}

#[tokio::main]
async fn main() {
    // `cargo test --benches` runs this binary with --bench absent; keep that cheap.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("bench.db")).unwrap();
    let e = Arc::new(Engine::new(store, dir.path(), Arc::new(SystemClock)));
    for n in [5_000, 10_000, 20_000, 40_000] {
        let mut times: Vec<Duration> = Vec::new();
        for _ in 0..iters() {
            let info = e
                .create_session(SessionCreateParams {
                    cwd: "/tmp".into(),
                    no_git: true,
                    settings: Some(
                        serde_json::from_value(
                            json!({"autocompact": false, "memory": {"extractor": "off"}}),
                        )
                        .unwrap(),
                    ),
                    ..Default::default()
                })
                .await
                .unwrap();
            for chunk in records(n).chunks(1_000) {
                e.append(AppendParams {
                    session_id: info.session_id.clone(),
                    agent_id: None,
                    records: chunk.to_vec(),
                    expected_last_uuid: None,
                })
                .await
                .unwrap();
            }
            let t = Instant::now();
            e.compact(CompactParams {
                session_id: info.session_id.clone(),
                instructions: None,
            })
            .await
            .unwrap();
            times.push(t.elapsed());
            e.delete_session(&info.session_id).await.unwrap();
        }
        times.sort();
        let median = times[times.len() / 2];
        println!(
            "compact {n:>6} records: median {median:?} ({:?} per 1,000 records)",
            median / u32::try_from(n / 1_000).unwrap()
        );
    }
}
