//! Events the client reports over `hooks.*`, and what each outcome appends
//! for the model:
//!
//! | event | matcher value | appended |
//! |---|---|---|
//! | `PreToolUse` | tool name | context (a denial is the client's tool_result to write) |
//! | `PostToolUse` | tool name | context, and blocking feedback |
//! | `UserPromptSubmit` | — | nothing (`transcript.append` runs these hooks itself) |
//! | `SessionStart` (`resume`, `clear`) | source | context |
//! | `Stop` | — | blocking feedback (the model continues with it) |
//! | `SubagentStart`, `SubagentStop` | agent type | nothing: the sub-agent's context is returned |
//! | `StopFailure`, `Notification` | error, notification type | nothing |

use ctxd_protocol::*;
use serde_json::json;

use super::{context_record, feedback_record, fields};
use crate::engine::Engine;
use ctxd_store::error::{Error, Result};

/// What an outcome may append.
#[derive(Clone, Copy)]
struct Appends {
    context: bool,
    feedback: bool,
}

const NOTHING: Appends = Appends {
    context: false,
    feedback: false,
};

fn non_empty(field: &str, v: &str) -> Result<()> {
    if v.trim().is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    Ok(())
}

fn object(field: &str, v: &serde_json::Value) -> Result<()> {
    if !v.is_object() {
        return Err(Error::invalid(field, "must be a JSON object"));
    }
    Ok(())
}

/// The input of a tool-call event (`PreToolUse`, `PostToolUse`, `PermissionRequest`):
/// the tool's name and input, checked, and the call's id.
fn tool_call(
    tool_name: &str,
    tool_input: serde_json::Value,
    tool_use_id: Option<&str>,
) -> Result<serde_json::Map<String, serde_json::Value>> {
    non_empty("tool_name", tool_name)?;
    object("tool_input", &tool_input)?;
    Ok(fields([
        ("tool_name", json!(tool_name)),
        ("tool_input", tool_input),
        ("tool_use_id", json!(tool_use_id)),
    ]))
}

impl Engine {
    /// `hooks.list`.
    pub async fn hooks_list(&self, sid: &str) -> Result<HooksListResponse> {
        let f = self.hook_facts(sid).await?;
        let eff = self.hook_config(&f);
        let layers = self.hooks.layers(sid);
        let mut list = crate::hooks::config::listing(&layers, &eff);
        if f.disabled {
            list.all_disabled = Some("settings.hooks.disabled is set for this session".into());
            for h in &mut list.hooks {
                h.active = false;
                h.inactive_reason
                    .get_or_insert_with(|| "settings.hooks.disabled".into());
            }
        }
        Ok(list)
    }

    async fn client_event(
        &self,
        sid: &str,
        event: HookEvent,
        value: Option<&str>,
        input: serde_json::Map<String, serde_json::Value>,
        appends: Appends,
    ) -> Result<HookOutcome> {
        let mut outcome = self.run_hooks_for(sid, event, value, input).await?;
        let ts = self.now_text();
        let mut records = Vec::new();
        if appends.context && !outcome.additional_context.is_empty() {
            records.push(context_record(event, &outcome.additional_context, &ts));
        }
        if appends.feedback
            && outcome.decision.as_deref() == Some("block")
            && let Some(r) = feedback_record(event, &outcome, &ts)
        {
            records.push(r);
        }
        let (appended, last) = self.append_hook_records(sid, records).await?;
        outcome.appended = appended;
        outcome.last_uuid = last;
        Ok(outcome)
    }

    pub async fn hooks_pre_tool_use(&self, p: PreToolUseParams) -> Result<HookOutcome> {
        let input = tool_call(&p.tool_name, p.tool_input, p.tool_use_id.as_deref())?;
        let appends = Appends {
            context: true,
            feedback: false,
        };
        self.client_event(
            &p.session_id,
            HookEvent::PreToolUse,
            Some(&p.tool_name),
            input,
            appends,
        )
        .await
    }

    pub async fn hooks_post_tool_use(&self, p: PostToolUseParams) -> Result<HookOutcome> {
        let mut input = tool_call(&p.tool_name, p.tool_input, p.tool_use_id.as_deref())?;
        if !p.tool_response.is_null() {
            input.insert("tool_response".into(), p.tool_response);
        }
        let appends = Appends {
            context: true,
            feedback: true,
        };
        self.client_event(
            &p.session_id,
            HookEvent::PostToolUse,
            Some(&p.tool_name),
            input,
            appends,
        )
        .await
    }

    pub async fn hooks_user_prompt_submit(&self, p: UserPromptSubmitParams) -> Result<HookOutcome> {
        let input = fields([("prompt", json!(p.prompt))]);
        self.client_event(
            &p.session_id,
            HookEvent::UserPromptSubmit,
            None,
            input,
            NOTHING,
        )
        .await
    }

    pub async fn hooks_session_start(&self, p: SessionStartParams) -> Result<HookOutcome> {
        let f = self.hook_facts(&p.session_id).await?;
        let input = fields([
            ("source", json!(p.source.as_str())),
            ("model", json!(f.model)),
        ]);
        let appends = Appends {
            context: true,
            feedback: false,
        };
        self.client_event(
            &p.session_id,
            HookEvent::SessionStart,
            Some(p.source.as_str()),
            input,
            appends,
        )
        .await
    }

    pub async fn hooks_stop(&self, p: StopParams) -> Result<HookOutcome> {
        let input = fields([
            ("stop_hook_active", json!(p.stop_hook_active)),
            ("last_assistant_message", json!(p.last_assistant_message)),
        ]);
        let appends = Appends {
            context: false,
            feedback: true,
        };
        self.client_event(&p.session_id, HookEvent::Stop, None, input, appends)
            .await
    }

    pub async fn hooks_stop_failure(&self, p: StopFailureParams) -> Result<HookOutcome> {
        non_empty("error", &p.error)?;
        let input = fields([
            ("error", json!(p.error)),
            ("error_details", json!(p.error_details)),
            ("last_assistant_message", json!(p.last_assistant_message)),
        ]);
        self.client_event(
            &p.session_id,
            HookEvent::StopFailure,
            Some(&p.error),
            input,
            NOTHING,
        )
        .await
    }

    pub async fn hooks_subagent_start(&self, p: SubagentStartParams) -> Result<HookOutcome> {
        non_empty("agent_type", &p.agent_type)?;
        let input = fields([
            ("agent_id", json!(p.agent_id)),
            ("agent_type", json!(p.agent_type)),
        ]);
        self.client_event(
            &p.session_id,
            HookEvent::SubagentStart,
            Some(&p.agent_type),
            input,
            NOTHING,
        )
        .await
    }

    pub async fn hooks_subagent_stop(&self, p: SubagentStopParams) -> Result<HookOutcome> {
        non_empty("agent_type", &p.agent_type)?;
        let input = fields([
            ("stop_hook_active", json!(p.stop_hook_active)),
            ("agent_id", json!(p.agent_id)),
            ("agent_type", json!(p.agent_type)),
            ("agent_transcript_path", json!(p.agent_transcript_path)),
            ("last_assistant_message", json!(p.last_assistant_message)),
        ]);
        self.client_event(
            &p.session_id,
            HookEvent::SubagentStop,
            Some(&p.agent_type),
            input,
            NOTHING,
        )
        .await
    }

    pub async fn hooks_notification(&self, p: NotificationParams) -> Result<HookOutcome> {
        let input = fields([
            ("message", json!(p.message)),
            ("title", json!(p.title)),
            ("notification_type", json!(p.notification_type)),
        ]);
        let value = p.notification_type.clone();
        self.client_event(
            &p.session_id,
            HookEvent::Notification,
            value.as_deref(),
            input,
            NOTHING,
        )
        .await
    }

    /// `hooks.session_end`: the session ends; what the hooks say is ignored.
    pub async fn hooks_session_end(&self, p: SessionEndParams) -> Result<HookOutcome> {
        let reason = p.reason.unwrap_or_else(|| "other".into());
        let input = fields([("reason", json!(reason))]);
        self.client_event(
            &p.session_id,
            HookEvent::SessionEnd,
            Some(&reason),
            input,
            NOTHING,
        )
        .await
    }

    /// `hooks.permission_request`: before the user is asked to allow a tool call.
    pub async fn hooks_permission_request(
        &self,
        p: PermissionRequestParams,
    ) -> Result<HookOutcome> {
        let input = tool_call(&p.tool_name, p.tool_input, p.tool_use_id.as_deref())?;
        self.client_event(
            &p.session_id,
            HookEvent::PermissionRequest,
            Some(&p.tool_name),
            input,
            NOTHING,
        )
        .await
    }
}
