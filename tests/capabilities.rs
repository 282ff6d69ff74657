//! The capability surface through a real daemon: MCP servers (system section before the
//! first compile, deltas after), deferred tools and their discovery, agent types, and
//! every delta kind replayed byte-identically across restart, fork and import; the
//! re-announcement after a compaction.

use crate::common;
use crate::support::capabilities as support;

use std::path::Path;

use common::Daemon;
use serde_json::{Value, json};
use support::{T0, added, compile, records, session, write};

fn of_type<'a>(atts: &'a [Value], kind: &str) -> Vec<&'a Value> {
    atts.iter().filter(|a| a["type"] == kind).collect()
}

fn turn(d: &Daemon, sid: &str, i: usize) {
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "user", "content": format!("question {i}"), "timestamp": T0},
            {"type": "assistant", "content": format!("answer {i}"), "timestamp": T0}
        ]}),
    );
}

fn tool(name: &str, deferred: bool) -> Value {
    json!({"name": name, "description": format!("{name} does one thing"),
           "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
           "defer_loading": deferred})
}

fn tool_names(req: &Value) -> Vec<String> {
    req["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// A tool as sent, without the cache marker (which follows the last tool).
fn unmarked(t: &Value) -> Value {
    let mut t = t.clone();
    if let Some(o) = t.as_object_mut() {
        o.remove("cache_control");
    }
    t
}

#[test]
fn mcp_servers_before_the_first_compile_live_in_system_later_ones_arrive_as_deltas() {
    let d = Daemon::start();
    let sid = session(&d, d.dir.path(), json!({}));
    let r = d.call(
        "capabilities.mcp_connect",
        json!({"session_id": sid, "name": "early", "instructions": "Use early__get before anything else.",
               "tools": [tool("early__get", false)]}),
    );
    assert_eq!(r["announced_by"], "system");
    let c1 = compile(&d, &sid);
    let system1 = c1["request"]["system"].clone();
    let sys_text = system1.to_string();
    assert!(sys_text.contains("# MCP Server Instructions\\n\\nThe following MCP servers have provided instructions for how to use their tools and resources:\\n\\n## early\\nUse early__get before anything else."));
    assert!(
        system1[0]["cache_control"].get("scope").is_none(),
        "MCP tools: org scope"
    );
    assert_eq!(tool_names(&c1["request"]), vec!["early__get"]);
    assert!(of_type(&added(&d, &sid, &c1), "mcp_instructions_delta").is_empty());
    assert!(
        c1["metadata"]["system_sections"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == "mcp_instructions" && s["class"] == "memoized")
    );

    turn(&d, &sid, 1);
    let r = d.call(
        "capabilities.mcp_connect",
        json!({"session_id": sid, "name": "late", "instructions": "Search late tools by topic.",
               "tools": [tool("late__query", true), tool("late__write", true)]}),
    );
    assert_eq!(r["announced_by"], "delta");
    assert_eq!(r["tool_count"], 3);
    let c2 = compile(&d, &sid);
    assert_eq!(c2["request"]["system"], system1, "system never changes");
    let texts = |c: &Value| -> Vec<Value> {
        c["request"]["system"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["text"].clone())
            .collect()
    };
    assert_eq!(
        tool_names(&c2["request"]),
        vec!["early__get"],
        "deferred: not sent"
    );
    let a2 = added(&d, &sid, &c2);
    let mcp = of_type(&a2, "mcp_instructions_delta");
    assert_eq!(mcp.len(), 1);
    assert_eq!(mcp[0]["added_names"], json!(["late"]));
    assert_eq!(
        mcp[0]["added_blocks"],
        json!(["## late\nSearch late tools by topic."])
    );
    let deferred = of_type(&a2, "deferred_tools_delta");
    assert_eq!(
        deferred[0]["added_names"],
        json!(["late__query", "late__write"])
    );
    let tail = c2["request"]["messages"].to_string();
    assert!(tail.contains("<system-reminder>\\n# MCP Server Instructions"));
    assert!(tail.contains("can now be found with tool search"));

    d.call(
        "capabilities.mcp_set_instructions",
        json!({"session_id": sid, "name": "late", "instructions": "Changed: ask late__query first."}),
    );
    let c3 = compile(&d, &sid);
    let a3 = added(&d, &sid, &c3);
    assert_eq!(a3.len(), 1);
    assert_eq!(
        a3[0]["added_blocks"],
        json!(["## late\nChanged: ask late__query first."])
    );

    d.call(
        "capabilities.mcp_disconnect",
        json!({"session_id": sid, "name": "early"}),
    );
    let c4 = compile(&d, &sid);
    // Its text stays; the default cache scope is the organisation's with or without
    // MCP tools.
    assert_eq!(texts(&c4), texts(&c1));
    assert_eq!(
        c4["request"]["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert!(
        tool_names(&c4["request"]).is_empty(),
        "its tools left with it"
    );
    let a4 = added(&d, &sid, &c4);
    assert_eq!(a4.len(), 1);
    assert_eq!(a4[0]["removed_names"], json!(["early"]));
    assert!(
        c4["request"]["messages"]
            .to_string()
            .contains("disconnected; their instructions no longer apply:\\nearly")
    );

    d.call(
        "capabilities.mcp_disconnect",
        json!({"session_id": sid, "name": "late"}),
    );
    let a5 = added(&d, &sid, &compile(&d, &sid));
    assert_eq!(
        of_type(&a5, "deferred_tools_delta")[0]["removed_names"],
        json!(["late__query", "late__write"])
    );
    assert_eq!(
        of_type(&a5, "mcp_instructions_delta")[0]["removed_names"],
        json!(["late"])
    );
    assert!(added(&d, &sid, &compile(&d, &sid)).is_empty(), "settled");

    // Bad reports change nothing and name their field.
    let e = d
        .try_call(
            "capabilities.mcp_set_instructions",
            json!({"session_id": sid, "name": "nobody", "instructions": "x"}),
        )
        .unwrap_err();
    assert_eq!(e["data"]["field"], "name", "{e}");
    d.call(
        "capabilities.set_tools",
        json!({"session_id": sid, "tools": [tool("Read", false)]}),
    );
    let e = d
        .try_call(
            "capabilities.mcp_connect",
            json!({"session_id": sid, "name": "x", "tools": [tool("Read", false)]}),
        )
        .unwrap_err();
    assert_eq!(e["data"]["field"], "tools[0].name", "{e}");
    let e = d
        .try_call(
            "capabilities.mcp_connect",
            json!({"session_id": sid, "name": "", "tools": []}),
        )
        .unwrap_err();
    assert_eq!(e["data"]["field"], "name");
    let caps = d.call("capabilities.get", json!({"session_id": sid}));
    assert!(caps["mcp_servers"].as_array().unwrap().is_empty());
}

fn search_turn(d: &Daemon, sid: &str, i: usize, found: &[&str]) {
    let refs: Vec<Value> = found
        .iter()
        .map(|n| json!({"type": "tool_reference", "tool_name": n}))
        .collect();
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "assistant", "message_id": format!("s{i}"), "timestamp": T0,
             "content": [{"type": "tool_use", "id": format!("ts{i}"), "name": "ToolSearch", "input": {"query": "x"}}]},
            {"type": "user", "timestamp": T0,
             "content": [{"type": "tool_result", "tool_use_id": format!("ts{i}"), "content": refs}]}
        ]}),
    );
}

#[test]
fn a_discovered_deferred_tool_is_sent_in_full_from_then_on_and_nothing_already_sent_moves() {
    let d = Daemon::start();
    let sid = session(&d, d.dir.path(), json!({}));
    d.call(
        "capabilities.set_tools",
        json!({"session_id": sid, "tools": [
            tool("Read", false), tool("d_alpha", true), tool("Bash", false),
            tool("d_beta", true), tool("ToolSearch", false), tool("d_gamma", true)]}),
    );
    turn(&d, &sid, 0);
    let c1 = compile(&d, &sid);
    assert_eq!(
        tool_names(&c1["request"]),
        vec!["Read", "Bash", "ToolSearch"]
    );
    let a1 = added(&d, &sid, &c1);
    assert_eq!(
        a1[0]["added_names"],
        json!(["d_alpha", "d_beta", "d_gamma"])
    );

    search_turn(&d, &sid, 1, &["d_gamma"]);
    let c2 = compile(&d, &sid);
    let t2 = c2["request"]["tools"].as_array().unwrap().clone();
    assert_eq!(
        tool_names(&c2["request"]),
        vec!["Read", "Bash", "ToolSearch", "d_gamma"]
    );
    assert_eq!(
        t2[3]["input_schema"]["properties"]["q"]["type"], "string",
        "full schema"
    );
    assert!(t2[3].get("defer_loading").is_none());
    assert!(
        t2[3]["cache_control"].is_object(),
        "the marker moves to the end"
    );
    let msgs = c2["request"]["messages"].to_string();
    assert!(msgs.contains("Tool found: d_gamma."), "{msgs}");
    assert!(!msgs.contains("tool_reference"));
    assert!(
        added(&d, &sid, &c2).is_empty(),
        "discovery announces nothing"
    );

    // Discovered by RPC (a tool search that answers in text): appended after.
    let r = d.call(
        "capabilities.discover_tools",
        json!({"session_id": sid, "names": ["d_alpha"]}),
    );
    assert_eq!(r["announced_by"], "tools");
    let c3 = compile(&d, &sid);
    let t3 = c3["request"]["tools"].as_array().unwrap().clone();
    assert_eq!(
        tool_names(&c3["request"]),
        vec!["Read", "Bash", "ToolSearch", "d_gamma", "d_alpha"]
    );
    for i in 0..4 {
        assert_eq!(unmarked(&t3[i]), unmarked(&t2[i]), "tool {i} unchanged");
    }
    // A later search that names it again changes nothing.
    search_turn(&d, &sid, 2, &["d_alpha", "d_gamma"]);
    assert_eq!(
        tool_names(&compile(&d, &sid)["request"]),
        tool_names(&c3["request"])
    );

    let caps = d.call("capabilities.get", json!({"session_id": sid}));
    let states: Vec<(String, String)> = caps["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().into(),
                t["state"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(states.contains(&("d_gamma".into(), "discovered".into())));
    assert!(states.contains(&("d_beta".into(), "deferred".into())));
    assert!(states.contains(&("Read".into(), "sent".into())));
    assert_eq!(
        caps["announced_deferred_tools"],
        json!(["d_alpha", "d_beta", "d_gamma"])
    );

    let e = d
        .try_call(
            "capabilities.discover_tools",
            json!({"session_id": sid, "names": ["Read"]}),
        )
        .unwrap_err();
    assert_eq!(e["data"]["field"], "names[0]");
}

#[test]
fn agent_types_are_announced_as_deltas() {
    let d = Daemon::start();
    let sid = session(&d, d.dir.path(), json!({}));
    d.call(
        "capabilities.set_agents",
        json!({"session_id": sid, "agents": [
            {"type": "explore", "description": "Finds code fast", "tools": ["Read", "Grep"]},
            {"type": "plan", "description": "Plans changes"}]}),
    );
    let c1 = compile(&d, &sid);
    let a1 = added(&d, &sid, &c1);
    assert_eq!(a1[0]["type"], "agent_listing_delta");
    assert!(c1["request"]["messages"].to_string().contains(
        "Available agent types for the Agent tool:\\n- explore: Finds code fast (Tools: Read, Grep)\\n- plan: Plans changes (Tools: All tools)"
    ));
    d.call(
        "capabilities.set_agents",
        json!({"session_id": sid, "agents": [{"type": "explore", "description": "Finds code fast", "tools": ["Read", "Grep"]}]}),
    );
    let a2 = added(&d, &sid, &compile(&d, &sid));
    assert_eq!(a2.len(), 1);
    assert_eq!(a2[0]["removed_types"], json!(["plan"]));
    assert_eq!(a2[0]["added_types"], json!([]));
    assert!(added(&d, &sid, &compile(&d, &sid)).is_empty());
    let e = d
        .try_call(
            "capabilities.set_agents",
            json!({"session_id": sid, "agents": [{"type": "a", "description": "x"}, {"type": "a", "description": "y"}]}),
        )
        .unwrap_err();
    assert_eq!(e["data"]["field"], "agents[1].type");
}

/// A session that has gone through every delta kind: a skill listing (with a
/// conditional skill activated later), deferred tools with one discovered by a
/// `tool_reference`, a late MCP server, agent types.
fn every_delta_kind(d: &Daemon, cwd: &Path) -> String {
    write(
        &cwd.join(".claude/skills/review/SKILL.md"),
        "---\ndescription: Review a change\n---\nRead the diff first.\n",
    );
    write(
        &cwd.join(".claude/skills/rusty/SKILL.md"),
        "---\ndescription: Rust rules\npaths: [\"src/**/*.rs\"]\n---\nUse clippy.\n",
    );
    let sid = session(d, cwd, json!({}));
    register(d, &sid, false);
    turn(d, &sid, 0);
    compile(d, &sid);
    register(d, &sid, true);
    search_turn(d, &sid, 1, &["late__query"]);
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "assistant", "message_id": "m9", "timestamp": T0,
             "content": [{"type": "tool_use", "id": "r9", "name": "Read", "input": {"file_path": cwd.join("src/lib.rs")}}]},
            {"type": "user", "timestamp": T0, "content": [{"type": "tool_result", "tool_use_id": "r9", "content": "1\tpub fn f() {}"}]}
        ]}),
    );
    let c = compile(d, &sid);
    let kinds: Vec<String> = added(d, &sid, &c)
        .iter()
        .map(|a| a["type"].as_str().unwrap().to_string())
        .collect();
    assert!(
        kinds.contains(&"mcp_instructions_delta".to_string())
            && kinds.contains(&"skill_listing".to_string()),
        "{kinds:?}"
    );
    sid
}

/// What the agent reports: its tools and agent types, and (`late`) the MCP server that
/// connected after the first compile.
fn register(d: &Daemon, sid: &str, late: bool) {
    if !late {
        d.call(
            "capabilities.set_tools",
            json!({"session_id": sid, "tools": [tool("Read", false), tool("ToolSearch", false), tool("d_local", true)]}),
        );
        d.call(
            "capabilities.set_agents",
            json!({"session_id": sid, "agents": [{"type": "explore", "description": "Finds code"}]}),
        );
    } else {
        d.call(
            "capabilities.mcp_connect",
            json!({"session_id": sid, "name": "late", "instructions": "Late server rules.",
                   "tools": [tool("late__query", true)]}),
        );
    }
}

/// Records as Claude Code JSONL lines, so `session.import` can take them back.
fn as_claude_code(records: &[Value], cwd: &Path) -> String {
    let mut lines = Vec::new();
    for r in records {
        let kind = r["type"].as_str().unwrap();
        let mut o = json!({"type": kind, "uuid": r["uuid"], "timestamp": r["timestamp"],
                           "sessionId": "s1", "cwd": cwd});
        if let Some(p) = r.get("parent_uuid") {
            o["parentUuid"] = p.clone();
        }
        if r["is_meta"] == true {
            o["isMeta"] = json!(true);
        }
        match kind {
            "attachment" => o["attachment"] = r["attachment"].clone(),
            "system" => o["subtype"] = r["subtype"].clone(),
            _ => {
                o["message"] = json!({"role": kind, "content": r["content"]});
                if let Some(id) = r.get("message_id") {
                    o["message"]["id"] = id.clone();
                }
            }
        }
        lines.push(o.to_string());
    }
    lines.join("\n")
}

#[test]
fn every_delta_kind_replays_byte_identically_across_restart_fork_and_import() {
    let mut d = Daemon::start();
    let cwd = d.dir.path().join("project");
    let sid = every_delta_kind(&d, &cwd);
    let body = d.compile_body_with(json!({"session_id": sid, "now": T0}));
    assert!(body.contains("late__query"), "discovered: sent");
    assert_eq!(
        d.compile_body_with(json!({"session_id": sid, "now": T0})),
        body
    );

    d.kill9();
    d.spawn();
    assert_eq!(
        d.compile_body_with(json!({"session_id": sid, "now": T0})),
        body,
        "restart"
    );

    let fork = d.call("session.fork", json!({"session_id": sid}))["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        d.compile_body_with(json!({"session_id": fork, "now": T0})),
        body,
        "fork"
    );

    let jsonl = as_claude_code(&records(&d, &sid), &cwd);
    let imported = d.call("session.import", json!({"jsonl": jsonl}))["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    register(&d, &imported, false);
    register(&d, &imported, true);
    let c = compile(&d, &imported);
    assert_eq!(
        c["metadata"]["attachments_added"],
        json!([]),
        "the import's records already announced everything"
    );
    assert_eq!(
        d.compile_body_with(json!({"session_id": imported, "now": T0})),
        body,
        "import"
    );
}

#[test]
fn a_compaction_re_announces_the_current_state_and_restores_invoked_skills() {
    let d = Daemon::start();
    let cwd = d.dir.path().join("project");
    let sid = every_delta_kind(&d, &cwd);
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "assistant", "message_id": "sk", "timestamp": T0,
             "content": [{"type": "tool_use", "id": "sk1", "name": "Skill", "input": {"skill": "review"}}]},
            {"type": "user", "timestamp": T0, "content": [{"type": "tool_result", "tool_use_id": "sk1", "content": "Launching skill: review"}]}
        ]}),
    );
    let report = d.call("context.compact", json!({"session_id": sid}));
    assert_eq!(report["trigger"], "manual");
    let recs = records(&d, &sid);
    let b = recs
        .iter()
        .rposition(|r| r["subtype"] == "compact_boundary")
        .unwrap();
    let after: Vec<&Value> = recs[b..]
        .iter()
        .filter(|r| r["type"] == "attachment")
        .map(|r| &r["attachment"])
        .collect();
    let kinds: Vec<&str> = after.iter().map(|a| a["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        vec![
            "invoked_skills",
            "deferred_tools_delta",
            "agent_listing_delta",
            "mcp_instructions_delta"
        ]
    );
    assert_eq!(after[0]["skills"][0]["name"], "review");
    assert!(
        after[0]["skills"][0]["content"]
            .as_str()
            .unwrap()
            .contains("Read the diff first.")
    );
    // late__query was discovered: `tools` sends it in full, so it is not announced as
    // waiting to be found (issue 41, item 10).
    assert_eq!(after[1]["added_names"], json!(["d_local"]));
    assert_eq!(after[3]["added_names"], json!(["late"]));
    // The manual compact ran on the daemon's clock; so does this compile (a fixed 'now'
    // on another day would add a date_change).
    let c = d.call("context.compile", json!({"session_id": sid}));
    let text = c["request"]["messages"].to_string();
    assert!(text.contains("### Skill: review"));
    assert!(text.contains("Late server rules."));
    assert!(
        !text.contains("- review: Review a change"),
        "the listing is not repeated"
    );
    assert!(
        tool_names(&c["request"]).contains(&"late__query".to_string()),
        "still discovered"
    );
    assert_eq!(
        c["metadata"]["attachments_added"],
        json!([]),
        "{:?}",
        added(&d, &sid, &c)
    );
}
