//! The Anthropic provider against a fake Messages API (wiremock).

use std::time::Duration;

use ctxd_protocol::{ContentBlock, SummariserConfig};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::http::EnvLookup;
use crate::{Backend, COMPACT_PROMPT, ProviderError, Summariser, SummaryInput};
use ctxd_pipeline::message::ApiMessage;

const KEY: &str = "sk-ant-test-DISTINCTIVE-7f3a9c";

fn env(var: &'static str) -> EnvLookup {
    EnvLookup::vars(move |name| (name == var).then(|| KEY.to_string()))
}

fn summariser(server: &MockServer, var: &'static str, timeout_secs: u64) -> Summariser {
    let cfg = SummariserConfig::Anthropic {
        base_url: Some(server.uri()),
        api_key_env: var.into(),
        model: "claude-test-1".into(),
        timeout_secs: Some(timeout_secs),
        max_retries: Some(2),
        max_output_tokens: Some(4_096),
    };
    let mut s = Summariser::with_env(&cfg, None, env(var)).unwrap();
    if let Backend::Anthropic(p) = &mut s.backend {
        p.set_retry_delays(Duration::from_millis(10));
    }
    s
}

fn conversation() -> Vec<ApiMessage> {
    vec![
        ApiMessage::user(vec![ContentBlock::text("Rename the parser module.")]),
        ApiMessage::assistant(vec![
            ContentBlock::text("Reading it first."),
            ContentBlock::ToolUse {
                extra: Default::default(),
                id: "toolu_1".into(),
                name: "Read".into(),
                input: json!({"file_path": "/src/parser.rs"}),
                cache_control: None,
            },
        ]),
        ApiMessage::user(vec![ContentBlock::ToolResult {
            extra: Default::default(),
            tool_use_id: "toolu_1".into(),
            content: ctxd_protocol::ToolResultContent::Text("pub fn parse() {}".into()),
            is_error: false,
            cache_control: None,
            cache_reference: None,
        }]),
    ]
}

fn input(messages: &[ApiMessage]) -> SummaryInput<'_> {
    SummaryInput {
        records: &[],
        messages,
        custom_instructions: None,
        head_truncated: true,
        max_summary_tokens: 3_000,
    }
}

fn answer(text: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test-1",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5}
    }))
}

fn error(status: u16, kind: &str, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({
        "type": "error",
        "error": {"type": kind, "message": message}
    }))
}

fn assert_no_key(err: &ProviderError) {
    assert!(
        !err.to_string().contains(KEY),
        "Display leaks the key: {err}"
    );
    assert!(
        !format!("{err:?}").contains(KEY),
        "Debug leaks the key: {err:?}"
    );
}

#[tokio::test]
async fn request_shape_and_analysis_stripped() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
        .and(header("content-type", "application/json"))
        .respond_with(answer(
            "<analysis>\nStep by step…\n</analysis>\n\n<summary>\n1. Primary Request and Intent:\n   Rename the parser.\n</summary>",
        ))
        .expect(1)
        .mount(&server)
        .await;

    let s = summariser(&server, "CTXD_TEST_ANTHROPIC_SHAPE", 5);
    let messages = conversation();
    let out = s.summarise(input(&messages)).await.unwrap();
    assert_eq!(out, "1. Primary Request and Intent:\n   Rename the parser.");

    let requests = server.received_requests().await.unwrap();
    let body: Value = requests[0].body_json().unwrap();
    assert_eq!(body["model"], "claude-test-1");
    assert_eq!(body["max_tokens"], 4_096);
    assert!(body.get("tools").is_none(), "no tools: {body}");
    assert!(body["system"].as_str().unwrap().contains("summar"));
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3, "the prompt joins the trailing user message");
    assert_eq!(msgs[0]["content"][0]["text"], "Rename the parser module.");
    let last = &msgs[2];
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["type"], "tool_result");
    let prompt = last["content"][1]["text"].as_str().unwrap();
    assert!(prompt.starts_with(COMPACT_PROMPT));
    assert!(prompt.contains("beginning of this conversation was removed"));
    assert!(prompt.contains("under about 3000 tokens"));
}

#[tokio::test]
async fn overloaded_then_success_is_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(error(529, "overloaded_error", "Overloaded"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(answer("<summary>done</summary>"))
        .with_priority(2)
        .mount(&server)
        .await;

    let s = summariser(&server, "CTXD_TEST_ANTHROPIC_529", 5);
    let messages = conversation();
    assert_eq!(s.summarise(input(&messages)).await.unwrap(), "done");
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn retries_stop_after_max_retries() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(error(500, "api_error", "Internal server error"))
        .mount(&server)
        .await;

    let s = summariser(&server, "CTXD_TEST_ANTHROPIC_500", 5);
    let messages = conversation();
    let err = s.summarise(input(&messages)).await.unwrap_err();
    match &err {
        ProviderError::Failed(m) => {
            assert!(
                m.contains("500") && m.contains("Internal server error"),
                "{m}"
            );
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn slow_server_times_out() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(answer("<summary>late</summary>").set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;

    let s = summariser(&server, "CTXD_TEST_ANTHROPIC_SLOW", 1);
    let messages = conversation();
    let started = std::time::Instant::now();
    let err = s.summarise(input(&messages)).await.unwrap_err();
    assert!(
        matches!(err, ProviderError::Timeout(d) if d == Duration::from_secs(1)),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_millis(2_500));
}

#[tokio::test]
async fn prompt_too_long_carries_the_gap_and_is_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(error(
            400,
            "invalid_request_error",
            "prompt is too long: 212345 tokens > 200000 maximum",
        ))
        .mount(&server)
        .await;

    let s = summariser(&server, "CTXD_TEST_ANTHROPIC_PTL", 5);
    let messages = conversation();
    let err = s.summarise(input(&messages)).await.unwrap_err();
    assert!(
        matches!(
            err,
            ProviderError::PromptTooLong {
                token_gap: Some(12_345)
            }
        ),
        "{err:?}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn client_errors_carry_the_provider_message_but_never_the_key() {
    let server = MockServer::start().await;
    // Some servers echo the credential they were given; it must not reach our errors.
    Mock::given(method("POST"))
        .respond_with(error(
            401,
            "authentication_error",
            &format!("invalid x-api-key {KEY}"),
        ))
        .mount(&server)
        .await;

    let s = summariser(&server, "CTXD_TEST_ANTHROPIC_401", 5);
    let messages = conversation();
    let err = s.summarise(input(&messages)).await.unwrap_err();
    match &err {
        ProviderError::Failed(m) => {
            assert!(m.contains("401"), "{m}");
            assert!(m.contains("authentication_error"), "{m}");
            assert!(m.contains("invalid x-api-key"), "{m}");
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    assert_no_key(&err);
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        1,
        "4xx is not retried"
    );
}

#[tokio::test]
async fn missing_key_names_the_variable() {
    let server = MockServer::start().await;
    let cfg = SummariserConfig::Anthropic {
        base_url: Some(server.uri()),
        api_key_env: "CTXD_TEST_ANTHROPIC_UNSET_KEY".into(),
        model: "claude-test-1".into(),
        timeout_secs: None,
        max_retries: None,
        max_output_tokens: None,
    };
    let s = Summariser::with_env(&cfg, None, EnvLookup::vars(|_| None)).unwrap();
    let messages = conversation();
    let err = s.summarise(input(&messages)).await.unwrap_err();
    match &err {
        ProviderError::Misconfigured(m) => {
            assert!(m.contains("CTXD_TEST_ANTHROPIC_UNSET_KEY"), "{m}");
        }
        other => panic!("expected Misconfigured, got {other:?}"),
    }
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn unreachable_server_is_retried_then_fails() {
    // A port that was just free: connections are refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cfg = SummariserConfig::Anthropic {
        base_url: Some(format!("http://127.0.0.1:{port}")),
        api_key_env: "CTXD_TEST_ANTHROPIC_REFUSED".into(),
        model: "claude-test-1".into(),
        timeout_secs: Some(5),
        max_retries: Some(1),
        max_output_tokens: None,
    };
    let mut s = Summariser::with_env(&cfg, None, env("CTXD_TEST_ANTHROPIC_REFUSED")).unwrap();
    if let Backend::Anthropic(p) = &mut s.backend {
        p.set_retry_delays(Duration::from_millis(10));
    }
    let messages = conversation();
    let err = s.summarise(input(&messages)).await.unwrap_err();
    assert!(matches!(err, ProviderError::Failed(_)), "{err:?}");
    assert_no_key(&err);
}

#[test]
fn bad_configuration_is_reported_up_front() {
    let bad_url = SummariserConfig::Anthropic {
        base_url: Some("not a url".into()),
        api_key_env: "X".into(),
        model: "m".into(),
        timeout_secs: None,
        max_retries: None,
        max_output_tokens: None,
    };
    assert!(matches!(
        Summariser::new(&bad_url, None),
        Err(ProviderError::Misconfigured(_))
    ));
    let zero_timeout = SummariserConfig::Anthropic {
        base_url: None,
        api_key_env: "X".into(),
        model: "m".into(),
        timeout_secs: Some(0),
        max_retries: None,
        max_output_tokens: None,
    };
    assert!(matches!(
        Summariser::new(&zero_timeout, None),
        Err(ProviderError::Misconfigured(_))
    ));
}
