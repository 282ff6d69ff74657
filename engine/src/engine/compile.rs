//! The compile path: the steps that read and write a session's stored state under its
//! lock (flags, instruction memo, capabilities, attachments, the budget's fates), the
//! pure assembly, and what every compile ends with (effects, warning level, the cache
//! key kept). `session.rs` holds the session's lifecycle and transcript operations.

use std::path::Path;

use ctxd_protocol::*;

use super::{Engine, Loaded};
use ctxd_pipeline::autocompact::Trigger;
use ctxd_pipeline::budget::{self, Decision, Fate, ToolLimits};
use ctxd_pipeline::compile::{CompileInput, Compiled, Effects, SessionView, compile};
use ctxd_pipeline::microcompact::CLEARED;
use ctxd_pipeline::thresholds;
use ctxd_store::error::{Error, Result};
use ctxd_store::{cache_edits, fates, outputs};

/// Writes a persisted tool result. The same id always has the same content, so a file
/// already there with the right length was written before and is left alone (a replayed
/// decision never rewrites what the model was pointed at). The content goes to a
/// temporary file first and is renamed into place, and a failed write removes what it
/// began, so a full disk leaves neither a half nor an empty file behind.
pub(crate) async fn write_once(
    dir: &Path,
    file_name: &str,
    content: String,
) -> std::io::Result<()> {
    let dir = dir.to_path_buf();
    let file_name = file_name.to_string();
    tokio::task::spawn_blocking(move || {
        use std::io::Write;
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(&file_name);
        if std::fs::metadata(&path).is_ok_and(|m| m.len() == content.len() as u64) {
            return Ok(());
        }
        let tmp = dir.join(format!(".{file_name}.tmp"));
        let written = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(content.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    })
    .await
    .map_err(std::io::Error::other)?
}

/// Compiles tried on a shared store before another daemon's writes to the same session
/// are reported as a conflict.
const COMPILE_ATTEMPTS: u32 = 8;

/// Up to this many projected records a compile's pure assembly runs under the session's
/// lock: copying the session for the blocking pool and the two thread hops would cost
/// more than the assembly. Past it, the assembly runs on a copy without the lock, so
/// appends to the session do not wait for a long compile.
const INLINE_COMPILE_MAX_VIEW: usize = 2_000;

impl Engine {
    /// Compiles the next request. The steps that read and write the session's stored
    /// state run under its lock; the pure assembly too for a session of ordinary size, and
    /// on a copy without the lock past `INLINE_COMPILE_MAX_VIEW` projected records, so a
    /// long compile does not hold up appends to the session. The request describes the
    /// transcript up to `metadata.last_uuid`, whatever was appended meanwhile.
    pub async fn compile(&self, mut p: CompileParams) -> Result<Compiled> {
        self.on_thread(&mut p.session_id, &mut p.agent_id).await?;
        let mut compiled = self.compile_messages(&p).await?;
        if p.format == CompileFormat::OpenaiChat {
            compiled.body = openai_body(&compiled.body)?;
        }
        Ok(compiled)
    }

    async fn compile_messages(&self, p: &CompileParams) -> Result<Compiled> {
        let mut attempt = 0;
        loop {
            match self.compile_once(p).await {
                // A shared store: another daemon wrote the session between this one's
                // check of its copy and a write of what the compile decided from it
                // (attachments, fates, memos). Nothing was stored; the copy reloads and
                // the compile runs again, after a short random pause so two daemons
                // compiling one session at once do not keep colliding.
                Err(Error::Conflict { .. } | Error::WrittenElsewhere(_))
                    if self.store.shared() && attempt + 1 < COMPILE_ATTEMPTS =>
                {
                    attempt += 1;
                    let jitter = u64::from(uuid::Uuid::new_v4().as_bytes()[15] % 8);
                    tokio::time::sleep(std::time::Duration::from_millis(
                        (1 << attempt.min(5)) + jitter,
                    ))
                    .await;
                }
                r => return r,
            }
        }
    }

    async fn compile_once(&self, p: &CompileParams) -> Result<Compiled> {
        let cell = self.cells.cell(&p.session_id);
        let now = self.resolve_now(p.now.as_deref())?;
        let side = p.side_request;
        let flags = p.flags.as_ref();
        let (mut guard, mut compiled) = {
            let mut guard = cell.state.lock().await;
            self.load_or_drop(&p.session_id, &mut guard).await?;
            let l = super::loaded_mut(&mut guard)?;
            if l.records.view_len() <= INLINE_COMPILE_MAX_VIEW {
                let compiled = self.compile_steps(&cell, l, side, now, flags).await?;
                (guard, compiled)
            } else {
                let prepared = self.prepare_compile(&cell, l, now, flags).await?;
                let snapshot = l.clone();
                drop(guard);
                let decided = snapshot.decisions();
                let compiled =
                    tokio::task::spawn_blocking(move || compile_loaded(&snapshot, side, now))
                        .await
                        .map_err(|e| Error::Internal(format!("compile task: {e}")))??;
                let mut compiled = prepared.fill(compiled);
                let mut guard = cell.state.lock().await;
                // The session may have been unloaded meanwhile; the store has all it had.
                self.load_or_drop(&p.session_id, &mut guard).await?;
                let l = super::loaded_mut(&mut guard)?;
                if l.decisions() != decided {
                    // Another compile or a compaction froze decisions meanwhile: this
                    // compile's effects were decided without them, so decide again,
                    // under the lock. (Settling the flags again is idempotent.)
                    compiled = self.compile_steps(&cell, l, side, now, flags).await?;
                }
                (guard, compiled)
            }
        };
        let l = super::loaded_mut(&mut guard)?;
        if l.row.settings.collapse.enabled {
            let estimate = compiled.metadata.context.effective_tokens;
            if self.run_collapse(&cell, l, estimate, false).await? {
                compiled = self.compile_steps(&cell, l, side, now, flags).await?;
            }
        }
        if let Some(reason) = self.autocompact_due(l, &compiled).await? {
            match reason {
                Ok(()) => {
                    let pre = compiled.metadata.context.effective_tokens;
                    match self
                        .compact_locked(&cell, l, Trigger::Auto, None, now, pre)
                        .await
                    {
                        Ok(report) => {
                            compiled = self.compile_steps(&cell, l, side, now, flags).await?;
                            compiled.metadata.compaction_shortfall = shortfall_of(&report);
                            compiled.metadata.compaction = Some(report);
                        }
                        Err(e) => {
                            tracing::warn!(session = %l.row.id, error = %e, "autocompact failed");
                            compiled.metadata.autocompact_skipped =
                                Some(format!("autocompact failed: {e}"));
                        }
                    }
                }
                Err(why) => compiled.metadata.autocompact_skipped = Some(why),
            }
            if compiled.metadata.compaction.is_none() {
                compiled.metadata.compaction_shortfall = l.no_room.as_ref().map(|(_, s)| s.clone());
            }
        }
        self.finish_compile(&cell, l, compiled, side, now).await
    }

    pub(crate) fn resolve_now(&self, now: Option<&str>) -> Result<chrono::DateTime<chrono::Utc>> {
        match now {
            Some(t) => Ok(chrono::DateTime::parse_from_rfc3339(t)
                .map_err(|_| Error::invalid("now", "must be an RFC 3339 date-time"))?
                .with_timezone(&chrono::Utc)),
            None => Ok(self.clock.now()),
        }
    }

    /// The stages of one compile up to the pure assembly: request flags against the
    /// latch, instruction memo, this turn's attachments, the budget's fates.
    pub(crate) async fn compile_steps(
        &self,
        cell: &super::SessionCell,
        l: &mut Loaded,
        side_request: bool,
        now: chrono::DateTime<chrono::Utc>,
        flags: Option<&RequestFlags>,
    ) -> Result<Compiled> {
        let prepared = self.prepare_compile(cell, l, now, flags).await?;
        Ok(prepared.fill(compile_loaded(l, side_request, now)?))
    }

    /// The stateful steps before a compile's pure assembly: the requested flags settled
    /// against the latch (stored), instruction memo, this turn's attachments (appended),
    /// the budget's fates (stored).
    async fn prepare_compile(
        &self,
        cell: &super::SessionCell,
        l: &mut Loaded,
        now: chrono::DateTime<chrono::Utc>,
        flags: Option<&RequestFlags>,
    ) -> Result<Prepared> {
        l.utc_offset = self.clock.utc_offset(now);
        let latch_notes = self.settle_flags(l, flags).await?;
        self.refresh_memo(cell, l).await?;
        let mut added = self.announce_capabilities(cell, l, now).await?;
        self.refresh_sections(l, now).await?;
        let collected = self.collect_attachments(cell, l, now).await?;
        added.extend(collected.records);
        let (replaced, kept) = self.decide_budget(l).await?;
        Ok(Prepared {
            replaced,
            kept,
            added: added.iter().map(|r| r.uuid.clone()).collect(),
            sources: collected.reports,
            latch_notes,
        })
    }

    /// Blocking limit, effects, warning level: what every compile ends with.
    pub(crate) async fn finish_compile(
        &self,
        cell: &super::SessionCell,
        l: &mut Loaded,
        mut compiled: Compiled,
        side_request: bool,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Compiled> {
        let state = compiled.metadata.context.clone();
        self.announce_level(cell, l, &state, compiled.metadata.tokens.estimated_tokens);
        if state.at_blocking_limit {
            return Err(Error::PromptTooLong {
                estimated: state.effective_tokens,
                limit: state.blocking_limit,
            });
        }
        self.store_effects(l, &compiled.effects).await?;
        self.record_compile(l, &mut compiled, side_request, now);
        let m = &compiled.metadata;
        let attachments = compiled.projected_attachments;
        self.emit(
            cell,
            SessionEvent::Compiled {
                session_id: l.row.id.clone(),
                estimated_tokens: state.effective_tokens,
                effective_window: state.effective_window,
                percent_left: state.percent_left,
                message_count: m.message_count,
                attachments,
                request_sha256: m.request_sha256.clone(),
            },
        );
        Ok(compiled)
    }

    fn announce_level(
        &self,
        cell: &super::SessionCell,
        l: &mut Loaded,
        s: &ContextState,
        estimated: u64,
    ) {
        let level = thresholds::level(s);
        if level != l.level {
            l.level = level;
            self.emit(
                cell,
                SessionEvent::WarningStateChanged {
                    session_id: l.row.id.clone(),
                    level: level.to_string(),
                    percent_left: s.percent_left,
                    estimated_tokens: estimated,
                },
            );
        }
    }

    /// Freezes what the compile decided (microcompact clearing, cache edits) before its
    /// request leaves: one transaction, then the in-memory copy.
    async fn store_effects(&self, l: &mut Loaded, e: &Effects) -> Result<()> {
        if e.cleared.is_empty() && e.new_edit.is_none() && !e.reset_edits {
            return Ok(());
        }
        let sid = l.row.id.clone();
        let seq = l.records.last().map_or(0, |r| r.seq);
        let cleared: Vec<(String, Fate)> = e
            .cleared
            .iter()
            .map(|id| (id.clone(), Fate::Replaced(CLEARED.into())))
            .collect();
        let (edit, reset, boundary) = (e.new_edit.clone(), e.reset_edits, l.boundary_uuid.clone());
        let to_store = cleared.clone();
        self.store
            .write_current(&l.row.id, l.revision, move |tx| {
                fates::insert(tx, &sid, fates::MICROCOMPACT, &to_store, seq)?;
                if reset {
                    cache_edits::reset(tx, &sid)?;
                }
                if let Some(edit) = &edit {
                    cache_edits::push(tx, &sid, &boundary, edit, seq)?;
                }
                Ok(())
            })
            .await?;
        l.cleared.extend(cleared);
        if e.reset_edits {
            l.pinned_edits.clear();
        }
        if let Some(edit) = &e.new_edit {
            l.pinned_edits.push(edit.clone());
        }
        Ok(())
    }

    /// Decides the fate of every result this compile shows for the first time: writes
    /// persisted outputs (create-once), then stores all new fates in one transaction
    /// before anything is shown. A result whose file cannot be written (a full disk) is
    /// shown whole this time but gets no fate, so the next compile tries again.
    async fn decide_budget(&self, l: &mut Loaded) -> Result<(Vec<String>, Vec<String>)> {
        let sid = l.row.id.clone();
        let dir = self.tool_results_dir(&sid);
        let limits = ToolLimits::new(&l.all_tools(), &l.row.settings.tool_result_size_overrides);
        if l.budget_settled
            .as_ref()
            .is_some_and(|b| b.still_settled(l, &limits))
        {
            l.budget_settled = Some(super::BudgetInputs::of(l, limits));
            return Ok((Vec::new(), Vec::new()));
        }
        let projected = l.records.view();
        let folded = ctxd_pipeline::collapse::apply(&projected, &l.collapses);
        let view: Vec<&Record> = folded.iter().map(|c| c.as_ref()).collect();
        let plan = budget::plan(&view, &l.fates, &limits, &dir.display().to_string());
        if plan.decisions.is_empty() {
            l.budget_settled = Some(super::BudgetInputs::of(l, limits));
            return Ok((Vec::new(), Vec::new()));
        }
        let mut new_fates = Vec::with_capacity(plan.decisions.len());
        // A shared store holds the outputs too, for the other daemons' machines.
        let mut contents = Vec::new();
        let (mut replaced, mut kept) = (Vec::new(), Vec::new());
        for (id, decision) in plan.decisions {
            match decision {
                Decision::Keep => {
                    kept.push(id.clone());
                    new_fates.push((id, Fate::Kept));
                }
                Decision::Persist {
                    file_name,
                    content,
                    replacement,
                } => {
                    let shared = self.store.shared().then(|| content.clone());
                    match write_once(&dir, &file_name, content).await {
                        Ok(()) => {
                            if let Some(content) = shared {
                                contents
                                    .push((dir.join(&file_name).display().to_string(), content));
                            }
                            replaced.push(id.clone());
                            new_fates.push((id, Fate::Replaced(replacement)));
                        }
                        Err(e) => {
                            tracing::warn!(session = %sid, tool_use_id = %id, error = %e, "could not persist a tool result; showing it whole this time, retrying at the next compile");
                        }
                    }
                }
            }
        }
        if new_fates.is_empty() {
            return Ok((replaced, kept));
        }
        let seq = l.records.last().map_or(0, |r| r.seq);
        let to_store = new_fates.clone();
        let sid2 = sid.clone();
        // Decided on this copy: another daemon's decisions made meanwhile (their files
        // named under their homes) win, and this compile runs again on a fresh copy.
        self.store
            .write_current(&sid, l.revision, move |tx| {
                fates::insert(tx, &sid2, fates::BUDGET, &to_store, seq)?;
                for (path, content) in &contents {
                    outputs::put(tx, &sid2, path, content)?;
                }
                Ok(())
            })
            .await?;
        l.fates.extend(new_fates);
        Ok((replaced, kept))
    }
}

/// What the stateful steps of a compile report in its metadata.
struct Prepared {
    replaced: Vec<String>,
    kept: Vec<String>,
    added: Vec<String>,
    sources: Vec<ctxd_protocol::SourceReport>,
    latch_notes: Vec<String>,
}

impl Prepared {
    fn fill(self, mut compiled: Compiled) -> Compiled {
        compiled.metadata.replaced = self.replaced;
        compiled.metadata.kept = self.kept;
        compiled.metadata.attachments_added = self.added;
        compiled.metadata.attachment_sources = self.sources;
        compiled.metadata.cache.latch_notes = self.latch_notes;
        compiled
    }
}

/// The pure part of a compile, over a loaded session.
pub(crate) fn compile_loaded(
    l: &Loaded,
    side_request: bool,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Compiled> {
    compile_loaded_with(l, side_request, now, false)
}

/// [`compile_loaded`], optionally with the usage picture.
pub(crate) fn compile_loaded_with(
    l: &Loaded,
    side_request: bool,
    now: chrono::DateTime<chrono::Utc>,
    usage_picture: bool,
) -> Result<Compiled> {
    let view = l.records.view();
    let history = History {
        records: &l.records,
        lineage: Some(l.records.lineage()),
        projection: Some(&view),
        boundary: Some(l.records.boundary()),
        snip_boundaries: Some(l.records.snip_boundaries()),
        facts: l.records.facts(),
        boundary_uuid: &l.boundary_uuid,
        pinned_edits: &l.pinned_edits,
    };
    compile_records(l, history, side_request, now, usage_picture)
}

/// What a compile shows: the transcript, or a new history a compaction is weighing.
pub(crate) struct History<'a> {
    pub(crate) records: &'a [Record],
    /// Its lineage, when it is the transcript.
    pub(crate) lineage: Option<ctxd_pipeline::message::Lineage>,
    /// Its projection, when kept up to date (the transcript's).
    pub(crate) projection: Option<&'a [&'a Record]>,
    /// Where its last compact boundary is, when kept up to date (the transcript's).
    pub(crate) boundary: Option<usize>,
    /// Where the snip boundaries after it are, when kept up to date (the transcript's).
    pub(crate) snip_boundaries: Option<&'a [usize]>,
    /// Per record, what normalising needs to know of it, when kept (the transcript's).
    pub(crate) facts: &'a [ctxd_pipeline::normalize::RecordFacts],
    /// Its last compact boundary: request flags latch per history.
    pub(crate) boundary_uuid: &'a str,
    pub(crate) pinned_edits: &'a [ctxd_pipeline::microcompact::PinnedEdit],
}

/// The pure part of a compile over the session's state and `history`.
pub(crate) fn compile_records(
    l: &Loaded,
    history: History<'_>,
    side_request: bool,
    now: chrono::DateTime<chrono::Utc>,
    usage_picture: bool,
) -> Result<Compiled> {
    let History {
        records,
        lineage,
        projection,
        boundary,
        snip_boundaries,
        facts,
        boundary_uuid,
        pinned_edits,
    } = history;
    // A real compile has settled its history's flags first. A new history a compaction
    // weighs has none yet: it is weighed with the flags the client sent last, which a
    // client that keeps sending them gets again (the cache markers' TTL is in the bytes).
    let flags = match &l.cache.latch {
        Some(latched) if latched.boundary_uuid != boundary_uuid => {
            l.cache.flags(&latched.boundary_uuid)
        }
        _ => l.cache.flags(boundary_uuid),
    };
    let commits: Vec<(u64, u64)> = l
        .collapses
        .iter()
        .filter_map(|c| Some((*l.collapse_commits.get(&c.id)?, super::collapse::savings(c))))
        .collect();
    let undos: Vec<(u64, u64, u64)> = l
        .collapses
        .iter()
        .filter_map(|c| {
            let (committed, undone) = *l.collapse_undos.get(&c.id)?;
            Some((committed, undone, super::collapse::savings(c)))
        })
        .collect();
    let row = &l.row;
    let tools = l.tools_to_send();
    let mcp_instructions = l.mcp_system_section();
    let input = CompileInput {
        session: SessionView {
            model: &row.model,
            settings: &row.settings,
            system: row.system.as_ref(),
            cwd: &row.cwd,
            additional_directories: &row.additional_directories,
            start_date: &row.start_date,
            git_snapshot: row.git_snapshot.as_deref(),
            claude_md: l.memo.as_ref().and_then(|m| m.claude_md.as_deref()),
            mcp_instructions: mcp_instructions.as_deref(),
            platform: row.settings.platform.as_deref().unwrap_or(&l.platform),
            section_memo: l.sections.texts_for(boundary_uuid),
            utc_offset: l.utc_offset,
            previous_uncached: l.cache.recent.last().map(|f| &f.uncached),
            output_style: l.selected_output_style(),
        },
        records,
        lineage,
        projection,
        boundary,
        snip_boundaries,
        facts,
        tools: &tools,
        rejected_media: &l.rejected_media,
        fates: &l.fates,
        cleared: &l.cleared,
        pinned_edits,
        collapses: &l.collapses,
        collapse_commits: &commits,
        collapse_undos: &undos,
        now,
        side_request,
        flags: &flags,
        previous: l.cache.previous.as_deref(),
        previous_digest: l.cache.digest.as_ref(),
        previous_wire: l.cache.wire.as_ref(),
        usage_picture,
    };
    compile(&input).map_err(|e| Error::Internal(format!("serialise request: {e}")))
}

#[cfg(test)]
#[path = "compile_tests.rs"]
mod tests;

/// The Chat Completions form of a compiled Messages API body.
pub(crate) fn openai_body(body: &str) -> Result<String> {
    let v: serde_json::Value = serde_json::from_str(body)
        .map_err(|e| Error::Internal(format!("the compiled body is not JSON: {e}")))?;
    serde_json::to_string(&ctxd_pipeline::openai_chat::translate(&v))
        .map_err(|e| Error::Internal(e.to_string()))
}

/// What a compile reports when its compaction left more than the target.
pub(crate) fn shortfall_of(report: &CompactionReport) -> Option<CompactionShortfall> {
    (report.post_tokens > report.target_tokens).then(|| CompactionShortfall {
        target_tokens: report.target_tokens,
        best_tokens: report.post_tokens,
        reason: format!(
            "the new history (~{} tokens) is above half the autocompact threshold even with the tightest caps",
            report.post_tokens
        ),
    })
}
