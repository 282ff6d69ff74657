//! Session memory and context collapse.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryGetResponse {
    /// The notes document (the empty template before the first extraction).
    pub document: String,
    /// 0 before the first write; pass it as `expected_version` when writing.
    pub version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_summarized_uuid: Option<String>,
    /// Readable copy of the document on disk.
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// An extraction is running now.
    pub extracting: bool,
}

/// `memory.update`: write the document (external workers, `ctx memory edit`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryUpdateParams {
    pub session_id: String,
    pub document: String,
    /// The version the writer read; a stale write is refused (conflict).
    pub expected_version: u64,
    /// The last record the document now accounts for (unchanged when absent).
    #[serde(default)]
    pub last_summarized_uuid: Option<String>,
    /// Who writes (shown in the history), e.g. `worker`, `user`.
    #[serde(default)]
    pub writer: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryUpdateResponse {
    pub version: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CollapseInfo {
    pub id: String,
    pub first_uuid: String,
    pub last_uuid: String,
    pub record_count: u64,
    pub tokens: u64,
    pub summary: String,
    /// `staged`, `committed` or `undone`.
    pub status: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CollapseListResponse {
    pub collapses: Vec<CollapseInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CollapseUndoParams {
    pub session_id: String,
    pub collapse_id: String,
}
