//! Session-memory extraction through the summariser's back end: the same providers that
//! write compact summaries also keep the session notes (`pipeline::session_memory`) up
//! to date.
//!
//! - `embedded`: the deterministic extractor, over the records the caller passes (only
//!   the new ones, so the notes are extended, not rebuilt);
//! - model providers: the conversation as a summary request sends it (see `prompt`), with
//!   [`EXTRACTION_PROMPT`] and the current notes in the final user message instead of the
//!   compact prompt. The answer is the whole updated document; a surrounding code fence is
//!   stripped, sections the model left out keep their previous text, and the caps are
//!   enforced, so a wordy model cannot grow the notes past them.

use std::fmt::Write as _;
use std::time::Duration;

use super::{Backend, ModelRunner, ProviderError, Summariser, SummaryInput, http, prompt};
use ctxd_pipeline::session_memory::{self, MAX_SECTION_TOKENS, MAX_TOTAL_TOKENS};

/// What the extracting model is told it is. Like the summary's, short: the instructions
/// follow the conversation in the final user message.
const EXTRACTION_SYSTEM_PROMPT: &str = "You keep structured, factual notes on coding-agent \
sessions, so that the work can continue after the earlier messages are removed. You answer \
with text only.";

/// The extraction prompt (our own words). The current notes and the caps follow it.
pub(crate) const EXTRACTION_PROMPT: &str = "\
Answer with TEXT ONLY. Do not call any tool: no tools are available in this turn, and a \
tool call would end it without the notes, which fails the task.

Your task is to update the session notes: a markdown document that keeps what matters in \
the conversation above, so that the work can go on once the older messages are removed. \
The current notes are below, between <notes> tags. When they hold only headings and \
descriptions, this is the first time they are written.

Rules:
- Answer with the complete updated document and nothing else: no introduction, no \
comments, no <notes> tags, no code fence around it.
- Keep the structure exactly: every section, in the same order, each opening with its \
`# ` heading line unchanged and its italic description line unchanged right below it. \
Do not add, remove, rename or reorder sections. Write each section's content below its \
description; a section with nothing to record stays empty.
- Record only facts that appear in the conversation: what the user asked for, decisions \
and their reasons, file paths and function names, commands and how their output reads, \
errors and their fixes, results. Do not guess or invent.
- Update, do not only append: correct what has become wrong, rewrite Current State so it \
says what is being worked on now and what comes next, and add one line to Worklog per \
step taken since the notes were last written.
- Keep exact values that are needed to continue: paths, names, commands, error messages, \
numbers.";

/// Said last, for the same reason as the summary's reminder: right after a conversation
/// full of tool calls, a model is most likely to make one.
const TEXT_ONLY_REMINDER: &str = "Remember: answer with the complete notes document only, \
as text. Do not call any tool.";

const TRUNCATED_NOTE: &str = "Note: the beginning of this conversation was removed so that \
this request fits the model's context. Keep what the notes already say about it.";

/// The final user message: the prompt, the caps, the current notes, the caller's
/// instructions, the reminder.
fn extraction_prompt(previous: &str, input: &SummaryInput<'_>) -> String {
    let notes = if previous.trim().is_empty() {
        session_memory::template()
    } else {
        previous.to_string()
    };
    let mut text = String::from(EXTRACTION_PROMPT);
    let _ = write!(
        text,
        "\n- Stay within the limits: each section under about {MAX_SECTION_TOKENS} tokens \
         and the whole document under about {MAX_TOTAL_TOKENS} tokens; condense older \
         details rather than go over (longer sections are cut)."
    );
    if input.head_truncated {
        text.push_str("\n\n");
        text.push_str(TRUNCATED_NOTE);
    }
    text.push_str("\n\n<notes>\n");
    text.push_str(notes.trim_end());
    text.push_str("\n</notes>");
    if let Some(extra) = input.custom_instructions.map(str::trim)
        && !extra.is_empty()
    {
        text.push_str("\n\nAdditional instructions:\n");
        text.push_str(extra);
    }
    text.push_str("\n\n");
    text.push_str(TEXT_ONLY_REMINDER);
    text
}

/// The document inside `<notes>` tags or a code fence (```` ```markdown ````,
/// ```` ```md ```` or bare) when the whole answer is wrapped in one; else the answer,
/// trimmed. A fence counts as a wrapper only when the document inside opens with a heading:
/// an answer that merely starts with a code block keeps it.
fn unwrap_answer(text: &str) -> &str {
    let t = text.trim();
    if let Some(inner) = t
        .strip_prefix("<notes>")
        .and_then(|r| r.strip_suffix("</notes>"))
    {
        return inner.trim();
    }
    if let Some(rest) = t.strip_prefix("```")
        && let Some((info, rest)) = rest.split_once('\n')
        && matches!(
            info.trim().to_ascii_lowercase().as_str(),
            "" | "markdown" | "md"
        )
        && let Some(inner) = rest.trim_end().strip_suffix("```")
        && inner.trim_start().starts_with('#')
    {
        return inner.trim();
    }
    t
}

impl Summariser {
    /// The session notes updated from `input`: the complete new document, in the template's
    /// structure and within the caps. `previous` is the current document (empty or the
    /// template the first time). For `embedded`, `input.records` must hold only the records
    /// since the last extraction; model providers read `input.messages`.
    pub async fn extract(
        &self,
        previous: &str,
        input: SummaryInput<'_>,
    ) -> Result<String, ProviderError> {
        let messages = || prompt::conversation(&input, extraction_prompt(previous, &input));
        let answer = match &self.backend {
            Backend::Embedded => {
                if input.custom_instructions.is_some() {
                    tracing::debug!("the embedded extractor cannot follow custom instructions");
                }
                return Ok(session_memory::extract_embedded(
                    previous,
                    input.records,
                    None,
                ));
            }
            Backend::Anthropic(p) => {
                p.complete(EXTRACTION_SYSTEM_PROMPT, &messages(), &self.env)
                    .await?
            }
            Backend::OpenAi(p) => {
                p.complete(EXTRACTION_SYSTEM_PROMPT, &messages(), &self.env)
                    .await?
            }
            Backend::Client { runner, timeout } => {
                let body = prompt::messages_body(
                    None,
                    http::DEFAULT_MAX_OUTPUT_TOKENS,
                    EXTRACTION_SYSTEM_PROMPT,
                    &messages(),
                );
                run_on_client(runner.as_ref(), body, *timeout).await?
            }
        };
        session_memory::accept_update(previous, unwrap_answer(&answer)).ok_or_else(|| {
            ProviderError::Failed("the model's answer is not a session-notes document".into())
        })
    }
}

/// The client runner with the same guard `summarise` uses: it is told the timeout, and
/// the guard holds even if it ignores it.
async fn run_on_client(
    runner: &dyn ModelRunner,
    body: serde_json::Value,
    timeout: Duration,
) -> Result<String, ProviderError> {
    tracing::debug!(
        timeout_ms = ctxd_pipeline::saturate::millis(timeout),
        "session-memory extraction via the client"
    );
    match tokio::time::timeout(timeout, runner.run(body, timeout)).await {
        Err(_) => Err(ProviderError::Timeout(timeout)),
        Ok(result) => result,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use ctxd_protocol::{ContentBlock, Record, SummariserConfig};
    use futures::future::BoxFuture;
    use serde_json::{Value, json};
    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use super::*;
    use crate::COMPACT_PROMPT;
    use crate::http::EnvLookup;
    use ctxd_pipeline::message::ApiMessage;

    const KEY: &str = "sk-extract-test-DISTINCTIVE-90c1";

    fn env(var: &'static str) -> EnvLookup {
        EnvLookup::vars(move |name| (name == var).then(|| KEY.to_string()))
    }

    fn conversation() -> Vec<ApiMessage> {
        vec![
            ApiMessage::user(vec![ContentBlock::text(
                "Make the parser tests deterministic.",
            )]),
            ApiMessage::assistant(vec![ContentBlock::ToolUse {
                extra: Default::default(),
                id: "toolu_1".into(),
                name: "Bash".into(),
                input: json!({"command": "cargo test -p parser"}),
                cache_control: None,
            }]),
            ApiMessage::user(vec![ContentBlock::ToolResult {
                extra: Default::default(),
                tool_use_id: "toolu_1".into(),
                content: ctxd_protocol::ToolResultContent::Text("42 passed".into()),
                is_error: false,
                cache_control: None,
                cache_reference: None,
            }]),
        ]
    }

    fn input<'a>(records: &'a [&'a Record], messages: &'a [ApiMessage]) -> SummaryInput<'a> {
        SummaryInput {
            records,
            messages,
            custom_instructions: None,
            head_truncated: false,
            max_summary_tokens: 12_000,
        }
    }

    fn previous() -> String {
        session_memory::template().replace(
            "# Learnings\n_What worked, what did not, what to avoid, and what the user prefers._\n",
            "# Learnings\n_What worked, what did not, what to avoid, and what the user prefers._\n\n- The user wants BTreeMap over HashMap where order shows.\n",
        )
    }

    /// A model answer: fenced, with an oversized Worklog and the Learnings section left out.
    fn model_answer() -> String {
        let mut doc = String::new();
        for (h, d) in session_memory::SECTIONS {
            if h == "Learnings" {
                continue;
            }
            let _ = write!(doc, "# {h}\n_{d}_\n\n");
            match h {
                "Session Title" => doc.push_str("Deterministic parser tests\n\n"),
                "Worklog" => {
                    for i in 0..400 {
                        let _ = writeln!(doc, "- step {i:03}: ran the parser tests again");
                    }
                }
                _ => {}
            }
        }
        format!("```markdown\n{doc}```\n")
    }

    fn prompt_of(body: &Value) -> String {
        let last = body["messages"].as_array().unwrap().last().unwrap();
        assert_eq!(last["role"], "user");
        last["content"].as_array().unwrap().last().unwrap()["text"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn check_result(out: &str) {
        assert!(out.contains("# Session Title\n_A short, distinctive title for this session: a few words, no filler._\n\nDeterministic parser tests\n"));
        assert!(!out.contains("```"), "fence stripped");
        assert!(
            out.contains("- The user wants BTreeMap over HashMap"),
            "a section the model left out keeps its text"
        );
        assert!(
            out.contains("- step 399:"),
            "the worklog keeps its newest lines"
        );
        assert!(
            !out.contains("- step 000:"),
            "the worklog was cut to its cap"
        );
        assert!(out.contains("cut here to keep this section within the session-memory limits"));
        assert!(out.chars().count() <= 48_000);
        assert_eq!(session_memory::enforce_caps(out), out);
    }

    #[tokio::test]
    async fn anthropic_sends_the_extraction_prompt_and_the_notes() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .and(header("x-api-key", KEY))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": model_answer()}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 10, "output_tokens": 5}
            })))
            .expect(1)
            .mount(&server)
            .await;
        let cfg = SummariserConfig::Anthropic {
            base_url: Some(server.uri()),
            api_key_env: "CTXD_TEST_EXTRACT_ANTHROPIC".into(),
            model: "claude-test-1".into(),
            timeout_secs: Some(5),
            max_retries: Some(0),
            max_output_tokens: Some(8_000),
        };
        let s = Summariser::with_env(&cfg, None, env("CTXD_TEST_EXTRACT_ANTHROPIC")).unwrap();
        let messages = conversation();
        let mut i = input(&[], &messages);
        i.custom_instructions = Some("note the test count");
        let out = s.extract(&previous(), i).await.unwrap();
        check_result(&out);

        let requests = server.received_requests().await.unwrap();
        let body: Value = requests[0].body_json().unwrap();
        assert_eq!(body["model"], "claude-test-1");
        assert_eq!(body["max_tokens"], 8_000);
        assert_eq!(body["system"], EXTRACTION_SYSTEM_PROMPT);
        assert!(body.get("tools").is_none());
        let prompt = prompt_of(&body);
        assert!(prompt.starts_with(EXTRACTION_PROMPT));
        assert!(!prompt.contains(COMPACT_PROMPT));
        assert!(prompt.contains(&format!("<notes>\n{}\n</notes>", previous().trim_end())));
        assert!(prompt.contains("under about 2000 tokens"));
        assert!(prompt.contains("note the test count"));
        assert!(prompt.ends_with(TEXT_ONLY_REMINDER));
        assert_eq!(
            body["messages"][0]["content"][0]["text"],
            "Make the parser tests deterministic."
        );
        assert_eq!(
            body["messages"][2]["content"][0]["type"], "tool_result",
            "the prompt joins the trailing user message after the result"
        );
    }

    #[tokio::test]
    async fn openai_sends_the_extraction_prompt_and_the_notes() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": model_answer()}}]
            })))
            .expect(1)
            .mount(&server)
            .await;
        let cfg = SummariserConfig::OpenAi {
            base_url: format!("{}/v1", server.uri()),
            api_key_env: None,
            model: "local-model".into(),
            timeout_secs: Some(5),
            max_retries: Some(0),
            max_output_tokens: Some(4_096),
        };
        let s = Summariser::with_env(&cfg, None, env("UNUSED")).unwrap();
        let messages = conversation();
        // The first extraction: no notes yet, so the model gets the template.
        let out = s.extract("", input(&[], &messages)).await.unwrap();
        assert!(out.contains("- step 399:"));
        assert!(!out.contains("```"));

        let requests = server.received_requests().await.unwrap();
        let body: Value = requests[0].body_json().unwrap();
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(body["messages"][0]["content"], EXTRACTION_SYSTEM_PROMPT);
        let last = body["messages"].as_array().unwrap().last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(last.contains(EXTRACTION_PROMPT));
        assert!(last.contains(&format!(
            "<notes>\n{}\n</notes>",
            session_memory::template().trim_end()
        )));
        assert!(last.contains("[result of Bash (toolu_1)]: 42 passed"));
    }

    struct FakeRunner {
        answer: String,
        seen: Mutex<Vec<Value>>,
    }

    impl ModelRunner for FakeRunner {
        fn run(
            &self,
            request: Value,
            _timeout: Duration,
        ) -> BoxFuture<'static, Result<String, ProviderError>> {
            self.seen.lock().unwrap().push(request);
            let answer = self.answer.clone();
            Box::pin(async move { Ok(answer) })
        }
    }

    #[tokio::test]
    async fn the_client_runs_the_extraction_and_non_documents_fail() {
        let runner = Arc::new(FakeRunner {
            answer: model_answer(),
            seen: Mutex::new(Vec::new()),
        });
        let s = Summariser::new(
            &SummariserConfig::Client { timeout_secs: None },
            Some(runner.clone()),
        )
        .unwrap();
        let messages = conversation();
        let out = s.extract(&previous(), input(&[], &messages)).await.unwrap();
        check_result(&out);
        {
            let seen = runner.seen.lock().unwrap();
            assert!(seen[0].get("model").is_none(), "the client picks the model");
            assert_eq!(seen[0]["system"], EXTRACTION_SYSTEM_PROMPT);
            assert!(prompt_of(&seen[0]).contains(EXTRACTION_PROMPT));
        }

        let s = Summariser::new(
            &SummariserConfig::Client { timeout_secs: None },
            Some(Arc::new(FakeRunner {
                answer: "Sorry, I cannot help with that.".into(),
                seen: Mutex::new(Vec::new()),
            })),
        )
        .unwrap();
        let err = s
            .extract(&previous(), input(&[], &messages))
            .await
            .unwrap_err();
        assert!(matches!(err, ProviderError::Failed(_)), "{err:?}");
    }

    #[tokio::test]
    async fn embedded_extracts_from_the_records_it_is_given() {
        let record: Record = serde_json::from_value(json!({
            "uuid": "u1", "seq": 1, "type": "user", "timestamp": "2026-11-29T10:00:00Z",
            "content": [{"type": "text", "text": "Make the parser tests deterministic."}]
        }))
        .unwrap();
        let records = [&record];
        let s = Summariser::new(&SummariserConfig::Embedded, None).unwrap();
        let out = s.extract(&previous(), input(&records, &[])).await.unwrap();
        assert_eq!(
            out,
            session_memory::extract_embedded(&previous(), &records, None)
        );
        assert!(out.contains("- Make the parser tests deterministic."));
        assert!(out.contains("- The user wants BTreeMap"));
    }

    #[test]
    fn answers_are_unwrapped() {
        assert_eq!(unwrap_answer("```markdown\n# A\nx\n```"), "# A\nx");
        assert_eq!(unwrap_answer("```\n# A\n```\n"), "# A");
        assert_eq!(unwrap_answer("<notes>\n# A\n</notes>"), "# A");
        assert_eq!(
            unwrap_answer("  # A\n```sh\nls\n```\n"),
            "# A\n```sh\nls\n```"
        );
        assert_eq!(
            unwrap_answer("```MD\n# A\n```sh\nls\n```\n```"),
            "# A\n```sh\nls\n```"
        );
        // Fences that do not wrap the whole answer stay.
        for text in [
            "```sh\nls\n```\n# A\n```sh\npwd\n```",
            "```\nls\n```\n# A\n```\npwd\n```",
        ] {
            assert_eq!(unwrap_answer(text), text);
        }
    }
}
