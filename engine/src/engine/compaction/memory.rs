//! Session memory: the notes document, background extraction after model responses,
//! external workers, and session-memory compact (tried by autocompact before the full
//! compact).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use ctxd_protocol::*;
use futures::FutureExt;
use tokio::sync::Notify;

use crate::engine::compaction::compact;
use crate::engine::session::loaded::summary_messages;
use crate::engine::{Engine, Loaded, SessionCell};
use ctxd_pipeline::autocompact::{self, Trigger};
use ctxd_pipeline::budget;
use ctxd_pipeline::session_memory as sm;
use ctxd_providers::{Summariser, SummaryInput};
use ctxd_store::error::{Error, Result};
use ctxd_store::memory;

/// An extraction that runs longer than this is abandoned.
const EXTRACTION_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a session-memory compact waits for a running extraction.
const WAIT_FOR_EXTRACTION: Duration = Duration::from_secs(15);

/// The extractions running, one per session at most, and how to wait for each.
#[derive(Default)]
pub(crate) struct Extractions(std::sync::Mutex<std::collections::HashMap<String, Arc<Extraction>>>);

/// One running extraction.
#[derive(Debug, Default)]
pub(crate) struct Extraction {
    done: Notify,
    /// It has taken its copy of the transcript and holds the session's lock no more. One
    /// that has not may be waiting for that lock, so whoever holds it must not wait for
    /// the extraction.
    copied: AtomicBool,
}

impl Extractions {
    fn map(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Arc<Extraction>>> {
        // Plain map operations: a panic elsewhere leaves it whole.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the session has an extraction running.
    fn is_running(&self, sid: &str) -> bool {
        self.map().contains_key(sid)
    }

    /// The session's running extraction, to wait for.
    fn running(&self, sid: &str) -> Option<Arc<Extraction>> {
        self.map().get(sid).cloned()
    }

    /// Claims the session's one extraction slot: `Ok(x)` when this caller now runs the
    /// extraction (and must call [`Engine::run_claimed`]), `Err(x)` for the one already
    /// running. Synchronous, so an append that starts an extraction has claimed it before
    /// it is answered.
    fn claim(&self, sid: &str) -> std::result::Result<Arc<Extraction>, Arc<Extraction>> {
        let mut map = self.map();
        if let Some(x) = map.get(sid) {
            return Err(x.clone());
        }
        let x = Arc::new(Extraction::default());
        map.insert(sid.to_string(), x.clone());
        Ok(x)
    }

    /// The session's extraction took its copy and let the session's lock go.
    fn copied(&self, sid: &str) {
        if let Some(x) = self.map().get(sid) {
            x.copied.store(true, Ordering::Release);
        }
    }

    /// Frees the slot `claim` gave and wakes those waiting on it.
    fn release(&self, sid: &str, x: &Extraction) {
        self.map().remove(sid);
        x.done.notify_waiters();
    }

    /// Waits, at most `limit`, for the extraction `x` of `sid` to end. With
    /// `holding_lock` (the caller holds the session's lock) an extraction that has not
    /// taken its copy yet is not waited for: it would be waiting for that lock.
    async fn wait(&self, sid: &str, x: &Extraction, limit: Duration, holding_lock: bool) {
        if holding_lock && !x.copied.load(Ordering::Acquire) {
            return;
        }
        let ended = x.done.notified();
        tokio::pin!(ended);
        // Registered before looking: `release` removes the slot, then wakes whoever is
        // registered, so an extraction still in the map after this wakes us when it ends.
        ended.as_mut().enable();
        let current = self.map().get(sid).is_some_and(|y| std::ptr::eq(&**y, x));
        if current {
            let _ = tokio::time::timeout(limit, ended).await;
        }
    }
}

impl Engine {
    pub(crate) fn memory_path(&self, sid: &str) -> PathBuf {
        self.session_dir(sid)
            .join("session-memory")
            .join("summary.md")
    }

    /// Mirrors the memory document to `summary.md` (the store is the source of truth; a
    /// failed mirror is only logged).
    pub(crate) async fn mirror_memory(&self, sid: &str, document: String) {
        let path = self.memory_path(sid);
        let mirrored = tokio::task::spawn_blocking(move || {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let tmp = path.with_extension("md.tmp");
            std::fs::write(&tmp, document)?;
            std::fs::rename(&tmp, &path)
        })
        .await;
        if !matches!(mirrored, Ok(Ok(()))) {
            tracing::warn!(session = %sid, "could not mirror the session memory to disk");
        }
    }

    /// [`Engine::mirror_memory`] when `summary.md` is not the document already.
    pub(crate) async fn mirror_if_changed(&self, sid: &str, document: &str) {
        if !std::fs::read_to_string(self.memory_path(sid)).is_ok_and(|t| t == document) {
            self.mirror_memory(sid, document.to_string()).await;
        }
    }

    pub async fn memory_get(&self, sid: &str) -> Result<MemoryGetResponse> {
        let s = sid.to_string();
        let row = self
            .store
            .read(move |c| {
                if !ctxd_store::sessions::exists(c, &s)? {
                    return Err(Error::SessionNotFound(s.clone()));
                }
                memory::get(c, &s)
            })
            .await?;
        let extracting = self.extractions.is_running(sid);
        // Another daemon may have written it: the mirror here follows the store.
        if self.store.shared()
            && let Some(m) = &row
        {
            self.mirror_if_changed(sid, &m.document).await;
        }
        Ok(match row {
            Some(m) => MemoryGetResponse {
                document: m.document,
                version: m.version,
                last_summarized_uuid: m.last_summarized_uuid,
                path: self.memory_path(sid).display().to_string(),
                writer: Some(m.writer),
                updated_at: Some(m.updated_at),
                extracting,
            },
            None => MemoryGetResponse {
                document: sm::template(),
                version: 0,
                last_summarized_uuid: None,
                path: self.memory_path(sid).display().to_string(),
                writer: None,
                updated_at: None,
                extracting,
            },
        })
    }

    /// Writes a new version (optimistic) and mirrors it to `summary.md`.
    pub async fn memory_update(
        &self,
        p: MemoryUpdateParams,
        tokens_at: Option<u64>,
    ) -> Result<u64> {
        let sid = p.session_id.clone();
        let writer = p.writer.clone().unwrap_or_else(|| "client".into());
        let document = sm::enforce_caps(&p.document);
        let now = self.now_text();
        let (s, d, w) = (sid.clone(), document.clone(), writer.clone());
        let version = self
            .store
            .write(&sid, move |tx| {
                if !ctxd_store::sessions::exists(tx, &s)? {
                    return Err(Error::SessionNotFound(s.clone()));
                }
                let current = memory::get(tx, &s)?;
                let row = memory::MemoryRow {
                    document: d,
                    version: 0,
                    last_summarized_uuid: p.last_summarized_uuid.clone().or_else(|| {
                        current
                            .as_ref()
                            .and_then(|c| c.last_summarized_uuid.clone())
                    }),
                    tokens_at_extraction: tokens_at
                        .or_else(|| current.as_ref().and_then(|c| c.tokens_at_extraction)),
                    writer: w,
                    updated_at: now,
                };
                memory::put(tx, &s, p.expected_version, &row)
            })
            .await?;
        self.mirror_memory(&sid, document).await;
        let cell = self.cells.cell(&sid);
        self.emit(
            &cell,
            SessionEvent::MemoryUpdated {
                session_id: sid,
                version,
                writer,
            },
        );
        Ok(version)
    }

    /// Post-sampling hook: after a main-thread assistant record was appended, decide
    /// whether session memory is due and start (or announce) an extraction. Never waits.
    pub(crate) async fn after_response(&self, cell: &SessionCell, l: &Loaded) {
        if l.row.settings.memory.extractor == MemoryExtractor::Off {
            return;
        }
        let sid = l.row.id.clone();
        let s = sid.clone();
        let Ok(mem) = self.store.read(move |c| memory::get(c, &s)).await else {
            return;
        };
        let context = l.records.estimate().total;
        let at_last = mem.as_ref().and_then(|m| m.tokens_at_extraction);
        // The tokens alone rule most appends out: then the turns are not walked at all.
        if !sm::extraction_due(context, at_last, u32::MAX, false) {
            return;
        }
        let view = l.records.view();
        let since = mem.as_ref().and_then(|m| m.last_summarized_uuid.clone());
        let calls = sm::tool_calls_since(&view, since.as_deref());
        let due = sm::extraction_due(context, at_last, calls, sm::last_turn_had_tool_call(&view));
        if !due {
            return;
        }
        match l.row.settings.memory.extractor {
            MemoryExtractor::External => self.emit(
                cell,
                SessionEvent::ExtractionDue {
                    session_id: sid,
                    since_uuid: since,
                    context_tokens: context,
                    version: mem.map_or(0, |m| m.version),
                },
            ),
            MemoryExtractor::Daemon => {
                if !self.runs_background() {
                    return;
                }
                // One at a time per session; claimed before the append is answered.
                let Ok(claimed) = self.extractions.claim(&sid) else {
                    return;
                };
                self.background(move |engine| {
                    async move {
                        if let Err(e) = engine.run_claimed(&sid, claimed).await {
                            tracing::warn!(session = %sid, error = %e, "session memory extraction failed");
                        }
                    }
                    .boxed()
                });
            }
            MemoryExtractor::Off => {}
        }
    }

    /// Runs one extraction for the session and writes the result. At most one runs per
    /// session; a second call waits for the running one instead.
    pub async fn extract_now(&self, sid: &str) -> Result<u64> {
        match self.extractions.claim(sid) {
            Ok(claimed) => self.run_claimed(sid, claimed).await,
            Err(running) => {
                self.extractions
                    .wait(sid, &running, EXTRACTION_TIMEOUT, false)
                    .await;
                Ok(self.memory_get(sid).await?.version)
            }
        }
    }

    /// Runs the extraction this caller claimed, then frees the slot and wakes waiters.
    async fn run_claimed(&self, sid: &str, claimed: Arc<Extraction>) -> Result<u64> {
        let result = tokio::time::timeout(EXTRACTION_TIMEOUT, self.extract_inner(sid)).await;
        self.extractions.release(sid, &claimed);
        self.activity.extraction(matches!(result, Ok(Ok(_))));
        match result {
            Ok(r) => r,
            Err(_) => Err(Error::Internal(format!(
                "session memory extraction abandoned after {}s",
                EXTRACTION_TIMEOUT.as_secs()
            ))),
        }
    }

    async fn extract_inner(&self, sid: &str) -> Result<u64> {
        let mem = self.memory_get(sid).await?;
        // What to read, taken under the session lock and released at once so appends and
        // compiles never wait for the extractor: only the records after the last
        // summarised one are copied.
        let cell = self.cells.cell(sid);
        let (copied, context, last, cfg, row_model, rejected) = {
            let mut guard = cell.state.lock().await;
            self.load_or_drop(sid, &mut guard).await?;
            let Some(l) = guard.as_ref() else {
                return Err(Error::Internal("session state missing after load".into()));
            };
            // The projection, not the shown history: fates change what results say,
            // never which records there are or how calls pair with results.
            let view = l.records.view();
            let start = sm::after(&view, mem.last_summarized_uuid.as_deref());
            if start >= view.len() {
                return Ok(mem.version);
            }
            (
                budget::apply_from(&view, start, &l.shown_fates())
                    .into_iter()
                    .map(ctxd_pipeline::projection::Shown::into_owned)
                    .collect::<Vec<Record>>(),
                // The gate's own measure (`after_response`), so the next gate compares
                // like with like.
                l.records.estimate().total,
                sm::safe_last_summarized(&view),
                self.summaries.resolved(l)?,
                l.row.model.clone(),
                l.rejected_media.clone(),
            )
        };
        self.extractions.copied(sid);
        let new: Vec<&Record> = copied.iter().collect();
        let new = new.as_slice();
        let summariser = Summariser::with_env(&cfg, None, self.env.clone())
            .map_err(|e| Error::CompactionFailed(e.to_string()))?;
        let messages = summary_messages(new, &row_model, &rejected);
        let document = summariser
            .extract(
                &mem.document,
                SummaryInput {
                    records: new,
                    messages: &messages,
                    custom_instructions: None,
                    head_truncated: false,
                    max_summary_tokens: sm::MAX_TOTAL_TOKENS,
                },
            )
            .await
            .map_err(|e| Error::CompactionFailed(format!("extraction: {e}")))?;
        self.memory_update(
            MemoryUpdateParams {
                session_id: sid.to_string(),
                document,
                expected_version: mem.version,
                last_summarized_uuid: last,
                writer: Some(format!("ctxd:{}", summariser.kind())),
            },
            Some(context),
        )
        .await
    }

    /// Session-memory compact: the memory document as the summary and the raw tail
    /// after `last_summarized_uuid` kept verbatim. `Ok(Err(why))` means "give up, do the full
    /// compact", with the reason (no memory, still the template, the id not in view, or
    /// still too big).
    pub(crate) async fn session_memory_compact(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        now: DateTime<Utc>,
        pre_tokens: u64,
    ) -> Result<std::result::Result<CompactionReport, String>> {
        if l.row.settings.memory.compact == Some(false)
            || l.row.settings.memory.extractor == MemoryExtractor::Off
        {
            return Ok(Err("session-memory compact is off for this session".into()));
        }
        let started = Instant::now();
        // Called under the session's lock: an extraction still waiting for it to take
        // its copy is not waited for (it could not go on before this compaction ends).
        if let Some(running) = self.extractions.running(&l.row.id) {
            self.extractions
                .wait(&l.row.id, &running, WAIT_FOR_EXTRACTION, true)
                .await;
        }
        let sid = l.row.id.clone();
        let s = sid.clone();
        let Some(mem) = self.store.read(move |c| memory::get(c, &s)).await? else {
            return Ok(Err("no session memory yet".into()));
        };
        // Without a last summarised record (e.g. a resumed import) nothing says which
        // part of the history the notes cover: be conservative and fall back.
        let Some(last) = mem.last_summarized_uuid.clone() else {
            return Ok(Err("the memory names no last summarised record".into()));
        };
        if sm::is_template(&mem.document) {
            return Ok(Err("the memory is still the empty template".into()));
        }
        let budget = compact::room_budget(l);
        let path = self.memory_path(&sid).display().to_string();
        let restore_skipped;
        let (best, summarised_records, kept_records, summary_chars) = {
            let view = l.records.view();
            let shown = l.shown();
            let refs: Vec<&Record> = shown.iter().map(|c| c.as_ref()).collect();
            // After a compaction the view holds copies of the kept records, not the
            // records the notes were written up to: find where the notes end in it.
            let last = covered_up_to(&refs, &l.records, &last).unwrap_or(last);
            if sm::keep_start(&refs, &last, budget.keep).is_none() {
                return Ok(Err(format!(
                    "the last summarised record {last} is not in the current history"
                )));
            }
            // Files read recently; each try leaves out those its kept tail shows.
            let compact::Restorable { files, skipped } = compact::read_files(
                autocompact::recently_read(&refs, autocompact::RESTORE_MAX_FILES * 2),
                crate::discovery::workspace_roots(&l.row.cwd, &l.row.additional_directories),
            )
            .await?;
            restore_skipped = skipped;
            let reannounced = self.reannounced_after_compaction(l).await;
            let ts = ctxd_pipeline::clock::rfc3339(now);
            // (summarised, kept, summary chars) of each level tried.
            let mut sizes: Vec<(u64, u64, u64)> = Vec::new();
            let history = SmHistory {
                shown: &refs,
                view: &view,
                last: &last,
                document: &mem.document,
                path: &path,
                files: &files,
                pre_tokens,
                ts: &ts,
            };
            let best = compact::tightest(budget.target, |level| {
                let b = budget.tightened(level);
                let t = history.new_history(&b);
                sizes.push(t.sizes);
                compact::Candidate::build(l, t.head, &t.files, &reannounced, &b, level, &ts, now)
            })?;
            let (summarised, kept, chars) =
                sizes.get(best.level as usize).copied().unwrap_or_default();
            (best, summarised, kept, chars)
        };
        if best.estimate > budget.target {
            return Ok(Err(format!(
                "the notes and the kept tail leave ~{} tokens, more than half the autocompact threshold ({})",
                best.estimate, budget.target
            )));
        }
        let level = best.level;
        let restored_paths = best.restored.clone();
        let (boundary_uuid, post_tokens) = self
            .write_new_history(cell, l, best, Trigger::Auto, pre_tokens, now)
            .await?;
        Ok(Ok(CompactionReport {
            trigger: Trigger::Auto.as_str().into(),
            boundary_uuid,
            pre_tokens,
            post_tokens,
            summariser: "session_memory".into(),
            summary_chars,
            summarised_records,
            head_truncated_rounds: 0,
            restored_files: restored_paths,
            restore_skipped,
            micros: ctxd_pipeline::saturate::micros(started.elapsed()),
            kind: "session_memory".into(),
            kept_records,
            session_memory_skipped: None,
            target_tokens: budget.target,
            tightenings: level,
        }))
    }
}

/// What a session-memory compaction builds its new history from.
struct SmHistory<'a> {
    /// The projection as the model sees it (fates applied), one to one with `view`.
    shown: &'a [&'a Record],
    /// The projection's own records.
    view: &'a [&'a Record],
    /// The last record the memory summarises.
    last: &'a str,
    document: &'a str,
    /// Where the memory file lives, named in the summary.
    path: &'a str,
    /// Files read recently, to restore after the boundary.
    files: &'a [compact::ReadFile],
    pre_tokens: u64,
    ts: &'a str,
}

/// One try: the new history's head (boundary, summary, kept tail), the files to restore,
/// and (summarised records, kept records, summary chars).
struct SmTry {
    head: Vec<RecordInput>,
    files: Vec<compact::ReadFile>,
    sizes: (u64, u64, u64),
}

impl SmHistory<'_> {
    /// The new history under `b`'s caps: the memory as the summary, the records after
    /// the last summarised one kept verbatim (as far as `b.keep` allows).
    fn new_history(&self, b: &autocompact::RoomBudget) -> SmTry {
        let refs = self.shown;
        let keep = sm::keep_start(refs, self.last, b.keep).unwrap_or(refs.len());
        let summary = sm::for_summary(self.document, b.notes_section_tokens, self.path);
        let tail = without_system(&refs[keep..]);
        let summarised = without_system(&refs[..keep]);
        let mut data = autocompact::boundary_data(
            Trigger::Auto,
            self.pre_tokens,
            &summarised,
            "session_memory",
            0,
        );
        data["kind"] = serde_json::json!("session_memory");
        data["kept_from_uuid"] = serde_json::json!(tail.first().map(|r| r.uuid.clone()));
        let mut head = autocompact::head_records(
            data,
            autocompact::summary_message(&summary, !tail.is_empty(), Trigger::Auto),
            self.ts,
        );
        // The kept tail is re-appended after the boundary (the transcript is append-only),
        // same content and tool ids, so frozen fates replay the same bytes. `shown` maps
        // the projection one to one, so the originals sit at the same indices.
        head.extend(
            without_system(&self.view[keep..])
                .into_iter()
                .map(tail_copy),
        );
        let in_tail = autocompact::recently_read(&tail, usize::MAX / 4);
        let files = self
            .files
            .iter()
            .filter(|(p, _, _)| !in_tail.contains(p))
            .take(autocompact::RESTORE_MAX_FILES)
            .cloned()
            .collect();
        SmTry {
            head,
            files,
            sizes: (
                summarised.len() as u64,
                tail.len() as u64,
                summary.chars().count() as u64,
            ),
        }
    }
}

fn without_system<'r>(records: &[&'r Record]) -> Vec<&'r Record> {
    records
        .iter()
        .copied()
        .filter(|r| r.kind != RecordKind::System)
        .collect()
}

/// A kept-tail record re-appended after the boundary: same content, kind, ids and
/// timestamp, no usage (it measured the old history), marked as a copy.
pub(crate) fn tail_copy(original: &Record) -> RecordInput {
    RecordInput {
        uuid: None,
        parent_uuid: None,
        kind: Some(original.kind),
        timestamp: Some(original.timestamp.clone()),
        content: original.content.clone(),
        message_id: original.message_id.clone(),
        model: original.model.clone(),
        stop_reason: original.stop_reason.clone(),
        usage: None,
        foreign_usage: false,
        message: None,
        message_extra: original.message_extra.clone(),
        is_meta: original.is_meta,
        is_virtual: false,
        is_sidechain: false,
        is_compact_summary: original.is_compact_summary,
        subtype: None,
        attachment: original.attachment.clone(),
        data: None,
        meta: Some(serde_json::json!({ autocompact::COPIED_FROM: original.uuid })),
    }
}

/// The last record of `view` the notes cover, when they were written up to `last`: the
/// record itself when the view holds it; else, after a compaction, the last one that
/// stands for a record at or before it (a copy of one, the boundary and the summary,
/// which the notes supersede). `None` when `last` is unknown.
fn covered_up_to(view: &[&Record], records: &[Record], last: &str) -> Option<String> {
    if view.iter().any(|r| r.uuid == last) {
        return Some(last.to_string());
    }
    let seq_of = |uuid: &str| records.iter().find(|r| r.uuid == uuid).map(|r| r.seq);
    let last_seq = seq_of(last)?;
    view.iter()
        .rev()
        .find(|r| {
            ctxd_pipeline::projection::is_compact_boundary(r)
                || r.is_compact_summary
                || r.meta
                    .as_ref()
                    .and_then(|m| m.get(ctxd_pipeline::autocompact::COPIED_FROM))
                    .and_then(serde_json::Value::as_str)
                    .and_then(seq_of)
                    .is_some_and(|s| s <= last_seq)
        })
        .map(|r| r.uuid.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Long enough that a wait which runs to its limit fails the test's own bound.
    const HOUR: Duration = Duration::from_secs(3600);
    const BOUND: Duration = Duration::from_secs(30);

    /// Under the session's lock, an extraction that has not taken its copy is waiting for
    /// that lock: waiting for it would hold both until the limit.
    #[tokio::test]
    async fn the_lock_holder_does_not_wait_for_an_extraction_waiting_for_the_lock() {
        let x = Extractions::default();
        let running = x.claim("s").unwrap();
        let waited = tokio::time::timeout(BOUND, x.wait("s", &running, HOUR, true)).await;
        assert!(waited.is_ok(), "waited for an extraction that cannot go on");
        assert!(x.is_running("s"));
    }

    /// One that has its copy is waited for, and the wait ends when it does.
    #[tokio::test]
    async fn a_copied_extraction_is_waited_for_until_it_ends() {
        let x = Arc::new(Extractions::default());
        let claimed = x.claim("s").unwrap();
        x.copied("s");
        let running = x.claim("s").unwrap_err();
        let ender = {
            let x = x.clone();
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                x.release("s", &claimed);
            })
        };
        let waited = tokio::time::timeout(BOUND, x.wait("s", &running, HOUR, true)).await;
        assert!(waited.is_ok());
        ender.await.unwrap();
        assert!(!x.is_running("s"));
    }

    /// An extraction that ended between being found and being waited for is not waited
    /// for: its wake-up is gone.
    #[tokio::test]
    async fn an_extraction_that_ended_meanwhile_is_not_waited_for() {
        let x = Extractions::default();
        let claimed = x.claim("s").unwrap();
        x.copied("s");
        let running = x.running("s").unwrap();
        x.release("s", &claimed);
        let waited = tokio::time::timeout(BOUND, x.wait("s", &running, HOUR, false)).await;
        assert!(waited.is_ok(), "waited for a wake-up already given");
    }
}
