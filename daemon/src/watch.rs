//! The file-watching edge: tells the engine when a file the agent has read changes on
//! disk, so the next compile can attach a `changed_files` snippet (SPEC §5).
//!
//! Parent directories are watched, never the files: an editor's atomic save renames a
//! new inode over the file, which silently ends a watch on the file itself. Events are
//! debounced by notify-debouncer-full, filtered down to the registered paths, and decided
//! by looking at the disk once per batch: the exact sequence of raw events for a save
//! differs between editors and platforms, the resulting state does not.
//!
//! The watcher is a hint, never the source of truth: when it cannot be created (inotify
//! limits) or loses events, it says so (`is_degraded`, [`WatchEvent::Rescan`]) and the
//! caller compares mtimes/hashes itself.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::sync::lock;
use std::time::Duration;

use notify::event::{MetadataKind, ModifyKind};
use notify::{ErrorKind, EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{
    DebounceEventResult, DebouncedEvent, Debouncer, RecommendedCache, new_debouncer,
};
use tokio::sync::mpsc::UnboundedSender;

/// Long enough to fold an editor's truncate-write-close (or write-temp-rename) into one
/// batch, short enough to be invisible next to a model call.
const DEBOUNCE: Duration = Duration::from_millis(75);

/// What the watcher reports. Paths are exactly as they were passed to
/// [`FileWatcher::watch_file`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
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
pub struct FileWatcher {
    /// Locked before `registry` whenever both are needed.
    debouncer: Mutex<Option<Debouncer<RecommendedWatcher, RecommendedCache>>>,
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
        let handler = move |result: DebounceEventResult| {
            // Held until the events are sent, so once `unwatch_file` returns no event for
            // that file can still be on its way.
            let mut registry = lock(&handler_registry);
            let events = match result {
                Ok(events) => translate(&mut registry, &events),
                Err(errors) => {
                    for error in &errors {
                        tracing::warn!(%error, paths = ?error.paths, "file watcher error");
                    }
                    // After an error nothing says which events were lost.
                    vec![WatchEvent::Rescan]
                }
            };
            for event in events {
                if tx.send(event).is_err() {
                    tracing::debug!("file watcher receiver dropped; discarding events");
                    break;
                }
            }
        };
        match new_debouncer(DEBOUNCE, None, handler) {
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
    pub fn watch_file(&self, path: &Path) {
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
    pub fn watch_dir(&self, dir: &Path) {
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

    /// Undoes one [`watch_dir`](Self::watch_dir); unknown directories are ignored.
    pub fn unwatch_dir(&self, dir: &Path) {
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
    fn arm(
        &self,
        debouncer: &mut Debouncer<RecommendedWatcher, RecommendedCache>,
        registry: &mut Registry,
        dir: &Path,
    ) {
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
    pub fn unwatch_file(&self, path: &Path) {
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
    fn release(
        &self,
        debouncer: Option<&mut Debouncer<RecommendedWatcher, RecommendedCache>>,
        registry: &mut Registry,
        dir: &Path,
    ) {
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
    pub fn is_degraded(&self) -> bool {
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
fn translate(registry: &mut Registry, events: &[DebouncedEvent]) -> Vec<WatchEvent> {
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
        if is_noise(&event.kind) {
            continue;
        }
        for path in &event.paths {
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
            // The watched directory itself went away: the kernel drops its watch, and the
            // debouncer drops pending child events when it sees the directory removed,
            // so every file in it must be checked.
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
fn is_noise(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

    const PATIENCE: Duration = Duration::from_secs(5);
    const QUIET: Duration = Duration::from_millis(300);

    fn watcher() -> (FileWatcher, UnboundedReceiver<WatchEvent>) {
        let (tx, rx) = unbounded_channel();
        let w = FileWatcher::new(tx);
        assert!(!w.is_degraded(), "tests need a working watcher");
        (w, rx)
    }

    /// Waits until `want` arrives (other events are skipped); fails after `PATIENCE`.
    async fn expect(rx: &mut UnboundedReceiver<WatchEvent>, want: WatchEvent) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        let mut seen = Vec::new();
        loop {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(event)) if event == want => return,
                Ok(Some(event)) => seen.push(event),
                Ok(None) => panic!("channel closed waiting for {want:?}; saw {seen:?}"),
                Err(_) => panic!("no {want:?} within {PATIENCE:?}; saw {seen:?}"),
            }
        }
    }

    /// Waits for `sentinel`, a change made after the ones that must not be reported, and
    /// fails if any of `absent` arrives first: the watcher saw the later change, so it
    /// saw (and dropped) the earlier ones.
    async fn expect_only(
        rx: &mut UnboundedReceiver<WatchEvent>,
        sentinel: WatchEvent,
        absent: &[WatchEvent],
    ) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(event)) if event == sentinel => return,
                Ok(Some(event)) => assert!(!absent.contains(&event), "reported {event:?}"),
                Ok(None) => panic!("channel closed waiting for {sentinel:?}"),
                Err(_) => panic!("no {sentinel:?} within {PATIENCE:?}"),
            }
        }
    }

    /// Asserts that nothing at all arrives for a while.
    async fn expect_quiet(rx: &mut UnboundedReceiver<WatchEvent>) {
        if let Ok(event) = tokio::time::timeout(QUIET, rx.recv()).await {
            panic!("expected no event, got {event:?}");
        }
    }

    #[test]
    fn is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<FileWatcher>();
    }

    #[tokio::test]
    async fn plain_write_is_changed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        fs::write(&file, "one\n").unwrap();
        let (w, mut rx) = watcher();
        w.watch_file(&file);

        fs::write(&file, "two\n").unwrap();
        expect(&mut rx, WatchEvent::Changed(file.clone())).await;
    }

    #[tokio::test]
    async fn atomic_save_is_changed_target() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        fs::write(&file, "one\n").unwrap();
        let (w, mut rx) = watcher();
        w.watch_file(&file);

        let tmp = dir.path().join(".a.txt.swp");
        fs::write(&tmp, "two\n").unwrap();
        fs::rename(&tmp, &file).unwrap();
        expect(&mut rx, WatchEvent::Changed(file.clone())).await;

        // The watch survives the inode swap.
        fs::write(&file, "three\n").unwrap();
        expect(&mut rx, WatchEvent::Changed(file.clone())).await;
    }

    #[tokio::test]
    async fn delete_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        fs::write(&file, "one\n").unwrap();
        let (w, mut rx) = watcher();
        w.watch_file(&file);

        fs::remove_file(&file).unwrap();
        expect(&mut rx, WatchEvent::Removed(file.clone())).await;
    }

    #[tokio::test]
    async fn rename_away_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        fs::write(&file, "one\n").unwrap();
        let (w, mut rx) = watcher();
        w.watch_file(&file);

        fs::rename(&file, dir.path().join("b.txt")).unwrap();
        expect(&mut rx, WatchEvent::Removed(file.clone())).await;
    }

    #[tokio::test]
    async fn removed_directory_reports_its_files_and_can_be_rewatched() {
        let root = tempfile::tempdir().unwrap();
        let sub = root.path().join("sub");
        fs::create_dir(&sub).unwrap();
        let file = sub.join("a.txt");
        fs::write(&file, "one\n").unwrap();
        let (w, mut rx) = watcher();
        w.watch_file(&file);

        fs::remove_dir_all(&sub).unwrap();
        expect(&mut rx, WatchEvent::Removed(file.clone())).await;

        fs::create_dir(&sub).unwrap();
        fs::write(&file, "two\n").unwrap();
        w.watch_file(&file);
        fs::write(&file, "three\n").unwrap();
        expect(&mut rx, WatchEvent::Changed(file.clone())).await;
    }

    #[tokio::test]
    async fn unregistered_sibling_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        fs::write(&file, "one\n").unwrap();
        let (w, mut rx) = watcher();
        w.watch_file(&file);

        // Sorts before the watched file too, so within one batch it would come first.
        let noise = dir.path().join("0-noise.txt");
        fs::write(&noise, "noise\n").unwrap();
        let _ = fs::read_to_string(&file).unwrap();
        fs::write(&file, "two\n").unwrap();
        expect_only(
            &mut rx,
            WatchEvent::Changed(file.clone()),
            &[
                WatchEvent::Changed(noise.clone()),
                WatchEvent::Removed(noise.clone()),
            ],
        )
        .await;
    }

    #[tokio::test]
    async fn unwatch_stops_events_after_the_last_registration() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        fs::write(&file, "one\n").unwrap();
        let (w, mut rx) = watcher();
        w.watch_file(&file);
        w.watch_file(&file);

        w.unwatch_file(&file);
        fs::write(&file, "two\n").unwrap();
        expect(&mut rx, WatchEvent::Changed(file.clone())).await;

        w.unwatch_file(&file);
        // What was sent before the unwatch may still be queued; nothing may follow it.
        while rx.try_recv().is_ok() {}
        fs::write(&file, "three\n").unwrap();
        // A file still watched, changed afterwards, proves the write above was seen.
        let other = dir.path().join("c.txt");
        fs::write(&other, "one\n").unwrap();
        w.watch_file(&other);
        fs::write(&other, "two\n").unwrap();
        expect_only(
            &mut rx,
            WatchEvent::Changed(other.clone()),
            &[WatchEvent::Changed(file.clone())],
        )
        .await;
    }

    #[tokio::test]
    async fn two_files_in_one_directory() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.txt");
        let b = dir.path().join("b.txt");
        fs::write(&a, "a\n").unwrap();
        fs::write(&b, "b\n").unwrap();
        let (w, mut rx) = watcher();
        w.watch_file(&a);
        w.watch_file(&b);

        fs::write(&a, "a2\n").unwrap();
        expect(&mut rx, WatchEvent::Changed(a.clone())).await;
        fs::write(&b, "b2\n").unwrap();
        expect(&mut rx, WatchEvent::Changed(b.clone())).await;

        // The directory stays watched for the file still registered.
        w.unwatch_file(&a);
        fs::write(&b, "b3\n").unwrap();
        expect(&mut rx, WatchEvent::Changed(b.clone())).await;
    }

    #[tokio::test]
    async fn reports_the_path_as_registered() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("sub")).unwrap();
        let file = dir.path().join("a.txt");
        fs::write(&file, "one\n").unwrap();
        let spelled = dir.path().join("sub").join("..").join("a.txt");
        let (w, mut rx) = watcher();
        w.watch_file(&spelled);

        fs::write(&file, "two\n").unwrap();
        expect(&mut rx, WatchEvent::Changed(spelled.clone())).await;
    }

    #[tokio::test]
    async fn watched_directories_report_entries_coming_going_and_changing() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("skills");
        fs::create_dir(&dir).unwrap();
        let (w, mut rx) = watcher();
        w.watch_dir(&dir);
        w.watch_dir(&dir);

        fs::create_dir(dir.join("new")).unwrap();
        expect(&mut rx, WatchEvent::DirChanged(dir.clone())).await;
        fs::write(dir.join("file.md"), "x").unwrap();
        expect(&mut rx, WatchEvent::DirChanged(dir.clone())).await;
        // Deeper levels are not this watch's business.
        fs::write(dir.join("new").join("deep.md"), "x").unwrap();
        expect_quiet(&mut rx).await;

        // Refcounted: one unwatch keeps it, the second ends it.
        w.unwatch_dir(&dir);
        fs::remove_file(dir.join("file.md")).unwrap();
        expect(&mut rx, WatchEvent::DirChanged(dir.clone())).await;
        w.unwatch_dir(&dir);
        while rx.try_recv().is_ok() {}
        fs::write(dir.join("again.md"), "x").unwrap();
        expect_quiet(&mut rx).await;
    }

    #[tokio::test]
    async fn a_watched_file_and_its_watched_directory_share_one_os_watch() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("a.txt");
        fs::write(&file, "a").unwrap();
        let (w, mut rx) = watcher();
        w.watch_file(&file);
        w.watch_dir(root.path());
        w.unwatch_dir(root.path());
        fs::write(&file, "b").unwrap();
        expect(&mut rx, WatchEvent::Changed(file.clone())).await;
    }

    /// A registry holding `files` (all in `dir`, registered under their plain path).
    fn registry_with(dir: &Path, files: &[&Path]) -> Registry {
        let mut registry = Registry::default();
        for file in files {
            let key = file.to_path_buf();
            registry.files.insert(
                key.clone(),
                FileEntry {
                    dir: dir.to_path_buf(),
                    key: key.clone(),
                    refs: 1,
                },
            );
            registry.by_key.entry(key.clone()).or_default().insert(key);
            let entry = registry.dirs.entry(dir.to_path_buf()).or_default();
            entry.files += 1;
            entry.armed = true;
        }
        registry
    }

    fn event(kind: EventKind, paths: &[&Path]) -> DebouncedEvent {
        let event = paths
            .iter()
            .fold(notify::Event::new(kind), |e, p| e.add_path(p.to_path_buf()));
        DebouncedEvent::new(event, std::time::Instant::now())
    }

    #[test]
    fn a_batch_reports_each_file_once() {
        use notify::event::{AccessKind, CreateKind, DataChange};
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.txt");
        fs::write(&a, "a\n").unwrap();
        let mut registry = registry_with(dir.path(), &[&a]);
        let batch = [
            event(EventKind::Create(CreateKind::File), &[&a]),
            event(EventKind::Modify(ModifyKind::Data(DataChange::Any)), &[&a]),
            event(EventKind::Access(AccessKind::Any), &[&a]),
            event(EventKind::Modify(ModifyKind::Data(DataChange::Any)), &[&a]),
            event(
                EventKind::Create(CreateKind::File),
                &[&dir.path().join("b.txt")],
            ),
        ];
        assert_eq!(
            translate(&mut registry, &batch),
            vec![WatchEvent::Changed(a.clone())]
        );
    }

    #[test]
    fn access_only_batches_report_nothing() {
        use notify::event::{AccessKind, AccessMode};
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.txt");
        fs::write(&a, "a\n").unwrap();
        let mut registry = registry_with(dir.path(), &[&a]);
        let batch = [
            event(EventKind::Access(AccessKind::Open(AccessMode::Read)), &[&a]),
            event(
                EventKind::Access(AccessKind::Close(AccessMode::Read)),
                &[&a],
            ),
            event(
                EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)),
                &[&a],
            ),
        ];
        assert_eq!(translate(&mut registry, &batch), vec![]);
    }

    #[test]
    fn renames_map_to_the_state_on_disk() {
        use notify::event::RenameMode;
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.txt");
        let b = dir.path().join("b.txt");
        let tmp = dir.path().join("a.txt.tmp");
        fs::write(&a, "a\n").unwrap();
        let mut registry = registry_with(dir.path(), &[&a, &b]);
        let both = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        // tmp renamed over a (a exists), b renamed away (b is gone).
        let batch = [event(both, &[&tmp, &a]), event(both, &[&b, &tmp])];
        assert_eq!(
            translate(&mut registry, &batch),
            vec![WatchEvent::Changed(a), WatchEvent::Removed(b)]
        );
    }

    #[test]
    fn rescan_comes_first() {
        use notify::event::{DataChange, Flag};
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.txt");
        fs::write(&a, "a\n").unwrap();
        let mut registry = registry_with(dir.path(), &[&a]);
        let mut rescan = event(EventKind::Other, &[]);
        rescan.event = rescan.event.clone().set_flag(Flag::Rescan);
        let batch = [
            event(EventKind::Modify(ModifyKind::Data(DataChange::Any)), &[&a]),
            rescan,
        ];
        assert_eq!(
            translate(&mut registry, &batch),
            vec![WatchEvent::Rescan, WatchEvent::Changed(a)]
        );
    }

    #[test]
    fn a_removed_directory_removes_its_files_and_loses_its_watch() {
        use notify::event::RemoveKind;
        let root = tempfile::tempdir().unwrap();
        let sub = root.path().join("sub");
        let a = sub.join("a.txt");
        let mut registry = registry_with(&sub, &[&a]);
        let batch = [event(EventKind::Remove(RemoveKind::Folder), &[&sub])];
        assert_eq!(
            translate(&mut registry, &batch),
            vec![WatchEvent::Removed(a)]
        );
        let entry = &registry.dirs[&sub];
        assert!(entry.lost && !entry.armed);
    }

    #[tokio::test]
    async fn degraded_watcher_accepts_calls_and_reports_nothing() {
        let (_tx, mut rx) = unbounded_channel::<WatchEvent>();
        let w = FileWatcher {
            debouncer: Mutex::new(None),
            registry: Arc::new(Mutex::new(Registry::default())),
            degraded: AtomicBool::new(true),
        };
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        fs::write(&file, "one\n").unwrap();
        w.watch_file(&file);
        fs::write(&file, "two\n").unwrap();
        w.unwatch_file(&file);
        w.unwatch_file(&file);
        assert!(w.is_degraded());
        expect_quiet(&mut rx).await;
    }
}
