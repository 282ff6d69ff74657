//! Decisions of the budget over whole projections, and the freeze property.

use std::collections::BTreeMap;

use ctxd_protocol::*;
use serde_json::json;

use super::*;
use crate::choices::{Choices, choices, samples};
use proptest::prelude::*;

fn rec(v: serde_json::Value, seq: u64) -> Record {
    let mut v = v;
    v["uuid"] = json!(format!("r{seq}"));
    v["seq"] = json!(seq);
    v["timestamp"] = json!("2026-11-29T10:00:00.000Z");
    serde_json::from_value(v).unwrap()
}

fn turn(msg: &str, results: &[(&str, &str, usize)], start: u64) -> Vec<Record> {
    let uses: Vec<_> = results
        .iter()
        .map(|(id, name, _)| json!({"type": "tool_use", "id": id, "name": name, "input": {}}))
        .collect();
    let outs: Vec<_> = results
        .iter()
        .map(|(id, _, n)| json!({"type": "tool_result", "tool_use_id": id, "content": "x".repeat(*n)}))
        .collect();
    vec![
        rec(
            json!({"type": "assistant", "message_id": msg, "content": uses}),
            start,
        ),
        rec(json!({"type": "user", "content": outs}), start + 1),
    ]
}

/// Runs the engine's loop in memory: plan, freeze, apply.
fn decide(
    records: &[Record],
    fates: &mut BTreeMap<String, Fate>,
    limits: &ToolLimits,
) -> Vec<String> {
    let plan = plan(records, fates, limits, "/home/s/tool-results");
    let mut replaced = Vec::new();
    for (id, d) in plan.decisions {
        match d {
            Decision::Keep => {
                fates.insert(id, Fate::Kept);
            }
            Decision::Persist { replacement, .. } => {
                replaced.push(id.clone());
                fates.insert(id, Fate::Replaced(replacement));
            }
        }
    }
    replaced
}

fn shown(records: &[Record], fates: &BTreeMap<String, Fate>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let refs: Vec<&Record> = records.iter().collect();
    for r in apply(&refs, fates) {
        for b in &r.content {
            if let ContentBlock::ToolResult {
                tool_use_id,
                content,
                ..
            } = b
            {
                out.insert(tool_use_id.clone(), serde_json::to_string(content).unwrap());
            }
        }
    }
    out
}

/// Tools whose own thresholds are out of the way, so only the message budget acts.
fn wide_limits() -> ToolLimits {
    let overrides = ["A", "B", "C", "D"]
        .iter()
        .map(|t| (t.to_string(), 1_000_000))
        .collect();
    ToolLimits::new(&[], &overrides)
}

#[test]
fn worked_case_only_the_largest_is_replaced_and_stays_so() {
    let limits = wide_limits();
    let mut records = turn(
        "m1",
        &[("a", "A", 120_000), ("b", "B", 90_000), ("c", "C", 20_000)],
        1,
    );
    let mut fates = BTreeMap::new();
    assert_eq!(decide(&records, &mut fates, &limits), vec!["a".to_string()]);
    let first = shown(&records, &fates);
    assert!(first["a"].contains("<persisted-output>"));
    assert_eq!(first["b"].len(), 90_000 + 2);
    for i in 0..10 {
        records.extend(turn(
            &format!("m{}", i + 2),
            &[(&format!("d{i}"), "D", 10)],
            10 + 2 * i,
        ));
        assert!(decide(&records, &mut fates, &limits).is_empty());
        let now = shown(&records, &fates);
        for id in ["a", "b", "c"] {
            assert_eq!(now[id], first[id], "{id} changed");
        }
    }
}

#[test]
fn frozen_results_beat_the_budget() {
    let limits = wide_limits();
    // Two results seen whole earlier, then a large fresh one in the same message.
    let mut records = turn("m1", &[("a", "A", 150_000), ("b", "B", 40_000)], 1);
    let mut fates = BTreeMap::new();
    assert!(decide(&records, &mut fates, &limits).is_empty());
    let mut more = turn("m1", &[("c", "C", 30_000)], 3);
    records.append(&mut more);
    // 150k + 40k frozen + 30k fresh > 200k: only the fresh one may go.
    assert_eq!(decide(&records, &mut fates, &limits), vec!["c".to_string()]);
    assert_eq!(fates["a"], Fate::Kept);
    assert_eq!(fates["b"], Fate::Kept);
}

#[test]
fn frozen_alone_over_budget_is_left_alone() {
    let limits = wide_limits();
    let mut fates = BTreeMap::from([("a".to_string(), Fate::Kept), ("b".to_string(), Fate::Kept)]);
    let records = turn("m1", &[("a", "A", 150_000), ("b", "B", 100_000)], 1);
    assert!(decide(&records, &mut fates, &limits).is_empty());
    assert!(!shown(&records, &fates)["a"].contains("persisted"));
}

#[test]
fn per_tool_threshold_and_exemptions() {
    let tools = vec![tests::spec("Bash", Some(30_000)), tests::spec("Read", None)];
    let limits = ToolLimits::new(&tools, &BTreeMap::new());
    let records = turn(
        "m1",
        &[
            ("bash", "Bash", 30_001),
            ("small", "Bash", 30_000),
            ("read", "Read", 500_000),
            ("other", "Unregistered", 50_001),
        ],
        1,
    );
    let mut fates = BTreeMap::new();
    let replaced = decide(&records, &mut fates, &limits);
    assert_eq!(replaced, vec!["bash".to_string(), "other".to_string()]);
    assert_eq!(fates["read"], Fate::Kept);
    assert_eq!(shown(&records, &fates)["read"].len(), 500_000 + 2);
}

#[test]
fn images_are_never_candidates_and_empty_results_get_a_note() {
    let limits = wide_limits();
    let records = vec![
        rec(
            json!({"type": "assistant", "message_id": "m", "content": [
                {"type": "tool_use", "id": "img", "name": "A", "input": {}},
                {"type": "tool_use", "id": "big", "name": "B", "input": {}},
                {"type": "tool_use", "id": "empty", "name": "Bash", "input": {}}
            ]}),
            1,
        ),
        rec(
            json!({"type": "user", "content": [
                {"type": "tool_result", "tool_use_id": "img", "content": [
                    {"type": "text", "text": "y".repeat(150_000)},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}}
                ]},
                {"type": "tool_result", "tool_use_id": "big", "content": "z".repeat(100_000)},
                {"type": "tool_result", "tool_use_id": "empty", "content": ""}
            ]}),
            2,
        ),
    ];
    let mut fates = BTreeMap::new();
    // The image result is not counted, so 100k fits: nothing is persisted.
    assert!(decide(&records, &mut fates, &limits).is_empty());
    let s = shown(&records, &fates);
    assert!(s["img"].contains("iVBOR"));
    assert_eq!(s["empty"], "\"(Bash completed with no output)\"");
}

#[test]
fn block_array_results_persist_as_json() {
    let limits = ToolLimits::new(&[], &BTreeMap::new());
    let records = vec![
        rec(
            json!({"type": "assistant", "message_id": "m", "content": [{"type": "tool_use", "id": "t", "name": "X", "input": {}}]}),
            1,
        ),
        rec(
            json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "q".repeat(60_000)}]}]}),
            2,
        ),
    ];
    let p = plan(&records, &BTreeMap::new(), &limits, "/d");
    match &p.decisions[0].1 {
        Decision::Persist {
            file_name,
            content,
            replacement,
        } => {
            assert_eq!(file_name, "t.json");
            assert!(content.starts_with("[\n"));
            assert!(replacement.contains("Full output saved to: /d/t.json"));
        }
        other @ Decision::Keep => panic!("{other:?}"),
    }
}

/// Generates a session turn by turn, deciding fates after each turn (several compiles per
/// turn) and checks that a result once shown keeps its bytes; says whether anything was
/// persisted.
fn check_frozen_fates(g: &mut Choices) -> bool {
    let mut next = |n: usize| g.index(n);
    let tools = vec![
        tests::spec("Bash", Some(30_000)),
        tests::spec("Read", None),
        tests::spec("Grep", Some(20_000)),
    ];
    let names = ["Bash", "Read", "Grep", "Other"];
    let mut persisted_some = false;
    {
        let limits = ToolLimits::new(&tools, &BTreeMap::new());
        let mut records = Vec::new();
        let mut fates = BTreeMap::new();
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        let mut seq = 1;
        for t in 0..(3 + next(8)) {
            let k = 1 + next(5);
            let results: Vec<(String, &str, usize)> = (0..k)
                .map(|i| {
                    let size = match next(4) {
                        0 => next(100),
                        1 => next(40_000),
                        2 => 40_000 + next(80_000),
                        _ => next(5_000),
                    };
                    (format!("t{t}r{i}"), names[next(4)], size)
                })
                .collect();
            // Sometimes a response's results arrive over two user records (same message id).
            let msg = format!("m{t}");
            let refs: Vec<(&str, &str, usize)> = results
                .iter()
                .map(|(a, b, c)| (a.as_str(), *b, *c))
                .collect();
            if k > 1 && next(2) == 0 {
                records.extend(turn(&msg, &refs[..1], seq));
                records.extend(turn(&msg, &refs[1..], seq + 2));
                seq += 4;
            } else {
                records.extend(turn(&msg, &refs, seq));
                seq += 2;
            }
            // Several compiles per turn, as retries and side requests do.
            for _ in 0..=next(2) {
                persisted_some |= !decide(&records, &mut fates, &limits).is_empty();
                for (id, bytes) in shown(&records, &fates) {
                    if let Some(prev) = seen.get(&id) {
                        assert_eq!(prev, &bytes, "{id} changed after being shown");
                    }
                    seen.insert(id, bytes);
                }
                // Applied from any record on, the fates show that tail the same way.
                let refs: Vec<&Record> = records.iter().collect();
                let whole = apply(&refs, &fates);
                let from = next(refs.len() + 1);
                assert_eq!(apply_from(&refs, from, &fates), whole[from..]);
            }
        }
    }
    persisted_some
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 60, ..ProptestConfig::default() })]

    /// Once a compile has shown a tool result, every later compile shows the same bytes.
    #[test]
    fn property_shown_results_never_change(values in choices(600)) {
        check_frozen_fates(&mut Choices::new(values));
    }
}

/// The generator reaches persistence, or the property says nothing about it.
#[test]
fn the_session_generator_persists_results() {
    let persisted = samples(600, 60)
        .into_iter()
        .map(|mut g| check_frozen_fates(&mut g))
        .filter(|hit| *hit)
        .count();
    assert!(
        persisted > 10,
        "only {persisted} of 60 sessions persisted anything"
    );
}
