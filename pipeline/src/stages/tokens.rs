//! Token accounting: the last provider usage is the anchor; only what follows it
//! is estimated, at characters / 4 per block, with a 4/3 safety factor on the estimated
//! sum. This is the one place the rule lives: autocompact decisions are sensitive to a
//! few tokens, so every caller goes through `estimate`.

use ctxd_protocol::{ContentBlock, Record, RecordKind, ToolResultBlock, ToolResultContent};

/// Images and documents cost a flat amount: their bytes say little about their tokens.
pub(crate) const MEDIA_TOKENS: u64 = 2_000;

fn chars_tokens(s: &str) -> u64 {
    (s.chars().count() as u64).div_ceil(4)
}

/// A block kept verbatim is counted by its JSON: its fields are what the model reads.
fn json_tokens(fields: &serde_json::Map<String, serde_json::Value>) -> u64 {
    let json = serde_json::to_string(fields).unwrap_or_default();
    chars_tokens(&json)
}

/// Unscaled estimate of one block.
pub fn block_tokens(block: &ContentBlock) -> u64 {
    match block {
        ContentBlock::Text { text, .. } => chars_tokens(text),
        ContentBlock::Image { .. } | ContentBlock::Document { .. } => MEDIA_TOKENS,
        ContentBlock::Thinking { thinking, .. } => chars_tokens(thinking),
        ContentBlock::RedactedThinking { data, .. } => chars_tokens(data),
        ContentBlock::ToolUse { name, input, .. } => {
            let json = serde_json::to_string(input).unwrap_or_default();
            (name.chars().count() as u64 + json.chars().count() as u64).div_ceil(4)
        }
        ContentBlock::ToolResult { content, .. } => match content {
            ToolResultContent::Text(t) => chars_tokens(t),
            ToolResultContent::Blocks(blocks) => blocks
                .iter()
                .map(|b| match b {
                    ToolResultBlock::Text { text, .. } => chars_tokens(text),
                    ToolResultBlock::ToolReference { tool_name, .. } => {
                        chars_tokens(&crate::text::tool_reference_text(tool_name))
                    }
                    ToolResultBlock::Other(fields) => json_tokens(fields),
                    _ => MEDIA_TOKENS,
                })
                .sum(),
        },
        ContentBlock::Other(fields) => json_tokens(fields),
    }
}

/// Unscaled estimate of one record as the model will see it.
pub(crate) fn record_tokens(
    record: &Record,
    render_attachment: impl Fn(&Record) -> Option<String>,
) -> u64 {
    match record.kind {
        RecordKind::User | RecordKind::Assistant => record.content.iter().map(block_tokens).sum(),
        RecordKind::Attachment => render_attachment(record).map_or(0, |t| {
            // Queued images ride along with their attachment's text.
            chars_tokens(&t)
                + record
                    .content
                    .iter()
                    .filter(|b| matches!(b, ContentBlock::Image { .. }))
                    .map(block_tokens)
                    .sum::<u64>()
        }),
        RecordKind::System => 0,
    }
}

/// Applies the 4/3 safety factor, rounding up (saturating: sizes can come from clients).
pub fn scaled(raw: u64) -> u64 {
    raw.checked_mul(4).map_or(u64::MAX, |x| x.div_ceil(3))
}

/// The context a response proves: what the model read, plus what it wrote, counted as
/// the larger of its `output_tokens` and the estimate of its content (`response`, raw).
/// A usage written before the response ended (Claude Code records each block as it
/// streams, with `output_tokens` of 1 or 8) understates what the next request carries.
fn anchor_context(u: &ctxd_protocol::Usage, response: u64) -> u64 {
    let read = u.context_tokens().saturating_sub(u.output_tokens);
    read.saturating_add(u.output_tokens.max(scaled(response)))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Estimate {
    pub total: u64,
    pub(crate) anchor_uuid: Option<String>,
    pub(crate) anchor_tokens: u64,
    pub(crate) tail_tokens: u64,
}

/// Whether `r` anchors an estimate: a main-thread response that reports the usage of a
/// request ctxd compiled. The newest such record anchors it. A foreign usage (an
/// imported transcript's) counted another agent's system prompt and tools, so the
/// records it covers are estimated from their characters instead.
pub(crate) fn anchors(r: &Record) -> bool {
    !r.is_virtual
        && !r.is_sidechain
        && r.kind == RecordKind::Assistant
        && r.usage.is_some()
        && !r.foreign_usage
}

/// Estimates the context size of `records` (the projection, in order). `unanchored_extra`
/// is the unscaled estimate of what precedes the messages (system, tools, user context);
/// it counts only when no usage anchors the estimate, because a usage already covers it.
pub fn estimate<R: std::borrow::Borrow<Record>>(
    records: &[R],
    unanchored_extra: u64,
    render_attachment: impl Fn(&Record) -> Option<String>,
) -> Estimate {
    let sendable = |r: &Record| !r.is_virtual && !r.is_sidechain;
    let anchor = records.iter().rposition(|r| anchors(r.borrow()));
    match anchor {
        Some(i) => {
            let a = records[i].borrow();
            let same = |r: &Record| a.message_id.is_some() && r.message_id == a.message_id;
            let tokens = |r: &Record| record_tokens(r, &render_attachment);
            let mut response = tokens(a);
            let mut raw = 0u64;
            // A response recorded in parts (Claude Code writes one record per block, each
            // with the usage so far) can have tool results between its parts: they came
            // after the request its usage counts, so they are part of the tail. What lies
            // between two parts counts once the earlier part is found.
            let (mut between_raw, mut between_response) = (0u64, 0u64);
            if a.message_id.is_some() {
                for r in records[..i].iter().map(std::borrow::Borrow::borrow).rev() {
                    if !sendable(r) {
                        continue;
                    }
                    if anchors(r) {
                        if !same(r) {
                            break;
                        }
                        response = response
                            .saturating_add(tokens(r))
                            .saturating_add(std::mem::take(&mut between_response));
                        raw = raw.saturating_add(std::mem::take(&mut between_raw));
                    } else if same(r) {
                        between_response = between_response.saturating_add(tokens(r));
                    } else {
                        between_raw = between_raw.saturating_add(tokens(r));
                    }
                }
            }
            for r in records[i + 1..].iter().map(std::borrow::Borrow::borrow) {
                if !sendable(r) {
                    continue;
                }
                if same(r) {
                    response = response.saturating_add(tokens(r));
                } else {
                    raw = raw.saturating_add(tokens(r));
                }
            }
            let anchor_tokens = a.usage.as_ref().map_or(0, |u| anchor_context(u, response));
            let tail = scaled(raw);
            Estimate {
                // The anchor is a client's number: never let it wrap the estimate.
                total: anchor_tokens.saturating_add(tail),
                anchor_uuid: Some(a.uuid.clone()),
                anchor_tokens,
                tail_tokens: tail,
            }
        }
        None => {
            let raw: u64 = records
                .iter()
                .map(std::borrow::Borrow::borrow)
                .filter(|r| sendable(r))
                .map(|r| record_tokens(r, &render_attachment))
                .fold(unanchored_extra, u64::saturating_add);
            let tail = scaled(raw);
            Estimate {
                total: tail,
                anchor_uuid: None,
                anchor_tokens: 0,
                tail_tokens: tail,
            }
        }
    }
}

/// [`estimate`] of a view kept as it grows: each record pushed costs its own tokens
/// only. Equal to `estimate(view, unanchored_extra, render)` of the records pushed, in
/// order (they must be a projection: main-thread, not virtual).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// The newest assistant record with usage: uuid, its usage, message id.
    anchor: Option<(String, ctxd_protocol::Usage, Option<String>)>,
    /// Unscaled tokens of the anchor's response: its parts with usage, and any part
    /// after it.
    response: u64,
    /// Unscaled tokens after the anchor's request (all records when there is none), the
    /// anchor's own response excluded.
    raw: u64,
}

impl Tally {
    pub(crate) fn push(
        &mut self,
        r: &Record,
        render_attachment: impl Fn(&Record) -> Option<String>,
    ) {
        if r.is_virtual || r.is_sidechain {
            return;
        }
        let tokens = record_tokens(r, render_attachment);
        let same =
            matches!(&self.anchor, Some((_, _, Some(mid))) if r.message_id.as_ref() == Some(mid));
        if anchors(r)
            && let Some(u) = &r.usage
        {
            if same {
                // A later part of the same response: results between its parts stay.
                self.response = self.response.saturating_add(tokens);
            } else {
                self.response = tokens;
                self.raw = 0;
            }
            self.anchor = Some((r.uuid.clone(), u.clone(), r.message_id.clone()));
            return;
        }
        if same {
            self.response = self.response.saturating_add(tokens);
            return;
        }
        self.raw = self.raw.saturating_add(tokens);
    }

    pub fn estimate(&self, unanchored_extra: u64) -> Estimate {
        match &self.anchor {
            Some((uuid, usage, _)) => {
                let tail = scaled(self.raw);
                let anchor_tokens = anchor_context(usage, self.response);
                Estimate {
                    total: anchor_tokens.saturating_add(tail),
                    anchor_uuid: Some(uuid.clone()),
                    anchor_tokens,
                    tail_tokens: tail,
                }
            }
            None => {
                let tail = scaled(unanchored_extra.saturating_add(self.raw));
                Estimate {
                    total: tail,
                    anchor_uuid: None,
                    anchor_tokens: 0,
                    tail_tokens: tail,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxd_protocol::Usage;

    fn rec(kind: RecordKind, text: &str, usage: Option<Usage>) -> Record {
        Record {
            usage,
            ..Record::new(
                kind,
                format!("u-{text}"),
                "2026-01-01T00:00:00Z",
                vec![ContentBlock::text(text)],
            )
        }
    }

    #[test]
    fn anchored_on_last_usage_with_safety_factor() {
        let u = Usage::of_counts(100, 10, 20, 1000);
        let records = vec![
            rec(RecordKind::User, &"a".repeat(400), None),
            rec(RecordKind::Assistant, "ok", Some(u)),
            rec(RecordKind::User, &"b".repeat(300), None), // 75 raw tokens
        ];
        let e = estimate(&records, 999, |_| None);
        assert_eq!(e.anchor_tokens, 1130);
        assert_eq!(e.tail_tokens, 100);
        assert_eq!(e.total, 1230);
    }

    /// Claude Code records a response block by block, each part with the usage written
    /// so far (`output_tokens` 1), and the results of parallel tool calls between the
    /// parts: the parts count as what the model wrote, the results as the tail.
    #[test]
    fn a_response_recorded_in_parts_counts_its_content_and_the_results_between() {
        let u = Usage::of_counts(1000, 1, 0, 0);
        let part = |text: &str| Record {
            message_id: Some("msg_1".into()),
            ..rec(RecordKind::Assistant, text, Some(u.clone()))
        };
        let records = vec![
            rec(RecordKind::User, "prompt", None),
            part(&"a".repeat(400)),
            rec(RecordKind::User, &"r".repeat(300), None),
            part(&"b".repeat(800)),
            rec(RecordKind::User, &"s".repeat(60), None),
        ];
        let e = estimate(&records, 0, |_| None);
        // 1000 read, then the parts' 300 raw tokens (scaled: 400) instead of 1.
        assert_eq!(e.anchor_tokens, 1400);
        // Both results, the one between the parts included: 90 raw tokens.
        assert_eq!(e.tail_tokens, scaled(90));
        let mut t = Tally::default();
        for r in &records {
            t.push(r, |_| None);
        }
        assert_eq!(t.estimate(0), e);
        // A final usage larger than the content estimate (thinking the record does not
        // hold) is kept.
        let big = Usage::of_counts(1000, 5000, 0, 0);
        let whole = vec![Record {
            message_id: Some("msg_2".into()),
            ..rec(RecordKind::Assistant, "short", Some(big))
        }];
        assert_eq!(estimate(&whole, 0, |_| None).anchor_tokens, 6000);
    }

    /// An imported response's usage counted another agent's request: what it covers is
    /// estimated from the characters, with what precedes the messages.
    #[test]
    fn a_foreign_usage_does_not_anchor() {
        let u = Usage::of_counts(20_000, 10, 0, 0);
        let records = vec![
            rec(RecordKind::User, &"a".repeat(400), None),
            Record {
                foreign_usage: true,
                ..rec(RecordKind::Assistant, &"o".repeat(40), Some(u))
            },
            rec(RecordKind::User, &"b".repeat(300), None),
        ];
        let e = estimate(&records, 20, |_| None);
        assert_eq!(e.anchor_uuid, None);
        assert_eq!(e.total, scaled(20 + 100 + 10 + 75));
        let mut t = Tally::default();
        for r in &records {
            t.push(r, |_| None);
        }
        assert_eq!(t.estimate(20), e);
    }

    #[test]
    fn no_usage_estimates_everything() {
        let records = vec![rec(RecordKind::User, &"a".repeat(40), None)];
        let e = estimate(&records, 20, |_| None);
        assert_eq!(e.anchor_uuid, None);
        assert_eq!(e.total, scaled(10 + 20));
    }

    #[test]
    fn a_client_usage_of_u64_max_saturates_instead_of_wrapping() {
        let u = Usage::of_counts(u64::MAX, u64::MAX, u64::MAX, u64::MAX);
        let records = vec![
            rec(RecordKind::Assistant, "ok", Some(u)),
            rec(RecordKind::User, &"b".repeat(300), None),
        ];
        let e = estimate(&records, 0, |_| None);
        assert_eq!(e.anchor_tokens, u64::MAX);
        assert_eq!(e.total, u64::MAX);
        assert_eq!(scaled(u64::MAX), u64::MAX);
    }

    #[test]
    fn media_is_flat() {
        let b = ContentBlock::Image {
            extra: Default::default(),
            source: ctxd_protocol::MediaSource::Url {
                extra: Default::default(),
                url: "x".repeat(100_000),
            },
            cache_control: None,
        };
        assert_eq!(block_tokens(&b), MEDIA_TOKENS);
    }
}
