//! Every fixture replayed through `ctx replay` at windows from 16k (the smallest a
//! profile may have) to 200k tokens: no compile is blocked, each compaction leaves the
//! next compile at most half the autocompact threshold, so none follows another without
//! the conversation growing in between, and session memory keeps serving compactions
//! after the first.

use crate::common;

use std::process::{Command, Stdio};

use serde_json::Value;

const WINDOWS: [u64; 8] = [
    16_000, 20_000, 32_000, 40_000, 48_000, 64_000, 100_000, 200_000,
];

/// `ctx replay --json` of `file`, at `window` with 8,000 output tokens when given, else at
/// the window the replay finds for the source.
fn replay(home: &std::path::Path, file: &std::path::Path, window: Option<u64>) -> Vec<Value> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctx"));
    if let Some(url) = common::store_for_home(home) {
        cmd.env("CTXD_STORE", url);
    }
    cmd.env("CTXD_HOME", home)
        .env_remove("CTXD_SOCKET")
        .env("CTXD_BIN", common::ctxd_bin())
        .stdin(Stdio::null())
        .args(["replay", "--json"]);
    if let Some(w) = window {
        cmd.args(["--max-output-tokens", "8000", "--context-window"])
            .arg(w.to_string());
    }
    let out = cmd.arg(file).output().unwrap();
    assert!(
        out.status.success(),
        "{} at {window:?}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn every_compaction_makes_room_at_every_window() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    // Sessions only: the line-kinds files hold one record each.
    let files: Vec<_> = common::fixture_files()
        .into_iter()
        .filter(|f| !f.to_string_lossy().contains("line-kinds"))
        .collect();
    let jobs: Vec<(&std::path::PathBuf, u64)> = files
        .iter()
        .flat_map(|f| WINDOWS.iter().map(move |w| (f, *w)))
        .collect();
    // The first replay starts the daemon; then two at a time against it.
    let (f, w) = jobs[0];
    let mut results = vec![(f.display().to_string(), w, replay(&home, f, Some(w)))];
    results.extend(std::thread::scope(|s| {
        let halves: Vec<_> = jobs[1..]
            .chunks(jobs.len().div_ceil(2).max(1))
            .map(|chunk| {
                let home = &home;
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|(f, w)| (f.display().to_string(), *w, replay(home, f, Some(*w))))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        halves
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    }));
    let mut compactions = 0;
    for (file, window, steps) in &results {
        print_row(file, *window, steps);
        for (i, step) in steps.iter().enumerate() {
            let threshold = step["autocompact_threshold"].as_u64().unwrap();
            assert!(threshold > 0, "{file} at {window}: a threshold of 0");
            assert!(
                step.get("compaction_shortfall").is_none(),
                "{file} at {window}: {step}"
            );
            assert_eq!(
                step["at_blocking_limit"], false,
                "{file} at {window}: a blocked compile: {step}"
            );
            let skipped = step["compaction"]["session_memory_skipped"]
                .as_str()
                .unwrap_or("");
            assert!(
                !skipped.contains("not in the current history"),
                "{file} at {window}: session memory lost its place after a compaction: {skipped}"
            );
            let Some(c) = step.get("compaction") else {
                continue;
            };
            compactions += 1;
            let (pre, post) = (
                c["pre_tokens"].as_u64().unwrap(),
                c["post_tokens"].as_u64().unwrap(),
            );
            assert_eq!(c["target_tokens"].as_u64().unwrap(), threshold / 2);
            assert!(
                post <= threshold / 2,
                "{file} at {window}: a compaction left {post} of a {threshold} threshold: {c}"
            );
            assert!(
                pre >= threshold,
                "{file} at {window}: compacted below the threshold: {c}"
            );
            // What the compile after it estimated is the compaction's own estimate.
            assert_eq!(
                step["effective_tokens"], c["post_tokens"],
                "{file} at {window}"
            );
            if i > 0 {
                assert!(
                    steps[i - 1].get("compaction").is_none()
                        || steps[i - 1]["compaction"]["post_tokens"].as_u64().unwrap() < pre,
                    "{file} at {window}: compacted again with nothing new"
                );
            }
        }
    }
    // The small windows compact several of the sessions: the test checks real cases.
    assert!(compactions >= 8, "only {compactions} compactions");
    let _ = Command::new(env!("CARGO_BIN_EXE_ctx"))
        .env("CTXD_HOME", &home)
        .env_remove("CTXD_SOCKET")
        .args(["daemon", "stop"])
        .output();
}

/// One line of the measurement table (shown with `--nocapture`).
fn print_row(file: &str, window: u64, steps: &[Value]) {
    let done: Vec<&Value> = steps.iter().filter_map(|s| s.get("compaction")).collect();
    let mut ratios: Vec<f64> = done
        .iter()
        .map(|c| {
            c["post_tokens"].as_f64().unwrap()
                / (2.0 * c["target_tokens"].as_f64().unwrap().max(1.0))
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let kind = |k: &str| done.iter().filter(|c| c["kind"] == k).count();
    let name = std::path::Path::new(file)
        .file_name()
        .unwrap()
        .to_string_lossy();
    let ratio = |r: Option<&f64>| r.map_or("-".into(), |r| format!("{r:.2}"));
    eprintln!(
        "{name:<44} {window:>7}  compactions {} (session memory {}, full {})  post/threshold max {} median {}  {}",
        done.len(),
        kind("session_memory"),
        kind("full"),
        ratio(ratios.last()),
        ratio(ratios.get(ratios.len() / 2)),
        done.iter()
            .map(|c| format!("{}→{}", c["pre_tokens"], c["post_tokens"]))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// A session that ran on a 1M-token window (its recorded inputs pass 200,000 without a
/// compaction) is replayed on that window: no autocompact at or below its largest
/// recorded input.
#[test]
fn a_session_past_200k_is_replayed_on_its_1m_window() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/corpus/Viniciuscarvalho+FitToday.2490cc0b8d62.jsonl");
    let lines = replay(&home, &file, None);
    let largest = lines
        .iter()
        .filter_map(|l| l["actual_input_tokens"].as_u64())
        .max()
        .unwrap();
    assert!(largest > 200_000, "the fixture passes 200k: {largest}");
    for l in &lines {
        assert!(
            l["autocompact_threshold"].as_u64().unwrap() > largest,
            "a threshold at or below {largest}: {l}"
        );
        assert_eq!(l["autocompact"], false, "{l}");
    }
    let _ = Command::new(env!("CARGO_BIN_EXE_ctx"))
        .env("CTXD_HOME", &home)
        .env_remove("CTXD_SOCKET")
        .args(["daemon", "stop"])
        .output();
}

#[test]
fn a_transcript_that_records_its_requests_is_replayed_on_their_model_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/probe/claude-code-2.1.332.jsonl");
    let lines = replay(&home, &file, None);
    // Two recorded calls to `claude-opus-5-5` at `max_tokens` 128000, whose usage stays
    // far below 200k: the window is the model's (1M), the reserve the 20k cap.
    assert_eq!(lines.len(), 2, "{lines:?}");
    for l in &lines {
        assert_eq!(l["autocompact_threshold"], 967_000, "{l}");
        // Each answers a recorded call: compared with the request Claude Code recorded.
        let r = &l["recorded_request"];
        let matched = r["structure_match"].as_bool().expect("structure_match");
        assert!(matched || r["first_difference"].is_string(), "{l}");
        assert_eq!(r["tools"], 12, "{l}");
    }
    let _ = Command::new(env!("CARGO_BIN_EXE_ctx"))
        .env("CTXD_HOME", &home)
        .env_remove("CTXD_SOCKET")
        .args(["daemon", "stop"])
        .output();
}

#[test]
fn the_sources_boundaries_are_counted_side_by_side_with_ctxd() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/corpus/entireio+cli.6cb5a6e8989d.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_ctx"))
        .env("CTXD_HOME", &home)
        .env_remove("CTXD_SOCKET")
        .env("CTXD_BIN", common::ctxd_bin())
        .stdin(Stdio::null())
        .args(["replay", "--json"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let summary: Value = serde_json::from_str(stderr.lines().last().unwrap()).unwrap();
    let steps: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let boundaries = summary["source_boundaries"].as_array().unwrap();
    let kinds: Vec<&str> = boundaries
        .iter()
        .map(|b| b["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "microcompact_boundary",
            "microcompact_boundary",
            "compact_boundary"
        ]
    );
    for b in boundaries {
        let line = &b["source_line"];
        assert!(b["history_in_file"].as_bool().unwrap(), "{b}");
        assert!(b["source_pre_tokens"].as_u64().unwrap() > 0, "{b}");
        assert!(b["count_at_source_compaction"].as_u64().unwrap() > 0, "{b}");
        let flag = if b["kind"] == "compact_boundary" {
            "source_compaction"
        } else {
            "source_microcompaction"
        };
        assert!(
            steps
                .iter()
                .any(|s| &s["source_line"] == line && s[flag] == true),
            "no compile at {b}"
        );
        if b["kind"] == "microcompact_boundary" {
            assert!(b["tokens_saved"].as_u64().unwrap() > 0, "{b}");
            assert!(b["compacted_tools"].as_u64().unwrap() > 0, "{b}");
            assert!(b["ctxd_cleared_of_them"].is_u64(), "{b}");
            assert!(b.get("difference_pct").is_none(), "{b}");
        } else {
            // ctxd's own count of the history Claude Code counted, within 1 %.
            assert_eq!(b["source_pre_tokens"], 157_692, "{b}");
            let diff = b["difference_pct"].as_f64().unwrap();
            assert!(diff.abs() <= 1.0, "{b}");
        }
    }
    let _ = Command::new(env!("CARGO_BIN_EXE_ctx"))
        .env("CTXD_HOME", &home)
        .env_remove("CTXD_SOCKET")
        .args(["daemon", "stop"])
        .output();
}
