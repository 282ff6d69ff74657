//! Black-box tests of running a daemon for a long time: its log file and its rotation,
//! retention on a schedule, metrics, and socket activation.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use common::Daemon;
use serde_json::{Value, json};

/// Calls `daemon.ping` until `done` holds, failing after 30 s: the daemon's own work is
/// the event waited for, never a fixed sleep.
fn until(d: &Daemon, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        d.call("daemon.ping", json!({}));
    }
}

/// `--log-file` in the home, rotated at a small size: the file and two rotated copies
/// appear, never a third, each closed at the first line past the size, all `0600`, and
/// nothing is logged to stderr meanwhile.
#[test]
fn the_log_file_is_written_and_its_rotation_bounds_it() {
    let d = Daemon::start_with(&[
        "--log-file",
        "ctxd.log",
        "--log-max-bytes",
        "2048",
        "--log-max-files",
        "2",
        "--log",
        "warn,jsonrpsee-server=debug",
    ]);
    let log = d.home.join("ctxd.log");
    let rotated = |n: u32| d.home.join(format!("ctxd.log.{n}"));
    until(&d, "a second rotation", || rotated(2).exists());
    // Past the point where a third copy would have appeared.
    for _ in 0..100 {
        d.call("daemon.ping", json!({}));
    }
    assert!(
        !rotated(3).exists(),
        "more rotated files than --log-max-files"
    );
    for path in [log.clone(), rotated(1), rotated(2)] {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("jsonrpsee-server"), "{}", path.display());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());
        // Closed at the first line that took it past the size, and not before.
        let last_line = text.trim_end().rsplit('\n').next().unwrap_or_default();
        let before_last = text.len() - last_line.len() - 1;
        assert!(before_last <= 2048, "{}: {}", path.display(), text.len());
    }
    for path in [rotated(1), rotated(2)] {
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len > 2048, "{} rotated early at {len}", path.display());
    }
}

/// A bad log filter or rotation size stops the daemon at start, naming what is wrong.
#[test]
fn a_bad_log_setting_is_refused_at_start() {
    let d = Daemon::start();
    for (args, says) in [
        (&["--log", "info,ctxd_engine=loud"][..], "CTXD_LOG"),
        (
            &["--log-file", "x.log", "--log-max-bytes", "10"][..],
            "--log-max-bytes",
        ),
    ] {
        let out = d.command().args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

fn session_with(d: &Daemon, text: &str) -> (String, String) {
    common::session_with_prompt(d, text)
}

fn session_ids(d: &Daemon) -> Vec<String> {
    d.call("session.list", json!({}))["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap().to_owned())
        .collect()
}

/// Retention by quota run by the daemon itself: at start it deletes the least recently
/// updated sessions until the rest fit, as `daemon.gc` would; then, on its schedule with
/// no call and no restart, the older of the two once a newer one takes it over again.
#[test]
fn the_daemon_applies_retention_at_start_and_on_its_schedule() {
    let mut d = Daemon::start();
    for _ in 0..3 {
        session_with(&d, "kept for a while");
    }
    let plan = d.call("daemon.gc", json!({"max_store_bytes": 0, "dry_run": true}));
    let plan = plan["deleted"].as_array().unwrap();
    assert_eq!(plan.len(), 3, "{plan:?}");
    let newest = plan[2]["session_id"].as_str().unwrap().to_owned();
    let newest_at = plan[2]["updated_at"].as_str().unwrap().to_owned();
    // Room for one session's records and not for two.
    let quota = plan[2]["bytes"].as_u64().unwrap() + 100;

    d.args.extend(
        [
            "--retention-max-store-bytes",
            &quota.to_string(),
            "--retention-interval-secs",
            "1",
        ]
        .map(String::from),
    );
    d.kill9();
    d.spawn();
    until(&d, "the pass at start", || session_ids(&d).len() == 1);
    assert_eq!(session_ids(&d), std::slice::from_ref(&newest));

    let later = loop {
        let (sid, at) = session_with(&d, "kept for a while");
        if at > newest_at {
            break sid;
        }
        d.call("session.delete", json!({"session_id": sid}));
    };
    until(&d, "a scheduled pass", || {
        !session_ids(&d).contains(&newest)
    });
    assert_eq!(session_ids(&d), [later]);
}

/// The retention settings are checked at start like any other.
#[test]
fn a_bad_retention_setting_is_refused_at_start() {
    let d = Daemon::start();
    for (args, says) in [
        (&["--retention-idle-days", "0"][..], "--retention-idle-days"),
        (
            &["--retention-interval-secs", "0"][..],
            "--retention-interval-secs",
        ),
    ] {
        let out = d.command().args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let _: Value = d.call("daemon.ping", json!({}));
}

fn metrics(d: &Daemon) -> String {
    d.call("daemon.metrics", json!({}))["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// One HTTP/1.1 GET on 127.0.0.1:`port`; the whole answer.
fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// Compactions are counted by who wrote the summary, their trigger and outcome: a manual
/// compaction of an empty session fails, one of a session with a turn succeeds (the
/// embedded summariser, so `full`).
#[test]
fn metrics_count_compactions_by_kind_trigger_and_outcome() {
    let d = Daemon::start();
    let compactions = |text: &str, outcome: &str| {
        common::metric(
            text,
            "ctxd_compactions_total",
            &[
                ("kind", "full"),
                ("trigger", "manual"),
                ("outcome", outcome),
            ],
        )
        .unwrap_or(0.0)
    };
    let before = metrics(&d);
    let sid =
        d.call("session.create", json!({"cwd": "/tmp", "no_git": true}))["session"]["session_id"]
            .as_str()
            .unwrap()
            .to_owned();
    d.try_call("context.compact", json!({"session_id": sid}))
        .unwrap_err();
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "user", "content": "Name the capital of France."},
            {"type": "assistant", "content": [{"type": "text", "text": "Paris."}]},
        ]}),
    );
    d.call("context.compact", json!({"session_id": sid}));
    let after = metrics(&d);
    assert_eq!(
        compactions(&after, "error") - compactions(&before, "error"),
        1.0,
        "{after}"
    );
    assert_eq!(
        compactions(&after, "ok") - compactions(&before, "ok"),
        1.0,
        "{after}"
    );
    for name in [
        "ctxd_collapses_total",
        "ctxd_memory_extractions_total",
        "ctxd_cache_breaks_total",
    ] {
        assert!(
            common::metric(&after, name, &[]).is_some(),
            "{name}: {after}"
        );
    }
}

/// After known calls, `daemon.metrics` has counted exactly them (by method and outcome,
/// errors by code, one latency sample each) and reports the sessions, the store's size
/// and the uptime; `GET /metrics` on `--metrics` serves the same text, and nothing else.
#[test]
fn metrics_count_known_calls_over_rpc_and_http() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let d = Daemon::start_with(&["--metrics", &format!("127.0.0.1:{port}")]);
    let before = metrics(&d);
    let count = |text: &str, method: &str, outcome: &str| {
        common::metric(
            text,
            "ctxd_rpc_calls_total",
            &[("method", method), ("outcome", outcome)],
        )
        .unwrap_or(0.0)
    };
    for _ in 0..3 {
        d.call("daemon.ping", json!({}));
    }
    session_with(&d, "counted");
    for _ in 0..2 {
        let e = d
            .try_call("session.get", json!({"session_id": "no-such-session"}))
            .unwrap_err();
        assert_eq!(e["code"], ctxd_protocol::SESSION_NOT_FOUND, "{e}");
    }
    let after = metrics(&d);
    let delta = |method, outcome| count(&after, method, outcome) - count(&before, method, outcome);
    assert_eq!(delta("daemon.ping", "ok"), 3.0, "{after}");
    assert_eq!(delta("session.create", "ok"), 1.0, "{after}");
    assert_eq!(delta("session.get", "error"), 2.0, "{after}");
    assert_eq!(delta("daemon.metrics", "ok"), 1.0, "{after}");
    let code = ctxd_protocol::SESSION_NOT_FOUND.to_string();
    let errors = common::metric(
        &after,
        "ctxd_rpc_errors_total",
        &[("method", "session.get"), ("code", &code)],
    );
    assert_eq!(errors, Some(2.0), "{after}");
    let latency = |text: &str| {
        common::metric(
            text,
            "ctxd_rpc_call_duration_seconds_count",
            &[("method", "daemon.ping")],
        )
        .unwrap_or(0.0)
    };
    assert_eq!(latency(&after) - latency(&before), 3.0, "{after}");
    assert_eq!(
        common::metric(&after, "ctxd_sessions_stored", &[]),
        Some(1.0)
    );
    assert!(common::metric(&after, "ctxd_uptime_seconds", &[]).unwrap() > 0.0);
    let store = common::metric(&after, "ctxd_store_file_bytes", &[]);
    match d.store_url() {
        None => assert!(store.unwrap() > 0.0, "{after}"),
        Some(_) => assert_eq!(store, None, "no SQLite file on PostgreSQL"),
    }

    let answer = http_get(port, "/metrics");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("text/plain; version=0.0.4"), "{answer}");
    let body = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
    let scraped = count(body, "daemon.ping", "ok");
    assert_eq!(scraped, count(&after, "daemon.ping", "ok"), "{body}");
    assert!(http_get(port, "/").starts_with("HTTP/1.1 404"));
}

/// Socket activation: a listening socket bound by someone else (systemd; here the test)
/// and passed as fd 3 with `LISTEN_FDS=1` and `LISTEN_PID` is served. A client that
/// connected before the daemon existed gets its answer; the daemon binds no socket of its
/// own (the configured path is the inherited one, whose live listener would make a bind
/// fail with "already serving"); its status names that socket; and the socket file stays
/// when the daemon stops, for the service manager to start the next one on.
#[test]
fn an_inherited_listening_socket_is_served() {
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;

    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
    let socket = run.join("ctxd.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let db = common::TestDb::create().map(std::sync::Arc::new);
    let mut d = Daemon {
        home: dir.path().join("home"),
        socket: socket.clone(),
        dir,
        child: None,
        args: Vec::new(),
        env: Vec::new(),
        store: db.as_ref().map(|d| d.url.clone()),
        db,
    };

    let body = r#"{"jsonrpc":"2.0","id":1,"method":"daemon.status"}"#;
    let mut early = std::os::unix::net::UnixStream::connect(&socket).unwrap();
    early
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        early,
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();

    // `$$` is the shell's pid, which `exec` hands to ctxd: LISTEN_PID names the daemon.
    let inner = d.command();
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(r#"LISTEN_PID=$$ exec "$0" "$@""#)
        .arg(inner.get_program())
        .args(inner.get_args())
        .env("LISTEN_FDS", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(d.dir.path().join("stderr")).unwrap());
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let fd = listener.as_raw_fd();
    // SAFETY: dup2 and fcntl are async-signal-safe; nothing else runs between fork and
    // exec.
    unsafe {
        cmd.pre_exec(move || {
            if fd == 3 {
                if libc::fcntl(3, libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(fd, 3) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    d.child = Some(cmd.spawn().unwrap());

    let mut answer = String::new();
    early.read_to_string(&mut answer).unwrap();
    let stderr_file = d.dir.path().join("stderr");
    let stderr = || std::fs::read_to_string(&stderr_file).unwrap_or_default();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}\n{}", stderr());
    let status: Value = serde_json::from_str(&answer[answer.find("\r\n\r\n").unwrap() + 4..])
        .unwrap_or_else(|e| panic!("{e}: {answer}"));
    assert_eq!(status["result"]["socket"], socket.display().to_string());
    assert!(socket.exists(), "gone after the first answer: {}", stderr());
    assert_eq!(d.call("daemon.ping", json!({}))["pong"], true);
    assert!(!d.home.join("ctxd.sock").exists());

    assert!(d.terminate().success(), "{}", stderr());
    assert!(socket.exists(), "the service manager's socket was removed");
    drop(listener);
}
