//! Whole transcripts as Claude Code writes them, every rule at once.

use super::*;

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
    let b_folded = tr_blocks(
        "B",
        vec![
            ToolResultBlock::Text {
                extra: Default::default(),
                text: "file b".into(),
            },
            ToolResultBlock::Text {
                extra: Default::default(),
                text: reminder("edited elsewhere"),
            },
            ToolResultBlock::Text {
                extra: Default::default(),
                text: reminder("memory"),
            },
        ],
    );
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
        extra: Default::default(),
        tool_use_id: "A".into(),
        content: ToolResultContent::Blocks(vec![
            ToolResultBlock::Text {
                extra: Default::default(),
                text: MISSING_RESULT.into(),
            },
            ToolResultBlock::Text {
                extra: Default::default(),
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
