//! Snip: removing a referenced range of messages. The model (or the
//! user) names the range by the short ids `[id:xxxxxx]` ctxd appends to user messages;
//! the removal is a `snip_boundary` system record holding the removed uuids, so the raw
//! transcript is never rewritten and every later projection — after a restart too —
//! replays it.
//!
//! A range never splits a `tool_use` from its `tool_result`: it is widened to take the
//! partner along (rejecting would make the model guess a range it cannot see).

use std::collections::{BTreeSet, HashSet};

use ctxd_protocol::{ContentBlock, Record, RecordKind};
use thiserror::Error;

use crate::normalize::short_id;
use crate::records::is_user_typed;
use crate::{attachments, tokens};

pub const SNIP_BOUNDARY: &str = "snip_boundary";

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SnipError {
    #[error("no user message has the short id {0}")]
    UnknownId(String),
    #[error("the range is empty: {from} comes after {to}")]
    Backwards { from: String, to: String },
}

/// What a snip removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnipPlan {
    pub removed: Vec<String>,
    /// Estimated tokens the removal frees (safety factor applied).
    pub tokens_freed: u64,
    /// How many records were added to the named range to keep tool pairs whole.
    pub widened_by: usize,
}

/// uuids removed by the snip boundaries in `records` (already cut at the last compact
/// boundary).
pub(crate) fn removed_uuids(records: &[Record]) -> HashSet<&str> {
    let mut out = HashSet::new();
    for r in records.iter().filter(|r| is_snip_boundary(r)) {
        if let Some(list) = r
            .data
            .as_ref()
            .and_then(|d| d.get("removed_uuids"))
            .and_then(|v| v.as_array())
        {
            out.extend(list.iter().filter_map(|v| v.as_str()));
        }
    }
    out
}

pub(crate) fn is_snip_boundary(r: &Record) -> bool {
    r.kind == RecordKind::System && r.subtype.as_deref() == Some(SNIP_BOUNDARY)
}

/// Tokens freed by snip boundaries recorded after `after_seq` (the usage anchor): the
/// anchor's usage still counts what they removed.
pub(crate) fn freed_after<'r>(
    records: impl IntoIterator<Item = &'r Record>,
    after_seq: u64,
) -> u64 {
    records
        .into_iter()
        .filter(|r| is_snip_boundary(r) && r.seq > after_seq)
        .filter_map(|r| r.data.as_ref()?.get("tokens_freed")?.as_u64())
        // A client can append a snip boundary with any number in it.
        .fold(0, u64::saturating_add)
}

/// Plans removing the user message `from` through the user message `to` (inclusive,
/// short ids) and everything between them, from the projection `view`.
pub fn plan(view: &[&Record], from: &str, to: &str) -> Result<SnipPlan, SnipError> {
    let find = |id: &str| {
        view.iter()
            .position(|r| is_user_typed(r) && short_id(&r.uuid) == id)
            .ok_or_else(|| SnipError::UnknownId(id.to_string()))
    };
    let (start, end) = (find(from)?, find(to)?);
    if start > end {
        return Err(SnipError::Backwards {
            from: from.into(),
            to: to.into(),
        });
    }
    let named = end - start + 1;
    let mut removed: BTreeSet<usize> = (start..=end).collect();
    // Widen until no tool_use/tool_result pair straddles the edge.
    loop {
        let ids_in = |set: &BTreeSet<usize>| -> HashSet<String> {
            set.iter()
                .flat_map(|&i| view[i].content.iter())
                .filter_map(|b| b.tool_use_id().or_else(|| b.tool_result_id()))
                .map(str::to_string)
                .collect()
        };
        let inside = ids_in(&removed);
        let mut grew = false;
        for (i, r) in view.iter().enumerate() {
            if removed.contains(&i) || r.kind == RecordKind::System {
                continue;
            }
            let touches = r.content.iter().any(|b| match b {
                ContentBlock::ToolUse { id, .. } => inside.contains(id),
                ContentBlock::ToolResult { tool_use_id, .. } => inside.contains(tool_use_id),
                _ => false,
            });
            if touches {
                removed.insert(i);
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    let raw: u64 = removed
        .iter()
        .map(|&i| tokens::record_tokens(view[i], attachments::render))
        .sum();
    Ok(SnipPlan {
        widened_by: removed.len() - named,
        removed: removed.into_iter().map(|i| view[i].uuid.clone()).collect(),
        tokens_freed: tokens::scaled(raw),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn r(v: serde_json::Value) -> Record {
        let mut v = v;
        v["timestamp"] = json!("2026-11-29T10:00:00Z");
        if let Some(text) = v["content"].as_str() {
            v["content"] = json!([{"type": "text", "text": text}]);
        }
        serde_json::from_value(v).unwrap()
    }

    fn transcript() -> Vec<Record> {
        vec![
            r(json!({"uuid": "p1", "seq": 1, "type": "user", "content": "first"})),
            r(
                json!({"uuid": "a1", "seq": 2, "type": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]}),
            ),
            r(
                json!({"uuid": "u1", "seq": 3, "type": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x".repeat(400)}]}),
            ),
            r(json!({"uuid": "p2", "seq": 4, "type": "user", "content": "second"})),
            r(json!({"uuid": "a2", "seq": 5, "type": "assistant", "content": "ok"})),
            r(json!({"uuid": "p3", "seq": 6, "type": "user", "content": "third"})),
        ]
    }

    #[test]
    fn removes_the_named_range() {
        let t = transcript();
        let view: Vec<&Record> = t.iter().collect();
        let p = plan(&view, &short_id("p2"), &short_id("p2")).unwrap();
        assert_eq!(p.removed, vec!["p2"]);
        assert_eq!(p.widened_by, 0);
        let p = plan(&view, &short_id("p1"), &short_id("p2")).unwrap();
        assert_eq!(p.removed, vec!["p1", "a1", "u1", "p2"]);
        assert!(p.tokens_freed >= 100);
    }

    #[test]
    fn errors_name_the_problem() {
        let t = transcript();
        let view: Vec<&Record> = t.iter().collect();
        assert_eq!(
            plan(&view, "zzzzzz", &short_id("p1")),
            Err(SnipError::UnknownId("zzzzzz".into()))
        );
        assert!(matches!(
            plan(&view, &short_id("p3"), &short_id("p1")),
            Err(SnipError::Backwards { .. })
        ));
    }

    #[test]
    fn pairs_are_never_split() {
        // A prompt queued between a tool_use and its result: snipping it alone would
        // leave the pair intact, but snipping from p1 to q must take the result along.
        let mut t = transcript();
        t.insert(
            2,
            r(json!({"uuid": "q", "seq": 9, "type": "user", "content": "queued"})),
        );
        let view: Vec<&Record> = t.iter().collect();
        let p = plan(&view, &short_id("p1"), &short_id("q")).unwrap();
        assert_eq!(p.removed, vec!["p1", "a1", "q", "u1"]);
        assert_eq!(p.widened_by, 1);
    }

    #[test]
    fn boundaries_replay() {
        let mut t = transcript();
        t.push(r(
            json!({"uuid": "s", "seq": 7, "type": "system", "subtype": "snip_boundary",
            "data": {"removed_uuids": ["p2", "a2"], "tokens_freed": 5}}),
        ));
        let gone = removed_uuids(&t);
        assert!(gone.contains("p2") && gone.contains("a2") && !gone.contains("p1"));
        assert_eq!(freed_after(&t, 5), 5);
        assert_eq!(freed_after(&t, 7), 0);
    }
}
