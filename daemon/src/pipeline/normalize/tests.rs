use std::collections::HashSet;

use super::*;
use crate::pipeline::attachments;
use crate::pipeline::choices::{Choices, choices, samples};
use crate::pipeline::message::{REMINDER_OPEN, system_reminder};
use ctxd_protocol::{
    CacheControl, ContentBlock, MediaSource, RecordKind, ToolResultBlock, ToolResultContent,
};
use proptest::prelude::*;
use serde_json::{Value, json};

// ---- builders -----------------------------------------------------------------

fn rec(kind: RecordKind, uuid: &str, content: Vec<ContentBlock>) -> Record {
    Record {
        uuid: uuid.into(),
        seq: 0,
        parent_uuid: None,
        kind,
        timestamp: "2025-01-01T00:00:00Z".into(),
        content,
        message_id: None,
        model: None,
        stop_reason: None,
        usage: None,
        is_meta: false,
        is_virtual: false,
        is_sidechain: false,
        is_compact_summary: false,
        subtype: None,
        attachment: None,
        data: None,
        meta: None,
    }
}
fn user(uuid: &str, content: Vec<ContentBlock>) -> Record {
    rec(RecordKind::User, uuid, content)
}
fn asst(uuid: &str, mid: &str, content: Vec<ContentBlock>) -> Record {
    let mut r = rec(RecordKind::Assistant, uuid, content);
    r.message_id = Some(mid.into());
    r
}
fn att(uuid: &str, v: Value) -> Record {
    let mut r = rec(RecordKind::Attachment, uuid, vec![]);
    r.is_meta = true;
    r.attachment = Some(v);
    r
}
fn note(uuid: &str, text: &str) -> Record {
    att(uuid, json!({"type": "note", "content": text}))
}
fn text(s: &str) -> ContentBlock {
    ContentBlock::text(s)
}
fn tu(id: &str) -> ContentBlock {
    ContentBlock::ToolUse {
        id: id.into(),
        name: "Read".into(),
        input: json!({}),
        cache_control: None,
    }
}
fn tr(id: &str, s: &str) -> ContentBlock {
    ContentBlock::ToolResult {
        tool_use_id: id.into(),
        content: ToolResultContent::Text(s.into()),
        is_error: false,
        cache_control: None,
        cache_reference: None,
    }
}
fn think(s: &str) -> ContentBlock {
    ContentBlock::Thinking {
        thinking: s.into(),
        signature: "sig".into(),
    }
}
fn source() -> MediaSource {
    MediaSource::Base64 {
        media_type: "image/png".into(),
        data: "AAAA".into(),
    }
}
fn image() -> ContentBlock {
    ContentBlock::Image {
        source: source(),
        cache_control: None,
    }
}
fn reminder(s: &str) -> String {
    system_reminder(s)
}

/// A normalisation's result with blocks of its own, to compare with literals.
#[derive(Debug, Clone, PartialEq)]
struct Out {
    messages: Vec<ApiMessage>,
    repairs: Vec<String>,
}

fn run_with(
    records: &[Record],
    thinking: bool,
    short_ids: bool,
    rejected: &BTreeSet<(String, u32)>,
) -> Out {
    let out = normalize(
        records,
        &NormalizeOptions {
            supports_thinking: thinking,
            rejected_media: rejected,
            short_ids,
        },
    );
    let repairs = out.repairs.clone();
    let messages = out.into_owned_messages();
    assert_legal(&messages, thinking);
    Out { messages, repairs }
}
fn run(records: &[Record]) -> Out {
    run_with(records, true, false, &BTreeSet::new())
}
fn u(content: Vec<ContentBlock>) -> ApiMessage {
    ApiMessage::user(content)
}
fn a(content: Vec<ContentBlock>) -> ApiMessage {
    ApiMessage::assistant(content)
}
fn missing(id: &str) -> ContentBlock {
    ContentBlock::ToolResult {
        tool_use_id: id.into(),
        content: ToolResultContent::Text(MISSING_RESULT.into()),
        is_error: true,
        cache_control: None,
        cache_reference: None,
    }
}

/// Everything the Messages API demands of `messages`, except the leading user turn,
/// which the caller provides.
fn assert_legal(msgs: &[ApiMessage], thinking: bool) {
    let mut all_uses: HashSet<String> = HashSet::new();
    for (i, m) in msgs.iter().enumerate() {
        assert!(!m.content.is_empty(), "empty message {i}: {msgs:#?}");
        if i > 0 {
            assert_ne!(
                msgs[i - 1].role,
                m.role,
                "roles do not alternate at {i}: {msgs:#?}"
            );
        }
        for b in &m.content {
            match b {
                ContentBlock::Text { text, .. } => {
                    assert!(!text.trim().is_empty(), "blank text in {i}: {msgs:#?}")
                }
                ContentBlock::ToolResult {
                    content: ToolResultContent::Blocks(inner),
                    ..
                } => assert!(!inner.iter().any(is_blank_result_text), "blank inner text"),
                _ => {}
            }
            let mut b = b.clone();
            if let Some(slot) = b.cache_control_mut() {
                assert!(slot.is_none(), "cache_control left on a block");
            }
            assert!(allowed(m.role, &b), "{} in {:?}", b.type_name(), m.role);
            assert!(thinking || !b.is_thinking(), "thinking without support");
        }
        match m.role {
            Role::Assistant => {
                assert!(
                    m.content.iter().any(|b| !b.is_thinking()),
                    "thinking-only assistant"
                );
                let uses = tool_use_ids(&m.content);
                for id in &uses {
                    assert!(all_uses.insert(id.to_string()), "duplicate tool_use {id}");
                }
                if !uses.is_empty() {
                    let next = msgs
                        .get(i + 1)
                        .expect("tool_use without a following message");
                    assert_eq!(next.role, Role::User);
                    for id in &uses {
                        let n = next
                            .content
                            .iter()
                            .filter(|b| matches!(b, ContentBlock::ToolResult { tool_use_id, .. } if tool_use_id == id))
                            .count();
                        assert_eq!(n, 1, "tool_use {id} has {n} results");
                    }
                }
                if i + 1 == msgs.len() {
                    assert!(
                        !m.content.last().is_some_and(ContentBlock::is_thinking),
                        "trailing thinking"
                    );
                }
            }
            Role::User => {
                let prev_uses = match i.checked_sub(1).map(|p| &msgs[p]) {
                    Some(p) if p.role == Role::Assistant => tool_use_ids(&p.content),
                    _ => Vec::new(),
                };
                let mut results_done = false;
                for b in &m.content {
                    match b {
                        ContentBlock::ToolResult { tool_use_id, .. } => {
                            assert!(!results_done, "tool_result after other content: {m:#?}");
                            assert!(
                                prev_uses.contains(&tool_use_id.as_str()),
                                "orphan result {tool_use_id}"
                            );
                        }
                        other => {
                            results_done = true;
                            let has_results = m
                                .content
                                .iter()
                                .any(|b| matches!(b, ContentBlock::ToolResult { .. }));
                            assert!(
                                !(has_results && is_reminder(other)),
                                "unfolded reminder beside results"
                            );
                        }
                    }
                }
            }
        }
    }
}

// ---- rule 1 -------------------------------------------------------------------

#[test]
fn virtual_sidechain_and_system_records_are_not_sent() {
    let mut v = user("v", vec![text("virtual")]);
    v.is_virtual = true;
    let mut s = asst("s", "ms", vec![text("sidechain")]);
    s.is_sidechain = true;
    let mut sys = rec(RecordKind::System, "b", vec![text("boundary")]);
    sys.subtype = Some("compact_boundary".into());
    let mut side_att = note("sa", "side");
    side_att.is_sidechain = true;
    let out = run(&[sys, v, user("u", vec![text("hi")]), s, side_att]);
    assert_eq!(out.messages, vec![u(vec![text("hi")])]);
    assert!(out.repairs.is_empty());
}

// ---- rule 2 -------------------------------------------------------------------

#[test]
fn attachment_becomes_reminder_text_in_user_turn() {
    let out = run(&[
        note("n", "file changed"),
        user("u", vec![text("go")]),
        att("h", json!({"type": "note", "content": "x", "hidden": true})),
    ]);
    assert_eq!(
        out.messages,
        vec![u(vec![text(&reminder("file changed")), text("go")])]
    );
}

#[test]
fn attachment_waits_until_after_pending_tool_results() {
    let out = run(&[
        user("u", vec![text("go")]),
        asst("a1", "m1", vec![tu("A")]),
        note("n", "late news"),
        user("r", vec![tr("A", "ok")]),
        user("u2", vec![text("next")]),
    ]);
    let folded = ContentBlock::ToolResult {
        tool_use_id: "A".into(),
        content: ToolResultContent::Blocks(vec![
            ToolResultBlock::Text { text: "ok".into() },
            ToolResultBlock::Text {
                text: reminder("late news"),
            },
        ]),
        is_error: false,
        cache_control: None,
        cache_reference: None,
    };
    assert_eq!(
        out.messages,
        vec![
            u(vec![text("go")]),
            a(vec![tu("A")]),
            u(vec![folded, text("next")]),
        ]
    );
    assert!(out.repairs.is_empty(), "{:?}", out.repairs);
}

// ---- rule 3 -------------------------------------------------------------------

#[test]
fn interleaved_parts_of_one_response_merge() {
    let out = run(&[
        user("u", vec![text("go")]),
        asst("a1", "m", vec![think("hm"), text("two reads")]),
        asst("a2", "m", vec![tu("A")]),
        user("r1", vec![tr("A", "a")]),
        asst("a3", "m", vec![tu("B")]),
        user("r2", vec![tr("B", "b")]),
    ]);
    assert_eq!(
        out.messages,
        vec![
            u(vec![text("go")]),
            a(vec![think("hm"), text("two reads"), tu("A"), tu("B")]),
            u(vec![tr("A", "a"), tr("B", "b")]),
        ]
    );
    assert!(out.repairs.is_empty(), "{:?}", out.repairs);
}

#[test]
fn consecutive_assistants_with_different_ids_merge_with_repair() {
    let mut none = rec(RecordKind::Assistant, "a3", vec![text("three")]);
    none.message_id = None;
    let out = run(&[
        user("u", vec![text("go")]),
        asst("a1", "m1", vec![text("one")]),
        asst("a2", "m2", vec![text("two")]),
        none,
    ]);
    assert_eq!(
        out.messages,
        vec![
            u(vec![text("go")]),
            a(vec![text("one"), text("two"), text("three")])
        ]
    );
    assert_eq!(out.repairs.len(), 2, "{:?}", out.repairs);
    assert!(out.repairs[0].contains("m1") && out.repairs[0].contains("m2"));
}

// ---- rule 4 -------------------------------------------------------------------

#[test]
fn consecutive_user_records_merge_in_order() {
    let out = run(&[
        user("u1", vec![text("one")]),
        user("u2", vec![text("two"), image()]),
    ]);
    assert_eq!(
        out.messages,
        vec![u(vec![text("one"), text("two"), image()])]
    );
}

#[test]
fn tool_results_come_first_in_stable_order() {
    let out = run(&[
        asst("a", "m", vec![tu("A"), tu("B")]),
        user("u", vec![text("typed"), tr("B", "b")]),
        user("r", vec![tr("A", "a")]),
    ]);
    assert_eq!(
        out.messages[1],
        u(vec![tr("B", "b"), tr("A", "a"), text("typed")])
    );
}

#[test]
fn reminders_fold_into_last_tool_result() {
    let list_result = ContentBlock::ToolResult {
        tool_use_id: "B".into(),
        content: ToolResultContent::Blocks(vec![ToolResultBlock::Image { source: source() }]),
        is_error: true,
        cache_control: None,
        cache_reference: None,
    };
    let out = run(&[
        asst("a", "m", vec![tu("A"), tu("B")]),
        user(
            "u",
            vec![
                tr("A", "a"),
                text(&reminder("r1")),
                list_result,
                text("plain"),
                text(&reminder("r2")),
            ],
        ),
    ]);
    let expected_b = ContentBlock::ToolResult {
        tool_use_id: "B".into(),
        content: ToolResultContent::Blocks(vec![
            ToolResultBlock::Image { source: source() },
            ToolResultBlock::Text {
                text: reminder("r1"),
            },
            ToolResultBlock::Text {
                text: reminder("r2"),
            },
        ]),
        is_error: true,
        cache_control: None,
        cache_reference: None,
    };
    assert_eq!(
        out.messages[1],
        u(vec![tr("A", "a"), expected_b, text("plain")])
    );
}

#[test]
fn reminder_folds_into_string_result_and_skips_empty_string() {
    let out = run(&[
        asst("a", "m", vec![tu("A")]),
        user("u", vec![tr("A", ""), text(&reminder("r"))]),
    ]);
    let expected = ContentBlock::ToolResult {
        tool_use_id: "A".into(),
        content: ToolResultContent::Blocks(vec![ToolResultBlock::Text {
            text: reminder("r"),
        }]),
        is_error: false,
        cache_control: None,
        cache_reference: None,
    };
    assert_eq!(out.messages[1], u(vec![expected]));
}

// ---- rule 5 -------------------------------------------------------------------

#[test]
fn missing_result_is_synthesised_before_next_prompt() {
    let out = run(&[
        user("u", vec![text("go")]),
        asst("a", "m", vec![tu("A"), tu("B")]),
        user("r", vec![tr("B", "b")]),
        user("u2", vec![text("where were we")]),
    ]);
    assert_eq!(
        out.messages[2],
        u(vec![tr("B", "b"), missing("A"), text("where were we")])
    );
    assert_eq!(
        out.repairs,
        vec!["synthesised missing tool_result for tool_use A".to_string()]
    );
}

#[test]
fn transcript_ending_on_tool_use_gets_a_result_message() {
    let out = run(&[
        user("u", vec![text("go")]),
        asst("a", "m", vec![text("reading"), tu("A")]),
    ]);
    assert_eq!(out.messages.len(), 3);
    assert_eq!(out.messages[2], u(vec![missing("A")]));
}

#[test]
fn orphan_result_is_dropped_and_emptied_turn_disappears() {
    let out = run(&[
        user("u", vec![text("go")]),
        asst("a1", "m1", vec![text("hello")]),
        user("r", vec![tr("X", "stale")]),
        asst("a2", "m2", vec![text("again")]),
    ]);
    assert_eq!(
        out.messages,
        vec![u(vec![text("go")]), a(vec![text("hello"), text("again")])]
    );
    assert!(
        out.repairs
            .iter()
            .any(|r| r == "dropped orphan tool_result X")
    );
    assert!(out.repairs.iter().any(|r| r.contains("merged")));
}

#[test]
fn result_matching_an_older_assistant_is_an_orphan() {
    let out = run(&[
        asst("a1", "m1", vec![tu("A")]),
        user("r1", vec![tr("A", "a")]),
        asst("a2", "m2", vec![tu("B")]),
        user("r2", vec![tr("B", "b"), tr("A", "again")]),
    ]);
    assert_eq!(out.messages[3], u(vec![tr("B", "b")]));
}

#[test]
fn duplicate_tool_use_is_dropped_with_its_result() {
    let out = run(&[
        user("u", vec![text("go")]),
        asst("a1", "m1", vec![tu("A")]),
        user("r1", vec![tr("A", "first")]),
        asst("a2", "m2", vec![text("redo"), tu("A")]),
        user("r2", vec![tr("A", "second")]),
        user("u2", vec![text("ok")]),
    ]);
    assert_eq!(
        out.messages,
        vec![
            u(vec![text("go")]),
            a(vec![tu("A")]),
            u(vec![tr("A", "first")]),
            a(vec![text("redo")]),
            u(vec![text("ok")]),
        ]
    );
    assert!(
        out.repairs
            .contains(&"dropped duplicate tool_use A".to_string())
    );
    assert!(
        out.repairs
            .contains(&"dropped orphan tool_result A".to_string())
    );
}

#[test]
fn duplicate_tool_use_within_one_response() {
    let out = run(&[
        asst("a1", "m", vec![tu("A")]),
        asst("a2", "m", vec![tu("A")]),
        user("r", vec![tr("A", "1"), tr("A", "2")]),
    ]);
    assert_eq!(out.messages, vec![a(vec![tu("A")]), u(vec![tr("A", "1")])]);
    assert!(
        out.repairs
            .contains(&"dropped duplicate tool_result A".to_string())
    );
}

// ---- rule 6 -------------------------------------------------------------------

#[test]
fn rejected_top_level_media_becomes_a_note() {
    let doc = ContentBlock::Document {
        source: source(),
        title: None,
        cache_control: None,
    };
    let rejected: BTreeSet<(String, u32)> = [
        ("u".to_string(), 1),
        ("u".to_string(), 2),
        ("u".to_string(), 0),
    ]
    .into();
    let out = run_with(
        &[user("u", vec![text("look"), image(), doc])],
        true,
        false,
        &rejected,
    );
    assert_eq!(
        out.messages,
        vec![u(vec![
            text("look"),
            text(&rejected_note("image")),
            text(&rejected_note("document"))
        ])]
    );
    assert_eq!(out.repairs.len(), 2, "{:?}", out.repairs);
}

#[test]
fn rejected_tool_result_loses_all_its_media() {
    let result = ContentBlock::ToolResult {
        tool_use_id: "A".into(),
        content: ToolResultContent::Blocks(vec![
            ToolResultBlock::Text {
                text: "pages".into(),
            },
            ToolResultBlock::Image { source: source() },
            ToolResultBlock::Document {
                source: source(),
                title: Some("t".into()),
            },
        ]),
        is_error: false,
        cache_control: None,
        cache_reference: None,
    };
    let rejected: BTreeSet<(String, u32)> = [("r".to_string(), 0)].into();
    let out = run_with(
        &[
            asst("a", "m", vec![tu("A")]),
            user("r", vec![result]),
            user("other", vec![image()]),
        ],
        true,
        false,
        &rejected,
    );
    let expected = ContentBlock::ToolResult {
        tool_use_id: "A".into(),
        content: ToolResultContent::Blocks(vec![
            ToolResultBlock::Text {
                text: "pages".into(),
            },
            ToolResultBlock::Text {
                text: rejected_note("image"),
            },
            ToolResultBlock::Text {
                text: rejected_note("document"),
            },
        ]),
        is_error: false,
        cache_control: None,
        cache_reference: None,
    };
    assert_eq!(out.messages[1], u(vec![expected, image()]));
}

// ---- rule 7 -------------------------------------------------------------------

#[test]
fn thinking_dropped_without_support() {
    let redacted = ContentBlock::RedactedThinking { data: "x".into() };
    let out = run_with(
        &[
            user("u", vec![text("go")]),
            asst("a1", "m1", vec![think("t"), redacted, text("answer")]),
            user("u2", vec![text("more")]),
            asst("a2", "m2", vec![think("only")]),
            user("u3", vec![text("and")]),
        ],
        false,
        false,
        &BTreeSet::new(),
    );
    assert_eq!(
        out.messages,
        vec![
            u(vec![text("go")]),
            a(vec![text("answer")]),
            u(vec![text("more"), text("and")]),
        ]
    );
    assert_eq!(out.repairs.len(), 2, "{:?}", out.repairs);
}

#[test]
fn thinking_only_assistant_is_dropped_even_with_support() {
    let out = run(&[
        user("u", vec![text("go")]),
        asst("a1", "m1", vec![think("t")]),
        user("u2", vec![text("more")]),
    ]);
    assert_eq!(out.messages, vec![u(vec![text("go"), text("more")])]);
    assert!(out.repairs[0].contains("only thinking"));
}

#[test]
fn final_assistant_never_ends_with_thinking() {
    let out = run(&[
        user("u", vec![text("go")]),
        asst("a1", "m1", vec![think("t1"), text("partial"), think("t2")]),
    ]);
    assert_eq!(out.messages[1], a(vec![think("t1"), text("partial")]));
    assert_eq!(out.repairs.len(), 1);
    // Earlier messages keep their trailing thinking: only the final one is constrained.
    let out = run(&[
        asst("a1", "m1", vec![text("x"), think("t")]),
        user("u", vec![text("go")]),
    ]);
    assert_eq!(out.messages[0], a(vec![text("x"), think("t")]));
}

// ---- rule 8 -------------------------------------------------------------------

#[test]
fn blank_text_blocks_are_removed() {
    let result = ContentBlock::ToolResult {
        tool_use_id: "A".into(),
        content: ToolResultContent::Blocks(vec![
            ToolResultBlock::Text { text: " ".into() },
            ToolResultBlock::Text { text: "x".into() },
        ]),
        is_error: false,
        cache_control: None,
        cache_reference: None,
    };
    let out = run(&[
        user("u", vec![text(""), text("go"), text(" \n\t")]),
        asst("a", "m", vec![text("  "), tu("A")]),
        user("r", vec![result]),
        user("blank", vec![text("   ")]),
    ]);
    let expected = ContentBlock::ToolResult {
        tool_use_id: "A".into(),
        content: ToolResultContent::Blocks(vec![ToolResultBlock::Text { text: "x".into() }]),
        is_error: false,
        cache_control: None,
        cache_reference: None,
    };
    assert_eq!(
        out.messages,
        vec![u(vec![text("go")]), a(vec![tu("A")]), u(vec![expected])]
    );
}

// ---- rule 9 -------------------------------------------------------------------

#[test]
fn short_id_is_stable_base36() {
    let id = short_id("0192f0c1-7d7e-7a3b-9c1d-2f3e4a5b6c7d");
    assert_eq!(id.len(), 6);
    assert!(
        id.bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
    );
    assert_eq!(id, short_id("0192f0c1-7d7e-7a3b-9c1d-2f3e4a5b6c7d"));
    assert_ne!(id, short_id("0192f0c1-7d7e-7a3b-9c1d-2f3e4a5b6c7e"));
    // Pinned: ranges quoted by the model in old transcripts must still resolve.
    assert_eq!(short_id("abc"), STABLE_ABC);
}
/// First 8 bytes of sha256("abc") as a big-endian u64, mod 36^6, in base 36.
const STABLE_ABC: &str = "0fasx6";

#[test]
fn short_ids_go_on_typed_user_records_only() {
    let mut meta = user("meta", vec![text("injected")]);
    meta.is_meta = true;
    let out = run_with(
        &[
            user("u1", vec![text("first"), image(), text("last")]),
            asst("a", "m", vec![tu("A")]),
            user("r", vec![tr("A", "ok")]),
            meta,
            note("n", "att"),
            user("u2", vec![image()]),
            user("u3", vec![text("typed"), text(&reminder("r"))]),
        ],
        true,
        true,
        &BTreeSet::new(),
    );
    let id1 = short_id("u1");
    let id2 = short_id("u2");
    assert_eq!(
        out.messages[0],
        u(vec![
            text("first"),
            image(),
            text(&format!("last\n[id:{id1}]"))
        ])
    );
    assert_eq!(
        out.messages[2],
        u(vec![
            ContentBlock::ToolResult {
                tool_use_id: "A".into(),
                content: ToolResultContent::Blocks(vec![
                    ToolResultBlock::Text { text: "ok".into() },
                    ToolResultBlock::Text {
                        text: reminder("att")
                    },
                    ToolResultBlock::Text {
                        text: reminder("r"),
                    },
                ]),
                is_error: false,
                cache_control: None,
                cache_reference: None,
            },
            text("injected"),
            image(),
            text(&format!("[id:{id2}]")),
            text(&format!("typed\n[id:{}]", short_id("u3"))),
        ])
    );
}

// ---- rule 10 ------------------------------------------------------------------

#[test]
fn leading_assistant_is_kept_with_a_repair_note() {
    let out = run(&[
        asst("a", "m", vec![text("hi")]),
        user("u", vec![text("yo")]),
    ]);
    assert_eq!(out.messages[0].role, Role::Assistant);
    assert_eq!(out.repairs.len(), 1);
    assert!(out.repairs[0].contains("start with an assistant"));
}

#[test]
fn empty_input_gives_empty_output() {
    let out = run(&[]);
    assert!(out.messages.is_empty() && out.repairs.is_empty());
}

// ---- rule 11 ------------------------------------------------------------------

#[test]
fn cache_control_is_cleared() {
    let cc = Some(CacheControl::ephemeral());
    let out = run(&[
        user(
            "u",
            vec![ContentBlock::Text {
                text: "go".into(),
                cache_control: cc.clone(),
            }],
        ),
        asst(
            "a",
            "m",
            vec![ContentBlock::ToolUse {
                id: "A".into(),
                name: "Read".into(),
                input: json!({}),
                cache_control: cc.clone(),
            }],
        ),
        user(
            "r",
            vec![ContentBlock::ToolResult {
                tool_use_id: "A".into(),
                content: ToolResultContent::Text("x".into()),
                is_error: false,
                cache_control: cc,
                cache_reference: None,
            }],
        ),
    ]);
    assert_eq!(
        out.messages,
        vec![u(vec![text("go")]), a(vec![tu("A")]), u(vec![tr("A", "x")])]
    );
}

// ---- combined -----------------------------------------------------------------

#[test]
fn claude_code_turn_with_streamed_parts_and_attachments() {
    let mut virt = asst("v", "mv", vec![text("ui only")]);
    virt.is_virtual = true;
    let out = run(&[
        att("d", json!({"type": "date_change", "date": "2025-02-02"})),
        user("u", vec![text("fix it")]),
        asst("a1", "m1", vec![think("plan")]),
        asst("a2", "m1", vec![text("Reading both.")]),
        asst("a3", "m1", vec![tu("A")]),
        user("r1", vec![tr("A", "file a")]),
        virt,
        asst("a4", "m1", vec![tu("B")]),
        note("n1", "edited elsewhere"),
        user("r2", vec![tr("B", "file b")]),
        note("n2", "memory"),
        asst("a5", "m2", vec![think("done"), text("Fixed.")]),
    ]);
    let date = attachments::render(&att(
        "d",
        json!({"type": "date_change", "date": "2025-02-02"}),
    ))
    .unwrap();
    let b_folded = ContentBlock::ToolResult {
        tool_use_id: "B".into(),
        content: ToolResultContent::Blocks(vec![
            ToolResultBlock::Text {
                text: "file b".into(),
            },
            ToolResultBlock::Text {
                text: reminder("edited elsewhere"),
            },
            ToolResultBlock::Text {
                text: reminder("memory"),
            },
        ]),
        is_error: false,
        cache_control: None,
        cache_reference: None,
    };
    assert_eq!(
        out.messages,
        vec![
            u(vec![text(&reminder(&date)), text("fix it")]),
            a(vec![think("plan"), text("Reading both."), tu("A"), tu("B")]),
            u(vec![tr("A", "file a"), b_folded]),
            a(vec![think("done"), text("Fixed.")]),
        ]
    );
    assert!(out.repairs.is_empty(), "{:?}", out.repairs);
}

#[test]
fn crash_resume_mess_is_repaired() {
    let out = run_with(
        &[
            asst("a0", "m0", vec![text("left over")]),
            user("r0", vec![tr("Z", "orphan")]),
            user("u", vec![text("go")]),
            asst("a1", "m1", vec![think("t"), tu("A"), tu("B")]),
            note("n", "held"),
            user("r1", vec![tr("B", "b")]),
            asst("a2", "m2", vec![think("t2")]),
            asst("a3", "m3", vec![tu("A"), tu("C")]),
        ],
        false,
        false,
        &BTreeSet::new(),
    );
    let missing_a_with_note = ContentBlock::ToolResult {
        tool_use_id: "A".into(),
        content: ToolResultContent::Blocks(vec![
            ToolResultBlock::Text {
                text: MISSING_RESULT.into(),
            },
            ToolResultBlock::Text {
                text: reminder("held"),
            },
        ]),
        is_error: true,
        cache_control: None,
        cache_reference: None,
    };
    assert_eq!(
        out.messages,
        vec![
            a(vec![text("left over")]),
            u(vec![text("go")]),
            a(vec![tu("A"), tu("B")]),
            u(vec![tr("B", "b"), missing_a_with_note]),
            a(vec![tu("C")]),
            u(vec![missing("C")]),
        ]
    );
    for expected in [
        "dropped orphan tool_result Z",
        "dropped duplicate tool_use A",
        "synthesised missing tool_result for tool_use A",
        "synthesised missing tool_result for tool_use C",
    ] {
        assert!(
            out.repairs.iter().any(|r| r == expected),
            "{expected}: {:?}",
            out.repairs
        );
    }
    assert!(
        out.repairs
            .last()
            .is_some_and(|r| r.contains("start with an assistant"))
    );
}

// ---- property -----------------------------------------------------------------

/// Results mostly answer a recent call, so pairing is exercised, not just repaired.
fn random_id(g: &mut Choices, recent: &[String]) -> String {
    match recent.len() {
        n if n > 0 && g.chance(75) => recent[g.below(n as u64) as usize].clone(),
        _ => format!("t{}", g.below(12)),
    }
}

fn random_block(g: &mut Choices, for_user: bool, recent: &[String]) -> ContentBlock {
    let id = if for_user {
        random_id(g, recent)
    } else {
        format!("t{}", g.below(12))
    };
    match g.below(10) {
        0 => text(""),
        1 => text(&reminder("r")),
        2 => image(),
        3 => think("th"),
        4 => ContentBlock::RedactedThinking { data: "d".into() },
        5 if for_user => ContentBlock::ToolResult {
            tool_use_id: id,
            content: ToolResultContent::Blocks(vec![
                ToolResultBlock::Text {
                    text: if g.chance(30) {
                        " ".into()
                    } else {
                        "out".into()
                    },
                },
                ToolResultBlock::Image { source: source() },
            ]),
            is_error: g.chance(20),
            cache_control: Some(CacheControl::ephemeral()),
            cache_reference: None,
        },
        5 | 6 if for_user => tr(&id, if g.chance(20) { "" } else { "out" }),
        5..=7 => tu(&id),
        _ => text("words"),
    }
}

fn random_records(g: &mut Choices) -> (Vec<Record>, BTreeSet<(String, u32)>) {
    let n = g.below(14) as usize;
    let mut records = Vec::with_capacity(n);
    let mut rejected = BTreeSet::new();
    let mut recent: Vec<String> = Vec::new();
    for i in 0..n {
        let uuid = format!("r{i}");
        let mut r = match g.below(9) {
            0 => {
                let mut s = rec(RecordKind::System, &uuid, vec![]);
                s.subtype = Some("informational".into());
                s
            }
            1 => att(
                &uuid,
                match g.below(3) {
                    0 => json!({"type": "date_change", "date": "2025-01-02"}),
                    1 => json!({"type": "x", "hidden": true}),
                    _ => json!({"type": "x", "k": g.below(3)}),
                },
            ),
            2 | 3 => {
                let k = 1 + g.below(3) as usize;
                let blocks = (0..k).map(|_| random_block(g, true, &recent)).collect();
                user(&uuid, blocks)
            }
            4 => {
                let id = random_id(g, &recent);
                user(&uuid, vec![tr(&id, "res")])
            }
            _ => {
                let k = 1 + g.below(3) as usize;
                let blocks = (0..k).map(|_| random_block(g, false, &recent)).collect();
                let mut r = asst(&uuid, &format!("m{}", g.below(3)), blocks);
                if g.chance(15) {
                    r.message_id = None;
                }
                r
            }
        };
        r.is_virtual = g.chance(5);
        r.is_sidechain = g.chance(5);
        r.is_meta = r.is_meta || g.chance(10);
        for (bi, _) in r.content.iter().enumerate() {
            if g.chance(20) {
                rejected.insert((uuid.clone(), bi as u32));
            }
        }
        if r.kind == RecordKind::Assistant {
            recent.extend(tool_use_ids(&r.content).into_iter().map(str::to_string));
            let keep = recent.len().saturating_sub(4);
            recent.drain(..keep);
        }
        records.push(r);
    }
    (records, rejected)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Whatever the transcript, normalisation gives legal messages (checked by `run_with`),
    /// deterministically.
    #[test]
    fn random_transcripts_always_normalise_to_legal_messages(
        values in choices(400),
        thinking: bool,
        short: bool,
    ) {
        let (records, rejected) = random_records(&mut Choices::new(values));
        let first = run_with(&records, thinking, short, &rejected);
        let second = run_with(&records, thinking, short, &rejected);
        prop_assert_eq!(first, second);
    }
}

/// The generator keeps reaching the interesting paths, or the property is vacuous.
#[test]
fn the_transcript_generator_reaches_pairing_synthesis_orphans_and_folding() {
    let (mut paired, mut synthesised, mut orphans, mut folded) = (0, 0, 0, 0);
    for (round, mut g) in samples(400, 800).into_iter().enumerate() {
        let (records, rejected) = random_records(&mut g);
        let first = run_with(&records, round % 2 == 0, round % 3 == 0, &rejected);
        let has = |p: &str| first.repairs.iter().any(|r| r.starts_with(p));
        synthesised += usize::from(has("synthesised"));
        orphans += usize::from(has("dropped orphan"));
        let blocks = || first.messages.iter().flat_map(|m| &m.content);
        paired += blocks()
            .filter(|b| {
                matches!(
                    b,
                    ContentBlock::ToolResult {
                        is_error: false,
                        ..
                    }
                )
            })
            .count();
        folded += blocks()
            .filter(|b| matches!(b, ContentBlock::ToolResult { content: ToolResultContent::Blocks(v), .. }
                if v.iter().any(|t| matches!(t, ToolResultBlock::Text { text } if text.starts_with(REMINDER_OPEN)))))
            .count();
    }
    assert!(
        paired > 150 && synthesised > 150 && orphans > 150 && folded > 60,
        "paired {paired}, synthesised {synthesised}, orphans {orphans}, folded {folded}"
    );
}
