//! The model-facing view of the raw transcript: it starts at the last compact boundary.
//! Snipped records are filtered out; collapse views join this projection when they land.

use ctxd_protocol::{Record, RecordKind};

pub const COMPACT_BOUNDARY: &str = "compact_boundary";

/// Records from the last main-thread compact boundary on (the boundary included: it is a
/// system record and never rendered, but it marks where the view begins).
pub fn after_last_boundary(records: &[Record]) -> &[Record] {
    let start = records
        .iter()
        .rposition(|r| {
            r.kind == RecordKind::System
                && !r.is_sidechain
                && r.subtype.as_deref() == Some(COMPACT_BOUNDARY)
        })
        .unwrap_or(0);
    &records[start..]
}

/// The main thread's records from the last boundary on: sub-agent and UI-only records
/// are never sent, so no later stage needs to look at them.
/// Records removed by snip boundaries (after the last compact boundary) are left out too.
pub fn project(records: &[Record]) -> Vec<&Record> {
    let view = after_last_boundary(records);
    let snipped = super::snip::removed_uuids(view);
    view.iter()
        .filter(|r| !r.is_sidechain && !r.is_virtual && !snipped.contains(r.uuid.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::choices::{Choices, choices};
    use crate::pipeline::snip::SNIP_BOUNDARY;
    use proptest::prelude::*;
    use serde_json::json;

    /// A transcript of plain messages, sub-agent and UI-only records, compact boundaries
    /// (some in a sub-agent) and snip boundaries removing earlier records.
    fn transcript(g: &mut Choices) -> Vec<Record> {
        let n = g.below(40) as usize;
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
                    let removed: Vec<String> = (0..1 + g.below(3))
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
}
