//! `context.send` through a real daemon against a scripted Messages API on 127.0.0.1:
//! the streamed answer recorded as it came, retries, refusals, one turn at a time, and
//! the key kept out of logs, events and the store.

use crate::common;

use common::{Daemon, NewSession};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY_VAR: &str = "CTXD_TEST_ANTHROPIC_KEY";
const KEY: &str = "sk-ant-test-0123456789-secret";

/// A Messages API stream of `events` (their data; each names its own type).
fn sse(events: &[Value]) -> ResponseTemplate {
    let body = common::sse_body(events);
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_raw(body, "text/event-stream")
}

/// A streamed answer with thinking, text with a citation, and a tool call.
fn turn_events() -> Vec<Value> {
    vec![
        json!({"type": "message_start", "message": {"id": "msg_stream_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 1234, "output_tokens": 1, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000, "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 0}, "service_tier": "standard"}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "The user wants "}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "a file read."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "ping"}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Reading it "}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "now."}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_stream_1", "name": "Read", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"file_path\": "}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "\"/tmp/a.txt\"}"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 87}}),
        json!({"type": "message_stop"}),
    ]
}

fn streamed_content() -> Value {
    json!([
        {"type": "thinking", "thinking": "The user wants a file read.", "signature": "EqQBCgIYAhIM"},
        {"type": "text", "text": "Reading it now."},
        {"type": "tool_use", "id": "toolu_stream_1", "name": "Read", "input": {"file_path": "/tmp/a.txt"}},
    ])
}

/// A session on `server` with a prompt appended.
fn session(d: &Daemon, server: &MockServer) -> String {
    let tools = json!([{"name": "Read", "description": "Read a file", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}]);
    let sid = NewSession::at(d.dir.path())
        .tools(tools)
        .settings(json!({"provider": {
            "kind": "anthropic", "base_url": server.uri(), "api_key_env": KEY_VAR, "max_retries": 2
        }}))
        .create(d);
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "Read /tmp/a.txt"}]}),
    );
    sid
}

/// A scripted provider that answers the first call with `refusal` and every later one
/// with the streamed turn of [`turn_events`].
fn refusing_once(refusal: ResponseTemplate) -> (tokio::runtime::Runtime, MockServer) {
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(async {
        Mock::given(method("POST"))
            .respond_with(refusal)
            .up_to_n_times(1)
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(sse(&turn_events()))
            .with_priority(2)
            .mount(&server)
            .await;
    });
    (rt, server)
}

fn last_record(d: &Daemon, sid: &str) -> Value {
    let page = d.call("transcript.read", json!({"session_id": sid}));
    page["records"].as_array().unwrap().last().unwrap().clone()
}

/// The compiled body goes out streamed with the key and the API version; the answer is
/// appended with exactly the streamed blocks and the server's usage, and returned.
#[test]
fn a_streamed_turn_is_recorded_as_it_came() {
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .and(header("x-api-key", KEY))
            .and(header("anthropic-version", "2023-06-01"))
            .respond_with(sse(&turn_events()))
            .expect(1)
            .mount(&server),
    );
    let d = Daemon::start_with_env(&[(KEY_VAR, KEY)]);
    let sid = session(&d, &server);
    let compiled = d.call("context.compile", json!({"session_id": sid}));
    let sent = d.call("context.send", json!({"session_id": sid}));
    assert_eq!(sent["stop_reason"], "tool_use");
    assert_eq!(sent["retries"], 0);
    assert_eq!(sent["message"]["content"], streamed_content());
    assert_eq!(sent["usage"]["output_tokens"], 87);
    let record = last_record(&d, &sid);
    assert_eq!(record["type"], "assistant");
    assert_eq!(
        record["content"],
        streamed_content(),
        "as JSON, the blocks streamed"
    );
    assert_eq!(record["message_id"], "msg_stream_1");
    assert_eq!(record["usage"]["input_tokens"], 1234);
    assert_eq!(record["usage"]["cache_read_input_tokens"], 1000);
    assert_eq!(record["usage"]["output_tokens"], 87);
    assert_eq!(
        record["usage"]["cache_creation"]["ephemeral_5m_input_tokens"],
        100
    );
    assert_eq!(sent["seq"], record["seq"]);
    // What went out: the compiled body (the same messages) asking for a stream.
    let requests = rt.block_on(server.received_requests()).unwrap();
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(body["stream"], true);
    assert_eq!(body["messages"], compiled["request"]["messages"]);
    assert_eq!(body["tools"][0]["name"], "Read");
    // The next compile carries the answer as it came.
    let next = d.call("context.compile", json!({"session_id": sid}));
    let answer = &next["request"]["messages"][1];
    assert_eq!(answer["role"], "assistant");
    assert_eq!(answer["content"][2]["input"]["file_path"], "/tmp/a.txt");
}

/// 529 with `retry-after`, then a stream: retried once, recorded once.
#[test]
fn an_overloaded_answer_is_retried_after_what_the_provider_says() {
    let (rt, server) = refusing_once(
        ResponseTemplate::new(529)
            .insert_header("retry-after", "0")
            .set_body_string(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ),
    );
    let d = Daemon::start_with_env(&[(KEY_VAR, KEY)]);
    let sid = session(&d, &server);
    let sent = d.call("context.send", json!({"session_id": sid}));
    assert_eq!(sent["retries"], 1);
    assert_eq!(last_record(&d, &sid)["content"], streamed_content());
    assert_eq!(rt.block_on(server.received_requests()).unwrap().len(), 2);
}

/// `daemon.metrics` counts the turns: one answered after a retry, its usage summed
/// (the streamed answer's: 1,234 in, 87 out, 1,000 read from the cache, 100 written),
/// and one that failed (its session has no provider).
#[test]
fn metrics_count_turns_retries_and_tokens() {
    let (_rt, server) = refusing_once(
        ResponseTemplate::new(529)
            .insert_header("retry-after", "0")
            .set_body_string(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ),
    );
    let d = Daemon::start_with_env(&[(KEY_VAR, KEY)]);
    let sid = session(&d, &server);
    d.call("context.send", json!({"session_id": sid}));
    let bare = d.call(
        "session.create",
        json!({"cwd": d.dir.path(), "no_git": true}),
    );
    let bare = bare["session"]["session_id"].as_str().unwrap();
    assert!(
        d.try_call("context.send", json!({"session_id": bare}))
            .is_err()
    );
    let text = d.call("daemon.metrics", json!({}))["text"]
        .as_str()
        .unwrap()
        .to_owned();
    for (name, want) in [
        ("ctxd_send_turns_total", 1.0),
        ("ctxd_send_turns_failed_total", 1.0),
        ("ctxd_send_retries_total", 1.0),
        ("ctxd_send_input_tokens_total", 1234.0),
        ("ctxd_send_output_tokens_total", 87.0),
        ("ctxd_send_cache_read_input_tokens_total", 1000.0),
        ("ctxd_send_cache_creation_input_tokens_total", 100.0),
    ] {
        assert_eq!(
            common::metric(&text, name, &[]),
            Some(want),
            "{name}\n{text}"
        );
    }
    let calls = |outcome| {
        common::metric(
            &text,
            "ctxd_rpc_calls_total",
            &[("method", "context.send"), ("outcome", outcome)],
        )
    };
    assert_eq!(
        (calls("ok"), calls("error")),
        (Some(1.0), Some(1.0)),
        "{text}"
    );
}

/// An error event, or a refusal that no retry helps, fails the turn with the
/// provider's kind and appends nothing.
#[test]
fn a_refused_turn_appends_nothing() {
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    let mut events = turn_events();
    events.truncate(3);
    events.push(json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}));
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(sse(&events))
            .mount(&server),
    );
    let d = Daemon::start_with_env(&[(KEY_VAR, KEY)]);
    let sid = session(&d, &server);
    let before =
        d.call("session.get", json!({"session_id": sid}))["session"]["record_count"].clone();
    let err = d
        .try_call("context.send", json!({"session_id": sid}))
        .unwrap_err();
    assert_eq!(err["code"], ctxd_protocol::PROVIDER_FAILED, "{err}");
    assert_eq!(err["data"]["kind"], "invalid_request_error");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("prompt is too long"),
        "{err}"
    );
    let after =
        d.call("session.get", json!({"session_id": sid}))["session"]["record_count"].clone();
    assert_eq!(before, after);
    // Nor is a session without a provider sent anywhere.
    let bare = d.call(
        "session.create",
        json!({"cwd": d.dir.path(), "no_git": true}),
    );
    let bare = bare["session"]["session_id"].as_str().unwrap();
    let err = d
        .try_call("context.send", json!({"session_id": bare}))
        .unwrap_err();
    assert_eq!(err["code"], ctxd_protocol::INVALID_PARAMS);
    assert_eq!(err["data"]["field"], "settings.provider");
}

/// While a turn runs, a second `context.send` of the same session is refused at once.
#[test]
fn one_turn_at_a_time_per_session() {
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(sse(&turn_events()).set_delay(std::time::Duration::from_secs(3)))
            .mount(&server),
    );
    let d = std::sync::Arc::new(Daemon::start_with_env(&[(KEY_VAR, KEY)]));
    let sid = session(&d, &server);
    let first = {
        let (d, sid) = (d.clone(), sid.clone());
        std::thread::spawn(move || d.call("context.send", json!({"session_id": sid})))
    };
    wait_for_a_request(&rt, &server);
    let err = d
        .try_call("context.send", json!({"session_id": sid}))
        .unwrap_err();
    assert_eq!(err["code"], ctxd_protocol::TURN_IN_PROGRESS, "{err}");
    assert_eq!(first.join().unwrap()["stop_reason"], "tool_use");
}

/// The key is in no log line (at trace level), no answer, no event and nowhere in the
/// store, also when the provider echoes it in an error.
#[test]
fn the_key_appears_nowhere() {
    let (rt, server) = refusing_once(ResponseTemplate::new(401).set_body_string(format!(
                r#"{{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key {KEY}"}}}}"#
            )));
    let mut d = Daemon::start_with_env(&[(KEY_VAR, KEY), ("CTXD_LOG", "trace")]);
    let log = d.respawn_logging(Some("trace"));
    let sid = session(&d, &server);
    let refused = d
        .try_call("context.send", json!({"session_id": sid}))
        .unwrap_err();
    assert!(!refused.to_string().contains(KEY), "{refused}");
    assert!(refused.to_string().contains("[redacted]"), "{refused}");
    let sent = d.call("context.send", json!({"session_id": sid}));
    assert!(!sent.to_string().contains(KEY));
    let read = d.call("transcript.read", json!({"session_id": sid}));
    assert!(!read.to_string().contains(KEY));
    let status = d.call("session.get", json!({"session_id": sid}));
    assert!(!status.to_string().contains(KEY));
    // An OpenAI-compatible server that echoes the bearer token: not in the events of a
    // streamed turn either.
    rt.block_on(
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(ResponseTemplate::new(401).set_body_string(format!(
                r#"{{"error":{{"message":"Incorrect API key provided: Bearer {KEY}","type":"invalid_request_error"}}}}"#
            )))
            .with_priority(1)
            .mount(&server),
    );
    d.call(
        "session.update",
        json!({"session_id": sid, "settings": {"provider": {"kind": "openai_compatible",
            "base_url": format!("{}/v1", server.uri()), "api_key_env": KEY_VAR}}}),
    );
    let events: Vec<ctxd_protocol::TurnEvent> = rt.block_on(async {
        let client = d.client().await;
        let mut turn = client
            .context_send_stream(ctxd_protocol::SendParams::main(&sid))
            .await
            .unwrap();
        let mut all = Vec::new();
        loop {
            let e = next(&mut turn).await;
            let last = matches!(e, ctxd_protocol::TurnEvent::Failed { .. });
            all.push(e);
            if last {
                return all;
            }
        }
    });
    let events = serde_json::to_string(&events).unwrap();
    assert!(events.contains("[redacted]"), "{events}");
    assert!(!events.contains(KEY), "{events}");
    d.terminate();
    let logged = std::fs::read(&log).unwrap();
    assert!(!logged.is_empty(), "the log is empty: nothing was checked");
    assert!(
        !String::from_utf8_lossy(&logged).contains(KEY),
        "the key is in the log"
    );
    for entry in walkdir::WalkDir::new(&d.home).into_iter().flatten() {
        let bytes = std::fs::read(entry.path()).unwrap_or_default();
        assert!(
            !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
            "the key is in {}",
            entry.path().display()
        );
    }
}

/// Returns once `server` has received a request: the turn sending it is running.
fn wait_for_a_request(rt: &tokio::runtime::Runtime, server: &MockServer) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while rt.block_on(server.received_requests()).unwrap().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the turn never reached the provider"
        );
        std::thread::yield_now();
    }
}

/// `context.cancel` stops a running turn: its provider call ends, the turn answers
/// `-32061` with kind `cancelled`, and nothing is appended. With no turn running it
/// answers `ok: false`.
#[test]
fn a_cancelled_turn_appends_nothing() {
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(sse(&turn_events()).set_delay(std::time::Duration::from_secs(30)))
            .mount(&server),
    );
    let d = std::sync::Arc::new(Daemon::start_with_env(&[(KEY_VAR, KEY)]));
    let sid = session(&d, &server);
    let before =
        d.call("session.get", json!({"session_id": sid}))["session"]["record_count"].clone();
    let turn = {
        let (d, sid) = (d.clone(), sid.clone());
        std::thread::spawn(move || d.try_call("context.send", json!({"session_id": sid})))
    };
    wait_for_a_request(&rt, &server);
    let started = std::time::Instant::now();
    assert_eq!(
        d.call("context.cancel", json!({"session_id": sid})),
        json!({"ok": true})
    );
    let err = turn.join().unwrap().unwrap_err();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "the call did not stop"
    );
    assert_eq!(err["code"], ctxd_protocol::PROVIDER_FAILED, "{err}");
    assert_eq!(err["data"]["kind"], "cancelled");
    let after =
        d.call("session.get", json!({"session_id": sid}))["session"]["record_count"].clone();
    assert_eq!(before, after);
    assert_eq!(
        d.call("context.cancel", json!({"session_id": sid})),
        json!({"ok": false})
    );
}

/// The next item of `sub`, within 20 s.
async fn next<T>(sub: &mut ctx_client::Subscription<T>) -> T
where
    T: serde::de::DeserializeOwned,
{
    tokio::time::timeout(std::time::Duration::from_secs(20), sub.next())
        .await
        .expect("an event in time")
        .expect("the stream is open")
        .expect("the event decodes")
}

/// `context.send_stream` hands the caller every event the provider streamed, as it
/// sent it, between `started` and `finished`; another subscriber of the session sees
/// `turn_started`, the appended record and `turn_finished`.
#[test]
fn a_streamed_turn_reaches_the_caller_event_by_event() {
    use ctxd_protocol::{SessionEvent, TurnEvent};
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(sse(&turn_events()))
            .mount(&server),
    );
    let d = Daemon::start_with_env(&[(KEY_VAR, KEY)]);
    let sid = session(&d, &server);
    rt.block_on(async {
        let watcher = d.client().await;
        let mut session_events = watcher.subscribe(&sid).await.unwrap();
        let client = d.client().await;
        let mut turn = client
            .context_send_stream(ctxd_protocol::SendParams::main(&sid))
            .await
            .unwrap();
        let TurnEvent::Started { request_sha256, .. } = next(&mut turn).await else {
            panic!("the turn did not start with started");
        };
        for sent in turn_events() {
            match next(&mut turn).await {
                TurnEvent::Event { event } => assert_eq!(event, sent),
                other => panic!("expected {sent}, got {other:?}"),
            }
        }
        let TurnEvent::Finished { response } = next(&mut turn).await else {
            panic!("the turn did not finish");
        };
        assert_eq!(response.message["content"], streamed_content());
        assert_eq!(response.request_sha256, request_sha256);
        let mut kinds = Vec::new();
        while kinds.last().map(String::as_str) != Some("turn_finished") {
            let e = next(&mut session_events).await;
            let kind = serde_json::to_value(&e).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_string();
            if let SessionEvent::TurnFinished { ok, uuid, .. } = &e {
                assert!(ok);
                assert_eq!(uuid.as_deref(), Some(response.uuid.as_str()));
            }
            if kind != "compiled" && kind != "warning_state_changed" {
                kinds.push(kind);
            }
        }
        assert_eq!(kinds, ["turn_started", "records_appended", "turn_finished"]);
    });
}

/// An `error` event after content began: the caller sees it, then `failed`; nothing is
/// appended and the turn is not retried.
#[test]
fn a_streamed_error_event_fails_the_turn() {
    use ctxd_protocol::TurnEvent;
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    let events = vec![
        turn_events()[0].clone(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ];
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(sse(&events))
            .expect(1)
            .mount(&server),
    );
    let d = Daemon::start_with_env(&[(KEY_VAR, KEY)]);
    let sid = session(&d, &server);
    let before = last_record(&d, &sid);
    rt.block_on(async {
        let client = d.client().await;
        let mut turn = client
            .context_send_stream(ctxd_protocol::SendParams::main(&sid))
            .await
            .unwrap();
        let mut seen = Vec::new();
        let failed = loop {
            match next(&mut turn).await {
                TurnEvent::Event { event } => seen.push(event),
                TurnEvent::Failed { code, data, .. } => break (code, data),
                TurnEvent::Finished { .. } => panic!("the turn did not fail"),
                _ => {}
            }
        };
        assert_eq!(seen, events, "every event, the error too");
        assert_eq!(failed.0, ctxd_protocol::PROVIDER_FAILED);
        assert_eq!(failed.1.unwrap()["kind"], "overloaded_error");
    });
    assert_eq!(last_record(&d, &sid), before, "nothing was appended");
}

/// `prompt_too_long`: the daemon makes room (a reactive compaction: no collapse is
/// staged), sends the smaller request once more and records the answer; the turn says
/// how it recovered.
#[test]
fn a_too_long_request_is_recovered_and_sent_again() {
    let (rt, server) = refusing_once(ResponseTemplate::new(400).set_body_json(
        json!({"type": "error", "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 210000 tokens > 200000 maximum"}}),
    ));
    let d = Daemon::start_with_env(&[(KEY_VAR, KEY)]);
    let sid = session(&d, &server);
    for i in 0..6 {
        d.call(
            "transcript.append",
            json!({"session_id": sid, "records": [
                {"type": "assistant", "content": [{"type": "text", "text": format!("Answer {i}: {}", "words ".repeat(400))}]},
                {"type": "user", "content": format!("Question {i}")}]}),
        );
    }
    let sent = d.call("context.send", json!({"session_id": sid}));
    let recovery = &sent["recovery"];
    assert_eq!(recovery["by"], "compaction", "{sent}");
    assert_eq!(recovery["token_gap"], 10_000);
    assert!(
        recovery["error"]
            .as_str()
            .unwrap()
            .contains("prompt is too long")
    );
    assert_ne!(recovery["refused_request_sha256"], sent["request_sha256"]);
    let requests = rt.block_on(server.received_requests()).unwrap();
    assert_eq!(requests.len(), 2, "sent once more, once");
    let size = |i: usize| requests[i].body.len();
    assert!(size(1) < size(0), "the retried request is smaller");
    assert_eq!(last_record(&d, &sid)["content"], streamed_content());
}

/// Leaving the stream cancels the turn: the provider call stops and nothing is
/// appended. While it runs, a second stream of the session is refused.
#[test]
fn leaving_the_stream_cancels_the_turn() {
    use ctxd_protocol::SessionEvent;
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(sse(&turn_events()).set_delay(std::time::Duration::from_secs(30)))
            .mount(&server),
    );
    let d = Daemon::start_with_env(&[(KEY_VAR, KEY)]);
    let sid = session(&d, &server);
    let before = last_record(&d, &sid);
    let started = std::time::Instant::now();
    rt.block_on(async {
        let watcher = d.client().await;
        let mut events = watcher.subscribe(&sid).await.unwrap();
        let client = d.client().await;
        let turn = client
            .context_send_stream(ctxd_protocol::SendParams::main(&sid))
            .await
            .unwrap();
        while server.received_requests().await.unwrap().is_empty() {
            assert!(started.elapsed() < std::time::Duration::from_secs(20));
            tokio::task::yield_now().await;
        }
        let Err(second) = client
            .context_send_stream(ctxd_protocol::SendParams::main(&sid))
            .await
        else {
            panic!("a second stream of the session was accepted");
        };
        assert!(second.to_string().contains("turn"), "{second}");
        turn.unsubscribe().await.unwrap();
        loop {
            if let SessionEvent::TurnFinished { ok, error, .. } = next(&mut events).await {
                assert!(!ok);
                assert!(error.unwrap().contains("cancelled"));
                break;
            }
        }
    });
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(last_record(&d, &sid), before, "nothing was appended");
}

/// An OpenAI-compatible provider: the Chat Completions body goes to `base_url` +
/// `/chat/completions` with the key as a bearer token; the streamed `tool_calls` are
/// recorded as `tool_use` blocks of the same ids, names and inputs, the cached prompt
/// tokens as the cache read, and the next compile (either format) carries them back.
#[test]
fn an_openai_compatible_turn_records_tool_calls_and_compiles_them_back() {
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1, "model": "qwen3-coder",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let chunks = [
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": "Reading both."}), Value::Null),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_a1", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\":"}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": " \"/tmp/a.txt\"}"}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "id": "call_b2", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\": \"/tmp/b.txt\"}"}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
        json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1, "model": "qwen3-coder", "choices": [],
               "usage": {"prompt_tokens": 1500, "completion_tokens": 40, "total_tokens": 1540, "prompt_tokens_details": {"cached_tokens": 1024}}}),
    ];
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    rt.block_on(
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(header("authorization", format!("Bearer {KEY}").as_str()))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
            .expect(1)
            .mount(&server),
    );
    let d = Daemon::start_with_env(&[(KEY_VAR, KEY)]);
    let sid = session(&d, &server);
    d.call(
        "session.update",
        json!({"session_id": sid, "settings": {"provider": {"kind": "openai_compatible",
            "base_url": format!("{}/v1", server.uri()), "api_key_env": KEY_VAR}}}),
    );
    let sent = d.call("context.send", json!({"session_id": sid}));
    let calls = json!([
        {"type": "text", "text": "Reading both."},
        {"type": "tool_use", "id": "call_a1", "name": "Read", "input": {"file_path": "/tmp/a.txt"}},
        {"type": "tool_use", "id": "call_b2", "name": "Read", "input": {"file_path": "/tmp/b.txt"}},
    ]);
    let record = last_record(&d, &sid);
    assert_eq!(record["content"], calls);
    assert_eq!(record["message_id"], "chatcmpl-9");
    assert_eq!(sent["stop_reason"], "tool_use");
    assert_eq!(record["usage"]["input_tokens"], 476);
    assert_eq!(record["usage"]["cache_read_input_tokens"], 1024);
    assert_eq!(record["usage"]["output_tokens"], 40);
    let requests = rt.block_on(server.received_requests()).unwrap();
    let posted: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(posted["stream"], true);
    assert_eq!(posted["stream_options"], json!({"include_usage": true}));
    assert_eq!(posted["messages"][0]["role"], "system");
    assert_eq!(posted["tools"][0]["function"]["name"], "Read");
    assert!(requests[0].headers.get("x-api-key").is_none());
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_a1", "content": "alpha"},
            {"type": "tool_result", "tool_use_id": "call_b2", "content": "beta"}]}]}),
    );
    let chat = d.call(
        "context.compile",
        json!({"session_id": sid, "format": "openai_chat"}),
    );
    let messages = chat["request"]["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(
        messages[n - 3]["tool_calls"][1],
        json!({"id": "call_b2", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\":\"/tmp/b.txt\"}"}})
    );
    assert_eq!(
        messages[n - 2],
        json!({"role": "tool", "tool_call_id": "call_a1", "content": "alpha"})
    );
    assert_eq!(messages[n - 1]["tool_call_id"], "call_b2");
    // The estimate is anchored on the answer's usage: the prompt and the answer.
    let tokens = &chat["metadata"]["tokens"];
    assert_eq!(tokens["anchor_uuid"], record["uuid"]);
    assert_eq!(tokens["anchor_tokens"], 1540);
}

/// The summariser kind `provider` summarises through the session's own provider, with
/// its key and the session's model.
#[test]
fn the_summariser_can_share_the_sessions_provider() {
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    let summary = json!({"id": "msg_sum", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "<analysis>a</analysis>\n<summary>1. Primary Request and Intent: read /tmp/a.txt</summary>"}],
        "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 900, "output_tokens": 40}});
    rt.block_on(
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .and(header("x-api-key", KEY))
            .respond_with(ResponseTemplate::new(200).set_body_json(summary))
            .expect(1)
            .mount(&server),
    );
    let d = Daemon::start_with_env(&[(KEY_VAR, KEY)]);
    let sid = session(&d, &server);
    d.call(
        "session.update",
        json!({"session_id": sid, "settings": {"summariser": {"kind": "provider"}}}),
    );
    let report = d.call("context.compact", json!({"session_id": sid}));
    assert!(report["boundary_uuid"].is_string(), "{report}");
    let requests = rt.block_on(server.received_requests()).unwrap();
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    let model =
        d.call("session.get", json!({"session_id": sid}))["session"]["model"]["model"].clone();
    assert_eq!(body["model"], model);
    // Without a provider the kind is refused by name, and nothing is compacted.
    let bare = d.call(
        "session.create",
        json!({"cwd": d.dir.path(), "no_git": true,
        "settings": {"summariser": {"kind": "provider"}}}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    d.call(
        "transcript.append",
        json!({"session_id": bare, "records": [{"type": "user", "content": "hi"}]}),
    );
    let err = d
        .try_call("context.compact", json!({"session_id": bare}))
        .unwrap_err();
    assert!(err.to_string().contains("settings.provider"), "{err}");
}

/// A hostile provider on 127.0.0.1: every request is read whole, then answered with
/// `head` and `chunk` written `times` times (or until the daemon hangs up), then closed.
fn hostile(head: &'static str, chunk: Vec<u8>, times: usize) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let chunk = std::sync::Arc::new(chunk);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let chunk = chunk.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0u8; length];
                reader.read_exact(&mut body).unwrap();
                if conn.write_all(head.as_bytes()).is_err() {
                    return;
                }
                for _ in 0..times {
                    if conn.write_all(&chunk).is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

/// A session whose provider is `url`, with a prompt appended.
fn session_on(d: &Daemon, url: &str, extra: Value) -> String {
    let mut provider = json!({"kind": "anthropic", "base_url": url, "api_key_env": KEY_VAR,
                              "max_retries": 0, "timeout_secs": 60});
    for (k, v) in extra.as_object().unwrap() {
        provider[k] = v.clone();
    }
    let s = d.call(
        "session.create",
        json!({"cwd": d.dir.path(), "no_git": true, "settings": {"provider": provider}}),
    );
    let sid = s["session"]["session_id"].as_str().unwrap().to_string();
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "Hello"}]}),
    );
    sid
}

/// The daemon's peak resident size so far, in KiB.
fn peak_kib(d: &Daemon) -> u64 {
    let pid = d.child.as_ref().unwrap().id();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

const MIB: usize = 1 << 20;

/// An error answer of 256 MiB is read only as far as its message: the turn fails with
/// the provider's status at once, and the daemon's memory does not follow the body.
#[test]
fn an_endless_error_body_is_read_only_to_its_bound() {
    let mut chunk =
        br#"{"type":"error","error":{"type":"invalid_request_error","message":"no"#.to_vec();
    chunk.resize(MIB, b' ');
    let url = hostile(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
        chunk,
        256,
    );
    let d = Daemon::start_with_env(&[(KEY_VAR, KEY)]);
    let sid = session_on(&d, &url, json!({}));
    let before = peak_kib(&d);
    let err = d
        .try_call("context.send", json!({"session_id": sid}))
        .unwrap_err();
    assert_eq!(err["code"], ctxd_protocol::PROVIDER_FAILED, "{err}");
    assert_eq!(err["data"]["status"], 400, "{err}");
    let grew = peak_kib(&d).saturating_sub(before);
    assert!(grew < 48 * 1024, "the daemon grew by {grew} KiB");
}

/// An event line that never ends stops at the stream's bound (64 MiB as sent) with
/// `answer_too_big`, in time linear in what was read, and nothing is appended.
#[test]
fn an_event_line_that_never_ends_stops_at_the_stream_bound() {
    let url = hostile(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\nevent: message_start\r\ndata: ",
        vec![b'x'; MIB],
        256,
    );
    let d = Daemon::start_with_env(&[(KEY_VAR, KEY)]);
    let sid = session_on(&d, &url, json!({}));
    let before = peak_kib(&d);
    let last = last_record(&d, &sid);
    let err = d
        .try_call("context.send", json!({"session_id": sid}))
        .unwrap_err();
    assert_eq!(err["data"]["kind"], "answer_too_big", "{err}");
    let grew = peak_kib(&d).saturating_sub(before);
    assert!(grew < 320 * 1024, "the daemon grew by {grew} KiB");
    assert_eq!(last_record(&d, &sid), last, "nothing was appended");
}

/// Thousands of `data:` lines with no blank line between them make one event that
/// grows until the stream's bound; then the turn fails as too big.
#[test]
fn data_lines_without_an_end_stop_at_the_stream_bound() {
    let mut line = b"data: ".to_vec();
    line.resize(64 * 1024 - 1, b'y');
    line.push(b'\n');
    let url = hostile(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
        line,
        4096,
    );
    let d = Daemon::start_with_env(&[(KEY_VAR, KEY)]);
    let sid = session_on(&d, &url, json!({}));
    let before = peak_kib(&d);
    let err = d
        .try_call("context.send", json!({"session_id": sid}))
        .unwrap_err();
    assert_eq!(err["data"]["kind"], "answer_too_big", "{err}");
    let grew = peak_kib(&d).saturating_sub(before);
    assert!(grew < 320 * 1024, "the daemon grew by {grew} KiB");
}

/// A `context.send_stream` reader that never reads while the provider streams 40 MiB of
/// pings costs the daemon its connection's bound and the turn's queue, not the events:
/// its turn is cancelled once the connection stays full, and the daemon goes on.
#[test]
fn a_stream_reader_that_never_reads_is_bounded_and_its_turn_cancelled() {
    use std::io::Write;
    let start = json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "model": "m", "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}});
    let mut head = String::from(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
    );
    head.push_str(&common::sse_body(&[start]));
    let ping = "event: ping\ndata: {\"type\": \"ping\"}\n\n".repeat(1024);
    let times = 40 * MIB / ping.len();
    let url = hostile(Box::leak(head.into_boxed_str()), ping.into_bytes(), times);
    let d = Daemon::start_with_env(&[(KEY_VAR, KEY)]);
    let sid = session_on(&d, &url, json!({}));
    let rt = common::runtime();
    let watcher = rt.block_on(d.client());
    let mut session_events = rt.block_on(watcher.subscribe(&sid)).unwrap();
    let before = peak_kib(&d);
    let mut s = std::os::unix::net::UnixStream::connect(&d.socket).unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "context.send_stream", "params": {"session_id": sid}}).to_string();
    let mut frame = vec![0x81u8, 0x80 | 126];
    frame.extend_from_slice(&u16::try_from(call.len()).unwrap().to_be_bytes());
    frame.extend_from_slice(&[0, 0, 0, 0]);
    frame.extend_from_slice(call.as_bytes());
    let mut upgrade = b"GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".to_vec();
    upgrade.extend_from_slice(&frame);
    s.write_all(&upgrade).unwrap();
    // The turn ends, cancelled, although its reader read nothing.
    let error = rt.block_on(async {
        loop {
            let e = tokio::time::timeout(std::time::Duration::from_secs(60), session_events.next())
                .await
                .expect("the turn ended in time")
                .expect("the subscription is open")
                .expect("the event decodes");
            if let ctxd_protocol::SessionEvent::TurnFinished { ok, error, .. } = e {
                assert!(!ok);
                return error.unwrap_or_default();
            }
        }
    });
    assert!(error.contains("cancelled"), "{error}");
    let grew = peak_kib(&d).saturating_sub(before);
    assert!(grew < 96 * 1024, "the daemon grew by {grew} KiB");
    assert_eq!(d.call("daemon.ping", json!({}))["pong"], true);
    drop(s);
}

/// A provider that echoes the key in a 200 stream (text, thinking, tool input, id, model)
/// and in an error event: the key reaches no answer, event, record or log line.
#[test]
fn an_echoed_key_is_scrubbed_from_answers_events_records_and_logs() {
    use ctxd_protocol::TurnEvent;
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    let echo = vec![
        json!({"type": "message_start", "message": {"id": format!("msg_{KEY}"), "type": "message", "role": "assistant", "model": format!("m-{KEY}"), "content": [], "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": format!("the key is {KEY}")}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        // Split over two deltas: whole only once folded.
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": &KEY[..10]}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": &KEY[10..]}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": format!("{{\"file_path\": \"/{KEY}\"}}")}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ];
    let overloaded = vec![
        echo[0].clone(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": format!("overloaded for {KEY}")}}),
    ];
    rt.block_on(async {
        Mock::given(method("POST"))
            .respond_with(sse(&overloaded))
            .up_to_n_times(1)
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(sse(&echo))
            .with_priority(2)
            .mount(&server)
            .await;
    });
    let mut d = Daemon::start_with_env(&[(KEY_VAR, KEY)]);
    let log = d.respawn_logging(None);
    let sid = session(&d, &server);
    let events: Vec<TurnEvent> = rt.block_on(async {
        let client = d.client().await;
        let mut turn = client
            .context_send_stream(ctxd_protocol::SendParams::main(&sid))
            .await
            .unwrap();
        let mut all = Vec::new();
        loop {
            let e = next(&mut turn).await;
            let last = matches!(e, TurnEvent::Finished { .. } | TurnEvent::Failed { .. });
            all.push(e);
            if last {
                return all;
            }
        }
    });
    let events = serde_json::to_string(&events).unwrap();
    assert!(
        events.contains("retrying"),
        "the error event was retried: {events}"
    );
    assert!(events.contains("[redacted]"), "{events}");
    assert!(!events.contains(KEY), "{events}");
    let recorded = last_record(&d, &sid);
    assert_eq!(recorded["content"][1]["text"], "[redacted]");
    let read = d.call("transcript.read", json!({"session_id": sid}));
    assert!(!read.to_string().contains(KEY), "{read}");
    d.terminate();
    let logged = String::from_utf8_lossy(&std::fs::read(&log).unwrap()).into_owned();
    assert!(
        logged.contains("retrying"),
        "the retry was logged: {logged}"
    );
    assert!(!logged.contains(KEY), "the key is in the log: {logged}");
}

/// A scripted provider that streams `events` to every request.
fn streaming(events: &[Value]) -> (tokio::runtime::Runtime, MockServer) {
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(sse(events))
            .mount(&server),
    );
    (rt, server)
}

/// A `message_start` whose message is not an object fails the turn as a malformed
/// stream (-32061), over `context.send` and to a `context.send_stream` reader alike.
#[test]
fn an_event_of_the_wrong_shape_fails_the_turn_by_name() {
    use ctxd_protocol::TurnEvent;
    let (rt, server) = streaming(&[
        json!({"type": "message_start", "message": "not an object"}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}),
        json!({"type": "message_stop"}),
    ]);
    let d = Daemon::start_with_env(&[(KEY_VAR, KEY)]);
    let sid = session(&d, &server);
    let err = d
        .try_call("context.send", json!({"session_id": sid}))
        .unwrap_err();
    assert_eq!(err["code"], ctxd_protocol::PROVIDER_FAILED, "{err}");
    assert_eq!(err["data"]["kind"], "malformed_stream", "{err}");
    rt.block_on(async {
        let client = d.client().await;
        let mut turn = client
            .context_send_stream(ctxd_protocol::SendParams::main(&sid))
            .await
            .unwrap();
        loop {
            match next(&mut turn).await {
                TurnEvent::Failed { code, data, .. } => {
                    assert_eq!(code, ctxd_protocol::PROVIDER_FAILED);
                    assert_eq!(data.unwrap()["kind"], "malformed_stream");
                    break;
                }
                TurnEvent::Finished { .. } => panic!("the turn did not fail"),
                _ => {}
            }
        }
    });
    assert_eq!(d.call("daemon.ping", json!({}))["pong"], true);
}

/// A message the provider sent that is not a valid record is the provider's failure
/// (-32061, `invalid_message`), not the caller's invalid params; nothing is appended.
#[test]
fn a_provider_message_that_is_not_a_valid_record_fails_the_turn() {
    let (_rt, server) = streaming(&[
        json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "model": "m", "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "", "name": "", "input": {}}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_stop"}),
    ]);
    let d = Daemon::start_with_env(&[(KEY_VAR, KEY)]);
    let sid = session(&d, &server);
    let before = last_record(&d, &sid);
    let err = d
        .try_call("context.send", json!({"session_id": sid}))
        .unwrap_err();
    assert_eq!(err["code"], ctxd_protocol::PROVIDER_FAILED, "{err}");
    assert_eq!(err["data"]["kind"], "invalid_message", "{err}");
    assert_eq!(last_record(&d, &sid), before, "nothing was appended");
}

/// Retries are bounded: a provider setting past the cap is refused by name.
#[test]
fn more_retries_than_the_cap_are_refused() {
    let d = Daemon::start();
    let err = d
        .try_call(
            "session.create",
            json!({"cwd": d.dir.path(), "no_git": true, "settings": {"provider": {
                "kind": "anthropic", "api_key_env": KEY_VAR, "max_retries": 1000}}}),
        )
        .unwrap_err();
    assert_eq!(err["code"], -32602, "{err}");
    assert_eq!(
        err["data"]["field"], "settings.provider.max_retries",
        "{err}"
    );
    assert_eq!(d.session_count(), 0);
}

/// A key variable the daemon does not have is named with its provider and where the
/// daemon looked, not as the summariser's.
#[test]
fn a_missing_key_names_the_provider_and_where_the_daemon_looked() {
    let d = Daemon::start();
    let s = d.call(
        "session.create",
        json!({"cwd": d.dir.path(), "no_git": true, "settings": {"provider": {
            "kind": "anthropic", "base_url": "http://127.0.0.1:9", "api_key_env": "CTXD_TEST_NO_SUCH_KEY"}}}),
    );
    let sid = s["session"]["session_id"].as_str().unwrap();
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "Hello"}]}),
    );
    let err = d
        .try_call("context.send", json!({"session_id": sid}))
        .unwrap_err();
    let message = err["message"].as_str().unwrap();
    assert!(message.contains("Anthropic API key"), "{err}");
    assert!(message.contains("CTXD_TEST_NO_SUCH_KEY"), "{err}");
    assert!(message.contains("daemon's environment"), "{err}");
    assert!(!message.contains("summariser"), "{err}");
}

/// A key the daemon's environment lacks is read from the home's `env` file at each call
/// (no restart), refused while anyone else may read the file, and the daemon's own
/// environment wins over it. Errors name the variable, the provider and both places.
#[test]
fn a_key_comes_from_the_homes_environment_file_at_each_call() {
    use std::os::unix::fs::PermissionsExt;
    const VAR: &str = "CTXD_TEST_ENV_FILE_KEY";
    let rt = common::runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(sse(&turn_events()))
            .mount(&server),
    );
    let new_session = |d: &Daemon| {
        let s = d.call(
            "session.create",
            json!({"cwd": d.dir.path(), "no_git": true, "settings": {"provider": {
                "kind": "anthropic", "base_url": server.uri(), "api_key_env": VAR, "max_retries": 0
            }}}),
        );
        let sid = s["session"]["session_id"].as_str().unwrap().to_string();
        d.call(
            "transcript.append",
            json!({"session_id": sid, "records": [{"type": "user", "content": "hi"}]}),
        );
        sid
    };
    let last_key = || {
        let got = rt.block_on(server.received_requests()).unwrap();
        let last = got.last().unwrap();
        last.headers["x-api-key"].to_str().unwrap().to_string()
    };
    let d = Daemon::start_with_env(&[(VAR, "")]);
    let sid = new_session(&d);
    let file = d.home.join("env");

    let err = d
        .try_call("context.send", json!({"session_id": sid}))
        .unwrap_err();
    let msg = err["message"].as_str().unwrap();
    assert!(msg.contains(VAR) && msg.contains("Anthropic"), "{err}");
    assert!(msg.contains("daemon's environment"), "{err}");
    assert!(msg.contains(&*file.to_string_lossy()), "{err}");

    std::fs::write(&file, format!("# keys\nexport {VAR}=\"sk-from-file-1\"\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = d
        .try_call("context.send", json!({"session_id": sid}))
        .unwrap_err();
    let msg = err["message"].as_str().unwrap();
    assert!(
        msg.contains(&*file.to_string_lossy()) && msg.contains("644"),
        "{err}"
    );
    assert!(!msg.contains("sk-from-file-1"), "{err}");

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    d.call("context.send", json!({"session_id": sid}));
    assert_eq!(last_key(), "sk-from-file-1");

    // Changed while the daemon runs: the next call reads the new key.
    std::fs::write(&file, format!("{VAR}=sk-from-file-2\n")).unwrap();
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "again"}]}),
    );
    d.call("context.send", json!({"session_id": sid}));
    assert_eq!(last_key(), "sk-from-file-2");

    // A summary through the session's provider finds the key in the file too.
    let summary = json!({"id": "msg_sum", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "<analysis>a</analysis>\n<summary>1. Primary Request and Intent: hi</summary>"}],
        "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 900, "output_tokens": 40}});
    rt.block_on(
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(ResponseTemplate::new(200).set_body_json(summary))
            .with_priority(1)
            .up_to_n_times(1)
            .mount(&server),
    );
    d.call(
        "session.update",
        json!({"session_id": sid, "settings": {"summariser": {"kind": "provider"}}}),
    );
    let report = d.call("context.compact", json!({"session_id": sid}));
    assert!(report["boundary_uuid"].is_string(), "{report}");
    assert_eq!(last_key(), "sk-from-file-2");

    // The daemon's own environment wins over the file.
    let e = Daemon::start_with_env(&[(VAR, "sk-from-env")]);
    std::fs::create_dir_all(&e.home).unwrap();
    let efile = e.home.join("env");
    std::fs::write(&efile, format!("{VAR}=sk-from-file-1\n")).unwrap();
    std::fs::set_permissions(&efile, std::fs::Permissions::from_mode(0o600)).unwrap();
    let esid = new_session(&e);
    e.call("context.send", json!({"session_id": esid}));
    assert_eq!(last_key(), "sk-from-env");
}
