//! Context collapse in the engine: the collapse store and commit log in SQLite, staging
//! and committing as the estimate climbs, draining on a reported overflow, undo.

use ctxd_protocol::*;

use crate::engine::{Engine, Loaded, SessionCell};
use ctxd_pipeline::collapse::{self, Collapse, CollapseSettings, CollapseStatus};
use ctxd_pipeline::thresholds;
use ctxd_store::error::{Error, Result};

pub(crate) use collapse::savings;
use ctxd_store::collapses as store;

use crate::engine::session::loaded::loaded_mut;
use ctxd_providers::SummaryInput;

/// What a model is asked for when it summarises one collapsed span.
const SPAN_INSTRUCTIONS: &str = "This is only a short span of a longer conversation that will be folded out of view. \
Write a compact summary of it (a few lines): what was asked, what was done, files touched, \
errors, and any conclusion. Keep names, paths and numbers exact.";

/// Collapses of the current history: a compaction leaves the old ones behind.
pub(crate) fn live(l: &Loaded) -> Vec<Collapse> {
    let view = l.records.view();
    let present: std::collections::HashSet<&str> = view.iter().map(|r| r.uuid.as_str()).collect();
    l.collapses
        .iter()
        .filter(|c| {
            present.contains(c.first_uuid.as_str()) && present.contains(c.last_uuid.as_str())
        })
        .cloned()
        .collect()
}

/// A model's summary of a span to collapse; `None` when the call fails (staging must not
/// fail a compile: the span summary stands in).
async fn model_summary(
    m: &ctxd_providers::Summariser,
    l: &Loaded,
    plan: &collapse::SpanPlan<'_>,
) -> Option<String> {
    let messages = l.summary_messages(&plan.records);
    let input = SummaryInput {
        records: &plan.records,
        messages: &messages,
        custom_instructions: Some(SPAN_INSTRUCTIONS),
        head_truncated: false,
        max_summary_tokens: (plan.tokens / 10).clamp(50, 600),
    };
    match m.summarise(input).await {
        Ok(text) => Some(text),
        Err(e) => {
            tracing::warn!(session = %l.row.id, error = %e, "collapse summary failed; using the span summary");
            None
        }
    }
}

impl Engine {
    /// Stages and commits collapses for the current estimate (`drain`: commit every
    /// staged one regardless). Returns whether anything was committed.
    pub(crate) async fn run_collapse(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        estimate: u64,
        drain: bool,
    ) -> Result<bool> {
        let s = CollapseSettings::from(&l.row.settings.collapse);
        if !s.enabled {
            return Ok(false);
        }
        let window = thresholds::effective_window(&l.row.model);
        let shown = l.shown();
        let refs: Vec<&Record> = shown.iter().map(|c| c.as_ref()).collect();
        let current = live(l);
        let plans: Vec<_> = collapse::plan_stage(&refs, &current, estimate, window, &s)
            .into_iter()
            .filter(|p| {
                let id = collapse::span_id(&p.first_uuid, &p.last_uuid);
                !l.collapses.iter().any(|x| x.id == id)
            })
            .collect();
        // Summaries come from the session's summariser; the deterministic span summary
        // stands in when it is the embedded one or when a model call fails (staging must
        // not fail a compile).
        let model = self
            .summaries
            .summariser(l, cell, &self.env)
            .ok()
            .filter(|m| m.kind() != "embedded");
        let mut staged: Vec<Collapse> = Vec::with_capacity(plans.len());
        for plan in &plans {
            let summary = match &model {
                Some(m) => model_summary(m, l, plan).await,
                None => None,
            };
            // Ids derive from the span, so a replay writes the same model-facing bytes.
            staged.push(
                plan.to_collapse(
                    summary.unwrap_or_else(|| collapse::summarize_span(&plan.records)),
                ),
            );
        }
        let mut all = current;
        all.extend(staged.iter().cloned());
        let commit = collapse::to_commit(&all, estimate, window, &s, drain);
        if staged.is_empty() && commit.is_empty() {
            return Ok(false);
        }
        let sid = l.row.id.clone();
        let now = self.now_text();
        let seq = l.records.last().map_or(0, |r| r.seq);
        let (st, cm) = (staged.clone(), commit.clone());
        // Spans chosen on this copy: stale (another daemon wrote), they are not staged.
        self.store
            .write_current(&l.row.id, l.revision, move |tx| {
                for c in &st {
                    store::insert(tx, &sid, c)?;
                    store::log(tx, &sid, &c.id, "stage", &now)?;
                }
                for id in &cm {
                    store::commit(tx, &sid, id, seq)?;
                    store::log(tx, &sid, id, "commit", &now)?;
                }
                Ok(())
            })
            .await?;
        self.took_effect(cell, l, staged, &commit, seq);
        if !commit.is_empty() {
            self.activity.collapse();
        }
        Ok(!commit.is_empty())
    }

    /// The stored stagings and commits, in memory, then announced (stagings first).
    fn took_effect(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        staged: Vec<Collapse>,
        commit: &[String],
        seq: u64,
    ) {
        let event = |collapse_id: &str, status: &str| SessionEvent::CollapseChanged {
            session_id: l.row.id.clone(),
            collapse_id: collapse_id.to_string(),
            status: status.into(),
        };
        let events: Vec<SessionEvent> = staged
            .iter()
            .map(|c| event(&c.id, "staged"))
            .chain(commit.iter().map(|id| event(id, "committed")))
            .collect();
        l.collapses.extend(staged);
        for c in &mut l.collapses {
            if commit.contains(&c.id) {
                c.status = CollapseStatus::Committed;
            }
        }
        for id in commit {
            l.collapse_commits.insert(id.clone(), seq);
        }
        for e in events {
            self.emit(cell, e);
        }
    }

    pub async fn collapse_list(&self, sid: &str) -> Result<Vec<CollapseInfo>> {
        let s = sid.to_string();
        let list = self
            .store
            .read(move |c| {
                if !ctxd_store::sessions::exists(c, &s)? {
                    return Err(Error::SessionNotFound(s.clone()));
                }
                store::load(c, &s)
            })
            .await?;
        Ok(list.iter().map(Collapse::info).collect())
    }

    /// Undo: the span reappears in the view (the collapse stays in the log as undone).
    pub async fn collapse_undo(&self, p: CollapseUndoParams) -> Result<()> {
        let cell = self.cells.cell(&p.session_id);
        let mut guard = cell.state.lock().await;
        self.load_or_drop(&p.session_id, &mut guard).await?;
        let l = loaded_mut(&mut guard)?;
        if !l
            .collapses
            .iter()
            .any(|c| c.id == p.collapse_id && c.status != CollapseStatus::Undone)
        {
            return Err(Error::invalid(
                "collapse_id",
                "no staged or committed collapse has this id",
            ));
        }
        let (sid, id, now) = (p.session_id.clone(), p.collapse_id.clone(), self.now_text());
        // Seqs are gap-free from 1: the count is the last seq.
        let at = l.records.len() as u64;
        self.store
            .write(&p.session_id, move |tx| {
                store::undo(tx, &sid, &id, at)?;
                store::log(tx, &sid, &id, "undo", &now)
            })
            .await?;
        for c in &mut l.collapses {
            if c.id == p.collapse_id {
                c.status = CollapseStatus::Undone;
            }
        }
        // An undone collapse saves nothing any more; a restart loads only committed
        // ones, so the in-memory accounting must drop it too.
        // A usage anchor between the commit and now counted the view without the span,
        // which is back: the estimate adds it again until a newer anchor counts it.
        if let Some(committed) = l.collapse_commits.remove(&p.collapse_id) {
            l.collapse_undos
                .insert(p.collapse_id.clone(), (committed, at));
        }
        self.emit(
            &cell,
            SessionEvent::CollapseChanged {
                session_id: p.session_id,
                collapse_id: p.collapse_id,
                status: "undone".into(),
            },
        );
        Ok(())
    }
}
