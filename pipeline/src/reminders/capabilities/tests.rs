use super::*;

fn agent(t: &str, d: &str) -> AgentType {
    AgentType {
        agent_type: t.into(),
        description: d.into(),
        tools: None,
    }
}

fn block(n: &str, text: &str) -> McpBlock {
    McpServer {
        name: n.into(),
        instructions: Some(text.into()),
        tools: vec![],
        resources: vec![],
    }
    .block()
    .unwrap()
}

#[test]
fn deltas_announce_only_the_difference_and_fold_back_to_nothing() {
    let agents = vec![agent("explore", "Searches code"), agent("plan", "Plans")];
    let cur = Current {
        discovered: Vec::new(),
        deferred: vec!["mcp__a__x", "mcp__a__y"],
        agents: &agents,
        mcp: vec![block("a", "Use x first.")],
    };
    let mut told = Announced::default();
    let first = deltas(&cur, &told, &[]);
    assert_eq!(first.len(), 3);
    assert_eq!(first[0]["added_names"], json!(["mcp__a__x", "mcp__a__y"]));
    assert_eq!(first[1]["initial"], true);
    assert_eq!(
        first[1]["added_lines"][0],
        "- explore: Searches code (Tools: All tools)"
    );
    assert_eq!(first[2]["added_blocks"][0], "## a\nUse x first.");
    for d in &first {
        told.apply(d);
    }
    assert!(deltas(&cur, &told, &[]).is_empty(), "replayed: nothing new");

    let fewer = vec![agent("explore", "Searches code and docs")];
    let cur2 = Current {
        discovered: Vec::new(),
        deferred: vec!["mcp__a__y"],
        agents: &fewer,
        mcp: vec![],
    };
    let second = deltas(&cur2, &told, &[]);
    assert_eq!(second[0]["removed_names"], json!(["mcp__a__x"]));
    assert_eq!(second[0]["added_names"], json!([]));
    assert_eq!(second[1]["added_types"], json!(["explore"]), "changed line");
    assert_eq!(second[1]["removed_types"], json!(["plan"]));
    assert_eq!(second[1]["initial"], false);
    assert_eq!(second[2]["removed_names"], json!(["a"]));
    for d in &second {
        told.apply(d);
    }
    assert!(deltas(&cur2, &told, &[]).is_empty());
    assert_eq!(told.records, 6);
}

#[test]
fn the_system_section_is_the_base_of_mcp_instructions() {
    let base = vec![block("early", "E")];
    let cur = Current {
        discovered: Vec::new(),
        deferred: vec![],
        agents: &[],
        mcp: vec![block("early", "E"), block("late", "L")],
    };
    let d = deltas(&cur, &Announced::default(), &base);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["added_names"], json!(["late"]));
    // The early server disconnects: its removal is announced although only system
    // ever held it.
    let cur = Current {
        discovered: Vec::new(),
        deferred: vec![],
        agents: &[],
        mcp: vec![],
    };
    let d = deltas(&cur, &Announced::default(), &base);
    assert_eq!(d[0]["removed_names"], json!(["early"]));
}

#[test]
fn claude_codes_own_records_fold_too() {
    let mut told = Announced::default();
    told.apply(&json!({"type": "deferred_tools_delta", "addedNames": ["a", "b"], "addedLines": ["a", "b"], "removedNames": []}));
    told.apply(&json!({"type": "agent_listing_delta", "addedTypes": ["x"], "addedLines": ["- x: y"], "removedTypes": [], "isInitial": true}));
    told.apply(&json!({"type": "mcp_instructions_delta", "addedNames": ["s"], "addedBlocks": ["## s\nhi"], "removedNames": []}));
    told.apply(&json!({"type": "date_change", "date": "2026-01-01"}));
    assert_eq!(told.records, 3);
    assert_eq!(told.deferred_names(), vec!["a", "b"]);
    assert_eq!(told.agent_types(), vec!["x"]);
    assert_eq!(told.mcp_blocks(&[])["s"], "## s\nhi");
}

#[test]
fn forks_drop_later_rpc_reports() {
    let st = CapabilityState {
        discovered: vec![
            Stamped {
                name: "a".into(),
                seq: 3,
            },
            Stamped {
                name: "b".into(),
                seq: 9,
            },
        ],
        ..Default::default()
    };
    assert_eq!(st.up_to(5).discovered.len(), 1);
}

fn rec(seq: u64, v: Value) -> Record {
    let mut v = v;
    v["uuid"] = json!(format!("u{seq}"));
    v["seq"] = json!(seq);
    v["timestamp"] = json!("2026-11-29T10:00:00Z");
    serde_json::from_value(v).unwrap()
}

#[test]
fn the_ledger_folds_incrementally_and_refolds_after_a_boundary() {
    let mut records = vec![
        rec(
            1,
            json!({"type": "attachment", "attachment": {"type": "deferred_tools_delta", "added_names": ["a"], "removed_names": []}}),
        ),
        rec(
            2,
            json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "tool_reference", "tool_name": "a"}]}]}),
        ),
        rec(
            3,
            json!({"type": "assistant", "content": [{"type": "tool_use", "id": "s", "name": "Skill", "input": {"skill": "review"}}]}),
        ),
        rec(
            4,
            json!({"type": "attachment", "attachment": {"type": "skill_listing", "content": "- review: r", "names": ["review"], "sigs": ["x"]}}),
        ),
    ];
    let mut l = Ledger::default();
    l.refresh(&records, "", &[]);
    assert_eq!(l.announced.deferred_names(), vec!["a"]);
    assert_eq!(
        l.discovered,
        vec![Stamped {
            name: "a".into(),
            seq: 2
        }]
    );
    assert_eq!(l.invoked.get("review"), Some(&3));
    assert!(l.sent_skills.covers("review", "x"));
    records.push(rec(5, json!({"type": "attachment", "attachment": {"type": "deferred_tools_delta", "added_names": ["b"], "removed_names": []}})));
    l.refresh(&records, "", &[]);
    assert_eq!(l.announced.deferred_names(), vec!["a", "b"]);
    records.push(rec(
        6,
        json!({"type": "system", "subtype": "compact_boundary"}),
    ));
    l.refresh(&records, "u6", &[]);
    assert!(
        l.announced.deferred_names().is_empty(),
        "swallowed by the compaction"
    );
    assert!(
        l.sent_skills.covers("review", "x"),
        "the sent-set outlives it"
    );
    assert_eq!(l.discovered.len(), 1, "so do discoveries");
    let fresh = {
        let mut f = Ledger::default();
        f.refresh(&records, "u6", &[]);
        f
    };
    assert_eq!(fresh.announced, l.announced);
    records.push(rec(7, json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "tool_reference", "tool_name": "c"}]}]})));
    assert_eq!(l.discovery_order(&records, &[]), vec!["a", "c"]);
}

#[test]
fn mcp_section_wording() {
    let s = mcp_section(&[block("jira", "Use jira__get_issue first.")]).unwrap();
    assert!(s.starts_with("# MCP Server Instructions\n\nThe following MCP servers"));
    assert!(s.ends_with("## jira\nUse jira__get_issue first."));
    assert_eq!(mcp_section(&[]), None);
    let none = McpServer {
        name: "n".into(),
        instructions: Some("  ".into()),
        tools: vec![],
        resources: vec![],
    };
    assert_eq!(none.block(), None);
}
