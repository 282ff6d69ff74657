//! Nested git worktrees (e.g. `repo/.claude/worktrees/<name>`, made by `claude -w`).
//!
//! Walking from `/` down to a cwd inside such a worktree passes through the main
//! checkout first, whose committed instruction files are the same files the worktree
//! has checked out itself; loading both would inject everything twice. So committed
//! files of directories inside the main checkout but outside the worktree are hidden.
//! `CLAUDE.local.md` is not committed, exists only in the main checkout, and stays.
//! Directories above the main checkout are unaffected.

use std::path::{Path, PathBuf};

use super::paths;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NestedWorktree {
    /// The worktree's top directory (canonical).
    checkout: PathBuf,
    /// The main repository's top directory (canonical), an ancestor of `checkout`.
    main: PathBuf,
}

impl NestedWorktree {
    /// Finds the git root of `cwd`; it is a nested worktree when its `.git` is a file
    /// pointing into `<main>/.git/worktrees/…` and `<main>` contains the worktree.
    pub(crate) fn detect(cwd: &Path) -> Option<Self> {
        for dir in cwd
            .ancestors()
            .take(ctxd_pipeline::limits::MAX_ANCESTOR_DIRS)
        {
            let dot_git = dir.join(".git");
            let Ok(meta) = std::fs::metadata(&dot_git) else {
                continue;
            };
            if meta.is_dir() {
                return None;
            }
            let main = main_checkout(dir, &dot_git)?;
            let checkout = paths::canonicalish(dir);
            let main = paths::canonicalish(&main);
            return (checkout != main && checkout.starts_with(&main))
                .then_some(Self { checkout, main });
        }
        None
    }

    /// Whether checked-in files of `dir` are duplicates of the worktree's own.
    pub(crate) fn hides_checked_in(&self, dir: &Path) -> bool {
        let dir = paths::canonicalish(dir);
        dir.starts_with(&self.main) && !dir.starts_with(&self.checkout)
    }

    pub(crate) fn hides(worktree: Option<&Self>, dir: &Path) -> bool {
        worktree.is_some_and(|w| w.hides_checked_in(dir))
    }
}

/// A git pointer file (`.git`, `commondir`): a few lines; a FIFO or a huge file is not one.
fn read_small(path: &Path) -> Option<String> {
    ctxd_fs::safe_read::read_text(path, 64 * 1024, "git pointer file").ok()
}

/// The main checkout of a linked worktree whose `.git` file is `dot_git`: git's
/// `commondir` file names the shared `.git`, else the `…/.git/worktrees/<name>` shape
/// of the path does. Submodules (`.git/modules/…`) and bare repositories yield `None`.
fn main_checkout(dir: &Path, dot_git: &Path) -> Option<PathBuf> {
    let text = read_small(dot_git)?;
    let gitdir = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("gitdir:"))?
        .trim();
    let gitdir = paths::absolutize(Path::new(gitdir), dir);
    let common = match read_small(&gitdir.join("commondir")) {
        Some(common) => paths::absolutize(Path::new(common.trim()), &gitdir),
        None => {
            let worktrees = gitdir.parent()?;
            if worktrees.file_name()? != "worktrees" {
                return None;
            }
            worktrees.parent()?.to_path_buf()
        }
    };
    if common.file_name()? != ".git" {
        return None;
    }
    common.parent().map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_nested_worktree_without_commondir() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path();
        std::fs::create_dir_all(root.join("repo/.git")).expect("mkdir");
        let wt = root.join("repo/.claude/worktrees/feat");
        std::fs::create_dir_all(wt.join("src")).expect("mkdir");
        std::fs::write(
            wt.join(".git"),
            format!(
                "gitdir: {}\n",
                root.join("repo/.git/worktrees/feat").display()
            ),
        )
        .expect("write");
        let found = NestedWorktree::detect(&wt.join("src")).expect("nested worktree");
        assert!(found.hides_checked_in(&root.join("repo")));
        assert!(found.hides_checked_in(&root.join("repo/.claude")));
        assert!(!found.hides_checked_in(&wt));
        assert!(!found.hides_checked_in(root));
    }

    #[test]
    fn plain_repo_and_sibling_worktree_are_not_nested() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path();
        std::fs::create_dir_all(root.join("repo/.git")).expect("mkdir");
        assert_eq!(NestedWorktree::detect(&root.join("repo")), None);
        let sibling = root.join("repo-feat");
        std::fs::create_dir_all(&sibling).expect("mkdir");
        std::fs::write(
            sibling.join(".git"),
            format!(
                "gitdir: {}\n",
                root.join("repo/.git/worktrees/feat").display()
            ),
        )
        .expect("write");
        assert_eq!(NestedWorktree::detect(&sibling), None);
    }
}
