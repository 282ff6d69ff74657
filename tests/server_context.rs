//! The provider's own context management as levers ctxd owns: its compaction block
//! starts the next history, its context editing is a session setting with its beta and
//! one owner, and its cache diagnostics stand beside ctxd's own reading.

use crate::common;

use common::{Daemon, NewSession};
use serde_json::{Value, json};

fn sdk_dump(name: &str) -> Value {
    let path = common::fixtures().parent().unwrap().join("sdk").join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn session(d: &Daemon, settings: Value) -> String {
    NewSession::at(d.dir.path())
        .start_date("2026-12-01")
        .settings(settings)
        .create(d)
}

fn append(d: &Daemon, sid: &str, records: Value) -> Value {
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": records}),
    )
}

fn compile(d: &Daemon, sid: &str) -> Value {
    d.call(
        "context.compile",
        json!({"session_id": sid, "now": "2026-12-01T10:00:00Z"}),
    )
}

fn answer(id: &str, text: &str, usage: Value, extra: Value) -> Value {
    let mut m = json!({"id": id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": null,
        "usage": usage});
    if let (Some(m), Some(e)) = (m.as_object_mut(), extra.as_object()) {
        m.extend(e.clone());
    }
    json!({"type": "assistant", "message": m})
}

/// The contract: after a response whose content starts with the provider's `compaction`
/// block (an SDK `BetaMessage` dump), the next compile's messages begin with that block,
/// equal as JSON, and hold nothing from before it; the records before stay readable.
#[test]
fn a_compaction_block_starts_the_next_compile_and_nothing_before_it_is_sent() {
    let mut d = Daemon::start();
    let sid = session(&d, json!({}));
    append(
        &d,
        &sid,
        json!([
            {"type": "user", "content": "the old question nobody should see again"},
            answer("msg_old", "the old answer", json!({"input_tokens": 100, "output_tokens": 10}), json!({})),
            {"type": "user", "content": "go on"},
        ]),
    );
    let dump = sdk_dump("beta_compaction.json");
    append(
        &d,
        &sid,
        json!([{"type": "assistant", "message": dump}, {"type": "user", "content": "next step?"}]),
    );
    for attempt in ["first", "after a restart"] {
        let compiled = compile(&d, &sid);
        let messages = compiled["request"]["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], "assistant", "{attempt}");
        assert_eq!(
            messages[0]["content"][0], dump["content"][0],
            "{attempt}: the block first, as it came"
        );
        assert_eq!(
            messages[0]["content"][1]["text"],
            dump["content"][1]["text"]
        );
        let text = compiled["request"]["messages"].to_string();
        assert!(!text.contains("old question"), "{attempt}: {text}");
        assert!(!text.contains("the old answer"), "{attempt}");
        // The user context leads the user message after the block.
        assert_eq!(messages[1]["role"], "user");
        assert!(messages[1].to_string().contains("next step?"));
        if attempt == "first" {
            d.terminate();
            d.spawn();
        }
    }
    let read = d.call("transcript.read", json!({"session_id": sid}));
    assert_eq!(read["records"].as_array().unwrap().len(), 5);
    assert!(
        read.to_string().contains("old question"),
        "kept in the store"
    );
    // A fork compiles the same bytes.
    let fork = d.call("session.fork", json!({"session_id": sid}))["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let body =
        |s: &str| d.compile_body_with(json!({"session_id": s, "now": "2026-12-01T10:00:00Z"}));
    assert_eq!(body(&sid), body(&fork));
}

/// A compaction block whose content is null is a failed compaction: no boundary, and
/// the breaker counts it (three in a row open it, as for ctxd's own autocompact).
#[test]
fn a_null_compaction_is_no_boundary_and_the_breaker_counts_it() {
    let d = Daemon::start();
    let sid = session(&d, json!({"autocompact_pct_override": 1}));
    append(
        &d,
        &sid,
        json!([{"type": "user", "content": "the first question stays"}]),
    );
    let mut dump = sdk_dump("beta_compaction.json");
    dump["content"][0]["content"] = Value::Null;
    for i in 0..3 {
        dump["id"] = json!(format!("msg_null_{i}"));
        append(
            &d,
            &sid,
            json!([{"type": "assistant", "message": dump}, {"type": "user", "content": format!("more {i}")}]),
        );
    }
    let compiled = compile(&d, &sid);
    assert!(
        compiled["request"]["messages"]
            .to_string()
            .contains("the first question stays")
    );
    let auto = &compiled["metadata"]["autocompact_skipped"];
    assert!(
        auto.to_string().contains("circuit breaker open after 3"),
        "{auto}"
    );
}

/// `settings.provider_context_management` goes out as `context_management`, equal to
/// the setting, with its beta; ctxd's microcompact then clears nothing, and the value is
/// the same bytes across a restart and a fork.
#[test]
fn provider_context_editing_is_a_latched_setting_with_one_owner() {
    let mut d = Daemon::start();
    let cm = json!({"edits": [
        {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 30000},
         "keep": {"type": "tool_uses", "value": 2}, "exclude_tools": ["Write"]},
        {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}}]});
    let sid = session(
        &d,
        json!({"provider_context_management": cm,
               "microcompact": {"time_based": true, "gap_minutes": 1, "keep_recent": 1}}),
    );
    // Old tool results and a long pause: time-based microcompact would clear them.
    let mut records = Vec::new();
    for i in 0..4 {
        records.push(json!({"type": "assistant", "timestamp": "2026-12-01T08:00:00Z", "content": [
            {"type": "tool_use", "id": format!("toolu_{i}"), "name": "Read", "input": {"file_path": format!("/tmp/{i}")}}]}));
        records.push(json!({"type": "user", "timestamp": "2026-12-01T08:00:01Z", "content": [
            {"type": "tool_result", "tool_use_id": format!("toolu_{i}"), "content": format!("contents of file {i} ").repeat(50)}]}));
    }
    records.push(json!({"type": "user", "content": "and now?"}));
    append(&d, &sid, Value::Array(records));
    let compiled = compile(&d, &sid);
    assert_eq!(compiled["request"]["context_management"], cm);
    let betas = compiled["metadata"]["cache"]["headers"]["anthropic-beta"]
        .as_str()
        .unwrap();
    assert!(betas.contains("context-management-2025-06-27"), "{betas}");
    assert!(
        compiled["metadata"]["microcompact"]["time_based_cleared"]
            .as_array()
            .is_none_or(|a| a.is_empty()),
        "{}",
        compiled["metadata"]["microcompact"]
    );
    assert!(
        !compiled["request"]
            .to_string()
            .contains("[Old tool result content cleared]")
    );
    let body = d.compile_body_with(json!({"session_id": sid, "now": "2026-12-01T10:00:00Z"}));
    d.terminate();
    d.spawn();
    let again = d.compile_body_with(json!({"session_id": sid, "now": "2026-12-01T10:00:00Z"}));
    assert_eq!(body, again, "the same bytes after a restart");
    let fork = d.call("session.fork", json!({"session_id": sid}))["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let forked = d.call(
        "context.compile",
        json!({"session_id": fork, "now": "2026-12-01T10:00:00Z"}),
    );
    assert_eq!(forked["request"]["context_management"], cm);
    // Without the setting, the same history is cleared by ctxd as before.
    let plain = session(
        &d,
        json!({"microcompact": {"time_based": true, "gap_minutes": 1, "keep_recent": 1}}),
    );
    let history = d.call("transcript.read", json!({"session_id": sid}))["records"].clone();
    let copies: Vec<Value> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|r| json!({"type": r["type"], "timestamp": r["timestamp"], "content": r["content"]}))
        .collect();
    append(&d, &plain, Value::Array(copies));
    let cleared = compile(&d, &plain);
    assert!(cleared["request"].get("context_management").is_none());
    assert!(
        !cleared["metadata"]["microcompact"]["time_based_cleared"]
            .as_array()
            .unwrap()
            .is_empty(),
        "the check can fail: ctxd clears when it owns the lever"
    );
    // A malformed edit is refused by name and changes nothing.
    let err = d
        .try_call(
            "session.update",
            json!({"session_id": sid, "settings": {"provider_context_management": {"edits": [{"keep": 1}]}}}),
        )
        .unwrap_err();
    assert!(err.to_string().contains("edits[0].type"), "{err}");
    assert_eq!(compile(&d, &sid)["request"]["context_management"], cm);
}

/// Diagnostics name the previous response; a response's `cache_miss_reason` and the
/// provider's cleared tokens are reported beside ctxd's own reading, which is an
/// expected break of its own name after a clearing.
#[test]
fn the_providers_cache_diagnosis_and_clearing_stand_beside_ctxds_reading() {
    let d = Daemon::start();
    let sid = session(&d, json!({"cache_diagnostics": true}));
    append(&d, &sid, json!([{"type": "user", "content": "first"}]));
    compile(&d, &sid);
    append(
        &d,
        &sid,
        json!([answer("msg_a", "one", json!({"input_tokens": 10, "cache_creation_input_tokens": 40000, "output_tokens": 5}), json!({"diagnostics": null})),
               {"type": "user", "content": "second"}]),
    );
    let second = compile(&d, &sid);
    assert_eq!(
        second["request"]["diagnostics"],
        json!({"previous_message_id": "msg_a"})
    );
    append(
        &d,
        &sid,
        json!([answer("msg_b", "two", json!({"input_tokens": 10, "cache_read_input_tokens": 40000, "output_tokens": 5}), json!({"diagnostics": null})),
               {"type": "user", "content": "third"}]),
    );
    compile(&d, &sid);
    // The provider cleared 30k tokens of this request and says the messages changed.
    append(
        &d,
        &sid,
        json!([answer("msg_c", "three", json!({"input_tokens": 9000, "cache_read_input_tokens": 3000, "output_tokens": 5}),
            json!({"diagnostics": {"cache_miss_reason": {"type": "messages_changed", "cache_missed_input_tokens": 37000}},
                   "context_management": {"applied_edits": [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 4, "cleared_input_tokens": 30000}]}})),
               {"type": "user", "content": "fourth"}]),
    );
    let next = compile(&d, &sid);
    assert_eq!(
        next["metadata"]["cache"]["expected_break"], "server_context_edit",
        "{}",
        next["metadata"]["cache"]
    );
    // The estimate anchors on the response's usage, which the clearing lowered.
    assert_eq!(next["metadata"]["tokens"]["anchor_tokens"], 12_005);
    let report = d.call("context.cache_report", json!({"session_id": sid}));
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[2]["server_cleared_tokens"], 30000);
    assert_eq!(calls[2]["expected_drop"], "server_context_edit");
    assert_eq!(calls[2]["provider_miss_reason"]["type"], "messages_changed");
    assert_eq!(calls[2]["agrees"], true, "both saw the miss");
    assert_eq!(calls[1]["agrees"], true, "neither saw one");
    assert!(
        calls[0].get("provider_miss_reason").is_none(),
        "not asked: no previous response"
    );
    assert_eq!(report["diagnosed"], 2);
    assert_eq!(report["agreed"], 2);
}

/// A miss ctxd predicted is its reading of the call even where the reads it compares
/// are too few to fall: an uncached section that changed (an expected break) and a
/// model change, each diagnosed by the provider as a miss, agree.
#[test]
fn a_predicted_miss_agrees_with_the_providers_diagnosis() {
    let d = Daemon::start();
    let sid = session(&d, json!({"cache_diagnostics": true}));
    let status = |text: &str| {
        d.call(
            "context.set_section",
            json!({"session_id": sid, "section": {"name": "status", "caching": "uncached",
                   "reason": "the model must see the build's state", "text": text}}),
        )
    };
    status("Build: green.");
    append(&d, &sid, json!([{"type": "user", "content": "first"}]));
    compile(&d, &sid);
    append(
        &d,
        &sid,
        json!([answer("msg_a", "one", json!({"input_tokens": 10, "cache_creation_input_tokens": 1500, "output_tokens": 5}), json!({"diagnostics": null})),
               {"type": "user", "content": "second"}]),
    );
    status("Build: red.");
    let changed = compile(&d, &sid);
    assert_eq!(
        changed["metadata"]["cache"]["expected_break"], "uncached_section:status",
        "{}",
        changed["metadata"]["cache"]
    );
    append(
        &d,
        &sid,
        json!([answer("msg_b", "two", json!({"input_tokens": 10, "cache_creation_input_tokens": 1500, "output_tokens": 5}),
            json!({"diagnostics": {"cache_miss_reason": {"type": "system_changed", "cache_missed_input_tokens": 1500}}})),
               {"type": "user", "content": "third"}]),
    );
    d.call(
        "session.update",
        json!({"session_id": sid, "model": {"model": "claude-opus-4-5"}}),
    );
    let switched = compile(&d, &sid);
    assert_eq!(switched["metadata"]["cache"]["predicted_read_tokens"], 0);
    append(
        &d,
        &sid,
        json!([answer("msg_c", "three", json!({"input_tokens": 10, "cache_creation_input_tokens": 1500, "output_tokens": 5}),
            json!({"diagnostics": {"cache_miss_reason": {"type": "model_changed", "cache_missed_input_tokens": 1500}}})),
               {"type": "user", "content": "fourth"}]),
    );
    let report = d.call("context.cache_report", json!({"session_id": sid}));
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 3, "{report}");
    assert_eq!(calls[1]["provider_miss_reason"]["type"], "system_changed");
    assert_eq!(
        calls[1]["agrees"], true,
        "the changed section: {}",
        calls[1]
    );
    assert_eq!(calls[2]["provider_miss_reason"]["type"], "model_changed");
    assert_eq!(calls[2]["agrees"], true, "the new model: {}", calls[2]);
    assert_eq!(report["diagnosed"], 2);
    assert_eq!(report["agreed"], report["diagnosed"]);
}

const KEY_VAR: &str = "CTXD_TEST_SERVER_COMPACT_KEY";

/// A streamed compaction answer: the `compaction` block (its summary in a
/// `compaction_delta`), `stop_reason: compaction`.
fn compaction_stream(summary: Value) -> wiremock::ResponseTemplate {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_compact_1", "type": "message", "role": "assistant",
            "model": "claude-opus-4-6", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 1500, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "compaction", "content": null, "encrypted_content": null, "signature": "sig-compact"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "compaction_delta", "content": summary, "encrypted_content": "opaque=="}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "compaction", "stop_sequence": null}, "usage": {"output_tokens": 300}}),
        json!({"type": "message_stop"}),
    ];
    wiremock::ResponseTemplate::new(200)
        .set_body_raw(common::sse_body(&events), "text/event-stream")
}

/// The summariser `server`, threshold mode: the compile asks the provider to compact
/// past its trigger, with the compaction beta, and ctxd's autocompact stands aside.
#[test]
fn threshold_server_compaction_is_sent_and_autocompact_stands_aside() {
    let d = Daemon::start();
    let sid = session(
        &d,
        json!({"autocompact_pct_override": 1, "summariser": {"kind": "server", "mode": "threshold",
               "trigger_tokens": 50000, "pause_after_compaction": true}}),
    );
    append(
        &d,
        &sid,
        json!([{"type": "user", "content": "a question ".repeat(3000)}]),
    );
    let compiled = compile(&d, &sid);
    assert_eq!(
        compiled["request"]["context_management"],
        json!({"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50000}, "pause_after_compaction": true}]})
    );
    let betas = compiled["metadata"]["cache"]["headers"]["anthropic-beta"]
        .as_str()
        .unwrap();
    assert!(betas.contains("compact-2026-01-12"), "{betas}");
    assert!(
        compiled["metadata"]["autocompact_skipped"]
            .as_str()
            .unwrap()
            .contains("the provider compacts this session"),
        "{}",
        compiled["metadata"]
    );
    assert!(
        compiled["metadata"]
            .get("compaction")
            .is_none_or(Value::is_null)
    );
}

/// `context.compact` of a `server` session asks the provider to summarise (the compiled
/// request with `compaction: {type: "summarize"}` and no `context_management`); the
/// answer is appended as it came and starts the next history. An answer without a
/// summary fails the compaction and appends nothing.
#[test]
fn on_demand_server_compaction_appends_the_providers_block() {
    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, MockServer};
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(async {
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .and(header("x-api-key", "sk-compact"))
            .respond_with(compaction_stream(Value::Null))
            .up_to_n_times(1)
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(compaction_stream(json!(
                "The user asked about the compiler; next: the planner."
            )))
            .with_priority(2)
            .mount(&server)
            .await;
    });
    let d = Daemon::start_with_env(&[(KEY_VAR, "sk-compact")]);
    let sid = session(
        &d,
        json!({"summariser": {"kind": "server", "mode": "on_demand", "instructions": "keep the plan"},
               "provider": {"kind": "anthropic", "base_url": server.uri(), "api_key_env": KEY_VAR, "max_retries": 0}}),
    );
    append(
        &d,
        &sid,
        json!([
            {"type": "user", "content": "how does the compiler work?"},
            answer("msg_1", "it has stages", json!({"input_tokens": 900, "output_tokens": 20}), json!({})),
            {"type": "user", "content": "and then?"},
        ]),
    );
    let err = d
        .try_call("context.compact", json!({"session_id": sid}))
        .unwrap_err();
    assert!(err.to_string().contains("without a summary"), "{err}");
    let read = d.call("transcript.read", json!({"session_id": sid}));
    assert!(
        !read.to_string().contains("msg_compact_1"),
        "a failed compaction appends nothing: {read}"
    );
    let report = d.call("context.compact", json!({"session_id": sid}));
    assert_eq!(report["kind"], "server", "{report}");
    assert_eq!(report["summariser"], "server");
    let requests = rt.block_on(server.received_requests()).unwrap();
    let sent: Value = serde_json::from_slice(&requests[1].body).unwrap();
    assert_eq!(
        sent["compaction"],
        json!({"type": "summarize", "instructions": "keep the plan"})
    );
    assert!(sent.get("context_management").is_none());
    assert!(
        sent["messages"]
            .to_string()
            .contains("how does the compiler work?")
    );
    let beta = requests[1]
        .headers
        .get("anthropic-beta")
        .unwrap()
        .to_str()
        .unwrap();
    assert!(beta.contains("compact-2026-01-12"), "{beta}");
    let next = compile(&d, &sid);
    let first = &next["request"]["messages"][0];
    assert_eq!(
        first["content"][0],
        json!({"type": "compaction", "content": "The user asked about the compiler; next: the planner.",
               "encrypted_content": "opaque==", "signature": "sig-compact"})
    );
    assert!(
        !next["request"]["messages"]
            .to_string()
            .contains("how does the compiler work?")
    );
}

/// A history ending with a prompt not yet answered: the provider's summary stands for
/// what came before, and the next request still asks the prompt, after the compaction
/// block.
#[test]
fn on_demand_server_compaction_keeps_the_pending_prompt() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer};
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(compaction_stream(json!(
                "The user asked about the compiler."
            )))
            .mount(&server),
    );
    let d = Daemon::start_with_env(&[(KEY_VAR, "sk-compact")]);
    let sid = session(
        &d,
        json!({"summariser": {"kind": "server", "mode": "on_demand"},
               "provider": {"kind": "anthropic", "base_url": server.uri(), "api_key_env": KEY_VAR, "max_retries": 0}}),
    );
    append(
        &d,
        &sid,
        json!([
            {"type": "user", "content": "how does the compiler work?"},
            answer("msg_1", "it has stages", json!({"input_tokens": 900, "output_tokens": 20}), json!({})),
            {"type": "user", "content": "and what does the planner do?"},
        ]),
    );
    d.call("context.compact", json!({"session_id": sid}));
    let messages = compile(&d, &sid)["request"]["messages"].clone();
    assert_eq!(messages[0]["role"], "assistant", "{messages}");
    assert_eq!(messages[0]["content"][0]["type"], "compaction");
    let last = messages.as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user", "{messages}");
    assert!(
        last["content"]
            .to_string()
            .contains("and what does the planner do?"),
        "the pending prompt is gone: {messages}"
    );
    assert!(
        !messages.to_string().contains("how does the compiler work?"),
        "{messages}"
    );
}

/// A threshold the provider never reaches before ctxd's blocking limit would leave the
/// session with nothing that compacts: refused by name, at creation and on update, and
/// an update refused changes nothing.
#[test]
fn a_server_trigger_past_the_blocking_limit_is_refused() {
    let d = Daemon::start();
    let small =
        json!({"model": "claude-sonnet-4-5", "context_window": 32000, "max_output_tokens": 4000});
    let past = json!({"kind": "server", "mode": "threshold", "trigger_tokens": 50000});
    let err = d
        .try_call(
            "session.create",
            json!({"cwd": d.dir.path(), "no_git": true, "model": small, "settings": {"summariser": past}}),
        )
        .unwrap_err();
    assert_eq!(err["code"], -32602, "{err}");
    assert!(
        err.to_string()
            .contains("settings.summariser.trigger_tokens"),
        "{err}"
    );
    // The provider's default trigger (150,000) is past this window too.
    let err = d
        .try_call(
            "session.create",
            json!({"cwd": d.dir.path(), "no_git": true, "model": small,
                   "settings": {"summariser": {"kind": "server", "mode": "threshold"}}}),
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("settings.summariser.trigger_tokens"),
        "{err}"
    );
    let sid = d.call(
        "session.create",
        json!({"cwd": d.dir.path(), "no_git": true, "model": small,
               "settings": {"summariser": {"kind": "server", "mode": "threshold", "trigger_tokens": 20000}}}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let err = d
        .try_call(
            "session.update",
            json!({"session_id": sid, "settings": {"summariser": past}}),
        )
        .unwrap_err();
    assert_eq!(err["code"], -32602, "{err}");
    assert!(
        err.to_string()
            .contains("settings.summariser.trigger_tokens"),
        "{err}"
    );
    let got = d.call("session.get", json!({"session_id": sid}));
    assert_eq!(
        got["session"]["settings"]["summariser"]["trigger_tokens"], 20000,
        "{got}"
    );
}
