//! Sessions: what the daemon reports of one, and the params that create, list, change,
//! fork, delete and import them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::prompt::{ModelProfile, SystemPrompt, ToolSpec};
use crate::settings::SessionSettings;
use crate::transcript::ImportStats;

/// A session as the daemon reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionInfo {
    pub session_id: String,
    pub cwd: String,
    pub original_cwd: String,
    pub model: ModelProfile,
    pub settings: SessionSettings,
    pub additional_directories: Vec<String>,
    /// The local date at session start (`YYYY-MM-DD`): `currentDate` in `messages[0]`.
    pub start_date: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from_uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// Number of records in the transcript.
    pub record_count: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_uuid: Option<String>,
    /// Set when the session is a sub-agent's thread (see `agent.start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentInfo>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionCreateParams {
    /// Working directory (absolute). The CLI passes its current directory.
    pub cwd: String,
    #[serde(default)]
    pub model: Option<ModelProfile>,
    #[serde(default)]
    pub settings: Option<SessionSettings>,
    #[serde(default)]
    pub additional_directories: Vec<String>,
    #[serde(default)]
    pub system: Option<SystemPrompt>,
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    #[serde(default)]
    pub title: Option<String>,
    /// Local date override (`YYYY-MM-DD`); defaults to today.
    #[serde(default)]
    pub start_date: Option<String>,
    /// Skip the git snapshot (imports of sessions from other machines).
    #[serde(default)]
    pub no_git: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionCreateResponse {
    pub session: SessionInfo,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionListParams {
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionListResponse {
    pub sessions: Vec<SessionInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionIdParams {
    pub session_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionGetResponse {
    pub session: SessionInfo,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionForkParams {
    pub session_id: String,
    /// Copy the transcript up to and including this record; absent → all of it.
    #[serde(default)]
    pub up_to_uuid: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionForkResponse {
    pub session: SessionInfo,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionDeleteResponse {
    pub deleted: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionUpdateParams {
    pub session_id: String,
    /// A new working directory (absolute). Resets the memoized user context, as a
    /// compaction does; discovery still walks from the original cwd.
    #[serde(default)]
    pub cwd: Option<String>,
    /// A JSON merge patch (RFC 7396) on the session's settings: objects merge key by
    /// key, `null` removes a key (it takes its default again), any other value replaces
    /// what was there. `{"snip_enabled": true}` changes that one setting only.
    #[serde(default)]
    #[schemars(with = "Option<SessionSettings>")]
    pub settings: Option<serde_json::Value>,
    #[serde(default)]
    pub model: Option<ModelProfile>,
    #[serde(default)]
    pub system: Option<SystemPrompt>,
    #[serde(default)]
    pub title: Option<String>,
}

impl SessionUpdateParams {
    /// An update of `session_id`'s settings alone, to `settings` wherever they set a
    /// value.
    pub fn settings(session_id: &str, settings: SessionSettings) -> SessionUpdateParams {
        SessionUpdateParams {
            session_id: session_id.to_string(),
            cwd: None,
            settings: serde_json::to_value(settings).ok(),
            model: None,
            system: None,
            title: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsSetParams {
    pub session_id: String,
    /// The complete tool list, in the order the model should see it.
    pub tools: Vec<ToolSpec>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolsSetResponse {
    pub count: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsListResponse {
    pub tools: Vec<ToolSpec>,
}

/// Import of a Claude Code JSONL transcript into a new session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionImportParams {
    /// The transcript's text, one JSON object per line. Empty when `path` names it.
    #[serde(default)]
    pub jsonl: String,
    /// The transcript's file, absolute, which the daemon reads itself (it runs on the
    /// caller's machine as the caller's user): a long transcript then never travels whole
    /// in a request, nor is held whole by the daemon. Instead of `jsonl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Working directory for the new session; defaults to the transcript's `cwd`.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Used when neither `cwd` nor the transcript names a working directory.
    #[serde(default)]
    pub fallback_cwd: Option<String>,
    #[serde(default)]
    pub model: Option<ModelProfile>,
    #[serde(default)]
    pub title: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionImportResponse {
    pub session_id: String,
    pub session: SessionInfo,
    pub stats: ImportStats,
}

/// Applies a JSON merge patch (RFC 7396) to `target`.
pub fn merge_patch(target: &mut serde_json::Value, patch: serde_json::Value) {
    use serde_json::Value;
    match patch {
        Value::Object(fields) => {
            if !target.is_object() {
                *target = Value::Object(serde_json::Map::new());
            }
            if let Value::Object(t) = target {
                for (k, v) in fields {
                    if v.is_null() {
                        t.remove(&k);
                    } else {
                        merge_patch(t.entry(k).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *target = other,
    }
}

#[cfg(test)]
mod merge_tests {
    use super::merge_patch;
    use serde_json::json;

    #[test]
    fn rfc_7396_examples() {
        let mut t = json!({"a": "b", "c": {"d": "e", "f": "g"}});
        merge_patch(&mut t, json!({"a": "z", "c": {"f": null}}));
        assert_eq!(t, json!({"a": "z", "c": {"d": "e"}}));
        let mut t = json!({"a": [1]});
        merge_patch(&mut t, json!({"a": {"b": 1}}));
        assert_eq!(t, json!({"a": {"b": 1}}));
        let mut t = json!({"a": 1});
        merge_patch(&mut t, json!({"b": null}));
        assert_eq!(t, json!({"a": 1}));
    }
}

/// What a session row says of the sub-agent whose thread it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentInfo {
    /// Unique within the parent session.
    pub agent_id: String,
    /// The agent's type (`general-purpose`, `Explore`, ...): what SubagentStart and
    /// SubagentStop matchers match.
    pub agent_type: String,
    /// The session that started it.
    pub parent_session_id: String,
    /// The parent's `tool_use` whose result the agent's answer becomes.
    pub tool_use_id: String,
    /// Set by `agent.finish`: when the answer went to the parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// The uuid of the parent's record holding the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_uuid: Option<String>,
}
