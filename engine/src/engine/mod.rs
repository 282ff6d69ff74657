//! The engine: one state cell per live session (its loaded transcript, tools and event
//! channel). Writes to a session are serialised by that cell's lock, which also keeps the
//! in-memory transcript in step with the store. The RPC edge calls in here; nothing here
//! knows JSON-RPC.

mod agents;
mod cache;
mod capabilities;
mod cells;
mod collapse;
pub(crate) mod collect;
mod compact;
mod compile;
mod events;
mod hooks;
mod import;
mod memory;
mod memory_prefetch;
mod mentions;
mod plan_mode;
mod queue;
mod remote;
mod sections;
mod send;
mod server_compact;
mod session;
mod skills;
mod source_input;
mod sources;
mod summariser;
#[cfg(test)]
pub(crate) mod test_support;
mod transcript;
mod turn;
mod watches;

pub use cells::EVENT_BUFFER;
pub(crate) use cells::SessionCell;
pub use cells::Subscription;
pub use events::{Emitted, as_caller};
pub use sources::DiscoveryDefaults;
pub(crate) use transcript::Transcript;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use ctxd_protocol::{ContentBlock, Record, SessionEvent, ToolSpec};

use crate::watch::{FileWatcher, WatchEvent};
use ctxd_pipeline::budget::Fate;
use ctxd_pipeline::clock::Clock;
use ctxd_pipeline::microcompact::PinnedEdit;
use ctxd_store::Store;
use ctxd_store::context_state::InstructionMemo;
use ctxd_store::error::{Error, Result};
use ctxd_store::sessions::SessionRow;

/// What a compile and an append need of a session, kept in memory once loaded.
#[derive(Clone)]
pub(crate) struct Loaded {
    pub(crate) row: SessionRow,
    pub(crate) records: Transcript,
    /// Shared so the snapshot a compile takes does not copy every schema.
    pub(crate) tools: Arc<Vec<ToolSpec>>,
    pub(crate) rejected_media: BTreeSet<(String, u32)>,
    /// Frozen tool-result budget fates.
    pub(crate) fates: BTreeMap<String, Fate>,
    /// Results cleared by time-based microcompact.
    pub(crate) cleared: BTreeMap<String, Fate>,
    /// uuid of the last compact boundary ('' before any).
    pub(crate) boundary_uuid: String,
    /// Cache edits sent since that boundary.
    pub(crate) pinned_edits: Vec<PinnedEdit>,
    /// The collapse store (all statuses, log order).
    pub(crate) collapses: Vec<ctxd_pipeline::collapse::Collapse>,
    /// Transcript seq at which each committed collapse was committed.
    pub(crate) collapse_commits: HashMap<String, u64>,
    /// Collapses undone after their commit: (seq at commit, seq at undo).
    pub(crate) collapse_undos: HashMap<String, (u64, u64)>,
    /// The selected output style as last found, with the name it was looked up by
    /// (looked up again when the setting names another).
    pub(crate) output_style: Option<(String, Option<ctxd_pipeline::system::OutputStyle>)>,
    /// The memoized `claudeMd` and announced date; `None` until first computed.
    pub(crate) memo: Option<InstructionMemo>,
    /// The last autocompact that could not get below the threshold, and the seq of the
    /// last message it saw: autocompact waits for a newer message (in memory only; the
    /// persisted breaker bounds retries across restarts).
    pub(crate) no_room: Option<(u64, ctxd_protocol::CompactionShortfall)>,
    /// Last warning level announced to subscribers (not persisted: a restarted daemon
    /// announces the level again on its first compile if it is not `ok`).
    pub(crate) level: &'static str,
    /// MCP servers, agent types, deferred tools, skills.
    pub(crate) caps: capabilities::Caps,
    /// Latched request flags, the previous request's cache key, recent fingerprints.
    pub(crate) cache: cache::CacheState,
    /// The platform the environment section names (the session's, else the daemon's).
    pub(crate) platform: String,
    /// The user's UTC offset, from the clock at the last compile's instant: local dates
    /// and times shown to the model use it (an input, never the machine's zone directly).
    pub(crate) utc_offset: chrono::FixedOffset,
    /// Memoized system sections.
    pub(crate) sections: sections::SectionState,
    /// The session's revision this copy is current at (a shared store's other daemons
    /// bump it; 0 on SQLite).
    pub(crate) revision: u64,
    /// What the budget last looked at when it had nothing to decide: a compile that
    /// finds the same inputs skips the plan (it is a pure function of them).
    pub(crate) budget_settled: Option<BudgetInputs>,
    /// What the last collection read from the store, with the store's context generation
    /// at the time: the next collection reuses it while the generation stands.
    pub(crate) context_rows: Option<Arc<sources::ContextRows>>,
}

/// The inputs of [`ctxd_pipeline::budget::plan`] as they were, in a form cheap to
/// compare: the transcript only grows and fates are only added, so their lengths and
/// the last seq stand for them.
#[derive(Clone, PartialEq)]
pub(crate) struct BudgetInputs {
    pub(crate) records: usize,
    pub(crate) last_seq: u64,
    pub(crate) fates: usize,
    pub(crate) collapses: Vec<ctxd_pipeline::collapse::Collapse>,
    pub(crate) limits: ctxd_pipeline::budget::ToolLimits,
}

impl BudgetInputs {
    pub(crate) fn of(l: &Loaded, limits: ctxd_pipeline::budget::ToolLimits) -> Self {
        BudgetInputs {
            records: l.records.len(),
            last_seq: l.records.last().map_or(0, |r| r.seq),
            fates: l.fates.len(),
            collapses: l.collapses.clone(),
            limits,
        }
    }

    /// Whether a plan that had nothing to decide at these inputs still has nothing: the
    /// same fates, collapses and limits, and a transcript that only grew, by records
    /// without tool results. Every result the projection showed had its fate then, and
    /// a record that carries none cannot show one for the first time (new records only
    /// ever hide older ones: a boundary, a snip). So a turn of text costs a look at its
    /// own records, not a plan over the whole projection.
    pub(crate) fn still_settled(
        &self,
        l: &Loaded,
        limits: &ctxd_pipeline::budget::ToolLimits,
    ) -> bool {
        let same_prefix = match self.records.checked_sub(1) {
            None => true,
            Some(last) => l.records.get(last).is_some_and(|r| r.seq == self.last_seq),
        };
        same_prefix
            && self.fates == l.fates.len()
            && self.collapses == l.collapses
            && self.limits == *limits
            && l.records.get(self.records..).is_some_and(|grown| {
                grown.iter().all(|r| {
                    !r.content
                        .iter()
                        .any(|b| matches!(b, ContentBlock::ToolResult { .. }))
                })
            })
    }
}

impl Loaded {
    /// A fingerprint of the frozen decisions a compile builds on (fates, clears, cache
    /// edits, boundary, collapses, memo), to notice that they changed under a compile that
    /// ran without the lock. Appended records are not part of it.
    pub(crate) fn decisions(&self) -> Decisions {
        Decisions {
            frozen: [
                self.fates.len(),
                self.cleared.len(),
                self.pinned_edits.len(),
                self.collapse_commits.len(),
            ],
            collapses: self.collapses.iter().map(|c| c.status).collect(),
            boundary: self.boundary_uuid.clone(),
            memo: self.memo.as_ref().map(|m| m.boundary_uuid.clone()),
        }
    }

    /// Every frozen tool-result fate: the budget's, overridden by microcompact's clears.
    pub(crate) fn shown_fates(&self) -> BTreeMap<String, Fate> {
        let mut fates = self.fates.clone();
        fates.extend(self.cleared.iter().map(|(k, v)| (k.clone(), v.clone())));
        fates
    }

    /// The projection as the model saw it: main thread after the last boundary, snipped
    /// records out, every frozen fate applied.
    pub(crate) fn shown(&self) -> Vec<ctxd_pipeline::projection::Shown<'_>> {
        let view = self.records.view();
        ctxd_pipeline::budget::apply(&view, &self.shown_fates())
    }

    /// `records` as a summariser reads them: normalised for the session's model, refused
    /// media out, without short ids.
    pub(crate) fn summary_messages<R: std::borrow::Borrow<Record>>(
        &self,
        records: &[R],
    ) -> Vec<ctxd_pipeline::message::ApiMessage> {
        summary_messages(records, &self.row.model, &self.rejected_media)
    }
}

/// [`Loaded::summary_messages`], for a caller holding the session's parts, not the
/// session.
pub(crate) fn summary_messages<R: std::borrow::Borrow<Record>>(
    records: &[R],
    model: &ctxd_protocol::ModelProfile,
    rejected_media: &std::collections::BTreeSet<(String, u32)>,
) -> Vec<ctxd_pipeline::message::ApiMessage> {
    ctxd_pipeline::normalize::normalize(
        records,
        &ctxd_pipeline::normalize::NormalizeOptions {
            supports_thinking: model.supports_thinking,
            rejected_media,
            short_ids: false,
            transcript: None,
        },
    )
    .into_owned_messages()
}

/// See [`Loaded::decisions`].
#[derive(PartialEq, Eq)]
pub(crate) struct Decisions {
    frozen: [usize; 4],
    collapses: Vec<ctxd_pipeline::collapse::CollapseStatus>,
    boundary: String,
    memo: Option<String>,
}

/// The loaded state of a cell whose load just succeeded.
pub(crate) fn loaded_mut(slot: &mut Option<Loaded>) -> Result<&mut Loaded> {
    slot.as_mut()
        .ok_or_else(|| Error::Internal("session state missing after load".into()))
}

/// uuid of the last main-thread compact boundary, or '' when there is none.
pub(crate) fn last_boundary_uuid(records: &[Record]) -> String {
    records
        .iter()
        .rev()
        .find(|r| ctxd_pipeline::projection::is_compact_boundary(r))
        .map(|r| r.uuid.clone())
        .unwrap_or_default()
}

pub struct Engine {
    pub(crate) store: Store,
    pub(crate) home: PathBuf,
    pub(crate) clock: Arc<dyn Clock>,
    /// The live sessions' cells and their LRU order.
    pub(crate) cells: Arc<cells::Cells>,
    pub(crate) limits: ctxd_pipeline::limits::Limits,
    pub(crate) started: Instant,
    pub(crate) discovery: DiscoveryDefaults,
    /// Which sessions have seen which file, and the watcher.
    pub(crate) watches: watches::Watches,
    /// The default summariser and the client summaries awaited.
    pub(crate) summaries: summariser::Summaries,
    /// Session-memory extractions running.
    pub(crate) extractions: memory::Extractions,
    /// Where work that outlives its call goes (a memory extraction, fire-and-forget
    /// hooks): the background worker lends each job the engine. Unset until
    /// `start_watching` starts the worker, so an engine that never started one (unit
    /// tests) runs no background work.
    background: std::sync::OnceLock<tokio::sync::mpsc::UnboundedSender<Job>>,
    /// Skill catalogs, one per set of skill places.
    pub(crate) skills: skills::SkillCatalogs,
    /// Hook configuration, watches and transcript exports (engine/hooks.rs).
    pub(crate) hooks: hooks::HookState,
    /// Relevant-memory prefetches, one per session (engine/memory_prefetch.rs).
    pub(crate) memories: memory_prefetch::Prefetches,
    /// The platform named in the environment section of sessions that name none.
    pub(crate) platform: String,
    /// Sessions with a `context.send` turn running.
    pub(crate) turns: send::Turns,
    /// One `agent.finish` at a time: its checks and its two writes are one step.
    pub(crate) agent_finishes: tokio::sync::Mutex<()>,
    /// How provider keys are looked up (the process environment; tests inject theirs).
    pub(crate) env: crate::providers::EnvLookup,
    /// Failing attachment sources a test asked for.
    #[cfg(test)]
    pub(crate) source_faults: collect::SourceFaults,
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
            cells: Arc::new(cells::Cells::new(limits.max_loaded_sessions)),
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
            agent_finishes: Default::default(),
            env: crate::providers::process_env(),
            #[cfg(test)]
            source_faults: collect::SourceFaults::default(),
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
        self.summaries = summariser::Summaries::with_default(cfg);
        self
    }

    pub(crate) fn now_text(&self) -> String {
        ctxd_pipeline::clock::rfc3339(self.clock.now())
    }

    /// Loads the session into its cell; an unknown session's cell is dropped again.
    pub(crate) async fn load_or_drop(&self, id: &str, slot: &mut Option<Loaded>) -> Result<()> {
        if let Err(e) = self.ensure_loaded(id, slot).await {
            if matches!(e, Error::SessionNotFound(_)) {
                self.cells.drop_cell(id);
            }
            return Err(e);
        }
        Ok(())
    }

    /// The same engine with failing attachment sources in every collection.
    #[cfg(test)]
    pub(crate) fn with_source_faults(mut self, faults: collect::SourceFaults) -> Engine {
        self.source_faults = faults;
        self
    }

    pub fn with_limits(mut self, limits: ctxd_pipeline::limits::Limits) -> Engine {
        self.cells = Arc::new(cells::Cells::new(limits.max_loaded_sessions));
        self.limits = limits;
        self.configure_hooks();
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
            trust_list: crate::hooks::trust::list_path(&self.home),
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

    /// Loads the session into its cell if it is not there yet.
    pub(crate) async fn ensure_loaded(&self, id: &str, slot: &mut Option<Loaded>) -> Result<()> {
        let mut kept_level = None;
        if slot.is_some() {
            kept_level = self.check_current(id, slot).await?;
        }
        if slot.is_some() {
            self.cells.touch_loaded(id);
            return Ok(());
        }
        let sid = id.to_string();
        let loaded = self
            .store
            .read(move |c| {
                let row = ctxd_store::sessions::get(c, &sid)?;
                let records = ctxd_store::records::all(c, &sid)?;
                let tools = ctxd_store::sessions::tools(c, &sid)?;
                let rejected_media = ctxd_store::sessions::rejected_media(c, &sid)?
                    .into_iter()
                    .collect();
                let fates = ctxd_store::fates::load(c, &sid, ctxd_store::fates::BUDGET)?;
                let cleared = ctxd_store::fates::load(c, &sid, ctxd_store::fates::MICROCOMPACT)?;
                let boundary_uuid = last_boundary_uuid(&records);
                let pinned_edits = ctxd_store::cache_edits::load(c, &sid, &boundary_uuid)?;
                let memo = ctxd_store::context_state::memo(c, &sid)?;
                let collapses = ctxd_store::collapses::load(c, &sid)?;
                let collapse_commits = ctxd_store::collapses::commit_seqs(c, &sid)?
                    .into_iter()
                    .collect();
                let collapse_undos = ctxd_store::collapses::undo_seqs(c, &sid)?
                    .into_iter()
                    .map(|(id, committed, undone)| (id, (committed, undone)))
                    .collect();
                let caps = capabilities::Caps::new(ctxd_store::capabilities::load(c, &sid)?);
                let revision = ctxd_store::sessions::revision(c, &sid)?;
                Ok(Loaded {
                    row,
                    records: Transcript::new(records),
                    tools: Arc::new(tools),
                    rejected_media,
                    fates,
                    cleared,
                    boundary_uuid,
                    pinned_edits,
                    memo,
                    collapses,
                    collapse_commits,
                    collapse_undos,
                    output_style: None,
                    no_room: None,
                    level: "ok",
                    caps,
                    cache: cache::CacheState::load(c, &sid)?,
                    platform: String::new(),
                    utc_offset: ctxd_pipeline::clock::utc(),
                    sections: sections::SectionState {
                        memo: ctxd_store::sections::load(c, &sid)?,
                    },
                    revision,
                    budget_settled: None,
                    context_rows: None,
                })
            })
            .await?;
        let mut loaded = loaded;
        loaded.level = kept_level.unwrap_or(loaded.level);
        loaded.platform = loaded
            .row
            .settings
            .platform
            .clone()
            .unwrap_or_else(|| self.platform.clone());
        loaded.utc_offset = self.clock.utc_offset(self.clock.now());
        *slot = Some(loaded);
        for unloaded in self.cells.loaded_now(id) {
            self.forget_session_state(&unloaded);
        }
        if self.store.shared() {
            self.materialise_outputs(id).await;
        }
        Ok(())
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
