//! YAML front matter of instruction files, and the `paths:` key that makes a rule
//! conditional.

use std::path::Path;

use serde_norway::Value;

/// A file split into its body and the patterns of its `paths:` key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontMatter {
    pub body: String,
    /// `None` means unconditional: no key, an empty list, only `**`, or unreadable YAML.
    pub(crate) paths: Option<Vec<String>>,
}

/// Front matter is a leading `---` line, YAML, and a closing `---` line. Without a
/// closing line the file has no front matter (a lone `---` is a thematic break).
pub fn parse(raw: &str, origin: &Path) -> FrontMatter {
    let text = raw.strip_prefix('\u{feff}').unwrap_or(raw);
    let Some((yaml, body)) = split(text) else {
        return FrontMatter {
            body: text.to_string(),
            paths: None,
        };
    };
    let paths = if yaml.trim().is_empty() {
        None
    } else {
        match serde_norway::from_str::<Value>(yaml) {
            Ok(value) => paths_of(&value, origin),
            Err(err) => {
                // A typo in front matter must not hide the instructions themselves.
                tracing::warn!(
                    path = %origin.display(),
                    %err,
                    "malformed front matter; treating the file as unconditional"
                );
                None
            }
        }
    };
    FrontMatter {
        body: body.to_string(),
        paths,
    }
}

pub(crate) fn split(text: &str) -> Option<(&str, &str)> {
    let mut lines = text.split_inclusive('\n');
    let first = lines.next()?;
    if first.trim_end() != "---" || !first.ends_with('\n') {
        return None;
    }
    let yaml_start = first.len();
    let mut offset = yaml_start;
    for line in lines {
        if line.trim_end() == "---" {
            return Some((&text[yaml_start..offset], &text[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

fn paths_of(front: &Value, origin: &Path) -> Option<Vec<String>> {
    let mut patterns = Vec::new();
    match front.get("paths")? {
        Value::Null => return None,
        Value::String(s) => patterns.extend(split_patterns(s)),
        Value::Sequence(items) => {
            for item in items {
                match item {
                    Value::String(s) => patterns.extend(split_patterns(s)),
                    other => tracing::warn!(
                        path = %origin.display(),
                        item = ?other,
                        "ignoring a non-string entry in `paths:`"
                    ),
                }
            }
        }
        other => {
            tracing::warn!(
                path = %origin.display(),
                value = ?other,
                "`paths:` is neither a string nor a list; treating the file as unconditional"
            );
            return None;
        }
    }
    normalize_patterns(patterns)
}

/// `a, b/**, c.{ts,tsx}` → three patterns: commas inside braces belong to the glob.
pub(crate) fn split_patterns(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in s.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    out.push(current);
    out.into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// `dir/**` becomes `dir` (gitignore semantics then cover everything below it), and a
/// list that is only `**` matches everything, so it is no condition at all.
pub(crate) fn normalize_patterns(patterns: Vec<String>) -> Option<Vec<String>> {
    let patterns: Vec<String> = patterns
        .into_iter()
        .map(|p| match p.strip_suffix("/**") {
            Some(stripped) => stripped.to_string(),
            None => p,
        })
        .filter(|p| !p.is_empty())
        .collect();
    if patterns.is_empty() || patterns.iter().all(|p| p == "**") {
        None
    } else {
        Some(patterns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fm(raw: &str) -> FrontMatter {
        parse(raw, Path::new("/t/rule.md"))
    }

    #[test]
    fn no_front_matter_keeps_everything() {
        let got = fm("# Title\n---\nbody\n");
        assert_eq!(got.body, "# Title\n---\nbody\n");
        assert_eq!(got.paths, None);
    }

    #[test]
    fn string_paths_split_on_top_level_commas() {
        let got = fm("---\npaths: \"src/**/*.{ts,tsx}, docs/**\"\n---\nBody\n");
        assert_eq!(got.body, "Body\n");
        assert_eq!(
            got.paths,
            Some(vec!["src/**/*.{ts,tsx}".to_string(), "docs".to_string()])
        );
    }

    #[test]
    fn list_paths() {
        let got = fm("---\ndescription: x\npaths:\n  - \"*.rs\"\n  - tests/, benches\n---\nB");
        assert_eq!(
            got.paths,
            Some(vec![
                "*.rs".to_string(),
                "tests/".to_string(),
                "benches".to_string()
            ])
        );
        assert_eq!(got.body, "B");
    }

    #[test]
    fn only_double_star_is_unconditional() {
        assert_eq!(fm("---\npaths: \"**\"\n---\nB").paths, None);
        assert_eq!(fm("---\npaths: [\"**\", \"**/**\"]\n---\nB").paths, None);
        assert_eq!(fm("---\npaths: []\n---\nB").paths, None);
    }

    #[test]
    fn malformed_yaml_is_stripped_and_unconditional() {
        let got = fm("---\npaths: [unclosed\n  : :\n---\nStill here\n");
        assert_eq!(got.body, "Still here\n");
        assert_eq!(got.paths, None);
    }

    #[test]
    fn bom_and_crlf() {
        let got = fm("\u{feff}---\r\npaths: a\r\n---\r\nBody\r\n");
        assert_eq!(got.paths, Some(vec!["a".to_string()]));
        assert_eq!(got.body, "Body\r\n");
    }

    #[test]
    fn unclosed_front_matter_is_content() {
        let got = fm("---\npaths: a\nno closing line\n");
        assert_eq!(got.paths, None);
        assert!(got.body.starts_with("---\n"));
    }
}
