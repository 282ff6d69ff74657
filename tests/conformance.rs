//! The OpenRPC document is the contract: calls generated from it alone (required params
//! synthesised from their schemas, a few realistic values where a schema cannot yield
//! a valid one) are accepted by a real daemon, and every result validates against its
//! documented schema. The README's examples are checked the same way.

use crate::common;
use crate::support::openrpc;

use std::collections::BTreeSet;
use std::time::Duration;

use common::Daemon;
use openrpc::Document;
use serde_json::{Value, json};

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn sid_of(v: &Value) -> String {
    v["session"]["session_id"].as_str().unwrap().to_string()
}

/// The world the realistic values point into: sessions in the states some methods need.
struct World {
    cwd: std::path::PathBuf,
    main: String,
    image_uuid: String,
    snip: (String, String),
    collapse: (String, String),
    victim: String,
    client_summarised: String,
    jsonl: String,
    /// A session with a deferred tool (capability reports).
    caps: String,
    /// A session whose provider is a scripted Messages API (`context.send`).
    send: String,
    /// A session whose last response calls a tool a sub-agent answers.
    agents: String,
}

/// The key variable of the world's provider, and its value in the daemon's environment.
const SEND_KEY: (&str, &str) = ("CTXD_CONFORMANCE_KEY", "sk-conformance");

/// A scripted Messages API answering every request with one streamed text message.
async fn scripted_provider() -> wiremock::MockServer {
    let server = wiremock::MockServer::start().await;
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_c", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Done."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ];
    let body: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .mount(&server)
        .await;
    server
}

fn build_world(d: &Daemon, provider: &str) -> World {
    let cwd = d.dir.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(cwd.join("notes.txt"), "notes\n").unwrap();
    let skill = cwd.join(".claude/skills/notes/SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    std::fs::write(
        &skill,
        "---\ndescription: Keep notes\n---\nWrite them down.\n",
    )
    .unwrap();
    let create = |settings: Value, model: Value| {
        sid_of(&d.call(
            "session.create",
            json!({"cwd": cwd, "no_git": true, "settings": settings, "model": model}),
        ))
    };
    let turn = json!([
        {"type": "user", "content": "read the notes"},
        {"type": "assistant", "message_id": "m1",
         "usage": {"input_tokens": 900, "output_tokens": 20},
         "content": [{"type": "text", "text": "Reading."},
                     {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": cwd.join("notes.txt")}}]},
        {"type": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "notes"}]},
        {"type": "assistant", "content": "The notes say: notes."}
    ]);
    let main = create(json!({}), json!(null));
    d.call(
        "transcript.append",
        json!({"session_id": main, "records": turn}),
    );
    let image = d.call(
        "transcript.append",
        json!({"session_id": main, "records": [{"type": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
        ]}]}),
    );
    let image_uuid = image["appended"][0]["uuid"].as_str().unwrap().to_string();

    let snip_sid = create(json!({"snip_enabled": true}), json!(null));
    d.call(
        "transcript.append",
        json!({"session_id": snip_sid, "records": turn}),
    );
    d.call(
        "transcript.append",
        json!({"session_id": snip_sid, "records": [{"type": "user", "content": "next"}]}),
    );
    let text = d.call("context.compile", json!({"session_id": snip_sid}))["request"].to_string();
    let short = text
        .match_indices("[id:")
        .map(|(i, _)| text[i + 4..i + 10].to_string())
        .next()
        .expect("a short id");

    // Collapse: fill a small window until a span is committed (as in memory_collapse).
    let collapse_sid = create(
        json!({"collapse": {"enabled": true}}),
        json!({"context_window": 100000, "max_output_tokens": 20000}),
    );
    let t0 = "2026-11-29T10:00:00Z";
    let mut collapse_id = None;
    for i in 0..40 {
        d.call(
            "transcript.append",
            json!({"session_id": collapse_sid, "records": [
                {"type": "user", "content": format!("round {i}: {}", "w".repeat(8_000)), "timestamp": t0},
                {"type": "assistant", "content": format!("reply {i}"), "timestamp": t0}
            ]}),
        );
        d.call(
            "context.compile",
            json!({"session_id": collapse_sid, "now": t0}),
        );
        let list = d.call("context.collapse_list", json!({"session_id": collapse_sid}));
        if let Some(c) = list["collapses"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["status"] == "committed")
        {
            collapse_id = Some(c["id"].as_str().unwrap().to_string());
            break;
        }
    }

    let client_summarised = create(
        json!({"summariser": {"kind": "client", "timeout_secs": 30}}),
        json!(null),
    );
    d.call(
        "transcript.append",
        json!({"session_id": client_summarised, "records": turn}),
    );

    let caps = create(json!({}), json!(null));
    d.call(
        "capabilities.set_tools",
        json!({"session_id": caps, "tools": [{"name": "search_docs", "defer_loading": true,
               "input_schema": {"type": "object"}}]}),
    );

    let send = create(
        json!({"provider": {"kind": "anthropic", "base_url": provider, "api_key_env": SEND_KEY.0}}),
        json!(null),
    );
    d.call(
        "transcript.append",
        json!({"session_id": send, "records": [{"type": "user", "content": "say done"}]}),
    );

    let agents = create(json!({}), json!(null));
    d.call(
        "transcript.append",
        json!({"session_id": agents, "records": [
            {"type": "user", "content": "find the config"},
            {"type": "assistant", "content": [{"type": "tool_use", "id": "toolu_task", "name": "Task",
             "input": {"subagent_type": "Explore", "prompt": "find the config"}}]}
        ]}),
    );

    World {
        agents,
        caps,
        send,
        main,
        image_uuid,
        snip: (snip_sid, short),
        collapse: (collapse_sid, collapse_id.expect("a committed collapse")),
        victim: create(json!({}), json!(null)),
        client_summarised,
        jsonl: std::fs::read_to_string(common::fixtures().join("spotter/short.jsonl")).unwrap(),
        cwd,
    }
}

/// Realistic values for the params a schema cannot make valid on its own (an existing
/// session, a uuid in it, an absolute path, a transcript). Everything else is
/// synthesised from the document.
fn realistic(doc: &Document, w: &World, method: &str) -> Value {
    let main = json!({ "session_id": w.main });
    match method {
        "daemon.initialize" => json!({ "protocol_version": doc.doc["info"]["version"] }),
        "session.create" => json!({ "cwd": w.cwd }),
        "daemon.backup" => json!({ "path": w.cwd.join("backup.db") }),
        // A dry run: the calls after it still find their sessions.
        "daemon.gc" => json!({ "idle_days": 3650, "dry_run": true }),
        "session.delete" => json!({ "session_id": w.victim }),
        "session.import" | "transcript.parse_claude_code" => json!({ "jsonl": w.jsonl }),
        "transcript.append" => json!({
            "session_id": w.main,
            "records": [{"type": "user", "content": "what next?"}],
        }),
        "transcript.reject_media" => json!({
            "session_id": w.main, "record_uuid": w.image_uuid, "block_index": 0,
        }),
        "context.snip" => json!({ "session_id": w.snip.0, "from_id": w.snip.1, "to_id": w.snip.1 }),
        "context.collapse_undo" => {
            json!({ "session_id": w.collapse.0, "collapse_id": w.collapse.1 })
        }
        "context.report_error" => json!({ "session_id": w.main, "kind": "prompt_too_long" }),
        "context.send" => json!({ "session_id": w.send }),
        "agent.start" => json!({
            "session_id": w.agents, "tool_use_id": "toolu_task", "agent_type": "Explore",
            "agent_id": "helper", "prompt": "find the config",
        }),
        "agent.finish" => {
            json!({ "session_id": w.agents, "agent_id": "helper", "result": "in /etc" })
        }
        "agent.list" => json!({ "session_id": w.agents }),
        "context.report_read" => json!({ "session_id": w.main, "path": w.cwd.join("notes.txt") }),
        // In document order: connect, change, disconnect.
        "capabilities.mcp_connect" => json!({
            "session_id": w.caps, "name": "docs", "instructions": "Search before you read.",
        }),
        "capabilities.mcp_set_instructions" | "capabilities.mcp_disconnect" => {
            json!({ "session_id": w.caps, "name": "docs" })
        }
        "capabilities.discover_tools" => json!({ "session_id": w.caps, "names": ["search_docs"] }),
        "capabilities.invoke_skill" => json!({ "session_id": w.main, "name": "notes" }),
        "transcript.queue" => json!({ "session_id": w.main, "text": "also update the docs" }),
        "transcript.take_queued" => json!({ "session_id": w.main, "agent_id": "agent-1" }),
        "context.set_section" => json!({ "session_id": w.main, "section": {
            "name": "clock", "caching": "uncached", "reason": "the time of day", "source": "current_time"} }),
        "daemon.ping" | "daemon.status" | "daemon.metrics" | "proxy.status" | "daemon.shutdown"
        | "session.list" | "rpc.discover" => {
            json!({})
        }
        _ => main,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_method_accepts_calls_generated_from_the_document_alone() {
    let d = Daemon::start_with_env(&[SEND_KEY]);
    let provider = scripted_provider().await;
    let doc = Document::new(d.call("rpc.discover", json!({})));
    // The checker itself can say no.
    let info = json!({"$ref": "#/components/schemas/SessionInfo"});
    assert!(!doc.errors(&info, &json!({"session_id": 5})).is_empty());
    let w = build_world(&d, &provider.uri());
    let mut covered = BTreeSet::new();
    // Over HTTP, in document order; the WebSocket-only and the stopping ones after.
    let later = [
        "session.subscribe",
        "session.unsubscribe",
        "context.send_stream",
        "context.send_unsubscribe",
        "context.provide_summary",
        "daemon.shutdown",
    ];
    for m in doc.methods() {
        let name = m["name"].as_str().unwrap();
        if later.contains(&name) {
            continue;
        }
        // A PostgreSQL store is copied by pg_dump, not by the daemon.
        if name == "daemon.backup" && d.store_url().is_some() {
            covered.insert(name.to_string());
            continue;
        }
        let params = doc.params(name, &realistic(&doc, &w, name));
        let result = d
            .try_call(name, params.clone())
            .unwrap_or_else(|e| panic!("{name} refused the generated call {params}: {e}"));
        doc.check_result(name, &result);
        covered.insert(name.to_string());
    }

    // Subscriptions: over a WebSocket, events validated against `x-subscription`.
    let ws = d.client().await;
    let sub_doc = &doc.method("session.subscribe")["x-subscription"];
    let params = doc.params(
        "session.subscribe",
        &realistic(&doc, &w, "session.subscribe"),
    );
    let mut sub = ws
        .subscribe_raw("session.subscribe", params, "session.unsubscribe")
        .await
        .expect("subscribe");
    let id: Value = serde_json::from_str(sub.id()).unwrap();
    doc.check_result("session.subscribe", &id);
    d.call(
        "transcript.append",
        json!({"session_id": w.main, "records": [{"type": "user", "content": "seen live"}]}),
    );
    let event = tokio::time::timeout(Duration::from_secs(20), sub.next())
        .await
        .expect("an event in time")
        .expect("open")
        .expect("decodes");
    let errors = doc.errors(&sub_doc["params"][1]["schema"], &event);
    assert!(errors.is_empty(), "event {event}: {errors:#?}");
    let params = doc.params("session.unsubscribe", &json!({ "subscription": id }));
    let r: Value = ws
        .call("session.unsubscribe", params)
        .await
        .expect("unsubscribe by name");
    assert_eq!(r, json!(true), "the subscription was active");
    doc.check_result("session.unsubscribe", &r);
    covered.extend([
        "session.subscribe".to_string(),
        "session.unsubscribe".to_string(),
    ]);

    // A streamed turn: every event of the turn against the document, to `finished`.
    let stream_doc = &doc.method("context.send_stream")["x-subscription"];
    let params = doc.params("context.send_stream", &json!({ "session_id": w.send }));
    let mut turn = ws
        .subscribe_raw("context.send_stream", params, "context.send_unsubscribe")
        .await
        .expect("a streamed turn");
    let id: Value = serde_json::from_str(turn.id()).unwrap();
    doc.check_result("context.send_stream", &id);
    let mut kinds = Vec::new();
    while kinds.last().map(String::as_str) != Some("finished") {
        let event = tokio::time::timeout(Duration::from_secs(20), turn.next())
            .await
            .expect("a turn event in time")
            .expect("open")
            .expect("decodes");
        let errors = doc.errors(&stream_doc["params"][1]["schema"], &event);
        assert!(errors.is_empty(), "turn event {event}: {errors:#?}");
        kinds.push(event["kind"].as_str().unwrap().to_string());
    }
    assert_eq!(kinds.first().map(String::as_str), Some("started"));
    assert!(kinds.iter().any(|k| k == "event"), "{kinds:?}");
    let params = doc.params("context.send_unsubscribe", &json!({ "subscription": id }));
    let r: Value = ws
        .call("context.send_unsubscribe", params)
        .await
        .expect("unsubscribe by name");
    doc.check_result("context.send_unsubscribe", &r);
    covered.extend([
        "context.send_stream".to_string(),
        "context.send_unsubscribe".to_string(),
    ]);

    // The client summariser: compact, answer the summary request it streams.
    let mut events = ws.subscribe(&w.client_summarised).await.unwrap();
    let socket = d.socket.clone();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "context.compact",
                      "params": {"session_id": w.client_summarised}})
    .to_string();
    let compaction = std::thread::spawn(move || common::raw_http(&socket, &body));
    let request_id = loop {
        let ev = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .expect("summary_requested in time")
            .expect("open")
            .expect("decodes");
        if let ctxd_protocol::SessionEvent::SummaryRequested { request_id, .. } = ev {
            break request_id;
        }
    };
    let params = doc.params(
        "context.provide_summary",
        &json!({"request_id": request_id, "text": "<summary>read the notes</summary>"}),
    );
    let r = d.call("context.provide_summary", params);
    doc.check_result("context.provide_summary", &r);
    let (_, body) = compaction.join().unwrap();
    let compacted: Value = serde_json::from_str(&body).unwrap();
    doc.check_result("context.compact", &compacted["result"]);
    covered.insert("context.provide_summary".into());

    let r = d.call("daemon.shutdown", doc.params("daemon.shutdown", &json!({})));
    doc.check_result("daemon.shutdown", &r);
    covered.insert("daemon.shutdown".into());

    let documented: BTreeSet<String> = doc
        .methods()
        .iter()
        .map(|m| m["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(covered, documented);
}

#[test]
fn the_served_document_is_the_checked_in_one() {
    let d = Daemon::start();
    let served = d.call("rpc.discover", json!({}));
    let on_disk: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../protocol/openrpc.json"
        ))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(served, on_disk);
}

/// The README and every page of `docs/`, one after another.
fn docs_text() -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let mut pages: Vec<std::path::PathBuf> = std::fs::read_dir(format!("{root}/docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    let mut text = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    for page in pages {
        text.push_str("\n\n");
        text.push_str(&std::fs::read_to_string(page).unwrap());
    }
    text
}

/// Every JSON-RPC request written in the README and the docs (curl bodies, WebSocket
/// sends) and every record of the record-shape example: checked against the document,
/// then run.
#[test]
fn the_readme_examples_follow_the_document() {
    let readme = docs_text();
    let d = Daemon::start();
    let doc = Document::new(d.call("rpc.discover", json!({})));
    let calls = readme_calls(&readme);
    assert!(calls.len() >= 4, "found only {calls:?}");
    let mut sid = String::new();
    let cwd = d.dir.path().display().to_string();
    for call in calls {
        let method = call["method"].as_str().unwrap();
        let params = call.get("params").cloned().unwrap_or(json!({}));
        doc.check_params(method, &params);
        if doc.method(method).get("x-subscription").is_some() {
            continue; // WebSocket only: checked above, run by the examples' own test.
        }
        let text = params
            .to_string()
            .replace("\"SID\"", &format!("\"{sid}\""))
            .replace("\"/tmp\"", &serde_json::to_string(&cwd).unwrap());
        let result = d
            .try_call(method, serde_json::from_str(&text).unwrap())
            .unwrap_or_else(|e| panic!("README's {method} call failed: {e}"));
        doc.check_result(method, &result);
        if method == "session.create" {
            sid = sid_of(&result);
        }
    }
    // The record shape: each example record is a valid `RecordInput`.
    let records = readme_records(&readme);
    assert!(records.len() >= 5, "found only {records:?}");
    let schema = json!({"$ref": "#/components/schemas/RecordInput"});
    for r in &records {
        let errors = doc.errors(&schema, r);
        assert!(errors.is_empty(), "README record {r}: {errors:#?}");
    }
}

/// JSON objects with a `jsonrpc` member anywhere in the README (inside `-d '…'` or a
/// `json.dumps({...})`, whose Python literals are JSON here).
fn readme_calls(readme: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, _) in readme.match_indices("{\"jsonrpc\"") {
        let mut de = serde_json::Deserializer::from_str(&readme[i..]).into_iter::<Value>();
        if let Some(Ok(v)) = de.next()
            && v.get("method").is_some()
            && v.get("id").is_some()
        {
            out.push(v);
        }
    }
    out
}

/// The records of the ```json block under "The record shape" (docs/records.md).
fn readme_records(readme: &str) -> Vec<Value> {
    let section = &readme[readme.find("# The record shape").expect("section")..];
    let start = section.find("```json").expect("json block") + "```json".len();
    let end = start + section[start..].find("```").unwrap();
    serde_json::Deserializer::from_str(&section[start..end])
        .into_iter::<Value>()
        .map(|v| v.expect("a JSON record"))
        .collect()
}
