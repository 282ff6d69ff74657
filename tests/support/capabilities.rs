//! Helpers shared by the capability and skill tests: sessions on a pinned date, compiles
//! at a pinned instant, and the attachments a compile appended.
#![allow(dead_code)]

use std::path::Path;

use serde_json::{Value, json};

use crate::common::Daemon;

/// Every compile of these tests runs at this instant (the sessions' start date).
pub const T0: &str = "2026-11-29T10:00:00Z";

pub fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

pub fn session(d: &Daemon, cwd: &Path, model: Value) -> String {
    d.call(
        "session.create",
        json!({"cwd": cwd, "no_git": true, "start_date": "2026-11-29", "model": model}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}

pub fn compile(d: &Daemon, sid: &str) -> Value {
    d.call("context.compile", json!({"session_id": sid, "now": T0}))
}

pub fn records(d: &Daemon, sid: &str) -> Vec<Value> {
    d.call("transcript.read", json!({"session_id": sid, "limit": 5000}))["records"]
        .as_array()
        .unwrap()
        .clone()
}

/// The attachments compile `c` appended.
pub fn added(d: &Daemon, sid: &str, c: &Value) -> Vec<Value> {
    let wanted = c["metadata"]["attachments_added"]
        .as_array()
        .unwrap()
        .clone();
    records(d, sid)
        .into_iter()
        .filter(|r| wanted.contains(&r["uuid"]))
        .map(|r| r["attachment"].clone())
        .collect()
}
