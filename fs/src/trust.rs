//! The project trust list: a project directory's `.claude/settings.json` and
//! `settings.local.json` may run hooks only once the user trusted that directory, as
//! Claude Code asks before it runs a new project's hooks. Whoever can write a checkout
//! (a cloned repository, a shared folder) would otherwise run commands as the user the
//! moment any client names that directory as a session's cwd.
//!
//! The list is `HOME/trusted-projects`: one canonical directory per line, written by
//! `ctx trust` (or by `session.create` with `settings.hooks.trust_project`). A
//! directory is trusted when it, or a directory above it, is in the list.

use std::path::{Path, PathBuf};

use ctxd_pipeline::limits::MAX_TRUST_LIST_BYTES;

/// Where the list lives in `home`.
pub fn list_path(home: &Path) -> PathBuf {
    home.join("trusted-projects")
}

/// The directories in the list (a missing or unreadable list trusts nothing).
pub fn entries(list: &Path) -> Vec<PathBuf> {
    crate::safe_read::read_text(list, MAX_TRUST_LIST_BYTES, "MAX_TRUST_LIST_BYTES")
        .map(|t| {
            t.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `project`, or a directory above it, is in the list.
pub fn is_trusted(list: &Path, project: &Path) -> bool {
    let project = crate::paths::canonicalish(project);
    entries(list).iter().any(|e| project.starts_with(e))
}

/// Replaces the list whole, so a reader never sees half of it.
fn write(list: &Path, all: &[PathBuf]) -> std::io::Result<()> {
    let text: String = all.iter().map(|p| format!("{}\n", p.display())).collect();
    if let Some(dir) = list.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = list.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, list)
}

/// Adds `project` (canonical) to the list, once.
pub fn trust(list: &Path, project: &Path) -> std::io::Result<()> {
    let canonical = crate::paths::canonicalish(project);
    let mut all = entries(list);
    if all.contains(&canonical) {
        return Ok(());
    }
    all.push(canonical);
    write(list, &all)
}

/// Removes `project` (as given, or canonical) from the list; whether it was there.
pub fn distrust(list: &Path, project: &Path) -> std::io::Result<bool> {
    let canonical = crate::paths::canonicalish(project);
    let mut all = entries(list);
    let before = all.len();
    all.retain(|e| e != project && *e != canonical);
    if all.len() == before {
        return Ok(false);
    }
    write(list, &all)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trusted_directory_covers_what_is_below_it_only() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("home").join("trusted-projects");
        let proj = dir.path().join("proj");
        std::fs::create_dir_all(proj.join("sub")).unwrap();
        assert!(!is_trusted(&list, &proj));
        trust(&list, &proj).unwrap();
        trust(&list, &proj).unwrap();
        assert_eq!(entries(&list).len(), 1);
        assert!(is_trusted(&list, &proj));
        assert!(is_trusted(&list, &proj.join("sub")));
        assert!(!is_trusted(&list, dir.path()));
        assert!(distrust(&list, &proj).unwrap());
        assert!(!distrust(&list, &proj).unwrap());
        assert!(!is_trusted(&list, &proj));
    }
}
