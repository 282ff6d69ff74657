//! `cargo bench -p ctxd --bench attachments`: the attachments ctxd produces itself.
//!
//! 1. attachment collection per compile on a ~3 MB session with 200 memory files in its
//!    auto-memory directory: each iteration appends a prompt (which starts the memory
//!    prefetch) and a tool round, then compiles; the collection's wall time is the
//!    latest finishing source of `metadata.attachment_sources` (they run concurrently);
//! 2. relevant-memory scorer latency: scanning the 200 files (front matter, capped reads)
//!    and BM25 over them, and BM25 alone (index built from the scanned files + query).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it did not expect

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxd_engine::Store;
use ctxd_engine::discovery::memories;
use ctxd_engine::{DiscoveryDefaults, Engine};
use ctxd_pipeline::clock::SystemClock;
use ctxd_pipeline::relevant_memories as rm;
use ctxd_protocol::{AppendParams, CompileParams, RecordInput, SessionCreateParams};
use serde_json::json;

fn iters() -> usize {
    std::env::var("CTXD_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

const TOPICS: [&str; 10] = [
    "parser", "deploy", "database", "auth", "cache", "logging", "testing", "release", "frontend",
    "billing",
];

/// 200 topic files (plus the index), 1-6 KB each, with front matter.
fn memory_dir(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let mut index = String::new();
    for i in 0..200 {
        let topic = TOPICS[i % TOPICS.len()];
        let name = format!("{topic}-note-{i}");
        let body: String = (0..(10 + i % 60))
            .map(|l| format!("Line {l} about the {topic} subsystem: remember detail {i}-{l}.\n"))
            .collect();
        std::fs::write(
            dir.join(format!("{name}.md")),
            format!("---\nname: {name}\ndescription: What we learned about {topic} ({i})\ntype: project\n---\n{body}"),
        )
        .unwrap();
        let _ = writeln!(index, "- [{name}]({name}.md)");
    }
    std::fs::write(dir.join("MEMORY.md"), index).unwrap();
}

fn rec(v: serde_json::Value) -> RecordInput {
    serde_json::from_value(v).unwrap()
}

/// One tool round of about 5 KB.
fn round(i: usize) -> Vec<RecordInput> {
    vec![
        rec(
            json!({"type": "assistant", "message_id": format!("m{i}"), "content": [
            {"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {"command": format!("make step{i}")}}]}),
        ),
        rec(json!({"type": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "output line\n".repeat(420)}]})),
    ]
}

async fn bench_collection(tmp: &Path) {
    let store = Store::open(&tmp.join("a.db")).unwrap();
    let home = tmp.join("home");
    let engine = Arc::new(
        Engine::new(store, &tmp.join("ctxd"), Arc::new(SystemClock)).with_discovery(
            DiscoveryDefaults {
                managed_root: tmp.join("nomanaged"),
                user_home: home.clone(),
            },
        ),
    );
    let work = tmp.join("work");
    std::fs::create_dir_all(&work).unwrap();
    memory_dir(&memories::auto_memory_dir(&home, &work));
    let sid = engine
        .create_session(SessionCreateParams {
            cwd: work.display().to_string(),
            no_git: true,
            settings: Some(
                serde_json::from_value(json!({"attachments": {"collect_timeout_ms": 60000},
                    "autocompact": false, "blocking_limit_margin": 0}))
                .unwrap(),
            ),
            model: Some(
                serde_json::from_value(
                    json!({"context_window": 100_000_000, "max_output_tokens": 32000}),
                )
                .unwrap(),
            ),
            ..Default::default()
        })
        .await
        .unwrap()
        .session_id;
    let append = |records: Vec<RecordInput>| {
        let engine = engine.clone();
        let sid = sid.clone();
        async move {
            engine
                .append(AppendParams {
                    session_id: sid,
                    agent_id: None,
                    records,
                    expected_last_uuid: None,
                })
                .await
                .unwrap();
        }
    };
    // About 3 MB of transcript.
    for batch in 0..60 {
        let mut records = vec![rec(
            json!({"type": "user", "content": format!("step {batch}")}),
        )];
        for i in 0..10 {
            records.extend(round(batch * 10 + i));
        }
        append(records).await;
    }
    let bytes: usize = engine
        .read(ctxd_protocol::ReadParams {
            session_id: sid.clone(),
            agent_id: None,
            after_seq: 0,
            limit: Some(5000),
        })
        .await
        .unwrap()
        .records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap().len())
        .sum();
    let compile = || {
        engine.compile(CompileParams {
            session_id: sid.clone(),
            ..Default::default()
        })
    };
    compile().await.unwrap();
    let mut collection = Vec::new();
    let mut memories_wait = Vec::new();
    let mut others = Vec::new();
    let mut compiles = Vec::new();
    let mut surfaced = 0;
    for i in 0..iters() {
        let topic = TOPICS[i % TOPICS.len()];
        append(vec![rec(
            json!({"type": "user", "content": format!("fix the {topic} bug from yesterday")}),
        )])
        .await;
        let mut r = round(10_000 + i);
        r.remove(1);
        append(r).await;
        append(vec![round(10_000 + i).remove(1)]).await;
        let t = Instant::now();
        let c = compile().await.unwrap();
        compiles.push(t.elapsed());
        let sources = &c.metadata.attachment_sources;
        let latest = sources.iter().map(|s| s.micros).max().unwrap_or(0);
        collection.push(Duration::from_micros(latest));
        let m = sources
            .iter()
            .find(|s| s.name == "relevant_memories")
            .unwrap();
        memories_wait.push(Duration::from_micros(m.micros));
        let rest = sources
            .iter()
            .filter(|s| s.name != "relevant_memories")
            .map(|s| s.micros)
            .max()
            .unwrap_or(0);
        others.push(Duration::from_micros(rest));
        surfaced += m.attachments;
    }
    println!(
        "collect  {:.1} MB session, 200 memory files: collection per compile median {:?} \
         (relevant_memories source {:?}, every other source done by {:?}); whole compile \
         median {:?}; {surfaced} memory attachments over {} prompts",
        bytes as f64 / 1e6,
        median(collection),
        median(memories_wait),
        median(others),
        median(compiles),
        iters()
    );
}

fn bench_scorer(tmp: &Path) {
    let dir = tmp.join("scorer");
    memory_dir(&dir);
    let dirs = vec![dir];
    let query = "the deploy failed after tagging the release";
    let mut scan_and_score = Vec::new();
    let mut fit = Vec::new();
    let mut rank_only = Vec::new();
    for _ in 0..iters() {
        let t = Instant::now();
        let files = memories::scan(&dirs);
        let index = memories::index(&files);
        let picked = index.rank(query, |_| true, rm::MAX_FILES);
        scan_and_score.push(t.elapsed());
        assert_eq!(files.len(), 200);
        assert!(!picked.is_empty());
        let t = Instant::now();
        let index = memories::index(&files);
        fit.push(t.elapsed());
        let t = Instant::now();
        let again = index.rank(query, |_| true, rm::MAX_FILES);
        rank_only.push(t.elapsed());
        assert_eq!(picked, again);
    }
    println!(
        "scorer   200 memory files: scan + fit + rank median {:?}; fitting BM25 to the files {:?}; \
         ranking a prompt against a kept index {:?}",
        median(scan_and_score),
        median(fit),
        median(rank_only)
    );
}

#[tokio::main]
async fn main() {
    let tmp = tempfile::tempdir().unwrap();
    bench_scorer(tmp.path());
    bench_collection(tmp.path()).await;
}
