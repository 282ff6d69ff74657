//! What the HTTP providers share: one POST with retries, backoff and a per-attempt
//! timeout, and the mapping of provider errors to [`ProviderError`].
//!
//! Secrets: the key travels only in a header marked sensitive; it is never logged, and
//! every message built from a response is scrubbed of it (some servers echo what they
//! were sent).

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::ProviderError;
use ctxd_pipeline::limits::{
    MAX_PROVIDER_ERROR_BYTES, MAX_PROVIDER_JSON_BYTES, MAX_PROVIDER_RETRIES, MAX_RETRY_AFTER,
};

/// Where provider keys are looked up: an environment (the daemon's own; injectable so
/// tests never touch the process environment, which runs tests in parallel and whose
/// `set_var` is unsafe in edition 2024), then, when set, the home's environment file.
type VarLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

#[derive(Clone)]
pub struct EnvLookup {
    vars: VarLookup,
    file: Option<Arc<Path>>,
}

impl EnvLookup {
    pub fn vars(f: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> EnvLookup {
        EnvLookup {
            vars: Arc::new(f),
            file: None,
        }
    }

    /// Also looks in `file` (`KEY=VALUE` lines) for what the environment lacks. The file
    /// is read at each lookup, so a key added to it needs no restart.
    pub fn with_file(mut self, file: &Path) -> EnvLookup {
        self.file = Some(Arc::from(file));
        self
    }

    /// The value of `name`: the environment's, else the file's. An unsafe or unreadable
    /// file is an error naming it, never silently skipped.
    fn get(&self, name: &str) -> Result<Option<String>, ProviderError> {
        if let Some(v) = (self.vars)(name).filter(|v| !v.trim().is_empty()) {
            return Ok(Some(v));
        }
        match &self.file {
            Some(file) => env_file_value(file, name),
            None => Ok(None),
        }
    }
}

pub fn process_env() -> EnvLookup {
    EnvLookup::vars(|name| std::env::var(name).ok())
}

/// An environment file larger than this is refused: it holds a few keys.
const MAX_ENV_FILE_BYTES: u64 = 64 * 1024;

/// `name`'s value in the environment file `file` (`KEY=VALUE` lines; blank lines, `#`
/// comments and an `export ` prefix allowed; a value may be quoted). A missing file holds
/// nothing. The file holds secrets: it must belong to the daemon's user and be readable
/// by no one else, or it is refused. Errors name the file and line, never a value.
fn env_file_value(file: &Path, name: &str) -> Result<Option<String>, ProviderError> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let refuse = |why: String| {
        ProviderError::Misconfigured(format!("the environment file {}: {why}", file.display()))
    };
    let f = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(refuse(format!("cannot be read ({e})"))),
    };
    let meta = f
        .metadata()
        .map_err(|e| refuse(format!("cannot be inspected ({e})")))?;
    let own = ctxd_protocol::socket::own_uid();
    if meta.uid() != own {
        return Err(refuse(format!(
            "refused: it belongs to uid {}, not to the daemon's user ({own})",
            meta.uid()
        )));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(refuse(format!(
            "refused: it holds API keys, and its mode {:o} lets others read or change it (chmod 600 it)",
            meta.mode() & 0o7777
        )));
    }
    if !meta.is_file() {
        return Err(refuse("refused: it is not a regular file".into()));
    }
    let mut text = String::new();
    f.take(MAX_ENV_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| refuse(format!("cannot be read as UTF-8 text ({e})")))?;
    if text.len() as u64 > MAX_ENV_FILE_BYTES {
        return Err(refuse(format!("refused: over {MAX_ENV_FILE_BYTES} bytes")));
    }
    let mut found = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            return Err(refuse(format!("line {} is not KEY=VALUE", i + 1)));
        };
        if key.trim() != name {
            continue;
        }
        let value = value.trim();
        let unquoted = [('"', '"'), ('\'', '\'')]
            .iter()
            .find_map(|(open, close)| {
                value
                    .strip_prefix(*open)
                    .and_then(|v| v.strip_suffix(*close))
            })
            .unwrap_or(value);
        // The last assignment wins, as in a shell.
        found = Some(unquoted.to_string());
    }
    Ok(found.filter(|v| !v.trim().is_empty()))
}

/// The key named by `var`, or `Misconfigured` naming the variable and every place ctxd
/// looked (never a value).
pub(crate) fn api_key(env: &EnvLookup, var: &str, provider: &str) -> Result<String, ProviderError> {
    match env.get(var)? {
        Some(key) => Ok(key.trim().to_string()),
        None => {
            let places = match &env.file {
                Some(file) => format!(
                    "is set neither in the daemon's environment nor in its environment file {} \
                     (add a line {var}=... to that file, mode 0600; it is read at each call, \
                     so no restart is needed)",
                    file.display()
                ),
                None => format!(
                    "is not set in the daemon's environment (ctxd reads its own environment, not \
                     the shell's of the client that asks: set {var} where the daemon starts, \
                     then restart it)"
                ),
            };
            Err(ProviderError::Misconfigured(format!(
                "the {provider} API key: the variable {var} {places}"
            )))
        }
    }
}

/// A header carrying the key, marked sensitive so no `Debug` of the request shows it.
pub(crate) fn secret_header(var: &str, value: &str) -> Result<HeaderValue, ProviderError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| {
        ProviderError::Misconfigured(format!(
            "the value of the environment variable {var} is not a valid HTTP header value"
        ))
    })?;
    v.set_sensitive(true);
    Ok(v)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    pub(crate) max_retries: u32,
    pub(crate) base_delay: Duration,
    pub(crate) max_delay: Duration,
}

pub(crate) const DEFAULT_MAX_RETRIES: u32 = 2;
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Claude Code reserves 20,000 output tokens for a summary (p99.99 of its summaries is
/// about 17,400); the analysis shares the same budget.
pub(crate) const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 20_000;

impl RetryPolicy {
    /// At most `MAX_PROVIDER_RETRIES` whatever is asked (settings past it are refused
    /// when set; this holds for any other way in).
    pub fn new(max_retries: Option<u32>) -> RetryPolicy {
        RetryPolicy {
            max_retries: max_retries
                .unwrap_or(DEFAULT_MAX_RETRIES)
                .min(MAX_PROVIDER_RETRIES),
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
        }
    }

    /// The wait before retry `attempt + 1`: the provider's `retry-after` when it gives
    /// one (at most `MAX_RETRY_AFTER`), never less than the first backoff step, so a
    /// server answering `retry-after: 0` cannot turn the retries into a burst.
    pub(crate) fn after(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        retry_after.map_or_else(
            || self.delay(attempt),
            |d| d.min(MAX_RETRY_AFTER).max(self.base_delay),
        )
    }

    /// `base × 2^attempt`, capped. No jitter: one daemon sends few summary requests, and
    /// fixed delays keep the behaviour reproducible.
    pub(crate) fn delay(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(16)).unwrap_or(u32::MAX);
        self.base_delay.saturating_mul(factor).min(self.max_delay)
    }
}

pub(crate) fn timeout(secs: Option<u64>) -> Result<Duration, ProviderError> {
    match secs {
        None => Ok(DEFAULT_TIMEOUT),
        Some(0) => Err(ProviderError::Misconfigured(
            "timeout_secs must be at least 1".into(),
        )),
        Some(s) => Ok(Duration::from_secs(s)),
    }
}

/// One HTTP client for the process: summarisers are built per compaction, and sharing
/// the client shares its connection pool and TLS setup. TLS is rustls with the `ring`
/// provider (built from C and Rust sources alone; aws-lc-rs would need cmake and takes
/// far longer to build). The provider is installed as the process default once; if
/// something else installed one first, that one is used.
pub fn client() -> Result<reqwest::Client, ProviderError> {
    // Unit tests each run their own runtime; a pooled connection whose task died with an
    // earlier test's runtime must not be handed to a later one.
    if cfg!(test) {
        return build_client().map_err(ProviderError::Misconfigured);
    }
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(build_client)
        .clone()
        .map_err(ProviderError::Misconfigured)
}

fn build_client() -> Result<reqwest::Client, String> {
    // An error means a provider is already installed, which is just as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .user_agent(concat!("ctxd/", env!("CARGO_PKG_VERSION")))
        // A dead host should cost a retry, not the whole per-attempt timeout.
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

pub(crate) fn join_url(base: &str, path: &str) -> Result<String, ProviderError> {
    let url = format!("{}{path}", base.trim_end_matches('/'));
    reqwest::Url::parse(&url)
        .map_err(|e| ProviderError::Misconfigured(format!("invalid base_url {base:?}: {e}")))?;
    Ok(url)
}

pub(crate) struct Call<'a> {
    pub(crate) provider: &'static str,
    pub(crate) url: &'a str,
    pub(crate) headers: HeaderMap,
    pub(crate) timeout: Duration,
    pub(crate) retry: RetryPolicy,
    /// Scrubbed from every error message.
    pub(crate) secret: Option<&'a str>,
}

/// POSTs `body` and returns the decoded JSON of a successful answer.
pub(crate) async fn post_json(
    client: &reqwest::Client,
    call: &Call<'_>,
    body: &Value,
) -> Result<Value, ProviderError> {
    let mut attempt: u32 = 0;
    loop {
        tracing::debug!(
            provider = call.provider,
            url = call.url,
            attempt,
            "summary request"
        );
        let send = async {
            let response = client
                .post(call.url)
                .headers(call.headers.clone())
                .json(body)
                .send()
                .await?;
            let status = response.status();
            let retry_after = retry_after(response.headers(), std::time::SystemTime::now());
            let text = if status.is_success() {
                match bounded_body(response, MAX_PROVIDER_JSON_BYTES).await? {
                    Some(bytes) => Ok(bytes),
                    None => Err(MAX_PROVIDER_JSON_BYTES),
                }
            } else {
                Ok(error_text(response, MAX_PROVIDER_ERROR_BYTES)
                    .await
                    .into_bytes())
            };
            Ok::<_, reqwest::Error>((status, retry_after, text))
        };
        // Not retried: an attempt that used the whole timeout would likely do so again,
        // and the caller's circuit breaker is the better judge.
        let Ok(outcome) = tokio::time::timeout(call.timeout, send).await else {
            return Err(ProviderError::Timeout(call.timeout));
        };
        let retry = attempt < call.retry.max_retries;
        match outcome {
            Err(e) => {
                let message = redact(&error_chain(&e), call.secret);
                if retry && !e.is_builder() {
                    let delay = call.retry.delay(attempt);
                    tracing::warn!(
                        provider = call.provider,
                        attempt,
                        delay_ms = ctxd_pipeline::saturate::millis(delay),
                        error = %message,
                        "summary request failed, retrying"
                    );
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                    continue;
                }
                return Err(ProviderError::Failed(format!("request failed: {message}")));
            }
            Ok((_, _, Err(max))) => {
                return Err(ProviderError::Failed(format!(
                    "the provider's answer is over {max} bytes"
                )));
            }
            Ok((status, _, Ok(bytes))) if status.is_success() => {
                let mut answer: Value = serde_json::from_slice(&bytes).map_err(|e| {
                    ProviderError::Failed(format!("unreadable response (HTTP {status}): {e}"))
                })?;
                // A server that echoes the key must not get it into a summary, a hook's
                // verdict or a log line.
                scrub(&mut answer, call.secret);
                return Ok(answer);
            }
            Ok((status, retry_after, Ok(bytes))) => {
                let error = ErrorBody::parse(&String::from_utf8_lossy(&bytes));
                if let Some(gap) = error.prompt_too_long(status) {
                    return Err(ProviderError::PromptTooLong { token_gap: gap });
                }
                let message = redact(&error.describe(status), call.secret);
                if retry && retryable(status) {
                    let delay = call.retry.after(attempt, retry_after);
                    tracing::warn!(
                        provider = call.provider,
                        attempt,
                        status = status.as_u16(),
                        delay_ms = ctxd_pipeline::saturate::millis(delay),
                        "summary request refused, retrying"
                    );
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                    continue;
                }
                return Err(ProviderError::Failed(message));
            }
        }
    }
}

/// 408, 429, every 5xx (Anthropic's 529 "overloaded" included).
pub(crate) fn retryable(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 429) || status.is_server_error() || status.as_u16() == 529
}

/// `Retry-After` in either form of RFC 9110: seconds, or an HTTP date (a date already
/// past means now). Values no `Duration` can hold, negative or unreadable ones are
/// ignored (the caller's backoff applies); the caller caps the rest.
pub(crate) fn retry_after(headers: &HeaderMap, now: std::time::SystemTime) -> Option<Duration> {
    let v = headers.get(HeaderName::from_static("retry-after"))?;
    let v = v.to_str().ok()?.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// The body of `response`, or `None` when it is over `max` bytes (reading stops there).
pub(crate) async fn bounded_body(
    mut response: reqwest::Response,
    max: usize,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    if response
        .content_length()
        .is_some_and(|n| usize::try_from(n).map_or(true, |n| n > max))
    {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if bytes.len().saturating_add(chunk.len()) > max {
            return Ok(None);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Some(bytes))
}

/// The first `max` bytes of an error answer, as text (the rest is not read: the message
/// is at the start, and a server that sends more is not owed the memory).
pub(crate) async fn error_text(mut response: reqwest::Response, max: usize) -> String {
    let mut bytes = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = max.saturating_sub(bytes.len());
        bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if bytes.len() >= max {
            break;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Replaces `secret` in every string of `value`, object keys included.
pub(crate) fn scrub(value: &mut Value, secret: Option<&str>) {
    let Some(secret) = secret.filter(|s| s.len() >= 4) else {
        return;
    };
    scrub_with(value, secret);
}

fn scrub_with(value: &mut Value, secret: &str) {
    match value {
        Value::String(s) => {
            if s.contains(secret) {
                *s = s.replace(secret, REDACTED);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| scrub_with(v, secret)),
        Value::Object(map) => {
            if map.keys().any(|k| k.contains(secret)) {
                let old = std::mem::take(map);
                *map = old
                    .into_iter()
                    .map(|(k, v)| (k.replace(secret, REDACTED), v))
                    .collect();
            }
            map.values_mut().for_each(|v| scrub_with(v, secret));
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

const REDACTED: &str = "[redacted]";

pub(crate) fn redact(message: &str, secret: Option<&str>) -> String {
    match secret {
        Some(s) if s.len() >= 4 => message.replace(s, REDACTED),
        _ => message.to_string(),
    }
}

/// The useful parts of an error answer, whatever the server's dialect: Anthropic's
/// `{"type":"error","error":{"type","message"}}`, OpenAI's `{"error":{"message","type",
/// "code"}}`, llama.cpp's extra `n_prompt_tokens`/`n_ctx`, or a bare string.
#[derive(Debug, Default)]
pub(crate) struct ErrorBody {
    pub(crate) kind: Option<String>,
    code: Option<String>,
    message: String,
    /// (prompt tokens, context size) when the server reports them as numbers.
    sizes: Option<(u64, u64)>,
}

impl ErrorBody {
    pub fn parse(text: &str) -> ErrorBody {
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            return ErrorBody {
                message: text.trim().chars().take(500).collect(),
                ..ErrorBody::default()
            };
        };
        let err = v.get("error").unwrap_or(&v);
        let str_of = |v: Option<&Value>| match v {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let message = match err {
            Value::String(s) => s.clone(),
            _ => str_of(err.get("message"))
                .or_else(|| str_of(v.get("message")))
                .or_else(|| str_of(v.get("detail")))
                .unwrap_or_else(|| text.trim().chars().take(500).collect()),
        };
        let sizes = err
            .get("n_prompt_tokens")
            .and_then(Value::as_u64)
            .zip(err.get("n_ctx").and_then(Value::as_u64));
        ErrorBody {
            kind: str_of(err.get("type")),
            code: str_of(err.get("code")),
            message,
            sizes,
        }
    }

    pub(crate) fn describe(&self, status: StatusCode) -> String {
        match &self.kind {
            Some(kind) if !kind.is_empty() => {
                format!("HTTP {} {kind}: {}", status.as_u16(), self.message)
            }
            _ => format!("HTTP {}: {}", status.as_u16(), self.message),
        }
    }

    /// `Some(gap)` when the answer says the prompt does not fit the model.
    pub(crate) fn prompt_too_long(&self, status: StatusCode) -> Option<Option<u64>> {
        if !matches!(status.as_u16(), 400 | 413) {
            return None;
        }
        let lower = self.message.to_ascii_lowercase();
        let said = status.as_u16() == 413
            || self.kind.as_deref() == Some("request_too_large")
            || self.kind.as_deref() == Some("exceed_context_size_error")
            || self.code.as_deref() == Some("context_length_exceeded")
            || [
                "prompt is too long",
                "context length",
                "context_length",
                "context window",
                "context size",
                "maximum context",
            ]
            .iter()
            .any(|p| lower.contains(p));
        said.then(|| {
            self.sizes
                .and_then(|(n, max)| n.checked_sub(max))
                .or_else(|| token_gap(&self.message))
                .filter(|g| *g > 0)
        })
    }
}

/// The excess tokens in a provider's message:
/// - Anthropic: "prompt is too long: 210000 tokens > 200000 maximum";
/// - OpenAI and vLLM: "maximum context length is 8192 tokens. However, your messages
///   resulted in 9000 tokens" (or "you requested 9000 tokens").
pub(crate) fn token_gap(message: &str) -> Option<u64> {
    let lower = message.to_ascii_lowercase();
    if let Some(at) = lower.find(" tokens > ") {
        let before = last_number(&lower[..at])?;
        let after = first_number(&lower[at + " tokens > ".len()..])?;
        return before.checked_sub(after);
    }
    let max = lower
        .find("context length is")
        .and_then(|i| first_number(&lower[i..]))?;
    let used = ["resulted in", "requested", "you have"]
        .iter()
        .find_map(|p| lower.find(p).and_then(|i| first_number(&lower[i..])))?;
    used.checked_sub(max)
}

fn first_number(s: &str) -> Option<u64> {
    let start = s.find(|c: char| c.is_ascii_digit())?;
    let digits: String = s[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn last_number(s: &str) -> Option<u64> {
    let end = s.rfind(|c: char| c.is_ascii_digit())? + 1;
    let start = s[..end]
        .rfind(|c: char| !(c.is_ascii_digit() || c == ','))
        .map_or(0, |i| i + 1);
    s[start..end].replace(',', "").parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates_and_never_panics() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2026 07:28:00 GMT").unwrap();
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert("retry-after", v.parse().unwrap());
            retry_after(&h, now)
        };
        assert_eq!(with("120"), Some(Duration::from_secs(120)));
        assert_eq!(with(" 1.5 "), Some(Duration::from_millis(1500)));
        assert_eq!(
            with("Wed, 21 Oct 2026 07:28:30 GMT"),
            Some(Duration::from_secs(30))
        );
        assert_eq!(with("Wed, 21 Oct 2026 07:00:00 GMT"), Some(Duration::ZERO));
        // Too big for a Duration, negative, not a number: ignored, no panic.
        assert_eq!(with("1e300"), None);
        assert_eq!(with("-5"), None);
        assert_eq!(with("soon"), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
    }

    #[test]
    fn gaps_from_provider_messages() {
        assert_eq!(
            token_gap("prompt is too long: 210000 tokens > 200000 maximum"),
            Some(10_000)
        );
        assert_eq!(
            token_gap(
                "This model's maximum context length is 8192 tokens. However, your messages \
                 resulted in 9,000 tokens. Please reduce the length of the messages."
            ),
            Some(808)
        );
        assert_eq!(
            token_gap(
                "This model's maximum context length is 4096 tokens. However, you requested \
                 5000 tokens (4000 in the messages, 1000 in the completion)."
            ),
            Some(904)
        );
        assert_eq!(token_gap("something else entirely"), None);
    }

    #[test]
    fn llama_cpp_sizes_give_the_gap() {
        let body = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}"#;
        let e = ErrorBody::parse(body);
        assert_eq!(e.prompt_too_long(StatusCode::BAD_REQUEST), Some(Some(904)));
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let p = RetryPolicy::new(None);
        assert_eq!(p.delay(0), Duration::from_millis(500));
        assert_eq!(p.delay(1), Duration::from_millis(1_000));
        assert_eq!(p.delay(3), Duration::from_millis(4_000));
        assert_eq!(p.delay(10), Duration::from_secs(8));
        assert_eq!(p.delay(u32::MAX), Duration::from_secs(8));
    }

    #[test]
    fn retryable_statuses() {
        for s in [408, 429, 500, 502, 503, 529] {
            assert!(retryable(StatusCode::from_u16(s).unwrap()), "{s}");
        }
        for s in [400, 401, 403, 404, 413, 422] {
            assert!(!retryable(StatusCode::from_u16(s).unwrap()), "{s}");
        }
    }

    #[test]
    fn redaction_scrubs_every_occurrence() {
        assert_eq!(
            redact("bad key sk-123456, really sk-123456", Some("sk-123456")),
            "bad key [redacted], really [redacted]"
        );
    }

    #[test]
    fn scrubbing_reaches_every_string_and_key() {
        let key = "sk-echo-123456";
        let mut v = serde_json::json!({
            "id": format!("msg_{key}"),
            "content": [{"type": "text", "text": format!("your key is {key}.")},
                        {"type": "tool_use", "input": {key: [format!("{key}{key}")]}}],
            "n": 3,
        });
        scrub(&mut v, Some(key));
        assert!(!v.to_string().contains(key), "{v}");
        assert_eq!(v["content"][0]["text"], "your key is [redacted].");
        assert_eq!(
            v["content"][1]["input"]["[redacted]"][0],
            "[redacted][redacted]"
        );
        let untouched = v.clone();
        scrub(&mut v, None);
        assert_eq!(v, untouched);
    }

    #[test]
    fn retries_are_capped_and_never_immediate() {
        assert_eq!(
            RetryPolicy::new(Some(1_000)).max_retries,
            MAX_PROVIDER_RETRIES
        );
        assert_eq!(RetryPolicy::new(Some(3)).max_retries, 3);
        let p = RetryPolicy::new(None);
        assert_eq!(p.after(0, Some(Duration::ZERO)), Duration::from_millis(500));
        assert_eq!(p.after(5, Some(Duration::ZERO)), Duration::from_millis(500));
        assert_eq!(
            p.after(0, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(
            p.after(0, Some(Duration::from_secs(3_600))),
            MAX_RETRY_AFTER
        );
        assert_eq!(p.after(2, None), Duration::from_secs(2));
    }
}
