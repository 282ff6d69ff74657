//! Random sessions: folding never splits a pair or a response, and frozen spans stay put.

use super::*;
use crate::choices::{Choices, choices, samples};
use proptest::prelude::*;

// ---- property -----------------------------------------------------------------

/// A messy but plausible transcript: split responses, parallel calls, results spread
/// over records or sent with typed text, attachments, meta records, a call in flight.
fn random_view(g: &mut Choices) -> T {
    let mut t = T::default();
    let mut tool = 0;
    let turns = 1 + g.below(14);
    for turn in 0..turns {
        if g.chance(15) {
            t.push(
                "x",
                json!({"type": "attachment", "attachment": {"type": "date_change", "date": "2026-11-30"}}),
            );
        }
        t.user(&format!("turn {turn} {}", "w".repeat(g.index(400))));
        let steps = g.below(4);
        for step in 0..steps {
            let mid = format!("m{turn}-{step}");
            if g.chance(30) {
                t.push(
                    "a",
                    json!({"type": "assistant", "message_id": mid, "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}]}),
                );
            }
            let calls = 1 + g.below(3);
            let ids: Vec<String> = (0..calls)
                .map(|_| {
                    tool += 1;
                    format!("t{tool}")
                })
                .collect();
            for id in &ids {
                t.push(
                    "a",
                    json!({"type": "assistant", "message_id": mid, "content": [{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "ls"}}]}),
                );
            }
            let last_turn = turn + 1 == turns && step + 1 == steps;
            if last_turn && g.chance(30) {
                break; // in flight: no results yet
            }
            let together = g.chance(50);
            let with_text = g.chance(15);
            let result = |id: &str, g: &mut Choices| json!({"type": "tool_result", "tool_use_id": id, "content": "o".repeat(g.index(300)), "is_error": g.chance(10)});
            if together {
                let mut blocks: Vec<Value> = ids.iter().map(|id| result(id, g)).collect();
                if with_text {
                    blocks.push(json!({"type": "text", "text": "and also this"}));
                }
                t.push("r", json!({"type": "user", "content": blocks}));
            } else {
                for id in &ids {
                    let b = result(id, g);
                    t.push("r", json!({"type": "user", "content": [b]}));
                }
            }
            if g.chance(20) {
                t.push(
                    "x",
                    json!({"type": "user", "is_meta": true, "content": "<system-reminder>note</system-reminder>"}),
                );
            }
        }
        if g.chance(80) {
            t.reply(&format!("done {turn}"));
        }
    }
    t
}

/// Tool ids whose use has no result after it, or whose result has no use before it.
fn orphans<R: std::borrow::Borrow<Record>>(view: &[R]) -> Vec<String> {
    let mut seen_use: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    let mut answered: Vec<&str> = Vec::new();
    for r in view.iter().map(std::borrow::Borrow::borrow) {
        for b in &r.content {
            match b {
                ContentBlock::ToolUse { id, .. } => seen_use.push(id),
                ContentBlock::ToolResult { tool_use_id, .. } => {
                    if seen_use.contains(&tool_use_id.as_str()) {
                        answered.push(tool_use_id);
                    } else {
                        out.push(format!("result {tool_use_id}"));
                    }
                }
                _ => {}
            }
        }
    }
    for id in seen_use {
        if !answered.contains(&id) {
            out.push(format!("use {id}"));
        }
    }
    out.sort();
    out
}

/// Applies planned and arbitrary collapses to a generated transcript and checks what
/// the property promises; says whether anything was folded.
fn check_apply(g: &mut Choices) -> bool {
    let t = random_view(g);
    let v = t.view();
    let s = CollapseSettings {
        span_rounds: 1 + g.index(4),
        keep_recent_rounds: g.index(4),
        ..on()
    };
    let total = records_tokens(&v);
    let mut log: Vec<Collapse> = plan_stage(&v, &[], total, total.max(1), &s)
        .iter()
        .map(|p| {
            let summary = summarize_span(&p.records);
            let mut c = p.to_collapse(summary);
            if g.chance(80) {
                c.status = CollapseStatus::Committed;
            }
            c
        })
        .collect();
    // Arbitrary ranges too: apply must refuse the ones that would split a pair.
    for k in 0..g.below(4) {
        let a = g.index(v.len());
        let b = a + g.index(v.len() - a);
        log.push(Collapse {
            id: format!("r{k}"),
            first_uuid: v[a].uuid.clone(),
            last_uuid: v[b].uuid.clone(),
            record_count: b - a + 1,
            tokens: 0,
            summary: "random".into(),
            status: CollapseStatus::Committed,
        });
    }
    let out = apply(&v, &log);
    assert_eq!(out, apply(&v, &log), "not deterministic");
    let before = orphans(&v);
    let after = orphans(&out);
    assert!(
        after.iter().all(|o| before.contains(o)),
        "{after:?} vs {before:?}"
    );
    // Records of one response are never separated by a collapse record.
    for (i, r) in out.iter().enumerate() {
        let Some(m) = &r.message_id else { continue };
        let last = out
            .iter()
            .rposition(|x| x.message_id.as_ref() == Some(m))
            .unwrap();
        assert!(
            out[i..=last]
                .iter()
                .all(|x| !x.uuid.starts_with("collapse-")),
            "response {m} split"
        );
    }
    // Planned spans: whole rounds, clean, outside the recent rounds.
    let rounds = api_rounds(&v);
    let recent_start = rounds
        .get(rounds.len().saturating_sub(s.keep_recent_rounds.max(1)))
        .map_or(v.len(), |r| r.start);
    let clean = clean_cuts(&v);
    for c in log.iter().filter(|c| !c.id.starts_with('r')) {
        let a = index_of(&v, &c.first_uuid);
        let b = index_of(&v, &c.last_uuid);
        assert!(b < recent_start);
        assert!(clean[a] && clean[b + 1]);
        assert!(rounds.iter().any(|r| r.start == a));
        assert!(rounds.iter().any(|r| r.end == b + 1));
    }
    out.len() < v.len()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Collapses never orphan a tool pair nor split a response; planned spans are whole,
    /// clean rounds outside the recent ones; the result is deterministic.
    #[test]
    fn property_apply_never_orphans_a_tool_pair(values in choices(1000)) {
        check_apply(&mut Choices::new(values));
    }
}

/// The generator makes transcripts that collapse, or the property is vacuous.
#[test]
fn the_transcript_generator_makes_collapsible_sessions() {
    let folded = samples(1000, 400)
        .into_iter()
        .map(|mut g| check_apply(&mut g))
        .filter(|hit| *hit)
        .count();
    assert!(folded > 100, "only {folded} of 400 cases folded anything");
}
