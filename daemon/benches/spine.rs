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
//! `CTXD_BENCH_TURN_GAP_MS` to pause that long before each of `turn`'s compiles,
//! `CTXD_BENCH_TURN_ATTACHMENT=1` to open each turn with an attachment (a nested
//! instruction file of about 1.7 KB), as ctxd's own context sources add them,
//! `CTXD_BENCH_SNIP=1` to have `turn`'s session show short ids (snip) on typed messages,
//! `CTXD_BENCH_TURN_RUNS` to repeat `turn`'s series that many times (5 unless set).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it did not expect

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxd_engine::Engine;
use ctxd_engine::Store;
use ctxd_pipeline::clock::SystemClock;
use ctxd_protocol::*;

#[path = "spine/append.rs"]
mod append;
#[path = "spine/rpc.rs"]
mod rpc;

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
        path: None,
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
///
/// One run's median moves by a fifth from run to run of the same build, as the request
/// grows threefold over the turns and the compile with it: where the median turn falls,
/// and where a run's allocations land, decide it. So the whole series runs
/// `CTXD_BENCH_TURN_RUNS` times (5 unless set), each on a fresh engine, and the ratio
/// printed is the median of the runs' ratios, with their range.
async fn bench_turn(dir: &Path, path: PathBuf) {
    let runs: usize = std::env::var("CTXD_BENCH_TURN_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let mut each = Vec::with_capacity(runs);
    for r in 0..runs {
        each.push(turn_run(&dir.join(format!("turn-{r}")), &path).await);
    }
    let (records, bytes) = (each[0].records, each[0].bytes);
    let mut ratios: Vec<f64> = each.iter().map(TurnRun::ratio).collect();
    ratios.sort_by(f64::total_cmp);
    let (c, s) = (
        median(each.iter().map(|t| t.compile).collect()),
        median(each.iter().map(|t| t.serialise).collect()),
    );
    println!(
        "turn     {} ({records} records, then {} turns{}; last request {bytes} bytes; {runs} runs): compile after each turn, median {c:?}; serde_json::to_string of the same request {s:?}; ratio {:.2}x (runs {:.2}x to {:.2}x)",
        path.file_name().unwrap().to_string_lossy(),
        iters(),
        if attachment_turns() {
            " with an attachment each"
        } else {
            ""
        },
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1],
    );
}

fn attachment_turns() -> bool {
    std::env::var("CTXD_BENCH_TURN_ATTACHMENT").is_ok_and(|v| v == "1")
}

/// One run of `turn`: its medians.
struct TurnRun {
    compile: Duration,
    serialise: Duration,
    records: u64,
    bytes: usize,
}

impl TurnRun {
    fn ratio(&self) -> f64 {
        self.compile.as_secs_f64() / self.serialise.as_secs_f64()
    }
}

async fn turn_run(dir: &Path, path: &Path) -> TurnRun {
    let (e, p, records) = imported(dir, std::fs::read_to_string(path).unwrap()).await;
    if std::env::var("CTXD_BENCH_SNIP").is_ok_and(|v| v == "1") {
        let info = e.get_session(&p.session_id).await.unwrap();
        let mut settings = info.settings;
        settings.snip_enabled = true;
        let update = ctxd_protocol::SessionUpdateParams::settings(&p.session_id, settings);
        e.update_session(update).await.unwrap();
    }
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
        let mut turn: Vec<RecordInput> = serde_json::from_value(serde_json::json!([
            {"type": "user", "content": format!("turn {i}: and now the lexer's {i}th case")},
            // With its usage, as a provider reports it: the estimate anchors there.
            {"type": "assistant", "message_id": format!("msg_turn_{i}"),
             "usage": {"input_tokens": 3, "cache_read_input_tokens": 20_000 + 60 * i, "output_tokens": 40},
             "content": [{"type": "text", "text": format!("Done with case {i}. {}", "The lexer now takes it. ".repeat(4))}]},
        ]))
        .unwrap();
        if attachment_turns() {
            let nested = serde_json::json!({"type": "attachment", "is_meta": true, "attachment": {
                "type": "nested_memory", "path": format!("/src/m{i}/CLAUDE.md"),
                "content": format!("rules for module {i}: {}", "keep the lexer total. ".repeat(80))}});
            turn.insert(0, serde_json::from_value(nested).unwrap());
        }
        e.append(AppendParams {
            session_id: p.session_id.clone(),
            agent_id: None,
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
    TurnRun {
        compile: median(compile),
        serialise: median(serialise),
        records,
        bytes,
    }
}

/// Compile of the largest fixture with the budget (steady state: every fate frozen, so
/// `plan` only looks decisions up) vs the same compile with the budget stage removed.
async fn bench_budget(dir: &Path) {
    use ctxd_pipeline::budget::{self, Fate, ToolLimits};
    use ctxd_pipeline::compile::{CompileInput, SessionView, compile};
    use std::collections::{BTreeMap, BTreeSet};

    let path = largest_fixture();
    let (e, p, _) = imported(dir, std::fs::read_to_string(&path).unwrap()).await;
    let records = e
        .read(ReadParams {
            session_id: p.session_id.clone(),
            agent_id: None,
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
            let view = ctxd_pipeline::projection::project(&records);
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
                utc_offset: ctxd_pipeline::clock::utc(),
                output_style: None,
            },
            records: &records,
            lineage: None,
            projection: None,
            boundary: None,
            snip_boundaries: None,
            facts: &[],
            tools: &[],
            rejected_media: &rejected,
            fates,
            cleared: &BTreeMap::new(),
            pinned_edits: &[],
            collapses: &[],
            collapse_commits: &[],
            collapse_undos: &[],
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
    use ctxd_pipeline::cache_prefix::predict;
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
        rpc::bench_rpc(dir.path()).await;
    }
    if wanted("append") {
        append::bench_append(dir.path()).await;
    }
}

/// `CTXD_BENCH_ONLY=compile,growth` runs those parts only (e.g. under a profiler).
fn wanted(part: &str) -> bool {
    std::env::var("CTXD_BENCH_ONLY").map_or(true, |only| only.split(',').any(|p| p.trim() == part))
}
