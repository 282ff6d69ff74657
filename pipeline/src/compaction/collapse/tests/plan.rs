//! Which spans are staged, and when staged spans are committed.

use super::*;

// ---- plan_stage ---------------------------------------------------------------

#[test]
fn below_the_stage_level_or_disabled_nothing_is_staged() {
    let t = rounds(20);
    let v = t.view();
    assert!(plan_stage(&v, &[], 79_999, 100_000, &on()).is_empty());
    let off = CollapseSettings::default();
    assert!(plan_stage(&v, &[], 99_000, 100_000, &off).is_empty());
    assert!(plan_stage(&v, &[], 99_000, 0, &on()).is_empty());
    assert!(!plan_stage(&v, &[], 80_000, 100_000, &on()).is_empty());
}

#[test]
fn oldest_whole_rounds_until_the_target() {
    let t = rounds(20);
    let v = t.view();
    let starts = round_starts(&v);
    // One span of 4 rounds is ~1,400 tokens and saves ~1,260.
    let one = plan_stage(&v, &[], 10_000, 12_000, &on());
    let per_span = one[0].tokens;
    assert!(per_span > 1_300 && per_span < 1_500, "{per_span}");
    // 80% of 12,000 = 9,600 stages; target 70% = 8,400: 10,000 needs two spans.
    assert_eq!(one.len(), 2);
    assert_eq!(one[0].first_uuid, v[starts[0]].uuid);
    assert_eq!(one[0].last_uuid, v[starts[4] - 1].uuid);
    assert_eq!(one[1].first_uuid, v[starts[4]].uuid);
    assert_eq!(one[1].records.len(), 16);
    // A huge estimate takes every full span but never the last four rounds.
    let all = plan_stage(&v, &[], 1_000_000, 1_000_000, &on());
    assert_eq!(all.len(), 4);
    let last = index_of(&v, &all[3].last_uuid);
    assert_eq!(last + 1, starts[16]);
    for p in &all {
        let s = index_of(&v, &p.first_uuid);
        let e = index_of(&v, &p.last_uuid);
        assert!(starts.contains(&s) && starts.contains(&(e + 1)));
        assert_eq!(p.records.len(), e - s + 1);
    }
}

#[test]
fn staged_savings_count_before_new_spans() {
    let t = rounds(20);
    let v = t.view();
    let first = plan_stage(&v, &[], 10_000, 12_000, &on());
    let staged: Vec<Collapse> = first.iter().map(|p| p.to_collapse("s".into())).collect();
    // What is staged already reaches the target: nothing more.
    assert!(plan_stage(&v, &staged, 10_000, 12_000, &on()).is_empty());
    // More pressure: the next span starts after the staged ones.
    let more = plan_stage(&v, &staged, 11_500, 12_000, &on());
    assert_eq!(more.len(), 1);
    assert_eq!(more[0].first_uuid, v[round_starts(&v)[8]].uuid);
}

#[test]
fn existing_collapses_of_any_status_are_never_crossed() {
    let t = rounds(20);
    let v = t.view();
    let starts = round_starts(&v);
    // Undone covering rounds 2..=5, committed covering 9..=9.
    let undone = Collapse {
        id: "u".into(),
        first_uuid: v[starts[2]].uuid.clone(),
        last_uuid: v[starts[6] - 1].uuid.clone(),
        record_count: 16,
        tokens: 1,
        summary: String::new(),
        status: CollapseStatus::Undone,
    };
    let done = Collapse {
        id: "c".into(),
        first_uuid: v[starts[9]].uuid.clone(),
        last_uuid: v[starts[10] - 1].uuid.clone(),
        status: CollapseStatus::Committed,
        ..undone.clone()
    };
    let plans = plan_stage(&v, &[undone, done], 1_000_000, 1_000_000, &on());
    let spans: Vec<(usize, usize)> = plans
        .iter()
        .map(|p| (index_of(&v, &p.first_uuid), index_of(&v, &p.last_uuid)))
        .collect();
    // Rounds 0-1 (short: an undone collapse follows), 6-8 (short: a committed one
    // follows), 10-13 (full), then rounds 14-15 (young) because the target is far.
    assert_eq!(
        spans,
        vec![
            (starts[0], starts[2] - 1),
            (starts[6], starts[9] - 1),
            (starts[10], starts[14] - 1),
            (starts[14], starts[16] - 1),
        ]
    );
}

#[test]
fn a_young_short_span_waits_unless_needed() {
    let t = rounds(10); // rounds 0-5 eligible: one full span and a young pair
    let v = t.view();
    let plans = plan_stage(&v, &[], 8_000, 10_000, &on());
    assert_eq!(plans.len(), 1);
    let plans = plan_stage(&v, &[], 1_000_000, 1_000_000, &on());
    assert_eq!(plans.len(), 2);
    assert_eq!(plans[1].records.len(), 8);
}

#[test]
fn pairs_and_responses_are_never_split() {
    let mut t = T::default();
    for i in 0..12 {
        t.user(&format!("q{i} {}", "y".repeat(800)));
        if i == 3 {
            // A result sent together with typed text starts a round while its
            // tool_use sits in the previous one: rounds 3 and 4 are joined.
            t.push(
                "a",
                json!({"type": "assistant", "message_id": "m-x", "content": [{"type": "tool_use", "id": "tx", "name": "Bash", "input": {}}]}),
            );
            t.push(
                "u",
                json!({"type": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "tx", "content": "interrupted"},
                    {"type": "text", "text": "stop, do this instead"}]}),
            );
        }
        if i == 6 {
            // One response split over records with a typed message between them
            // (a client's odd order): rounds 6 and 7 are joined.
            t.push(
                "a",
                json!({"type": "assistant", "message_id": "m-s", "content": "part one"}),
            );
            t.user("between");
            t.push(
                "a",
                json!({"type": "assistant", "message_id": "m-s", "content": "part two"}),
            );
        }
        t.reply("ok");
    }
    let v = t.view();
    let clean = clean_cuts(&v);
    let s = CollapseSettings {
        span_rounds: 1,
        keep_recent_rounds: 1,
        ..on()
    };
    let plans = plan_stage(&v, &[], 1_000_000, 1_000_000, &s);
    assert!(!plans.is_empty());
    let starts = round_starts(&v);
    for p in &plans {
        let a = index_of(&v, &p.first_uuid);
        let b = index_of(&v, &p.last_uuid);
        assert!(clean[a] && clean[b + 1], "{a}..={b}");
        assert!(starts.contains(&a));
    }
    let ids: Vec<&str> = plans
        .iter()
        .flat_map(|p| p.records.iter())
        .flat_map(|r| r.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert!(ids.contains(&"tx"));
    let joined = plans
        .iter()
        .find(|p| {
            p.records
                .iter()
                .any(|r| r.message_id.as_deref() == Some("m-s"))
        })
        .unwrap();
    let parts = joined
        .records
        .iter()
        .filter(|r| r.message_id.as_deref() == Some("m-s"))
        .count();
    assert_eq!(parts, 2);
}

#[test]
fn compaction_records_are_never_folded() {
    let mut t = T::default();
    t.push(
        "b",
        json!({"type": "system", "subtype": "compact_boundary", "data": {}}),
    );
    t.push(
        "s",
        json!({"type": "user", "is_compact_summary": true, "content": "z".repeat(4000)}),
    );
    for i in 0..10 {
        t.user(&format!("q{i} {}", "y".repeat(2000))).reply("ok");
    }
    let v = t.view();
    let plans = plan_stage(&v, &[], 1_000_000, 1_000_000, &on());
    assert!(!plans.is_empty());
    for p in &plans {
        assert!(p.records.iter().all(|r| !is_compaction_record(r)));
    }
}

// ---- to_commit / stands aside -----------------------------------------------

fn staged(id: &str, tokens: u64) -> Collapse {
    Collapse {
        id: id.into(),
        first_uuid: format!("{id}-first"),
        last_uuid: format!("{id}-last"),
        record_count: 10,
        tokens,
        summary: "short".into(),
        status: CollapseStatus::Staged,
    }
}

#[test]
fn commit_at_the_commit_level_until_the_target() {
    let s = on();
    let mut log = vec![
        staged("a", 11_000),
        staged("b", 11_000),
        staged("c", 11_000),
    ];
    log.insert(
        0,
        Collapse {
            status: CollapseStatus::Committed,
            ..staged("z", 10_000)
        },
    );
    // Below 90%: nothing, however much is staged.
    assert!(to_commit(&log, 89_999, 100_000, &s, false).is_empty());
    // Each saves ~10,940: 92,000 → a → ~81,060 → b → ~70,110 → c; 90,000 stops after b.
    assert_eq!(
        to_commit(&log, 92_000, 100_000, &s, false),
        vec!["a", "b", "c"]
    );
    assert_eq!(to_commit(&log, 90_000, 100_000, &s, false), vec!["a", "b"]);
    // Drain ignores the estimate.
    assert_eq!(to_commit(&log, 10, 100_000, &s, true), vec!["a", "b", "c"]);
    assert_eq!(to_commit(&log, 10, 0, &s, true), vec!["a", "b", "c"]);
    assert!(to_commit(&log, 99_000, 100_000, &CollapseSettings::default(), true).is_empty());
    assert!(to_commit(&log, 99_000, 0, &s, false).is_empty());
}

#[test]
fn autocompact_stands_aside_only_while_collapse_is_active() {
    let s = on();
    let none: Vec<Collapse> = Vec::new();
    let one = vec![Collapse {
        status: CollapseStatus::Committed,
        ..staged("a", 1_000)
    }];
    // Disabled: never.
    let off = CollapseSettings::default();
    assert!(!autocompact_stands_aside(&one, 85_000, 100_000, &off));
    // Enabled but inactive (nothing committed, below the stage level).
    assert!(!autocompact_stands_aside(&none, 50_000, 100_000, &s));
    // Active: at the stage level, or something committed.
    assert!(autocompact_stands_aside(&none, 80_000, 100_000, &s));
    assert!(autocompact_stands_aside(&one, 50_000, 100_000, &s));
    assert!(autocompact_stands_aside(&one, 94_999, 100_000, &s));
    // At the block level autocompact takes over.
    assert!(!autocompact_stands_aside(&one, 95_000, 100_000, &s));
    assert!(!autocompact_stands_aside(&none, 99_000, 100_000, &s));
}
