//! The OpenAI-compatible provider against a fake chat-completions server (wiremock).

use std::time::Duration;

use ctxd_protocol::{ContentBlock, SummariserConfig, ToolResultContent};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::http::EnvLookup;
use crate::{Backend, COMPACT_PROMPT, ProviderError, Summariser, SummaryInput};
use ctxd_pipeline::message::ApiMessage;

const KEY: &str = "sk-openai-test-DISTINCTIVE-51b2";

fn summariser(server: &MockServer, key_var: Option<&'static str>) -> Summariser {
    let cfg = SummariserConfig::OpenAi {
        base_url: format!("{}/v1/", server.uri()),
        api_key_env: key_var.map(str::to_string),
        model: "local-model".into(),
        timeout_secs: Some(5),
        max_retries: Some(1),
        max_output_tokens: Some(2_048),
    };
    let env = EnvLookup::vars(move |name| (Some(name) == key_var).then(|| KEY.to_string()));
    let mut s = Summariser::with_env(&cfg, None, env).unwrap();
    if let Backend::OpenAi(p) = &mut s.backend {
        p.set_retry_delays(Duration::from_millis(10));
    }
    s
}

fn conversation() -> Vec<ApiMessage> {
    vec![
        ApiMessage::user(vec![ContentBlock::text("Why does the build fail?")]),
        ApiMessage::assistant(vec![ContentBlock::ToolUse {
            extra: Default::default(),
            id: "call_1".into(),
            name: "Bash".into(),
            input: json!({"command": "cargo build"}),
            cache_control: None,
        }]),
        ApiMessage::user(vec![ContentBlock::ToolResult {
            extra: Default::default(),
            tool_use_id: "call_1".into(),
            content: ToolResultContent::Text("error[E0432]: unresolved import".into()),
            is_error: true,
            cache_control: None,
            cache_reference: None,
        }]),
        ApiMessage::assistant(vec![ContentBlock::text("An import is missing.")]),
    ]
}

fn input(messages: &[ApiMessage]) -> SummaryInput<'_> {
    SummaryInput {
        records: &[],
        messages,
        custom_instructions: None,
        head_truncated: false,
        max_summary_tokens: 2_000,
    }
}

fn completion(content: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop"
        }]
    }))
}

#[tokio::test]
async fn request_shape_with_a_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(completion(json!(
            "<analysis>hmm</analysis>\n<summary>\nthe build summary\n</summary>"
        )))
        .expect(1)
        .mount(&server)
        .await;

    let s = summariser(&server, Some("CTXD_TEST_OPENAI_KEY"));
    assert_eq!(s.kind(), "openai");
    let messages = conversation();
    assert_eq!(
        s.summarise(input(&messages)).await.unwrap(),
        "the build summary"
    );

    let requests = server.received_requests().await.unwrap();
    let body: Value = requests[0].body_json().unwrap();
    assert_eq!(body["model"], "local-model");
    assert_eq!(body["max_tokens"], 2_048);
    assert!(body.get("tools").is_none());
    let msgs = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "user", "assistant", "user"]
    );
    assert_eq!(
        msgs[2]["content"],
        r#"[called Bash with {"command":"cargo build"}]"#
    );
    assert_eq!(
        msgs[3]["content"],
        "[error from Bash (call_1)]: error[E0432]: unresolved import"
    );
    assert!(
        msgs[5]["content"]
            .as_str()
            .unwrap()
            .starts_with(COMPACT_PROMPT)
    );
}

#[tokio::test]
async fn no_key_configured_sends_no_authorization() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(completion(
            json!([{"type": "text", "text": "<summary>parts</summary>"}]),
        ))
        .mount(&server)
        .await;

    let s = summariser(&server, None);
    let messages = conversation();
    assert_eq!(s.summarise(input(&messages)).await.unwrap(), "parts");
    let requests = server.received_requests().await.unwrap();
    assert!(requests[0].headers.get("authorization").is_none());
}

#[tokio::test]
async fn context_length_errors_are_prompt_too_long() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({
            "error": {
                "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9192 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded"
            }
        })))
        .mount(&server)
        .await;

    let s = summariser(&server, None);
    let messages = conversation();
    let err = s.summarise(input(&messages)).await.unwrap_err();
    assert!(
        matches!(
            err,
            ProviderError::PromptTooLong {
                token_gap: Some(1_000)
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn server_errors_are_retried_and_reported() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string("model is loading"))
        .mount(&server)
        .await;

    let s = summariser(&server, Some("CTXD_TEST_OPENAI_503"));
    let messages = conversation();
    let err = s.summarise(input(&messages)).await.unwrap_err();
    match &err {
        ProviderError::Failed(m) => assert!(m.contains("model is loading"), "{m}"),
        other => panic!("expected Failed, got {other:?}"),
    }
    assert!(!format!("{err:?}").contains(KEY));
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn missing_key_names_the_variable() {
    let server = MockServer::start().await;
    let cfg = SummariserConfig::OpenAi {
        base_url: server.uri(),
        api_key_env: Some("CTXD_TEST_OPENAI_UNSET".into()),
        model: "m".into(),
        timeout_secs: None,
        max_retries: None,
        max_output_tokens: None,
    };
    let s = Summariser::with_env(&cfg, None, EnvLookup::vars(|_| None)).unwrap();
    let messages = conversation();
    let err = s.summarise(input(&messages)).await.unwrap_err();
    assert!(
        matches!(&err, ProviderError::Misconfigured(m) if m.contains("CTXD_TEST_OPENAI_UNSET")),
        "{err:?}"
    );
}

#[tokio::test]
async fn empty_content_is_a_failure() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(completion(Value::Null))
        .mount(&server)
        .await;
    let s = summariser(&server, None);
    let messages = conversation();
    let err = s.summarise(input(&messages)).await.unwrap_err();
    assert!(
        matches!(&err, ProviderError::Failed(m) if m.contains("no text")),
        "{err:?}"
    );
}
