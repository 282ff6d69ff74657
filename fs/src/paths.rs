//! Canonical and normalised paths: how ctxd compares a path however it was spelled.

use std::path::{Component, Path, PathBuf};

/// Resolves `.` and `..` without touching the disk, so that include targets and walk
/// directories compare equal however they were spelled. `..` at the root stays at the
/// root, as the OS does.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => out.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

/// The canonical path, when it exists.
pub fn canonical(path: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(path).ok()
}

/// Canonical form of a path that may not exist yet (a file about to be written): the
/// deepest existing ancestor is resolved and the rest appended. Falls back to the
/// lexical form, so comparisons degrade instead of failing.
pub fn canonicalish(path: &Path) -> PathBuf {
    if let Some(found) = canonical(path) {
        return found;
    }
    let mut tail = Vec::new();
    let mut cursor = path;
    while let Some(parent) = cursor.parent() {
        if let Some(name) = cursor.file_name() {
            tail.push(name.to_os_string());
        }
        if let Some(mut found) = canonical(parent) {
            for name in tail.iter().rev() {
                found.push(name);
            }
            return found;
        }
        cursor = parent;
    }
    normalize(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_resolves_dots_lexically() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/../a")), PathBuf::from("/a"));
        assert_eq!(normalize(Path::new("a/../../b")), PathBuf::from("../b"));
    }

    #[test]
    fn canonicalish_resolves_existing_prefix() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let real = std::fs::canonicalize(tmp.path()).expect("canon");
        assert_eq!(
            canonicalish(&tmp.path().join("missing/file.rs")),
            real.join("missing/file.rs")
        );
    }
}
