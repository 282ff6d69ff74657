//! What a cell holds once its session is loaded ([`Loaded`]): the row, the transcript,
//! the tools and every frozen decision a compile builds on, read from the store in one
//! transaction. The cell's lock keeps it in step with the store.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use ctxd_protocol::{ContentBlock, Record, ToolSpec};

use crate::engine::{Engine, Transcript, cache, sources};
use ctxd_pipeline::budget::Fate;
use ctxd_pipeline::microcompact::PinnedEdit;
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
    /// The selected output style as last found, with what it was looked up by (looked up
    /// again when the setting names another, the cwd moves or the trust list changes).
    pub(crate) output_style: Option<(StyleKey, Option<ctxd_pipeline::system::OutputStyle>)>,
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
    pub(crate) caps: sources::capabilities::Caps,
    /// Latched request flags, the previous request's cache key, recent fingerprints.
    pub(crate) cache: cache::CacheState,
    /// The platform the environment section names (the session's, else the daemon's).
    pub(crate) platform: String,
    /// The user's UTC offset, from the clock at the last compile's instant: local dates
    /// and times shown to the model use it (an input, never the machine's zone directly).
    pub(crate) utc_offset: chrono::FixedOffset,
    /// Memoized system sections.
    pub(crate) sections: sources::sections::SectionState,
    /// The session's revision this copy is current at (a shared store's other daemons
    /// bump it; 0 on SQLite).
    pub(crate) revision: u64,
    /// What the budget last looked at when it had nothing to decide: a compile that
    /// finds the same inputs skips the plan (it is a pure function of them).
    pub(crate) budget_settled: Option<BudgetInputs>,
    /// What the last collection read from the store, with the store's context generation
    /// at the time: the next collection reuses it while the generation stands.
    pub(crate) context_rows: Option<Arc<sources::files::ContextRows>>,
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

impl Engine {
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
                let caps =
                    sources::capabilities::Caps::new(ctxd_store::capabilities::load(c, &sid)?);
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
                    sections: sources::sections::SectionState {
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
}

/// What an output style was looked up by: its name, and where the project's styles
/// came from and whether they could be used (the sections look it up; the session keeps
/// it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StyleKey {
    pub(crate) name: String,
    pub(crate) cwd: String,
    pub(crate) trust_list: Option<crate::hooks::files::Stamp>,
}
