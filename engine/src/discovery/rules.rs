//! `.claude/rules` folders: which files they hold, in which order, and whether a
//! conditional rule applies to a touched path.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use ignore::gitignore::GitignoreBuilder;
use walkdir::WalkDir;

use super::paths;
use ctxd_pipeline::limits::{MAX_RULE_ENTRIES, MAX_WALK_DEPTH, MAX_WALK_TIME};

/// Every `*.md` file below `rules_dir`, in the documented order: a depth-first walk
/// whose siblings are sorted by the bytes of their names, files and directories
/// interleaved — the same as sorting the relative paths component by component.
/// Symlinked files and directories are followed; a directory whose canonical path was
/// already walked, or that `enter` refuses (given its canonical path), is skipped, which
/// makes symlink loops finite and keeps links from leading the walk elsewhere. At most
/// `MAX_RULE_ENTRIES` entries are looked at.
pub(crate) fn rule_files(rules_dir: &Path, enter: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut visited: HashSet<PathBuf> = HashSet::new();
    let mut out = Vec::new();
    let mut budget = MAX_RULE_ENTRIES;
    let started = std::time::Instant::now();
    let mut walk = WalkDir::new(rules_dir)
        .follow_links(true)
        .max_depth(MAX_WALK_DEPTH)
        .sort_by_file_name()
        .into_iter();
    while let Some(entry) = walk.next() {
        if started.elapsed() > MAX_WALK_TIME {
            tracing::warn!(dir = %rules_dir.display(), "rules folder walk ran out of time (MAX_WALK_TIME); the rest is skipped");
            break;
        }
        let entry = match entry {
            Ok(entry) => entry,
            // A symlink loop (walkdir checks the ancestors) or an unreadable entry.
            Err(err) => {
                tracing::debug!(dir = %rules_dir.display(), %err, "skipping rules entry");
                continue;
            }
        };
        let path = entry.path();
        if entry.depth() > 0 {
            if budget == 0 {
                tracing::warn!(dir = %rules_dir.display(), limit = MAX_RULE_ENTRIES, "rules folder has too many entries (MAX_RULE_ENTRIES); the rest is skipped");
                break;
            }
            budget -= 1;
        }
        if entry.file_type().is_dir() {
            if entry.depth() == MAX_WALK_DEPTH {
                tracing::warn!(dir = %path.display(), limit = MAX_WALK_DEPTH, "rules folder nested too deep (MAX_WALK_DEPTH); its folders are skipped");
            }
            let Some(canonical) = paths::canonical(path) else {
                walk.skip_current_dir();
                continue;
            };
            if !enter(&canonical) {
                tracing::warn!(dir = %path.display(), target = %canonical.display(), "rules directory links outside the workspace; skipped");
                walk.skip_current_dir();
            } else if !visited.insert(canonical) {
                tracing::debug!(dir = %path.display(), "rules directory already walked (a second link to it)");
                walk.skip_current_dir();
            }
        } else if entry.file_type().is_file()
            && is_markdown(path)
            && !paths::is_injected_name(entry.file_name())
        {
            out.push(path.to_path_buf());
        }
    }
    out
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
        assert!(
            m(&["src/**/*.rs"], "/repo/src/main.rs"),
            "`**/` spans no directory too"
        );
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
        let got: Vec<PathBuf> = rule_files(&rules, &|_| true)
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
