//! The Python and Node examples and the Neovim plugin, run against a real daemon.
//!
//! `scripts/test` (the README's test command) installs the packages they need into a
//! cache folder (`websockets` on `PYTHONPATH`, `ws` on `NODE_PATH`). A test skips,
//! loudly, only when the interpreter or editor itself is absent; a missing package is a
//! failure that says how to install it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it did not expect

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::Daemon;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn skip(what: &str) {
    eprintln!(
        "\n!!!!!!!! SKIPPED: {what} is not installed on this machine; this test did not run. \
         `scripts/test` installs it when it runs as root with apt-get.\n"
    );
}

fn check(out: Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    stdout
}

/// What both examples must print: the handshake, the appended turn seen on the stream,
/// the compile, and the usage picture (the compile's metadata and `context.usage`).
fn assert_example_output(out: &str, d: &Daemon) {
    for needle in [
        "connected to ctxd",
        "appended 4 records (last seq 4)",
        "records_appended 4 records",
        "compiled",
        "unsubscribed: true",
        "context: [",
        "system sections:",
        "window by category",
        "tool_results",
    ] {
        assert!(out.contains(needle), "no `{needle}` in:\n{out}");
    }
    // The example removed its session.
    let list = d.call("session.list", serde_json::json!({}));
    assert_eq!(list["sessions"].as_array().unwrap().len(), 0, "{list}");
}

/// Runs an example against a fresh daemon, checks what it printed and that it removed
/// its session; returns its output.
fn run_example(program: &str, script: &str) -> String {
    let d = Daemon::start();
    let out = Command::new(program)
        .arg(repo().join(script))
        .arg("--socket")
        .arg(&d.socket)
        .arg("--cwd")
        .arg(d.dir.path())
        .output()
        .unwrap();
    let out = check(out, script);
    assert_example_output(&out, &d);
    out
}

#[test]
fn the_python_example_runs_against_a_real_daemon() {
    if !have("python3") {
        return skip("python3");
    }
    let probe = Command::new("python3")
        .args(["-c", "import websockets.asyncio.client"])
        .output()
        .unwrap();
    assert!(
        probe.status.success(),
        "the Python example needs `websockets` >= 13: run scripts/test (it installs it into a cache folder), or pip install -r examples/python/requirements.txt"
    );
    run_example("python3", "examples/python/ctxd_example.py");
}

/// With no `--socket`, the example finds the daemon where `ctx` does (here
/// `$XDG_RUNTIME_DIR/ctxd/ctxd.sock`), as the daemon `ctx demo` started is found.
#[test]
fn the_python_example_finds_the_default_socket() {
    if !have("python3") {
        return skip("python3");
    }
    let d = Daemon::start();
    let runtime = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(runtime.path().join("ctxd")).unwrap();
    std::os::unix::fs::symlink(&d.socket, runtime.path().join("ctxd/ctxd.sock")).unwrap();
    let out = Command::new("python3")
        .arg(repo().join("examples/python/ctxd_example.py"))
        .arg("--cwd")
        .arg(d.dir.path())
        .env_remove("CTXD_SOCKET")
        .env_remove("CTXD_HOME")
        .env("XDG_RUNTIME_DIR", runtime.path())
        .output()
        .unwrap();
    let out = check(out, "the Python example without --socket");
    assert_example_output(&out, &d);
}

#[test]
fn the_node_example_runs_against_a_real_daemon() {
    if !have("node") {
        return skip("node");
    }
    let dir = repo().join("examples/node");
    let on_node_path = std::env::var_os("NODE_PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("ws").is_dir()));
    assert!(
        dir.join("node_modules/ws").is_dir() || on_node_path,
        "the Node example needs `ws`: run scripts/test (it installs it into a cache folder), or (cd examples/node && npm install)"
    );
    let out = run_example("node", "examples/node/example.js");
    assert!(
        out.contains("(own)"),
        "events of its own calls are marked:\n{out}"
    );
}

fn ctx_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_ctx"))
}

/// The plugin starts the daemon itself through `ctx` (no socket given), attaches,
/// and drives every command; the script asserts on buffer contents.
#[test]
fn the_neovim_plugin_works_headless_against_a_real_daemon() {
    if !have("nvim") {
        return skip("nvim (Neovim)");
    }
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("ctxd-home");
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("a.txt"), "a\n").unwrap();
    let plugin = repo().join("editors/nvim");
    let out = Command::new("nvim")
        .args(["--headless", "-u", "NONE", "-i", "NONE", "-n"])
        .arg("--cmd")
        .arg(format!("set rtp+={}", plugin.display()))
        .arg("-c")
        .arg(format!(
            "luafile {}",
            plugin.join("tests/run.lua").display()
        ))
        .env("CTX_BIN", ctx_bin())
        .env("CTXD_HOME", &home)
        .env_remove("CTXD_SOCKET")
        .env("CTXD_TEST_CWD", &project)
        .env("HOME", tmp.path())
        .env("CTXD_MANAGED_ROOT", tmp.path().join("managed"))
        .output()
        .unwrap();
    // Stop the daemon the plugin started, whatever happened.
    let _ = Command::new(ctx_bin())
        .args(["daemon", "stop"])
        .env("CTXD_HOME", &home)
        .env_remove("CTXD_SOCKET")
        .output();
    let out = check(out, "the Neovim plugin's headless test");
    assert!(
        out.contains("statusline: ctx: ") || out.is_empty(),
        "unexpected output: {out}"
    );
}
