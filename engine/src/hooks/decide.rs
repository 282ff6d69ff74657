//! What a hook's exit code and output mean, pure (Claude Code's contract):
//!
//! - exit 0: stdout that is a JSON object is the hook's answer (`continue`,
//!   `stopReason`, `suppressOutput`, `systemMessage`, `decision` + `reason`,
//!   `hookSpecificOutput`); other stdout is additional context for `SessionStart` and
//!   `UserPromptSubmit`, and shown to no one otherwise. `PreCompact`'s stdout, whatever
//!   it is, is text for the compaction's instructions (carried as its additional
//!   context);
//! - exit 2: a blocking error whose stderr goes to the model (`PreToolUse` denies the
//!   call, `UserPromptSubmit` refuses the prompt, `PostToolUse`, `Stop` and
//!   `SubagentStop` feed it back); for events that cannot block it is shown to the user;
//! - any other exit, a timeout, output that is not valid hook JSON: a non-blocking error
//!   shown to the user.
//!
//! Hooks of one event run in parallel; [`merge`] combines their results in
//! configuration order, so the outcome never depends on which finished first.

use std::time::Duration;

use ctxd_protocol::{HookEvent, HookOutcome, HookRunReport};
use serde_json::{Map, Value};

/// What the runner observed of one hook process.
#[derive(Debug, Clone, Default)]
pub(crate) struct RawRun {
    pub(crate) exit_code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) output_cut: bool,
    pub(crate) timed_out: bool,
    pub(crate) duration: Duration,
    /// The process could not be started at all.
    pub(crate) spawn_error: Option<String>,
    /// The timeout that applied (for the message).
    pub(crate) timeout: Duration,
}

/// `PreToolUse` permission decisions, in increasing strength.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Permission {
    Allow,
    Ask,
    Deny,
}

impl Permission {
    fn parse(s: &str) -> Option<Permission> {
        match s {
            "allow" => Some(Permission::Allow),
            "ask" => Some(Permission::Ask),
            "deny" => Some(Permission::Deny),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Permission::Allow => "allow",
            Permission::Ask => "ask",
            Permission::Deny => "deny",
        }
    }
}

/// One hook's result, interpreted for its event.
#[derive(Debug, Clone)]
pub(crate) struct HookResult {
    pub(crate) report: HookRunReport,
    /// Blocking feedback (exit 2 stderr, or `decision: "block"` with its reason).
    pub(crate) blocking: Option<String>,
    pub(crate) permission: Option<(Permission, Option<String>)>,
    pub(crate) updated_input: Option<Value>,
    pub(crate) additional_context: Option<String>,
    pub(crate) continue_: bool,
    pub(crate) stop_reason: Option<String>,
    pub(crate) suppress_output: bool,
    pub(crate) system_message: Option<String>,
}

/// Events whose exit code 2 / `decision: "block"` blocks something.
pub(crate) fn can_block(event: HookEvent) -> bool {
    matches!(
        event,
        HookEvent::PreToolUse
            | HookEvent::UserPromptSubmit
            | HookEvent::PostToolUse
            | HookEvent::Stop
            | HookEvent::SubagentStop
            | HookEvent::PermissionRequest
    )
}

/// Events whose hooks decide a permission (deny beats ask beats allow).
fn decides_permission(event: HookEvent) -> bool {
    matches!(event, HookEvent::PreToolUse | HookEvent::PermissionRequest)
}

/// Events whose plain (non-JSON) stdout on exit 0 is context for the model.
fn plain_stdout_is_context(event: HookEvent) -> bool {
    matches!(event, HookEvent::SessionStart | HookEvent::UserPromptSubmit)
}

/// Events that accept `hookSpecificOutput.additionalContext`.
fn takes_additional_context(event: HookEvent) -> bool {
    matches!(
        event,
        HookEvent::SessionStart
            | HookEvent::UserPromptSubmit
            | HookEvent::PreToolUse
            | HookEvent::PostToolUse
            | HookEvent::SubagentStart
    )
}

/// Events whose output and exit code are ignored (observability only).
fn output_ignored(event: HookEvent) -> bool {
    matches!(
        event,
        HookEvent::InstructionsLoaded | HookEvent::StopFailure | HookEvent::SessionEnd
    )
}

fn empty_result(command: &str, source: &str, raw: &RawRun) -> HookResult {
    HookResult {
        report: HookRunReport {
            command: command.into(),
            source: source.into(),
            exit_code: raw.exit_code,
            timed_out: raw.timed_out,
            duration_ms: ctxd_pipeline::saturate::millis(raw.duration),
            decision: None,
            output_cut: raw.output_cut,
            error: None,
        },
        blocking: None,
        permission: None,
        updated_input: None,
        additional_context: None,
        continue_: true,
        stop_reason: None,
        suppress_output: false,
        system_message: None,
    }
}

fn stderr_or(raw: &RawRun, fallback: &str) -> String {
    let t = raw.stderr.trim();
    if t.is_empty() {
        fallback.to_string()
    } else {
        t.to_string()
    }
}

/// Interprets one hook run for `event`.
pub(crate) fn interpret(event: HookEvent, command: &str, source: &str, raw: &RawRun) -> HookResult {
    let mut r = empty_result(command, source, raw);
    if let Some(e) = &raw.spawn_error {
        r.report.error = Some(format!("could not start the hook: {e}"));
        return r;
    }
    if raw.timed_out {
        r.report.error = Some(format!(
            "timed out after {} s; its process group was killed",
            raw.timeout.as_secs_f64()
        ));
        return r;
    }
    match raw.exit_code {
        Some(0) => {}
        Some(2) if output_ignored(event) => return r,
        Some(2) if decides_permission(event) => {
            let reason = stderr_or(raw, &format!("denied by a {event} hook (no stderr)"));
            r.report.decision = Some("deny".into());
            r.permission = Some((Permission::Deny, Some(reason)));
            return r;
        }
        Some(2) if can_block(event) => {
            r.report.decision = Some("block".into());
            r.blocking = Some(stderr_or(raw, "blocked by a hook (no stderr)"));
            return r;
        }
        Some(2) => {
            r.report.error = Some(stderr_or(raw, "exited with code 2"));
            return r;
        }
        Some(code) => {
            let err = raw.stderr.trim();
            r.report.error = Some(if err.is_empty() {
                format!("exited with code {code}")
            } else {
                format!("exited with code {code}: {err}")
            });
            return r;
        }
        None => {
            r.report.error = Some("killed by a signal".into());
            return r;
        }
    }
    if output_ignored(event) {
        return r;
    }
    let out = raw.stdout.trim();
    if event == HookEvent::PreCompact {
        // Claude Code appends a successful PreCompact hook's stdout, as written, to the
        // compaction's custom instructions.
        if !out.is_empty() {
            r.additional_context = Some(out.to_string());
        }
        return r;
    }
    let json = if out.starts_with('{') {
        serde_json::from_str::<Value>(out).ok()
    } else {
        None
    };
    match json {
        Some(Value::Object(obj)) => {
            if let Err(e) = apply_json(event, &obj, &mut r) {
                r.report.error = Some(format!("its JSON output was ignored: {e}"));
                r.blocking = None;
                r.permission = None;
                r.updated_input = None;
                r.additional_context = None;
                r.report.decision = None;
            }
        }
        _ if plain_stdout_is_context(event) && !out.is_empty() => {
            r.additional_context = Some(out.to_string());
        }
        _ => {}
    }
    r
}

fn opt_str<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!("{key} must be a string, not {other}")),
    }
}

fn opt_bool(obj: &Map<String, Value>, key: &str) -> Result<Option<bool>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(format!("{key} must be true or false, not {other}")),
    }
}

/// Claude Code's JSON output schema. Any malformed field voids the whole answer (an
/// answer half understood is worse than none).
fn apply_json(
    event: HookEvent,
    obj: &Map<String, Value>,
    r: &mut HookResult,
) -> Result<(), String> {
    if let Some(c) = opt_bool(obj, "continue")? {
        r.continue_ = c;
    }
    r.stop_reason = opt_str(obj, "stopReason")?.map(str::to_string);
    r.suppress_output = opt_bool(obj, "suppressOutput")?.unwrap_or(false);
    r.system_message = opt_str(obj, "systemMessage")?.map(str::to_string);
    let reason = opt_str(obj, "reason")?.map(str::to_string);
    match opt_str(obj, "decision")? {
        None => {}
        Some("block") if event == HookEvent::PreToolUse => {
            r.permission = Some((Permission::Deny, reason.clone()));
            r.report.decision = Some("deny".into());
        }
        Some("approve") if event == HookEvent::PreToolUse => {
            r.permission = Some((Permission::Allow, reason.clone()));
            r.report.decision = Some("allow".into());
        }
        Some("block") if can_block(event) => {
            r.blocking = Some(
                reason
                    .clone()
                    .unwrap_or_else(|| format!("blocked by a {event} hook (no reason given)")),
            );
            r.report.decision = Some("block".into());
        }
        // `decision` means nothing for this event: ignored, as Claude Code does.
        Some("block" | "approve") => {}
        Some(other) => {
            return Err(format!(
                "decision must be \"block\" or \"approve\", not {other:?}"
            ));
        }
    }
    let specific = match obj.get("hookSpecificOutput") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(o)) => o,
        Some(_) => return Err("hookSpecificOutput must be an object".into()),
    };
    match opt_str(specific, "hookEventName")? {
        Some(name) if name != event.as_str() => {
            return Err(format!(
                "hookSpecificOutput.hookEventName is {name:?} but the event is {event}"
            ));
        }
        _ => {}
    }
    if takes_additional_context(event)
        && let Some(ctx) = opt_str(specific, "additionalContext")?
        && !ctx.trim().is_empty()
    {
        r.additional_context = Some(ctx.to_string());
    }
    if event == HookEvent::PermissionRequest {
        match specific.get("decision") {
            None | Some(Value::Null) => {}
            Some(Value::Object(d)) => {
                let behavior = opt_str(d, "behavior")?.unwrap_or("");
                let p = match behavior {
                    "allow" => Permission::Allow,
                    "deny" => Permission::Deny,
                    other => {
                        return Err(format!(
                            "decision.behavior must be allow or deny, not {other:?}"
                        ));
                    }
                };
                let why = opt_str(d, "message")?.map(str::to_string);
                r.permission = Some((p, why));
                r.report.decision = Some(p.as_str().into());
                match d.get("updatedInput") {
                    None | Some(Value::Null) => {}
                    Some(v @ Value::Object(_)) => r.updated_input = Some(v.clone()),
                    Some(_) => return Err("decision.updatedInput must be an object".into()),
                }
                if opt_bool(d, "interrupt")? == Some(true) {
                    r.continue_ = false;
                }
            }
            Some(_) => return Err("hookSpecificOutput.decision must be an object".into()),
        }
    }
    if event == HookEvent::PreToolUse {
        if let Some(d) = opt_str(specific, "permissionDecision")? {
            let p = Permission::parse(d).ok_or_else(|| {
                format!("permissionDecision must be allow, deny or ask, not {d:?}")
            })?;
            let why = opt_str(specific, "permissionDecisionReason")?.map(str::to_string);
            r.permission = Some((p, why));
            r.report.decision = Some(p.as_str().into());
        }
        match specific.get("updatedInput") {
            None | Some(Value::Null) => {}
            Some(v @ Value::Object(_)) => r.updated_input = Some(v.clone()),
            Some(_) => return Err("updatedInput must be an object".into()),
        }
    }
    Ok(())
}

fn joined(parts: Vec<String>) -> Option<String> {
    if parts.is_empty() {
        None
    } else {
        Some(parts.join("\n"))
    }
}

/// Merges the results of one event's hooks, given in configuration order.
///
/// `PreToolUse` and `PermissionRequest`: deny beats ask beats allow, the reasons of the
/// winning decision are joined; the first `updatedInput` (in configuration order)
/// applies unless the call is denied. Other events: any blocking hook blocks, with every
/// blocking reason.
pub(crate) fn merge(event: HookEvent, results: &[HookResult]) -> HookOutcome {
    let mut out = HookOutcome::nothing();
    out.ran = ctxd_pipeline::saturate::u32_of(results.len());
    if decides_permission(event) {
        let strongest = results
            .iter()
            .filter_map(|r| r.permission.as_ref().map(|p| p.0))
            .max();
        if let Some(p) = strongest {
            out.decision = Some(p.as_str().into());
            out.reason = joined(
                results
                    .iter()
                    .filter_map(|r| r.permission.as_ref())
                    .filter(|(q, _)| *q == p)
                    .filter_map(|(_, why)| why.clone())
                    .collect(),
            );
        }
        if strongest != Some(Permission::Deny) {
            out.updated_input = results.iter().find_map(|r| r.updated_input.clone());
        }
    } else {
        let blocks: Vec<String> = results.iter().filter_map(|r| r.blocking.clone()).collect();
        if !blocks.is_empty() {
            out.decision = Some("block".into());
            out.reason = joined(blocks);
        }
    }
    for r in results {
        if let Some(c) = &r.additional_context {
            out.additional_context.push(c.clone());
        }
        if !r.continue_ {
            out.continue_ = false;
            if out.stop_reason.is_none() {
                out.stop_reason.clone_from(&r.stop_reason);
            }
        }
        out.suppress_output |= r.suppress_output;
        if let Some(m) = &r.system_message {
            out.system_messages.push(m.clone());
        }
        if let Some(e) = &r.report.error {
            out.errors.push(format!("{}: {e}", r.report.command));
        }
        out.results.push(r.report.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(code: i32, stdout: &str, stderr: &str) -> RawRun {
        RawRun {
            exit_code: Some(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
            timeout: Duration::from_secs(60),
            ..RawRun::default()
        }
    }

    fn one(event: HookEvent, raw: RawRun) -> HookResult {
        interpret(event, "cmd", "project", &raw)
    }

    #[test]
    fn plain_stdout_is_context_only_where_claude_code_says_so() {
        let r = one(HookEvent::SessionStart, run(0, "  TEXT\n", ""));
        assert_eq!(r.additional_context.as_deref(), Some("TEXT"));
        let r = one(HookEvent::UserPromptSubmit, run(0, "more", ""));
        assert_eq!(r.additional_context.as_deref(), Some("more"));
        let r = one(HookEvent::PostToolUse, run(0, "log line", ""));
        assert!(r.additional_context.is_none());
        assert!(r.report.error.is_none());
    }

    #[test]
    fn json_additional_context() {
        let out =
            r#"{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"TEXT"}}"#;
        let r = one(HookEvent::SessionStart, run(0, out, ""));
        assert_eq!(r.additional_context.as_deref(), Some("TEXT"));
        // The wrong event name voids the answer.
        let r = one(HookEvent::UserPromptSubmit, run(0, out, ""));
        assert!(r.additional_context.is_none());
        assert!(r.report.error.unwrap().contains("SessionStart"));
    }

    #[test]
    fn exit_2_blocks_where_the_event_can_block() {
        let r = one(HookEvent::UserPromptSubmit, run(2, "", "REASON\n"));
        assert_eq!(r.blocking.as_deref(), Some("REASON"));
        assert_eq!(r.report.decision.as_deref(), Some("block"));
        let r = one(HookEvent::PreToolUse, run(2, "", "no rm"));
        assert_eq!(r.permission, Some((Permission::Deny, Some("no rm".into()))));
        // SessionStart cannot block: stderr is shown to the user.
        let r = one(HookEvent::SessionStart, run(2, "", "oops"));
        assert!(r.blocking.is_none());
        assert_eq!(r.report.error.as_deref(), Some("oops"));
        // InstructionsLoaded ignores everything.
        let r = one(HookEvent::InstructionsLoaded, run(2, "{}", "x"));
        assert!(r.blocking.is_none() && r.report.error.is_none());
    }

    #[test]
    fn other_exit_codes_and_timeouts_are_non_blocking_errors() {
        let r = one(HookEvent::PreToolUse, run(1, "", "bad"));
        assert!(r.permission.is_none());
        assert_eq!(r.report.error.as_deref(), Some("exited with code 1: bad"));
        let mut raw = run(0, "", "");
        raw.exit_code = None;
        raw.timed_out = true;
        raw.timeout = Duration::from_secs(2);
        let r = one(HookEvent::Stop, raw);
        assert!(r.report.error.unwrap().contains("timed out after 2 s"));
        assert!(r.blocking.is_none());
    }

    #[test]
    fn decision_block_and_the_deprecated_pretooluse_decisions() {
        let r = one(
            HookEvent::Stop,
            run(0, r#"{"decision":"block","reason":"tests fail"}"#, ""),
        );
        assert_eq!(r.blocking.as_deref(), Some("tests fail"));
        let r = one(
            HookEvent::PreToolUse,
            run(0, r#"{"decision":"approve","reason":"fine"}"#, ""),
        );
        assert_eq!(r.permission, Some((Permission::Allow, Some("fine".into()))));
        let r = one(HookEvent::PreToolUse, run(0, r#"{"decision":"block"}"#, ""));
        assert_eq!(r.permission.unwrap().0, Permission::Deny);
        // Meaningless for SessionStart: ignored, not an error.
        let r = one(
            HookEvent::SessionStart,
            run(0, r#"{"decision":"block"}"#, ""),
        );
        assert!(r.blocking.is_none() && r.report.error.is_none());
        let r = one(HookEvent::Stop, run(0, r#"{"decision":"maybe"}"#, ""));
        assert!(r.report.error.unwrap().contains("decision"));
    }

    #[test]
    fn pretooluse_permission_and_updated_input() {
        let out = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask",
            "permissionDecisionReason":"check","updatedInput":{"command":"ls -la"},"additionalContext":"note"}}"#;
        let r = one(HookEvent::PreToolUse, run(0, out, ""));
        assert_eq!(r.permission, Some((Permission::Ask, Some("check".into()))));
        assert_eq!(r.updated_input.unwrap()["command"], "ls -la");
        assert_eq!(r.additional_context.as_deref(), Some("note"));
        let bad = r#"{"hookSpecificOutput":{"permissionDecision":"maybe"}}"#;
        let r = one(HookEvent::PreToolUse, run(0, bad, ""));
        assert!(r.permission.is_none());
        assert!(r.report.error.is_some());
    }

    #[test]
    fn continue_false_and_system_message() {
        let r = one(
            HookEvent::PostToolUse,
            run(
                0,
                r#"{"continue":false,"stopReason":"enough","systemMessage":"hi","suppressOutput":true}"#,
                "",
            ),
        );
        assert!(!r.continue_);
        assert_eq!(r.stop_reason.as_deref(), Some("enough"));
        assert_eq!(r.system_message.as_deref(), Some("hi"));
        assert!(r.suppress_output);
    }

    #[test]
    fn precompact_stdout_is_instructions_as_written() {
        let r = one(HookEvent::PreCompact, run(0, " keep the API notes \n", ""));
        assert_eq!(r.additional_context.as_deref(), Some("keep the API notes"));
        let r = one(HookEvent::PreCompact, run(0, r#"{"a":1}"#, ""));
        assert_eq!(r.additional_context.as_deref(), Some(r#"{"a":1}"#));
        let r = one(HookEvent::PreCompact, run(1, "ignored", "bad"));
        assert!(r.additional_context.is_none() && r.report.error.is_some());
    }

    #[test]
    fn broken_json_is_plain_text() {
        let r = one(HookEvent::SessionStart, run(0, "{not json", ""));
        assert_eq!(r.additional_context.as_deref(), Some("{not json"));
    }

    #[test]
    fn merge_pretooluse_deny_beats_ask_beats_allow_and_keeps_config_order() {
        let allow = one(
            HookEvent::PreToolUse,
            run(
                0,
                r#"{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"a":1}}}"#,
                "",
            ),
        );
        let ask = one(
            HookEvent::PreToolUse,
            run(
                0,
                r#"{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"r1","updatedInput":{"a":2}}}"#,
                "",
            ),
        );
        let deny = one(HookEvent::PreToolUse, run(2, "", "r2"));
        let o = merge(HookEvent::PreToolUse, &[allow.clone(), ask.clone()]);
        assert_eq!(o.decision.as_deref(), Some("ask"));
        assert_eq!(o.reason.as_deref(), Some("r1"));
        assert_eq!(
            o.updated_input.unwrap()["a"],
            1,
            "first in configuration order"
        );
        let o = merge(HookEvent::PreToolUse, &[allow, ask, deny]);
        assert_eq!(o.decision.as_deref(), Some("deny"));
        assert_eq!(o.reason.as_deref(), Some("r2"));
        assert!(o.updated_input.is_none(), "a denied call runs no input");
        assert_eq!(o.ran, 3);
    }

    #[test]
    fn merge_blocks_collect_reasons_and_context_in_order() {
        let a = one(HookEvent::UserPromptSubmit, run(0, "ctx a", ""));
        let b = one(HookEvent::UserPromptSubmit, run(2, "", "no"));
        let c = one(HookEvent::UserPromptSubmit, run(1, "", "warn"));
        let d = one(HookEvent::UserPromptSubmit, run(0, "ctx d", ""));
        let o = merge(HookEvent::UserPromptSubmit, &[a, b, c, d]);
        assert_eq!(o.decision.as_deref(), Some("block"));
        assert_eq!(o.reason.as_deref(), Some("no"));
        assert_eq!(o.additional_context, ["ctx a", "ctx d"]);
        assert_eq!(o.errors, ["cmd: exited with code 1: warn"]);
        assert!(o.continue_);
        assert_eq!(o.results.len(), 4);
    }

    #[test]
    fn merge_of_nothing_carries_on() {
        let o = merge(HookEvent::Stop, &[]);
        assert!(o.continue_ && o.decision.is_none() && o.ran == 0);
    }
}
