//! `daemon.initialize`: who is talking, which protocol version both sides speak, and
//! what the daemon offers.
//!
//! Versions are `MAJOR.MINOR`. A minor version only adds (methods, optional params,
//! result fields, event kinds); a major version may remove or change. The daemon speaks
//! one major version and every minor up to its own; the negotiated version is the lower
//! of the client's and the daemon's minor within that major. A client asking for another
//! major gets `UNSUPPORTED_PROTOCOL_VERSION`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Name and version of the program on one end of the connection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PeerInfo {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InitializeParams {
    pub client_info: PeerInfo,
    /// The protocol version the client was written against, `MAJOR.MINOR` (e.g. `1.1`);
    /// a bare `MAJOR` means its first minor.
    pub protocol_version: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InitializeResult {
    pub server_info: PeerInfo,
    /// The version both sides speak: the client's major, the lower of the two minors.
    pub protocol_version: String,
    /// The daemon's own protocol version.
    pub server_protocol_version: String,
    pub capabilities: Capabilities,
    pub limits: Limits,
}

/// What this daemon offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Capabilities {
    /// Every method it serves (`rpc.discover` documents them).
    pub methods: Vec<String>,
    /// `http` (one call per POST) and `websocket` (calls and subscriptions).
    pub transports: Vec<String>,
    /// `session.subscribe` (WebSocket only) replays from `after_seq` and can carry whole
    /// records.
    pub subscriptions: SubscriptionCapabilities,
    /// Instruction and seen files are watched, so `file_changed` events flow.
    pub file_watching: bool,
    /// Summariser of sessions that choose none (`embedded`, `anthropic`, `openai`,
    /// `client`).
    pub default_summariser: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubscriptionCapabilities {
    pub resumable: bool,
    pub include_records: bool,
    /// Events buffered per session before a slow subscriber gets `lagged`.
    pub buffer_events: u64,
}

/// Bounds the daemon enforces; exceeding one is an error, never a crash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Limits {
    /// Largest request (HTTP body or WebSocket message) in bytes.
    pub max_request_bytes: u64,
    /// Largest response in bytes.
    pub max_response_bytes: u64,
    /// Calls in one JSON-RPC batch; a longer batch is refused whole (-32042).
    pub max_batch_calls: u64,
    /// Connections served at once; one more is answered with HTTP 503 carrying
    /// JSON-RPC error -32040 and closed (retry later).
    pub max_connections: u64,
    /// Subscriptions on one WebSocket connection.
    pub max_subscriptions_per_connection: u64,
    /// Records per `transcript.read` page.
    pub max_read_page: u64,
    /// Records one `transcript.append` may carry; more is refused whole (-32602,
    /// `data.field = "records"`).
    pub max_append_records: u64,
    /// Size of one record as JSON, in bytes; larger is refused (-32602, `data.field =
    /// "records[i]"`).
    pub max_record_bytes: u64,
    /// Sessions held in memory at once; beyond it the least recently used idle one is
    /// unloaded and reloaded from the store on its next use (same bytes). Not an error.
    pub max_loaded_sessions: u64,
}

/// `session.unsubscribe`: the id `session.subscribe` returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnsubscribeParams {
    pub subscription: SubscriptionId,
}

/// A subscription's id: a number or a string, echoed back exactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SubscriptionId {
    Number(u64),
    String(String),
}

/// The parsed form of a `MAJOR.MINOR` version.
pub fn parse_version(v: &str) -> Option<(u32, u32)> {
    let mut parts = v.trim().splitn(2, '.');
    let major = parts.next()?.parse().ok()?;
    let minor = match parts.next() {
        Some(m) => m.parse().ok()?,
        None => 0,
    };
    Some((major, minor))
}

/// The version to speak with a client asking for `requested`, or `None` when its major
/// is not this protocol's.
pub fn negotiate(requested: &str) -> Option<String> {
    let (major, minor) = parse_version(requested)?;
    let (own_major, own_minor) = parse_version(crate::PROTOCOL_VERSION)?;
    (major == own_major).then(|| format!("{major}.{}", minor.min(own_minor)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_keeps_the_major_and_the_lower_minor() {
        let (major, minor) = parse_version(crate::PROTOCOL_VERSION).unwrap();
        assert_eq!(negotiate(&format!("{major}.0")), Some(format!("{major}.0")));
        assert_eq!(
            negotiate(&format!("{major}.{}", minor + 5)),
            Some(format!("{major}.{minor}"))
        );
        assert_eq!(negotiate(&major.to_string()), Some(format!("{major}.0")));
        assert_eq!(negotiate(&format!("{}.0", major + 1)), None);
        assert_eq!(negotiate("one"), None);
        assert_eq!(negotiate("1.x"), None);
    }
}
