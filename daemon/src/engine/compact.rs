//! Compaction: full compact (autocompact, manual, reactive), the post-compact rebuild,
//! the circuit breaker, and the client summariser's request/reply channel.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use ctxd_protocol::*;
use futures::future::BoxFuture;
use tokio::sync::{broadcast, oneshot};

use super::session::{compile_loaded, insert_batch};
use super::sources::snapshot;
use super::{Engine, Loaded, SessionCell};
use crate::error::{Error, Result};
use crate::pipeline::attachments;
use crate::pipeline::autocompact::{
    self, MAX_CONSECUTIVE_FAILURES, MAX_TRUNCATION_RETRIES, Trigger,
};
use crate::pipeline::compile::Compiled;
use crate::pipeline::normalize::{NormalizeOptions, normalize};
use crate::providers::{ModelRunner, ProviderError, Summariser, SummaryInput};
use crate::store::context_state;

/// Replies awaited from clients that run the model for the daemon.
pub(crate) type PendingSummaries =
    Arc<Mutex<HashMap<String, oneshot::Sender<std::result::Result<String, ProviderError>>>>>;

/// Asks the session's subscribers to run a model and waits for `context.provide_summary`.
struct ClientRunner {
    session_id: String,
    events: broadcast::Sender<super::Emitted>,
    pending: PendingSummaries,
}

impl ModelRunner for ClientRunner {
    fn run(
        &self,
        request: serde_json::Value,
        timeout: Duration,
    ) -> BoxFuture<'static, std::result::Result<String, ProviderError>> {
        let request_id = uuid::Uuid::now_v7().to_string();
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(request_id.clone(), tx);
        }
        let sent = self
            .events
            .send(super::Emitted::now(SessionEvent::SummaryRequested {
                session_id: self.session_id.clone(),
                request_id: request_id.clone(),
                request,
                timeout_secs: timeout.as_secs(),
            }));
        let pending = self.pending.clone();
        Box::pin(async move {
            let forget = |pending: &PendingSummaries| {
                if let Ok(mut p) = pending.lock() {
                    p.remove(&request_id);
                }
            };
            if sent.is_err() {
                forget(&pending);
                return Err(ProviderError::Misconfigured(
                    "the session's summariser is `client` but no client is subscribed to it".into(),
                ));
            }
            match tokio::time::timeout(timeout, rx).await {
                Ok(Ok(reply)) => reply,
                Ok(Err(_)) => Err(ProviderError::Failed(
                    "the client dropped the request".into(),
                )),
                Err(_) => {
                    forget(&pending);
                    Err(ProviderError::Timeout(timeout))
                }
            }
        })
    }
}

fn provider_error(e: ProviderError) -> Error {
    Error::CompactionFailed(e.to_string())
}

impl Engine {
    pub(crate) fn summariser(&self, l: &Loaded, cell: &SessionCell) -> Result<Summariser> {
        let cfg = l
            .row
            .settings
            .summariser
            .clone()
            .unwrap_or_else(|| self.default_summariser.clone());
        let runner: Arc<dyn ModelRunner> = Arc::new(ClientRunner {
            session_id: l.row.id.clone(),
            events: cell.sender(),
            pending: self.pending_summaries.clone(),
        });
        Summariser::new(&cfg, Some(runner)).map_err(provider_error)
    }

    /// `Some(Ok(()))` when autocompact should run now, `Some(Err(why))` when it is due
    /// but may not run, `None` when it is not due.
    pub(crate) async fn autocompact_due(
        &self,
        l: &Loaded,
        compiled: &Compiled,
    ) -> Result<Option<std::result::Result<(), String>>> {
        if !compiled.metadata.context.above_autocompact || l.row.settings.autocompact == Some(false)
        {
            return Ok(None);
        }
        let sid = l.row.id.clone();
        let failures = self
            .store
            .read(move |c| context_state::compaction_failures(c, &sid))
            .await?;
        let collapses = super::collapse::live(l);
        let settings = crate::pipeline::collapse::CollapseSettings::from(&l.row.settings.collapse);
        let window = crate::pipeline::thresholds::effective_window(&l.row.model);
        if crate::pipeline::collapse::autocompact_stands_aside(
            &collapses,
            compiled.metadata.context.effective_tokens,
            window,
            &settings,
        ) {
            return Ok(Some(Err(
                "context collapse is active; autocompact stands aside until the block level".into(),
            )));
        }
        if failures >= MAX_CONSECUTIVE_FAILURES {
            return Ok(Some(Err(format!(
                "circuit breaker open after {failures} consecutive failures; compact manually"
            ))));
        }
        Ok(Some(Ok(())))
    }

    async fn record_failure(&self, sid: &str, error: &str, trigger: Trigger) {
        if trigger != Trigger::Auto {
            return;
        }
        let (s, e) = (sid.to_string(), error.to_string());
        let r = self
            .store
            .write(move |tx| {
                let n = context_state::compaction_failures(tx, &s)? + 1;
                context_state::set_compaction_failures(tx, &s, n, Some(&e))
            })
            .await;
        if let Err(e) = r {
            tracing::warn!(session = sid, error = %e, "could not record a compaction failure");
        }
    }

    /// Compacts the session under its lock: summarises the projection, appends
    /// `[boundary, summary, restored files]`, resets what a new history resets.
    pub(crate) async fn compact_locked(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        trigger: Trigger,
        instructions: Option<String>,
        now: DateTime<Utc>,
        pre_tokens: u64,
    ) -> Result<CompactionReport> {
        let started = Instant::now();
        let mut sm_skipped = None;
        if trigger == Trigger::Auto {
            // Session-memory compact first; it says why when it cannot help.
            match self.session_memory_compact(cell, l, now, pre_tokens).await {
                Ok(Ok(report)) => return Ok(report),
                Ok(Err(why)) => sm_skipped = Some(why),
                Err(e) => {
                    tracing::warn!(session = %l.row.id, error = %e, "session-memory compact failed; full compact");
                    sm_skipped = Some(format!("failed: {e}"));
                }
            }
        }
        let result = self
            .compact_inner(cell, l, trigger, instructions, now, pre_tokens, started)
            .await
            .map(|mut r| {
                r.session_memory_skipped = sm_skipped;
                r
            });
        if let Err(e) = &result {
            self.record_failure(&l.row.id, &e.to_string(), trigger)
                .await;
        }
        result
    }

    #[allow(clippy::too_many_arguments)]
    async fn compact_inner(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        trigger: Trigger,
        instructions: Option<String>,
        now: DateTime<Utc>,
        pre_tokens: u64,
        started: Instant,
    ) -> Result<CompactionReport> {
        let summariser = self.summariser(l, cell)?;
        let shown = l.shown();
        let refs: Vec<&Record> = shown.iter().map(|c| c.as_ref()).collect();
        let sendable: Vec<&Record> = refs
            .iter()
            .copied()
            .filter(|r| {
                matches!(
                    r.kind,
                    RecordKind::User | RecordKind::Assistant | RecordKind::Attachment
                )
            })
            .collect();
        if sendable.is_empty() {
            return Err(Error::CompactionFailed(
                "there is nothing to compact yet".into(),
            ));
        }
        let rounds = autocompact::api_rounds(&refs);
        let mut dropped = 0usize;
        let mut start = 0usize;
        let mut attempt = 0;
        let max_summary_tokens = 20_000u64.min(l.row.model.max_output_tokens.max(1_000));
        // PreCompact hooks' stdout joins the custom instructions the summariser reads.
        let instructions = self.hooks_pre_compact(l, trigger, instructions).await;
        let summary = loop {
            let part = &refs[start..];
            let normalized = normalize(
                part,
                &NormalizeOptions {
                    supports_thinking: l.row.model.supports_thinking,
                    rejected_media: &l.rejected_media,
                    short_ids: false,
                },
            );
            let input = SummaryInput {
                records: part,
                messages: &normalized.messages,
                custom_instructions: instructions.as_deref(),
                head_truncated: dropped > 0,
                max_summary_tokens,
            };
            match summariser.summarise(input).await {
                Ok(s) if !s.trim().is_empty() => break s,
                Ok(_) => {
                    return Err(Error::CompactionFailed(
                        "the summariser returned an empty summary".into(),
                    ));
                }
                Err(ProviderError::PromptTooLong { token_gap })
                    if attempt < MAX_TRUNCATION_RETRIES =>
                {
                    let n = autocompact::rounds_to_drop(&refs, &rounds, dropped, token_gap);
                    if n == 0 {
                        return Err(Error::CompactionFailed(
                            "the summary request is too long even with only the last round left"
                                .into(),
                        ));
                    }
                    dropped += n;
                    start = rounds.get(dropped).map_or(refs.len(), |r| r.start);
                    attempt += 1;
                    tracing::info!(session = %l.row.id, dropped, "summary request too long; dropping the oldest rounds");
                }
                Err(ProviderError::PromptTooLong { .. }) => {
                    return Err(Error::CompactionFailed(format!(
                        "the summary request was still too long after {MAX_TRUNCATION_RETRIES} head truncations"
                    )));
                }
                Err(e) => return Err(provider_error(e)),
            }
        };

        // Files to restore: the most recently read, as they are on disk now.
        let wanted = autocompact::recently_read(&refs, autocompact::RESTORE_MAX_FILES);
        let (restored, restored_paths, read_states) = restore_files(wanted).await?;

        let summarised: Vec<&Record> = sendable
            .iter()
            .copied()
            .filter(|r| refs[start..].iter().any(|x| x.uuid == r.uuid))
            .collect();
        let ts = crate::clock::rfc3339(now);
        let mut new_records = autocompact::head_records(
            autocompact::boundary_data(
                trigger,
                pre_tokens,
                &summarised,
                summariser.kind(),
                dropped,
            ),
            autocompact::summary_message(&summary, false, trigger),
            &ts,
        );
        new_records.extend(
            autocompact::rebuild_attachments(&restored, &self.plan_after_compaction(&l.row))
                .into_iter()
                .map(|a| attachments::record(a, &ts)),
        );
        let summarised_records = summarised.len() as u64;
        let (boundary_uuid, post_tokens) = self
            .write_new_history(cell, l, new_records, read_states, trigger, pre_tokens, now)
            .await?;
        Ok(CompactionReport {
            trigger: trigger.as_str().into(),
            boundary_uuid,
            pre_tokens,
            post_tokens,
            summariser: summariser.kind().into(),
            summary_chars: summary.chars().count() as u64,
            summarised_records,
            head_truncated_rounds: dropped as u64,
            restored_files: restored_paths,
            micros: started.elapsed().as_micros() as u64,
            kind: "full".into(),
            kept_records: 0,
            session_memory_skipped: None,
        })
    }

    /// Appends a new history (`[boundary, summary, …]`) and resets what a new history
    /// resets, in one transaction; then the in-memory state and the events. Returns the
    /// boundary's uuid and the estimate of the new history.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn write_new_history(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        new_records: Vec<RecordInput>,
        read_states: Vec<context_state::ReadState>,
        trigger: Trigger,
        pre_tokens: u64,
        now: DateTime<Utc>,
    ) -> Result<(String, u64)> {
        // SessionStart (source compact) context follows the new history's head.
        let mut new_records = new_records;
        let post_compact = self
            .hooks_before_new_history(l, trigger, &mut new_records)
            .await;
        let sid = l.row.id.clone();
        let now_text = self.now_text();
        let built = self
            .store
            .write(move |tx| {
                let built = insert_batch(tx, &sid, new_records, None, &now_text)?;
                // Nothing of the old history's file and instruction state holds.
                context_state::clear_loaded(tx, &sid)?;
                context_state::clear_read_state(tx, &sid)?;
                context_state::clear_touched(tx, &sid)?;
                for s in &read_states {
                    context_state::put_read_state(tx, &sid, s)?;
                }
                context_state::set_compaction_failures(tx, &sid, 0, None)?;
                crate::store::memory::reset_gate(tx, &sid)?;
                Ok(built)
            })
            .await?;
        let boundary_uuid = built.first().map(|r| r.uuid.clone()).unwrap_or_default();
        l.records.extend(built.iter().cloned());
        l.boundary_uuid = boundary_uuid.clone();
        l.pinned_edits.clear();
        let post_tokens = compile_loaded(l, false, now)?
            .metadata
            .tokens
            .estimated_tokens;
        self.emit(
            cell,
            SessionEvent::RecordsAppended {
                session_id: l.row.id.clone(),
                records: built
                    .iter()
                    .map(|r| AppendedRecord {
                        uuid: r.uuid.clone(),
                        seq: r.seq,
                    })
                    .collect(),
                full_records: None,
            },
        );
        self.emit(
            cell,
            SessionEvent::Compacted {
                session_id: l.row.id.clone(),
                trigger: trigger.as_str().into(),
                boundary_uuid: boundary_uuid.clone(),
                pre_tokens,
                post_tokens,
            },
        );
        self.hooks_after_new_history(post_compact);
        Ok((boundary_uuid, post_tokens))
    }

    /// `context.compact`: compact now, whatever the estimate; resets the breaker.
    pub async fn compact(&self, p: CompactParams) -> Result<CompactionReport> {
        let cell = self.cell(&p.session_id);
        let mut guard = cell.state.lock().await;
        self.load_or_drop(&p.session_id, &mut guard).await?;
        let l = super::loaded_mut(&mut guard)?;
        let now = self.clock.now();
        let pre = self.compile_steps(&cell, l, false, now, None).await?;
        let pre_tokens = pre.metadata.context.effective_tokens;
        self.compact_locked(&cell, l, Trigger::Manual, p.instructions, now, pre_tokens)
            .await
    }

    /// `context.report_error`: recovery after the provider refused a request.
    pub async fn report_error(&self, p: ReportErrorParams) -> Result<Compiled> {
        let media = match p.kind.as_str() {
            "prompt_too_long" => false,
            "media_too_large" => true,
            _ => {
                return Err(Error::invalid(
                    "kind",
                    "must be prompt_too_long or media_too_large",
                ));
            }
        };
        if media && let (Some(uuid), Some(index)) = (&p.record_uuid, p.block_index) {
            // Strip the refused media first, so the summary request does not carry it.
            self.reject_media(RejectMediaParams {
                session_id: p.session_id.clone(),
                record_uuid: uuid.clone(),
                block_index: index,
            })
            .await?;
        }
        let cell = self.cell(&p.session_id);
        let mut guard = cell.state.lock().await;
        self.load_or_drop(&p.session_id, &mut guard).await?;
        let l = super::loaded_mut(&mut guard)?;
        let now = self.clock.now();
        let before = self.compile_steps(&cell, l, false, now, None).await?;
        let pre_tokens = before.metadata.context.effective_tokens + p.token_gap.unwrap_or(0);
        // Cheapest relief first: commit every staged collapse once; only when nothing
        // was staged does the reactive compact run.
        if !media && self.run_collapse(&cell, l, pre_tokens, true).await? {
            let compiled = self.compile_steps(&cell, l, false, now, None).await?;
            return self.finish_compile(&cell, l, compiled, false).await;
        }
        let report = self
            .compact_locked(&cell, l, Trigger::Reactive, None, now, pre_tokens)
            .await
            .map_err(|e| Error::CompactionFailed(format!("cannot recover: {e}")))?;
        let mut compiled = self.compile_steps(&cell, l, false, now, None).await?;
        compiled.metadata.compaction = Some(report);
        self.finish_compile(&cell, l, compiled, false).await
    }

    /// `context.provide_summary`: a client's answer to `summary_requested`.
    pub fn provide_summary(&self, p: ProvideSummaryParams) -> Result<()> {
        let tx = self
            .pending_summaries
            .lock()
            .ok()
            .and_then(|mut m| m.remove(&p.request_id))
            .ok_or_else(|| {
                Error::invalid(
                    "request_id",
                    "no summary request with this id is waiting (answered or timed out)",
                )
            })?;
        let reply = if p.prompt_too_long {
            Err(ProviderError::PromptTooLong {
                token_gap: p.token_gap,
            })
        } else if let Some(text) = p.text {
            Ok(text)
        } else {
            Err(ProviderError::Failed(
                p.error.unwrap_or_else(|| "the client gave no text".into()),
            ))
        };
        let _ = tx.send(reply);
        Ok(())
    }
}

/// Re-reads the wanted files (newest first) and renders them within the restore caps:
/// `(attachments, restored paths, their read state)`.
pub(crate) async fn restore_files(
    wanted: Vec<String>,
) -> Result<(
    Vec<serde_json::Value>,
    Vec<String>,
    Vec<context_state::ReadState>,
)> {
    let files: Vec<(String, String, context_state::ReadState)> =
        tokio::task::spawn_blocking(move || {
            wanted
                .into_iter()
                .filter_map(|p| {
                    let state = snapshot(Path::new(&p))?;
                    let text = state.content.clone()?;
                    Some((p, text, state))
                })
                .take(autocompact::RESTORE_MAX_FILES)
                .collect()
        })
        .await
        .map_err(|e| Error::Internal(format!("restore task: {e}")))?;
    let input: Vec<(String, String)> = files
        .iter()
        .map(|(p, t, _)| (p.clone(), t.clone()))
        .collect();
    let restored = autocompact::restore_attachments(&input);
    let paths: Vec<String> = restored
        .iter()
        .filter_map(|a| a["filename"].as_str().map(str::to_string))
        .collect();
    let states = files
        .into_iter()
        .filter(|(p, _, _)| paths.contains(p))
        .map(|(_, _, s)| s)
        .collect();
    Ok((restored, paths, states))
}
