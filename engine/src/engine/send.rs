//! `context.send`: one turn through the session's provider. Compile as
//! `context.compile` does, send the body streamed with the headers the compile names,
//! fold the stream into the message, append it as the provider returned it. One turn
//! at a time per session; nothing is appended when the provider fails.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use ctxd_protocol::*;

use crate::engine::Engine;
use ctxd_providers::stream::{self, StreamError};
use ctxd_store::error::{Error, Result};

/// The sessions with a turn running, each with what cancels it, and what the turns
/// since the start did.
#[derive(Default)]
pub(crate) struct Turns(Mutex<HashMap<String, Arc<Notify>>>, TurnCounters);

/// What the `context.send` turns since the daemon started did, summed (saturating).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnStats {
    /// Turns that appended the provider's answer.
    pub answered: u64,
    /// Turns that failed (at the provider, cancelled, or refused before the call).
    pub failed: u64,
    /// Provider retries of the answered turns.
    pub retries: u64,
    /// Answered turns that recovered from a too-long request.
    pub recovered: u64,
    /// The answers' `usage`, summed.
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub cache_creation_input_tokens: u64,
}

#[derive(Default)]
struct TurnCounters([AtomicU64; 8]);

impl TurnCounters {
    fn add(&self, i: usize, n: u64) {
        super::activity::count(&self.0[i], n);
    }

    fn record(&self, result: &Result<SendResponse>) {
        match result {
            Ok(r) => {
                self.add(0, 1);
                self.add(2, u64::from(r.retries));
                self.add(3, u64::from(r.recovery.is_some()));
                if let Some(u) = &r.usage {
                    self.add(4, u.input_tokens);
                    self.add(5, u.output_tokens);
                    self.add(6, u.cache_read_input_tokens);
                    self.add(7, u.cache_creation_input_tokens);
                }
            }
            Err(_) => self.add(1, 1),
        }
    }

    fn snapshot(&self) -> TurnStats {
        let v = |i: usize| self.0[i].load(Ordering::Relaxed);
        TurnStats {
            answered: v(0),
            failed: v(1),
            retries: v(2),
            recovered: v(3),
            input_tokens: v(4),
            output_tokens: v(5),
            cache_read_input_tokens: v(6),
            cache_creation_input_tokens: v(7),
        }
    }
}

/// A running turn; the session is free again when it goes.
struct Turn<'a> {
    turns: &'a Turns,
    session_id: String,
    cancel: Arc<Notify>,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if let Ok(mut running) = self.turns.0.lock() {
            running.remove(&self.session_id);
        }
    }
}

impl Turns {
    fn begin(&self, session_id: &str) -> Result<Turn<'_>> {
        let mut running = self
            .0
            .lock()
            .map_err(|_| Error::Internal("the turn table's lock is poisoned".into()))?;
        if running.contains_key(session_id) {
            return Err(Error::TurnInProgress(session_id.to_string()));
        }
        let cancel = Arc::new(Notify::new());
        running.insert(session_id.to_string(), cancel.clone());
        Ok(Turn {
            turns: self,
            session_id: session_id.to_string(),
            cancel,
        })
    }

    fn running(&self, session_id: &str) -> bool {
        self.0
            .lock()
            .is_ok_and(|running| running.contains_key(session_id))
    }

    /// Cancels the session's running turn; `false` when none runs.
    fn cancel(&self, session_id: &str) -> bool {
        let Ok(running) = self.0.lock() else {
            return false;
        };
        match running.get(session_id) {
            Some(cancel) => {
                // A stored permit: the turn sees it even if it is not waiting yet.
                cancel.notify_one();
                true
            }
            None => false,
        }
    }
}

impl Engine {
    /// What the `context.send` turns since the start did (for `daemon.metrics`).
    pub fn turn_stats(&self) -> TurnStats {
        self.turns.1.snapshot()
    }

    /// What compactions, collapses, extractions and cache breaks since the start did.
    pub fn activity_stats(&self) -> crate::engine::ActivityStats {
        self.activity.snapshot()
    }

    /// `context.cancel`: the running turn's provider call stops; nothing is appended.
    pub async fn cancel_turn(&self, p: SessionIdParams) -> Result<AckResponse> {
        self.get_session(&p.session_id).await?;
        Ok(AckResponse {
            ok: self.turns.cancel(&p.session_id),
        })
    }

    /// Cancels the session's running turn, if one runs (its stream's subscriber left).
    pub fn cancel_turn_of(&self, session_id: &str) {
        self.turns.cancel(session_id);
    }

    /// What refuses a turn of the session before it starts: no such session, no
    /// provider, a turn running.
    pub async fn check_turn(&self, session_id: &str) -> Result<()> {
        self.provider_of(session_id).await?;
        if self.turns.running(session_id) {
            return Err(Error::TurnInProgress(session_id.to_string()));
        }
        Ok(())
    }

    async fn provider_of(&self, session_id: &str) -> Result<ProviderConfig> {
        let session = self.get_session(session_id).await?;
        session.settings.provider.clone().ok_or_else(|| {
            Error::invalid(
                "settings.provider",
                "this session has no provider: set settings.provider (e.g. {\"kind\": \
                 \"anthropic\", \"api_key_env\": \"ANTHROPIC_API_KEY\"}), or send the \
                 compiled request yourself",
            )
        })
    }

    /// `context.send`.
    pub async fn send(&self, p: SendParams) -> Result<SendResponse> {
        self.run_turn(p, None).await
    }

    /// `context.send_stream`: the same turn, its progress sent to `progress` as it comes.
    pub async fn send_streamed(
        &self,
        p: SendParams,
        progress: &stream::Progress,
    ) -> Result<SendResponse> {
        self.run_turn(p, Some(progress)).await
    }

    async fn run_turn(
        &self,
        p: SendParams,
        progress: Option<&stream::Progress>,
    ) -> Result<SendResponse> {
        let result = self.run_turn_once(p, progress).await;
        self.turns.1.record(&result);
        result
    }

    async fn run_turn_once(
        &self,
        mut p: SendParams,
        progress: Option<&stream::Progress>,
    ) -> Result<SendResponse> {
        self.on_thread(&mut p.session_id, &mut p.agent_id).await?;
        let turn = self.turns.begin(&p.session_id)?;
        let provider = self.provider_of(&p.session_id).await?;
        let compiled = self
            .compile(CompileParams {
                session_id: p.session_id.clone(),
                ..Default::default()
            })
            .await?;
        let cell = self.cells.cell(&p.session_id);
        let request_sha256 = compiled.metadata.request_sha256.clone();
        self.emit(
            &cell,
            SessionEvent::TurnStarted {
                session_id: p.session_id.clone(),
                request_sha256: request_sha256.clone(),
            },
        );
        if let Some(tx) = progress {
            tx.note(TurnEvent::Started {
                session_id: p.session_id.clone(),
                request_sha256,
            });
        }
        let result = self
            .call_and_record(&p.session_id, &provider, compiled, &turn, progress)
            .await;
        let finished = match &result {
            Ok(r) => SessionEvent::TurnFinished {
                session_id: p.session_id.clone(),
                ok: true,
                uuid: Some(r.uuid.clone()),
                stop_reason: r.stop_reason.clone(),
                retries: r.retries,
                recovered_by: r.recovery.as_ref().map(|r| r.by.clone()),
                error: None,
            },
            Err(e) => SessionEvent::TurnFinished {
                session_id: p.session_id.clone(),
                ok: false,
                uuid: None,
                stop_reason: None,
                retries: 0,
                recovered_by: None,
                error: Some(e.to_string()),
            },
        };
        self.emit(&cell, finished);
        result
    }

    /// Sends `compiled` (once more after a recovery when the provider finds it too
    /// long) and appends the answer.
    async fn call_and_record(
        &self,
        session_id: &str,
        provider: &ProviderConfig,
        mut compiled: ctxd_pipeline::compile::Compiled,
        turn: &Turn<'_>,
        progress: Option<&stream::Progress>,
    ) -> Result<SendResponse> {
        let mut recovery: Option<TurnRecovery> = None;
        let (message, retries) = loop {
            let headers = compiled.metadata.cache.headers.clone();
            let call = stream::turn(provider, &compiled.body, &headers, &self.env, progress);
            let answered = tokio::select! {
                answered = call => answered,
                () = turn.cancel.notified() => {
                    return Err(Error::Provider {
                        status: None,
                        kind: Some("cancelled".into()),
                        message: "the turn was cancelled (context.cancel); nothing was appended"
                            .into(),
                    });
                }
            };
            match answered {
                Ok(answer) => break answer,
                Err(StreamError::TooLong {
                    token_gap, message, ..
                }) if recovery.is_none() => {
                    tracing::info!(
                        session_id,
                        ?token_gap,
                        "the request is too long; recovering"
                    );
                    if let Some(tx) = progress {
                        tx.note(TurnEvent::Recovering {
                            message: message.clone(),
                            token_gap,
                        });
                    }
                    let refused = compiled.metadata.request_sha256.clone();
                    // Collapses first, then a reactive compaction: what
                    // `context.report_error` does for a client's own call.
                    compiled = self
                        .report_error(ReportErrorParams {
                            session_id: session_id.to_string(),
                            kind: "prompt_too_long".into(),
                            token_gap,
                            record_uuid: None,
                            block_index: None,
                        })
                        .await?;
                    let by = if compiled.metadata.compaction.is_some() {
                        "compaction"
                    } else {
                        "collapse"
                    };
                    recovery = Some(TurnRecovery {
                        error: message,
                        token_gap,
                        by: by.into(),
                        refused_request_sha256: refused,
                    });
                }
                Err(e) => return Err(provider_error(e)),
            }
        };
        let record: RecordInput = serde_json::from_value(serde_json::json!({
            "type": "assistant",
            "message": message,
        }))
        .map_err(|e| Error::Provider {
            status: None,
            kind: Some("unreadable_message".into()),
            message: format!("the provider's message is not a Messages API message: {e}"),
        })?;
        let appended = self
            .append(AppendParams {
                session_id: session_id.to_string(),
                agent_id: None,
                records: vec![record],
                // Unconditional: an answer the provider gave (and billed) is never lost
                // because another client appended meanwhile; it goes at the end.
                expected_last_uuid: None,
            })
            .await
            .map_err(|e| match e {
                // The record checks refuse what the provider sent, not what the caller
                // asked: the turn failed at the provider.
                Error::Invalid { field, message } if field.starts_with("records") => {
                    Error::Provider {
                        status: None,
                        kind: Some("invalid_message".into()),
                        message: format!(
                            "the provider's message is not a valid record ({field}): {message}"
                        ),
                    }
                }
                other => other,
            })?;
        let Some(last) = appended.appended.last() else {
            return Err(Error::Internal("the turn's record was not appended".into()));
        };
        let usage = message
            .get("usage")
            .and_then(|u| serde_json::from_value(u.clone()).ok());
        Ok(SendResponse {
            stop_reason: message
                .get("stop_reason")
                .and_then(|s| s.as_str())
                .map(str::to_string),
            usage,
            uuid: last.uuid.clone(),
            seq: last.seq,
            retries,
            request_sha256: compiled.metadata.request_sha256.clone(),
            recovery,
            message,
        })
    }
}

fn provider_error(e: StreamError) -> Error {
    let local = |kind: &str, e: &StreamError| Error::Provider {
        status: None,
        kind: Some(kind.into()),
        message: e.to_string(),
    };
    match e {
        StreamError::Misconfigured(why) => Error::invalid("settings.provider", why),
        StreamError::Provider {
            status,
            kind,
            message,
        } => Error::Provider {
            status,
            kind,
            message,
        },
        StreamError::TooLong {
            status,
            kind,
            message,
            ..
        } => Error::Provider {
            status: Some(status),
            kind: Some(kind.unwrap_or_else(|| "prompt_too_long".into())),
            message,
        },
        StreamError::Malformed(_) => local("malformed_stream", &e),
        StreamError::TooBig(_) => local("answer_too_big", &e),
        StreamError::Timeout(_) => local("timeout", &e),
    }
}
