//! What the hook tests share: settings files in Claude Code's format, a project that
//! holds them, a session that trusts its project.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::Daemon;

/// Writes a settings file atomically (as an editor's save does).
pub fn write_settings(path: &Path, v: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(v).unwrap()).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

pub fn hooks(event: &str, matcher: Option<&str>, commands: &[&str]) -> Value {
    let mut group = json!({"hooks": commands.iter().map(|c| json!({"type": "command", "command": c})).collect::<Vec<_>>()});
    if let Some(m) = matcher {
        group["matcher"] = json!(m);
    }
    json!({"hooks": {event: [group]}})
}

pub fn project(d: &Daemon, name: &str) -> PathBuf {
    let p = d.dir.path().join(name);
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// A project directory whose `.claude/settings.json` holds `settings`.
pub fn project_with(d: &Daemon, settings: &Value) -> PathBuf {
    let p = project(d, "proj");
    write_settings(&project_settings(&p), settings);
    p
}

pub fn project_settings(p: &Path) -> PathBuf {
    p.join(".claude").join("settings.json")
}

/// A session in `cwd`, whose project directory the session trusts (so its hooks run).
pub fn new_session(d: &Daemon, cwd: &Path) -> String {
    d.call(
        "session.create",
        json!({"cwd": cwd, "no_git": true, "start_date": "2026-11-29",
               "settings": {"hooks": {"trust_project": true}}}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}

pub fn records(d: &Daemon, sid: &str) -> Vec<Value> {
    d.call("transcript.read", json!({"session_id": sid, "limit": 5000}))["records"]
        .as_array()
        .unwrap()
        .clone()
}

pub fn sh_quote(p: &Path) -> String {
    format!("'{}'", p.display())
}
