//! The provider's on-demand compaction (`compaction: {type: "summarize"}`) as the
//! compaction of a session whose summariser is `server`: the compiled request goes to
//! the session's provider with the parameter, and the response, its `compaction` block
//! first, is appended as it came. That response is the new history's boundary (see
//! `pipeline::projection`); what it summarised stays in the store. The breaker counts the
//! provider's compactions too, whoever asked for them.

use std::time::Instant;

use ctxd_protocol::*;
use serde_json::Value;

use crate::engine::compaction::compact::{self, CompactAsk};
use crate::engine::compaction::memory;
use crate::engine::compile::Ask;
use crate::engine::session::transcript::{expect_last, insert_batch};
use crate::engine::{Engine, Loaded, SessionCell};
use ctxd_pipeline::kinds;
use ctxd_pipeline::latch::COMPACT_BETA;
use ctxd_pipeline::projection::server_compaction;
use ctxd_providers::stream;
use ctxd_store::error::{Error, Result};

/// The compiled `body` as a compaction request: `compaction` set, and no
/// `context_management`, which the API refuses beside it.
fn summarize_body(body: &str, instructions: Option<&str>) -> Result<String> {
    let mut v: Value = serde_json::from_str(body)
        .map_err(|e| Error::Internal(format!("the compiled body is not JSON: {e}")))?;
    let Some(obj) = v.as_object_mut() else {
        return Err(Error::Internal("the compiled body is not an object".into()));
    };
    obj.remove("context_management");
    let mut compaction = serde_json::Map::new();
    compaction.insert("type".into(), "summarize".into());
    if let Some(i) = instructions.filter(|i| !i.trim().is_empty()) {
        compaction.insert("instructions".into(), i.into());
    }
    obj.insert("compaction".into(), Value::Object(compaction));
    Ok(v.to_string())
}

/// The prompt the provider's summary leaves unanswered: the user messages after the
/// view's last response (input queued mid-turn included), copied after the compaction
/// block so that the next request still asks it (everything before the block is no
/// longer sent). Tool results stay summarised: their calls are before the block. Other
/// attachments are not copied: the next compile collects what the copy needs (its `@`
/// mentions, the reminders) anew.
fn pending_prompt(view: &[&Record]) -> Vec<RecordInput> {
    let start = view
        .iter()
        .rposition(|r| r.kind == RecordKind::Assistant)
        .map_or(0, |i| i + 1);
    view[start..]
        .iter()
        .copied()
        .filter(|r| {
            !r.is_virtual
                && !r.is_sidechain
                && !r.is_meta
                && !r.is_compact_summary
                && match r.kind {
                    RecordKind::User => !r
                        .content
                        .iter()
                        .all(|b| matches!(b, ContentBlock::ToolResult { .. })),
                    RecordKind::Attachment => r.attachment_type() == Some(kinds::QUEUED_COMMAND),
                    RecordKind::Assistant | RecordKind::System => false,
                }
        })
        .map(memory::tail_copy)
        .collect()
}

impl Engine {
    /// The provider's compaction block arrived in a response: one with a summary resets
    /// the breaker as a compaction of ctxd's does; one whose content is null is a failed
    /// compaction, counted like a failed autocompact.
    pub(crate) async fn record_server_compaction(&self, sid: &str, ok: bool) {
        let why = (!ok).then_some("the provider's compaction block has no content");
        self.record_breaker(sid, why).await;
    }

    /// Compacts through the provider. Fails (appending nothing) when the session has no
    /// Anthropic provider, the call fails, or the answer holds no summary.
    pub(crate) async fn server_compact(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        ask: CompactAsk,
        started: Instant,
    ) -> Result<CompactionReport> {
        let CompactAsk {
            trigger,
            instructions,
            now,
            pre_tokens,
        } = ask;
        let provider = match &l.row.settings.provider {
            Some(p @ ProviderConfig::Anthropic { .. }) => p.clone(),
            _ => {
                return Err(Error::CompactionFailed(
                    "the server summariser compacts through settings.provider, which must be \
                     of kind anthropic (the provider's compaction is the Messages API's)"
                        .into(),
                ));
            }
        };
        let compiled = self.compile_now(cell, l, &Ask::at(now)).await?;
        let body = summarize_body(&compiled.body, instructions.as_deref())?;
        let mut headers = compiled.metadata.cache.headers.clone();
        let betas = headers.entry("anthropic-beta".into()).or_default();
        if !betas.split(',').any(|b| b.trim() == COMPACT_BETA) {
            if !betas.is_empty() {
                betas.push(',');
            }
            betas.push_str(COMPACT_BETA);
        }
        let (message, _) = stream::turn(&provider, &body, &headers, &self.env, None)
            .await
            .map_err(|e| {
                Error::CompactionFailed(format!("the provider's compaction failed: {e}"))
            })?;
        let record: RecordInput = serde_json::from_value(serde_json::json!({
            "type": "assistant",
            "message": message,
        }))
        .map_err(|e| {
            Error::CompactionFailed(format!("the provider's answer is not a message: {e}"))
        })?;
        // As an append checks and unpacks it (the message's fields into the record's).
        let mut records = vec![record];
        {
            let shown = l.shown();
            let view: Vec<&Record> = shown.iter().map(|c| c.as_ref()).collect();
            records.extend(pending_prompt(&view));
        }
        crate::validate::validate_batch(&mut records)?;
        let summary_chars = message
            .pointer("/content/0/content")
            .and_then(Value::as_str)
            .map_or(0, |s| s.chars().count() as u64);
        let summarised_records = l
            .shown()
            .iter()
            .filter(|r| matches!(r.as_ref().kind, RecordKind::User | RecordKind::Assistant))
            .count() as u64;
        let sid = l.row.id.clone();
        let now_text = self.now_text();
        let expected = expect_last(l);
        let built = self
            .store
            .write(&l.row.id, move |tx| {
                let built = insert_batch(tx, &sid, records, expected, &now_text)?;
                if built.first().and_then(server_compaction) != Some(true) {
                    return Err(Error::CompactionFailed(
                        "the provider answered without a summary (no compaction block with \
                         content first); nothing was appended"
                            .into(),
                    ));
                }
                compact::reset_for_new_history(tx, &sid)?;
                Ok(built)
            })
            .await?;
        let (boundary_uuid, post_tokens) =
            self.take_new_history(cell, l, &built, trigger, pre_tokens, now)?;
        Ok(CompactionReport {
            trigger: trigger.as_str().into(),
            boundary_uuid,
            pre_tokens,
            post_tokens,
            summariser: "server".into(),
            summary_chars,
            summarised_records,
            head_truncated_rounds: 0,
            restored_files: Vec::new(),
            restore_skipped: Vec::new(),
            micros: ctxd_pipeline::saturate::micros(started.elapsed()),
            kind: "server".into(),
            kept_records: 0,
            session_memory_skipped: None,
            target_tokens: compact::room_budget(l).target,
            tightenings: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compaction_request_carries_the_parameter_and_no_context_management() {
        let body = r#"{"model":"m","context_management":{"edits":[]},"messages":[]}"#;
        let v: Value =
            serde_json::from_str(&summarize_body(body, Some("keep the plan")).unwrap()).unwrap();
        assert_eq!(
            v["compaction"],
            serde_json::json!({"type": "summarize", "instructions": "keep the plan"})
        );
        assert!(v.get("context_management").is_none());
        let v: Value = serde_json::from_str(&summarize_body(body, Some("  ")).unwrap()).unwrap();
        assert_eq!(v["compaction"], serde_json::json!({"type": "summarize"}));
    }
}
