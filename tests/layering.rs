//! The module graph inside each crate has no cycle and no arrow up a layer
//! (`scripts/import-graph.py`); the crate graph itself is enforced by Cargo.

#![allow(clippy::expect_used)] // a test panics on what it did not expect

use std::process::Command;

#[test]
fn no_module_cycles_and_no_upward_arrows() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("python3")
        .arg(root.join("scripts/import-graph.py"))
        .output()
        .expect("python3 runs");
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
        "ctxd_store -> ctxd_pipeline",
        "ctxd_pipeline -> ctxd_protocol",
    ] {
        assert!(report.contains(arrow), "{arrow} missing from:\n{report}");
    }
}
