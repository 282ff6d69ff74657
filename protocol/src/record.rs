//! The transcript record model (SPEC §2): what a client appends and what the daemon stores.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a record is. Only `user` and `assistant` records become API messages directly;
/// `attachment` records are rendered as `<system-reminder>` user content, `system` records
/// (compact boundary, snip boundary, informational) steer the projection and are never sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    User,
    Assistant,
    System,
    Attachment,
}

impl RecordKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::User => "user",
            RecordKind::Assistant => "assistant",
            RecordKind::System => "system",
            RecordKind::Attachment => "attachment",
        }
    }
}

/// Provider-reported token usage of one model response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// The context size this response proves: everything the model read plus what it wrote.
    /// Saturating: the numbers come from clients.
    pub fn context_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens)
            .saturating_add(self.output_tokens)
    }
}

/// Anthropic prompt-cache marker. Placed by ctxd only; clients never send it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CacheControl {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// `1h` when the session latched the one-hour TTL; absent for the default five
    /// minutes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
}

impl CacheControl {
    pub fn ephemeral() -> Self {
        CacheControl {
            kind: "ephemeral".into(),
            scope: None,
            ttl: None,
        }
    }
    pub fn scoped(scope: &str) -> Self {
        CacheControl {
            kind: "ephemeral".into(),
            scope: Some(scope.into()),
            ttl: None,
        }
    }
}

/// Where an image's or document's bytes are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum MediaSource {
    Base64 { media_type: String, data: String },
    Url { url: String },
    Text { media_type: String, data: String },
    File { file_id: String },
}

/// One content block, in the Anthropic Messages API shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ContentBlock {
    Text {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: MediaSource,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Document {
        source: MediaSource,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: ToolResultContent,
        #[serde(default, skip_serializing_if = "is_false")]
        is_error: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
        /// Set by ctxd when cached microcompact is on, so `cache_edits` can name the
        /// result. Clients never send it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_reference: Option<String>,
    },
}

// serde's `skip_serializing_if` hands the field by reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_false(b: &bool) -> bool {
    !*b
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text {
            text: text.into(),
            cache_control: None,
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            ContentBlock::Text { .. } => "text",
            ContentBlock::Image { .. } => "image",
            ContentBlock::Document { .. } => "document",
            ContentBlock::Thinking { .. } => "thinking",
            ContentBlock::RedactedThinking { .. } => "redacted_thinking",
            ContentBlock::ToolUse { .. } => "tool_use",
            ContentBlock::ToolResult { .. } => "tool_result",
        }
    }

    /// The id of a `tool_use` block.
    pub fn tool_use_id(&self) -> Option<&str> {
        match self {
            ContentBlock::ToolUse { id, .. } => Some(id),
            _ => None,
        }
    }

    /// The `tool_use_id` a `tool_result` block answers.
    pub fn tool_result_id(&self) -> Option<&str> {
        match self {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id),
            _ => None,
        }
    }

    pub fn is_thinking(&self) -> bool {
        matches!(
            self,
            ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. }
        )
    }

    /// The block's cache marker, if it carries one.
    pub fn cache_control(&self) -> Option<&CacheControl> {
        match self {
            ContentBlock::Text { cache_control, .. }
            | ContentBlock::Image { cache_control, .. }
            | ContentBlock::Document { cache_control, .. }
            | ContentBlock::ToolUse { cache_control, .. }
            | ContentBlock::ToolResult { cache_control, .. } => cache_control.as_ref(),
            ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => None,
        }
    }

    /// The block's cache marker slot, if the API allows one on this block type.
    pub fn cache_control_mut(&mut self) -> Option<&mut Option<CacheControl>> {
        match self {
            ContentBlock::Text { cache_control, .. }
            | ContentBlock::Image { cache_control, .. }
            | ContentBlock::Document { cache_control, .. }
            | ContentBlock::ToolUse { cache_control, .. }
            | ContentBlock::ToolResult { cache_control, .. } => Some(cache_control),
            ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => None,
        }
    }
}

/// A tool result's content: a plain string or a list of text/image/document blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ToolResultContent {
    Text(String),
    Blocks(Vec<ToolResultBlock>),
}

impl Default for ToolResultContent {
    fn default() -> Self {
        ToolResultContent::Text(String::new())
    }
}

/// A block inside a tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToolResultBlock {
    Text {
        text: String,
    },
    Image {
        source: MediaSource,
    },
    Document {
        source: MediaSource,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// A deferred tool found by the client's tool search (Claude Code's shape). ctxd
    /// marks the tool discovered: its full schema is sent from the next compile on, and
    /// the model reads the reference as text.
    ToolReference {
        tool_name: String,
    },
}

/// A record as a client appends it. Optional fields are filled by the daemon.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordInput {
    /// Client-chosen id (a replay keeps the original); generated (UUIDv7) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_uuid: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<RecordKind>,
    /// RFC 3339. Replays pass the original time; the daemon's clock is used when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Content blocks of user and assistant records. A plain string is accepted as one
    /// text block.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "content_or_string"
    )]
    #[schemars(schema_with = "content_schema")]
    pub content: Vec<ContentBlock>,
    /// The provider's message id; records of one response share it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Provider usage; assistant records only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Injected context rather than something the user typed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_meta: bool,
    /// UI-only: stored, never sent to the model.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_virtual: bool,
    /// Belongs to a sub-agent's thread, not the main thread: never sent.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_sidechain: bool,
    /// A user record holding the summary written by a compaction.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_compact_summary: bool,
    /// System records: `compact_boundary`, `snip_boundary`, `informational`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtype: Option<String>,
    /// Attachment records: a structured runtime patch with a string `type` field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachment: Option<Value>,
    /// System records: structured payload (e.g. `{"trigger":"auto","pre_tokens":167000}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Opaque client metadata (e.g. a tool's structured output). Stored, never sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// `content` as clients may send it: a string or a list of blocks.
fn content_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let blocks = g.subschema_for::<Vec<ContentBlock>>();
    schemars::json_schema!({ "anyOf": [{ "type": "string" }, blocks] })
}

fn content_or_string<'de, D>(d: D) -> Result<Vec<ContentBlock>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    // An untagged enum would hide the inner error; decode the string form by hand and
    // let the block list report its own error so the field path survives.
    match Value::deserialize(d)? {
        Value::String(s) => Ok(vec![ContentBlock::text(s)]),
        other => Vec::<ContentBlock>::deserialize(other).map_err(serde::de::Error::custom),
    }
}

/// A stored record: the input with every daemon-filled field resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Record {
    pub uuid: String,
    /// Position in the session's transcript, starting at 1, gap-free.
    pub seq: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_uuid: Option<String>,
    #[serde(rename = "type")]
    pub kind: RecordKind,
    pub timestamp: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_meta: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_virtual: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_sidechain: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_compact_summary: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtype: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachment: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl Record {
    /// This record with `content` in place of its own: what a stage that rewrites some
    /// blocks starts from, without copying the blocks it replaces (a tool result of many
    /// kilobytes whose place a short reference takes).
    pub fn with_content(&self, content: Vec<ContentBlock>) -> Record {
        let Record {
            uuid,
            seq,
            parent_uuid,
            kind,
            timestamp,
            content: _,
            message_id,
            model,
            stop_reason,
            usage,
            is_meta,
            is_virtual,
            is_sidechain,
            is_compact_summary,
            subtype,
            attachment,
            data,
            meta,
        } = self;
        Record {
            uuid: uuid.clone(),
            seq: *seq,
            parent_uuid: parent_uuid.clone(),
            kind: *kind,
            timestamp: timestamp.clone(),
            content,
            message_id: message_id.clone(),
            model: model.clone(),
            stop_reason: stop_reason.clone(),
            usage: *usage,
            is_meta: *is_meta,
            is_virtual: *is_virtual,
            is_sidechain: *is_sidechain,
            is_compact_summary: *is_compact_summary,
            subtype: subtype.clone(),
            attachment: attachment.clone(),
            data: data.clone(),
            meta: meta.clone(),
        }
    }

    /// A record of `kind` holding `content`, with every optional field empty, every flag
    /// off and `seq` 0: what a record built in code starts from, naming only what it
    /// sets (`Record { seq, is_meta: true, ..Record::new(..) }`).
    pub fn new(
        kind: RecordKind,
        uuid: impl Into<String>,
        timestamp: impl Into<String>,
        content: Vec<ContentBlock>,
    ) -> Record {
        Record {
            uuid: uuid.into(),
            seq: 0,
            parent_uuid: None,
            kind,
            timestamp: timestamp.into(),
            content,
            message_id: None,
            model: None,
            stop_reason: None,
            usage: None,
            is_meta: false,
            is_virtual: false,
            is_sidechain: false,
            is_compact_summary: false,
            subtype: None,
            attachment: None,
            data: None,
            meta: None,
        }
    }

    /// The `type` of an attachment record, if this is one.
    pub fn attachment_type(&self) -> Option<&str> {
        self.attachment
            .as_ref()
            .and_then(|a| a.get("type"))
            .and_then(Value::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field but the content is the record's own.
    #[test]
    fn with_content_keeps_every_other_field() {
        let full = Record {
            seq: 7,
            parent_uuid: Some("p".into()),
            message_id: Some("m".into()),
            model: Some("model".into()),
            stop_reason: Some("end_turn".into()),
            usage: Some(Usage::default()),
            is_meta: true,
            is_virtual: true,
            is_sidechain: true,
            is_compact_summary: true,
            subtype: Some("s".into()),
            attachment: Some(serde_json::json!({"type": "note"})),
            data: Some(serde_json::json!(1)),
            meta: Some(serde_json::json!(2)),
            ..Record::new(
                RecordKind::User,
                "u",
                "2026-03-01T10:00:00Z",
                vec![ContentBlock::text("long original")],
            )
        };
        let other = vec![ContentBlock::text("short")];
        let copy = full.with_content(other.clone());
        assert_eq!(copy.content, other);
        assert_eq!(
            Record {
                content: full.content.clone(),
                ..copy
            },
            full
        );
    }
}
