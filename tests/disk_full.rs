//! A full disk (issue 17): every failing call still gets a JSON-RPC answer, even with the
//! daemon's stderr on the same full disk; a tool result that cannot be persisted is not
//! frozen as kept whole but persisted by a later compile; no empty files are left.
//! Needs a tmpfs mount (root in a sandbox); skipped with a message where that fails.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::raw_http;
use serde_json::{Value, json};

/// A small tmpfs, unmounted (lazily, after the daemon is killed) on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
    child: Option<std::process::Child>,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Tmpfs { dir, child: None })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

fn call(socket: &Path, method: &str, params: Value) -> Value {
    let req = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let (_, body) = raw_http(socket, &req.to_string());
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("no JSON-RPC answer ({e}): {body:?}"))
}

/// Fills the file system until a write fails; returns the filler.
fn fill(dir: &Path) -> PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let chunk = vec![7u8; 64 * 1024];
    while f.write_all(&chunk).is_ok() {}
    let one = [7u8; 1];
    while f.write_all(&one).is_ok() {}
    path
}

#[test]
fn a_full_disk_answers_in_json_rpc_and_persists_later() {
    let Some(mut fs) = Tmpfs::mount("24m") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root in a sandbox)");
        return;
    };
    let home = fs.path().join("home");
    let socket = fs.path().join("ctxd.sock");
    std::fs::create_dir_all(&home).unwrap();
    let stderr = std::fs::File::create(fs.path().join("stderr.log")).unwrap();
    let mut cmd = Command::new(common::ctxd_bin());
    // On PostgreSQL only the session files are on the full disk, not the database.
    let database_on_disk = match common::store_for_home(&home) {
        Some(url) => {
            cmd.env("CTXD_STORE", url);
            false
        }
        None => true,
    };
    let child = cmd
        .arg("--home")
        .arg(&home)
        .arg("--socket")
        .arg(&socket)
        .arg("--managed-root")
        .arg(fs.path().join("managed"))
        .env("HOME", fs.path().join("user-home"))
        .env("CTXD_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    fs.child = Some(child);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(std::time::Instant::now() < deadline, "ctxd did not come up");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    let r = call(
        &socket,
        "session.create",
        json!({"cwd": "/", "no_git": true}),
    );
    let sid = r["result"]["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let big = "x".repeat(60_000);
    let r = call(
        &socket,
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "user", "content": "run it"},
            {"type": "assistant", "message_id": "m1", "content": [
                {"type": "tool_use", "id": "toolu_big", "name": "Bash", "input": {"command": "x"}}]},
            {"type": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_big", "content": big}]}
        ]}),
    );
    assert!(r.get("result").is_some(), "{r}");

    let filler = fill(fs.path());
    // Every call answers in JSON-RPC: an append of a large record cannot be stored.
    if database_on_disk {
        let huge = "y".repeat(4 << 20);
        let r = call(
            &socket,
            "transcript.append",
            json!({"session_id": sid, "records": [{"type": "user", "content": huge}]}),
        );
        assert_eq!(r["error"]["code"], -32020, "{r}");
    }
    // The compile cannot persist the large result: it is not frozen as kept.
    let r = call(&socket, "context.compile", json!({"session_id": sid}));
    if let Some(m) = r.get("result").map(|r| &r["metadata"]) {
        assert!(!m["kept"].to_string().contains("toolu_big"), "{m}");
        assert!(!m["replaced"].to_string().contains("toolu_big"), "{m}");
    } else {
        assert_eq!(r["error"]["code"], -32020, "{r}");
    }
    let results = home.join("sessions").join(&sid).join("tool-results");
    let empty: Vec<_> = std::fs::read_dir(&results)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.metadata().is_ok_and(|m| m.len() == 0))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    assert!(empty.is_empty(), "empty files left: {empty:?}");

    // Space again: the next compile persists the result.
    std::fs::remove_file(filler).unwrap();
    let r = call(&socket, "context.compile", json!({"session_id": sid}));
    let m = &r["result"]["metadata"];
    assert!(m["replaced"].to_string().contains("toolu_big"), "{r}");
    let file = results.join("toolu_big.txt");
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 60_000);
}
