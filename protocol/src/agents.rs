//! Sub-agents: a thread a session starts for one tool call (Claude Code's Task / Agent
//! tool). The thread has its own transcript, system prompt, tools, thresholds, budget,
//! cache prediction and compaction; it starts from the parent's file state, and its
//! answer goes back to the parent as the tool result of the call that started it.
//!
//! A thread is addressed as `{session_id: parent, agent_id}` on `transcript.append`,
//! `transcript.read`, `context.compile` and `context.send`, or by its own `session_id`
//! (`agent.start` returns it) on every method.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::prompt::{ModelProfile, SystemPrompt, ToolSpec};
use crate::session::{AgentInfo, SessionInfo};

/// The instructions a sub-agent starts with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentInstructions {
    /// The same instruction files (CLAUDE.md and rules) and git snapshot as a session in
    /// the parent's directory.
    #[default]
    Full,
    /// No instruction files and no git snapshot: what Claude Code gives its read-only
    /// search and planning agents. The date and environment stay.
    Light,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentStartParams {
    /// The parent session.
    pub session_id: String,
    /// The parent's `tool_use` that starts the agent: a call in its transcript that has
    /// no result yet.
    pub tool_use_id: String,
    pub agent_type: String,
    /// Unique within the parent; a fresh one when absent.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// The agent's own system prompt; the default contract when absent.
    #[serde(default)]
    pub system: Option<SystemPrompt>,
    /// The agent's tools; the parent's when absent.
    #[serde(default)]
    pub tools: Option<Vec<ToolSpec>>,
    /// The agent's model profile; the parent's when absent.
    #[serde(default)]
    pub model: Option<ModelProfile>,
    /// A JSON merge patch on the parent's settings (as `session.update` takes): the
    /// agent's own thresholds, budget or summariser.
    #[serde(default)]
    #[schemars(with = "Option<crate::settings::SessionSettings>")]
    pub settings: Option<serde_json::Value>,
    #[serde(default)]
    pub instructions: AgentInstructions,
    /// The task, appended as the thread's first user message.
    #[serde(default)]
    pub prompt: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentStartResponse {
    /// The agent's thread: a session of its own, with `agent` set.
    pub session: SessionInfo,
    /// Context the SubagentStart hooks added (already in the thread).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_context: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentFinishParams {
    /// The parent session.
    pub session_id: String,
    pub agent_id: String,
    /// The tool result's content (a string or content blocks); the text of the agent's
    /// last answer when absent.
    #[serde(default)]
    pub result: Option<serde_json::Value>,
    #[serde(default)]
    pub is_error: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentFinishResponse {
    pub agent: AgentInfo,
    /// The parent's new record: a user message holding the tool result.
    pub uuid: String,
    pub seq: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentListResponse {
    /// The session's sub-agents, in the order they started.
    pub agents: Vec<AgentThread>,
}

/// A sub-agent and the session holding its thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentThread {
    #[serde(flatten)]
    pub agent: AgentInfo,
    pub session_id: String,
    pub record_count: u64,
}
