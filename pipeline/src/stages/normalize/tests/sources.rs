//! Where the blocks passed on unchanged are in the transcript.

use super::*;
use crate::message::{Lineage, Source};

fn sources(records: &[&Record], transcript: Option<TranscriptRef<'_>>) -> Vec<Vec<Option<Source>>> {
    sources_shown(records, transcript, false)
}

/// The sources of the blocks of each message, with short ids shown or not.
fn sources_shown(
    records: &[&Record],
    transcript: Option<TranscriptRef<'_>>,
    short_ids: bool,
) -> Vec<Vec<Option<Source>>> {
    normalize(
        records,
        &NormalizeOptions {
            supports_thinking: true,
            rejected_media: &BTreeSet::new(),
            short_ids,
            transcript,
        },
    )
    .messages
    .iter()
    .map(|m| m.content.iter().map(Block::source).collect())
    .collect()
}

/// The sources of `view` normalised as a transcript of a fresh lineage, and the lineage.
fn sources_in(
    view: &[&Record],
    transcript: &[Record],
    facts: &[RecordFacts],
) -> (Lineage, Vec<Vec<Option<Source>>>) {
    let lineage = Lineage::fresh();
    let got = sources(
        view,
        Some(TranscriptRef {
            lineage,
            records: transcript,
            facts,
        }),
    );
    (lineage, got)
}

fn at(lineage: Lineage, record: u32, block: u32) -> Option<Source> {
    Some(Source {
        lineage,
        record,
        block,
    })
}

/// A block passed on unchanged from a record of the transcript names its record's
/// position and its own index there; a block a stage made or changed (a cache marker
/// taken off, a result with a reminder folded in, an attachment's reminder rendered now)
/// and every block of a record that is a stage's copy name nothing, nor does anything
/// when the records are not a transcript's.
#[test]
fn unchanged_blocks_of_the_transcript_name_where_they_are() {
    let transcript = vec![
        user("u1", vec![text("read it")]),
        asst("a1", "m1", vec![think("plan"), text("reading"), tu("t1")]),
        user("u2", vec![tr("t1", "contents")]),
        note("n1", "a file changed"),
        user("u3", vec![text("thanks"), marked("marked")]),
        asst("a2", "m2", vec![text("done")]),
    ];
    // A stage's copy of the last record, in place of the transcript's own.
    let copy = transcript[5].clone();
    let view: Vec<&Record> = transcript[..5].iter().chain([&copy]).collect();
    let (lineage, got) = sources_in(&view, &transcript, &[]);
    let at = |record, block| at(lineage, record, block);
    assert_eq!(
        got,
        vec![
            vec![at(0, 0)],
            vec![at(1, 0), at(1, 1), at(1, 2)],
            // The result with the note's reminder folded in, then the next prompt.
            vec![None, at(4, 0), None],
            vec![None],
        ]
    );
    let none = sources(&view, None);
    assert!(none.iter().flatten().all(Option::is_none), "{none:?}");
}

/// With what the transcript knows of its records, an attachment's reminder is the one it
/// rendered when it took the record in, named past the record's own blocks; a record
/// known whole names its blocks as one looked at does.
#[test]
fn a_known_reminder_names_its_attachment() {
    let transcript = vec![
        user("u1", vec![text("read it")]),
        asst("a1", "m1", vec![text("reading")]),
        note("n1", "a file changed"),
        note("n2", "another file changed"),
    ];
    let view: Vec<&Record> = transcript.iter().collect();
    let facts: Vec<RecordFacts> = transcript.iter().map(RecordFacts::of).collect();
    let (lineage, got) = sources_in(&view, &transcript, &facts);
    let at = |record, block| at(lineage, record, block);
    assert_eq!(
        got,
        vec![
            vec![at(0, 0)],
            vec![at(1, 0)],
            vec![at(2, u32::MAX), at(3, u32::MAX)],
        ]
    );
}

/// With short ids shown, a typed message known whole names the block that carries its
/// id past its own blocks (below a reminder's): the text it was added to, or a block of
/// its own after them. Its other blocks name themselves as before.
#[test]
fn a_known_short_id_names_its_message() {
    let transcript = vec![
        user("u1", vec![text("read it"), image()]),
        asst("a1", "m1", vec![text("reading")]),
        user("u2", vec![image()]),
    ];
    let view: Vec<&Record> = transcript.iter().collect();
    let facts: Vec<RecordFacts> = transcript.iter().map(RecordFacts::of).collect();
    let lineage = Lineage::fresh();
    let got = sources_shown(
        &view,
        Some(TranscriptRef {
            lineage,
            records: &transcript,
            facts: &facts,
        }),
        true,
    );
    let at = |record, block| at(lineage, record, block);
    assert_eq!(
        got,
        vec![
            vec![at(0, u32::MAX - 1), at(0, 1)],
            vec![at(1, 0)],
            vec![at(2, 0), at(2, u32::MAX - 1)],
        ]
    );
}
