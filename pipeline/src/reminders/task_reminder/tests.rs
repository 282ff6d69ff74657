//! Task reminders: after exactly ten silent assistant turns, then not before ten more.

use ctxd_protocol::{ContentBlock, Record, RecordKind, ToolResultContent};
use serde_json::{Value, json};

use super::*;

fn rec(seq: u64, kind: RecordKind, content: Vec<ContentBlock>) -> Record {
    Record {
        seq,
        message_id: Some(format!("m{seq}")),
        ..Record::new(kind, format!("u{seq}"), "2025-01-01T00:00:00Z", content)
    }
}

fn tool_use(id: &str, name: &str, input: Value) -> ContentBlock {
    serde_json::from_value(json!({"type": "tool_use", "id": id, "name": name, "input": input}))
        .unwrap()
}

fn push(records: &mut Vec<Record>, kind: RecordKind, content: Vec<ContentBlock>) {
    let seq = records.len() as u64 + 1;
    records.push(rec(seq, kind, content));
}

/// The assistant turns after which a reminder was added, over `turns` silent turns
/// following one TodoWrite.
fn reminder_turns(turns: usize) -> Vec<usize> {
    let mut records = Vec::new();
    push(
        &mut records,
        RecordKind::User,
        vec![ContentBlock::text("start")],
    );
    push(
        &mut records,
        RecordKind::Assistant,
        vec![tool_use(
            "t0",
            TODO_WRITE,
            json!({"todos": [
            {"content": "Fix the parser", "status": "in_progress", "activeForm": "Fixing"},
            {"content": "Write tests", "status": "pending", "activeForm": "Writing"}]}),
        )],
    );
    let mut at = Vec::new();
    for turn in 1..=turns {
        push(
            &mut records,
            RecordKind::Assistant,
            vec![ContentBlock::text(format!("turn {turn}"))],
        );
        let refs: Vec<&Record> = records.iter().collect();
        if let Some(v) = decide(&refs, &records, Some(Flavour::Todo)) {
            assert_eq!(v["type"], TODO_REMINDER);
            assert_eq!(v["itemCount"], 2);
            at.push(turn);
            let seq = records.len() as u64 + 1;
            let mut r = rec(seq, RecordKind::Attachment, vec![]);
            r.attachment = Some(v);
            r.message_id = None;
            records.push(r);
        }
    }
    at
}

#[test]
fn after_exactly_ten_silent_turns_and_not_again_before_ten_more() {
    assert_eq!(reminder_turns(9), Vec::<usize>::new());
    assert_eq!(reminder_turns(10), vec![10]);
    assert_eq!(reminder_turns(19), vec![10]);
    assert_eq!(reminder_turns(20), vec![10, 20]);
}

#[test]
fn split_responses_count_once_and_use_resets_the_count() {
    let mut records = Vec::new();
    for i in 0..10 {
        // Two records of one response.
        let mut a = rec(
            2 * i + 1,
            RecordKind::Assistant,
            vec![ContentBlock::text("a")],
        );
        let mut b = rec(
            2 * i + 2,
            RecordKind::Assistant,
            vec![ContentBlock::text("b")],
        );
        a.message_id = Some(format!("r{i}"));
        b.message_id = Some(format!("r{i}"));
        records.push(a);
        records.push(b);
    }
    assert_eq!(silent_turns(&records), (10, 10));
    push(
        &mut records,
        RecordKind::Assistant,
        vec![tool_use(
            "t",
            TASK_UPDATE,
            json!({"taskId": "1", "status": "completed"}),
        )],
    );
    assert_eq!(silent_turns(&records).0, 0);
    assert_eq!(flavour(["Read", TODO_WRITE]), Some(Flavour::Todo));
    assert_eq!(
        flavour([TASK_CREATE, TASK_UPDATE, TODO_WRITE]),
        Some(Flavour::Tasks)
    );
    assert_eq!(flavour(["Read"]), None);
}

#[test]
fn tasks_fold_creates_and_updates_and_render_as_a_list() {
    let mut records = Vec::new();
    push(
        &mut records,
        RecordKind::Assistant,
        vec![
            tool_use(
                "c1",
                TASK_CREATE,
                json!({"subject": "Parse input", "description": "d"}),
            ),
            tool_use(
                "c2",
                TASK_CREATE,
                json!({"subject": "Ship it", "description": "d"}),
            ),
        ],
    );
    let result = |id: &str, text: &str| -> ContentBlock {
        ContentBlock::ToolResult {
            extra: Default::default(),
            tool_use_id: id.into(),
            content: ToolResultContent::Text(text.into()),
            is_error: false,
            cache_control: None,
            cache_reference: None,
        }
    };
    push(
        &mut records,
        RecordKind::User,
        vec![
            result("c1", "Task #4 created successfully: Parse input"),
            result("c2", "Task #5 created successfully: Ship it"),
        ],
    );
    push(
        &mut records,
        RecordKind::Assistant,
        vec![tool_use(
            "u1",
            TASK_UPDATE,
            json!({"taskId": "4", "status": "in_progress"}),
        )],
    );
    for _ in 0..10 {
        push(
            &mut records,
            RecordKind::Assistant,
            vec![ContentBlock::text("working")],
        );
    }
    let refs: Vec<&Record> = records.iter().collect();
    let v = decide(&refs, &records, Some(Flavour::Tasks)).expect("due");
    let text = render(TASK_REMINDER, v.as_object().unwrap()).unwrap();
    assert!(
        text.ends_with("Current tasks:\n#4. [in_progress] Parse input\n#5. [pending] Ship it"),
        "{text}"
    );
    assert!(text.contains("gentle reminder"));
}
