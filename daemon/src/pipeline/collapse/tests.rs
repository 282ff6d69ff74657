use super::*;
use crate::pipeline::choices::{Choices, choices, samples};
use proptest::prelude::*;
use serde_json::{Value, json};

fn rec(uuid: &str, seq: u64, v: Value) -> Record {
    let mut v = v;
    // Stored records carry blocks; tests write plain strings for brevity.
    if let Some(text) = v["content"].as_str() {
        v["content"] = json!([{"type": "text", "text": text}]);
    }
    v["uuid"] = json!(uuid);
    v["seq"] = json!(seq);
    v["timestamp"] = json!(format!("2026-11-29T10:{:02}:00Z", seq % 60));
    serde_json::from_value(v).unwrap()
}

/// A transcript builder: seq and uuids are assigned in order.
#[derive(Default)]
struct T {
    records: Vec<Record>,
}

impl T {
    fn push(&mut self, prefix: &str, v: Value) -> &mut Self {
        let seq = self.records.len() as u64 + 1;
        self.records.push(rec(&format!("{prefix}{seq}"), seq, v));
        self
    }
    fn user(&mut self, text: &str) -> &mut Self {
        self.push("u", json!({"type": "user", "content": text}))
    }
    fn tool(&mut self, id: &str, name: &str, input: Value, result: &str) -> &mut Self {
        self.push(
            "a",
            json!({"type": "assistant", "message_id": format!("m-{id}"),
                   "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}),
        );
        self.push(
            "r",
            json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": result}]}),
        )
    }
    fn reply(&mut self, text: &str) -> &mut Self {
        self.push("a", json!({"type": "assistant", "content": text}))
    }
    fn view(&self) -> Vec<&Record> {
        self.records.iter().collect()
    }
}

/// `n` rounds of: prompt, one Read with a ~1,000-character result, a reply.
fn rounds(n: usize) -> T {
    let mut t = T::default();
    for i in 0..n {
        t.user(&format!("question {i}"))
            .tool(
                &format!("t{i}"),
                "Read",
                json!({"file_path": format!("/src/f{i}.rs")}),
                &"x".repeat(1000),
            )
            .reply(&format!("answer {i}"));
    }
    t
}

fn on() -> CollapseSettings {
    CollapseSettings {
        enabled: true,
        ..CollapseSettings::default()
    }
}

fn round_starts(view: &[&Record]) -> Vec<usize> {
    api_rounds(view).iter().map(|r| r.start).collect()
}

fn index_of(view: &[&Record], uuid: &str) -> usize {
    view.iter().position(|r| r.uuid == uuid).unwrap()
}

fn committed(plan: &SpanPlan<'_>, summary: &str) -> Collapse {
    Collapse {
        status: CollapseStatus::Committed,
        ..plan.to_collapse(summary.into())
    }
}

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

// ---- apply --------------------------------------------------------------------

#[test]
fn a_committed_span_becomes_one_record() {
    let t = rounds(12);
    let v = t.view();
    let plans = plan_stage(&v, &[], 1_000_000, 1_000_000, &on());
    let c = committed(&plans[0], "Did things.");
    let out = apply(&v, std::slice::from_ref(&c));
    assert_eq!(out.len(), v.len() - plans[0].records.len() + 1);
    let first = &out[0];
    assert!(matches!(first, Shown::Changed(_)));
    assert_eq!(first.uuid, format!("collapse-{}", c.id));
    assert_eq!(first.seq, v[0].seq);
    assert_eq!(first.timestamp, v[0].timestamp);
    assert_eq!(first.kind, RecordKind::User);
    assert!(first.is_meta);
    assert_eq!(first.content.len(), 1);
    let ContentBlock::Text { text, .. } = &first.content[0] else {
        panic!("text")
    };
    assert_eq!(text, &render(&c));
    assert!(text.starts_with(&format!("<collapsed id=\"{}\" messages=\"16\">", c.id)));
    assert!(text.ends_with("Did things.\n</collapsed>"));
    // The rest is borrowed, the very same records.
    for (o, r) in out[1..].iter().zip(&v[16..]) {
        assert!(matches!(o, Shown::Kept(_)));
        assert!(std::ptr::eq(o.as_ref(), *r));
    }
    // Deterministic.
    assert_eq!(out, apply(&v, std::slice::from_ref(&c)));
}

#[test]
fn staged_undone_and_missing_spans_are_not_applied() {
    let t = rounds(12);
    let v = t.view();
    let plans = plan_stage(&v, &[], 1_000_000, 1_000_000, &on());
    let c = committed(&plans[1], "s");
    let raw =
        |out: &[Shown<'_>]| out.len() == v.len() && out.iter().all(|o| matches!(o, Shown::Kept(_)));
    let staged = plans[1].to_collapse("s".into());
    assert!(raw(&apply(&v, &[staged])));
    let undone = Collapse {
        status: CollapseStatus::Undone,
        ..c.clone()
    };
    assert!(raw(&apply(&v, &[undone])));
    // First record snipped (or compacted) away: the whole collapse is ignored.
    let without: Vec<&Record> = v
        .iter()
        .copied()
        .filter(|r| r.uuid != c.first_uuid)
        .collect();
    let out = apply(&without, std::slice::from_ref(&c));
    assert_eq!(out.len(), without.len());
    // Ends reversed: ignored too.
    let reversed = Collapse {
        first_uuid: c.last_uuid.clone(),
        last_uuid: c.first_uuid.clone(),
        ..c.clone()
    };
    assert!(raw(&apply(&v, &[reversed])));
    // Both applied, in view order, whatever the log order.
    let c0 = committed(&plans[0], "s0");
    let out = apply(&v, &[c.clone(), c0.clone()]);
    assert_eq!(out.len(), v.len() - 32 + 2);
    assert_eq!(out[0].uuid, format!("collapse-{}", c0.id));
    assert_eq!(out[1].uuid, format!("collapse-{}", c.id));
}

#[test]
fn a_span_that_would_split_a_pair_is_not_applied() {
    let t = rounds(6);
    let v = t.view();
    // Ends on the tool_use, before its result.
    let c = Collapse {
        id: "bad".into(),
        first_uuid: v[0].uuid.clone(),
        last_uuid: v[1].uuid.clone(),
        record_count: 2,
        tokens: 10,
        summary: String::new(),
        status: CollapseStatus::Committed,
    };
    assert_eq!(apply(&v, &[c]).len(), v.len());
}

#[test]
fn overlapping_commits_resolve_to_the_outer_first() {
    let t = rounds(12);
    let v = t.view();
    let starts = round_starts(&v);
    let mk = |id: &str, a: usize, b: usize| Collapse {
        id: id.into(),
        first_uuid: v[starts[a]].uuid.clone(),
        last_uuid: v[starts[b] - 1].uuid.clone(),
        record_count: 1,
        tokens: 1,
        summary: String::new(),
        status: CollapseStatus::Committed,
    };
    let out = apply(
        &v,
        &[mk("inner", 1, 2), mk("outer", 0, 3), mk("late", 2, 5)],
    );
    assert_eq!(out[0].uuid, "collapse-outer");
    assert_eq!(out.len(), v.len() - starts[3] + 1);
}

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

// ---- summaries ----------------------------------------------------------------

fn realistic() -> T {
    let mut t = T::default();
    t.user("The parser test fails on empty input.\nHere is the log: ...")
        .tool(
            "t1",
            "Read",
            json!({"file_path": "/repo/src/parser.rs"}),
            &"fn parse() {}\n".repeat(300),
        )
        .tool(
            "t2",
            "Bash",
            json!({"command": "cargo test parser"}),
            &"test output\n".repeat(200),
        );
    t.push(
        "a",
        json!({"type": "assistant", "message_id": "m-e", "content": [{"type": "tool_use", "id": "t3", "name": "Edit", "input": {"file_path": "/repo/src/parser.rs", "old_string": "a", "new_string": "b"}}]}),
    );
    t.push(
        "r",
        json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": "t3", "is_error": true,
               "content": "<tool_use_error>String to replace not found in file.</tool_use_error>"}]}),
    );
    t.tool(
        "t4",
        "Edit",
        json!({"file_path": "/repo/src/parser.rs", "old_string": "fn parse() {}", "new_string": "fn parse() { todo!() }"}),
        "ok",
    )
    .tool(
        "t5",
        "Bash",
        json!({"command": "cargo test parser"}),
        &"test result: ok\n".repeat(40),
    );
    t.push(
        "x",
        json!({"type": "attachment", "attachment": {"type": "date_change", "date": "2026-11-30"}}),
    );
    t.reply("The empty-input case now returns an empty AST.\n\nAll parser tests pass.")
        .user("Good. Also run clippy on the crate.")
        .tool(
            "t6",
            "Bash",
            json!({"command": "cargo clippy"}),
            &"warning: unused\n".repeat(50),
        )
        .tool(
            "t7",
            "Write",
            json!({"file_path": "/repo/src/lib.rs", "content": "pub mod parser;"}),
            "ok",
        )
        .reply("Clippy is clean after removing the unused import in lib.rs.");
    t
}

#[test]
fn summary_snapshot() {
    let t = realistic();
    let v = t.view();
    let text = summarize_span(&v);
    insta::assert_snapshot!("summary", text);
    let c = Collapse {
        id: span_id(&v[0].uuid, &v[v.len() - 1].uuid),
        first_uuid: v[0].uuid.clone(),
        last_uuid: v[v.len() - 1].uuid.clone(),
        record_count: v.len(),
        tokens: records_tokens(&v),
        summary: text,
        status: CollapseStatus::Committed,
    };
    insta::assert_snapshot!("collapsed_record", render(&c));
}

#[test]
fn summary_is_deterministic_and_within_its_cap() {
    let t = realistic();
    let v = t.view();
    assert_eq!(summarize_span(&v), summarize_span(&v));
    // A huge span: many users, files, tools and errors; the cap is 600 tokens.
    let mut t = T::default();
    for i in 0..200 {
        t.user(&format!("request number {i}: {}", "please ".repeat(40)));
        t.tool(
            &format!("r{i}"),
            &match i % 3 {
                0 => "Read".to_string(),
                1 => "Edit".to_string(),
                _ => format!("mcp__server__tool{}", i % 20),
            },
            json!({"file_path": format!("/very/long/path/number/{i}/{}.rs", "n".repeat(60))}),
            &"z".repeat(4000),
        );
        t.reply(&"conclusion ".repeat(60));
    }
    let v = t.view();
    let text = summarize_span(&v);
    assert!(
        text_tokens(&text) <= MAX_SUMMARY_TOKENS,
        "{}",
        text_tokens(&text)
    );
    assert!(text.contains("User messages (200):"));
    insta::assert_snapshot!("summary_capped", text);
    // Small spans: a tenth of their tokens, at least 50.
    for n in 1..6 {
        let t = rounds(n);
        let v = t.view();
        let cap = summary_cap(records_tokens(&v));
        let text = summarize_span(&v);
        assert!(
            text_tokens(&text) <= cap,
            "{n}: {} > {cap}",
            text_tokens(&text)
        );
        assert!(cap <= (records_tokens(&v) / 10).max(MIN_SUMMARY_TOKENS));
    }
    let tiny = rec("t", 1, json!({"type": "user", "content": "hi"}));
    let text = summarize_span(&[&tiny]);
    assert_eq!(text, "User messages (1):\n- hi");
}

#[test]
fn settings_from_the_session_config() {
    let cfg: CollapseConfig = serde_json::from_value(json!({"enabled": true})).unwrap();
    let s = CollapseSettings::from(&cfg);
    assert_eq!(
        s,
        CollapseSettings {
            enabled: true,
            ..CollapseSettings::default()
        }
    );
    assert_eq!(span_id("a", "b"), span_id("a", "b"));
    assert_ne!(span_id("a", "b"), span_id("a", "c"));
}
