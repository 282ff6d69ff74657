//! Appending to and reading a session's transcript.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::record::{Record, RecordInput};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendParams {
    pub session_id: String,
    /// A sub-agent of `session_id` whose thread this call addresses (see `agent.start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Written atomically: all of them or, on any error, none.
    pub records: Vec<RecordInput>,
    /// Optimistic concurrency: the uuid the caller believes is the transcript's last
    /// record (`null` for "the transcript is empty"). Omit the field to append
    /// unconditionally.
    #[serde(
        default,
        with = "double_option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub expected_last_uuid: Option<Option<String>>,
}

/// Distinguishes an absent field (`None`) from an explicit `null` (`Some(None)`).
mod double_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<Option<String>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(inner) => inner.serialize(s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Option<String>>, D::Error> {
        Option::<String>::deserialize(d).map(Some)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AppendedRecord {
    pub uuid: String,
    pub seq: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AppendResponse {
    pub appended: Vec<AppendedRecord>,
    /// The transcript's last uuid after this append.
    pub last_uuid: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadParams {
    pub session_id: String,
    /// A sub-agent of `session_id` whose thread this call addresses (see `agent.start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Return records with `seq > after_seq` (0 = from the start).
    #[serde(default)]
    pub after_seq: u64,
    /// Page size; default 500, at most 5000.
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReadResponse {
    pub records: Vec<Record>,
    /// Pass as `after_seq` to get the next page; absent when this page reached the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_after_seq: Option<u64>,
}

/// Marks media the provider refused (too large, bad format), so later requests strip it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectMediaParams {
    pub session_id: String,
    pub record_uuid: String,
    /// Index of the image/document block in the record's content (for a tool result,
    /// the tool_result block's index: all its media is stripped).
    pub block_index: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RejectMediaResponse {
    pub rejected: bool,
}

/// `transcript.parse_claude_code`: a Claude Code JSONL transcript converted to records
/// without creating anything (replays append them one by one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ParseClaudeCodeParams {
    pub jsonl: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolResultReplacement {
    pub tool_use_id: String,
    pub replacement: String,
}

/// Fields every Claude Code transcript line carries that describe the writer rather than
/// the record (or that ctxd maps to a record's own fields): the import keeps them out of
/// a record's `meta` and a system record's `data`, and the export writes them from the
/// record, so that the one is the other's inverse.
pub const CLAUDE_CODE_ENVELOPE: &[&str] = &[
    "parentUuid",
    "uuid",
    "timestamp",
    "cwd",
    "sessionId",
    "version",
    "gitBranch",
    "userType",
    "isSidechain",
    "slug",
    "type",
    "subtype",
    "isMeta",
    "isCompactSummary",
    "isVisibleInTranscriptOnly",
];

/// Claude Code line types that describe the calls made from a conversation rather than
/// the conversation (2.1.3xx): an import keeps each as a `system` record whose subtype is
/// the type and whose `data` is the line's other fields as written, and an export writes
/// it back as the line it was.
pub const CLAUDE_CODE_RECORDED_CALLS: &[&str] = &[
    "api-request",
    "api-request-shape",
    "api-request-blob",
    "tools-used",
    "atis-latch",
    "cost-state",
    "last-prompt",
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ParseClaudeCodeResponse {
    pub records: Vec<RecordInput>,
    /// The 1-based source line of each record.
    pub source_lines: Vec<u64>,
    pub replacements: Vec<ToolResultReplacement>,
    pub stats: ImportStats,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_timestamp: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ImportStats {
    /// Lines read, blank lines excluded.
    pub lines: u64,
    pub records: u64,
    pub user: u64,
    pub assistant: u64,
    pub system: u64,
    pub attachment: u64,
    pub tool_use: u64,
    pub tool_result: u64,
    /// Tool-result replacements taken from `content-replacement` lines.
    #[serde(default)]
    pub replacements: u64,
    /// UI-only lines skipped, by their `type` (`progress`, `file-history-snapshot`, ...).
    pub skipped: std::collections::BTreeMap<String, u64>,
    /// What the import did that the user should know about although it succeeded, e.g.
    /// lines skipped because they repeat an earlier line's uuid (with their count and
    /// the first such line). `ctx import` prints each on stderr.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Sub-agent threads imported as threads of their own (`agent.list`): the sidechain
    /// records of each agent linked to the call that started it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub agents: u64,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}
