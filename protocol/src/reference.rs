//! The RPC reference in Markdown (`docs/rpc-reference.md`), generated from the OpenRPC
//! document so that it never says other than the contract: every method with its
//! params (one per field), its result and, for subscriptions, its notification; then
//! every error code; then every schema with its fields.

use std::fmt::Write as _;

use serde_json::Value;

/// A schema as a short type expression, linking named schemas to their section.
fn type_of(schema: &Value) -> String {
    if let Some(r) = schema["$ref"].as_str() {
        let name = r.rsplit('/').next().unwrap_or(r);
        return format!("[`{name}`](#{}-schema)", name.to_lowercase());
    }
    if let Some(c) = schema.get("const") {
        return format!("`{c}`");
    }
    if let Some(values) = schema["enum"].as_array() {
        let all: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
        return all.join(" \\| ");
    }
    for combo in ["anyOf", "oneOf", "allOf"] {
        if let Some(options) = schema[combo].as_array() {
            let all: Vec<String> = options.iter().map(type_of).collect();
            let joiner = if combo == "allOf" { " & " } else { " \\| " };
            return all.join(joiner);
        }
    }
    match &schema["type"] {
        Value::Array(kinds) => {
            let all: Vec<String> = kinds
                .iter()
                .map(|k| {
                    let mut one = schema.clone();
                    one["type"] = k.clone();
                    type_of(&one)
                })
                .collect();
            all.join(" \\| ")
        }
        Value::String(kind) if kind == "array" => format!("array of {}", type_of(&schema["items"])),
        Value::String(kind) if kind == "object" && schema.get("properties").is_some() => {
            "object (fields below)".to_string()
        }
        Value::String(kind) => kind.clone(),
        _ => "any".to_string(),
    }
}

/// A description on one table line.
fn cell(text: Option<&str>) -> String {
    text.unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

fn fields(out: &mut String, schema: &Value) {
    let Some(props) = schema["properties"].as_object() else {
        return;
    };
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    out.push_str("\n| field | type | required | description |\n|---|---|---|---|\n");
    for (name, sub) in props {
        let _ = writeln!(
            out,
            "| `{name}` | {} | {} | {} |",
            type_of(sub),
            if required.contains(&name.as_str()) {
                "yes"
            } else {
                ""
            },
            cell(sub["description"].as_str())
        );
    }
}

/// The reference, from the document.
pub fn markdown(doc: &Value) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# RPC reference\n\nGenerated from `protocol/openrpc.json` (protocol {}) by \
         `ctxd_protocol::reference`: do not edit; `UPDATE_SCHEMA=1 cargo test -p \
         ctxd-protocol` writes it again. Params are by name (one object). How the methods \
         work together is in [rpc.md](rpc.md).\n",
        doc["info"]["version"].as_str().unwrap_or("")
    );
    out.push_str("## Methods\n\n");
    let methods = doc["methods"].as_array().cloned().unwrap_or_default();
    for m in &methods {
        let name = m["name"].as_str().unwrap_or("");
        let _ = writeln!(
            out,
            "- [`{name}`](#{})",
            name.replace(['.', '_'], "").to_lowercase()
        );
    }
    for m in &methods {
        let name = m["name"].as_str().unwrap_or("");
        let _ = writeln!(out, "\n### {name}\n\n{}", cell(m["summary"].as_str()));
        let params = m["params"].as_array().cloned().unwrap_or_default();
        if params.is_empty() {
            out.push_str("\nNo params.\n");
        } else {
            out.push_str("\n| param | type | required | description |\n|---|---|---|---|\n");
            for p in &params {
                let _ = writeln!(
                    out,
                    "| `{}` | {} | {} | {} |",
                    p["name"].as_str().unwrap_or(""),
                    type_of(&p["schema"]),
                    if p["required"] == true { "yes" } else { "" },
                    cell(p["description"].as_str())
                );
            }
        }
        let _ = writeln!(out, "\nResult: {}.", type_of(&m["result"]["schema"]));
        if let Some(sub) = m.get("x-subscription") {
            let item = sub["params"]
                .as_array()
                .and_then(|p| p.iter().find(|p| p["name"] == "result"))
                .map(|p| type_of(&p["schema"]))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "\nA subscription (WebSocket only): notifications `{}` carry {item}; end it with `{}`.",
                sub["notification"].as_str().unwrap_or(""),
                sub["unsubscribe"].as_str().unwrap_or("")
            );
        }
    }
    out.push_str("\n## Errors\n\n| code | name | meaning |\n|---|---|---|\n");
    if let Some(errors) = doc["components"]["errors"].as_object() {
        let mut all: Vec<(&String, &Value)> = errors.iter().collect();
        all.sort_by_key(|(_, e)| e["code"].as_i64().unwrap_or_default());
        for (name, e) in all {
            let _ = writeln!(
                out,
                "| {} | `{name}` | {} |",
                e["code"],
                cell(e["message"].as_str())
            );
        }
    }
    out.push_str("\n## Schemas\n");
    if let Some(schemas) = doc["components"]["schemas"].as_object() {
        for (name, schema) in schemas {
            let _ = writeln!(out, "\n### {name} (schema)\n");
            if let Some(d) = schema["description"].as_str() {
                let _ = writeln!(out, "{}\n", cell(Some(d)));
            }
            if schema.get("properties").is_some() {
                let _ = write!(out, "An object.");
                fields(&mut out, schema);
            } else {
                let _ = writeln!(out, "{}.", type_of(schema));
            }
        }
    }
    out
}
