//! The Anthropic Messages API summariser: `POST {base_url}/v1/messages`.

use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::http::{self, Call, EnvLookup, RetryPolicy};
use super::{ProviderError, prompt};
use ctxd_pipeline::message::ApiMessage;

pub(crate) const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";

pub(crate) struct Anthropic {
    client: reqwest::Client,
    url: String,
    api_key_env: String,
    model: String,
    timeout: Duration,
    retry: RetryPolicy,
    max_tokens: u64,
}

pub(crate) struct Settings<'a> {
    pub(crate) base_url: Option<&'a str>,
    pub(crate) api_key_env: &'a str,
    pub(crate) model: &'a str,
    pub(crate) timeout_secs: Option<u64>,
    pub(crate) max_retries: Option<u32>,
    pub(crate) max_output_tokens: Option<u64>,
}

impl Anthropic {
    pub fn new(s: Settings<'_>) -> Result<Anthropic, ProviderError> {
        if s.api_key_env.trim().is_empty() {
            return Err(ProviderError::Misconfigured(
                "api_key_env must name the environment variable that holds the key".into(),
            ));
        }
        if s.model.trim().is_empty() {
            return Err(ProviderError::Misconfigured(
                "model must not be empty".into(),
            ));
        }
        Ok(Anthropic {
            client: http::client()?,
            url: http::join_url(s.base_url.unwrap_or(DEFAULT_BASE_URL), "/v1/messages")?,
            api_key_env: s.api_key_env.to_string(),
            model: s.model.to_string(),
            timeout: http::timeout(s.timeout_secs)?,
            retry: RetryPolicy::new(s.max_retries),
            max_tokens: max_tokens(s.max_output_tokens)?,
        })
    }

    #[cfg(test)]
    pub(crate) fn set_retry_delays(&mut self, base: Duration) {
        self.retry.base_delay = base;
    }

    /// One text completion of `messages` under `system` (summaries and session-memory
    /// extractions share the transport, the key handling and the retries).
    pub(crate) async fn complete(
        &self,
        system: &str,
        messages: &[ApiMessage],
        env: &EnvLookup,
    ) -> Result<String, ProviderError> {
        let body = prompt::messages_body(Some(&self.model), self.max_tokens, system, messages);
        response_text(&self.post(&body, env).await?)
    }

    /// One model call with `tools` the caller runs (agent hooks): the answer as the API
    /// gave it.
    pub(crate) async fn converse(
        &self,
        system: &str,
        messages: &[Value],
        tools: &Value,
        env: &EnvLookup,
    ) -> Result<Value, ProviderError> {
        let body = serde_json::json!({"model": self.model, "max_tokens": self.max_tokens,
                                      "system": system, "messages": messages, "tools": tools});
        self.post(&body, env).await
    }

    async fn post(&self, body: &Value, env: &EnvLookup) -> Result<Value, ProviderError> {
        // Read per call, so a key rotated in the daemon's environment is picked up and a
        // missing one is reported when it matters.
        let key = http::api_key(env, &self.api_key_env, "Anthropic")?;
        let call = Call {
            provider: "anthropic",
            url: &self.url,
            headers: headers(&self.api_key_env, &key)?,
            timeout: self.timeout,
            retry: self.retry,
            secret: Some(&key),
        };
        http::post_json(&self.client, &call, body).await
    }
}

/// What every Messages API request carries: the key (in a header marked sensitive,
/// named after `key_env` in errors), the API version and the body's type.
pub(crate) fn headers(key_env: &str, key: &str) -> Result<HeaderMap, ProviderError> {
    let mut headers = HeaderMap::new();
    headers.insert(
        HeaderName::from_static("x-api-key"),
        http::secret_header(key_env, key)?,
    );
    headers.insert(
        HeaderName::from_static("anthropic-version"),
        HeaderValue::from_static(API_VERSION),
    );
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(headers)
}

pub(crate) fn max_tokens(configured: Option<u64>) -> Result<u64, ProviderError> {
    match configured {
        Some(0) => Err(ProviderError::Misconfigured(
            "max_output_tokens must be at least 1".into(),
        )),
        Some(n) => Ok(n),
        None => Ok(http::DEFAULT_MAX_OUTPUT_TOKENS),
    }
}

/// The text blocks of a Messages API answer, joined.
pub(crate) fn response_text(answer: &Value) -> Result<String, ProviderError> {
    let text: Vec<&str> = answer
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    if text.is_empty() {
        let stop = answer
            .get("stop_reason")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        return Err(ProviderError::Failed(format!(
            "the model returned no text (stop_reason: {stop})"
        )));
    }
    Ok(text.concat())
}

#[cfg(test)]
mod tests;
