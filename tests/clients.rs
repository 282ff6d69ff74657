//! The Python package, the README's agent loop, the Python and Node examples and the
//! Neovim plugin, run against a real daemon.
//!
//! `scripts/test` (the README's test command) installs the packages they need into a
//! cache folder (`websockets` and `anthropic` on `PYTHONPATH`, `ws` on `NODE_PATH`). A test skips,
//! loudly, only when the interpreter or editor itself is absent; a missing package is a
//! failure that says how to install it.

use crate::common;

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
         `scripts/test --with-system-packages` installs it (as root, with apt-get).\n"
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

/// Fails with how to get `module` when Python cannot import it.
fn python_has(module: &str) {
    let probe = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .unwrap();
    assert!(
        probe.status.success(),
        "Python cannot import `{module}`: run scripts/test (it installs what the tests need \
         into a cache folder), or pip install -r clients/python/requirements-test.txt"
    );
}

/// `PYTHONPATH` with `first` in front of what the environment gives.
fn python_path(first: &Path) -> std::ffi::OsString {
    let mut paths = vec![first.to_path_buf()];
    if let Some(rest) = std::env::var_os("PYTHONPATH") {
        paths.extend(std::env::split_paths(&rest));
    }
    std::env::join_paths(paths).unwrap()
}

/// `pip install ./clients/python` gives `ctxd_client`, whose typed methods and models are
/// what the OpenRPC document gives (regenerated, compared) and whose own tests pass
/// against a daemon it starts itself.
#[test]
fn the_python_package_installs_and_passes_its_tests() {
    if !have("python3") {
        return skip("python3");
    }
    python_has("websockets.sync.client");
    let current = Command::new("python3")
        .arg(repo().join("scripts/openrpc-py-types.py"))
        .arg("--check")
        .output()
        .unwrap();
    check(
        current,
        "clients/python/ctxd_client/types.py is what the document gives",
    );
    let target = tempfile::tempdir().unwrap();
    // Built from a copy: setuptools writes its build folders beside the sources.
    let source = tempfile::tempdir().unwrap();
    let package = repo().join("clients/python");
    std::fs::copy(
        package.join("pyproject.toml"),
        source.path().join("pyproject.toml"),
    )
    .unwrap();
    std::fs::create_dir(source.path().join("ctxd_client")).unwrap();
    for module in ["__init__.py", "types.py"] {
        std::fs::copy(
            package.join("ctxd_client").join(module),
            source.path().join("ctxd_client").join(module),
        )
        .unwrap();
    }
    let install = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-deps",
        ])
        .arg("--target")
        .arg(target.path())
        .arg(source.path())
        .output()
        .unwrap();
    check(install, "pip install ./clients/python");
    let tests = Command::new("python3")
        .args(["-m", "unittest", "discover", "-v", "-s"])
        .arg(repo().join("clients/python/tests"))
        .env("PYTHONPATH", python_path(target.path()))
        .env("CTXD_BIN", common::ctxd_bin())
        .current_dir(target.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&tests.stderr).to_string();
    assert!(
        tests.status.success(),
        "the package's tests failed:\n{stderr}"
    );
    let ran = stderr.lines().filter(|l| l.ends_with("... ok")).count();
    assert!(
        ran >= 10,
        "only {ran} of the package's tests ran:\n{stderr}"
    );
    // Imported from the install, not from the source tree.
    let from = Command::new("python3")
        .args(["-c", "import ctxd_client; print(ctxd_client.__file__)"])
        .env("PYTHONPATH", python_path(target.path()))
        .current_dir(target.path())
        .output()
        .unwrap();
    let from = check(from, "import ctxd_client");
    assert!(
        from.trim().starts_with(&*target.path().to_string_lossy()),
        "{from}"
    );
}

/// The Python block under "A first agent loop" in the README.
fn readme_loop() -> String {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let section = &readme[readme.find("## A first agent loop").expect("the section")..];
    let start = section.find("```python\n").expect("a python block") + "```python\n".len();
    let end = start + section[start..].find("```").unwrap();
    section[start..end].to_string()
}

/// The README's agent loop, as written, against a scripted Messages API: it streams the
/// first answer (a tool call), reads the file, sends its result back, and prints the
/// second answer; the second request holds the first answer as the model sent it and
/// the file's text as the tool's result.
#[test]
fn the_readme_agent_loop_runs_against_a_scripted_model() {
    if !have("python3") {
        return skip("python3");
    }
    python_has("anthropic");
    python_has("websockets");
    let code = readme_loop();
    let lines = code.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(lines <= 45, "the loop grew to {lines} lines");
    let d = Daemon::start();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("README.md"),
        "# hello from the project\nmore\n",
    )
    .unwrap();
    std::fs::write(work.path().join("agent.py"), &code).unwrap();
    let log = work.path().join("requests.jsonl");
    let model = common::ScriptedModel::start(&log, None);
    let out = Command::new("python3")
        .arg("agent.py")
        .current_dir(work.path())
        .env("PYTHONPATH", python_path(&repo().join("clients/python")))
        .env("CTXD_SOCKET", &d.socket)
        .env("ANTHROPIC_BASE_URL", &model.url)
        .env("ANTHROPIC_API_KEY", "sk-test")
        .output()
        .unwrap();
    drop(model);
    let printed = check(out, "the README's agent loop");
    assert!(printed.contains("Let me read it."), "{printed}");
    assert!(
        printed.contains("It begins: # hello from the project"),
        "{printed}"
    );
    let requests: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(requests.len(), 2, "one request per model call");
    let second = &requests[1]["body"]["messages"];
    let answer = &second[1];
    assert_eq!(answer["role"], "assistant");
    assert_eq!(answer["content"][1]["type"], "tool_use");
    assert_eq!(answer["content"][1]["input"]["file_path"], "README.md");
    let result = &second[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert!(
        result["content"]
            .to_string()
            .contains("hello from the project"),
        "{result}"
    );
    // The session holds both answers as they came, usage included.
    let sessions = d.call("session.list", serde_json::json!({}));
    let sid = sessions["sessions"][0]["session_id"].as_str().unwrap();
    let page = d.call("transcript.read", serde_json::json!({"session_id": sid}));
    let answers: Vec<&serde_json::Value> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["type"] == "assistant")
        .collect();
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[1]["message_id"], "msg_scripted_2");
}

/// `npm install ./clients/typescript` gives `ctxd-client`: its types are what the
/// OpenRPC document says (regenerated, compared), they type-check with TypeScript's
/// strictest settings, and its tests pass against a daemon it starts itself.
#[test]
fn the_typescript_package_installs_type_checks_and_passes_its_tests() {
    if !have("node") || !have("npm") {
        return skip("node and npm");
    }
    let package = repo().join("clients/typescript");
    let current = Command::new("python3")
        .arg(repo().join("scripts/openrpc-ts-types.py"))
        .arg("--check")
        .output()
        .unwrap();
    check(
        current,
        "clients/typescript/types.d.ts is what the document gives",
    );
    // `--install-links` installs a copy with its dependencies, as from a registry.
    let work = npm_project(
        r#"{"name": "ctxd-client-check", "version": "1.0.0", "private": true, "type": "module"}"#,
        &[
            "--install-links".as_ref(),
            package.as_os_str(),
            "typescript@5".as_ref(),
        ],
    );
    std::fs::copy(
        package.join("test/client.test.js"),
        work.path().join("client.test.js"),
    )
    .unwrap();
    let tests = Command::new("node")
        .args(["--test", "client.test.js"])
        .current_dir(work.path())
        .env("CTXD_BIN", common::ctxd_bin())
        .env("CTXD_SDK_DUMPS", repo().join("tests/fixtures/sdk"))
        .env_remove("NODE_PATH")
        .output()
        .unwrap();
    let out = check(tests, "the package's tests");
    assert!(
        out.contains("# pass 6") && out.contains("# fail 0"),
        "{out}"
    );
    // A caller's code type-checks, and a param the method does not take does not.
    std::fs::write(
        work.path().join("check.mts"),
        r#"import { connect, type ResultOf } from "ctxd-client";
const ctx = await connect();
const created: ResultOf<"session.create"> = await ctx.call("session.create", { cwd: "/tmp" });
const sid: string = created.session.session_id;
const compiled = await ctx.compile(sid);
const window: number = compiled.metadata.context.effective_window;
for await (const e of ctx.events(sid, { afterSeq: 0 })) { console.log(e.seq, window); }
// @ts-expect-error: a param the method does not take
await ctx.call("session.create", { cwd: "/tmp", nope: 1 });
"#,
    )
    .unwrap();
    tsc(
        work.path(),
        r#"{"compilerOptions": {"strict": true, "noEmit": true, "module": "nodenext",
            "moduleResolution": "nodenext", "target": "es2022"}, "files": ["check.mts"]}"#,
        "tsc on the package's types",
    );
}

/// A temporary npm project with `package_json`, after `npm install ARGS`.
fn npm_project(package_json: &str, args: &[&std::ffi::OsStr]) -> tempfile::TempDir {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("package.json"), package_json).unwrap();
    let install = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
        .args(args)
        .current_dir(work.path())
        .output()
        .unwrap();
    check(install, &format!("npm install {args:?}"));
    work
}

/// Runs the TypeScript compiler `dir` installed, with `tsconfig`; fails on any error.
fn tsc(dir: &Path, tsconfig: &str, what: &str) {
    std::fs::write(dir.join("tsconfig.json"), tsconfig).unwrap();
    let out = Command::new("node")
        .args(["node_modules/typescript/bin/tsc", "-p", "."])
        .current_dir(dir)
        .output()
        .unwrap();
    check(out, what);
}

/// A public generator (`@open-rpc/typings`, from npm) turns the document into TypeScript
/// types that compile under `tsc --strict`, names them after the document's titles (no
/// hashed names like `StringDoaGddGA`), and keeps method types apart from schema types.
#[test]
fn a_public_generator_types_the_document() {
    if !have("node") || !have("npm") {
        return skip("node and npm");
    }
    let work = npm_project(
        r#"{"name": "ctxd-openrpc-check", "version": "1.0.0", "private": true}"#,
        &["@open-rpc/typings@1.13".as_ref(), "typescript@5".as_ref()],
    );
    let generate = Command::new("node")
        .arg("node_modules/@open-rpc/typings/build/cli.js")
        .arg("-d")
        .arg(repo().join("protocol/openrpc.json"))
        .args(["--output-ts", "out"])
        .current_dir(work.path())
        .output()
        .unwrap();
    check(generate, "open-rpc-typings");
    let typings = std::fs::read_to_string(work.path().join("out/index.ts")).unwrap();
    tsc(
        work.path(),
        r#"{"compilerOptions": {"strict": true, "noEmit": true, "target": "es2022",
            "module": "es2022", "moduleResolution": "bundler"}, "files": ["out/index.ts"]}"#,
        "tsc on the generated typings",
    );
    let names: Vec<&str> = typings
        .lines()
        .filter_map(|l| {
            l.strip_prefix("export type ")
                .or_else(|| l.strip_prefix("export interface "))
        })
        .filter_map(|l| l.split([' ', '<']).next())
        .collect();
    for wanted in [
        "SessionCreateCwd",
        "SessionCreateResponse",
        "DaemonStatusResult",
        "Record",
    ] {
        assert!(names.contains(&wanted), "no type {wanted}");
    }
    // Every name comes from the document: a title, a method's (`SessionCreate`), a
    // title split by type (`...AsString`), or the generator's union of them all (`AnyOf...`).
    let doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("protocol/openrpc.json")).unwrap(),
    )
    .unwrap();
    let mut titles = std::collections::BTreeSet::new();
    fn collect(v: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
        match v {
            serde_json::Value::Object(o) => {
                if let Some(t) = o.get("title").and_then(|t| t.as_str()) {
                    out.insert(t.to_lowercase());
                }
                o.values().for_each(|v| collect(v, out));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| collect(v, out)),
            _ => {}
        }
    }
    collect(&doc, &mut titles);
    for m in doc["methods"].as_array().unwrap() {
        titles.insert(
            m["name"]
                .as_str()
                .unwrap()
                .replace(['.', '_'], "")
                .to_lowercase(),
        );
    }
    let from_document = |name: &str| {
        let lower = name.to_lowercase();
        titles.contains(&lower)
            || name.starts_with("AnyOf")
            || [
                "asstring",
                "asnull",
                "asnumber",
                "asinteger",
                "asboolean",
                "asobject",
                "asarray",
            ]
            .iter()
            .any(|t| {
                lower
                    .strip_suffix(t)
                    .is_some_and(|base| titles.contains(base))
            })
    };
    let hashed: Vec<&&str> = names.iter().filter(|n| !from_document(n)).collect();
    assert!(hashed.is_empty(), "hashed names: {hashed:?}");
}

/// `scripts/install --service --no-enable` writes the systemd user units to
/// `$XDG_CONFIG_HOME/systemd/user`: a socket unit on the clients' default socket and a
/// service that runs the installed `ctxd`. Where `systemd-analyze` is installed, the
/// script verifies them itself (a unit with a bad setting, or whose `ExecStart` does not
/// exist, fails it) and says so.
#[test]
fn scripts_install_service_writes_valid_user_units() {
    let state = tempfile::tempdir().unwrap();
    let prefix = state.path().join("prefix");
    let config = state.path().join("config");
    let out = Command::new(repo().join("scripts/install"))
        .args([
            "--no-python",
            "--no-node",
            "--service",
            "--no-enable",
            "--prefix",
        ])
        .arg(&prefix)
        .arg("--from-target")
        .arg(ctx_bin().parent().unwrap())
        .env("XDG_CONFIG_HOME", &config)
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .unwrap();
    let said = check(out, "scripts/install --service --no-enable");
    let units = config.join("systemd/user");
    let service = std::fs::read_to_string(units.join("ctxd.service")).unwrap();
    let socket = std::fs::read_to_string(units.join("ctxd.socket")).unwrap();
    let exec = format!("ExecStart=\"{}\"", prefix.join("bin/ctxd").display());
    assert!(service.lines().any(|l| l == exec), "{service}");
    assert!(service.contains("Requires=ctxd.socket"), "{service}");
    assert!(
        socket
            .lines()
            .any(|l| l == "ListenStream=%t/ctxd/ctxd.sock"),
        "{socket}"
    );
    assert!(socket.contains("SocketMode=0600"), "{socket}");
    if have("systemd-analyze") {
        assert!(said.contains("the units are valid"), "{said}");
    } else {
        skip("systemd-analyze (the units were written, not verified)");
    }
}

/// `ctx daemon install-service --no-enable` writes units naming the `ctxd` it would
/// start, its home (a path with a space) and that home's socket, verified where
/// `systemd-analyze` is installed; the launchd agent is a property list that says the
/// same; `uninstall-service` removes them, and a second time finds nothing. With no
/// `ctxd` to name, or one systemd would refuse, nothing is left written.
#[test]
fn ctx_installs_and_removes_the_user_service() {
    let state = tempfile::tempdir().unwrap();
    let user = state.path().join("user");
    let home = state.path().join("ctxd home");
    let config = state.path().join("config");
    let units = config.join("systemd/user");
    let agent = user.join("Library/LaunchAgents/dev.ctxd.ctxd.plist");
    let ctxd = common::ctxd_bin();
    let ctx = |ctxd: &Path, args: &[&str]| {
        Command::new(ctx_bin())
            .args(["daemon"])
            .args(args)
            .env("HOME", &user)
            .env("XDG_CONFIG_HOME", &config)
            .env("CTXD_HOME", &home)
            .env("CTXD_BIN", ctxd)
            .env_remove("CTXD_SOCKET")
            .env_remove("XDG_RUNTIME_DIR")
            .output()
            .unwrap()
    };
    let said = check(
        ctx(
            &ctxd,
            &["install-service", "--manager", "systemd", "--no-enable"],
        ),
        "ctx daemon install-service",
    );
    let service = std::fs::read_to_string(units.join("ctxd.service")).unwrap();
    let socket = std::fs::read_to_string(units.join("ctxd.socket")).unwrap();
    let exec = format!("ExecStart=\"{}\"", ctxd.display());
    assert!(service.lines().any(|l| l == exec), "{service}");
    let env = format!("Environment=\"CTXD_HOME={}\"", home.display());
    assert!(service.lines().any(|l| l == env), "{service}");
    let listen = format!("ListenStream={}", home.join("ctxd.sock").display());
    assert!(socket.lines().any(|l| l == listen), "{socket}");
    if have("systemd-analyze") {
        assert!(said.contains("the units are valid"), "{said}");
    } else {
        skip("systemd-analyze (the units were written, not verified)");
    }

    check(
        ctx(
            &ctxd,
            &["install-service", "--manager", "launchd", "--no-enable"],
        ),
        "ctx daemon install-service --manager launchd",
    );
    if have("python3") {
        let read = Command::new("python3")
            .args([
                "-c",
                "import json, plistlib, sys; print(json.dumps(plistlib.load(open(sys.argv[1], 'rb'))))",
            ])
            .arg(&agent)
            .output()
            .unwrap();
        let plist: serde_json::Value =
            serde_json::from_str(&check(read, "plistlib reading the agent")).unwrap();
        assert_eq!(plist["Label"], "dev.ctxd.ctxd");
        assert_eq!(plist["ProgramArguments"][0], ctxd.display().to_string());
        assert_eq!(
            plist["EnvironmentVariables"]["CTXD_HOME"],
            home.display().to_string()
        );
    } else {
        skip("python3 (the agent was written, not parsed)");
    }

    for manager in ["systemd", "launchd"] {
        let args = ["uninstall-service", "--manager", manager, "--no-enable"];
        check(ctx(&ctxd, &args), "ctx daemon uninstall-service");
        let again = check(ctx(&ctxd, &args), "ctx daemon uninstall-service, again");
        assert!(again.contains("no service files to remove"), "{again}");
    }
    assert!(!units.join("ctxd.service").exists() && !units.join("ctxd.socket").exists());
    assert!(!agent.exists());

    let missing = ctx(
        &state.path().join("no-ctxd"),
        &["install-service", "--manager", "systemd", "--no-enable"],
    );
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no ctxd binary"));
    assert!(!units.join("ctxd.service").exists());
    if have("systemd-analyze") {
        // A file systemd cannot run: verify refuses it, and the units go again.
        let plain = state.path().join("ctxd-not-executable");
        std::fs::write(&plain, "").unwrap();
        let refused = ctx(
            &plain,
            &["install-service", "--manager", "systemd", "--no-enable"],
        );
        assert!(
            !refused.status.success(),
            "a unit systemd refuses was accepted"
        );
        assert!(!units.join("ctxd.service").exists() && !units.join("ctxd.socket").exists());
    }
}

/// `scripts/install --prefix DIR` leaves `DIR/bin/ctxd` and `DIR/bin/ctx`, the Python
/// client, and the Node client's tarball; with only `DIR/bin` on PATH the Python client
/// starts and reaches a daemon, and the tarball installs with its `ws`. The binaries are
/// the ones this suite built (`--from-target`): `cargo install` would rebuild the whole
/// workspace in release mode, minutes the suite cannot spend.
#[test]
fn scripts_install_leaves_what_the_clients_find_with_only_its_bin_on_path() {
    if !have("python3") {
        return skip("python3");
    }
    // The default prefix of a user whose HOME is here: ~/.local.
    let state = tempfile::tempdir().unwrap();
    let user_home = state.path().join("user-home");
    let prefix = user_home.join(".local");
    let python_target = tempfile::tempdir().unwrap();
    let built = ctx_bin().parent().unwrap();
    let mut install = Command::new(repo().join("scripts/install"));
    install
        .arg("--prefix")
        .arg(&prefix)
        .arg("--from-target")
        .arg(built)
        .arg("--python-target")
        .arg(python_target.path())
        // Its dependency comes from the suite's cache (PYTHONPATH), as for the other tests.
        .env("PIP_NO_DEPS", "1");
    if !have("npm") {
        install.arg("--no-node");
    }
    check(install.output().unwrap(), "scripts/install");
    let bin = prefix.join("bin");
    assert!(bin.join("ctxd").is_file() && bin.join("ctx").is_file());

    let python = check(
        Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .unwrap(),
        "python3",
    );
    let script = "import ctxd_client\nc = ctxd_client.connect()\nprint(c.call('daemon.ping'))\nc.call('daemon.shutdown')\n";
    // With the prefix's bin on PATH, then with nothing on PATH (found in ~/.local/bin).
    for (path, home) in [(Some(&bin), "home-1"), (None, "home-2")] {
        let mut python = Command::new(python.trim());
        python
            .args(["-c", script])
            .env_clear()
            .env("HOME", &user_home)
            .env("CTXD_HOME", state.path().join(home))
            .env("PYTHONPATH", python_path(python_target.path()));
        if let Some(path) = path {
            python.env("PATH", path);
        }
        let said = check(
            python.output().unwrap(),
            &format!("connect() with PATH {path:?}"),
        );
        assert!(said.contains("'pong': True"), "{said}");
    }
    // ctx finds the ctxd beside it, with nothing on PATH.
    let out = Command::new(bin.join("ctx"))
        .args(["daemon", "status", "--json"])
        .env_clear()
        .env("HOME", &user_home)
        .env("CTXD_HOME", state.path().join("home-3"))
        .output()
        .unwrap();
    check(out, "ctx daemon status with nothing on PATH");
    let out = Command::new(bin.join("ctx"))
        .args(["daemon", "stop"])
        .env_clear()
        .env("HOME", &user_home)
        .env("CTXD_HOME", state.path().join("home-3"))
        .output()
        .unwrap();
    check(out, "ctx daemon stop");

    if !have("npm") {
        return skip("npm");
    }
    let share = prefix.join("share/ctxd");
    let tarball = std::fs::read_dir(&share)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "tgz"))
        .expect("the Node client's tarball");
    let import = "import('ctxd-client').then(() => console.log('imported'))";
    let project = r#"{"name": "ctxd-install-check", "version": "1.0.0", "private": true}"#;
    let work = npm_project(project, &[tarball.as_os_str()]);
    assert!(
        work.path().join("node_modules/ws").is_dir(),
        "ws came with it"
    );
    let out = Command::new("node")
        .args(["-e", import])
        .current_dir(work.path())
        .env_remove("NODE_PATH")
        .output()
        .unwrap();
    assert!(check(out, "import the installed tarball").contains("imported"));
}

/// `npm install DIR` (npm 7 and later) links the directory and installs none of its
/// dependencies; the package still imports, and calls work without `ws`.
#[test]
fn the_node_package_imports_from_a_directory_install() {
    if !have("node") || !have("npm") {
        return skip("node and npm");
    }
    let package = repo().join("clients/typescript");
    let project = r#"{"name": "ctxd-link-check", "version": "1.0.0", "private": true}"#;
    let work = npm_project(project, &[package.as_os_str()]);
    let out = Command::new("node")
        .args([
            "-e",
            "import('ctxd-client').then(() => console.log('imported'))",
        ])
        .current_dir(work.path())
        .env_remove("NODE_PATH")
        .output()
        .unwrap();
    assert!(check(out, "import a directory install").contains("imported"));
}
