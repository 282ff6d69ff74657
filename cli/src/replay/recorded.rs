//! The requests a Claude Code transcript recorded (2.1.3xx: `api-request` lines with their
//! `api-request-shape` and `api-request-blob` lines), rebuilt in structure, and compared
//! with the request the replay compiled for the same call.

use std::collections::{HashMap, VecDeque};

use ctxd_protocol::{RecordInput, RecordKind};
use serde::Serialize;
use serde_json::Value;

/// What a request is made of, as far as the comparison looks: system blocks and their
/// cache markers, tool names in order, message roles, and where the messages carry
/// cache markers (message, block).
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Structure {
    system_cached: Vec<bool>,
    tools: Vec<String>,
    roles: Vec<String>,
    message_marks: Vec<(usize, usize)>,
}

/// On a replay line answering a recorded call: whether ctxd's compile has the recorded
/// request's structure, and where they first differ.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RecordedRequest {
    pub structure_match: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<String>,
    pub system_blocks: usize,
    pub tools: usize,
    pub messages: usize,
}

/// The role of a recorded message whose blob the transcript does not hold.
const ANY_ROLE: &str = "*";

/// Requests whose message lists are kept to rebuild later requests from (a request
/// names its base, the one before it in practice): bounds memory on long sessions.
const KEPT_BASES: usize = 16;

/// Every recorded request of a transcript, by its id.
#[derive(Debug, Default)]
pub(super) struct Recorded {
    requests: HashMap<String, Structure>,
}

impl Recorded {
    /// Rebuilds each `api-request` in file order: its messages are the first `keep` of its
    /// base's and then the messages its `tail` names (blobs where written, else of the
    /// conversation, role unknown); its system and tools are its shape's; `cacheControl`
    /// paths place the markers. A request whose base or shape is missing is left out.
    pub(super) fn of(records: &[RecordInput]) -> Recorded {
        let mut shapes: HashMap<&str, &Value> = HashMap::new();
        let mut blobs: HashMap<&str, &Value> = HashMap::new();
        let mut bases: VecDeque<(String, Vec<&str>)> = VecDeque::new();
        let mut out = Recorded::default();
        for r in records {
            if r.kind != Some(RecordKind::System) {
                continue;
            }
            let Some(data) = r.data.as_ref() else {
                continue;
            };
            let text = |k: &str| data.get(k).and_then(Value::as_str);
            match r.subtype.as_deref() {
                Some("api-request-shape") => {
                    if let (Some(h), Some(shape)) = (text("shapeHash"), data.get("shape")) {
                        shapes.insert(h, shape);
                    }
                }
                Some("api-request-blob") => {
                    if let (Some(h), Some(m)) = (text("hash"), data.get("message")) {
                        blobs.insert(h, m);
                    }
                }
                Some("api-request") => {
                    let Some(id) = text("id") else { continue };
                    let keep = data
                        .get("keep")
                        .and_then(Value::as_u64)
                        .map_or(0, |k| usize::try_from(k).unwrap_or(usize::MAX));
                    let mut hashes: Vec<&str> = match text("base") {
                        Some(b) => match bases.iter().find(|(i, _)| i == b) {
                            Some((_, h)) if h.len() >= keep => h[..keep].to_vec(),
                            _ => continue,
                        },
                        None if keep == 0 => Vec::new(),
                        None => continue,
                    };
                    hashes.extend(
                        data.get("tail")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str),
                    );
                    let Some(shape) = text("shapeHash").and_then(|h| shapes.get(h)) else {
                        continue;
                    };
                    // A message of the conversation is not written as a blob (the
                    // transcript holds it already): its role is left open.
                    let messages: Vec<Option<&Value>> =
                        hashes.iter().map(|h| blobs.get(h).copied()).collect();
                    let mut s = Structure {
                        system_cached: vec![
                            false;
                            shape
                                .get("system")
                                .and_then(Value::as_array)
                                .map_or(0, Vec::len)
                        ],
                        tools: names(shape.get("tools")),
                        roles: messages
                            .iter()
                            .map(|m| {
                                m.and_then(|m| m.get("role"))
                                    .and_then(Value::as_str)
                                    .unwrap_or(ANY_ROLE)
                                    .to_owned()
                            })
                            .collect(),
                        message_marks: Vec::new(),
                    };
                    for mark in data
                        .get("cacheControl")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        s.mark(mark.get("path"));
                    }
                    s.message_marks.sort_unstable();
                    out.requests.insert(id.to_owned(), s);
                    bases.push_back((id.to_owned(), hashes));
                    if bases.len() > KEPT_BASES {
                        bases.pop_front();
                    }
                }
                _ => {}
            }
        }
        out
    }

    pub(super) fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// The comparison of the compiled `body` with the request `request_ref` names.
    pub(super) fn compare(&self, request_ref: &str, body: &str) -> Option<RecordedRequest> {
        let recorded = self.requests.get(request_ref)?;
        let compiled = serde_json::from_str::<Value>(body)
            .ok()
            .map(|v| Structure::of_body(&v))
            .unwrap_or_default();
        let first_difference = recorded.first_difference(&compiled);
        Some(RecordedRequest {
            structure_match: first_difference.is_none(),
            first_difference,
            system_blocks: recorded.system_cached.len(),
            tools: recorded.tools.len(),
            messages: recorded.roles.len(),
        })
    }
}

fn names(tools: Option<&Value>) -> Vec<String> {
    tools
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| {
            t.get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

fn index(v: Option<&Value>) -> Option<usize> {
    v.and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok())
}

impl Structure {
    /// A `cacheControl` path: `["system", i]` or `["messages", i, "content", j]`.
    fn mark(&mut self, path: Option<&Value>) {
        let Some(p) = path.and_then(Value::as_array) else {
            return;
        };
        match (p.first().and_then(Value::as_str), index(p.get(1))) {
            (Some("system"), Some(i)) => {
                if let Some(c) = self.system_cached.get_mut(i) {
                    *c = true;
                }
            }
            (Some("messages"), Some(i)) => {
                self.message_marks.push((i, index(p.get(3)).unwrap_or(0)));
            }
            _ => {}
        }
    }

    /// The structure of a request body as the replay compiled it.
    pub(super) fn of_body(body: &Value) -> Structure {
        let marked = |b: &Value| b.get("cache_control").is_some_and(|c| !c.is_null());
        let system_cached = match body.get("system") {
            Some(Value::Array(blocks)) => blocks.iter().map(marked).collect(),
            Some(Value::String(_)) => vec![false],
            _ => Vec::new(),
        };
        let mut s = Structure {
            system_cached,
            tools: names(body.get("tools")),
            ..Structure::default()
        };
        for (i, m) in body
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            s.roles.push(
                m.get("role")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            );
            if let Some(blocks) = m.get("content").and_then(Value::as_array) {
                for (j, b) in blocks.iter().enumerate() {
                    if marked(b) {
                        s.message_marks.push((i, j));
                    }
                }
            }
        }
        s
    }

    /// The first place `compiled` differs from `self` (the recorded request), in the
    /// order a reader checks them.
    fn first_difference(&self, compiled: &Structure) -> Option<String> {
        if self.system_cached.len() != compiled.system_cached.len() {
            return Some(format!(
                "system: {} block(s) recorded, {} compiled",
                self.system_cached.len(),
                compiled.system_cached.len()
            ));
        }
        if self.system_cached != compiled.system_cached {
            return Some(format!(
                "system cache_control: recorded on blocks {:?}, compiled on {:?}",
                marked_at(&self.system_cached),
                marked_at(&compiled.system_cached)
            ));
        }
        if self.tools != compiled.tools {
            let at = self
                .tools
                .iter()
                .zip(&compiled.tools)
                .position(|(a, b)| a != b)
                .unwrap_or(self.tools.len().min(compiled.tools.len()));
            return Some(format!(
                "tools: {} recorded, {} compiled; first differ at {at} (recorded {:?}, compiled {:?})",
                self.tools.len(),
                compiled.tools.len(),
                self.tools.get(at),
                compiled.tools.get(at)
            ));
        }
        if self.roles.len() != compiled.roles.len() {
            return Some(format!(
                "messages: {} recorded, {} compiled",
                self.roles.len(),
                compiled.roles.len()
            ));
        }
        if let Some(i) = self
            .roles
            .iter()
            .zip(&compiled.roles)
            .position(|(a, b)| a != ANY_ROLE && a != b)
        {
            return Some(format!(
                "messages[{i}].role: recorded {}, compiled {}",
                self.roles[i], compiled.roles[i]
            ));
        }
        if self.message_marks != compiled.message_marks {
            return Some(format!(
                "messages cache_control: recorded at {:?}, compiled at {:?}",
                self.message_marks, compiled.message_marks
            ));
        }
        None
    }
}

fn marked_at(cached: &[bool]) -> Vec<usize> {
    cached
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.then_some(i))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe() -> Vec<RecordInput> {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/probe/claude-code-2.1.332.jsonl"
        ))
        .unwrap();
        // The import's mapping of the recorded-call lines: type → subtype, fields → data.
        text.lines()
            .filter_map(|l| {
                let mut v: serde_json::Map<String, Value> = serde_json::from_str(l).ok()?;
                let t = v.remove("type")?.as_str()?.to_owned();
                t.starts_with("api-request").then(|| RecordInput {
                    kind: Some(RecordKind::System),
                    subtype: Some(t),
                    data: Some(Value::Object(v)),
                    ..RecordInput::default()
                })
            })
            .collect()
    }

    fn ids(records: &[RecordInput]) -> Vec<String> {
        records
            .iter()
            .filter(|r| r.subtype.as_deref() == Some("api-request"))
            .filter_map(|r| r.data.as_ref()?.get("id")?.as_str().map(str::to_owned))
            .collect()
    }

    #[test]
    fn requests_are_rebuilt_from_their_base_shape_and_blobs() {
        let records = probe();
        let recorded = Recorded::of(&records);
        let ids = ids(&records);
        assert_eq!(ids.len(), 2);
        // What the probe's server received for the second call, in structure.
        let second = &recorded.requests[&ids[1]];
        // The response and the tool result come from the conversation, not from blobs.
        assert_eq!(second.roles, ["user", "system", "*", "*"]);
        assert_eq!(second.system_cached, [true, true]);
        assert_eq!(second.message_marks, [(3, 0)]);
        assert_eq!(second.tools.len(), 12);
        assert_eq!(second.tools[4], "Read");
        assert_eq!(recorded.requests[&ids[0]].roles, ["user", "system"]);
    }

    #[test]
    fn the_comparison_names_the_first_difference() {
        let records = probe();
        let recorded = Recorded::of(&records);
        let id = &ids(&records)[1];
        let s = &recorded.requests[id];
        // A body of the same structure matches.
        let body = serde_json::json!({
            "system": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
                       {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}],
            "tools": s.tools.iter().map(|n| serde_json::json!({"name": n})).collect::<Vec<_>>(),
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "q"}]},
                {"role": "system", "content": [{"type": "text", "text": "env"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "r"}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                    "cache_control": {"type": "ephemeral"}}]}
            ]
        });
        let same = recorded.compare(id, &body.to_string()).unwrap();
        assert!(same.structure_match, "{same:?}");
        assert_eq!(same.first_difference, None);
        // A deliberate change: the environment sent as a user message.
        let mut changed = body.clone();
        changed["messages"][1]["role"] = "user".into();
        let diff = recorded.compare(id, &changed.to_string()).unwrap();
        assert!(!diff.structure_match);
        assert_eq!(
            diff.first_difference.as_deref(),
            Some("messages[1].role: recorded system, compiled user")
        );
        // The cache marker moved.
        let mut moved = body;
        moved["messages"][3]["content"][0]
            .as_object_mut()
            .unwrap()
            .remove("cache_control");
        let diff = recorded.compare(id, &moved.to_string()).unwrap();
        assert!(
            diff.first_difference
                .unwrap()
                .starts_with("messages cache_control: recorded at [(3, 0)], compiled at []")
        );
        assert!(recorded.compare("no-such-request", "{}").is_none());
    }
}
