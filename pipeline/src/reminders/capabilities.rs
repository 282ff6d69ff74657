//! The capability surface as the model sees it: the MCP system section, and the delta
//! attachments that announce changes — `deferred_tools_delta`, `agent_listing_delta`,
//! `mcp_instructions_delta` — instead of rewriting `system` or the tool schemas.
//!
//! Deltas are replayable: what the model has been told is the fold of the delta records it
//! can still see (after the last compact boundary, without snipped or collapsed records),
//! over the base the system section gives; only the difference between that and the
//! current state is ever sent. Claude Code's own records (camelCase fields) fold the same
//! way, so an imported session knows what its transcript already announced.
//!
//! Which tools are sent is `tool_plan`'s; `Ledger` keeps the fold (and what else the
//! transcript says: the skill sent-set, discoveries, invocations) incremental.

use super::kinds::{AGENT_LISTING_DELTA, DEFERRED_TOOLS_DELTA, MCP_INSTRUCTIONS_DELTA};
use std::collections::{BTreeMap, BTreeSet};

use ctxd_protocol::{AgentType, Record};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

pub use super::reported::{McpBlock, McpServer, Stamped};
use crate::text::string_list;
use crate::tool_plan::{discovery_order, tool_references};

/// Claude Code's heading of MCP instructions, in `system` and in deltas.
pub(crate) const MCP_HEADING: &str = "# MCP Server Instructions\n\nThe following MCP servers have provided instructions for how to use their tools and resources:";

/// The stored capability state of a session (what the agent reported).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CapabilityState {
    /// Connected MCP servers, in connect order.
    #[serde(default)]
    pub mcp: Vec<McpServer>,
    #[serde(default)]
    pub agents: Vec<AgentType>,
    /// The MCP instructions put into `system` at the session's first compile; `None`
    /// until then. Memoized for the session's life, so `system` never changes.
    #[serde(default)]
    pub mcp_memo: Option<Vec<McpBlock>>,
    /// Deferred tools discovered by RPC.
    #[serde(default)]
    pub discovered: Vec<Stamped>,
    /// Skills invoked by RPC.
    #[serde(default)]
    pub invoked: Vec<Stamped>,
}

impl CapabilityState {
    /// The state a fork ending at `seq` inherits: RPC reports made after it are dropped.
    pub fn up_to(mut self, seq: u64) -> CapabilityState {
        self.discovered.retain(|d| d.seq <= seq);
        self.invoked.retain(|d| d.seq <= seq);
        self
    }

    /// Current MCP instruction blocks, in connect order.
    pub fn mcp_blocks(&self) -> Vec<McpBlock> {
        self.mcp.iter().filter_map(McpServer::block).collect()
    }
}

/// The system section for the memoized MCP instructions.
pub fn mcp_section(blocks: &[McpBlock]) -> Option<String> {
    if blocks.is_empty() {
        return None;
    }
    let parts: Vec<&str> = blocks.iter().map(|b| b.block.as_str()).collect();
    Some(format!("{MCP_HEADING}\n\n{}", parts.join("\n\n")))
}

/// `- TYPE: DESCRIPTION (Tools: …)`, one agent type of the listing.
pub(crate) fn agent_line(a: &AgentType) -> String {
    let tools = match &a.tools {
        Some(t) if !t.is_empty() && !t.iter().any(|x| x == "*") => t.join(", "),
        _ => "All tools".to_string(),
    };
    format!(
        "- {}: {} (Tools: {tools})",
        a.agent_type,
        a.description.trim()
    )
}

/// What the model has been told, folded from delta records. A name maps to what was
/// announced for it (an empty text when the record did not say: treated as current);
/// `None` is an announced removal.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Announced {
    deferred: BTreeMap<String, bool>,
    agents: BTreeMap<String, Option<String>>,
    mcp: BTreeMap<String, Option<String>>,
    /// Delta records folded in (a cheap way to notice that the fold moved).
    pub(crate) records: u64,
}

fn names(obj: &Value, keys: &[&str]) -> Vec<String> {
    obj.as_object()
        .map(|o| string_list(o, keys))
        .unwrap_or_default()
}

impl Announced {
    /// Folds one attachment payload; anything that is not a capability delta is ignored.
    pub fn apply(&mut self, attachment: &Value) {
        let kind = attachment.get("type").and_then(Value::as_str);
        match kind {
            Some(DEFERRED_TOOLS_DELTA) => {
                for n in names(attachment, &["added_names", "addedNames"]) {
                    self.deferred.insert(n, true);
                }
                for n in names(attachment, &["removed_names", "removedNames"]) {
                    self.deferred.insert(n, false);
                }
            }
            Some(AGENT_LISTING_DELTA) => {
                let added = names(attachment, &["added_types", "addedTypes"]);
                let lines = names(attachment, &["added_lines", "addedLines"]);
                for (i, t) in added.into_iter().enumerate() {
                    self.agents
                        .insert(t, Some(lines.get(i).cloned().unwrap_or_default()));
                }
                for t in names(attachment, &["removed_types", "removedTypes"]) {
                    self.agents.insert(t, None);
                }
            }
            Some(MCP_INSTRUCTIONS_DELTA) => {
                let added = names(attachment, &["added_names", "addedNames"]);
                let blocks = names(attachment, &["added_blocks", "addedBlocks"]);
                for (i, n) in added.into_iter().enumerate() {
                    self.mcp
                        .insert(n, Some(blocks.get(i).cloned().unwrap_or_default()));
                }
                for n in names(attachment, &["removed_names", "removedNames"]) {
                    self.mcp.insert(n, None);
                }
            }
            _ => return,
        }
        self.records += 1;
    }

    pub(crate) fn fold<'a>(records: impl IntoIterator<Item = &'a Record>) -> Announced {
        let mut a = Announced::default();
        for r in records {
            if let Some(v) = &r.attachment {
                a.apply(v);
            }
        }
        a
    }

    pub fn deferred_names(&self) -> Vec<String> {
        self.deferred
            .iter()
            .filter(|(_, on)| **on)
            .map(|(n, _)| n.clone())
            .collect()
    }

    pub fn agent_types(&self) -> Vec<String> {
        self.agents
            .iter()
            .filter(|(_, l)| l.is_some())
            .map(|(t, _)| t.clone())
            .collect()
    }

    /// MCP instructions the model holds: the system section's, then the deltas'.
    pub fn mcp_blocks(&self, base: &[McpBlock]) -> BTreeMap<String, String> {
        let mut out: BTreeMap<String, String> = base
            .iter()
            .map(|b| (b.name.clone(), b.block.clone()))
            .collect();
        for (n, b) in &self.mcp {
            match b {
                Some(b) => out.insert(n.clone(), b.clone()),
                None => out.remove(n),
            };
        }
        out
    }
}

/// Text made of the non-empty parts, or nothing.
fn parts(parts: Vec<String>) -> Option<String> {
    let parts: Vec<String> = parts.into_iter().filter(|p| !p.is_empty()).collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// The text of a `deferred_tools_delta` (ours or Claude Code's).
pub(crate) fn render_deferred(obj: &Map<String, Value>) -> Option<String> {
    let added = string_list(obj, &["added_names", "addedNames"]);
    let removed = string_list(obj, &["removed_names", "removedNames"]);
    parts(vec![
        if added.is_empty() {
            String::new()
        } else {
            format!(
                "These deferred tools can now be found with tool search. Their definitions are not loaded yet: search for a tool (by name or by what it does) and its full definition is sent from then on.\n{}",
                added.join("\n")
            )
        },
        if removed.is_empty() {
            String::new()
        } else {
            format!(
                "These deferred tools are no longer available (their MCP server disconnected or they were removed). Do not search for them or call them:\n{}",
                removed.join("\n")
            )
        },
    ])
}

/// The text of an `agent_listing_delta`.
pub(crate) fn render_agents(obj: &Map<String, Value>) -> Option<String> {
    let lines = string_list(obj, &["added_lines", "addedLines"]);
    let removed = string_list(obj, &["removed_types", "removedTypes"]);
    let initial = obj
        .get("initial")
        .or_else(|| obj.get("isInitial"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    parts(vec![
        if lines.is_empty() {
            String::new()
        } else if initial {
            format!(
                "Available agent types for the Agent tool:\n{}",
                lines.join("\n")
            )
        } else {
            format!(
                "Agent types added or changed for the Agent tool:\n{}",
                lines.join("\n")
            )
        },
        if removed.is_empty() {
            String::new()
        } else {
            format!(
                "These agent types are no longer available; do not start them:\n{}",
                removed.join("\n")
            )
        },
    ])
}

/// The text of an `mcp_instructions_delta`.
pub(crate) fn render_mcp(obj: &Map<String, Value>) -> Option<String> {
    let blocks = string_list(obj, &["added_blocks", "addedBlocks"]);
    let removed = string_list(obj, &["removed_names", "removedNames"]);
    parts(vec![
        if blocks.is_empty() {
            String::new()
        } else {
            format!("{}\n\n{}", MCP_HEADING, blocks.join("\n\n"))
        },
        if removed.is_empty() {
            String::new()
        } else {
            format!(
                "These MCP servers have disconnected; their instructions no longer apply:\n{}",
                removed.join("\n")
            )
        },
    ])
}

/// What exists now, in the order deltas list it.
pub struct Current<'a> {
    /// Names of deferred tools, in tool order.
    pub deferred: Vec<&'a str>,
    /// Deferred tools already discovered, whose definitions `tools` sends in full: never
    /// announced as waiting to be found (a new history re-announces the others only).
    pub discovered: Vec<String>,
    pub agents: &'a [AgentType],
    pub mcp: Vec<McpBlock>,
}

/// The delta attachments (payloads) that bring the model from `announced` (over the
/// system section's `mcp_base`) to `current`; empty when nothing changed.
pub fn deltas(current: &Current<'_>, announced: &Announced, mcp_base: &[McpBlock]) -> Vec<Value> {
    let mut out = Vec::new();

    let now: BTreeSet<&str> = current.deferred.iter().copied().collect();
    let added: Vec<&str> = current
        .deferred
        .iter()
        .copied()
        .filter(|n| announced.deferred.get(*n) != Some(&true))
        .filter(|n| !current.discovered.iter().any(|d| d == n))
        .collect();
    let removed: Vec<&String> = announced
        .deferred
        .iter()
        .filter(|(n, on)| **on && !now.contains(n.as_str()))
        .map(|(n, _)| n)
        .collect();
    if !added.is_empty() || !removed.is_empty() {
        out.push(json!({
            "type": DEFERRED_TOOLS_DELTA,
            "added_names": added,
            "removed_names": removed,
        }));
    }

    let initial = announced.agents.is_empty();
    let mut added_types = Vec::new();
    let mut added_lines = Vec::new();
    for a in current.agents {
        let line = agent_line(a);
        let same = match announced.agents.get(&a.agent_type) {
            Some(Some(told)) => told.is_empty() || *told == line,
            _ => false,
        };
        if !same {
            added_types.push(a.agent_type.clone());
            added_lines.push(line);
        }
    }
    let removed_types: Vec<&String> = announced
        .agents
        .iter()
        .filter(|(t, l)| l.is_some() && !current.agents.iter().any(|a| &a.agent_type == *t))
        .map(|(t, _)| t)
        .collect();
    if !added_types.is_empty() || !removed_types.is_empty() {
        out.push(json!({
            "type": AGENT_LISTING_DELTA,
            "added_types": added_types,
            "added_lines": added_lines,
            "removed_types": removed_types,
            "initial": initial,
        }));
    }

    let told = announced.mcp_blocks(mcp_base);
    let mut added_names = Vec::new();
    let mut added_blocks = Vec::new();
    for b in &current.mcp {
        match told.get(&b.name) {
            Some(t) if t.is_empty() || *t == b.block => {}
            _ => {
                added_names.push(b.name.clone());
                added_blocks.push(b.block.clone());
            }
        }
    }
    let removed_names: Vec<&String> = told
        .keys()
        .filter(|n| !current.mcp.iter().any(|b| &b.name == *n))
        .collect();
    if !added_names.is_empty() || !removed_names.is_empty() {
        out.push(json!({
            "type": MCP_INSTRUCTIONS_DELTA,
            "added_names": added_names,
            "added_blocks": added_blocks,
            "removed_names": removed_names,
        }));
    }
    out
}

/// What the transcript says about capabilities, kept up to date incrementally so a
/// compile folds only the records appended since the last one.
///
/// * `announced`: the capability deltas the model can still see (the projection after
///   the last compact boundary, snipped and collapsed records out) — refolded when the
///   boundary, a snip or the committed collapses change;
/// * `sent_skills`: every `skill_listing` of the main thread (compactions keep it);
/// * `discovered`: tools named by `tool_reference` blocks, first occurrence;
/// * `invoked`: skills invoked by `Skill` tool_uses, latest seq per name.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    upto: usize,
    view_key: (String, Vec<String>),
    pub announced: Announced,
    pub sent_skills: super::skills::Sent,
    discovered_names: BTreeSet<String>,
    pub(crate) discovered: Vec<Stamped>,
    pub invoked: BTreeMap<String, u64>,
}

fn view_key(boundary_uuid: &str, collapses: &[crate::collapse::Collapse]) -> (String, Vec<String>) {
    let committed = collapses
        .iter()
        .filter(|c| c.status == crate::collapse::CollapseStatus::Committed)
        .map(|c| c.id.clone())
        .collect();
    (boundary_uuid.to_string(), committed)
}

impl Ledger {
    /// Nothing to fold: no record appended, same boundary and collapses.
    pub fn is_current(
        &self,
        records: &[Record],
        boundary_uuid: &str,
        collapses: &[crate::collapse::Collapse],
    ) -> bool {
        self.upto == records.len()
            && self.upto > 0
            && self.view_key == view_key(boundary_uuid, collapses)
    }

    pub fn refresh(
        &mut self,
        records: &[Record],
        boundary_uuid: &str,
        collapses: &[crate::collapse::Collapse],
    ) {
        if records.len() < self.upto {
            *self = Ledger::default();
        }
        let key = view_key(boundary_uuid, collapses);
        let new = &records[self.upto..];
        let refold = key != self.view_key
            || self.upto == 0
            || new
                .iter()
                .any(|r| r.kind == ctxd_protocol::RecordKind::System);
        for r in new.iter().filter(|r| !r.is_sidechain) {
            for n in tool_references(r) {
                if self.discovered_names.insert(n.to_string()) {
                    self.discovered.push(Stamped {
                        name: n.to_string(),
                        seq: r.seq,
                    });
                }
            }
            for n in super::skills::invocations(r) {
                self.invoked.insert(n, r.seq);
            }
            if r.is_virtual {
                continue;
            }
            if let Some(a) = &r.attachment {
                self.sent_skills.apply(a);
                if !refold {
                    self.announced.apply(a);
                }
            }
        }
        if refold {
            let projected = crate::projection::project(records);
            let view = crate::collapse::apply(&projected, collapses);
            self.announced = Announced::fold(view.iter().map(|c| c.as_ref()));
            self.view_key = key;
        }
        self.upto = records.len();
    }

    /// Invoked skills (latest seq per name) over the folded records and those not folded
    /// yet.
    pub fn invocations(&self, records: &[Record]) -> BTreeMap<String, u64> {
        let mut out = self.invoked.clone();
        for r in records.iter().skip(self.upto) {
            for n in super::skills::invocations(r) {
                out.insert(n, r.seq);
            }
        }
        out
    }

    /// Discovery order over the folded records, the records not folded yet, and RPC
    /// reports.
    pub fn discovery_order(&self, records: &[Record], from_rpc: &[Stamped]) -> Vec<String> {
        let mut seen = self.discovered_names.clone();
        let mut from_records = self.discovered.clone();
        for r in records.iter().skip(self.upto).filter(|r| !r.is_sidechain) {
            for n in tool_references(r) {
                if seen.insert(n.to_string()) {
                    from_records.push(Stamped {
                        name: n.to_string(),
                        seq: r.seq,
                    });
                }
            }
        }
        discovery_order(&from_records, from_rpc)
    }
}

#[cfg(test)]
mod tests;
