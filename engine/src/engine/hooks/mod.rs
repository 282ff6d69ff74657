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
mod export;
mod model;
mod rpc;
mod state;

pub(crate) use state::{HookState, Places};

use ctxd_pipeline::kinds;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ctxd_protocol::{
    AppendedRecord, HookEvent, HookOutcome, ProviderConfig, RecordInput, SessionEvent,
};
use serde_json::{Map, Value, json};

use crate::engine::Engine;
use crate::hooks::config::{ActiveHook, Effective};
use crate::hooks::{decide, input, runner};
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
        if let Some(f) = self.hooks.cached_facts(sid) {
            return Ok(f);
        }
        let s = sid.to_string();
        let row = self
            .store
            .read(move |c| ctxd_store::sessions::get(c, &s))
            .await?;
        let facts = Facts::of(&row);
        self.hooks.remember_facts(sid, &facts);
        Ok(facts)
    }

    /// The hooks that apply to the session now; a settings file that changed since the
    /// session last looked is announced (`hooks_config_changed`).
    pub(crate) fn hook_config(&self, f: &Facts) -> Arc<Effective> {
        let (effective, announce) = self.hooks.config(f);
        if !announce.is_empty() {
            let cell = self.cells.cell(&f.id);
            for ev in announce {
                self.emit(&cell, ev);
            }
        }
        effective
    }

    /// Where the hooks of this session read its transcript: the client's path, or the
    /// session exported as Claude Code JSONL (only records added since the last export
    /// are written).
    async fn hook_transcript(&self, f: &Facts) -> String {
        if let Some(p) = &f.transcript_path {
            return p.clone();
        }
        let path = self.session_dir(&f.id).join("transcript.jsonl");
        if let Err(e) = self.hooks.export_transcript(&self.store, f, &path).await {
            tracing::warn!(session = %f.id, error = %e, "could not export the transcript for hooks");
        }
        path.display().to_string()
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
                        model::prompt_hook(f, event, p, &spec.stdin, spec.timeout, &self.env).await
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
                self.hooks.drop_facts(session_id);
            }
            SessionEvent::SessionDeleted { session_id } => self.hooks.forget(session_id),
            SessionEvent::InstructionsLoaded {
                session_id,
                reason,
                paths,
            } => {
                let compacted = self.hooks.take_compacted(session_id);
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
mod tests;
