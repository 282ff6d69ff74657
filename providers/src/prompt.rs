//! The compaction request: our compact prompt, and the Messages API body every model
//! provider derives from (Anthropic sends it, the client runner forwards it, the
//! OpenAI-compatible provider converts its messages).

use std::collections::HashSet;
use std::fmt::Write as _;

use ctxd_protocol::{ContentBlock, ToolResultBlock, ToolResultContent};
use serde_json::{Value, json};

use super::SummaryInput;
use ctxd_pipeline::message::{ApiMessage, Role};
use ctxd_pipeline::records::result_text;

/// The nine section titles, in order. The embedded summariser writes them and parses them
/// back out of an earlier summary, so model and embedded summaries share one shape.
pub(crate) const SECTION_TITLES: [&str; 9] = [
    "Primary Request and Intent",
    "Key Technical Concepts",
    "Files and Code",
    "Errors and Fixes",
    "Problem Solving",
    "All User Messages",
    "Pending Tasks",
    "Current Work",
    "Optional Next Step",
];

/// What the summarising model is told it is. Kept short: the instructions live in the
/// final user message, where they follow the conversation they are about.
pub(crate) const SYSTEM_PROMPT: &str = "You write faithful, detailed summaries of \
coding-agent sessions, so that the work can continue after the earlier messages are \
removed. You answer with text only.";

/// The compact prompt (our own words). The model first thinks in an `<analysis>`
/// scratchpad, then writes the nine-section summary inside `<summary>`; only the summary
/// is kept (see [`super::extract_summary`]).
pub(crate) const COMPACT_PROMPT: &str = "\
Answer with TEXT ONLY. Do not call any tool: no tools are available in this turn, and a \
tool call would end it without a summary, which fails the task.

Your task is to write a detailed summary of the conversation above. The summary will \
replace the conversation: whoever continues the work sees only the summary, so keep \
every fact needed to carry on without asking again: what was asked, what was decided, \
which files and code matter, what went wrong and how it was fixed, and exactly where \
the work stopped.

First, think inside <analysis> tags. Go through the conversation in order and, for each \
part, note:
- what the user asked for and meant, in their own words where it matters;
- what was done about it: the approach, the decisions and why they were made;
- the concrete details: file names, function signatures, code that was written or \
changed, commands and their results;
- errors that came up, how they were fixed, and any feedback the user gave, above all \
when the user asked for something to be done differently.
Check the analysis for gaps before you go on.

Then write the summary inside <summary> tags, with these nine numbered sections, in \
this order:

1. Primary Request and Intent: every explicit request and intention of the user, in \
detail.
2. Key Technical Concepts: the technologies, frameworks, libraries and ideas that came \
up.
3. Files and Code: each file that was read, changed or created, why it matters, and the \
important code (full snippets for recent changes).
4. Errors and Fixes: each error met and how it was fixed; include what the user said \
about it.
5. Problem Solving: problems solved and investigations still under way.
6. All User Messages: every message the user wrote (not tool results), in order, \
quoted. These show how the user's wishes changed, so leave none out.
7. Pending Tasks: work the user asked for that is not done yet.
8. Current Work: precisely what was being worked on just before this summary, with file \
names and code. This section needs the most detail.
9. Optional Next Step: the next step, only if it follows directly from the user's most \
recent request and the work in section 8; quote the conversation to show where the work \
stopped. If the last task was finished, give no next step unless the user asked for \
one.

Use this shape:

<analysis>
[your notes, in order, covering every point above]
</analysis>

<summary>
1. Primary Request and Intent:
   [details]

2. Key Technical Concepts:
   - [concept]

3. Files and Code:
   - [file path]
     - [why it matters, what changed]
     - [code snippet]

4. Errors and Fixes:
   - [error]: [fix, user feedback]

5. Problem Solving:
   [details]

6. All User Messages:
   - [message]

7. Pending Tasks:
   - [task]

8. Current Work:
   [details]

9. Optional Next Step:
   [step, with a quote]
</summary>";

/// Said last, because a model is most likely to call a tool right after reading a
/// conversation full of tool calls.
const TEXT_ONLY_REMINDER: &str = "Remember: answer with text only, an <analysis> block followed by a <summary> block. \
Do not call any tool.";

const TRUNCATED_NOTE: &str = "Note: the beginning of this conversation was removed so \
that this request fits the model's context. Summarise what is left, and say in section 1 \
that earlier context is missing.";

/// The text of the final user message: the prompt, then our notes, then the caller's
/// instructions (manual compact, PreCompact hooks), then the reminder.
pub(crate) fn final_prompt(input: &SummaryInput<'_>) -> String {
    let mut text = String::from(COMPACT_PROMPT);
    if input.head_truncated {
        text.push_str("\n\n");
        text.push_str(TRUNCATED_NOTE);
    }
    if input.max_summary_tokens > 0 {
        let _ = write!(
            text,
            "\n\nKeep the summary (the part inside <summary> tags) under about {} tokens.",
            input.max_summary_tokens
        );
    }
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

/// The conversation as the summary request sends it, ending on a user message that holds
/// the prompt. The messages arrive normalised (legal for the main request); what changes:
/// - `cache_control` and `cache_reference` are removed: this request has our system
///   prompt and no tools, so it shares no cache prefix with the main request and a marker
///   would only buy a cache write at a premium that nothing reads; `cache_reference` is
///   legal only with the cache-editing beta, which this request does not declare;
/// - images and documents become `[image]` / `[document]` text: they are costly and add
///   little to a summary, and they are what most often makes a compaction request too big;
/// - thinking blocks are dropped (the request does not enable thinking, and their
///   signatures are tied to the original request);
/// - messages left empty disappear and same-role neighbours merge, so roles alternate;
/// - after the caller dropped the oldest rounds, the conversation may open on an assistant
///   message or on results of calls no longer shown: a short user note opens it, and such
///   results become text (the API rejects both as they are);
/// - tool results lead their user message (the API requires it);
/// - tool calls left unanswered by a trailing assistant message get a stub result, because
///   the API rejects a `tool_use` that the next user message does not answer.
pub(crate) fn request_messages(input: &SummaryInput<'_>) -> Vec<ApiMessage> {
    conversation(input, final_prompt(input))
}

/// [`request_messages`] with another final prompt: the session-memory extraction sends the
/// same conversation and asks for something else.
pub(crate) fn conversation(input: &SummaryInput<'_>, final_text: String) -> Vec<ApiMessage> {
    let mut out: Vec<ApiMessage> = Vec::with_capacity(input.messages.len() + 2);
    let mut calls: HashSet<&str> = HashSet::new();
    for message in input.messages {
        let content: Vec<ContentBlock> = message
            .content
            .iter()
            .filter_map(clean_block)
            .map(|b| match b {
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } if !calls.contains(tool_use_id.as_str()) => ContentBlock::text(format!(
                    "[result of an earlier tool call]\n{}",
                    result_text(&content)
                )),
                other => other,
            })
            .collect();
        for block in &message.content {
            if let ContentBlock::ToolUse { id, .. } = block {
                calls.insert(id);
            }
        }
        if content.is_empty() {
            continue;
        }
        if out.is_empty() && message.role == Role::Assistant {
            out.push(ApiMessage::user(vec![ContentBlock::text(
                "[The beginning of the conversation is not shown.]",
            )]));
        }
        match out.last_mut() {
            Some(last) if last.role == message.role => last.content.extend(content),
            _ => out.push(ApiMessage {
                role: message.role,
                content,
            }),
        }
    }
    for message in out.iter_mut().filter(|m| m.role == Role::User) {
        // A stable sort: results keep their order, other blocks theirs.
        message
            .content
            .sort_by_key(|b| !matches!(b, ContentBlock::ToolResult { .. }));
    }

    let mut stubs = Vec::new();
    if let Some(last) = out.last()
        && last.role == Role::Assistant
    {
        for block in &last.content {
            if let ContentBlock::ToolUse { id, .. } = block {
                stubs.push(ContentBlock::ToolResult {
                    extra: Default::default(),
                    tool_use_id: id.clone(),
                    content: ToolResultContent::Text(
                        "[The tool call was interrupted by the summary request]".into(),
                    ),
                    is_error: true,
                    cache_control: None,
                    cache_reference: None,
                });
            }
        }
    }

    let prompt = ContentBlock::text(final_text);
    match out.last_mut() {
        Some(last) if last.role == Role::User => last.content.push(prompt),
        _ => {
            stubs.push(prompt);
            out.push(ApiMessage::user(stubs));
        }
    }
    out
}

fn clean_block(block: &ContentBlock) -> Option<ContentBlock> {
    Some(match block {
        ContentBlock::Text { text, .. } => {
            if text.trim().is_empty() {
                return None;
            }
            ContentBlock::text(text.clone())
        }
        ContentBlock::Image { .. } => ContentBlock::text("[image]"),
        ContentBlock::Document { .. } => ContentBlock::text("[document]"),
        ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => return None,
        ContentBlock::Other(fields) => {
            ContentBlock::text(ctxd_pipeline::text::verbatim_block_text(fields, 2_000))
        }
        ContentBlock::ToolUse {
            id, name, input, ..
        } => ContentBlock::ToolUse {
            extra: Default::default(),
            id: id.clone(),
            name: name.clone(),
            input: input.clone(),
            cache_control: None,
        },
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
            ..
        } => ContentBlock::ToolResult {
            extra: Default::default(),
            tool_use_id: tool_use_id.clone(),
            content: clean_result(content),
            is_error: *is_error,
            cache_control: None,
            cache_reference: None,
        },
    })
}

fn clean_result(content: &ToolResultContent) -> ToolResultContent {
    match content {
        ToolResultContent::Text(t) => ToolResultContent::Text(t.clone()),
        ToolResultContent::Blocks(blocks) => ToolResultContent::Blocks(
            blocks
                .iter()
                .map(|b| match b {
                    ToolResultBlock::Text { text, .. } => ToolResultBlock::Text {
                        extra: Default::default(),
                        text: text.clone(),
                    },
                    ToolResultBlock::Image { .. } => ToolResultBlock::Text {
                        extra: Default::default(),
                        text: "[image]".into(),
                    },
                    ToolResultBlock::Document { .. } => ToolResultBlock::Text {
                        extra: Default::default(),
                        text: "[document]".into(),
                    },
                    ToolResultBlock::ToolReference { tool_name, .. } => ToolResultBlock::Text {
                        extra: Default::default(),
                        text: ctxd_pipeline::tool_plan::tool_reference_text(tool_name),
                    },
                    ToolResultBlock::Other(fields) => ToolResultBlock::text(
                        ctxd_pipeline::text::verbatim_block_text(fields, 2_000),
                    ),
                })
                .collect(),
        ),
    }
}

/// The Messages API body. `model` is `None` for the client runner: the attached client
/// knows which model it runs and fills it in. No `tools` field: the model must answer in
/// text.
pub(crate) fn anthropic_body(
    model: Option<&str>,
    max_tokens: u64,
    input: &SummaryInput<'_>,
) -> Value {
    messages_body(model, max_tokens, SYSTEM_PROMPT, &request_messages(input))
}

/// The Messages API body for any system prompt and conversation (see [`anthropic_body`]).
pub(crate) fn messages_body(
    model: Option<&str>,
    max_tokens: u64,
    system: &str,
    messages: &[ApiMessage],
) -> Value {
    let mut body = serde_json::Map::new();
    if let Some(model) = model {
        body.insert("model".into(), json!(model));
    }
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("system".into(), json!(system));
    // `ApiMessage` holds only strings and JSON values, so this cannot fail; an empty list
    // would be rejected by the API with a clear message rather than panic here.
    body.insert(
        "messages".into(),
        serde_json::to_value(messages).unwrap_or_else(|_| json!([])),
    );
    Value::Object(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxd_protocol::{CacheControl, MediaSource};

    fn input<'a>(messages: &'a [ApiMessage]) -> SummaryInput<'a> {
        SummaryInput {
            records: &[],
            messages,
            custom_instructions: None,
            head_truncated: false,
            max_summary_tokens: 8_000,
        }
    }

    #[test]
    fn prompt_names_the_nine_sections_in_order() {
        let mut at = 0;
        for (i, title) in SECTION_TITLES.iter().enumerate() {
            let heading = format!("{}. {title}:", i + 1);
            let found = COMPACT_PROMPT[at..]
                .find(&heading)
                .unwrap_or_else(|| panic!("missing {heading}"));
            at += found + heading.len();
        }
        assert!(COMPACT_PROMPT.contains("<analysis>"));
        assert!(COMPACT_PROMPT.contains("<summary>"));
    }

    #[test]
    fn trailing_user_message_takes_the_prompt() {
        let msgs = vec![
            ApiMessage::user(vec![ContentBlock::text("hi")]),
            ApiMessage::assistant(vec![ContentBlock::text("hello")]),
            ApiMessage::user(vec![ContentBlock::text("do it")]),
        ];
        let out = request_messages(&input(&msgs));
        assert_eq!(out.len(), 3);
        assert_eq!(out[2].content.len(), 2);
        let ContentBlock::Text { text, .. } = &out[2].content[1] else {
            panic!("prompt is text")
        };
        assert!(text.starts_with(COMPACT_PROMPT));
    }

    #[test]
    fn trailing_assistant_gets_a_new_user_message_and_stub_results() {
        let msgs = vec![
            ApiMessage::user(vec![ContentBlock::text("hi")]),
            ApiMessage::assistant(vec![
                ContentBlock::Thinking {
                    extra: Default::default(),
                    thinking: "hmm".into(),
                    signature: "sig".into(),
                },
                ContentBlock::ToolUse {
                    extra: Default::default(),
                    id: "t1".into(),
                    name: "Read".into(),
                    input: json!({"file_path": "/a"}),
                    cache_control: Some(CacheControl::ephemeral()),
                },
            ]),
        ];
        let out = request_messages(&input(&msgs));
        assert_eq!(out.len(), 3);
        assert_eq!(out[1].content.len(), 1, "thinking dropped");
        let v = serde_json::to_value(&out).unwrap();
        assert!(!v.to_string().contains("cache_control"));
        assert_eq!(v[2]["content"][0]["type"], "tool_result");
        assert_eq!(v[2]["content"][0]["tool_use_id"], "t1");
        assert_eq!(v[2]["content"][1]["type"], "text");
    }

    #[test]
    fn media_becomes_placeholders_and_empty_messages_merge_away() {
        let msgs = vec![
            ApiMessage::user(vec![
                ContentBlock::text("look"),
                ContentBlock::Image {
                    extra: Default::default(),
                    source: MediaSource::Url {
                        extra: Default::default(),
                        url: "http://x/y.png".into(),
                    },
                    cache_control: None,
                },
            ]),
            ApiMessage::assistant(vec![ContentBlock::RedactedThinking {
                extra: Default::default(),
                data: "x".into(),
            }]),
            ApiMessage::user(vec![ContentBlock::text("more")]),
        ];
        let out = request_messages(&input(&msgs));
        assert_eq!(out.len(), 1);
        let v = serde_json::to_value(&out).unwrap();
        assert_eq!(v[0]["content"][1]["text"], "[image]");
        assert_eq!(v[0]["content"][2]["text"], "more");
    }

    #[test]
    fn a_truncated_head_still_makes_a_legal_conversation() {
        let msgs = vec![
            ApiMessage::user(vec![
                ContentBlock::text("and then?"),
                ContentBlock::ToolResult {
                    extra: Default::default(),
                    tool_use_id: "gone".into(),
                    content: ToolResultContent::Text("old output".into()),
                    is_error: false,
                    cache_control: None,
                    cache_reference: Some("gone".into()),
                },
            ]),
            ApiMessage::assistant(vec![ContentBlock::ToolUse {
                extra: Default::default(),
                id: "t2".into(),
                name: "Bash".into(),
                input: json!({"command": "ls"}),
                cache_control: None,
            }]),
            ApiMessage::user(vec![
                ContentBlock::text("note"),
                ContentBlock::ToolResult {
                    extra: Default::default(),
                    tool_use_id: "t2".into(),
                    content: ToolResultContent::Text("a b".into()),
                    is_error: false,
                    cache_control: None,
                    cache_reference: None,
                },
            ]),
        ];
        let v = serde_json::to_value(request_messages(&input(&msgs))).unwrap();
        assert_eq!(v[0]["content"][0]["text"], "and then?");
        assert_eq!(
            v[0]["content"][1]["text"],
            "[result of an earlier tool call]\nold output"
        );
        assert_eq!(v[2]["content"][0]["type"], "tool_result", "results lead");
        assert_eq!(v[2]["content"][1]["text"], "note");

        let opens_on_assistant = vec![ApiMessage::assistant(vec![ContentBlock::text("done")])];
        let v = serde_json::to_value(request_messages(&input(&opens_on_assistant))).unwrap();
        assert_eq!(v[0]["role"], "user");
        assert_eq!(v[1]["role"], "assistant");
        assert_eq!(v[2]["role"], "user");
    }

    #[test]
    fn notes_and_custom_instructions_follow_the_prompt() {
        let mut i = input(&[]);
        i.head_truncated = true;
        i.custom_instructions = Some("focus on the parser");
        let text = final_prompt(&i);
        let note = text
            .find("beginning of this conversation was removed")
            .unwrap();
        let extra = text.find("focus on the parser").unwrap();
        assert!(note < extra);
        assert!(text.ends_with(TEXT_ONLY_REMINDER));
    }
}
