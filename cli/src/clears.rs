//! What a replay's clears would have cost the model: a cleared tool result whose
//! distinctive content the source's model used later, where the replay's request no
//! longer showed it, is a **premature clear**. And what the clears saved, by lever.
//!
//! The distinctive content of a result (`distinctive`) is, after a `Read`-style line
//! number prefix (`   12→` or `12<TAB>`) is taken off each line:
//! - each line of at least 20 characters, trimmed;
//! - each path: a run of `[A-Za-z0-9_.~/-]` holding a `/` and at least 5 characters,
//!   with something after its last `/`;
//! - each identifier: a run of `[A-Za-z0-9_]` of at least 6 characters that starts with
//!   a letter or `_` and holds a `_` or a lowercase letter followed by an uppercase one
//!   (so ordinary words are not identifiers);
//! - each number of 4 or more digits.
//!
//! A later response of the source *uses* an item when the item occurs in one of its
//! text blocks or in a string of one of its tool calls' input. It was *hidden* when the
//! request the replay compiled for that response does not hold the item anywhere (as
//! JSON text). A result counts once, at the first response that used something hidden.

use std::collections::{BTreeMap, HashMap};

use ctxd_protocol::{ContentBlock, ToolResultBlock, ToolResultContent};
use serde::Serialize;

/// Items kept per result: enough to tell, bounded for huge outputs.
const MAX_ITEMS: usize = 400;
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

/// A result's text as the model read it.
pub fn result_text(content: &ToolResultContent) -> String {
    match content {
        ToolResultContent::Text(t) => t.clone(),
        ToolResultContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                ToolResultBlock::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
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
                .find(|item| used.contains(item.as_str()) && !body.contains(&json_text(item)));
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

/// What a response wrote: its text and every string of its tool calls' input.
fn used_text(content: &[ContentBlock]) -> String {
    fn strings(v: &serde_json::Value, out: &mut String) {
        match v {
            serde_json::Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            serde_json::Value::Object(o) => o.values().for_each(|x| strings(x, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    for b in content {
        match b {
            ContentBlock::Text { text, .. } => {
                out.push_str(text);
                out.push('\n');
            }
            ContentBlock::ToolUse { input, .. } => strings(input, &mut out),
            _ => {}
        }
    }
    out
}

/// A line without the line-number prefix `Read` puts on it.
fn strip_line_number(line: &str) -> &str {
    let t = line.trim_start();
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return line;
    }
    let rest = &t[digits..];
    rest.strip_prefix('→')
        .or_else(|| rest.strip_prefix('\t'))
        .unwrap_or(line)
}

fn is_identifier(w: &str) -> bool {
    let first = w.chars().next();
    if w.chars().count() < 6 || !first.is_some_and(|c| c.is_ascii_alphabetic() || c == '_') {
        return false;
    }
    let hump = w
        .as_bytes()
        .windows(2)
        .any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase());
    w.contains('_') || hump
}

fn is_path(w: &str) -> bool {
    w.chars().count() >= 5
        && w.contains('/')
        && w.rsplit('/').next().is_some_and(|last| !last.is_empty())
}

/// The distinctive items of a result's text, in order, each once.
pub fn distinctive(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let push = |s: &str, out: &mut Vec<String>| {
        if out.len() < MAX_ITEMS && !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    };
    for raw in text.lines() {
        let line = strip_line_number(raw).trim();
        if line.chars().count() >= 20 {
            push(line, &mut out);
        }
        let runs = |pred: fn(char) -> bool| {
            line.split(move |c: char| !pred(c))
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
        };
        for w in runs(|c| c.is_ascii_alphanumeric() || "_.~/-".contains(c)) {
            if is_path(w) {
                push(w, &mut out);
            }
        }
        for w in runs(|c| c.is_ascii_alphanumeric() || c == '_') {
            if is_identifier(w) {
                push(w, &mut out);
            }
        }
        for w in runs(|c| c.is_ascii_digit()) {
            if w.len() >= 4 {
                push(w, &mut out);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn blocks(v: serde_json::Value) -> Vec<ContentBlock> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn distinctive_items_follow_the_definition() {
        let text = "     1→use std::collections::HashMap;\n\
                    2\tshort\n\
                    see src/engine/mod.rs and ./a or the word because\n\
                    call parse_record or loadSession, not Parser; port 8080, id 123";
        let items = distinctive(text);
        assert_eq!(
            items,
            vec![
                "use std::collections::HashMap;",
                "HashMap",
                "see src/engine/mod.rs and ./a or the word because",
                "src/engine/mod.rs",
                "call parse_record or loadSession, not Parser; port 8080, id 123",
                "parse_record",
                "loadSession",
                "8080",
            ]
        );
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
