//! `@` mentions in a user's prompt: `@path/to/file`, `@dir/`, `@file#L10-20` (or
//! `#L10`), `@"a path with spaces"`. Each becomes one `at_mention` attachment after the
//! prompt: the file's lines as they were on disk, the directory's entries, or why
//! nothing could be attached. Parsing and the words the model reads live here; reading
//! the disk is the engine's.
//!
//! A mention starts at an `@` that begins the text or follows whitespace (so an e-mail
//! address is none) and runs to the next whitespace; trailing punctuation (`,.;:!?)`) is
//! not part of it. `@name:uri` without a `/` before the colon names the resource `uri`
//! of MCP server `name`: attached from what the client registered for that server.

use crate::limits::MAX_MENTIONS;
use serde_json::{Map, Value};

/// A line range: `#L10-20` → `(10, Some(20))`; `#L10` → `(10, None)`.
pub(crate) type LineRange = (u64, Option<u64>);

/// One `@` mention as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// As the user wrote it, `@` included.
    pub written: String,
    /// The path, or a resource's uri.
    pub path: String,
    pub lines: Option<LineRange>,
    /// The MCP server of a resource mention.
    pub server: Option<String>,
}

/// The mentions of `text`, each path once, at most `MAX_MENTIONS`.
pub fn parse(text: &str) -> Vec<Mention> {
    let mut out: Vec<Mention> = Vec::new();
    let mut rest = text;
    let mut prev_space = true;
    while let Some(c) = rest.chars().next() {
        if c == '@' && prev_space {
            let (token, after) = take_token(&rest[1..]);
            if let Some(m) = mention(token)
                && !out
                    .iter()
                    .any(|o| o.path == m.path && o.lines == m.lines && o.server == m.server)
            {
                out.push(m);
                if out.len() == MAX_MENTIONS {
                    break;
                }
            }
            rest = after;
            prev_space = false;
            continue;
        }
        prev_space = c.is_whitespace();
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The token after an `@`: quoted, or up to whitespace. Returns it and what follows.
fn take_token(s: &str) -> (&str, &str) {
    if let Some(q) = s.strip_prefix('"')
        && let Some(end) = q.find('"')
    {
        // The closing quote and what follows it (a `#L` range) belong to the token.
        let tail_end = q[end + 1..]
            .find(char::is_whitespace)
            .map_or(q.len(), |i| end + 1 + i);
        return (&s[..=tail_end], &q[tail_end..]);
    }
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    (&s[..end], &s[end..])
}

fn mention(token: &str) -> Option<Mention> {
    let token = token.trim_end_matches([',', '.', ';', ':', '!', '?', ')']);
    let (path, range) = match token.rsplit_once("#L") {
        Some((p, r)) => (p, Some(r)),
        None => (token, None),
    };
    let path = path
        .strip_prefix('"')
        .and_then(|p| p.strip_suffix('"'))
        .unwrap_or(path);
    if path.is_empty() {
        return None;
    }
    // `@server:uri`: an MCP resource, not a path (a `#L` is part of its uri).
    if let Some(colon) = path.find(':')
        && !path[..colon].contains('/')
    {
        let token = token.trim_start_matches('"').trim_end_matches('"');
        let (server, uri) = token.split_at(token.find(':')?);
        let uri = &uri[1..];
        if server.is_empty() || uri.is_empty() {
            return None;
        }
        return Some(Mention {
            written: format!("@{token}"),
            path: uri.to_string(),
            lines: None,
            server: Some(server.to_string()),
        });
    }
    let lines = match range {
        None => None,
        Some(r) => {
            let (a, b) = match r.split_once('-') {
                Some((a, b)) => (a, Some(b)),
                None => (r, None),
            };
            let start: u64 = a.parse().ok().filter(|n| *n > 0)?;
            let end = match b {
                Some(b) => Some(b.parse::<u64>().ok().filter(|n| *n >= start)?),
                None => None,
            };
            Some((start, end))
        }
    };
    Some(Mention {
        written: format!("@{token}"),
        path: path.to_string(),
        lines,
        server: None,
    })
}

/// `text`'s lines numbered from `first` (1-based), as the model reads a file.
pub fn numbered(text: &str, first: u64) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        let _ = writeln!(out, "{:>6}\t{line}", first + i as u64);
    }
    out
}

/// The model-facing text of an `at_mention` attachment.
pub fn render(obj: &Map<String, Value>) -> Option<String> {
    let s = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or("");
    let n = |k: &str| obj.get(k).and_then(Value::as_u64).unwrap_or(0);
    let written = s("mention");
    let path = s("path");
    Some(match s("kind") {
        "file" => {
            let cut = if obj.get("truncated").and_then(Value::as_bool) == Some(true) {
                " (cut: ask for the rest with a line range)"
            } else {
                ""
            };
            format!(
                "The user mentioned {written}: the file {path}, lines {}-{} of {}{cut}, as it \
                 was on disk when they sent it:\n{}",
                n("start_line"),
                n("end_line"),
                n("total_lines"),
                s("content")
            )
        }
        "resource" => {
            let name = obj
                .get("name")
                .and_then(Value::as_str)
                .map_or(String::new(), |n| format!(" ({n})"));
            format!(
                "The user mentioned {written}: the resource {}{name} of the MCP server {}, as \
                 the server gave it:\n{}",
                s("uri"),
                s("server"),
                s("content")
            )
        }
        "directory" => {
            let entries: Vec<&str> = obj
                .get("entries")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let more = if obj.get("truncated").and_then(Value::as_bool) == Some(true) {
                "\n(more entries not listed)"
            } else {
                ""
            };
            format!(
                "The user mentioned {written}: the directory {path} holds:\n{}{more}",
                entries
                    .iter()
                    .map(|e| format!("- {e}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        }
        _ => format!(
            "The user mentioned {written}, which could not be attached: {}",
            s("reason")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(text: &str) -> Vec<(String, Option<LineRange>)> {
        parse(text).into_iter().map(|m| (m.path, m.lines)).collect()
    }

    #[test]
    fn mentions_are_paths_ranges_and_quoted_names() {
        assert_eq!(
            paths("look at @src/main.rs, @docs/ and @lib.rs#L10-20 please"),
            vec![
                ("src/main.rs".into(), None),
                ("docs/".into(), None),
                ("lib.rs".into(), Some((10, Some(20)))),
            ]
        );
        assert_eq!(paths("@a.txt#L7."), vec![("a.txt".into(), Some((7, None)))]);
        assert_eq!(
            paths(r#"see @"my notes/a b.md" now"#),
            vec![("my notes/a b.md".into(), None)]
        );
    }

    #[test]
    fn addresses_resources_and_bad_ranges_are_no_mentions() {
        assert!(paths("mail me at me@example.com").is_empty());
        let r = parse("read @github:repo://octo/x, then @docs:guide#L3");
        assert_eq!(
            r.iter()
                .map(|m| (m.server.as_deref().unwrap(), m.path.as_str()))
                .collect::<Vec<_>>(),
            [("github", "repo://octo/x"), ("docs", "guide#L3")]
        );
        assert!(parse("@:x").is_empty());
        assert!(paths("@a.rs#L0 and @b.rs#L9-3 and @").is_empty());
        assert_eq!(paths("@a @a @a").len(), 1);
        let many: String = (0..20).map(|i| format!("@f{i} ")).collect();
        assert_eq!(paths(&many).len(), MAX_MENTIONS);
    }

    #[test]
    fn lines_are_numbered_from_the_first() {
        assert_eq!(numbered("a\nb", 9), "     9\ta\n    10\tb\n");
    }
}
