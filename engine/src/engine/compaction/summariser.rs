//! Which summariser writes a session's summaries (its setting, else the daemon's
//! default), and the `client` summariser's channel: a `summary_requested` event out to
//! the session's subscribers, `context.provide_summary` back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ctxd_protocol::*;
use futures::future::BoxFuture;
use tokio::sync::{broadcast, oneshot};

use crate::engine::{Engine, Loaded, SessionCell};
use ctxd_providers::{ModelRunner, ProviderError, Summariser};
use ctxd_store::error::{Error, Result};

/// Replies awaited from clients that run the model for the daemon.
type PendingSummaries =
    Arc<Mutex<HashMap<String, oneshot::Sender<std::result::Result<String, ProviderError>>>>>;

/// Asks the session's subscribers to run a model and waits for `context.provide_summary`.
struct ClientRunner {
    session_id: String,
    events: broadcast::Sender<crate::engine::Emitted>,
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
        let sent = self.events.send(crate::engine::Emitted::now(
            SessionEvent::SummaryRequested {
                session_id: self.session_id.clone(),
                request_id: request_id.clone(),
                request,
                timeout_secs: timeout.as_secs(),
            },
        ));
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

/// Who writes summaries: the daemon's default summariser and the `client` summariser's
/// replies still awaited.
pub(crate) struct Summaries {
    default: SummariserConfig,
    pending: PendingSummaries,
}

impl Default for Summaries {
    fn default() -> Self {
        Summaries {
            default: SummariserConfig::Embedded,
            pending: PendingSummaries::default(),
        }
    }
}

impl Summaries {
    /// Sessions that choose no summariser get `default`.
    pub(crate) fn set_default(&mut self, default: SummariserConfig) {
        self.default = default;
    }

    /// The summariser of sessions that choose none.
    pub(crate) fn default_config(&self) -> &SummariserConfig {
        &self.default
    }

    /// The session's summariser setting, or the daemon's default.
    pub(crate) fn config(&self, settings: &SessionSettings) -> SummariserConfig {
        settings
            .summariser
            .clone()
            .unwrap_or_else(|| self.default.clone())
    }

    /// The session's summariser with `provider` resolved to its own provider.
    pub(crate) fn resolved(&self, l: &Loaded) -> Result<SummariserConfig> {
        resolve_summariser(
            self.config(&l.row.settings),
            &l.row.settings,
            &l.row.model.model,
        )
    }

    /// The session's summariser, ready to run; a `client` one asks `cell`'s subscribers.
    pub(crate) fn summariser(
        &self,
        l: &Loaded,
        cell: &SessionCell,
        env: &ctxd_providers::EnvLookup,
    ) -> Result<Summariser> {
        let cfg = self.resolved(l)?;
        let runner: Arc<dyn ModelRunner> = Arc::new(ClientRunner {
            session_id: l.row.id.clone(),
            events: cell.sender(),
            pending: self.pending.clone(),
        });
        Summariser::with_env(&cfg, Some(runner), env.clone()).map_err(provider_error)
    }

    /// A client's answer to `summary_requested`, handed to the summary that waits for it.
    pub(crate) fn provide(&self, p: ProvideSummaryParams) -> Result<()> {
        let tx = self
            .pending
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

/// The summariser a session's settings name, with `provider` resolved to the session's
/// own provider (and model).
pub(crate) fn resolve_summariser(
    cfg: SummariserConfig,
    settings: &SessionSettings,
    session_model: &str,
) -> Result<SummariserConfig> {
    let SummariserConfig::Provider {
        model,
        max_output_tokens,
    } = cfg
    else {
        return Ok(cfg);
    };
    let model = model.unwrap_or_else(|| session_model.to_string());
    match &settings.provider {
        None => Err(Error::invalid(
            "settings.summariser",
            "the summariser kind provider uses settings.provider, which this session lacks",
        )),
        Some(ProviderConfig::Anthropic {
            base_url,
            api_key_env,
            timeout_secs,
            max_retries,
            ..
        }) => Ok(SummariserConfig::Anthropic {
            base_url: base_url.clone(),
            api_key_env: api_key_env.clone(),
            model,
            timeout_secs: *timeout_secs,
            max_retries: *max_retries,
            max_output_tokens,
        }),
        Some(ProviderConfig::OpenaiCompatible {
            base_url,
            api_key_env,
            timeout_secs,
            max_retries,
            ..
        }) => Ok(SummariserConfig::OpenAi {
            base_url: base_url.clone(),
            api_key_env: api_key_env.clone(),
            model,
            timeout_secs: *timeout_secs,
            max_retries: *max_retries,
            max_output_tokens,
        }),
    }
}

impl Engine {
    /// `context.provide_summary`: a client's answer to `summary_requested`.
    pub fn provide_summary(&self, p: ProvideSummaryParams) -> Result<()> {
        self.summaries.provide(p)
    }
}
