//! The predicted cache prefix: how much of a request the provider's prompt
//! cache will serve, told before the request is sent, by comparing it with the previous
//! request of the session.
//!
//! A request is a sequence of *units* in cache-key order: system blocks, then tools, then
//! every content block of every message. Each unit keeps a hash of its canonical bytes
//! (its serialisation without `cache_control`, which is not part of the cache key), its
//! size, an estimate of its tokens and whether it carries a cache breakpoint.
//!
//! The provider serves a prefix that (a) is identical to a prefix of an earlier request,
//! (b) ends where that request wrote a cache entry (one of its breakpoints) and (c) lies
//! within `LOOKBACK_BLOCKS` blocks before a breakpoint of the new request (the provider
//! looks back that far from each breakpoint for an entry to read).

use serde::{Deserialize, Serialize};

/// How many blocks the provider looks back from a breakpoint for an earlier cache entry.
pub(crate) const LOOKBACK_BLOCKS: usize = 20;

/// Where a unit sits in the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Locus {
    System(u32),
    Tool(u32),
    Message { index: u32, block: u32 },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unit {
    pub(crate) locus: Locus,
    /// xxh3 of the canonical bytes.
    pub(crate) hash: u64,
    pub(crate) bytes: u32,
    pub(crate) tokens: u32,
    /// The unit carries a `cache_control` marker: the provider writes (and reads) a cache
    /// entry ending here.
    pub(crate) breakpoint: bool,
}

/// The parts of a request that key the provider's cache.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyShape {
    pub model: String,
    /// Hash of the request-level flags that key the cache (beta headers, extra
    /// parameters); markers' TTL and scope are not part of it.
    pub flags_hash: u64,
    pub units: Vec<Unit>,
    /// Tool names by index, to name a differing tool.
    pub tool_names: Vec<String>,
    /// Whether the markers carried the one-hour lifetime (the lean policy chooses it per
    /// request); `None` for a request ctxd did not write, where the latched `cache_ttl`
    /// says. The next compile's cache is cold after the lifetime this one was written
    /// with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_1h: Option<bool>,
}

pub(crate) fn hash_bytes(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// What the comparison found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prediction {
    pub(crate) read_tokens: u64,
    pub(crate) prefix_bytes: u64,
    pub(crate) request_tokens: u64,
    /// `None` when the previous request is a prefix of this one.
    pub first_difference: Option<String>,
}

impl Prediction {
    /// Estimated tokens the cache will serve.
    pub fn read_tokens(&self) -> u64 {
        self.read_tokens
    }
}

impl KeyShape {
    pub fn tokens(&self) -> u64 {
        self.units.iter().map(|u| u64::from(u.tokens)).sum()
    }

    fn locus_name(&self, l: Locus) -> String {
        match l {
            Locus::System(i) => format!("system[{i}]"),
            Locus::Tool(i) => match self.tool_names.get(i as usize) {
                Some(n) => format!("tools[{n}]"),
                None => format!("tools[{i}]"),
            },
            Locus::Message { index, .. } => format!("messages[{index}]"),
        }
    }
}

/// Parameters of a request that are not part of its cache key (or are keyed as units).
pub(crate) const UNKEYED_FIELDS: [&str; 7] = [
    "model",
    "max_tokens",
    "system",
    "tools",
    "messages",
    "stream",
    "metadata",
];

impl KeyShape {
    /// The cache key of a request ctxd did not write (a client's own, seen by the HTTP
    /// front door), read from its JSON: a unit per system block, tool and content
    /// block, each hashed without its `cache_control` marker, a token per four bytes;
    /// `betas` (the `anthropic-beta` header) and the other parameters as the flags.
    pub fn of_request(body: &serde_json::Value, betas: &[String]) -> KeyShape {
        use serde_json::Value;
        let mut units = Vec::new();
        let mut push = |locus: Locus, block: &Value| {
            let mut key = block.clone();
            let breakpoint = match &mut key {
                Value::Object(o) => o.remove("cache_control").is_some(),
                _ => false,
            };
            let bytes = serde_json::to_vec(&key).unwrap_or_default();
            units.push(Unit {
                locus,
                hash: hash_bytes(&bytes),
                bytes: u32::try_from(bytes.len()).unwrap_or(u32::MAX),
                tokens: u32::try_from(bytes.len().div_ceil(4)).unwrap_or(u32::MAX),
                breakpoint,
            });
        };
        let blocks = |v: Option<&Value>| -> Vec<Value> {
            match v {
                Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
                Some(Value::Array(a)) => a.clone(),
                _ => Vec::new(),
            }
        };
        for (i, b) in blocks(body.get("system")).iter().enumerate() {
            push(Locus::System(crate::saturate::u32_of(i)), b);
        }
        let tools = body
            .get("tools")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for (i, t) in tools.iter().enumerate() {
            push(Locus::Tool(crate::saturate::u32_of(i)), t);
        }
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        for (index, m) in messages.iter().enumerate() {
            for (block, b) in blocks(m.get("content")).iter().enumerate() {
                push(
                    Locus::Message {
                        index: crate::saturate::u32_of(index),
                        block: crate::saturate::u32_of(block),
                    },
                    b,
                );
            }
        }
        let mut flags = serde_json::Map::new();
        if let Some(fields) = body.as_object() {
            for (k, v) in fields {
                if !UNKEYED_FIELDS.contains(&k.as_str()) {
                    flags.insert(k.clone(), v.clone());
                }
            }
        }
        flags.insert("anthropic-beta".into(), serde_json::json!(betas));
        KeyShape {
            model: body
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            flags_hash: hash_bytes(Value::Object(flags).to_string().as_bytes()),
            units,
            tool_names: tools
                .iter()
                .map(|t| {
                    t.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                })
                .collect(),
            ttl_1h: None,
        }
    }
}

/// Compares `cur` with the previous request of the session.
pub fn predict(prev: Option<&KeyShape>, cur: &KeyShape) -> Prediction {
    let request_tokens = cur.tokens();
    let Some(prev) = prev else {
        return Prediction {
            request_tokens,
            ..Prediction::default()
        };
    };
    let head_difference = if prev.model != cur.model {
        Some("model")
    } else if prev.flags_hash != cur.flags_hash {
        Some("flags")
    } else {
        None
    };
    if let Some(d) = head_difference {
        return Prediction {
            request_tokens,
            first_difference: Some(d.into()),
            ..Prediction::default()
        };
    }
    let same = prev
        .units
        .iter()
        .zip(&cur.units)
        .take_while(|(a, b)| a.locus == b.locus && a.hash == b.hash)
        .count();
    let prefix_bytes = cur.units[..same].iter().map(|u| u64::from(u.bytes)).sum();
    let first_difference = if same == prev.units.len() {
        None
    } else {
        // Where the new request departs: its own unit there, or (when it is shorter)
        // the previous request's.
        let l = cur
            .units
            .get(same)
            .map_or(prev.units[same].locus, |u| u.locus);
        let owner = if cur.units.get(same).is_some() {
            cur
        } else {
            prev
        };
        Some(owner.locus_name(l))
    };
    let breakpoints: Vec<usize> = cur
        .units
        .iter()
        .enumerate()
        .filter(|(_, u)| u.breakpoint)
        .map(|(i, _)| i)
        .collect();
    // The longest served prefix: the last entry the previous request wrote within the
    // identical part that some breakpoint of this request can reach.
    let served = (0..same).rev().find(|&end| {
        prev.units[end].breakpoint
            && breakpoints
                .iter()
                .any(|&b| b >= end && b - end <= LOOKBACK_BLOCKS)
    });
    let read_tokens = served.map_or(0, |end| {
        cur.units[..=end].iter().map(|u| u64::from(u.tokens)).sum()
    });
    Prediction {
        read_tokens,
        prefix_bytes,
        request_tokens,
        first_difference,
    }
}

/// Compact binary form for the store: the previous request must survive a restart.
pub fn encode_units(units: &[Unit]) -> Vec<u8> {
    let mut out = Vec::with_capacity(units.len() * 26);
    for u in units {
        let (kind, a, b) = match u.locus {
            Locus::System(i) => (0u8, i, 0),
            Locus::Tool(i) => (1, i, 0),
            Locus::Message { index, block } => (2, index, block),
        };
        out.push(kind | if u.breakpoint { 0x80 } else { 0 });
        out.extend_from_slice(&a.to_le_bytes());
        out.extend_from_slice(&b.to_le_bytes());
        out.extend_from_slice(&u.hash.to_le_bytes());
        out.extend_from_slice(&u.bytes.to_le_bytes());
        out.extend_from_slice(&u.tokens.to_le_bytes());
    }
    out
}

/// The inverse of [`encode_units`]; `None` for bytes it did not write.
pub fn decode_units(bytes: &[u8]) -> Option<Vec<Unit>> {
    const LEN: usize = 1 + 4 + 4 + 8 + 4 + 4;
    if !bytes.len().is_multiple_of(LEN) {
        return None;
    }
    let u32_at = |c: &[u8], i: usize| -> Option<u32> {
        Some(u32::from_le_bytes(c.get(i..i + 4)?.try_into().ok()?))
    };
    bytes
        .chunks_exact(LEN)
        .map(|c| {
            let (a, b) = (u32_at(c, 1)?, u32_at(c, 5)?);
            let locus = match c[0] & 0x7f {
                0 => Locus::System(a),
                1 => Locus::Tool(a),
                2 => Locus::Message { index: a, block: b },
                _ => return None,
            };
            Some(Unit {
                locus,
                breakpoint: c[0] & 0x80 != 0,
                hash: u64::from_le_bytes(c.get(9..17)?.try_into().ok()?),
                bytes: u32_at(c, 17)?,
                tokens: u32_at(c, 21)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(locus: Locus, hash: u64, tokens: u32, breakpoint: bool) -> Unit {
        Unit {
            locus,
            hash,
            bytes: tokens * 4,
            tokens,
            breakpoint,
        }
    }

    fn m(index: u32, block: u32) -> Locus {
        Locus::Message { index, block }
    }

    fn shape(units: Vec<Unit>) -> KeyShape {
        KeyShape {
            model: "m".into(),
            flags_hash: 0,
            units,
            tool_names: vec!["Read".into(), "Bash".into()],
            ttl_1h: None,
        }
    }

    fn base() -> Vec<Unit> {
        vec![
            u(Locus::System(0), 1, 100, true),
            u(Locus::Tool(0), 2, 50, false),
            u(Locus::Tool(1), 3, 50, true),
            u(m(0, 0), 4, 10, false),
            u(m(1, 0), 5, 10, false),
            u(m(2, 0), 6, 10, true),
        ]
    }

    #[test]
    fn append_only_turn_serves_the_whole_previous_request() {
        let prev = shape(base());
        let mut next = base();
        next[5].breakpoint = false;
        next.push(u(m(3, 0), 7, 10, false));
        next.push(u(m(4, 0), 8, 10, true));
        let p = predict(Some(&prev), &shape(next));
        assert_eq!(p.read_tokens, 230);
        assert_eq!(p.request_tokens, 250);
        assert_eq!(p.first_difference, None);
        assert_eq!(p.prefix_bytes, 230 * 4);
    }

    #[test]
    fn a_changed_tool_is_named_and_only_the_system_is_served() {
        let prev = shape(base());
        let mut next = base();
        next[2].hash = 99;
        let p = predict(Some(&prev), &shape(next));
        assert_eq!(p.first_difference.as_deref(), Some("tools[Bash]"));
        assert_eq!(p.read_tokens, 100);
    }

    #[test]
    fn a_system_edit_serves_nothing() {
        let prev = shape(base());
        let mut next = base();
        next[0].hash = 42;
        let p = predict(Some(&prev), &shape(next));
        assert_eq!(p.first_difference.as_deref(), Some("system[0]"));
        assert_eq!((p.read_tokens, p.prefix_bytes), (0, 0));
    }

    #[test]
    fn model_and_flags_key_everything() {
        let prev = shape(base());
        let mut next = shape(base());
        next.model = "other".into();
        assert_eq!(
            predict(Some(&prev), &next).first_difference.as_deref(),
            Some("model")
        );
        let mut next = shape(base());
        next.flags_hash = 7;
        let p = predict(Some(&prev), &next);
        assert_eq!(p.first_difference.as_deref(), Some("flags"));
        assert_eq!(p.read_tokens, 0);
    }

    #[test]
    fn an_entry_beyond_the_lookback_is_not_read() {
        let prev = shape(base());
        let mut next = base();
        next[5].breakpoint = false;
        for k in 0..=u32::try_from(LOOKBACK_BLOCKS).unwrap() {
            next.push(u(m(3, k), 100 + u64::from(k), 1, false));
        }
        next.last_mut().unwrap().breakpoint = true;
        let p = predict(Some(&prev), &shape(next));
        // The message entry is 21 blocks back: only system and tools are read.
        assert_eq!(p.read_tokens, 200);
        assert_eq!(p.first_difference, None);
    }

    #[test]
    fn a_shorter_request_names_where_the_previous_went_on() {
        let prev = shape(base());
        let mut next = base();
        next.truncate(4);
        next[3].breakpoint = true;
        let p = predict(Some(&prev), &shape(next));
        assert_eq!(p.first_difference.as_deref(), Some("messages[1]"));
        // The previous request wrote no entry inside the first four units but the
        // tools' breakpoint.
        assert_eq!(p.read_tokens, 200);
    }

    #[test]
    fn no_previous_request_serves_nothing() {
        let p = predict(None, &shape(base()));
        assert_eq!((p.read_tokens, p.request_tokens), (0, 230));
        assert_eq!(p.first_difference, None);
    }

    #[test]
    fn units_round_trip_through_bytes() {
        let units = base();
        assert_eq!(decode_units(&encode_units(&units)), Some(units));
        assert_eq!(decode_units(&[1, 2, 3]), None);
    }
}
