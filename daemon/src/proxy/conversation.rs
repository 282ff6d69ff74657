//! Sessions from traffic: which session a request belongs to, and what of it is new.
//!
//! A conversation is named by a key (the `x-ctxd-session` header, else Claude Code's
//! session id in `metadata.user_id`, else its first message). Each key holds branches:
//! the sessions its traffic made, each with a fingerprint per message it recorded. A
//! request extends the branch whose recorded messages are a prefix of its own; one that
//! shares only part of a branch (the client rewrote its history) forks that branch at the
//! last shared message; one that shares nothing starts a session of its own.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use ctxd_engine::Engine;
use ctxd_protocol::{AppendParams, RecordInput, SessionCreateParams, SessionForkParams};
use serde_json::Value;
use sha2::Digest;

/// Branches kept per key; the oldest goes first past this, so a client that keeps
/// rewriting its history costs bounded memory.
const MAX_BRANCHES: usize = 16;
/// Keys remembered; past this the map is cleared (a later request of a forgotten
/// conversation is found again from the store, as after a restart).
const MAX_KEYS: usize = 4096;
/// The newest sessions searched for the front door's own at the first request.
const MAX_STORED_SESSIONS: u32 = 10_000;
/// Conversations findable from the store; past this, a new conversation forgotten from
/// memory starts a new session.
const MAX_INDEXED_KEYS: usize = 65_536;
/// Records read to find one session's messages again; a longer session is not resumed
/// (its conversation's next request starts a new session).
const MAX_RESUMED_RECORDS: usize = 200_000;

/// The key a request's conversation is filed under.
pub(crate) fn key(header: Option<&str>, body: &Value) -> Option<String> {
    if let Some(h) = header.filter(|h| !h.is_empty()) {
        return Some(format!("header:{h}"));
    }
    if let Some(id) = body
        .pointer("/metadata/user_id")
        .and_then(Value::as_str)
        .and_then(claude_code_session)
    {
        return Some(format!("claude-code:{id}"));
    }
    let first = body.get("messages")?.as_array()?.first()?;
    let digest = sha2::Sha256::digest(fingerprint(first).as_bytes());
    Some(format!("content:{}", hex::encode(digest)))
}

/// The session id Claude Code puts in `metadata.user_id`: a JSON object's `session_id`,
/// or what follows `_session_` in its older `user_…_account_…_session_…` form.
fn claude_code_session(user_id: &str) -> Option<String> {
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(user_id) {
        return o
            .get("session_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
    }
    let (_, id) = user_id.rsplit_once("_session_")?;
    (!id.is_empty()).then(|| id.to_string())
}

/// A message as compared across requests: role and content, a string content as its one
/// text block, cache markers and null fields dropped (clients move `cache_control`
/// between turns and echo a block back with or without its null fields), object keys
/// sorted.
pub(crate) fn fingerprint(message: &Value) -> String {
    let role = message.get("role").and_then(Value::as_str).unwrap_or("");
    let content = match message.get("content") {
        Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
        Some(Value::Array(blocks)) => blocks.clone(),
        _ => Vec::new(),
    };
    let mut out = String::from(role);
    for block in &content {
        out.push('\u{1f}');
        let block = match block.get("type").and_then(Value::as_str) {
            // A text block's citations come back as the client kept them, or not at all.
            Some("text") => {
                serde_json::json!({"type": "text", "text": block.get("text").cloned().unwrap_or(Value::Null)})
            }
            // ctxd's records leave out a false `is_error`, so a history read back from the
            // store compares equal to the client's.
            Some("tool_result") if block.get("is_error") == Some(&Value::Bool(false)) => {
                let mut b = block.clone();
                if let Value::Object(o) = &mut b {
                    o.remove("is_error");
                }
                b
            }
            _ => block.clone(),
        };
        canonical(&block, &mut out);
    }
    out
}

fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&String> = o
                .iter()
                .filter(|(k, v)| k.as_str() != "cache_control" && !v.is_null())
                .map(|(k, _)| k)
                .collect();
            keys.sort();
            out.push('{');
            for k in keys {
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&o[k.as_str()], out);
                out.push(',');
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for x in a {
                canonical(x, out);
                out.push(',');
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// One session a key's traffic made: a fingerprint and the last record's uuid per
/// message it recorded.
#[derive(Debug, Clone)]
struct Branch {
    session_id: String,
    messages: Vec<(String, String)>,
    /// Appends are checked against the last recorded message: only while nothing but the
    /// front door writes the session (not one the client named, nor one ctxd compiles).
    guarded: bool,
    /// The system prompt and tools of its last request, compared when a history shares
    /// nothing with it: the same frame is the conversation rewritten (the client's
    /// compaction), another one a side request (a title, a summary) of its own.
    frame: String,
    /// The frame whose system prompt and tools the session holds.
    stored_frame: Option<String>,
    /// The session carries the key in `settings.proxy.conversation` (the front door
    /// made it, or forked it from one it made).
    made: bool,
}

/// One key's branches, found again from the store on first use.
#[derive(Default)]
struct Slot {
    resumed: bool,
    branches: Vec<Branch>,
    /// The session the key's last request went to.
    last: Option<String>,
}

/// The conversations the front door has seen.
pub(crate) struct Conversations {
    engine: Arc<Engine>,
    cwd: PathBuf,
    keys: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<Slot>>>>,
    /// The front door's sessions by conversation (`settings.proxy.conversation`), read
    /// from the store at the first request and kept up to date: how a conversation is
    /// found again after a restart.
    stored: tokio::sync::OnceCell<std::sync::Mutex<HashMap<String, Vec<String>>>>,
    sessions_seen: std::sync::atomic::AtomicU64,
}

/// What a stored record was of the conversation.
enum Resumed {
    Message(String),
    /// The client's own compaction: the history before it is not sent again.
    Restart,
}

fn resumed(r: &ctxd_protocol::Record) -> Option<Resumed> {
    use ctxd_protocol::RecordKind;
    if r.is_sidechain || r.is_meta || r.is_virtual || r.is_compact_summary {
        return None;
    }
    match r.kind {
        RecordKind::User | RecordKind::Assistant => {
            let content = serde_json::to_value(&r.content).ok()?;
            Some(Resumed::Message(fingerprint(
                &serde_json::json!({"role": r.kind.as_str(), "content": content}),
            )))
        }
        RecordKind::System => {
            let data = r.data.as_ref();
            match r.subtype.as_deref() {
                Some("compact_boundary")
                    if data.and_then(|d| d.get("trigger")).and_then(Value::as_str)
                        == Some("client") =>
                {
                    Some(Resumed::Restart)
                }
                Some("client_system_message") => Some(Resumed::Message(fingerprint(
                    &serde_json::json!({"role": "system",
                        "content": data.and_then(|d| d.get("content")).cloned().unwrap_or(Value::Null)}),
                ))),
                _ => None,
            }
        }
        RecordKind::Attachment => None,
    }
}

/// How a request the client wrote itself went upstream (observe mode).
pub(crate) struct Sent {
    /// The `anthropic-beta` header's betas, part of the cache key.
    pub(crate) betas: Vec<String>,
    pub(crate) at: chrono::DateTime<chrono::Utc>,
}

/// Which session an exchange went to, and how many records it added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recorded {
    pub(crate) session_id: String,
    pub(crate) appended: usize,
}

impl Conversations {
    pub(crate) fn new(engine: Arc<Engine>, cwd: PathBuf) -> Self {
        Conversations {
            engine,
            cwd,
            keys: std::sync::Mutex::new(HashMap::new()),
            stored: tokio::sync::OnceCell::new(),
            sessions_seen: std::sync::atomic::AtomicU64::new(0),
        }
    }

    async fn stored(&self) -> &std::sync::Mutex<HashMap<String, Vec<String>>> {
        self.stored
            .get_or_init(|| async {
                let mut map: HashMap<String, Vec<String>> = HashMap::new();
                match self.engine.proxied_sessions(MAX_STORED_SESSIONS).await {
                    Ok(found) => {
                        for (id, key) in found {
                            let ids = map.entry(key).or_default();
                            ids.push(id);
                            if ids.len() > MAX_BRANCHES {
                                ids.remove(0);
                            }
                        }
                    }
                    Err(e) => tracing::warn!(error = %e,
                        "the front door's sessions could not be listed; running conversations start new sessions"),
                }
                std::sync::Mutex::new(map)
            })
            .await
    }

    /// The key's branches, found again from the store on the key's first use.
    async fn resume(&self, key: &str, slot: &mut Slot) {
        if slot.resumed {
            return;
        }
        slot.resumed = true;
        let ids = ctxd_pipeline::sync::lock(self.stored().await)
            .get(key)
            .cloned()
            .unwrap_or_default();
        for id in ids {
            if slot.branches.iter().any(|b| b.session_id == id) {
                continue;
            }
            if let Some(b) = self.resumed_branch(&id).await {
                slot.last = Some(b.session_id.clone());
                slot.branches.push(b);
            }
        }
    }

    /// A stored session as a branch: the messages it recorded, read back.
    async fn resumed_branch(&self, session_id: &str) -> Option<Branch> {
        let settings = self.engine.session_settings(session_id).await.ok()?;
        let managed = settings
            .proxy
            .is_some_and(|p| p.mode == ctxd_protocol::ProxyMode::Manage);
        let mut messages: Vec<(String, String)> = Vec::new();
        let mut last = None;
        let mut read = 0usize;
        let mut after_seq = 0;
        loop {
            let page = self
                .engine
                .read(ctxd_protocol::ReadParams {
                    session_id: session_id.to_string(),
                    agent_id: None,
                    after_seq,
                    limit: Some(ctxd_pipeline::limits::MAX_READ_PAGE),
                })
                .await
                .ok()?;
            read = read.saturating_add(page.records.len());
            if read > MAX_RESUMED_RECORDS {
                return None;
            }
            for r in &page.records {
                last = Some(r.uuid.clone());
                match resumed(r) {
                    Some(Resumed::Message(print)) => messages.push((print, r.uuid.clone())),
                    Some(Resumed::Restart) => messages.clear(),
                    None => {}
                }
            }
            match page.next_after_seq {
                Some(n) => after_seq = n,
                None => break,
            }
        }
        let guarded = !managed && messages.last().map(|m| &m.1) == last.as_ref();
        Some(Branch {
            session_id: session_id.to_string(),
            messages,
            guarded,
            frame: String::new(),
            stored_frame: None,
            made: true,
        })
    }

    /// The session a request of `key` would go to, by its key alone (the one the key's
    /// last request went to, else the one its header names): whose settings say how
    /// the front door serves it.
    pub(crate) async fn mode(&self, key: &str) -> ctxd_protocol::ProxyMode {
        let slot = self.slot(key);
        let session = {
            let mut slot = slot.lock().await;
            self.resume(key, &mut slot).await;
            slot.last.clone()
        };
        let session = session.or_else(|| key.strip_prefix("header:").map(str::to_string));
        match session {
            Some(id) => self
                .engine
                .session_settings(&id)
                .await
                .ok()
                .and_then(|s| s.proxy)
                .map(|p| p.mode)
                .unwrap_or_default(),
            None => ctxd_protocol::ProxyMode::Observe,
        }
    }

    pub(crate) fn sessions_seen(&self) -> u64 {
        self.sessions_seen
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn slot(&self, key: &str) -> Arc<tokio::sync::Mutex<Slot>> {
        let mut keys = ctxd_pipeline::sync::lock(&self.keys);
        if keys.len() >= MAX_KEYS && !keys.contains_key(key) {
            keys.clear();
        }
        keys.entry(key.to_string()).or_default().clone()
    }

    /// Records the request's messages not yet recorded, then the answer as it came when
    /// there is one, in one append (all or nothing). `managed`: ctxd compiles the session
    /// (so appends its own records between the client's).
    pub(crate) async fn record(
        &self,
        key: &str,
        request: &Value,
        answer: Option<Value>,
        managed: bool,
        sent: Option<&Sent>,
    ) -> Result<Recorded, String> {
        let messages = request
            .get("messages")
            .and_then(Value::as_array)
            .ok_or("the request has no messages")?;
        let prints: Vec<String> = messages.iter().map(fingerprint).collect();
        let frame = {
            let mut f = String::new();
            canonical(request.get("system").unwrap_or(&Value::Null), &mut f);
            f.push('\u{1f}');
            canonical(request.get("tools").unwrap_or(&Value::Null), &mut f);
            hex::encode(sha2::Sha256::digest(f.as_bytes()))
        };
        let slot = self.slot(key);
        let mut slot = slot.lock().await;
        self.resume(key, &mut slot).await;
        let Slot { branches, last, .. } = &mut *slot;
        let shared = |b: &Branch| {
            b.messages
                .iter()
                .zip(&prints)
                .take_while(|((p, _), q)| p == *q)
                .count()
        };
        let best = branches
            .iter()
            .enumerate()
            .map(|(i, b)| (i, shared(b)))
            .max_by_key(|&(i, n)| (n, i));
        // A key the client chose (its header, Claude Code's session id) names one
        // conversation: a history sharing nothing with it is the client's own rewrite
        // (its compaction), recorded after a boundary in the same session. A key made
        // from the first message cannot see that case.
        let explicit = !key.starts_with("content:");
        let mut boundary = false;
        let (index, common) = match best {
            Some((i, n)) if n == branches[i].messages.len() => (i, n),
            Some((i, n)) if n > 0 => {
                let from = &branches[i];
                let fork = self
                    .engine
                    .fork_session(SessionForkParams {
                        session_id: from.session_id.clone(),
                        up_to_uuid: Some(from.messages[n - 1].1.clone()),
                    })
                    .await
                    .map_err(|e| e.to_string())?;
                let branch = Branch {
                    session_id: fork.session_id,
                    messages: from.messages[..n].to_vec(),
                    guarded: from.guarded,
                    frame: frame.clone(),
                    stored_frame: None,
                    made: from.made,
                };
                self.push(key, branches, branch);
                (branches.len() - 1, n)
            }
            Some(_) if explicit && branches.iter().any(|b| b.frame == frame) => {
                boundary = true;
                let i = branches.iter().rposition(|b| b.frame == frame).unwrap_or(0);
                (i, 0)
            }
            // A header naming one of ctxd's sessions records into it: after what the
            // session holds of this history, if it holds its start, else after all.
            None if key.starts_with("header:")
                && self
                    .engine
                    .get_session(&key["header:".len()..])
                    .await
                    .is_ok() =>
            {
                let id = &key["header:".len()..];
                let mut branch = self.resumed_branch(id).await.unwrap_or_else(|| Branch {
                    session_id: id.to_string(),
                    messages: Vec::new(),
                    guarded: false,
                    frame: String::new(),
                    stored_frame: None,
                    made: false,
                });
                branch.guarded = false;
                branch.made = false;
                branch.frame.clone_from(&frame);
                let n = shared(&branch);
                if n < branch.messages.len() {
                    branch.messages.clear();
                }
                let common = branch.messages.len();
                self.push(key, branches, branch);
                (branches.len() - 1, common)
            }
            _ => {
                let session = self
                    .engine
                    .create_session(SessionCreateParams {
                        cwd: self.cwd.display().to_string(),
                        title: Some(title(messages)),
                        no_git: true,
                        settings: Some(ctxd_protocol::SessionSettings {
                            proxy: Some(ctxd_protocol::ProxySettings {
                                conversation: Some(key.to_string()),
                                mode: ctxd_protocol::ProxyMode::Observe,
                            }),
                            ..Default::default()
                        }),
                        ..Default::default()
                    })
                    .await
                    .map_err(|e| e.to_string())?;
                self.push(
                    key,
                    branches,
                    Branch {
                        session_id: session.session_id,
                        messages: Vec::new(),
                        guarded: true,
                        frame: frame.clone(),
                        stored_frame: None,
                        made: true,
                    },
                );
                (branches.len() - 1, 0)
            }
        };
        let branch = &mut branches[index];
        *last = Some(branch.session_id.clone());
        branch.frame = frame;
        if let Some(sent) = sent {
            // Before the answer is appended: its usage is then judged against this
            // request's prediction.
            let noted = self
                .engine
                .note_request(&branch.session_id, request, &sent.betas, sent.at)
                .await;
            if let Err(e) = noted {
                tracing::debug!(error = %e, "the request's cache key is not noted");
            }
        }
        let mut records = Vec::with_capacity(messages.len() - common + 2);
        if boundary {
            records.push(record_input(serde_json::json!({
                "type": "system",
                "subtype": "compact_boundary",
                "data": {"trigger": "client"},
            }))?);
        }
        for m in &messages[common..] {
            let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
            let mut content = match m.get("content") {
                Some(c) => c.clone(),
                None => Value::Array(Vec::new()),
            };
            if role == "system" {
                // A system message inside `messages`: ctxd's records hold system text as
                // data, so it is kept whole there.
                records.push(record_input(serde_json::json!({
                    "type": "system",
                    "subtype": "client_system_message",
                    "data": {"content": content},
                }))?);
                continue;
            }
            strip_cache_markers(&mut content);
            records.push(record_input(
                serde_json::json!({"type": role, "content": content}),
            )?);
        }
        let answer_print = answer.map(|answer| {
            let print = answer_fingerprint(&answer);
            records.push(record_input(
                serde_json::json!({"type": "assistant", "message": answer}),
            )?);
            Ok::<_, String>(print)
        });
        let answer_print = answer_print.transpose()?;
        if managed {
            branch.guarded = false;
        }
        if records.is_empty() {
            return Ok(Recorded {
                session_id: branch.session_id.clone(),
                appended: 0,
            });
        }
        let appended = self
            .engine
            .append(AppendParams {
                session_id: branch.session_id.clone(),
                agent_id: None,
                records,
                expected_last_uuid: branch
                    .guarded
                    .then(|| branch.messages.last().map(|(_, u)| u.clone())),
            })
            .await
            .map_err(|e| e.to_string())?;
        let mut uuids: Vec<String> = appended.appended.iter().map(|r| r.uuid.clone()).collect();
        let added = uuids.len();
        if boundary && !uuids.is_empty() {
            branch.messages.clear();
            uuids.remove(0);
        }
        for (print, uuid) in prints[common..]
            .iter()
            .cloned()
            .chain(answer_print)
            .zip(uuids.iter().cloned())
        {
            branch.messages.push((print, uuid));
        }
        if branch.stored_frame.as_deref() != Some(branch.frame.as_str()) {
            self.keep_frame(&branch.session_id, request).await;
            branch.stored_frame = Some(branch.frame.clone());
        }
        Ok(Recorded {
            session_id: branch.session_id.clone(),
            appended: added,
        })
    }

    /// Keeps the request's system prompt and tools with the session, when they changed: a
    /// compile of the session then carries them. One ctxd cannot take (a tool its
    /// validation refuses) leaves what the session had; the traffic is recorded anyway.
    async fn keep_frame(&self, session_id: &str, request: &Value) {
        let tools = match request.get("tools") {
            Some(t) => serde_json::from_value::<Vec<ctxd_protocol::ToolSpec>>(t.clone()),
            None => Ok(Vec::new()),
        };
        match tools {
            Ok(tools) => {
                let set = self
                    .engine
                    .set_tools(ctxd_protocol::ToolsSetParams {
                        session_id: session_id.to_string(),
                        tools,
                    })
                    .await;
                if let Err(e) = set {
                    tracing::debug!(error = %e, "the client's tools are not kept");
                }
            }
            Err(e) => tracing::debug!(error = %e, "the client's tools are not kept"),
        }
        let texts: Vec<String> = match request.get("system") {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str).map(str::to_string))
                .collect(),
            _ => Vec::new(),
        };
        let system = ctxd_protocol::SystemPrompt {
            static_sections: texts
                .into_iter()
                .enumerate()
                .map(|(i, text)| ctxd_protocol::SystemSection {
                    name: format!("client_{i}"),
                    text,
                    caching: None,
                    reason: None,
                    source: None,
                })
                .collect(),
            dynamic_sections: Vec::new(),
        };
        let updated = self
            .engine
            .update_session(ctxd_protocol::SessionUpdateParams {
                session_id: session_id.to_string(),
                cwd: None,
                settings: None,
                model: None,
                system: Some(system),
                title: None,
            })
            .await;
        if let Err(e) = updated {
            tracing::debug!(error = %e, "the client's system prompt is not kept");
        }
    }

    /// Appends the answer to a managed request whose messages `record` appended.
    pub(crate) async fn record_answer(
        &self,
        key: &str,
        session_id: &str,
        answer: Value,
    ) -> Result<(), String> {
        let slot = self.slot(key);
        let mut slot = slot.lock().await;
        let print = answer_fingerprint(&answer);
        let record = record_input(serde_json::json!({"type": "assistant", "message": answer}))?;
        let appended = self
            .engine
            .append(AppendParams {
                session_id: session_id.to_string(),
                agent_id: None,
                records: vec![record],
                expected_last_uuid: None,
            })
            .await
            .map_err(|e| e.to_string())?;
        if let (Some(branch), Some(r)) = (
            slot.branches
                .iter_mut()
                .find(|b| b.session_id == session_id),
            appended.appended.first(),
        ) {
            branch.messages.push((print, r.uuid.clone()));
        }
        Ok(())
    }

    fn push(&self, key: &str, branches: &mut Vec<Branch>, branch: Branch) {
        if branches.len() >= MAX_BRANCHES {
            branches.remove(0);
        }
        // Only the sessions that carry the key in their settings are found by it after a
        // restart; a header naming a session of ctxd's finds that session by itself.
        if let Some(stored) = self.stored.get()
            && branch.made
        {
            let mut stored = ctxd_pipeline::sync::lock(stored);
            if stored.len() < MAX_INDEXED_KEYS || stored.contains_key(key) {
                let ids = stored.entry(key.to_string()).or_default();
                ids.push(branch.session_id.clone());
                if ids.len() > MAX_BRANCHES {
                    ids.remove(0);
                }
            }
        }
        branches.push(branch);
        self.sessions_seen
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The client's cache markers say where its cache breaks, not what was said; ctxd places
/// its own when it compiles, so they are not part of the record.
fn strip_cache_markers(content: &mut Value) {
    if let Value::Array(blocks) = content {
        for b in blocks {
            if let Value::Object(o) = b {
                o.remove("cache_control");
                if let Some(inner) = o.get_mut("content") {
                    strip_cache_markers(inner);
                }
            }
        }
    }
}

fn answer_fingerprint(answer: &Value) -> String {
    fingerprint(&serde_json::json!({
        "role": "assistant",
        "content": answer.get("content").cloned().unwrap_or(Value::Null),
    }))
}

fn record_input(v: Value) -> Result<RecordInput, String> {
    serde_json::from_value(v).map_err(|e| format!("a message ctxd cannot record: {e}"))
}

/// A proxied session's title: the start of its first prompt.
fn title(messages: &[Value]) -> String {
    let text = messages
        .first()
        .and_then(|m| match m.get("content") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Array(blocks)) => blocks
                .iter()
                .rev()
                .find_map(|b| b.get("text").and_then(Value::as_str))
                .map(str::to_string),
            _ => None,
        })
        .unwrap_or_default();
    let short: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let short: String = short.chars().take(60).collect();
    short
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_codes_session_id_is_found_in_both_forms() {
        assert_eq!(
            claude_code_session("user_abc_account_def_session_1234-5678").as_deref(),
            Some("1234-5678")
        );
        assert_eq!(
            claude_code_session(r#"{"device_id":"d","session_id":"s-1"}"#).as_deref(),
            Some("s-1")
        );
        assert_eq!(claude_code_session("someone"), None);
    }

    #[test]
    fn a_message_echoed_back_without_nulls_or_markers_is_the_same_message() {
        let sent = json!({"role":"assistant","content":[
            {"type":"text","text":"hi","citations":null},
            {"type":"tool_use","id":"t1","name":"Read","input":{"b":1,"a":2}}]});
        let echoed = json!({"content":[
            {"type":"text","text":"hi","cache_control":{"type":"ephemeral"}},
            {"input":{"a":2,"b":1},"name":"Read","id":"t1","type":"tool_use"}],"role":"assistant"});
        assert_eq!(fingerprint(&sent), fingerprint(&echoed));
        let string = json!({"role":"user","content":"hi"});
        let block = json!({"role":"user","content":[{"type":"text","text":"hi"}]});
        assert_eq!(fingerprint(&string), fingerprint(&block));
        let other = json!({"role":"user","content":"ho"});
        assert_ne!(fingerprint(&string), fingerprint(&other));
    }

    #[test]
    fn the_header_wins_then_claude_codes_metadata_then_the_first_message() {
        let body = json!({"metadata":{"user_id":"user_x_account_y_session_S"},
            "messages":[{"role":"user","content":"hi"}]});
        assert_eq!(key(Some("mine"), &body).as_deref(), Some("header:mine"));
        assert_eq!(key(None, &body).as_deref(), Some("claude-code:S"));
        let plain = json!({"messages":[{"role":"user","content":"hi"}]});
        assert!(key(None, &plain).is_some_and(|k| k.starts_with("content:")));
        assert_eq!(key(None, &json!({"messages":[]})), None);
    }
}
