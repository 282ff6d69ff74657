//! Summariser providers: what turns a
//! conversation into the nine-section compact summary.
//!
//! - `embedded`: offline and deterministic, no model (the default);
//! - `anthropic`: the Messages API;
//! - `openai`: an OpenAI-compatible chat-completions server (local servers included);
//! - `client`: the attached client runs the model for us through a [`ModelRunner`].
//!
//! Every model provider sends the same conversation (see `prompt`): the messages as the
//! model saw them, then one user message with `prompt::COMPACT_PROMPT`. The model answers with
//! an `<analysis>` scratchpad and a `<summary>`; only the summary is returned
//! (`extract_summary`), because the reasoning would cost context without adding facts.
//!
//! This crate does no retries of its own beyond transport-level ones: shrinking a
//! request that is too long (dropping the oldest rounds) is the caller's, driven by
//! [`ProviderError::PromptTooLong`].
//!
//! A crate of its own, on the protocol and the pipeline alone, so that `ctx memory-worker`
//! summarises without linking the engine, the store or their databases.

mod anthropic;
mod chat_stream;
mod commands;
mod embedded;
mod extract;
mod http;
mod openai;
mod prompt;
mod select;
pub mod stream;
mod stream_error;

pub use http::{EnvLookup, client as http_client, process_env};
pub use stream::{Progress, ProgressReceiver, progress_channel};

/// Folds the events of one streamed Messages-API answer into the message, for a caller
/// that forwards the stream itself (the daemon's HTTP front door) and records what it
/// carried: the same folding `context.send` does, so both record alike.
#[derive(Debug, Default)]
pub struct MessageFolder(stream::Assembler);

impl MessageFolder {
    /// Takes one event's data (its `type` says what it is); an `error` event is an error.
    ///
    /// # Errors
    /// The event breaks the stream's grammar, or is the provider's `error` event.
    pub fn apply(&mut self, data: &serde_json::Value) -> Result<(), String> {
        self.0.apply(data).map_err(|e| e.to_string())
    }

    /// The message, once `message_stop` came.
    ///
    /// # Errors
    /// The stream ended before `message_stop`.
    pub fn finish(self) -> Result<serde_json::Value, String> {
        self.0.finish().map_err(|e| e.to_string())
    }
}

/// Folds a Chat Completions answer into the Messages-API message it stands for, as the
/// OpenAI-compatible provider's answers are recorded: its streamed chunks one by one, or
/// a whole `chat.completion` at once.
#[derive(Debug, Default)]
pub struct ChatFolder {
    chunks: chat_stream::ChatStream,
    folder: stream::Assembler,
}

impl ChatFolder {
    /// Takes one streamed chunk (a `data:` line's JSON).
    ///
    /// # Errors
    /// The chunk is an error chunk, or breaks the stream's grammar.
    pub fn chunk(&mut self, chunk: &serde_json::Value) -> Result<(), String> {
        for event in self.chunks.chunk(chunk).map_err(|e| e.to_string())? {
            self.folder.apply(&event).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The message, once the stream ended (`[DONE]`, or after its `finish_reason`).
    ///
    /// # Errors
    /// The stream ended before it began or before a `finish_reason`.
    pub fn finish(mut self) -> Result<serde_json::Value, String> {
        for event in self.chunks.finish().map_err(|e| e.to_string())? {
            self.folder.apply(&event).map_err(|e| e.to_string())?;
        }
        self.folder.finish().map_err(|e| e.to_string())
    }

    /// A whole `chat.completion`, folded as the one chunk that would carry it all.
    ///
    /// # Errors
    /// As [`ChatFolder::chunk`] and [`ChatFolder::finish`].
    pub fn whole(answer: &serde_json::Value) -> Result<serde_json::Value, String> {
        let choice = answer
            .pointer("/choices/0")
            .ok_or("the answer has no choice")?;
        let message = choice.get("message").cloned().unwrap_or_default();
        let calls: Vec<serde_json::Value> = message
            .get("tool_calls")
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, c)| {
                let mut c = c.clone();
                c["index"] = i.into();
                c
            })
            .collect();
        let content = match message.get("content") {
            Some(serde_json::Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(serde_json::Value::as_str))
                .collect::<String>()
                .into(),
            Some(c) => c.clone(),
            None => serde_json::Value::Null,
        };
        let chunk = serde_json::json!({
            "id": answer.get("id"), "model": answer.get("model"),
            "choices": [{"index": 0, "delta": {"content": content, "tool_calls": calls},
                         "finish_reason": choice.get("finish_reason")}],
            "usage": answer.get("usage"),
        });
        let mut folder = ChatFolder::default();
        folder.chunk(&chunk)?;
        folder.finish()
    }
}

use std::sync::Arc;
use std::time::Duration;

use ctxd_protocol::{Record, SummariserConfig};
use futures::future::BoxFuture;

use ctxd_pipeline::message::ApiMessage;

#[cfg(test)]
pub(crate) use prompt::COMPACT_PROMPT;

/// What a summary is made from.
pub struct SummaryInput<'a> {
    /// The projection as the model saw it (tool-result replacements applied), oldest first.
    pub records: &'a [&'a Record],
    /// The same conversation normalised as API messages (for model providers).
    pub messages: &'a [ApiMessage],
    /// Extra instructions (manual compact, PreCompact hooks).
    pub custom_instructions: Option<&'a str>,
    /// Earlier conversation was dropped to make the request fit; the model should be told.
    pub head_truncated: bool,
    /// Token budget for the summary text.
    pub max_summary_tokens: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// `token_gap`: how many tokens over the model's limit, when the provider says.
    #[error("the summary request is too long for the model")]
    PromptTooLong { token_gap: Option<u64> },
    /// The provider's own message (never containing the key).
    #[error("summariser failed: {0}")]
    Failed(String),
    #[error("summariser timed out after {0:?}")]
    Timeout(Duration),
    /// Names what is wrong (e.g. which environment variable is unset), never a secret.
    #[error("summariser misconfigured: {0}")]
    Misconfigured(String),
}

/// Runs a model on behalf of the daemon through an attached client
/// (`SummariserConfig::Client`).
pub trait ModelRunner: Send + Sync {
    /// `request` is an Anthropic Messages API request body without `model` (the client
    /// runs its own); returns the model's text.
    fn run(
        &self,
        request: serde_json::Value,
        timeout: Duration,
    ) -> BoxFuture<'static, Result<String, ProviderError>>;
}

/// The client may queue the request behind its own work and retry on its side, so it
/// gets longer than one HTTP attempt.
const CLIENT_DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

enum Backend {
    Embedded,
    Anthropic(anthropic::Anthropic),
    OpenAi(openai::OpenAi),
    Client {
        runner: Arc<dyn ModelRunner>,
        timeout: Duration,
    },
}

/// A configured summariser. Cheap to share behind an `Arc`; holds no secret (keys are
/// read from the environment at each call).
pub struct Summariser {
    backend: Backend,
    env: http::EnvLookup,
}

impl std::fmt::Debug for Summariser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Summariser")
            .field("kind", &self.kind())
            .finish_non_exhaustive()
    }
}

impl Summariser {
    /// Checks the configuration (URLs, names, limits) and builds the HTTP client; does not
    /// read the key yet. `runner` is required for `SummariserConfig::Client` and ignored
    /// otherwise.
    pub fn new(
        cfg: &SummariserConfig,
        runner: Option<Arc<dyn ModelRunner>>,
    ) -> Result<Summariser, ProviderError> {
        Summariser::with_env(cfg, runner, http::process_env())
    }

    pub fn with_env(
        cfg: &SummariserConfig,
        runner: Option<Arc<dyn ModelRunner>>,
        env: http::EnvLookup,
    ) -> Result<Summariser, ProviderError> {
        let backend = match cfg {
            SummariserConfig::Embedded => Backend::Embedded,
            SummariserConfig::Anthropic {
                base_url,
                api_key_env,
                model,
                timeout_secs,
                max_retries,
                max_output_tokens,
            } => Backend::Anthropic(anthropic::Anthropic::new(anthropic::Settings {
                base_url: base_url.as_deref(),
                api_key_env,
                model,
                timeout_secs: *timeout_secs,
                max_retries: *max_retries,
                max_output_tokens: *max_output_tokens,
            })?),
            SummariserConfig::OpenAi {
                base_url,
                api_key_env,
                model,
                timeout_secs,
                max_retries,
                max_output_tokens,
            } => Backend::OpenAi(openai::OpenAi::new(openai::Settings {
                base_url,
                api_key_env: api_key_env.as_deref(),
                model,
                timeout_secs: *timeout_secs,
                max_retries: *max_retries,
                max_output_tokens: *max_output_tokens,
            })?),
            SummariserConfig::Server { .. } => {
                return Err(ProviderError::Misconfigured(
                    "the server summariser compacts through settings.provider, not here".into(),
                ));
            }
            SummariserConfig::Provider { .. } => {
                return Err(ProviderError::Misconfigured(
                    "the summariser kind provider is resolved against the session's \
                     settings.provider before it is built"
                        .into(),
                ));
            }
            SummariserConfig::Client { timeout_secs } => {
                let runner = runner.ok_or_else(|| {
                    ProviderError::Misconfigured(
                        "the client summariser needs an attached client to run the model, \
                         and none is attached"
                            .into(),
                    )
                })?;
                let timeout = match timeout_secs {
                    None => CLIENT_DEFAULT_TIMEOUT,
                    Some(_) => http::timeout(*timeout_secs)?,
                };
                Backend::Client { runner, timeout }
            }
        };
        Ok(Summariser { backend, env })
    }

    /// The summary text (nine sections, analysis stripped).
    pub async fn summarise(&self, input: SummaryInput<'_>) -> Result<String, ProviderError> {
        let model_text = match &self.backend {
            Backend::Embedded => {
                if input.custom_instructions.is_some() {
                    tracing::debug!("the embedded summariser cannot follow custom instructions");
                }
                return Ok(embedded::summarise(&input));
            }
            Backend::Anthropic(p) => {
                let messages = prompt::request_messages(&input);
                p.complete(prompt::SYSTEM_PROMPT, &messages, &self.env)
                    .await?
            }
            Backend::OpenAi(p) => {
                let messages = prompt::request_messages(&input);
                p.complete(prompt::SYSTEM_PROMPT, &messages, &self.env)
                    .await?
            }
            Backend::Client { runner, timeout } => {
                let body = prompt::anthropic_body(None, http::DEFAULT_MAX_OUTPUT_TOKENS, &input);
                tracing::debug!(
                    timeout_ms = ctxd_pipeline::saturate::millis(*timeout),
                    "summary via the client"
                );
                // The runner is told the timeout; this guard holds even if it ignores it.
                match tokio::time::timeout(*timeout, runner.run(body, *timeout)).await {
                    Err(_) => return Err(ProviderError::Timeout(*timeout)),
                    Ok(result) => result?,
                }
            }
        };
        let summary = extract_summary(&model_text);
        if summary.is_empty() {
            return Err(ProviderError::Failed(
                "the model's answer holds no summary".into(),
            ));
        }
        Ok(summary)
    }

    /// One text completion of `user` under `system` through the backend's model (prompt
    /// hooks); the embedded and client backends have none to offer.
    pub async fn complete(&self, system: &str, user: &str) -> Result<String, ProviderError> {
        let messages = [ApiMessage::user(vec![ctxd_protocol::ContentBlock::text(
            user,
        )])];
        match &self.backend {
            Backend::Anthropic(p) => p.complete(system, &messages, &self.env).await,
            Backend::OpenAi(p) => p.complete(system, &messages, &self.env).await,
            Backend::Embedded | Backend::Client { .. } => Err(ProviderError::Misconfigured(
                "a model call needs settings.provider".into(),
            )),
        }
    }

    /// One model call with tools the caller runs; the Messages API's answer as it came.
    /// Only the Anthropic backend has tools to offer here.
    pub async fn converse(
        &self,
        system: &str,
        messages: &[serde_json::Value],
        tools: &serde_json::Value,
    ) -> Result<serde_json::Value, ProviderError> {
        match &self.backend {
            Backend::Anthropic(p) => p.converse(system, messages, tools, &self.env).await,
            _ => Err(ProviderError::Misconfigured(
                "an agent hook needs settings.provider of kind anthropic".into(),
            )),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self.backend {
            Backend::Embedded => "embedded",
            Backend::Anthropic(_) => "anthropic",
            Backend::OpenAi(_) => "openai",
            Backend::Client { .. } => "client",
        }
    }
}

/// Strips the analysis scratchpad, returns the inside of `<summary>…</summary>` (or the
/// whole text minus `<analysis>` when there is no summary tag), trimmed. An unclosed tag
/// (the answer hit `max_tokens`) runs to the end of the text.
pub(crate) fn extract_summary(model_text: &str) -> String {
    const A_OPEN: &str = "<analysis>";
    const A_CLOSE: &str = "</analysis>";
    const S_OPEN: &str = "<summary>";
    const S_CLOSE: &str = "</summary>";

    let mut rest = model_text;
    let mut kept = String::with_capacity(model_text.len());
    while let Some(start) = rest.find(A_OPEN) {
        kept.push_str(&rest[..start]);
        let after = &rest[start + A_OPEN.len()..];
        rest = match after.find(A_CLOSE) {
            Some(end) => &after[end + A_CLOSE.len()..],
            // An analysis that never closed: a summary may still follow it.
            None => after.find(S_OPEN).map_or("", |s| &after[s..]),
        };
    }
    kept.push_str(rest);

    match kept.find(S_OPEN) {
        Some(start) => {
            let inner = &kept[start + S_OPEN.len()..];
            let inner = inner.find(S_CLOSE).map_or(inner, |end| &inner[..end]);
            inner.trim().to_string()
        }
        None => kept.trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn summary_inside_tags_without_analysis() {
        let text = "<analysis>\nthinking about it\n</analysis>\n\n<summary>\n1. Primary Request and Intent:\n   fix it\n</summary>\n";
        assert_eq!(
            extract_summary(text),
            "1. Primary Request and Intent:\n   fix it"
        );
    }

    #[test]
    fn no_summary_tag_keeps_the_rest() {
        assert_eq!(
            extract_summary("Intro\n<analysis>x</analysis>\nThe summary."),
            "Intro\n\nThe summary."
        );
        assert_eq!(extract_summary("  plain text  "), "plain text");
    }

    #[test]
    fn unclosed_tags_run_to_the_end() {
        assert_eq!(
            extract_summary("<analysis>never closed <summary>kept"),
            "kept"
        );
        assert_eq!(
            extract_summary("<summary>cut off by max_tokens"),
            "cut off by max_tokens"
        );
        assert_eq!(extract_summary("<analysis>only thinking"), "");
    }

    #[test]
    fn summary_mentioned_in_analysis_is_ignored() {
        let text = "<analysis>I will write <summary> next</analysis><summary>real</summary>";
        assert_eq!(extract_summary(text), "real");
    }

    struct FakeRunner {
        answer: String,
        seen: Mutex<Vec<serde_json::Value>>,
    }

    impl ModelRunner for FakeRunner {
        fn run(
            &self,
            request: serde_json::Value,
            _timeout: Duration,
        ) -> BoxFuture<'static, Result<String, ProviderError>> {
            self.seen.lock().unwrap().push(request);
            let answer = self.answer.clone();
            Box::pin(async move { Ok(answer) })
        }
    }

    struct StuckRunner;

    impl ModelRunner for StuckRunner {
        fn run(
            &self,
            _request: serde_json::Value,
            _timeout: Duration,
        ) -> BoxFuture<'static, Result<String, ProviderError>> {
            Box::pin(futures::future::pending())
        }
    }

    fn one_message() -> Vec<ApiMessage> {
        vec![ApiMessage::user(vec![ctxd_protocol::ContentBlock::text(
            "please refactor the parser",
        )])]
    }

    fn input(messages: &[ApiMessage]) -> SummaryInput<'_> {
        SummaryInput {
            records: &[],
            messages,
            custom_instructions: Some("mention the tests"),
            head_truncated: false,
            max_summary_tokens: 4_000,
        }
    }

    #[tokio::test]
    async fn client_runner_gets_the_anthropic_body_and_the_summary_is_extracted() {
        let runner = Arc::new(FakeRunner {
            answer: "<analysis>secret reasoning</analysis>\n<summary>\nthe summary\n</summary>"
                .into(),
            seen: Mutex::new(Vec::new()),
        });
        let s = Summariser::new(
            &SummariserConfig::Client { timeout_secs: None },
            Some(runner.clone()),
        )
        .unwrap();
        assert_eq!(s.kind(), "client");
        let messages = one_message();
        let out = s.summarise(input(&messages)).await.unwrap();
        assert_eq!(out, "the summary");

        let seen = runner.seen.lock().unwrap();
        let body = &seen[0];
        assert!(body.get("model").is_none(), "the client picks the model");
        assert!(body.get("tools").is_none());
        assert_eq!(body["max_tokens"], http::DEFAULT_MAX_OUTPUT_TOKENS);
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["role"], "user");
        let prompt = last["content"].as_array().unwrap().last().unwrap()["text"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(prompt.starts_with(COMPACT_PROMPT));
        assert!(prompt.contains("mention the tests"));
        assert_eq!(
            last["content"][0]["text"], "please refactor the parser",
            "the prompt joins the trailing user message"
        );
    }

    #[test]
    fn client_without_runner_is_misconfigured() {
        let err = Summariser::new(
            &SummariserConfig::Client {
                timeout_secs: Some(5),
            },
            None,
        )
        .unwrap_err();
        assert!(matches!(err, ProviderError::Misconfigured(_)), "{err:?}");
    }

    #[tokio::test]
    async fn a_runner_that_never_answers_times_out() {
        let s = Summariser::new(
            &SummariserConfig::Client {
                timeout_secs: Some(1),
            },
            Some(Arc::new(StuckRunner)),
        )
        .unwrap();
        let messages = one_message();
        let err = s.summarise(input(&messages)).await.unwrap_err();
        assert!(
            matches!(err, ProviderError::Timeout(d) if d == Duration::from_secs(1)),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn runner_errors_pass_through_and_empty_answers_fail() {
        let s = Summariser::new(
            &SummariserConfig::Client { timeout_secs: None },
            Some(Arc::new(FakeRunner {
                answer: "<analysis>only thinking</analysis>".into(),
                seen: Mutex::new(Vec::new()),
            })),
        )
        .unwrap();
        let messages = one_message();
        let err = s.summarise(input(&messages)).await.unwrap_err();
        assert!(matches!(err, ProviderError::Failed(_)), "{err:?}");
    }

    #[test]
    fn summariser_and_its_future_can_cross_threads() {
        fn send_sync<T: Send + Sync>(_: &T) {}
        fn send<T: Send>(_: &T) {}
        let s = Summariser::new(&SummariserConfig::Embedded, None).unwrap();
        send_sync(&s);
        let messages = one_message();
        let future = s.summarise(input(&messages));
        send(&future);
    }

    #[tokio::test]
    async fn embedded_needs_nothing() {
        let s = Summariser::new(&SummariserConfig::Embedded, None).unwrap();
        assert_eq!(s.kind(), "embedded");
        assert_eq!(format!("{s:?}"), "Summariser { kind: \"embedded\", .. }");
        let out = s.summarise(input(&[])).await.unwrap();
        assert!(out.starts_with("1. Primary Request and Intent:"));
        assert!(out.contains("\n9. Optional Next Step:"));
    }
}
