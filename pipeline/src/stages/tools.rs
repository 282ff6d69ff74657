//! The `tools` array: client schemas in registration order, the cache marker on the last
//! regular tool, server-side tools after it so toggling them keeps the cached prefix.

use ctxd_protocol::{CacheControl, ToolSpec};
use serde_json::{Map, Value, json};

pub(crate) fn build(tools: &[ToolSpec]) -> Vec<Value> {
    let regular: Vec<&ToolSpec> = tools.iter().filter(|t| t.server_type.is_none()).collect();
    let server: Vec<&ToolSpec> = tools.iter().filter(|t| t.server_type.is_some()).collect();
    let mut out = Vec::with_capacity(tools.len());
    for (i, t) in regular.iter().enumerate() {
        let mut m = Map::new();
        m.insert("name".into(), json!(t.name));
        if let Some(d) = &t.description {
            m.insert("description".into(), json!(d));
        }
        m.insert(
            "input_schema".into(),
            t.input_schema
                .clone()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        );
        if t.defer_loading {
            m.insert("defer_loading".into(), json!(true));
        }
        extend(&mut m, &t.extra);
        if i + 1 == regular.len() {
            m.insert("cache_control".into(), json!(CacheControl::ephemeral()));
        }
        out.push(Value::Object(m));
    }
    for t in server {
        let mut m = Map::new();
        m.insert("type".into(), json!(t.server_type));
        m.insert("name".into(), json!(t.name));
        extend(&mut m, &t.extra);
        out.push(Value::Object(m));
    }
    out
}

/// A tool's own further fields; the ones ctxd writes itself stay ctxd's.
fn extend(m: &mut Map<String, Value>, extra: &Map<String, Value>) {
    for (k, v) in extra {
        if k != "cache_control" && !m.contains_key(k) {
            m.insert(k.clone(), v.clone());
        }
    }
}

/// Tools the messages call that `tools` does not define, in the order of first use: a
/// request holding `tool_use` blocks must define every tool they name, and an imported
/// transcript (or a session whose tools changed) may hold calls to tools it never
/// registered.
pub(crate) fn missing<'a>(tools: &[Value], called: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut known: std::collections::HashSet<&str> = tools
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    let mut out: Vec<String> = Vec::new();
    for name in called {
        if !known.contains(name) {
            out.push(name.to_string());
            known.insert(name);
        }
    }
    out
}

/// The definition sent for a tool the history calls but the session does not define:
/// enough for the request to be valid; the model is told not to call it.
pub(crate) fn placeholder(name: &str) -> Value {
    json!({
        "name": name,
        "description": "A tool used earlier in this conversation. It is not available now: do not call it.",
        "input_schema": {"type": "object"},
    })
}

pub(crate) fn has_mcp_tools(tools: &[ToolSpec]) -> bool {
    tools.iter().any(|t| t.mcp_server.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, server: Option<&str>) -> ToolSpec {
        ToolSpec {
            extra: Default::default(),
            name: name.into(),
            description: Some("d".into()),
            input_schema: None,
            server_type: server.map(str::to_string),
            max_result_size_chars: None,
            mcp_server: None,
            defer_loading: false,
        }
    }

    #[test]
    fn marker_on_last_regular_tool_and_server_tools_last() {
        let out = build(&[
            tool("a", None),
            tool("ws", Some("web_search_20250305")),
            tool("b", None),
        ]);
        assert_eq!(out[0]["name"], "a");
        assert!(out[0].get("cache_control").is_none());
        assert_eq!(out[1]["name"], "b");
        assert_eq!(out[1]["cache_control"]["type"], "ephemeral");
        assert_eq!(out[2]["type"], "web_search_20250305");
    }
}
