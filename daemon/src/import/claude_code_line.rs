//! One line of a Claude Code transcript → a record to import, or a line to skip (with
//! the key it is counted under). Pure and per line: `claude_code.rs` parses the lines,
//! joins them in file order, de-duplicates and relinks.

use std::collections::BTreeMap;

use ctxd_protocol::{
    ContentBlock, MediaSource, RecordInput, RecordKind, ToolResultBlock, ToolResultContent, Usage,
};
use serde_json::{Map, Value};

/// Fields every Claude Code line carries that describe the writer rather than the record
/// (or that ctxd maps itself). They are neither copied into `meta` nor into system `data`.
const ENVELOPE: &[&str] = &[
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

/// `{"type":"content-replacement","replacements":[{"kind":"tool-result","toolUseId":..,"replacement":..}]}`
pub(super) fn content_replacements(
    obj: &Map<String, Value>,
) -> Result<Vec<(String, String)>, String> {
    let Some(Value::Array(items)) = obj.get("replacements") else {
        return Err("field `replacements` must be an array".into());
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if item
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k != "tool-result")
        {
            continue;
        }
        let id = item
            .get("toolUseId")
            .or_else(|| item.get("tool_use_id"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                format!("field `replacements[{i}].toolUseId` must be a non-empty string")
            })?;
        let rep = item
            .get("replacement")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("field `replacements[{i}].replacement` must be a string"))?;
        out.push((id.to_string(), rep.to_string()));
    }
    Ok(out)
}

/// A converted record whose parent is not resolved yet: relinking needs to know every
/// skipped line, including ones that appear later in the file.
pub(super) struct Pending {
    pub record: RecordInput,
    /// 1-based source line.
    pub line: usize,
    /// Claude-Code-only fields, stored as `meta.claude_code`.
    pub claude_code: Map<String, Value>,
}

pub(super) enum Line {
    Record(Box<Pending>),
    Skip {
        /// The `stats.skipped` key.
        key: String,
        uuid: Option<String>,
        parent: Option<String>,
    },
}

pub(super) fn bump(map: &mut BTreeMap<String, u64>, key: &str) {
    *map.entry(key.to_owned()).or_insert(0) += 1;
}

pub(super) fn convert_line(
    obj: &Map<String, Value>,
    skipped: &mut BTreeMap<String, u64>,
) -> Result<Line, String> {
    let line_type = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(other) => {
            return Err(format!(
                "field `type` must be a string, found {}",
                json_type(other)
            ));
        }
        None => return Err("field `type` is missing".into()),
    };
    let kind = match line_type {
        "user" => RecordKind::User,
        "assistant" => RecordKind::Assistant,
        "system" => RecordKind::System,
        "attachment" => RecordKind::Attachment,
        // `progress`, `file-history-snapshot`, `queue-operation`, `summary` and whatever
        // later Claude Code versions add: UI state, not conversation. Their uuids are kept
        // (leniently: a skipped line is never a reason to reject) for relinking.
        other => {
            return Ok(Line::Skip {
                key: other.to_owned(),
                uuid: obj.get("uuid").and_then(Value::as_str).map(str::to_owned),
                parent: obj
                    .get("parentUuid")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        }
    };

    let mut record = RecordInput {
        uuid: record_uuid(obj)?,
        parent_uuid: opt_str(obj, "parentUuid", "")?,
        kind: Some(kind),
        timestamp: timestamp(obj)?,
        is_meta: flag(obj, "isMeta")?,
        is_sidechain: flag(obj, "isSidechain")?,
        is_compact_summary: flag(obj, "isCompactSummary")?,
        is_virtual: flag(obj, "isVisibleInTranscriptOnly")?,
        ..RecordInput::default()
    };
    let mut claude_code = Map::new();

    match kind {
        RecordKind::User | RecordKind::Assistant => {
            let message = match obj.get("message") {
                Some(Value::Object(m)) => m,
                Some(other) => {
                    return Err(format!(
                        "field `message` must be an object, found {}",
                        json_type(other)
                    ));
                }
                None => return Err(format!("{line_type} line has no `message`")),
            };
            record.content = content(message, kind, skipped, &mut claude_code)?;
            if record.content.is_empty() {
                // An empty message is not a valid ctxd record, and it carries nothing to
                // lose; skip it but keep its uuid so children can be relinked over it.
                return Ok(Line::Skip {
                    key: format!("empty:{line_type}"),
                    uuid: record.uuid,
                    parent: record.parent_uuid,
                });
            }
            let mut known: &[&str] = &["role", "content", "type"];
            if kind == RecordKind::Assistant {
                record.message_id = opt_str(message, "id", "message.")?;
                record.model = opt_str(message, "model", "message.")?;
                record.stop_reason = opt_str(message, "stop_reason", "message.")?;
                record.usage = usage(message.get("usage"))?;
                known = &[
                    "role",
                    "content",
                    "type",
                    "id",
                    "model",
                    "stop_reason",
                    "usage",
                ];
            }
            // `stop_sequence` (mostly null), `context_management`, ...: kept when they say
            // something, so a replay can still see them.
            let extra: Map<String, Value> = message
                .iter()
                .filter(|(k, v)| !known.contains(&k.as_str()) && !v.is_null())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if !extra.is_empty() {
                claude_code.insert("message".into(), Value::Object(extra));
            }
            keep_extra_fields(obj, &["message"], &mut claude_code);
        }
        RecordKind::Attachment => {
            let attachment = obj
                .get("attachment")
                .ok_or("attachment line has no `attachment`")?;
            if !attachment.is_object() {
                return Err(format!(
                    "field `attachment` must be an object, found {}",
                    json_type(attachment)
                ));
            }
            if !matches!(attachment.get("type"), Some(Value::String(t)) if !t.is_empty()) {
                return Err("field `attachment.type` must be a non-empty string".into());
            }
            record.attachment = Some(attachment.clone());
            keep_extra_fields(obj, &["attachment"], &mut claude_code);
        }
        RecordKind::System => {
            let subtype = opt_str(obj, "subtype", "")?.filter(|s| !s.is_empty());
            record.subtype = Some(subtype.unwrap_or_else(|| "informational".into()));
            record.data = system_data(obj);
        }
    }

    Ok(Line::Record(Box::new(Pending {
        line: 0,
        record,
        claude_code,
    })))
}

/// Copies every field that is neither envelope nor mapped into `claude_code`
/// (`toolUseResult`, `requestId`, `sourceToolAssistantUUID`, `agentId`, `todos`,
/// `thinkingMetadata`, `permissionMode`, `isApiErrorMessage`, ...). Copying by exclusion
/// rather than by a list keeps fields of newer Claude Code versions too.
fn keep_extra_fields(
    obj: &Map<String, Value>,
    mapped: &[&str],
    claude_code: &mut Map<String, Value>,
) {
    for (key, value) in obj {
        if !ENVELOPE.contains(&key.as_str()) && !mapped.contains(&key.as_str()) {
            claude_code.insert(key.clone(), value.clone());
        }
    }
}

/// A system line's payload: everything beyond the envelope, keys in snake_case (ctxd's
/// convention for `data`, e.g. `{"trigger":"auto","pre_tokens":167000}`), with
/// `compactMetadata` flattened so a compact boundary reads the same as a native one.
fn system_data(obj: &Map<String, Value>) -> Option<Value> {
    let mut data = Map::new();
    let mut compact = None;
    for (key, value) in obj {
        if ENVELOPE.contains(&key.as_str()) {
            continue;
        }
        if key == "compactMetadata" {
            compact = Some(value);
            continue;
        }
        data.insert(snake_case(key), value.clone());
    }
    if let Some(compact) = compact {
        match compact {
            Value::Object(fields) => {
                let mut clash = false;
                for (key, value) in fields {
                    let key = snake_case(key);
                    if data.contains_key(&key) {
                        clash = true;
                    } else {
                        data.insert(key, value.clone());
                    }
                }
                // A flattened key would overwrite a line field; keep the original whole
                // instead of losing either.
                if clash {
                    data.insert("compact_metadata".into(), compact.clone());
                }
            }
            other => {
                data.insert("compact_metadata".into(), other.clone());
            }
        }
    }
    (!data.is_empty()).then_some(Value::Object(data))
}

/// `toolUseID` → `tool_use_id`, `preTokens` → `pre_tokens`, `snake_case` unchanged.
fn snake_case(key: &str) -> String {
    heck::ToSnakeCase::to_snake_case(key)
}

fn timestamp(obj: &Map<String, Value>) -> Result<Option<String>, String> {
    let ts = opt_str(obj, "timestamp", "")?;
    if let Some(ts) = &ts {
        // Kept byte-for-byte, but checked now: the daemon would reject it at append time,
        // when the line number is no longer known.
        chrono::DateTime::parse_from_rfc3339(ts)
            .map_err(|e| format!("field `timestamp` is not RFC 3339 ({ts:?}): {e}"))?;
    }
    Ok(ts)
}

fn content(
    message: &Map<String, Value>,
    kind: RecordKind,
    skipped: &mut BTreeMap<String, u64>,
    claude_code: &mut Map<String, Value>,
) -> Result<Vec<ContentBlock>, String> {
    match message.get("content") {
        Some(Value::String(s)) if s.is_empty() => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![ContentBlock::text(s.clone())]),
        Some(Value::Array(blocks)) => {
            let mut extras = Vec::new();
            let mut ctx = BlockCtx {
                skipped,
                extras: &mut extras,
            };
            let out = blocks
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    let path = format!("message.content[{i}]");
                    let block = convert_block(b, &path, &mut ctx)?;
                    check_role(&block, kind, &path)?;
                    Ok(block)
                })
                .collect::<Result<Vec<_>, String>>()?;
            if !extras.is_empty() {
                claude_code.insert("block_extras".into(), Value::Array(extras));
            }
            Ok(out)
        }
        Some(other) => Err(format!(
            "field `message.content` must be a string or an array, found {}",
            json_type(other)
        )),
        None => Err("field `message.content` is missing".into()),
    }
}

struct BlockCtx<'a> {
    skipped: &'a mut BTreeMap<String, u64>,
    /// `{"path": ..., "fields": {...}}` for fields of known blocks that ctxd's block types
    /// have no slot for (e.g. `caller` on `tool_use`, `citations` on `text`).
    extras: &'a mut Vec<Value>,
}

impl BlockCtx<'_> {
    fn keep_extras(&mut self, block: &Map<String, Value>, path: &str, known: &[&str]) {
        let fields: Map<String, Value> = block
            .iter()
            // `cache_control` is ctxd's to place; a transcript's markers are stale.
            .filter(|(k, _)| {
                !matches!(k.as_str(), "type" | "cache_control") && !known.contains(&k.as_str())
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !fields.is_empty() {
            let mut entry = Map::new();
            entry.insert("path".into(), Value::String(path.to_owned()));
            entry.insert("fields".into(), Value::Object(fields));
            self.extras.push(Value::Object(entry));
        }
    }

    /// ctxd has no block for this type; a text block holding its JSON keeps the data and
    /// keeps it visible, and the count says it happened.
    fn unknown(&mut self, block_type: &str, block: &Value) -> String {
        bump(self.skipped, &format!("block:{block_type}"));
        format!(
            "[imported Claude Code content block of unsupported type `{block_type}`, kept as JSON]\n{block}"
        )
    }
}

fn block_fields<'a>(
    block: &'a Value,
    path: &str,
) -> Result<(&'a Map<String, Value>, &'a str), String> {
    let Value::Object(fields) = block else {
        return Err(format!(
            "field `{path}` must be an object, found {}",
            json_type(block)
        ));
    };
    match fields.get("type") {
        Some(Value::String(t)) => Ok((fields, t.as_str())),
        Some(other) => Err(format!(
            "field `{path}.type` must be a string, found {}",
            json_type(other)
        )),
        None => Err(format!("field `{path}.type` is missing")),
    }
}

fn convert_block(
    block: &Value,
    path: &str,
    ctx: &mut BlockCtx<'_>,
) -> Result<ContentBlock, String> {
    let (fields, block_type) = block_fields(block, path)?;
    let path_dot = format!("{path}.");
    let converted = match block_type {
        "text" => {
            ctx.keep_extras(fields, path, &["text"]);
            ContentBlock::text(req_str(fields, "text", &path_dot)?)
        }
        "image" => {
            ctx.keep_extras(fields, path, &["source"]);
            ContentBlock::Image {
                source: media_source(fields, &path_dot)?,
                cache_control: None,
            }
        }
        "document" => {
            ctx.keep_extras(fields, path, &["source", "title"]);
            ContentBlock::Document {
                source: media_source(fields, &path_dot)?,
                title: opt_str(fields, "title", &path_dot)?,
                cache_control: None,
            }
        }
        "thinking" => {
            ctx.keep_extras(fields, path, &["thinking", "signature"]);
            ContentBlock::Thinking {
                thinking: req_str(fields, "thinking", &path_dot)?,
                signature: opt_str(fields, "signature", &path_dot)?.unwrap_or_default(),
            }
        }
        "redacted_thinking" => {
            ctx.keep_extras(fields, path, &["data"]);
            ContentBlock::RedactedThinking {
                data: req_str(fields, "data", &path_dot)?,
            }
        }
        "tool_use" => {
            ctx.keep_extras(fields, path, &["id", "name", "input"]);
            let input = match fields.get("input") {
                Some(input @ Value::Object(_)) => input.clone(),
                Some(other) => {
                    return Err(format!(
                        "field `{path}.input` must be an object, found {}",
                        json_type(other)
                    ));
                }
                None => return Err(format!("field `{path}.input` is missing")),
            };
            ContentBlock::ToolUse {
                id: req_nonempty(fields, "id", &path_dot)?,
                name: req_nonempty(fields, "name", &path_dot)?,
                input,
                cache_control: None,
            }
        }
        "tool_result" => {
            ctx.keep_extras(fields, path, &["tool_use_id", "content", "is_error"]);
            let is_error = match fields.get("is_error") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(other) => {
                    return Err(format!(
                        "field `{path}.is_error` must be a boolean, found {}",
                        json_type(other)
                    ));
                }
            };
            ContentBlock::ToolResult {
                tool_use_id: req_nonempty(fields, "tool_use_id", &path_dot)?,
                content: tool_result_content(fields.get("content"), path, ctx)?,
                is_error,
                cache_control: None,
                cache_reference: None,
            }
        }
        other => ContentBlock::text(ctx.unknown(other, block)),
    };
    Ok(converted)
}

fn tool_result_content(
    content: Option<&Value>,
    path: &str,
    ctx: &mut BlockCtx<'_>,
) -> Result<ToolResultContent, String> {
    match content {
        None | Some(Value::Null) => Ok(ToolResultContent::default()),
        Some(Value::String(s)) => Ok(ToolResultContent::Text(s.clone())),
        Some(Value::Array(blocks)) => {
            let mut out = Vec::with_capacity(blocks.len());
            for (i, block) in blocks.iter().enumerate() {
                let path = format!("{path}.content[{i}]");
                let path_dot = format!("{path}.");
                let (fields, block_type) = block_fields(block, &path)?;
                out.push(match block_type {
                    "text" => {
                        ctx.keep_extras(fields, &path, &["text"]);
                        ToolResultBlock::Text {
                            text: req_str(fields, "text", &path_dot)?,
                        }
                    }
                    "image" => {
                        ctx.keep_extras(fields, &path, &["source"]);
                        ToolResultBlock::Image {
                            source: media_source(fields, &path_dot)?,
                        }
                    }
                    "document" => {
                        ctx.keep_extras(fields, &path, &["source", "title"]);
                        ToolResultBlock::Document {
                            source: media_source(fields, &path_dot)?,
                            title: opt_str(fields, "title", &path_dot)?,
                        }
                    }
                    // Tool search results: the tools they name count as discovered.
                    "tool_reference" => {
                        ctx.keep_extras(fields, &path, &["tool_name"]);
                        ToolResultBlock::ToolReference {
                            tool_name: req_nonempty(fields, "tool_name", &path_dot)?,
                        }
                    }
                    other => ToolResultBlock::Text {
                        text: ctx.unknown(other, block),
                    },
                });
            }
            Ok(ToolResultContent::Blocks(out))
        }
        Some(other) => Err(format!(
            "field `{path}.content` must be a string or an array, found {}",
            json_type(other)
        )),
    }
}

fn media_source(fields: &Map<String, Value>, path: &str) -> Result<MediaSource, String> {
    let source = fields
        .get("source")
        .ok_or_else(|| format!("field `{path}source` is missing"))?;
    let source: MediaSource = serde_json::from_value(source.clone())
        .map_err(|e| format!("field `{path}source` is not a valid media source: {e}"))?;
    // An empty payload is accepted by the type but rejected by the daemon.
    let empty = match &source {
        MediaSource::Base64 { media_type, data } | MediaSource::Text { media_type, data } => {
            media_type.is_empty() || data.is_empty()
        }
        MediaSource::Url { url } => url.is_empty(),
        MediaSource::File { file_id } => file_id.is_empty(),
    };
    if empty {
        return Err(format!("field `{path}source` has an empty field"));
    }
    Ok(source)
}

/// The Messages API's roles: users send results and media, assistants call tools and
/// think. A transcript that mixes them up would fail at append time, without a line number.
fn check_role(block: &ContentBlock, kind: RecordKind, path: &str) -> Result<(), String> {
    let allowed = match kind {
        RecordKind::User => !matches!(
            block,
            ContentBlock::ToolUse { .. }
                | ContentBlock::Thinking { .. }
                | ContentBlock::RedactedThinking { .. }
        ),
        RecordKind::Assistant => !matches!(
            block,
            ContentBlock::ToolResult { .. }
                | ContentBlock::Image { .. }
                | ContentBlock::Document { .. }
        ),
        RecordKind::System | RecordKind::Attachment => false,
    };
    if allowed {
        Ok(())
    } else {
        Err(format!(
            "field `{path}`: a {} block is not allowed in a {} line",
            block.type_name(),
            kind.as_str()
        ))
    }
}

/// A record's own uuid, held to the daemon's id rules so a bad one is reported with its line.
fn record_uuid(obj: &Map<String, Value>) -> Result<Option<String>, String> {
    let uuid = opt_str(obj, "uuid", "")?;
    if let Some(u) = &uuid
        && (u.is_empty() || u.len() > 128 || u.chars().any(|c| c.is_whitespace() || c.is_control()))
    {
        return Err(format!(
            "field `uuid` must be a non-empty id of at most 128 characters without whitespace, found {u:?}"
        ));
    }
    Ok(uuid)
}

fn usage(value: Option<&Value>) -> Result<Option<Usage>, String> {
    let fields = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(fields)) => fields,
        Some(other) => {
            return Err(format!(
                "field `message.usage` must be an object, found {}",
                json_type(other)
            ));
        }
    };
    // Only the four token counts; `service_tier`, `cache_creation`, `server_tool_use` ...
    // describe billing, not context size.
    let tokens = |key: &str| -> Result<u64, String> {
        match fields.get(key) {
            None | Some(Value::Null) => Ok(0),
            Some(v) => v.as_u64().ok_or_else(|| {
                format!("field `message.usage.{key}` must be a non-negative integer, found {v}")
            }),
        }
    };
    Ok(Some(Usage {
        input_tokens: tokens("input_tokens")?,
        output_tokens: tokens("output_tokens")?,
        cache_creation_input_tokens: tokens("cache_creation_input_tokens")?,
        cache_read_input_tokens: tokens("cache_read_input_tokens")?,
    }))
}

/// `path` is the prefix of `key` in messages (`""` or `"message.content[2]."`).
fn opt_str(obj: &Map<String, Value>, key: &str, path: &str) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "field `{path}{key}` must be a string, found {}",
            json_type(other)
        )),
    }
}

fn req_str(obj: &Map<String, Value>, key: &str, path: &str) -> Result<String, String> {
    opt_str(obj, key, path)?.ok_or_else(|| format!("field `{path}{key}` is missing"))
}

fn req_nonempty(obj: &Map<String, Value>, key: &str, path: &str) -> Result<String, String> {
    let s = req_str(obj, key, path)?;
    if s.is_empty() {
        return Err(format!("field `{path}{key}` must not be empty"));
    }
    Ok(s)
}

fn flag(obj: &Map<String, Value>, key: &str) -> Result<bool, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(format!(
            "field `{key}` must be a boolean, found {}",
            json_type(other)
        )),
    }
}

pub(super) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::snake_case;

    #[test]
    fn snake_case_keys() {
        assert_eq!(snake_case("toolUseID"), "tool_use_id");
        assert_eq!(snake_case("preTokens"), "pre_tokens");
        assert_eq!(snake_case("URLPath"), "url_path");
        assert_eq!(snake_case("already_snake"), "already_snake");
        assert_eq!(snake_case("level"), "level");
    }
}
