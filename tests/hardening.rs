//! Hardening (issue 17): no input, file or client can exhaust, hang, crash or read
//! through ctxd. One black-box test per finding, each against a real daemon.

use crate::common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Daemon, raw_http};
use serde_json::{Value, json};

fn new_session(d: &Daemon, cwd: &Path) -> String {
    d.call(
        "session.create",
        json!({"cwd": cwd, "no_git": true,
               "model": {"model": "m", "context_window": 100_000_000, "max_output_tokens": 8_000}}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn status(d: &Daemon) -> Value {
    d.call("daemon.status", json!({}))
}

/// A JSON-RPC batch of `calls` in one request; every answer must be an error with `code`.
fn batch_all_fail(socket: &Path, calls: &[Value], code: i64) {
    let body: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| json!({"jsonrpc": "2.0", "id": i, "method": c["method"], "params": c["params"]}))
        .collect();
    let (_, text) = raw_http(socket, &Value::Array(body).to_string());
    let answers: Vec<Value> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(answers.len(), calls.len());
    for a in answers {
        assert_eq!(a["error"]["code"], code, "{a}");
    }
}

#[test]
fn unknown_session_ids_leave_no_memory_behind() {
    let d = Daemon::start();
    let calls = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| {
                let sid = format!("00000000-0000-7000-8000-{i:012}");
                match i % 3 {
                    0 => json!({"method": "session.update", "params": {"session_id": sid, "title": "x"}}),
                    1 => json!({"method": "capabilities.set_tools", "params": {"session_id": sid, "tools": []}}),
                    _ => json!({"method": "transcript.reject_media",
                                "params": {"session_id": sid, "record_uuid": sid, "block_index": 0}}),
                }
            })
            .collect()
    };
    // Warm up allocator arenas and connection buffers before the baseline.
    batch_all_fail(&d.socket, &calls(1_000), -32001);
    let before = d.rss_kib();
    for _ in 0..10 {
        batch_all_fail(&d.socket, &calls(1_000), -32001);
    }
    let after = d.rss_kib();
    eprintln!("RSS before {before} KiB, after 10,000 unknown-id calls {after} KiB");
    // Before the fix each call left ~121 KB behind (1.2 GB for 10,000).
    assert!(
        after < before + 30 * 1024,
        "RSS grew from {before} to {after} KiB"
    );
    assert_eq!(status(&d)["loaded_sessions"], 0);
}

#[test]
fn evicted_sessions_reload_byte_identically() {
    let d = Daemon::start_with(&["--max-loaded-sessions", "2"]);
    let fixture = common::fixtures().join("spotter/short.jsonl");
    let ids: Vec<String> = (0..3)
        .map(|_| {
            d.import(&fixture)["session_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let first = d.compile_body_at_last(&ids[0]);
    for id in &ids[1..] {
        d.compile_body_at_last(id);
    }
    assert!(status(&d)["loaded_sessions"].as_u64().unwrap() <= 2);
    // ids[0] was the least recently used: it was unloaded and is reloaded now.
    assert_eq!(d.compile_body_at_last(&ids[0]), first);
    assert!(status(&d)["loaded_sessions"].as_u64().unwrap() <= 2);
}

/// A project directory inside the daemon's temp dir.
fn project(d: &Daemon) -> PathBuf {
    let p = d.dir.path().join("proj");
    std::fs::create_dir_all(p.join(".claude/rules")).unwrap();
    p
}

#[test]
fn a_rule_symlinked_out_of_the_project_is_not_read() {
    let d = Daemon::start();
    let proj = project(&d);
    let outside = d.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.md"), "SECRET-MARKER").unwrap();
    std::fs::write(proj.join(".claude/rules/ok.md"), "RULE-OK-MARKER").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.md"), proj.join(".claude/rules/x.md")).unwrap();
    let sid = new_session(&d, &proj);
    let body = d.compile_body(&sid);
    assert!(body.contains("RULE-OK-MARKER"), "{body}");
    assert!(!body.contains("SECRET-MARKER"), "{body}");
}

#[test]
fn a_fifo_include_is_skipped_at_once() {
    let d = Daemon::start();
    let proj = project(&d);
    std::fs::write(proj.join("CLAUDE.md"), "See @pipe.md\n\nFIFO-TEST-MARKER\n").unwrap();
    let made = Command::new("mkfifo").arg(proj.join("pipe.md")).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let t = Instant::now();
    let sid = new_session(&d, &proj);
    let took = t.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "session.create took {took:?}"
    );
    assert!(d.compile_body(&sid).contains("FIFO-TEST-MARKER"));
}

#[test]
fn a_2_gb_sparse_include_is_refused_by_size() {
    let d = Daemon::start();
    let proj = project(&d);
    std::fs::write(proj.join("CLAUDE.md"), "@big.md\n\nBIG-TEST-MARKER\n").unwrap();
    std::fs::File::create(proj.join("big.md"))
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let sid = new_session(&d, &proj);
    let body = d.compile_body(&sid);
    assert!(body.contains("BIG-TEST-MARKER"));
    assert!(
        body.len() < 1 << 20,
        "the include was read: {} bytes",
        body.len()
    );
    let rss = d.rss_kib();
    assert!(rss < 200 * 1024, "RSS {rss} KiB");
}

/// Whether the daemon still holds `s` open without having answered on it.
fn open_and_silent(s: &UnixStream) -> bool {
    let mut byte = [0u8; 1];
    s.set_nonblocking(true).unwrap();
    let silent = matches!(
        (&*s).read(&mut byte),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
    );
    s.set_nonblocking(false).unwrap();
    silent
}

/// Opens a connection and sends `prefix` (possibly nothing), then stays silent.
fn idle(socket: &Path, prefix: &str) -> UnixStream {
    let mut s = UnixStream::connect(socket).unwrap();
    s.write_all(prefix.as_bytes()).unwrap();
    s
}

const PARTIAL_HEAD: &str = "POST / HTTP/1.1\r\nHost: x\r\n";
const BODY_NEVER_COMES: &str = "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{";
const WS_UPGRADE: &str = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

#[test]
fn two_hundred_idle_connections_do_not_lock_out_a_new_client() {
    let d = Daemon::start();
    let mut held = Vec::new();
    for i in 0..200 {
        let prefix = ["", PARTIAL_HEAD, BODY_NEVER_COMES, WS_UPGRADE][i % 4];
        held.push(idle(&d.socket, prefix));
    }
    let t = Instant::now();
    assert_eq!(d.call("daemon.ping", json!({}))["pong"], true);
    let took = t.elapsed();
    eprintln!("with 200 idle connections a new client was served in {took:?}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    drop(held);
}

#[test]
fn over_the_connection_limit_the_answer_is_json_rpc_and_idle_connections_expire() {
    // The timeout must outlast opening the eight connections and the ninth request on a
    // loaded machine (at 500 ms the first idle ones sometimes expired before the ninth
    // came, and it was served); the wait for the expiry below is bounded separately.
    let timeout = Duration::from_millis(3000);
    let timeout_ms = timeout.as_millis().to_string();
    let d = Daemon::start_with(&[
        "--max-connections",
        "8",
        "--request-timeout-ms",
        &timeout_ms,
    ]);
    // The ninth request proves the limit only while the eight still hold their slots. On
    // a machine loaded by the rest of the suite the round can outlast the timeout (the
    // first ones expire), or the daemon can be done with one of them before the ninth is
    // accepted: then the ninth is rightly served, which proves nothing, and the round is
    // run again.
    let mut rounds = 0;
    let (mut held, status, body) = loop {
        rounds += 1;
        let opened = Instant::now();
        let held: Vec<UnixStream> = (0..8)
            .map(|i| idle(&d.socket, if i % 2 == 0 { "" } else { BODY_NEVER_COMES }))
            .collect();
        let (status, body) = raw_http(
            &d.socket,
            r#"{"jsonrpc":"2.0","id":1,"method":"daemon.ping"}"#,
        );
        let released: Vec<usize> = (0..held.len())
            .filter(|&i| !open_and_silent(&held[i]))
            .collect();
        let proves = opened.elapsed() < timeout && released.is_empty();
        if status == 503 || proves || rounds == 5 {
            break (held, status, body);
        }
        eprintln!(
            "round {rounds} proves nothing: {:?} after opening, connections {released:?} ended",
            opened.elapsed()
        );
    };
    assert_eq!(status, 503, "{body} (round {rounds})");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v["error"]["code"],
        ctxd_protocol::TOO_MANY_CONNECTIONS,
        "{v}"
    );
    assert_eq!(v["error"]["data"]["bound"], "max_connections");
    assert_eq!(v["error"]["data"]["limit"], 8);
    // The server closes each idle connection after the request timeout: wait for it.
    for s in &mut held {
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut sink = Vec::new();
        s.read_to_end(&mut sink)
            .expect("closed by the daemon, not timed out here");
    }
    assert_eq!(d.call("daemon.ping", json!({}))["pong"], true);
}

#[test]
fn a_peer_running_as_another_user_is_refused() {
    let d = Daemon::start();
    let curl = ["setpriv", "curl"].iter().all(|b| {
        Command::new("which")
            .arg(b)
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !curl || unsafe_uid() != 0 {
        eprintln!("skipped: needs root, setpriv and curl to act as another user");
        return;
    }
    // Loosen everything, as a careless (or malicious) chmod could.
    use std::os::unix::fs::PermissionsExt;
    for p in [d.dir.path(), d.socket.parent().unwrap()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&d.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "curl",
            "-s",
        ])
        .arg("--unix-socket")
        .arg(&d.socket)
        .args(["-H", "Content-Type: application/json", "-d"])
        .arg(r#"{"jsonrpc":"2.0","id":1,"method":"daemon.ping"}"#)
        .arg("http://localhost/")
        .output()
        .unwrap();
    let body = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(v["error"]["code"], ctxd_protocol::PEER_REFUSED, "{v}");
    // Root and the daemon's own user still get in.
    assert_eq!(d.call("daemon.ping", json!({}))["pong"], true);
}

fn unsafe_uid() -> u32 {
    std::fs::metadata("/proc/self").map_or(u32::MAX, |m| std::os::unix::fs::MetadataExt::uid(&m))
}

/// A `ctxd` with its own home and socket (the test's own, not a `Daemon`'s).
fn ctxd(home: &Path, socket: &Path) -> Command {
    let mut c = Command::new(common::ctxd_bin());
    c.arg("--home")
        .arg(home)
        .arg("--socket")
        .arg(socket)
        .arg("--managed-root")
        .arg(home.join("no-managed"))
        .env("CTXD_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(url) = common::store_for_home(home) {
        c.env("CTXD_STORE", url);
    }
    c
}

fn fails_with(c: &mut Command, text: &str) {
    let out = c.output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(text), "{err}");
}

#[test]
fn the_socket_directory_and_path_are_respected() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    // A world-writable directory without the sticky bit is refused, and left as it is.
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    fails_with(
        &mut ctxd(&dir.path().join("h1"), &open.join("s.sock")),
        "writable by every user",
    );
    assert_eq!(mode(&open), 0o777);
    // So is a group-writable one: a group member could swap the socket too.
    let group = dir.path().join("group");
    std::fs::create_dir(&group).unwrap();
    std::fs::set_permissions(&group, std::fs::Permissions::from_mode(0o770)).unwrap();
    fails_with(
        &mut ctxd(&dir.path().join("h4"), &group.join("s.sock")),
        "writable by its group",
    );
    assert_eq!(mode(&group), 0o770);
    // A regular file at the socket path is never deleted.
    let file = dir.path().join("file.sock");
    std::fs::write(&file, "keep me").unwrap();
    fails_with(&mut ctxd(&dir.path().join("h2"), &file), "is not a socket");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
    // A sticky shared directory (like /tmp) is used but never chmod-ed.
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let mut d = Daemon::start();
    d.kill9();
    d.socket = shared.join("s.sock");
    d.home = dir.path().join("h3");
    d.spawn();
    assert_eq!(mode(&shared), 0o1777);
    assert_eq!(mode(&d.socket) & 0o777, 0o600);
}

#[test]
fn one_daemon_per_home_whatever_its_socket() {
    let d = Daemon::start();
    let other = d.dir.path().join("other.sock");
    fails_with(&mut ctxd(&d.home, &other), "already uses the home");
    assert!(!other.exists());
    assert_eq!(d.call("daemon.ping", json!({}))["pong"], true);
}

fn records(n: usize, start: usize) -> Vec<Value> {
    (start..start + n)
        .map(|i| match i % 3 {
            0 => json!({"type": "user", "content": format!("look at file {i} and tell me what it does")}),
            1 => json!({"type": "assistant", "message_id": format!("m{i}"), "content": [
                {"type": "text", "text": "reading"},
                {"type": "tool_use", "id": format!("t{i}"), "name": "Grep", "input": {"pattern": format!("x{i}")}}]}),
            _ => json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{}", i - 1),
                "content": "a line of output\n".repeat(100)}]}),
        })
        .collect()
}

#[test]
fn batches_are_bounded_and_a_compile_does_not_block_appends() {
    let d = Daemon::start();
    let sid = new_session(&d, d.dir.path());
    let err = d
        .try_call(
            "transcript.append",
            json!({"session_id": sid, "records": records(100_000, 0)}),
        )
        .unwrap_err();
    assert_eq!(err["code"], -32602, "{err}");
    assert_eq!(err["data"]["field"], "records");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("MAX_APPEND_RECORDS")
    );
    // A batch at the bound is taken whole.
    let r = d.call(
        "transcript.append",
        json!({"session_id": sid, "records": records(10_000, 0)}),
    );
    assert_eq!(r["appended"].as_array().unwrap().len(), 10_000);

    let compiling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let flag = compiling.clone();
    let socket = d.socket.clone();
    let sid2 = sid.clone();
    let compile = std::thread::spawn(move || {
        let t = Instant::now();
        let req = json!({"jsonrpc": "2.0", "id": 1, "method": "context.compile", "params": {"session_id": sid2}});
        let (_, body) = raw_http(&socket, &req.to_string());
        flag.store(false, std::sync::atomic::Ordering::SeqCst);
        (t.elapsed(), body)
    });
    let (mut during, mut slowest, mut i) = (0, Duration::ZERO, 10_000);
    while compiling.load(std::sync::atomic::Ordering::SeqCst) {
        let t = Instant::now();
        d.call(
            "transcript.append",
            json!({"session_id": sid, "records": records(1, i * 3)}),
        );
        let took = t.elapsed();
        slowest = slowest.max(took);
        if compiling.load(std::sync::atomic::Ordering::SeqCst) {
            during += 1;
        }
        i += 1;
    }
    let (compile_took, body) = compile.join().unwrap();
    assert!(body.contains("\"request\""), "{body}");
    eprintln!(
        "compile of 10,000 records took {compile_took:?}; {during} appends answered meanwhile, the slowest in {slowest:?}"
    );
    // The event that proves it: appends were answered while the compile ran. How fast
    // they were is the spine bench's to say; a bound in seconds here fails on a loaded
    // machine.
    assert!(during >= 1, "no append was answered while the compile ran");
}

/// jsonrpsee's own batch bound answers -32010, which is ctxd's "prompt too long": the
/// daemon bounds batches itself, with its own code.
#[test]
fn a_batch_over_the_bound_gets_ctxds_code_not_jsonrpsees() {
    let d = Daemon::start();
    let pings = |n: usize| -> String {
        let calls: Vec<Value> = (0..n)
            .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "daemon.ping"}))
            .collect();
        Value::Array(calls).to_string()
    };
    let (_, text) = raw_http(&d.socket, &pings(1_000));
    let answers: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(answers.len(), 1_000);
    assert!(answers.iter().all(|a| a["result"]["pong"] == true));

    let (_, text) = raw_http(&d.socket, &pings(1_001));
    let answer: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(
        answer["error"]["code"],
        ctxd_protocol::TOO_MANY_CALLS_IN_BATCH,
        "{answer}"
    );
    assert_ne!(answer["error"]["code"], -32010);
    assert_eq!(answer["error"]["data"]["bound"], "max_batch_calls");
    assert_eq!(answer["error"]["data"]["limit"], 1_000);
    assert_eq!(answer["error"]["data"]["calls"], 1_001);
}

#[test]
fn duplicate_uuid_lines_are_a_counted_warning() {
    let d = Daemon::start();
    let line = |u: &str, text: &str| {
        json!({"type": "user", "uuid": u, "timestamp": "2026-01-01T00:00:00Z", "cwd": "/tmp",
               "message": {"role": "user", "content": text}})
        .to_string()
    };
    let a = "11111111-1111-4111-8111-111111111111";
    let b = "22222222-2222-4222-8222-222222222222";
    let jsonl = [
        line(a, "one"),
        line(b, "two"),
        line(a, "one"),
        line(a, "one"),
    ]
    .join("\n");
    let r = d.call("session.import", json!({"jsonl": jsonl}));
    let warnings = r["stats"]["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1, "{r}");
    let w = warnings[0].as_str().unwrap();
    assert!(w.starts_with("2 line(s)") && w.contains("line 3"), "{w}");
}

/// A Read of a file outside the workspace whose result was an error, then a compaction:
/// the new history restores nothing of it. A successful Read of an outside file is left
/// out too (ctxd would read it with its own rights) and named, while a file inside the
/// workspace is restored.
#[test]
fn a_refused_or_outside_read_never_reaches_the_prompt_after_a_compaction() {
    let d = Daemon::start();
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("shadow");
    std::fs::write(&secret, "root:TOP-SECRET-HASH:19000:0:99999:7:::\n").unwrap();
    let shown = outside.path().join("shown.txt");
    std::fs::write(&shown, "OUTSIDE-BUT-SHOWN\n").unwrap();
    let inside = work.path().join("lib.rs");
    std::fs::write(&inside, "fn inside_marker() {}\n").unwrap();
    let sid = new_session(&d, work.path());
    let read = |id: &str, p: &Path| json!({"type": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": p}}]});
    let result = |id: &str, text: &str, err: bool| json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": text, "is_error": err}]});
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "user", "content": "look around"},
            read("t1", &secret), result("t1", "EACCES: permission denied", true),
            read("t2", &shown), result("t2", "     1\tOUTSIDE-BUT-SHOWN", false),
            read("t3", &inside), result("t3", "     1\tfn inside_marker() {}", false),
            {"type": "assistant", "content": "done"},
            {"type": "user", "content": "go on"},
        ]}),
    );
    let compacted = d.call("context.compact", json!({"session_id": sid}));
    let skipped = compacted["restore_skipped"].to_string();
    assert!(
        skipped.contains("shown.txt") && skipped.contains("outside"),
        "{compacted}"
    );
    let body = d.compile_body(&sid);
    assert!(
        !body.contains("TOP-SECRET-HASH"),
        "the refused file reached the prompt"
    );
    assert!(
        body.contains("inside_marker"),
        "the inside file was not restored: {compacted}"
    );
    let restored = compacted["restored_files"].to_string();
    assert!(
        !restored.contains("shadow") && !restored.contains("shown.txt"),
        "{restored}"
    );
}

/// A file outside the workspace that the model read once is not watched: its later
/// change is not read by ctxd and sent as `edited_text_file`.
#[test]
fn a_file_outside_the_workspace_is_not_sent_again_when_it_changes() {
    let d = Daemon::start();
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let f = outside.path().join("notes.txt");
    std::fs::write(&f, "first\n").unwrap();
    let sid = new_session(&d, work.path());
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "user", "content": "read it"},
            {"type": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": f}}]},
            {"type": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "first"}]},
        ]}),
    );
    d.compile_body(&sid);
    std::fs::write(&f, "CHANGED-OUTSIDE-SECRET\n").unwrap();
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "and now?"}]}),
    );
    assert!(!d.compile_body(&sid).contains("CHANGED-OUTSIDE-SECRET"));
    let err = d
        .try_call("context.report_read", json!({"session_id": sid, "path": f}))
        .unwrap_err();
    assert!(err.to_string().contains("outside"), "{err}");
}

/// The plan file is read by ctxd only inside the workspace or its own session directory.
#[test]
fn a_plan_file_outside_the_workspace_is_refused() {
    let d = Daemon::start();
    let work = tempfile::tempdir().unwrap();
    let sid = new_session(&d, work.path());
    let err = d
        .try_call(
            "session.set_plan_mode",
            json!({"session_id": sid, "enabled": true, "plan_file": "/etc/passwd"}),
        )
        .unwrap_err();
    assert_eq!(err["code"], -32602, "{err}");
    let ok = d.call(
        "session.set_plan_mode",
        json!({"session_id": sid, "enabled": true, "plan_file": "PLAN.md"}),
    );
    assert_eq!(ok["plan_mode"], true);
}

/// Two tool ids that differ only where a file name cannot hold a character get two
/// persisted-output files: each `<persisted-output>` points at its own result.
#[test]
fn two_tool_ids_never_share_a_persisted_output_file() {
    let d = Daemon::start();
    let work = tempfile::tempdir().unwrap();
    let sid = d.call(
        "session.create",
        json!({"cwd": work.path(), "no_git": true,
               "tools": [{"name": "Fetch", "input_schema": {"type": "object"}, "max_result_size_chars": 10000}]}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "user", "content": "fetch two"},
            {"type": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_x/1", "name": "Fetch", "input": {"u": 1}},
                {"type": "tool_use", "id": "toolu_x_1", "name": "Fetch", "input": {"u": 2}}]},
            {"type": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_x/1", "content": "S".repeat(20_000)},
                {"type": "tool_result", "tool_use_id": "toolu_x_1", "content": "U".repeat(20_000)}]},
        ]}),
    );
    let body = d.compile_body(&sid);
    let paths: Vec<&str> = body
        .match_indices("Full output saved to: ")
        .map(|(i, m)| {
            let rest = &body[i + m.len()..];
            &rest[..rest.find("\\n").unwrap()]
        })
        .collect();
    assert_eq!(paths.len(), 2, "{body}");
    assert_ne!(paths[0], paths[1]);
    let texts: Vec<String> = paths
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(
        texts[0].starts_with('S') && texts[1].starts_with('U'),
        "{paths:?}"
    );
}

#[test]
fn a_sequence_number_past_the_store_range_is_a_parameter_error() {
    let d = Daemon::start();
    let work = tempfile::tempdir().unwrap();
    let sid = new_session(&d, work.path());
    let err = d
        .try_call(
            "transcript.read",
            json!({"session_id": sid, "after_seq": 9_223_372_036_854_775_808u64}),
        )
        .unwrap_err();
    assert_eq!(err["code"], -32602, "{err}");
    assert_eq!(err["data"]["field"], "after_seq", "{err}");
}

/// At the most verbose level the log holds no request body: records carry what users
/// paste, secrets included.
#[test]
fn request_bodies_are_never_logged_even_at_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (home, socket) = (dir.path().join("home"), dir.path().join("s.sock"));
    let mut child = ctxd(&home, &socket)
        .env(
            "CTXD_LOG",
            "trace,jsonrpsee-http=trace,jsonrpsee-server=trace",
        )
        .spawn()
        .unwrap();
    // Every log line is kept; the one that says the daemon listens is the signal to go on.
    let (listening, up) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut text = String::new();
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("ctxd listening") {
                let _ = listening.send(());
            }
            text.push_str(&line);
            text.push('\n');
        }
        text
    });
    up.recv_timeout(Duration::from_secs(20))
        .expect("ctxd did not come up");
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "session.create",
                      "params": {"cwd": dir.path(), "no_git": true, "title": "PASTED-SECRET-a81f"}});
    let (status, body) = raw_http(&socket, &call.to_string());
    assert_eq!(status, 200, "{body}");
    let sid = serde_json::from_str::<Value>(&body).unwrap()["result"]["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let append = json!({"jsonrpc": "2.0", "id": 2, "method": "transcript.append",
                        "params": {"session_id": sid, "records": [{"type": "user", "content": "sk-ant-PASTED-KEY-77"}]}});
    raw_http(&socket, &append.to_string());
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let _ = child.wait();
    let text = log.join().unwrap();
    assert!(text.lines().count() > 10, "trace logging is on: {text}");
    for secret in ["PASTED-SECRET-a81f", "sk-ant-PASTED-KEY-77"] {
        let leaks: Vec<&str> = text.lines().filter(|l| l.contains(secret)).collect();
        assert!(leaks.is_empty(), "a body was logged: {leaks:#?}");
    }
}

#[test]
fn a_store_password_on_the_command_line_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (home, socket) = (dir.path().join("home"), dir.path().join("s.sock"));
    fails_with(
        ctxd(&home, &socket)
            .env_remove("CTXD_STORE")
            .args(["--store", "postgresql://ctxd:hunter2@127.0.0.1:1/ctxd"]),
        "CTXD_STORE",
    );
    fails_with(
        ctxd(&home, &socket).env_remove("CTXD_STORE").args([
            "--store",
            "postgresql://ctxd@127.0.0.1:1/ctxd?password=hunter2",
        ]),
        "--store-file",
    );
}

/// Rules far larger than the window (3 MB against 200k tokens) used to make every
/// compile fail as too long; the instruction bound follows the window, the rest is
/// skipped, and the session stays usable.
#[test]
fn rules_larger_than_the_window_are_cut_to_a_share_of_it() {
    let d = Daemon::start();
    let work = tempfile::tempdir().unwrap();
    let rules = work.path().join(".claude").join("rules");
    std::fs::create_dir_all(&rules).unwrap();
    for i in 0..30 {
        let line = format!("Rule {i}: keep the code tidy and the tests green. ");
        std::fs::write(
            rules.join(format!("r{i:02}.md")),
            line.repeat(100_000 / line.len()),
        )
        .unwrap();
    }
    let sid = d.call(
        "session.create",
        json!({"cwd": work.path(), "no_git": true,
               "model": {"model": "m", "context_window": 200_000, "max_output_tokens": 8_000}}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "hi"}]}),
    );
    let compiled = d.call("context.compile", json!({"session_id": sid}));
    let est = compiled["metadata"]["tokens"]["estimated_tokens"]
        .as_u64()
        .unwrap();
    assert!(
        est < 100_000,
        "instructions fill {est} tokens of a 200k window"
    );
    assert!(compiled["request"].to_string().contains("Rule 0:"));
}

/// A chain of nested folders in `.claude/rules` cost cubic time (2,000 deep: 75 s). The
/// walk stops at a bounded depth: a rule nested deeper is skipped, one near the top read.
#[test]
fn a_deep_chain_of_rules_folders_is_walked_to_a_bounded_depth() {
    let d = Daemon::start();
    let work = tempfile::tempdir().unwrap();
    let rules = work.path().join(".claude").join("rules");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::write(rules.join("top.md"), "TOP-RULE-TEXT\n").unwrap();
    let mut dir = rules.clone();
    for _ in 0..300 {
        dir.push("a");
    }
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("deep.md"), "DEEP-RULE-TEXT\n").unwrap();
    let sid = new_session(&d, work.path());
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "hi"}]}),
    );
    let body = d.compile_body(&sid);
    assert!(body.contains("TOP-RULE-TEXT"));
    assert!(
        !body.contains("DEEP-RULE-TEXT"),
        "a rule 300 folders deep was read"
    );
}

/// A store URL naming a listener that accepts and never answers: the daemon does not
/// hang at start-up (it used to, past 150 s) but stops with the storage error once the
/// connect deadline has passed.
#[test]
fn a_database_that_accepts_and_never_answers_stops_the_start_with_an_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = std::thread::spawn(move || {
        // Accept and hold every connection, answering nothing.
        let mut open = Vec::new();
        for stream in listener.incoming().take(8) {
            open.push(stream);
        }
        open.len()
    });
    let dir = tempfile::tempdir().unwrap();
    let (home, socket) = (dir.path().join("home"), dir.path().join("s.sock"));
    let child = ctxd(&home, &socket)
        .env(
            "CTXD_STORE",
            format!("postgresql://ctxd@127.0.0.1:{port}/ctxd"),
        )
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    // A bound for the test only: the daemon gives up after its 5 s connect deadline.
    let out = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("ctxd still hangs on a silent database")
        .unwrap();
    let (status, err) = (out.status, String::from_utf8_lossy(&out.stderr).to_string());
    assert!(!status.success());
    assert!(err.contains("did not answer"), "{err}");
    drop(held);
}

/// A checkout's output styles are the project's word, not the user's: while the project
/// is untrusted its style of a name the user also has is not used (the user's is), and a
/// style linked out of the project is never read, trusted or not.
#[test]
fn an_untrusted_projects_output_styles_are_not_used_and_none_links_out() {
    let d = Daemon::start();
    let proj = project(&d);
    let styles = proj.join(".claude/output-styles");
    std::fs::create_dir_all(&styles).unwrap();
    std::fs::write(styles.join("terse.md"), "PROJECT-STYLE-MARKER").unwrap();
    let secret = d.dir.path().join("credentials");
    std::fs::write(&secret, "OUTSIDE-SECRET-MARKER").unwrap();
    std::os::unix::fs::symlink(&secret, styles.join("leak.md")).unwrap();
    let user = d.dir.path().join("user-home/.claude/output-styles");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("terse.md"), "USER-STYLE-MARKER").unwrap();
    let session = |style: &str, trust: bool| {
        d.call(
            "session.create",
            json!({"cwd": proj, "no_git": true,
                   "settings": {"output_style": style, "hooks": {"trust_project": trust}}}),
        )["session"]["session_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let body = d.compile_body(&session("terse", false));
    assert!(body.contains("USER-STYLE-MARKER"), "{body}");
    assert!(!body.contains("PROJECT-STYLE-MARKER"), "{body}");
    let body = d.compile_body(&session("leak", false));
    assert!(!body.contains("OUTSIDE-SECRET-MARKER"), "{body}");
    let body = d.compile_body(&session("terse", true));
    assert!(body.contains("PROJECT-STYLE-MARKER"), "{body}");
    assert!(!body.contains("USER-STYLE-MARKER"), "{body}");
    let body = d.compile_body(&session("leak", true));
    assert!(!body.contains("OUTSIDE-SECRET-MARKER"), "{body}");
}

/// The daemon's own files are never reported as changed, even to a session that watches
/// them (the daemon's home inside its directory): each report is logged, and a log line
/// would be the next change. Another file of that directory still is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemons_own_files_never_fire_file_changed() {
    // SQLite in the daemon's home: its write-ahead log changes with every write.
    let d = Daemon::start_full(&[], None, None);
    let work = d.dir.path().to_path_buf();
    let wal = d.home.join("ctxd.db-wal");
    // Sorts after the home's files: within one batch, changes are reported in path order.
    let sentinel = work.join("z.txt");
    std::fs::write(&sentinel, "one\n").unwrap();
    let sid = new_session(&d, &work);
    assert!(wal.exists(), "the store writes its log");
    for p in [&wal, &sentinel] {
        d.call("context.report_read", json!({"session_id": sid, "path": p}));
    }
    let client = d.client().await;
    let mut sub = client.subscribe(&sid).await.unwrap();
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "a database write"}]}),
    );
    std::fs::write(&sentinel, "two\n").unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let ev = tokio::time::timeout_at(deadline, sub.next())
            .await
            .expect("file_changed in time")
            .unwrap()
            .unwrap();
        if let ctxd_protocol::SessionEvent::FileChanged { path, .. } = ev {
            assert_eq!(path, sentinel.display().to_string());
            break;
        }
    }
}

/// `CTXD_HOME/config.toml` sets any flag below the flags and the environment and above
/// the defaults; `--print-config` shows the outcome with passwords masked. An unknown key
/// or a value the flag refuses stops the daemon before it starts, naming the key.
#[test]
fn the_config_file_sits_below_flags_and_environment_and_names_a_bad_key() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let file = home.join("config.toml");
    let ctxd = |env: &[(&str, &str)], args: &[&str]| {
        let mut c = Command::new(common::ctxd_bin());
        for (k, _) in std::env::vars() {
            if k.starts_with("CTXD_") {
                c.env_remove(k);
            }
        }
        c.arg("--home")
            .arg(&home)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    std::fs::write(
        &file,
        "max_connections = 7\nmax_loaded_sessions = 9\nmax_request_bytes = 4000\n\
         store = \"postgresql://u:hunter2@db.example/ctxd\"\nlog_format = \"json\"\n",
    )
    .unwrap();
    let out = ctxd(
        &[("CTXD_MAX_LOADED_SESSIONS", "11")],
        &["--max-request-bytes", "5000", "--print-config"],
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config: toml::Table = text.parse().unwrap();
    assert_eq!(
        config["max_connections"].as_integer(),
        Some(7),
        "file over default"
    );
    assert_eq!(
        config["max_loaded_sessions"].as_integer(),
        Some(11),
        "env over file"
    );
    assert_eq!(
        config["max_request_bytes"].as_integer(),
        Some(5000),
        "flag over file"
    );
    assert_eq!(
        config["request_timeout_ms"].as_integer(),
        Some(10_000),
        "default"
    );
    assert_eq!(config["log_format"].as_str(), Some("json"));
    assert_eq!(
        config["store"].as_str(),
        Some("postgresql://u:****@db.example/ctxd")
    );
    assert!(!text.contains("hunter2"), "{text}");

    for (bad, key) in [
        ("max_conections = 3\n", "max_conections"),
        ("max_connections = \"many\"\n", "max_connections"),
        ("store_timeout_ms = 5\n", "store_timeout_ms"),
    ] {
        std::fs::write(&file, bad).unwrap();
        let out = ctxd(
            &[],
            &["--socket", &dir.path().join("s.sock").to_string_lossy()],
        );
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(!out.status.success(), "{bad}: started");
        assert!(err.contains(&format!("`{key}`")), "{bad}: {err}");
        assert!(err.contains(&*file.to_string_lossy()), "{bad}: {err}");
        assert!(!dir.path().join("s.sock").exists(), "{bad}: it served");
    }
}
