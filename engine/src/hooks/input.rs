//! The JSON a hook reads on stdin: Claude Code's common fields, then the event's.

use ctxd_protocol::HookEvent;
use serde_json::{Map, Value, json};

/// What every event's input carries.
#[derive(Debug, Clone)]
pub(crate) struct Common {
    pub(crate) session_id: String,
    pub(crate) transcript_path: String,
    pub(crate) cwd: String,
    /// `default`, or `plan` when the session is in plan mode.
    pub(crate) permission_mode: &'static str,
}

pub(crate) fn build(common: &Common, event: HookEvent, fields: Map<String, Value>) -> Value {
    let mut o = Map::new();
    o.insert("session_id".into(), json!(common.session_id));
    o.insert("transcript_path".into(), json!(common.transcript_path));
    o.insert("cwd".into(), json!(common.cwd));
    o.insert("permission_mode".into(), json!(common.permission_mode));
    o.insert("hook_event_name".into(), json!(event.as_str()));
    o.extend(fields);
    Value::Object(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_fields_then_event_fields() {
        let c = Common {
            session_id: "s".into(),
            transcript_path: "/t.jsonl".into(),
            cwd: "/w".into(),
            permission_mode: "default",
        };
        let mut f = Map::new();
        f.insert("tool_name".into(), json!("Bash"));
        let v = build(&c, HookEvent::PreToolUse, f);
        assert_eq!(v["hook_event_name"], "PreToolUse");
        assert_eq!(v["session_id"], "s");
        assert_eq!(v["transcript_path"], "/t.jsonl");
        assert_eq!(v["tool_name"], "Bash");
    }
}
