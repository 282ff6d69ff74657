//! The transcript record model: what a client appends and what the daemon stores.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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

/// Fields ctxd has no slot for, kept as they came: a block's, a usage's or a message's
/// keys that the API added or that ctxd does not read go back out unchanged.
pub type Extra = Map<String, Value>;

/// Provider-reported token usage of one model response, as the Messages API reports it.
/// The four counts are read by the estimator and the cache report (a `null` count is
/// stored as 0); every other field (`cache_creation`, `server_tool_use`, `service_tier`,
/// `iterations`, and what the API adds later) is kept as it came.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    #[serde(default, deserialize_with = "count")]
    pub input_tokens: u64,
    #[serde(default, deserialize_with = "count")]
    pub output_tokens: u64,
    #[serde(default, deserialize_with = "count")]
    pub cache_creation_input_tokens: u64,
    #[serde(default, deserialize_with = "count")]
    pub cache_read_input_tokens: u64,
    /// The cache writes split by TTL. Absent when the provider did not split them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation: Option<CacheCreation>,
    /// Server tool calls billed with this response (`web_search_requests`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_tool_use: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<Value>,
    /// Server-side compaction: the usage of each sampling iteration of the response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `usage.cache_creation`: the cache writes of a response by TTL.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CacheCreation {
    #[serde(default, deserialize_with = "count")]
    pub ephemeral_5m_input_tokens: u64,
    #[serde(default, deserialize_with = "count")]
    pub ephemeral_1h_input_tokens: u64,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A token count that the SDK may dump as `null`.
fn count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(Option::<u64>::deserialize(d)?.unwrap_or_default())
}

impl Usage {
    /// A usage of the four counts only.
    pub fn of_counts(input: u64, output: u64, cache_creation: u64, cache_read: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_creation_input_tokens: cache_creation,
            cache_read_input_tokens: cache_read,
            ..Usage::default()
        }
    }

    /// The context size this response proves: everything the model read plus what it wrote.
    /// Saturating: the numbers come from clients.
    pub fn context_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens)
            .saturating_add(self.output_tokens)
    }

    /// The cache writes as `(five_minute, one_hour)` when the provider split them by TTL.
    pub fn cache_write_split(&self) -> Option<(u64, u64)> {
        self.cache_creation
            .as_ref()
            .map(|c| (c.ephemeral_5m_input_tokens, c.ephemeral_1h_input_tokens))
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

/// Serialisation for an enum whose variants are the block types ctxd reads, plus one
/// variant (`$other`) holding any other type as the JSON object it came as: a known type
/// is decoded by the enum's derived code (`remote = "Self"` makes it an inherent
/// function), so a malformed known block is still refused with its own error, while an
/// unknown type is kept whole and written back byte for byte.
macro_rules! keeps_other_types {
    ($ty:ident, $other:ident, $what:literal, [$($known:literal),* $(,)?]) => {
        impl $ty {
            /// The `type` names ctxd decodes; any other is kept verbatim.
            pub const KNOWN_TYPES: &'static [&'static str] = &[$($known),*];
        }

        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $ty::$other(fields) => fields.serialize(s),
                    known => $ty::serialize(known, s),
                }
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                use serde::de::Error;
                let fields = Map::<String, Value>::deserialize(d)?;
                match fields.get("type") {
                    Some(Value::String(t)) if Self::KNOWN_TYPES.contains(&t.as_str()) => {
                        $ty::deserialize(Value::Object(fields)).map_err(D::Error::custom)
                    }
                    Some(Value::String(_)) => Ok($ty::$other(fields)),
                    Some(_) => Err(D::Error::custom(concat!("the `type` of ", $what, " must be a string"))),
                    None => Err(D::Error::custom(concat!(
                        "missing field `type` of ", $what
                    ))),
                }
            }
        }
    };
}

/// Adds the schema of a block of any other type to an enum's derived `oneOf`.
fn other_type_schema(schema: &mut schemars::Schema, known: &[&str], description: &str) {
    let other = schemars::json_schema!({
        "type": "object",
        "description": description,
        "required": ["type"],
        "properties": { "type": { "type": "string", "not": { "enum": known } } },
        "additionalProperties": true
    });
    if let Some(Value::Array(alternatives)) = schema.get_mut("oneOf") {
        alternatives.push(other.to_value());
    }
}

fn content_block_schema(schema: &mut schemars::Schema) {
    other_type_schema(
        schema,
        ContentBlock::KNOWN_TYPES,
        "Any other block type the Messages API defines (search_result, server_tool_use, \
         web_search_tool_result, web_fetch_tool_result, code_execution_tool_result, \
         bash_code_execution_tool_result, text_editor_code_execution_tool_result, \
         tool_search_tool_result, mcp_tool_use, mcp_tool_result, container_upload, \
         compaction, ...) or adds later: stored and sent as the same JSON value.",
    );
}

fn tool_result_block_schema(schema: &mut schemars::Schema) {
    other_type_schema(
        schema,
        ToolResultBlock::KNOWN_TYPES,
        "Any other tool result content (search_result, ...): stored and sent as the same \
         JSON value.",
    );
}

fn media_source_schema(schema: &mut schemars::Schema) {
    other_type_schema(
        schema,
        MediaSource::KNOWN_TYPES,
        "Any other source kind (a document's `content` source, ...): kept as it came.",
    );
}

/// Where an image's or document's bytes are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(remote = "Self", tag = "type", rename_all = "snake_case")]
#[schemars(transform = media_source_schema)]
pub enum MediaSource {
    Base64 {
        media_type: String,
        data: String,
        #[serde(flatten)]
        extra: Extra,
    },
    Url {
        url: String,
        #[serde(flatten)]
        extra: Extra,
    },
    Text {
        media_type: String,
        data: String,
        #[serde(flatten)]
        extra: Extra,
    },
    File {
        file_id: String,
        #[serde(flatten)]
        extra: Extra,
    },
    /// Any other source kind, its `type` included.
    #[serde(skip)]
    Other(Extra),
}

keeps_other_types!(
    MediaSource,
    Other,
    "a media source",
    ["base64", "url", "text", "file"]
);

/// One content block, in the Anthropic Messages API shape. The types ctxd reasons about
/// are decoded; every field ctxd has no slot for (`citations`, `caller`, `context`, ...)
/// is kept in the block's `extra`, and a block of any other type (server tool calls and
/// their results, MCP blocks, `compaction`, what the API adds later) in [`ContentBlock::Other`]:
/// all of them are compiled back as the same JSON value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(remote = "Self", tag = "type", rename_all = "snake_case")]
#[schemars(transform = content_block_schema)]
pub enum ContentBlock {
    Text {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
        #[serde(flatten)]
        extra: Extra,
    },
    Image {
        source: MediaSource,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
        #[serde(flatten)]
        extra: Extra,
    },
    Document {
        source: MediaSource,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
        #[serde(flatten)]
        extra: Extra,
    },
    Thinking {
        thinking: String,
        #[serde(default)]
        signature: String,
        #[serde(flatten)]
        extra: Extra,
    },
    RedactedThinking {
        data: String,
        #[serde(flatten)]
        extra: Extra,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
        #[serde(flatten)]
        extra: Extra,
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
        #[serde(flatten)]
        extra: Extra,
    },
    /// A block of any other type, its `type` included, exactly as it came.
    #[serde(skip)]
    Other(Extra),
}

keeps_other_types!(
    ContentBlock,
    Other,
    "a content block",
    [
        "text",
        "image",
        "document",
        "thinking",
        "redacted_thinking",
        "tool_use",
        "tool_result",
    ]
);

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
            extra: Extra::new(),
        }
    }

    /// A `tool_use` block with no cache marker and no other fields.
    pub fn tool_use(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        ContentBlock::ToolUse {
            id: id.into(),
            name: name.into(),
            input,
            cache_control: None,
            extra: Extra::new(),
        }
    }

    /// A `tool_result` block with no cache marker, reference or other fields.
    pub fn tool_result(
        tool_use_id: impl Into<String>,
        content: ToolResultContent,
        is_error: bool,
    ) -> Self {
        ContentBlock::ToolResult {
            tool_use_id: tool_use_id.into(),
            content,
            is_error,
            cache_control: None,
            cache_reference: None,
            extra: Extra::new(),
        }
    }

    pub fn type_name(&self) -> &str {
        match self {
            ContentBlock::Text { .. } => "text",
            ContentBlock::Image { .. } => "image",
            ContentBlock::Document { .. } => "document",
            ContentBlock::Thinking { .. } => "thinking",
            ContentBlock::RedactedThinking { .. } => "redacted_thinking",
            ContentBlock::ToolUse { .. } => "tool_use",
            ContentBlock::ToolResult { .. } => "tool_result",
            ContentBlock::Other(fields) => fields
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default(),
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
            ContentBlock::Thinking { .. }
            | ContentBlock::RedactedThinking { .. }
            | ContentBlock::Other(_) => None,
        }
    }

    /// Whether ctxd may put its cache marker on this block: the API allows one on its
    /// type, and the block holds no field kept verbatim. A block as a response returned it
    /// (its `caller`, its `citations`) is valid in a request only as it came, so
    /// it is sent untouched and the marker goes on an earlier block.
    pub fn takes_marker(&self) -> bool {
        match self {
            ContentBlock::Text { extra, .. }
            | ContentBlock::Image { extra, .. }
            | ContentBlock::Document { extra, .. }
            | ContentBlock::ToolUse { extra, .. }
            | ContentBlock::ToolResult { extra, .. } => extra.is_empty(),
            ContentBlock::Thinking { .. }
            | ContentBlock::RedactedThinking { .. }
            | ContentBlock::Other(_) => false,
        }
    }

    /// The block's cache marker slot, if the API allows one on this block type. A block
    /// ctxd keeps verbatim never gets one: its type may not take it.
    pub fn cache_control_mut(&mut self) -> Option<&mut Option<CacheControl>> {
        match self {
            ContentBlock::Text { cache_control, .. }
            | ContentBlock::Image { cache_control, .. }
            | ContentBlock::Document { cache_control, .. }
            | ContentBlock::ToolUse { cache_control, .. }
            | ContentBlock::ToolResult { cache_control, .. } => Some(cache_control),
            ContentBlock::Thinking { .. }
            | ContentBlock::RedactedThinking { .. }
            | ContentBlock::Other(_) => None,
        }
    }
}

/// A tool result's content: a plain string or a list of text/image/document blocks.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ToolResultContent {
    Text(String),
    Blocks(Vec<ToolResultBlock>),
}

impl<'de> Deserialize<'de> for ToolResultContent {
    // Decoded by hand so that a bad block reports its own error, not "did not match any
    // variant".
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match Value::deserialize(d)? {
            Value::String(s) => Ok(ToolResultContent::Text(s)),
            Value::Array(blocks) => blocks
                .into_iter()
                .enumerate()
                .map(|(i, b)| {
                    <ToolResultBlock as Deserialize>::deserialize(b)
                        .map_err(|e| D::Error::custom(format!("content[{i}]: {e}")))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(ToolResultContent::Blocks),
            _ => Err(D::Error::custom(
                "a tool result's content must be a string or an array of blocks",
            )),
        }
    }
}

impl Default for ToolResultContent {
    fn default() -> Self {
        ToolResultContent::Text(String::new())
    }
}

/// A block inside a tool result. Other fields and other types are kept as with
/// [`ContentBlock`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(remote = "Self", tag = "type", rename_all = "snake_case")]
#[schemars(transform = tool_result_block_schema)]
pub enum ToolResultBlock {
    Text {
        text: String,
        #[serde(flatten)]
        extra: Extra,
    },
    Image {
        source: MediaSource,
        #[serde(flatten)]
        extra: Extra,
    },
    Document {
        source: MediaSource,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(flatten)]
        extra: Extra,
    },
    /// A deferred tool found by the client's tool search (Claude Code's shape). ctxd
    /// marks the tool discovered: its full schema is sent from the next compile on, and
    /// the model reads the reference as text.
    ToolReference {
        tool_name: String,
        #[serde(flatten)]
        extra: Extra,
    },
    /// A block of any other type (`search_result`, ...), exactly as it came.
    #[serde(skip)]
    Other(Extra),
}

keeps_other_types!(
    ToolResultBlock,
    Other,
    "a tool result block",
    ["text", "image", "document", "tool_reference"]
);

impl ToolResultBlock {
    pub fn text(text: impl Into<String>) -> Self {
        ToolResultBlock::Text {
            text: text.into(),
            extra: Extra::new(),
        }
    }
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
    /// `usage` measured a request ctxd did not compile (another agent's transcript, as an
    /// import brings in): kept and shown, but never the anchor of ctxd's estimate.
    #[serde(default, skip_serializing_if = "is_false")]
    pub foreign_usage: bool,
    /// The message as the provider returned it and the official SDK dumps it
    /// (`message.model_dump(mode="json")`, as Claude Code's transcript lines carry it):
    /// its `content`, `id`, `model`, `stop_reason` and `usage` become the record's, its
    /// other fields are kept in `message_extra`. Give either this or the record's own
    /// message fields, not both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<MessageInput>,
    /// Set from `message`; a client may also give it directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_extra: Option<Extra>,
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

/// A Messages API message as a client hands it over whole: an SDK `Message` dumped as
/// JSON, with or without `exclude_none`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct MessageInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `message` when given.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `user` or `assistant`; must agree with the record's `type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "content_or_string"
    )]
    #[schemars(schema_with = "content_schema")]
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Every other field (`stop_sequence`, `container`, `context_management`, ...).
    #[serde(flatten)]
    pub rest: Extra,
}

impl RecordInput {
    /// A field of a Claude Code line that has no field of its own here, as an import
    /// keeps it (`meta.claude_code`).
    pub fn claude_code(&self, key: &str) -> Option<&serde_json::Value> {
        self.meta.as_ref()?.get("claude_code")?.get(key)
    }

    /// The sub-agent a Claude Code sidechain record belongs to (its `agentId`).
    pub fn claude_code_agent(&self) -> Option<&str> {
        if !self.is_sidechain {
            return None;
        }
        self.claude_code("agentId")?.as_str()
    }

    /// Moves a whole `message` into the record's own fields. The error names the field
    /// that was given twice or disagrees with the record.
    pub fn lift_message(&mut self) -> Result<(), String> {
        let Some(message) = self.message.take() else {
            return Ok(());
        };
        let MessageInput {
            id,
            kind,
            role,
            model,
            content,
            stop_reason,
            usage,
            rest,
        } = message;
        if let Some(kind) = kind.as_deref()
            && kind != "message"
        {
            return Err(format!(
                "field `message.type` must be \"message\", found {kind:?}"
            ));
        }
        if let Some(role) = role.as_deref() {
            let from_role = match role {
                "user" => RecordKind::User,
                "assistant" => RecordKind::Assistant,
                other => {
                    return Err(format!(
                        "field `message.role` must be \"user\" or \"assistant\", found {other:?}"
                    ));
                }
            };
            match self.kind {
                None => self.kind = Some(from_role),
                Some(k) if k == from_role => {}
                Some(k) => {
                    return Err(format!(
                        "field `message.role` is {role:?} but the record's `type` is {:?}",
                        k.as_str()
                    ));
                }
            }
        }
        fn once<T>(own: &mut Option<T>, given: Option<T>, name: &str) -> Result<(), String> {
            match (own.is_some(), given) {
                (true, Some(_)) => Err(format!(
                    "field `message.{name}` is given twice: as the record's and in `message`"
                )),
                (_, Some(v)) => {
                    *own = Some(v);
                    Ok(())
                }
                (_, None) => Ok(()),
            }
        }
        if !content.is_empty() {
            if !self.content.is_empty() {
                return Err(
                    "field `message.content` is given twice: as the record's and in `message`"
                        .into(),
                );
            }
            self.content = content;
        }
        once(&mut self.message_id, id, "id")?;
        once(&mut self.model, model, "model")?;
        once(&mut self.stop_reason, stop_reason, "stop_reason")?;
        once(&mut self.usage, usage, "usage")?;
        if !rest.is_empty() {
            once(&mut self.message_extra, Some(rest), "extra fields")?;
        }
        Ok(())
    }
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
    /// `usage` measured a request ctxd did not compile: never the estimate's anchor.
    #[serde(default, skip_serializing_if = "is_false")]
    pub foreign_usage: bool,
    /// The provider message's other top-level fields (`stop_sequence`, `container`,
    /// `context_management`, ...), as it sent them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_extra: Option<Extra>,
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
            foreign_usage,
            message_extra,
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
            usage: usage.clone(),
            foreign_usage: *foreign_usage,
            message_extra: message_extra.clone(),
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
            foreign_usage: false,
            message_extra: None,
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
            foreign_usage: true,
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
