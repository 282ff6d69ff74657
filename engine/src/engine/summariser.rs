//! Which summariser writes a session's summaries (its setting, else the daemon's
//! default), and the `client` summariser's channel: a `summary_requested` event out to
//! the session's subscribers, `context.provide_summary` back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ctxd_protocol::*;
use futures::future::BoxFuture;
use tokio::sync::{broadcast, oneshot};

use super::{Engine, Loaded, SessionCell};
use crate::providers::{ModelRunner, ProviderError, Summariser};
use ctxd_store::error::{Error, Result};

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

pub(crate) fn provider_error(e: ProviderError) -> Error {
    Error::CompactionFailed(e.to_string())
}

impl Engine {
    /// The session's summariser setting, or the daemon's default.
    pub(crate) fn summariser_config(&self, l: &Loaded) -> SummariserConfig {
        l.row
            .settings
            .summariser
            .clone()
            .unwrap_or_else(|| self.default_summariser.clone())
    }

    pub(crate) fn summariser(&self, l: &Loaded, cell: &SessionCell) -> Result<Summariser> {
        let cfg = super::send::resolve_summariser(
            self.summariser_config(l),
            &l.row.settings,
            &l.row.model.model,
        )?;
        let runner: Arc<dyn ModelRunner> = Arc::new(ClientRunner {
            session_id: l.row.id.clone(),
            events: cell.sender(),
            pending: self.pending_summaries.clone(),
        });
        Summariser::new(&cfg, Some(runner)).map_err(provider_error)
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
