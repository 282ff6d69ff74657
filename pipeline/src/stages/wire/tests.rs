//! Tests of the wire writer: byte identity with one serde call, and the memo.

use std::fmt::Write as _;

use super::*;
use crate::message::Role;
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
        let _ = write!(s, ",{}:{}", json!(k), v);
    }
    s.push('}');
    s
}

fn result(id: &str, text: &str) -> ContentBlock {
    ContentBlock::ToolResult {
        extra: Default::default(),
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
            extra: Default::default(),
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
                extra: Default::default(),
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

/// The system blocks, tools and messages of one request.
#[derive(Debug, Clone)]
struct Request {
    system: Vec<SystemBlock>,
    tools: Vec<Value>,
    messages: Vec<ApiMessage>,
}

impl Request {
    fn parts<'a>(
        &'a self,
        edits: &'a BTreeMap<usize, Vec<&'a str>>,
        extra: &'a BTreeMap<String, Value>,
    ) -> RequestParts<'a, ContentBlock> {
        RequestParts {
            system: &self.system,
            tools: &self.tools,
            ..plain(&self.messages, edits, extra)
        }
    }

    fn memo(&self, written: Written) -> WireMemo {
        WireMemo::new(
            &self.system,
            &self.tools,
            self.messages.clone(),
            written.body.as_str().into(),
            written.spans,
        )
    }

    /// Written without edits or extra parameters, copying from `previous` if given.
    fn write_plain(&self, previous: Option<&WireMemo>) -> Written {
        let (edits, extra) = (BTreeMap::new(), BTreeMap::new());
        write(&RequestParts {
            previous,
            ..self.parts(&edits, &extra)
        })
        .unwrap()
    }
}

fn request_strategy() -> impl proptest::strategy::Strategy<Value = Request> {
    use proptest::prelude::*;
    let system = proptest::collection::vec(
        (0u8..3, any::<bool>()).prop_map(|(n, marked)| SystemBlock {
            kind: "text",
            text: format!("system {n} \u{1F600}"),
            cache_control: marked.then(CacheControl::ephemeral),
        }),
        0..3,
    );
    let tools = proptest::collection::vec(
        (0u8..3, any::<bool>()).prop_map(|(n, marked)| {
            let mut t = json!({"name": format!("T{n}"), "description": "é \"x\""});
            if marked {
                t["cache_control"] = json!({"type": "ephemeral"});
            }
            t
        }),
        0..3,
    );
    (system, tools, messages_strategy()).prop_map(|(system, tools, messages)| Request {
        system,
        tools,
        messages,
    })
}

proptest::proptest! {
    /// Copying unchanged units (system blocks, tools, content blocks) from any
    /// previous request writes exactly the bytes, the cache key and the tools'
    /// characters that writing everything afresh does.
    #[test]
    fn copying_from_the_previous_request_changes_nothing(
        previous in request_strategy(),
        current in request_strategy(),
        edit_at in proptest::option::of(0usize..6),
    ) {
        let edits: BTreeMap<usize, Vec<&str>> =
            edit_at.map(|i| (i, vec!["t0"])).into_iter().collect();
        let (no_edits, extra) = (BTreeMap::new(), BTreeMap::new());
        let memo = previous.memo(write(&previous.parts(&no_edits, &extra)).unwrap());
        let fresh = write(&current.parts(&edits, &extra)).unwrap();
        let copied = write(&RequestParts {
            previous: Some(&memo),
            ..current.parts(&edits, &extra)
        })
        .unwrap();
        proptest::prop_assert_eq!(&copied.body, &fresh.body);
        proptest::prop_assert_eq!(&copied.shape, &fresh.shape);
        proptest::prop_assert_eq!(copied.tools_chars, fresh.tools_chars);
        proptest::prop_assert_eq!(&fresh.body, &reference(&current.parts(&edits, &extra)));
        // And the memo it leaves serves the next request as well.
        let next = current.memo(copied);
        let again = write(&RequestParts { previous: Some(&next), ..current.parts(&edits, &extra) }).unwrap();
        proptest::prop_assert_eq!(&again.body, &fresh.body);
        proptest::prop_assert_eq!(&again.shape, &fresh.shape);
        proptest::prop_assert_eq!(again.tools_chars, fresh.tools_chars);
        // And a memo taken with the edits serves a request without them, and the one
        // that leaves (sharing messages with it) the next.
        let plain = write(&current.parts(&no_edits, &extra)).unwrap();
        let without = write(&RequestParts { previous: Some(&next), ..current.parts(&no_edits, &extra) }).unwrap();
        proptest::prop_assert_eq!(&without.body, &plain.body);
        proptest::prop_assert_eq!(&without.shape, &plain.shape);
        let shared = current.memo(without);
        let last = write(&RequestParts { previous: Some(&shared), ..current.parts(&no_edits, &extra) }).unwrap();
        proptest::prop_assert_eq!(&last.body, &plain.body);
        proptest::prop_assert_eq!(&last.shape, &plain.shape);
    }
}

/// A request with one system block, one tool and one message, each saying `word`.
fn one_of_each(word: &str) -> Request {
    Request {
        system: vec![SystemBlock {
            kind: "text",
            text: format!("{word} system"),
            cache_control: None,
        }],
        tools: vec![json!({"name": format!("{word} tool")})],
        messages: vec![ApiMessage::user(vec![ContentBlock::text(format!(
            "{word} text"
        ))])],
    }
}

/// The copy is taken: a memo whose bytes were changed behind its back shows in the
/// body (so the property above compares a copy, not a second serialisation), for a
/// system block, a tool and a content block alike.
#[test]
fn unchanged_units_are_copied() {
    let request = one_of_each("same");
    let (edits, extra) = (BTreeMap::new(), BTreeMap::new());
    let first = write(&request.parts(&edits, &extra)).unwrap();
    let altered = Written {
        body: first.body.replace("same", "SAME"),
        ..first
    };
    let memo = request.memo(altered);
    let second = write(&RequestParts {
        previous: Some(&memo),
        ..request.parts(&edits, &extra)
    })
    .unwrap();
    for unit in ["SAME system", "SAME tool", "SAME text"] {
        assert!(second.body.contains(unit), "{unit}: {}", second.body);
    }
}

/// The memo of a request shares each unit it copied with the previous memo, and
/// holds its own copy of each new one.
#[test]
fn the_memo_shares_unchanged_units_with_the_previous_one() {
    let (edits, extra) = (BTreeMap::new(), BTreeMap::new());
    let first = one_of_each("kept");
    let memo = first.memo(write(&first.parts(&edits, &extra)).unwrap());
    let mut second = first.clone();
    second.messages[0].content.push(ContentBlock::text("new"));
    let written = write(&RequestParts {
        previous: Some(&memo),
        ..second.parts(&edits, &extra)
    })
    .unwrap();
    let next = second.memo(written);
    assert!(Arc::ptr_eq(&memo.system[0].value, &next.system[0].value));
    assert!(Arc::ptr_eq(&memo.tools[0].0.value, &next.tools[0].0.value));
    let (old, new) = (memo.message(0).unwrap().1, next.message(0).unwrap().1);
    assert!(
        Arc::ptr_eq(&old[0].value, &new[0].value),
        "the unchanged block was copied"
    );
    assert_eq!(*new[1].value, ContentBlock::text("new"));
    assert_eq!(Arc::strong_count(&new[1].value), 1);
}

/// A message unchanged since the previous request shares that request's memo of it
/// whole, wherever it now starts (here after a longer system block); a changed one gets
/// its own; and the shared memo still copies the right bytes at the next request.
#[test]
fn an_unchanged_message_shares_its_memo_wherever_it_starts() {
    let mut first = one_of_each("kept");
    first
        .messages
        .push(ApiMessage::assistant(vec![ContentBlock::text("answer")]));
    first
        .messages
        .push(ApiMessage::user(vec![ContentBlock::text("again")]));
    let memo = first.memo(first.write_plain(None));
    let mut second = first.clone();
    second.system[0].text.push_str(", now longer");
    second.messages[2]
        .content
        .push(ContentBlock::text("and more"));
    let fresh = second.write_plain(None).body;
    let written = second.write_plain(Some(&memo));
    assert_eq!(written.body, fresh);
    let next = second.memo(written);
    for i in [0, 1] {
        let (old_at, old) = memo.message(i).unwrap();
        let (new_at, new) = next.message(i).unwrap();
        assert!(Arc::ptr_eq(old, new), "message {i} is shared");
        assert!(new_at > old_at, "message {i} moved");
    }
    assert!(!Arc::ptr_eq(
        memo.message(2).unwrap().1,
        next.message(2).unwrap().1
    ));
    assert_eq!(second.write_plain(Some(&next)).body, fresh);
}
