//! The compiler: the steps that read and write a session's stored state under its lock
//! (flags, instruction memo, capabilities, attachments, the budget's fates), then the
//! pure assembly, [`assemble`] — the one way the engine turns a session into a request,
//! for the next turn, for the usage picture, or for a new history a compaction weighs.
//! The turn that drives it (collapse, compaction, compiling again, the ending every
//! compile shares) is `turn.rs`.

use std::path::Path;

use ctxd_protocol::*;

use crate::engine::compaction::collapse;
use crate::engine::session::loaded::BudgetInputs;
use crate::engine::{Engine, Loaded, SessionCell};
use chrono::{DateTime, Utc};
use ctxd_pipeline::budget::{self, Decision, Fate, ToolLimits};
use ctxd_pipeline::compile::{CompileInput, Compiled, Effects, SessionView, compile};
use ctxd_pipeline::microcompact::CLEARED;
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

/// What a compile is asked for.
#[derive(Clone, Copy)]
pub(crate) struct Ask<'a> {
    /// A side request (`context.compile {side_request}`): decided like the next turn's,
    /// not recorded as one.
    pub(crate) side_request: bool,
    /// The compile's instant: what the clock-dependent stages read.
    pub(crate) now: DateTime<Utc>,
    /// The request flags the client sent, settled against the latch before assembly.
    pub(crate) flags: Option<&'a RequestFlags>,
    /// Whether the usage picture (`context.usage`) is computed too.
    pub(crate) usage_picture: bool,
}

impl Ask<'static> {
    /// The next turn's request at `now`, with no flags of the client's.
    pub(crate) fn at(now: DateTime<Utc>) -> Ask<'static> {
        Ask {
            side_request: false,
            now,
            flags: None,
            usage_picture: false,
        }
    }
}

impl Engine {
    pub(crate) fn resolve_now(&self, now: Option<&str>) -> Result<DateTime<Utc>> {
        match now {
            Some(t) => Ok(DateTime::parse_from_rfc3339(t)
                .map_err(|_| Error::invalid("now", "must be an RFC 3339 date-time"))?
                .with_timezone(&Utc)),
            None => Ok(self.clock.now()),
        }
    }

    /// One compile under the session's lock: the stateful steps (request flags against
    /// the latch, instruction memo, this turn's attachments, the budget's fates), then
    /// the assembly.
    pub(crate) async fn compile_now(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        ask: &Ask<'_>,
    ) -> Result<Compiled> {
        let prepared = self.prepare_compile(cell, l, ask).await?;
        Ok(prepared.fill(assemble(l, None, ask)?))
    }

    /// The stateful steps before a compile's pure assembly: the requested flags settled
    /// against the latch (stored), instruction memo, this turn's attachments (appended),
    /// the budget's fates (stored).
    pub(crate) async fn prepare_compile(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        ask: &Ask<'_>,
    ) -> Result<Prepared> {
        let (now, flags) = (ask.now, ask.flags);
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
            added: added
                .iter()
                .map(|r| AddedAttachment {
                    uuid: r.uuid.clone(),
                    kind: r.attachment_type().unwrap_or_default().to_string(),
                })
                .collect(),
            sources: collected.reports,
            latch_notes,
        })
    }

    /// Freezes what the compile decided (microcompact clearing, cache edits) before its
    /// request leaves: one transaction, then the in-memory copy.
    pub(crate) async fn store_effects(&self, l: &mut Loaded, e: &Effects) -> Result<()> {
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
            l.budget_settled = Some(BudgetInputs::of(l, limits));
            return Ok((Vec::new(), Vec::new()));
        }
        let projected = l.records.view();
        let folded = ctxd_pipeline::collapse::apply(&projected, &l.collapses);
        let view: Vec<&Record> = folded.iter().map(|c| c.as_ref()).collect();
        let plan = budget::plan(&view, &l.fates, &limits, &dir.display().to_string());
        if plan.decisions.is_empty() {
            l.budget_settled = Some(BudgetInputs::of(l, limits));
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
pub(crate) struct Prepared {
    replaced: Vec<String>,
    kept: Vec<String>,
    added: Vec<AddedAttachment>,
    sources: Vec<ctxd_protocol::SourceReport>,
    latch_notes: Vec<String>,
}

impl Prepared {
    pub(crate) fn fill(self, mut compiled: Compiled) -> Compiled {
        compiled.metadata.replaced = self.replaced;
        compiled.metadata.kept = self.kept;
        compiled.metadata.attachments_added = self.added.iter().map(|a| a.uuid.clone()).collect();
        compiled.metadata.added_attachments = self.added;
        compiled.metadata.attachment_sources = self.sources;
        compiled.metadata.cache.latch_notes = self.latch_notes;
        compiled
    }
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

impl<'a> History<'a> {
    /// Records kept in no index (a compaction's candidate, or the transcript with what
    /// the next compile would append): the assembly works their projection out itself.
    pub(crate) fn unindexed(
        records: &'a [Record],
        boundary_uuid: &'a str,
        pinned_edits: &'a [ctxd_pipeline::microcompact::PinnedEdit],
    ) -> History<'a> {
        History {
            records,
            lineage: None,
            projection: None,
            boundary: None,
            snip_boundaries: None,
            facts: &[],
            boundary_uuid,
            pinned_edits,
        }
    }
}

/// The pure part of a compile: the session's state and `history` (the transcript when
/// `None`) as the request `ask` names. Every compile in the engine goes through here.
pub(crate) fn assemble(
    l: &Loaded,
    history: Option<History<'_>>,
    ask: &Ask<'_>,
) -> Result<Compiled> {
    let view;
    let history = match history {
        Some(h) => h,
        None => {
            view = l.records.view();
            History {
                records: &l.records,
                lineage: Some(l.records.lineage()),
                projection: Some(&view),
                boundary: Some(l.records.boundary()),
                snip_boundaries: Some(l.records.snip_boundaries()),
                facts: l.records.facts(),
                boundary_uuid: &l.boundary_uuid,
                pinned_edits: &l.pinned_edits,
            }
        }
    };
    let Ask {
        side_request,
        now,
        usage_picture,
        ..
    } = *ask;
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
        .filter_map(|c| Some((*l.collapse_commits.get(&c.id)?, collapse::savings(c))))
        .collect();
    let undos: Vec<(u64, u64, u64)> = l
        .collapses
        .iter()
        .filter_map(|c| {
            let (committed, undone) = *l.collapse_undos.get(&c.id)?;
            Some((committed, undone, collapse::savings(c)))
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
mod tests;
