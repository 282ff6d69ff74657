//! Cache-break detection from reported usage:
//! a call whose cache reads fall below 95% of the previous call's, and by at least
//! 2,000 tokens, is a break unless a compaction or a cache edit explains it. A break is
//! attributed, in this order, to what changed between the two compiled requests, to the
//! TTL running out between the calls, or else to the provider evicting the entry.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use ctxd_protocol::{CacheBreak, CacheCall, Record, RecordKind};
use serde::{Deserialize, Serialize};

use super::projection::COMPACT_BOUNDARY;

/// A drop is a break below this share of the previous read ...
pub(crate) const BREAK_SHARE: f64 = 0.95;
/// ... and by at least this many tokens.
pub(crate) const BREAK_MIN_TOKENS: u64 = 2_000;

/// What keyed the cache in one compiled request, kept per compile to attribute breaks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub(crate) compiled_at: String,
    /// The transcript's last seq when the request was compiled: the call it served is
    /// the next assistant response.
    pub last_seq: u64,
    pub model: String,
    /// Per system block: hash and characters.
    pub(crate) system: Vec<(u64, u64)>,
    /// Per tool, in order: name and hash.
    pub(crate) tools: Vec<(String, u64)>,
    /// Scope of the first system block's marker (`global`, `org`/none).
    pub(crate) scope: String,
    pub(crate) ttl: String,
    pub(crate) betas: Vec<String>,
    /// Extra parameters: name → hash of the value.
    pub(crate) extra: BTreeMap<String, u64>,
    /// The flags' share of the cache key (see `latch::cache_key_hash`).
    #[serde(default)]
    pub flags_hash: u64,
    pub predicted_read_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_break: Option<String>,
    /// ctxd predicted that the previous request's cached prefix is not this request's
    /// (it differs before the previous one ends, or the entry expired): the miss the
    /// provider's diagnosis would name.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub predicted_miss: bool,
    pub(crate) side_request: bool,
    /// The request asked the provider why its cache missed (`diagnostics`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) diagnostics: bool,
    /// Per uncached system section: name → hash of the text shown. The next compile
    /// reports which of them changed; kept here so that survives a reload or restart.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub uncached: BTreeMap<String, u64>,
}

impl Fingerprint {
    /// What keyed the cache in a request ctxd did not compile (a client's own, seen by
    /// the HTTP front door), sent at `sent_at` after the transcript's `last_seq`.
    pub fn of_request(
        body: &serde_json::Value,
        shape: &super::cache_prefix::KeyShape,
        betas: &[String],
        last_seq: u64,
        sent_at: DateTime<Utc>,
    ) -> Fingerprint {
        use super::cache_prefix::Locus;
        use serde_json::Value;
        let system_blocks: Vec<Value> = match body.get("system") {
            Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        let system = shape
            .units
            .iter()
            .filter(|u| matches!(u.locus, Locus::System(_)))
            .zip(&system_blocks)
            .map(|(u, b)| {
                let chars = b
                    .get("text")
                    .and_then(Value::as_str)
                    .map_or(u64::from(u.bytes), |t| t.chars().count() as u64);
                (u.hash, chars)
            })
            .collect();
        let tools = shape
            .units
            .iter()
            .filter(|u| matches!(u.locus, Locus::Tool(_)))
            .zip(&shape.tool_names)
            .map(|(u, n)| (n.clone(), u.hash))
            .collect();
        let scope = system_blocks
            .first()
            .and_then(|b| b.pointer("/cache_control/scope"))
            .and_then(Value::as_str)
            .unwrap_or("org")
            .to_string();
        // A marker's TTL anywhere in the request is the one its entries live for.
        let ttl = if body.to_string().contains("\"ttl\":\"1h\"") {
            super::latch::TTL_1H
        } else {
            super::latch::TTL_5M
        };
        let extra = body
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !super::cache_prefix::UNKEYED_FIELDS.contains(&k.as_str()))
            .map(|(k, v)| {
                (
                    k.clone(),
                    super::cache_prefix::hash_bytes(v.to_string().as_bytes()),
                )
            })
            .collect();
        Fingerprint {
            compiled_at: crate::clock::rfc3339(sent_at),
            last_seq,
            model: shape.model.clone(),
            system,
            tools,
            scope,
            ttl: ttl.to_string(),
            betas: betas.to_vec(),
            extra,
            flags_hash: shape.flags_hash,
            predicted_read_tokens: 0,
            expected_break: None,
            predicted_miss: false,
            side_request: false,
            diagnostics: body.get("diagnostics").is_some(),
            uncached: BTreeMap::new(),
        }
    }

    pub fn ttl_is_1h(&self) -> bool {
        self.ttl == super::latch::TTL_1H
    }

    fn ttl_secs(&self) -> u64 {
        if self.ttl == super::latch::TTL_1H {
            3_600
        } else {
            300
        }
    }
}

/// What differs between two compiled requests, one line each.
pub(crate) fn diff(a: &Fingerprint, b: &Fingerprint) -> Vec<String> {
    let mut out = Vec::new();
    if a.model != b.model {
        out.push(format!("model {} → {}", a.model, b.model));
    }
    if a.system != b.system {
        let chars = |f: &Fingerprint| f.system.iter().map(|s| i128::from(s.1)).sum::<i128>();
        let d = chars(b) - chars(a);
        out.push(match d {
            0 => "system changed (same size)".to_string(),
            d if d > 0 => format!("system +{d} chars"),
            d => format!("system {d} chars"),
        });
    }
    let names = |f: &Fingerprint| f.tools.iter().map(|t| t.0.clone()).collect::<Vec<_>>();
    let (na, nb) = (names(a), names(b));
    let added: Vec<&String> = nb.iter().filter(|n| !na.contains(n)).collect();
    let removed: Vec<&String> = na.iter().filter(|n| !nb.contains(n)).collect();
    if !added.is_empty() {
        out.push(format!("tools added: {}", join(&added)));
    }
    if !removed.is_empty() {
        out.push(format!("tools removed: {}", join(&removed)));
    }
    let hashes: BTreeMap<&String, u64> = a.tools.iter().map(|(n, h)| (n, *h)).collect();
    let changed: Vec<&String> = b
        .tools
        .iter()
        .filter(|(n, h)| hashes.get(n).is_some_and(|old| old != h))
        .map(|(n, _)| n)
        .collect();
    if !changed.is_empty() {
        out.push(format!("tool schema changed: {}", join(&changed)));
    }
    let common = |x: &[String], other: &[String]| -> Vec<String> {
        x.iter().filter(|n| other.contains(n)).cloned().collect()
    };
    if changed.is_empty() && common(&na, &nb) != common(&nb, &na) {
        out.push("tools reordered".to_string());
    }
    if a.scope != b.scope {
        out.push(format!("cache scope {} → {}", a.scope, b.scope));
    }
    if a.ttl != b.ttl {
        out.push(format!("cache TTL {} → {}", a.ttl, b.ttl));
    }
    let added: Vec<&String> = b.betas.iter().filter(|x| !a.betas.contains(x)).collect();
    let removed: Vec<&String> = a.betas.iter().filter(|x| !b.betas.contains(x)).collect();
    if !added.is_empty() {
        out.push(format!("betas added: {}", join(&added)));
    }
    if !removed.is_empty() {
        out.push(format!("betas removed: {}", join(&removed)));
    }
    let mut keys: Vec<&String> = a.extra.keys().chain(b.extra.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        match (a.extra.get(k), b.extra.get(k)) {
            (Some(x), Some(y)) if x != y => out.push(format!("parameter {k} changed")),
            (None, Some(_)) => out.push(format!("parameter {k} added")),
            (Some(_), None) => out.push(format!("parameter {k} removed")),
            _ => {}
        }
    }
    out
}

fn join(v: &[&String]) -> String {
    v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
}

/// One model call: a main-thread assistant response with usage.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub(crate) uuid: String,
    /// Seq of the record carrying the usage, and of the response's first record.
    pub(crate) seq: u64,
    pub(crate) first_seq: u64,
    pub(crate) timestamp: String,
    pub(crate) usage: ctxd_protocol::Usage,
    /// What the provider said of the call beside its usage.
    pub(crate) server: ServerReport,
}

/// What a response reports of the provider's own context management.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerReport {
    /// `context_management.applied_edits[].cleared_input_tokens`, summed.
    pub cleared_input_tokens: u64,
    /// The response's `diagnostics`, as it came (`null` or absent: no divergence
    /// detected, when the request asked).
    pub(crate) diagnostics: Option<serde_json::Value>,
}

impl ServerReport {
    pub fn of(r: &Record) -> ServerReport {
        let Some(extra) = &r.message_extra else {
            return ServerReport::default();
        };
        let cleared_input_tokens = extra
            .get("context_management")
            .and_then(|c| c.get("applied_edits"))
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|e| {
                e.get("cleared_input_tokens")
                    .and_then(serde_json::Value::as_u64)
            })
            .sum();
        ServerReport {
            cleared_input_tokens,
            diagnostics: extra.get("diagnostics").cloned(),
        }
    }

    /// The provider's `cache_miss_reason` (`null` while its diagnosis is pending).
    fn miss_reason(&self) -> serde_json::Value {
        self.diagnostics
            .as_ref()
            .and_then(|d| d.get("cache_miss_reason"))
            .cloned()
            .unwrap_or(serde_json::Value::Null)
    }

    /// The provider's verdict on a request that asked for diagnostics: `Some(true)` it
    /// missed, `Some(false)` it found no divergence (`diagnostics` null), `None` when
    /// it gave none (pending, previous message not found, unavailable).
    fn verdict(&self) -> Option<bool> {
        match &self.diagnostics {
            None | Some(serde_json::Value::Null) => Some(false),
            Some(d) => match d
                .get("cache_miss_reason")
                .and_then(|r| r.get("type"))
                .and_then(serde_json::Value::as_str)
            {
                None | Some("previous_message_not_found" | "unavailable") => None,
                Some(_) => Some(true),
            },
        }
    }
}

/// The calls of a transcript, oldest first, with the compact boundaries between them.
pub fn calls(records: &[Record]) -> (Vec<Call>, Vec<u64>) {
    let mut out: Vec<Call> = Vec::new();
    let mut boundaries = Vec::new();
    // First seq of the response each message id began.
    let mut open: Option<(Option<&str>, u64)> = None;
    for r in records.iter().filter(|r| !r.is_sidechain) {
        match r.kind {
            RecordKind::Assistant => {
                let id = r.message_id.as_deref();
                let first = match open {
                    Some((prev, first)) if prev.is_some() && prev == id => first,
                    _ => r.seq,
                };
                open = Some((id, first));
                if let Some(u) = &r.usage {
                    // A response split over records carries its final usage last.
                    if out
                        .last()
                        .is_some_and(|c| c.first_seq == first && id.is_some())
                    {
                        out.pop();
                    }
                    out.push(Call {
                        uuid: r.uuid.clone(),
                        seq: r.seq,
                        first_seq: first,
                        timestamp: r.timestamp.clone(),
                        usage: u.clone(),
                        server: ServerReport::of(r),
                    });
                }
                // The provider's compaction starts a new history with this response.
                if super::projection::server_compaction(r) == Some(true) {
                    boundaries.push(r.seq);
                }
            }
            RecordKind::System if r.subtype.as_deref() == Some(COMPACT_BOUNDARY) => {
                boundaries.push(r.seq);
                open = None;
            }
            RecordKind::User => open = None,
            _ => {}
        }
    }
    (out, boundaries)
}

/// The compile that produced a call: the newest main compile before its response began.
fn compile_of<'a>(c: &Call, compiles: &'a [Fingerprint]) -> Option<&'a Fingerprint> {
    compiles
        .iter()
        .rev()
        .find(|f| !f.side_request && f.last_seq < c.first_seq)
}

fn parse(t: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|d| d.with_timezone(&Utc))
}

/// Reads of `cur` against `prev`: `Some` when they fell enough to count.
pub(crate) fn dropped(prev: u64, cur: u64) -> bool {
    (cur as f64) < prev as f64 * BREAK_SHARE && prev.saturating_sub(cur) >= BREAK_MIN_TOKENS
}

/// Every call with its prediction and, where the reads dropped, the expected cause or
/// the break's attribution. `compiles` are oldest first.
pub fn analyse(calls: &[Call], boundaries: &[u64], compiles: &[Fingerprint]) -> Vec<CacheCall> {
    let mut out = Vec::with_capacity(calls.len());
    for (i, c) in calls.iter().enumerate() {
        let compile = compile_of(c, compiles);
        let asked = compile.is_some_and(|f| f.diagnostics);
        let mut row = CacheCall {
            uuid: c.uuid.clone(),
            seq: c.seq,
            timestamp: c.timestamp.clone(),
            input_tokens: c.usage.input_tokens,
            cache_creation_tokens: c.usage.cache_creation_input_tokens,
            cache_read_tokens: c.usage.cache_read_input_tokens,
            output_tokens: c.usage.output_tokens,
            predicted_read_tokens: compile.map(|f| f.predicted_read_tokens),
            expected_drop: None,
            cache_break: None,
            server_cleared_tokens: (c.server.cleared_input_tokens > 0)
                .then_some(c.server.cleared_input_tokens),
            provider_miss_reason: asked.then(|| c.server.miss_reason()),
            agrees: None,
            model: None,
            cost_usd: None,
        };
        if let Some(prev) = i.checked_sub(1).map(|k| &calls[k]) {
            let (pr, cr) = (
                prev.usage.cache_read_input_tokens,
                c.usage.cache_read_input_tokens,
            );
            if dropped(pr, cr) {
                // `>=`: the provider's compaction is the previous call itself.
                let compacted = boundaries
                    .iter()
                    .any(|b| *b >= prev.seq && *b < c.first_seq);
                let expected = if compacted {
                    Some("compaction".to_string())
                } else if c.server.cleared_input_tokens > 0 {
                    Some(SERVER_CONTEXT_EDIT.to_string())
                } else {
                    compile.and_then(|f| f.expected_break.clone())
                };
                match expected {
                    Some(e) => row.expected_drop = Some(e),
                    None => {
                        row.cache_break =
                            Some(attribute(prev, c, compile_of(prev, compiles), compile));
                    }
                }
            }
        }
        // Against a call ctxd has no previous call for, its reading is "no drop". A miss
        // it predicted is its reading too, when the reads it had to compare were too
        // few to show a drop.
        let ctxd_missed = row.expected_drop.is_some()
            || row.cache_break.is_some()
            || compile.is_some_and(|f| f.predicted_miss);
        if asked {
            row.agrees = c.server.verdict().map(|missed| missed == ctxd_missed);
        }
        out.push(row);
    }
    out
}

/// The expected break of a request whose previous one the provider's context editing
/// cleared: the cleared results are rewritten from the first one on.
pub const SERVER_CONTEXT_EDIT: &str = "server_context_edit";

fn attribute(
    prev: &Call,
    cur: &Call,
    prev_compile: Option<&Fingerprint>,
    cur_compile: Option<&Fingerprint>,
) -> CacheBreak {
    let sent_at = cur_compile
        .and_then(|f| parse(&f.compiled_at))
        .or_else(|| parse(&cur.timestamp));
    let gap_secs = match (parse(&prev.timestamp), sent_at) {
        // A clock that went back counts as no gap.
        (Some(a), Some(b)) => Some(u64::try_from((b - a).num_seconds()).unwrap_or(0)),
        _ => None,
    };
    let changes = match (prev_compile, cur_compile) {
        (Some(a), Some(b)) => diff(a, b),
        _ => Vec::new(),
    };
    let ttl = prev_compile.map_or(300, Fingerprint::ttl_secs);
    let cause = if !changes.is_empty() {
        "client_change"
    } else if gap_secs.is_some_and(|g| g > ttl) {
        "ttl_expiry"
    } else {
        "server_eviction"
    };
    CacheBreak {
        cause: cause.into(),
        changes,
        gap_secs,
        previous_read_tokens: prev.usage.cache_read_input_tokens,
        read_tokens: cur.usage.cache_read_input_tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxd_protocol::Usage;

    fn fp(last_seq: u64, at: &str) -> Fingerprint {
        Fingerprint {
            compiled_at: at.into(),
            last_seq,
            model: "m".into(),
            system: vec![(1, 100)],
            tools: vec![("Read".into(), 1), ("Bash".into(), 2)],
            scope: "global".into(),
            ttl: "5m".into(),
            ..Fingerprint::default()
        }
    }

    fn call(seq: u64, at: &str, read: u64) -> Call {
        Call {
            uuid: format!("u{seq}"),
            seq,
            first_seq: seq,
            timestamp: at.into(),
            usage: Usage {
                cache_read_input_tokens: read,
                ..Usage::default()
            },
            server: ServerReport::default(),
        }
    }

    #[test]
    fn a_small_or_relative_small_drop_is_no_break() {
        assert!(!dropped(100_000, 96_000));
        assert!(!dropped(10_000, 8_500));
        assert!(dropped(100_000, 94_000));
        assert!(!dropped(0, 0));
    }

    #[test]
    fn an_added_tool_is_named() {
        let a = fp(1, "2026-01-01T00:00:00Z");
        let mut b = fp(3, "2026-01-01T00:01:00Z");
        b.tools.push(("Foo".into(), 9));
        let calls = [
            call(2, "2026-01-01T00:00:10Z", 50_000),
            call(4, "2026-01-01T00:01:10Z", 3_000),
        ];
        let rows = analyse(&calls, &[], &[a, b]);
        let br = rows[1].cache_break.as_ref().unwrap();
        assert_eq!(br.cause, "client_change");
        assert_eq!(br.changes, ["tools added: Foo"]);
        assert_eq!(rows[0].cache_break, None);
    }

    #[test]
    fn a_gap_over_the_ttl_is_expiry_and_nothing_else_is_eviction() {
        let a = fp(1, "2026-01-01T00:00:00Z");
        let b = fp(3, "2026-01-01T00:10:00Z");
        let calls = [
            call(2, "2026-01-01T00:00:10Z", 50_000),
            call(4, "2026-01-01T00:10:05Z", 0),
        ];
        let br = analyse(&calls, &[], &[a.clone(), b])
            .remove(1)
            .cache_break
            .unwrap();
        assert_eq!(br.cause, "ttl_expiry");
        assert_eq!(br.gap_secs, Some(590));

        let b = fp(3, "2026-01-01T00:01:00Z");
        let calls = [
            call(2, "2026-01-01T00:00:10Z", 50_000),
            call(4, "2026-01-01T00:01:05Z", 0),
        ];
        let br = analyse(&calls, &[], &[a.clone(), b])
            .remove(1)
            .cache_break
            .unwrap();
        assert_eq!(br.cause, "server_eviction");

        // With a one-hour TTL the same ten minutes are no expiry.
        let mut a1 = a;
        a1.ttl = "1h".into();
        let mut b1 = fp(3, "2026-01-01T00:10:00Z");
        b1.ttl = "1h".into();
        let calls = [
            call(2, "2026-01-01T00:00:10Z", 50_000),
            call(4, "2026-01-01T00:10:05Z", 0),
        ];
        let br = analyse(&calls, &[], &[a1, b1])
            .remove(1)
            .cache_break
            .unwrap();
        assert_eq!(br.cause, "server_eviction");
    }

    #[test]
    fn compaction_and_cache_edits_are_expected() {
        let a = fp(1, "2026-01-01T00:00:00Z");
        let mut b = fp(3, "2026-01-01T00:01:00Z");
        let calls = [
            call(2, "2026-01-01T00:00:10Z", 50_000),
            call(5, "2026-01-01T00:01:10Z", 0),
        ];
        let rows = analyse(&calls, &[3], &[a.clone(), b.clone()]);
        assert_eq!(rows[1].expected_drop.as_deref(), Some("compaction"));
        assert_eq!(rows[1].cache_break, None);
        b.expected_break = Some("cache_edit".into());
        let rows = analyse(&calls, &[], &[a, b]);
        assert_eq!(rows[1].expected_drop.as_deref(), Some("cache_edit"));
    }

    #[test]
    fn diff_names_each_kind_of_change() {
        let a = fp(1, "t");
        let mut b = a.clone();
        b.model = "n".into();
        b.system = vec![(2, 220)];
        b.tools = vec![("Bash".into(), 2), ("Read".into(), 1)];
        b.ttl = "1h".into();
        b.betas = vec!["x".into()];
        b.extra.insert("effort".into(), 1);
        let d = diff(&a, &b);
        assert_eq!(
            d,
            [
                "model m → n",
                "system +120 chars",
                "tools reordered",
                "cache TTL 5m → 1h",
                "betas added: x",
                "parameter effort added"
            ]
        );
    }

    #[test]
    fn calls_merge_split_responses_and_note_boundaries() {
        let rec = |seq: u64, kind: RecordKind, mid: Option<&str>, read: Option<u64>| Record {
            seq,
            message_id: mid.map(str::to_string),
            usage: read.map(|r| Usage {
                cache_read_input_tokens: r,
                ..Usage::default()
            }),
            subtype: (kind == RecordKind::System).then(|| COMPACT_BOUNDARY.to_string()),
            ..Record::new(kind, format!("r{seq}"), "2026-01-01T00:00:00Z", vec![])
        };
        let records = [
            rec(1, RecordKind::User, None, None),
            rec(2, RecordKind::Assistant, Some("m1"), Some(10)),
            rec(3, RecordKind::Assistant, Some("m1"), Some(20)),
            rec(4, RecordKind::System, None, None),
            rec(5, RecordKind::Assistant, Some("m2"), Some(30)),
        ];
        let (calls, boundaries) = calls(&records);
        assert_eq!(calls.len(), 2);
        assert_eq!((calls[0].seq, calls[0].first_seq), (3, 2));
        assert_eq!(calls[0].usage.cache_read_input_tokens, 20);
        assert_eq!(boundaries, [4]);
    }
}
