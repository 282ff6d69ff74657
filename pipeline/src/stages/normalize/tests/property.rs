//! Random transcripts: whatever the records, the messages are legal.

use proptest::prelude::*;

use super::*;
use crate::choices::{Choices, choices, samples};

/// Results mostly answer a recent call, so pairing is exercised, not just repaired.
fn random_id(g: &mut Choices, recent: &[String]) -> String {
    match recent.len() {
        n if n > 0 && g.chance(75) => recent[g.index(n)].clone(),
        _ => format!("t{}", g.below(12)),
    }
}

fn random_block(g: &mut Choices, for_user: bool, recent: &[String]) -> ContentBlock {
    let id = if for_user {
        random_id(g, recent)
    } else {
        format!("t{}", g.below(12))
    };
    match g.below(10) {
        0 => text(""),
        1 => text(&reminder("r")),
        2 => image(),
        3 => think("th"),
        4 => ContentBlock::RedactedThinking {
            extra: Default::default(),
            data: "d".into(),
        },
        5 if for_user => ContentBlock::ToolResult {
            extra: Default::default(),
            tool_use_id: id,
            content: ToolResultContent::Blocks(vec![
                ToolResultBlock::Text {
                    extra: Default::default(),
                    text: if g.chance(30) {
                        " ".into()
                    } else {
                        "out".into()
                    },
                },
                ToolResultBlock::Image {
                    extra: Default::default(),
                    source: source(),
                },
            ]),
            is_error: g.chance(20),
            cache_control: Some(CacheControl::ephemeral()),
            cache_reference: None,
        },
        5 | 6 if for_user => tr(&id, if g.chance(20) { "" } else { "out" }),
        5..=7 => tu(&id),
        _ => text("words"),
    }
}

fn random_records(g: &mut Choices) -> (Vec<Record>, BTreeSet<(String, u32)>) {
    let n = g.index(14);
    let mut records = Vec::with_capacity(n);
    let mut rejected = BTreeSet::new();
    let mut recent: Vec<String> = Vec::new();
    for i in 0..n {
        let uuid = format!("r{i}");
        let mut r = match g.below(9) {
            0 => {
                let mut s = rec(RecordKind::System, &uuid, vec![]);
                s.subtype = Some("informational".into());
                s
            }
            1 => att(
                &uuid,
                match g.below(3) {
                    0 => json!({"type": "date_change", "date": "2025-01-02"}),
                    1 => json!({"type": "x", "hidden": true}),
                    _ => json!({"type": "x", "k": g.below(3)}),
                },
            ),
            2 | 3 => {
                let k = 1 + g.index(3);
                let blocks = (0..k).map(|_| random_block(g, true, &recent)).collect();
                user(&uuid, blocks)
            }
            4 => {
                let id = random_id(g, &recent);
                user(&uuid, vec![tr(&id, "res")])
            }
            _ => {
                let k = 1 + g.index(3);
                let blocks = (0..k).map(|_| random_block(g, false, &recent)).collect();
                let mut r = asst(&uuid, &format!("m{}", g.below(3)), blocks);
                if g.chance(15) {
                    r.message_id = None;
                }
                r
            }
        };
        r.is_virtual = g.chance(5);
        r.is_sidechain = g.chance(5);
        r.is_meta = r.is_meta || g.chance(10);
        for (bi, _) in r.content.iter().enumerate() {
            if g.chance(20) {
                rejected.insert((uuid.clone(), u32::try_from(bi).unwrap()));
            }
        }
        if r.kind == RecordKind::Assistant {
            recent.extend(tool_use_ids(&r.content).into_iter().map(str::to_string));
            let keep = recent.len().saturating_sub(4);
            recent.drain(..keep);
        }
        records.push(r);
    }
    (records, rejected)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Whatever the transcript, normalisation gives legal messages (checked by `run_with`),
    /// deterministically.
    #[test]
    fn random_transcripts_always_normalise_to_legal_messages(
        values in choices(400),
        thinking: bool,
        short: bool,
    ) {
        let (records, rejected) = random_records(&mut Choices::new(values));
        let first = run_with(&records, thinking, short, &rejected);
        let second = run_with(&records, thinking, short, &rejected);
        prop_assert_eq!(first, second);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// What the transcript knows of each record (`RecordFacts`: it passes whole, an
    /// attachment's rendered reminder) spares normalising a look at its blocks and a
    /// rendering, and the messages and repairs are those of looking: with media refused
    /// or not, thinking supported or not, short ids or not.
    #[test]
    fn records_known_whole_normalise_as_when_looked_at(
        values in choices(400),
        thinking: bool,
        short: bool,
        refuse: bool,
    ) {
        let (records, mut rejected) = random_records(&mut Choices::new(values));
        if !refuse {
            rejected.clear();
        }
        let facts: Vec<RecordFacts> = records.iter().map(RecordFacts::of).collect();
        let opts = |transcript| NormalizeOptions {
            supports_thinking: thinking,
            rejected_media: &rejected,
            short_ids: short,
            transcript,
        };
        let looked = normalize(&records, &opts(None));
        let known = normalize(
            &records,
            &opts(Some(TranscriptRef {
                lineage: crate::message::Lineage::fresh(),
                records: &records,
                facts: &facts,
            })),
        );
        prop_assert_eq!(&known.repairs, &looked.repairs);
        prop_assert_eq!(known.into_owned_messages(), looked.into_owned_messages());
    }
}

/// Records that pass whole, and each thing that keeps one from it.
#[test]
fn a_record_passes_whole_unless_a_block_needs_a_look() {
    assert!(passes_whole(&user("u", vec![text("hi"), tr("t1", "out")])));
    assert!(passes_whole(&asst("a", "m", vec![text("ok"), tu("t1")])));
    assert!(passes_whole(&user("u", vec![image()])));
    let blank_inner = tr_blocks(
        "t1",
        vec![ToolResultBlock::Text {
            extra: Default::default(),
            text: " ".into(),
        }],
    );
    for looked_at in [
        user("u", vec![text("hi"), marked("hi")]),
        user("u", vec![text(" \n ")]),
        user("u", vec![blank_inner]),
        asst("a", "m", vec![think("plan"), text("ok")]),
        asst("a", "m", vec![tr("t1", "out")]),
        note("n", "a note"),
    ] {
        assert!(!passes_whole(&looked_at), "{looked_at:?}");
    }
    let mut aside = user("u", vec![text("hi")]);
    aside.is_sidechain = true;
    assert!(!passes_whole(&aside));
}

/// The generator keeps reaching the interesting paths, or the property is vacuous.
#[test]
fn the_transcript_generator_reaches_pairing_synthesis_orphans_and_folding() {
    let (mut paired, mut synthesised, mut orphans, mut folded) = (0, 0, 0, 0);
    for (round, mut g) in samples(400, 800).into_iter().enumerate() {
        let (records, rejected) = random_records(&mut g);
        let first = run_with(&records, round % 2 == 0, round % 3 == 0, &rejected);
        let has = |p: &str| first.repairs.iter().any(|r| r.starts_with(p));
        synthesised += usize::from(has("synthesised"));
        orphans += usize::from(has("dropped orphan"));
        let blocks = || first.messages.iter().flat_map(|m| &m.content);
        paired += blocks()
            .filter(|b| {
                matches!(
                    b,
                    ContentBlock::ToolResult {
                        is_error: false,
                        ..
                    }
                )
            })
            .count();
        folded += blocks()
            .filter(|b| matches!(b, ContentBlock::ToolResult { content: ToolResultContent::Blocks(v), .. }
                if v.iter().any(|t| matches!(t, ToolResultBlock::Text { text , .. } if text.starts_with(REMINDER_OPEN)))))
            .count();
    }
    assert!(
        paired > 150 && synthesised > 150 && orphans > 150 && folded > 60,
        "paired {paired}, synthesised {synthesised}, orphans {orphans}, folded {folded}"
    );
}
