//! A session's records as Claude Code JSONL lines: what a hook finds at its
//! `transcript_path`. Hook scripts written for Claude Code read `type`, `message.role`,
//! `message.content`, `uuid`, `parentUuid`, `timestamp`, `isMeta`, `isSidechain` and
//! the like; those fields are written in Claude Code's shape. Pure.

use ctxd_protocol::{Record, RecordKind};
use serde_json::{Map, Value, json};

/// One record → one JSONL line (without the newline).
pub(crate) fn line(r: &Record, session_id: &str, cwd: &str) -> String {
    let mut o = Map::new();
    o.insert("parentUuid".into(), json!(r.parent_uuid));
    o.insert("isSidechain".into(), json!(r.is_sidechain));
    o.insert("userType".into(), json!("external"));
    o.insert("cwd".into(), json!(cwd));
    o.insert("sessionId".into(), json!(session_id));
    o.insert("type".into(), json!(r.kind.as_str()));
    match r.kind {
        RecordKind::User => {
            o.insert(
                "message".into(),
                json!({"role": "user", "content": r.content}),
            );
        }
        RecordKind::Assistant => {
            let mut m = Map::new();
            if let Some(id) = &r.message_id {
                m.insert("id".into(), json!(id));
            }
            m.insert("type".into(), json!("message"));
            m.insert("role".into(), json!("assistant"));
            if let Some(model) = &r.model {
                m.insert("model".into(), json!(model));
            }
            m.insert("content".into(), json!(r.content));
            m.insert("stop_reason".into(), json!(r.stop_reason));
            if let Some(u) = &r.usage {
                m.insert("usage".into(), json!(u));
            }
            o.insert("message".into(), Value::Object(m));
        }
        RecordKind::System => {
            o.insert("subtype".into(), json!(r.subtype));
            if let Some(d) = &r.data {
                o.insert("data".into(), d.clone());
            }
        }
        RecordKind::Attachment => {
            o.insert("attachment".into(), json!(r.attachment));
        }
    }
    if r.is_meta {
        o.insert("isMeta".into(), json!(true));
    }
    if r.is_compact_summary {
        o.insert("isCompactSummary".into(), json!(true));
    }
    o.insert("uuid".into(), json!(r.uuid));
    o.insert("timestamp".into(), json!(r.timestamp));
    Value::Object(o).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxd_protocol::ContentBlock;

    fn rec(kind: RecordKind) -> Record {
        Record {
            seq: 2,
            parent_uuid: Some("u1".into()),
            message_id: Some("msg_1".into()),
            model: Some("m".into()),
            ..Record::new(
                kind,
                "u2",
                "2026-11-29T10:00:00Z",
                vec![ContentBlock::text("hello")],
            )
        }
    }

    #[test]
    fn user_and_assistant_lines_have_claude_codes_shape() {
        let u: Value = serde_json::from_str(&line(&rec(RecordKind::User), "s", "/w")).unwrap();
        assert_eq!(u["type"], "user");
        assert_eq!(u["message"]["role"], "user");
        assert_eq!(u["message"]["content"][0]["text"], "hello");
        assert_eq!(u["parentUuid"], "u1");
        assert_eq!(u["sessionId"], "s");
        let a: Value = serde_json::from_str(&line(&rec(RecordKind::Assistant), "s", "/w")).unwrap();
        assert_eq!(a["message"]["id"], "msg_1");
        assert_eq!(a["message"]["model"], "m");
        assert!(!line(&rec(RecordKind::User), "s", "/w").contains('\n'));
    }
}
