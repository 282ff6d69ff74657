use super::*;
use ctxd_pipeline::limits::MAX_HOOK_SETTINGS_BYTES;
use ctxd_pipeline::limits::MAX_HOOK_TIMEOUT;
use ctxd_pipeline::limits::MAX_HOOKS_PER_FILE;
use serde_json::json;

fn layer(source: Source, v: Value) -> Layer {
    Layer {
        source,
        file: format!("/{}/settings.json", source.as_str()),
        state: FileState::Loaded(parse_settings(&v.to_string()).unwrap()),
    }
}

fn hook(event: &str, matcher: Option<&str>, command: &str) -> Value {
    let mut g = json!({"hooks": [{"type": "command", "command": command}]});
    if let Some(m) = matcher {
        g["matcher"] = json!(m);
    }
    json!({"hooks": {event: [g]}})
}

fn commands(hs: &[&ActiveHook]) -> Vec<String> {
    hs.iter().map(|h| h.entry.command.clone()).collect()
}

#[test]
fn parses_claude_codes_format() {
    let s = parse_settings(
        r#"{"permissions": {"allow": []},
            "hooks": {"PreToolUse": [{"matcher": "Bash",
              "hooks": [{"type": "command", "command": "echo hi", "timeout": 5},
                        {"type": "command", "command": "echo two"}]}],
              "SessionStart": [{"hooks": [{"type": "command", "command": "cat ctx"}]}]}}"#,
    )
    .unwrap();
    assert_eq!(s.hooks.len(), 3);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let pre: Vec<_> = s
        .hooks
        .iter()
        .filter(|h| h.event == HookEvent::PreToolUse)
        .collect();
    assert_eq!(pre[0].timeout, Duration::from_secs(5));
    assert_eq!(pre[1].timeout, DEFAULT_TIMEOUT);
    assert_eq!(pre[0].matcher_text.as_deref(), Some("Bash"));
}

#[test]
fn bad_files_and_bad_entries() {
    assert!(parse_settings("{").unwrap_err().contains("JSON"));
    assert!(parse_settings("[]").unwrap_err().contains("object"));
    assert!(parse_settings(r#"{"hooks": 3}"#).is_err());
    assert!(parse_settings(r#"{"disableAllHooks": "yes"}"#).is_err());
    let s = parse_settings(
        r#"{"hooks": {"Nonsense": [], "Stop": [{"hooks": [{"type": "command"},
            {"type": "command", "command": "x", "timeout": -1},
            {"type": "mcp_tool", "tool": "verify"},
            {"type": "prompt", "prompt": " "},
            {"type": "prompt", "prompt": "judge", "model": "m"},
            {"type": "command", "command": "ok"}]}]}}"#,
    )
    .unwrap();
    assert_eq!(s.warnings.len(), 4, "{:?}", s.warnings);
    assert_eq!(s.hooks.len(), 3);
    assert!(
        s.hooks[0]
            .unsupported
            .as_deref()
            .unwrap()
            .contains("\"mcp_tool\" are not run")
    );
    // A prompt hook runs, with Claude Code's 30 s default.
    let p = &s.hooks[1];
    assert!(p.unsupported.is_none());
    assert_eq!(p.prompt.as_ref().unwrap().model.as_deref(), Some("m"));
    assert_eq!(p.timeout, std::time::Duration::from_secs(30));
    assert!(s.hooks[2].unsupported.is_none());
    let a = parse_settings(
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "agent", "prompt": "verify"}]}]}}"#,
    )
    .unwrap();
    assert!(a.hooks[0].unsupported.is_none());
    assert!(a.hooks[0].prompt.as_ref().unwrap().agent);
    assert_eq!(a.hooks[0].timeout, std::time::Duration::from_secs(60));
}

#[test]
fn timeouts_are_bounded() {
    let s = parse_settings(
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "a", "timeout": 99999},
            {"type": "command", "command": "b", "timeout": 0.5}]}]}}"#,
    )
    .unwrap();
    assert_eq!(s.hooks[0].timeout, MAX_HOOK_TIMEOUT);
    assert_eq!(s.hooks[1].timeout, Duration::from_millis(500));
}

#[test]
fn precedence_orders_managed_user_project_local() {
    let layers = vec![
        layer(Source::Managed, hook("Stop", None, "m")),
        layer(Source::User, hook("Stop", None, "u")),
        layer(Source::Project, hook("Stop", None, "p")),
        layer(Source::Local, hook("Stop", None, "l")),
    ];
    let eff = effective(&layers);
    assert_eq!(
        commands(&eff.matching(HookEvent::Stop, None)),
        ["m", "u", "p", "l"]
    );
}

#[test]
fn identical_commands_run_once_keeping_the_earlier_source() {
    let layers = vec![
        layer(Source::User, hook("Stop", None, "same")),
        layer(Source::Project, hook("Stop", None, "same")),
        layer(Source::Project, hook("SubagentStop", None, "same")),
    ];
    let eff = effective(&layers);
    let m = eff.matching(HookEvent::Stop, None);
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].source, Source::User);
    assert_eq!(eff.matching(HookEvent::SubagentStop, None).len(), 1);
}

#[test]
fn a_command_under_two_matchers_runs_for_both_but_once_for_a_value_matching_both() {
    let layers = vec![layer(
        Source::Project,
        json!({"hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]},
            {"matcher": "Edit", "hooks": [{"type": "command", "command": "x"}]},
            {"matcher": "*", "hooks": [{"type": "command", "command": "x"}]}
        ]}}),
    )];
    let eff = effective(&layers);
    assert_eq!(eff.matching(HookEvent::PreToolUse, Some("Bash")).len(), 1);
    assert_eq!(eff.matching(HookEvent::PreToolUse, Some("Edit")).len(), 1);
    assert_eq!(eff.matching(HookEvent::PreToolUse, Some("Read")).len(), 1);
}

#[test]
fn matchers_select_by_value() {
    let layers = vec![layer(
        Source::Project,
        json!({"hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "bash"}]},
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "edits"}]},
            {"matcher": "mcp__.*", "hooks": [{"type": "command", "command": "mcp"}]},
            {"matcher": "*", "hooks": [{"type": "command", "command": "all"}]},
            {"hooks": [{"type": "command", "command": "none"}]}
        ]}}),
    )];
    let eff = effective(&layers);
    let run = |v: &str| commands(&eff.matching(HookEvent::PreToolUse, Some(v)));
    assert_eq!(run("Bash"), ["bash", "all", "none"]);
    assert_eq!(run("Write"), ["edits", "all", "none"]);
    assert_eq!(run("mcp__fs__read"), ["mcp", "all", "none"]);
    assert_eq!(run("Read"), ["all", "none"]);
    assert!(
        eff.matching(HookEvent::PostToolUse, Some("Bash"))
            .is_empty()
    );
}

#[test]
fn managed_disable_all_turns_everything_off() {
    let mut m = hook("Stop", None, "m");
    m["disableAllHooks"] = json!(true);
    let eff = effective(&[
        layer(Source::Managed, m),
        layer(Source::Project, hook("Stop", None, "p")),
    ]);
    assert!(eff.matching(HookEvent::Stop, None).is_empty());
    assert!(eff.all_disabled.is_some());
    assert!(eff.hooks.iter().all(|(_, why)| why.is_some()));
}

#[test]
fn allow_managed_hooks_only_keeps_managed_hooks() {
    let mut m = hook("Stop", None, "m");
    m["allowManagedHooksOnly"] = json!(true);
    let eff = effective(&[
        layer(Source::Managed, m),
        layer(Source::User, hook("Stop", None, "u")),
        layer(Source::Local, hook("Stop", None, "l")),
    ]);
    assert_eq!(commands(&eff.matching(HookEvent::Stop, None)), ["m"]);
    let why: Vec<_> = eff.hooks.iter().filter_map(|(_, w)| w.as_deref()).collect();
    assert_eq!(why.len(), 2);
    assert!(why.iter().all(|w| w.contains("allowManagedHooksOnly")));
}

#[test]
fn allow_managed_hooks_only_outside_managed_means_nothing() {
    let mut p = hook("Stop", None, "p");
    p["allowManagedHooksOnly"] = json!(true);
    let eff = effective(&[
        layer(Source::User, hook("Stop", None, "u")),
        layer(Source::Project, p),
    ]);
    assert_eq!(commands(&eff.matching(HookEvent::Stop, None)), ["u", "p"]);
}

#[test]
fn disable_all_hooks_outside_managed_keeps_managed_and_the_most_specific_wins() {
    let mut u = hook("Stop", None, "u");
    u["disableAllHooks"] = json!(true);
    let eff = effective(&[
        layer(Source::Managed, hook("Stop", None, "m")),
        layer(Source::User, u.clone()),
        layer(Source::Project, hook("Stop", None, "p")),
    ]);
    assert_eq!(commands(&eff.matching(HookEvent::Stop, None)), ["m"]);
    // A local file that sets it back to false wins over the user file.
    let eff = effective(&[
        layer(Source::User, u),
        layer(Source::Local, json!({"disableAllHooks": false})),
    ]);
    assert_eq!(commands(&eff.matching(HookEvent::Stop, None)), ["u"]);
}

/// A managed file that exists but cannot be applied might be the one forbidding other
/// hooks: no hook runs, and the listing says why.
#[test]
fn an_invalid_or_untrusted_managed_file_fails_closed() {
    for state in [
        FileState::Invalid("not valid JSON: EOF".into()),
        FileState::Invalid(format!("larger than {MAX_HOOK_SETTINGS_BYTES} bytes")),
        FileState::Invalid(format!(
            "more than {MAX_HOOKS_PER_FILE} hook commands in one file"
        )),
        FileState::Untrusted("writable by every user".into()),
    ] {
        let layers = vec![
            Layer {
                source: Source::Managed,
                file: "/etc/claude-code/managed-settings.json".into(),
                state,
            },
            layer(Source::User, hook("Stop", None, "u")),
            layer(Source::Project, hook("Stop", None, "p")),
        ];
        let eff = effective(&layers);
        assert!(eff.matching(HookEvent::Stop, None).is_empty());
        let list = listing(&layers, &eff);
        let why = list.all_disabled.expect("the reason is shown");
        assert!(
            why.contains("managed-settings.json cannot be applied"),
            "{why}"
        );
        assert!(
            list.hooks
                .iter()
                .all(|h| !h.active && h.inactive_reason.as_deref() == Some(why.as_str()))
        );
    }
    // An absent managed file is no policy at all.
    let eff = effective(&[
        Layer {
            source: Source::Managed,
            file: "/m".into(),
            state: FileState::Absent,
        },
        layer(Source::User, hook("Stop", None, "u")),
    ]);
    assert_eq!(commands(&eff.matching(HookEvent::Stop, None)), ["u"]);
}

#[test]
fn untrusted_and_invalid_layers_supply_nothing() {
    let layers = vec![
        Layer {
            source: Source::Project,
            file: "/p".into(),
            state: FileState::Untrusted("world-writable".into()),
        },
        Layer {
            source: Source::Local,
            file: "/l".into(),
            state: FileState::Invalid("not valid JSON".into()),
        },
    ];
    let eff = effective(&layers);
    assert!(eff.hooks.is_empty());
    let list = listing(&layers, &eff);
    assert_eq!(list.files[0].status, "untrusted");
    assert_eq!(list.files[1].status, "invalid");
}

#[test]
fn listing_keeps_precedence_and_says_why_a_hook_does_not_run() {
    let mut m = hook("Stop", None, "m");
    m["allowManagedHooksOnly"] = json!(true);
    let layers = vec![
        layer(Source::Managed, m),
        layer(Source::Project, hook("PreToolUse", Some("Bash"), "p")),
    ];
    let list = listing(&layers, &effective(&layers));
    assert_eq!(list.hooks.len(), 2);
    assert_eq!(list.hooks[0].command, "m");
    assert!(list.hooks[0].active);
    assert_eq!(list.hooks[1].source, "project");
    assert_eq!(list.hooks[1].file, "/project/settings.json");
    assert!(!list.hooks[1].active);
    assert_eq!(list.hooks[1].matcher.as_deref(), Some("Bash"));
}
