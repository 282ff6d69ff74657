//! A tool result's *distinctive items*, and whether a model response uses one: the one
//! definition the lean policy's use-aware staleness and `ctx replay`'s premature-clear
//! measure share, so the policy keeps exactly what the measure would miss.
//!
//! The distinctive items of a result's text (`distinctive`) are, after a `Read`-style
//! line number prefix (`   12→` or `12<TAB>`) is taken off each line:
//! - each line of at least 20 characters, trimmed;
//! - each path: a run of `[A-Za-z0-9_.~/-]` holding a `/` and at least 5 characters,
//!   with something after its last `/`;
//! - each identifier: a run of `[A-Za-z0-9_]` of at least 6 characters that starts with
//!   a letter or `_` and holds a `_` or a lowercase letter followed by an uppercase one
//!   (so ordinary words are not identifiers);
//! - each number of 4 or more digits.
//!
//! A model response *uses* an item when the item occurs in one of its text blocks or in
//! a string of one of its tool calls' input (`used_text`, then `uses`).
//!
//! A leaf: it reads only protocol types.

use std::collections::HashSet;

use ctxd_protocol::ContentBlock;
use serde_json::Value;

/// Items kept per result: enough to tell, bounded for huge outputs.
pub const MAX_ITEMS: usize = 400;

/// What a response wrote: its text and every string of its tool calls' input, each
/// followed by a newline. No item holds a newline, so none is found across two pieces.
pub fn used_text(content: &[ContentBlock]) -> String {
    let mut out = String::new();
    push_used(content, &mut out);
    out
}

/// `used_text`, appended to `out`: a span of responses is searched as one text.
pub fn push_used(content: &[ContentBlock], out: &mut String) {
    fn strings(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            Value::Object(o) => o.values().for_each(|x| strings(x, out)),
            _ => {}
        }
    }
    for b in content {
        match b {
            ContentBlock::Text { text, .. } => {
                out.push_str(text);
                out.push('\n');
            }
            ContentBlock::ToolUse { input, .. } => strings(input, out),
            _ => {}
        }
    }
}

/// What one or more responses wrote (`used_text`), ready to be asked about many items:
/// every 3-byte window of the text is marked in a table, so an item with a window the
/// text lacks is known unused without searching the text. The answer is always exactly
/// `text.contains(item)`; the table only makes most misses cheap.
pub struct Used {
    text: String,
    windows: Vec<u64>,
}

/// Bits in the window table: few collisions for the few kilobytes responses write.
const WINDOW_BITS: usize = 1 << 16;

fn window_bit(w: &[u8]) -> usize {
    let h =
        (u32::from(w[0]) << 16 | u32::from(w[1]) << 8 | u32::from(w[2])).wrapping_mul(0x9E37_79B1);
    (h >> 16) as usize % WINDOW_BITS
}

impl Used {
    pub fn new(text: String) -> Used {
        let mut windows = vec![0u64; WINDOW_BITS / 64];
        for w in text.as_bytes().windows(3) {
            let b = window_bit(w);
            windows[b / 64] |= 1 << (b % 64);
        }
        Used { text, windows }
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Whether the responses use `item`: it occurs in their text.
    pub fn uses(&self, item: &str) -> bool {
        let all_windows = item.as_bytes().windows(3).all(|w| {
            let b = window_bit(w);
            self.windows[b / 64] & (1 << (b % 64)) != 0
        });
        all_windows && uses(&self.text, item)
    }

    /// The first of `items` the responses use.
    pub fn first_used<'i>(&self, items: &'i [String]) -> Option<&'i str> {
        items
            .iter()
            .map(String::as_str)
            .find(|item| self.uses(item))
    }
}

/// Whether `used` (the `used_text` of one or more responses) uses `item`: the item
/// occurs in it.
pub fn uses(used: &str, item: &str) -> bool {
    used.contains(item)
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

/// A path item; `pub` because a search result's paths are what the model opens next.
pub fn is_path(w: &str) -> bool {
    w.chars().count() >= 5
        && w.contains('/')
        && w.rsplit('/').next().is_some_and(|last| !last.is_empty())
}

/// The distinctive items of a result's text, in order, each once, at most `MAX_ITEMS`.
pub fn distinctive(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut push = |s: &str, out: &mut Vec<String>| {
        if out.len() < MAX_ITEMS && seen.insert(s.to_string()) {
            out.push(s.to_string());
        }
    };
    for raw in text.lines() {
        if out.len() >= MAX_ITEMS {
            break;
        }
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
    fn a_response_uses_an_item_in_its_text_or_its_tool_input_only() {
        let content: Vec<ContentBlock> = serde_json::from_value(json!([
            {"type": "thinking", "thinking": "maybe hidden_thought_item", "signature": "s"},
            {"type": "text", "text": "Now src/engine/mod.rs"},
            {"type": "tool_use", "id": "c", "name": "Edit",
                "input": {"edits": [{"old_string": "parse_record(x)"}], "n": 8080}},
        ]))
        .unwrap();
        let used = used_text(&content);
        let items: Vec<String> = ["hidden_thought_item", "8080", "parse_record", "mod.rs"]
            .map(String::from)
            .into();
        assert_eq!(
            Used::new(used.clone()).first_used(&items),
            Some("parse_record")
        );
        assert!(uses(&used, "src/engine/mod.rs"));
        assert!(!uses(&used, "hidden_thought_item"));
        // A number in the input is not a string of it.
        assert!(!uses(&used, "8080"));
    }

    #[test]
    fn the_window_table_never_changes_the_answer() {
        let used = Used::new("Now src/engine/mod.rs, then parse_record(x) ü→ 8080\n".into());
        let items = [
            "src/engine/mod.rs",
            "parse_record",
            "ü→",
            "8080",
            "ne/mo",
            "parse_recorx",
            "src/engine/mod.rs,  then",
            "zzz_unused",
            "",
            "8",
        ];
        for item in items {
            assert_eq!(used.uses(item), used.text.contains(item), "{item}");
        }
        assert!(!Used::new(String::new()).uses("parse_record"));
    }

    #[test]
    fn items_are_bounded() {
        let text: String = (0..1_000).map(|i| format!("id_{i:05}\n")).collect();
        let items = distinctive(&text);
        assert_eq!(items.len(), MAX_ITEMS);
        assert_eq!(items[0], "id_00000");
        assert_eq!(items[1], "00000");
    }
}
