//! Events the daemon fires itself, and what their outcomes do:
//!
//! - `SessionStart` `startup` when a session is created (its context is written with the
//!   session, so the first compile has it) and `compact` after every compaction (its
//!   context follows the new history's head);
//! - `UserPromptSubmit` when an append carries a prompt the user typed: a block refuses
//!   the whole append, context is appended right after the prompt;
//! - `PreCompact` (stdout joins the compaction's custom instructions) and `PostCompact`
//!   (sees the summary; fire-and-forget);
//! - `InstructionsLoaded` per loaded instruction file, `CwdChanged`, `FileChanged`:
//!   fire-and-forget, output ignored.

use std::path::Path;

use ctxd_protocol::{ContentBlock, HookEvent, RecordInput, RecordKind};
use futures::FutureExt;
use serde_json::json;

use super::{Facts, context_record, fields, memory_type};
use crate::engine::{Engine, Loaded};
use crate::watch::WatchEvent;
use ctxd_pipeline::autocompact::Trigger;
use ctxd_store::error::{Error, Result};
use ctxd_store::sessions::SessionRow;

/// A `PostCompact` run waiting for its compaction to be written.
pub(crate) struct PostCompact {
    facts: Facts,
    trigger: &'static str,
    summary: String,
}

/// Claude Code's compaction triggers: a reactive compact is an automatic one.
fn trigger_name(t: Trigger) -> &'static str {
    match t {
        Trigger::Manual => "manual",
        _ => "auto",
    }
}

fn prompt_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Engine {
    /// `SessionStart` for a session about to be written (`startup`) or a new history
    /// (`compact`): the context records to write with it.
    pub(crate) async fn session_start_records(&self, f: &Facts, source: &str) -> Vec<RecordInput> {
        let outcome = self
            .run_hooks(
                f,
                HookEvent::SessionStart,
                Some(source),
                fields([("source", json!(source)), ("model", json!(f.model))]),
            )
            .await;
        if outcome.additional_context.is_empty() {
            return Vec::new();
        }
        vec![context_record(
            HookEvent::SessionStart,
            &outcome.additional_context,
            &self.now_text(),
        )]
    }

    /// `SessionStart` `startup` of a session being created: run before the session is
    /// written, so its context is written with it (and no subscriber can see these
    /// runs' events yet).
    pub(crate) async fn hooks_created(&self, row: &SessionRow) -> Vec<RecordInput> {
        self.session_start_records(&Facts::of(row), "startup").await
    }

    /// `InstructionsLoaded` for the startup chain of a session just written
    /// (`loaded`: canonical paths), fire-and-forget.
    pub(crate) fn hooks_created_instructions(&self, row: &SessionRow, loaded: &[String]) {
        if !loaded.is_empty() {
            self.spawn_instructions_loaded(&row.id, loaded.to_vec(), "session_start");
        }
    }

    /// `UserPromptSubmit` for every prompt the user typed in an append batch. A block
    /// (exit 2, `decision: "block"`, `continue: false`) refuses the batch; context is
    /// placed right after its prompt.
    pub(crate) async fn hooks_user_prompts(
        &self,
        sid: &str,
        inputs: Vec<RecordInput>,
    ) -> Result<Vec<RecordInput>> {
        let typed = |r: &RecordInput| {
            !r.is_sidechain
                && !r.is_virtual
                && ctxd_pipeline::records::typed_prompt(
                    r.kind.unwrap_or(RecordKind::User),
                    r.is_meta,
                    r.is_compact_summary,
                    &r.content,
                )
        };
        if !inputs.iter().any(typed) {
            return Ok(inputs);
        }
        let f = self.hook_facts(sid).await?;
        if f.disabled || !self.hook_config(&f).has_event(HookEvent::UserPromptSubmit) {
            return Ok(inputs);
        }
        let mut out = Vec::with_capacity(inputs.len() + 1);
        for r in inputs {
            if !typed(&r) {
                out.push(r);
                continue;
            }
            let outcome = self
                .run_hooks(
                    &f,
                    HookEvent::UserPromptSubmit,
                    None,
                    fields([("prompt", json!(prompt_text(&r.content)))]),
                )
                .await;
            if outcome.decision.as_deref() == Some("block") || !outcome.continue_ {
                let reason = outcome
                    .reason
                    .or(outcome.stop_reason)
                    .unwrap_or_else(|| "the hook stopped processing (continue: false)".into());
                return Err(Error::HookBlocked {
                    event: HookEvent::UserPromptSubmit.as_str().into(),
                    reason,
                });
            }
            let ts = r.timestamp.clone().unwrap_or_else(|| self.now_text());
            out.push(r);
            if !outcome.additional_context.is_empty() {
                out.push(context_record(
                    HookEvent::UserPromptSubmit,
                    &outcome.additional_context,
                    &ts,
                ));
            }
        }
        Ok(out)
    }

    /// `PreCompact`: the hooks' stdout joins the caller's instructions (caller's first).
    pub(crate) async fn hooks_pre_compact(
        &self,
        l: &Loaded,
        trigger: Trigger,
        instructions: Option<String>,
    ) -> Option<String> {
        let f = Facts::of(&l.row);
        let outcome = self
            .run_hooks(
                &f,
                HookEvent::PreCompact,
                Some(trigger_name(trigger)),
                fields([
                    ("trigger", json!(trigger_name(trigger))),
                    (
                        "custom_instructions",
                        json!(instructions.clone().unwrap_or_default()),
                    ),
                ]),
            )
            .await;
        // PreCompact's stdout is the hook's instructions (decide.rs).
        let from_hooks = (!outcome.additional_context.is_empty())
            .then(|| outcome.additional_context.join("\n\n"));
        match (instructions, from_hooks) {
            (Some(a), Some(b)) if !a.trim().is_empty() => Some(format!("{a}\n\n{b}")),
            (_, Some(b)) => Some(b),
            (a, None) => a,
        }
    }

    /// Before a new history is written: `SessionStart` `compact` context joins its
    /// records; the returned job runs `PostCompact` once the history is written.
    pub(crate) async fn hooks_before_new_history(
        &self,
        l: &Loaded,
        trigger: Trigger,
        new_records: &mut Vec<RecordInput>,
    ) -> Option<PostCompact> {
        let f = Facts::of(&l.row);
        if f.disabled {
            return None;
        }
        new_records.extend(self.session_start_records(&f, "compact").await);
        self.hooks.mark_compacted(&f.id);
        let summary = new_records
            .iter()
            .find(|r| r.is_compact_summary)
            .map(|r| prompt_text(&r.content))
            .unwrap_or_default();
        Some(PostCompact {
            facts: f,
            trigger: trigger_name(trigger),
            summary,
        })
    }

    /// After a new history is written: `PostCompact`, fire-and-forget.
    pub(crate) fn hooks_after_new_history(&self, job: Option<PostCompact>) {
        let Some(job) = job else {
            return;
        };
        self.background(move |engine| {
            async move {
                engine
                    .run_hooks(
                        &job.facts,
                        HookEvent::PostCompact,
                        Some(job.trigger),
                        fields([
                            ("trigger", json!(job.trigger)),
                            ("compact_summary", json!(job.summary)),
                        ]),
                    )
                    .await;
            }
            .boxed()
        });
    }

    /// `InstructionsLoaded`, once per file, fire-and-forget.
    pub(crate) fn spawn_instructions_loaded(
        &self,
        sid: &str,
        paths: Vec<String>,
        load_reason: &'static str,
    ) {
        let sid = sid.to_string();
        self.background(move |engine| {
            async move {
                let Ok(f) = engine.hook_facts(&sid).await else {
                    return;
                };
                if f.disabled
                    || !engine
                        .hook_config(&f)
                        .has_event(HookEvent::InstructionsLoaded)
                {
                    return;
                }
                for p in paths {
                    let kind = memory_type(
                        Path::new(&p),
                        &engine.discovery.managed_root,
                        &engine.discovery.user_home,
                    );
                    engine
                        .run_hooks(
                            &f,
                            HookEvent::InstructionsLoaded,
                            Some(load_reason),
                            fields([
                                ("file_path", json!(p)),
                                ("memory_type", json!(kind)),
                                ("load_reason", json!(load_reason)),
                            ]),
                        )
                        .await;
                }
            }
            .boxed()
        });
    }

    /// `CwdChanged`, fire-and-forget.
    pub(crate) fn hooks_cwd_changed(&self, sid: &str, old_cwd: String, new_cwd: String) {
        let sid = sid.to_string();
        self.background(move |engine| {
            async move {
                if let Ok(f) = engine.hook_facts(&sid).await {
                    // The FileChanged watch list follows the cwd.
                    engine.hook_config(&f);
                    engine
                        .run_hooks(
                            &f,
                            HookEvent::CwdChanged,
                            None,
                            fields([("old_cwd", json!(old_cwd)), ("new_cwd", json!(new_cwd))]),
                        )
                        .await;
                }
            }
            .boxed()
        });
    }

    /// The watcher saw a path change: settings files are re-read (and the change
    /// announced); files named by `FileChanged` matchers fire `FileChanged`.
    pub(crate) fn hooks_on_watch(&self, ev: &WatchEvent) {
        let (path, removed) = match ev {
            WatchEvent::Changed(p) => (Some(p), false),
            WatchEvent::Removed(p) => (Some(p), true),
            WatchEvent::Rescan => (None, false),
            // Directories are watched for skills; hooks watch files.
            WatchEvent::DirChanged(_) => return,
        };
        let (mut settings_sessions, fired) = self.hooks.touched(path, removed);
        if settings_sessions.is_empty() && fired.is_empty() {
            return;
        }
        self.background(move |engine| {
            async move {
                settings_sessions.sort();
                settings_sessions.dedup();
                for sid in settings_sessions {
                    if let Ok(f) = engine.hook_facts(&sid).await {
                        engine.hook_config(&f);
                    }
                }
                for (sid, p, change) in fired {
                    let Ok(f) = engine.hook_facts(&sid).await else {
                        continue;
                    };
                    let name = p
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    engine
                        .run_hooks(
                            &f,
                            HookEvent::FileChanged,
                            Some(&name),
                            fields([
                                ("file_path", json!(p.display().to_string())),
                                ("event", json!(change)),
                            ]),
                        )
                        .await;
                }
            }
            .boxed()
        });
    }
}
