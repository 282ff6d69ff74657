//! The usage picture of the context window (Claude Code's `/context`): what fills it, by
//! category. Each category is estimated the way the token estimator counts (characters
//! / 4 per block), then all are scaled so that together they equal the anchored estimate
//! that drives the thresholds; free space and the autocompact buffer fill the rest of
//! the window.

use ctxd_protocol::{ContentBlock, Record, RecordKind, UsageCategory};

use super::tokens;

pub(crate) const SYSTEM: &str = "system";
pub(crate) const TOOLS: &str = "tools";
pub(crate) const INSTRUCTIONS: &str = "instruction_files";
pub(crate) const MESSAGES: &str = "messages";
pub(crate) const ATTACHMENTS: &str = "attachments";
pub(crate) const TOOL_RESULTS: &str = "tool_results";
pub(crate) const FREE: &str = "free_space";
pub(crate) const BUFFER: &str = "autocompact_buffer";

/// Attachment types that carry instruction files.
const INSTRUCTION_ATTACHMENTS: [&str; 1] = [crate::kinds::NESTED_MEMORY];

pub(crate) struct UsageInputs<'a> {
    pub(crate) system_chars: u64,
    pub(crate) tools_tokens: u64,
    /// `messages[0]`'s user context, and the instruction files inside it.
    pub(crate) user_context_chars: u64,
    pub(crate) claude_md_chars: u64,
    /// The projection as shown (fates applied).
    pub(crate) view: &'a [&'a Record],
    pub(crate) render_attachment: &'a dyn Fn(&Record) -> Option<String>,
    pub(crate) window: u64,
    pub(crate) used: u64,
    pub(crate) autocompact_threshold: u64,
}

pub struct Picture {
    pub categories: Vec<UsageCategory>,
    pub attachments: u64,
}

fn chars_tokens(n: u64) -> u64 {
    n.div_ceil(4)
}

pub fn picture(i: &UsageInputs<'_>) -> Picture {
    let mut raw = [
        (SYSTEM, chars_tokens(i.system_chars)),
        (TOOLS, i.tools_tokens),
        (INSTRUCTIONS, chars_tokens(i.claude_md_chars)),
        (
            MESSAGES,
            chars_tokens(i.user_context_chars.saturating_sub(i.claude_md_chars)),
        ),
        (ATTACHMENTS, 0),
        (TOOL_RESULTS, 0),
    ];
    let mut attachments = 0;
    for r in i.view.iter().filter(|r| !r.is_virtual && !r.is_sidechain) {
        match r.kind {
            RecordKind::Attachment => {
                let t = tokens::record_tokens(r, i.render_attachment);
                if t == 0 {
                    continue;
                }
                attachments += 1;
                let kind = r
                    .attachment
                    .as_ref()
                    .and_then(|a| a.get("type"))
                    .and_then(|t| t.as_str())
                    .unwrap_or_default();
                let slot = if INSTRUCTION_ATTACHMENTS.contains(&kind) {
                    2
                } else {
                    4
                };
                raw[slot].1 += t;
            }
            RecordKind::User | RecordKind::Assistant => {
                for b in &r.content {
                    let slot = if matches!(b, ContentBlock::ToolResult { .. }) {
                        5
                    } else {
                        3
                    };
                    raw[slot].1 += tokens::block_tokens(b);
                }
            }
            RecordKind::System => {}
        }
    }
    let used = i.used.min(i.window);
    let scaled = scale(&raw.map(|(_, t)| t), used);
    let buffer = i
        .window
        .saturating_sub(i.autocompact_threshold)
        .min(i.window - used);
    let free = i.window - used - buffer;
    let mut categories: Vec<UsageCategory> = raw
        .iter()
        .zip(scaled)
        .map(|((name, _), tokens)| category(name, tokens, i.window))
        .collect();
    categories.push(category(FREE, free, i.window));
    categories.push(category(BUFFER, buffer, i.window));
    Picture {
        categories,
        attachments,
    }
}

fn category(name: &str, tokens: u64, window: u64) -> UsageCategory {
    let percent = if window == 0 {
        0.0
    } else {
        (tokens as f64 * 1000.0 / window as f64).round() / 10.0
    };
    UsageCategory {
        name: name.into(),
        tokens,
        percent,
    }
}

/// Scales `raw` to sum exactly to `total` (largest remainders get the rounding).
fn scale(raw: &[u64], total: u64) -> Vec<u64> {
    let sum: u64 = raw.iter().sum();
    if sum == 0 {
        let mut out = vec![0; raw.len()];
        // Nothing is attributable: count it as messages.
        if let Some(m) = out.get_mut(3) {
            *m = total;
        }
        return out;
    }
    let exact: Vec<f64> = raw
        .iter()
        .map(|r| *r as f64 * total as f64 / sum as f64)
        .collect();
    let mut out: Vec<u64> = exact
        .iter()
        .map(|e| crate::saturate::u64_from_f64(e.floor()))
        .collect();
    let mut left = total.saturating_sub(out.iter().sum());
    let mut order: Vec<usize> = (0..raw.len()).collect();
    order.sort_by(|a, b| {
        let fa = exact[*a] - exact[*a].floor();
        let fb = exact[*b] - exact[*b].floor();
        fb.total_cmp(&fa).then(a.cmp(b))
    });
    for k in order {
        if left == 0 {
            break;
        }
        out[k] += 1;
        left -= 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxd_protocol::ToolResultContent;
    use serde_json::json;

    fn rec(
        kind: RecordKind,
        content: Vec<ContentBlock>,
        attachment: Option<serde_json::Value>,
    ) -> Record {
        Record {
            seq: 1,
            attachment,
            ..Record::new(kind, "u", "t", content)
        }
    }

    #[test]
    fn categories_sum_to_the_window_and_follow_the_content() {
        let records = [
            rec(
                RecordKind::User,
                vec![ContentBlock::text("x".repeat(400))],
                None,
            ),
            rec(
                RecordKind::User,
                vec![ContentBlock::ToolResult {
                    extra: Default::default(),
                    tool_use_id: "t".into(),
                    content: ToolResultContent::Text("y".repeat(4000)),
                    is_error: false,
                    cache_control: None,
                    cache_reference: None,
                }],
                None,
            ),
            rec(
                RecordKind::Attachment,
                vec![],
                Some(json!({"type": "nested_memory", "content": "z".repeat(800)})),
            ),
            rec(
                RecordKind::Attachment,
                vec![],
                Some(json!({"type": "date_change", "content": "w".repeat(80)})),
            ),
        ];
        let view: Vec<&Record> = records.iter().collect();
        let render = |r: &Record| {
            r.attachment
                .as_ref()
                .and_then(|a| a["content"].as_str().map(str::to_string))
        };
        let p = picture(&UsageInputs {
            system_chars: 4000,
            tools_tokens: 500,
            user_context_chars: 1200,
            claude_md_chars: 1000,
            view: &view,
            render_attachment: &render,
            window: 200_000,
            used: 3_000,
            autocompact_threshold: 167_000,
        });
        let get = |n: &str| p.categories.iter().find(|c| c.name == n).unwrap().tokens;
        let total: u64 = p.categories.iter().map(|c| c.tokens).sum();
        assert_eq!(total, 200_000);
        assert_eq!(get(BUFFER), 33_000);
        assert_eq!(get(FREE), 200_000 - 3_000 - 33_000);
        let used: u64 = [
            SYSTEM,
            TOOLS,
            INSTRUCTIONS,
            MESSAGES,
            ATTACHMENTS,
            TOOL_RESULTS,
        ]
        .iter()
        .map(|n| get(n))
        .sum();
        assert_eq!(used, 3_000);
        // Raw: system 1000, tools 500, instructions 250 + 200, messages 50 + 100,
        // attachments 20, tool results 1000.
        assert!(get(TOOL_RESULTS) > get(INSTRUCTIONS));
        assert!(get(INSTRUCTIONS) > get(MESSAGES));
        assert_eq!(p.attachments, 2);
    }

    #[test]
    fn over_the_threshold_the_buffer_shrinks_and_nothing_is_free() {
        let p = picture(&UsageInputs {
            system_chars: 0,
            tools_tokens: 0,
            user_context_chars: 0,
            claude_md_chars: 0,
            view: &[],
            render_attachment: &|_: &Record| None,
            window: 100,
            used: 95,
            autocompact_threshold: 80,
        });
        let get = |n: &str| p.categories.iter().find(|c| c.name == n).unwrap().tokens;
        assert_eq!((get(FREE), get(BUFFER), get(MESSAGES)), (0, 5, 95));
    }

    #[test]
    fn scaling_is_exact() {
        assert_eq!(scale(&[1, 1, 1], 10).iter().sum::<u64>(), 10);
        assert_eq!(scale(&[3, 0, 1], 8), [6, 0, 2]);
    }
}
