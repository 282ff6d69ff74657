//! What the model is given of a session: its profile, the system prompt's sections and
//! the tools. A leaf of the wire types: settings and sessions build on it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the session's model can hold and produce. A field left out is taken from the
/// model catalogue ([`crate::models`]) for a listed model; a model the catalogue does not
/// list needs at least `context_window`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "ModelProfileInput")]
pub struct ModelProfile {
    /// Model name put into the compiled request.
    pub model: String,
    /// Context window in tokens.
    pub context_window: u64,
    /// Maximum output tokens per response (the request's `max_tokens`).
    pub max_output_tokens: u64,
    /// Whether the model accepts thinking blocks in the history.
    pub supports_thinking: bool,
}

/// A model profile as a client gives it: any field may be left to the catalogue.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelProfileInput {
    /// `claude-sonnet-4-5` when absent.
    #[serde(default)]
    pub model: Option<String>,
    /// The catalogue's window for a listed model; required otherwise.
    #[serde(default)]
    pub context_window: Option<u64>,
    /// What Claude Code asks for on a listed model (128,000 on `claude-opus-5-5`), else
    /// the model's limit up to 32,000; 32,000 for a model not listed.
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    #[serde(default)]
    pub supports_thinking: Option<bool>,
}

impl TryFrom<ModelProfileInput> for ModelProfile {
    type Error = String;
    fn try_from(i: ModelProfileInput) -> Result<Self, String> {
        let model = i.model.unwrap_or_else(default_model);
        let entry = crate::models::lookup(&model);
        let context_window = match (i.context_window, entry) {
            (Some(w), _) => w,
            (None, Some(e)) => e.context_window,
            (None, None) => {
                return Err(format!(
                    "model {model:?} is not in ctxd's model catalogue: give its context_window (and max_output_tokens)"
                ));
            }
        };
        Ok(ModelProfile {
            context_window,
            max_output_tokens: i.max_output_tokens.unwrap_or_else(|| {
                entry.map_or_else(default_max_output, crate::models::default_max_output)
            }),
            supports_thinking: i
                .supports_thinking
                .unwrap_or_else(|| entry.is_none_or(|e| e.thinking)),
            model,
        })
    }
}

fn default_model() -> String {
    "claude-sonnet-4-5".into()
}
fn default_context_window() -> u64 {
    200_000
}
fn default_max_output() -> u64 {
    32_000
}

impl Default for ModelProfile {
    fn default() -> Self {
        ModelProfile {
            model: default_model(),
            context_window: default_context_window(),
            max_output_tokens: default_max_output(),
            supports_thinking: true,
        }
    }
}

/// How a dynamic system section is cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SectionCaching {
    /// Computed once; reset only by clear or compact.
    Memoized,
    /// Recomputed every turn; breaks the cache whenever it changes, so it needs a reason.
    Uncached,
}

/// One section of the system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SystemSection {
    pub name: String,
    /// The section's text (ignored when `source` computes it).
    #[serde(default)]
    pub text: String,
    /// Dynamic sections only; static sections are always part of the cached prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caching: Option<SectionCaching>,
    /// Required for `uncached` sections: why this section may break the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Computed by ctxd instead of given as `text`: `current_time` (the compile's instant
    /// in the daemon's time zone). Recomputed every compile when `uncached`, once when
    /// memoized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SectionSource>,
}

/// A section text ctxd computes itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SectionSource {
    /// `# Current time` with the compile's date, time and UTC offset.
    CurrentTime,
}

/// The client's system prompt: static sections before the dynamic boundary, dynamic
/// sections after it. Absent → ctxd's default agent contract.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SystemPrompt {
    #[serde(default, rename = "static")]
    pub static_sections: Vec<SystemSection>,
    #[serde(default, rename = "dynamic")]
    pub dynamic_sections: Vec<SystemSection>,
}

/// A tool schema registered by the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the input. Absent for server-side tools, which carry `type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<serde_json::Value>,
    /// Server-side tool type (e.g. `web_search_20250305`); sent after the regular tools.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub server_type: Option<String>,
    /// Results longer than `min(this, 50000)` characters are persisted; absent → never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_result_size_chars: Option<u64>,
    /// MCP server that provides the tool (MCP tools turn the system cache scope to org).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_server: Option<String>,
    /// Deferred tools are found through tool search instead of being sent in full.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub defer_loading: bool,
    /// Every other field of the tool definition (`strict`, `input_examples`,
    /// `allowed_callers`, a server tool's `max_uses`, `allowed_domains`,
    /// `user_location`, ...): sent in the tool as given.
    #[serde(flatten)]
    pub extra: crate::record::Extra,
}
