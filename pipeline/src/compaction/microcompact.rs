//! Microcompact: clearing old tool results before anything is
//! summarised. Two paths, chosen by the state of the provider's cache:
//!
//! - **time-based** (cache cold): after a pause longer than the gap since the last
//!   main-thread assistant response, every compactable result but the most recent
//!   `keep_recent` is replaced by `[Old tool result content cleared]`. The prefix has to
//!   be re-sent anyway, so rewriting it costs nothing; the clearing is frozen as a fate.
//! - **cached** (cache warm): the messages stay byte-identical; the request carries a
//!   `cache_edits` block that deletes old results server-side by `cache_reference`. An
//!   edit, once sent, is pinned and re-sent at the same message index on every later
//!   compile, because the server's cached prefix now includes it.
//!
//! Time-based wins when both would apply (and drops the pinned edits: the cache they
//! edited has expired).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use ctxd_protocol::{ContentBlock, MicrocompactSettings, Record, RecordKind};
use serde::{Deserialize, Serialize};

use crate::budget::Fate;

pub const CLEARED: &str = "[Old tool result content cleared]";

/// Tools whose old output is safe to drop: it can be produced again.
pub(crate) const COMPACTABLE_TOOLS: [&str; 9] = [
    "Read",
    "Bash",
    "PowerShell",
    "Grep",
    "Glob",
    "WebSearch",
    "WebFetch",
    "Edit",
    "Write",
];

/// One cache edit as sent: delete these results, placed in message `message_index`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedEdit {
    pub message_index: u32,
    pub tool_use_ids: Vec<String>,
}

/// Compactable tool results of the projection, oldest first.
pub(crate) fn compactable_results(records: &[&Record]) -> Vec<String> {
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut out = Vec::new();
    for r in records {
        for b in &r.content {
            match b {
                ContentBlock::ToolUse { id, name, .. } if r.kind == RecordKind::Assistant => {
                    names.insert(id, name);
                }
                ContentBlock::ToolResult { tool_use_id, .. }
                    if r.kind == RecordKind::User
                        && names
                            .get(tool_use_id.as_str())
                            .is_some_and(|n| COMPACTABLE_TOOLS.contains(n))
                        && !out.contains(tool_use_id) =>
                {
                    out.push(tool_use_id.clone());
                }
                _ => {}
            }
        }
    }
    out
}

fn keep_at_least_one(k: u32) -> usize {
    k.max(1) as usize
}

/// The time of the last main-thread assistant response, if any.
pub(crate) fn last_assistant_time(records: &[&Record]) -> Option<DateTime<Utc>> {
    records
        .iter()
        .rev()
        .find(|r| r.kind == RecordKind::Assistant)
        .and_then(|r| DateTime::parse_from_rfc3339(&r.timestamp).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// Results the time-based path clears now; empty when the cache is warm, the path is
/// off, or clearing would save nothing.
pub(crate) fn time_based(
    records: &[&Record],
    cleared: &BTreeMap<String, Fate>,
    settings: &MicrocompactSettings,
    now: DateTime<Utc>,
) -> Vec<String> {
    if !settings.time_based {
        return Vec::new();
    }
    let Some(last) = last_assistant_time(records) else {
        return Vec::new();
    };
    if now.signed_duration_since(last).num_seconds() <= i64::from(settings.gap_minutes) * 60 {
        return Vec::new();
    }
    let ids = compactable_results(records);
    let keep = keep_at_least_one(settings.keep_recent);
    let cut = ids.len().saturating_sub(keep);
    let already_empty = already_cleared_content(records);
    ids[..cut]
        .iter()
        .filter(|id| !cleared.contains_key(*id) && !already_empty.contains(id.as_str()))
        .cloned()
        .collect()
}

/// Results whose content already is the cleared marker (e.g. imported that way).
fn already_cleared_content<'a>(records: &[&'a Record]) -> BTreeSet<&'a str> {
    let mut out = BTreeSet::new();
    for r in records {
        for b in &r.content {
            if let ContentBlock::ToolResult {
                tool_use_id,
                content: ctxd_protocol::ToolResultContent::Text(t),
                ..
            } = b
                && t == CLEARED
            {
                out.insert(tool_use_id.as_str());
            }
        }
    }
    out
}

/// Results the cached path deletes now (empty when off or below the trigger).
pub(crate) fn cached(
    records: &[&Record],
    deleted: &BTreeSet<String>,
    settings: &MicrocompactSettings,
) -> Vec<String> {
    if !settings.cached {
        return Vec::new();
    }
    let ids = compactable_results(records);
    let live: Vec<&String> = ids.iter().filter(|id| !deleted.contains(*id)).collect();
    if live.len() <= settings.cached_trigger as usize {
        return Vec::new();
    }
    let keep = keep_at_least_one(settings.cached_keep_recent);
    let protected: BTreeSet<&String> = ids.iter().rev().take(keep).collect();
    live.into_iter()
        .filter(|id| !protected.contains(id))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn records(n: usize, tool: &str, ts: &str) -> Vec<Record> {
        let mut out = Vec::new();
        for i in 0..n {
            out.push(
                serde_json::from_value(json!({"uuid": format!("a{i}"), "seq": 2 * i + 1, "type": "assistant", "timestamp": ts,
                    "message_id": format!("m{i}"),
                    "content": [{"type": "tool_use", "id": format!("t{i}"), "name": tool, "input": {}}]}))
                .unwrap(),
            );
            out.push(
                serde_json::from_value(json!({"uuid": format!("u{i}"), "seq": 2 * i + 2, "type": "user", "timestamp": ts,
                    "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "out"}]}))
                .unwrap(),
            );
        }
        out
    }

    fn on() -> MicrocompactSettings {
        MicrocompactSettings {
            time_based: true,
            ..MicrocompactSettings::default()
        }
    }

    #[test]
    fn gap_decides() {
        let recs = records(8, "Read", "2026-11-29T10:00:00Z");
        let view: Vec<&Record> = recs.iter().collect();
        let at = |m: i64| {
            "2026-11-29T10:00:00Z".parse::<DateTime<Utc>>().unwrap() + chrono::Duration::minutes(m)
        };
        assert!(time_based(&view, &BTreeMap::new(), &on(), at(59)).is_empty());
        let cleared = time_based(&view, &BTreeMap::new(), &on(), at(61));
        assert_eq!(cleared, vec!["t0", "t1", "t2"]);
        // Already cleared: nothing more to save.
        let done: BTreeMap<String, Fate> = cleared
            .iter()
            .map(|id| (id.clone(), Fate::Replaced(CLEARED.into())))
            .collect();
        assert!(time_based(&view, &done, &on(), at(120)).is_empty());
        // Off by default.
        assert!(
            time_based(
                &view,
                &BTreeMap::new(),
                &MicrocompactSettings::default(),
                at(600)
            )
            .is_empty()
        );
    }

    #[test]
    fn only_compactable_tools() {
        let recs = records(8, "Task", "2026-11-29T10:00:00Z");
        let view: Vec<&Record> = recs.iter().collect();
        let later = "2026-11-29T12:00:00Z".parse::<DateTime<Utc>>().unwrap();
        assert!(time_based(&view, &BTreeMap::new(), &on(), later).is_empty());
    }

    #[test]
    fn keep_recent_is_at_least_one() {
        let recs = records(3, "Bash", "2026-11-29T10:00:00Z");
        let view: Vec<&Record> = recs.iter().collect();
        let s = MicrocompactSettings {
            time_based: true,
            keep_recent: 0,
            ..MicrocompactSettings::default()
        };
        let later = "2026-11-29T12:00:00Z".parse::<DateTime<Utc>>().unwrap();
        assert_eq!(
            time_based(&view, &BTreeMap::new(), &s, later),
            vec!["t0", "t1"]
        );
    }

    #[test]
    fn cached_trigger_and_keep() {
        let recs = records(6, "Grep", "2026-11-29T10:00:00Z");
        let view: Vec<&Record> = recs.iter().collect();
        let s = MicrocompactSettings {
            cached: true,
            cached_trigger: 5,
            cached_keep_recent: 2,
            ..MicrocompactSettings::default()
        };
        assert_eq!(
            cached(&view, &BTreeSet::new(), &s),
            vec!["t0", "t1", "t2", "t3"]
        );
        let deleted: BTreeSet<String> = ["t0", "t1", "t2", "t3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert!(cached(&view, &deleted, &s).is_empty());
        let s5 = MicrocompactSettings {
            cached_trigger: 6,
            ..s
        };
        assert!(cached(&view, &BTreeSet::new(), &s5).is_empty());
    }
}
