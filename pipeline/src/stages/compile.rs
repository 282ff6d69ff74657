//! Assembles one request: `system + tools + messages`, then serialises it once. The bytes
//! produced here are the product: the same inputs always give the same bytes.
//!
//! Order of the long-context stages: the budget's fates are applied (decided by
//! the engine just before, because persisting needs the filesystem), snipped records are
//! already out of the projection, then microcompact, then the token estimate and the
//! thresholds. Decisions that must freeze come back as `Effects` for the engine to store.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use ctxd_protocol::{
    CacheMetadata, CompileMetadata, ContentBlock, MicrocompactReport, ModelProfile, Record,
    RequestFlags, SessionSettings, SystemPrompt, TokenEstimate, ToolSpec,
};

use super::budget::{self, Fate};
use super::cache_break::Fingerprint;
use super::cache_prefix::{self, KeyShape};
use super::digest::BodyDigest;
use super::message::{ApiMessage, Block, BlockMut, Lineage, Role};
use super::normalize::{NormalizeOptions, RecordFacts, TranscriptRef, normalize};
use super::projection::Shown;
use super::system::SystemInputs;
use super::usage::{self, Picture, UsageInputs};
use crate::collapse::{self, Collapse};
use crate::microcompact::{self, CLEARED, PinnedEdit};
use crate::{
    attachments, cache_markers, cost, latch, lean, projection, snip, system, thresholds, tokens,
    tool_plan, tools, user_context, wire,
};

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
    /// The "MCP Server Instructions" section memoized at the first compile.
    pub mcp_instructions: Option<&'a str>,
    /// The platform named in the environment section (an input, so the bytes do not
    /// depend on where ctxd was built).
    pub platform: &'a str,
    /// Memoized dynamic section texts of this history.
    pub section_memo: Option<&'a BTreeMap<String, String>>,
    /// The uncached section hashes of the previous main compile's fingerprint (to
    /// report changes).
    pub previous_uncached: Option<&'a BTreeMap<String, u64>>,
    /// The user's UTC offset: local times in sections are shown in it.
    pub utc_offset: chrono::FixedOffset,
    /// The selected output style, when one of that name was found.
    pub output_style: Option<&'a super::system::OutputStyle>,
}

pub struct CompileInput<'a> {
    pub session: SessionView<'a>,
    pub records: &'a [Record],
    /// The records' lineage when they are a transcript's (`engine::Transcript`): within
    /// one, a position always holds the same record.
    pub lineage: Option<Lineage>,
    /// `projection::project(records)`, when the caller keeps it up to date (a loaded
    /// transcript does); computed from `records` otherwise.
    pub projection: Option<&'a [&'a Record]>,
    /// Where the records' last compact boundary is, when the caller keeps it (a
    /// transcript does); found from the end otherwise.
    pub boundary: Option<usize>,
    /// Where the snip boundaries after it are, in order, when the caller keeps them (a
    /// transcript does); looked for among the records after the boundary otherwise.
    pub snip_boundaries: Option<&'a [usize]>,
    /// Per record, what normalising needs to know of it (`normalize::RecordFacts`), when
    /// the caller keeps it (a transcript does); empty otherwise.
    pub facts: &'a [RecordFacts],
    /// The tools to send, in order (undiscovered deferred tools already left out).
    pub tools: &'a [ToolSpec],
    pub rejected_media: &'a BTreeSet<(String, u32)>,
    /// Frozen tool-result fates (budget), by tool_use id.
    pub fates: &'a BTreeMap<String, Fate>,
    /// Results already cleared by time-based microcompact.
    pub cleared: &'a BTreeMap<String, Fate>,
    /// Cache edits already sent since the last compaction, in order.
    pub pinned_edits: &'a [PinnedEdit],
    /// The collapse store; committed collapses fold their spans in the view.
    pub collapses: &'a [Collapse],
    /// `(seq at commit, tokens saved)` of committed collapses: usage anchors older than
    /// the commit still count the folded tokens.
    pub collapse_commits: &'a [(u64, u64)],
    /// `(seq at commit, seq at undo, tokens it had saved)` of collapses undone after a
    /// commit: a usage anchor between the two counted the view without the span.
    pub collapse_undos: &'a [(u64, u64, u64)],
    pub now: DateTime<Utc>,
    pub side_request: bool,
    /// The request flags this compile carries (already resolved against the latch).
    pub flags: &'a RequestFlags,
    /// The previous request's cache key, for the predicted prefix.
    pub previous: Option<&'a KeyShape>,
    /// The previous request's body digest: this one's resumes where the bodies agree.
    pub previous_digest: Option<&'a Arc<BodyDigest>>,
    /// The previous request's blocks: the unchanged ones are copied, not written again.
    pub previous_wire: Option<&'a Arc<wire::WireMemo>>,
    /// Also compute the usage picture (`context.usage`).
    pub usage_picture: bool,
}

/// Decisions of this compile that must be stored before its request is shown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effects {
    /// Results cleared in this compile, by time-based microcompact or the lean policy.
    pub cleared: Vec<String>,
    pub new_edit: Option<PinnedEdit>,
    /// A clearing on a cold cache fired: the cache the pinned edits applied to is gone.
    pub reset_edits: bool,
}

pub struct Compiled {
    /// The request body, serialised.
    pub body: String,
    pub metadata: CompileMetadata,
    pub effects: Effects,
    /// This request's cache key, the next compile's `previous`.
    pub shape: KeyShape,
    /// What keyed the cache, for attributing breaks later.
    pub fingerprint: Fingerprint,
    pub usage: Option<Picture>,
    /// Attachment records in the projection (before collapses fold it), for the
    /// `compiled` event.
    pub projected_attachments: u64,
    /// What the next request's digest resumes from.
    pub digest: Arc<BodyDigest>,
    /// What the next request copies its unchanged blocks from.
    pub wire: Arc<wire::WireMemo>,
}

pub fn compile(input: &CompileInput<'_>) -> Result<Compiled, serde_json::Error> {
    let s = &input.session;
    let mc = &microcompact_settings(input);
    let after_boundary = after_boundary_of(input);
    let projected = projection_of(input);
    let folded: Vec<Shown<'_>> = collapse::apply(&projected, input.collapses);
    let view: Vec<&Record> = folded.iter().map(|c| c.as_ref()).collect();
    let projected_attachments = projected
        .iter()
        .filter(|r| r.kind == ctxd_protocol::RecordKind::Attachment)
        .count() as u64;

    let cost_model = cost_model(input);
    let Trimmed {
        shown,
        newly_cleared,
        policy_cleared,
        cold_clear,
        reset_edits,
        pinned,
        lean_cold,
        clear_saving,
    } = trim(input, &view, cost_model.as_ref());
    let shown_refs: Vec<&Record> = shown.iter().map(|c| c.as_ref()).collect();
    let cache_deletes = cache_deletes(&shown_refs, pinned, !cold_clear, mc);

    let SystemSection {
        blocks: mut system_blocks,
        layout,
        uncached,
        uncached_hashes,
    } = system_section(input);
    let mut tool_values = tools::build(input.tools);

    let context_text = user_context::render(s.claude_md, s.start_date);
    let normalized = normalize(
        &shown_refs,
        &NormalizeOptions {
            supports_thinking: s.model.supports_thinking,
            rejected_media: input.rejected_media,
            short_ids: s.settings.snip_enabled,
            transcript: input.lineage.map(|lineage| TranscriptRef {
                lineage,
                records: input.records,
                facts: input.facts,
            }),
        },
    );
    let mut messages = normalized.messages;
    if !tool_plan::provider_searches(input.tools) {
        tool_plan::tool_references_as_text(&mut messages);
    }
    put_user_context(&mut messages, &context_text);
    cache_markers::mark_messages(&mut messages, input.side_request);
    // A request whose messages call a tool must define it: the history may call tools
    // the session never registered (an imported transcript, a tool since removed).
    let placeholder_tools = tools::missing(
        &tool_values,
        messages
            .iter()
            .flat_map(|m| m.content.iter())
            .filter_map(|b| match b.block() {
                ContentBlock::ToolUse { name, .. } => Some(name.as_str()),
                _ => None,
            }),
    );
    tool_values.extend(placeholder_tools.iter().map(|n| tools::placeholder(n)));

    let mut new_edit = None;
    let mut edits: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    if mc.cached {
        cache_markers::mark_cache_references(&mut messages, input.side_request);
        new_edit = new_cache_edit(&messages, &cache_deletes);
        edits = edits_by_message(pinned, new_edit.as_ref(), messages.len());
    }

    let chosen = cost_model.as_ref().map(|m| {
        let fixed = system_blocks
            .iter()
            .map(|b| b.text.chars().count())
            .sum::<usize>()
            + tool_values
                .iter()
                .map(|t| t.to_string().len())
                .sum::<usize>()
            + context_text.chars().count();
        choose_ttl(
            input,
            m,
            &shown_refs,
            fixed,
            (&policy_cleared, lean_cold, clear_saving),
        )
    });
    let ttl = match &chosen {
        Some((one_hour, _)) => Some(if *one_hour {
            latch::TTL_1H
        } else {
            latch::TTL_5M
        }),
        None => input.flags.cache_ttl.as_deref(),
    };
    if let Some(ttl) = ttl.filter(|t| *t != latch::TTL_5M) {
        cache_markers::set_ttl(&mut system_blocks, &mut tool_values, &mut messages, ttl);
    }
    // Cache diagnostics name the previous response: a value that changes every turn, so
    // it is sent beside the latched parameters and kept out of the cache key.
    let previous_response = s
        .settings
        .cache_diagnostics
        .then(|| last_response_id(input.records))
        .flatten();
    let extra = match previous_response {
        Some(id) => {
            let mut extra = input.flags.extra.clone();
            extra.insert(
                "diagnostics".into(),
                serde_json::json!({ "previous_message_id": id }),
            );
            std::borrow::Cow::Owned(extra)
        }
        None => std::borrow::Cow::Borrowed(&input.flags.extra),
    };
    let written = wire::write(&wire::RequestParts {
        model: &s.model.model,
        max_tokens: s.model.max_output_tokens,
        system: &system_blocks,
        tools: &tool_values,
        messages: &messages,
        edits: &edits,
        extra: &extra,
        flags_hash: latch::cache_key_hash(input.flags),
        previous: input.previous_wire.map(|w| &**w),
    })?;
    let message_count = crate::saturate::u32_of(messages.len());
    let global_scope = system_blocks
        .iter()
        .any(|b| b.cache_control.as_ref().is_some_and(|c| c.scope.is_some()));
    let mut non_public = Vec::new();
    if global_scope {
        non_public.push("cache_control.scope".to_string());
    }
    // A beta parameter: the compile's headers carry its beta.
    if input.flags.extra.contains_key("context_management") {
        non_public.push("context_management".to_string());
    }
    if mc.cached {
        non_public.push("cache_reference".to_string());
        if !edits.is_empty() {
            non_public.push("cache_edits".to_string());
        }
    }
    let body = written.body;
    let mut shape = written.shape;
    // Kept under every policy, so a compile in memory and one after a restart (which
    // reads it back from the fingerprint) judge the next expiry alike.
    shape.ttl_1h = Some(ttl == Some(latch::TTL_1H));
    let (request_sha256, digest, wire_memo) = remember(
        input,
        &body,
        &system_blocks,
        &tool_values,
        messages,
        written.spans,
    );

    // Counted once: the estimate takes their sum, the fingerprint each block's.
    let block_chars: Vec<usize> = system_blocks
        .iter()
        .map(|b| b.text.chars().count())
        .collect();
    let system_chars: usize = block_chars.iter().sum();
    let prefix_chars = system_chars + written.tools_chars + context_text.chars().count();
    let Measured {
        est,
        snip_freed,
        context,
    } = measure(input, &shown_refs, after_boundary, prefix_chars);

    let prediction = cache_prefix::predict(input.previous, &shape);
    let mut fingerprint = fingerprint(
        input,
        &shape,
        (&system_blocks, &block_chars),
        prediction.read_tokens,
        uncached_hashes,
    );
    if let Some(ttl) = ttl {
        fingerprint.ttl = ttl.to_string();
    }
    let usage = input.usage_picture.then(|| {
        usage::picture(&UsageInputs {
            system_chars: system_chars as u64,
            tools_tokens: shape
                .units
                .iter()
                .filter(|u| matches!(u.locus, cache_prefix::Locus::Tool(_)))
                .map(|u| u64::from(u.tokens))
                .sum(),
            user_context_chars: context_text.chars().count() as u64,
            claude_md_chars: s.claude_md.map_or(0, |t| t.chars().count() as u64),
            view: &shown_refs,
            render_attachment: &attachments::render,
            window: s.model.context_window,
            used: context.effective_tokens,
            autocompact_threshold: context.autocompact_threshold,
        })
    });

    let metadata = CompileMetadata {
        tokens: TokenEstimate {
            estimated_tokens: est.total,
            anchor_uuid: est.anchor_uuid,
            anchor_tokens: est.anchor_tokens,
            estimated_tail_tokens: est.tail_tokens,
        },
        message_count,
        system_sections: layout,
        projected_records: crate::saturate::u32_of(view.len()),
        last_seq: input.records.last().map_or(0, |r| r.seq),
        request_sha256,
        request_bytes: body.len() as u64,
        repairs: normalized.repairs,
        replaced: Vec::new(),
        kept: Vec::new(),
        context,
        snip_tokens_freed: snip_freed,
        attachments_added: Vec::new(),
        added_attachments: Vec::new(),
        hook_contexts: attachments::hook_contexts(&view),
        attachment_sources: Vec::new(),
        uncached_sections: uncached,
        compaction: None,
        autocompact_skipped: None,
        compaction_shortfall: None,
        last_uuid: input.records.last().map(|r| r.uuid.clone()),
        microcompact: MicrocompactReport {
            time_based_cleared: newly_cleared.clone(),
            cache_edits_added: new_edit
                .as_ref()
                .map(|e| e.tool_use_ids.clone())
                .unwrap_or_default(),
            cache_edits_pinned: crate::saturate::u32_of(pinned.len()),
            policy_cleared: policy_cleared
                .iter()
                .map(|(id, rule)| ctxd_protocol::PolicyClear {
                    tool_use_id: id.clone(),
                    rule: rule.as_str().to_string(),
                })
                .collect(),
        },
        cache: CacheMetadata {
            predicted_read_tokens: prediction.read_tokens,
            prefix_bytes: prediction.prefix_bytes,
            request_tokens: prediction.request_tokens,
            first_difference: prediction.first_difference,
            expected_break: None,
            flags: input.flags.clone(),
            headers: latch::headers(input.flags, global_scope, previous_response.is_some()),
            latch_notes: Vec::new(),
        },
        cost: chosen.map(|(_, report)| report),
        placeholder_tools,
        stream_required: stream_required(&s.model.model, s.model.max_output_tokens),
        non_public,
    };
    Ok(Compiled {
        body,
        metadata,
        effects: Effects {
            cleared: newly_cleared
                .into_iter()
                .chain(policy_cleared.into_iter().map(|(id, _)| id))
                .collect(),
            new_edit,
            reset_edits,
        },
        shape,
        fingerprint,
        usage,
        projected_attachments,
        digest,
        wire: wire_memo,
    })
}

/// The provider's id of the newest main-thread response.
fn last_response_id(records: &[Record]) -> Option<&str> {
    records
        .iter()
        .rev()
        .filter(|r| r.kind == ctxd_protocol::RecordKind::Assistant && !r.is_sidechain)
        .find_map(|r| r.message_id.as_deref())
}

/// Whether the official SDK refuses to send this request without streaming: it expects
/// a non-streamed call to take an hour per 128,000 output tokens and refuses past ten
/// minutes, and some models have a lower limit of their own.
fn stream_required(model: &str, max_tokens: u64) -> bool {
    // The SDK's own table (`MODEL_NONSTREAMING_TOKENS`), names as it lists them.
    const NONSTREAMING_8K: [&str; 7] = [
        "claude-opus-4-20250514",
        "claude-opus-4-0",
        "claude-4-opus-20250514",
        "anthropic.claude-opus-4-20250514-v1:0",
        "claude-opus-4@20250514",
        "anthropic.claude-opus-4-1-20250805-v1:0",
        "claude-opus-4-1@20250805",
    ];
    let expected_secs = 3_600u128 * u128::from(max_tokens) / 128_000;
    expected_secs > 600 || (NONSTREAMING_8K.contains(&model) && max_tokens > 8_192)
}

/// `projection::after_last_boundary(records)`: from the caller's boundary, when it keeps
/// one.
fn after_boundary_of<'r>(input: &CompileInput<'r>) -> &'r [Record] {
    match input.boundary.and_then(|b| input.records.get(b..)) {
        Some(after) => {
            debug_assert_eq!(
                after.len(),
                projection::after_last_boundary(input.records).len(),
                "the caller's boundary is not the records'"
            );
            after
        }
        None => projection::after_last_boundary(input.records),
    }
}

/// `projection::project(records)`: the caller's, when it keeps one.
fn projection_of<'r>(input: &CompileInput<'r>) -> Cow<'r, [&'r Record]> {
    match input.projection {
        Some(p) => {
            debug_assert!(
                {
                    let own = projection::project(input.records);
                    own.len() == p.len() && own.iter().zip(p).all(|(a, b)| std::ptr::eq(*a, *b))
                },
                "the caller's projection is not the records'"
            );
            Cow::Borrowed(p)
        }
        None => Cow::Owned(projection::project(input.records)),
    }
}

/// The body's digest, and the digest and memo the next compile resumes from. The same
/// body as the previous request's keeps that request's digest and memo as they are (a
/// memo only maps values to their bytes, so the previous one serves the next compile as
/// well as a copy would).
fn remember(
    input: &CompileInput<'_>,
    body: &str,
    system_blocks: &[system::SystemBlock],
    tool_values: &[serde_json::Value],
    messages: Vec<ApiMessage<Block<'_>>>,
    spans: wire::Spans,
) -> (String, Arc<BodyDigest>, Arc<wire::WireMemo>) {
    if let (Some(d), Some(w)) = (input.previous_digest, input.previous_wire)
        && w.shares_body(d)
        && d.is_of(body)
    {
        return (d.hex().to_string(), d.clone(), w.clone());
    }
    let (hex, digest) = super::digest::sha256_hex(body, input.previous_digest.map(|d| &**d));
    let memo = wire::WireMemo::new(system_blocks, tool_values, messages, digest.body(), spans);
    (hex, Arc::new(digest), Arc::new(memo))
}

/// The view as the model sees it: the budget's fates and time-based clearing applied.
struct Trimmed<'v, 'i> {
    shown: Vec<Shown<'v>>,
    /// Cleared by time-based microcompact in this compile (to freeze).
    newly_cleared: Vec<String>,
    /// Cleared by the lean policy in this compile (to freeze), with the rule.
    policy_cleared: Vec<(String, lean::Rule)>,
    /// Results were cleared on a cold cache (time-based, or the lean policy's).
    cold_clear: bool,
    /// A cold clearing fired: the cache the pinned edits applied to is gone.
    reset_edits: bool,
    /// The cache edits still sent: none once a cold clearing fired.
    pinned: &'i [PinnedEdit],
    /// The lean policy found the cache cold (or its prefix rewritten anyway).
    lean_cold: bool,
    /// The cost model's expected saving of the best warm batch, when one was weighed.
    clear_saving: Option<f64>,
}

/// The session's microcompact, off while the provider's context editing clears tool
/// results: one owner per lever, so no result is cleared twice and the cache is not
/// rewritten by both.
fn microcompact_settings(input: &CompileInput<'_>) -> ctxd_protocol::MicrocompactSettings {
    let mut mc = input.session.settings.microcompact.clone();
    if latch::provider_clears_tool_results(input.flags) {
        mc.time_based = false;
        mc.cached = false;
    }
    mc
}

fn trim<'v, 'i>(
    input: &CompileInput<'i>,
    view: &[&'v Record],
    model: Option<&CostModel>,
) -> Trimmed<'v, 'i> {
    let mc = &microcompact_settings(input);
    // Microcompact, time-based: decided here, frozen by the engine.
    let newly_cleared = microcompact::time_based(view, input.cleared, mc, input.now);
    let lean = lean_clears(input, view, &newly_cleared, model);
    let mut fates: Cow<'_, BTreeMap<String, Fate>> = Cow::Borrowed(input.fates);
    if !input.cleared.is_empty() || !newly_cleared.is_empty() || !lean.clears.is_empty() {
        let f = fates.to_mut();
        for (id, fate) in input.cleared {
            f.insert(id.clone(), fate.clone());
        }
        for id in newly_cleared
            .iter()
            .chain(lean.clears.iter().map(|(id, _)| id))
        {
            f.insert(id.clone(), Fate::Replaced(CLEARED.into()));
        }
    }
    let shown: Vec<Shown<'v>> = budget::apply(view, &fates);
    // A clearing on a cold cache: the cache the pinned edits applied to is gone.
    let cold_clear = !newly_cleared.is_empty() || (lean.cold && !lean.clears.is_empty());
    let reset_edits = cold_clear && !input.pinned_edits.is_empty();
    let pinned: &[PinnedEdit] = if cold_clear { &[] } else { input.pinned_edits };
    Trimmed {
        shown,
        newly_cleared,
        policy_cleared: lean.clears,
        cold_clear,
        reset_edits,
        pinned,
        lean_cold: lean.cold,
        clear_saving: lean.saving,
    }
}

/// The lean policy's cost model inputs at this compile: the prices, the session's pace,
/// and the lifetime the previous request was cached with.
struct CostModel {
    prices: ctxd_protocol::models::Prices,
    pace: ctxd_protocol::Pace,
    previous_1h: bool,
}

/// The cost model, under the lean policy only (and not while the provider's context
/// editing owns the clearing).
fn cost_model(input: &CompileInput<'_>) -> Option<CostModel> {
    let settings = input.session.settings;
    if settings.policy != ctxd_protocol::ContextPolicy::Lean
        || latch::provider_clears_tool_results(input.flags)
    {
        return None;
    }
    Some(CostModel {
        prices: cost::prices_for(&input.session.model.model),
        pace: cost::pace(input.records),
        previous_1h: previous_ttl_1h(input),
    })
}

/// The lifetime the previous request's markers carried: as its shape recorded it (the
/// lean policy chooses it per call), else the latched one.
fn previous_ttl_1h(input: &CompileInput<'_>) -> bool {
    input
        .previous
        .and_then(|p| p.ttl_1h)
        .unwrap_or(input.flags.cache_ttl.as_deref() == Some(latch::TTL_1H))
}

/// The lean policy's lifetime for this request's markers, and the cost model's report.
/// The request's tokens are counted from what is shown; those written are all of them
/// when the cache is cold or the history has no response yet (a first call, a
/// compaction), else those from the first result cleared now or, failing one, from the
/// last response on (what the previous request did not hold). Only the records, the
/// clock and the previous request's lifetime decide it (not whether a previous request
/// is at hand), so a restart or a fork chooses as the session did.
fn choose_ttl(
    input: &CompileInput<'_>,
    model: &CostModel,
    shown: &[&Record],
    fixed_chars: usize,
    trimmed: (&[(String, lean::Rule)], bool, Option<f64>),
) -> (bool, ctxd_protocol::CostExpectation) {
    let (cleared_now, cold, clear_saving) = trimmed;
    let sizes: Vec<u64> = shown
        .iter()
        .map(|r| r.content.iter().map(super::tokens::block_tokens).sum())
        .collect();
    let request = (fixed_chars as u64).div_ceil(4) + sizes.iter().sum::<u64>();
    let first_cleared = shown.iter().position(|r| {
        r.content.iter().any(|b| {
            matches!(b, ContentBlock::ToolResult { tool_use_id, .. }
                if cleared_now.iter().any(|(id, _)| id == tool_use_id))
        })
    });
    let last_response = shown
        .iter()
        .rposition(|r| r.kind == ctxd_protocol::RecordKind::Assistant)
        .map(|at| {
            let id = shown[at].message_id.as_deref();
            let mut start = at;
            while start > 0
                && shown[start - 1].kind == ctxd_protocol::RecordKind::Assistant
                && id.is_some()
                && shown[start - 1].message_id.as_deref() == id
            {
                start -= 1;
            }
            start
        });
    let write = match (cold, first_cleared.or(last_response)) {
        (false, Some(from)) => sizes[from..].iter().sum(),
        _ => request,
    };
    let saving = cost::ttl_1h_saving(&model.prices, &model.pace, request, write);
    let settings = &input.session.settings.lean;
    let one_hour = if settings.choose_ttl {
        saving > 0.0
    } else {
        input.flags.cache_ttl.as_deref() == Some(latch::TTL_1H)
    };
    let report = ctxd_protocol::CostExpectation {
        prices: model.prices,
        pace: model.pace,
        request_tokens: request,
        write_tokens: write,
        ttl: if one_hour {
            latch::TTL_1H
        } else {
            latch::TTL_5M
        }
        .to_string(),
        ttl_1h_saving: saving,
        expected_warm_calls: cost::expected_warm_calls(&model.pace, model.previous_1h),
        clear_saving,
    };
    (one_hour, report)
}

/// The lean policy's clears, beyond what time-based microcompact clears now; none under
/// the default policy, or while the provider's context editing owns the clearing.
fn lean_clears(
    input: &CompileInput<'_>,
    view: &[&Record],
    time_based: &[String],
    model: Option<&CostModel>,
) -> lean::Decision {
    let settings = input.session.settings;
    let Some(model) = model else {
        return lean::Decision::default();
    };
    let clock = lean::CacheClock {
        now: input.now,
        ttl_secs: if model.previous_1h {
            cost::ONE_HOUR
        } else {
            cost::FIVE_MINUTES
        },
        rewritten: input
            .previous
            .is_some_and(|p| p.model != input.session.model.model),
    };
    let pricing = settings.lean.priced_clears.then(|| lean::ClearPricing {
        prices: model.prices,
        warm_calls: cost::expected_warm_calls(&model.pace, model.previous_1h),
    });
    let mut decision = lean::decide(
        view,
        input.cleared,
        input.fates,
        &settings.lean,
        clock,
        input.pinned_edits.is_empty(),
        pricing,
    );
    decision.clears.retain(|(id, _)| !time_based.contains(id));
    decision
}

/// Microcompact, cached: what it deletes now, only while the cache is warm (no cold
/// clearing fired), beyond what the pinned edits already delete.
fn cache_deletes(
    shown: &[&Record],
    pinned: &[PinnedEdit],
    warm: bool,
    mc: &ctxd_protocol::MicrocompactSettings,
) -> Vec<String> {
    if !warm {
        return Vec::new();
    }
    let deleted: BTreeSet<String> = pinned
        .iter()
        .flat_map(|e| e.tool_use_ids.iter().cloned())
        .collect();
    microcompact::cached(shown, &deleted, mc)
}

/// The system prompt's blocks and layout, and its uncached sections (reported against
/// the previous compile's, and hashed for this one's fingerprint).
struct SystemSection {
    blocks: Vec<system::SystemBlock>,
    layout: Vec<ctxd_protocol::SectionLayout>,
    uncached: Vec<ctxd_protocol::UncachedSectionReport>,
    uncached_hashes: BTreeMap<String, u64>,
}

fn system_section(input: &CompileInput<'_>) -> SystemSection {
    let s = &input.session;
    let inputs = SystemInputs {
        prompt: s.system,
        settings: s.settings,
        cwd: s.cwd,
        additional_directories: s.additional_directories,
        git_snapshot: s.git_snapshot,
        platform: s.platform,
        section_memo: s.section_memo,
        now: input.now.with_timezone(&s.utc_offset),
        // The global prefix is Claude Code's extension, sent only when the session asked
        // for it; otherwise (and with MCP tools) the system is cached per organisation.
        has_mcp_tools: tools::has_mcp_tools(input.tools) || !latch::global_scope(input.flags),
        mcp_instructions: s.mcp_instructions,
        output_style: s.output_style,
    };
    let resolved = system::resolved_dynamic(&inputs);
    let (blocks, layout) = system::build(&inputs, &resolved);
    SystemSection {
        blocks,
        layout,
        uncached: super::sections::uncached_report(&resolved, s.previous_uncached),
        uncached_hashes: super::sections::uncached_hashes(&resolved),
    }
}

/// The user context leads the first user message (a message of its own when the
/// messages start otherwise). After the provider's compaction the messages must begin
/// with its block, so the context leads the user message after it.
fn put_user_context(messages: &mut Vec<ApiMessage<Block<'_>>>, context_text: &str) {
    let block = Block::new(ContentBlock::text(context_text.to_string()));
    let compacted = messages.first().is_some_and(|m| {
        m.role == Role::Assistant
            && m.content.first().is_some_and(|b| match b.block() {
                ContentBlock::Other(fields) => {
                    fields.get("type").and_then(serde_json::Value::as_str)
                        == Some(super::projection::SERVER_COMPACTION)
                }
                _ => false,
            })
    });
    let at = usize::from(compacted);
    match messages.get_mut(at) {
        Some(m) if m.role == Role::User => m.content.insert(0, block),
        _ => messages.insert(at, ApiMessage::user(vec![block])),
    }
}

/// What keyed the provider's cache in this request, for attributing breaks later; the
/// system blocks come with each one's characters.
fn fingerprint(
    input: &CompileInput<'_>,
    shape: &KeyShape,
    (system_blocks, block_chars): (&[system::SystemBlock], &[usize]),
    predicted_read_tokens: u64,
    uncached: BTreeMap<String, u64>,
) -> Fingerprint {
    let s = &input.session;
    Fingerprint {
        compiled_at: crate::clock::rfc3339(input.now),
        last_seq: input.records.last().map_or(0, |r| r.seq),
        model: s.model.model.clone(),
        system: block_chars
            .iter()
            .zip(&shape.units)
            .map(|(chars, u)| (u.hash, *chars as u64))
            .collect(),
        tools: shape
            .units
            .iter()
            .filter(|u| matches!(u.locus, cache_prefix::Locus::Tool(_)))
            .zip(&shape.tool_names)
            .map(|(u, n)| (n.clone(), u.hash))
            .collect(),
        scope: system_blocks
            .first()
            .and_then(|b| b.cache_control.as_ref())
            .and_then(|c| c.scope.clone())
            .unwrap_or_else(|| "org".into()),
        ttl: input
            .flags
            .cache_ttl
            .clone()
            .unwrap_or_else(|| latch::TTL_5M.into()),
        betas: input.flags.betas.clone(),
        extra: input
            .flags
            .extra
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    cache_prefix::hash_bytes(v.to_string().as_bytes()),
                )
            })
            .collect(),
        flags_hash: shape.flags_hash,
        predicted_read_tokens,
        expected_break: None,
        predicted_miss: false,
        side_request: input.side_request,
        // Only when a previous response exists is `diagnostics` sent (see the body).
        diagnostics: s.settings.cache_diagnostics && last_response_id(input.records).is_some(),
        uncached,
    }
}

/// The cached-microcompact edit this compile adds: its deletions, pinned to the last user
/// message.
fn new_cache_edit(messages: &[ApiMessage<Block<'_>>], deletes: &[String]) -> Option<PinnedEdit> {
    if deletes.is_empty() {
        return None;
    }
    let idx = messages.iter().rposition(|m| m.role == Role::User)?;
    Some(PinnedEdit {
        message_index: crate::saturate::u32_of(idx),
        tool_use_ids: deletes.to_vec(),
    })
}

/// The cache edits to send, by message index: the pinned ones, then this compile's, each
/// id once per message; edits of messages past the end are dropped.
fn edits_by_message<'e>(
    pinned: &'e [PinnedEdit],
    new_edit: Option<&'e PinnedEdit>,
    messages: usize,
) -> BTreeMap<usize, Vec<&'e str>> {
    let mut edits: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for e in pinned.iter().chain(new_edit) {
        let slot = edits.entry(e.message_index as usize).or_default();
        for id in &e.tool_use_ids {
            if !slot.contains(&id.as_str()) {
                slot.push(id);
            }
        }
    }
    edits.retain(|i, _| *i < messages);
    edits
}

/// The context's size: the estimate, what snip and committed collapses freed since its
/// anchor, and the thresholds' verdict on what is left.
struct Measured {
    est: tokens::Estimate,
    snip_freed: u64,
    context: ctxd_protocol::ContextState,
}

fn measure(
    input: &CompileInput<'_>,
    shown: &[&Record],
    after_boundary: &[Record],
    prefix_chars: usize,
) -> Measured {
    let est = tokens::estimate(
        shown,
        (prefix_chars as u64).div_ceil(4),
        attachments::render,
    );
    // The record the estimate anchored at, found as it found it: from the end.
    let anchor_seq = est
        .anchor_uuid
        .as_ref()
        .and_then(|_| shown.iter().rev().find(|r| tokens::anchors(r)))
        .map_or(0, |r| r.seq);
    let snip_freed = match input.snip_boundaries {
        Some(at) => snip::freed_after(at.iter().filter_map(|&i| input.records.get(i)), anchor_seq),
        None => snip::freed_after(after_boundary, anchor_seq),
    };
    let collapse_freed: u64 = input
        .collapse_commits
        .iter()
        .filter(|(seq, _)| *seq >= anchor_seq && anchor_seq > 0)
        .map(|(_, saved)| *saved)
        .fold(0, u64::saturating_add);
    let collapse_restored: u64 = input
        .collapse_undos
        .iter()
        .filter(|(committed, undone, _)| *committed < anchor_seq && anchor_seq <= *undone)
        .map(|(_, _, saved)| *saved)
        .fold(0, u64::saturating_add);
    let context = thresholds::state(
        input.session.model,
        input.session.settings,
        est.total
            .saturating_add(collapse_restored)
            .saturating_sub(snip_freed.saturating_add(collapse_freed)),
    );
    Measured {
        est,
        snip_freed,
        context,
    }
}
