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
    env: &ctxd_providers::EnvLookup,
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
        let model = ctxd_providers::Summariser::with_env(&cfg, None, env.clone())
            .map_err(|e| e.to_string())?;
        if hook.agent {
            let work = std::sync::Arc::new(crate::hooks::agent_tools::Work::default());
            return agent_hook(f, &model, &user, work).await;
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
/// `agent_tools` until it answers in text, within `MAX_AGENT_TURNS` calls. Dropping the
/// future (the hook's timeout) cancels the tool calls still running.
async fn agent_hook(
    f: &Facts,
    model: &ctxd_providers::Summariser,
    user: &str,
    work: std::sync::Arc<crate::hooks::agent_tools::Work>,
) -> std::result::Result<String, String> {
    use crate::hooks::{agent_tools, prompt};
    use ctxd_pipeline::limits::MAX_AGENT_TOOL_CALLS_PER_ANSWER;
    let _cancel = agent_tools::CancelOnDrop(work.clone());
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
        let (c, r, w) = (cwd.clone(), roots.clone(), work.clone());
        let results = tokio::task::spawn_blocking(move || {
            calls
                .into_iter()
                .enumerate()
                .map(|(i, (id, name, input))| {
                    // Every call gets its result, as the API wants; past the bound the
                    // result says why it did not run.
                    let (text, is_error) = if i < MAX_AGENT_TOOL_CALLS_PER_ANSWER {
                        agent_tools::run(&name, &input, &c, &r, &w)
                    } else {
                        (format!("not run: at most {MAX_AGENT_TOOL_CALLS_PER_ANSWER} tool calls of one answer run; ask for the rest in the next"), true)
                    };
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

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use serde_json::{Value, json};
    use wiremock::matchers::{body_string_contains, method};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use super::*;
    use crate::hooks::agent_tools::Work;
    use ctxd_pipeline::limits::MAX_AGENT_TOOL_CALLS_PER_ANSWER;
    use ctxd_providers::Summariser;

    fn facts(cwd: &Path) -> Facts {
        let cwd = cwd.display().to_string();
        Facts {
            id: "s".into(),
            cwd: cwd.clone(),
            project: cwd,
            model: "claude-test".into(),
            disabled: false,
            transcript_path: None,
            plan_mode: false,
            provider: None,
        }
    }

    /// A scripted Messages API: `calls` (tool_use blocks) first, a verdict once the
    /// tool results come back.
    async fn scripted(calls: Vec<Value>) -> (MockServer, Summariser) {
        let server = MockServer::start().await;
        let message = |content: Value| {
            ResponseTemplate::new(200).set_body_json(json!({
                "id": "msg_a", "type": "message", "role": "assistant", "model": "claude-test",
                "content": content, "stop_reason": "end_turn", "stop_sequence": null,
                "usage": {"input_tokens": 1, "output_tokens": 1}}))
        };
        Mock::given(method("POST"))
            .and(body_string_contains("tool_result"))
            .respond_with(message(json!([{"type": "text", "text": "{\"ok\": true}"}])))
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(message(Value::Array(calls)))
            .with_priority(2)
            .mount(&server)
            .await;
        let cfg = SummariserConfig::Anthropic {
            base_url: Some(server.uri()),
            api_key_env: "CTXD_TEST_AGENT_KEY".into(),
            model: "claude-test".into(),
            timeout_secs: Some(30),
            max_retries: Some(0),
            max_output_tokens: Some(1_000),
        };
        let model = Summariser::with_env(
            &cfg,
            None,
            ctxd_providers::EnvLookup::vars(|_| Some("sk-test".into())),
        )
        .expect("summariser");
        (server, model)
    }

    fn tool_use(i: usize, name: &str, input: Value) -> Value {
        json!({"type": "tool_use", "id": format!("toolu_{i}"), "name": name, "input": input})
    }

    #[tokio::test]
    async fn one_answer_runs_a_bounded_number_of_tool_calls_and_answers_every_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.txt"), "hello\n").unwrap();
        let asked = MAX_AGENT_TOOL_CALLS_PER_ANSWER + 24;
        let calls = (0..asked)
            .map(|i| tool_use(i, "Read", json!({"file_path": "a.txt"})))
            .collect();
        let (server, model) = scripted(calls).await;
        let work = Arc::new(Work::default());
        let verdict = agent_hook(&facts(&root), &model, "Done?", work).await;
        assert_eq!(verdict.unwrap(), "{\"ok\": true}");
        let requests = server.received_requests().await.unwrap();
        let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
        let results = second["messages"][2]["content"].as_array().unwrap();
        assert_eq!(results.len(), asked, "every call is answered");
        let ran = results.iter().filter(|r| r["is_error"] == false).count();
        assert_eq!(ran, MAX_AGENT_TOOL_CALLS_PER_ANSWER);
        assert!(
            results[asked - 1]["content"]
                .as_str()
                .unwrap()
                .contains("not run"),
            "{}",
            results[asked - 1]
        );
    }

    /// The tools run on a blocking thread the hook's timeout cannot abort: dropping the
    /// hook (what its timeout does) must stop their walks at the next entry.
    #[tokio::test]
    async fn a_dropped_agent_hook_stops_its_tool_calls() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        const FILES: usize = 500;
        for i in 0..FILES {
            std::fs::write(root.join(format!("{i}.txt")), "").unwrap();
        }
        let calls = (0..MAX_AGENT_TOOL_CALLS_PER_ANSWER)
            .map(|i| tool_use(i, "Grep", json!({"pattern": "never", "glob": "*.none"})))
            .collect();
        let (_server, model) = scripted(calls).await;
        let work = Arc::new(Work::default());
        let f = facts(&root);
        let hook = agent_hook(&f, &model, "Done?", work.clone());
        let walking = async {
            while work.visited() < 100 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        };
        tokio::select! {
            verdict = hook => panic!("the hook ended before it was dropped: {verdict:?}"),
            () = walking => {}
        }
        let at_drop = work.visited();
        // The blocking task holds a clone of the work until it returns.
        let deadline = Instant::now() + Duration::from_secs(20);
        while Arc::strong_count(&work) > 1 {
            assert!(Instant::now() < deadline, "the tool calls did not stop");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let total = work.visited();
        assert!(
            total <= at_drop + 1,
            "{} entries visited after the hook was dropped",
            total - at_drop
        );
        assert!(total < FILES * MAX_AGENT_TOOL_CALLS_PER_ANSWER, "{total}");
    }
}
