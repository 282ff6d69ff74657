//! The model-facing view of the raw transcript: it starts at the last compact boundary.
//! (Snip removals and collapse views join this projection as their issues land.)

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
