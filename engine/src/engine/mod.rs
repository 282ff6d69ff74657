//! The engine: one state cell per live session (its loaded transcript, tools and event
//! channel). Writes to a session are serialised by that cell's lock, which also keeps the
//! in-memory transcript in step with the store. The RPC edge calls in here; nothing here
//! knows JSON-RPC.

mod activity;
mod cache;
mod compaction;
mod compile;
mod hooks;
mod send;
mod session;
mod sources;
#[cfg(test)]
pub(crate) mod test_support;
mod turn;
mod watches;

pub use activity::{ActivityStats, CompactionKind};
pub use send::TurnStats;
pub use session::cells::EVENT_BUFFER;
pub(crate) use session::cells::SessionCell;
pub use session::cells::Subscription;
pub use session::events::{Emitted, as_caller};
pub(crate) use session::loaded::Loaded;
pub(crate) use session::transcript::Transcript;
pub use sources::files::DiscoveryDefaults;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use ctxd_protocol::{Record, SessionEvent};

use crate::watch::{FileWatcher, WatchEvent};
use ctxd_pipeline::clock::Clock;
use ctxd_store::Store;
use ctxd_store::error::{Error, Result};

/// The engine: the store, the clock and the limits, and the parts that own the rest of
/// its state. Fields are private to this module's tree, so the edges and the daemon
/// reach a session only through the engine's operations.
pub struct Engine {
    store: Store,
    home: PathBuf,
    clock: Arc<dyn Clock>,
    /// The live sessions' cells and their LRU order.
    cells: Arc<session::cells::Cells>,
    limits: ctxd_pipeline::limits::Limits,
    started: Instant,
    discovery: DiscoveryDefaults,
    /// Which sessions have seen which file, and the watcher.
    watches: watches::Watches,
    /// The default summariser and the client summaries awaited.
    summaries: compaction::summariser::Summaries,
    /// Session-memory extractions running.
    extractions: compaction::memory::Extractions,
    /// Where work that outlives its call goes (a memory extraction, fire-and-forget
    /// hooks): the background worker lends each job the engine. Unset until
    /// `start_watching` starts the worker, so an engine that never started one (unit
    /// tests) runs no background work.
    background: std::sync::OnceLock<tokio::sync::mpsc::UnboundedSender<Job>>,
    /// Skill catalogs, one per set of skill places.
    skills: sources::skills::SkillCatalogs,
    /// Hook configuration, settings-file watches and transcript exports (`hooks/state.rs`).
    hooks: hooks::HookState,
    /// Relevant-memory prefetches, one per session (`sources/memory_prefetch.rs`).
    memories: sources::memory_prefetch::Prefetches,
    /// The platform named in the environment section of sessions that name none.
    platform: String,
    /// Sessions with a `context.send` turn running.
    turns: send::Turns,
    /// Compactions, collapses, extractions and cache breaks since the start.
    activity: activity::Activity,
    /// One `agent.finish` at a time: its checks and its two writes are one step.
    agent_finishes: tokio::sync::Mutex<()>,
    /// How provider keys are looked up (the process environment; tests inject theirs).
    env: ctxd_providers::EnvLookup,
    /// The daemon's own files (database, locks, socket, log): the watcher never reports
    /// them.
    own_files: Vec<PathBuf>,
    /// Failing attachment sources a test asked for.
    #[cfg(test)]
    source_faults: sources::collect::SourceFaults,
}

/// Work that outlives the call that starts it, given the engine when it runs.
pub(crate) type Job =
    Box<dyn FnOnce(Arc<Engine>) -> futures::future::BoxFuture<'static, ()> + Send>;

/// `records_appended` for stored records (their uuids and seqs).
pub(crate) fn appended_event(session_id: &str, records: &[Record]) -> SessionEvent {
    SessionEvent::RecordsAppended {
        session_id: session_id.to_string(),
        records: records
            .iter()
            .map(|r| ctxd_protocol::AppendedRecord {
                uuid: r.uuid.clone(),
                seq: r.seq,
            })
            .collect(),
        full_records: None,
    }
}

impl Engine {
    pub fn new(store: Store, home: &Path, clock: Arc<dyn Clock>) -> Engine {
        let limits = ctxd_pipeline::limits::Limits::default();
        let mut engine = Engine {
            store,
            home: home.to_path_buf(),
            clock,
            cells: Arc::new(session::cells::Cells::new(limits.max_loaded_sessions)),
            limits,
            started: Instant::now(),
            discovery: DiscoveryDefaults::default(),
            watches: Default::default(),
            summaries: Default::default(),
            extractions: Default::default(),
            background: std::sync::OnceLock::new(),
            skills: Default::default(),
            hooks: hooks::HookState::default(),
            memories: Default::default(),
            platform: std::env::consts::OS.to_string(),
            turns: Default::default(),
            activity: Default::default(),
            agent_finishes: Default::default(),
            env: ctxd_providers::process_env().with_file(&home.join("env")),
            own_files: Vec::new(),
            #[cfg(test)]
            source_faults: sources::collect::SourceFaults::default(),
        };
        engine.configure_hooks();
        engine
    }

    /// Starts the worker that runs background jobs. It holds the engine weakly: when the
    /// engine goes, its sender goes with it and the worker ends.
    fn start_background(self: &Arc<Self>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Job>();
        if self.background.set(tx).is_err() {
            return;
        }
        let engine = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some(job) = rx.recv().await {
                let Some(engine) = engine.upgrade() else {
                    break;
                };
                tokio::spawn(job(engine));
            }
        });
    }

    /// Runs `job` in the background with the engine; dropped when no worker runs.
    pub(crate) fn background(
        &self,
        job: impl FnOnce(Arc<Engine>) -> futures::future::BoxFuture<'static, ()> + Send + 'static,
    ) {
        if let Some(tx) = self.background.get() {
            // A closed channel means the engine is going away: the job has no one to run.
            let _ = tx.send(Box::new(job));
        }
    }

    /// Whether background jobs run (the worker started).
    pub(crate) fn runs_background(&self) -> bool {
        self.background.get().is_some()
    }

    pub fn with_summariser(mut self, cfg: ctxd_protocol::SummariserConfig) -> Engine {
        self.summaries.set_default(cfg);
        self
    }

    pub(crate) fn now_text(&self) -> String {
        ctxd_pipeline::clock::rfc3339(self.clock.now())
    }

    /// The same engine with failing attachment sources in every collection.
    #[cfg(test)]
    pub(crate) fn with_source_faults(mut self, faults: sources::collect::SourceFaults) -> Engine {
        self.source_faults = faults;
        self
    }

    pub fn with_limits(mut self, limits: ctxd_pipeline::limits::Limits) -> Engine {
        self.cells = Arc::new(session::cells::Cells::new(limits.max_loaded_sessions));
        self.limits = limits;
        self.configure_hooks();
        self
    }

    /// The daemon's own files, which the file watcher never reports even when a session
    /// watches their directory.
    pub fn with_own_files(mut self, files: Vec<PathBuf>) -> Engine {
        self.own_files = files;
        self
    }

    pub fn with_discovery(mut self, d: DiscoveryDefaults) -> Engine {
        self.discovery = d;
        self.configure_hooks();
        self
    }

    /// The hooks look where the engine does and keep as many sessions as it loads.
    fn configure_hooks(&mut self) {
        let places = hooks::Places {
            managed_root: self.discovery.managed_root.clone(),
            user_home: self.discovery.user_home.clone(),
            trust_list: ctxd_fs::trust::list_path(&self.home),
        };
        self.hooks
            .configure(places, self.limits.max_loaded_sessions);
    }

    /// Starts the file watcher and the task that turns its events into `file_changed`
    /// events, and re-registers every file some session has seen.
    pub async fn start_watching(self: &Arc<Self>) -> Result<()> {
        self.start_background();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let watcher = Arc::new(FileWatcher::new(tx));
        watcher.ignore_own_files(&self.own_files);
        self.hooks.set_watcher(watcher.clone());
        self.watches.start(watcher);
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some(ev) = rx.recv().await {
                let Some(engine) = weak.upgrade() else { break };
                engine.on_watch_event(ev);
            }
        });
        let seen = self
            .store
            .read(ctxd_store::context_state::all_watched)
            .await?;
        for (sid, path) in seen {
            self.watches.watch(&sid, std::path::Path::new(&path));
        }
        Ok(())
    }

    fn on_watch_event(&self, ev: WatchEvent) {
        self.hooks_on_watch(&ev);
        let (paths, change): (Vec<PathBuf>, &str) = match ev {
            WatchEvent::Changed(p) => (vec![p], "changed"),
            WatchEvent::Removed(p) => (vec![p], "removed"),
            WatchEvent::DirChanged(d) => {
                self.skills_changed(Some(&d));
                return;
            }
            // Anything may have changed: compiles check every seen file's stamp anyway;
            // skill catalogs scan again.
            WatchEvent::Rescan => {
                self.skills_changed(None);
                return;
            }
        };
        for p in paths {
            for sid in self.watches.sessions(&p) {
                let cell = self.cells.cell(&sid);
                self.emit(
                    &cell,
                    SessionEvent::FileChanged {
                        session_id: sid,
                        path: p.display().to_string(),
                        change: change.to_string(),
                    },
                );
            }
        }
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The bounds this engine enforces.
    pub fn limits(&self) -> &ctxd_pipeline::limits::Limits {
        &self.limits
    }

    pub fn uptime_ms(&self) -> u64 {
        ctxd_pipeline::saturate::millis(self.started.elapsed())
    }

    /// The directory holding a session's files (tool results, notes).
    pub(crate) fn session_dir(&self, id: &str) -> PathBuf {
        self.home.join("sessions").join(id)
    }

    /// Where persisted tool results of a session go.
    pub(crate) fn tool_results_dir(&self, id: &str) -> PathBuf {
        self.session_dir(id).join("tool-results")
    }

    /// Subscribes to a session's events. Fails for unknown sessions.
    pub async fn subscribe(self: &Arc<Self>, id: &str) -> Result<Subscription> {
        let sid = id.to_string();
        let exists = self
            .store
            .read(move |c| ctxd_store::sessions::exists(c, &sid))
            .await?;
        if !exists {
            return Err(Error::SessionNotFound(id.to_string()));
        }
        Ok(self.cells.subscribe(id))
    }

    pub(crate) fn emit(&self, cell: &SessionCell, event: SessionEvent) {
        self.hooks_observe(&event);
        self.publish(&event);
        // No subscribers is normal; the event is simply not observed.
        cell.send(event);
    }

    /// Tells subscribers about records the engine appended itself (attachments, new
    /// histories).
    pub(crate) fn emit_appended(&self, cell: &SessionCell, session_id: &str, records: &[Record]) {
        self.emit(cell, appended_event(session_id, records));
    }

    /// How many sessions are loaded (for status and tests).
    pub fn loaded_sessions(&self) -> usize {
        self.cells.loaded()
    }

    /// Whether file watching runs (so `file_changed` events can flow).
    pub fn watching(&self) -> bool {
        self.watches.watcher().is_some()
    }

    /// The summariser of sessions that choose none.
    pub fn default_summariser(&self) -> &ctxd_protocol::SummariserConfig {
        self.summaries.default_config()
    }
}
