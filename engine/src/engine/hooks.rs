//! The engine's side of hooks: which configuration applies to a session (read from the
//! settings files, cached by file stamp, watched), running an event's hooks (in
//! parallel, bounded, announced on the subscription), the transcript a hook may read,
//! and the records an outcome appends. When each event fires lives in `hooks/events.rs`
//! (events the daemon sees) and `hooks/rpc.rs` (events the client reports).
//!
//! Invariants:
//! - a settings file is re-read when its stamp (inode, size, mtime, ctime) changes; every
//!   event checks the stamps first, so a change applies from the next event even when
//!   the watcher is degraded, and a change is announced (`hooks_config_changed`) once,
//!   by the watcher or by the event that found it;
//! - an event with no matching hook costs four `stat`s and a map lookup: no process, no
//!   transcript export, no event;
//! - hook processes never run under a session's lock except where the operation itself
//!   must wait for them (compaction's `PreCompact` and `SessionStart`), and at most
//!   [`MAX_RUNNING_HOOKS`] run at once daemon-wide.

mod events;
mod model;
mod rpc;

use ctxd_pipeline::kinds;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ctxd_protocol::{
    AppendedRecord, HookEvent, HookOutcome, ProviderConfig, RecordInput, SessionEvent,
};
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;

use super::Engine;
use crate::hooks::config::{self, ActiveHook, Effective, Layer, Source};
use crate::hooks::files::{self, Stamp};
use crate::hooks::{decide, input, runner, transcript};
use ctxd_pipeline::limits::MAX_RUNNING_HOOKS;
use ctxd_pipeline::sync::lock;
use ctxd_store::error::Result;
use ctxd_store::sessions::SessionRow;

/// What running a session's hooks needs to know of the session.
#[derive(Debug, Clone)]
pub(crate) struct Facts {
    pub(crate) id: String,
    pub(crate) cwd: String,
    /// The original cwd: where project settings live, and `CLAUDE_PROJECT_DIR`.
    pub(crate) project: String,
    pub(crate) model: String,
    pub(crate) disabled: bool,
    pub(crate) transcript_path: Option<String>,
    pub(crate) plan_mode: bool,
    /// The session's provider: what `prompt` hooks ask.
    pub(crate) provider: Option<ProviderConfig>,
}

impl Facts {
    pub(crate) fn of(row: &SessionRow) -> Facts {
        Facts {
            id: row.id.clone(),
            cwd: row.cwd.clone(),
            project: row.original_cwd.clone(),
            model: row.model.model.clone(),
            disabled: row.settings.hooks.disabled,
            transcript_path: row.settings.hooks.transcript_path.clone(),
            plan_mode: row.settings.plan_mode,
            provider: row.settings.provider.clone(),
        }
    }
}

/// One session's configuration, as last read.
struct Config {
    paths: Vec<(Source, PathBuf)>,
    stamps: Vec<Option<Stamp>>,
    /// Shared with every session reading the same file at the same stamp.
    layers: Vec<Arc<Layer>>,
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
struct PerSession {
    /// Dropped when the session is updated; read again from the store on next use.
    facts: Option<Facts>,
    config: Option<Config>,
    /// A compaction just ran: the next instruction reload is a `compact` load.
    compacted: bool,
    /// When the state was last used (`HookState::tick`).
    used: u64,
}

/// Who cares about a watched path.
#[derive(Default)]
struct Interest {
    /// Sessions reading it as a settings file.
    settings: BTreeSet<String>,
    /// Sessions with a `FileChanged` hook naming it.
    file_changed: BTreeSet<String>,
    /// Whether the file existed when last seen (`add` vs `change`).
    existed: bool,
}

/// See [`HookState::exported`].
type ExportMark = Arc<tokio::sync::Mutex<Option<u64>>>;

/// A parsed settings file and the stamp it was read at.
type StampedLayer = (Option<Stamp>, Arc<Layer>);

pub(crate) struct HookState {
    sessions: Mutex<HashMap<String, PerSession>>,
    tick: AtomicU64,
    /// Parsed settings files by path, with the stamp they were read at: the user's file
    /// is parsed once for every session. An entry lives while a session's configuration
    /// holds it.
    layers: Mutex<HashMap<PathBuf, StampedLayer>>,
    watched: Mutex<HashMap<PathBuf, Interest>>,
    /// Last record seq written to each session's exported transcript (`None`: export it
    /// whole again), one lock per session so exports of different sessions never wait on
    /// each other.
    exported: Mutex<HashMap<String, ExportMark>>,
    slots: Arc<Semaphore>,
}

impl Default for HookState {
    fn default() -> Self {
        HookState {
            sessions: Mutex::new(HashMap::new()),
            tick: AtomicU64::new(0),
            layers: Mutex::new(HashMap::new()),
            watched: Mutex::new(HashMap::new()),
            exported: Mutex::new(HashMap::new()),
            slots: Arc::new(Semaphore::new(MAX_RUNNING_HOOKS)),
        }
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

/// The attachment record of hook context for the model.
pub(crate) fn context_record(event: HookEvent, contexts: &[String], ts: &str) -> RecordInput {
    ctxd_pipeline::attachments::record(
        json!({
            "type": kinds::HOOK_ADDITIONAL_CONTEXT,
            "hook_event_name": event.as_str(),
            "content": contexts,
        }),
        ts,
    )
}

/// The attachment record of blocking feedback the model must act on.
pub(crate) fn feedback_record(
    event: HookEvent,
    outcome: &HookOutcome,
    ts: &str,
) -> Option<RecordInput> {
    let reason = outcome.reason.clone()?;
    let commands: Vec<&str> = outcome
        .results
        .iter()
        .filter(|r| r.decision.as_deref() == Some("block"))
        .map(|r| r.command.as_str())
        .collect();
    let mut a = json!({
        "type": kinds::HOOK_BLOCKING_ERROR,
        "hook_event_name": event.as_str(),
        "reason": reason,
    });
    if let [one] = commands.as_slice() {
        a["command"] = json!(one);
    }
    Some(ctxd_pipeline::attachments::record(a, ts))
}

impl Engine {
    /// The session's facts: cached, or read from the store.
    pub(crate) async fn hook_facts(&self, sid: &str) -> Result<Facts> {
        let used = self.hooks.tick.fetch_add(1, Ordering::Relaxed);
        if let Some(s) = lock(&self.hooks.sessions).get_mut(sid)
            && let Some(f) = &s.facts
        {
            s.used = used;
            return Ok(f.clone());
        }
        let s = sid.to_string();
        let row = self
            .store
            .read(move |c| ctxd_store::sessions::get(c, &s))
            .await?;
        let facts = Facts::of(&row);
        let added = {
            let mut sessions = lock(&self.hooks.sessions);
            let added = !sessions.contains_key(sid);
            let entry = sessions.entry(sid.to_string()).or_default();
            entry.facts = Some(facts.clone());
            entry.used = used;
            added
        };
        if added {
            self.trim_hook_state(sid);
        }
        Ok(facts)
    }

    /// Drops the hook state of the least recently used sessions beyond
    /// `max_loaded_sessions` (never `keep`'s, just used).
    fn trim_hook_state(&self, keep: &str) {
        let max = self.limits.max_loaded_sessions.max(1);
        let victims: Vec<(String, PerSession)> = {
            let mut sessions = lock(&self.hooks.sessions);
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
            self.release_hook_state(&id, state);
        }
        self.prune_layers();
    }

    /// Unregisters a forgotten session's watches.
    fn release_hook_state(&self, sid: &str, state: PerSession) {
        if let Some(c) = state.config {
            let settings: Vec<PathBuf> = c.paths.iter().map(|(_, p)| p.clone()).collect();
            self.rewatch(sid, &settings, &[], &c.file_watch, &[]);
        }
    }

    /// Forgets parsed settings files no session's configuration holds any more.
    fn prune_layers(&self) {
        lock(&self.hooks.layers).retain(|_, (_, layer)| Arc::strong_count(layer) > 1);
    }

    /// The parsed settings file at `path` as of `stamp`: shared when some session read
    /// it at that stamp already, else read now.
    fn shared_layer(&self, source: Source, path: &Path, stamp: Option<Stamp>) -> Arc<Layer> {
        if let Some((at, layer)) = lock(&self.hooks.layers).get(path)
            && *at == stamp
            && layer.source == source
        {
            return layer.clone();
        }
        let layer = Arc::new(files::load(source, path));
        lock(&self.hooks.layers).insert(path.to_path_buf(), (stamp, layer.clone()));
        layer
    }

    /// How many sessions have hook state, and how many parsed settings files are kept
    /// (for tests).
    #[cfg(test)]
    pub(crate) fn hook_state_counts(&self) -> (usize, usize) {
        (
            lock(&self.hooks.sessions).len(),
            lock(&self.hooks.layers).len(),
        )
    }

    fn settings_paths(&self, project: &str) -> Vec<(Source, PathBuf)> {
        files::settings_paths(
            &self.discovery.managed_root,
            &self.discovery.user_home,
            Path::new(project),
        )
    }

    /// The hooks that apply to the session now. Re-reads exactly the settings files
    /// whose stamps changed, announces each change (not the first load), and keeps the
    /// watches in step.
    pub(crate) fn hook_config(&self, f: &Facts) -> Arc<Effective> {
        let paths = self.settings_paths(&f.project);
        // Stamps before contents: a write racing the read is seen again next time. The
        // trust list's stamp comes last: trusting or distrusting the project changes
        // what its files may do.
        let trust_file = crate::hooks::trust::list_path(&self.home);
        let mut stamps: Vec<Option<Stamp>> = paths.iter().map(|(_, p)| files::stamp(p)).collect();
        stamps.push(files::stamp(&trust_file));
        // Read only when a project file is (re)loaded, not on every event.
        let trusted = std::cell::OnceCell::new();
        let used = self.hooks.tick.fetch_add(1, Ordering::Relaxed);
        let mut sessions = lock(&self.hooks.sessions);
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
                return eff;
            }
            // Same files, new cwd: only the FileChanged watch list moves.
            let old_watch = std::mem::replace(&mut c.file_watch, file_changed_paths(&eff, &f.cwd));
            let new_watch = c.file_watch.clone();
            let settings: Vec<PathBuf> = c.paths.iter().map(|(_, p)| p.clone()).collect();
            c.cwd.clone_from(&f.cwd);
            entry.config = Some(c);
            drop(sessions);
            self.rewatch(&f.id, &settings, &settings, &old_watch, &new_watch);
            return eff;
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
                            crate::hooks::trust::is_trusted(&trust_file, Path::new(&f.project))
                        })
                    };
                    if project && stamps[i].is_some() && !trusted() {
                        Arc::new(crate::hooks::trust::untrusted_layer(*source, path))
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
            self.trim_hook_state(&f.id);
        } else {
            self.prune_layers();
        }
        if !announce.is_empty() {
            let cell = self.cells.cell(&f.id);
            for ev in announce {
                self.emit(&cell, ev);
            }
        }
        effective
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
        let mut watched = lock(&self.hooks.watched);
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
    pub(crate) fn hooks_forget(&self, sid: &str) {
        lock(&self.hooks.exported).remove(sid);
        let old = lock(&self.hooks.sessions).remove(sid);
        if let Some(state) = old {
            self.release_hook_state(sid, state);
            self.prune_layers();
        }
    }

    /// Where the hooks of this session read its transcript: the client's path, or the
    /// session exported as Claude Code JSONL (only records added since the last export
    /// are written).
    async fn hook_transcript(&self, f: &Facts) -> String {
        if let Some(p) = &f.transcript_path {
            return p.clone();
        }
        let path = self.session_dir(&f.id).join("transcript.jsonl");
        if let Err(e) = self.export_transcript(f, &path).await {
            tracing::warn!(session = %f.id, error = %e, "could not export the transcript for hooks");
        }
        path.display().to_string()
    }

    /// Appends the records since the last export. A failed export forgets its mark, so
    /// the next one rewrites the file whole: a torn or repeated page never stays.
    async fn export_transcript(&self, f: &Facts, path: &Path) -> Result<()> {
        let mark = lock(&self.hooks.exported)
            .entry(f.id.clone())
            .or_default()
            .clone();
        let mut mark = mark.lock().await;
        let result = self.export_since(f, path, &mut mark).await;
        if result.is_err() {
            *mark = None;
        }
        result
    }

    async fn export_since(&self, f: &Facts, path: &Path, mark: &mut Option<u64>) -> Result<()> {
        const PAGE: u32 = 1_000;
        let mut after = match *mark {
            Some(seq) if path.exists() => seq,
            _ => 0,
        };
        let mut truncate = after == 0;
        loop {
            let (sid, from) = (f.id.clone(), after);
            let page = self
                .store
                .read(move |c| ctxd_store::records::page(c, &sid, from, PAGE))
                .await?;
            let Some(last) = page.last().map(|r| r.seq) else {
                break;
            };
            let mut text = String::new();
            for r in &page {
                text.push_str(&transcript::line(r, &f.id, &f.cwd));
                text.push('\n');
            }
            write_lines(path, text, truncate).await?;
            truncate = false;
            after = last;
            *mark = Some(after);
        }
        if truncate {
            write_lines(path, String::new(), true).await?;
        }
        *mark = Some(after);
        Ok(())
    }

    /// Runs the hooks of `event` that match `value`, in parallel, and merges their
    /// results. Announces each hook on the session's subscription.
    pub(crate) async fn run_hooks(
        &self,
        f: &Facts,
        event: HookEvent,
        value: Option<&str>,
        fields: Map<String, Value>,
    ) -> HookOutcome {
        if f.disabled {
            return HookOutcome::nothing();
        }
        let eff = self.hook_config(f);
        let hooks: Vec<ActiveHook> = eff.matching(event, value).into_iter().cloned().collect();
        if hooks.is_empty() {
            return HookOutcome::nothing();
        }
        let effective_env = eff.env.clone();
        let common = input::Common {
            session_id: f.id.clone(),
            transcript_path: self.hook_transcript(f).await,
            cwd: f.cwd.clone(),
            permission_mode: if f.plan_mode { "plan" } else { "default" },
        };
        let stdin = input::build(&common, event, fields)
            .to_string()
            .into_bytes();
        let cell = self.cells.cell(&f.id);
        let cell = &cell;
        let runs = hooks.iter().map(|h| {
            let spec = runner::RunSpec {
                command: h.entry.command.clone(),
                cwd: PathBuf::from(&f.cwd),
                env: effective_env
                    .iter()
                    .cloned()
                    .chain([("CLAUDE_PROJECT_DIR".to_string(), f.project.clone())])
                    .collect(),
                stdin: stdin.clone(),
                timeout: h.entry.timeout,
            };
            let slots = self.hooks.slots.clone();
            async move {
                let permit = slots.acquire_owned().await.ok();
                self.emit(
                    cell,
                    SessionEvent::HookStarted {
                        session_id: f.id.clone(),
                        hook_event_name: event.as_str().into(),
                        command: h.entry.command.clone(),
                        source: h.source.as_str().into(),
                    },
                );
                let raw = match (&h.entry.http, &h.entry.prompt) {
                    (Some(http), _) => {
                        crate::hooks::http::run(http, &runner::hook_env(&spec.env), spec.stdin, spec.timeout)
                            .await
                    }
                    (None, Some(p)) => {
                        model::prompt_hook(f, event, p, &spec.stdin, spec.timeout).await
                    }
                    (None, None) => runner::run(spec).await,
                };
                drop(permit);
                let result =
                    decide::interpret(event, &h.entry.command, h.source.as_str(), &raw);
                let r = &result.report;
                if let Some(e) = &r.error {
                    tracing::info!(session = %f.id, event = %event, command = %r.command, error = %e, "hook error");
                }
                self.emit(
                    cell,
                    SessionEvent::HookFinished {
                        session_id: f.id.clone(),
                        hook_event_name: event.as_str().into(),
                        command: r.command.clone(),
                        source: r.source.clone(),
                        exit_code: r.exit_code,
                        timed_out: r.timed_out,
                        duration_ms: r.duration_ms,
                        decision: r.decision.clone(),
                        output_cut: r.output_cut,
                        error: r.error.clone(),
                    },
                );
                result
            }
        });
        let results = futures::future::join_all(runs).await;
        decide::merge(event, &results)
    }

    /// The same, for a session known by id.
    pub(crate) async fn run_hooks_for(
        &self,
        sid: &str,
        event: HookEvent,
        value: Option<&str>,
        fields: Map<String, Value>,
    ) -> Result<HookOutcome> {
        let f = self.hook_facts(sid).await?;
        Ok(self.run_hooks(&f, event, value, fields).await)
    }

    /// Appends records an outcome produced (after the hooks ran, not under their
    /// lock); returns them and the new last uuid. They are attachments, so the append
    /// path runs no hook for them.
    pub(crate) async fn append_hook_records(
        &self,
        sid: &str,
        records: Vec<RecordInput>,
    ) -> Result<(Vec<AppendedRecord>, Option<String>)> {
        if records.is_empty() {
            return Ok((Vec::new(), None));
        }
        let r = self
            .append(ctxd_protocol::AppendParams {
                session_id: sid.to_string(),
                agent_id: None,
                records,
                expected_last_uuid: None,
            })
            .await?;
        Ok((r.appended, r.last_uuid))
    }

    /// What the daemon learns from its own events: an update drops the cached facts, a
    /// deletion forgets the session, loaded instruction files fire `InstructionsLoaded`.
    pub(crate) fn hooks_observe(&self, event: &SessionEvent) {
        match event {
            SessionEvent::SessionUpdated { session_id } => {
                if let Some(s) = lock(&self.hooks.sessions).get_mut(session_id) {
                    s.facts = None;
                }
            }
            SessionEvent::SessionDeleted { session_id } => self.hooks_forget(session_id),
            SessionEvent::InstructionsLoaded {
                session_id,
                reason,
                paths,
            } => {
                let compacted = lock(&self.hooks.sessions)
                    .get_mut(session_id)
                    .is_some_and(|s| std::mem::take(&mut s.compacted));
                let load_reason = match reason.as_str() {
                    "nested" => "nested_traversal",
                    _ if compacted => "compact",
                    _ => "session_start",
                };
                self.spawn_instructions_loaded(session_id, paths.clone(), load_reason);
            }
            _ => {}
        }
    }

    /// A strong handle for fire-and-forget hook tasks; `None` before the daemon started
    /// its background machinery (unit tests of the engine).
    fn strong(&self) -> Option<Arc<Engine>> {
        self.self_ref.get().and_then(std::sync::Weak::upgrade)
    }
}

async fn write_lines(path: &Path, text: String, truncate: bool) -> Result<()> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        use std::io::Write;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(!truncate)
            .truncate(truncate)
            .open(&path)?;
        f.write_all(text.as_bytes())
    })
    .await
    .map_err(|e| ctxd_store::error::Error::Internal(format!("transcript export task: {e}")))?
    .map_err(|e| ctxd_store::error::Error::Internal(format!("transcript export: {e}")))
}

/// Which kind of instruction file `path` is (the `memory_type` of `InstructionsLoaded`).
pub(crate) fn memory_type(path: &Path, managed_root: &Path, user_home: &Path) -> &'static str {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if path.starts_with(canon(managed_root)) {
        "Managed"
    } else if path.starts_with(canon(&user_home.join(".claude"))) {
        "User"
    } else if path.file_name().is_some_and(|n| n == "CLAUDE.local.md") {
        "Local"
    } else {
        "Project"
    }
}

/// An event's input fields; absent (`null`) values are left out.
pub(crate) fn fields<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs
        .into_iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

#[cfg(test)]
#[path = "hooks_tests.rs"]
mod tests;
