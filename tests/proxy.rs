//! The HTTP front door (`ctxd --http`): a real daemon between a client and a scripted
//! upstream. Bytes forwarded unchanged both ways, the secret enforced, credentials kept
//! out of logs and the home, and each conversation recorded as a session.

use crate::common;

use std::time::{Duration, Instant};

use common::Daemon;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-ant-api03-proxy-test-NEVER-STORED-0123456789";

/// A daemon whose front door forwards to `upstream`, and its base URL.
fn front_door(upstream: &str) -> (Daemon, String) {
    let d = Daemon::start_with(&["--http", "127.0.0.1:0", "--upstream-anthropic", upstream]);
    let base = base_url(&d);
    (d, base)
}

/// A scripted upstream that answers every request with the message "ok".
async fn upstream_answering_ok() -> MockServer {
    let up = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(message("ok", "m")))
        .mount(&up)
        .await;
    up
}

/// A front door with both upstreams; its OpenAI base URL.
fn front_door_with_openai(anthropic: &str, openai: &str) -> (Daemon, String) {
    let d = Daemon::start_with(&[
        "--http",
        "127.0.0.1:0",
        "--upstream-anthropic",
        anthropic,
        "--upstream-openai",
        openai,
    ]);
    let status = d.call("proxy.status", json!({}));
    let base = status["openai_base_url"]
        .as_str()
        .expect("an OpenAI base URL")
        .to_string();
    (d, base)
}

fn base_url(d: &Daemon) -> String {
    let status = d.call("proxy.status", json!({}));
    assert_eq!(status["listening"], true, "{status}");
    status["anthropic_base_url"]
        .as_str()
        .expect("a base URL")
        .to_string()
}

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().unwrap()
}

/// POSTs `body` (its bytes as given) to `url` with the SDK's headers.
async fn post(url: &str, body: &str, extra: &[(&str, &str)]) -> reqwest::Response {
    let mut r = client()
        .post(url)
        .header("content-type", "application/json")
        .header("x-api-key", KEY)
        .header("anthropic-version", "2023-06-01")
        .header("anthropic-beta", "interleaved-thinking-2025-05-14")
        .body(body.to_string());
    for (k, v) in extra {
        r = r.header(*k, *v);
    }
    r.send().await.unwrap()
}

fn sessions(d: &Daemon) -> Vec<Value> {
    d.call("session.list", json!({}))["sessions"]
        .as_array()
        .unwrap()
        .clone()
}

fn records(d: &Daemon, session: &str) -> Vec<Value> {
    d.call(
        "transcript.read",
        json!({"session_id": session, "limit": 5000}),
    )["records"]
        .as_array()
        .unwrap()
        .clone()
}

fn message(text: &str, id: &str) -> Value {
    json!({
        "id": id, "type": "message", "role": "assistant", "model": "claude-test",
        "content": [
            {"type": "text", "text": text, "citations": null},
            {"type": "a_block_from_the_future", "payload": {"kept": [1, 2]}}
        ],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 21, "output_tokens": 4, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "service_tier": "standard",
                  "a_usage_field_from_the_future": 7}
    })
}

/// The answer's bytes as the upstream writes them: not serde's layout, so only a
/// forwarder that passes bytes gives them back unchanged.
fn odd_layout(v: &Value) -> String {
    serde_json::to_string_pretty(v)
        .unwrap()
        .replace("  ", "\t ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_goes_up_and_back_byte_for_byte_and_its_session_grows_by_the_new_tail() {
    let up = MockServer::start().await;
    let first = message("Hello!", "msg_1");
    let second = message("Again.", "msg_2");
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(wiremock::matchers::body_string_contains("\"More\""))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("request-id", "req_2")
                .set_body_raw(odd_layout(&second), "application/json"),
        )
        .with_priority(1)
        .mount(&up)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("request-id", "req_1")
                .set_body_raw(odd_layout(&first), "application/json"),
        )
        .mount(&up)
        .await;
    let (d, base) = front_door(&up.uri());

    let sent = "{\"model\":  \"claude-test\",\n \"max_tokens\": 64, \"messages\": [{\"role\": \"user\", \"content\": \"Hi there\"}]}";
    let r = post(&format!("{base}/v1/messages?beta=true"), sent, &[]).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["request-id"], "req_1");
    assert_eq!(r.text().await.unwrap(), odd_layout(&first));

    let got = up.received_requests().await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body, sent.as_bytes(), "the body went up as it came");
    assert_eq!(got[0].url.query(), Some("beta=true"));
    assert_eq!(got[0].headers["x-api-key"], KEY);
    assert_eq!(got[0].headers["anthropic-version"], "2023-06-01");
    assert_eq!(
        got[0].headers["anthropic-beta"],
        "interleaved-thinking-2025-05-14"
    );

    // The answer's end reached the client only once the session held the exchange.
    let listed = sessions(&d);
    assert_eq!(listed.len(), 1, "{listed:?}");
    let sid = listed[0]["session_id"].as_str().unwrap().to_string();
    let recs = records(&d, &sid);
    assert_eq!(recs.len(), 2, "{recs:#?}");
    assert_eq!(recs[0]["type"], "user");
    assert_eq!(
        recs[0]["content"],
        json!([{"type": "text", "text": "Hi there"}])
    );
    assert_eq!(recs[1]["type"], "assistant");
    assert_eq!(recs[1]["content"], first["content"]);
    assert_eq!(recs[1]["usage"], first["usage"]);

    // The client sends the history back (as SDKs do: without the null fields) and a new
    // prompt: only those two messages' records are new.
    let mut echoed = first["content"].clone();
    echoed[0].as_object_mut().unwrap().remove("citations");
    let next = json!({"model": "claude-test", "max_tokens": 64, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Hi there", "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": echoed},
        {"role": "user", "content": "More"}
    ]})
    .to_string();
    let r = post(&format!("{base}/v1/messages"), &next, &[]).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), odd_layout(&second));
    assert_eq!(sessions(&d).len(), 1);
    let recs = records(&d, &sid);
    assert_eq!(recs.len(), 4, "{recs:#?}");
    assert_eq!(
        recs[2]["content"],
        json!([{"type": "text", "text": "More"}])
    );
    assert_eq!(recs[3]["content"], second["content"]);
    let status = d.call("proxy.status", json!({}));
    assert_eq!(status["requests"], 2);
    assert_eq!(status["sessions_seen"], 1);
}

fn stream_events() -> Vec<Value> {
    vec![
        json!({"type": "message_start", "message": {"id": "msg_s", "type": "message", "role": "assistant",
            "model": "claude-test", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 30, "output_tokens": 1, "cache_read_input_tokens": 12}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me look."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "c2ln"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "ping"}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"file_path\": \"/tmp/"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "a.txt\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 40}}),
        json!({"type": "message_stop"}),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_answer_comes_back_as_it_came_and_is_recorded_folded() {
    let up = MockServer::start().await;
    let body = common::sse_body(&stream_events());
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body.clone(), "text/event-stream"))
        .mount(&up)
        .await;
    let (d, base) = front_door(&up.uri());
    let sent = r#"{"model":"claude-test","max_tokens":64,"stream":true,"system":[{"type":"text","text":"You are terse.","cache_control":{"type":"ephemeral"}}],"tools":[{"name":"Read","description":"Reads a file","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}}}}],"messages":[{"role":"user","content":[{"type":"text","text":"Read a.txt"}]}]}"#;
    let r = post(
        &format!("{base}/v1/messages"),
        sent,
        &[("x-ctxd-session", "mine")],
    )
    .await;
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert_eq!(r.text().await.unwrap(), body);
    let got = up.received_requests().await.unwrap();
    assert_eq!(got[0].body, sent.as_bytes());
    assert!(
        !got[0].headers.contains_key("x-ctxd-session"),
        "ctxd's own header stays with ctxd"
    );

    let listed = sessions(&d);
    assert_eq!(listed.len(), 1);
    let recs = records(&d, listed[0]["session_id"].as_str().unwrap());
    assert_eq!(recs.len(), 2, "{recs:#?}");
    assert_eq!(
        recs[1]["content"],
        json!([
            {"type": "thinking", "thinking": "Let me look.", "signature": "c2ln"},
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/tmp/a.txt"}}
        ])
    );
    assert_eq!(recs[1]["stop_reason"], "tool_use");
    // The system prompt and tools the request carried are the session's.
    let compiled: Value =
        serde_json::from_str(&d.compile_body(listed[0]["session_id"].as_str().unwrap())).unwrap();
    assert!(
        compiled["system"].to_string().contains("You are terse."),
        "{}",
        compiled["system"]
    );
    assert_eq!(
        compiled["tools"][0]["name"], "Read",
        "{}",
        compiled["tools"]
    );
    for (k, v) in [
        ("input_tokens", 30),
        ("output_tokens", 40),
        ("cache_read_input_tokens", 12),
    ] {
        assert_eq!(recs[1]["usage"][k], v, "{}", recs[1]["usage"]);
    }
}

/// `ctx ARGS` against `d`, its stdout; `ctx` is built beside `ctxd` when absent.
fn ctx(d: &Daemon, args: &[&str]) -> String {
    let bin = common::ctxd_bin().with_file_name("ctx");
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let built = std::process::Command::new(cargo)
            .args(["build", "-p", "ctx-cli"])
            .status()
            .unwrap();
        assert!(built.success(), "cargo build -p ctx-cli");
    }
    let out = std::process::Command::new(bin)
        .arg("--socket")
        .arg(&d.socket)
        .arg("--no-start")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctx_proxy_env_prints_the_base_urls_for_a_shell() {
    let up = MockServer::start().await;
    let (d, base) = front_door(&up.uri());
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    assert_eq!(
        ctx(&d, &["proxy", "env"]),
        format!("export ANTHROPIC_BASE_URL={base}\nexport OPENAI_BASE_URL={base}/v1\n")
    );
    assert!(ctx(&d, &["proxy", "status"]).contains("sessions seen 0"));
    let off = Daemon::start();
    assert_eq!(off.call("proxy.status", json!({}))["listening"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_secret_every_path_is_404_and_nothing_goes_up() {
    let up = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(message("x", "m")))
        .expect(0)
        .mount(&up)
        .await;
    let (d, base) = front_door(&up.uri());
    let (origin, secret) = base.rsplit_once('/').unwrap();
    let mut wrong = secret.to_string();
    wrong.replace_range(0..1, if secret.starts_with('a') { "b" } else { "a" });
    let body = r#"{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}"#;
    for url in [
        format!("{origin}/v1/messages"),
        format!("{origin}/{wrong}/v1/messages"),
        format!("{origin}/{secret}"),
        format!("{base}/v1/other"),
        format!("{base}/../v1/messages"),
    ] {
        let r = post(&url, body, &[]).await;
        assert_eq!(r.status(), 404, "{url}");
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["type"], "error", "{url}: {e}");
        assert_eq!(e["error"]["type"], "not_found_error", "{url}: {e}");
    }
    up.verify().await;
    assert!(sessions(&d).is_empty());
    let file = d.home.join("proxy-secret");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), secret);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_errors_go_back_unchanged_and_record_nothing() {
    let up = MockServer::start().await;
    for (status, kind) in [
        (400, "invalid_request_error"),
        (500, "api_error"),
        (529, "overloaded_error"),
    ] {
        Mock::given(method("POST"))
            .and(wiremock::matchers::body_string_contains(format!("\"{kind}\"")))
            .respond_with(
                ResponseTemplate::new(status)
                    .insert_header("x-should-retry", "true")
                    .set_body_raw(
                        format!(
                            "{{\"type\":\"error\",\"error\":{{\"type\":\"{kind}\",\"message\":\"no\"}}}}"
                        ),
                        "application/json",
                    ),
            )
            .mount(&up)
            .await;
    }
    let (d, base) = front_door(&up.uri());
    for (status, kind) in [
        (400, "invalid_request_error"),
        (500, "api_error"),
        (529, "overloaded_error"),
    ] {
        let body = format!(
            r#"{{"model":"m","max_tokens":1,"messages":[{{"role":"user","content":"{kind}"}}]}}"#
        );
        let r = post(&format!("{base}/v1/messages"), &body, &[]).await;
        assert_eq!(r.status(), status);
        assert_eq!(r.headers()["x-should-retry"], "true");
        assert_eq!(
            r.text().await.unwrap(),
            format!("{{\"type\":\"error\",\"error\":{{\"type\":\"{kind}\",\"message\":\"no\"}}}}")
        );
    }
    assert!(sessions(&d).is_empty(), "an error records nothing");
}

/// An upstream that sends the head and half a stream, then drops the connection.
async fn dropping_upstream() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let mut buf = vec![0u8; 65536];
            let _ = s.read(&mut buf).await;
            let half: String = common::sse_body(&stream_events()[..4]);
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
            let chunk = format!("{:x}\r\n{half}\r\n", half.len());
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(chunk.as_bytes()).await;
            let _ = s.flush().await;
            drop(s);
        }
    });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_stream_reaches_the_client_as_an_error_and_records_nothing() {
    let upstream = dropping_upstream().await;
    let (d, base) = front_door(&upstream);
    let body =
        r#"{"model":"m","max_tokens":1,"stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let r = client()
        .post(format!("{base}/v1/messages"))
        .header("x-api-key", KEY)
        .body(body)
        .send()
        .await;
    // Whether the head left before the break or not, the client sees an answer that
    // broke, never one that ended.
    if let Ok(r) = r {
        assert_eq!(r.status(), 200);
        assert!(r.bytes().await.is_err(), "the client sees the stream break");
    }
    assert!(sessions(&d).is_empty(), "half an answer records nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversations_map_by_header_by_claude_codes_metadata_and_by_content() {
    let up = upstream_answering_ok().await;
    let (d, base) = front_door(&up.uri());
    let url = format!("{base}/v1/messages");
    let body = |first: &str, meta: Option<&str>| {
        let mut b = json!({"model": "m", "max_tokens": 1,
            "messages": [{"role": "user", "content": first}]});
        if let Some(m) = meta {
            b["metadata"] = json!({"user_id": m});
        }
        b.to_string()
    };
    // By header: a history that shares nothing with the last (the client compacted it)
    // stays in the header's session, after a boundary.
    post(&url, &body("one", None), &[("x-ctxd-session", "h1")])
        .await
        .text()
        .await
        .unwrap();
    post(&url, &body("two", None), &[("x-ctxd-session", "h1")])
        .await
        .text()
        .await
        .unwrap();
    // By Claude Code's session id, in both of its forms.
    let old = "user_abc_account_def_session_7f0e-1";
    post(&url, &body("three", Some(old)), &[])
        .await
        .text()
        .await
        .unwrap();
    post(&url, &body("four", Some(old)), &[])
        .await
        .text()
        .await
        .unwrap();
    let new = r#"{"device_id":"d","account_uuid":"","session_id":"7f0e-2"}"#;
    post(&url, &body("five", Some(new)), &[])
        .await
        .text()
        .await
        .unwrap();
    // By content: two first messages, two conversations.
    post(&url, &body("six", None), &[])
        .await
        .text()
        .await
        .unwrap();
    post(&url, &body("seven", None), &[])
        .await
        .text()
        .await
        .unwrap();

    let listed = sessions(&d);
    assert_eq!(listed.len(), 5, "{listed:#?}");
    let mut shapes: Vec<Vec<String>> = listed
        .iter()
        .map(|s| {
            records(&d, s["session_id"].as_str().unwrap())
                .iter()
                .map(|r| {
                    let text = r["content"][0]["text"].as_str().unwrap_or("");
                    format!(
                        "{}:{}{}",
                        r["type"].as_str().unwrap(),
                        r["subtype"].as_str().unwrap_or(""),
                        text
                    )
                })
                .collect()
        })
        .collect();
    shapes.sort();
    assert_eq!(
        shapes,
        vec![
            vec!["user:five", "assistant:ok"],
            vec![
                "user:one",
                "assistant:ok",
                "system:compact_boundary",
                "user:two",
                "assistant:ok"
            ],
            vec!["user:seven", "assistant:ok"],
            vec!["user:six", "assistant:ok"],
            vec![
                "user:three",
                "assistant:ok",
                "system:compact_boundary",
                "user:four",
                "assistant:ok"
            ],
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_history_forks_at_the_last_shared_message() {
    let up = upstream_answering_ok().await;
    let (d, base) = front_door(&up.uri());
    let url = format!("{base}/v1/messages");
    let ok = json!({"role": "assistant", "content": [{"type": "text", "text": "ok"},
        {"type": "a_block_from_the_future", "payload": {"kept": [1, 2]}}]});
    let ask =
        |msgs: Vec<Value>| json!({"model": "m", "max_tokens": 1, "messages": msgs}).to_string();
    let u = |t: &str| json!({"role": "user", "content": t});
    post(&url, &ask(vec![u("a")]), &[])
        .await
        .text()
        .await
        .unwrap();
    post(&url, &ask(vec![u("a"), ok.clone(), u("b")]), &[])
        .await
        .text()
        .await
        .unwrap();
    // The user edits their second prompt.
    post(&url, &ask(vec![u("a"), ok.clone(), u("B")]), &[])
        .await
        .text()
        .await
        .unwrap();
    let listed = sessions(&d);
    assert_eq!(listed.len(), 2, "{listed:#?}");
    let mut texts: Vec<Vec<String>> = listed
        .iter()
        .map(|s| {
            records(&d, s["session_id"].as_str().unwrap())
                .iter()
                .map(|r| r["content"][0]["text"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .collect();
    texts.sort();
    assert_eq!(
        texts,
        vec![vec!["a", "ok", "B", "ok"], vec!["a", "ok", "b", "ok"]]
    );
    assert_eq!(
        listed
            .iter()
            .filter(|s| s["forked_from_uuid"].is_string())
            .count(),
        1,
        "the edit is a fork of the first session: {listed:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_conversations_each_get_their_own_session() {
    let up = upstream_answering_ok().await;
    let (d, base) = front_door(&up.uri());
    let url = format!("{base}/v1/messages");
    let calls = (0..12).map(|i| {
        let url = url.clone();
        tokio::spawn(async move {
            let body = json!({"model": "m", "max_tokens": 1,
                "messages": [{"role": "user", "content": format!("conversation {i}")}]});
            let r = post(&url, &body.to_string(), &[]).await;
            assert_eq!(r.status(), 200);
            r.text().await.unwrap()
        })
    });
    for c in futures::future::join_all(calls).await {
        c.unwrap();
    }
    let listed = sessions(&d);
    assert_eq!(listed.len(), 12);
    for s in &listed {
        assert_eq!(records(&d, s["session_id"].as_str().unwrap()).len(), 2);
    }
}

/// Every regular file under `dir`, read whole.
fn files_under(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if meta.is_dir() {
            files_under(&p, out);
        } else if meta.is_file() {
            out.push((p.clone(), std::fs::read(&p).unwrap_or_default()));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_go_up_and_are_never_logged_or_stored() {
    let up = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(common::sse_body(&stream_events()), "text/event-stream"),
        )
        .mount(&up)
        .await;
    let mut d = Daemon::start_with(&["--http", "127.0.0.1:0", "--upstream-anthropic", &up.uri()]);
    // Restarted with a trace-level log written to a file the test reads.
    let log = d.respawn_logging(Some("trace"));
    let base = base_url(&d);
    let bearer = "Bearer sk-ant-oat01-ANOTHER-SECRET-TOKEN";
    let body =
        r#"{"model":"m","max_tokens":1,"stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let r = post(
        &format!("{base}/v1/messages?beta=true"),
        body,
        &[("authorization", bearer)],
    )
    .await;
    assert_eq!(r.status(), 200);
    r.text().await.unwrap();
    let got = up.received_requests().await.unwrap();
    assert_eq!(got[0].headers["authorization"], bearer);
    assert_eq!(got[0].headers["x-api-key"], KEY);
    assert_eq!(sessions(&d).len(), 1);
    assert_eq!(d.terminate().code(), Some(0));

    let mut all = Vec::new();
    files_under(d.dir.path(), &mut all);
    assert!(all.iter().any(|(p, _)| p == &log));
    assert!(
        std::fs::read_to_string(&log).unwrap().contains("TRACE")
            || std::fs::read_to_string(&log).unwrap().contains("DEBUG"),
        "the log is at trace level"
    );
    for (p, bytes) in &all {
        for secret in [KEY, "ANOTHER-SECRET-TOKEN"] {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{} holds a credential",
                p.display()
            );
        }
    }
}

/// A Messages API that refuses a body over `limit` estimated tokens (a token per four
/// bytes) with `prompt_too_long`, and otherwise asks for one more tool call.
struct Refusing {
    limit: usize,
    calls: std::sync::atomic::AtomicUsize,
    refused: std::sync::atomic::AtomicUsize,
}

impl Refusing {
    fn answer(&self, req: &wiremock::Request) -> ResponseTemplate {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let tokens = req.body.len() / 4;
        if tokens > self.limit {
            self.refused
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            return ResponseTemplate::new(400).set_body_json(json!({"type": "error", "error": {
                "type": "invalid_request_error",
                "message": format!("prompt is too long: {tokens} tokens > {} maximum", self.limit)}}));
        }
        ResponseTemplate::new(200).set_body_json(json!({
            "id": format!("msg_{n}"), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": format!("Reading part {n}.")},
                        {"type": "tool_use", "id": format!("toolu_{n}"), "name": "Read", "input": {"part": n}}],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": tokens, "output_tokens": 20}}))
    }
}

struct Shared(std::sync::Arc<Refusing>);

impl wiremock::Respond for Shared {
    fn respond(&self, req: &wiremock::Request) -> ResponseTemplate {
        self.0.answer(req)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manage_mode_keeps_a_40_turn_loop_under_a_20k_window() {
    let up = MockServer::start().await;
    let refusing = std::sync::Arc::new(Refusing {
        limit: 20_000,
        calls: 0.into(),
        refused: 0.into(),
    });
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(Shared(refusing.clone()))
        .mount(&up)
        .await;
    let (d, base) = front_door(&up.uri());
    let cwd = d.dir.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    let sid = d.call(
        "session.create",
        json!({"cwd": cwd, "no_git": true,
               "model": {"model": "claude-sonnet-4-5", "context_window": 20_000, "max_output_tokens": 2_000}}),
    )["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let system = "You read files in parts.";
    let tools = json!([{"name": "Read", "description": "Read a part",
        "input_schema": {"type": "object", "properties": {"part": {"type": "integer"}}}}]);
    let mut messages = vec![json!({"role": "user", "content": "Read all the parts."})];
    for turn in 0..40 {
        let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 1000, "system": system,
            "tools": tools, "messages": messages});
        let r = post(
            &format!("{base}/v1/messages"),
            &body.to_string(),
            &[("x-ctxd-mode", "manage"), ("x-ctxd-session", &sid)],
        )
        .await;
        let status = r.status();
        let answer: Value = r.json().await.unwrap();
        assert_eq!(status, 200, "turn {turn}: {answer}");
        let tool = answer["content"][1]["id"].as_str().unwrap().to_string();
        messages.push(json!({"role": "assistant", "content": answer["content"]}));
        // About 2,000 tokens of a file's part.
        let part: String = (0..2_000)
            .map(|i| format!("{turn}:{i} "))
            .collect::<String>()[..8_000]
            .to_string();
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool, "content": part}]}));
    }
    let got = up.received_requests().await.unwrap();
    let last: Value = serde_json::from_slice(&got.last().unwrap().body).unwrap();
    assert_eq!(last["system"], system, "the client's system went up");
    assert_eq!(last["tools"], tools, "the client's tools went up");
    assert_eq!(last["max_tokens"], 1000);
    assert_eq!(
        refusing.refused.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "ctxd never sent a body the upstream refused"
    );
    let recs = records(&d, &sid);
    assert!(
        recs.iter().any(|r| r["subtype"] == "compact_boundary"),
        "the session was compacted"
    );
    let answers = recs.iter().filter(|r| r["type"] == "assistant").count();
    assert_eq!(answers, 40, "each answer recorded once");
}

/// The scripted Messages API Claude Code talks to through ctxd: with the `Read` tool
/// offered and no tool result yet, a `Read` of the project's NOTES.md; after it, a final
/// answer quoting the result; anything else (a title, a side request) a short text.
/// Streamed when asked.
struct ScriptedForClaudeCode {
    notes: String,
}

impl wiremock::Respond for ScriptedForClaudeCode {
    fn respond(&self, req: &wiremock::Request) -> ResponseTemplate {
        let path = req.url.path();
        if path.ends_with("/count_tokens") {
            return ResponseTemplate::new(200).set_body_json(json!({"input_tokens": 100}));
        }
        if req.method.as_str() == "GET" {
            return ResponseTemplate::new(200)
                .set_body_json(json!({"data": [], "has_more": false}));
        }
        let Ok(body) = serde_json::from_slice::<Value>(&req.body) else {
            return ResponseTemplate::new(400);
        };
        let offers_read = body["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "Read"));
        let last = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .cloned()
            .unwrap_or_default();
        let result = last["content"].as_array().and_then(|c| {
            c.iter()
                .find(|b| b["type"] == "tool_result")
                .map(|b| match &b["content"] {
                    Value::String(s) => s.clone(),
                    Value::Array(parts) => {
                        parts.iter().filter_map(|p| p["text"].as_str()).collect()
                    }
                    _ => String::new(),
                })
        });
        let model = body["model"].as_str().unwrap_or("claude-test").to_string();
        let (blocks, stop) = match (offers_read, result) {
            (true, None) => (
                vec![
                    json!({"type": "text", "text": "Reading the notes."}),
                    json!({"type": "tool_use", "id": "toolu_read_1", "name": "Read", "input": {"file_path": self.notes}}),
                ],
                "tool_use",
            ),
            (true, Some(text)) => {
                let word = if text.contains("pineapple") {
                    "pineapple"
                } else {
                    "nothing"
                };
                (
                    vec![json!({"type": "text", "text": format!("The notes say {word}.")})],
                    "end_turn",
                )
            }
            (false, _) => (vec![json!({"type": "text", "text": "Notes"})], "end_turn"),
        };
        let message = json!({"id": "msg_cc", "type": "message", "role": "assistant", "model": model,
            "content": blocks, "stop_reason": stop, "stop_sequence": null,
            "usage": {"input_tokens": 50, "output_tokens": 10}});
        if body["stream"] != true {
            return ResponseTemplate::new(200).set_body_json(message);
        }
        let mut start = message.clone();
        start["content"] = json!([]);
        start["stop_reason"] = Value::Null;
        let mut events = vec![json!({"type": "message_start", "message": start})];
        for (i, b) in message["content"].as_array().unwrap().iter().enumerate() {
            let (empty, delta) = if b["type"] == "text" {
                (
                    json!({"type": "text", "text": ""}),
                    json!({"type": "text_delta", "text": b["text"]}),
                )
            } else {
                let mut e = b.clone();
                e["input"] = json!({});
                (
                    e,
                    json!({"type": "input_json_delta", "partial_json": b["input"].to_string()}),
                )
            };
            events.push(json!({"type": "content_block_start", "index": i, "content_block": empty}));
            events.push(json!({"type": "content_block_delta", "index": i, "delta": delta}));
            events.push(json!({"type": "content_block_stop", "index": i}));
        }
        events.push(json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 10}}));
        events.push(json!({"type": "message_stop"}));
        ResponseTemplate::new(200).set_body_raw(common::sse_body(&events), "text/event-stream")
    }
}

/// Claude Code installed from npm into the test cache (CTXD_TEST_CACHE), or why not.
fn claude_code() -> Result<std::path::PathBuf, String> {
    let cache = std::env::var_os("CTXD_TEST_CACHE")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache/ctxd-test"))
        })
        .ok_or("no HOME for the test cache")?;
    let dir = cache.join("claude-code");
    let bin = dir.join("node_modules/.bin/claude");
    if bin.exists() {
        return Ok(bin);
    }
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let installed = std::process::Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "@anthropic-ai/claude-code",
        ])
        .current_dir(&dir)
        .status()
        .map_err(|e| format!("npm: {e}"))?;
    if installed.success() && bin.exists() {
        Ok(bin)
    } else {
        Err("npm could not install @anthropic-ai/claude-code".into())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_claude_code_runs_a_tool_using_task_through_ctxd() {
    let claude = match claude_code() {
        Ok(b) => b,
        Err(why) => {
            // Ignored where it cannot be installed (no npm, no network).
            eprintln!("SKIPPED: {why}");
            return;
        }
    };
    let (d, base) = {
        let dir = tempfile::tempdir().unwrap();
        let notes = dir.path().join("NOTES.md");
        std::fs::write(&notes, "The secret fruit is pineapple.\n").unwrap();
        let up = MockServer::start().await;
        Mock::given(wiremock::matchers::any())
            .respond_with(ScriptedForClaudeCode {
                notes: notes.display().to_string(),
            })
            .mount(&up)
            .await;
        let (d, base) = front_door(&up.uri());
        let user_home = d.dir.path().join("cc-home");
        std::fs::create_dir_all(&user_home).unwrap();
        let out = tokio::process::Command::new(&claude)
            .args([
                "-p",
                "What does NOTES.md say the secret fruit is?",
                "--allowedTools",
                "Read",
            ])
            .current_dir(dir.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &user_home)
            .env("ANTHROPIC_BASE_URL", &base)
            .env("ANTHROPIC_API_KEY", "sk-ant-dummy-key-for-the-test")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(120), out)
            .await
            .expect("claude finished")
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("pineapple"),
            "claude: {}\nstdout: {stdout}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        drop(up);
        (d, base)
    };
    let _ = base;
    let all: Vec<Vec<Value>> = sessions(&d)
        .iter()
        .map(|s| records(&d, s["session_id"].as_str().unwrap()))
        .collect();
    let main = all
        .iter()
        .find(|recs| {
            recs.iter().any(|r| {
                r["content"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_use"))
            })
        })
        .unwrap_or_else(|| panic!("no session holds the tool call: {all:#?}"));
    let blocks: Vec<&Value> = main
        .iter()
        .flat_map(|r| r["content"].as_array().into_iter().flatten())
        .collect();
    assert!(
        blocks
            .iter()
            .any(|b| b["type"] == "text"
                && b["text"].as_str().unwrap_or("").contains("secret fruit")),
        "the prompt"
    );
    assert!(
        blocks
            .iter()
            .any(|b| b["type"] == "tool_use" && b["name"] == "Read"),
        "the tool call"
    );
    assert!(
        blocks
            .iter()
            .any(|b| b["type"] == "tool_result" && b["tool_use_id"] == "toolu_read_1"),
        "its result"
    );
    let last = main.last().unwrap();
    assert_eq!(last["type"], "assistant");
    assert_eq!(
        last["content"][0]["text"], "The notes say pineapple.",
        "the final answer"
    );
    // What Claude Code's own traffic looks like: one session, mapped by Claude Code's
    // session id, with two model calls; the second request extends the first, so ctxd
    // predicts its prefix read from the cache (the scripted upstream caches nothing and
    // reports no reads, a drop from nothing that names no break).
    let listed = sessions(&d);
    assert_eq!(listed.len(), 1, "{listed:#?}");
    let conversation = listed[0]["settings"]["proxy"]["conversation"]
        .as_str()
        .unwrap_or_default();
    assert!(conversation.starts_with("claude-code:"), "{conversation}");
    let sid = listed[0]["session_id"].as_str().unwrap();
    let report = d.call(
        "context.cache_report",
        serde_json::json!({"session_id": sid}),
    );
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{report:#}");
    assert_eq!(calls[0]["predicted_read_tokens"], 0, "{report:#}");
    assert!(
        calls[1]["predicted_read_tokens"].as_u64().unwrap() > 1000,
        "{report:#}"
    );
    assert_eq!(report["breaks"], 0, "{report:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_completions_go_to_the_openai_upstream_byte_for_byte() {
    let anthropic = MockServer::start().await;
    let openai = MockServer::start().await;
    let chunks = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n";
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(chunks, "text/event-stream"))
        .expect(1)
        .mount(&openai)
        .await;
    let (_d, openai_base) = front_door_with_openai(&anthropic.uri(), &openai.uri());
    let sent =
        r#"{"model": "gpt-x", "stream": true, "messages": [{"role": "user", "content": "hi"}]}"#;
    let r = client()
        .post(format!("{openai_base}/chat/completions"))
        .header("authorization", "Bearer sk-openai-test")
        .header("content-type", "application/json")
        .body(sent)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), chunks);
    let got = openai.received_requests().await.unwrap();
    assert_eq!(got[0].body, sent.as_bytes());
    assert_eq!(got[0].headers["authorization"], "Bearer sk-openai-test");
    assert!(anthropic.received_requests().await.unwrap().is_empty());
    openai.verify().await;
}

/// The Anthropic Python SDK from the test cache (scripts/test installs it), or why not.
fn python_sdk_path() -> Result<String, String> {
    let cache = std::env::var_os("CTXD_TEST_CACHE")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache/ctxd-test"))
        })
        .ok_or("no HOME for the test cache")?;
    let py = cache.join("python");
    let ok = std::process::Command::new("python3")
        .args(["-c", "import anthropic"])
        .env("PYTHONPATH", &py)
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Ok(py.display().to_string())
    } else {
        Err("the anthropic package is not in the test cache (scripts/test installs it)".into())
    }
}

const SDK_SCRIPT: &str = r#"
import json, sys, anthropic
client = anthropic.Anthropic(base_url=sys.argv[1], api_key="sk-ant-sdk-test", max_retries=0)
msgs = [{"role": "user", "content": "Read a.txt"}]
created = client.messages.create(model="claude-test", max_tokens=64, messages=msgs)
with client.messages.stream(model="claude-test", max_tokens=64, messages=msgs) as s:
    streamed = s.get_final_message()
print(json.dumps({"created": created.model_dump(mode="json"),
                  "streamed": streamed.model_dump(mode="json")}))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_python_sdk_gets_what_the_upstream_answered() {
    let py = match python_sdk_path() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            return;
        }
    };
    let answer = message("Hello!", "msg_sdk");
    let scripted = || async {
        let up = MockServer::start().await;
        Mock::given(method("POST"))
            .and(wiremock::matchers::body_string_contains("\"stream\":true"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_raw(common::sse_body(&stream_events()), "text/event-stream"),
            )
            .with_priority(1)
            .mount(&up)
            .await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(200).set_body_raw(odd_layout(&answer), "application/json"),
            )
            .mount(&up)
            .await;
        up
    };
    let run = |base: String| {
        let py = py.clone();
        async move {
            let out = tokio::process::Command::new("python3")
                .args(["-c", SDK_SCRIPT, &base])
                .env("PYTHONPATH", &py)
                .output()
                .await
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::from_slice::<Value>(&out.stdout).unwrap()
        }
    };
    // The same calls straight to an upstream, then through ctxd.
    let direct = scripted().await;
    let expected = run(direct.uri()).await;
    let up = scripted().await;
    let (d, base) = front_door(&up.uri());
    let got = run(base).await;
    assert_eq!(got, expected, "the SDK got what the upstream answered");
    assert_eq!(got["created"]["content"][0]["text"], "Hello!");
    assert_eq!(
        got["streamed"]["content"][1]["input"],
        json!({"file_path": "/tmp/a.txt"})
    );
    let sent = direct.received_requests().await.unwrap();
    let received = up.received_requests().await.unwrap();
    assert_eq!(received.len(), 2);
    for (s, r) in sent.iter().zip(&received) {
        assert_eq!(r.body, s.body, "the upstream got the SDK's bytes");
        assert_eq!(r.url.path(), s.url.path());
    }
    // The second call asks again from the same first message: a fork of the first.
    let listed = sessions(&d);
    assert_eq!(listed.len(), 2);
    for s in &listed {
        let recs = records(&d, s["session_id"].as_str().unwrap());
        assert_eq!(recs.len(), 2, "{recs:#?}");
        assert_eq!(
            recs[0]["content"],
            json!([{"type": "text", "text": "Read a.txt"}])
        );
    }
}

#[test]
fn the_front_door_listens_on_loopback_only() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(common::ctxd_bin())
        .arg("--home")
        .arg(dir.path().join("home"))
        .arg("--socket")
        .arg(dir.path().join("ctxd.sock"))
        .args(["--http", "0.0.0.0:0"])
        .env("CTXD_LOG", "warn")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("loopback only"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_its_connections_the_front_door_answers_overloaded_and_forwards_nothing() {
    let up = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(message("x", "m")))
        .expect(0)
        .mount(&up)
        .await;
    let d = Daemon::start_with(&[
        "--http",
        "127.0.0.1:0",
        "--upstream-anthropic",
        &up.uri(),
        "--max-connections",
        "2",
    ]);
    // The bound is the RPC server's too: a readiness probe's connection may still hold
    // a slot there for a moment.
    let deadline = Instant::now() + Duration::from_secs(20);
    let base = loop {
        if let Ok(s) = d.try_call("proxy.status", json!({})) {
            break s["anthropic_base_url"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "proxy.status");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let addr = base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    // Two connections hold both slots.
    let _held = [
        tokio::net::TcpStream::connect(&addr).await.unwrap(),
        tokio::net::TcpStream::connect(&addr).await.unwrap(),
    ];
    let body = r#"{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}"#;
    let r = post(&format!("{base}/v1/messages"), body, &[]).await;
    assert_eq!(r.status(), 503);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["error"]["type"], "overloaded_error", "{e}");
    up.verify().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_continues_in_its_session_after_a_restart() {
    let up = MockServer::start().await;
    Mock::given(method("POST"))
        .and(wiremock::matchers::body_string_contains("tool_result"))
        .respond_with(ResponseTemplate::new(200).set_body_json(message("Done.", "m2")))
        .with_priority(1)
        .mount(&up)
        .await;
    let reading = json!({"id": "m1", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "toolu_r", "name": "Read", "input": {"path": "a"}}],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5}});
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(reading.clone()))
        .mount(&up)
        .await;
    let mut d = Daemon::start_with(&["--http", "127.0.0.1:0", "--upstream-anthropic", &up.uri()]);
    let first = |meta: Option<&str>, text: &str| {
        let mut b = json!({"model": "m", "max_tokens": 9,
            "messages": [{"role": "user", "content": text}]});
        if let Some(m) = meta {
            b["metadata"] = json!({"user_id": m});
        }
        b
    };
    let cc = r#"{"device_id":"d","session_id":"cc-restart"}"#;
    let conversations = [first(None, "by content"), first(Some(cc), "by metadata")];
    let base = base_url(&d);
    for body in &conversations {
        let r = post(&format!("{base}/v1/messages"), &body.to_string(), &[]).await;
        assert_eq!(r.status(), 200);
        r.text().await.unwrap();
    }
    let before = sessions(&d);
    assert_eq!(before.len(), 2);
    let mut keys: Vec<&str> = before
        .iter()
        .map(|s| s["settings"]["proxy"]["conversation"].as_str().unwrap())
        .collect();
    keys.sort_unstable();
    assert!(keys[0].starts_with("claude-code:cc-restart"), "{keys:?}");
    assert!(keys[1].starts_with("content:"), "{keys:?}");
    let listed = ctx(&d, &["session", "list"]);
    assert_eq!(listed.matches("[proxied]").count(), 2, "{listed}");

    assert_eq!(d.terminate().code(), Some(0));
    d.spawn();
    let base = base_url(&d);
    for body in &conversations {
        let mut next = body.clone();
        let msgs = next["messages"].as_array_mut().unwrap();
        msgs.push(json!({"role": "assistant", "content": reading["content"]}));
        msgs.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_r", "content": "text of a", "is_error": false},
            {"type": "text", "text": "and now?"}]}));
        let r = post(&format!("{base}/v1/messages"), &next.to_string(), &[]).await;
        assert_eq!(r.status(), 200);
        r.text().await.unwrap();
    }
    let after = sessions(&d);
    assert_eq!(
        after.len(),
        2,
        "no new session after the restart: {after:#?}"
    );
    for s in &after {
        let recs = records(&d, s["session_id"].as_str().unwrap());
        let kinds: Vec<&str> = recs.iter().map(|r| r["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            ["user", "assistant", "user", "assistant"],
            "{recs:#?}"
        );
        assert_eq!(recs[2]["content"][0]["tool_use_id"], "toolu_r");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manage_mode_is_a_setting_of_the_session_and_the_header_overrides_it() {
    let up = upstream_answering_ok().await;
    let (d, base) = front_door(&up.uri());
    let url = format!("{base}/v1/messages");
    // Each request extends the history by the answer and a new prompt.
    let ok = json!({"role": "assistant", "content": message("ok", "m")["content"]});
    let ask = |texts: &[&str]| {
        let mut msgs = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            if i > 0 {
                msgs.push(ok.clone());
            }
            msgs.push(json!({"role": "user", "content": t}));
        }
        json!({"model": "m", "max_tokens": 9, "system": "Be brief.", "messages": msgs}).to_string()
    };
    let sent = ask(&["first"]);
    post(&url, &sent, &[("x-ctxd-session", "conv")])
        .await
        .text()
        .await
        .unwrap();
    let sid = sessions(&d)[0]["session_id"].as_str().unwrap().to_string();
    assert_eq!(
        up.received_requests().await.unwrap()[0].body,
        sent.as_bytes()
    );
    ctx(&d, &["session", "set", &sid, "proxy.mode=manage"]);
    let info = d.call("session.get", json!({"session_id": sid}));
    assert_eq!(info["session"]["settings"]["proxy"]["mode"], "manage");
    assert!(ctx(&d, &["session", "list"]).contains("[proxied, manage]"));

    // Without the header, the session's setting: ctxd's compile goes up.
    let sent = ask(&["first", "second"]);
    post(&url, &sent, &[("x-ctxd-session", "conv")])
        .await
        .text()
        .await
        .unwrap();
    let got = up.received_requests().await.unwrap();
    assert_eq!(got.len(), 2);
    assert_ne!(got[1].body, sent.as_bytes(), "ctxd sent its own compile");
    let compiled: Value = serde_json::from_slice(&got[1].body).unwrap();
    let texts = compiled["messages"].to_string();
    assert!(
        texts.contains("first") && texts.contains("second"),
        "{compiled}"
    );

    // The header says otherwise: the client's bytes go up.
    let sent = ask(&["first", "second", "third"]);
    post(
        &url,
        &sent,
        &[("x-ctxd-session", "conv"), ("x-ctxd-mode", "observe")],
    )
    .await
    .text()
    .await
    .unwrap();
    let got = up.received_requests().await.unwrap();
    assert_eq!(got[2].body, sent.as_bytes());
}

/// A Messages API whose n-th answer reports `reads[n]` cache-read tokens.
struct Reads(Vec<u64>, std::sync::atomic::AtomicUsize);

impl wiremock::Respond for Reads {
    fn respond(&self, _: &wiremock::Request) -> ResponseTemplate {
        let n = self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let read = self.0.get(n).copied().unwrap_or(0);
        ResponseTemplate::new(200).set_body_json(json!({
            "id": format!("msg_{n}"), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": format!("answer {n}")}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 100, "output_tokens": 5,
                      "cache_read_input_tokens": read,
                      "cache_creation_input_tokens": 12_000 - read}}))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observed_calls_are_accounted_and_their_cache_breaks_named() {
    let up = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Reads(vec![10_000, 0, 10_000, 0], 0.into()))
        .mount(&up)
        .await;
    let (d, base) = front_door(&up.uri());
    let url = format!("{base}/v1/messages");
    let marker = json!({"type": "ephemeral"});
    let read = json!({"name": "Read", "description": "Reads a file",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}});
    let grep = json!({"name": "Grep", "description": "Searches files",
        "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"}}}});
    let mut history: Vec<Value> = Vec::new();
    // (system, tools) of each call: the second changes the system prompt, the fourth
    // adds a tool.
    let frames = [
        ("You are terse.", vec![read.clone()]),
        ("You are terse. Today is Monday.", vec![read.clone()]),
        ("You are terse. Today is Monday.", vec![read.clone()]),
        ("You are terse. Today is Monday.", vec![read.clone(), grep]),
    ];
    for (i, (system, tools)) in frames.iter().enumerate() {
        history.push(json!({"role": "user", "content": [
            {"type": "text", "text": format!("question {i}"), "cache_control": marker}]}));
        let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 64,
            "system": [{"type": "text", "text": system, "cache_control": marker}],
            "tools": tools, "messages": history});
        let r = post(&url, &body.to_string(), &[("x-ctxd-session", "accounted")]).await;
        let answer: Value = r.json().await.unwrap();
        history.push(json!({"role": "assistant", "content": answer["content"]}));
    }
    let listed = sessions(&d);
    assert_eq!(listed.len(), 1, "{listed:#?}");
    let sid = listed[0]["session_id"].as_str().unwrap();

    let report = d.call("context.cache_report", json!({"session_id": sid}));
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 4, "{report:#}");
    assert_eq!(report["breaks"], 2, "{report:#}");
    let second = &calls[1]["cache_break"];
    assert_eq!(second["cause"], "client_change", "{report:#}");
    assert!(
        second["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c.as_str().unwrap().starts_with("system")),
        "{report:#}"
    );
    let fourth = &calls[3]["cache_break"];
    assert_eq!(fourth["cause"], "client_change", "{report:#}");
    assert_eq!(
        fourth["changes"],
        json!(["tools added: Grep"]),
        "{report:#}"
    );
    // The prediction stood beside each answer's usage: nothing before the changed
    // system prompt, the cached prefix once the frame was kept.
    assert_eq!(calls[1]["predicted_read_tokens"], 0, "{report:#}");
    assert!(
        calls[2]["predicted_read_tokens"].as_u64().unwrap() > 0,
        "{report:#}"
    );
    let shown = ctx(&d, &["cache", sid]);
    assert!(shown.contains("tools added: Grep"), "{shown}");
    // Priced at the catalogue's claude-sonnet-4-5 list prices ($3 in, $3.75 written,
    // $0.30 read, $15 out per million): 2 × 10,000 read, 2,000 + 12,000 × 2 + 2,000
    // written, 400 uncached, 20 out.
    let expected = (400.0 * 3.0 + 28_000.0 * 3.75 + 20_000.0 * 0.3 + 20.0 * 15.0) / 1e6;
    let cost = report["cost_usd"].as_f64().unwrap();
    assert!((cost - expected).abs() < 1e-9, "{cost} != {expected}");
    assert_eq!(calls[0]["model"], "claude-sonnet-4-5");
    assert!(shown.contains(&format!("cost ${expected:.4}")), "{shown}");

    // The window's picture starts from the last answer's usage.
    let usage = d.call("context.usage", json!({"session_id": sid}));
    assert!(
        usage["used_tokens"].as_u64().unwrap() >= 12_100,
        "{usage:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_completions_are_recorded_as_a_session_in_observe_mode() {
    let anthropic = MockServer::start().await;
    let openai = MockServer::start().await;
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-x",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let streamed: String = [
        chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_1",
            "type": "function", "function": {"name": "read", "arguments": ""}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\":"}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"a.txt\"}"}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
        json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-x", "choices": [],
            "usage": {"prompt_tokens": 40, "completion_tokens": 9,
                      "prompt_tokens_details": {"cached_tokens": 32}}}),
    ]
    .iter()
    .map(|c| format!("data: {c}\n\n"))
    .chain(["data: [DONE]\n\n".to_string()])
    .collect();
    Mock::given(method("POST"))
        .and(wiremock::matchers::body_string_contains("\"stream\":true"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(streamed.clone(), "text/event-stream"),
        )
        .with_priority(1)
        .mount(&openai)
        .await;
    let whole = json!({"id": "c2", "object": "chat.completion", "model": "gpt-x",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "a.txt says hello."}}],
        "usage": {"prompt_tokens": 60, "completion_tokens": 5}});
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(whole.clone()))
        .mount(&openai)
        .await;
    let (d, openai_base) = front_door_with_openai(&anthropic.uri(), &openai.uri());
    let url = format!("{openai_base}/chat/completions");
    let tools = json!([{"type": "function", "function": {"name": "read",
        "description": "Reads a file", "parameters": {"type": "object"}}}]);
    let mut messages = vec![
        json!({"role": "system", "content": "You read files."}),
        json!({"role": "user", "content": "What is in a.txt?"}),
    ];
    let sent = json!({"model": "gpt-x", "stream": true, "tools": tools, "messages": messages});
    let sent = serde_json::to_string(&sent).unwrap();
    let r = post(&url, &sent, &[]).await;
    assert_eq!(r.text().await.unwrap(), streamed);
    messages.push(
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
        "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.txt\"}"}}]}),
    );
    messages.push(json!({"role": "tool", "tool_call_id": "call_1", "content": "hello"}));
    let next = json!({"model": "gpt-x", "tools": tools, "messages": messages}).to_string();
    let r = post(&url, &next, &[]).await;
    assert_eq!(r.json::<Value>().await.unwrap(), whole);
    let got = openai.received_requests().await.unwrap();
    assert_eq!(got[0].body, sent.as_bytes(), "the body went up as it came");
    assert_eq!(got[1].body, next.as_bytes());

    let listed = sessions(&d);
    assert_eq!(listed.len(), 1, "{listed:#?}");
    assert!(listed[0]["settings"]["proxy"]["conversation"].is_string());
    let recs = records(&d, listed[0]["session_id"].as_str().unwrap());
    let shape: Vec<String> = recs
        .iter()
        .map(|r| {
            format!(
                "{}:{}",
                r["type"].as_str().unwrap(),
                r["subtype"]
                    .as_str()
                    .or_else(|| r["content"][0]["type"].as_str())
                    .unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            "system:client_system_message",
            "user:text",
            "assistant:tool_use",
            "user:tool_result",
            "assistant:text"
        ],
        "{recs:#?}"
    );
    assert_eq!(
        recs[2]["content"][0]["input"],
        json!({"path": "a.txt"}),
        "{recs:#?}"
    );
    assert_eq!(recs[2]["usage"]["cache_read_input_tokens"], 32);
    assert_eq!(recs[2]["usage"]["input_tokens"], 8);
    assert_eq!(recs[3]["content"][0]["tool_use_id"], "call_1");
    assert_eq!(recs[4]["content"][0]["text"], "a.txt says hello.");
    assert_eq!(recs[4]["usage"]["input_tokens"], 60);
    let tools = d.call(
        "capabilities.list_tools",
        json!({"session_id": listed[0]["session_id"]}),
    );
    assert_eq!(tools["tools"][0]["name"], "read", "{tools}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_history_is_an_expected_drop_named_history_edited() {
    let up = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Reads(vec![10_000, 10_000, 0], 0.into()))
        .mount(&up)
        .await;
    let (d, base) = front_door(&up.uri());
    let url = format!("{base}/v1/messages");
    let u = |t: &str| json!({"role": "user", "content": t});
    let said = |n: usize| json!({"role": "assistant", "content": [{"type": "text", "text": format!("answer {n}")}]});
    let ask = |msgs: Vec<Value>| {
        json!({"model": "claude-sonnet-4-5", "max_tokens": 9, "system": "Be brief.",
            "messages": msgs})
        .to_string()
    };
    for body in [
        ask(vec![u("a")]),
        ask(vec![u("a"), said(0), u("b")]),
        ask(vec![u("a"), said(0), u("B")]),
    ] {
        post(&url, &body, &[]).await.text().await.unwrap();
    }
    let listed = sessions(&d);
    assert_eq!(listed.len(), 2, "{listed:#?}");
    let fork = listed
        .iter()
        .find(|s| s["forked_from_uuid"].is_string())
        .unwrap();
    let report = d.call(
        "context.cache_report",
        json!({"session_id": fork["session_id"]}),
    );
    let last = report["calls"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["cache_read_tokens"], 0, "{report:#}");
    assert_eq!(last["expected_drop"], "history_edited", "{report:#}");
    assert_eq!(report["breaks"], 0, "{report:#}");
}
