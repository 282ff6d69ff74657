//! Queued input: what the user types while a turn runs waits
//! in the store until its agent's next compile, and is delivered as one `queued_command`
//! attachment per entry once the current batch of tool results is in — never between a
//! `tool_use` and its `tool_result`. Entries belong to an agent: the main thread's
//! compile takes only the main thread's, a sub-agent's runtime takes its own with
//! `transcript.take_queued`. Delivery and deletion share one transaction: an entry is
//! delivered exactly once.

use ctxd_protocol::{
    ContentBlock, QueueParams, QueueResponse, QueuedEntry, QueuedParams, QueuedResponse,
    RecordInput, TakeQueuedParams, TakeQueuedResponse,
};
use serde_json::json;

use ctxd_pipeline::kinds;

use crate::engine::Engine;
use crate::engine::session::loaded::loaded_mut;
use crate::engine::session::transcript::insert_batch;
use ctxd_pipeline::attachments;
use ctxd_pipeline::limits::MAX_QUEUED_ENTRIES;
use ctxd_store::error::{Error, Result};
use ctxd_store::{queued, sessions};

/// The `queued_command` record of an entry: the text in the attachment (what the model
/// reads), images as the record's content blocks (sent after the text).
pub(crate) fn queued_record(e: &QueuedEntry, ts: &str, sidechain: bool) -> RecordInput {
    let text: Vec<&str> = e
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let images: Vec<ContentBlock> = e
        .content
        .iter()
        .filter(|b| matches!(b, ContentBlock::Image { .. }))
        .cloned()
        .collect();
    let mut value = json!({
        "type": kinds::QUEUED_COMMAND,
        "prompt": text.join("\n"),
        "source_uuid": e.queue_id,
        "commandMode": "prompt",
    });
    if !images.is_empty() {
        value["imageCount"] = json!(images.len());
    }
    if let Some(a) = &e.agent_id {
        value["agentId"] = json!(a);
    }
    let mut r = attachments::record(value, ts);
    r.content = images;
    r.is_sidechain = sidechain;
    r
}

impl Engine {
    /// `transcript.queue`.
    pub async fn queue_input(&self, p: QueueParams) -> Result<QueueResponse> {
        let mut content = Vec::new();
        if let Some(t) = p.text.filter(|t| !t.trim().is_empty()) {
            content.push(ContentBlock::text(t));
        }
        for (i, b) in p.content.into_iter().enumerate() {
            match &b {
                ContentBlock::Text { text, .. } if text.trim().is_empty() => {}
                ContentBlock::Text { .. } | ContentBlock::Image { .. } => content.push(b),
                other => {
                    return Err(Error::invalid(
                        format!("content[{i}]"),
                        format!(
                            "queued input holds text and image blocks, not {}",
                            other.type_name()
                        ),
                    ));
                }
            }
        }
        if content.is_empty() {
            return Err(Error::invalid(
                "text",
                "queued input needs text or content (text or image blocks)",
            ));
        }
        let size = serde_json::to_string(&content).map_or(0, |s| s.len());
        if size > ctxd_pipeline::limits::MAX_RECORD_BYTES {
            return Err(Error::invalid(
                "content",
                format!(
                    "is {size} bytes; one queued entry holds at most {} (MAX_RECORD_BYTES)",
                    ctxd_pipeline::limits::MAX_RECORD_BYTES
                ),
            ));
        }
        // `"main"` is how `transcript.queued` names the main thread: the same here.
        let agent_id = p.agent_id.filter(|a| a != "main");
        if agent_id.as_deref().is_some_and(|a| a.trim().is_empty()) {
            return Err(Error::invalid(
                "agent_id",
                "must name a sub-agent (omit it for the main thread)",
            ));
        }
        let entry = QueuedEntry {
            queue_id: uuid::Uuid::now_v7().to_string(),
            agent_id,
            content,
            queued_at: self.now_text(),
        };
        let sid = p.session_id.clone();
        let e2 = entry.clone();
        let pending = self
            .store
            .write(&p.session_id, move |tx| {
                if !sessions::exists(tx, &sid)? {
                    return Err(Error::SessionNotFound(sid.clone()));
                }
                let waiting = queued::list(tx, &sid, Some(e2.agent_id.as_deref()))?.len();
                if waiting >= MAX_QUEUED_ENTRIES {
                    return Err(Error::invalid(
                        "session_id",
                        format!(
                            "{waiting} entries already wait for this agent (at most {MAX_QUEUED_ENTRIES}): compile to deliver them first"
                        ),
                    ));
                }
                queued::insert(tx, &sid, &e2)?;
                Ok(ctxd_pipeline::saturate::u32_of(waiting).saturating_add(1))
            })
            .await?;
        Ok(QueueResponse {
            queue_id: entry.queue_id,
            pending,
        })
    }

    /// `transcript.queued`. `agent_id: "main"` names the main thread.
    pub async fn queued(&self, p: QueuedParams) -> Result<QueuedResponse> {
        let sid = p.session_id.clone();
        let entries = self
            .store
            .read(move |c| {
                if !sessions::exists(c, &sid)? {
                    return Err(Error::SessionNotFound(sid.clone()));
                }
                let agent = p.agent_id.as_deref().map(|a| (a != "main").then_some(a));
                queued::list(c, &sid, agent)
            })
            .await?;
        Ok(QueuedResponse { entries })
    }

    /// `transcript.take_queued`: a sub-agent's entries become sidechain records of the
    /// transcript (so nothing is lost) and are handed to its runtime.
    pub async fn take_queued(&self, p: TakeQueuedParams) -> Result<TakeQueuedResponse> {
        if p.agent_id.trim().is_empty() || p.agent_id == "main" {
            return Err(Error::invalid(
                "agent_id",
                "must name a sub-agent; the main thread's input is delivered by context.compile",
            ));
        }
        let cell = self.cells.cell(&p.session_id);
        let mut guard = cell.state.lock().await;
        self.load_or_drop(&p.session_id, &mut guard).await?;
        let l = loaded_mut(&mut guard)?;
        let (sid, agent, ts) = (l.row.id.clone(), p.agent_id.clone(), self.now_text());
        let built = self
            .store
            .write(&p.session_id, move |tx| {
                let entries = queued::list(tx, &sid, Some(Some(&agent)))?;
                if entries.is_empty() {
                    return Ok(Vec::new());
                }
                let ids: Vec<String> = entries.iter().map(|e| e.queue_id.clone()).collect();
                let inputs = entries
                    .iter()
                    .map(|e| queued_record(e, &ts, true))
                    .collect();
                let built = insert_batch(tx, &sid, inputs, None, &ts)?;
                queued::remove(tx, &sid, &ids)?;
                Ok(built)
            })
            .await?;
        if !built.is_empty() {
            l.records.extend(built.iter().cloned());
            self.emit_appended(&cell, &p.session_id, &built);
        }
        let texts = built
            .iter()
            .map(|r| attachments::render(r).unwrap_or_default())
            .collect();
        Ok(TakeQueuedResponse {
            records: built,
            texts,
        })
    }
}
