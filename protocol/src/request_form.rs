//! A block as a request may hold it. A response dumped by the SDK
//! (`model_dump(mode="json")`) names every field its models define, unset ones as
//! `null` (`caller`, `toolset_name`, `citations`, a citation's `file_id`), and a citation
//! may carry a `file_id` that only responses define. The SDK's request types refuse
//! them, so a compile leaves them out while the record keeps the block as it came.
//!
//! Only the types the public request types define are looked into: a block of another
//! type (a beta's `compaction`, whose `content: null` says the compaction failed; what
//! the API adds later) goes out as it came, nulls included.

use serde_json::{Map, Value};

use crate::{ContentBlock, Extra, MediaSource, ToolResultBlock, ToolResultContent};

/// The block types of the public request types that ctxd keeps whole
/// ([`ContentBlock::Other`], [`ToolResultBlock::Other`]) rather than decoding.
const PUBLIC_OTHER_TYPES: &[&str] = &[
    "bash_code_execution_tool_result",
    "code_execution_tool_result",
    "container_upload",
    "search_result",
    "server_tool_use",
    "text_editor_code_execution_tool_result",
    "tool_search_tool_result",
    "web_fetch_tool_result",
    "web_search_tool_result",
];

fn is_public(o: &Map<String, Value>) -> bool {
    o.get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| PUBLIC_OTHER_TYPES.contains(&t))
}

/// Keys a request type requires even when `null`: a citation's document or result title.
const CITATION_NULLABLE: &[&str] = &["document_title", "title"];

/// A citation's keys that only response types define.
const CITATION_RESPONSE_ONLY: &[&str] = &["file_id"];

/// Keys whose value is the model's or a tool's own (a tool call's arguments): a `null`
/// there is data, not an unset field.
const OPAQUE: &[&str] = &["input"];

fn is_citation(o: &Map<String, Value>) -> bool {
    o.get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.ends_with("_location"))
}

/// Whether key `k` holding `v` of an object (`citation`: the object is one) is left out
/// of a request.
fn left_out(citation: bool, k: &str, v: &Value) -> bool {
    if citation && CITATION_RESPONSE_ONLY.contains(&k) {
        return true;
    }
    v.is_null() && !(citation && CITATION_NULLABLE.contains(&k))
}

/// Whether `o`, at any depth, holds nothing a request leaves out.
fn clean(o: &Map<String, Value>, citation: bool) -> bool {
    o.iter()
        .all(|(k, v)| !left_out(citation, k, v) && (OPAQUE.contains(&k.as_str()) || clean_value(v)))
}

fn clean_value(v: &Value) -> bool {
    match v {
        Value::Object(o) => clean(o, is_citation(o)),
        Value::Array(a) => a.iter().all(clean_value),
        _ => true,
    }
}

fn tidy(o: &mut Map<String, Value>, citation: bool) {
    o.retain(|k, v| !left_out(citation, k, v));
    for (k, v) in o.iter_mut() {
        if !OPAQUE.contains(&k.as_str()) {
            tidy_value(v);
        }
    }
}

fn tidy_value(v: &mut Value) {
    match v {
        Value::Object(o) => {
            let citation = is_citation(o);
            tidy(o, citation);
        }
        Value::Array(a) => a.iter_mut().for_each(tidy_value),
        _ => {}
    }
}

/// The maps of fields ctxd keeps as they came, in a block and the blocks and sources
/// inside it: the only places a response's nulls and response-only keys can be. Written
/// once for shared and for mutable borrows.
macro_rules! kept_fields {
    ($fields:ident, $source_fields:ident $(, $m:tt)?) => {
        fn $fields(b: &$($m)? ContentBlock) -> Vec<&$($m)? Extra> {
            let mut out = Vec::new();
            match b {
                ContentBlock::Text { extra, .. }
                | ContentBlock::Thinking { extra, .. }
                | ContentBlock::RedactedThinking { extra, .. }
                | ContentBlock::ToolUse { extra, .. } => out.push(extra),
                ContentBlock::Other(extra) if is_public(extra) => out.push(extra),
                ContentBlock::Other(_) => {}
                ContentBlock::Image { source, extra, .. }
                | ContentBlock::Document { source, extra, .. } => {
                    out.push(extra);
                    out.extend($source_fields(source));
                }
                ContentBlock::ToolResult { content, extra, .. } => {
                    out.push(extra);
                    if let ToolResultContent::Blocks(inner) = content {
                        for b in inner {
                            match b {
                                ToolResultBlock::Text { extra, .. }
                                | ToolResultBlock::ToolReference { extra, .. } => out.push(extra),
                                ToolResultBlock::Other(extra) if is_public(extra) => {
                                    out.push(extra);
                                }
                                ToolResultBlock::Other(_) => {}
                                ToolResultBlock::Image { source, extra }
                                | ToolResultBlock::Document { source, extra, .. } => {
                                    out.push(extra);
                                    out.extend($source_fields(source));
                                }
                            }
                        }
                    }
                }
            }
            out
        }

        fn $source_fields(s: &$($m)? MediaSource) -> Option<&$($m)? Extra> {
            match s {
                MediaSource::Base64 { extra, .. }
                | MediaSource::Url { extra, .. }
                | MediaSource::Text { extra, .. }
                | MediaSource::File { extra, .. } => Some(extra),
                MediaSource::Other(_) => None,
            }
        }
    };
}

kept_fields!(kept_fields, source_fields);
kept_fields!(kept_fields_mut, source_fields_mut, mut);

impl ContentBlock {
    /// Whether a request may hold the block as it is: no field, at any depth, that is
    /// `null` where the request types do not require it, and no citation key only
    /// responses define. A tool call's `input` is the model's and is never looked into.
    pub fn is_request_form(&self) -> bool {
        kept_fields(self)
            .into_iter()
            .all(|o| clean(o, is_citation(o)))
    }

    /// Leaves out of the block what [`ContentBlock::is_request_form`] refuses; every
    /// other field stays as it came.
    pub fn to_request_form(&mut self) {
        for o in kept_fields_mut(self) {
            let citation = is_citation(o);
            tidy(o, citation);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn block(v: Value) -> ContentBlock {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_responses_nulls_and_response_only_keys_are_left_out_at_any_depth() {
        let mut b = block(json!({"type": "text", "text": "t", "citations": [
            {"type": "char_location", "cited_text": "x", "document_index": 0,
             "document_title": null, "start_char_index": 0, "end_char_index": 1, "file_id": "f"}
        ]}));
        assert!(!b.is_request_form());
        b.to_request_form();
        assert!(b.is_request_form());
        assert_eq!(
            serde_json::to_value(&b).unwrap(),
            json!({"type": "text", "text": "t", "citations": [
                {"type": "char_location", "cited_text": "x", "document_index": 0,
                 "document_title": null, "start_char_index": 0, "end_char_index": 1}
            ]})
        );

        let mut b = block(
            json!({"type": "server_tool_use", "id": "s", "name": "web_search",
                                 "input": {"q": null}, "caller": null,
                                 "nested": [{"k": null, "v": 1}]}),
        );
        assert!(!b.is_request_form());
        b.to_request_form();
        assert_eq!(
            serde_json::to_value(&b).unwrap(),
            json!({"type": "server_tool_use", "id": "s", "name": "web_search",
                   "input": {"q": null}, "nested": [{"v": 1}]})
        );

        let plain =
            block(json!({"type": "tool_use", "id": "t", "name": "n", "input": {"a": null}}));
        assert!(plain.is_request_form());
        // A type the public request types do not define goes out as it came.
        let failed =
            block(json!({"type": "compaction", "content": null, "encrypted_content": null}));
        assert!(failed.is_request_form());
    }
}
