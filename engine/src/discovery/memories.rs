//! Memory directories for `relevant_memories`: Claude Code's auto-memory
//! directory of a project and any directories the session names, scanned for topic files.
//!
//! * **Auto memory** lives in `~/.claude/projects/<slug>/memory/`, where `<slug>` is the
//!   project root (the canonical git root of the original cwd — a linked worktree maps to
//!   its main checkout — else the cwd) with every character outside `[A-Za-z0-9]`
//!   replaced by `-`; a slug over 200 characters is cut to 200 and suffixed with `-` and
//!   the path's hash in base 36 (Claude Code's `sanitizePath`).
//! * **Topic files** are the `*.md` files below a directory (at most 4 levels deep),
//!   except the `MEMORY.md` index, with optional YAML front matter (`name`,
//!   `description`, `type`). A file without a description borrows the index line that
//!   links to it. At most [`MAX_MEMORY_FILES`] files, newest first (ties by path); each is
//!   read only when regular and never past [`MAX_MEMORY_SCAN_BYTES`].

use std::path::{Path, PathBuf};

use serde::Deserialize;

use ctxd_fs::safe_read::read_text;
use ctxd_pipeline::limits::MAX_MEMORY_DEPTH;
use ctxd_pipeline::limits::MAX_MEMORY_FILES;
use ctxd_pipeline::limits::MAX_MEMORY_SCAN_BYTES;
use ctxd_pipeline::relevant_memories::{Candidate, Index};

/// The index file of a memory directory (not a topic file itself).
pub(crate) const MEMORY_INDEX: &str = "MEMORY.md";

/// One topic file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryFile {
    pub(crate) path: PathBuf,
    /// Path relative to its memory directory (what a model selector names).
    pub(crate) rel: String,
    pub(crate) name: String,
    pub(crate) description: String,
    /// `user`, `feedback`, `project`, `reference`, ... when the front matter says.
    pub(crate) kind: Option<String>,
    /// Text after the front matter (at most [`MAX_MEMORY_SCAN_BYTES`] of the file).
    pub(crate) body: String,
    pub(crate) mtime_ms: i64,
}

/// The offline scorer fitted to scanned files (see `pipeline::relevant_memories`).
pub fn index(files: &[MemoryFile]) -> Index {
    let paths: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
    let candidates: Vec<Candidate<'_>> = files
        .iter()
        .zip(&paths)
        .map(|(f, p)| Candidate {
            path: p,
            name: &f.name,
            description: &f.description,
            body: &f.body,
        })
        .collect();
    Index::build(&candidates)
}

/// What an index was fitted to: each file's path, modification time and body. Equal
/// keys, equal index.
pub fn index_key(files: &[MemoryFile]) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for f in files {
        h.update(f.path.as_os_str().as_encoded_bytes());
        h.update(&f.mtime_ms.to_le_bytes());
        h.update(f.name.as_bytes());
        h.update(f.description.as_bytes());
        h.update(f.body.as_bytes());
        h.update(&[0xff]);
    }
    h.digest()
}

/// `~/.claude/projects/<slug>/memory` for a session whose original cwd is `cwd`.
pub fn auto_memory_dir(user_home: &Path, cwd: &Path) -> PathBuf {
    let root = project_root(cwd);
    user_home
        .join(".claude")
        .join("projects")
        .join(sanitize_path(&root.display().to_string()))
        .join("memory")
}

/// The canonical git root of `cwd` (a linked worktree's main checkout), else `cwd`.
pub(crate) fn project_root(cwd: &Path) -> PathBuf {
    for dir in cwd
        .ancestors()
        .take(ctxd_pipeline::limits::MAX_ANCESTOR_DIRS)
    {
        let dot_git = dir.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
            continue;
        };
        if meta.is_dir() {
            return dir.to_path_buf();
        }
        // A worktree's `.git` file: `gitdir: MAIN/.git/worktrees/NAME`.
        if meta.is_file()
            && let Ok(text) = read_text(&dot_git, 4096, "worktree .git file")
            && let Some(gitdir) = text.trim().strip_prefix("gitdir:")
        {
            let gitdir = dir.join(gitdir.trim());
            if let Some(main_git) = gitdir
                .ancestors()
                .find(|a| a.file_name().is_some_and(|n| n == ".git"))
                && let Some(main) = main_git.parent()
            {
                return main.to_path_buf();
            }
        }
        return dir.to_path_buf();
    }
    cwd.to_path_buf()
}

/// Claude Code's `sanitizePath`: non-alphanumerics become `-`; long names are cut and
/// suffixed with a hash so they stay unique.
pub(crate) fn sanitize_path(name: &str) -> String {
    const MAX: usize = 200;
    let slug: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    if slug.chars().count() <= MAX {
        return slug;
    }
    let cut: String = slug.chars().take(MAX).collect();
    format!("{cut}-{}", base36(java_hash(name).unsigned_abs()))
}

/// Java's `String.hashCode` over UTF-16 units (what Claude Code's `hashCode` computes).
fn java_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
}

fn base36(mut n: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".into();
    }
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

#[derive(Deserialize, Default)]
struct FrontMatter {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
}

/// Splits `---\nYAML\n---\n` off the text; malformed YAML counts as none.
fn split_front_matter(text: &str) -> (FrontMatter, &str) {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (FrontMatter::default(), text);
    };
    let end = rest
        .match_indices("\n---")
        .find(|(i, _)| {
            let after = &rest[i + 4..];
            after.is_empty() || after.starts_with('\n') || after.starts_with("\r\n")
        })
        .map(|(i, _)| i);
    let Some(end) = end else {
        return (FrontMatter::default(), text);
    };
    let yaml = &rest[..end];
    let body = rest[end + 4..].trim_start_matches(['\r', '\n']);
    let fm = serde_norway::from_str(yaml).unwrap_or_default();
    (fm, body)
}

/// Topic files of `dirs` (duplicates by canonical path removed), newest first, at most
/// [`MAX_MEMORY_FILES`].
pub fn scan(dirs: &[PathBuf]) -> Vec<MemoryFile> {
    let mut seen = std::collections::BTreeSet::new();
    let mut found: Vec<(PathBuf, PathBuf, i64)> = Vec::new();
    for dir in dirs {
        walk(dir, dir, 0, &mut seen, &mut found);
    }
    found.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.1.cmp(&b.1)));
    found.truncate(MAX_MEMORY_FILES);
    let mut indexes: std::collections::BTreeMap<PathBuf, String> = Default::default();
    found
        .into_iter()
        .filter_map(|(root, path, mtime_ms)| {
            let raw = read_text(&path, MAX_MEMORY_SCAN_BYTES, "MAX_MEMORY_SCAN_BYTES")
                .ok()
                .or_else(|| {
                    // Larger files are scored and surfaced by their head.
                    ctxd_fs::safe_read::read_head(&path, MAX_MEMORY_SCAN_BYTES).ok()
                })?;
            let (fm, body) = split_front_matter(&raw);
            let rel = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .display()
                .to_string();
            let index = indexes.entry(root.clone()).or_insert_with(|| {
                read_text(&root.join(MEMORY_INDEX), MAX_MEMORY_SCAN_BYTES, "MEMORY.md")
                    .unwrap_or_default()
            });
            let description = fm
                .description
                .filter(|d| !d.trim().is_empty())
                .or_else(|| index_line(index, &rel))
                .unwrap_or_default();
            let name = fm.name.filter(|n| !n.trim().is_empty()).unwrap_or_else(|| {
                path.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
            Some(MemoryFile {
                path,
                rel,
                name,
                description,
                kind: fm.kind,
                body: body.to_string(),
                mtime_ms,
            })
        })
        .collect()
}

/// The index line naming `rel` (a Markdown link or the bare file name), without its
/// list marker.
fn index_line(index: &str, rel: &str) -> Option<String> {
    index
        .lines()
        .find(|l| l.contains(rel))
        .map(|l| l.trim().trim_start_matches(['-', '*', ' ']).to_string())
}

fn walk(
    root: &Path,
    dir: &Path,
    depth: usize,
    seen: &mut std::collections::BTreeSet<PathBuf>,
    out: &mut Vec<(PathBuf, PathBuf, i64)>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries
        .into_iter()
        .take(ctxd_pipeline::limits::MAX_RULE_ENTRIES)
    {
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            if depth < MAX_MEMORY_DEPTH
                && !path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                walk(root, &path, depth + 1, seen, out);
            }
            continue;
        }
        let is_topic = meta.is_file()
            && path.extension().is_some_and(|e| e == "md")
            && path.file_name().is_none_or(|n| n != MEMORY_INDEX);
        if !is_topic {
            continue;
        }
        let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if !seen.insert(canonical) {
            continue;
        }
        let mtime_ms = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, ctxd_pipeline::saturate::millis_i64);
        out.push((root.to_path_buf(), path, mtime_ms));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn slugs_are_claude_codes() {
        assert_eq!(sanitize_path("/home/ana/my.proj"), "-home-ana-my-proj");
        let long = format!("/{}", "a".repeat(250));
        let slug = sanitize_path(&long);
        assert!(slug.starts_with(&format!("-{}", "a".repeat(199))));
        assert_eq!(slug.chars().nth(200), Some('-'));
        assert_eq!(java_hash("hello"), 99_162_322);
        assert_eq!(base36(99_162_322), "1n1e4y");
    }

    #[test]
    fn the_project_root_is_the_main_checkout_of_a_worktree() {
        let t = tempfile::tempdir().unwrap();
        let main = t.path().join("main");
        std::fs::create_dir_all(main.join(".git/worktrees/wt")).unwrap();
        std::fs::create_dir_all(main.join("src/deep")).unwrap();
        assert_eq!(project_root(&main.join("src/deep")), main);
        let wt = t.path().join("wt");
        write(
            &wt.join(".git"),
            &format!("gitdir: {}\n", main.join(".git/worktrees/wt").display()),
        );
        assert_eq!(project_root(&wt), main);
        let home = t.path().join("home");
        assert_eq!(
            auto_memory_dir(&home, &wt),
            home.join(".claude/projects")
                .join(sanitize_path(&main.display().to_string()))
                .join("memory")
        );
    }

    #[test]
    fn topic_files_with_front_matter_and_index_lines() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("memory");
        write(
            &dir.join("MEMORY.md"),
            "- [Parser](parser.md) — quirks of the parser\n",
        );
        write(&dir.join("parser.md"), "no front matter here\n");
        write(
            &dir.join("topics/db.md"),
            "---\nname: database\ndescription: schema rules\ntype: project\n---\n\nAppend-only.\n",
        );
        write(&dir.join("notes.txt"), "not markdown");
        write(&dir.join(".hidden/x.md"), "hidden");
        let files = scan(&[dir.clone(), dir.clone()]);
        let mut rels: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
        rels.sort_unstable();
        assert_eq!(rels, ["parser.md", "topics/db.md"]);
        let db = files.iter().find(|f| f.rel == "topics/db.md").unwrap();
        assert_eq!(
            (
                db.name.as_str(),
                db.description.as_str(),
                db.kind.as_deref()
            ),
            ("database", "schema rules", Some("project"))
        );
        assert_eq!(db.body, "Append-only.\n");
        let parser = files.iter().find(|f| f.rel == "parser.md").unwrap();
        assert_eq!(parser.name, "parser");
        assert_eq!(
            parser.description,
            "[Parser](parser.md) — quirks of the parser"
        );
    }

    #[test]
    fn at_most_two_hundred_files_newest_first() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("m");
        for i in 0..205 {
            write(&dir.join(format!("f{i:03}.md")), "x");
        }
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000);
        std::fs::File::options()
            .write(true)
            .open(dir.join("f000.md"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let files = scan(&[dir]);
        assert_eq!(files.len(), MAX_MEMORY_FILES);
        assert!(!files.iter().any(|f| f.rel == "f000.md"));
    }
}
