//! A streamed Messages API call, for `context.send`: the compiled request goes out with
//! `"stream": true`, and the server-sent events are folded into the message they
//! describe, as the provider streamed it (every block and field kept, unknown ones too).
//! The SSE framing is eventsource-stream's; the event grammar is the Messages API's.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::header::HeaderMap;
use serde_json::{Map, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use ctxd_protocol::{ProviderConfig, TurnEvent};
use reqwest::header::{HeaderName, HeaderValue};

use super::http::{self, ErrorBody, RetryPolicy};
pub use super::stream_error::StreamError;
use ctxd_pipeline::limits::{
    MAX_PROGRESS_QUEUE_BYTES, MAX_PROVIDER_ANSWER_BYTES, MAX_PROVIDER_ERROR_BYTES,
    MAX_PROVIDER_STREAM_BYTES,
};

/// The whole call's bound when the session's provider names none.
const DEFAULT_TURN_TIMEOUT: Duration = Duration::from_secs(600);

/// `body` (a compiled request) asking to be streamed: `"stream": true` in front of its
/// members, so the rest goes out byte for byte as compiled.
pub(crate) fn streamed(body: &str) -> String {
    match body.trim_start().strip_prefix('{') {
        Some(rest) if rest.trim_start().starts_with('}') => "{\"stream\":true}".to_string(),
        Some(rest) => format!("{{\"stream\":true,{rest}"),
        None => body.to_string(),
    }
}

/// Where a streamed turn reports what it receives (a `context.send_stream` caller).
/// Events wait for the reader in a queue bounded in bytes: when the reader falls
/// `MAX_PROGRESS_QUEUE_BYTES` behind, the turn waits for it (and the reader's own bound,
/// its connection's, ends a reader that stops), so a reader that never reads costs the
/// daemon that bound, not the answer's size in parsed events.
#[derive(Debug)]
pub struct Progress {
    tx: tokio::sync::mpsc::UnboundedSender<Queued>,
    room: Arc<Semaphore>,
}

/// The reading end of a [`Progress`].
#[derive(Debug)]
pub struct ProgressReceiver {
    rx: tokio::sync::mpsc::UnboundedReceiver<Queued>,
}

/// An event and the queue room it holds until the reader takes it.
#[derive(Debug)]
struct Queued {
    event: TurnEvent,
    _room: Option<OwnedSemaphorePermit>,
}

/// What a queued provider event is counted as beyond its bytes: the parsed event and the
/// notification it becomes.
const EVENT_OVERHEAD_BYTES: usize = 256;

/// A progress queue and its reader.
pub fn progress_channel() -> (Progress, ProgressReceiver) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let room = Arc::new(Semaphore::new(MAX_PROGRESS_QUEUE_BYTES));
    (Progress { tx, room }, ProgressReceiver { rx })
}

impl Progress {
    /// Queues a provider event of `bytes` (as it came), once the queue has room for it.
    pub(crate) async fn event(&self, event: Value, bytes: usize) {
        let cost = bytes
            .saturating_add(EVENT_OVERHEAD_BYTES)
            .min(MAX_PROGRESS_QUEUE_BYTES);
        let cost = u32::try_from(cost).unwrap_or(u32::MAX);
        // The semaphore is never closed, so this fails only if it were; the event then
        // goes uncounted rather than lost.
        let room = self.room.clone().acquire_many_owned(cost).await.ok();
        let _ = self.tx.send(Queued {
            event: TurnEvent::Event { event },
            _room: room,
        });
    }

    /// Queues one of the turn's own few, small events (started, retrying, recovering).
    pub fn note(&self, event: TurnEvent) {
        let _ = self.tx.send(Queued { event, _room: None });
    }
}

impl ProgressReceiver {
    /// The next event; `None` once the turn dropped its end.
    pub async fn recv(&mut self) -> Option<TurnEvent> {
        self.rx.recv().await.map(|q| q.event)
    }

    /// The next event already queued, if any.
    pub fn try_recv(&mut self) -> Option<TurnEvent> {
        self.rx.try_recv().ok().map(|q| q.event)
    }
}

/// The wire form a provider streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// Messages API events.
    Messages,
    /// Chat Completions chunks, translated into Messages API events.
    Chat,
}

/// One turn through the session's provider: `body` is the compiled Messages API request,
/// `headers` what the compile says it needs (`anthropic-beta`). The key is read from the
/// environment now, sent in a sensitive header, and scrubbed from every error.
pub async fn turn(
    cfg: &ProviderConfig,
    body: &str,
    headers: &BTreeMap<String, String>,
    env: &http::EnvLookup,
    progress: Option<&Progress>,
) -> Result<(Value, u32), StreamError> {
    // The session's provider, not the summariser, is what is misconfigured here.
    let misconfigured = |e: super::ProviderError| match e {
        super::ProviderError::Misconfigured(why) => StreamError::Misconfigured(why),
        other => StreamError::Misconfigured(other.to_string()),
    };
    let (url, map, key, body, dialect, timeout_secs, max_retries) = match cfg {
        ProviderConfig::Anthropic {
            base_url,
            api_key_env,
            headers: extra,
            timeout_secs,
            max_retries,
        } => {
            let url = http::join_url(
                base_url
                    .as_deref()
                    .unwrap_or(super::anthropic::DEFAULT_BASE_URL),
                "/v1/messages",
            )
            .map_err(misconfigured)?;
            let key = http::api_key(env, api_key_env, "Anthropic").map_err(misconfigured)?;
            let mut map = configured_headers(extra, headers)?;
            // Last, so that no configured header replaces the key, the version or the type.
            map.extend(super::anthropic::headers(api_key_env, &key).map_err(misconfigured)?);
            let body = streamed(body);
            (
                url,
                map,
                Some(key),
                body,
                Dialect::Messages,
                timeout_secs,
                max_retries,
            )
        }
        ProviderConfig::OpenaiCompatible {
            base_url,
            api_key_env,
            headers: extra,
            timeout_secs,
            max_retries,
        } => {
            let url = http::join_url(base_url, "/chat/completions").map_err(misconfigured)?;
            // The compile's anthropic-beta headers mean nothing to this server.
            let mut map = configured_headers(extra, &BTreeMap::new())?;
            map.insert(
                reqwest::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            let key = match api_key_env {
                Some(var) => {
                    let key =
                        http::api_key(env, var, "OpenAI-compatible").map_err(misconfigured)?;
                    map.insert(
                        reqwest::header::AUTHORIZATION,
                        http::secret_header(var, &format!("Bearer {key}"))
                            .map_err(misconfigured)?,
                    );
                    Some(key)
                }
                None => None,
            };
            let body = chat_streamed(body)?;
            (
                url,
                map,
                key,
                body,
                Dialect::Chat,
                timeout_secs,
                max_retries,
            )
        }
    };
    let timeout = match timeout_secs {
        Some(0) => {
            return Err(StreamError::Misconfigured(
                "timeout_secs must be at least 1".into(),
            ));
        }
        Some(s) => Duration::from_secs(*s),
        None => DEFAULT_TURN_TIMEOUT,
    };
    let client = http::client().map_err(misconfigured)?;
    let call = Call {
        url: &url,
        headers: map,
        body,
        dialect,
        timeout,
        retry: RetryPolicy::new(*max_retries),
        max_bytes: MAX_PROVIDER_ANSWER_BYTES,
        secret: key.as_deref(),
        progress,
    };
    send(&client, &call).await
}

/// The Chat Completions body of a compiled request, asking for a stream with its usage.
fn chat_streamed(body: &str) -> Result<String, StreamError> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| StreamError::Misconfigured(format!("the compiled body is not JSON: {e}")))?;
    let mut chat = ctxd_pipeline::openai_chat::translate(&v);
    chat["stream"] = Value::Bool(true);
    chat["stream_options"] = serde_json::json!({"include_usage": true});
    Ok(chat.to_string())
}

/// The provider's configured headers, with the compile's `anthropic-beta` values joined
/// to any configured ones. The key may not be given here.
fn configured_headers(
    extra: &BTreeMap<String, String>,
    compiled: &BTreeMap<String, String>,
) -> Result<HeaderMap, StreamError> {
    let mut map = HeaderMap::new();
    let mut betas: Vec<String> = Vec::new();
    for (name, value) in extra.iter().chain(compiled) {
        if name.eq_ignore_ascii_case("anthropic-beta") {
            betas.extend(
                value
                    .split(',')
                    .map(|b| b.trim().to_string())
                    .filter(|b| !b.is_empty()),
            );
            continue;
        }
        if name.eq_ignore_ascii_case("x-api-key") || name.eq_ignore_ascii_case("authorization") {
            return Err(StreamError::Misconfigured(format!(
                "headers must not carry the key ({name}): name its variable in api_key_env"
            )));
        }
        let (Ok(n), Ok(v)) = (
            HeaderName::try_from(name.as_str()),
            HeaderValue::from_str(value),
        ) else {
            return Err(StreamError::Misconfigured(format!(
                "header {name:?} is not a valid HTTP header"
            )));
        };
        map.insert(n, v);
    }
    // Each beta once, in the order first named (the configured ones, then the compile's).
    let mut seen = std::collections::BTreeSet::new();
    betas.retain(|b| seen.insert(b.clone()));
    if !betas.is_empty() {
        let joined = betas.join(",");
        let v = HeaderValue::from_str(&joined).map_err(|_| {
            StreamError::Misconfigured(format!("anthropic-beta {joined:?} is not a header value"))
        })?;
        map.insert(HeaderName::from_static("anthropic-beta"), v);
    }
    Ok(map)
}

/// Folds the events of one streamed message into the message.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    message: Option<Value>,
    /// `input_json_delta` pieces by block index, parsed at the block's stop.
    partial_json: BTreeMap<usize, String>,
    pub(crate) done: bool,
}

fn malformed(what: impl Into<String>) -> StreamError {
    StreamError::Malformed(what.into())
}

/// `target[key]` as a string, with `more` appended in place (created when absent or not a
/// string), so folding a long answer's deltas stays linear in its size.
fn append_str(target: &mut Map<String, Value>, key: &str, more: &str) {
    match target.get_mut(key) {
        Some(Value::String(s)) => s.push_str(more),
        _ => {
            target.insert(key.to_string(), Value::String(more.to_string()));
        }
    }
}

/// `value` as an object, or the stream is malformed: `what` names it.
fn object_mut<'v>(
    value: &'v mut Value,
    what: &str,
) -> Result<&'v mut Map<String, Value>, StreamError> {
    value
        .as_object_mut()
        .ok_or_else(|| malformed(format!("{what} is not an object")))
}

/// The message's content blocks (the message is an object with a `content` array,
/// checked at `message_start` and kept so by `message_delta`).
fn content_mut(message: &mut Map<String, Value>) -> Result<&mut Vec<Value>, StreamError> {
    message
        .get_mut("content")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| malformed("the message's content is not an array"))
}

impl Assembler {
    /// Takes one event's data (its `type` says what it is). An event of the wrong shape
    /// is a malformed stream, never a panic.
    pub(crate) fn apply(&mut self, data: &Value) -> Result<(), StreamError> {
        let kind = data.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "message_start" {
            let mut message = data
                .get("message")
                .cloned()
                .ok_or_else(|| malformed("message_start without a message"))?;
            let object = object_mut(&mut message, "message_start's message")?;
            if !object.get("content").is_some_and(Value::is_array) {
                object.insert("content".into(), Value::Array(Vec::new()));
            }
            self.message = Some(message);
            return Ok(());
        }
        if kind == "ping" {
            return Ok(());
        }
        if kind == "error" {
            let error = data.get("error").unwrap_or(data);
            return Err(StreamError::Provider {
                status: None,
                kind: error
                    .get("type")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("an error event")
                    .to_string(),
            });
        }
        let message = self
            .message
            .as_mut()
            .ok_or_else(|| malformed(format!("{kind} before message_start")))?;
        let message = object_mut(message, "the message")?;
        let index = data
            .get("index")
            .and_then(Value::as_u64)
            .and_then(|i| usize::try_from(i).ok());
        match kind {
            "content_block_start" => {
                let index = index.ok_or_else(|| malformed("content_block_start without index"))?;
                let block = data
                    .get("content_block")
                    .filter(|b| b.is_object())
                    .cloned()
                    .ok_or_else(|| malformed("content_block_start without a block object"))?;
                let content = content_mut(message)?;
                if index != content.len() {
                    return Err(malformed(format!(
                        "block {index} started after {} blocks",
                        content.len()
                    )));
                }
                content.push(block);
            }
            "content_block_delta" => {
                let index = index.ok_or_else(|| malformed("content_block_delta without index"))?;
                let delta = data
                    .get("delta")
                    .ok_or_else(|| malformed("a delta without delta"))?;
                let block = content_mut(message)?
                    .get_mut(index)
                    .ok_or_else(|| malformed(format!("a delta for block {index}, not started")))?;
                let block = object_mut(block, "a content block")?;
                let piece = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or("");
                match delta.get("type").and_then(Value::as_str).unwrap_or("") {
                    "text_delta" => append_str(block, "text", piece("text")),
                    "thinking_delta" => append_str(block, "thinking", piece("thinking")),
                    "signature_delta" => append_str(block, "signature", piece("signature")),
                    // The provider's compaction block: its summary and opaque state.
                    "compaction_delta" => {
                        for key in ["content", "encrypted_content"] {
                            if let Some(v) = delta.get(key).and_then(Value::as_str) {
                                append_str(block, key, v);
                            }
                        }
                    }
                    "input_json_delta" => self
                        .partial_json
                        .entry(index)
                        .or_default()
                        .push_str(piece("partial_json")),
                    "citations_delta" => {
                        let citation = delta.get("citation").cloned().unwrap_or(Value::Null);
                        match block.get_mut("citations") {
                            Some(Value::Array(all)) => all.push(citation),
                            _ => {
                                block.insert("citations".into(), Value::Array(vec![citation]));
                            }
                        }
                    }
                    other => {
                        tracing::debug!(delta = other, "a delta type ctxd does not fold; skipped");
                    }
                }
            }
            "content_block_stop" => {
                let index = index.ok_or_else(|| malformed("content_block_stop without index"))?;
                if let Some(json) = self.partial_json.remove(&index)
                    && !json.trim().is_empty()
                {
                    let input: Value = serde_json::from_str(&json).map_err(|e| {
                        malformed(format!("block {index}'s input is not JSON: {e}"))
                    })?;
                    let block = content_mut(message)?
                        .get_mut(index)
                        .ok_or_else(|| malformed(format!("block {index} stopped, not started")))?;
                    object_mut(block, "a content block")?.insert("input".into(), input);
                }
            }
            "message_delta" => {
                if let Some(Value::Object(delta)) = data.get("delta") {
                    for (k, v) in delta {
                        // The blocks are the stream's own; a delta does not replace them.
                        if k != "content" {
                            message.insert(k.clone(), v.clone());
                        }
                    }
                }
                // What the server's context management cleared in this call.
                if let Some(cm) = data.get("context_management").filter(|v| !v.is_null()) {
                    message.insert("context_management".into(), cm.clone());
                }
                if let Some(Value::Object(usage)) = data.get("usage") {
                    if !message.get("usage").is_some_and(Value::is_object) {
                        message.insert("usage".into(), Value::Object(Map::new()));
                    }
                    if let Some(Value::Object(into)) = message.get_mut("usage") {
                        for (k, v) in usage {
                            into.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            "message_stop" => self.done = true,
            other => tracing::debug!(event = other, "an event type ctxd does not fold; skipped"),
        }
        Ok(())
    }

    /// Whether any content block has begun (a retry would then repeat what was seen).
    pub(crate) fn has_content(&self) -> bool {
        self.message
            .as_ref()
            .and_then(|m| m["content"].as_array())
            .is_some_and(|c| !c.is_empty())
    }

    /// The message, once `message_stop` came.
    pub(crate) fn finish(self) -> Result<Value, StreamError> {
        match (self.message, self.done) {
            (Some(m), true) => Ok(m),
            (None, _) => Err(malformed("the stream ended before message_start")),
            (Some(_), false) => Err(malformed("the stream ended before message_stop")),
        }
    }
}

/// One streamed call.
pub(crate) struct Call<'a> {
    pub(crate) url: &'a str,
    pub(crate) headers: HeaderMap,
    /// The request body, already asking to be streamed.
    pub(crate) body: String,
    pub(crate) dialect: Dialect,
    pub(crate) timeout: Duration,
    pub(crate) retry: RetryPolicy,
    /// Bytes of events accepted at most.
    pub(crate) max_bytes: usize,
    pub(crate) secret: Option<&'a str>,
    pub(crate) progress: Option<&'a Progress>,
}

/// Sends `call` and folds its stream into the message; retries a refusal the provider
/// says may pass (408, 429, 5xx, 529, and an `overloaded_error` event before any
/// content), honouring `retry-after`. Returns the message and the retries it took.
pub(crate) async fn send(
    client: &reqwest::Client,
    call: &Call<'_>,
) -> Result<(Value, u32), StreamError> {
    let mut attempt: u32 = 0;
    loop {
        let outcome = tokio::time::timeout(call.timeout, once(client, call)).await;
        let outcome = outcome.unwrap_or(Err((StreamError::Timeout(call.timeout), None, false)));
        let (error, retry_after, content_seen) = match outcome {
            Ok(message) => return Ok((message, attempt)),
            Err(failed) => failed,
        };
        let retryable = match &error {
            StreamError::Provider {
                status: Some(status),
                ..
            } => reqwest::StatusCode::from_u16(*status).is_ok_and(http::retryable),
            StreamError::Provider { kind, .. } => {
                !content_seen && matches!(kind.as_deref(), Some("overloaded_error" | "api_error"))
            }
            _ => false,
        };
        if !retryable || attempt >= call.retry.max_retries {
            return Err(error);
        }
        let delay = call.retry.after(attempt, retry_after);
        tracing::warn!(
            attempt,
            delay_ms = ctxd_pipeline::saturate::millis(delay),
            error = %error,
            "the provider refused the turn; retrying"
        );
        if let Some(tx) = call.progress {
            let status = match &error {
                StreamError::Provider { status, .. } => *status,
                _ => None,
            };
            tx.note(TurnEvent::Retrying {
                attempt: attempt + 1,
                delay_ms: ctxd_pipeline::saturate::millis(delay),
                status,
                message: error.to_string(),
            });
        }
        tokio::time::sleep(delay).await;
        attempt += 1;
    }
}

type Failed = (StreamError, Option<Duration>, bool);

/// Why the byte stream under the events stopped: the transport's error, or the bound.
#[derive(Debug, thiserror::Error)]
enum Transport {
    #[error("{0}")]
    Http(String),
    #[error("the stream is over {0} bytes")]
    TooBig(usize),
}

/// What [`line_chunks`] carries from one chunk to the next.
struct Lines<S> {
    inner: S,
    /// The last line's start, until its end comes.
    pending: Vec<u8>,
    raw: usize,
    done: bool,
}

/// The response's bytes, bounded as they came (`MAX_PROVIDER_STREAM_BYTES`, framing
/// included) and handed on only up to the last line end seen. The SSE parser rescans an
/// unfinished line on every chunk, so a line that never ends would cost time quadratic
/// in its length; here it waits, within the bound, until it ends.
fn line_chunks<S>(inner: S) -> impl futures::Stream<Item = Result<bytes::Bytes, Transport>>
where
    S: futures::Stream<Item = Result<bytes::Bytes, reqwest::Error>>,
{
    let lines = Lines {
        inner: Box::pin(inner),
        pending: Vec::new(),
        raw: 0,
        done: false,
    };
    futures::stream::unfold(lines, |mut st| async move {
        loop {
            if st.done {
                return None;
            }
            let chunk = match st.inner.next().await {
                None => {
                    st.done = true;
                    if st.pending.is_empty() {
                        return None;
                    }
                    let rest = std::mem::take(&mut st.pending);
                    return Some((Ok(bytes::Bytes::from(rest)), st));
                }
                Some(Err(e)) => {
                    st.done = true;
                    return Some((Err(Transport::Http(http::error_chain(&e))), st));
                }
                Some(Ok(chunk)) => chunk,
            };
            st.raw = st.raw.saturating_add(chunk.len());
            if st.raw > MAX_PROVIDER_STREAM_BYTES {
                st.done = true;
                st.pending = Vec::new();
                return Some((Err(Transport::TooBig(MAX_PROVIDER_STREAM_BYTES)), st));
            }
            let Some(end) = memchr::memrchr2(b'\n', b'\r', &chunk) else {
                st.pending.extend_from_slice(&chunk);
                // One line is at most one event, and no event is larger than the answer.
                if st.pending.len() > MAX_PROVIDER_ANSWER_BYTES {
                    st.done = true;
                    st.pending = Vec::new();
                    return Some((Err(Transport::TooBig(MAX_PROVIDER_ANSWER_BYTES)), st));
                }
                continue;
            };
            let whole = if st.pending.is_empty() {
                chunk.slice(..=end)
            } else {
                let mut joined = std::mem::take(&mut st.pending);
                joined.extend_from_slice(&chunk[..=end]);
                bytes::Bytes::from(joined)
            };
            st.pending.extend_from_slice(&chunk[end + 1..]);
            return Some((Ok(whole), st));
        }
    })
}

async fn once(client: &reqwest::Client, call: &Call<'_>) -> Result<Value, Failed> {
    let response = client
        .post(call.url)
        .headers(call.headers.clone())
        .body(call.body.clone())
        .send()
        .await
        .map_err(|e| {
            let message = http::redact(&http::error_chain(&e), call.secret);
            // A connection that failed is worth another try, as a 5xx is.
            let error = StreamError::Provider {
                status: Some(503),
                kind: Some("connection_error".into()),
                message: format!("request failed: {message}"),
            };
            (error, None, false)
        })?;
    let status = response.status();
    if !status.is_success() {
        let retry_after = http::retry_after(response.headers(), std::time::SystemTime::now());
        let text = http::error_text(response, MAX_PROVIDER_ERROR_BYTES).await;
        let body = ErrorBody::parse(&text);
        let message = http::redact(&body.describe(status), call.secret);
        let error = match body.prompt_too_long(status) {
            Some(token_gap) => StreamError::TooLong {
                status: status.as_u16(),
                kind: body.kind.clone(),
                token_gap,
                message,
            },
            None => StreamError::Provider {
                status: Some(status.as_u16()),
                kind: body.kind.clone(),
                message,
            },
        };
        return Err((error, retry_after, false));
    }
    let mut assembler = Assembler::default();
    let mut chat = super::chat_stream::ChatStream::default();
    let mut seen = 0usize;
    let mut events = std::pin::pin!(line_chunks(response.bytes_stream()).eventsource());
    let fail = |e: StreamError, a: &Assembler| (e, None, a.has_content());
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(eventsource_stream::EventStreamError::Transport(Transport::TooBig(max))) => {
                return Err((StreamError::TooBig(max), None, true));
            }
            Err(e) => {
                let message = http::redact(&e.to_string(), call.secret);
                return Err(fail(malformed(message), &assembler));
            }
        };
        seen = seen.saturating_add(event.data.len());
        if seen > call.max_bytes {
            return Err((StreamError::TooBig(call.max_bytes), None, true));
        }
        let data = event.data.trim();
        if data.is_empty() {
            continue;
        }
        let translated = match call.dialect {
            Dialect::Chat if data == "[DONE]" => chat.finish(),
            _ => {
                let mut v: Value = serde_json::from_str(data).map_err(|e| {
                    fail(
                        malformed(format!("an event that is not JSON: {e}")),
                        &assembler,
                    )
                })?;
                // Before anything reads it: a server that echoes the key (in text, an id,
                // an error) must not get it into events, records or logs.
                http::scrub(&mut v, call.secret);
                match call.dialect {
                    Dialect::Messages => Ok(vec![v]),
                    Dialect::Chat => chat.chunk(&v),
                }
            }
        };
        for data in translated.map_err(|e| fail(e, &assembler))? {
            take(&mut assembler, data, event.data.len(), call.progress)
                .await
                .map_err(|e| fail(e, &assembler))?;
        }
        if assembler.done {
            break;
        }
    }
    // Some servers end a Chat Completions stream without `[DONE]`.
    if call.dialect == Dialect::Chat && !assembler.done {
        for data in chat.finish().map_err(|e| fail(e, &assembler))? {
            take(&mut assembler, data, 0, call.progress)
                .await
                .map_err(|e| fail(e, &assembler))?;
        }
    }
    let content_seen = assembler.has_content();
    let mut message = assembler.finish().map_err(|e| (e, None, content_seen))?;
    // A key split over two deltas is whole only in the folded message.
    http::scrub(&mut message, call.secret);
    Ok(message)
}

/// Folds one event, then hands it to the caller that streams the turn; `bytes` is its
/// size as it came.
async fn take(
    assembler: &mut Assembler,
    data: Value,
    bytes: usize,
    progress: Option<&Progress>,
) -> Result<(), StreamError> {
    let folded = assembler.apply(&data);
    // Also when folding failed, so that a subscriber sees the provider's `error` event.
    if let Some(tx) = progress {
        tx.event(data, bytes).await;
    }
    folded
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fold(events: &[Value]) -> Result<Value, StreamError> {
        let mut a = Assembler::default();
        for e in events {
            a.apply(e)?;
        }
        a.finish()
    }

    #[test]
    fn a_stream_folds_into_the_message_it_describes() {
        let message = fold(&[
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [], "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 7}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me "}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "think."}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig=="}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "ping"}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": "", "citations": null}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "citations_delta", "citation": {"type": "char_location", "cited_text": "x"}}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}, "caller": {"type": "direct"}}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"file_"}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "path\": \"/a\"}"}}),
            json!({"type": "content_block_stop", "index": 2}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 42}}),
            json!({"type": "message_stop"}),
        ])
        .unwrap();
        assert_eq!(
            message["content"],
            json!([
                {"type": "thinking", "thinking": "Let me think.", "signature": "sig=="},
                {"type": "text", "text": "Hi", "citations": [{"type": "char_location", "cited_text": "x"}]},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/a"}, "caller": {"type": "direct"}},
            ])
        );
        assert_eq!(message["stop_reason"], "tool_use");
        assert_eq!(
            message["usage"],
            json!({"input_tokens": 10, "output_tokens": 42, "cache_read_input_tokens": 7})
        );
    }

    #[test]
    fn the_stream_flag_goes_in_front_and_the_rest_is_untouched() {
        assert_eq!(
            streamed(r#"{"model":"m","messages":[]}"#),
            r#"{"stream":true,"model":"m","messages":[]}"#
        );
        assert_eq!(streamed("{}"), r#"{"stream":true}"#);
        let body = r#"{"a":1}"#;
        let v: Value = serde_json::from_str(&streamed(body)).unwrap();
        assert_eq!(v, json!({"stream": true, "a": 1}));
    }

    #[test]
    fn broken_streams_are_refused_by_name() {
        let start = json!({"type": "message_start", "message": {"id": "m", "content": []}});
        let err = fold(std::slice::from_ref(&start)).unwrap_err();
        assert!(err.to_string().contains("before message_stop"), "{err}");
        let err = fold(&[json!({"type": "content_block_start", "index": 0, "content_block": {}})])
            .unwrap_err();
        assert!(err.to_string().contains("before message_start"), "{err}");
        let err = fold(&[
            start.clone(),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text"}}),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("block 1 started after 0"), "{err}");
        let err = fold(&[
            start,
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ])
        .unwrap_err();
        assert_eq!(
            err,
            StreamError::Provider {
                status: None,
                kind: Some("overloaded_error".into()),
                message: "Overloaded".into()
            }
        );
    }

    /// Folding appends in place: 100,000 deltas (4 MB of text) fold in one pass, where
    /// copying the text so far at each delta would copy about 200 GB.
    #[test]
    fn folding_a_long_answer_is_linear() {
        let mut a = Assembler::default();
        a.apply(&json!({"type": "message_start", "message": {"id": "m", "content": []}}))
            .unwrap();
        a.apply(&json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
            .unwrap();
        let delta = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x".repeat(40)}});
        for _ in 0..100_000 {
            a.apply(&delta).unwrap();
        }
        a.apply(&json!({"type": "message_stop"})).unwrap();
        let m = a.finish().unwrap();
        assert_eq!(m["content"][0]["text"].as_str().unwrap().len(), 4_000_000);
    }

    /// Events whose fields have the wrong JSON type are malformed streams, not panics.
    #[test]
    fn events_of_the_wrong_shape_are_malformed_not_panics() {
        let start = json!({"type": "message_start", "message": {"id": "m", "content": []}});
        for bad in [
            vec![json!({"type": "message_start", "message": "a string"})],
            vec![json!({"type": "message_start", "message": 7})],
            vec![
                start.clone(),
                json!({"type": "content_block_start", "index": 0, "content_block": "text"}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}),
            ],
            vec![
                start.clone(),
                json!({"type": "content_block_start", "index": 0, "content_block": 3}),
                json!({"type": "content_block_stop", "index": 0}),
            ],
        ] {
            let err = fold(&bad).unwrap_err();
            assert!(matches!(err, StreamError::Malformed(_)), "{bad:?}: {err}");
        }
        // A delta that would replace the blocks leaves them as streamed.
        let m = fold(&[
            start,
            json!({"type": "message_delta", "delta": {"content": "gone", "stop_reason": "end_turn"}}),
            json!({"type": "message_stop"}),
        ])
        .unwrap();
        assert_eq!(m["content"], json!([]));
    }

    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let keys = prop::sample::select(vec![
            "type",
            "message",
            "content",
            "index",
            "content_block",
            "delta",
            "text",
            "thinking",
            "partial_json",
            "usage",
            "citations",
            "citation",
            "input",
            "context_management",
            "error",
            "signature",
        ]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (0u64..4).prop_map(|n| json!(n)),
            prop::sample::select(vec![
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop",
                "text_delta",
                "input_json_delta",
                "citations_delta",
                "thinking_delta",
                "{}",
                "x",
            ])
            .prop_map(|s| json!(s)),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(keys.clone(), inner, 0..6).prop_map(|m| Value::Object(
                    m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    proptest::proptest! {
        /// Any sequence of events of any shape folds or is refused; none panics.
        #[test]
        fn no_sequence_of_events_panics(events in proptest::collection::vec(any_json(), 0..12)) {
            let mut a = Assembler::default();
            let kinds = ["message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta"];
            for (i, mut e) in events.into_iter().enumerate() {
                if let Value::Object(m) = &mut e && !m.contains_key("type") {
                    m.insert("type".into(), json!(kinds[i % kinds.len()]));
                }
                let _ = a.apply(&e);
            }
            let _ = a.has_content();
            let _ = a.finish();
        }
    }

    #[test]
    fn the_context_management_of_a_message_delta_reaches_the_message() {
        let applied = json!({"applied_edits": [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 2, "cleared_input_tokens": 900}]});
        let message = fold(&[
            json!({"type": "message_start", "message": {"id": "m", "content": [], "usage": {"input_tokens": 5}}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}, "context_management": applied}),
            json!({"type": "message_stop"}),
        ])
        .unwrap();
        assert_eq!(message["context_management"], applied);
    }
}
