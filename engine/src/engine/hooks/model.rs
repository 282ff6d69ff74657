//! Hooks a model judges (`prompt`, and `agent` with its workspace tools): the call goes
//! through the session's provider; what the answer means is `hooks::prompt`'s.

use std::path::PathBuf;

use ctxd_protocol::{HookEvent, SessionSettings, SummariserConfig};
use serde_json::Value;

use super::Facts;
use crate::engine::compaction::summariser::resolve_summariser;

/// Asks the session's provider to judge a `prompt` hook's condition, within `timeout`.
pub(super) async fn prompt_hook(
    f: &Facts,
    event: HookEvent,
    hook: &crate::hooks::prompt::PromptHook,
    input: &[u8],
    timeout: std::time::Duration,
) -> crate::hooks::decide::RawRun {
    use crate::hooks::prompt;
    let started = std::time::Instant::now();
    let settings = SessionSettings {
        provider: f.provider.clone(),
        ..SessionSettings::default()
    };
    let cfg = SummariserConfig::Provider {
        model: hook.model.clone(),
        max_output_tokens: Some(prompt::MAX_ANSWER_TOKENS),
    };
    let user = prompt::user_message(hook, &String::from_utf8_lossy(input));
    let answer = async {
        let cfg = resolve_summariser(cfg, &settings, &f.model).map_err(|e| e.to_string())?;
        let model = crate::providers::Summariser::new(&cfg, None).map_err(|e| e.to_string())?;
        if hook.agent {
            return agent_hook(f, &model, &user).await;
        }
        model
            .complete(prompt::SYSTEM, &user)
            .await
            .map_err(|e| e.to_string())
    };
    let Ok(answer) = tokio::time::timeout(timeout, answer).await else {
        return crate::hooks::decide::RawRun {
            timed_out: true,
            duration: started.elapsed(),
            timeout,
            ..Default::default()
        };
    };
    prompt::to_run(event, answer, started.elapsed(), timeout)
}

/// An agent hook's turns: the model reads and searches the workspace with
/// `agent_tools` until it answers in text, within `MAX_AGENT_TURNS` calls.
async fn agent_hook(
    f: &Facts,
    model: &crate::providers::Summariser,
    user: &str,
) -> std::result::Result<String, String> {
    use crate::hooks::{agent_tools, prompt};
    let system = format!("{}\n\n{}", prompt::SYSTEM, prompt::AGENT_SYSTEM);
    let tools = agent_tools::definitions();
    let cwd = PathBuf::from(&f.cwd);
    let roots = crate::discovery::workspace_roots(&f.cwd, std::slice::from_ref(&f.project));
    let mut messages = vec![serde_json::json!({"role": "user", "content": user})];
    for _ in 0..ctxd_pipeline::limits::MAX_AGENT_HOOK_TURNS {
        let answer = model
            .converse(&system, &messages, &tools)
            .await
            .map_err(|e| e.to_string())?;
        let content = answer
            .get("content")
            .cloned()
            .unwrap_or_else(|| serde_json::json!([]));
        let blocks = content.as_array().cloned().unwrap_or_default();
        let calls: Vec<(String, String, Value)> = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
            .filter_map(|b| {
                Some((
                    b.get("id")?.as_str()?.to_owned(),
                    b.get("name")?.as_str()?.to_owned(),
                    b.get("input").cloned().unwrap_or(Value::Null),
                ))
            })
            .collect();
        if calls.is_empty() {
            let text: Vec<&str> = blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            return Ok(text.join("\n"));
        }
        let (c, r) = (cwd.clone(), roots.clone());
        let results = tokio::task::spawn_blocking(move || {
            calls
                .into_iter()
                .map(|(id, name, input)| {
                    let (text, is_error) = agent_tools::run(&name, &input, &c, &r);
                    serde_json::json!({"type": "tool_result", "tool_use_id": id,
                                       "content": text, "is_error": is_error})
                })
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| format!("agent hook tools: {e}"))?;
        messages.push(serde_json::json!({"role": "assistant", "content": content}));
        messages.push(serde_json::json!({"role": "user", "content": results}));
    }
    Err(format!(
        "the agent hook's model did not answer within {} turns",
        ctxd_pipeline::limits::MAX_AGENT_HOOK_TURNS
    ))
}
