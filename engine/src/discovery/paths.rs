//! Path arithmetic shared by the discovery walks.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

pub(crate) use ctxd_fs::paths::{canonical, canonicalish, normalize};

/// Files hooks write for themselves; they are never instructions.
const INJECTED_PREFIX: &str = ".claude-injected-";

/// `path` itself when absolute, otherwise `base/path`; normalised either way.
pub(crate) fn absolutize(path: &Path, base: &Path) -> PathBuf {
    if path.is_absolute() {
        normalize(path)
    } else {
        normalize(&base.join(path))
    }
}

/// The canonical roots of a session's workspace: its cwd and additional directories
/// (each as the lexical form when it does not exist).
pub(crate) fn workspace_roots(cwd: &str, additional: &[String]) -> Vec<PathBuf> {
    std::iter::once(cwd)
        .chain(additional.iter().map(String::as_str))
        .map(|d| canonicalish(Path::new(d)))
        .collect()
}

/// Whether `path`, symlinks resolved, lies inside one of `roots`: what ctxd may read for
/// the model on its own (a file the model was never shown, read with the daemon's
/// permissions, must not leave the workspace).
pub(crate) fn inside_any(path: &Path, roots: &[PathBuf]) -> bool {
    let p = canonicalish(path);
    roots.iter().any(|r| p.starts_with(r))
}

/// `path` relative to `base`, if it lies inside it (`base` itself yields an empty
/// path). Tried lexically first, then with symlinks resolved on both sides, so that
/// `/tmp/x` and `/private/tmp/x` spellings of one tree still relate.
pub(crate) fn relative_within(base: &Path, path: &Path) -> Option<PathBuf> {
    if let Ok(rel) = normalize(path).strip_prefix(normalize(base)) {
        return Some(rel.to_path_buf());
    }
    canonicalish(path)
        .strip_prefix(canonicalish(base))
        .ok()
        .map(Path::to_path_buf)
}

/// Every directory from the filesystem root down to `dir`, inclusive.
pub(crate) fn ancestors_top_down(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = dir
        .ancestors()
        .take(ctxd_pipeline::limits::MAX_ANCESTOR_DIRS)
        .map(Path::to_path_buf)
        .collect();
    if dirs.len() == ctxd_pipeline::limits::MAX_ANCESTOR_DIRS
        && dirs.last().and_then(|d| d.parent()).is_some()
    {
        tracing::warn!(dir = %dir.display(), limit = ctxd_pipeline::limits::MAX_ANCESTOR_DIRS, "directory nested too deep for the instruction chain (MAX_ANCESTOR_DIRS); the outer directories are skipped");
    }
    dirs.retain(|d| !d.as_os_str().is_empty());
    dirs.reverse();
    dirs
}

pub(crate) fn is_injected_name(name: &OsStr) -> bool {
    name.to_str()
        .is_some_and(|name| name.starts_with(INJECTED_PREFIX))
}

pub(crate) fn is_injected(path: &Path) -> bool {
    path.file_name().is_some_and(is_injected_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_run_from_root_down() {
        assert_eq!(
            ancestors_top_down(Path::new("/a/b")),
            vec![
                PathBuf::from("/"),
                PathBuf::from("/a"),
                PathBuf::from("/a/b")
            ]
        );
    }

    #[test]
    fn relative_within_rejects_outside_paths() {
        assert_eq!(
            relative_within(Path::new("/a/b"), Path::new("/a/b/c/d.rs")),
            Some(PathBuf::from("c/d.rs"))
        );
        assert_eq!(
            relative_within(Path::new("/a/b"), Path::new("/no/such/dir/x")),
            None
        );
    }

    #[test]
    fn injected_names() {
        assert!(is_injected(Path::new("/x/.claude-injected-hook.md")));
        assert!(!is_injected(Path::new("/x/CLAUDE.md")));
    }
}
