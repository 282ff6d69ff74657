//! The request body's bytes, written once, piece by piece, so that every unit of the
//! cache key (system block, tool, message content block) is hashed from the very bytes
//! that are sent: the cache prediction costs no second serialisation.
//!
//! The output is exactly what `serde_json::to_string` gives for
//! `{model, max_tokens, system, tools?, messages, ...extra}`.
//!
//! A content block equal to the one at the same place in the previous request
//! ([`WireMemo`]) is copied from that request's bytes with its unit instead of being
//! serialised, hashed and counted again: between two compiles most of the history is
//! unchanged, so a compile writes what is new. The memo shares such a block with the
//! previous one instead of copying it, and a message whose blocks are all unchanged in
//! place shares the previous memo of that message whole: a compile after a turn builds
//! the memo of its new messages only. A block that is the transcript's own (its
//! [`Source`]) is known equal to the previous one with the same source without comparing
//! them, and a message made only of such blocks, each where the previous request had it,
//! is copied whole.

use std::collections::BTreeMap;
use std::sync::Arc;

use ctxd_protocol::ContentBlock;
use serde::Serialize;
use serde_json::Value;

use super::cache_prefix::{KeyShape, Locus, Unit, hash_bytes};
use super::message::{ApiMessage, BlockMut, Role, Source};
use super::system::SystemBlock;
use super::tokens;
use crate::saturate::u32_of;

pub(crate) struct RequestParts<'a, B> {
    pub(crate) model: &'a str,
    pub(crate) max_tokens: u64,
    pub(crate) system: &'a [SystemBlock],
    pub(crate) tools: &'a [Value],
    pub(crate) messages: &'a [ApiMessage<B>],
    /// `cache_edits` blocks, by message index: spliced after the message's tool results.
    pub(crate) edits: &'a BTreeMap<usize, Vec<&'a str>>,
    /// Extra top-level parameters (latched flags), after `messages`, in key order.
    pub(crate) extra: &'a BTreeMap<String, Value>,
    /// Hash of what keys the cache besides the units (flags).
    pub(crate) flags_hash: u64,
    /// The previous request's blocks, to copy the unchanged ones from.
    pub(crate) previous: Option<&'a WireMemo>,
}

pub(crate) struct Written {
    pub(crate) body: String,
    pub(crate) shape: KeyShape,
    /// Characters of the `tools` array as JSON (the estimator's unanchored prefix).
    pub(crate) tools_chars: usize,
    /// Where each system block, tool and content block is in `body`, with its unit.
    pub(crate) spans: Spans,
}

/// Where each unit of a written request is, for its [`WireMemo`].
#[derive(Debug, Default)]
pub struct Spans {
    system: Vec<Span<SystemBlock>>,
    /// With the characters of the tool's JSON.
    tools: Vec<(Span<Value>, usize)>,
    /// Per message: where its content starts in the body, and its blocks.
    messages: Vec<(usize, MessageSpans)>,
}

/// One message's content blocks as written.
#[derive(Debug)]
enum MessageSpans {
    /// Every block copied from the same place in the previous request's same message,
    /// at the same offset in it: that message's memo serves this one unchanged.
    Same(Arc<[Kept<ContentBlock>]>),
    /// Ranges relative to where the message's content starts.
    Written(Vec<Span<ContentBlock>>),
}

/// One unit as written: where its bytes are in the body, and its unit; and the previous
/// request's copy of its value when it was copied from there.
#[derive(Debug)]
struct Span<T> {
    range: std::ops::Range<usize>,
    unit: Unit,
    kept: Option<Arc<T>>,
}

/// A request's units (system blocks, tools, content blocks) with where each one's bytes
/// are in its body: what the next request copies its unchanged units from.
#[derive(Debug, Default)]
pub struct WireMemo {
    system: Vec<Kept<SystemBlock>>,
    tools: Vec<(Kept<Value>, usize)>,
    /// Per message: where its content starts in `body`, and its blocks, their ranges
    /// relative to that start, so that a message unchanged since the previous request
    /// shares that request's memo of it wherever it now starts. A turn builds the memo
    /// of its new messages only, and drops only what it replaced.
    messages: Vec<(usize, Arc<[Kept<ContentBlock>]>)>,
    /// The request's body, shared with its digest.
    body: Arc<str>,
}

/// A unit's value as the request held it, with its bytes in the body and its unit, and
/// for a content block its record's own, where it is in the transcript.
#[derive(Debug)]
struct Kept<T> {
    value: Arc<T>,
    range: std::ops::Range<usize>,
    unit: Unit,
    source: Option<Source>,
}

impl<T> Kept<T> {
    /// A span's value: shared with the previous memo when copied from it, else `owned()`.
    fn of(span: Span<T>, source: Option<Source>, owned: impl FnOnce() -> T) -> Kept<T> {
        Kept {
            value: span.kept.unwrap_or_else(|| Arc::new(owned())),
            range: span.range,
            unit: span.unit,
            source,
        }
    }
}

/// The kept unit `k` of `units` with its bytes, when its value equals `v`: known without
/// comparing them when both are the same block of the transcript (`source`). Its range
/// is relative to `at` in `body`.
fn same<'m, T: PartialEq>(
    units: &'m [Kept<T>],
    body: &'m str,
    at: usize,
    k: usize,
    (v, source): (&T, Option<Source>),
) -> Option<(&'m Kept<T>, &'m str)> {
    let kept = units.get(k)?;
    let same_source = source.is_some() && kept.source == source;
    if !same_source && *kept.value != *v {
        return None;
    }
    Some((kept, body.get(at + kept.range.start..at + kept.range.end)?))
}

impl WireMemo {
    /// The memo of a written request: its system blocks, tools and messages, its `body`
    /// (shared with its digest) and its `spans` (`Written::spans`). A unit copied from
    /// the previous memo is shared with it; only the others are copied.
    pub fn new<B: BlockMut>(
        system: &[SystemBlock],
        tools: &[Value],
        messages: Vec<ApiMessage<B>>,
        body: Arc<str>,
        spans: Spans,
    ) -> WireMemo {
        let system = system
            .iter()
            .zip(spans.system)
            .map(|(b, s)| Kept::of(s, None, || b.clone()))
            .collect();
        let tools = tools
            .iter()
            .zip(spans.tools)
            .map(|(t, (s, chars))| (Kept::of(s, None, || t.clone()), chars))
            .collect();
        let messages = messages
            .into_iter()
            .zip(spans.messages)
            .map(|(m, (at, written))| match written {
                MessageSpans::Same(kept) => (at, kept),
                MessageSpans::Written(spans) => (
                    at,
                    m.content
                        .into_iter()
                        .zip(spans)
                        .map(|(b, s)| {
                            let source = b.source();
                            Kept::of(s, source, || b.into_block())
                        })
                        .collect(),
                ),
            })
            .collect();
        WireMemo {
            system,
            tools,
            messages,
            body,
        }
    }

    /// Message `i`'s content blocks, and where its content starts in the body.
    fn message(&self, i: usize) -> Option<(usize, &Arc<[Kept<ContentBlock>]>)> {
        let (at, blocks) = self.messages.get(i)?;
        Some((*at, blocks))
    }

    /// Whether this memo was made with `digest`, over the same body.
    pub(crate) fn shares_body(&self, digest: &super::digest::BodyDigest) -> bool {
        digest.holds(&self.body)
    }

    fn same_block(
        &self,
        i: usize,
        k: usize,
        b: (&ContentBlock, Option<Source>),
    ) -> Option<(&Kept<ContentBlock>, &str)> {
        let (at, blocks) = self.message(i)?;
        same(blocks, &self.body, at, k, b)
    }
}

#[derive(Serialize)]
struct CacheEdit<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    cache_reference: &'a str,
}

#[derive(Serialize)]
struct CacheEditsBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    edits: Vec<CacheEdit<'a>>,
}

/// The body is built as text: what is copied from the previous body is text already, and
/// only what is serialised afresh is checked to be UTF-8 (serde_json writes bytes), so a
/// compile that copies most of its request checks little.
struct Writer {
    buf: String,
    /// Where a value is serialised before it joins `buf`.
    scratch: Vec<u8>,
    units: Vec<Unit>,
}

impl Writer {
    fn raw(&mut self, s: &str) {
        self.buf.push_str(s);
    }

    fn value<T: Serialize + ?Sized>(&mut self, v: &T) -> serde_json::Result<()> {
        self.scratch.clear();
        serde_json::to_writer(&mut self.scratch, v)?;
        let text = std::str::from_utf8(&self.scratch)
            .map_err(|e| serde::ser::Error::custom(format!("serialised JSON is not UTF-8: {e}")))?;
        self.buf.push_str(text);
        Ok(())
    }

    /// Writes one unit. `key_form` gives the canonical bytes when the unit carries a
    /// cache marker (the marker is not part of the cache key).
    fn unit<T: Serialize + ?Sized>(
        &mut self,
        locus: Locus,
        v: &T,
        key_form: Option<Vec<u8>>,
        tokens: impl FnOnce(usize) -> u64,
    ) -> serde_json::Result<Unit> {
        let start = self.buf.len();
        self.value(v)?;
        let bytes = &self.buf.as_bytes()[start..];
        let breakpoint = key_form.is_some();
        let hash = hash_bytes(key_form.as_deref().unwrap_or(bytes));
        let len = bytes.len();
        let unit = Unit {
            locus,
            hash,
            bytes: u32::try_from(len).unwrap_or(u32::MAX),
            tokens: u32::try_from(tokens(len)).unwrap_or(u32::MAX),
            breakpoint,
        };
        self.units.push(unit.clone());
        Ok(unit)
    }

    /// Copies a unit of the previous request: its bytes, and its unit at `locus`.
    fn copy<T>(&mut self, locus: Locus, kept: &Kept<T>, text: &str) -> Unit {
        self.buf.push_str(text);
        let unit = Unit {
            locus,
            ..kept.unit.clone()
        };
        self.units.push(unit.clone());
        unit
    }

    /// Writes a unit, or copies it from `previous` when equal there: where it is, and
    /// what it was copied from.
    fn unit_or_copy<'k, T: Serialize + PartialEq>(
        &mut self,
        locus: Locus,
        v: &T,
        previous: Option<(&'k Kept<T>, &str)>,
        write: impl FnOnce(&mut Writer, &T) -> serde_json::Result<Unit>,
    ) -> serde_json::Result<Placed<'k, T>> {
        let start = self.buf.len();
        let (unit, kept) = match previous {
            Some((kept, text)) => (self.copy(locus, kept, text), Some(kept)),
            None => (write(self, v)?, None),
        };
        Ok(Placed {
            range: start..self.buf.len(),
            unit,
            kept,
        })
    }
}

/// A unit just written: a [`Span`] that still borrows the previous memo's copy, so that
/// a message found unchanged as a whole shares that memo without taking a share of each
/// of its blocks first.
struct Placed<'k, T> {
    range: std::ops::Range<usize>,
    unit: Unit,
    kept: Option<&'k Kept<T>>,
}

impl<T> Placed<'_, T> {
    fn into_span(self) -> Span<T> {
        Span {
            range: self.range,
            unit: self.unit,
            kept: self.kept.map(|k| k.value.clone()),
        }
    }
}

fn json_tokens(len: usize) -> u64 {
    (len as u64).div_ceil(4)
}

/// A block's tokens the way the estimator counts them, except tool inputs, which are
/// taken from the bytes already written instead of serialising them again.
fn block_tokens(b: &ContentBlock, len: usize) -> u64 {
    match b {
        ContentBlock::ToolUse { .. } => json_tokens(len),
        other => tokens::block_tokens(other),
    }
}

pub(crate) fn write<B: BlockMut>(p: &RequestParts<'_, B>) -> serde_json::Result<Written> {
    let mut w = Writer {
        buf: String::with_capacity(p.previous.map_or(64 * 1024, |m| m.body.len() + 4096)),
        scratch: Vec::new(),
        // One unit per system block, tool, content block and edits block.
        units: Vec::with_capacity(
            p.system.len()
                + p.tools.len()
                + p.messages.iter().map(|m| m.content.len()).sum::<usize>()
                + p.edits.len(),
        ),
    };
    let mut spans = Spans {
        system: Vec::with_capacity(p.system.len()),
        tools: Vec::with_capacity(p.tools.len()),
        messages: Vec::with_capacity(p.messages.len()),
    };
    w.raw("{\"model\":");
    w.value(p.model)?;
    w.raw(",\"max_tokens\":");
    w.value(&p.max_tokens)?;
    w.raw(",\"system\":[");
    write_system(&mut w, p, &mut spans.system)?;
    w.raw("]");
    // `[` `]` and the commas between tools count like `serde_json::to_string(tools)`.
    let mut tools_chars = 2 + p.tools.len().saturating_sub(1);
    if !p.tools.is_empty() {
        w.raw(",\"tools\":[");
        tools_chars += write_tools(&mut w, p, &mut spans.tools)?;
        w.raw("]");
    }
    w.raw(",\"messages\":[");
    // The blocks of the message being written, made spans only when it is new.
    let mut scratch: Vec<Placed<'_, ContentBlock>> = Vec::new();
    for (i, m) in p.messages.iter().enumerate() {
        if i > 0 {
            w.raw(",");
        }
        let content_start = write_message(&mut w, p, i, m, &mut scratch)?;
        spans.messages.push(content_start);
    }
    w.raw("]");
    for (k, v) in p.extra {
        w.raw(",");
        w.value(k)?;
        w.raw(":");
        w.value(v)?;
    }
    w.raw("}");
    let body = w.buf;
    let tool_names = p
        .tools
        .iter()
        .map(|t| {
            t.get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    Ok(Written {
        body,
        shape: KeyShape {
            model: p.model.to_string(),
            flags_hash: p.flags_hash,
            units: w.units,
            tool_names,
            ttl_1h: None,
        },
        tools_chars,
        spans,
    })
}

/// The system blocks, each copied from the previous request when unchanged.
fn write_system<B>(
    w: &mut Writer,
    p: &RequestParts<'_, B>,
    spans: &mut Vec<Span<SystemBlock>>,
) -> serde_json::Result<()> {
    for (i, b) in p.system.iter().enumerate() {
        if i > 0 {
            w.raw(",");
        }
        let previous = p
            .previous
            .and_then(|m| same(&m.system, &m.body, 0, i, (b, None)));
        let span = w.unit_or_copy(Locus::System(u32_of(i)), b, previous, |w, b| {
            let key = match &b.cache_control {
                Some(_) => Some(serde_json::to_vec(&SystemBlock {
                    cache_control: None,
                    ..b.clone()
                })?),
                None => None,
            };
            let chars = b.text.chars().count();
            w.unit(Locus::System(u32_of(i)), b, key, |_| json_tokens(chars))
        })?;
        spans.push(span.into_span());
    }
    Ok(())
}

/// The tools, each copied from the previous request when unchanged; the characters of
/// their JSON.
fn write_tools<B>(
    w: &mut Writer,
    p: &RequestParts<'_, B>,
    spans: &mut Vec<(Span<Value>, usize)>,
) -> serde_json::Result<usize> {
    let mut tools_chars = 0;
    for (i, t) in p.tools.iter().enumerate() {
        if i > 0 {
            w.raw(",");
        }
        let previous = p.previous.and_then(|m| {
            let (kept, chars) = m.tools.get(i)?;
            if *kept.value != *t {
                return None;
            }
            Some((kept, m.body.get(kept.range.clone())?, *chars))
        });
        let chars = previous.map(|(_, _, chars)| chars);
        let span = w.unit_or_copy(
            Locus::Tool(u32_of(i)),
            t,
            previous.map(|(kept, bytes, _)| (kept, bytes)),
            |w, t| {
                let key = match t.as_object() {
                    Some(o) if o.contains_key("cache_control") => {
                        let mut o = o.clone();
                        o.remove("cache_control");
                        Some(serde_json::to_vec(&o)?)
                    }
                    _ => None,
                };
                w.unit(Locus::Tool(u32_of(i)), t, key, json_tokens)
            },
        )?;
        let chars = chars.unwrap_or_else(|| {
            w.buf
                .get(span.range.clone())
                .map_or(0, |s| s.chars().count())
        });
        tools_chars += chars;
        spans.push((span.into_span(), chars));
    }
    Ok(tools_chars)
}

/// Message `i`: its blocks, each copied from the previous request when unchanged, with
/// its `cache_edits` block spliced after its tool results; where its content starts, and
/// its spans (`scratch` is the spans' buffer, kept between messages).
fn write_message<'p, B: BlockMut>(
    w: &mut Writer,
    p: &RequestParts<'p, B>,
    i: usize,
    m: &ApiMessage<B>,
    scratch: &mut Vec<Placed<'p, ContentBlock>>,
) -> serde_json::Result<(usize, MessageSpans)> {
    // The role as serde writes it (`rename_all = "lowercase"`), with the opening of the
    // content: text, not a serialisation per message.
    w.raw(match m.role {
        Role::User => "{\"role\":\"user\",\"content\":[",
        Role::Assistant => "{\"role\":\"assistant\",\"content\":[",
    });
    let edits = p.edits.get(&i);
    let at = edits.map_or(usize::MAX, |_| {
        m.content
            .iter()
            .take_while(|b| matches!(b.block(), ContentBlock::ToolResult { .. }))
            .count()
    });
    let mut block = 0u32;
    let content_start = w.buf.len();
    let previous_message = p.previous.and_then(|m| m.message(i));
    if edits.is_none()
        && let Some(kept) = previous_message.and_then(|(at, kept)| {
            copy_whole(w, p.previous?, at, kept, i, &m.content).then_some(kept)
        })
    {
        w.raw("]}");
        return Ok((content_start, MessageSpans::Same(kept.clone())));
    }
    // Whether the message is, block for block and byte for byte, the previous request's
    // same message: no edits block spliced in, every block copied from its own place
    // there, at the same offset within the message.
    let mut unchanged =
        edits.is_none() && previous_message.is_some_and(|(_, kept)| kept.len() == m.content.len());
    let locus = |block: u32| Locus::Message {
        index: u32_of(i),
        block,
    };
    for (k, b) in m.content.iter().enumerate() {
        let source = b.source();
        let b = b.block();
        if k == at
            && let Some(ids) = edits
        {
            if block > 0 {
                w.raw(",");
            }
            w.unit(locus(block), &edits_block(ids), None, |_| 0)?;
            block += 1;
        }
        if block > 0 {
            w.raw(",");
        }
        let previous = p.previous.and_then(|m| m.same_block(i, k, (b, source)));
        let span = w.unit_or_copy(locus(block), b, previous, |w, b| {
            let key = match b.cache_control() {
                Some(_) => {
                    let mut plain = b.clone();
                    if let Some(slot) = plain.cache_control_mut() {
                        *slot = None;
                    }
                    Some(serde_json::to_vec(&plain)?)
                }
                None => None,
            };
            w.unit(locus(block), b, key, |len| block_tokens(b, len))
        })?;
        let span = Placed {
            range: span.range.start - content_start..span.range.end - content_start,
            ..span
        };
        unchanged = unchanged
            && span.kept.is_some()
            && previous_message
                .and_then(|(_, kept)| kept.get(k))
                .is_some_and(|kept| kept.range == span.range);
        scratch.push(span);
        block += 1;
    }
    if at == m.content.len()
        && let Some(ids) = edits
    {
        if block > 0 {
            w.raw(",");
        }
        w.unit(locus(block), &edits_block(ids), None, |_| 0)?;
    }
    w.raw("]}");
    let written = match previous_message {
        Some((_, kept)) if unchanged => {
            scratch.clear();
            MessageSpans::Same(kept.clone())
        }
        _ => MessageSpans::Written(scratch.drain(..).map(Placed::into_span).collect()),
    };
    Ok((content_start, written))
}

/// Copies message `i`'s content whole from the previous request when every block of it
/// is, in order, the transcript's block that request had there (their sources say so
/// without comparing them): one copy of its bytes, its units as they were. Whether it
/// did.
fn copy_whole<B: BlockMut>(
    w: &mut Writer,
    previous: &WireMemo,
    at: usize,
    kept: &[Kept<ContentBlock>],
    i: usize,
    content: &[B],
) -> bool {
    let same = kept.len() == content.len()
        && kept
            .iter()
            .zip(content)
            .all(|(k, b)| k.source.is_some() && k.source == b.source());
    let Some(bytes) = same
        .then(|| {
            kept.last()
                .map_or(Some(""), |last| previous.body.get(at..at + last.range.end))
        })
        .flatten()
    else {
        return false;
    };
    w.raw(bytes);
    w.units
        .extend(kept.iter().enumerate().map(|(k, kept)| Unit {
            locus: Locus::Message {
                index: u32_of(i),
                block: u32_of(k),
            },
            ..kept.unit.clone()
        }));
    true
}

fn edits_block<'a>(ids: &'a [&'a str]) -> CacheEditsBlock<'a> {
    CacheEditsBlock {
        kind: "cache_edits",
        edits: ids
            .iter()
            .map(|id| CacheEdit {
                kind: "delete",
                cache_reference: id,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests;
