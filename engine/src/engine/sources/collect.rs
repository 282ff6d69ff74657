//! Attachment collection: every compile asks each attachment source what this
//! turn adds, then appends the answers as records, in one transaction with the state they
//! consume, so every later compile, restart and fork replays the same bytes.
//!
//! * **Order.** Within one collection the attachments land in the order of [`ORDER`]
//!   (Claude Code's): queued input first (it is what the user said), the files and
//!   directories the prompt mentions with `@`, then the date, then
//!   what changed on disk, the instruction files that became relevant, plan mode, the
//!   task reminder, and the memories prefetched for the prompt last.
//! * **Isolation.** Sources run concurrently, each on its own: one that fails (or
//!   panics) is reported `failed` and adds nothing; the others still land. Nothing a
//!   source would consume (touched paths, queued input, a prefetch) is consumed unless its
//!   attachments are written. The three sources that need stored state (queued input,
//!   changed files, nested instructions) share one read of it, so a failed read fails
//!   those three and no other.
//! * **Time bound.** The whole collection gets `settings.attachments.collect_timeout_ms`
//!   (default [`DEFAULT_COLLECT_TIMEOUT`]); a source still running then is `skipped` for
//!   this compile and tries again at the next one. The compile never waits longer.
//! * Each source's run is reported in `metadata.attachment_sources`.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::task::Poll;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use ctxd_protocol::{Record, RecordInput, SessionEvent, SourceReport, SourceStatus};
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use std::sync::Arc;

use crate::engine::session::queue::queued_record;
use crate::engine::session::transcript::insert_batch;
use crate::engine::sources::files::{Stored, changed_files_found, date_change};
use crate::engine::sources::mentions::source_mentions;
use crate::engine::sources::source_input::{Effect, Found, SourceInput};
use crate::engine::{Engine, Loaded, SessionCell};
use ctxd_pipeline::{plan_mode, task_reminder};
use ctxd_store::context_state;
use ctxd_store::error::{Error, Result};

/// The kinds of attachments ctxd collects itself, in the order they take within a turn.
pub(crate) const ORDER: [&str; 8] = [
    QUEUED,
    AT_MENTIONS,
    DATE,
    CHANGED_FILES,
    NESTED,
    PLAN_MODE,
    TASK_REMINDER,
    RELEVANT_MEMORIES,
];

const QUEUED: &str = "queued_commands";
const AT_MENTIONS: &str = "at_mentions";
const DATE: &str = "date_change";
const CHANGED_FILES: &str = "changed_files";
const NESTED: &str = "nested_memory";
const PLAN_MODE: &str = "plan_mode";
const TASK_REMINDER: &str = "task_reminder";
const RELEVANT_MEMORIES: &str = "relevant_memories";

/// How long one compile may spend collecting attachments unless the session says.
pub(crate) const DEFAULT_COLLECT_TIMEOUT: Duration = Duration::from_millis(1000);

/// What a collection appended and how each source fared.
pub(crate) struct Collected {
    pub(crate) records: Vec<Record>,
    pub(crate) reports: Vec<SourceReport>,
}

/// Sources a test adds to every collection of its engine (given to the engine when it is
/// made), to see the time bound and the isolation at work.
#[cfg(test)]
#[derive(Clone, Copy, Default)]
pub(crate) struct SourceFaults {
    /// A source that never finishes: the bound is what ends the collection.
    pub(crate) stall: bool,
    /// A source that panics.
    pub(crate) panic: bool,
}

impl Engine {
    /// Runs every source within the session's time bound and appends what they found.
    pub(crate) async fn collect_attachments(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        now: DateTime<Utc>,
    ) -> Result<Collected> {
        let (found, reports) = self.run_sources(l, now, false).await;
        let records = self.write_found(cell, l, found).await?;
        Ok(Collected { records, reports })
    }

    /// The attachments the next compile's collection would append, found within the
    /// same time bound, with nothing appended or consumed. The prefetched memories are
    /// left out: looking at them would wait for, or use up, the prompt's prefetch.
    pub(crate) async fn pending_attachments(
        &self,
        l: &mut Loaded,
        now: DateTime<Utc>,
    ) -> Vec<RecordInput> {
        let (found, _) = self.run_sources(l, now, true).await;
        found.into_iter().flat_map(|f| f.records).collect()
    }

    /// Runs every source (but the memories' when `preview`) within the session's time
    /// bound: what each found, and how each fared.
    async fn run_sources(
        &self,
        l: &mut Loaded,
        now: DateTime<Utc>,
        preview: bool,
    ) -> (Vec<Found>, Vec<SourceReport>) {
        // The sources share the transcript; it is released before the appending below,
        // so that does not copy it.
        let records = l.records.clone();
        let view = records.view();
        let input = SourceInput {
            row: &l.row,
            records: &records,
            view,
            tools: &l.tools,
            mcp: &l.caps.state.mcp,
            announced_date: l
                .memo
                .as_ref()
                .map_or(&l.row.start_date, |m| &m.announced_date),
            now,
            utc_offset: l.utc_offset,
            ts: std::sync::OnceLock::new(),
        };
        let bound = l
            .row
            .settings
            .attachments
            .collect_timeout_ms
            .map_or(DEFAULT_COLLECT_TIMEOUT, Duration::from_millis);
        // The three sources that read the store share one read instead of three.
        // Queued input waits while a tool result is due.
        let queue = !ctxd_pipeline::records::awaiting_tool_results(&input.view);
        let stored = {
            let read = self.stored_for_collection(&input.row.id, queue, l.context_rows.clone());
            async move { read.await.map(Arc::new).map_err(|e| e.to_string()) }
                .boxed()
                .shared()
        };
        let read = stored.clone();
        let sources: Vec<(&'static str, BoxFuture<'_, Result<Found>>)> = vec![
            (QUEUED, source_queued(&input, stored.clone()).boxed()),
            (AT_MENTIONS, source_mentions(&input).boxed()),
            (DATE, async { source_date(&input) }.boxed()),
            (
                CHANGED_FILES,
                source_changed_files(&input, stored.clone()).boxed(),
            ),
            (NESTED, self.source_nested(&input, stored).boxed()),
            (PLAN_MODE, self.source_plan_mode(&input).boxed()),
            (
                TASK_REMINDER,
                async { source_task_reminder(&input) }.boxed(),
            ),
            (RELEVANT_MEMORIES, self.source_memories(&input).boxed()),
        ];
        debug_assert!(sources.iter().map(|s| s.0).eq(ORDER));
        let mut sources = sources;
        if preview {
            sources.retain(|(name, _)| *name != RELEVANT_MEMORIES);
        }
        #[cfg(test)]
        let sources = {
            let mut sources = sources;
            if self.source_faults.panic {
                sources.push(("test_panic", async { panic!("a source's own bug") }.boxed()));
            }
            if self.source_faults.stall {
                sources.push(("test_stall", futures::future::pending().boxed()));
            }
            sources
        };
        // All sources start together: each one's time is counted from here.
        let started = Instant::now();
        let runs = run_all(sources, bound, started).await;

        let mut reports = Vec::with_capacity(runs.len());
        let mut found: Vec<Found> = Vec::new();
        for (name, took, outcome) in runs {
            let (status, reason, count) = match outcome {
                Ok(f) => {
                    let n = ctxd_pipeline::saturate::u32_of(f.records.len());
                    found.push(f);
                    (SourceStatus::Ok, None, n)
                }
                Err((status, why)) => {
                    tracing::warn!(session = %l.row.id, source = name, reason = %why, "attachment source left out");
                    (status, Some(why), 0)
                }
            };
            reports.push(SourceReport {
                name: name.to_string(),
                status,
                micros: ctxd_pipeline::saturate::micros(took),
                attachments: count,
                reason,
            });
        }
        // Kept for the next collection (a read cut off by the time bound keeps none).
        if let Some(Ok(s)) = read.peek() {
            l.context_rows = Some(s.rows.clone());
        }
        drop(read);
        drop(input);
        drop(records);
        (found, reports)
    }

    /// Appends the found attachments (already in [`ORDER`]) and consumes their state,
    /// in one transaction; then the in-memory copy and the events.
    async fn write_found(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        found: Vec<Found>,
    ) -> Result<Vec<Record>> {
        let mut inputs: Vec<RecordInput> = Vec::new();
        let mut effects = Vec::new();
        for f in found {
            inputs.extend(f.records);
            effects.push(f.effect);
        }
        let mut date = None;
        let mut nested_paths: Vec<String> = Vec::new();
        let mut consumes_touched = false;
        let mut new_states = Vec::new();
        let mut removed = Vec::new();
        let mut queued = Vec::new();
        let mut prompt = None;
        let mut seen = Vec::new();
        for e in effects {
            match e {
                Effect::None => {}
                Effect::Files(f) => {
                    new_states = f.new_states;
                    removed = f.removed;
                }
                Effect::Nested(n) => {
                    nested_paths = n.paths;
                    consumes_touched = n.touched;
                }
                Effect::Date(d) => date = Some(d),
                Effect::Queued(ids) => queued = ids,
                Effect::Memories(p) => prompt = Some(p),
                Effect::Seen(s) => seen = s,
            }
        }
        let nothing_to_write =
            inputs.is_empty() && !consumes_touched && new_states.is_empty() && removed.is_empty();
        if nothing_to_write {
            if let Some(p) = prompt {
                self.memories.consumed(&l.row.id, &p);
            }
            return Ok(Vec::new());
        }
        let memo = l.memo.clone().map(|mut m| {
            if let Some(d) = &date {
                m.announced_date.clone_from(d);
            }
            m
        });
        let sid = l.row.id.clone();
        let ts = self.now_text();
        let watched: Vec<String> = seen.iter().map(|s| s.path.clone()).collect();
        let (np, rm, memo2) = (nested_paths.clone(), removed.clone(), memo.clone());
        // A file a mention showed is seen now, after any older stamp of it.
        let ns: Vec<_> = new_states.into_iter().chain(seen).collect();
        let built = self
            .store
            .write_current(&l.row.id, l.revision, move |tx| {
                if consumes_touched {
                    context_state::clear_touched(tx, &sid)?;
                }
                context_state::add_loaded(tx, &sid, &np)?;
                for s in &ns {
                    context_state::put_read_state(tx, &sid, s)?;
                }
                for p in &rm {
                    context_state::remove_read_state(tx, &sid, p)?;
                }
                if let Some(m) = &memo2 {
                    context_state::set_memo(tx, &sid, m)?;
                }
                ctxd_store::queued::remove(tx, &sid, &queued)?;
                if inputs.is_empty() {
                    return Ok(Vec::new());
                }
                insert_batch(tx, &sid, inputs, None, &ts)
            })
            .await?;
        l.memo = memo;
        let sid = l.row.id.clone();
        if let Some(p) = prompt {
            self.memories.consumed(&sid, &p);
        }
        for p in &removed {
            self.watches.unwatch(&sid, std::path::Path::new(p));
        }
        for p in &watched {
            self.watches.watch(&sid, std::path::Path::new(p));
        }
        if !nested_paths.is_empty() {
            self.emit(
                cell,
                SessionEvent::InstructionsLoaded {
                    session_id: sid.clone(),
                    reason: "nested".into(),
                    paths: nested_paths,
                },
            );
        }
        if !built.is_empty() {
            l.records.extend(built.iter().cloned());
            self.emit_appended(cell, &sid, &built);
        }
        Ok(built)
    }

    async fn source_nested(
        &self,
        input: &SourceInput<'_>,
        stored: SharedStored<'_>,
    ) -> Result<Found> {
        let stored = stored.await.map_err(Error::Storage)?;
        let mut n = self.gather_nested(input.row, &stored.rows).await?;
        let value = n.attachment.take();
        Ok(Found::of(value, input, Effect::Nested(n)))
    }

    async fn source_plan_mode(&self, input: &SourceInput<'_>) -> Result<Found> {
        let decide = |path: &str, exists| {
            plan_mode::decide(
                &input.view,
                input.records,
                input.row.settings.plan_mode,
                &plan_mode::PlanFile { path, exists },
            )
        };
        // Whether anything is said never depends on the file, only what is: the path is
        // made, and the disk asked (on the blocking pool, under the time bound), only
        // when there is something to say.
        if decide("", false).is_empty() {
            return Ok(Found::default());
        }
        let path = self.plan_file_path(input.row);
        let shown = path.display().to_string();
        let exists = tokio::task::spawn_blocking(move || path.is_file())
            .await
            .map_err(|e| Error::Internal(format!("plan file check: {e}")))?;
        Ok(Found::of(decide(&shown, exists), input, Effect::None))
    }

    /// The plan file the model is told about: the session's `plan_file` (relative to its
    /// cwd), else `HOME/sessions/SID/plan.md`.
    pub(crate) fn plan_file_path(
        &self,
        row: &ctxd_store::sessions::SessionRow,
    ) -> std::path::PathBuf {
        match &row.settings.plan_file {
            Some(p) => std::path::Path::new(&row.cwd).join(p),
            None => self.session_dir(&row.id).join("plan.md"),
        }
    }
}

/// How one source's run ended: what it found, or its status and why.
type Outcome = std::result::Result<Found, (SourceStatus, String)>;
/// A source's name, when its run ended, and how.
type Run = (&'static str, Duration, Outcome);

/// Polls every source, in turn, until each has finished or the time bound passed, and
/// reports each one's end in the order given. One timer serves them all, and none is
/// armed unless a source is still pending after its first poll: most collections end
/// within it.
async fn run_all<'a>(
    sources: Vec<(&'static str, BoxFuture<'a, Result<Found>>)>,
    bound: Duration,
    started: Instant,
) -> Vec<Run> {
    let mut slots: Vec<(&'static str, _, Option<(Duration, Outcome)>)> = sources
        .into_iter()
        .map(|(name, fut)| (name, AssertUnwindSafe(fut).catch_unwind(), None))
        .collect();
    let deadline = tokio::time::Instant::now() + bound;
    let mut timer = std::pin::pin!(tokio::time::sleep_until(deadline));
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (_, fut, end) in slots.iter_mut().filter(|s| s.2.is_none()) {
            match fut.poll_unpin(cx) {
                Poll::Pending => pending = true,
                Poll::Ready(r) => {
                    let outcome = match r {
                        Err(_) => Err((SourceStatus::Failed, "the source panicked".to_string())),
                        Ok(Err(e)) => Err((SourceStatus::Failed, e.to_string())),
                        Ok(Ok(found)) => Ok(found),
                    };
                    *end = Some((started.elapsed(), outcome));
                }
            }
        }
        if !pending || timer.as_mut().poll(cx).is_ready() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    slots
        .into_iter()
        .map(|(name, _, end)| {
            let (took, outcome) = end.unwrap_or_else(|| {
                let why = format!(
                    "still running after the collection's time bound ({} ms)",
                    bound.as_millis()
                );
                (started.elapsed(), Err((SourceStatus::Skipped, why)))
            });
            (name, took, outcome)
        })
        .collect()
}

/// A store read the sources share; its error as text (each source reports it).
type SharedStored<'a> = Shared<BoxFuture<'a, std::result::Result<Arc<Stored>, String>>>;

async fn source_queued(input: &SourceInput<'_>, stored: SharedStored<'_>) -> Result<Found> {
    let stored = stored.await.map_err(Error::Storage)?;
    if stored.queued.is_empty() {
        return Ok(Found::default());
    }
    let ids = stored.queued.iter().map(|e| e.queue_id.clone()).collect();
    Ok(Found {
        records: stored
            .queued
            .iter()
            .map(|e| queued_record(e, input.ts(), false))
            .collect(),
        effect: Effect::Queued(ids),
    })
}

async fn source_changed_files(input: &SourceInput<'_>, stored: SharedStored<'_>) -> Result<Found> {
    let stored = stored.await.map_err(Error::Storage)?;
    let mut f = changed_files_found(stored.changes.clone());
    let values = std::mem::take(&mut f.attachments);
    Ok(Found::of(values, input, Effect::Files(f)))
}

fn source_date(input: &SourceInput<'_>) -> Result<Found> {
    Ok(
        match date_change(input.announced_date, input.now, input.utc_offset) {
            Some((value, today)) => Found::of([value], input, Effect::Date(today)),
            None => Found::default(),
        },
    )
}

fn source_task_reminder(input: &SourceInput<'_>) -> Result<Found> {
    if input.row.settings.attachments.task_reminder == Some(false) {
        return Ok(Found::default());
    }
    let flavour = task_reminder::flavour(input.tools.iter().map(|t| t.name.as_str()));
    let value = task_reminder::decide(&input.view, input.records, flavour);
    Ok(Found::of(value, input, Effect::None))
}

#[cfg(test)]
mod tests;
