//! Validation of what clients send: appended records (a batch is checked whole before
//! anything is written; the first problem is reported with the JSON path of the
//! offending field) and a session's model, settings, system prompt, tools and date.

use std::collections::{BTreeSet, HashSet};

use ctxd_protocol::{
    ContentBlock, MediaSource, ModelProfile, ProviderConfig, RecordInput, RecordKind,
    SectionCaching, ServerCompactionMode, SessionSettings, SummariserConfig, SystemPrompt,
    ToolResultBlock, ToolResultContent, ToolSpec,
};

use ctxd_pipeline::limits::{MAX_COLLECT_TIMEOUT_MS, MAX_PROVIDER_RETRIES};
use ctxd_pipeline::limits::{MAX_CONTEXT_WINDOW, MAX_USAGE_TOKENS};
use ctxd_pipeline::thresholds;
use ctxd_store::error::{Error, Result};

pub(crate) fn check_model(m: &ModelProfile) -> Result<()> {
    if m.model.is_empty() {
        return Err(Error::invalid("model.model", "must not be empty"));
    }
    let min = thresholds::MIN_CONTEXT_WINDOW;
    if !(min..=MAX_CONTEXT_WINDOW).contains(&m.context_window) {
        return Err(Error::invalid(
            "model.context_window",
            format!(
                "must be between {min} and {MAX_CONTEXT_WINDOW} tokens (a smaller window leaves \
                 no room for the system prompt, the tools and a turn)"
            ),
        ));
    }
    if m.max_output_tokens == 0 || m.max_output_tokens >= m.context_window {
        return Err(Error::invalid(
            "model.max_output_tokens",
            "must be positive and smaller than the context window",
        ));
    }
    Ok(())
}

/// The input tokens past which the provider compacts when `trigger_tokens` is absent
/// (the API's default for `compact_20260112`).
const SERVER_DEFAULT_TRIGGER: u64 = 150_000;

/// The provider's threshold compaction makes ctxd's own stand aside, so its trigger must
/// come before the compile's blocking limit: past it the compile refuses the request the
/// provider would have compacted, and nothing compacts.
fn check_server_trigger(s: &SessionSettings, m: &ModelProfile) -> Result<()> {
    let Some(SummariserConfig::Server {
        mode: ServerCompactionMode::Threshold,
        trigger_tokens,
        ..
    }) = &s.summariser
    else {
        return Ok(());
    };
    let limit = thresholds::blocking_limit(m, s);
    let trigger = trigger_tokens.unwrap_or(SERVER_DEFAULT_TRIGGER);
    if trigger >= limit {
        let given = match trigger_tokens {
            Some(t) => format!("{t}"),
            None => format!("absent, the provider's default of {SERVER_DEFAULT_TRIGGER}"),
        };
        return Err(Error::invalid(
            "settings.summariser.trigger_tokens",
            format!(
                "must be below the blocking limit of model {} ({limit} tokens of its \
                 {}-token window; it is {given}): past the limit ctxd refuses the request \
                 the provider would compact",
                m.model, m.context_window
            ),
        ));
    }
    Ok(())
}

/// Settings are checked against the model they run with: the blocking margin must leave
/// some of the effective window usable.
pub(crate) fn check_settings(s: &SessionSettings, m: &ModelProfile) -> Result<()> {
    if let Some(provider) = &s.provider {
        check_provider(provider)?;
    }
    if let Some(cm) = &s.provider_context_management {
        for (i, e) in cm.edits.iter().enumerate() {
            if !e.get("type").is_some_and(serde_json::Value::is_string) {
                return Err(Error::invalid(
                    format!("settings.provider_context_management.edits[{i}].type"),
                    "every edit names its type (clear_tool_uses_20250919, clear_thinking_20251015, ...)",
                ));
            }
        }
    }
    if let Some(p) = s.autocompact_pct_override
        && !(1..=100).contains(&p)
    {
        return Err(Error::invalid(
            "settings.autocompact_pct_override",
            "must be 1..=100",
        ));
    }
    let window = thresholds::effective_window(m);
    if let Some(margin) = s.blocking_limit_margin
        && margin >= window
    {
        return Err(Error::invalid(
            "settings.blocking_limit_margin",
            format!("must be smaller than the effective window ({window} tokens)"),
        ));
    }
    check_server_trigger(s, m)?;
    let c = &s.collapse;
    for (field, pct) in [
        ("stage_at_pct", c.stage_at_pct),
        ("commit_at_pct", c.commit_at_pct),
        ("block_at_pct", c.block_at_pct),
        ("target_pct", c.target_pct),
    ] {
        if !(1..=100).contains(&pct) {
            return Err(Error::invalid(
                format!("settings.collapse.{field}"),
                "must be 1..=100",
            ));
        }
    }
    // Collapse stages below the autocompact threshold or never: autocompact, firing
    // first, would compact what collapse was meant to fold, every time.
    let threshold = thresholds::autocompact_threshold(m, s);
    let stage_at = u128::from(window) * u128::from(c.stage_at_pct) / 100;
    if c.enabled && s.autocompact != Some(false) && stage_at >= u128::from(threshold) {
        return Err(Error::invalid(
            "settings.collapse.stage_at_pct",
            format!(
                "collapse would stage at {stage_at} tokens ({}% of the effective window), not \
                 below the autocompact threshold ({threshold} tokens), so autocompact would \
                 always run first and nothing would ever be staged; lower stage_at_pct, or \
                 raise or drop autocompact_pct_override",
                c.stage_at_pct
            ),
        ));
    }
    if c.span_rounds == 0 {
        return Err(Error::invalid(
            "settings.collapse.span_rounds",
            "must be at least 1",
        ));
    }
    if let Some(ms) = s.attachments.collect_timeout_ms
        && !(1..=MAX_COLLECT_TIMEOUT_MS).contains(&ms)
    {
        return Err(Error::invalid(
            "settings.attachments.collect_timeout_ms",
            format!("must be 1..={MAX_COLLECT_TIMEOUT_MS} milliseconds"),
        ));
    }
    Ok(())
}

pub(crate) fn check_system(s: &SystemPrompt) -> Result<()> {
    for (i, sec) in s.dynamic_sections.iter().enumerate() {
        if sec.caching == Some(SectionCaching::Uncached)
            && sec.reason.as_deref().is_none_or(str::is_empty)
        {
            return Err(Error::invalid(
                format!("system.dynamic[{i}].reason"),
                "uncached sections break the prompt cache when they change; state why",
            ));
        }
    }
    for (i, sec) in s.static_sections.iter().enumerate() {
        if sec.caching.is_some() {
            return Err(Error::invalid(
                format!("system.static[{i}].caching"),
                "static sections are always part of the cached prefix",
            ));
        }
    }
    Ok(())
}

pub(crate) fn check_tools(tools: &[ToolSpec]) -> Result<()> {
    let mut names = BTreeSet::new();
    for (i, t) in tools.iter().enumerate() {
        if t.name.is_empty() {
            return Err(Error::invalid(
                format!("tools[{i}].name"),
                "must not be empty",
            ));
        }
        if !names.insert(t.name.as_str()) {
            return Err(Error::invalid(format!("tools[{i}].name"), "appears twice"));
        }
        if t.server_type.is_none()
            && let Some(s) = &t.input_schema
            && !s.is_object()
        {
            return Err(Error::invalid(
                format!("tools[{i}].input_schema"),
                "must be a JSON Schema object",
            ));
        }
    }
    Ok(())
}

pub(crate) fn check_date(d: &str) -> Result<()> {
    chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d")
        .map(|_| ())
        .map_err(|_| Error::invalid("start_date", "must be YYYY-MM-DD"))
}

/// `records[i]`, written only into the message of an error: a batch that passes its
/// checks formats no path.
#[derive(Clone, Copy)]
struct RecordAt(usize);

impl std::fmt::Display for RecordAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "records[{}]", self.0)
    }
}

fn bad(path: String, msg: &str) -> Error {
    Error::invalid(path, msg)
}

fn check_usage(path: &dyn std::fmt::Display, u: &ctxd_protocol::Usage) -> Result<()> {
    for (field, v) in [
        ("input_tokens", u.input_tokens),
        ("output_tokens", u.output_tokens),
        ("cache_creation_input_tokens", u.cache_creation_input_tokens),
        ("cache_read_input_tokens", u.cache_read_input_tokens),
    ] {
        if v > MAX_USAGE_TOKENS {
            return Err(bad(
                format!("{path}.{field}"),
                &format!("must be at most {MAX_USAGE_TOKENS}"),
            ));
        }
    }
    Ok(())
}

fn check_source(path: &dyn std::fmt::Display, s: &MediaSource) -> Result<()> {
    match s {
        MediaSource::Base64 {
            media_type, data, ..
        }
        | MediaSource::Text {
            media_type, data, ..
        } => {
            if media_type.is_empty() {
                return Err(bad(format!("{path}.media_type"), "must not be empty"));
            }
            if data.is_empty() {
                return Err(bad(format!("{path}.data"), "must not be empty"));
            }
        }
        MediaSource::Url { url, .. } if url.is_empty() => {
            return Err(bad(format!("{path}.url"), "must not be empty"));
        }
        MediaSource::File { file_id, .. } if file_id.is_empty() => {
            return Err(bad(format!("{path}.file_id"), "must not be empty"));
        }
        _ => {}
    }
    Ok(())
}

pub(crate) fn check_block(
    path: &dyn std::fmt::Display,
    kind: RecordKind,
    b: &mut ContentBlock,
) -> Result<()> {
    let marked = match b {
        ContentBlock::Other(fields) => fields.get("cache_control").is_some_and(|c| !c.is_null()),
        _ => b.cache_control().is_some(),
    };
    if marked {
        return Err(bad(
            format!("{path}.cache_control"),
            "cache markers are placed by ctxd; do not send them",
        ));
    }
    let allowed = match kind {
        RecordKind::User => !matches!(
            b,
            ContentBlock::ToolUse { .. }
                | ContentBlock::Thinking { .. }
                | ContentBlock::RedactedThinking { .. }
        ),
        RecordKind::Assistant => !matches!(
            b,
            ContentBlock::ToolResult { .. }
                | ContentBlock::Image { .. }
                | ContentBlock::Document { .. }
        ),
        RecordKind::System | RecordKind::Attachment => false,
    };
    if !allowed {
        return Err(bad(
            format!("{path}.type"),
            &format!(
                "a {} block is not allowed in a {} record",
                b.type_name(),
                kind.as_str()
            ),
        ));
    }
    match b {
        ContentBlock::ToolUse {
            id, name, input, ..
        } => {
            if id.is_empty() {
                return Err(bad(format!("{path}.id"), "must not be empty"));
            }
            if name.is_empty() {
                return Err(bad(format!("{path}.name"), "must not be empty"));
            }
            if !input.is_object() {
                return Err(bad(format!("{path}.input"), "must be a JSON object"));
            }
        }
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            cache_reference,
            ..
        } => {
            if cache_reference.is_some() {
                return Err(bad(
                    format!("{path}.cache_reference"),
                    "cache references are placed by ctxd; do not send them",
                ));
            }
            if tool_use_id.is_empty() {
                return Err(bad(format!("{path}.tool_use_id"), "must not be empty"));
            }
            if let ToolResultContent::Blocks(blocks) = content {
                for (j, inner) in blocks.iter().enumerate() {
                    match inner {
                        ToolResultBlock::Image { source, .. }
                        | ToolResultBlock::Document { source, .. } => {
                            check_source(&format!("{path}.content[{j}].source"), source)?;
                        }
                        ToolResultBlock::Text { .. } => {}
                        ToolResultBlock::ToolReference { tool_name, .. }
                            if tool_name.is_empty() =>
                        {
                            return Err(bad(
                                format!("{path}.content[{j}].tool_name"),
                                "must not be empty",
                            ));
                        }
                        ToolResultBlock::ToolReference { .. } | ToolResultBlock::Other(_) => {}
                    }
                }
            }
        }
        ContentBlock::Image { source, .. } | ContentBlock::Document { source, .. } => {
            check_source(&format!("{path}.source"), source)?;
        }
        _ => {}
    }
    Ok(())
}

fn check_uuid(path: String, u: &str) -> Result<()> {
    if u.is_empty() || u.len() > 128 || u.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad(
            path,
            "must be a non-empty id of at most 128 characters without whitespace",
        ));
    }
    Ok(())
}

/// Bytes of `r` serialised as JSON, counted without building the text.
fn json_size(r: &RecordInput) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    // Serialising plain data into a counter cannot fail; were it to, count it as huge.
    match serde_json::to_writer(&mut c, r) {
        Ok(()) => c.0,
        Err(_) => usize::MAX,
    }
}

/// Checks one batch; its size as JSON, in bytes. `records` may be adjusted in place
/// (nothing yet); the caller assigns uuids, sequence numbers and timestamps afterwards.
pub fn validate_batch(records: &mut [RecordInput]) -> Result<usize> {
    check(records, 0, true)
}

/// [`validate_batch`] but for each record's size, of a slice of a batch that starts at
/// the batch's record `first` (which is how its errors name the records; uuids repeated
/// across slices are the caller's to find). For a caller that serialises the records
/// before any write and checks the JSON it will store with [`check_stored_size`],
/// instead of serialising every record twice (an import).
pub(crate) fn validate_fields_from(records: &mut [RecordInput], first: usize) -> Result<()> {
    check(records, first, false).map(drop)
}

/// The size bound of [`validate_batch`] on record `index`'s JSON as stored.
pub(crate) fn check_stored_size(index: usize, bytes: usize) -> Result<()> {
    check_size(RecordAt(index), bytes)
}

fn check_size(p: RecordAt, size: usize) -> Result<()> {
    if size > ctxd_pipeline::limits::MAX_RECORD_BYTES {
        return Err(bad(
            p.to_string(),
            &format!(
                "is {size} bytes of JSON; a record may hold at most {} (MAX_RECORD_BYTES)",
                ctxd_pipeline::limits::MAX_RECORD_BYTES
            ),
        ));
    }
    Ok(())
}

fn check(records: &mut [RecordInput], first: usize, sized: bool) -> Result<usize> {
    let mut seen = HashSet::new();
    let mut total = 0usize;
    for (i, r) in records.iter_mut().enumerate() {
        let p = RecordAt(first + i);
        if sized {
            let size = json_size(r);
            total = total.saturating_add(size);
            check_size(p, size)?;
        }
        r.lift_message()
            .map_err(|msg| Error::invalid(format!("{p}.message"), msg))?;
        let Some(kind) = r.kind else {
            return Err(bad(
                format!("{p}.type"),
                "missing: one of user, assistant, system, attachment",
            ));
        };
        if let Some(u) = &r.uuid {
            check_uuid(format!("{p}.uuid"), u)?;
            if !seen.insert(u.clone()) {
                return Err(bad(format!("{p}.uuid"), "appears twice in this batch"));
            }
        }
        if let Some(u) = &r.parent_uuid {
            check_uuid(format!("{p}.parent_uuid"), u)?;
        }
        if let Some(t) = &r.timestamp
            && chrono::DateTime::parse_from_rfc3339(t).is_err()
        {
            return Err(bad(
                format!("{p}.timestamp"),
                "must be an RFC 3339 date-time",
            ));
        }
        if let Some(u) = &r.usage {
            if kind != RecordKind::Assistant {
                return Err(bad(
                    format!("{p}.usage"),
                    "only assistant records carry usage",
                ));
            }
            check_usage(&format_args!("{p}.usage"), u)?;
        }
        match kind {
            RecordKind::User | RecordKind::Assistant => {
                if r.content.is_empty() {
                    return Err(bad(format!("{p}.content"), "must hold at least one block"));
                }
                for (j, b) in r.content.iter_mut().enumerate() {
                    check_block(&format_args!("{p}.content[{j}]"), kind, b)?;
                }
                if r.subtype.is_some() {
                    return Err(bad(
                        format!("{p}.subtype"),
                        "only system records have a subtype",
                    ));
                }
                if r.attachment.is_some() {
                    return Err(bad(
                        format!("{p}.attachment"),
                        "only attachment records carry one",
                    ));
                }
            }
            RecordKind::System => {
                match &r.subtype {
                    Some(s) if !s.is_empty() => {}
                    _ => return Err(bad(format!("{p}.subtype"), "system records need a subtype")),
                }
                if !r.content.is_empty() {
                    return Err(bad(
                        format!("{p}.content"),
                        "system records carry data, not content",
                    ));
                }
            }
            RecordKind::Attachment => {
                let ok = r
                    .attachment
                    .as_ref()
                    .and_then(|a| a.get("type"))
                    .and_then(|t| t.as_str())
                    .is_some_and(|t| !t.is_empty());
                if !ok {
                    return Err(bad(
                        format!("{p}.attachment"),
                        "attachment records need an object with a string `type`",
                    ));
                }
                if !r.content.is_empty() {
                    return Err(bad(
                        format!("{p}.content"),
                        "attachment records carry `attachment`, not content",
                    ));
                }
            }
        }
    }
    Ok(total)
}

/// A provider's retries are bounded: each is another billed request.
fn check_provider(p: &ProviderConfig) -> Result<()> {
    let (ProviderConfig::Anthropic { max_retries, .. }
    | ProviderConfig::OpenaiCompatible { max_retries, .. }) = p;
    match max_retries {
        Some(n) if *n > MAX_PROVIDER_RETRIES => Err(Error::invalid(
            "settings.provider.max_retries",
            format!("must be at most {MAX_PROVIDER_RETRIES}"),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> RecordInput {
        serde_json::from_value(v).unwrap()
    }

    /// A record past `MAX_RECORD_BYTES` as JSON is refused by name; the bound itself is
    /// allowed, on the input as on the JSON stored.
    #[test]
    fn a_record_past_the_size_bound_is_refused_by_name() {
        let max = ctxd_pipeline::limits::MAX_RECORD_BYTES;
        let with = |n: usize| parse(json!({"type": "user", "content": "x".repeat(n)}));
        let overhead = json_size(&with(0));
        let mut batch = vec![with(1), with(max - overhead)];
        assert!(validate_batch(&mut batch).is_ok());
        let mut batch = vec![with(1), with(max - overhead + 1)];
        let e = validate_batch(&mut batch).unwrap_err().to_string();
        assert!(
            e.starts_with("records[1]:") && e.contains("MAX_RECORD_BYTES"),
            "{e}"
        );
        assert!(check_stored_size(4, max).is_ok());
        let e = check_stored_size(4, max + 1).unwrap_err().to_string();
        assert!(e.starts_with("records[4]:"), "{e}");
    }

    #[test]
    fn names_the_offending_field() {
        let mut batch = vec![
            parse(json!({"type": "user", "content": "hi"})),
            parse(
                json!({"type": "assistant", "content": [{"type": "tool_use", "id": "", "name": "Read", "input": {}}]}),
            ),
        ];
        let e = validate_batch(&mut batch).unwrap_err().to_string();
        assert!(e.starts_with("records[1].content[0].id:"), "{e}");

        let mut batch = vec![parse(
            json!({"type": "user", "content": [{"type": "tool_use", "id": "a", "name": "R", "input": {}}]}),
        )];
        assert!(
            validate_batch(&mut batch)
                .unwrap_err()
                .to_string()
                .starts_with("records[0].content[0].type")
        );

        let mut batch = vec![parse(
            json!({"type": "user", "content": "x", "timestamp": "yesterday"}),
        )];
        assert!(
            validate_batch(&mut batch)
                .unwrap_err()
                .to_string()
                .starts_with("records[0].timestamp")
        );

        let mut batch = vec![parse(json!({"type": "system"}))];
        assert!(
            validate_batch(&mut batch)
                .unwrap_err()
                .to_string()
                .starts_with("records[0].subtype")
        );

        let mut batch = vec![parse(json!({"type": "attachment", "attachment": {"x": 1}}))];
        assert!(
            validate_batch(&mut batch)
                .unwrap_err()
                .to_string()
                .starts_with("records[0].attachment")
        );

        let mut batch = vec![parse(
            json!({"type": "user", "content": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}]}),
        )];
        assert!(
            validate_batch(&mut batch)
                .unwrap_err()
                .to_string()
                .contains("cache_control")
        );

        let mut batch = vec![
            parse(json!({"type": "user", "content": "a", "uuid": "x"})),
            parse(json!({"type": "user", "content": "b", "uuid": "x"})),
        ];
        assert!(
            validate_batch(&mut batch)
                .unwrap_err()
                .to_string()
                .starts_with("records[1].uuid")
        );
    }

    #[test]
    fn usage_numbers_are_bounded() {
        let mut batch = vec![parse(
            json!({"type": "assistant", "content": "ok", "usage": {"input_tokens": u64::MAX}}),
        )];
        let e = validate_batch(&mut batch).unwrap_err().to_string();
        assert!(e.starts_with("records[0].usage.input_tokens:"), "{e}");
        let mut batch = vec![parse(
            json!({"type": "assistant", "content": "ok", "usage": {"cache_read_input_tokens": MAX_USAGE_TOKENS + 1}}),
        )];
        let e = validate_batch(&mut batch).unwrap_err().to_string();
        assert!(
            e.starts_with("records[0].usage.cache_read_input_tokens:"),
            "{e}"
        );
        let mut batch = vec![parse(
            json!({"type": "assistant", "content": "ok", "usage": {"input_tokens": MAX_USAGE_TOKENS}}),
        )];
        validate_batch(&mut batch).unwrap();
    }

    #[test]
    fn accepts_a_normal_turn() {
        let mut batch = vec![
            parse(json!({"type": "user", "content": "hi"})),
            parse(
                json!({"type": "assistant", "message_id": "m1", "usage": {"input_tokens": 5}, "content": [{"type": "thinking", "thinking": "t", "signature": "s"}, {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a"}}]}),
            ),
            parse(
                json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x", "is_error": true}]}),
            ),
            parse(json!({"type": "system", "subtype": "informational", "data": {"m": 1}})),
            parse(
                json!({"type": "attachment", "attachment": {"type": "date_change", "date": "2026-11-30"}}),
            ),
        ];
        validate_batch(&mut batch).unwrap();
    }
}
