//! Hook configuration, pure: a settings file's JSON → its hooks and policy switches,
//! and the sources of one session → the hooks that run (precedence, `disableAllHooks`,
//! `allowManagedHooksOnly`, duplicate commands).
//!
//! The format is Claude Code's, as is:
//! `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
//! "command": "...", "timeout": 30}]}]}, "disableAllHooks": false,
//! "allowManagedHooksOnly": false}`. Other settings keys are not ours and are ignored.
//!
//! Sources are layers in precedence order. Today they are the four settings files;
//! skill and agent front matter (and plugins) are further layers with the same
//! `hooks` value, so they slot in as new [`Source`] variants after `Local` without
//! changing the merge.

use std::borrow::Borrow;
use std::time::Duration;

use ctxd_protocol::{ConfiguredHook, HookEvent, HookSourceFile, HooksListResponse};
use serde_json::Value;

use super::matcher::Matcher;
use ctxd_pipeline::limits::MAX_HOOK_TIMEOUT;
use ctxd_pipeline::limits::MAX_HOOKS_PER_FILE;

/// Claude Code's default per-hook timeout.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Where a layer of hooks comes from, in precedence order (earlier wins: its hooks run
/// first, and a duplicate command keeps the earlier entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Source {
    /// `MANAGED_ROOT/managed-settings.json`: policy, cannot be overridden.
    Managed,
    /// `~/.claude/settings.json`.
    User,
    /// `<project>/.claude/settings.json` (checked in).
    Project,
    /// `<project>/.claude/settings.local.json` (not checked in).
    Local,
}

impl Source {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Source::Managed => "managed",
            Source::User => "user",
            Source::Project => "project",
            Source::Local => "local",
        }
    }
}

/// One hook command of a settings file.
#[derive(Debug, Clone)]
pub(crate) struct HookEntry {
    pub(crate) event: HookEvent,
    pub(crate) matcher_text: Option<String>,
    pub(crate) matcher: Matcher,
    /// The shell command; for an `http` hook, its URL (what reports and events name).
    pub(crate) command: String,
    /// Set for a hook of type `http`.
    pub(crate) http: Option<super::http::HttpHook>,
    /// Set for a hook of type `prompt` (`command` then holds its prompt).
    pub(crate) prompt: Option<super::prompt::PromptHook>,
    pub(crate) timeout: Duration,
    /// Why this entry can never run, whatever the policy (unsupported type, ...).
    pub(crate) unsupported: Option<String>,
}

/// What a settings file says about hooks.
#[derive(Debug, Clone, Default)]
pub(crate) struct Settings {
    pub(crate) hooks: Vec<HookEntry>,
    pub(crate) disable_all_hooks: Option<bool>,
    pub(crate) allow_managed_hooks_only: Option<bool>,
    /// The file's `env`: variables every hook's process gets (string values only).
    pub(crate) env: Vec<(String, String)>,
    /// Parts of the file that were ignored (unknown events, malformed entries).
    pub(crate) warnings: Vec<String>,
}

/// The state of one layer's file.
#[derive(Debug, Clone)]
pub(crate) enum FileState {
    Absent,
    Loaded(Settings),
    /// Not JSON, not an object, too large, unreadable.
    Invalid(String),
    /// Exists but may not supply hooks (owned by another user, world-writable).
    Untrusted(String),
}

#[derive(Debug, Clone)]
pub(crate) struct Layer {
    pub(crate) source: Source,
    pub(crate) file: String,
    pub(crate) state: FileState,
}

impl Layer {
    pub(crate) fn status(&self) -> (&'static str, Option<String>) {
        match &self.state {
            FileState::Absent => ("absent", None),
            FileState::Loaded(s) if s.warnings.is_empty() => ("loaded", None),
            FileState::Loaded(s) => ("loaded", Some(s.warnings.join("; "))),
            FileState::Invalid(e) => ("invalid", Some(e.clone())),
            FileState::Untrusted(e) => ("untrusted", Some(e.clone())),
        }
    }

    pub(crate) fn hook_count(&self) -> u32 {
        match &self.state {
            FileState::Loaded(s) => ctxd_pipeline::saturate::u32_of(s.hooks.len()),
            _ => 0,
        }
    }

    fn settings(&self) -> Option<&Settings> {
        match &self.state {
            FileState::Loaded(s) => Some(s),
            _ => None,
        }
    }
}

fn timeout_of(v: Option<&Value>) -> Result<Duration, String> {
    let Some(v) = v else {
        return Ok(DEFAULT_TIMEOUT);
    };
    let secs = v
        .as_f64()
        .filter(|s| s.is_finite() && *s > 0.0)
        .ok_or_else(|| format!("timeout must be a positive number of seconds, not {v}"))?;
    Ok(Duration::from_secs_f64(secs).min(MAX_HOOK_TIMEOUT))
}

fn valid_env_name(k: &str) -> bool {
    !k.is_empty()
        && !k.starts_with(|c: char| c.is_ascii_digit())
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An `http` hook's `url`, `headers` and `allowedEnvVars`; the error names the field.
fn http_hook(h: &Value) -> Result<super::http::HttpHook, String> {
    let url = h
        .get("url")
        .and_then(Value::as_str)
        .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
        .ok_or("url: must be an http:// or https:// URL")?;
    let headers = match h.get("headers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v.as_str() {
                Some(s) => Ok((k.clone(), s.to_string())),
                None => Err(format!("headers.{k}: must be a string")),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("headers: must be an object of strings".into()),
    };
    let allowed_env_vars = match h.get("allowedEnvVars") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or("allowedEnvVars: must be an array of variable names")?,
        Some(_) => return Err("allowedEnvVars: must be an array of variable names".into()),
    };
    Ok(super::http::HttpHook {
        url: url.to_string(),
        headers,
        allowed_env_vars,
    })
}

/// Parses a settings file's text. Errors make the whole file invalid; problems of a
/// single entry only skip that entry (with a warning).
pub(crate) fn parse_settings(text: &str) -> Result<Settings, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let obj = v
        .as_object()
        .ok_or_else(|| "the settings file must hold a JSON object".to_string())?;
    let flag = |k: &str| -> Result<Option<bool>, String> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(format!("{k} must be true or false, not {other}")),
        }
    };
    let mut out = Settings {
        disable_all_hooks: flag("disableAllHooks")?,
        allow_managed_hooks_only: flag("allowManagedHooksOnly")?,
        ..Settings::default()
    };
    match obj.get("env") {
        None | Some(Value::Null) => {}
        Some(Value::Object(vars)) => {
            for (k, v) in vars {
                match v {
                    Value::String(s) if valid_env_name(k) => out.env.push((k.clone(), s.clone())),
                    _ => out.warnings.push(format!(
                        "env.{k}: must be a string under a variable name; ignored"
                    )),
                }
            }
        }
        Some(_) => out.warnings.push("env: must be an object; ignored".into()),
    }
    let hooks = match obj.get("hooks") {
        None | Some(Value::Null) => return Ok(out),
        Some(Value::Object(h)) => h,
        Some(_) => return Err("hooks must be an object of events".into()),
    };
    for (name, groups) in hooks {
        let Some(event) = HookEvent::parse(name) else {
            out.warnings
                .push(format!("hooks.{name}: not an event ctxd runs; ignored"));
            continue;
        };
        let Some(groups) = groups.as_array() else {
            out.warnings
                .push(format!("hooks.{name}: must be an array of matcher groups"));
            continue;
        };
        for (gi, group) in groups.iter().enumerate() {
            let at = format!("hooks.{name}[{gi}]");
            let matcher_text = match group.get("matcher") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => {
                    out.warnings.push(format!("{at}.matcher: must be a string"));
                    continue;
                }
            };
            let Some(list) = group.get("hooks").and_then(Value::as_array) else {
                out.warnings
                    .push(format!("{at}.hooks: must be an array of hooks"));
                continue;
            };
            for (hi, h) in list.iter().enumerate() {
                let at = format!("{at}.hooks[{hi}]");
                if out.hooks.len() >= MAX_HOOKS_PER_FILE {
                    return Err(format!(
                        "more than {MAX_HOOKS_PER_FILE} hook commands in one file"
                    ));
                }
                let kind = h.get("type").and_then(Value::as_str).unwrap_or("");
                let mut http = None;
                let mut prompt = None;
                let mut command = h.get("command").and_then(Value::as_str);
                if kind == "prompt" || kind == "agent" {
                    command = h.get("prompt").and_then(Value::as_str);
                    match command.filter(|p| !p.trim().is_empty()) {
                        Some(p) => {
                            prompt = Some(super::prompt::PromptHook {
                                prompt: p.to_string(),
                                model: h.get("model").and_then(Value::as_str).map(str::to_owned),
                                agent: kind == "agent",
                            });
                        }
                        None => {
                            out.warnings
                                .push(format!("{at}.prompt: must be a non-empty string"));
                            continue;
                        }
                    }
                }
                if kind == "http" {
                    match http_hook(h) {
                        Ok(hook) => http = Some(hook),
                        Err(e) => {
                            out.warnings.push(format!("{at}.{e}"));
                            continue;
                        }
                    }
                    command = h.get("url").and_then(Value::as_str);
                }
                let unsupported = match (kind, command) {
                    ("command" | "http" | "prompt" | "agent", Some(c)) if !c.trim().is_empty() => {
                        None
                    }
                    ("command", _) => {
                        out.warnings
                            .push(format!("{at}.command: must be a non-empty string"));
                        continue;
                    }
                    ("", _) => {
                        out.warnings.push(format!("{at}.type: missing"));
                        continue;
                    }
                    (other, _) => Some(format!(
                        "hooks of type {other:?} are not run by ctxd (only \"command\", \"http\", \"prompt\" and \"agent\")"
                    )),
                };
                let timeout = match timeout_of(h.get("timeout")) {
                    Ok(_)
                        if h.get("timeout").is_none()
                            && prompt.as_ref().is_some_and(|p| p.agent) =>
                    {
                        super::prompt::DEFAULT_AGENT_TIMEOUT
                    }
                    Ok(_) if h.get("timeout").is_none() && prompt.is_some() => {
                        super::prompt::DEFAULT_PROMPT_TIMEOUT
                    }
                    Ok(t) => t,
                    Err(e) => {
                        out.warnings.push(format!("{at}.{e}"));
                        continue;
                    }
                };
                out.hooks.push(HookEntry {
                    event,
                    matcher: Matcher::new(matcher_text.as_deref()),
                    matcher_text: matcher_text.clone(),
                    command: command.unwrap_or_default().to_string(),
                    http,
                    prompt,
                    timeout,
                    unsupported,
                });
            }
        }
    }
    Ok(out)
}

/// A hook that runs, with where it came from.
#[derive(Debug, Clone)]
pub(crate) struct ActiveHook {
    pub(crate) source: Source,
    pub(crate) file: String,
    pub(crate) entry: HookEntry,
}

/// The hooks of one session, decided from its layers.
#[derive(Debug, Clone, Default)]
pub(crate) struct Effective {
    /// Every configured hook in precedence order, with why it does not run (`None`:
    /// it runs when its event fires and its matcher matches).
    pub(crate) hooks: Vec<(ActiveHook, Option<String>)>,
    /// Set when policy turns every hook off.
    pub(crate) all_disabled: Option<String>,
    /// The `env` of the loaded files, merged in precedence order (user, project, local,
    /// managed: a later file's value wins).
    pub(crate) env: Vec<(String, String)>,
}

/// Applies Claude Code's policy: managed `disableAllHooks` turns every hook off;
/// managed `allowManagedHooksOnly` keeps managed hooks only; `disableAllHooks` in
/// user, project or local settings (the most specific file that sets it wins, as
/// settings merge) turns off every hook but the managed ones, which those files cannot
/// override. `allowManagedHooksOnly` outside managed settings means nothing.
///
/// The policy fails closed: a managed settings file that exists but cannot be applied
/// (malformed, too big, too many hooks, unreadable, untrusted) may be the one that
/// forbids other hooks, so then no hook runs at all until it is fixed.
pub(crate) fn effective<L: Borrow<Layer>>(layers: &[L]) -> Effective {
    let layers: Vec<&Layer> = layers.iter().map(Borrow::borrow).collect();
    let managed_broken = layers
        .iter()
        .filter(|l| l.source == Source::Managed)
        .find_map(|l| match &l.state {
            FileState::Invalid(why) | FileState::Untrusted(why) => Some(format!(
                "the managed settings file {} cannot be applied ({why}); no hook runs until it is fixed",
                l.file
            )),
            FileState::Absent | FileState::Loaded(_) => None,
        });
    let managed = layers
        .iter()
        .filter(|l| l.source == Source::Managed)
        .find_map(|l| l.settings());
    let managed_off = managed.and_then(|s| s.disable_all_hooks) == Some(true);
    let managed_only = managed.and_then(|s| s.allow_managed_hooks_only) == Some(true);
    let others_off = layers
        .iter()
        .rev()
        .filter(|l| l.source != Source::Managed)
        .filter_map(|l| l.settings())
        .find_map(|s| s.disable_all_hooks)
        == Some(true);

    let mut out = Effective::default();
    if managed_off {
        out.all_disabled = Some("disableAllHooks is set in managed settings".into());
    } else if let Some(why) = &managed_broken {
        out.all_disabled = Some(why.clone());
    }
    let mut env: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
    for layer in layers
        .iter()
        .filter(|l| l.source != Source::Managed)
        .chain(layers.iter().filter(|l| l.source == Source::Managed))
    {
        for (k, v) in layer
            .settings()
            .map(|s| s.env.as_slice())
            .unwrap_or_default()
        {
            env.insert(k, v);
        }
    }
    out.env = env
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for layer in &layers {
        let Some(settings) = layer.settings() else {
            continue;
        };
        for entry in &settings.hooks {
            let why = if managed_off {
                Some("disableAllHooks is set in managed settings".to_string())
            } else if let Some(why) = &managed_broken {
                Some(why.clone())
            } else if layer.source != Source::Managed && managed_only {
                Some("managed settings set allowManagedHooksOnly".to_string())
            } else if layer.source != Source::Managed && others_off {
                Some("disableAllHooks is set (only managed hooks run)".to_string())
            } else if let Some(u) = &entry.unsupported {
                Some(u.clone())
            } else {
                entry.matcher.error().map(str::to_string)
            };
            let hook = ActiveHook {
                source: layer.source,
                file: layer.file.clone(),
                entry: entry.clone(),
            };
            out.hooks.push((hook, why));
        }
    }
    out
}

impl Effective {
    /// The hooks to run for `event` with the matcher value `value`, in precedence order.
    /// Identical commands run once: the first (highest-precedence) entry is kept.
    pub(crate) fn matching(&self, event: HookEvent, value: Option<&str>) -> Vec<&ActiveHook> {
        let mut seen = std::collections::BTreeSet::new();
        self.hooks
            .iter()
            .filter(|(_, why)| why.is_none())
            .map(|(h, _)| h)
            .filter(|h| h.entry.event == event && h.entry.matcher.matches(value))
            .filter(|h| seen.insert(h.entry.command.as_str()))
            .collect()
    }

    /// Whether any hook of `event` can run (whatever the matcher value).
    pub(crate) fn has_event(&self, event: HookEvent) -> bool {
        self.hooks
            .iter()
            .any(|(h, why)| why.is_none() && h.entry.event == event)
    }
}

/// The `hooks.list` answer: the files, then every hook in precedence order.
pub(crate) fn listing<L: Borrow<Layer>>(layers: &[L], eff: &Effective) -> HooksListResponse {
    let files = layers
        .iter()
        .map(Borrow::borrow)
        .map(|l: &Layer| {
            let (status, error) = l.status();
            HookSourceFile {
                source: l.source.as_str().into(),
                file: l.file.clone(),
                status: status.into(),
                error,
                hooks: l.hook_count(),
            }
        })
        .collect();
    let hooks = eff
        .hooks
        .iter()
        .map(|(h, why)| ConfiguredHook {
            event: h.entry.event,
            matcher: h.entry.matcher_text.clone(),
            command: h.entry.command.clone(),
            timeout_secs: h.entry.timeout.as_secs_f64(),
            source: h.source.as_str().into(),
            file: h.file.clone(),
            active: why.is_none(),
            inactive_reason: why.clone(),
        })
        .collect();
    HooksListResponse {
        files,
        hooks,
        all_disabled: eff.all_disabled.clone(),
    }
}

#[cfg(test)]
mod tests;
