//! Plan-mode cadence over a session's turns.

use ctxd_protocol::{ContentBlock, Record, RecordKind};
use serde_json::Value;

use super::*;

fn record(
    seq: u64,
    kind: RecordKind,
    content: Vec<ContentBlock>,
    attachment: Option<Value>,
) -> Record {
    Record {
        seq,
        is_meta: attachment.is_some(),
        attachment,
        ..Record::new(kind, format!("u{seq}"), "2025-01-01T00:00:00Z", content)
    }
}

/// Drives a session turn by turn: each step sets plan mode, adds a prompt and compiles
/// (twice: the second compile of a turn must add nothing), returning what each turn
/// carried.
fn run(modes: &[bool], exists_from: usize) -> Vec<String> {
    let mut records: Vec<Record> = Vec::new();
    let mut out = Vec::new();
    for (turn, enabled) in modes.iter().enumerate() {
        let seq = records.len() as u64 + 1;
        records.push(record(
            seq,
            RecordKind::User,
            vec![ContentBlock::text(format!("prompt {turn}"))],
            None,
        ));
        let file = PlanFile {
            path: "/h/sessions/s/plan.md",
            exists: turn >= exists_from,
        };
        let mut carried = Vec::new();
        for _ in 0..2 {
            let refs: Vec<&Record> = records.iter().collect();
            for v in decide(&refs, &records, *enabled, &file) {
                let label = match v["type"].as_str().unwrap() {
                    PLAN_MODE => v["reminderType"].as_str().unwrap().to_string(),
                    PLAN_MODE_EXIT => "exit".into(),
                    PLAN_MODE_REENTRY => "reentry".into(),
                    other => other.into(),
                };
                carried.push(label);
                let seq = records.len() as u64 + 1;
                records.push(record(seq, RecordKind::Attachment, vec![], Some(v)));
            }
            let seq = records.len() as u64 + 1;
            records.push(record(
                seq,
                RecordKind::Assistant,
                vec![ContentBlock::text("ok")],
                None,
            ));
        }
        out.push(format!(
            "turn {:>2} ({}): {}",
            turn + 1,
            if *enabled { "on " } else { "off" },
            if carried.is_empty() {
                "none".to_string()
            } else {
                carried.join(" + ")
            }
        ));
    }
    out
}

#[test]
fn cadence_over_twelve_turns() {
    // On for 7 turns, off for 2, on again for 3.
    let modes = [
        true, true, true, true, true, true, true, false, false, true, true, true,
    ];
    insta::assert_snapshot!("plan_mode_cadence", run(&modes, 3).join("\n"));
}

#[test]
fn reminders_name_the_plan_file_and_whether_it_exists() {
    let file = PlanFile {
        path: "/p/plan.md",
        exists: false,
    };
    let full = reminder(ReminderType::Full, &file);
    let text = render(PLAN_MODE, full.as_object().unwrap()).unwrap();
    assert!(text.contains("No plan file exists yet. Write your plan to /p/plan.md"));
    assert!(text.contains("MUST NOT"));
    let sparse = reminder(
        ReminderType::Sparse,
        &PlanFile {
            path: "/p/plan.md",
            exists: true,
        },
    );
    let text = render(PLAN_MODE, sparse.as_object().unwrap()).unwrap();
    assert!(
        text.contains("still active")
            && text.contains("/p/plan.md")
            && !text.contains("not written")
    );
    let exit = serde_json::json!({"planFilePath": "/p/plan.md", "planExists": true});
    assert!(
        render(PLAN_MODE_EXIT, exit.as_object().unwrap())
            .unwrap()
            .contains("The plan is at /p/plan.md")
    );
    assert!(
        render(PLAN_MODE_REENTRY, exit.as_object().unwrap())
            .unwrap()
            .contains("Read it first")
    );
}

#[test]
fn a_new_history_counts_its_rebuilt_reminder_as_the_first() {
    // After a compaction the view starts with the rebuilt full reminder.
    let file = PlanFile {
        path: "/p.md",
        exists: false,
    };
    let records = vec![
        record(
            1,
            RecordKind::Attachment,
            vec![],
            Some(reminder(ReminderType::Full, &file)),
        ),
        record(2, RecordKind::User, vec![ContentBlock::text("go on")], None),
    ];
    let refs: Vec<&Record> = records.iter().collect();
    let got = decide(&refs, &records, true, &file);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["reminderType"], "sparse");
    // Nothing when no turn began since.
    assert!(decide(&refs[..1], &records[..1], true, &file).is_empty());
}
