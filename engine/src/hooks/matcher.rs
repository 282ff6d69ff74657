//! Claude Code's matcher semantics, exactly: absent, empty or `*` matches everything;
//! a matcher of only letters, digits, `_` and `|` is an exact name or a `|`-separated
//! list of exact names; anything else is a regular expression searched anywhere in the
//! value (unanchored, like JavaScript's `RegExp.test`). An invalid regular expression
//! matches nothing (and `hooks.list` says why).

use regex::Regex;

/// Regular expressions in settings files are small; this bounds what one may cost.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

#[derive(Debug, Clone)]
pub(crate) enum Matcher {
    All,
    Names(Vec<String>),
    Regex(Regex),
    /// The pattern did not compile: never matches.
    Invalid(String),
}

impl Matcher {
    pub fn new(raw: Option<&str>) -> Matcher {
        let Some(raw) = raw else {
            return Matcher::All;
        };
        if raw.is_empty() || raw == "*" {
            return Matcher::All;
        }
        if raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|')
        {
            return Matcher::Names(raw.split('|').map(|s| s.trim().to_string()).collect());
        }
        match regex::RegexBuilder::new(raw)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
        {
            Ok(r) => Matcher::Regex(r),
            Err(e) => Matcher::Invalid(format!(
                "matcher {raw:?} is not a valid regular expression: {e}"
            )),
        }
    }

    /// Whether a hook with this matcher runs for `value` (the tool name, the session
    /// start source, ...). Events without a matcher value match every hook.
    pub(crate) fn matches(&self, value: Option<&str>) -> bool {
        let Some(value) = value else {
            return !matches!(self, Matcher::Invalid(_));
        };
        match self {
            Matcher::All => true,
            Matcher::Names(names) => names.iter().any(|n| n == value),
            Matcher::Regex(r) => r.is_match(value),
            Matcher::Invalid(_) => false,
        }
    }

    pub(crate) fn error(&self) -> Option<&str> {
        match self {
            Matcher::Invalid(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(raw: &str) -> Matcher {
        Matcher::new(Some(raw))
    }

    #[test]
    fn absent_empty_and_star_match_everything() {
        for matcher in [Matcher::new(None), m(""), m("*")] {
            assert!(matcher.matches(Some("Bash")));
            assert!(matcher.matches(Some("mcp__fs__read")));
            assert!(matcher.matches(None));
        }
    }

    #[test]
    fn a_plain_name_is_exact() {
        let b = m("Bash");
        assert!(b.matches(Some("Bash")));
        assert!(!b.matches(Some("BashOutput")));
        assert!(!b.matches(Some("bash")), "case-sensitive");
        assert!(!b.matches(Some("MyBash")));
    }

    #[test]
    fn alternatives_are_exact_names() {
        let w = m("Edit|Write");
        assert!(w.matches(Some("Edit")));
        assert!(w.matches(Some("Write")));
        assert!(!w.matches(Some("MultiEdit")));
        assert!(!w.matches(Some("Read")));
    }

    #[test]
    fn anything_else_is_an_unanchored_regex() {
        let n = m("Notebook.*");
        assert!(n.matches(Some("NotebookEdit")));
        assert!(!n.matches(Some("Read")));
        let mcp = m("mcp__memory__.*");
        assert!(mcp.matches(Some("mcp__memory__create_entities")));
        assert!(!mcp.matches(Some("mcp__fs__read")));
        // Like RegExp.test: found anywhere unless anchored.
        assert!(m("Edit.?").matches(Some("MultiEdit")));
        assert!(!m("^Edit$").matches(Some("MultiEdit")));
    }

    #[test]
    fn an_invalid_regex_matches_nothing_and_says_why() {
        let bad = m("Bash(");
        assert!(!bad.matches(Some("Bash(")));
        assert!(!bad.matches(None));
        assert!(bad.error().unwrap().contains("Bash("));
    }

    #[test]
    fn events_without_a_value_ignore_the_matcher() {
        assert!(m("Bash").matches(None));
        assert!(m("a.*b").matches(None));
    }
}
