//! The `@` mentions source: the prompts of the current turn that mention files or
//! directories get one `at_mention` attachment per mention, read now and then frozen in
//! the transcript. Only what lies inside the session's workspace (its cwd and additional
//! directories, symlinks resolved) is read: ctxd reads with the daemon's permissions, as
//! for instruction includes.

use std::path::{Path, PathBuf};

use ctxd_protocol::{ContentBlock, Record, RecordKind};
use serde_json::{Value, json};

use crate::discovery::{self as paths};
use crate::engine::sources::files;
use crate::engine::sources::source_input::{Effect, Found, SourceInput};
use ctxd_fs::safe_read::{self, ReadError};
use ctxd_pipeline::capabilities::McpServer;
use ctxd_pipeline::kinds::AT_MENTION;
use ctxd_pipeline::limits::{MAX_MENTION_ENTRIES, MAX_MENTION_FILE_BYTES, MAX_MENTION_LINES};
use ctxd_pipeline::mentions::{self, Mention};
use ctxd_store::context_state::ReadState;
use ctxd_store::error::{Error, Result};

/// The prompts of the current turn (after the last response) with their text, less those
/// already given their mentions.
fn unserved_prompts<'a>(view: &[&'a Record]) -> Vec<(&'a Record, String)> {
    let turn = view
        .iter()
        .rposition(|r| r.kind == RecordKind::Assistant && !r.is_sidechain)
        .map_or(0, |i| i + 1);
    let served: Vec<&str> = view[turn..]
        .iter()
        .filter_map(|r| r.attachment.as_ref())
        .filter(|a| a.get("type").and_then(Value::as_str) == Some(AT_MENTION))
        .filter_map(|a| a.get("for_uuid").and_then(Value::as_str))
        .collect();
    view[turn..]
        .iter()
        .filter(|r| r.kind == RecordKind::User && !r.is_meta && !r.is_compact_summary)
        .filter(|r| !served.contains(&r.uuid.as_str()))
        .filter_map(|r| {
            let text: Vec<&str> = r
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            (!text.is_empty()).then(|| (*r, text.join("\n")))
        })
        .collect()
}

pub(crate) async fn source_mentions(input: &SourceInput<'_>) -> Result<Found> {
    let wanted: Vec<(String, Vec<Mention>)> = unserved_prompts(&input.view)
        .into_iter()
        .map(|(r, text)| (r.uuid.clone(), mentions::parse(&text)))
        .filter(|(_, m)| !m.is_empty())
        .collect();
    if wanted.is_empty() {
        return Ok(Found::default());
    }
    let cwd = PathBuf::from(&input.row.cwd);
    let roots = paths::workspace_roots(&input.row.cwd, &input.row.additional_directories);
    // A resource mention is answered from what the client registered, here; a path on
    // the blocking pool below.
    let resources: Vec<Option<Value>> = wanted
        .iter()
        .flat_map(|(uuid, ms)| ms.iter().map(move |m| (uuid, m)))
        .map(|(uuid, m)| {
            m.server
                .as_deref()
                .map(|server| resource(uuid, m, server, input.mcp))
        })
        .collect();
    let (values, seen): (Vec<Value>, Vec<Option<ReadState>>) =
        tokio::task::spawn_blocking(move || {
            wanted
                .into_iter()
                .flat_map(|(uuid, ms)| ms.into_iter().map(move |m| (uuid.clone(), m)))
                .zip(resources)
                .map(|((uuid, m), r)| match r {
                    Some(r) => (r, None),
                    None => attach(&uuid, &m, &cwd, &roots),
                })
                .unzip()
        })
        .await
        .map_err(|e| Error::Internal(format!("mention task: {e}")))?;
    let seen: Vec<ReadState> = seen.into_iter().flatten().collect();
    Ok(Found::of(values, input, Effect::Seen(seen)))
}

/// A resource mention's attachment: the text the client registered for it, or why not.
fn resource(for_uuid: &str, m: &Mention, server: &str, mcp: &[McpServer]) -> Value {
    let unavailable = |reason: String| {
        json!({"type": AT_MENTION, "for_uuid": for_uuid, "mention": m.written,
               "server": server, "uri": m.path, "kind": "unavailable", "reason": reason})
    };
    let Some(s) = mcp.iter().find(|s| s.name == server) else {
        return unavailable(format!("no MCP server named {server} is connected"));
    };
    let Some(r) = s.resources.iter().find(|r| r.uri == m.path) else {
        return unavailable(format!(
            "the MCP server {server} offers no resource {}",
            m.path
        ));
    };
    let Some(text) = &r.text else {
        return unavailable(format!(
            "the content of {} was not read from the MCP server {server}",
            m.path
        ));
    };
    let mut v = json!({"type": AT_MENTION, "for_uuid": for_uuid, "mention": m.written,
           "server": server, "uri": r.uri, "kind": "resource", "content": text});
    if let Some(n) = &r.name {
        v["name"] = json!(n);
    }
    if let Some(t) = &r.mime_type {
        v["mime_type"] = json!(t);
    }
    v
}

/// One mention's attachment: the file's lines, the directory's entries, or why not;
/// with a file's read state: the model has seen it, as after a Read, so a later edit on
/// disk comes back as a changed-file reminder.
fn attach(
    for_uuid: &str,
    m: &Mention,
    cwd: &Path,
    roots: &[PathBuf],
) -> (Value, Option<ReadState>) {
    let unavailable = |path: &Path, reason: &str| {
        json!({"type": AT_MENTION, "for_uuid": for_uuid, "mention": m.written,
               "path": path.display().to_string(), "kind": "unavailable", "reason": reason})
    };
    let path = paths::absolutize(Path::new(&m.path), cwd);
    let value = attach_value(for_uuid, m, &path, roots, unavailable);
    let seen = (value.get("kind").and_then(Value::as_str) == Some("file"))
        .then(|| files::snapshot(&path))
        .flatten();
    (value, seen)
}

fn attach_value(
    for_uuid: &str,
    m: &Mention,
    path: &Path,
    roots: &[PathBuf],
    unavailable: impl Fn(&Path, &str) -> Value,
) -> Value {
    let path = path.to_path_buf();
    let Some(real) = paths::canonical(&path) else {
        return unavailable(&path, "there is no such file or directory");
    };
    if !paths::inside_any(&real, roots) {
        return unavailable(&path, "it lies outside the session's working directories");
    }
    if real.is_dir() {
        return directory(for_uuid, m, &path, &real);
    }
    let text = match safe_read::read_text(&real, MAX_MENTION_FILE_BYTES, "MAX_MENTION_FILE_BYTES") {
        Ok(t) => t,
        Err(ReadError::TooLarge { .. }) => {
            match safe_read::read_head(&real, MAX_MENTION_FILE_BYTES) {
                Ok(t) => t,
                Err(e) => return unavailable(&path, &e.to_string()),
            }
        }
        Err(e) => return unavailable(&path, &e.to_string()),
    };
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len() as u64;
    let (start, end) = match m.lines {
        Some((a, b)) => (a, b.unwrap_or(a).min(total)),
        None => (1, total.min(MAX_MENTION_LINES as u64)),
    };
    if total > 0 && start > total {
        return unavailable(
            &path,
            &format!("it has {total} lines, fewer than line {start}"),
        );
    }
    let shown = if total == 0 {
        String::new()
    } else {
        let from = ctxd_pipeline::saturate::usize_of(start - 1);
        let to = ctxd_pipeline::saturate::usize_of(end);
        mentions::numbered(&lines[from..to.max(from)].join("\n"), start)
    };
    let truncated = m.lines.is_none() && total > end;
    json!({"type": AT_MENTION, "for_uuid": for_uuid, "mention": m.written,
           "path": path.display().to_string(), "kind": "file", "content": shown,
           "start_line": start.min(total.max(1)), "end_line": end, "total_lines": total,
           "truncated": truncated})
}

fn directory(for_uuid: &str, m: &Mention, shown: &Path, real: &Path) -> Value {
    let mut entries: Vec<String> = std::fs::read_dir(real)
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        format!("{name}/")
                    } else {
                        name
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    entries.sort();
    let truncated = entries.len() > MAX_MENTION_ENTRIES;
    entries.truncate(MAX_MENTION_ENTRIES);
    json!({"type": AT_MENTION, "for_uuid": for_uuid, "mention": m.written,
           "path": shown.display().to_string(), "kind": "directory", "entries": entries,
           "truncated": truncated})
}
