//! The hooks' configuration cache, the one owner of it: each session's facts and
//! effective hooks, the parsed settings files shared between sessions (re-read only
//! when their stamps change), and the watches on settings files and `FileChanged`
//! targets. It runs nothing and emits nothing: it answers what applies and what changed,
//! and the engine announces and runs.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use ctxd_protocol::{HookEvent, SessionEvent};
use tokio::sync::Semaphore;

use super::Facts;
use crate::hooks::config::{self, Effective, Layer, Source};
use crate::hooks::files::{self, Stamp};
use crate::watch::FileWatcher;
use ctxd_pipeline::limits::MAX_RUNNING_HOOKS;
use ctxd_pipeline::sync::lock;

/// One session's configuration, as last read.
pub(super) struct Config {
    paths: Vec<(Source, PathBuf)>,
    stamps: Vec<Option<Stamp>>,
    /// Shared with every session reading the same file at the same stamp.
    pub(super) layers: Vec<Arc<Layer>>,
    effective: Arc<Effective>,
    /// The cwd `file_watch` was resolved against.
    cwd: String,
    /// Files the session's `FileChanged` matchers name, in its cwd.
    file_watch: Vec<PathBuf>,
}

/// A session's hook state. Kept for at most `Limits::max_loaded_sessions` sessions (the
/// least recently used go first) and dropped when the session is unloaded or deleted:
/// it is a cache of the settings files, rebuilt on the session's next event.
#[derive(Default)]
pub(super) struct PerSession {
    /// Dropped when the session is updated; read again from the store on next use.
    pub(super) facts: Option<Facts>,
    pub(super) config: Option<Config>,
    /// A compaction just ran: the next instruction reload is a `compact` load.
    pub(super) compacted: bool,
    /// When the state was last used (`HookState::tick`).
    used: u64,
}

/// Who cares about a watched path.
#[derive(Default)]
pub(super) struct Interest {
    /// Sessions reading it as a settings file.
    pub(super) settings: BTreeSet<String>,
    /// Sessions with a `FileChanged` hook naming it.
    pub(super) file_changed: BTreeSet<String>,
    /// Whether the file existed when last seen (`add` vs `change`).
    pub(super) existed: bool,
}

/// See [`HookState::exported`].
pub(super) type ExportMark = Arc<tokio::sync::Mutex<Option<u64>>>;

/// A parsed settings file and the stamp it was read at.
type StampedLayer = (Option<Stamp>, Arc<Layer>);

pub(crate) struct HookState {
    pub(super) sessions: Mutex<HashMap<String, PerSession>>,
    tick: AtomicU64,
    /// Parsed settings files by path, with the stamp they were read at: the user's file
    /// is parsed once for every session. An entry lives while a session's configuration
    /// holds it.
    layers: Mutex<HashMap<PathBuf, StampedLayer>>,
    pub(super) watched: Mutex<HashMap<PathBuf, Interest>>,
    /// Last record seq written to each session's exported transcript (`None`: export it
    /// whole again), one lock per session so exports of different sessions never wait on
    /// each other.
    pub(super) exported: Mutex<HashMap<String, ExportMark>>,
    pub(super) slots: Arc<Semaphore>,
    /// Where the settings files are looked for and the trust list is: the engine's.
    places: Places,
    /// Sessions whose state is kept at most (`Limits::max_loaded_sessions`).
    max_sessions: usize,
    /// The engine's file watcher, once it runs: settings files and `FileChanged`
    /// targets are watched through it.
    watcher: OnceLock<Arc<FileWatcher>>,
}

/// Where a session's settings files and the trust list are.
#[derive(Clone, Default)]
pub(crate) struct Places {
    pub(crate) managed_root: PathBuf,
    pub(crate) user_home: PathBuf,
    pub(crate) trust_list: PathBuf,
}

impl Default for HookState {
    /// No session's state yet; looking nowhere until `configure` says where.
    fn default() -> HookState {
        HookState {
            sessions: Mutex::new(HashMap::new()),
            tick: AtomicU64::new(0),
            layers: Mutex::new(HashMap::new()),
            watched: Mutex::new(HashMap::new()),
            exported: Mutex::new(HashMap::new()),
            slots: Arc::new(Semaphore::new(MAX_RUNNING_HOOKS)),
            places: Places::default(),
            max_sessions: 1,
            watcher: OnceLock::new(),
        }
    }
}

impl HookState {
    /// Watches through `watcher` from now on.
    pub(crate) fn set_watcher(&self, watcher: Arc<FileWatcher>) {
        let _ = self.watcher.set(watcher);
    }

    /// Looks in `places` and keeps at most `max_sessions`: the engine's, while it is built.
    pub(crate) fn configure(&mut self, places: Places, max_sessions: usize) {
        self.places = places;
        self.max_sessions = max_sessions.max(1);
    }

    /// Forgets the session's facts (its row changed): read again on next use.
    pub(crate) fn drop_facts(&self, sid: &str) {
        if let Some(s) = lock(&self.sessions).get_mut(sid) {
            s.facts = None;
        }
    }

    /// A compaction ran: the next instruction reload is a `compact` load.
    pub(crate) fn mark_compacted(&self, sid: &str) {
        if let Some(s) = lock(&self.sessions).get_mut(sid) {
            s.compacted = true;
        }
    }

    /// Whether a compaction ran since the last reload, forgetting it.
    pub(crate) fn take_compacted(&self, sid: &str) -> bool {
        lock(&self.sessions)
            .get_mut(sid)
            .is_some_and(|s| std::mem::take(&mut s.compacted))
    }

    /// The settings files the session's configuration was read from.
    pub(crate) fn layers(&self, sid: &str) -> Vec<Arc<Layer>> {
        lock(&self.sessions)
            .get(sid)
            .and_then(|s| s.config.as_ref().map(|c| c.layers.clone()))
            .unwrap_or_default()
    }

    /// The watcher saw `path` change (every watched path when `None`): the sessions that
    /// read it as a settings file, and the `FileChanged` hooks it fires (session, path,
    /// `add`, `change` or `unlink`).
    pub(crate) fn touched(
        &self,
        path: Option<&PathBuf>,
        removed: bool,
    ) -> (Vec<String>, Vec<(String, PathBuf, &'static str)>) {
        let mut settings_sessions: Vec<String> = Vec::new();
        let mut fired: Vec<(String, PathBuf, &'static str)> = Vec::new();
        let mut watched = lock(&self.watched);
        let entries: Vec<(&PathBuf, &mut Interest)> = match path {
            Some(p) => watched.get_mut(p).map(|i| (p, i)).into_iter().collect(),
            None => watched.iter_mut().collect(),
        };
        for (p, interest) in entries {
            settings_sessions.extend(interest.settings.iter().cloned());
            if path.is_some() && !interest.file_changed.is_empty() {
                let change = match (removed, interest.existed) {
                    (true, _) => "unlink",
                    (false, false) => "add",
                    (false, true) => "change",
                };
                interest.existed = !removed;
                for sid in &interest.file_changed {
                    fired.push((sid.clone(), p.clone(), change));
                }
            }
        }
        (settings_sessions, fired)
    }
}

/// The files `FileChanged` matchers name: each `|`-separated literal file name, in the
/// session's cwd (Claude Code's watch list).
fn file_changed_paths(eff: &Effective, cwd: &str) -> Vec<PathBuf> {
    let mut out: BTreeSet<PathBuf> = BTreeSet::new();
    for (h, why) in &eff.hooks {
        if why.is_some() || h.entry.event != HookEvent::FileChanged {
            continue;
        }
        for name in h.entry.matcher_text.as_deref().unwrap_or("").split('|') {
            let name = name.trim();
            if name.is_empty() || name == "*" || name.contains('/') || name == "." || name == ".." {
                continue;
            }
            out.insert(Path::new(cwd).join(name));
        }
    }
    out.into_iter().collect()
}

impl HookState {
    /// The session's cached facts, if any (marking the session used).
    pub(crate) fn cached_facts(&self, sid: &str) -> Option<Facts> {
        let used = self.tick.fetch_add(1, Ordering::Relaxed);
        let mut sessions = lock(&self.sessions);
        let s = sessions.get_mut(sid)?;
        let f = s.facts.clone()?;
        s.used = used;
        Some(f)
    }

    /// Keeps the session's facts as just read.
    pub(crate) fn remember_facts(&self, sid: &str, facts: &Facts) {
        let used = self.tick.fetch_add(1, Ordering::Relaxed);
        let added = {
            let mut sessions = lock(&self.sessions);
            let added = !sessions.contains_key(sid);
            let entry = sessions.entry(sid.to_string()).or_default();
            entry.facts = Some(facts.clone());
            entry.used = used;
            added
        };
        if added {
            self.trim(sid);
        }
    }

    /// Drops the hook state of the least recently used sessions beyond
    /// `max_loaded_sessions` (never `keep`'s, just used).
    fn trim(&self, keep: &str) {
        let max = self.max_sessions;
        let victims: Vec<(String, PerSession)> = {
            let mut sessions = lock(&self.sessions);
            if sessions.len() <= max {
                return;
            }
            let mut by_use: Vec<(u64, String)> = sessions
                .iter()
                .filter(|(id, _)| id.as_str() != keep)
                .map(|(id, s)| (s.used, id.clone()))
                .collect();
            by_use.sort();
            let excess = sessions.len() - max;
            by_use
                .into_iter()
                .take(excess)
                .filter_map(|(_, id)| sessions.remove(&id).map(|s| (id, s)))
                .collect()
        };
        for (id, state) in victims {
            self.release(&id, state);
        }
        self.prune_layers();
    }

    /// Unregisters a forgotten session's watches.
    fn release(&self, sid: &str, state: PerSession) {
        if let Some(c) = state.config {
            let settings: Vec<PathBuf> = c.paths.iter().map(|(_, p)| p.clone()).collect();
            self.rewatch(sid, &settings, &[], &c.file_watch, &[]);
        }
    }

    /// Forgets parsed settings files no session's configuration holds any more.
    fn prune_layers(&self) {
        lock(&self.layers).retain(|_, (_, layer)| Arc::strong_count(layer) > 1);
    }

    /// The parsed settings file at `path` as of `stamp`: shared when some session read
    /// it at that stamp already, else read now.
    fn shared_layer(&self, source: Source, path: &Path, stamp: Option<Stamp>) -> Arc<Layer> {
        if let Some((at, layer)) = lock(&self.layers).get(path)
            && *at == stamp
            && layer.source == source
        {
            return layer.clone();
        }
        let layer = Arc::new(files::load(source, path));
        lock(&self.layers).insert(path.to_path_buf(), (stamp, layer.clone()));
        layer
    }

    /// How many sessions have hook state, and how many parsed settings files are kept.
    #[cfg(test)]
    pub(crate) fn counts(&self) -> (usize, usize) {
        (lock(&self.sessions).len(), lock(&self.layers).len())
    }

    fn settings_paths(&self, project: &str) -> Vec<(Source, PathBuf)> {
        files::settings_paths(
            &self.places.managed_root,
            &self.places.user_home,
            Path::new(project),
        )
    }

    /// The hooks that apply to the session now, and the changes to announce. Re-reads
    /// exactly the settings files whose stamps changed, reports each change (not the
    /// first load), and keeps the watches in step.
    pub(crate) fn config(&self, f: &Facts) -> (Arc<Effective>, Vec<SessionEvent>) {
        let paths = self.settings_paths(&f.project);
        // Stamps before contents: a write racing the read is seen again next time. The
        // trust list's stamp comes last: trusting or distrusting the project changes
        // what its files may do.
        let trust_file = &self.places.trust_list;
        let mut stamps: Vec<Option<Stamp>> = paths.iter().map(|(_, p)| files::stamp(p)).collect();
        stamps.push(files::stamp(trust_file));
        // Read only when a project file is (re)loaded, not on every event.
        let trusted = std::cell::OnceCell::new();
        let used = self.tick.fetch_add(1, Ordering::Relaxed);
        let mut sessions = lock(&self.sessions);
        let added = !sessions.contains_key(&f.id);
        let entry = sessions.entry(f.id.clone()).or_default();
        entry.used = used;
        let previous = entry.config.take();
        let same_paths = previous.as_ref().is_some_and(|c| c.paths == paths);
        let unchanged = same_paths && previous.as_ref().is_some_and(|c| c.stamps == stamps);
        if unchanged && let Some(mut c) = previous {
            let eff = c.effective.clone();
            if c.cwd == f.cwd {
                entry.config = Some(c);
                return (eff, Vec::new());
            }
            // Same files, new cwd: only the FileChanged watch list moves.
            let old_watch = std::mem::replace(&mut c.file_watch, file_changed_paths(&eff, &f.cwd));
            let new_watch = c.file_watch.clone();
            let settings: Vec<PathBuf> = c.paths.iter().map(|(_, p)| p.clone()).collect();
            c.cwd.clone_from(&f.cwd);
            entry.config = Some(c);
            drop(sessions);
            self.rewatch(&f.id, &settings, &settings, &old_watch, &new_watch);
            return (eff, Vec::new());
        }
        let mut changed = Vec::new();
        let layers: Vec<Arc<Layer>> = paths
            .iter()
            .enumerate()
            .map(|(i, (source, path))| match &previous {
                Some(c)
                    if same_paths
                        && c.stamps[i] == stamps[i]
                        && c.stamps.last() == stamps.last() =>
                {
                    c.layers[i].clone()
                }
                _ => {
                    changed.push(i);
                    let project = matches!(source, Source::Project | Source::Local);
                    let trusted = || {
                        *trusted.get_or_init(|| {
                            ctxd_fs::trust::is_trusted(trust_file, Path::new(&f.project))
                        })
                    };
                    if project && stamps[i].is_some() && !trusted() {
                        Arc::new(crate::hooks::files::untrusted_layer(*source, path))
                    } else {
                        self.shared_layer(*source, path, stamps[i])
                    }
                }
            })
            .collect();
        let effective = Arc::new(config::effective(&layers));
        let file_watch = file_changed_paths(&effective, &f.cwd);
        let announce: Vec<SessionEvent> = if same_paths {
            changed
                .iter()
                .map(|&i| {
                    let (status, error) = layers[i].status();
                    SessionEvent::HooksConfigChanged {
                        session_id: f.id.clone(),
                        source: layers[i].source.as_str().into(),
                        file: layers[i].file.clone(),
                        status: status.into(),
                        hooks: layers[i].hook_count(),
                        error,
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        let (old_settings, old_watch) = match &previous {
            Some(c) => (
                c.paths.iter().map(|(_, p)| p.clone()).collect(),
                c.file_watch.clone(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        entry.config = Some(Config {
            paths: paths.clone(),
            stamps,
            layers,
            effective: effective.clone(),
            cwd: f.cwd.clone(),
            file_watch: file_watch.clone(),
        });
        drop(sessions);
        drop(previous);
        let new_settings: Vec<PathBuf> = paths.into_iter().map(|(_, p)| p).collect();
        self.rewatch(&f.id, &old_settings, &new_settings, &old_watch, &file_watch);
        if added {
            self.trim(&f.id);
        } else {
            self.prune_layers();
        }
        (effective, announce)
    }

    /// Moves the session's watch registrations from the old lists to the new ones.
    fn rewatch(
        &self,
        sid: &str,
        old_settings: &[PathBuf],
        new_settings: &[PathBuf],
        old_fc: &[PathBuf],
        new_fc: &[PathBuf],
    ) {
        if old_settings == new_settings && old_fc == new_fc {
            return;
        }
        let mut watched = lock(&self.watched);
        let mut arm = Vec::new();
        let mut disarm = Vec::new();
        for p in new_settings.iter().chain(new_fc) {
            let i = watched.entry(p.clone()).or_default();
            if i.settings.is_empty() && i.file_changed.is_empty() {
                i.existed = p.exists();
                arm.push(p.clone());
            }
            if new_settings.contains(p) {
                i.settings.insert(sid.to_string());
            }
            if new_fc.contains(p) {
                i.file_changed.insert(sid.to_string());
            }
        }
        for p in old_settings.iter().chain(old_fc) {
            if let Some(i) = watched.get_mut(p) {
                if !new_settings.contains(p) {
                    i.settings.remove(sid);
                }
                if !new_fc.contains(p) {
                    i.file_changed.remove(sid);
                }
                if i.settings.is_empty() && i.file_changed.is_empty() {
                    watched.remove(p);
                    disarm.push(p.clone());
                }
            }
        }
        drop(watched);
        if let Some(w) = self.watcher.get() {
            for p in &arm {
                w.watch_file(p);
            }
            for p in &disarm {
                w.unwatch_file(p);
            }
        }
    }

    /// Forgets a session (deleted or unloaded): its watches, its cached state, its export
    /// mark. An unloaded session's next event reads its settings again.
    pub(crate) fn forget(&self, sid: &str) {
        lock(&self.exported).remove(sid);
        let old = lock(&self.sessions).remove(sid);
        if let Some(state) = old {
            self.release(sid, state);
            self.prune_layers();
        }
    }
}
