//! The `ctx` CLI end to end: it starts a daemon on demand and prints JSON for scripts.

use crate::common;

use std::process::{Command, Stdio};

use serde_json::Value;

fn ctx(home: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ctx"));
    c.env("CTXD_HOME", home)
        // The daemon ctx starts inherits these: it must not read (or run hooks from)
        // the machine's own ~/.claude or /etc/claude-code.
        .env("HOME", home.join("user-home"))
        .env("CTXD_MANAGED_ROOT", home.join("managed"))
        .env_remove("CTXD_SOCKET")
        .env("CTXD_BIN", common::ctxd_bin())
        .stdin(Stdio::null());
    if let Some(url) = common::store_for_home(home) {
        c.env("CTXD_STORE", url);
    }
    c
}

/// A temp dir whose `home` holds the daemon `ctx` starts on demand. The daemon is
/// stopped when the guard drops, so a test that fails half-way leaks no process.
struct Home {
    dir: tempfile::TempDir,
    home: std::path::PathBuf,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        Home { dir, home }
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        stop(&self.home);
    }
}

fn json_out(c: &mut Command) -> Value {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{:?} failed: {}",
        c,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn cli_starts_the_daemon_imports_compiles_and_stops_it() {
    let guard = Home::new();
    let (dir, home) = (&guard.dir, guard.home.clone());

    // --no-start with nothing running is a clear error.
    let out = ctx(&home)
        .args(["--no-start", "daemon", "status"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no ctxd answers"));

    let created = json_out(
        ctx(&home)
            .args(["session", "new", "--json", "--cwd"])
            .arg(dir.path()),
    );
    let sid = created["session_id"].as_str().unwrap().to_string();

    let mut append = ctx(&home);
    append
        .args(["append", &sid, "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = append.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, r#"{{"type":"user","content":"hello"}}"#).unwrap();
        writeln!(stdin).unwrap();
        writeln!(
            stdin,
            r#"{{"type":"assistant","content":[{{"type":"text","text":"hi"}}]}}"#
        )
        .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let appended: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(appended["appended"].as_array().unwrap().len(), 2);

    let compiled = json_out(ctx(&home).args(["compile", &sid, "--json"]));
    assert_eq!(compiled["request"]["messages"][0]["role"], "user");
    assert_eq!(
        compiled["request"]["messages"][1]["content"][0]["text"],
        "hi"
    );

    let fixture = common::fixtures().join("spotter/short.jsonl");
    let imported = json_out(ctx(&home).args(["import", "--json"]).arg(&fixture));
    let isid = imported["session_id"].as_str().unwrap().to_string();
    let compiled = json_out(ctx(&home).args(["compile", "--json", &isid]));
    assert!(compiled["request"]["messages"].as_array().unwrap().len() > 2);

    // Without --json, compile prints the exact request body.
    let raw = ctx(&home).args(["compile", &isid]).output().unwrap();
    let text = String::from_utf8(raw.stdout).unwrap();
    let body: Value = serde_json::from_str(text.trim_end()).unwrap();
    assert_eq!(body, compiled["request"]);

    let list = json_out(ctx(&home).args(["session", "list", "--json"]));
    assert_eq!(list["sessions"].as_array().unwrap().len(), 2);
    let fork = json_out(ctx(&home).args(["session", "fork", &isid, "--json"]));
    assert!(fork["session_id"].is_string());
    json_out(ctx(&home).args(["session", "rm", &isid, "--json"]));

    // A malformed append line is reported with its line number and sends nothing.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"type\":\"user\",\"content\":\"ok\"}\n{oops\n").unwrap();
    let out = ctx(&home)
        .args(["append", &sid])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2"));
    // A line that is JSON but not a record: the error names the user's line, column and
    // field, not a position in the request ctx would have sent.
    let wrong = dir.path().join("wrong.jsonl");
    std::fs::write(
        &wrong,
        "{\"type\":\"user\",\"content\":\"ok\"}\n{\"type\":\"usr\",\"content\":\"hi\"}\n",
    )
    .unwrap();
    let out = ctx(&home)
        .args(["append", &sid])
        .arg(&wrong)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2, column 13"), "{err}");
    assert!(err.contains("type: unknown variant `usr`"), "{err}");
    assert!(!err.contains("at line 1 column"), "{err}");
    // Plain output labels what it prints.
    let good = dir.path().join("good.jsonl");
    std::fs::write(&good, "{\"type\":\"user\",\"content\":\"more\"}\n").unwrap();
    let out = ctx(&home)
        .args(["append", &sid])
        .arg(&good)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("appended seq ") && text.contains(" uuid "),
        "{text}"
    );

    let status = json_out(ctx(&home).args(["daemon", "status", "--json"]));
    assert_eq!(status["protocol_version"], ctxd_protocol::PROTOCOL_VERSION);
    let stopped = json_out(ctx(&home).args(["daemon", "stop", "--json"]));
    assert_eq!(stopped["stopping"], true);
    // `stop` returns once the daemon has exited: its store closed, its home free for the
    // next daemon, its socket gone.
    let lock = std::fs::File::open(home.join("daemon.lock")).unwrap();
    assert!(lock.try_lock().is_ok(), "the daemon still holds its home");
    assert!(!home.join("ctxd.sock").exists());
}

#[test]
fn ctx_hooks_lists_the_configured_hooks_with_their_source_file() {
    let guard = Home::new();
    let (dir, home) = (&guard.dir, guard.home.clone());
    let proj = dir.path().join("proj");
    let settings = proj.join(".claude").join("settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5}]}]}}"#,
    )
    .unwrap();
    let created = json_out(
        ctx(&home)
            .args(["session", "new", "--json", "--cwd"])
            .arg(&proj),
    );
    let sid = created["session_id"].as_str().unwrap().to_string();
    // A project not trusted yet: its file is read but may run nothing.
    let listed = json_out(ctx(&home).args(["hooks", &sid, "--json"]));
    let project = listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["source"] == "project")
        .unwrap()
        .clone();
    assert_eq!(project["status"], "untrusted", "{listed}");
    assert!(project["error"].as_str().unwrap().contains("ctx trust"));
    json_out(ctx(&home).args(["trust", "--json"]).arg(&proj));
    let trusted = json_out(ctx(&home).args(["trust", "--list", "--json"]));
    assert_eq!(trusted["trusted"].as_array().unwrap().len(), 1, "{trusted}");
    let out = ctx(&home).args(["hooks", &sid]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&format!(
            "project  loaded    {} (1 hooks)",
            settings.display()
        )),
        "{text}"
    );
    assert!(text.contains("PreToolUse"), "{text}");
    assert!(
        text.contains(&format!("./guard.sh  (5 s, {})", settings.display())),
        "{text}"
    );
    let listed = json_out(ctx(&home).args(["hooks", &sid, "--json"]));
    assert_eq!(listed["hooks"][0]["source"], "project");
    assert_eq!(listed["hooks"][0]["active"], true);
    json_out(ctx(&home).args(["trust", "--remove", "--json"]).arg(&proj));
    let listed = json_out(ctx(&home).args(["hooks", &sid, "--json"]));
    assert_eq!(
        listed["hooks"].as_array().map_or(0, Vec::len),
        0,
        "{listed}"
    );
    json_out(ctx(&home).args(["daemon", "stop", "--json"]));
}

#[test]
fn ctx_plan_and_ctx_queue_drive_plan_mode_and_queued_input() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let proj = dir.path().join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    let created = json_out(
        ctx(&home)
            .args(["session", "new", "--json", "--cwd"])
            .arg(&proj),
    );
    let sid = created["session_id"].as_str().unwrap().to_string();
    let on = json_out(ctx(&home).args(["plan", &sid, "on", "--json"]));
    assert_eq!(on["plan_mode"], true);
    assert!(on["plan_file"].as_str().unwrap().ends_with("plan.md"));
    let image = dir.path().join("shot.png");
    std::fs::write(&image, [0x89, b'P', b'N', b'G']).unwrap();
    let queued = json_out(
        ctx(&home)
            .args(["queue", &sid, "also fix the docs", "--json", "--image"])
            .arg(&image),
    );
    assert_eq!(queued["pending"], 1);
    let listed = ctx(&home).args(["queue", &sid, "--list"]).output().unwrap();
    let text = String::from_utf8(listed.stdout).unwrap();
    assert!(
        text.contains("main") && text.contains("also fix the docs"),
        "{text}"
    );
    let out = ctx(&home).args(["compile", &sid]).output().unwrap();
    let body = String::from_utf8(out.stdout).unwrap();
    assert!(body.contains("Plan mode is active."), "{body}");
    assert!(body.contains("also fix the docs"));
    let bad = ctx(&home).args(["queue", &sid]).output().unwrap();
    assert!(!bad.status.success());
    json_out(ctx(&home).args(["daemon", "stop", "--json"]));
}

#[test]
fn replay_of_every_fixture_runs_to_the_end() {
    let guard = Home::new();
    let home = guard.home.clone();
    let mut total_compiles = 0;
    for f in common::fixture_files() {
        let out = ctx(&home)
            .args(["replay", "--json"])
            .arg(&f)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            f.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let mut last_line = 0;
        for line in text.lines() {
            let step: Value = serde_json::from_str(line).unwrap();
            for key in [
                "source_line",
                "estimated_tokens",
                "anchor_tokens",
                "autocompact",
            ] {
                assert!(
                    step.get(key).is_some(),
                    "{}: no {key} in {line}",
                    f.display()
                );
            }
            let sl = step["source_line"].as_u64().unwrap();
            assert!(sl > last_line, "source lines go forward");
            last_line = sl;
            total_compiles += 1;
        }
        // The summary goes to stderr as one JSON object.
        let summary: Value =
            serde_json::from_str(String::from_utf8_lossy(&out.stderr).trim()).unwrap();
        assert_eq!(
            usize::try_from(summary["compiles"].as_u64().unwrap()).unwrap(),
            text.lines().count()
        );
        // The sub-agent's thread is replayed on its own, apart from the main thread.
        if f.ends_with("spotter/subagent.jsonl") {
            let threads = summary["threads"].as_array().unwrap();
            assert_eq!(threads.len(), 1, "{summary}");
            assert_eq!(threads[0]["agent_id"], "afb92ff");
            assert_eq!(threads[0]["records"], 19);
            assert!(threads[0]["compiles"].as_u64().unwrap() >= 4, "{summary}");
            assert!(
                threads[0]["error_samples"].as_u64().unwrap() >= 3,
                "{summary}"
            );
        }
    }
    assert!(total_compiles > 40);
    let _ = ctx(&home).args(["daemon", "stop"]).output();
}

/// A session whose usage recorded one-hour cache writes is priced at the one-hour rate
/// without `--cache-ttl`: its recorded cost lies above the five-minute pricing of the same
/// calls and at most at the all-one-hour pricing.
#[test]
fn replay_prices_recorded_one_hour_writes_at_the_one_hour_rate() {
    let guard = Home::new();
    let home = guard.home.clone();
    let short = common::fixtures().join("spotter/short.jsonl");
    let summary = |ttl: Option<&str>| -> Value {
        let mut c = ctx(&home);
        c.args(["replay", "--json"]).arg(&short);
        if let Some(t) = ttl {
            c.args(["--cache-ttl", t]);
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(String::from_utf8_lossy(&out.stderr).trim()).unwrap()
    };
    let source = summary(None);
    assert_eq!(source["cache_ttl"], "source");
    assert!(
        source["recorded_cache_write_1h_tokens"].as_u64().unwrap() > 0,
        "{source}"
    );
    let five = summary(Some("5m"));
    let hour = summary(Some("1h"));
    assert_eq!(five["recorded_cache_write_1h_tokens"], 0);
    let cost = |s: &Value| s["recorded_cost_total"].as_f64().unwrap();
    assert!(cost(&source) > cost(&five), "{source} {five}");
    assert!(cost(&source) <= cost(&hour) + 1e-9, "{source} {hour}");
    let _ = ctx(&home).args(["daemon", "stop"]).output();
}

#[test]
fn an_external_memory_worker_writes_the_memory_while_appends_continue() {
    let guard = Home::new();
    let (dir, home) = (&guard.dir, guard.home.clone());
    let created = json_out(
        ctx(&home)
            .args(["session", "new", "--json", "--cwd"])
            .arg(dir.path()),
    );
    let sid = created["session_id"].as_str().unwrap().to_string();
    // Hand the memory to an external worker.
    let socket = home.join("ctxd.sock");
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "session.update",
        "params": {"session_id": sid, "settings": {"memory": {"extractor": "external"}}}});
    let (_, text) = common::raw_http(&socket, &body.to_string());
    assert!(text.contains("\"result\""), "{text}");
    let mut worker = ctx(&home)
        .args(["memory-worker", "--session", &sid])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The worker says so once it is subscribed: appends from then on reach it.
    let mut worker_err = std::io::BufReader::new(worker.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut worker_err, &mut line).unwrap();
    assert!(line.contains("memory worker: serving 1 session"), "{line}");
    for i in 0..12 {
        let records = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "transcript.append", "params": {"session_id": sid, "records": [
            {"type": "user", "content": format!("task {i}: {}", "q".repeat(6000))},
            {"type": "assistant", "message_id": format!("m{i}"), "content": [{"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {"command": format!("make step{i}")}}]},
            {"type": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "ok"}]},
            {"type": "assistant", "message_id": format!("n{i}"), "content": format!("step {i} done")}
        ]}});
        let (_, text) = common::raw_http(&socket, &records.to_string());
        assert!(text.contains("\"appended\""), "{text}");
    }
    let mut written = Value::Null;
    for _ in 0..200 {
        let out = ctx(&home)
            .args(["memory", "show", &sid, "--json"])
            .output()
            .unwrap();
        let m: Value = serde_json::from_slice(&out.stdout).unwrap();
        if m["version"].as_u64().unwrap_or(0) >= 1 {
            written = m;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = worker.kill();
    let _ = worker.wait();
    assert!(
        written["writer"]
            .as_str()
            .unwrap_or_default()
            .starts_with("worker:"),
        "{written}"
    );
    assert!(written["document"].as_str().unwrap().contains("make step"));
    let _ = ctx(&home).args(["daemon", "stop"]).output();
}

#[test]
fn import_of_non_utf8_input_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.jsonl");
    let mut bytes = b"{\"type\":\"user\"}\n{\"type\":\"user\",\"x\":\"".to_vec();
    bytes.extend_from_slice(&[0xc3, 0x28, b'"', b'}', b'\n']);
    std::fs::write(&file, bytes).unwrap();
    let d = common::Daemon::start();
    let out = ctx(&d.home)
        .arg("--socket")
        .arg(&d.socket)
        .args(["--no-start", "import"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 2") && err.contains("not valid UTF-8"),
        "{err}"
    );
}

#[test]
fn skills_and_capabilities_show_what_the_model_was_told() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    let skill = project.join(".claude/skills/review/SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    std::fs::write(&skill, "---\ndescription: Review a change\n---\nSteps.\n").unwrap();
    // `ctx` gives the daemon it starts a HOME of its own: no ~/.claude of the machine.
    let run = |args: &[&str]| {
        let out = ctx(&home).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let created: Value = serde_json::from_str(&run(&[
        "session",
        "new",
        "--json",
        "--cwd",
        project.to_str().unwrap(),
    ]))
    .unwrap();
    let sid = created["session_id"].as_str().unwrap().to_string();
    let before = run(&["skills", &sid]);
    assert!(
        before.contains("pending") && before.contains("review: Review a change"),
        "{before}"
    );
    run(&["compile", &sid]);
    let after = run(&["skills", &sid]);
    assert!(after.starts_with("listed"), "{after}");
    let json: Value = serde_json::from_str(&run(&["skills", "--json", &sid])).unwrap();
    assert_eq!(json["skills"][0]["state"], "listed");
    let caps = run(&["capabilities", &sid]);
    assert!(
        caps.contains("tools:\n  (none)") && caps.contains("mcp servers:"),
        "{caps}"
    );
    run(&["daemon", "stop"]);
}

fn run(c: &mut Command) -> (bool, String, String) {
    let out = c.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn stop(home: &std::path::Path) {
    let _ = ctx(home).args(["daemon", "stop"]).output();
}

#[test]
fn session_set_changes_every_kind_of_setting_by_id_prefix_and_features_say_how_to_enable() {
    let guard = Home::new();
    let (dir, home) = (&guard.dir, guard.home.clone());
    let new = |home: &std::path::Path| {
        json_out(
            ctx(home)
                .args(["session", "new", "--json", "--cwd"])
                .arg(dir.path()),
        )["session_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let sid = new(&home);
    let prefix = &sid[..sid.len() - 4];
    // `last` and the end of an id name the session too.
    let (ok, out, err) = run(ctx(&home).args(["read", "last", "--json"]));
    assert!(ok, "{err}");
    assert!(out.contains("records"), "{out}");
    let (ok, _, err) = run(ctx(&home).args(["read", &sid[sid.len() - 6..], "--json"]));
    assert!(ok, "the end of the id: {err}");

    let (ok, _, err) = run(ctx(&home).args(["snip", prefix, "aaaaaa", "bbbbbb"]));
    assert!(!ok);
    assert!(
        err.contains("snip is off")
            && err.contains(&format!("ctx session set {sid} snip_enabled=true")),
        "{err}"
    );

    let s = json_out(ctx(&home).args([
        "session",
        "set",
        prefix,
        "snip_enabled=true",
        "collapse.enabled=true",
        "memory.extractor=external",
        "summariser={\"kind\":\"embedded\"}",
        "--json",
    ]));
    assert_eq!(s["snip_enabled"], true);
    assert_eq!(s["collapse"]["enabled"], true);
    assert_eq!(
        s["collapse"]["target_pct"], 70,
        "other members keep their values"
    );
    assert_eq!(s["memory"]["extractor"], "external");
    assert_eq!(s["summariser"]["kind"], "embedded");
    let s = json_out(ctx(&home).args([
        "session",
        "set",
        prefix,
        "--set-json",
        r#"{"microcompact": {"time_based": true}, "snip_enabled": null}"#,
        "--json",
    ]));
    assert_eq!(s["microcompact"]["time_based"], true);
    assert!(
        s.get("snip_enabled").is_none(),
        "null restores the default: {s}"
    );
    assert_eq!(s["collapse"]["enabled"], true);

    // A typo names the setting and changes nothing.
    let (ok, _, err) = run(ctx(&home).args(["session", "set", prefix, "colapse.enabled=true"]));
    assert!(!ok);
    assert!(err.contains("colapse"), "{err}");
    let (ok, out, _) = run(ctx(&home).args(["session", "set", prefix, "--list"]));
    assert!(ok);
    assert!(
        out.contains("collapse.enabled = true") && out.contains("plan_mode = false"),
        "{out}"
    );
    // Every kind of setting is listed, those left at their default too.
    for key in [
        "attachments.collect_timeout_ms = 1000",
        "hooks.disabled = false",
        "language = null",
        "output_style = null",
        "summariser.kind = \"embedded\"",
    ] {
        assert!(out.contains(key), "no `{key}` in:\n{out}");
    }

    // Prefixes: unknown and ambiguous ones are explained.
    let (ok, _, err) = run(ctx(&home).args(["session", "show", "zzzz"]));
    assert!(
        !ok && err.contains("no session has the id `zzzz`, or an id that starts or ends with it"),
        "{err}"
    );
    let other = new(&home);
    let common: String = sid
        .chars()
        .zip(other.chars())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect();
    let (ok, _, err) = run(ctx(&home).args(["session", "show", &common]));
    assert!(
        !ok && err.contains("is the start of 2 session ids"),
        "{common}: {err}"
    );
    stop(&home);
}

#[test]
fn events_are_quiet_on_a_closed_pipe_and_fail_when_the_daemon_is_lost() {
    use std::io::BufRead;
    let guard = Home::new();
    let (dir, home) = (&guard.dir, guard.home.clone());
    let sid = json_out(
        ctx(&home)
            .args(["session", "new", "--json", "--cwd"])
            .arg(dir.path()),
    )["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let append = |text: &str| {
        let mut c = ctx(&home);
        c.args(["append", &sid])
            .stdin(Stdio::piped())
            .stdout(Stdio::null());
        let mut child = c.spawn().unwrap();
        use std::io::Write;
        writeln!(
            child.stdin.take().unwrap(),
            r#"{{"type":"user","content":"{text}"}}"#
        )
        .unwrap();
        assert!(child.wait().unwrap().success());
    };
    append("one");

    let follow = |home: &std::path::Path| {
        let mut c = ctx(home);
        c.args(["events", &sid, "--after", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        // The replay of record 1 proves the subscription is live.
        let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        assert_eq!(first["kind"], "records_appended");
        assert!(first["seq"].as_u64().unwrap() >= 1, "{first}");
        (child, lines)
    };

    // A reader that goes away: the next event ends ctx quietly.
    let (mut child, lines) = follow(&home);
    drop(lines);
    append("two");
    let out = wait_with_deadline(&mut child);
    assert!(out.0.success(), "{out:?}");
    assert_eq!(out.1, "", "no panic or error on a closed pipe");

    // A daemon that goes away: a non-zero exit that says so.
    let (mut child, _lines) = follow(&home);
    stop(&home);
    let (status, err) = wait_with_deadline(&mut child);
    assert!(!status.success());
    assert!(err.contains("lost the connection to ctxd"), "{err}");
}

fn wait_with_deadline(child: &mut std::process::Child) -> (std::process::ExitStatus, String) {
    use std::io::Read;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status, err);
        }
        assert!(std::time::Instant::now() < deadline, "ctx did not exit");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn demo_and_replay_remove_their_sessions_unless_kept() {
    let guard = Home::new();
    let home = guard.home.clone();
    let count = || {
        json_out(ctx(&home).args(["session", "list", "--json"]))["sessions"]
            .as_array()
            .unwrap()
            .len()
    };
    let demo = json_out(ctx(&home).args(["demo", "--json"]));
    assert_eq!(demo["kept"], false);
    // The figure is the compiled request's, not the imported session's last usage.
    let (tokens, bytes) = (
        demo["metadata"]["tokens"]["estimated_tokens"]
            .as_f64()
            .unwrap(),
        demo["metadata"]["request_bytes"].as_f64().unwrap(),
    );
    assert!(
        (tokens - bytes / 4.0).abs() <= bytes / 16.0,
        "{tokens} tokens for {bytes} bytes"
    );
    assert_eq!(count(), 0);
    json_out(ctx(&home).args(["demo", "--keep", "--json"]));
    assert_eq!(count(), 1);
    // In plain words: no internal names, and how to stop what keeps running.
    let (ok, out, err) = run(ctx(&home).arg("demo"));
    assert!(ok, "{err}");
    for internal in ["anchor", "__SYSTEM_PROMPT_DYNAMIC_BOUNDARY__", "{\""] {
        assert!(!out.contains(internal), "`{internal}` in:\n{out}");
    }
    assert!(
        out.contains("tokens (estimated from its characters)"),
        "{out}"
    );
    assert!(out.contains("stop it with `ctx daemon stop`"), "{out}");
    assert_eq!(count(), 1);
    let short = common::fixtures().join("spotter/short.jsonl");
    let (ok, out, err) = run(ctx(&home).arg("replay").arg(&short));
    assert!(ok, "{err}");
    assert!(out.contains("(removed; --keep keeps it)"), "{out}");
    assert!(
        out.contains("as far as the source's call read them"),
        "the figures are explained: {out}"
    );
    assert_eq!(count(), 1);
    let (ok, _, err) = run(ctx(&home).arg("replay").arg(&short).arg("--keep"));
    assert!(ok, "{err}");
    assert_eq!(count(), 2);
    stop(&home);
}

#[test]
fn completions_for_each_shell() {
    let dir = tempfile::tempdir().unwrap();
    for (shell, marker) in [
        ("bash", "complete -F _ctx"),
        ("zsh", "#compdef ctx"),
        ("fish", "complete -c ctx"),
    ] {
        let (ok, out, err) = run(ctx(dir.path()).args(["completions", shell]));
        assert!(ok, "{err}");
        assert!(out.contains(marker), "{shell}: no `{marker}`");
        assert!(out.contains("session"), "{shell}: no subcommands");
    }
    // Completions need no daemon: none was started.
    assert!(!dir.path().join("ctxd.sock").exists());
}

/// `ctx completions bash | head -1`: the reader goes away after one line; ctx exits 0
/// without a panic.
#[test]
fn completions_into_a_closed_pipe_exit_quietly() {
    let dir = tempfile::tempdir().unwrap();
    // The reader is gone before ctx writes its first byte.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = ctx(dir.path())
        .args(["completions", "bash"])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {err}", out.status);
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn ctxd_logs_json_lines_on_request() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(common::ctxd_bin());
    if let Some(url) = common::store_for_home(dir.path()) {
        cmd.env("CTXD_STORE", url);
    }
    let mut child = cmd
        .arg("--home")
        .arg(dir.path())
        .args(["--log-format", "json", "--log", "info"])
        .env("HOME", dir.path())
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let line = std::io::BufReader::new(child.stderr.take().unwrap())
        .lines()
        .next()
        .unwrap()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(v["level"], "INFO", "{v}");
    assert!(v["fields"]["message"].is_string(), "{v}");
}

/// An error is said once: `ctx import /nonexistent` named the OS error twice.
#[test]
fn a_missing_file_is_reported_once() {
    let guard = Home::new();
    let (ok, _, err) = run(ctx(&guard.home).args(["import", "/nonexistent/session.jsonl"]));
    assert!(!ok);
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

/// A session in `cwd` whose provider is `model`; the daemon `ctx` starts for it gets the
/// provider's key from `ctx`'s environment.
fn session_with_provider(
    home: &std::path::Path,
    cwd: &std::path::Path,
    model: &common::ScriptedModel,
) -> String {
    let sid = json_out(
        ctx(home)
            .env("CTXD_CLI_TEST_KEY", "sk-cli-test")
            .args(["session", "new", "--json", "--cwd"])
            .arg(cwd),
    )["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let provider = format!(
        r#"provider={{"kind": "anthropic", "base_url": "{}", "api_key_env": "CTXD_CLI_TEST_KEY"}}"#,
        model.url
    );
    let (ok, _, err) = run(ctx(home).args(["session", "set", &sid, &provider]));
    assert!(ok, "{err}");
    sid
}

/// `ctx send SID PROMPT` appends the prompt, runs one turn through the session's provider
/// (here a scripted Messages API) and prints the answer: text as text, the tool call on
/// a line of its own, then the usage.
#[test]
fn ctx_send_appends_the_prompt_and_prints_the_answer() {
    let guard = Home::new();
    let (dir, home) = (&guard.dir, guard.home.clone());
    let log = dir.path().join("requests.jsonl");
    let model = common::ScriptedModel::start(&log, None);
    let sid = session_with_provider(&home, dir.path(), &model);
    let (ok, out, err) = run(ctx(&home).args(["send", &sid, "What does README.md say?"]));
    assert!(ok, "{err}");
    assert!(out.contains("Let me read it."), "{out}");
    assert!(out.contains("[tool call Read toolu_scripted_1:"), "{out}");
    assert!(out.contains("tool_use; 100 tokens in"), "{out}");
    // --json: the turn's events, a line each, from started to finished.
    let (ok, out, err) = run(ctx(&home).args(["send", &sid, "And now?", "--json"]));
    drop(model);
    assert!(ok, "{err}");
    let kinds: Vec<String> = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"].to_string())
        .collect();
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("\"started\""),
        "{out}"
    );
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("\"finished\""),
        "{out}"
    );
    assert!(kinds.len() > 4, "{out}");
    let sent = std::fs::read_to_string(&log).unwrap();
    assert!(
        sent.contains("What does README.md say?"),
        "the prompt went out: {sent}"
    );
    assert!(sent.contains(r#""x-api-key": "sk-cli-test""#), "{sent}");
}

/// Ctrl-C during `ctx send` cancels the turn in the daemon: ctx says so, and no answer
/// is appended afterwards.
#[test]
fn ctrl_c_during_ctx_send_cancels_the_turn() {
    let guard = Home::new();
    let (dir, home) = (&guard.dir, guard.home.clone());
    let log = dir.path().join("requests.jsonl");
    let model = common::ScriptedModel::start(&log, Some(30));
    let sid = session_with_provider(&home, dir.path(), &model);
    let send = ctx(&home)
        .args(["send", &sid, "hello"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The turn is running once its request reached the provider.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::fs::read_to_string(&log).unwrap_or_default().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the turn never reached the provider"
        );
        std::thread::yield_now();
    }
    let pid = send.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let out = send.wait_with_output().unwrap();
    drop(model);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cancelled"), "{err}");
    let read = json_out(ctx(&home).args(["read", &sid, "--json"]));
    let kinds: Vec<&str> = read["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert!(
        !kinds.contains(&"assistant"),
        "nothing was appended: {kinds:?}"
    );
}

/// A constructed session whose answers are known: `make` runs twice, then the user comes
/// back after ten minutes and the model names a symbol only the first run printed.
fn policy_session() -> String {
    let usage = |write: u64, read: u64| {
        serde_json::json!({"input_tokens": 3, "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read, "output_tokens": 20})
    };
    let first = format!(
        "error: undefined symbol parse_widget_row\n{}",
        "  at a long, long stack frame of the failing build\n".repeat(40)
    );
    let lines = [
        serde_json::json!({"type": "user", "uuid": "u0", "parentUuid": null, "timestamp": "2026-11-29T10:00:00Z",
            "message": {"role": "user", "content": "build it"}}),
        serde_json::json!({"type": "assistant", "uuid": "a0", "parentUuid": "u0", "timestamp": "2026-11-29T10:00:05Z",
            "message": {"id": "m0", "role": "assistant", "model": "claude-sonnet-4-5", "usage": usage(6000, 0),
                "content": [{"type": "tool_use", "id": "t0", "name": "Bash", "input": {"command": "make"}}]}}),
        serde_json::json!({"type": "user", "uuid": "u1", "parentUuid": "a0", "timestamp": "2026-11-29T10:00:10Z",
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t0", "content": first}]}}),
        serde_json::json!({"type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-11-29T10:00:20Z",
            "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5", "usage": usage(600, 6000),
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}]}}),
        serde_json::json!({"type": "user", "uuid": "u2", "parentUuid": "a1", "timestamp": "2026-11-29T10:00:30Z",
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "make: *** [all] Error 1"}]}}),
        serde_json::json!({"type": "assistant", "uuid": "a2", "parentUuid": "u2", "timestamp": "2026-11-29T10:10:30Z",
            "message": {"id": "m2", "role": "assistant", "model": "claude-sonnet-4-5", "usage": usage(6700, 0),
                "content": [{"type": "text", "text": "The build needs parse_widget_row."}]}}),
    ];
    lines.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn replay_compares_the_policies_and_names_the_premature_clears() {
    let guard = Home::new();
    let home = guard.home.clone();
    std::fs::write(guard.dir.path().join("session.jsonl"), policy_session()).unwrap();
    // The rerun lost the symbol, so it does not supersede the first run: the stale
    // rule (off by default) clears it, and the model names the symbol afterwards.
    let stale = r#"{"stale_after_rounds": 1, "keep_recent": 0, "touch_by_use": false}"#;
    let (ok, out, err) = run(ctx(&home).current_dir(guard.dir.path()).args([
        "replay",
        "--compare",
        "--lean",
        stale,
        "session.jsonl",
    ]));
    assert!(ok, "{err}");
    insta::assert_snapshot!("replay_compare", out);
    let both = json_out(ctx(&home).current_dir(guard.dir.path()).args([
        "replay",
        "--compare",
        "--json",
        "--lean",
        stale,
        "session.jsonl",
    ]));
    let lean = &both["lean"]["clears"];
    assert_eq!(lean["results"], 1);
    assert_eq!(lean["premature"], 1);
    assert_eq!(lean["examples"][0]["item"], "parse_widget_row");
    assert_eq!(lean["examples"][0]["used_at_line"], 6);
    assert_eq!(both["claude_code"]["clears"]["results"], 0);
    // A bad --lean is refused before anything runs.
    let (ok, _, err) = run(ctx(&home).args(["replay", "--lean", "{\"nope\": 1}", "session.jsonl"]));
    assert!(
        !ok && err.contains("--lean is not a settings.lean object"),
        "{err}"
    );
}

/// A `ctx send` whose turn fails leaves its prompt in the session; sending the same
/// prompt again retries the turn without appending the prompt a second time.
#[test]
fn a_retried_ctx_send_does_not_append_its_prompt_twice() {
    let guard = Home::new();
    let (dir, home) = (&guard.dir, guard.home.clone());
    let log = dir.path().join("requests.jsonl");
    let model = common::ScriptedModel::start(&log, None);
    let sid = session_with_provider(&home, dir.path(), &model);
    // Nobody listens here: the turn fails.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let refusing = format!(
        r#"provider={{"kind": "anthropic", "base_url": "http://{closed}", "api_key_env": "CTXD_CLI_TEST_KEY", "max_retries": 0}}"#
    );
    let (ok, _, err) = run(ctx(&home).args(["session", "set", &sid, &refusing]));
    assert!(ok, "{err}");
    for _ in 0..2 {
        let (ok, _, err) = run(ctx(&home).args(["send", &sid, "Hello there"]));
        assert!(!ok, "the turn failed: {err}");
    }
    let working = format!(
        r#"provider={{"kind": "anthropic", "base_url": "{}", "api_key_env": "CTXD_CLI_TEST_KEY"}}"#,
        model.url
    );
    let (ok, _, err) = run(ctx(&home).args(["session", "set", &sid, &working]));
    assert!(ok, "{err}");
    let (ok, _, err) = run(ctx(&home).args(["send", &sid, "Hello there"]));
    assert!(ok, "{err}");
    let read = json_out(ctx(&home).args(["read", &sid, "--json"]));
    let asked = read["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["type"] == "user" && r["content"][0]["text"] == "Hello there")
        .count();
    assert_eq!(asked, 1, "{read}");
}

/// `ctx daemon stop` returns once the daemon has exited, not when it starts stopping.
#[test]
fn ctx_daemon_stop_returns_once_the_daemon_has_exited() {
    let d = common::Daemon::start();
    let mut d = d;
    let out = Command::new(env!("CARGO_BIN_EXE_ctx"))
        .arg("--socket")
        .arg(&d.socket)
        .args(["daemon", "stop"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let child = d.child.as_mut().unwrap();
    let state = std::fs::read_to_string(format!("/proc/{}/stat", child.id())).unwrap_or_default();
    let exited = child.try_wait().unwrap();
    assert!(
        exited.is_some(),
        "ctx daemon stop returned while the daemon still ran: {state}\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The daemon `ctx` starts keeps its directory 0700 and its log 0600: the log names the
/// user's sessions and files, and whoever creates the directory (here ctx, before the
/// daemon runs) decides its mode.
#[test]
fn an_auto_started_daemon_has_a_private_directory_and_log() {
    use std::os::unix::fs::PermissionsExt;
    let guard = Home::new();
    let home = guard.home.clone();
    json_out(ctx(&home).args(["daemon", "status", "--json"]));
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&home), 0o700, "socket directory {}", home.display());
    assert_eq!(mode(&home.join("ctxd.log")), 0o600, "log");
}

/// The daemon `ctx` starts rotates its log: one that runs for months keeps a bounded
/// log (the size bound comes from the environment `ctx` passes on).
#[test]
fn an_auto_started_daemon_rotates_its_log() {
    let guard = Home::new();
    let home = guard.home.clone();
    let status = || {
        ctx(&home)
            .env("CTXD_LOG", "debug")
            .env("CTXD_LOG_MAX_BYTES", "1024")
            .args(["daemon", "status", "--json"])
            .output()
            .unwrap()
    };
    let rotated = home.join("ctxd.log.1");
    for _ in 0..200 {
        assert!(status().status.success());
        if rotated.exists() {
            break;
        }
    }
    assert!(rotated.exists(), "no rotation of {}", home.display());
    let current = std::fs::metadata(home.join("ctxd.log")).unwrap().len();
    assert!(current < 64 * 1024, "ctxd.log holds {current} bytes");
}

/// `ctx export SID > f.jsonl && ctx import f.jsonl` gives a session compiling the same
/// bytes as the original, for every fixture that imports; the export of the re-import is
/// the same file but for the session ids, so nothing is lost on a second round either.
#[test]
fn export_then_import_compiles_the_same_bytes_for_every_fixture() {
    let guard = Home::new();
    let home = guard.home.clone();
    let mut checked = 0;
    // No fixture carries a content-replacement line: one made of a fixture's first result.
    let heavy = common::fixtures().join("spotter/tool_heavy.jsonl");
    let text = std::fs::read_to_string(&heavy).unwrap();
    let first_result = text
        .split("\"tool_use_id\":\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .unwrap()
        .to_owned();
    let replaced = guard.dir.path().join("replaced.jsonl");
    let line = serde_json::json!({"type": "content-replacement", "replacements": [
        {"kind": "tool-result", "toolUseId": first_result, "replacement": "[shown instead]"}]});
    std::fs::write(&replaced, format!("{text}{line}\n")).unwrap();
    for f in common::fixture_files().into_iter().chain([replaced]) {
        let imported = ctx(&home).arg("import").arg(&f).output().unwrap();
        if !imported.status.success() {
            continue;
        }
        let original = String::from_utf8(imported.stdout)
            .unwrap()
            .trim()
            .to_owned();
        let out = ctx(&home).args(["export", &original]).output().unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            f.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let file = guard.dir.path().join("export.jsonl");
        std::fs::write(&file, &out.stdout).unwrap();
        let again = json_out(ctx(&home).arg("import").arg(&file).arg("--json"));
        let copy = again["session_id"].as_str().unwrap().to_owned();
        assert_eq!(
            compile_at_last(&home, &copy),
            compile_at_last(&home, &original),
            "{}",
            f.display()
        );
        let second = ctx(&home).args(["export", &copy]).output().unwrap();
        assert_eq!(
            String::from_utf8(second.stdout)
                .unwrap()
                .replace(&copy, &original),
            String::from_utf8(out.stdout).unwrap(),
            "{}",
            f.display()
        );
        checked += 1;
    }
    assert!(checked > 5, "only {checked} fixtures imported");
    // `ctx backup` and `ctx gc` reach their methods (a PostgreSQL store is backed up
    // with pg_dump, and says so).
    let copy = guard.dir.path().join("copy.db");
    if common::store_for_home(&home).is_none() {
        let backup = json_out(ctx(&home).arg("--json").arg("backup").arg(&copy));
        assert_eq!(
            backup["bytes"].as_u64(),
            Some(std::fs::metadata(&copy).unwrap().len())
        );
    } else {
        let (ok, _, err) = run(ctx(&home).arg("backup").arg(&copy));
        assert!(!ok && err.contains("pg_dump"), "{err}");
    }
    let gc = json_out(ctx(&home).args(["--json", "gc", "--max-store-bytes", "0", "--dry-run"]));
    assert_eq!(gc["deleted"].as_array().unwrap().len(), checked * 2, "{gc}");
    stop(&home);
}

/// A Claude Code 2.1.3xx transcript's recorded-call lines (`api-request`, `cost-state`,
/// ...) are exported as the lines they were: their own type, their own fields.
#[test]
fn recorded_call_lines_are_exported_as_they_came() {
    let guard = Home::new();
    let home = guard.home.clone();
    let probe = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/probe/claude-code-2.1.332.jsonl");
    let kinds = ctxd_protocol::CLAUDE_CODE_RECORDED_CALLS;
    let envelope = ctxd_protocol::CLAUDE_CODE_ENVELOPE;
    let of_kinds = |text: &str| -> Vec<Value> {
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["type"].as_str().is_some_and(|t| kinds.contains(&t)))
            .map(|mut v| {
                let o = v.as_object_mut().unwrap();
                o.retain(|k, _| k == "type" || !envelope.contains(&k.as_str()));
                v
            })
            .collect()
    };
    let source = of_kinds(&std::fs::read_to_string(&probe).unwrap());
    assert!(source.len() >= 7, "{source:?}");
    let sid = String::from_utf8(
        ctx(&home)
            .arg("import")
            .arg(&probe)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_owned();
    let out = ctx(&home).args(["export", &sid]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(of_kinds(&String::from_utf8(out.stdout).unwrap()), source);
    stop(&home);
}

/// The exact request body of a compile at the time of the session's last record, over
/// the socket of the daemon `ctx` started (`ctx compile` takes no clock).
fn compile_at_last(home: &std::path::Path, sid: &str) -> String {
    let socket = home.join("ctxd.sock");
    let call = |method: &str, params: Value| -> String {
        let body =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (status, text) = common::raw_http(&socket, &body.to_string());
        assert_eq!(status, 200, "{text}");
        text
    };
    let read: Value = serde_json::from_str(&call(
        "transcript.read",
        serde_json::json!({"session_id": sid, "limit": 5000}),
    ))
    .unwrap();
    let last = read["result"]["records"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["timestamp"]
        .clone();
    let raw = call(
        "context.compile",
        serde_json::json!({"session_id": sid, "now": last}),
    );
    let start = raw.find("{\"request\":").expect("request") + "{\"request\":".len();
    let end = raw.rfind(",\"metadata\":").expect("metadata");
    raw[start..end].to_string()
}
