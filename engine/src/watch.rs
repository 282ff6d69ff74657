//! The file-watching edge: tells the engine when a file the agent has read changes on
//! disk, so the next compile can attach a `changed_files` snippet.
//!
//! Parent directories are watched, never the files: an editor's atomic save renames a
//! new inode over the file, which silently ends a watch on the file itself. Events are
//! batched (`watch_debounce.rs`), filtered down to the registered paths, and decided
//! by looking at the disk once per batch: the exact sequence of raw events for a save
//! differs between editors and platforms, the resulting state does not.
//!
//! The daemon's own files (its database, lock, socket, log) are never reported: a log
//! inside a watched directory would otherwise report each of its own lines, and with
//! every report logged, write the next one.
//!
//! The watcher is a hint, never the source of truth: when it cannot be created (inotify
//! limits) or loses events, it says so (`is_degraded`, [`WatchEvent::Rescan`]) and the
//! caller compares mtimes/hashes itself.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use ctxd_pipeline::sync::lock;
use std::time::Duration;

use notify::event::{MetadataKind, ModifyKind};
use notify::{ErrorKind, Event, EventKind, RecursiveMode};
use tokio::sync::mpsc::UnboundedSender;

mod debounce;
use debounce::{Batch, Debouncer, Window};

/// Long enough to fold an editor's truncate-write-close (or write-temp-rename) into one
/// batch, short enough to be invisible next to a model call; a file written without pause
/// is still reported every `longest`.
const DEBOUNCE: Window = Window {
    quiet: Duration::from_millis(75),
    longest: Duration::from_millis(300),
};

/// What the watcher reports. Paths are exactly as they were passed to
/// [`FileWatcher::watch_file`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WatchEvent {
    /// The file's content may have changed (written, replaced by a rename, recreated).
    Changed(PathBuf),
    /// The file no longer exists at its path (deleted, renamed away, directory removed).
    Removed(PathBuf),
    /// Events may have been lost (kernel queue overflow, watcher error): the caller must
    /// re-check every file it cares about.
    Rescan,
    /// Something in a directory registered with [`FileWatcher::watch_dir`] changed (an
    /// entry created, written, removed or renamed), or the directory itself went away.
    /// The path is as it was registered.
    DirChanged(PathBuf),
}

/// Watches registered files through their parent directories and reports their changes,
/// debounced, on a channel. `Send + Sync`: share it in an `Arc`.
///
/// `watch_file` and `unwatch_file` calls pair up: a file registered twice stays watched
/// until it is unregistered twice, and a directory is watched while any of its files is.
pub(crate) struct FileWatcher {
    /// Locked before `registry` whenever both are needed.
    debouncer: Mutex<Option<Debouncer>>,
    registry: Arc<Mutex<Registry>>,
    degraded: AtomicBool,
}

impl FileWatcher {
    /// Changed files (the exact paths that were registered) are sent on `tx`, debounced
    /// (~75 ms). Creation failure (e.g. the inotify instance limit) does not fail: the
    /// watcher is then "degraded", reports nothing and says so via
    /// [`is_degraded`](Self::is_degraded); callers then check mtimes at compile time.
    pub fn new(tx: UnboundedSender<WatchEvent>) -> FileWatcher {
        let registry = Arc::new(Mutex::new(Registry::default()));
        let handler_registry = Arc::clone(&registry);
        let handler = move |batch: Batch| {
            // Held until the events are sent, so once `unwatch_file` returns no event for
            // that file can still be on its way.
            let mut registry = lock(&handler_registry);
            let mut events = translate(&mut registry, &batch.events);
            for error in &batch.errors {
                tracing::warn!(%error, paths = ?error.paths, "file watcher error");
            }
            // After an error, or events dropped, nothing says which changes were missed.
            let lost = !batch.errors.is_empty() || batch.overflowed;
            if lost && events.first() != Some(&WatchEvent::Rescan) {
                events.insert(0, WatchEvent::Rescan);
            }
            for event in events {
                if tx.send(event).is_err() {
                    tracing::debug!("file watcher receiver dropped; discarding events");
                    break;
                }
            }
        };
        match Debouncer::new(DEBOUNCE, handler) {
            Ok(debouncer) => FileWatcher {
                debouncer: Mutex::new(Some(debouncer)),
                registry,
                degraded: AtomicBool::new(false),
            },
            Err(error) => {
                tracing::warn!(
                    %error,
                    "cannot create a file watcher; changed files will be found by mtime checks"
                );
                FileWatcher {
                    debouncer: Mutex::new(None),
                    registry,
                    degraded: AtomicBool::new(true),
                }
            }
        }
    }

    /// Starts reporting changes to `path` by watching its parent directory (refcounted per
    /// directory). Blocks briefly while the OS watch is added. A path whose directory
    /// does not exist is not registered.
    pub(crate) fn watch_file(&self, path: &Path) {
        let Some((dir, key)) = resolve(path) else {
            return;
        };
        let mut debouncer = lock(&self.debouncer);
        let Some(debouncer) = debouncer.as_mut() else {
            return;
        };
        let mut registry = lock(&self.registry);

        if let Some(file) = registry.files.get_mut(path) {
            file.refs += 1;
        } else {
            registry.files.insert(
                path.to_path_buf(),
                FileEntry {
                    dir: dir.clone(),
                    key: key.clone(),
                    refs: 1,
                },
            );
            registry
                .by_key
                .entry(key)
                .or_default()
                .insert(path.to_path_buf());
            registry.dirs.entry(dir.clone()).or_default().files += 1;
        }

        self.arm(debouncer, &mut registry, &dir);
    }

    /// Starts reporting any change inside `dir` (one level: its entries, not theirs) as
    /// [`WatchEvent::DirChanged`]. Refcounted like [`watch_file`](Self::watch_file); a
    /// directory that does not exist is not registered.
    pub(crate) fn watch_dir(&self, dir: &Path) {
        let Ok(canonical) = std::fs::canonicalize(dir) else {
            return;
        };
        let mut debouncer = lock(&self.debouncer);
        let Some(debouncer) = debouncer.as_mut() else {
            return;
        };
        let mut registry = lock(&self.registry);
        let reg = &mut *registry;
        let watch = reg.dir_watches.entry(canonical.clone()).or_default();
        watch.refs += 1;
        if watch.registered.insert(dir.to_path_buf()) && watch.registered.len() == 1 {
            reg.dirs.entry(canonical.clone()).or_default().files += 1;
        }
        self.arm(debouncer, reg, &canonical);
    }

    /// The daemon's own files, whose changes are never reported (whoever watches their
    /// directory). Replaces the previous list.
    pub(crate) fn ignore_own_files(&self, files: &[PathBuf]) {
        let own = files.iter().filter_map(|f| resolve(f)).map(|(_, key)| key);
        lock(&self.registry).own = own.collect();
    }

    /// Undoes one [`watch_dir`](Self::watch_dir); unknown directories are ignored.
    pub(crate) fn unwatch_dir(&self, dir: &Path) {
        let mut debouncer = lock(&self.debouncer);
        let mut registry = lock(&self.registry);
        let registry = &mut *registry;
        let Some((canonical, watch)) = registry
            .dir_watches
            .iter_mut()
            .find(|(_, w)| w.registered.contains(dir))
        else {
            return;
        };
        let canonical = canonical.clone();
        watch.refs = watch.refs.saturating_sub(1);
        if watch.refs > 0 {
            return;
        }
        registry.dir_watches.remove(&canonical);
        self.release(debouncer.as_mut(), registry, &canonical);
    }

    /// Puts the OS watch on `dir` (already counted in the registry) unless it is there.
    fn arm(&self, debouncer: &mut Debouncer, registry: &mut Registry, dir: &Path) {
        let dir = dir.to_path_buf();
        let Some(entry) = registry.dirs.get_mut(&dir) else {
            return;
        };
        if entry.armed {
            return;
        }
        // A directory that was deleted or moved away lost its OS watch; notify may still
        // hold a stale record of it (a moved inode keeps its watch), so drop that first.
        if entry.lost
            && let Err(error) = debouncer.unwatch(&dir)
        {
            tracing::debug!(%error, dir = %dir.display(), "dropping a lost directory watch");
        }
        match debouncer.watch(&dir, RecursiveMode::NonRecursive) {
            Ok(()) => {
                entry.armed = true;
                entry.lost = false;
                tracing::debug!(dir = %dir.display(), "watching directory");
            }
            Err(error) => {
                entry.armed = false;
                if matches!(error.kind, ErrorKind::MaxFilesWatch) {
                    self.degraded.store(true, Ordering::Relaxed);
                    tracing::warn!(
                        %error,
                        dir = %dir.display(),
                        "inotify watch limit reached; changed files will be found by mtime checks"
                    );
                } else {
                    tracing::warn!(%error, dir = %dir.display(), "cannot watch directory");
                }
            }
        }
    }

    /// Undoes one [`watch_file`](Self::watch_file) for `path`; unknown paths are ignored.
    /// Once the last registration is undone and this returns, no event for `path` is
    /// sent any more (events still in the debounce window are dropped).
    pub(crate) fn unwatch_file(&self, path: &Path) {
        let mut debouncer = lock(&self.debouncer);
        let mut registry = lock(&self.registry);

        let Some(file) = registry.files.get_mut(path) else {
            return;
        };
        file.refs = file.refs.saturating_sub(1);
        if file.refs > 0 {
            return;
        }
        let Some(file) = registry.files.remove(path) else {
            return;
        };
        if let Some(paths) = registry.by_key.get_mut(&file.key) {
            paths.remove(path);
            if paths.is_empty() {
                registry.by_key.remove(&file.key);
            }
        }
        self.release(debouncer.as_mut(), &mut registry, &file.dir);
    }

    /// One user of `dir`'s OS watch is gone; the last one removes the watch.
    fn release(&self, debouncer: Option<&mut Debouncer>, registry: &mut Registry, dir: &Path) {
        let Some(entry) = registry.dirs.get_mut(dir) else {
            return;
        };
        entry.files = entry.files.saturating_sub(1);
        if entry.files > 0 {
            return;
        }
        let was_watched = entry.armed || entry.lost;
        registry.dirs.remove(dir);
        if was_watched
            && let Some(debouncer) = debouncer
            && let Err(error) = debouncer.unwatch(dir)
        {
            tracing::debug!(%error, dir = %dir.display(), "unwatching directory");
        }
    }

    /// True when the watcher cannot be trusted to report every registered file (it could
    /// not be created, or the OS watch limit was hit): callers must check mtimes.
    pub(crate) fn is_degraded(&self) -> bool {
        self.degraded.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for FileWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let registry = lock(&self.registry);
        f.debug_struct("FileWatcher")
            .field("files", &registry.files.len())
            .field("dirs", &registry.dirs.len())
            .field("degraded", &self.is_degraded())
            .finish()
    }
}

#[derive(Default)]
struct Registry {
    /// Registered path → where it lives and how many registrations it has.
    files: HashMap<PathBuf, FileEntry>,
    /// Canonical directory joined with the file name (the form notify reports) → the
    /// registered spellings of that file.
    by_key: HashMap<PathBuf, BTreeSet<PathBuf>>,
    /// Canonical directory → its watch.
    dirs: HashMap<PathBuf, DirEntry>,
    /// Canonical directory → the spellings it was registered under by `watch_dir`.
    dir_watches: HashMap<PathBuf, DirWatch>,
    /// The daemon's own files, in the form notify reports.
    own: BTreeSet<PathBuf>,
}

#[derive(Default)]
struct DirWatch {
    registered: BTreeSet<PathBuf>,
    refs: usize,
}

struct FileEntry {
    dir: PathBuf,
    key: PathBuf,
    refs: usize,
}

#[derive(Default)]
struct DirEntry {
    /// Distinct registered files in the directory (and 1 when it is watched itself).
    files: usize,
    /// The OS watch is in place.
    armed: bool,
    /// The directory itself was removed or moved while watched.
    lost: bool,
}

/// The canonical parent directory of `path` and the path notify will report for it.
/// Canonicalising the directory (not the file, which may be a symlink or absent) makes
/// `./a`, `dir/../a` and symlinked directories meet notify's spelling.
fn resolve(path: &Path) -> Option<(PathBuf, PathBuf)> {
    let Some(name) = path.file_name() else {
        tracing::warn!(path = %path.display(), "cannot watch a path without a file name");
        return None;
    };
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match std::fs::canonicalize(parent) {
        Ok(dir) => {
            let key = dir.join(name);
            Some((dir, key))
        }
        Err(error) => {
            tracing::debug!(%error, path = %path.display(), "not watching: no parent directory");
            None
        }
    }
}

/// One debounced batch → the events for registered files, each file at most once.
fn translate(registry: &mut Registry, events: &[Event]) -> Vec<WatchEvent> {
    let mut rescan = false;
    // Registered path → the path to check on disk. Sorted so a batch is reported in a
    // stable order.
    let mut touched: BTreeMap<PathBuf, PathBuf> = BTreeMap::new();
    let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();

    for event in events {
        if event.need_rescan() {
            rescan = true;
            continue;
        }
        if is_noise(event.kind) {
            continue;
        }
        for path in &event.paths {
            if registry.own.contains(path) {
                continue;
            }
            for d in [path.parent(), Some(path.as_path())].into_iter().flatten() {
                if let Some(w) = registry.dir_watches.get(d) {
                    dirs.extend(w.registered.iter().cloned());
                }
            }
            if let Some(registered) = registry.by_key.get(path) {
                for r in registered {
                    touched.insert(r.clone(), path.clone());
                }
            }
            // The watched directory itself went away: the kernel drops its watch, and a
            // directory moved away says nothing of its files, so every file in it must be
            // checked.
            let dir_gone = matches!(event.kind, EventKind::Remove(_))
                || matches!(event.kind, EventKind::Modify(ModifyKind::Name(_)));
            if dir_gone && let Some(dir) = registry.dirs.get_mut(path) {
                dir.armed = false;
                dir.lost = true;
                for (key, registered) in &registry.by_key {
                    if key.parent() == Some(path.as_path()) {
                        for r in registered {
                            touched.insert(r.clone(), key.clone());
                        }
                    }
                }
            }
        }
    }

    let mut out = Vec::with_capacity(touched.len() + dirs.len() + usize::from(rescan));
    if rescan {
        out.push(WatchEvent::Rescan);
    }
    out.extend(dirs.into_iter().map(WatchEvent::DirChanged));
    for (registered, on_disk) in touched {
        match on_disk.try_exists() {
            Ok(true) => out.push(WatchEvent::Changed(registered)),
            Ok(false) => out.push(WatchEvent::Removed(registered)),
            Err(error) => {
                // Unknown state: "changed" makes the caller look, and reading will tell.
                tracing::debug!(%error, path = %on_disk.display(), "cannot stat a watched file");
                out.push(WatchEvent::Changed(registered));
            }
        }
    }
    out
}

/// Reads and atime updates say nothing about content.
fn is_noise(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime))
    )
}

#[cfg(test)]
mod tests;
