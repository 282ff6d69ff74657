//! `ctx context`, `ctx cache` and `ctx replay`'s cost simulation, end to end against a
//! daemon the test owns.

use crate::common;

use std::process::{Command, Stdio};

use common::Daemon;
use serde_json::{Value, json};

fn ctx(d: &Daemon) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ctx"));
    c.arg("--socket")
        .arg(&d.socket)
        .arg("--no-start")
        .env_remove("CTXD_HOME")
        .stdin(Stdio::null());
    c
}

fn run(c: &mut Command) -> (String, String) {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{:?} failed: {}",
        c,
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A Claude Code transcript line.
fn line(uuid: &str, parent: Option<&str>, ts: &str, body: Value) -> String {
    let mut v = json!({
        "parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": "/tmp/w",
        "sessionId": "s1", "version": "2.1.38", "timestamp": ts, "uuid": uuid,
    });
    for (k, x) in body.as_object().unwrap() {
        v[k] = x.clone();
    }
    v.to_string()
}

fn assistant(uuid: &str, parent: &str, ts: &str, id: &str, read: u64) -> String {
    line(
        uuid,
        Some(parent),
        ts,
        json!({"type": "assistant", "message": {"id": id, "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": format!("answer {id}")}],
            "usage": {"input_tokens": 4, "cache_creation_input_tokens": 900, "cache_read_input_tokens": read, "output_tokens": 50}}}),
    )
}

fn user(uuid: &str, parent: Option<&str>, ts: &str, text: &str) -> String {
    line(
        uuid,
        parent,
        ts,
        json!({"type": "user", "message": {"role": "user", "content": text}}),
    )
}

/// Two calls, a compaction by the source, one more call.
fn transcript() -> String {
    [
        user("u1", None, "2026-01-01T10:00:00Z", "first question"),
        assistant("a1", "u1", "2026-01-01T10:00:05Z", "msg_1", 0),
        user("u2", Some("a1"), "2026-01-01T10:01:00Z", "second question"),
        assistant("a2", "u2", "2026-01-01T10:01:05Z", "msg_2", 20_000),
        line(
            "c1",
            None,
            "2026-01-01T10:02:00Z",
            json!({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                "logicalParentUuid": "a2", "compactMetadata": {"trigger": "manual", "preTokens": 21000}}),
        ),
        line(
            "s1",
            Some("c1"),
            "2026-01-01T10:02:01Z",
            json!({"type": "user", "isCompactSummary": true, "message": {"role": "user", "content": "Summary: two questions were answered."}}),
        ),
        user("u3", Some("s1"), "2026-01-01T10:02:30Z", "third question"),
        assistant("a3", "u3", "2026-01-01T10:02:35Z", "msg_3", 0),
    ]
    .join("\n")
}

#[test]
fn replay_compiles_at_source_compactions_and_prices_every_call() {
    let d = Daemon::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.jsonl");
    std::fs::write(&file, transcript()).unwrap();
    let (out, err) = run(ctx(&d).arg("replay").arg(&file).arg("--json"));
    let steps: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(steps.len(), 4, "{out}");
    // The compile at the source's compaction, before its boundary (line 5).
    let at = steps
        .iter()
        .find(|s| s["source_compaction"] == true)
        .expect("a compile at the source compaction");
    assert_eq!(at["source_line"], 5);
    assert!(at["autocompact"].is_boolean());
    for s in &steps {
        for k in [
            "predicted_cache_read_tokens",
            "predicted_cache_write_tokens",
            "simulated_cost",
        ] {
            assert!(s[k].is_number(), "{k} in {s}");
        }
    }
    let answered: Vec<&Value> = steps
        .iter()
        .filter(|s| s.get("source_compaction").is_none())
        .collect();
    assert!(answered.iter().all(|s| s["recorded_cost"].is_number()));
    // The first call writes everything; the second reads what the first wrote.
    assert_eq!(answered[0]["predicted_cache_read_tokens"], 0);
    assert!(answered[1]["predicted_cache_read_tokens"].as_u64().unwrap() > 0);

    let summary: Value = serde_json::from_str(err.lines().last().unwrap()).unwrap();
    assert_eq!(summary["source_compactions"], 1);
    assert_eq!(summary["costed_calls"], 3);
    for k in [
        "predicted_cache_read_share",
        "simulated_cost_total",
        "recorded_cost_total",
    ] {
        assert!(summary[k].is_number(), "{k} in {summary}");
    }
    // Recorded: (4 × 3 + 900 × 3.75 + read × 0.3 + 50 × 15) per call, Sonnet prices.
    let recorded: f64 = [0.0, 20_000.0, 0.0]
        .iter()
        .map(|r| (4.0 * 3.0 + 900.0 * 3.75 + r * 0.3 + 50.0 * 15.0) / 1e6)
        .sum();
    let got = summary["recorded_cost_total"].as_f64().unwrap();
    assert!((got - recorded).abs() < 1e-9, "{got} vs {recorded}");
    // The replay's session is the daemon's to keep; the one-hour TTL prices writes at 2×.
    let (_, err1h) = run(ctx(&d)
        .arg("replay")
        .arg(&file)
        .args(["--json", "--cache-ttl", "1h"]));
    let s1h: Value = serde_json::from_str(err1h.lines().last().unwrap()).unwrap();
    assert_eq!(s1h["cache_ttl"], "1h");
    assert!(
        s1h["simulated_cost_total"].as_f64().unwrap()
            > summary["simulated_cost_total"].as_f64().unwrap()
    );
}

#[test]
fn context_picture_in_plain_text_and_json_and_the_cache_table() {
    let d = Daemon::start();
    let sid = d.call(
        "session.create",
        json!({"cwd": "/tmp/w", "no_git": true, "start_date": "2026-01-01"}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "user", "content": "hello", "timestamp": "2026-01-01T10:00:00Z"},
            {"type": "assistant", "message_id": "m1", "timestamp": "2026-01-01T10:00:05Z",
             "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
             "usage": {"input_tokens": 5, "cache_creation_input_tokens": 3000, "cache_read_input_tokens": 9000, "output_tokens": 40}},
            {"type": "user", "timestamp": "2026-01-01T10:00:06Z",
             "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a\nb\nc"}]}
        ]}),
    );
    let (plain, _) = run(ctx(&d).args(["context", &sid]));
    assert!(plain.starts_with("Context usage\n"), "{plain}");
    assert!(!plain.contains('\x1b'), "no colour without a terminal");
    let grid: usize = plain
        .lines()
        .skip(1)
        .take(10)
        .map(|l| {
            l.get(..20)
                .unwrap_or(l)
                .chars()
                .filter(|c| !c.is_whitespace())
                .count()
        })
        .sum();
    assert_eq!(grid, 100, "{plain}");
    for label in [
        "System prompt",
        "Tool results",
        "Free space",
        "Autocompact buffer",
    ] {
        assert!(plain.contains(label), "{label} missing in {plain}");
    }
    let (json_text, _) = run(ctx(&d).args(["context", &sid, "--json"]));
    let v: Value = serde_json::from_str(&json_text).unwrap();
    assert_eq!(v["categories"].as_array().unwrap().len(), 8);

    let (table, _) = run(ctx(&d).args(["cache", &sid]));
    assert!(table.contains("\n1 call, 0 cache breaks\n"), "{table}");
    let units = table.lines().nth(1).unwrap_or_default();
    assert_eq!(units.matches("(tokens)").count(), 4, "{table}");
}

/// After an import, `ctx context` counts the system prompt ctxd compiles, from its
/// characters, not a share of the source agent's usage.
#[test]
fn context_after_an_import_counts_the_compiled_system_prompt() {
    let d = Daemon::start();
    let sid = d.import(&common::fixtures().join("spotter/short.jsonl"))["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (before, _) = run(ctx(&d).args(["context", &sid, "--json"]));
    let compiled = d.call("context.compile", json!({"session_id": sid}));
    let chars: u64 = compiled["metadata"]["system_sections"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["chars"].as_u64())
        .sum();
    let (after, _) = run(ctx(&d).args(["context", &sid, "--json"]));
    for text in [before, after] {
        let v: Value = serde_json::from_str(&text).unwrap();
        let system = v["categories"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "system")
            .unwrap()["tokens"]
            .as_u64()
            .unwrap();
        assert!(
            system * 2 <= chars && system * 4 >= chars,
            "{system} tokens for a system prompt of {chars} characters"
        );
    }
}
