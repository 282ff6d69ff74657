//! What an attachment source is given and what it gives back. A leaf of `engine`: the
//! collection runs the sources, the sources in their own modules read it.

use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use ctxd_protocol::{Record, RecordInput, ToolSpec};
use serde_json::Value;

use crate::engine::sources::files::{FilesFound, NestedFound};
use ctxd_pipeline::attachments;

/// What one source found: attachment records to append and the state they consume.
#[derive(Default)]
pub(crate) struct Found {
    pub(crate) records: Vec<RecordInput>,
    pub(crate) effect: Effect,
}

/// State a source's attachments consume, written in the same transaction.
#[derive(Default)]
pub(crate) enum Effect {
    #[default]
    None,
    Files(FilesFound),
    Nested(NestedFound),
    /// The date now announced.
    Date(String),
    /// Queue entries delivered.
    Queued(Vec<String>),
    /// The prefetch of this prompt is consumed.
    Memories(String),
    /// Files the attachments showed the model (an `@` mention's): their read state.
    Seen(Vec<ctxd_store::context_state::ReadState>),
}

impl Found {
    /// What a source found: its attachment values as records stamped with the
    /// collection's time, and its effect.
    pub(crate) fn of(
        values: impl IntoIterator<Item = Value>,
        input: &SourceInput,
        effect: Effect,
    ) -> Found {
        Found {
            records: values
                .into_iter()
                .map(|v| attachments::record(v, input.ts()))
                .collect(),
            effect,
        }
    }
}

/// A session's state as the sources see it (cheap clones: the transcript is shared).
pub(crate) struct SourceInput<'a> {
    pub(crate) row: &'a ctxd_store::sessions::SessionRow,
    pub(crate) records: &'a [Record],
    /// The projection, built once for every source.
    pub(crate) view: Vec<&'a Record>,
    pub(crate) tools: &'a [ToolSpec],
    /// The connected MCP servers (their resources answer `@server:uri` mentions).
    pub(crate) mcp: &'a [ctxd_pipeline::capabilities::McpServer],
    pub(crate) announced_date: &'a str,
    pub(crate) now: DateTime<Utc>,
    /// The user's UTC offset (what "today" means for `date_change`).
    pub(crate) utc_offset: chrono::FixedOffset,
    /// `now` as the attachments' timestamp, written once a source finds something.
    pub(super) ts: OnceLock<String>,
}

impl SourceInput<'_> {
    pub(crate) fn ts(&self) -> &str {
        self.ts
            .get_or_init(|| ctxd_pipeline::clock::rfc3339(self.now))
    }
}
