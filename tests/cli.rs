//! The `ctx` CLI end to end: it starts a daemon on demand and prints JSON for scripts.

mod common;

use std::process::{Command, Stdio};

use serde_json::Value;

fn ctx(home: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ctx"));
    c.env("CTXD_HOME", home)
        .env_remove("CTXD_SOCKET")
        .env("CTXD_BIN", common::ctxd_bin())
        .stdin(Stdio::null());
    c
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
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");

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

    let status = json_out(ctx(&home).args(["daemon", "status", "--json"]));
    assert_eq!(status["protocol_version"], ctxd_protocol::PROTOCOL_VERSION);
    let stopped = json_out(ctx(&home).args(["daemon", "stop", "--json"]));
    assert_eq!(stopped["stopping"], true);
    // Give it a moment; then nothing answers.
    for _ in 0..200 {
        if !home.join("ctxd.sock").exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!home.join("ctxd.sock").exists());
}

#[test]
fn replay_of_every_fixture_runs_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
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
            summary["compiles"].as_u64().unwrap() as usize,
            text.lines().count()
        );
    }
    assert!(total_compiles > 40);
    let _ = ctx(&home).args(["daemon", "stop"]).output();
}

#[test]
fn an_external_memory_worker_writes_the_memory_while_appends_continue() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
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
    std::thread::sleep(std::time::Duration::from_millis(300));
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
    // The daemon this starts must not read the machine's own ~/.claude.
    let run = |args: &[&str]| {
        let out = ctx(&home)
            .env("HOME", dir.path().join("user-home"))
            .args(args)
            .output()
            .unwrap();
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
