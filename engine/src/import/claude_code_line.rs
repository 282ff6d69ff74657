//! One line of a Claude Code transcript → a record to import, or a line to skip (with
//! the key it is counted under). Pure and per line: `claude_code.rs` parses the lines,
//! joins them in file order, de-duplicates and relinks.

use std::collections::BTreeMap;

use ctxd_protocol::CLAUDE_CODE_ENVELOPE as ENVELOPE;
use ctxd_protocol::{ContentBlock, RecordInput, RecordKind, Usage};
use serde::Deserialize;
use serde_json::{Map, Value};

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
    pub(crate) record: RecordInput,
    /// 1-based source line.
    pub(crate) line: usize,
    /// Claude-Code-only fields, stored as `meta.claude_code`.
    pub(crate) claude_code: Map<String, Value>,
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

/// Converts a parsed line, taking its values rather than copying them: the text of a
/// transcript is most of what a line holds, and each of its strings is moved once.
pub(super) fn convert_line(mut obj: Map<String, Value>) -> Result<Line, String> {
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
    if RECORDED_CALL_KINDS.contains(&line_type) {
        return recorded_call_line(obj).map(|r| {
            Line::Record(Box::new(Pending {
                line: 0,
                record: r,
                claude_code: Map::new(),
            }))
        });
    }
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

    let line_type = kind.as_str();
    let mut record = RecordInput {
        uuid: record_uuid(&obj)?,
        parent_uuid: opt_str(&obj, "parentUuid", "")?,
        kind: Some(kind),
        timestamp: timestamp(&obj)?,
        is_meta: flag(&obj, "isMeta")?,
        is_sidechain: flag(&obj, "isSidechain")?,
        is_compact_summary: flag(&obj, "isCompactSummary")?,
        is_virtual: flag(&obj, "isVisibleInTranscriptOnly")?,
        ..RecordInput::default()
    };
    let mut claude_code = Map::new();

    match kind {
        RecordKind::User | RecordKind::Assistant => {
            let mut message = match obj.remove("message") {
                Some(Value::Object(m)) => m,
                Some(other) => {
                    return Err(format!(
                        "field `message` must be an object, found {}",
                        json_type(&other)
                    ));
                }
                None => return Err(format!("{line_type} line has no `message`")),
            };
            record.content = content(message.remove("content"), kind)?;
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
                record.message_id = opt_str(&message, "id", "message.")?;
                record.model = opt_str(&message, "model", "message.")?;
                record.stop_reason = opt_str(&message, "stop_reason", "message.")?;
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
            // `stop_sequence`, `container`, `context_management`, ...: the message's own,
            // kept as they came.
            let extra: Map<String, Value> = message
                .into_iter()
                .filter(|(k, _)| !known.contains(&k.as_str()))
                .collect();
            if !extra.is_empty() {
                record.message_extra = Some(extra);
            }
            keep_extra_fields(obj, &mut claude_code);
        }
        RecordKind::Attachment => {
            let attachment = obj
                .remove("attachment")
                .ok_or("attachment line has no `attachment`")?;
            if !attachment.is_object() {
                return Err(format!(
                    "field `attachment` must be an object, found {}",
                    json_type(&attachment)
                ));
            }
            if !matches!(attachment.get("type"), Some(Value::String(t)) if !t.is_empty()) {
                return Err("field `attachment.type` must be a non-empty string".into());
            }
            record.attachment = Some(attachment);
            keep_extra_fields(obj, &mut claude_code);
        }
        RecordKind::System => {
            let subtype = opt_str(&obj, "subtype", "")?.filter(|s| !s.is_empty());
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

/// Kept as system records, so a replay can size the window and compare its requests
/// with the ones sent; never rendered.
pub(crate) use ctxd_protocol::CLAUDE_CODE_RECORDED_CALLS as RECORDED_CALL_KINDS;

/// One of [`RECORDED_CALL_KINDS`] as a system record: its type is the subtype, and every
/// field beyond the envelope is kept in `data` with its own key and value (a request's
/// hashes and paths are compared as written, so nothing is renamed).
fn recorded_call_line(mut obj: Map<String, Value>) -> Result<RecordInput, String> {
    let Some(Value::String(subtype)) = obj.remove("type") else {
        return Err("field `type` must be a string".into());
    };
    let record = RecordInput {
        uuid: record_uuid(&obj)?,
        kind: Some(RecordKind::System),
        timestamp: timestamp(&obj)?,
        is_sidechain: flag(&obj, "isSidechain")?,
        subtype: Some(subtype),
        ..RecordInput::default()
    };
    let data: Map<String, Value> = obj
        .into_iter()
        .filter(|(k, _)| !ENVELOPE.contains(&k.as_str()))
        .collect();
    Ok(RecordInput {
        data: Some(Value::Object(data)),
        ..record
    })
}

/// Moves every field that is not envelope into `claude_code` (`toolUseResult`,
/// `requestId`, `sourceToolAssistantUUID`, `agentId`, `todos`, `thinkingMetadata`,
/// `permissionMode`, `isApiErrorMessage`, ...); the caller has taken the fields it maps.
/// Keeping by exclusion rather than by a list keeps fields of newer Claude Code versions
/// too.
fn keep_extra_fields(obj: Map<String, Value>, claude_code: &mut Map<String, Value>) {
    for (key, value) in obj {
        if !ENVELOPE.contains(&key.as_str()) {
            claude_code.insert(key, value);
        }
    }
}

/// A system line's payload: everything beyond the envelope, keys in snake_case (ctxd's
/// convention for `data`, e.g. `{"trigger":"auto","pre_tokens":167000}`), with
/// `compactMetadata` flattened so a compact boundary reads the same as a native one.
fn system_data(obj: Map<String, Value>) -> Option<Value> {
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
        data.insert(snake_case(&key), value);
    }
    if let Some(compact) = compact {
        match &compact {
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
            _ => {
                data.insert("compact_metadata".into(), compact);
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

fn content(content: Option<Value>, kind: RecordKind) -> Result<Vec<ContentBlock>, String> {
    match content {
        Some(Value::String(s)) if s.is_empty() => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![ContentBlock::text(s)]),
        Some(Value::Array(blocks)) => blocks
            .into_iter()
            .enumerate()
            .map(|(i, b)| {
                let path = format!("message.content[{i}]");
                convert_block(b, kind, &path)
            })
            .collect::<Result<Vec<_>, String>>(),
        Some(other) => Err(format!(
            "field `message.content` must be a string or an array, found {}",
            json_type(&other)
        )),
        None => Err("field `message.content` is missing".into()),
    }
}

/// One block of a line, decoded and checked as an append decodes and checks it, so a type
/// ctxd has no variant for is kept whole.
fn convert_block(block: Value, kind: RecordKind, path: &str) -> Result<ContentBlock, String> {
    let mut f = block_fields(block, path)?;
    // `cache_control` is ctxd's to place; a transcript's markers are stale.
    f.remove("cache_control");
    // Claude Code writes `null` for a result without content or error flag; the record
    // model's defaults say the same.
    for key in ["content", "is_error"] {
        if f.get(key).is_some_and(Value::is_null) && type_name(&f) == "tool_result" {
            f.remove(key);
        }
    }
    let mut block: ContentBlock = serde_json::from_value(Value::Object(f))
        .map_err(|e| format!("field `{path}` is not a valid content block: {e}"))?;
    check_role(&block, kind, path)?;
    // What the append would refuse (empty ids, a tool input that is not an object, a
    // media source with an empty field), said here with the line number.
    crate::validate::check_block(&format_args!("{path}"), kind, &mut block)
        .map_err(|e| e.to_string())?;
    Ok(block)
}

fn block_fields(block: Value, path: &str) -> Result<Map<String, Value>, String> {
    let Value::Object(fields) = block else {
        return Err(format!(
            "field `{path}` must be an object, found {}",
            json_type(&block)
        ));
    };
    match fields.get("type") {
        Some(Value::String(_)) => {}
        Some(other) => {
            return Err(format!(
                "field `{path}.type` must be a string, found {}",
                json_type(other)
            ));
        }
        None => return Err(format!("field `{path}.type` is missing")),
    }
    Ok(fields)
}

/// The `type` of a block [`block_fields`] has checked.
fn type_name(fields: &Map<String, Value>) -> &str {
    fields
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
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
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Object(_)) => Usage::deserialize(v)
            .map(Some)
            .map_err(|e| format!("field `message.usage` is not a valid usage: {e}")),
        Some(other) => Err(format!(
            "field `message.usage` must be an object, found {}",
            json_type(other)
        )),
    }
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
