//! Collapse's tests. Here, the transcript builder and helpers they share; planning and
//! committing spans in `plan`, folding committed spans into the view in `apply`, random
//! sessions in `property`, span summaries and settings in `summaries`.

use super::*;
use serde_json::{Value, json};

fn rec(uuid: &str, seq: u64, v: Value) -> Record {
    let mut v = v;
    // Stored records carry blocks; tests write plain strings for brevity.
    if let Some(text) = v["content"].as_str() {
        v["content"] = json!([{"type": "text", "text": text}]);
    }
    v["uuid"] = json!(uuid);
    v["seq"] = json!(seq);
    v["timestamp"] = json!(format!("2026-11-29T10:{:02}:00Z", seq % 60));
    serde_json::from_value(v).unwrap()
}

/// A transcript builder: seq and uuids are assigned in order.
#[derive(Default)]
struct T {
    records: Vec<Record>,
}

impl T {
    fn push(&mut self, prefix: &str, v: Value) -> &mut Self {
        let seq = self.records.len() as u64 + 1;
        self.records.push(rec(&format!("{prefix}{seq}"), seq, v));
        self
    }
    fn user(&mut self, text: &str) -> &mut Self {
        self.push("u", json!({"type": "user", "content": text}))
    }
    fn tool(&mut self, id: &str, name: &str, input: Value, result: &str) -> &mut Self {
        self.push(
            "a",
            json!({"type": "assistant", "message_id": format!("m-{id}"),
                   "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}),
        );
        self.push(
            "r",
            json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": result}]}),
        )
    }
    fn reply(&mut self, text: &str) -> &mut Self {
        self.push("a", json!({"type": "assistant", "content": text}))
    }
    fn view(&self) -> Vec<&Record> {
        self.records.iter().collect()
    }
}

/// `n` rounds of: prompt, one Read with a ~1,000-character result, a reply.
fn rounds(n: usize) -> T {
    let mut t = T::default();
    for i in 0..n {
        t.user(&format!("question {i}"))
            .tool(
                &format!("t{i}"),
                "Read",
                json!({"file_path": format!("/src/f{i}.rs")}),
                &"x".repeat(1000),
            )
            .reply(&format!("answer {i}"));
    }
    t
}

fn on() -> CollapseSettings {
    CollapseSettings {
        enabled: true,
        ..CollapseSettings::default()
    }
}

fn round_starts(view: &[&Record]) -> Vec<usize> {
    api_rounds(view).iter().map(|r| r.start).collect()
}

fn index_of(view: &[&Record], uuid: &str) -> usize {
    view.iter().position(|r| r.uuid == uuid).unwrap()
}

fn committed(plan: &SpanPlan<'_>, summary: &str) -> Collapse {
    Collapse {
        status: CollapseStatus::Committed,
        ..plan.to_collapse(summary.into())
    }
}

mod apply;
mod plan;
mod property;
mod summaries;
