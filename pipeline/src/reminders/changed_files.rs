//! The `changed_files` (`edited_text_file`) attachment: when a file the agent has
//! read changes on disk, the model gets the changed regions of the new content, numbered
//! like the Read tool's output, so it can keep editing against what is really there.
//!
//! Only new-file lines are shown: the model needs the current text to make its next edit,
//! not a patch to mentally apply. Lines are compared without their terminators, so a file
//! read as CRLF and shown as plain lines does not look entirely rewritten.

use std::ops::Range;

use similar::{Algorithm, capture_diff_slices, group_diff_ops};

/// Unchanged lines shown before and after each changed region.
pub(crate) const CONTEXT_LINES: usize = 8;
/// Upper bound on a snippet's size, truncation note included.
pub(crate) const MAX_SNIPPET_BYTES: usize = 8 * 1024;

const HUNK_SEPARATOR: &str = "...";

/// Diff snippet of an externally edited file, as the model sees it.
///
/// `None` when the texts are equal. Each changed region of the new file is shown with
/// `CONTEXT_LINES` lines of context on both sides, every line as `{:>6}\t{line}` (its
/// 1-based number in the new file); regions whose contexts overlap or touch are merged,
/// the others are separated by a `...` line. A deletion shows the context around where
/// the lines were. Past `MAX_SNIPPET_BYTES` the snippet is cut at a line boundary and
/// ends with a note giving the number of lines cut.
pub fn snippet(old: &str, new: &str) -> Option<String> {
    if old == new {
        return None;
    }
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = new.lines().collect();
    let ops = capture_diff_slices(Algorithm::Myers, &old_lines, &new_lines);

    let hunks: Vec<Range<usize>> = group_diff_ops(ops, CONTEXT_LINES)
        .iter()
        .filter_map(|group| {
            let start = group.first()?.new_range().start;
            let end = group.last()?.new_range().end;
            Some(start..end)
        })
        .filter(|range| !range.is_empty())
        .collect();

    if hunks.is_empty() {
        // The texts differ but no line does: either only terminators changed (CRLF vs LF,
        // final newline) or every line was deleted. Saying nothing would hide a real change.
        let note = if new_lines.is_empty() {
            "(the file is now empty)"
        } else {
            "(only line endings or the final newline changed; every line's text is the same)"
        };
        return Some(note.to_owned());
    }

    let mut out: Vec<Line> = Vec::new();
    for (i, hunk) in hunks.iter().enumerate() {
        if i > 0 {
            out.push(Line::Separator);
        }
        for n in hunk.clone() {
            out.push(Line::Numbered(format!("{:>6}\t{}", n + 1, new_lines[n])));
        }
    }
    Some(join_within_budget(&out))
}

/// The text of a `changed_files` / `edited_text_file` attachment, without the
/// `<system-reminder>` wrapper.
pub fn render_attachment(path: &str, snippet: &str) -> String {
    format!(
        "The file {path} was changed outside this conversation, by the user or by a tool \
         such as an editor, formatter or linter. The change was intentional: work with it, \
         and do not revert it unless the user asks you to. Below are the changed parts of \
         the new content, with line numbers:\n{snippet}"
    )
}

enum Line {
    Numbered(String),
    Separator,
}

impl Line {
    fn text(&self) -> &str {
        match self {
            Line::Numbered(s) => s,
            Line::Separator => HUNK_SEPARATOR,
        }
    }
}

fn truncation_note(cut: usize) -> String {
    let noun = if cut == 1 { "line" } else { "lines" };
    format!("... [{cut} {noun} truncated] ...")
}

fn join_within_budget(lines: &[Line]) -> String {
    let total_bytes =
        lines.iter().map(|l| l.text().len()).sum::<usize>() + lines.len().saturating_sub(1);
    if total_bytes <= MAX_SNIPPET_BYTES {
        return join(lines.iter().map(Line::text));
    }

    let numbered_total = lines
        .iter()
        .filter(|l| matches!(l, Line::Numbered(_)))
        .count();
    // The note for the largest possible count is at least as long as the real one, so
    // reserving its length keeps the result under the limit whatever gets cut.
    let budget = MAX_SNIPPET_BYTES.saturating_sub(truncation_note(numbered_total).len() + 1);

    let mut kept: Vec<&str> = Vec::new();
    let mut kept_bytes = 0;
    let mut kept_numbered = 0;
    for line in lines {
        let cost = line.text().len() + usize::from(!kept.is_empty());
        if kept_bytes + cost > budget {
            break;
        }
        kept_bytes += cost;
        kept.push(line.text());
        if matches!(line, Line::Numbered(_)) {
            kept_numbered += 1;
        }
    }
    if kept.last() == Some(&HUNK_SEPARATOR) {
        kept.pop();
    }

    // A single line longer than the whole budget (minified code, data) would otherwise
    // leave nothing but the note; show its start instead and count it as cut.
    if kept.is_empty()
        && let Some(first) = lines.first()
    {
        kept.push(prefix_at_char_boundary(first.text(), budget));
    }

    let note = truncation_note(numbered_total - kept_numbered);
    join(kept.into_iter().chain(std::iter::once(note.as_str())))
}

fn prefix_at_char_boundary(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn join<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    lines.collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` lines `line 1` .. `line N`, newline-terminated.
    fn numbered_text(count: usize) -> Vec<String> {
        (1..=count).map(|i| format!("line {i}")).collect()
    }

    fn text(lines: &[String]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    fn separators(s: &str) -> usize {
        s.lines().filter(|l| *l == HUNK_SEPARATOR).count()
    }

    #[test]
    fn equal_texts_give_none() {
        let t = text(&numbered_text(20));
        assert_eq!(snippet(&t, &t), None);
        assert_eq!(snippet("", ""), None);
    }

    #[test]
    fn one_line_changed_in_the_middle() {
        let old = numbered_text(100);
        let mut new = old.clone();
        new[49] = "line 50, edited".to_owned();
        let s = snippet(&text(&old), &text(&new)).expect("texts differ");
        insta::assert_snapshot!("one_line_changed", s);
    }

    #[test]
    fn two_distant_hunks() {
        let old = numbered_text(100);
        let mut new = old.clone();
        new[9] = "line 10, edited".to_owned();
        new[79] = "line 80, edited".to_owned();
        let s = snippet(&text(&old), &text(&new)).expect("texts differ");
        assert_eq!(separators(&s), 1);
        insta::assert_snapshot!("two_distant_hunks", s);
    }

    #[test]
    fn two_close_hunks_merge() {
        let old = numbered_text(100);
        let mut new = old.clone();
        new[39] = "line 40, edited".to_owned();
        new[49] = "line 50, edited".to_owned();
        let s = snippet(&text(&old), &text(&new)).expect("texts differ");
        assert_eq!(separators(&s), 0);
        insta::assert_snapshot!("two_close_hunks_merged", s);
    }

    #[test]
    fn hunks_merge_exactly_when_no_line_would_be_hidden_between_them() {
        let old = numbered_text(100);
        // 16 unchanged lines between the edits: both contexts together cover them.
        let mut touching = old.clone();
        touching[29] = "edited".to_owned();
        touching[46] = "edited".to_owned();
        let s = snippet(&text(&old), &text(&touching)).expect("texts differ");
        assert_eq!(separators(&s), 0);
        // 17 unchanged lines: one would be hidden, so the hunks stay apart.
        let mut apart = old.clone();
        apart[29] = "edited".to_owned();
        apart[47] = "edited".to_owned();
        let s = snippet(&text(&old), &text(&apart)).expect("texts differ");
        assert_eq!(separators(&s), 1);
    }

    #[test]
    fn append_at_end() {
        let old = numbered_text(100);
        let mut new = old.clone();
        new.extend(["appended 1", "appended 2", "appended 3"].map(str::to_owned));
        let s = snippet(&text(&old), &text(&new)).expect("texts differ");
        insta::assert_snapshot!("append_at_end", s);
    }

    #[test]
    fn deletion_shows_the_surrounding_lines() {
        let old = numbered_text(100);
        let mut new = old.clone();
        new.drain(49..52);
        let s = snippet(&text(&old), &text(&new)).expect("texts differ");
        insta::assert_snapshot!("deletion", s);
    }

    #[test]
    fn oversized_snippet_is_cut_at_a_line_with_a_note() {
        let old: Vec<String> = (1..=60)
            .map(|i| format!("{i:03} {}", "a".repeat(200)))
            .collect();
        let new: Vec<String> = (1..=60)
            .map(|i| format!("{i:03} {}", "b".repeat(200)))
            .collect();
        let s = snippet(&text(&old), &text(&new)).expect("texts differ");
        assert!(s.len() <= MAX_SNIPPET_BYTES, "{} bytes", s.len());
        let last = s.lines().last().unwrap_or_default();
        let shown = s.lines().count() - 1;
        assert_eq!(last, truncation_note(60 - shown));
        insta::assert_snapshot!("truncated", s);
    }

    #[test]
    fn a_single_line_over_the_limit_still_shows_its_start() {
        let new = format!("{}\nsecond\n", "é".repeat(MAX_SNIPPET_BYTES));
        let s = snippet("", &new).expect("texts differ");
        assert!(s.len() <= MAX_SNIPPET_BYTES, "{} bytes", s.len());
        assert!(s.starts_with("     1\téé"));
        assert!(s.ends_with(&format!("\n{}", truncation_note(2))));
    }

    #[test]
    fn crlf_file() {
        let old: String = (1..=30).map(|i| format!("row {i}\r\n")).collect();
        let new = old.replace("row 15\r\n", "row 15, edited\r\nrow 15b\r\n");
        let s = snippet(&old, &new).expect("texts differ");
        assert!(!s.contains('\r'));
        insta::assert_snapshot!("crlf", s);
    }

    #[test]
    fn line_ending_only_change_is_still_reported() {
        let lf = "a\nb\n";
        let s = snippet(lf, "a\r\nb\r\n").expect("texts differ");
        assert!(s.contains("line endings"), "{s}");
        let s = snippet(lf, "a\nb").expect("texts differ");
        assert!(s.contains("final newline"), "{s}");
    }

    #[test]
    fn emptied_file() {
        let s = snippet("a\nb\n", "").expect("texts differ");
        assert_eq!(s, "(the file is now empty)");
    }

    #[test]
    fn created_file_shows_everything() {
        let new = text(&numbered_text(5));
        let s = snippet("", &new).expect("texts differ");
        insta::assert_snapshot!("created", s);
    }

    #[test]
    fn attachment_text() {
        let old = text(&numbered_text(12));
        let new = old.replace("line 6\n", "line 6, edited\n");
        let s = snippet(&old, &new).expect("texts differ");
        insta::assert_snapshot!("attachment", render_attachment("src/lib.rs", &s));
    }
}
