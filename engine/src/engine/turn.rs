//! The turn: one orchestrator for every path that compiles a request for the model and
//! may make room first. A compile runs the compiler's steps, then, while the session's
//! estimate asks for it, context collapse and compaction, and compiles again; every
//! path ends the same way (blocking limit, frozen effects, warning level, the cache key
//! kept). The parts it drives keep their own state: the compiler (`compile.rs`), the
//! collapse (`compaction/collapse.rs`), the compactor (`compaction/compact.rs`).

use ctxd_protocol::*;

use crate::engine::compaction::compact::CompactAsk;
use crate::engine::compile::{Ask, assemble};
use crate::engine::session::loaded::loaded_mut;
use crate::engine::{Engine, Loaded, SessionCell};
use ctxd_pipeline::autocompact::Trigger;
use ctxd_pipeline::compile::Compiled;
use ctxd_pipeline::thresholds;
use ctxd_store::error::{Error, Result};

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
        let ask = Ask {
            side_request: p.side_request,
            now,
            flags: p.flags.as_ref(),
            usage_picture: false,
        };
        let (mut guard, mut compiled) = {
            let mut guard = cell.state.lock().await;
            self.load_or_drop(&p.session_id, &mut guard).await?;
            let l = loaded_mut(&mut guard)?;
            if l.records.view_len() <= INLINE_COMPILE_MAX_VIEW {
                let compiled = self.compile_now(&cell, l, &ask).await?;
                (guard, compiled)
            } else {
                let prepared = self.prepare_compile(&cell, l, &ask).await?;
                let snapshot = l.clone();
                drop(guard);
                let decided = snapshot.decisions();
                // The assembly reads no flags (they are settled above), so its copy of
                // the ask holds none and can leave for the blocking pool.
                let pure = Ask {
                    side_request: ask.side_request,
                    ..Ask::at(now)
                };
                let compiled =
                    tokio::task::spawn_blocking(move || assemble(&snapshot, None, &pure))
                        .await
                        .map_err(|e| Error::Internal(format!("compile task: {e}")))??;
                let mut compiled = prepared.fill(compiled);
                let mut guard = cell.state.lock().await;
                // The session may have been unloaded meanwhile; the store has all it had.
                self.load_or_drop(&p.session_id, &mut guard).await?;
                let l = loaded_mut(&mut guard)?;
                if l.decisions() != decided {
                    // Another compile or a compaction froze decisions meanwhile: this
                    // compile's effects were decided without them, so decide again,
                    // under the lock. (Settling the flags again is idempotent.)
                    compiled = self.compile_now(&cell, l, &ask).await?;
                }
                (guard, compiled)
            }
        };
        let l = loaded_mut(&mut guard)?;
        if l.row.settings.collapse.enabled {
            let estimate = compiled.metadata.context.effective_tokens;
            if self.run_collapse(&cell, l, estimate, false).await? {
                compiled = self.compile_now(&cell, l, &ask).await?;
            }
        }
        if let Some(reason) = self.autocompact_due(l, &compiled).await? {
            match reason {
                Ok(()) => {
                    let pre = compiled.metadata.context.effective_tokens;
                    match self
                        .compact_locked(
                            &cell,
                            l,
                            CompactAsk {
                                trigger: Trigger::Auto,
                                instructions: None,
                                now,
                                pre_tokens: pre,
                            },
                        )
                        .await
                    {
                        Ok(report) => {
                            compiled = self.compile_after(&cell, l, &ask, report).await?;
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
        self.finish_compile(&cell, l, compiled, &ask).await
    }

    /// Blocking limit, effects, warning level: what every compile ends with.
    pub(crate) async fn finish_compile(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        mut compiled: Compiled,
        ask: &Ask<'_>,
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
        self.record_compile(l, &mut compiled, ask.side_request, ask.now);
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

    fn announce_level(&self, cell: &SessionCell, l: &mut Loaded, s: &ContextState, estimated: u64) {
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

    /// `context.compact`: compact now, whatever the estimate; resets the breaker.
    pub async fn compact(&self, p: CompactParams) -> Result<CompactionReport> {
        let cell = self.cells.cell(&p.session_id);
        let mut guard = cell.state.lock().await;
        self.load_or_drop(&p.session_id, &mut guard).await?;
        let l = loaded_mut(&mut guard)?;
        let now = self.clock.now();
        let pre = self.compile_now(&cell, l, &Ask::at(now)).await?;
        let pre_tokens = pre.metadata.context.effective_tokens;
        self.compact_locked(
            &cell,
            l,
            CompactAsk {
                trigger: Trigger::Manual,
                instructions: p.instructions,
                now,
                pre_tokens,
            },
        )
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
        let cell = self.cells.cell(&p.session_id);
        let mut guard = cell.state.lock().await;
        self.load_or_drop(&p.session_id, &mut guard).await?;
        let l = loaded_mut(&mut guard)?;
        let ask = Ask::at(self.clock.now());
        let before = self.compile_now(&cell, l, &ask).await?;
        let pre_tokens = before.metadata.context.effective_tokens + p.token_gap.unwrap_or(0);
        // Cheapest relief first: commit every staged collapse once; only when nothing
        // was staged does the reactive compact run.
        if !media && self.run_collapse(&cell, l, pre_tokens, true).await? {
            let compiled = self.compile_now(&cell, l, &ask).await?;
            // The provider refused this size: a drain that freed nothing (its collapses
            // covered records a compaction had already taken out) must not hand the
            // same request back, so the reactive compaction runs after all.
            if compiled.metadata.context.effective_tokens < before.metadata.context.effective_tokens
            {
                return self.finish_compile(&cell, l, compiled, &ask).await;
            }
            tracing::info!(session = %l.row.id, "draining the collapses freed nothing; compacting");
        }
        let report = self
            .compact_locked(
                &cell,
                l,
                CompactAsk {
                    trigger: Trigger::Reactive,
                    instructions: None,
                    now: ask.now,
                    pre_tokens,
                },
            )
            .await
            .map_err(|e| Error::CompactionFailed(format!("cannot recover: {e}")))?;
        let compiled = self.compile_after(&cell, l, &ask, report).await?;
        self.finish_compile(&cell, l, compiled, &ask).await
    }

    /// The compile after a compaction: the new history's request, carrying the
    /// compaction's report and, when it left more than its target, the shortfall.
    async fn compile_after(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        ask: &Ask<'_>,
        report: CompactionReport,
    ) -> Result<Compiled> {
        let mut compiled = self.compile_now(cell, l, ask).await?;
        compiled.metadata.compaction_shortfall = shortfall_of(&report);
        compiled.metadata.compaction = Some(report);
        Ok(compiled)
    }
}

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
