//! Assembles one request: `system + tools + messages`, then serialises it once. The bytes
//! produced here are the product: the same inputs always give the same bytes.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use ctxd_protocol::{
    CompileMetadata, ContentBlock, ModelProfile, Record, SessionSettings, SystemPrompt,
    TokenEstimate, ToolSpec,
};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::budget::{self, Fate};
use super::message::{ApiMessage, Role};
use super::normalize::{NormalizeOptions, normalize};
use super::system::{SystemBlock, SystemInputs};
use super::{attachments, cache_markers, projection, system, tokens, tools, user_context};

/// The session state a compile reads.
pub struct SessionView<'a> {
    pub model: &'a ModelProfile,
    pub settings: &'a SessionSettings,
    pub system: Option<&'a SystemPrompt>,
    pub cwd: &'a str,
    pub additional_directories: &'a [String],
    pub start_date: &'a str,
    pub git_snapshot: Option<&'a str>,
    /// The rendered instruction chain, when discovery has produced one.
    pub claude_md: Option<&'a str>,
}

pub struct CompileInput<'a> {
    pub session: SessionView<'a>,
    pub records: &'a [Record],
    pub tools: &'a [ToolSpec],
    pub rejected_media: &'a BTreeSet<(String, u32)>,
    /// Frozen tool-result fates (budget), by tool_use id.
    pub fates: &'a BTreeMap<String, Fate>,
    pub side_request: bool,
}

pub struct Compiled {
    /// The request body, serialised.
    pub body: String,
    pub metadata: CompileMetadata,
}

#[derive(Serialize)]
struct RequestBody<'a> {
    model: &'a str,
    max_tokens: u64,
    system: &'a [SystemBlock],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: &'a [serde_json::Value],
    messages: &'a [ApiMessage],
}

pub fn compile(input: &CompileInput<'_>) -> Result<Compiled, serde_json::Error> {
    let s = &input.session;
    let view = projection::after_last_boundary(input.records);
    let shown: Vec<Record> = budget::apply(view, input.fates)
        .into_iter()
        .map(Cow::into_owned)
        .collect();
    let view = shown.as_slice();

    let (system_blocks, layout) = system::build(&SystemInputs {
        prompt: s.system,
        settings: s.settings,
        cwd: s.cwd,
        additional_directories: s.additional_directories,
        git_snapshot: s.git_snapshot,
        has_mcp_tools: tools::has_mcp_tools(input.tools),
    });
    let tool_values = tools::build(input.tools);

    let context_text = user_context::render(s.claude_md, s.start_date);
    let normalized = normalize(
        view,
        &NormalizeOptions {
            supports_thinking: s.model.supports_thinking,
            rejected_media: input.rejected_media,
            short_ids: s.settings.snip_enabled,
        },
    );
    let mut messages = normalized.messages;
    match messages.first_mut() {
        Some(first) if first.role == Role::User => {
            first
                .content
                .insert(0, ContentBlock::text(context_text.clone()));
        }
        _ => messages.insert(
            0,
            ApiMessage::user(vec![ContentBlock::text(context_text.clone())]),
        ),
    }
    cache_markers::mark_messages(&mut messages, input.side_request);

    let body = serde_json::to_string(&RequestBody {
        model: &s.model.model,
        max_tokens: s.model.max_output_tokens,
        system: &system_blocks,
        tools: &tool_values,
        messages: &messages,
    })?;

    let prefix_chars: usize = system_blocks
        .iter()
        .map(|b| b.text.chars().count())
        .sum::<usize>()
        + serde_json::to_string(&tool_values)?.chars().count()
        + context_text.chars().count();
    let est = tokens::estimate(view, (prefix_chars as u64).div_ceil(4), attachments::render);

    let metadata = CompileMetadata {
        tokens: TokenEstimate {
            estimated_tokens: est.total,
            anchor_uuid: est.anchor_uuid,
            anchor_tokens: est.anchor_tokens,
            estimated_tail_tokens: est.tail_tokens,
        },
        message_count: messages.len() as u32,
        system_sections: layout,
        projected_records: view.len() as u32,
        last_seq: input.records.last().map(|r| r.seq).unwrap_or(0),
        request_sha256: hex::encode(Sha256::digest(body.as_bytes())),
        request_bytes: body.len() as u64,
        repairs: normalized.repairs,
        replaced: Vec::new(),
        kept: Vec::new(),
    };
    Ok(Compiled { body, metadata })
}
