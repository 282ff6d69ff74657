//! The engine's context sources: instruction files (the memoized `claudeMd` and
//! `nested_memory`), file read state (`edited_text_file` when a seen file changes on
//! disk) and the date (`date_change`). These are the edges that read the filesystem;
//! what they decide is stored as attachment records so every later compile, restart and
//! fork replays the same bytes.

use ctxd_pipeline::kinds;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, FixedOffset, Utc};
use ctxd_protocol::{ContentBlock, Record, RecordKind, SessionEvent};
use sha2::{Digest, Sha256};

use crate::discovery::{self, DiscoveryConfig, InstructionFile};
use crate::engine::{Engine, Loaded, SessionCell};
use ctxd_pipeline::changed_files;
use ctxd_pipeline::limits::MAX_TRACKED_FILE_BYTES;
use ctxd_store::context_state::{self, InstructionMemo, ReadStamp, ReadState};
use ctxd_store::error::{Error, Result};
use ctxd_store::sessions::SessionRow;

/// Claude Code's file tools and the input field naming their file.
const FILE_TOOLS: [(&str, &str); 5] = [
    ("Read", "file_path"),
    ("Edit", "file_path"),
    ("MultiEdit", "file_path"),
    ("Write", "file_path"),
    ("NotebookEdit", "notebook_path"),
];

/// Where discovery looks besides the session's own directories.
#[derive(Debug, Clone)]
pub struct DiscoveryDefaults {
    pub managed_root: PathBuf,
    pub user_home: PathBuf,
}

impl Default for DiscoveryDefaults {
    fn default() -> Self {
        DiscoveryDefaults {
            managed_root: PathBuf::from(discovery::DEFAULT_MANAGED_ROOT),
            user_home: directories::BaseDirs::new()
                .map_or_else(|| PathBuf::from("/"), |b| b.home_dir().to_path_buf()),
        }
    }
}

/// The file a file-tool `tool_use` names, resolved against the cwd.
pub(crate) fn file_tool_path(name: &str, input: &serde_json::Value, cwd: &str) -> Option<PathBuf> {
    let field = FILE_TOOLS.iter().find(|(n, _)| *n == name)?.1;
    let raw = input.get(field)?.as_str()?;
    let p = Path::new(raw);
    Some(if p.is_absolute() {
        p.to_path_buf()
    } else {
        Path::new(cwd).join(p)
    })
}

fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, ctxd_pipeline::saturate::nanos_i64)
}

/// Reads what the model would see of `path` now. `None` when it is not a readable regular
/// file. The file is hashed as a stream; only files up to `MAX_TRACKED_FILE_BYTES` are kept
/// in memory, so a huge file costs its read, never its size in memory.
pub(crate) fn snapshot(path: &Path) -> Option<ReadState> {
    use std::io::Read;
    let (file, meta) = ctxd_fs::safe_read::open_regular(path).ok()?;
    let mut hasher = Sha256::new();
    let keep = meta.len() <= MAX_TRACKED_FILE_BYTES;
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut reader = std::io::BufReader::new(file);
    let mut size = 0u64;
    loop {
        let n = reader.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&buf[..n]);
        if keep && size <= MAX_TRACKED_FILE_BYTES {
            kept.extend_from_slice(&buf[..n]);
        }
    }
    let content = if keep && size <= MAX_TRACKED_FILE_BYTES {
        String::from_utf8(kept).ok()
    } else {
        None
    };
    Some(ReadState {
        path: path.display().to_string(),
        size: meta.len(),
        mtime_ns: mtime_ns(&meta),
        sha256: hex::encode(hasher.finalize()),
        content,
    })
}

/// What one compile found changed among the files the model has seen.
#[derive(Clone)]
pub(crate) enum FileChange {
    Edited {
        state: ReadState,
        snippet: Option<String>,
    },
    Removed(String),
}

/// What the disk says of one seen file.
enum Checked {
    /// Settled without what the model saw: gone, or touched with the same bytes.
    Settled(FileChange),
    /// Its bytes changed: the diff needs the content the model saw.
    Changed(ReadState),
}

fn check_file(seen: &ReadStamp) -> Option<Checked> {
    let path = Path::new(&seen.path);
    let Ok(meta) = std::fs::metadata(path) else {
        return Some(Checked::Settled(FileChange::Removed(seen.path.clone())));
    };
    if meta.len() == seen.size && mtime_ns(&meta) == seen.mtime_ns {
        return None;
    }
    let now = snapshot(path)?;
    if now.sha256 == seen.sha256 {
        // Touched but not changed (e.g. `touch`, or a save with the same bytes): update
        // the stamp quietly so the next compile need not read it again.
        return Some(Checked::Settled(FileChange::Edited {
            state: now,
            snippet: None,
        }));
    }
    Some(Checked::Changed(now))
}

/// The change of a file whose bytes changed, against `saw` (what the model saw of it).
fn edited(now: ReadState, saw: Option<&str>) -> FileChange {
    let snippet = match (saw, &now.content) {
        (Some(old), Some(new)) => changed_files::snippet(old, new),
        _ => Some(format!(
            "(the file changed; it is too large or not text, so no diff is shown; it is now {} bytes)",
            now.size
        )),
    };
    FileChange::Edited {
        state: now,
        snippet,
    }
}

impl Engine {
    pub(crate) fn discovery_config(&self, row: &SessionRow) -> DiscoveryConfig {
        let s = &row.settings.instructions;
        let mut cfg = DiscoveryConfig::new(&row.original_cwd, &self.discovery.user_home);
        cfg.managed_root = s
            .managed_root
            .as_ref()
            .map_or_else(|| self.discovery.managed_root.clone(), PathBuf::from);
        cfg.additional_directories = row
            .additional_directories
            .iter()
            .map(PathBuf::from)
            .collect();
        cfg.excludes.clone_from(&s.excludes);
        cfg.allow_external_includes = s.allow_external_includes;
        cfg.agents_md = s.agents_md.unwrap_or(true);
        cfg.total_bytes = ctxd_pipeline::limits::instruction_total_bytes(row.model.context_window);
        cfg
    }

    /// The startup chain, rendered: `(claudeMd, canonical paths loaded)`.
    pub(crate) async fn startup_instructions(
        &self,
        row: &SessionRow,
    ) -> Result<(Option<String>, Vec<String>)> {
        if row.settings.instructions.disabled {
            return Ok((None, Vec::new()));
        }
        let cfg = self.discovery_config(row);
        tokio::task::spawn_blocking(move || {
            let chain = discovery::startup_chain(&cfg);
            let paths = chain
                .iter()
                .map(|f| f.canonical_path().display().to_string())
                .collect();
            (discovery::render_claude_md(&chain), paths)
        })
        .await
        .map_err(|e| Error::Internal(format!("discovery task: {e}")))
    }

    /// Makes sure the memoized `claudeMd` belongs to the current history: a compaction
    /// (a new boundary) resets it, with the loaded set and the read state.
    pub(crate) async fn refresh_memo(&self, cell: &SessionCell, l: &mut Loaded) -> Result<()> {
        if l.memo
            .as_ref()
            .is_some_and(|m| m.boundary_uuid == l.boundary_uuid)
        {
            return Ok(());
        }
        let (claude_md, paths) = self.startup_instructions(&l.row).await?;
        let memo = InstructionMemo {
            claude_md,
            boundary_uuid: l.boundary_uuid.clone(),
            announced_date: l
                .memo
                .as_ref()
                .map_or_else(|| l.row.start_date.clone(), |m| m.announced_date.clone()),
        };
        let fresh = l.memo.is_none();
        let (sid, m, p) = (l.row.id.clone(), memo.clone(), paths.clone());
        self.store
            .write_current(&l.row.id, l.revision, move |tx| {
                // A new history re-announces the startup chain; the read state is the
                // compaction's to reset (it restores files into it).
                if !fresh {
                    context_state::clear_loaded(tx, &sid)?;
                }
                context_state::set_memo(tx, &sid, &m)?;
                context_state::add_loaded(tx, &sid, &p)
            })
            .await?;
        l.memo = Some(memo);
        if !paths.is_empty() {
            self.emit(
                cell,
                SessionEvent::InstructionsLoaded {
                    session_id: l.row.id.clone(),
                    reason: "startup".into(),
                    paths,
                },
            );
        }
        Ok(())
    }

    /// Learns from appended records: paths touched by file tools (for nested memory)
    /// and what the model has now seen of a file (read state, including the agent's own
    /// edits, which must not come back as external changes).
    pub(crate) async fn observe(
        &self,
        row_cwd: &str,
        additional_directories: &[String],
        sid: &str,
        known: &[Record],
        batch: &[Record],
    ) {
        let mut uses: BTreeMap<String, (String, PathBuf)> = BTreeMap::new();
        let mut touched = Vec::new();
        let mut seen: Vec<PathBuf> = Vec::new();
        let lookup = |id: &str, uses: &BTreeMap<String, (String, PathBuf)>| -> Option<PathBuf> {
            if let Some((_, p)) = uses.get(id) {
                return Some(p.clone());
            }
            known.iter().rev().find_map(|r| {
                r.content.iter().find_map(|b| match b {
                    ContentBlock::ToolUse {
                        id: uid,
                        name,
                        input,
                        ..
                    } if uid == id => file_tool_path(name, input, row_cwd),
                    _ => None,
                })
            })
        };
        for r in batch.iter().filter(|r| !r.is_sidechain) {
            for b in &r.content {
                match b {
                    ContentBlock::ToolUse {
                        id, name, input, ..
                    } if r.kind == RecordKind::Assistant => {
                        if let Some(p) = file_tool_path(name, input, row_cwd) {
                            touched.push(p.display().to_string());
                            uses.insert(id.clone(), (name.clone(), p));
                        }
                    }
                    ContentBlock::ToolResult {
                        tool_use_id,
                        is_error,
                        ..
                    } if r.kind == RecordKind::User && !*is_error => {
                        if let Some(p) = lookup(tool_use_id, &uses) {
                            seen.push(p);
                        }
                    }
                    _ => {}
                }
            }
        }
        if touched.is_empty() && seen.is_empty() {
            return;
        }
        // Only files inside the workspace are watched for the model: ctxd reads a changed
        // file itself (`edited_text_file`), with the daemon's permissions.
        let (cwd, additional) = (row_cwd.to_string(), additional_directories.to_vec());
        let states = tokio::task::spawn_blocking(move || {
            let roots = crate::discovery::workspace_roots(&cwd, &additional);
            seen.iter()
                .filter(|p| crate::discovery::inside_any(p, &roots))
                .filter_map(|p| snapshot(p))
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        for s in &states {
            self.watches.watch(sid, Path::new(&s.path));
        }
        let sid2 = sid.to_string();
        let r = self
            .store
            .write(sid, move |tx| {
                context_state::add_touched(tx, &sid2, &touched)?;
                for s in &states {
                    context_state::put_read_state(tx, &sid2, s)?;
                }
                Ok(())
            })
            .await;
        if let Err(e) = r {
            tracing::warn!(session = sid, error = %e, "could not record file state");
        }
    }

    /// Marks a file as seen by the model now (`context.report_read`).
    pub async fn report_read(&self, sid: &str, path: &str) -> Result<()> {
        let row = self.get_row(sid).await?;
        let p = Path::new(path);
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            Path::new(&row.cwd).join(p)
        };
        let pc = p.clone();
        let roots = crate::discovery::workspace_roots(&row.cwd, &row.additional_directories);
        let state = tokio::task::spawn_blocking(move || {
            crate::discovery::inside_any(&pc, &roots)
                .then(|| snapshot(&pc))
                .ok_or("is outside the session's workspace: ctxd does not watch it")
                .and_then(|s| s.ok_or("is not a readable file"))
        })
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
        .map_err(|why| Error::invalid("path", format!("{} {why}", p.display())))?;
        self.watches.watch(sid, &p);
        let sid2 = sid.to_string();
        self.store
            .write(sid, move |tx| {
                context_state::put_read_state(tx, &sid2, &state)
            })
            .await
    }

    /// Records paths the agent touched (`context.touch_paths`).
    pub async fn touch_paths(&self, sid: &str, paths: Vec<String>) -> Result<()> {
        let row = self.get_row(sid).await?;
        let resolved: Vec<String> = paths
            .iter()
            .map(|p| {
                let p = Path::new(p);
                if p.is_absolute() {
                    p.to_path_buf()
                } else {
                    Path::new(&row.cwd).join(p)
                }
            })
            .map(|p| p.display().to_string())
            .collect();
        let sid2 = sid.to_string();
        self.store
            .write(sid, move |tx| {
                context_state::add_touched(tx, &sid2, &resolved)
            })
            .await?;
        self.skills.touched();
        Ok(())
    }

    async fn get_row(&self, sid: &str) -> Result<SessionRow> {
        let s = sid.to_string();
        self.store
            .read(move |c| ctxd_store::sessions::get(c, &s))
            .await
    }

    /// What the store holds for one collection, in one short read, with the files seen
    /// checked on disk (a stat each, a capped read of one that changed, and the content
    /// the model saw read back only for those): the queue only when `queue` (it is not
    /// delivered while a tool result is awaited).
    ///
    /// `kept`: what the last collection read, reused (no store read) while the store's
    /// context generation is still the one it was read at.
    pub(crate) async fn stored_for_collection(
        &self,
        sid: &str,
        queue: bool,
        kept: Option<Arc<ContextRows>>,
    ) -> Result<Stored> {
        // Taken before the read: a write that commits meanwhile moves it on after, so
        // these rows are read again next time rather than kept past that write.
        let generation = self.store.context_generation();
        let rows = match kept.filter(|k| generation.is_some() && k.generation == generation) {
            Some(rows) => rows,
            None => {
                let session = sid.to_string();
                let rows = self
                    .store
                    .read_short(move |c| {
                        let stamps = context_state::read_stamps(c, &session)?;
                        let touched = context_state::touched(c, &session)?;
                        let loaded = if touched.is_empty() {
                            BTreeSet::new()
                        } else {
                            context_state::loaded(c, &session)?
                        };
                        let queued = ctxd_store::queued::list(c, &session, Some(None))?;
                        Ok(ContextRows {
                            generation,
                            stamps,
                            touched,
                            loaded,
                            queued,
                        })
                    })
                    .await?;
                Arc::new(rows)
            }
        };
        let changes = self.check_seen_files(sid, rows.stamps.clone()).await?;
        Ok(Stored {
            queued: if queue {
                rows.queued.clone()
            } else {
                Vec::new()
            },
            changes,
            rows,
        })
    }

    /// The seen files that changed on disk or are gone. The disk is checked on the
    /// blocking pool (a stat can hang on a network file system, and the collection's time
    /// bound must still end the wait), and so are the diffs.
    async fn check_seen_files(&self, sid: &str, stamps: Vec<ReadStamp>) -> Result<Vec<FileChange>> {
        if stamps.is_empty() {
            return Ok(Vec::new());
        }
        let task = |e: tokio::task::JoinError| Error::Internal(format!("file check task: {e}"));
        let checked: Vec<Checked> =
            tokio::task::spawn_blocking(move || stamps.iter().filter_map(check_file).collect())
                .await
                .map_err(task)?;
        let changed: Vec<String> = checked
            .iter()
            .filter_map(|c| match c {
                Checked::Changed(now) => Some(now.path.clone()),
                Checked::Settled(_) => None,
            })
            .collect();
        if changed.is_empty() {
            return Ok(checked
                .into_iter()
                .filter_map(|c| match c {
                    Checked::Settled(f) => Some(f),
                    Checked::Changed(_) => None,
                })
                .collect());
        }
        let sid = sid.to_string();
        let mut saw: BTreeMap<String, Option<String>> = self
            .store
            .read_short(move |c| {
                changed
                    .into_iter()
                    .map(|p: String| {
                        let content = context_state::read_content(c, &sid, &p)?;
                        Ok((p, content))
                    })
                    .collect::<Result<BTreeMap<_, _>>>()
            })
            .await?;
        tokio::task::spawn_blocking(move || {
            checked
                .into_iter()
                .map(|c| match c {
                    Checked::Settled(f) => f,
                    Checked::Changed(now) => {
                        let old = saw.remove(&now.path).flatten();
                        edited(now, old.as_deref())
                    }
                })
                .collect()
        })
        .await
        .map_err(task)
    }

    /// The `nested_memory` attachment for instruction files that became relevant through
    /// the touched paths of `rows`. Writes nothing: the caller consumes the touched paths.
    pub(crate) async fn gather_nested(
        &self,
        row: &SessionRow,
        rows: &ContextRows,
    ) -> Result<NestedFound> {
        let mut found = NestedFound {
            touched: !rows.touched.is_empty(),
            ..NestedFound::default()
        };
        if rows.touched.is_empty() || row.settings.instructions.disabled {
            return Ok(found);
        }
        let cfg = self.discovery_config(row);
        let touched = rows.touched.clone();
        let loaded_set: BTreeSet<PathBuf> = rows.loaded.iter().map(PathBuf::from).collect();
        let read_set: BTreeSet<PathBuf> =
            rows.stamps.iter().map(|s| PathBuf::from(&s.path)).collect();
        let nested: Vec<InstructionFile> = tokio::task::spawn_blocking(move || {
            let mut out: Vec<InstructionFile> = Vec::new();
            let mut taken = loaded_set.clone();
            for t in &touched {
                for f in discovery::nested_for_path(&cfg, Path::new(t), &taken, &read_set) {
                    if taken.insert(f.canonical_path()) {
                        out.push(f);
                    }
                }
            }
            out
        })
        .await
        .map_err(|e| Error::Internal(format!("discovery task: {e}")))?;
        if nested.is_empty() {
            return Ok(found);
        }
        found.paths = nested
            .iter()
            .map(|f| f.canonical_path().display().to_string())
            .collect();
        let text: Vec<String> = nested.iter().filter_map(discovery::render_block).collect();
        found.attachment = Some(serde_json::json!({
            "type": kinds::NESTED_MEMORY,
            "paths": nested.iter().map(|f| f.path.display().to_string()).collect::<Vec<_>>(),
            "content": text.join("\n\n"),
        }));
        Ok(found)
    }
}

/// The rows a collection reads from the store, and the store's context generation they
/// were read at (`None`: the store keeps none, so they are never reused).
#[derive(Debug)]
pub(crate) struct ContextRows {
    generation: Option<u64>,
    /// The files seen.
    stamps: Vec<ReadStamp>,
    /// Paths touched since the last collection.
    touched: Vec<String>,
    /// Instruction files loaded so far (read only when paths were touched).
    loaded: BTreeSet<String>,
    /// The main thread's queued input.
    queued: Vec<ctxd_protocol::QueuedEntry>,
}

/// What the store holds for one collection (see [`Engine::stored_for_collection`]).
pub(crate) struct Stored {
    /// The main thread's queued input, when it is delivered now.
    pub(crate) queued: Vec<ctxd_protocol::QueuedEntry>,
    /// Seen files that changed on disk or are gone.
    pub(crate) changes: Vec<FileChange>,
    /// The rows read (or kept), for the next collection to keep.
    pub(crate) rows: Arc<ContextRows>,
}

/// `edited_text_file` attachments for seen files that changed on disk, with the read
/// state to store (new stamps, removed files).
pub(crate) fn changed_files_found(changes: Vec<FileChange>) -> FilesFound {
    let mut found = FilesFound::default();
    for c in changes {
        match c {
            FileChange::Edited { state, snippet } => {
                if let Some(sn) = snippet {
                    found.attachments.push(serde_json::json!({
                        "type": kinds::EDITED_TEXT_FILE,
                        "filename": state.path,
                        "snippet": sn,
                        "content": changed_files::render_attachment(&state.path, &sn),
                    }));
                }
                found.new_states.push(state);
            }
            FileChange::Removed(p) => found.removed.push(p),
        }
    }
    found
}

/// What [`changed_files_found`] found.
#[derive(Default)]
pub(crate) struct FilesFound {
    pub(crate) attachments: Vec<serde_json::Value>,
    /// New stamps of changed (or merely touched) files.
    pub(crate) new_states: Vec<ReadState>,
    /// Seen files that are gone.
    pub(crate) removed: Vec<String>,
}

/// What [`Engine::gather_nested`] found.
#[derive(Default)]
pub(crate) struct NestedFound {
    pub(crate) attachment: Option<serde_json::Value>,
    /// Canonical paths of the files the attachment loads.
    pub(crate) paths: Vec<String>,
    /// There were touched paths to decide (consumed when this result is written).
    pub(crate) touched: bool,
}

/// `date_change` when the date of `now` in the user's zone is not the date announced
/// last; with the new date to remember.
pub(crate) fn date_change(
    announced: &str,
    now: DateTime<Utc>,
    utc_offset: FixedOffset,
) -> Option<(serde_json::Value, String)> {
    let today = ctxd_pipeline::clock::local_date(now, utc_offset);
    (today != announced).then(|| {
        (
            serde_json::json!({"type": kinds::DATE_CHANGE, "date": today}),
            today,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::date_change;
    use chrono::FixedOffset;

    /// "Today" is the user's date, from the offset given, never the machine's zone.
    #[test]
    fn date_change_follows_the_given_zone() {
        let now = "2026-11-29T20:00:00Z".parse().unwrap();
        let utc = FixedOffset::east_opt(0).unwrap();
        let auckland = FixedOffset::east_opt(13 * 3600).unwrap();
        assert!(date_change("2026-11-29", now, utc).is_none());
        let (value, today) = date_change("2026-11-29", now, auckland).unwrap();
        assert_eq!(today, "2026-11-30");
        assert_eq!(value["date"], "2026-11-30");
        let hawaii = FixedOffset::west_opt(10 * 3600).unwrap();
        assert!(date_change("2026-11-29", now, hawaii).is_none());
    }
}
