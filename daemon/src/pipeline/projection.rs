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
