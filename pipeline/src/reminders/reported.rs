//! What an agent reports of its capabilities, as stored: MCP servers and names stamped
//! with where the transcript stood. A leaf of `pipeline`: the capability surface and
//! the tool plan both read it.

use ctxd_protocol::ToolSpec;
use serde::{Deserialize, Serialize};

/// An MCP server the agent reported connected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServer {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ctxd_protocol::McpResource>,
}

impl McpServer {
    /// `## NAME\nINSTRUCTIONS`, or nothing for a server without instructions.
    pub(crate) fn block(&self) -> Option<McpBlock> {
        let text = self.instructions.as_deref()?.trim();
        if text.is_empty() {
            return None;
        }
        Some(McpBlock {
            name: self.name.clone(),
            block: format!("## {}\n{}", self.name, text),
        })
    }
}

/// One server's instructions as the model reads them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpBlock {
    pub name: String,
    pub block: String,
}

/// Something reported by RPC, stamped with the transcript's last seq at that moment so
/// it orders after the records that came before it (and a fork before it drops it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamped {
    pub name: String,
    pub seq: u64,
}
