//! The `tools` array's source: which of the session's and its MCP servers'
//! tools are sent, in which order. Undiscovered deferred tools are not sent (their names
//! are announced); a discovered one is sent with its full schema, appended after the
//! tools already sent in discovery order, so what was sent never moves. A session that
//! registers a provider-side tool search (`tool_search_tool_*`) lets the provider do the
//! searching: its deferred tools pass through with `defer_loading`.

use std::borrow::Cow;
use std::collections::BTreeSet;

use ctxd_protocol::{ContentBlock, Record, ToolResultBlock, ToolResultContent, ToolSpec};

use super::message::{ApiMessage, BlockMut};
use crate::reported::{McpServer, Stamped};

/// How each tool goes out in the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFate {
    Sent,
    Deferred,
    Discovered,
    Server,
}

impl ToolFate {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolFate::Sent => "sent",
            ToolFate::Deferred => "deferred",
            ToolFate::Discovered => "discovered",
            ToolFate::Server => "server",
        }
    }
}

/// The session's tools and connected servers' tools, in registration order, first name
/// wins (a session tool shadows a server tool of the same name). Without servers, the
/// session's own list as it is.
pub fn all_tools<'a>(session_tools: &'a [ToolSpec], mcp: &[McpServer]) -> Cow<'a, [ToolSpec]> {
    if mcp.iter().all(|s| s.tools.is_empty()) {
        return Cow::Borrowed(session_tools);
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(session_tools.len());
    let server_tools = mcp.iter().flat_map(|s| {
        s.tools.iter().map(|t| {
            let mut t = t.clone();
            t.mcp_server = Some(s.name.clone());
            t
        })
    });
    for t in session_tools.iter().cloned().chain(server_tools) {
        if seen.insert(t.name.clone()) {
            out.push(t);
        }
    }
    Cow::Owned(out)
}

/// A provider-side tool search is registered: the provider finds deferred tools itself.
pub(crate) fn provider_searches(tools: &[ToolSpec]) -> bool {
    tools.iter().any(|t| {
        t.server_type
            .as_deref()
            .is_some_and(|s| s.starts_with("tool_search_tool"))
    })
}

fn is_deferred(t: &ToolSpec) -> bool {
    t.defer_loading && t.server_type.is_none()
}

/// The fate of every tool, in the order the request lists them, the deferred ones last.
/// `discovered` is in discovery order.
pub fn tool_fates<'a>(all: &'a [ToolSpec], discovered: &[String]) -> Vec<(&'a ToolSpec, ToolFate)> {
    let fate_of = |t: &ToolSpec| match (t.server_type.is_some(), is_deferred(t)) {
        (true, _) => ToolFate::Server,
        (false, true) => ToolFate::Deferred,
        (false, false) => ToolFate::Sent,
    };
    if provider_searches(all) {
        return all.iter().map(|t| (t, fate_of(t))).collect();
    }
    let mut out: Vec<(&ToolSpec, ToolFate)> = all
        .iter()
        .filter(|t| !is_deferred(t))
        .map(|t| (t, fate_of(t)))
        .collect();
    let mut taken = BTreeSet::new();
    for name in discovered {
        if let Some(t) = all.iter().find(|t| &t.name == name && is_deferred(t))
            && taken.insert(name.as_str())
        {
            out.push((t, ToolFate::Discovered));
        }
    }
    out.extend(
        all.iter()
            .filter(|t| is_deferred(t) && !taken.contains(t.name.as_str()))
            .map(|t| (t, ToolFate::Deferred)),
    );
    out
}

/// The tools array's source: what is sent, in order. A discovered tool goes out as an
/// ordinary tool, schema and all; with a provider-side search every tool passes through.
pub fn plan_tools<'a>(all: &'a [ToolSpec], discovered: &[String]) -> Cow<'a, [ToolSpec]> {
    if provider_searches(all) || !all.iter().any(is_deferred) {
        return Cow::Borrowed(all);
    }
    Cow::Owned(
        tool_fates(all, discovered)
            .into_iter()
            .filter_map(|(t, fate)| match fate {
                ToolFate::Deferred => None,
                ToolFate::Discovered => {
                    let mut t = t.clone();
                    t.defer_loading = false;
                    Some(t)
                }
                ToolFate::Sent | ToolFate::Server => Some(t.clone()),
            })
            .collect(),
    )
}

/// Names of deferred tools, in tool order: what `deferred_tools_delta` announces.
pub fn deferred_names(all: &[ToolSpec]) -> Vec<&str> {
    all.iter()
        .filter(|t| is_deferred(t))
        .map(|t| t.name.as_str())
        .collect()
}

/// Merges discoveries seen in the transcript with those reported by RPC into one
/// discovery order: by seq, a record before an RPC stamped with its seq (the RPC came
/// after the record), first discovery wins.
pub fn discovery_order(from_records: &[Stamped], from_rpc: &[Stamped]) -> Vec<String> {
    let mut all: Vec<(u64, u8, usize, &str)> = from_records
        .iter()
        .enumerate()
        .map(|(i, s)| (s.seq, 0u8, i, s.name.as_str()))
        .chain(
            from_rpc
                .iter()
                .enumerate()
                .map(|(i, s)| (s.seq, 1u8, i, s.name.as_str())),
        )
        .collect();
    all.sort_unstable();
    let mut seen = BTreeSet::new();
    all.into_iter()
        .filter(|(_, _, _, n)| seen.insert(*n))
        .map(|(_, _, _, n)| n.to_string())
        .collect()
}

/// `tool_reference` blocks of one record's tool results, in order.
pub(crate) fn tool_references(r: &Record) -> impl Iterator<Item = &str> {
    r.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                content: ToolResultContent::Blocks(v),
                ..
            } => Some(v),
            _ => None,
        })
        .flatten()
        .filter_map(|x| match x {
            ToolResultBlock::ToolReference { tool_name, .. } => Some(tool_name.as_str()),
            _ => None,
        })
}

pub use crate::text::tool_reference_text;

/// Replaces `tool_reference` blocks by text: the tool is sent in full, so no provider
/// needs to expand the reference (and providers without tool search would refuse it).
pub(crate) fn tool_references_as_text<B: BlockMut>(messages: &mut [ApiMessage<B>]) {
    for m in messages {
        for b in &mut m.content {
            if let ContentBlock::ToolResult {
                content: ToolResultContent::Blocks(v),
                ..
            } = b.block()
                && v.iter()
                    .any(|x| matches!(x, ToolResultBlock::ToolReference { .. }))
                && let ContentBlock::ToolResult {
                    content: ToolResultContent::Blocks(v),
                    ..
                } = b.block_mut()
            {
                for x in v.iter_mut() {
                    if let ToolResultBlock::ToolReference { tool_name, .. } = x {
                        *x = ToolResultBlock::Text {
                            extra: Default::default(),
                            text: tool_reference_text(tool_name),
                        };
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, deferred: bool) -> ToolSpec {
        ToolSpec {
            extra: Default::default(),
            name: name.into(),
            description: Some(format!("{name} does things")),
            input_schema: Some(json!({"type": "object"})),
            server_type: None,
            max_result_size_chars: None,
            mcp_server: None,
            defer_loading: deferred,
        }
    }

    #[test]
    fn discovered_tools_go_after_what_was_sent_in_discovery_order() {
        let all = vec![
            tool("Read", false),
            tool("d1", true),
            tool("Bash", false),
            tool("d2", true),
            tool("d3", true),
        ];
        let sent = plan_tools(&all, &[]);
        let fates = tool_fates(&all, &[]);
        assert_eq!(
            sent.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            ["Read", "Bash"]
        );
        assert_eq!(
            fates.iter().filter(|f| f.1 == ToolFate::Deferred).count(),
            3
        );
        let sent2 = plan_tools(&all, &["d3".into(), "nope".into(), "Read".into()]);
        let names: Vec<&str> = sent2.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["Read", "Bash", "d3"]);
        assert!(!sent2[2].defer_loading, "sent as an ordinary tool");
        let sent3 = plan_tools(&all, &["d3".into(), "d1".into()]);
        let names: Vec<&str> = sent3.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["Read", "Bash", "d3", "d1"], "never reordered");
        assert_eq!(&sent3[..3], &sent2[..]);
    }

    #[test]
    fn a_provider_tool_search_gets_every_deferred_tool() {
        let mut search = tool("tool_search_tool_regex", false);
        search.server_type = Some("tool_search_tool_regex_20251119".into());
        let all = vec![tool("Read", false), tool("d1", true), search];
        let sent = plan_tools(&all, &[]);
        let fates = tool_fates(&all, &[]);
        assert_eq!(sent.len(), 3);
        assert!(sent[1].defer_loading);
        assert_eq!(fates[1].1, ToolFate::Deferred);
        assert_eq!(fates[2].1, ToolFate::Server);
    }

    #[test]
    fn server_tools_carry_their_server_and_session_tools_win() {
        let mcp = vec![McpServer {
            name: "s".into(),
            instructions: None,
            tools: vec![tool("Read", false), tool("mcp__s__q", true)],
            resources: vec![],
        }];
        let own = [tool("Read", false)];
        let all = all_tools(&own, &mcp);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].mcp_server, None);
        assert_eq!(all[1].mcp_server.as_deref(), Some("s"));
        assert_eq!(deferred_names(&all), vec!["mcp__s__q"]);
    }

    #[test]
    fn discovery_order_merges_records_and_rpc() {
        let s = |n: &str, seq| Stamped {
            name: n.into(),
            seq,
        };
        let order = discovery_order(&[s("a", 5), s("b", 9), s("a", 12)], &[s("c", 5), s("b", 2)]);
        assert_eq!(order, vec!["b", "a", "c"]);
    }
}
