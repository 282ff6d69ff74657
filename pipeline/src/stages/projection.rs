//! The model-facing view of the raw transcript: it starts at the last compact boundary.
//! Snipped records are filtered out; collapse views join this projection when they land.
//!
//! Two records are compact boundaries: ctxd's own (a system record, never rendered,
//! followed by the summary it wrote), and an assistant response whose content begins
//! with the provider's `compaction` block. That record is rendered, and the view starts
//! with it: the Messages API requires the block first, in place of the messages it
//! summarises. A `compaction` block whose `content` is null is a failed compaction
//! (the server treats it as a no-op), so it is no boundary.

use std::collections::HashSet;

use ctxd_protocol::{Record, RecordKind};

use super::tokens::Tally;
use crate::relevant_memories::Surfaced;

/// The text an attachment record shows the model (`attachments::render`): passed in, so
/// the projection does not reach up to the attachment kinds.
pub(crate) type Render = fn(&Record) -> Option<String>;

pub(crate) const COMPACT_BOUNDARY: &str = "compact_boundary";
/// The provider's server-side compaction block (`compaction`).
pub(crate) const SERVER_COMPACTION: &str = "compaction";

/// The provider's `compaction` block at the start of a main-thread assistant record:
/// `Some(true)` when it holds a summary, `Some(false)` when its content is null (the
/// compaction failed).
pub fn server_compaction(r: &Record) -> Option<bool> {
    if r.kind != RecordKind::Assistant || r.is_sidechain {
        return None;
    }
    match r.content.first() {
        Some(ctxd_protocol::ContentBlock::Other(fields))
            if fields.get("type").and_then(serde_json::Value::as_str)
                == Some(SERVER_COMPACTION) =>
        {
            Some(
                fields
                    .get("content")
                    .is_some_and(serde_json::Value::is_string),
            )
        }
        _ => None,
    }
}

/// Whether `r` starts a new history: ctxd's boundary record, or a response that begins
/// with the provider's compaction block.
pub fn is_compact_boundary(r: &Record) -> bool {
    (r.kind == RecordKind::System
        && !r.is_sidechain
        && r.subtype.as_deref() == Some(COMPACT_BOUNDARY))
        || server_compaction(r) == Some(true)
}

/// A record of the view as a stage passes it on: the transcript's own, or a copy the
/// stage changed (a fate applied, a span folded).
pub type Shown<'a> = super::shown::Shown<'a, Record>;

/// Records from the last main-thread compact boundary on (the boundary included: ctxd's
/// is a system record, never rendered, that marks where the view begins; the
/// provider's is the response the view begins with).
pub(crate) fn after_last_boundary(records: &[Record]) -> &[Record] {
    let start = records.iter().rposition(is_compact_boundary).unwrap_or(0);
    &records[start..]
}

/// The main thread's records from the last boundary on: sub-agent and UI-only records
/// are never sent, so no later stage needs to look at them.
/// Records removed by snip boundaries (after the last compact boundary) are left out too.
pub fn project(records: &[Record]) -> Vec<&Record> {
    let view = after_last_boundary(records);
    let snipped = crate::snip::removed_uuids(view);
    view.iter()
        .filter(|r| !r.is_sidechain && !r.is_virtual && !snipped.contains(r.uuid.as_str()))
        .collect()
}

/// [`project`] kept up to date as the transcript grows: at every length its view equals
/// `project(records)`, at the cost of the records appended since the last
/// [`LiveProjection::advance`] (a new compact boundary starts it afresh; a snip boundary
/// drops what it names), with the view's token `Tally` and the memories it surfaced.
#[derive(Debug, Clone, Default)]
pub struct LiveProjection {
    /// How many records it has taken in.
    seen: usize,
    /// Indices of the projected records, in order.
    indices: Vec<usize>,
    /// Where the last compact boundary is (0 when there is none).
    boundary: usize,
    /// Per record taken in, what normalising needs to know of it
    /// (`normalize::RecordFacts`).
    facts: Vec<super::normalize::RecordFacts>,
    /// uuids the snip boundaries after the last compact boundary removed.
    snipped: HashSet<String>,
    /// Where the snip boundaries after the last compact boundary are.
    snips: Vec<usize>,
    tally: Tally,
    surfaced: Surfaced,
}

impl LiveProjection {
    pub fn new(records: &[Record], render: Render) -> Self {
        let mut p = LiveProjection::default();
        p.advance(records, render);
        p
    }

    /// Takes in `records[self.seen..]`: `records` is the whole transcript, of which the
    /// records seen before are unchanged.
    pub fn advance(&mut self, records: &[Record], render: Render) {
        for (i, r) in records.iter().enumerate().skip(self.seen) {
            self.facts.push(super::normalize::RecordFacts::of(r));
            if is_compact_boundary(r) {
                self.boundary = i;
                self.indices.clear();
                self.snipped.clear();
                self.snips.clear();
                self.tally = Tally::default();
                self.surfaced = Surfaced::default();
            }
            if crate::snip::is_snip_boundary(r) {
                self.snips.push(i);
                let before = self.snipped.len();
                self.snipped.extend(
                    crate::snip::removed_uuids(std::slice::from_ref(r))
                        .into_iter()
                        .map(str::to_string),
                );
                if self.snipped.len() != before {
                    self.indices
                        .retain(|&j| !self.snipped.contains(records[j].uuid.as_str()));
                    self.tally = Tally::default();
                    self.surfaced = Surfaced::default();
                    for &j in &self.indices {
                        self.tally.push(&records[j], render);
                        self.surfaced.add(&records[j]);
                    }
                }
            }
            if !r.is_sidechain && !r.is_virtual && !self.snipped.contains(r.uuid.as_str()) {
                self.indices.push(i);
                self.tally.push(r, render);
                self.surfaced.add(r);
            }
        }
        self.seen = records.len();
    }

    /// Where the last compact boundary is among the records: `after_last_boundary` of
    /// them starts there.
    pub fn boundary(&self) -> usize {
        self.boundary
    }

    /// Where the snip boundaries among `after_last_boundary` of the records are, in
    /// order: what they freed is counted without a scan of the history.
    pub fn snip_boundaries(&self) -> &[usize] {
        &self.snips
    }

    /// Per record taken in, what normalising needs to know of it.
    pub fn facts(&self) -> &[super::normalize::RecordFacts] {
        &self.facts
    }

    /// How many records the projection holds.
    pub fn len(&self) -> usize {
        self.indices.len()
    }

    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }

    /// The projection of `records` (the transcript it has advanced over).
    pub fn view<'a>(&self, records: &'a [Record]) -> Vec<&'a Record> {
        self.indices
            .iter()
            .filter_map(|&i| records.get(i))
            .collect()
    }

    /// `tokens::estimate` of the view, with nothing before the messages.
    pub fn estimate(&self) -> super::tokens::Estimate {
        self.tally.estimate(0)
    }

    /// `relevant_memories::surfaced` of the view.
    pub fn surfaced(&self) -> &Surfaced {
        &self.surfaced
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choices::{Choices, choices};
    use crate::snip::SNIP_BOUNDARY;
    use proptest::prelude::*;
    use serde_json::json;

    /// A transcript of plain messages, sub-agent and UI-only records, compact boundaries
    /// (some in a sub-agent) and snip boundaries removing earlier records.
    fn transcript(g: &mut Choices) -> Vec<Record> {
        let n = g.index(40);
        let mut out: Vec<Record> = Vec::with_capacity(n);
        for i in 0..n {
            let uuid = format!("u{i}");
            let mut v = json!({"uuid": uuid, "seq": i + 1, "timestamp": "2026-01-01T00:00:00.000Z",
                               "type": if g.chance(50) { "user" } else { "assistant" },
                               "content": [{"type": "text", "text": uuid}]});
            match g.below(10) {
                0 => {
                    v["type"] = json!("system");
                    v["subtype"] = json!(COMPACT_BOUNDARY);
                }
                1 if i > 0 => {
                    let removed: Vec<String> = (0..=g.below(3))
                        .map(|_| format!("u{}", g.below(i as u64)))
                        .collect();
                    v["type"] = json!("system");
                    v["subtype"] = json!(SNIP_BOUNDARY);
                    v["data"] = json!({"removed_uuids": removed});
                }
                _ => {}
            }
            v["is_sidechain"] = json!(g.chance(15));
            v["is_virtual"] = json!(g.chance(10));
            out.push(serde_json::from_value(v).unwrap());
        }
        out
    }

    proptest! {
        /// The projection is exactly the main thread's records after the last main-thread
        /// compact boundary (the boundary included), less those a later snip removed, in
        /// transcript order: nothing from before the boundary leaks, nothing after it is
        /// lost.
        #[test]
        fn the_projection_is_the_main_thread_after_the_last_boundary(values in choices(200)) {
            let records = transcript(&mut Choices::new(values));
            let start = records
                .iter()
                .rposition(|r| !r.is_sidechain && r.subtype.as_deref() == Some(COMPACT_BOUNDARY))
                .unwrap_or(0);
            let snipped: Vec<&str> = records[start..]
                .iter()
                .filter(|r| r.subtype.as_deref() == Some(SNIP_BOUNDARY))
                .flat_map(|r| r.data.as_ref().unwrap()["removed_uuids"].as_array().unwrap())
                .filter_map(|u| u.as_str())
                .collect();
            let expected: Vec<&str> = records[start..]
                .iter()
                .filter(|r| !r.is_sidechain && !r.is_virtual && !snipped.contains(&r.uuid.as_str()))
                .map(|r| r.uuid.as_str())
                .collect();
            let got: Vec<&str> = project(&records).iter().map(|r| r.uuid.as_str()).collect();
            prop_assert_eq!(got, expected);
        }
    }

    /// A transcript for the live projection: [`transcript`]'s records, some with usage,
    /// message ids or as attachments; and the lengths it is advanced to, in order.
    fn live_case(g: &mut Choices) -> (Vec<Record>, Vec<usize>) {
        let mut records = transcript(g);
        for r in &mut records {
            if g.chance(30) {
                r.message_id = Some(format!("m{}", g.below(4)));
            }
            if r.kind == RecordKind::Assistant && g.chance(30) {
                r.usage = Some(
                    serde_json::from_value(
                        json!({"input_tokens": g.below(5000), "output_tokens": g.below(500)}),
                    )
                    .unwrap(),
                );
            }
            if r.kind == RecordKind::User && g.chance(15) {
                r.kind = RecordKind::Attachment;
                r.attachment = Some(if g.chance(50) {
                    json!({"type": "relevant_memories", "memories": [
                        {"path": format!("/m/{}.md", g.below(5)), "content": "a fact"}]})
                } else {
                    json!({"type": "date_change", "date": "2026-01-02"})
                });
            }
            if r.kind == RecordKind::Assistant && g.chance(15) {
                r.content.push(
                    serde_json::from_value(
                        json!({"type": "tool_use", "id": format!("t{}", g.below(99)),
                        "name": "Read", "input": {"file_path": format!("/m/{}.md", g.below(5))}}),
                    )
                    .unwrap(),
                );
            }
        }
        let mut stops = Vec::new();
        let mut at = 0;
        while at < records.len() {
            at = (at + 1 + g.index(4)).min(records.len());
            stops.push(at);
        }
        (records, stops)
    }

    proptest! {
        /// Advanced over the transcript in any chunks, the live projection's view is the
        /// projection, its tally the estimate of it, its boundary where
        /// `after_last_boundary` starts, and its facts each record's `RecordFacts`, at
        /// every length.
        #[test]
        fn the_live_projection_is_the_projection_at_every_length(values in choices(800)) {
            let (records, stops) = live_case(&mut Choices::new(values));
            let mut live = LiveProjection::default();
            for at in stops {
                live.advance(&records[..at], crate::attachments::render);
                let expected = project(&records[..at]);
                let got = live.view(&records[..at]);
                prop_assert_eq!(
                    got.iter().map(|r| r.uuid.as_str()).collect::<Vec<_>>(),
                    expected.iter().map(|r| r.uuid.as_str()).collect::<Vec<_>>()
                );
                prop_assert_eq!(
                    live.estimate(),
                    crate::tokens::estimate(&expected, 0, crate::attachments::render)
                );
                prop_assert_eq!(live.surfaced(), &crate::relevant_memories::surfaced(&expected));
                prop_assert_eq!(live.boundary(), at - after_last_boundary(&records[..at]).len());
                prop_assert_eq!(
                    live.snip_boundaries(),
                    (live.boundary()..at)
                        .filter(|&i| crate::snip::is_snip_boundary(&records[i]))
                        .collect::<Vec<_>>()
                );
                prop_assert_eq!(
                    live.facts(),
                    records[..at].iter().map(crate::normalize::RecordFacts::of).collect::<Vec<_>>()
                );
            }
        }
    }

    /// The generated cases reach what the live projection must get right: an anchored
    /// estimate, a snip removing a record taken in by an earlier advance, a compact
    /// boundary after the first advance, memories surfaced.
    #[test]
    fn the_live_projection_property_reaches_its_cases() {
        let (mut anchored, mut retroactive, mut restarted, mut surfaced) = (0, 0, 0, 0);
        for mut g in crate::choices::samples(800, 256) {
            let (records, stops) = live_case(&mut g);
            let mut before: Vec<String> = Vec::new();
            for (k, at) in stops.iter().enumerate() {
                let view = project(&records[..*at]);
                let uuids: Vec<String> = view.iter().map(|r| r.uuid.clone()).collect();
                if crate::tokens::estimate(&view, 0, |_| None)
                    .anchor_uuid
                    .is_some()
                {
                    anchored += 1;
                }
                if crate::relevant_memories::surfaced(&view).bytes > 0 {
                    surfaced += 1;
                }
                let prev = if k == 0 { 0 } else { stops[k - 1] };
                let new = &records[prev..*at];
                if new
                    .iter()
                    .any(|r| r.subtype.as_deref() == Some(COMPACT_BOUNDARY) && !r.is_sidechain)
                    && k > 0
                {
                    restarted += 1;
                } else if before.iter().any(|u| !uuids.contains(u)) {
                    retroactive += 1;
                }
                before = uuids;
            }
        }
        assert!(
            anchored > 50 && retroactive > 10 && restarted > 10 && surfaced > 50,
            "anchored {anchored}, retroactive snips {retroactive}, restarts {restarted}, \
             surfaced memories {surfaced}"
        );
    }
}
