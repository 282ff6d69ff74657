//! `cargo bench -p ctxd --bench store`: SQLite against PostgreSQL, through real daemons.
//!
//! Three set-ups, each with 16 clients (one session each) over the Unix socket: one daemon
//! on SQLite, one daemon on PostgreSQL, two daemons on one PostgreSQL database (8 clients
//! each). For each: appends per second (two-record batches, `CTXD_BENCH_SECS` seconds of
//! load, default 5) and compile latency (median and p95 of compiles of a session that
//! holds the largest fixture, each after a fresh append so the compile has work). Then,
//! one client alone on the two daemons: a compile after an append through the same
//! daemon against one after an append through the other (the cost of the reload).
//!
//! PostgreSQL: the server of `CTXD_TEST_PG` when set, else a throwaway one (initdb +
//! pg_ctl, see tests/support/pg_cluster.rs) that syncs its WAL on every commit, as
//! PostgreSQL does by default (SQLite runs `synchronous=NORMAL` in WAL mode: no sync per
//! commit). Timings are noisy on a shared machine: run it twice and compare medians.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it did not expect

#[path = "../../tests/common/mod.rs"]
mod common;
#[path = "../../tests/support/pg_cluster.rs"]
mod pg_cluster;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::Daemon;
use serde_json::{Value, json};

const CLIENTS: usize = 16;

fn secs() -> u64 {
    std::env::var("CTXD_BENCH_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}

fn new_session(d: &Daemon) -> String {
    d.call("session.create", json!({"cwd": "/tmp", "no_git": true}))["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn pair(i: u64) -> Value {
    json!([
        {"type": "user", "content": format!("question {i}")},
        {"type": "assistant", "content": format!("answer {i}")}
    ])
}

/// Batches appended per second by `CLIENTS` clients spread over `daemons`.
fn appends_per_sec(daemons: &[&Daemon]) -> f64 {
    let sessions: Vec<(usize, String)> = (0..CLIENTS)
        .map(|c| (c % daemons.len(), new_session(daemons[c % daemons.len()])))
        .collect();
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    std::thread::scope(|s| {
        for (d, sid) in &sessions {
            let (d, done, stop) = (daemons[*d], &done, &stop);
            s.spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    d.call(
                        "transcript.append",
                        json!({"session_id": sid, "records": pair(i)}),
                    );
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        std::thread::sleep(Duration::from_secs(secs()));
        stop.store(true, Ordering::Relaxed);
    });
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

fn largest_fixture() -> std::path::PathBuf {
    common::fixture_files()
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .unwrap()
}

/// Median and p95 compile latency, in ms: every client compiles its own imported
/// session, after an append, on the daemon after the one that imported it (so with two
/// daemons every compile follows a write made elsewhere).
fn compile_latency(daemons: &[&Daemon]) -> (f64, f64) {
    let fixture = largest_fixture();
    let sessions: Vec<(usize, String)> = (0..CLIENTS)
        .map(|c| {
            let d = c % daemons.len();
            let sid = daemons[d].import(&fixture)["session_id"]
                .as_str()
                .unwrap()
                .to_string();
            (d, sid)
        })
        .collect();
    let rounds = 10;
    let mut all: Vec<Duration> = std::thread::scope(|s| {
        let hs: Vec<_> = sessions
            .iter()
            .map(|(d, sid)| {
                let writer = daemons[*d];
                let compiler = daemons[(*d + 1) % daemons.len()];
                s.spawn(move || {
                    let mut times = Vec::new();
                    for i in 0..rounds {
                        writer.call(
                            "transcript.append",
                            json!({"session_id": sid, "records": pair(i)}),
                        );
                        let t = Instant::now();
                        compiler.call("context.compile", json!({"session_id": sid}));
                        times.push(t.elapsed());
                    }
                    times
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    all.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (ms(all[all.len() / 2]), ms(all[all.len() * 95 / 100]))
}

/// One client alone, two daemons: the median compile latency (ms) on `b` after an append
/// through `b` itself, and after an append through `a` (which makes `b` reload).
fn hand_over_latency(a: &Daemon, b: &Daemon) -> (f64, f64) {
    let sid = a.import(&largest_fixture())["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let median = |writer: &Daemon| {
        let mut times: Vec<Duration> = (0..21)
            .map(|i| {
                writer.call(
                    "transcript.append",
                    json!({"session_id": sid, "records": pair(i)}),
                );
                let t = Instant::now();
                b.call("context.compile", json!({"session_id": sid}));
                t.elapsed()
            })
            .collect();
        times.sort();
        times[times.len() / 2].as_secs_f64() * 1000.0
    };
    median(a);
    (median(b), median(a))
}

fn report(name: &str, daemons: &[&Daemon]) {
    let rate = appends_per_sec(daemons);
    let (median, p95) = compile_latency(daemons);
    println!(
        "{name:<34} {rate:>9.0} appends/s   compile median {median:>7.2} ms   p95 {p95:>7.2} ms"
    );
}

fn main() {
    println!(
        "{CLIENTS} clients, one session each, {} s of appends (2 records per batch)",
        secs()
    );
    {
        let d = Daemon::start_full(&[], None, None);
        report("sqlite, one daemon", &[&d]);
    }
    // Kept until the end: the database (or the whole server) goes when they drop.
    let (cluster, suite_db);
    let url = match common::TestDb::create() {
        Some(db) => {
            suite_db = db;
            suite_db.url.clone()
        }
        None => {
            let Some(c) = pg_cluster::PgCluster::start_durable() else {
                return;
            };
            cluster = c;
            cluster.create_db("bench")
        }
    };
    {
        let d = Daemon::start_on(&url);
        report("postgres, one daemon", &[&d]);
    }
    {
        let a = Daemon::start_on(&url);
        let b = Daemon::start_beside(&a);
        report("postgres, two daemons (8 + 8)", &[&a, &b]);
        let (same, other) = hand_over_latency(&a, &b);
        println!(
            "postgres, two daemons, one client: compile median {same:.2} ms after an append through the same daemon, {other:.2} ms after one through the other"
        );
    }
}
