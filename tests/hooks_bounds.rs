//! What a hook may not do, through a real daemon: run from a place the user has not
//! trusted (or from a settings file swapped during the check), see the daemon's provider
//! keys or get event data other than on stdin, outlive its timeout, or flood the
//! transcript with its output.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::Daemon;
use common::hooks::*;
use serde_json::{Value, json};

fn alive(pid: i32) -> bool {
    // A zombie has no /proc/PID/cwd target; a live process (or a reused pid) has one.
    std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok()
}

#[test]
fn a_timeout_kills_the_hooks_process_group_and_leaves_no_process() {
    let d = Daemon::start();
    let pidfile = d.dir.path().join("sleeper.pid");
    let cmd = format!("sleep 300 & echo $! > {}; wait", sh_quote(&pidfile));
    let p = project_with(
        &d,
        &json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": cmd, "timeout": 1}]}]}}),
    );
    let sid = new_session(&d, &p);
    let started = Instant::now();
    let o = d.call("hooks.stop", json!({"session_id": sid}));
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(o["results"][0]["timed_out"], true, "{o}");
    assert!(
        o["errors"][0].as_str().unwrap().contains("timed out"),
        "{o}"
    );
    assert!(o.get("decision").is_none(), "a timeout does not block");
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) {
        assert!(
            Instant::now() < deadline,
            "the forked sleeper {pid} outlived its hook"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_flood_of_output_is_capped_with_a_note() {
    let d = Daemon::start();
    let p = project_with(
        &d,
        &hooks(
            "UserPromptSubmit",
            None,
            &["head -c 2000000 /dev/zero | tr '\\0' x"],
        ),
    );
    let sid = new_session(&d, &p);
    let o = d.call(
        "hooks.user_prompt_submit",
        json!({"session_id": sid, "prompt": "hi"}),
    );
    assert_eq!(o["results"][0]["output_cut"], true);
    let ctx = o["additional_context"][0].as_str().unwrap();
    assert!(ctx.len() < 66_000, "{}", ctx.len());
    assert!(ctx.contains("output cut by ctxd at 65536 bytes"));
    assert!(ctx.contains("wrote 2000000 bytes"));
    // The RPC form does not append: transcript.append does that itself.
    assert!(o.get("appended").is_none());
}

#[test]
fn hooks_configured_only_in_untrusted_places_do_not_run() {
    let d = Daemon::start();
    let root = project(&d, "tree");
    let p = root.join("proj");
    std::fs::create_dir_all(&p).unwrap();
    let marker = |name: &str| root.join(name);
    let touch = |name: &str| format!("touch {}", sh_quote(&marker(name)));

    // 1. A settings file above the project is not the project's.
    write_settings(
        &project_settings(&root),
        &hooks("SessionStart", None, &[&touch("parent_ran")]),
    );
    // 2. A world-writable file may have been written by anyone.
    let local = p.join(".claude").join("settings.local.json");
    write_settings(
        &local,
        &hooks("SessionStart", None, &[&touch("world_writable_ran")]),
    );
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&local, std::fs::Permissions::from_mode(0o666)).unwrap();
    }
    // The project's own file runs, in the session's cwd, with CLAUDE_PROJECT_DIR.
    let env_seen = root.join("env_seen");
    write_settings(
        &project_settings(&p),
        &hooks(
            "SessionStart",
            None,
            &[&format!(
                "{} && pwd > {} && echo \"$CLAUDE_PROJECT_DIR\" >> {}",
                touch("project_ran"),
                sh_quote(&env_seen),
                sh_quote(&env_seen)
            )],
        ),
    );
    let sid = new_session(&d, &p);
    assert!(marker("project_ran").exists());
    assert!(!marker("parent_ran").exists());
    assert!(!marker("world_writable_ran").exists());
    let seen = std::fs::read_to_string(&env_seen).unwrap();
    let proj = std::fs::canonicalize(&p).unwrap();
    assert_eq!(seen, format!("{}\n{}\n", proj.display(), p.display()));
    let list = d.call("hooks.list", json!({"session_id": sid}));
    let local_file = list["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["source"] == "local")
        .unwrap();
    assert_eq!(local_file["status"], "untrusted");
    assert!(
        local_file["error"]
            .as_str()
            .unwrap()
            .contains("writable by every user")
    );

    // 3. Managed policy may allow managed hooks only.
    std::fs::remove_file(marker("project_ran")).unwrap();
    let managed = d.dir.path().join("managed").join("managed-settings.json");
    let mut policy = hooks("SessionStart", None, &[&touch("managed_ran")]);
    policy["allowManagedHooksOnly"] = json!(true);
    write_settings(&managed, &policy);
    let sid = new_session(&d, &p);
    assert!(marker("managed_ran").exists());
    assert!(!marker("project_ran").exists());
    let list = d.call("hooks.list", json!({"session_id": sid}));
    let project_hook = list["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["source"] == "project")
        .unwrap();
    assert_eq!(project_hook["active"], false);
    assert!(
        project_hook["inactive_reason"]
            .as_str()
            .unwrap()
            .contains("allowManagedHooksOnly")
    );
    assert_eq!(
        project_hook["file"],
        project_settings(&p).display().to_string()
    );
}

#[test]
fn event_data_reaches_a_hook_only_on_stdin() {
    let d = Daemon::start();
    let got = d.dir.path().join("stdin.json");
    let p = project_with(
        &d,
        &hooks(
            "UserPromptSubmit",
            None,
            &[&format!("cat > {}", sh_quote(&got))],
        ),
    );
    let sid = new_session(&d, &p);
    let evil = format!(
        "$(touch {}) `touch {}`",
        sh_quote(&d.dir.path().join("pwned1")),
        sh_quote(&d.dir.path().join("pwned2"))
    );
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": evil}]}),
    );
    assert!(!d.dir.path().join("pwned1").exists());
    assert!(!d.dir.path().join("pwned2").exists());
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&got).unwrap()).unwrap();
    assert_eq!(input["prompt"], evil.as_str());
    assert_eq!(input["hook_event_name"], "UserPromptSubmit");
    assert_eq!(input["session_id"], sid.as_str());
    assert_eq!(input["cwd"], p.display().to_string());
    // The transcript path holds the session as Claude Code JSONL (up to before this
    // prompt: the hook runs before the append).
    let tp = input["transcript_path"].as_str().unwrap();
    assert!(tp.ends_with(&format!("sessions/{sid}/transcript.jsonl")));
    assert!(Path::new(tp).exists());
}

/// The trust check and the read are of one open file: a settings file swapped for an
/// untrusted one (writable by everyone) between the two is never the one whose hooks
/// run. Driven for a bounded time against a swapper that never stops.
#[test]
fn a_settings_file_swapped_during_the_trust_check_never_runs_its_hooks() {
    use std::os::unix::fs::PermissionsExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    let d = Daemon::start();
    let p = project(&d, "swap");
    let marker = d.dir.path().join("ran-the-untrusted-hook");
    let settings = project_settings(&p);
    let trusted = hooks("UserPromptSubmit", None, &["true"]);
    let untrusted = hooks(
        "UserPromptSubmit",
        None,
        &[&format!("touch {}", sh_quote(&marker))],
    );
    write_settings(&settings, &trusted);
    let sid = new_session(&d, &p);
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, settings) = (stop.clone(), settings.clone());
        let dir = settings.parent().unwrap().to_path_buf();
        let (good, bad) = (trusted.to_string(), untrusted.to_string());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for (text, mode) in [(&good, 0o644), (&bad, 0o666)] {
                    let tmp = dir.join("next.json");
                    std::fs::write(&tmp, text).unwrap();
                    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode)).unwrap();
                    std::fs::rename(&tmp, &settings).unwrap();
                    swaps += 1;
                }
            }
            swaps
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(4);
    let mut events = 0;
    while std::time::Instant::now() < deadline && events < 2_000 {
        let _ = d.try_call(
            "transcript.append",
            json!({"session_id": sid, "records": [{"type": "user", "content": format!("prompt {events}")}]}),
        );
        events += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(events > 50 && swaps > 100, "{events} events, {swaps} swaps");
    assert!(
        !marker.exists(),
        "the untrusted file's hook ran ({events} events, {swaps} swaps)"
    );
}

/// A hook's process gets a documented environment: the shell's basics, the settings'
/// `env` and `CLAUDE_PROJECT_DIR`, never the daemon's provider keys.
#[test]
fn hooks_never_see_the_daemons_provider_keys() {
    let mut d = Daemon::start();
    d.kill9();
    d.env = vec![
        ("ANTHROPIC_API_KEY".into(), "sk-ant-DAEMON-KEY-1".into()),
        ("AWS_SECRET_ACCESS_KEY".into(), "AWS-DAEMON-SECRET-2".into()),
        ("OPENAI_API_KEY".into(), "sk-DAEMON-KEY-3".into()),
    ];
    d.spawn();
    let out = d.dir.path().join("hook-env.txt");
    let mut settings = hooks(
        "UserPromptSubmit",
        None,
        &[&format!("env > {}", sh_quote(&out))],
    );
    settings["env"] = json!({"PROJECT_FLAVOUR": "from-settings"});
    let p = project_with(&d, &settings);
    let sid = new_session(&d, &p);
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "hi"}]}),
    );
    let env = std::fs::read_to_string(&out).unwrap();
    for secret in [
        "sk-ant-DAEMON-KEY-1",
        "AWS-DAEMON-SECRET-2",
        "sk-DAEMON-KEY-3",
    ] {
        assert!(!env.contains(secret), "a hook saw {secret}:\n{env}");
    }
    assert!(env.contains("PROJECT_FLAVOUR=from-settings"), "{env}");
    assert!(env.contains("CLAUDE_PROJECT_DIR="), "{env}");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
}

/// A project directory's hooks run only once the directory is trusted: naming a
/// checkout as a session's cwd does not run what its `.claude/settings.json` says.
#[test]
fn an_untrusted_project_directory_runs_no_hooks_at_session_create() {
    let d = Daemon::start();
    let marker = d.dir.path().join("session-start-ran");
    let p = project_with(
        &d,
        &hooks(
            "SessionStart",
            None,
            &[&format!("touch {}", sh_quote(&marker))],
        ),
    );
    let sid = d.call(
        "session.create",
        json!({"cwd": p, "no_git": true, "start_date": "2026-11-29"}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!marker.exists(), "an untrusted project's hook ran");
    let listed = d.call("hooks.list", json!({"session_id": sid}));
    let project = listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["source"] == "project")
        .unwrap()
        .clone();
    assert_eq!(project["status"], "untrusted", "{listed}");
    // Trusted on creation (scripted use): the same directory's hook runs.
    new_session(&d, &p);
    assert!(marker.exists(), "a trusted project's hook did not run");
}

/// `session.update {settings}` merges: turning snip on keeps `hooks.disabled`, so the
/// project's blocking hook still does not run; only an explicit `null` removes a key.
#[test]
fn a_settings_update_merges_and_keeps_hooks_disabled() {
    let d = Daemon::start();
    let p = project_with(
        &d,
        &hooks("UserPromptSubmit", None, &["echo 'blocked' >&2; exit 2"]),
    );
    let sid = d.call(
        "session.create",
        json!({"cwd": p, "no_git": true, "start_date": "2026-11-29",
               "settings": {"hooks": {"disabled": true, "trust_project": true}}}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let updated = d.call(
        "session.update",
        json!({"session_id": sid, "settings": {"snip_enabled": true}}),
    );
    assert_eq!(
        updated["session"]["settings"]["snip_enabled"], true,
        "{updated}"
    );
    assert_eq!(
        updated["session"]["settings"]["hooks"]["disabled"], true,
        "{updated}"
    );
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "still allowed"}]}),
    );
    let removed = d.call(
        "session.update",
        json!({"session_id": sid, "settings": {"hooks": {"disabled": null}}}),
    );
    assert!(
        removed["session"]["settings"]["hooks"]
            .get("disabled")
            .is_none(),
        "{removed}"
    );
    let err = d
        .try_call(
            "transcript.append",
            json!({"session_id": sid, "records": [{"type": "user", "content": "now blocked"}]}),
        )
        .unwrap_err();
    assert_eq!(err["code"], ctxd_protocol::HOOK_BLOCKED, "{err}");
    let typo = d
        .try_call(
            "session.update",
            json!({"session_id": sid, "settings": {"snip_enabld": true}}),
        )
        .unwrap_err();
    assert_eq!(typo["code"], -32602, "{typo}");
}
