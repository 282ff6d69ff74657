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
        "result": { "name": "OpenRPC document", "schema": { "type": "object", "title": "OpenRpcDocument" } },
        "x-identifier": identifier(RPC_DISCOVER),
    }));
    // Generators also name a type after each method (`daemon.status` → `DaemonStatus`):
    // a schema of the same name takes another title, so the two do not collide.
    let method_types: std::collections::BTreeSet<String> =
        method_table().iter().map(|m| pascal(m.name)).collect();
    let schemas: Map<String, Value> = generator
        .take_definitions(true)
        .into_iter()
        .map(|(name, mut schema)| {
            let title = if method_types.contains(&name) {
                format!("{name}Result")
            } else {
                name.clone()
            };
            titled(&mut schema, &title);
            (name, schema)
        })
        .collect();
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

/// A name code generators can use for `method` as it is: `session.create` →
/// `sessionCreate` (dotted names are not identifiers in most languages).
pub fn identifier(method: &str) -> String {
    let mut out = String::with_capacity(method.len());
    let mut upper = false;
    for c in method.chars() {
        if c == '.' || c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `name` with its first letter upper-cased: a type name part.
fn pascal(name: &str) -> String {
    let id = identifier(name);
    let mut chars = id.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Gives a schema object and each schema inside it a `title` (generators name their
/// types after it, and invent hashed names otherwise): the inner ones are named after
/// their place (a property's name, `Item`, `Option1`, ...). A title already there is
/// kept; a bare reference to a named schema gets none.
fn titled(schema: &mut Value, title: &str) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if object.len() == 1 && object.contains_key("$ref") {
        return;
    }
    let own = match object.get("title").and_then(Value::as_str) {
        Some(existing) => existing.to_string(),
        None => {
            object.insert("title".into(), Value::String(title.to_string()));
            title.to_string()
        }
    };
    if let Some(Value::Object(props)) = object.get_mut("properties") {
        for (name, sub) in props.iter_mut() {
            titled(sub, &format!("{own}{}", pascal(name)));
        }
    }
    if let Some(items) = object.get_mut("items") {
        titled(items, &format!("{own}Item"));
    }
    if let Some(extra @ Value::Object(_)) = object.get_mut("additionalProperties") {
        titled(extra, &format!("{own}Value"));
    }
    for combo in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(options)) = object.get_mut(combo) {
            for (i, sub) in options.iter_mut().enumerate() {
                titled(sub, &format!("{own}Option{}", i + 1));
            }
        }
    }
}

fn method_entry(m: &MethodSpec, g: &mut schemars::SchemaGenerator) -> Value {
    let mut params = by_name_params(Value::from((m.params)(g)));
    for p in &mut params {
        let title = format!(
            "{}{}",
            pascal(m.name),
            pascal(p["name"].as_str().unwrap_or(""))
        );
        titled(&mut p["schema"], &title);
    }
    // A subscription's id has the schema of the subscribe method's result.
    let mut result = Value::from((m.result)(g));
    titled(&mut result, &format!("{}Result", pascal(m.name)));
    let mut entry = json!({
        "name": m.name,
        "summary": m.summary,
        "paramStructure": "by-name",
        "params": params,
        "result": { "name": "result", "schema": result },
        "x-identifier": identifier(m.name),
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

    /// Every schema a generator would name has a title, and every method an identifier
    /// of its own: generators need not invent names (`StringDoaGddGA`) or turn
    /// `session.create` into something a language accepts.
    #[test]
    fn every_schema_has_a_title_and_every_method_an_identifier() {
        let doc = document();
        for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
            if schema.is_object() {
                let title = schema["title"].as_str().unwrap();
                assert!(
                    title == name || title == format!("{name}Result"),
                    "{name}: {title}"
                );
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for m in doc["methods"].as_array().unwrap() {
            let id = m["x-identifier"].as_str().unwrap();
            assert!(
                id.chars().all(|c| c.is_ascii_alphanumeric()) && id.starts_with(char::is_lowercase),
                "{id}"
            );
            assert!(seen.insert(id.to_string()), "{id} twice");
            let inline = |s: &Value| {
                s.as_object()
                    .is_some_and(|o| !(o.len() == 1 && o.contains_key("$ref")))
            };
            for p in m["params"].as_array().unwrap() {
                if inline(&p["schema"]) {
                    assert!(
                        p["schema"]["title"].is_string(),
                        "{}: {}",
                        m["name"],
                        p["name"]
                    );
                }
            }
            if inline(&m["result"]["schema"]) {
                assert!(m["result"]["schema"]["title"].is_string(), "{}", m["name"]);
            }
        }
        assert_eq!(identifier("session.create"), "sessionCreate");
        assert_eq!(identifier("context.set_section"), "contextSetSection");
    }

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
