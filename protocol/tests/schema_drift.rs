//! The checked-in OpenRPC document must be exactly what the code generates.
//! Regenerate with `UPDATE_SCHEMA=1 cargo test -p ctxd-protocol`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it did not expect

#[test]
fn openrpc_document_is_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/openrpc.json");
    let generated = ctxd_protocol::openrpc::document_text();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(path, &generated).expect("write openrpc.json");
    }
    let on_disk = std::fs::read_to_string(path).unwrap_or_default();
    pretty_assertions::assert_eq!(
        on_disk,
        generated,
        "protocol/openrpc.json is stale: run UPDATE_SCHEMA=1 cargo test -p ctxd-protocol"
    );
}

/// docs/rpc-reference.md is the reference the document gives.
#[test]
fn rpc_reference_is_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/rpc-reference.md");
    let generated = ctxd_protocol::reference::markdown(&ctxd_protocol::openrpc::document());
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(path, &generated).expect("write docs/rpc-reference.md");
    }
    let on_disk = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "docs/rpc-reference.md is stale: run UPDATE_SCHEMA=1 cargo test -p ctxd-protocol"
    );
    // Every method has its section.
    for m in ctxd_protocol::openrpc::document()["methods"]
        .as_array()
        .unwrap()
    {
        let heading = format!("\n### {}\n", m["name"].as_str().unwrap());
        assert!(generated.contains(&heading), "{heading}");
    }
}
