//! Session memory: the notes document, background extraction after model responses,
//! external workers, and session-memory compact (tried by autocompact before the full
//! compact).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use ctxd_protocol::*;
use tokio::sync::Notify;

use super::{Engine, Loaded, SessionCell};
use crate::error::{Error, Result};
use crate::pipeline::autocompact::{self, Trigger};
use crate::pipeline::normalize::{NormalizeOptions, normalize};
use crate::pipeline::session_memory as sm;
use crate::pipeline::{attachments, projection, thresholds, tokens};
use crate::providers::{Summariser, SummaryInput};
use crate::store::memory;

/// An extraction that runs longer than this is abandoned.
const EXTRACTION_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a session-memory compact waits for a running extraction.
const WAIT_FOR_EXTRACTION: Duration = Duration::from_secs(15);
/// Per-section size of the memory as a compact summary.
const SUMMARY_SECTION_TOKENS: u64 = 1_500;

impl Engine {
    pub fn memory_path(&self, sid: &str) -> PathBuf {
        self.session_dir(sid)
            .join("session-memory")
            .join("summary.md")
    }

    fn extraction_flag(&self, sid: &str) -> Option<Arc<Notify>> {
        self.extracting.lock().ok()?.get(sid).cloned()
    }

    pub async fn memory_get(&self, sid: &str) -> Result<MemoryGetResponse> {
        let s = sid.to_string();
        let row = self
            .store
            .read(move |c| {
                if !crate::store::sessions::exists(c, &s)? {
                    return Err(Error::SessionNotFound(s.clone()));
                }
                memory::get(c, &s)
            })
            .await?;
        let extracting = self.extraction_flag(sid).is_some();
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
            .write(move |tx| {
                if !crate::store::sessions::exists(tx, &s)? {
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
        let path = self.memory_path(&sid);
        let text = document.clone();
        let mirrored = tokio::task::spawn_blocking(move || {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let tmp = path.with_extension("md.tmp");
            std::fs::write(&tmp, text)?;
            std::fs::rename(&tmp, &path)
        })
        .await;
        if !matches!(mirrored, Ok(Ok(()))) {
            tracing::warn!(session = %sid, "could not mirror the session memory to disk");
        }
        let cell = self.cell(&sid);
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
        let view = projection::project(&l.records);
        let context = tokens::estimate(&view, 0, crate::pipeline::attachments::render).total;
        let since = mem.as_ref().and_then(|m| m.last_summarized_uuid.clone());
        let calls = sm::tool_calls_since(&view, since.as_deref());
        let due = sm::extraction_due(
            context,
            mem.as_ref().and_then(|m| m.tokens_at_extraction),
            calls,
            sm::last_turn_had_tool_call(&view),
        );
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
                let Some(engine) = self.self_ref.get().and_then(|w| w.upgrade()) else {
                    return;
                };
                if self.extraction_flag(&sid).is_some() {
                    return; // one at a time per session
                }
                tokio::spawn(async move {
                    if let Err(e) = engine.extract_now(&sid).await {
                        tracing::warn!(session = %sid, error = %e, "session memory extraction failed");
                    }
                });
            }
            MemoryExtractor::Off => {}
        }
    }

    /// Runs one extraction for the session and writes the result. At most one runs per
    /// session; a second call waits for the running one instead.
    pub async fn extract_now(&self, sid: &str) -> Result<u64> {
        let (notify, running) = {
            let mut map = self
                .extracting
                .lock()
                .map_err(|_| Error::Internal("extraction lock".into()))?;
            match map.get(sid) {
                Some(n) => (n.clone(), true),
                None => {
                    let n = Arc::new(Notify::new());
                    map.insert(sid.to_string(), n.clone());
                    (n, false)
                }
            }
        };
        if running {
            let _ = tokio::time::timeout(EXTRACTION_TIMEOUT, notify.notified()).await;
            return Ok(self.memory_get(sid).await?.version);
        }
        let result = tokio::time::timeout(EXTRACTION_TIMEOUT, self.extract_inner(sid)).await;
        if let Ok(mut map) = self.extracting.lock() {
            map.remove(sid);
        }
        notify.notify_waiters();
        match result {
            Ok(r) => r,
            Err(_) => Err(Error::Internal(format!(
                "session memory extraction abandoned after {}s",
                EXTRACTION_TIMEOUT.as_secs()
            ))),
        }
    }

    async fn extract_inner(&self, sid: &str) -> Result<u64> {
        // A snapshot of what to read, taken under the session lock and released at once
        // so appends and compiles never wait for the extractor.
        let cell = self.cell(sid);
        let (records, cfg, row_model, rejected) = {
            let mut guard = cell.state.lock().await;
            self.load_or_drop(sid, &mut guard).await?;
            let Some(l) = guard.as_ref() else {
                return Err(Error::Internal("session state missing after load".into()));
            };
            let shown: Vec<Record> = l.shown().into_iter().map(|c| c.into_owned()).collect();
            (
                shown,
                l.row
                    .settings
                    .summariser
                    .clone()
                    .unwrap_or_else(|| self.default_summariser.clone()),
                l.row.model.clone(),
                l.rejected_media.clone(),
            )
        };
        let mem = self.memory_get(sid).await?;
        let refs: Vec<&Record> = records.iter().collect();
        let start = mem
            .last_summarized_uuid
            .as_deref()
            .and_then(|u| refs.iter().position(|r| r.uuid == u))
            .map_or(0, |i| i + 1);
        let new = &refs[start..];
        if new.is_empty() {
            return Ok(mem.version);
        }
        let context = tokens::estimate(&refs, 0, crate::pipeline::attachments::render).total;
        let summariser =
            Summariser::new(&cfg, None).map_err(|e| Error::CompactionFailed(e.to_string()))?;
        let normalized = normalize(
            new,
            &NormalizeOptions {
                supports_thinking: row_model.supports_thinking,
                rejected_media: &rejected,
                short_ids: false,
            },
        );
        let document = summariser
            .extract(
                &mem.document,
                SummaryInput {
                    records: new,
                    messages: &normalized.messages,
                    custom_instructions: None,
                    head_truncated: false,
                    max_summary_tokens: sm::MAX_TOTAL_TOKENS,
                },
            )
            .await
            .map_err(|e| Error::CompactionFailed(format!("extraction: {e}")))?;
        let last = sm::safe_last_summarized(&refs);
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
        if let Some(n) = self.extraction_flag(&l.row.id) {
            let _ = tokio::time::timeout(WAIT_FOR_EXTRACTION, n.notified()).await;
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
        let view = projection::project(&l.records);
        let shown = l.shown();
        let refs: Vec<&Record> = shown.iter().map(|c| c.as_ref()).collect();
        let Some(keep) = sm::keep_start(&refs, &last) else {
            return Ok(Err(format!(
                "the last summarised record {last} is not in the current history"
            )));
        };
        let path = self.memory_path(&sid).display().to_string();
        let summary = sm::for_summary(&mem.document, SUMMARY_SECTION_TOKENS, &path);
        let tail: Vec<&Record> = refs[keep..]
            .iter()
            .copied()
            .filter(|r| r.kind != RecordKind::System)
            .collect();
        let tail_raw: u64 = tail
            .iter()
            .map(|r| tokens::record_tokens(r, crate::pipeline::attachments::render))
            .sum();
        let estimated_after =
            tokens::scaled(tail_raw + (summary.chars().count() as u64).div_ceil(4));
        let threshold = thresholds::autocompact_threshold(&l.row.model, &l.row.settings);
        if estimated_after >= threshold {
            return Ok(Err(format!(
                "the notes and the kept tail (~{estimated_after} tokens) would still reach the threshold ({threshold})"
            )));
        }
        let ts = crate::clock::rfc3339(now);
        let summarised: Vec<&Record> = refs[..keep]
            .iter()
            .copied()
            .filter(|r| r.kind != RecordKind::System)
            .collect();
        let mut data =
            autocompact::boundary_data(Trigger::Auto, pre_tokens, &summarised, "session_memory", 0);
        data["kind"] = serde_json::json!("session_memory");
        data["kept_from_uuid"] = serde_json::json!(tail.first().map(|r| r.uuid.clone()));
        let mut new_records = autocompact::head_records(
            data,
            autocompact::summary_message(&summary, !tail.is_empty(), Trigger::Auto),
            &ts,
        );
        // The kept tail is re-appended after the boundary (the transcript is append-only),
        // same content and tool ids, so frozen fates replay the same bytes.
        // `shown` maps the projection one to one, so the originals sit at the same
        // indices.
        for original in view[keep..]
            .iter()
            .copied()
            .filter(|r| r.kind != RecordKind::System)
        {
            new_records.push(RecordInput {
                uuid: None,
                parent_uuid: None,
                kind: Some(original.kind),
                timestamp: Some(original.timestamp.clone()),
                content: original.content.clone(),
                message_id: original.message_id.clone(),
                model: original.model.clone(),
                stop_reason: original.stop_reason.clone(),
                usage: None,
                is_meta: original.is_meta,
                is_virtual: false,
                is_sidechain: false,
                is_compact_summary: original.is_compact_summary,
                subtype: None,
                attachment: original.attachment.clone(),
                data: None,
                meta: Some(serde_json::json!({"copied_from": original.uuid})),
            });
        }
        // Files read recently that the kept tail does not already show.
        let shown_in_tail: Vec<String> = autocompact::recently_read(&tail, usize::MAX / 4);
        let wanted: Vec<String> =
            autocompact::recently_read(&refs, autocompact::RESTORE_MAX_FILES * 2)
                .into_iter()
                .filter(|p| !shown_in_tail.contains(p))
                .collect();
        let (restored, restored_paths, states) = super::compact::restore_files(wanted).await?;
        new_records.extend(
            autocompact::rebuild_attachments(&restored, &self.plan_after_compaction(&l.row))
                .into_iter()
                .map(|a| attachments::record(a, &ts)),
        );
        let kept_records = tail.len() as u64;
        let summarised_records = summarised.len() as u64;
        let (boundary_uuid, post_tokens) = self
            .write_new_history(cell, l, new_records, states, Trigger::Auto, pre_tokens, now)
            .await?;
        Ok(Ok(CompactionReport {
            trigger: Trigger::Auto.as_str().into(),
            boundary_uuid,
            pre_tokens,
            post_tokens,
            summariser: "session_memory".into(),
            summary_chars: summary.chars().count() as u64,
            summarised_records,
            head_truncated_rounds: 0,
            restored_files: restored_paths,
            micros: started.elapsed().as_micros() as u64,
            kind: "session_memory".into(),
            kept_records,
            session_memory_skipped: None,
        }))
    }
}
