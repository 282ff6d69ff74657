use super::*;

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
    let folded = tr_blocks(
        "A",
        vec![
            ToolResultBlock::Text {
                extra: Default::default(),
                text: "ok".into(),
            },
            ToolResultBlock::Text {
                extra: Default::default(),
                text: reminder("late news"),
            },
        ],
    );
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
        extra: Default::default(),
        tool_use_id: "B".into(),
        content: ToolResultContent::Blocks(vec![ToolResultBlock::Image {
            extra: Default::default(),
            source: source(),
        }]),
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
        extra: Default::default(),
        tool_use_id: "B".into(),
        content: ToolResultContent::Blocks(vec![
            ToolResultBlock::Image {
                extra: Default::default(),
                source: source(),
            },
            ToolResultBlock::Text {
                extra: Default::default(),
                text: reminder("r1"),
            },
            ToolResultBlock::Text {
                extra: Default::default(),
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
    let expected = tr_blocks(
        "A",
        vec![ToolResultBlock::Text {
            extra: Default::default(),
            text: reminder("r"),
        }],
    );
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
        extra: Default::default(),
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
    let result = tr_blocks(
        "A",
        vec![
            ToolResultBlock::Text {
                extra: Default::default(),
                text: "pages".into(),
            },
            ToolResultBlock::Image {
                extra: Default::default(),
                source: source(),
            },
            ToolResultBlock::Document {
                extra: Default::default(),
                source: source(),
                title: Some("t".into()),
            },
        ],
    );
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
    let expected = tr_blocks(
        "A",
        vec![
            ToolResultBlock::Text {
                extra: Default::default(),
                text: "pages".into(),
            },
            ToolResultBlock::Text {
                extra: Default::default(),
                text: rejected_note("image"),
            },
            ToolResultBlock::Text {
                extra: Default::default(),
                text: rejected_note("document"),
            },
        ],
    );
    assert_eq!(out.messages[1], u(vec![expected, image()]));
}

// ---- rule 7 -------------------------------------------------------------------

#[test]
fn thinking_dropped_without_support() {
    let redacted = ContentBlock::RedactedThinking {
        extra: Default::default(),
        data: "x".into(),
    };
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
    let result = tr_blocks(
        "A",
        vec![
            ToolResultBlock::Text {
                extra: Default::default(),
                text: " ".into(),
            },
            ToolResultBlock::Text {
                extra: Default::default(),
                text: "x".into(),
            },
        ],
    );
    let out = run(&[
        user("u", vec![text(""), text("go"), text(" \n\t")]),
        asst("a", "m", vec![text("  "), tu("A")]),
        user("r", vec![result]),
        user("blank", vec![text("   ")]),
    ]);
    let expected = tr_blocks(
        "A",
        vec![ToolResultBlock::Text {
            extra: Default::default(),
            text: "x".into(),
        }],
    );
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
            tr_blocks(
                "A",
                vec![
                    ToolResultBlock::Text {
                        extra: Default::default(),
                        text: "ok".into()
                    },
                    ToolResultBlock::Text {
                        extra: Default::default(),
                        text: reminder("att")
                    },
                    ToolResultBlock::Text {
                        extra: Default::default(),
                        text: reminder("r"),
                    },
                ]
            ),
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
                extra: Default::default(),
                text: "go".into(),
                cache_control: cc.clone(),
            }],
        ),
        asst(
            "a",
            "m",
            vec![ContentBlock::ToolUse {
                extra: Default::default(),
                id: "A".into(),
                name: "Read".into(),
                input: json!({}),
                cache_control: cc.clone(),
            }],
        ),
        user(
            "r",
            vec![ContentBlock::ToolResult {
                extra: Default::default(),
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
