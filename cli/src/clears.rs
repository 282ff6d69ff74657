//! What a replay's clears would have cost the model: a cleared tool result whose
//! distinctive content the source's model used later, where the replay's request no
//! longer showed it, is a **premature clear**. And what the clears saved, by lever.
//!
//! The distinctive items of a result, and what it is for a response to *use* one, are
//! `ctxd_pipeline::items`'s: the lean policy keeps a result the model is still using by
//! the same definition. An item was *hidden* when the request the replay compiled for
//! the response that used it does not hold it anywhere (as JSON text). A result counts
//! once, at the first response that used something hidden.

use std::collections::{BTreeMap, HashMap};

use ctxd_pipeline::items::{distinctive, used_text, uses};
use ctxd_pipeline::records::result_text;
use ctxd_protocol::ContentBlock;
use serde::Serialize;

/// Examples kept in a report.
pub const MAX_EXAMPLES: usize = 10;

/// One premature clear, as reported.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PrematureClear {
    pub tool_use_id: String,
    pub lever: String,
    /// The source line of the response that used it.
    pub used_at_line: u64,
    /// The item it used, at most 120 characters.
    pub item: String,
}

/// What one lever cleared during a replay.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct LeverReport {
    pub lever: String,
    pub results: u64,
    /// The cleared results' estimated tokens, summed over every later compile that
    /// would have carried them.
    pub tokens_saved: u64,
    pub premature: u64,
}

/// The clears of a replay, measured.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ClearReport {
    pub results: u64,
    pub premature: u64,
    /// `premature / results` (0 when nothing was cleared).
    pub premature_rate: f64,
    pub by_lever: Vec<LeverReport>,
    pub examples: Vec<PrematureClear>,
}

struct Cleared {
    lever: String,
    tokens: u64,
    items: Vec<String>,
    premature: bool,
}

/// Follows a replay: the results it has seen, what was cleared, each compile's request.
#[derive(Default)]
pub struct Watch {
    results: HashMap<String, String>,
    cleared: BTreeMap<String, Cleared>,
    order: Vec<String>,
    body: Option<String>,
    saved: BTreeMap<String, u64>,
    examples: Vec<PrematureClear>,
}

impl Watch {
    /// A record the replay appended: its tool results are remembered.
    pub fn appended(&mut self, content: &[ContentBlock]) {
        for b in content {
            if let ContentBlock::ToolResult {
                tool_use_id,
                content,
                ..
            } = b
            {
                self.results
                    .entry(tool_use_id.clone())
                    .or_insert_with(|| result_text(content));
            }
        }
    }

    /// A compile: what it cleared (by lever), and the request it compiled when a
    /// response of the source answers it.
    pub fn compiled(&mut self, clears: &[(String, String)], body: Option<String>) {
        for (id, lever) in clears {
            if self.cleared.contains_key(id) {
                continue;
            }
            let text = self.results.get(id).map_or("", String::as_str);
            self.cleared.insert(
                id.clone(),
                Cleared {
                    lever: lever.clone(),
                    tokens: (text.chars().count() as u64).div_ceil(4),
                    items: distinctive(text),
                    premature: false,
                },
            );
            self.order.push(id.clone());
        }
        let Some(body) = body else { return };
        for c in self.cleared.values() {
            *self.saved.entry(c.lever.clone()).or_default() += c.tokens;
        }
        self.body = Some(body);
    }

    /// A response of the source, answered by the last compile: did it use something
    /// that compile hid?
    pub fn responded(&mut self, content: &[ContentBlock], line: u64) {
        let Some(body) = &self.body else { return };
        let used = used_text(content);
        if used.is_empty() {
            return;
        }
        for id in &self.order {
            let Some(c) = self.cleared.get_mut(id) else {
                continue;
            };
            if c.premature {
                continue;
            }
            let hit = c
                .items
                .iter()
                .find(|item| uses(&used, item) && !body.contains(&json_text(item)));
            if let Some(item) = hit {
                c.premature = true;
                if self.examples.len() < MAX_EXAMPLES {
                    self.examples.push(PrematureClear {
                        tool_use_id: id.clone(),
                        lever: c.lever.clone(),
                        used_at_line: line,
                        item: item.chars().take(120).collect(),
                    });
                }
            }
        }
    }

    /// The estimated tokens of every result cleared so far: what a request anchored on
    /// the source's usage (which still counted them) must leave out.
    pub fn cleared_tokens(&self) -> u64 {
        self.cleared.values().map(|c| c.tokens).sum()
    }

    pub fn report(&self) -> ClearReport {
        let mut by: BTreeMap<&str, LeverReport> = BTreeMap::new();
        for c in self.cleared.values() {
            let l = by.entry(&c.lever).or_insert_with(|| LeverReport {
                lever: c.lever.clone(),
                ..LeverReport::default()
            });
            l.results += 1;
            l.premature += u64::from(c.premature);
        }
        for (lever, saved) in &self.saved {
            if let Some(l) = by.get_mut(lever.as_str()) {
                l.tokens_saved = *saved;
            }
        }
        let results = self.cleared.len() as u64;
        let premature = self.cleared.values().filter(|c| c.premature).count() as u64;
        ClearReport {
            results,
            premature,
            premature_rate: if results == 0 {
                0.0
            } else {
                premature as f64 / results as f64
            },
            by_lever: by.into_values().collect(),
            examples: self.examples.clone(),
        }
    }
}

/// The item as it appears inside a JSON string.
fn json_text(item: &str) -> String {
    let quoted = serde_json::to_string(item).unwrap_or_default();
    quoted
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(&quoted)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn blocks(v: serde_json::Value) -> Vec<ContentBlock> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_clear_is_premature_only_when_the_model_used_what_the_request_hid() {
        let mut w = Watch::default();
        w.appended(&blocks(json!([{"type": "tool_result", "tool_use_id": "t1",
            "content": "fn load_session_row(id: u64)\nother"}])));
        w.appended(&blocks(json!([{"type": "tool_result", "tool_use_id": "t2",
            "content": "counter_value = 41"}])));
        w.compiled(
            &[
                ("t1".into(), "superseded".into()),
                ("t2".into(), "stale".into()),
            ],
            // t2's identifier is still in the request (the user quoted it).
            Some(r#"{"messages":[{"role":"user","content":"what is counter_value?"}]}"#.into()),
        );
        // Uses nothing of either.
        w.responded(&blocks(json!([{"type": "text", "text": "Looking."}])), 7);
        // Uses t1's identifier, in a tool call; uses t2's, which was not hidden.
        w.responded(
            &blocks(json!([{"type": "tool_use", "id": "c", "name": "Edit",
                "input": {"old_string": "load_session_row", "new_string": "counter_value"}}])),
            9,
        );
        let r = w.report();
        assert_eq!((r.results, r.premature), (2, 1));
        assert!((r.premature_rate - 0.5).abs() < 1e-9);
        assert_eq!(
            r.examples,
            vec![PrematureClear {
                tool_use_id: "t1".into(),
                lever: "superseded".into(),
                used_at_line: 9,
                item: "load_session_row".into(),
            }]
        );
        let superseded = &r.by_lever[1];
        assert_eq!(
            (superseded.lever.as_str(), superseded.premature),
            ("superseded", 1)
        );
    }

    #[test]
    fn tokens_saved_count_every_later_compile() {
        let mut w = Watch::default();
        w.appended(&blocks(json!([{"type": "tool_result", "tool_use_id": "t1",
            "content": "x".repeat(400)}])));
        w.compiled(&[("t1".into(), "stale".into())], Some("{}".into()));
        w.compiled(&[], None);
        w.compiled(&[], Some("{}".into()));
        w.compiled(&[("t1".into(), "stale".into())], Some("{}".into()));
        let r = w.report();
        assert_eq!(r.results, 1);
        assert_eq!(r.by_lever[0].tokens_saved, 300);
    }
}
