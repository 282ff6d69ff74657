//! `.claude/rules` folders: which files they hold, in which order, and whether a
//! conditional rule applies to a touched path.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use ignore::gitignore::GitignoreBuilder;

use super::paths;

/// Every `*.md` file below `rules_dir`, in the documented order: a depth-first walk
/// whose siblings are sorted by the bytes of their names, files and directories
/// interleaved — the same as sorting the relative paths component by component.
/// Symlinked files and directories are followed; a directory whose canonical path was
/// already walked is skipped, which makes symlink loops finite.
pub(crate) fn rule_files(rules_dir: &Path) -> Vec<PathBuf> {
    let mut visited = HashSet::new();
    let mut out = Vec::new();
    walk(rules_dir, &mut visited, &mut out);
    out
}

fn walk(dir: &Path, visited: &mut HashSet<PathBuf>, out: &mut Vec<PathBuf>) {
    let Some(canonical) = paths::canonical(dir) else {
        return;
    };
    if !visited.insert(canonical) {
        tracing::debug!(dir = %dir.display(), "rules directory already walked (symlink loop?)");
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) => {
            tracing::debug!(dir = %dir.display(), %err, "cannot list rules directory");
            return;
        }
    };
    let mut names: Vec<OsString> = entries
        .filter_map(|entry| entry.ok().map(|e| e.file_name()))
        .collect();
    names.sort();
    for name in names {
        let path = dir.join(&name);
        let meta = match std::fs::metadata(&path) {
            Ok(meta) => meta,
            Err(err) => {
                tracing::debug!(path = %path.display(), %err, "skipping unreadable rules entry");
                continue;
            }
        };
        if meta.is_dir() {
            walk(&path, visited, out);
        } else if meta.is_file() && is_markdown(&path) && !paths::is_injected_name(&name) {
            out.push(path);
        }
    }
}

fn is_markdown(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "md")
}

/// Gitignore-style matching of `touched` against a rule's patterns, relative to
/// `base`. A path that is not inside `base` (or is `base` itself) never matches: the
/// patterns only describe what lies below it.
pub(crate) fn patterns_match(globs: &[String], base: &Path, touched: &Path) -> bool {
    let Some(rel) = paths::relative_within(base, touched) else {
        return false;
    };
    if rel.as_os_str().is_empty() || rel.has_root() {
        return false;
    }
    let mut builder = GitignoreBuilder::new(base);
    for glob in globs {
        if let Err(err) = builder.add_line(None, glob) {
            tracing::warn!(pattern = %glob, %err, "ignoring an invalid `paths:` pattern");
        }
    }
    match builder.build() {
        // `rel` is relative and has no root, the precondition of this call.
        Ok(matcher) => matcher.matched_path_or_any_parents(&rel, false).is_ignore(),
        Err(err) => {
            tracing::warn!(%err, "cannot build a matcher for `paths:` patterns");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn gitignore_semantics() {
        let base = Path::new("/repo");
        let m = |g: &[&str], p: &str| patterns_match(&globs(g), base, Path::new(p));
        assert!(m(&["src"], "/repo/src/a/b.ts"));
        assert!(m(&["*.ts"], "/repo/deep/x.ts"));
        assert!(!m(&["/*.ts"], "/repo/deep/x.ts"));
        assert!(m(&["src/**/*.{ts,tsx}"], "/repo/src/ui/App.tsx"));
        assert!(!m(&["src/**/*.{ts,tsx}"], "/repo/lib/App.tsx"));
        assert!(!m(&["src", "!src/gen"], "/repo/src/gen/x.ts"));
        assert!(!m(&["*.ts"], "/elsewhere/x.ts"));
        assert!(!m(&["**"], "/repo"));
    }

    #[test]
    fn order_is_component_wise_and_skips_non_markdown() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let rules = tmp.path().join("rules");
        for rel in [
            "b.md",
            "a/z.md",
            "a-b.md",
            "A.md",
            "c.txt",
            ".claude-injected-x.md",
        ] {
            let path = rules.join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, "x").expect("write");
        }
        let got: Vec<PathBuf> = rule_files(&rules)
            .into_iter()
            .map(|p| p.strip_prefix(&rules).expect("inside").to_path_buf())
            .collect();
        assert_eq!(
            got,
            vec![
                PathBuf::from("A.md"),
                PathBuf::from("a/z.md"),
                PathBuf::from("a-b.md"),
                PathBuf::from("b.md"),
            ]
        );
    }
}
