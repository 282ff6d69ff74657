//! Committed spans folded into the view, at clean cuts only.

use super::*;

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
