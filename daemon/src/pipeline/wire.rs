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
//! previous one instead of copying it: a compile copies only the blocks that are new.

use std::collections::BTreeMap;
use std::sync::Arc;

use ctxd_protocol::ContentBlock;
use serde::Serialize;
use serde_json::Value;

use super::cache_prefix::{KeyShape, Locus, Unit, hash_bytes};
use super::message::{ApiMessage, BlockMut};
use super::system::SystemBlock;
use super::tokens;

pub struct RequestParts<'a, B> {
    pub model: &'a str,
    pub max_tokens: u64,
    pub system: &'a [SystemBlock],
    pub tools: &'a [Value],
    pub messages: &'a [ApiMessage<B>],
    /// `cache_edits` blocks, by message index: spliced after the message's tool results.
    pub edits: &'a BTreeMap<usize, Vec<&'a str>>,
    /// Extra top-level parameters (latched flags), after `messages`, in key order.
    pub extra: &'a BTreeMap<String, Value>,
    /// Hash of what keys the cache besides the units (flags).
    pub flags_hash: u64,
    /// The previous request's blocks, to copy the unchanged ones from.
    pub previous: Option<&'a WireMemo>,
}

pub struct Written {
    pub body: String,
    pub shape: KeyShape,
    /// Characters of the `tools` array as JSON (the estimator's unanchored prefix).
    pub tools_chars: usize,
    /// Per message, per content block: its bytes in `body` and its unit.
    pub blocks: BlockSpans,
}

/// Where each content block of a written request is, for its [`WireMemo`].
#[derive(Debug, Default)]
pub struct BlockSpans(Vec<Vec<WrittenBlock>>);

/// One content block as written: where its bytes are in the body, and its unit; and the
/// previous request's copy of the block when it was copied from there.
#[derive(Debug, Clone)]
struct WrittenBlock {
    range: std::ops::Range<usize>,
    unit: Unit,
    kept: Option<Arc<ContentBlock>>,
}

/// A request's content blocks with where each one's bytes are in its body and its unit:
/// what the next request copies its unchanged blocks from.
#[derive(Debug, Default)]
pub struct WireMemo {
    messages: Vec<Vec<MemoBlock>>,
    /// The request's body, shared with its digest.
    body: Arc<str>,
}

#[derive(Debug)]
struct MemoBlock {
    block: Arc<ContentBlock>,
    range: std::ops::Range<usize>,
    unit: Unit,
}

impl WireMemo {
    /// The memo of a written request: its `messages`, its `body` (shared with its
    /// digest) and its `blocks` (`Written::blocks`). A block copied from the previous
    /// memo is shared with it; only the others are copied out of their records.
    pub fn new<B: BlockMut>(
        messages: Vec<ApiMessage<B>>,
        body: Arc<str>,
        blocks: BlockSpans,
    ) -> WireMemo {
        let messages = messages
            .into_iter()
            .zip(blocks.0)
            .map(|(m, written)| {
                m.content
                    .into_iter()
                    .zip(written)
                    .map(|(b, w)| MemoBlock {
                        block: w.kept.unwrap_or_else(|| Arc::new(b.into_block())),
                        range: w.range,
                        unit: w.unit,
                    })
                    .collect()
            })
            .collect();
        WireMemo { messages, body }
    }

    /// Block `k` of message `i` with its bytes and unit, when that block equals `b`.
    fn same(
        &self,
        i: usize,
        k: usize,
        b: &ContentBlock,
    ) -> Option<(&Arc<ContentBlock>, &[u8], &Unit)> {
        let m = self.messages.get(i)?.get(k)?;
        if *m.block != *b {
            return None;
        }
        Some((
            &m.block,
            self.body.as_bytes().get(m.range.clone())?,
            &m.unit,
        ))
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

struct Writer {
    buf: Vec<u8>,
    units: Vec<Unit>,
}

impl Writer {
    fn raw(&mut self, s: &str) {
        self.buf.extend_from_slice(s.as_bytes());
    }

    fn value<T: Serialize + ?Sized>(&mut self, v: &T) -> serde_json::Result<()> {
        serde_json::to_writer(&mut self.buf, v)
    }

    /// Writes one unit. `key_form` gives the canonical bytes when the unit carries a
    /// cache marker (the marker is not part of the cache key).
    fn unit<T: Serialize + ?Sized>(
        &mut self,
        locus: Locus,
        v: &T,
        key_form: Option<Vec<u8>>,
        tokens: impl FnOnce(usize) -> u64,
    ) -> serde_json::Result<()> {
        let start = self.buf.len();
        self.value(v)?;
        let bytes = &self.buf[start..];
        let breakpoint = key_form.is_some();
        let hash = hash_bytes(key_form.as_deref().unwrap_or(bytes));
        let len = bytes.len();
        self.units.push(Unit {
            locus,
            hash,
            bytes: u32::try_from(len).unwrap_or(u32::MAX),
            tokens: u32::try_from(tokens(len)).unwrap_or(u32::MAX),
            breakpoint,
        });
        Ok(())
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

pub fn write<B: BlockMut>(p: &RequestParts<'_, B>) -> serde_json::Result<Written> {
    let mut w = Writer {
        buf: Vec::with_capacity(p.previous.map_or(64 * 1024, |m| m.body.len() + 4096)),
        units: Vec::new(),
    };
    let mut blocks = Vec::with_capacity(p.messages.len());
    w.raw("{\"model\":");
    w.value(p.model)?;
    w.raw(",\"max_tokens\":");
    w.value(&p.max_tokens)?;
    w.raw(",\"system\":[");
    for (i, b) in p.system.iter().enumerate() {
        if i > 0 {
            w.raw(",");
        }
        let key = match &b.cache_control {
            Some(_) => Some(serde_json::to_vec(&SystemBlock {
                cache_control: None,
                ..b.clone()
            })?),
            None => None,
        };
        let chars = b.text.chars().count();
        w.unit(Locus::System(i as u32), b, key, |_| json_tokens(chars))?;
    }
    w.raw("]");
    // `[` `]` and the commas between tools count like `serde_json::to_string(tools)`.
    let mut tools_chars = 2 + p.tools.len().saturating_sub(1);
    if !p.tools.is_empty() {
        w.raw(",\"tools\":[");
        for (i, t) in p.tools.iter().enumerate() {
            if i > 0 {
                w.raw(",");
            }
            let start = w.buf.len();
            let key = match t.as_object() {
                Some(o) if o.contains_key("cache_control") => {
                    let mut o = o.clone();
                    o.remove("cache_control");
                    Some(serde_json::to_vec(&o)?)
                }
                _ => None,
            };
            w.unit(Locus::Tool(i as u32), t, key, json_tokens)?;
            tools_chars += String::from_utf8_lossy(&w.buf[start..]).chars().count();
        }
        w.raw("]");
    }
    w.raw(",\"messages\":[");
    for (i, m) in p.messages.iter().enumerate() {
        if i > 0 {
            w.raw(",");
        }
        w.raw("{\"role\":");
        w.value(&m.role)?;
        w.raw(",\"content\":[");
        let edits = p.edits.get(&i);
        let at = edits.map_or(usize::MAX, |_| {
            m.content
                .iter()
                .take_while(|b| matches!(b.block(), ContentBlock::ToolResult { .. }))
                .count()
        });
        let mut block = 0u32;
        let mut written = Vec::with_capacity(m.content.len());
        let locus = |block: u32| Locus::Message {
            index: i as u32,
            block,
        };
        for (k, b) in m.content.iter().enumerate() {
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
            let start = w.buf.len();
            let mut kept = None;
            match p.previous.and_then(|memo| memo.same(i, k, b)) {
                Some((same, bytes, unit)) => {
                    w.buf.extend_from_slice(bytes);
                    w.units.push(Unit {
                        locus: locus(block),
                        ..unit.clone()
                    });
                    kept = Some(same.clone());
                }
                None => {
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
                    w.unit(locus(block), b, key, |len| block_tokens(b, len))?;
                }
            }
            if let Some(unit) = w.units.last() {
                written.push(WrittenBlock {
                    range: start..w.buf.len(),
                    unit: unit.clone(),
                    kept,
                });
            }
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
        blocks.push(written);
    }
    w.raw("]");
    for (k, v) in p.extra {
        w.raw(",");
        w.value(k)?;
        w.raw(":");
        w.value(v)?;
    }
    w.raw("}");
    // serde_json writes valid UTF-8 only.
    let body = String::from_utf8(w.buf).map_err(|e| serde::ser::Error::custom(e.to_string()))?;
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
        },
        tools_chars,
        blocks: BlockSpans(blocks),
    })
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
mod tests {
    use super::*;
    use crate::pipeline::message::Role;
    use ctxd_protocol::{CacheControl, ToolResultContent};
    use serde::ser::SerializeSeq;
    use serde_json::json;

    // The reference: the serialisation compile used before this writer, one serde call
    // over typed wrappers (extra parameters are appended by hand: that older form had
    // none).
    #[derive(Serialize)]
    struct RequestBody<'a> {
        model: &'a str,
        max_tokens: u64,
        system: &'a [SystemBlock],
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        tools: &'a [serde_json::Value],
        messages: WireMessages<'a>,
    }

    /// Messages with their `cache_edits` blocks spliced in after each target message's
    /// tool results: the edits are not content ctxd stores, only wire.
    struct WireMessages<'a> {
        messages: &'a [ApiMessage],
        edits: &'a BTreeMap<usize, Vec<&'a str>>,
    }

    #[derive(Serialize)]
    struct WireMessage<'a> {
        role: Role,
        content: WireContent<'a>,
    }

    struct WireContent<'a> {
        blocks: &'a [ContentBlock],
        edits: Option<&'a Vec<&'a str>>,
    }

    impl Serialize for WireMessages<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut seq = s.serialize_seq(Some(self.messages.len()))?;
            for (i, m) in self.messages.iter().enumerate() {
                seq.serialize_element(&WireMessage {
                    role: m.role,
                    content: WireContent {
                        blocks: &m.content,
                        edits: self.edits.get(&i),
                    },
                })?;
            }
            seq.end()
        }
    }

    impl Serialize for WireContent<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let Some(ids) = self.edits else {
                return self.blocks.serialize(s);
            };
            let at = self
                .blocks
                .iter()
                .take_while(|b| matches!(b, ContentBlock::ToolResult { .. }))
                .count();
            let mut seq = s.serialize_seq(Some(self.blocks.len() + 1))?;
            for b in &self.blocks[..at] {
                seq.serialize_element(b)?;
            }
            seq.serialize_element(&CacheEditsBlock {
                kind: "cache_edits",
                edits: ids
                    .iter()
                    .map(|id| CacheEdit {
                        kind: "delete",
                        cache_reference: id,
                    })
                    .collect(),
            })?;
            for b in &self.blocks[at..] {
                seq.serialize_element(b)?;
            }
            seq.end()
        }
    }

    fn reference(p: &RequestParts<'_, ContentBlock>) -> String {
        let mut s = serde_json::to_string(&RequestBody {
            model: p.model,
            max_tokens: p.max_tokens,
            system: p.system,
            tools: p.tools,
            messages: WireMessages {
                messages: p.messages,
                edits: p.edits,
            },
        })
        .unwrap();
        s.pop();
        for (k, v) in p.extra {
            s.push_str(&format!(",{}:{}", json!(k), v));
        }
        s.push('}');
        s
    }

    fn result(id: &str, text: &str) -> ContentBlock {
        ContentBlock::ToolResult {
            tool_use_id: id.into(),
            content: ToolResultContent::Text(text.into()),
            is_error: false,
            cache_control: None,
            cache_reference: Some(id.into()),
        }
    }

    #[test]
    fn bytes_equal_one_serde_call_and_markers_do_not_key() {
        let system = vec![
            SystemBlock {
                kind: "text",
                text: "static".into(),
                cache_control: Some(CacheControl::scoped("global")),
            },
            SystemBlock {
                kind: "text",
                text: "dynamic \"quoted\"".into(),
                cache_control: None,
            },
        ];
        let tools = vec![
            json!({"name": "Read", "input_schema": {"type": "object"}}),
            json!({"name": "Bash", "cache_control": {"type": "ephemeral"}}),
        ];
        let mut last = ContentBlock::text("go on");
        *last.cache_control_mut().unwrap() = Some(CacheControl::ephemeral());
        let messages = vec![
            ApiMessage::user(vec![ContentBlock::text("hi")]),
            ApiMessage::assistant(vec![ContentBlock::ToolUse {
                id: "t1".into(),
                name: "Read".into(),
                input: json!({"file_path": "/a"}),
                cache_control: None,
            }]),
            ApiMessage {
                role: Role::User,
                content: vec![result("t1", "x"), last],
            },
        ];
        let edits: BTreeMap<usize, Vec<&str>> = [(2, vec!["t0"])].into_iter().collect();
        let extra: BTreeMap<String, Value> = [("temperature".to_string(), json!(0.5))]
            .into_iter()
            .collect();
        let parts = RequestParts {
            model: "claude",
            max_tokens: 10,
            system: &system,
            tools: &tools,
            messages: &messages,
            edits: &edits,
            extra: &extra,
            flags_hash: 0,
            previous: None,
        };
        let w = write(&parts).unwrap();
        assert_eq!(w.body, reference(&parts));
        let n = w.shape.units.len();
        // 2 system blocks, 2 tools, 1 + 1 + (result, edits, text) message blocks.
        assert_eq!(n, 9);
        let marked: Vec<bool> = w.shape.units.iter().map(|u| u.breakpoint).collect();
        assert_eq!(
            marked,
            [true, false, false, true, false, false, false, false, true]
        );
        assert_eq!(w.shape.tool_names, ["Read", "Bash"]);

        // The same request with its markers moved keys the cache identically.
        let mut system2 = system.clone();
        system2[0].cache_control = None;
        let mut messages2 = messages.clone();
        *messages2[2].content[1].cache_control_mut().unwrap() = None;
        let w2 = write(&RequestParts {
            system: &system2,
            messages: &messages2,
            ..parts
        })
        .unwrap();
        let hashes = |s: &KeyShape| s.units.iter().map(|u| u.hash).collect::<Vec<_>>();
        assert_eq!(hashes(&w.shape), hashes(&w2.shape));
        assert_ne!(w.body, w2.body);
    }

    #[test]
    fn edits_at_the_end_of_a_message_and_no_tools() {
        let messages = vec![ApiMessage::user(vec![result("a", "1"), result("b", "2")])];
        let edits: BTreeMap<usize, Vec<&str>> = [(0, vec!["a", "b"])].into_iter().collect();
        let extra = BTreeMap::new();
        let parts = plain(&messages, &edits, &extra);
        let w = write(&parts).unwrap();
        assert_eq!(w.body, reference(&parts));
        assert_eq!(w.shape.units.len(), 3);
    }

    fn plain<'a>(
        messages: &'a [ApiMessage],
        edits: &'a BTreeMap<usize, Vec<&'a str>>,
        extra: &'a BTreeMap<String, Value>,
    ) -> RequestParts<'a, ContentBlock> {
        RequestParts {
            model: "m",
            max_tokens: 1,
            system: &[],
            tools: &[],
            messages,
            edits,
            extra,
            flags_hash: 0,
            previous: None,
        }
    }

    fn block_strategy() -> impl proptest::strategy::Strategy<Value = ContentBlock> {
        use proptest::prelude::*;
        // Few distinct values, so that the previous request often holds equal blocks at
        // the same place and often unequal ones (a marker moved, a result changed).
        (0u8..4, 0u8..3, any::<bool>()).prop_map(|(kind, n, marked)| {
            let mut b = match kind {
                0 => ContentBlock::text(format!("text {n} \"q\"")),
                1 => result(&format!("t{n}"), &format!("out {n}")),
                2 => ContentBlock::ToolUse {
                    id: format!("t{n}"),
                    name: "Read".into(),
                    input: json!({"file_path": format!("/f{n}")}),
                    cache_control: None,
                },
                _ => ContentBlock::text("é ✓ \u{1F600}".repeat(usize::from(n) + 1)),
            };
            if marked && let Some(slot) = b.cache_control_mut() {
                *slot = Some(CacheControl::ephemeral());
            }
            b
        })
    }

    fn messages_strategy() -> impl proptest::strategy::Strategy<Value = Vec<ApiMessage>> {
        use proptest::prelude::*;
        proptest::collection::vec(
            (
                any::<bool>(),
                proptest::collection::vec(block_strategy(), 1..4),
            ),
            0..6,
        )
        .prop_map(|ms| {
            ms.into_iter()
                .map(|(user, content)| ApiMessage {
                    role: if user { Role::User } else { Role::Assistant },
                    content,
                })
                .collect()
        })
    }

    proptest::proptest! {
        /// Copying unchanged blocks from any previous request writes exactly the bytes
        /// and the cache key that writing everything afresh does.
        #[test]
        fn copying_from_the_previous_request_changes_nothing(
            previous in messages_strategy(),
            current in messages_strategy(),
            edit_at in proptest::option::of(0usize..6),
        ) {
            let edits: BTreeMap<usize, Vec<&str>> =
                edit_at.map(|i| (i, vec!["t0"])).into_iter().collect();
            let (no_edits, extra) = (BTreeMap::new(), BTreeMap::new());
            let parts = |messages, edits| plain(messages, edits, &extra);
            let before = write(&parts(&previous, &no_edits)).unwrap();
            let memo = WireMemo::new(previous.clone(), before.body.as_str().into(), before.blocks);
            let fresh = write(&parts(&current, &edits)).unwrap();
            let copied = write(&RequestParts {
                previous: Some(&memo),
                ..parts(&current, &edits)
            })
            .unwrap();
            proptest::prop_assert_eq!(&copied.body, &fresh.body);
            proptest::prop_assert_eq!(&copied.shape, &fresh.shape);
            proptest::prop_assert_eq!(&fresh.body, &reference(&parts(&current, &edits)));
            // And the memo it leaves serves the next request as well.
            let next = WireMemo::new(current.clone(), copied.body.as_str().into(), copied.blocks);
            let again = write(&RequestParts { previous: Some(&next), ..parts(&current, &edits) }).unwrap();
            proptest::prop_assert_eq!(&again.body, &fresh.body);
            proptest::prop_assert_eq!(&again.shape, &fresh.shape);
        }
    }

    /// The copy is taken: a memo whose bytes were changed behind its back shows in the
    /// body (so the property above compares a copy, not a second serialisation).
    #[test]
    fn unchanged_blocks_are_copied() {
        let messages = vec![ApiMessage::user(vec![ContentBlock::text("same")])];
        let (edits, extra) = (BTreeMap::new(), BTreeMap::new());
        let parts = plain(&messages, &edits, &extra);
        let first = write(&parts).unwrap();
        let altered = first.body.replace("same", "SAME");
        let memo = WireMemo::new(messages.clone(), altered.as_str().into(), first.blocks);
        let second = write(&RequestParts {
            previous: Some(&memo),
            ..parts
        })
        .unwrap();
        assert!(second.body.contains("SAME"), "{}", second.body);
    }

    /// The memo of a request shares each block it copied with the previous memo, and
    /// holds its own copy of each new one.
    #[test]
    fn the_memo_shares_unchanged_blocks_with_the_previous_one() {
        let (edits, extra) = (BTreeMap::new(), BTreeMap::new());
        let first = vec![ApiMessage::user(vec![ContentBlock::text("kept")])];
        let written = write(&plain(&first, &edits, &extra)).unwrap();
        let memo = WireMemo::new(first, written.body.as_str().into(), written.blocks);
        let second = vec![ApiMessage::user(vec![
            ContentBlock::text("kept"),
            ContentBlock::text("new"),
        ])];
        let written = write(&RequestParts {
            previous: Some(&memo),
            ..plain(&second, &edits, &extra)
        })
        .unwrap();
        let next = WireMemo::new(second, written.body.as_str().into(), written.blocks);
        let (old, new) = (&memo.messages[0], &next.messages[0]);
        assert!(
            Arc::ptr_eq(&old[0].block, &new[0].block),
            "the unchanged block was copied"
        );
        assert_eq!(*new[1].block, ContentBlock::text("new"));
        assert_eq!(Arc::strong_count(&new[1].block), 1);
    }
}
