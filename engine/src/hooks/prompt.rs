//! Hooks of type `prompt`: a model judges the event. The hook's `prompt` gets the event's
//! JSON in place of `$ARGUMENTS` (or after it, when the prompt has none); the model answers
//! `{"ok": true}` or `{"ok": false, "reason": "..."}`. The answer is read as a command
//! hook's output would be: `ok: false` on `Stop` and `SubagentStop` is a block whose
//! reason the model acts on; on any other event it stops the turn (`continue: false`)
//! with the reason shown to the user, as in Claude Code. An answer that is not such JSON
//! is a non-blocking error.
//!
//! The model is the session's provider (`settings.provider`), with the hook's `model` or
//! the session's; the call is the engine's to make, this module only builds the request
//! and reads the answer.

use std::time::Duration;

use ctxd_protocol::HookEvent;
use serde_json::{Value, json};

use super::decide::RawRun;

/// A `prompt` hook as its settings file gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PromptHook {
    pub(crate) prompt: String,
    pub(crate) model: Option<String>,
    /// A hook of type `agent`: the model may read and search the workspace
    /// (`agent_tools`) over several turns before it answers.
    pub(crate) agent: bool,
}

/// Claude Code's defaults for prompt and agent hooks.
pub(crate) const DEFAULT_PROMPT_TIMEOUT: Duration = Duration::from_secs(30);
pub(crate) const DEFAULT_AGENT_TIMEOUT: Duration = Duration::from_secs(60);

/// What an agent hook's model is told besides [`SYSTEM`].
pub(crate) const AGENT_SYSTEM: &str = "You may check the condition against the workspace with the Read, Glob and Grep tools before you answer; they read only. When you know, answer with the JSON object alone.";

/// The answer the model may write: small.
pub(crate) const MAX_ANSWER_TOKENS: u64 = 1_024;

/// What the model is told it is doing (our words).
pub(crate) const SYSTEM: &str = "You judge one condition for a coding agent's hook. Read the \
condition and the event it is about, decide whether the condition holds, and answer with \
one JSON object and nothing else: {\"ok\": true, \"reason\": \"...\"} when it holds and the \
agent may go on, {\"ok\": false, \"reason\": \"...\"} when it does not. The reason says why \
in a sentence; when ok is false it is what the agent (or the user) is told.";

/// The user message: the hook's prompt with the event's JSON in it.
pub(crate) fn user_message(hook: &PromptHook, input: &str) -> String {
    if hook.prompt.contains("$ARGUMENTS") {
        hook.prompt.replace("$ARGUMENTS", input)
    } else {
        format!("{}\n\nThe event:\n{input}", hook.prompt)
    }
}

/// The model's answer as a command hook's run: JSON output on stdout, exit 0; or a
/// non-blocking error naming what was wrong.
pub(crate) fn to_run(
    event: HookEvent,
    answer: Result<String, String>,
    took: Duration,
    timeout: Duration,
) -> RawRun {
    let run = |exit: i32, stdout: String, stderr: String| RawRun {
        exit_code: Some(exit),
        stdout,
        stderr,
        duration: took,
        timeout,
        ..RawRun::default()
    };
    let text = match answer {
        Ok(t) => t,
        Err(e) => {
            return run(
                1,
                String::new(),
                format!("the prompt hook's model call failed: {e}"),
            );
        }
    };
    let Some(verdict) = verdict(&text) else {
        return run(
            1,
            String::new(),
            format!(
                "the prompt hook's model did not answer {{\"ok\": ...}}: {}",
                text.trim()
            ),
        );
    };
    let output = match verdict {
        (true, _) => json!({}),
        (false, reason) => match event {
            HookEvent::Stop | HookEvent::SubagentStop => {
                json!({"decision": "block", "reason": reason})
            }
            _ => json!({"continue": false, "stopReason": reason}),
        },
    };
    run(0, output.to_string(), String::new())
}

/// `(ok, reason)` from the model's text: the JSON object in it (fenced or not).
pub(crate) fn verdict(text: &str) -> Option<(bool, String)> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    let v: Value = serde_json::from_str(text.get(start..=end)?).ok()?;
    let ok = v.get("ok")?.as_bool()?;
    let reason = v
        .get("reason")
        .and_then(Value::as_str)
        .filter(|r| !r.trim().is_empty())
        .unwrap_or(if ok { "" } else { "a prompt hook said no" })
        .to_string();
    Some((ok, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_goes_where_arguments_stands() {
        let h = PromptHook {
            prompt: "Is this safe? $ARGUMENTS".into(),
            model: None,
            agent: false,
        };
        assert_eq!(user_message(&h, "{\"a\":1}"), "Is this safe? {\"a\":1}");
        let h = PromptHook {
            prompt: "Are the tests green?".into(),
            model: None,
            agent: false,
        };
        assert!(user_message(&h, "{}").ends_with("The event:\n{}"));
    }

    #[test]
    fn answers_become_decisions_by_event() {
        let d = Duration::from_millis(5);
        let stop = to_run(
            HookEvent::Stop,
            Ok("{\"ok\": false, \"reason\": \"tests fail\"}".into()),
            d,
            d,
        );
        assert_eq!(stop.exit_code, Some(0));
        assert_eq!(
            serde_json::from_str::<Value>(&stop.stdout).unwrap(),
            json!({"decision": "block", "reason": "tests fail"})
        );
        let pre = to_run(
            HookEvent::PreToolUse,
            Ok("```json\n{\"ok\": false, \"reason\": \"no\"}\n```".into()),
            d,
            d,
        );
        assert_eq!(
            serde_json::from_str::<Value>(&pre.stdout).unwrap(),
            json!({"continue": false, "stopReason": "no"})
        );
        let ok = to_run(HookEvent::Stop, Ok("{\"ok\": true}".into()), d, d);
        assert_eq!(ok.stdout, "{}");
        let bad = to_run(HookEvent::Stop, Ok("sure, fine".into()), d, d);
        assert_eq!(bad.exit_code, Some(1));
        assert!(bad.stderr.contains("did not answer"));
        let failed = to_run(HookEvent::Stop, Err("401".into()), d, d);
        assert_eq!(failed.exit_code, Some(1));
    }
}
