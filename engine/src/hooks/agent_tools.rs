//! The tools an `agent` hook's model may use to check its condition: `Read`, `Glob` and
//! `Grep`, read-only and confined to the session's working directories (symlinks
//! resolved), with what each returns bounded. They read with the daemon's permissions, so
//! nothing outside the workspace is ever opened.
//!
//! The tools run on a blocking thread, which a timed-out hook cannot stop from outside:
//! each walk checks its hook's [`Work`] at every entry, so the work ends with the hook.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::{Value, json};

use crate::discovery as paths;
use ctxd_pipeline::limits::{
    MAX_AGENT_GREP_FILES, MAX_AGENT_READ_BYTES, MAX_AGENT_TOOL_ENTRIES, MAX_AGENT_TOOL_OUTPUT_CHARS,
};

/// Lines `Read` returns without a `limit`.
const DEFAULT_READ_LINES: usize = 2_000;

/// The tools' definitions, as the Messages API takes them (our words).
pub(crate) fn definitions() -> Value {
    json!([
        {"name": "Read", "description": "Read a text file of the workspace, its lines numbered. offset: the first line (1-based); limit: how many lines.",
         "input_schema": {"type": "object", "properties": {
            "file_path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}},
            "required": ["file_path"]}},
        {"name": "Glob", "description": "List the workspace's files matching a glob pattern (e.g. src/**/*.rs), relative to path or the working directory.",
         "input_schema": {"type": "object", "properties": {
            "pattern": {"type": "string"}, "path": {"type": "string"}}, "required": ["pattern"]}},
        {"name": "Grep", "description": "Search the workspace's files for a regular expression; answers file:line: text. glob narrows the files.",
         "input_schema": {"type": "object", "properties": {
            "pattern": {"type": "string"}, "path": {"type": "string"}, "glob": {"type": "string"}},
            "required": ["pattern"]}}
    ])
}

/// What the model is told of a call its hook no longer waits for.
const CANCELLED: &str = "not finished: the hook ended";

/// The tool work of one agent hook: cancelled when the hook ends (its future dropped, on
/// its timeout too), and the directory entries it visited, counted.
#[derive(Debug, Default)]
pub(crate) struct Work {
    cancelled: AtomicBool,
    visited: AtomicUsize,
}

impl Work {
    pub(crate) fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Directory entries the walks visited.
    #[cfg(test)]
    pub(crate) fn visited(&self) -> usize {
        self.visited.load(Ordering::Relaxed)
    }

    /// One more entry; whether the walk may go on.
    fn visit(&self) -> bool {
        self.visited.fetch_add(1, Ordering::Relaxed);
        !self.is_cancelled()
    }
}

/// Cancels the hook's tool work when dropped, with the future of the hook that holds it.
pub(crate) struct CancelOnDrop(pub(crate) Arc<Work>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// Runs one tool call; `(text, is_error)`.
pub(crate) fn run(
    name: &str,
    input: &Value,
    cwd: &Path,
    roots: &[PathBuf],
    work: &Work,
) -> (String, bool) {
    if work.is_cancelled() {
        return (CANCELLED.into(), true);
    }
    let s = |k: &str| input.get(k).and_then(Value::as_str);
    let result = match name {
        "Read" => s("file_path")
            .ok_or_else(|| "file_path is missing".to_string())
            .and_then(|p| {
                let n = |k: &str| {
                    input
                        .get(k)
                        .and_then(Value::as_u64)
                        .map(ctxd_pipeline::saturate::usize_of)
                };
                read(p, n("offset"), n("limit"), cwd, roots)
            }),
        "Glob" => s("pattern")
            .ok_or_else(|| "pattern is missing".to_string())
            .and_then(|p| glob(p, s("path"), cwd, roots, work)),
        "Grep" => s("pattern")
            .ok_or_else(|| "pattern is missing".to_string())
            .and_then(|p| grep(p, s("path"), s("glob"), cwd, roots, work)),
        other => Err(format!("there is no tool {other}: use Read, Glob or Grep")),
    };
    match result {
        Ok(mut t) => {
            if t.chars().count() > MAX_AGENT_TOOL_OUTPUT_CHARS {
                t = t.chars().take(MAX_AGENT_TOOL_OUTPUT_CHARS).collect();
                t.push_str("\n(cut)");
            }
            (t, false)
        }
        Err(e) => (e, true),
    }
}

/// `path` resolved against `cwd`, canonical, inside the workspace.
fn confined(path: &str, cwd: &Path, roots: &[PathBuf]) -> Result<PathBuf, String> {
    let p = paths::absolutize(Path::new(path), cwd);
    let real = paths::canonical(&p).ok_or_else(|| format!("{path}: no such file or directory"))?;
    if !paths::inside_any(&real, roots) {
        return Err(format!("{path} lies outside the working directories"));
    }
    Ok(real)
}

fn read(
    path: &str,
    offset: Option<usize>,
    limit: Option<usize>,
    cwd: &Path,
    roots: &[PathBuf],
) -> Result<String, String> {
    let real = confined(path, cwd, roots)?;
    let text =
        ctxd_fs::safe_read::read_head(&real, MAX_AGENT_READ_BYTES).map_err(|e| e.to_string())?;
    let first = offset.unwrap_or(1).max(1);
    let lines: Vec<&str> = text
        .lines()
        .skip(first - 1)
        .take(limit.unwrap_or(DEFAULT_READ_LINES))
        .collect();
    Ok(ctxd_pipeline::mentions::numbered(
        &lines.join("\n"),
        first as u64,
    ))
}

/// The workspace's files under `base`, in walk order (`.gitignore` respected), until the
/// work is cancelled.
fn files<'a>(base: &Path, roots: &[PathBuf], work: &'a Work) -> impl Iterator<Item = PathBuf> + 'a {
    let roots = roots.to_vec();
    ignore::WalkBuilder::new(base)
        .follow_links(false)
        .build()
        .take_while(move |_| work.visit())
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(ignore::DirEntry::into_path)
        .filter(move |p| paths::inside_any(p, &roots))
}

fn glob(
    pattern: &str,
    path: Option<&str>,
    cwd: &Path,
    roots: &[PathBuf],
    work: &Work,
) -> Result<String, String> {
    let base = confined(path.unwrap_or("."), cwd, roots)?;
    let m = globset::Glob::new(pattern)
        .map_err(|e| format!("pattern: {e}"))?
        .compile_matcher();
    let mut out = Vec::new();
    for p in files(&base, roots, work) {
        let rel = p.strip_prefix(&base).unwrap_or(&p);
        if m.is_match(rel) {
            out.push(p.display().to_string());
            if out.len() == MAX_AGENT_TOOL_ENTRIES {
                out.push(format!(
                    "(more than {MAX_AGENT_TOOL_ENTRIES} files; narrow the pattern)"
                ));
                break;
            }
        }
    }
    if work.is_cancelled() {
        return Err(CANCELLED.into());
    }
    Ok(if out.is_empty() {
        "no files match".into()
    } else {
        out.join("\n")
    })
}

fn grep(
    pattern: &str,
    path: Option<&str>,
    glob: Option<&str>,
    cwd: &Path,
    roots: &[PathBuf],
    work: &Work,
) -> Result<String, String> {
    let re = regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| format!("pattern: {e}"))?;
    let base = confined(path.unwrap_or("."), cwd, roots)?;
    let only = match glob {
        Some(g) => Some(
            globset::Glob::new(g)
                .map_err(|e| format!("glob: {e}"))?
                .compile_matcher(),
        ),
        None => None,
    };
    let mut out = Vec::new();
    for p in files(&base, roots, work).take(MAX_AGENT_GREP_FILES) {
        let rel = p.strip_prefix(&base).unwrap_or(&p).to_path_buf();
        if only.as_ref().is_some_and(|m| !m.is_match(&rel)) {
            continue;
        }
        let Ok(text) = ctxd_fs::safe_read::read_head(&p, MAX_AGENT_READ_BYTES) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            if re.is_match(line) {
                out.push(format!("{}:{}: {line}", p.display(), i + 1));
                if out.len() == MAX_AGENT_TOOL_ENTRIES {
                    out.push(format!(
                        "(more than {MAX_AGENT_TOOL_ENTRIES} matches; narrow the pattern)"
                    ));
                    return Ok(out.join("\n"));
                }
            }
        }
    }
    if work.is_cancelled() {
        return Err(CANCELLED.into());
    }
    Ok(if out.is_empty() {
        "no matches".into()
    } else {
        out.join("\n")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_read_search_and_stay_inside_the_workspace() {
        let work = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = work.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(
            root.join("src/lib.rs"),
            "fn a() {}\n// TODO: test b\nfn b() {}\n",
        )
        .unwrap();
        std::fs::write(outside.path().join("secret.txt"), "the secret\n").unwrap();
        let roots = vec![root.clone()];
        let (t, err) = run(
            "Read",
            &json!({"file_path": "src/lib.rs", "offset": 2, "limit": 1}),
            &root,
            &roots,
            &Work::default(),
        );
        assert!(!err);
        assert_eq!(t, "     2\t// TODO: test b\n");
        let (t, _) = run(
            "Glob",
            &json!({"pattern": "**/*.rs"}),
            &root,
            &roots,
            &Work::default(),
        );
        assert!(t.ends_with("src/lib.rs"), "{t}");
        let (t, _) = run(
            "Grep",
            &json!({"pattern": "TODO", "glob": "*.rs"}),
            &root,
            &roots,
            &Work::default(),
        );
        assert!(t.contains("lib.rs:2: // TODO: test b"), "{t}");
        let secret = outside.path().join("secret.txt");
        let (t, err) = run(
            "Read",
            &json!({"file_path": secret}),
            &root,
            &roots,
            &Work::default(),
        );
        assert!(err && t.contains("outside"), "{t}");
        let (_, err) = run(
            "Bash",
            &json!({"command": "rm -rf /"}),
            &root,
            &roots,
            &Work::default(),
        );
        assert!(err);
    }
}
