//! Small text helpers for the model-facing texts ctxd writes itself (summaries, notes,
//! collapse summaries): one home, so they cut and trim alike.

use serde_json::{Map, Value};

/// The first non-blank line, trimmed.
pub fn first_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|l| !l.is_empty())
}

/// At most `max` characters; a cut is marked with `…` (after trailing white space is
/// dropped, so the mark never floats after a blank).
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.truncate(out.trim_end().len());
    out.push('…');
    out
}

/// All white space runs made one space: the text on one line.
pub(crate) fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most about `max` characters: the head and the tail kept, the middle replaced by a
/// note saying how much was left out.
pub fn cut_middle(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let half = max / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(n - half).collect();
    format!("{head}\n[… {} characters omitted …]\n{tail}", n - 2 * half)
}

/// What a summary or a text-only provider reads of a block ctxd keeps verbatim (a server
/// tool call, its result, an MCP block, ...): its type and its JSON, cut in the middle
/// past `max` characters (search results carry long encrypted payloads).
pub fn verbatim_block_text(
    fields: &serde_json::Map<String, serde_json::Value>,
    max: usize,
) -> String {
    let kind = fields
        .get("type")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("block");
    let json = serde_json::Value::Object(fields.clone()).to_string();
    format!("[{kind}: {}]", cut_middle(&json, max))
}

/// The strings of an array field, under our name or Claude Code's (the first key
/// present).
pub(crate) fn string_list(obj: &Map<String, Value>, keys: &[&str]) -> Vec<String> {
    keys.iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_array))
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// What a `tool_reference` tells the model once its tool is sent in full.
pub fn tool_reference_text(name: &str) -> String {
    format!("Tool found: {name}. Its full definition is in your tool list from now on.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_marks_the_cut_and_counts_characters() {
        assert_eq!(clip("héllo", 5), "héllo");
        assert_eq!(clip("héllo wörld", 7), "héllo…");
        assert_eq!(clip("abcdef", 0), "…");
    }

    #[test]
    fn first_line_skips_blank_lines() {
        assert_eq!(first_line("\n  \n  two  \nthree"), Some("two"));
        assert_eq!(first_line(" \n"), None);
    }

    #[test]
    fn cut_middle_keeps_both_ends() {
        let t = "a".repeat(10) + &"b".repeat(10);
        let c = cut_middle(&t, 8);
        assert!(
            c.starts_with("aaaa\n[… 12 characters omitted …]\nbbbb"),
            "{c}"
        );
        assert_eq!(squash(" a \n b\t c "), "a b c");
    }
}
