//! Import of every Claude Code fixture through the running daemon.

use crate::common;

use common::Daemon;
use serde_json::{Value, json};

/// Counts taken straight from the JSONL, independently of the importer: its lines, and
/// the sub-agent messages `agent_progress` lines carry.
fn independent_counts(text: &str) -> (u64, u64, u64, u64) {
    let (mut user, mut assistant, mut tool_use, mut tool_result) = (0, 0, 0, 0);
    let lines = text.lines().filter(|l| !l.trim().is_empty()).flat_map(|l| {
        let v: Value = serde_json::from_str(l).unwrap();
        let agent = (v["type"] == "progress" && v["data"]["type"] == "agent_progress")
            .then(|| v["data"]["message"].clone());
        std::iter::once(v).chain(agent)
    });
    for v in lines {
        let content = &v["message"]["content"];
        let empty = content.as_str().is_some_and(str::is_empty)
            || content.as_array().is_some_and(Vec::is_empty);
        match v["type"].as_str() {
            Some("user") if !empty => user += 1,
            Some("assistant") if !empty => assistant += 1,
            _ => continue,
        }
        for b in content.as_array().into_iter().flatten() {
            match b["type"].as_str() {
                Some("tool_use") => tool_use += 1,
                Some("tool_result") => tool_result += 1,
                _ => {}
            }
        }
    }
    (user, assistant, tool_use, tool_result)
}

#[test]
fn every_fixture_imports_with_its_counts() {
    let d = Daemon::start();
    let files = common::fixture_files();
    assert!(files.len() > 40, "fixtures missing: {}", files.len());
    let mut imported = 0;
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let (user, assistant, tool_use, tool_result) = independent_counts(&text);
        let r = d.try_call(
            "session.import",
            json!({ "jsonl": text, "fallback_cwd": "/tmp/imported" }),
        );
        let system_lines = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["type"] == "system" || v["type"] == "attachment")
            .count();
        if user + assistant == 0 && system_lines == 0 {
            // Only UI lines (summary, queue-operation, file-history-snapshot): nothing to import.
            let err = r.expect_err("an import with no records is refused");
            assert_eq!(err["code"], -32602, "{}", f.display());
            continue;
        }
        let r = r.unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let stats = &r["stats"];
        assert_eq!(stats["user"], user, "{}", f.display());
        assert_eq!(stats["assistant"], assistant, "{}", f.display());
        assert_eq!(stats["tool_use"], tool_use, "{}", f.display());
        assert_eq!(stats["tool_result"], tool_result, "{}", f.display());
        // What was stored is what was counted, and the import told the session as stored.
        let sid = r["session_id"].as_str().unwrap();
        let stored = d.call("session.get", json!({"session_id": sid}));
        assert_eq!(r["session"], stored["session"], "{}", f.display());
        // The main thread's records and its sub-agents' threads'.
        let mut recs =
            d.call("transcript.read", json!({"session_id": sid, "limit": 5000}))["records"]
                .as_array()
                .unwrap()
                .clone();
        for a in d.call("agent.list", json!({"session_id": sid}))["agents"]
            .as_array()
            .unwrap()
        {
            let thread = d.call(
                "transcript.read",
                json!({"session_id": a["session_id"], "limit": 5000}),
            );
            recs.extend(thread["records"].as_array().unwrap().iter().cloned());
        }
        assert_eq!(recs.len() as u64, stats["records"].as_u64().unwrap());
        let stored_user = recs.iter().filter(|r| r["type"] == "user").count() as u64;
        let stored_uses: u64 = recs
            .iter()
            .flat_map(|r| r["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "tool_use")
            .count() as u64;
        assert_eq!(stored_user, user);
        assert_eq!(stored_uses, tool_use);
        // Every imported session compiles.
        d.call("context.compile", json!({"session_id": sid}));
        imported += 1;
    }
    assert!(imported >= 30);
}

#[test]
fn usage_timestamps_and_split_responses_survive() {
    let d = Daemon::start();
    let path = common::fixtures().join("spotter/subagent.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let r = d.import(&path);
    assert_eq!(r["stats"]["skipped"]["progress"], 44);
    let sid = r["session_id"].as_str().unwrap();
    let recs =
        d.call("transcript.read", json!({"session_id": sid, "limit": 5000}))["records"].clone();
    let first_src: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "assistant")
        .unwrap();
    let first = recs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uuid"] == first_src["uuid"])
        .unwrap();
    assert_eq!(first["timestamp"], first_src["timestamp"]);
    assert_eq!(first["message_id"], first_src["message"]["id"]);
    assert_eq!(
        first["usage"]["cache_read_input_tokens"],
        first_src["message"]["usage"]["cache_read_input_tokens"]
    );
    // Several records share one provider message id.
    let mut ids = std::collections::HashMap::<String, usize>::new();
    for r in recs.as_array().unwrap() {
        if let Some(m) = r["message_id"].as_str() {
            *ids.entry(m.to_string()).or_default() += 1;
        }
    }
    assert!(ids.values().any(|&n| n > 1));
}

#[test]
fn a_malformed_line_is_reported_and_nothing_is_imported() {
    let d = Daemon::start();
    let good = std::fs::read_to_string(common::fixtures().join("spotter/short.jsonl")).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(
        5,
        r#"{"type": "user", "uuid": "u-bad", "message": {"role": "user", "content": 5}}"#,
    );
    let err = d
        .try_call("session.import", json!({ "jsonl": lines.join("\n") }))
        .unwrap_err();
    assert_eq!(err["code"], -32602);
    assert!(err["message"].as_str().unwrap().contains("line 6"), "{err}");
    assert_eq!(d.session_count(), 0);
}

/// A line that is not JSON at all (a real file's line cut short) is skipped and named in
/// a warning with its number; the rest imports as it would without it.
#[test]
fn a_line_that_is_not_json_is_skipped_and_named() {
    let d = Daemon::start();
    let good = std::fs::read_to_string(common::fixtures().join("spotter/short.jsonl")).unwrap();
    let whole = d.call("session.import", json!({ "jsonl": good }));
    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(5, "{not json");
    lines.insert(9, "[1, 2]");
    let r = d.call("session.import", json!({ "jsonl": lines.join("\n") }));
    assert_eq!(r["stats"]["records"], whole["stats"]["records"], "{r}");
    assert_eq!(r["stats"]["skipped"]["not_json"], 2, "{r}");
    let warnings = r["stats"]["warnings"].to_string();
    assert!(warnings.contains("line 6 (not valid JSON"), "{warnings}");
    assert!(
        warnings.contains("line 10 (expected a JSON object, found an array)"),
        "{warnings}"
    );
}

/// A record whose JSON would be stored at more than `MAX_RECORD_BYTES` is refused by
/// name, and nothing is imported.
#[test]
fn an_oversized_record_is_reported_and_nothing_is_imported() {
    let d = Daemon::start();
    let good = std::fs::read_to_string(common::fixtures().join("spotter/short.jsonl")).unwrap();
    let mut lines: Vec<serde_json::Value> = good
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let prompt = lines
        .iter_mut()
        .find(|l| l["type"] == "user" && l["message"]["content"].is_string())
        .expect("a prompt typed by the user");
    prompt["message"]["content"] = json!("x".repeat(32 * 1024 * 1024));
    let jsonl: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let err = d
        .try_call("session.import", json!({ "jsonl": jsonl.join("\n") }))
        .unwrap_err();
    assert_eq!(err["code"], -32602);
    let message = err["message"].as_str().unwrap();
    assert!(
        message.contains("jsonl: records[") && message.contains("MAX_RECORD_BYTES"),
        "{err}"
    );
    assert_eq!(d.session_count(), 0);
}

/// A transcript of at least `bytes` bytes: the bundled conversations repeated, every
/// copy with uuids and tool ids of its own so that none repeats another.
fn long_transcript(bytes: usize) -> String {
    let uuid =
        regex::Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    let tool_id = regex::Regex::new(r"\btoolu_[A-Za-z0-9]+").unwrap();
    let base: String = [
        "viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
        "spotter/subagent.jsonl",
        "spotter/tool_heavy.jsonl",
    ]
    .iter()
    .map(|f| std::fs::read_to_string(common::fixtures().join(f)).unwrap())
    .flat_map(|t| {
        t.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| format!("{l}\n"))
            .collect::<Vec<_>>()
    })
    .collect();
    let mut out = String::with_capacity(bytes + base.len());
    for k in 0.. {
        if out.len() >= bytes {
            break;
        }
        let copy = uuid.replace_all(&base, |c: &regex::Captures<'_>| {
            format!("{}{k:012x}", &c[0][..24])
        });
        let copy = tool_id.replace_all(&copy, |c: &regex::Captures<'_>| format!("{}x{k}", &c[0]));
        out.push_str(&copy);
    }
    out
}

/// An import of a file the daemon reads holds the rows it writes and a constant (one
/// read's records), not every record of the transcript: its peak memory grows by less
/// than twice the transcript's size plus that constant.
#[test]
fn a_long_import_by_path_holds_a_bounded_multiple_of_its_size() {
    let d = Daemon::start();
    // The first import starts the threads and pools every import shares.
    let small = std::fs::read_to_string(common::fixtures().join("spotter/short.jsonl")).unwrap();
    d.call("session.import", json!({ "jsonl": small }));
    let jsonl = long_transcript(32 << 20);
    let size = jsonl.len() as u64;
    let file = d.home.join("long.jsonl");
    std::fs::write(&file, &jsonl).unwrap();
    drop(jsonl);
    let before = d.peak_rss_kib() * 1024;
    let r = d.call(
        "session.import",
        json!({ "path": file, "fallback_cwd": "/tmp/imported" }),
    );
    assert!(
        r["stats"]["records"].as_u64().unwrap() > 5_000,
        "{}",
        r["stats"]
    );
    let grown = (d.peak_rss_kib() * 1024).saturating_sub(before);
    // Pieces parsed at once on every core add to the peak, so the bound leaves room for
    // them; holding the records (the old import) took 5x.
    assert!(
        grown < size * 5 / 2 + (64 << 20),
        "importing {size} bytes took the daemon's peak memory up by {grown} bytes ({:.1}x)",
        grown as f64 / size as f64
    );
}

/// A path the daemon cannot or may not read is refused by name, and nothing is imported.
#[test]
fn a_bad_path_is_refused_and_nothing_is_imported() {
    let d = Daemon::start_with(&["--max-request-bytes", "4096"]);
    let short = common::fixtures().join("spotter/short.jsonl");
    let small = common::fixtures().join("line-kinds/user/user.jsonl");
    let refused = |params: Value, says: &str| {
        let err = d.try_call("session.import", params).unwrap_err();
        assert_eq!(err["code"], -32602, "{err}");
        let message = err["message"].as_str().unwrap();
        assert!(message.contains(says), "{says}: {err}");
    };
    refused(json!({ "path": "spotter/short.jsonl" }), "absolute");
    refused(json!({ "path": d.home }), "not a regular file");
    refused(
        json!({ "path": d.home.join("missing.jsonl") }),
        "No such file",
    );
    // short.jsonl is over 4096 bytes.
    refused(json!({ "path": short }), "over the bound of 4096 bytes");
    refused(json!({ "path": small, "jsonl": "{}" }), "not both");
    assert_eq!(d.session_count(), 0);
    let r = d.call("session.import", json!({ "path": small }));
    assert_eq!(r["stats"]["records"], 1, "{r}");
}

/// An imported response's usage measured the source agent's own system prompt and
/// tools: the first compile after an import estimates what ctxd itself compiled, close to
/// the body's size (a token is about four bytes of JSON).
#[test]
fn the_estimate_after_an_import_measures_the_compiled_body() {
    let d = Daemon::start();
    let fx = common::fixtures();
    let files = [
        fx.join("spotter/short.jsonl"),
        fx.join("spotter/tool_heavy.jsonl"),
        fx.join("spotter/subagent.jsonl"),
        fx.join("viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"),
        fx.join("viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"),
    ];
    for f in files {
        let sid = d.import(&f)["session_id"].as_str().unwrap().to_string();
        let recs = d.call(
            "transcript.read",
            json!({ "session_id": sid, "limit": 5000 }),
        );
        let last = recs["records"].as_array().unwrap().last().unwrap()["timestamp"].clone();
        let raw = d.call_raw("context.compile", json!({ "session_id": sid, "now": last }));
        let start = raw.find("{\"request\":").unwrap() + "{\"request\":".len();
        let end = raw.rfind(",\"metadata\":").unwrap();
        let body_tokens = (end - start) as f64 / 4.0;
        let v: Value = serde_json::from_str(&raw).unwrap();
        let effective = v["metadata"]["context"]["effective_tokens"]
            .as_f64()
            .unwrap();
        let off = (effective - body_tokens).abs() / body_tokens;
        assert!(
            off <= 0.25,
            "{}: estimated {effective} tokens for a body of {} bytes ({:.0} % off)",
            f.display(),
            end - start,
            off * 100.0
        );
    }
}
