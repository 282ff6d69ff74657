//! `claudeMdExcludes`: glob patterns over absolute paths.

use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::paths;

pub(crate) struct Excludes {
    set: Option<GlobSet>,
}

impl Excludes {
    /// Invalid patterns are dropped with a warning rather than disabling the rest.
    pub fn new(patterns: &[String]) -> Self {
        if patterns.is_empty() {
            return Self { set: None };
        }
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            // `*` must not cross `/`, so that `/repo/*/CLAUDE.md` means one level.
            match GlobBuilder::new(pattern).literal_separator(true).build() {
                Ok(glob) => {
                    builder.add(glob);
                }
                Err(err) => {
                    tracing::warn!(%pattern, %err, "ignoring an invalid claudeMdExcludes pattern");
                }
            }
        }
        match builder.build() {
            Ok(set) => Self { set: Some(set) },
            Err(err) => {
                tracing::warn!(%err, "cannot build claudeMdExcludes matcher");
                Self { set: None }
            }
        }
    }

    /// Matches the path as discovered or with symlinks resolved, so a pattern written
    /// against either spelling works.
    pub(crate) fn matches(&self, path: &Path) -> bool {
        let Some(set) = &self.set else {
            return false;
        };
        set.is_match(path) || paths::canonical(path).is_some_and(|c| set.is_match(c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_stays_in_one_component() {
        let ex = Excludes::new(&[
            "/repo/*/CLAUDE.md".to_string(),
            "**/CLAUDE.local.md".to_string(),
        ]);
        assert!(ex.matches(Path::new("/repo/a/CLAUDE.md")));
        assert!(!ex.matches(Path::new("/repo/a/b/CLAUDE.md")));
        assert!(ex.matches(Path::new("/x/y/CLAUDE.local.md")));
    }

    #[test]
    fn invalid_patterns_are_dropped() {
        let ex = Excludes::new(&["[".to_string(), "/a/**".to_string()]);
        assert!(ex.matches(Path::new("/a/b/CLAUDE.md")));
    }
}
