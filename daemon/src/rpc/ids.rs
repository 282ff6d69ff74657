//! Request ids jsonrpsee cannot hold.
//!
//! JSON-RPC 2.0 lets an id be any number or string (or null); jsonrpsee's `Id` holds only
//! an unsigned 64-bit integer or a string, and a call whose id is `-1`, `1.5` or `1e3`
//! parses as a notification there, so it was never answered. Such an id is swapped for a
//! string of ours before the call is decoded, and the answer's id swapped back to the
//! client's exact text. An id that is an object or an array is refused with -32600 and
//! `id: null`, as the specification asks.

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::value::RawValue;

/// Where a message's ids stand.
pub(crate) enum Ids {
    /// Every id is one jsonrpsee holds: the message goes on as it is.
    AsTheyAre,
    /// Some ids were swapped: the message to decode, and the swaps to undo in its answer.
    Swapped { body: Vec<u8>, swaps: Swaps },
    /// A single call whose id is neither a number, a string nor null: its answer.
    Refused(String),
}

/// The ids put in place of the client's, each with the client's own text.
#[derive(Default)]
pub(crate) struct Swaps(Vec<(String, String)>);

impl Swaps {
    /// `answer` with the client's ids back in place of ours. An answer carries each id
    /// once, before its result, so the first occurrence is the id.
    pub(crate) fn restore(&self, answer: &str) -> String {
        let mut out = answer.to_string();
        for (ours, theirs) in &self.0 {
            if let Some(at) = out.find(ours.as_str()) {
                out.replace_range(at..at + ours.len(), theirs);
            }
        }
        out
    }
}

#[derive(Deserialize)]
struct IdOnly<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
}

/// What an id's text is to jsonrpsee.
enum Kind {
    Held,
    Number,
    Invalid,
}

fn kind(raw: &RawValue) -> Kind {
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'"') => Kind::Held,
        Some(b'n') => Kind::Held,
        Some(b'-' | b'0'..=b'9') if text.parse::<u64>().is_ok() => Kind::Held,
        Some(b'-' | b'0'..=b'9') => Kind::Number,
        _ => Kind::Invalid,
    }
}

/// A prefix no client would choose: ids of ours are this plus a counter.
fn prefix() -> &'static str {
    static PREFIX: OnceLock<String> = OnceLock::new();
    PREFIX.get_or_init(|| format!("ctxd-id-{}-", uuid::Uuid::new_v4().simple()))
}

/// Looks at the ids of one message (a call, a notification or a batch). A message that
/// is not JSON is left for the decoder to refuse.
pub(crate) fn examine(body: &[u8]) -> Ids {
    let start = body.iter().position(|b| !b.is_ascii_whitespace());
    let found: Vec<&RawValue> = match start.map(|at| body[at]) {
        Some(b'{') => match serde_json::from_slice::<IdOnly>(body) {
            Ok(one) => one.id.into_iter().collect(),
            Err(_) => return Ids::AsTheyAre,
        },
        Some(b'[') => match serde_json::from_slice::<Vec<&RawValue>>(body) {
            Ok(entries) => entries
                .into_iter()
                .filter_map(|e| serde_json::from_str::<IdOnly>(e.get()).ok()?.id)
                .collect(),
            Err(_) => return Ids::AsTheyAre,
        },
        _ => return Ids::AsTheyAre,
    };
    let single = start.map(|at| body[at]) == Some(b'{');
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut swaps = Swaps::default();
    for raw in found {
        let replacement = match kind(raw) {
            Kind::Held => continue,
            Kind::Number => {
                let ours = format!("\"{}{}\"", prefix(), swaps.0.len());
                swaps.0.push((ours.clone(), raw.get().to_string()));
                ours
            }
            Kind::Invalid if single => return Ids::Refused(invalid_request()),
            // In a batch the entry becomes one jsonrpsee refuses with -32600 itself.
            Kind::Invalid => "null, \"method\": 0".to_string(),
        };
        // `raw` borrows from `body`, so its address says where it stands.
        let at = raw.get().as_ptr() as usize - body.as_ptr() as usize;
        edits.push((at, raw.get().len(), replacement));
    }
    if edits.is_empty() {
        return Ids::AsTheyAre;
    }
    let mut out = Vec::with_capacity(body.len() + edits.len() * 48);
    let mut from = 0;
    for (at, len, text) in edits {
        out.extend_from_slice(&body[from..at]);
        out.extend_from_slice(text.as_bytes());
        from = at + len;
    }
    out.extend_from_slice(&body[from..]);
    Ids::Swapped { body: out, swaps }
}

fn invalid_request() -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": jsonrpsee::types::error::INVALID_REQUEST_CODE,
            "message": "Invalid request: an id is a number, a string or null",
        },
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn swapped(body: &str) -> (String, Swaps) {
        match examine(body.as_bytes()) {
            Ids::Swapped { body, swaps } => (String::from_utf8(body).unwrap(), swaps),
            _ => panic!("expected swaps for {body}"),
        }
    }

    #[test]
    fn ids_jsonrpsee_holds_pass_untouched() {
        for body in [
            r#"{"jsonrpc":"2.0","id":7,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":"x","method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","method":"m"}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"m"},{"jsonrpc":"2.0","method":"n"}]"#,
            "not json",
        ] {
            assert!(matches!(examine(body.as_bytes()), Ids::AsTheyAre), "{body}");
        }
    }

    #[test]
    fn other_numbers_are_swapped_and_restored_exactly() {
        for id in ["-1", "1.5", "1e3", "18446744073709551616", "-0"] {
            let body = format!(r#"{{"jsonrpc":"2.0","id": {id} ,"method":"m"}}"#);
            let (decoded, swaps) = swapped(&body);
            let v: serde_json::Value = serde_json::from_str(&decoded).unwrap();
            let ours = v["id"].as_str().unwrap().to_string();
            let answer = format!(r#"{{"jsonrpc":"2.0","id":"{ours}","result":"{ours}"}}"#);
            let restored = swaps.restore(&answer);
            assert_eq!(
                restored,
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"{ours}"}}"#)
            );
        }
    }

    #[test]
    fn a_batch_swaps_each_entry_on_its_own() {
        let (decoded, _) = swapped(
            r#"[{"jsonrpc":"2.0","id":-1,"method":"m"},{"jsonrpc":"2.0","id":2,"method":"m"},{"jsonrpc":"2.0","id":{},"method":"m"}]"#,
        );
        let v: Vec<serde_json::Value> = serde_json::from_str(&decoded).unwrap();
        assert!(v[0]["id"].as_str().unwrap().starts_with(prefix()));
        assert_eq!(v[1]["id"], 2);
        assert_eq!(v[2]["id"], serde_json::Value::Null);
        // Left for jsonrpsee to refuse: neither a call nor a notification.
        let raw: Vec<&RawValue> = serde_json::from_str(&decoded).unwrap();
        let third = raw[2].get();
        assert!(serde_json::from_str::<jsonrpsee::types::Request>(third).is_err());
        assert!(serde_json::from_str::<jsonrpsee::types::Notification<()>>(third).is_err());
    }

    #[test]
    fn an_object_or_array_id_is_an_invalid_request() {
        for id in ["{}", "[1]", "true"] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m"}}"#);
            let Ids::Refused(answer) = examine(body.as_bytes()) else {
                panic!("{id} was not refused");
            };
            let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
            assert_eq!(v["id"], serde_json::Value::Null);
            assert_eq!(v["error"]["code"], -32600);
        }
    }
}
