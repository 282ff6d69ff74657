//! Which sessions have seen which file, and the watcher that reports their changes (the
//! hooks and the skill catalogs watch through it too). A file is watched while at least
//! one session has seen it, and unwatched when the last one lets it go.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use ctxd_pipeline::sync::lock;

use crate::watch::FileWatcher;

#[derive(Default)]
pub(crate) struct Watches {
    /// Unset until the engine starts watching; before that, seen files are only recorded.
    watcher: OnceLock<Arc<FileWatcher>>,
    seen: Mutex<HashMap<PathBuf, BTreeSet<String>>>,
}

impl Watches {
    /// Starts reporting through `watcher`, and watches every file already seen.
    pub(crate) fn start(&self, watcher: Arc<FileWatcher>) {
        // Held across the set, so a `watch` cannot register its file between the two and
        // have it watched twice.
        let seen = lock(&self.seen);
        if self.watcher.set(watcher).is_err() {
            return;
        }
        if let Some(w) = self.watcher.get() {
            for path in seen.keys() {
                w.watch_file(path);
            }
        }
    }

    /// The file watcher, once started.
    pub(crate) fn watcher(&self) -> Option<&FileWatcher> {
        self.watcher.get().map(|w| &**w)
    }

    /// `sid` has seen `path`; the first session to see it starts the OS watch.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::WatchEvent;
    use std::time::Duration;

    #[test]
    fn a_file_is_held_until_the_last_session_lets_it_go() {
        let w = Watches::default();
        let p = Path::new("/project/a.rs");
        w.watch("s1", p);
        w.watch("s2", p);
        w.watch("s1", p);
        assert_eq!(w.sessions(p), ["s1", "s2"]);
        w.unwatch("s1", p);
        assert_eq!(w.sessions(p), ["s2"]);
        w.unwatch("s1", p);
        assert_eq!(w.sessions(p), ["s2"]);
        w.unwatch("s2", p);
        assert!(w.sessions(p).is_empty());
        assert!(lock(&w.seen).is_empty());
    }

    #[tokio::test]
    async fn a_file_seen_before_the_watcher_started_is_watched_once_it_does() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "one\n").unwrap();
        let w = Watches::default();
        w.watch("s1", &file);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        w.start(Arc::new(FileWatcher::new(tx)));
        std::fs::write(&file, "two\n").unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(WatchEvent::Changed(p))) if p == file => break,
                Ok(Some(_)) => {}
                other => panic!("no change reported for {}: {other:?}", file.display()),
            }
        }
    }
}
