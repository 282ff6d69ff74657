//! The capability surface: MCP servers, agent types, deferred tools and their
//! discovery, skills. Changes are announced to the model as replayable delta
//! attachments, never by rewriting `system` or the tool schemas already sent.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::prompt::ToolSpec;

/// `capabilities.mcp_connect`: the agent connected an MCP server (or reconnected it:
/// the server's instructions and tools are replaced).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpConnectParams {
    pub session_id: String,
    /// The server's name, as the agent shows it (`## NAME` in the instructions).
    pub name: String,
    /// What the server says about using its tools and resources. Servers connected
    /// before the session's first compile land in the system section "MCP Server
    /// Instructions"; later ones are announced with `mcp_instructions_delta`.
    #[serde(default)]
    pub instructions: Option<String>,
    /// The server's tools; `mcp_server` is set to the server's name. Tools registered
    /// with `defer_loading` are found through tool search.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// Resources the server offers that a prompt may mention (`@NAME:URI`), with the
    /// content the client read from the server: ctxd does not speak MCP itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<McpResource>,
}

/// An MCP resource a client registered, as `resources/read` gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpResource {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its text; absent when the client did not read it (a mention then says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// `capabilities.mcp_set_instructions`: a connected server changed its instructions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpSetInstructionsParams {
    pub session_id: String,
    pub name: String,
    /// The new instructions; absent or empty → the server has none any more.
    #[serde(default)]
    pub instructions: Option<String>,
}

/// `capabilities.mcp_disconnect`: the server went away, with its tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpDisconnectParams {
    pub session_id: String,
    pub name: String,
}

/// One agent type the agent's `Agent` tool can start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentType {
    #[serde(rename = "type")]
    pub agent_type: String,
    /// When to use it (one line in the listing).
    pub description: String,
    /// The tools it may use; absent → all tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
}

/// `capabilities.set_agents`: the complete list of available agent types.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetAgentsParams {
    pub session_id: String,
    pub agents: Vec<AgentType>,
}

/// `capabilities.discover_tools`: deferred tools the model found (when the client's tool
/// search does not answer with `tool_reference` blocks, which ctxd reads by itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiscoverToolsParams {
    pub session_id: String,
    pub names: Vec<String>,
}

/// `capabilities.invoke_skill`: a skill was invoked other than through a `Skill`
/// tool_use (e.g. the user typed `/name`); compaction restores invoked skills.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InvokeSkillParams {
    pub session_id: String,
    pub name: String,
}

/// What a capability change did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CapabilityChangeResponse {
    /// Announced at the next compile: in `system` (before the first compile) or as a
    /// delta attachment (after it).
    pub announced_by: String,
    /// Tools of the session now (session tools and connected servers' tools).
    pub tool_count: u32,
}

/// Where one skill stands in a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkillInfo {
    /// The name the `Skill` tool takes (the skill's directory, or the command file's
    /// path below `commands/` joined with `:`).
    pub name: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_to_use: Option<String>,
    /// `user`, `project`, `user_command` or `project_command`.
    pub source: String,
    pub path: String,
    /// `paths:` patterns (gitignore-style, relative to `base`); empty → unconditional.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    pub base: String,
    /// `listed` (announced to the model), `pending` (announced at the next compile),
    /// `dormant` (conditional, no matching path touched yet) or `omitted` (announced by
    /// name count only: the listing's budget was spent).
    pub state: String,
    pub invoked: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A skill file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkippedSkill {
    pub path: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkillsResponse {
    pub skills: Vec<SkillInfo>,
    /// Announced earlier but gone from disk (announced as removed at the next compile).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedSkill>,
    /// Characters the listing may take (about 1% of the context window).
    pub listing_budget_chars: u64,
}

/// One tool as the next compile sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolState {
    pub name: String,
    /// `sent` (full schema), `deferred` (findable by tool search, not sent),
    /// `discovered` (deferred, found, sent in full) or `server` (server-side tool).
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_server: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpServerState {
    pub name: String,
    pub tools: Vec<String>,
    pub instructions_chars: u64,
    /// Its instructions sit in the system section (it was connected before the first
    /// compile); otherwise they are announced as deltas.
    pub in_system: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CapabilitiesResponse {
    /// The tools sent (in registration order; server-side tools go after the others in
    /// the request), the discovered ones (in discovery order), then the deferred ones
    /// still to be found.
    pub tools: Vec<ToolState>,
    pub mcp_servers: Vec<McpServerState>,
    pub agents: Vec<AgentType>,
    /// What the model has been told in the current history (the fold of its delta
    /// records): deferred tool names, agent types, MCP servers with instructions.
    pub announced_deferred_tools: Vec<String>,
    pub announced_agent_types: Vec<String>,
    pub announced_mcp_servers: Vec<String>,
}
