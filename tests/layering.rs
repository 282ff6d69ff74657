//! The module graph inside each crate has no cycle and no arrow up a layer
//! (`scripts/import-graph.py`); the crate graph itself is enforced by Cargo, and what
//! `ctx` and the daemon link is checked on `cargo tree`.

#![allow(clippy::expect_used)] // a test panics on what it did not expect

use std::process::Command;

fn import_graph(tree: Option<&std::path::Path>) -> std::process::Output {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut cmd = Command::new("python3");
    cmd.arg(root.join("scripts/import-graph.py")).arg("--edges");
    if let Some(tree) = tree {
        cmd.env("CTXD_ROOT", tree);
    }
    cmd.output().expect("python3 runs")
}

#[test]
fn no_module_cycles_and_no_upward_arrows() {
    let out = import_graph(None);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the import graph has cycles or upward arrows:\n{report}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        report.contains("cycles: 0") && report.contains("upward arrows: 0"),
        "{report}"
    );
    // Every crate was read: the script skips a crate it cannot find, and a graph of
    // nothing has no cycle either.
    for arrow in [
        "ctx_client -> ctxd_protocol",
        "ctxd -> ctxd_engine",
        "ctxd_engine -> ctxd_store",
        "ctxd_engine -> ctxd_providers",
        "ctxd_engine -> ctxd_fs",
        "ctxd_fs -> ctxd_pipeline",
        "ctxd_providers -> ctxd_pipeline",
        "ctxd_store -> ctxd_pipeline",
        "ctxd_pipeline -> ctxd_protocol",
    ] {
        assert!(report.contains(arrow), "{arrow} missing from:\n{report}");
    }
}

/// The check can fail: two modules that name each other only by paths inside code (no
/// `use` line) are a cycle, and a leaf of the engine crate naming `engine` is an arrow
/// up a layer.
#[test]
fn an_injected_cycle_and_an_upward_arrow_are_found() {
    let tree = tempfile::tempdir().expect("a temp dir");
    let files = [
        (
            "pipeline/src/lib.rs",
            "pub mod a;\npub mod b;\npub mod d;\npub mod g;\npub use g::c;\n",
        ),
        // A cycle through a module re-exported at the root: `crate::c` is `g::c`.
        ("pipeline/src/g/mod.rs", "pub mod c;\n"),
        (
            "pipeline/src/g/c.rs",
            "pub fn y() {\n    crate::d::x()\n}\n",
        ),
        (
            "pipeline/src/d.rs",
            "pub fn x() {}\npub fn z() {\n    crate::c::y()\n}\n",
        ),
        (
            "pipeline/src/a.rs",
            "pub fn f() -> u32 {\n    super::b::g()\n}\n",
        ),
        (
            "pipeline/src/b.rs",
            "pub fn g() -> u32 {\n    1\n}\npub fn h() -> u32 {\n    crate::a::f()\n}\n",
        ),
        ("engine/src/lib.rs", "pub mod engine;\npub mod watch;\n"),
        ("engine/src/engine.rs", "pub fn run() {}\n"),
        (
            "engine/src/watch.rs",
            "pub fn w() {\n    crate::engine::run()\n}\n",
        ),
    ];
    for (path, text) in files {
        let path = tree.path().join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("a dir");
        std::fs::write(path, text).expect("written");
    }
    let out = import_graph(Some(tree.path()));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{report}");
    assert!(
        report.contains("cycles: 2")
            && report.contains("ctxd_pipeline::a <-> ctxd_pipeline::b")
            && report.contains("ctxd_pipeline::d <-> ctxd_pipeline::g::c"),
        "{report}"
    );
    assert!(
        report.contains("upward arrows: 1") && report.contains("ctxd_engine::watch -> engine"),
        "{report}"
    );
}

/// What `package` links, one crate a line: `cargo tree`'s normal edges (no dev or build
/// dependencies), `--depth 1` for its direct dependencies alone.
fn normal_tree(package: &str, depth: Option<&str>) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(&root).args([
        "tree",
        "-p",
        package,
        "-e",
        "normal",
        "--prefix",
        "none",
        "--offline",
    ]);
    if let Some(depth) = depth {
        cmd.args(["--depth", depth]);
    }
    let out = cmd.output().expect("cargo runs");
    let tree = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && tree.starts_with(&format!("{package} v")),
        "cargo tree failed:\n{tree}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tree
}

/// `ctx` is a client: it reaches sessions through the daemon, so it links neither the
/// engine nor the store, and so no database either (issue 55's contract point, checked
/// the way it is stated, on `cargo tree`'s normal edges).
#[test]
fn ctx_links_neither_the_engine_nor_the_store() {
    let tree = normal_tree("ctx-cli", None);
    assert!(tree.contains("ctx-client"), "{tree}");
    for name in [
        "rusqlite",
        "postgres",
        "tokio-postgres",
        "ctxd-store",
        "ctxd-engine",
    ] {
        let found: Vec<&str> = tree.lines().filter(|l| l.contains(name)).collect();
        assert!(found.is_empty(), "ctx links {name}: {found:?}");
    }
}

/// The daemon knows no SQL: it opens the store, and maps its errors, through the
/// engine, so the store is not among its own dependencies (its benches and tests may
/// name it).
#[test]
fn the_daemon_reaches_the_store_through_the_engine_alone() {
    let direct = normal_tree("ctxd", Some("1"));
    assert!(direct.contains("ctxd-engine"), "{direct}");
    for name in ["ctxd-store", "rusqlite", "postgres"] {
        let found: Vec<&str> = direct
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(name))
            .collect();
        assert!(found.is_empty(), "the daemon depends on {name}: {found:?}");
    }
}
