//! The OpenRPC document served by `rpc.discover` and checked in as `protocol/openrpc.json`.
//!
//! Generated from the method table alone: each params type's properties become the
//! method's by-name params (name, schema, required), each result type its result. A new
//! row in the table is documented in this shape with no further work.

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::PROTOCOL_VERSION;
use crate::error::ERROR_CODES;
use crate::methods::{MethodSpec, RPC_DISCOVER, method_table};

const DESCRIPTION: &str = "Context engine for coding agents. JSON-RPC 2.0 over a Unix socket: HTTP POST (one call or batch per request) and WebSocket (calls and subscriptions). \
Params are passed by name, as one JSON object whose members are the params listed for the method; unknown params are refused within a version (they catch typos). \
Versioning: `info.version` is MAJOR.MINOR. A minor release only adds (methods, optional params, result fields, event kinds, error codes), so clients ignore result fields and event kinds they do not know; a major release may remove or change. \
Call `daemon.initialize` first: it returns the negotiated version (the client's major, the lower minor) and refuses another major with error -32030. \
Subscriptions: OpenRPC has no standard way to describe them, so subscription methods carry the extension `x-subscription` = {notification, unsubscribe, params}: the method returns a subscription id, then the daemon sends JSON-RPC notifications named `notification` whose params are `{subscription, result}` as listed, until the client calls `unsubscribe` with that id. Over HTTP they fail with -32031 (WebSocket required).";

/// Builds the document. Deterministic: the same code always yields the same bytes.
pub fn document() -> Value {
    let mut generator = SchemaSettings::draft07()
        .with(|s| s.definitions_path = "/components/schemas".into())
        .into_generator();
    let mut methods: Vec<Value> = method_table()
        .iter()
        .map(|m| method_entry(m, &mut generator))
        .collect();
    methods.push(json!({
        "name": RPC_DISCOVER,
        "summary": "This document.",
        "paramStructure": "by-name",
        "params": [],
        "result": { "name": "OpenRPC document", "schema": { "type": "object" } },
    }));
    let schemas: Map<String, Value> = generator.take_definitions(true).into_iter().collect();
    let errors: Map<String, Value> = ERROR_CODES
        .iter()
        .map(|(name, code, message)| {
            (
                (*name).to_string(),
                json!({ "code": code, "message": message }),
            )
        })
        .collect();
    json!({
        "openrpc": "1.3.2",
        "info": {
            "title": "ctxd",
            "version": PROTOCOL_VERSION,
            "description": DESCRIPTION,
        },
        "methods": methods,
        "components": { "schemas": schemas, "errors": errors },
    })
}

fn method_entry(m: &MethodSpec, g: &mut schemars::SchemaGenerator) -> Value {
    let params = by_name_params(Value::from((m.params)(g)));
    // A subscription's id has the schema of the subscribe method's result.
    let result = Value::from((m.result)(g));
    let mut entry = json!({
        "name": m.name,
        "summary": m.summary,
        "paramStructure": "by-name",
        "params": params,
        "result": { "name": "result", "schema": result },
    });
    if let Some(sub) = &m.subscription {
        let item = (sub.item)(g);
        entry["x-subscription"] = json!({
            "notification": sub.notification,
            "unsubscribe": sub.unsubscribe,
            "params": [
                {
                    "name": "subscription",
                    "required": true,
                    "description": "The id this method returned.",
                    "schema": result,
                },
                { "name": "result", "required": true, "schema": item },
            ],
        });
    }
    entry
}

/// One content descriptor per property of the params object, required ones first, then
/// by name. A property's description moves up to the descriptor.
fn by_name_params(schema: Value) -> Vec<Value> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema["properties"].as_object() else {
        return Vec::new();
    };
    let mut names: Vec<&String> = props.keys().collect();
    names.sort_by_key(|n| (!required.contains(&n.as_str()), n.as_str()));
    names
        .into_iter()
        .map(|name| {
            let prop = &props[name.as_str()];
            let mut prop = prop.clone();
            let description = prop.as_object_mut().and_then(|o| o.remove("description"));
            let mut d = json!({
                "name": name,
                "required": required.contains(&name.as_str()),
                "schema": prop,
            });
            if let Some(desc) = description {
                d["description"] = desc;
            }
            d
        })
        .collect()
}

/// The document as checked in: pretty JSON with a trailing newline.
pub fn document_text() -> String {
    let mut s = serde_json::to_string_pretty(&document()).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every params object a method decodes is listed field by field, and nothing is
    /// lost on the way: the listed names are exactly the type's properties.
    #[test]
    fn params_are_listed_one_per_field() {
        let doc = document();
        let create = doc["methods"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == crate::SESSION_CREATE)
            .unwrap();
        let names: Vec<&str> = create["params"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"cwd") && names.contains(&"settings"),
            "{names:?}"
        );
        assert!(!names.contains(&"params"));
        let cwd = &create["params"][names.iter().position(|n| *n == "cwd").unwrap()];
        assert_eq!(cwd["required"], true);
        assert_eq!(cwd["schema"]["type"], "string");
        assert!(
            cwd["description"]
                .as_str()
                .unwrap()
                .contains("Working directory")
        );
        for m in doc["methods"].as_array().unwrap() {
            assert_eq!(m["paramStructure"], "by-name", "{}", m["name"]);
            for p in m["params"].as_array().unwrap() {
                assert!(p["name"].is_string() && p["required"].is_boolean(), "{m}");
            }
        }
    }

    #[test]
    fn record_content_is_a_string_or_blocks() {
        let doc = document();
        let content = &doc["components"]["schemas"]["RecordInput"]["properties"]["content"];
        let any_of = content["anyOf"].as_array().expect("anyOf");
        assert_eq!(any_of[0]["type"], "string");
        assert_eq!(any_of[1]["type"], "array");
    }

    #[test]
    fn subscriptions_are_marked_and_unsubscribe_is_documented() {
        let doc = document();
        let methods = doc["methods"].as_array().unwrap();
        let sub = methods
            .iter()
            .find(|m| m["name"] == crate::SESSION_SUBSCRIBE)
            .unwrap();
        assert_eq!(sub["x-subscription"]["notification"], crate::SESSION_EVENT);
        assert_eq!(
            sub["x-subscription"]["params"][1]["schema"]["$ref"],
            "#/components/schemas/SessionNotification"
        );
        assert!(
            methods
                .iter()
                .any(|m| m["name"] == crate::SESSION_UNSUBSCRIBE)
        );
    }
}
