//! Which sessions have seen which file, and the watcher that reports their changes: the
//! one owner of both. A file is watched while at least one session has seen it, and
//! unwatched when the last one lets it go.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use ctxd_pipeline::sync::lock;

use crate::watch::FileWatcher;

#[derive(Default)]
pub(crate) struct Watches {
    /// Unset until the engine starts watching; before that files are only counted.
    watcher: OnceLock<Arc<FileWatcher>>,
    seen: Mutex<HashMap<PathBuf, BTreeSet<String>>>,
}

impl Watches {
    /// Starts reporting through `watcher`, and watches every file already seen.
    pub(crate) fn start(&self, watcher: Arc<FileWatcher>) {
        if self.watcher.set(watcher).is_err() {
            return;
        }
        if let Some(w) = self.watcher.get() {
            for path in lock(&self.seen).keys() {
                w.watch_file(path);
            }
        }
    }

    /// The file watcher, once started.
    pub(crate) fn watcher(&self) -> Option<&FileWatcher> {
        self.watcher.get().map(|w| &**w)
    }

    /// `sid` has seen `path`.
    pub(crate) fn watch(&self, sid: &str, path: &Path) {
        let mut seen = lock(&self.seen);
        let sessions = seen.entry(path.to_path_buf()).or_default();
        if sessions.insert(sid.to_string())
            && sessions.len() == 1
            && let Some(w) = self.watcher.get()
        {
            w.watch_file(path);
        }
    }

    /// `sid` no longer needs to hear of `path`.
    pub(crate) fn unwatch(&self, sid: &str, path: &Path) {
        let mut seen = lock(&self.seen);
        if let Some(sessions) = seen.get_mut(path)
            && sessions.remove(sid)
            && sessions.is_empty()
        {
            seen.remove(path);
            if let Some(w) = self.watcher.get() {
                w.unwatch_file(path);
            }
        }
    }

    /// The sessions that have seen `path`.
    pub(crate) fn sessions(&self, path: &Path) -> Vec<String> {
        lock(&self.seen)
            .get(path)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }
}
