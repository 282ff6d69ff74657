//! Shared helpers of the black-box tests: a real `ctxd` process on a temp socket and
//! home, raw HTTP over the Unix socket, and an order-preserving JSON pretty-printer.
//!
//! With `CTXD_TEST_PG` set to a PostgreSQL server (an admin URL such as
//! `postgresql:///postgres?host=/tmp/pg&user=ctxd`), every daemon a test starts stores
//! its sessions in a fresh database of its own on that server instead of SQLite.
#![allow(dead_code)]

pub mod hooks;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream as StdUnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/claude-code")
}

/// Every `.jsonl` fixture, sorted.
pub fn fixture_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&fixtures(), &mut out);
    out.sort();
    out
}

pub fn ctxd_bin() -> PathBuf {
    // Tests of the client package find the daemon beside `ctx` (cargo builds both when
    // the workspace's tests run).
    match (
        option_env!("CARGO_BIN_EXE_ctxd"),
        option_env!("CARGO_BIN_EXE_ctx"),
    ) {
        (Some(ctxd), _) => PathBuf::from(ctxd),
        (None, Some(ctx)) => PathBuf::from(ctx).with_file_name("ctxd"),
        (None, None) => PathBuf::from("ctxd"),
    }
}

/// The PostgreSQL server the suite runs against (`CTXD_TEST_PG`), if any.
pub fn test_pg() -> Option<String> {
    std::env::var("CTXD_TEST_PG").ok().filter(|u| !u.is_empty())
}

/// `url` with its database name replaced (`scheme://authority/NAME?query`).
pub fn with_dbname(url: &str, name: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    let authority = before_query.split('/').next().unwrap_or_default();
    let mut out = format!("{scheme}://{authority}/{name}");
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// Runs `statements` one by one on the server `url`. On a thread of its own: the
/// blocking `postgres` client starts a runtime, which a `#[tokio::test]` caller's thread
/// refuses.
pub fn admin_sql(url: &str, statements: &[String]) -> Result<(), String> {
    let (url, statements) = (url.to_string(), statements.to_vec());
    std::thread::spawn(move || {
        let mut c = postgres::Client::connect(&url, postgres::NoTls).map_err(|e| e.to_string())?;
        for s in &statements {
            c.batch_execute(s).map_err(|e| format!("{s}: {e}"))?;
        }
        Ok(())
    })
    .join()
    .map_err(|_| "the admin thread panicked".to_string())?
}

/// A fresh database on the test server, dropped (with its connections) on drop.
pub struct TestDb {
    admin: String,
    name: String,
    pub url: String,
}

impl TestDb {
    /// `None` when the suite runs on SQLite.
    pub fn create() -> Option<TestDb> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let admin = test_pg()?;
        let name = format!(
            "ctxd_t_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        // Two statements: a multi-statement query is one transaction, which DROP
        // DATABASE refuses.
        admin_sql(
            &admin,
            &[
                format!("DROP DATABASE IF EXISTS {name}"),
                format!("CREATE DATABASE {name}"),
            ],
        )
        .expect("create a test database");
        let url = with_dbname(&admin, &name);
        Some(TestDb { admin, name, url })
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let _ = admin_sql(
            &self.admin,
            &[format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            )],
        );
    }
}

/// The `CTXD_STORE` of a daemon that a test starts through `ctx` with `home`: one fresh
/// database per home, kept until the test process ends. `None` on SQLite.
pub fn store_for_home(home: &Path) -> Option<String> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static BY_HOME: Mutex<Option<HashMap<PathBuf, TestDb>>> = Mutex::new(None);
    test_pg()?;
    let mut map = BY_HOME.lock().unwrap_or_else(|p| p.into_inner());
    let map = map.get_or_insert_with(HashMap::new);
    if !map.contains_key(home) {
        map.insert(home.to_path_buf(), TestDb::create()?);
    }
    map.get(home).map(|d| d.url.clone())
}

/// A daemon process owned by a test; killed on drop.
pub struct Daemon {
    pub dir: tempfile::TempDir,
    pub home: PathBuf,
    pub socket: PathBuf,
    pub child: Option<Child>,
    /// Extra `ctxd` arguments (limits) for every spawn.
    pub args: Vec<String>,
    /// Extra environment variables of the daemon's process, for every spawn.
    pub env: Vec<(String, String)>,
    /// Its PostgreSQL store URL (`None`: SQLite in its home).
    pub store: Option<String>,
    /// The test database behind `store` (`CTXD_TEST_PG`), shared with the daemons
    /// started with [`Daemon::start_beside`].
    pub db: Option<std::sync::Arc<TestDb>>,
}

impl Daemon {
    pub fn start() -> Daemon {
        Daemon::start_with(&[])
    }

    /// A daemon started with extra arguments (e.g. `--max-connections 8`).
    pub fn start_with(args: &[&str]) -> Daemon {
        let db = TestDb::create().map(std::sync::Arc::new);
        Daemon::start_full(args, db.as_ref().map(|d| d.url.clone()), db)
    }

    /// A daemon whose process also gets `env` (provider keys, log filters).
    pub fn start_with_env(env: &[(&str, &str)]) -> Daemon {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = TestDb::create().map(std::sync::Arc::new);
        let mut d = Daemon {
            home: dir.path().join("home"),
            socket: dir.path().join("run").join("ctxd.sock"),
            dir,
            child: None,
            args: Vec::new(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            store: db.as_ref().map(|d| d.url.clone()),
            db,
        };
        d.spawn();
        d
    }

    /// A daemon on the PostgreSQL database `url`.
    pub fn start_on(url: &str) -> Daemon {
        Daemon::start_full(&[], Some(url.to_string()), None)
    }

    /// Another daemon (its own home and socket) on the same database as `other`.
    pub fn start_beside(other: &Daemon) -> Daemon {
        let args: Vec<&str> = other.args.iter().map(String::as_str).collect();
        Daemon::start_full(&args, other.store.clone(), other.db.clone())
    }

    pub fn start_full(
        args: &[&str],
        store: Option<String>,
        db: Option<std::sync::Arc<TestDb>>,
    ) -> Daemon {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let socket = dir.path().join("run").join("ctxd.sock");
        let mut d = Daemon {
            dir,
            home,
            socket,
            child: None,
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Vec::new(),
            store,
            db,
        };
        d.spawn();
        d
    }

    /// The store URL this daemon runs with (`None`: SQLite in its home).
    pub fn store_url(&self) -> Option<&str> {
        self.store.as_deref()
    }

    /// Resident set size of the daemon process, in KiB (from /proc).
    pub fn rss_kib(&self) -> u64 {
        self.status_kib("VmRSS")
    }

    /// The daemon process's peak resident set size since it started, in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        self.status_kib("VmHWM")
    }

    fn status_kib(&self, key: &str) -> u64 {
        let pid = self.child.as_ref().expect("running").id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .expect(key)
    }

    pub fn command(&self) -> Command {
        let mut c = Command::new(ctxd_bin());
        // Instruction discovery must not see the machine's own ~/.claude or /etc.
        c.arg("--home")
            .arg(&self.home)
            .arg("--socket")
            .arg(&self.socket)
            .arg("--managed-root")
            .arg(self.dir.path().join("managed"))
            .env("HOME", self.dir.path().join("user-home"))
            .env("CTXD_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .args(&self.args);
        if let Some(url) = self.store_url() {
            c.arg("--store").arg(url);
        }
        c
    }

    /// Starts (or restarts) the process and waits until it answers.
    pub fn spawn(&mut self) {
        let mut child = self.command().spawn().expect("spawn ctxd");
        // Drained all along: a daemon logging more than a pipe holds (errors under load)
        // would otherwise block on its next log line. The tail explains an early exit.
        let tail = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let drain = child.stderr.take().map(|mut e| {
            let tail = tail.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = e.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                    t.push_str(&String::from_utf8_lossy(&buf[..n]));
                    if t.len() > 64 << 10 {
                        let cut = t.ceil_char_boundary(t.len() - (32 << 10));
                        t.drain(..cut);
                    }
                }
            })
        });
        self.child = Some(child);
        let mut drain = drain;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if StdUnixStream::connect(&self.socket).is_ok()
                && self.try_call("daemon.ping", serde_json::json!({})).is_ok()
            {
                return;
            }
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                if let Some(h) = drain.take() {
                    let _ = h.join();
                }
                let err = tail.lock().unwrap_or_else(|p| p.into_inner()).clone();
                panic!("ctxd exited early with {status}: {err}");
            }
            assert!(Instant::now() < deadline, "ctxd did not come up");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Restarts the daemon with its whole log in a file, whose path it returns, at log
    /// level `level` (`None`: the daemon's own default), and waits until it answers.
    pub fn respawn_logging(&mut self, level: Option<&str>) -> PathBuf {
        let log = self.dir.path().join("daemon.log");
        self.kill9();
        let mut cmd = self.command();
        match level {
            Some(l) => cmd.env("CTXD_LOG", l),
            None => cmd.env_remove("CTXD_LOG"),
        };
        cmd.stderr(std::fs::File::create(&log).expect("log file"));
        self.child = Some(cmd.spawn().expect("respawn ctxd"));
        let deadline = Instant::now() + Duration::from_secs(20);
        while StdUnixStream::connect(&self.socket).is_err()
            || self.try_call("daemon.ping", serde_json::json!({})).is_err()
        {
            assert!(Instant::now() < deadline, "the daemon did not come back");
            std::thread::yield_now();
        }
        log
    }

    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM and wait; returns the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let mut c = self.child.take().expect("running");
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(c.id().to_string())
            .status();
        c.wait().expect("wait")
    }

    pub fn raw_http(&self, body: &str) -> (u16, String) {
        raw_http(&self.socket, body)
    }

    pub fn try_call(&self, method: &str, params: Value) -> Result<Value, Value> {
        let req =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (_, body) = raw_http(&self.socket, &req.to_string());
        let v: Value =
            serde_json::from_str(&body).map_err(|e| Value::String(format!("{e}: {body}")))?;
        if let Some(err) = v.get("error") {
            return Err(err.clone());
        }
        Ok(v["result"].clone())
    }

    /// A call that must succeed.
    pub fn call(&self, method: &str, params: Value) -> Value {
        match self.try_call(method, params) {
            Ok(v) => v,
            Err(e) => panic!("{method} failed: {e}"),
        }
    }

    /// The raw `result` text of a call, so byte layout can be compared.
    pub fn call_raw(&self, method: &str, params: Value) -> String {
        let req =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (_, body) = raw_http(&self.socket, &req.to_string());
        let Some(start) = body.find("\"result\":") else {
            panic!("{method} failed: {body}");
        };
        let start = start + "\"result\":".len();
        body[start..body.len() - 1].to_string()
    }

    pub async fn client(&self) -> ctx_client::Client {
        ctx_client::Client::connect(&self.socket)
            .await
            .expect("connect")
    }

    /// How many sessions `session.list` reports.
    pub fn session_count(&self) -> usize {
        self.call("session.list", serde_json::json!({}))["sessions"]
            .as_array()
            .expect("session.list answers with an array of sessions")
            .len()
    }

    pub fn import(&self, path: &Path) -> Value {
        let jsonl = std::fs::read_to_string(path).expect("fixture");
        self.call("session.import", serde_json::json!({ "jsonl": jsonl }))
    }

    /// The exact request body bytes of a compile.
    pub fn compile_body(&self, session: &str) -> String {
        self.compile_body_with(serde_json::json!({ "session_id": session }))
    }

    /// The exact request body bytes of a compile at the time of the session's last
    /// record, so an old transcript does not gain a `date_change` from today's clock.
    pub fn compile_body_at_last(&self, session: &str) -> String {
        let recs = self.call(
            "transcript.read",
            serde_json::json!({ "session_id": session, "limit": 5000 }),
        );
        let last = recs["records"]
            .as_array()
            .and_then(|r| r.last())
            .map_or(Value::Null, |r| r["timestamp"].clone());
        self.compile_body_with(serde_json::json!({ "session_id": session, "now": last }))
    }

    pub fn compile_body_with(&self, params: Value) -> String {
        let raw = self.call_raw("context.compile", params);
        let start = raw.find("{\"request\":").expect("request") + "{\"request\":".len();
        let end = raw.rfind(",\"metadata\":").expect("metadata");
        raw[start..end].to_string()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A `session.create` call built up field by field: a session in `cwd` without git
/// (the machine's repository must not leak into a test), then what the test sets.
///
/// `NewSession::at("/tmp/p").start_date("2026-11-29").settings(json!({..})).create(&d)`
pub struct NewSession(serde_json::Map<String, Value>);

impl NewSession {
    pub fn at(cwd: impl serde::Serialize) -> NewSession {
        let mut params = serde_json::Map::new();
        params.insert("cwd".into(), serde_json::json!(cwd));
        params.insert("no_git".into(), Value::Bool(true));
        NewSession(params)
    }

    pub fn start_date(self, date: &str) -> NewSession {
        self.set("start_date", serde_json::json!(date))
    }

    pub fn settings(self, settings: Value) -> NewSession {
        self.set("settings", settings)
    }

    pub fn tools(self, tools: Value) -> NewSession {
        self.set("tools", tools)
    }

    pub fn model(self, model: Value) -> NewSession {
        self.set("model", model)
    }

    /// Any other field of `session.create`'s params (`null` leaves it out).
    pub fn set(mut self, key: &str, value: Value) -> NewSession {
        if value.is_null() {
            self.0.remove(key);
        } else {
            self.0.insert(key.into(), value);
        }
        self
    }

    /// Creates it; returns its id.
    pub fn create(self, d: &Daemon) -> String {
        let created = d.call("session.create", Value::Object(self.0));
        created["session"]["session_id"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id in {created}"))
            .to_string()
    }
}

/// A session in `/tmp` with one prompt appended: its id and `updated_at`.
pub fn session_with_prompt(d: &Daemon, text: &str) -> (String, String) {
    let sid = NewSession::at("/tmp").create(d);
    d.call(
        "transcript.append",
        serde_json::json!({"session_id": sid, "records": [{"type": "user", "content": text}]}),
    );
    let got = d.call("session.get", serde_json::json!({"session_id": sid}));
    let at = got["session"]["updated_at"]
        .as_str()
        .unwrap_or_else(|| panic!("no updated_at in {got}"))
        .to_owned();
    (sid, at)
}

/// One HTTP/1.1 POST over the Unix socket; returns status and body.
pub fn raw_http(socket: &Path, body: &str) -> (u16, String) {
    let mut s = StdUnixStream::connect(socket).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).ok();
    let req = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        body.len(),
        body
    );
    s.write_all(req.as_bytes()).expect("write");
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).expect("read");
    let text = String::from_utf8_lossy(&resp).to_string();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(rest)
    } else {
        rest.to_string()
    };
    (status, body)
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

/// A runtime of one thread for a test that drives async code (a scripted server, the
/// async client) from a plain `#[test]`.
#[allow(dead_code)] // not every test crate drives async code
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// A Messages API event stream of `events` (each names its own type), as a server
/// sends it.
#[allow(dead_code)] // not every test crate streams
pub fn sse_body(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}

/// Pretty-prints JSON text keeping key order and string bytes exactly as they are, so a
/// snapshot shows the real layout of the request.
pub fn pretty_preserving(json: &str) -> String {
    let mut out = String::with_capacity(json.len() * 2);
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    let chars: Vec<char> = json.chars().collect();
    let mut i = 0;
    let indent = |out: &mut String, d: usize| {
        out.push('\n');
        for _ in 0..d {
            out.push_str("  ");
        }
    };
    while i < chars.len() {
        let c = chars[i];
        if in_str {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        match c {
            '"' => {
                in_str = true;
                out.push(c);
            }
            '{' | '[' => {
                let close = if c == '{' { '}' } else { ']' };
                if chars.get(i + 1) == Some(&close) {
                    out.push(c);
                    out.push(close);
                    i += 2;
                    continue;
                }
                out.push(c);
                depth += 1;
                indent(&mut out, depth);
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                indent(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                indent(&mut out, depth);
            }
            ':' => out.push_str(": "),
            _ => out.push(c),
        }
        i += 1;
    }
    out.push('\n');
    out
}

/// The scripted Messages API of `tests/support/scripted_anthropic.py` on 127.0.0.1,
/// each request logged to a file as a JSON line; stopped when dropped.
pub struct ScriptedModel {
    child: Child,
    /// Its base URL (`http://127.0.0.1:PORT`).
    pub url: String,
}

impl ScriptedModel {
    /// Starts it logging to `log`; with `delay_s`, each answer waits that long.
    pub fn start(log: &Path, delay_s: Option<u32>) -> ScriptedModel {
        let mut cmd = Command::new("python3");
        cmd.arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/support/scripted_anthropic.py"
        ))
        .arg(log)
        .stdout(Stdio::piped());
        if let Some(s) = delay_s {
            cmd.env("SCRIPTED_DELAY_S", s.to_string());
        }
        let mut child = cmd.spawn().expect("start the scripted model");
        // Its first line is the port it listens on.
        let mut port = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
            &mut port,
        )
        .expect("the scripted model's port");
        ScriptedModel {
            child,
            url: format!("http://127.0.0.1:{}", port.trim()),
        }
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of the sample `name` with `labels` (all of them, in any order) in a
/// Prometheus text exposition (`daemon.metrics`); `None` when absent.
pub fn metric(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (sample, rest) = match series.split_once('{') {
                Some((s, rest)) => (s, rest.strip_suffix('}')?),
                None => (series, ""),
            };
            let have: Vec<&str> = rest.split(',').filter(|p| !p.is_empty()).collect();
            let all = labels
                .iter()
                .all(|(k, v)| have.contains(&format!("{k}=\"{v}\"").as_str()));
            (sample == name && all && have.len() == labels.len())
                .then(|| value.parse().ok())
                .flatten()
        })
}
