use super::*;
use serde_json::json;

const T0: &str = "2026-11-29T10:00:00Z";

/// A transcript of calls, one model response each: `(tool, input, result)`.
fn transcript(calls: &[(&str, Value, &str)]) -> Vec<Record> {
    let mut out = Vec::new();
    for (i, (name, input, result)) in calls.iter().enumerate() {
        out.push(
            serde_json::from_value(json!({"uuid": format!("a{i}"), "seq": 2 * i + 1,
                "type": "assistant", "timestamp": T0, "message_id": format!("m{i}"),
                "content": [{"type": "tool_use", "id": format!("t{i}"), "name": name,
                    "input": input}]}))
            .unwrap(),
        );
        out.push(
            serde_json::from_value(json!({"uuid": format!("u{i}"), "seq": 2 * i + 2,
                "type": "user", "timestamp": T0,
                "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"),
                    "content": result}]}))
            .unwrap(),
        );
    }
    out
}

fn at(minutes: i64) -> CacheClock {
    CacheClock {
        now: T0.parse::<DateTime<Utc>>().unwrap() + chrono::Duration::minutes(minutes),
        ttl_secs: 300,
        rewritten: false,
    }
}

/// Never stale within these tests unless asked.
fn superseded_only() -> LeanSettings {
    LeanSettings {
        stale_after_rounds: None,
        keep_recent: 0,
        warm_min_ratio_pct: 100,
        ..LeanSettings::default()
    }
}

fn cold(records: &[Record], settings: &LeanSettings) -> Vec<(String, Rule)> {
    let view: Vec<&Record> = records.iter().collect();
    let d = decide(
        &view,
        &BTreeMap::new(),
        &BTreeMap::new(),
        settings,
        at(6),
        true,
        None,
    );
    assert!(d.cold);
    d.clears
}

fn ids(clears: &[(String, Rule)]) -> Vec<&str> {
    clears.iter().map(|(id, _)| id.as_str()).collect()
}

#[test]
fn a_repeated_read_command_or_search_supersedes_the_earlier_result() {
    let recs = transcript(&[
        ("Read", json!({"file_path": "/p/a.rs"}), "fn a() {}"),
        ("Bash", json!({"command": "cargo test"}), "1 failed"),
        ("Grep", json!({"pattern": "fn a"}), "/p/a.rs"),
        ("Read", json!({"file_path": "/p/a.rs"}), "fn a() { 1 }"),
        ("Bash", json!({"command": "cargo test"}), "ok"),
        ("Grep", json!({"pattern": "fn b"}), "none"),
    ]);
    let clears = cold(&recs, &superseded_only());
    assert_eq!(ids(&clears), vec!["t0", "t1"]);
    assert!(clears.iter().all(|(_, r)| *r == Rule::Superseded));
}

#[test]
fn another_range_of_the_same_file_is_not_a_repetition() {
    let recs = transcript(&[
        (
            "Read",
            json!({"file_path": "/p/a.rs", "offset": 1, "limit": 50}),
            "head",
        ),
        (
            "Read",
            json!({"file_path": "/p/a.rs", "offset": 51, "limit": 50}),
            "tail",
        ),
    ]);
    assert!(cold(&recs, &superseded_only()).is_empty());
}

#[test]
fn a_whole_file_write_supersedes_its_reads_but_an_edit_does_not() {
    let recs = transcript(&[
        ("Read", json!({"file_path": "/p/a.rs"}), "old a"),
        ("Read", json!({"file_path": "/p/b.rs"}), "old b"),
        (
            "Edit",
            json!({"file_path": "/p/b.rs", "old_string": "old", "new_string": "new"}),
            "ok",
        ),
        (
            "Write",
            json!({"file_path": "/p/a.rs", "content": "new a"}),
            "ok",
        ),
    ]);
    assert_eq!(ids(&cold(&recs, &superseded_only())), vec!["t0"]);
}

#[test]
fn stale_results_age_from_the_last_touch_of_their_file_and_the_recent_are_kept() {
    let mut calls = vec![
        ("Read", json!({"file_path": "/p/kept-in-play.rs"}), "a"),
        ("Read", json!({"file_path": "/p/left-alone.rs"}), "b"),
        ("Bash", json!({"command": "ls"}), "c"),
    ];
    for i in 0..4 {
        calls.push(("Glob", json!({"pattern": format!("*.{i}")}), "d"));
    }
    // The file read first is edited in the last response: its read stays in play.
    calls.push((
        "Edit",
        json!({"file_path": "/p/kept-in-play.rs", "old_string": "a", "new_string": "b"}),
        "ok",
    ));
    let recs = transcript(&calls);
    let settings = LeanSettings {
        stale_after_rounds: Some(4),
        keep_recent: 2,
        warm_min_ratio_pct: 100,
        ..LeanSettings::default()
    };
    let clears = cold(&recs, &settings);
    // 8 responses: t1 and t2 are 6 and 5 old, t3 is 4 old, t4 is 3 old; t5 and t6 are
    // the two most recent reproducible results.
    assert_eq!(ids(&clears), vec!["t1", "t2", "t3"]);
    assert!(clears.iter().all(|(_, r)| *r == Rule::Stale));
}

#[test]
fn edits_and_unknown_tools_are_never_cleared() {
    let recs = transcript(&[
        (
            "Edit",
            json!({"file_path": "/p/a.rs", "old_string": "a", "new_string": "b"}),
            "ok",
        ),
        ("mcp__db__query", json!({"sql": "select 1"}), "1"),
        ("mcp__db__query", json!({"sql": "select 1"}), "1"),
        ("Task", json!({"prompt": "look"}), "found"),
    ]);
    let settings = LeanSettings {
        stale_after_rounds: Some(0),
        keep_recent: 0,
        warm_min_ratio_pct: 0,
        ..LeanSettings::default()
    };
    assert!(cold(&recs, &settings).is_empty());
}

/// A read, an edit of 2,000 tokens, `make` with 1,000 tokens of output (no distinctive
/// item: the second run's "done" holds all of them), the read again, `make` again.
fn a_make_run_twice_around_an_edit() -> Vec<Record> {
    let big = "x\n".repeat(2_000);
    let edit = "y".repeat(8_000);
    transcript(&[
        ("Read", json!({"file_path": "/p/a.rs"}), "small"),
        (
            "Edit",
            json!({"file_path": "/p/b.rs", "old_string": edit, "new_string": ""}),
            "ok",
        ),
        ("Bash", json!({"command": "make"}), &big),
        ("Read", json!({"file_path": "/p/a.rs"}), "small again"),
        ("Bash", json!({"command": "make"}), "done"),
    ])
}

#[test]
fn a_warm_cache_clears_only_a_batch_worth_its_rewrite() {
    let recs = a_make_run_twice_around_an_edit();
    let view: Vec<&Record> = recs.iter().collect();
    let none = BTreeMap::new();
    let settings = superseded_only();
    // Warm: t2 (1,000 tokens) is worth the few tokens after it; from t0 on, the batch
    // would write the edit's 2,000 tokens again to save 1,002.
    let warm = decide(&view, &none, &none, &settings, at(1), true, None);
    assert!(!warm.cold);
    assert_eq!(ids(&warm.clears), vec!["t2"]);
    // A higher bar than the batch reaches: nothing while warm, everything once cold.
    let strict = LeanSettings {
        warm_min_ratio_pct: 100_000,
        ..settings.clone()
    };
    assert!(
        decide(&view, &none, &none, &strict, at(1), true, None)
            .clears
            .is_empty()
    );
    assert_eq!(
        ids(&decide(&view, &none, &none, &strict, at(6), true, None).clears),
        vec!["t0", "t2"]
    );
    // Another lever edits the warm cache: the policy waits for it to go cold.
    assert!(
        decide(&view, &none, &none, &settings, at(1), false, None)
            .clears
            .is_empty()
    );
}

/// `a_warm_cache_clears_only_a_batch_worth_its_rewrite`'s transcript: a 1,000-token
/// output (t2) with little after it, and a small read (t0) before an edit of 2,000.
fn priced(recs: &[Record], warm_calls: f64, clock: CacheClock) -> Decision {
    let view: Vec<&Record> = recs.iter().collect();
    let none = BTreeMap::new();
    let pricing = ClearPricing {
        prices: ctxd_protocol::models::Prices::list(3.0, 15.0),
        warm_calls,
    };
    decide(
        &view,
        &none,
        &none,
        &superseded_only(),
        clock,
        true,
        Some(pricing),
    )
}

#[test]
fn a_priced_warm_clear_weighs_the_calls_left_before_the_cache_goes_cold() {
    let recs = a_make_run_twice_around_an_edit();
    // 20 warm calls: t2 saves 20 × 1,000 reads ($0.006) for a rewrite of a few tokens;
    // adding t0 saves 20 × 2 more reads but writes the edit's 2,000 tokens again
    // ($0.0069).
    let d = priced(&recs, 20.0, at(1));
    assert_eq!(ids(&d.clears), vec!["t2"]);
    assert!(d.saving.is_some_and(|s| s > 0.0059 && s < 0.006));
    // A long tool loop ahead: 100 calls of 1,002 fewer reads ($0.0301) would pay for
    // the edit's rewrite too, but t2 alone saves more ($0.0300 less a few tokens).
    assert_eq!(ids(&priced(&recs, 100.0, at(1)).clears), vec!["t2"]);
    // The cache is about to go cold anyway: waiting clears it for nothing.
    let d = priced(&recs, 0.01, at(1));
    assert!(d.clears.is_empty());
    assert!(d.saving.is_some_and(|s| s < 0.0));
}

#[test]
fn a_changed_model_is_a_cold_point() {
    let recs = transcript(&[
        ("Bash", json!({"command": "make"}), "1 failed"),
        ("Bash", json!({"command": "make"}), "ok"),
    ]);
    // Warm, and too few calls left for the clear to pay: nothing.
    assert!(priced(&recs, 0.01, at(1)).clears.is_empty());
    // The model changed: the prefix is written again whatever, so the batch goes now.
    let clock = CacheClock {
        rewritten: true,
        ..at(1)
    };
    let d = priced(&recs, 0.01, clock);
    assert!(d.cold);
    assert_eq!(ids(&d.clears), vec!["t0"]);
}

#[test]
fn what_is_cleared_already_is_not_cleared_again() {
    let recs = transcript(&[
        ("Bash", json!({"command": "make"}), CLEARED),
        ("Bash", json!({"command": "make"}), "b"),
        ("Bash", json!({"command": "make"}), "c"),
    ]);
    let view: Vec<&Record> = recs.iter().collect();
    let cleared: BTreeMap<String, Fate> =
        [("t1".to_string(), Fate::Replaced(CLEARED.into()))].into();
    let d = decide(
        &view,
        &cleared,
        &BTreeMap::new(),
        &superseded_only(),
        at(6),
        true,
        None,
    );
    assert!(d.clears.is_empty());
}

/// `records` with a text block put first in the response of call `i`.
fn said(mut records: Vec<Record>, i: usize, text: &str) -> Vec<Record> {
    let block: ContentBlock =
        serde_json::from_value(json!({"type": "text", "text": text})).unwrap();
    records[2 * i].content.insert(0, block);
    records
}

/// A search, then `rounds - 1` responses that run a command whose output has no item.
fn a_search_then_commands(rounds: usize) -> Vec<Record> {
    let mut calls = vec![(
        "Grep",
        json!({"pattern": "load"}),
        "src/session/load.ts:12: export function loadSession(id) {",
    )];
    for _ in 1..rounds {
        calls.push(("Bash", json!({"command": "true"}), "ok"));
    }
    transcript(&calls)
}

fn use_aware() -> LeanSettings {
    LeanSettings {
        stale_after_rounds: Some(4),
        keep_recent: 0,
        warm_min_ratio_pct: 100,
        touch_by_use: true,
        ..LeanSettings::default()
    }
}

#[test]
fn a_result_the_model_used_within_the_horizon_is_not_stale() {
    // 8 responses; the 5th (3 responses before the end) names the path the search found.
    let recs = said(
        a_search_then_commands(8),
        4,
        "The loader is in src/session/load.ts.",
    );
    assert!(!ids(&cold(&recs, &use_aware())).contains(&"t0"));
    // Without the touch, the search is 7 responses old: stale.
    let by_clock = LeanSettings {
        touch_by_use: false,
        ..use_aware()
    };
    assert!(ids(&cold(&recs, &by_clock)).contains(&"t0"));
}

#[test]
fn a_use_in_a_tool_call_touches_too_and_only_a_distinctive_item_counts() {
    // A string of a later call's input holds the identifier the search showed.
    let mut recs = a_search_then_commands(8);
    recs[2 * 5].content = serde_json::from_value(json!([{"type": "tool_use", "id": "t5",
        "name": "Grep", "input": {"pattern": "loadSession\\("}}]))
    .unwrap();
    assert!(!ids(&cold(&recs, &use_aware())).contains(&"t0"));
    // Words of the result that are no item (`export`, `function`, `12`) touch nothing.
    let recs = said(
        a_search_then_commands(8),
        5,
        "export the function at line 12",
    );
    assert!(ids(&cold(&recs, &use_aware())).contains(&"t0"));
}

#[test]
fn a_result_unused_for_the_horizon_goes_stale() {
    // The use is in the 4th response: 4 responses have followed it.
    let recs = said(
        a_search_then_commands(8),
        3,
        "The loader is in src/session/load.ts.",
    );
    let clears = cold(&recs, &use_aware());
    assert!(
        clears.contains(&("t0".to_string(), Rule::Stale)),
        "{clears:?}"
    );
    // One response later, it is in the horizon again.
    let recs = said(
        a_search_then_commands(8),
        4,
        "The loader is in src/session/load.ts.",
    );
    assert!(!ids(&cold(&recs, &use_aware())).contains(&"t0"));
}

#[test]
fn a_use_does_not_keep_a_superseded_result() {
    // The same search again: the later result is the one the model reads.
    let mut recs = said(
        a_search_then_commands(8),
        6,
        "The loader is in src/session/load.ts.",
    );
    recs[2 * 7].content = serde_json::from_value(json!([{"type": "tool_use", "id": "t7",
        "name": "Grep", "input": {"pattern": "load"}}]))
    .unwrap();
    recs[2 * 7 + 1].content = serde_json::from_value(json!([{"type": "tool_result",
        "tool_use_id": "t7",
        "content": "src/session/load.ts:12: export function loadSession(id) {"}]))
    .unwrap();
    let clears = cold(&recs, &use_aware());
    assert!(
        clears.contains(&("t0".to_string(), Rule::Superseded)),
        "{clears:?}"
    );
}

#[test]
fn settings_written_before_touch_by_use_still_parse_and_get_it() {
    let old: LeanSettings = serde_json::from_value(json!({"stale_after_rounds": 8})).unwrap();
    assert!(old.touch_by_use);
    assert_eq!(old.keep_recent, LeanSettings::default().keep_recent);
    let off: LeanSettings = serde_json::from_value(json!({"touch_by_use": false})).unwrap();
    assert!(!off.touch_by_use);
}

#[test]
fn a_repetition_that_lost_what_the_earlier_result_showed_does_not_supersede_it() {
    let recs = transcript(&[
        (
            "Bash",
            json!({"command": "cargo test"}),
            "test session::load_rejects_a_missing_id ... FAILED",
        ),
        ("Bash", json!({"command": "cargo test"}), "test result: ok"),
        (
            "Read",
            json!({"file_path": "/p/a.rs"}),
            "fn load_session() {}",
        ),
        (
            "Read",
            json!({"file_path": "/p/a.rs"}),
            "fn load_session() {}\nfn save_session() {}",
        ),
    ]);
    // The failing test's name is gone from the later run: the model may still name it.
    // The later read holds all of the earlier one.
    assert_eq!(ids(&cold(&recs, &superseded_only())), vec!["t2"]);
}
