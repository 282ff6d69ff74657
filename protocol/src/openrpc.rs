//! The OpenRPC document served by `rpc.discover` and checked in as `protocol/openrpc.json`.

use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use crate::PROTOCOL_VERSION;
use crate::methods::{RPC_DISCOVER, method_table};

/// Builds the document. Deterministic: the same code always yields the same bytes.
pub fn document() -> Value {
    let mut generator = SchemaSettings::draft07()
        .with(|s| s.definitions_path = "/components/schemas".into())
        .into_generator();
    let mut methods = Vec::new();
    for m in method_table() {
        let params = (m.params)(&mut generator);
        let result = (m.result)(&mut generator);
        let mut entry = json!({
            "name": m.name,
            "summary": m.summary,
            "paramStructure": "by-name",
            "params": [{ "name": "params", "required": true, "schema": params }],
            "result": { "name": "result", "schema": result },
        });
        if let Some((notification, unsubscribe)) = m.subscription {
            entry["x-subscription"] = json!({
                "notification": notification,
                "unsubscribe": unsubscribe,
            });
        }
        methods.push(entry);
    }
    methods.push(json!({
        "name": RPC_DISCOVER,
        "summary": "This document.",
        "params": [],
        "result": { "name": "OpenRPC document", "schema": { "type": "object" } },
    }));
    let schemas: serde_json::Map<String, Value> =
        generator.take_definitions(true).into_iter().collect();
    json!({
        "openrpc": "1.3.2",
        "info": {
            "title": "ctxd",
            "version": PROTOCOL_VERSION,
            "description": "Context engine for coding agents. JSON-RPC 2.0 over a Unix socket (HTTP POST and WebSocket). Params are passed by name as one object.",
        },
        "methods": methods,
        "components": { "schemas": schemas },
    })
}

/// The document as checked in: pretty JSON with a trailing newline.
pub fn document_text() -> String {
    let mut s = serde_json::to_string_pretty(&document()).unwrap_or_default();
    s.push('\n');
    s
}
