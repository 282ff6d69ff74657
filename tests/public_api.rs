//! The public Messages API as the contract: what the official SDK dumps is appended as
//! it is and compiled back as the same JSON, blocks and fields ctxd does not know
//! included, and a default compile holds only what the SDK's request types define.

use crate::common;

use std::path::PathBuf;

use common::Daemon;
use serde_json::{Value, json};

fn sdk_fixtures() -> Vec<PathBuf> {
    let dir = common::fixtures().parent().unwrap().join("sdk");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    out.sort();
    assert!(out.len() >= 20, "the SDK dumps are missing from {dir:?}");
    out
}

/// What a public request may hold: `MessageCreateParams` as the official SDK's types
/// define it (`scripts/public-request-schema.py`), every object closed to keys it does not
/// define.
struct PublicRequest {
    validator: jsonschema::Validator,
    /// The keys a request type requires even when null (a citation's `document_title`).
    nullable_required: Vec<String>,
}

/// The SDK's message content also accepts its response models, which take what its
/// request types refuse (`caller: null`, a citation's `file_id`): only the request
/// (`*Param`) types are kept where a union offers both.
fn public_request_validator() -> PublicRequest {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../protocol/schema/messages-request.schema.json"
    );
    let mut schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    params_only(&mut schema);
    let mut nullable_required = Vec::new();
    for def in schema["$defs"].as_object().unwrap().values() {
        for key in def["required"].as_array().into_iter().flatten() {
            let key = key.as_str().unwrap();
            if def["properties"][key]["anyOf"]
                .as_array()
                .is_some_and(|a| a.contains(&json!({"type": "null"})))
            {
                nullable_required.push(key.to_string());
            }
        }
    }
    PublicRequest {
        validator: jsonschema::draft202012::new(&schema).unwrap(),
        nullable_required,
    }
}

fn params_only(v: &mut Value) {
    match v {
        Value::Object(o) => {
            if let Some(Value::Array(alternatives)) = o.get_mut("anyOf") {
                let is_ref = |a: &Value| a["$ref"].as_str().map(|r| r.ends_with("Param"));
                if alternatives.iter().any(|a| is_ref(a) == Some(true)) {
                    alternatives.retain(|a| is_ref(a) != Some(false));
                }
            }
            o.values_mut().for_each(params_only);
        }
        Value::Array(a) => a.iter_mut().for_each(params_only),
        _ => {}
    }
}

impl PublicRequest {
    /// What keeps `body` from being a public request: the schema's errors, and every key
    /// inside `messages`, at any depth but a tool call's `input` (the model's own
    /// values), that is null where no request type requires it.
    fn problems(&self, body: &Value) -> Vec<String> {
        let mut out: Vec<String> = self
            .validator
            .iter_errors(body)
            .take(5)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        self.nulls(&body["messages"], "/messages", &mut out);
        out
    }

    fn nulls(&self, v: &Value, at: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(o) => {
                for (k, v) in o {
                    let here = format!("{at}/{k}");
                    if v.is_null() && !self.nullable_required.contains(k) {
                        out.push(format!("null at {here}"));
                    } else if k != "input" {
                        self.nulls(v, &here, out);
                    }
                }
            }
            Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    self.nulls(v, &format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }
}

fn assert_public(v: &PublicRequest, body: &Value, what: &str) {
    let errors = v.problems(body);
    assert!(
        errors.is_empty(),
        "{what}: the body is not a public request: {errors:#?}"
    );
}

fn new_session(d: &Daemon, extra: Value) -> String {
    let mut params = json!({"cwd": "/tmp/public-api", "no_git": true, "start_date": "2026-12-01"});
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    d.call("session.create", params)["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn compile(d: &Daemon, sid: &str) -> Value {
    d.call(
        "context.compile",
        json!({"session_id": sid, "now": "2026-12-01T10:00:00Z"}),
    )
}

fn last_assistant(request: &Value) -> Value {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .expect("an assistant message")["content"]
        .clone()
}

/// The content of an SDK dump as a request holds it: a block of a type the public
/// request types define as the SDK dumps it with `exclude_none` (a wire-alias dump has no
/// such sibling: its nulls left out), any other block (a beta's) as it came.
fn request_form(path: &std::path::Path, dump: &Value) -> Value {
    fn without_nulls(v: &Value) -> Value {
        match v {
            Value::Object(o) => Value::Object(
                o.iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k.clone(), without_nulls(v)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(without_nulls).collect()),
            other => other.clone(),
        }
    }
    let name = path.file_name().unwrap().to_string_lossy();
    let blocks = dump["content"].as_array().unwrap();
    let without: Vec<Value> = match name.strip_suffix(".json") {
        Some(stem) if !stem.contains('.') => {
            let sibling = path.with_file_name(format!("{stem}.exclude_none.json"));
            let sibling: Value =
                serde_json::from_str(&std::fs::read_to_string(sibling).unwrap()).unwrap();
            sibling["content"].as_array().unwrap().clone()
        }
        _ => blocks.iter().map(without_nulls).collect(),
    };
    let public = public_block_types();
    Value::Array(
        blocks
            .iter()
            .zip(without)
            .map(|(b, w)| {
                if public.contains(&b["type"].as_str().unwrap().to_string()) {
                    w
                } else {
                    b.clone()
                }
            })
            .collect(),
    )
}

/// The block types a public request's messages may hold, as the schema names them.
fn public_block_types() -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../protocol/schema/messages-request.schema.json"
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let defs = &schema["$defs"];
    ["UserMessageParam", "AssistantMessageParam"]
        .iter()
        .flat_map(|m| {
            defs[m]["properties"]["content"]["anyOf"][1]["items"]["anyOf"]
                .as_array()
                .unwrap()
                .clone()
        })
        .filter_map(|r| {
            let name = r["$ref"].as_str()?.rsplit('/').next()?.to_string();
            defs[&name]["properties"]["type"]["const"]
                .as_str()
                .map(str::to_string)
        })
        .collect()
}

/// The contract: an SDK `Message` dumped as JSON (with and without `exclude_none`) is
/// appended as it is, and the next compile's last assistant message carries its blocks
/// as a request holds them (no null the request types refuse, no response-only key, in a
/// block of a public type; any other block as it came);
/// the record keeps its content, id, model, stop reason and usage as they came.
#[test]
fn every_sdk_message_dump_is_appended_as_it_is_and_compiled_back_equal() {
    let mut d = Daemon::start();
    let validator = public_request_validator();
    let mut bodies = Vec::new();
    for path in sdk_fixtures() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let dump: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let sid = new_session(&d, json!({}));
        d.call(
            "transcript.append",
            json!({"session_id": sid, "records": [
                {"type": "user", "content": "look it up", "timestamp": "2026-12-01T09:59:00Z"},
                {"type": "assistant", "message": dump, "timestamp": "2026-12-01T09:59:30Z"},
            ]}),
        );
        let read = d.call("transcript.read", json!({"session_id": sid}));
        let rec = read["records"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(rec["content"], dump["content"], "{name}: stored content");
        assert_eq!(rec["message_id"], dump["id"], "{name}");
        assert_eq!(rec["model"], dump["model"], "{name}");
        assert_eq!(rec["stop_reason"], dump["stop_reason"], "{name}");
        for key in ["input_tokens", "output_tokens"] {
            assert_eq!(rec["usage"][key], dump["usage"][key], "{name}: usage.{key}");
        }
        if let Some(split) = dump["usage"].get("cache_creation").filter(|c| !c.is_null()) {
            assert_eq!(&rec["usage"]["cache_creation"], split, "{name}: TTL split");
        }
        let compiled = compile(&d, &sid);
        let request = &compiled["request"];
        // The request ends with this message, so its last block that may take one carries
        // ctxd's message breakpoint (a block that holds fields kept verbatim never does).
        let mut blocks = last_assistant(request);
        for b in blocks.as_array_mut().unwrap() {
            if let Some(marker) = b.as_object_mut().unwrap().remove("cache_control") {
                assert_eq!(marker, json!({"type": "ephemeral"}), "{name}");
            }
        }
        assert_eq!(
            blocks,
            request_form(&path, &dump),
            "{name}: the compiled blocks are not the appended ones"
        );
        // The SDK's non-beta message types are the public API; beta blocks need their
        // beta.
        if !name.starts_with("beta_") {
            assert_public(&validator, request, &name);
        }
        let at = json!({"session_id": sid, "now": "2026-12-01T10:00:00Z"});
        let fork = d.call("session.fork", json!({"session_id": sid}))["session"]["session_id"]
            .as_str()
            .unwrap()
            .to_string();
        let forked =
            d.compile_body_with(json!({"session_id": fork, "now": "2026-12-01T10:00:00Z"}));
        let forked: Value = serde_json::from_str(&forked).unwrap();
        assert_eq!(forked["messages"], request["messages"], "{name}: fork");
        bodies.push((name, at.clone(), d.compile_body_with(at)));
    }
    d.kill9();
    d.spawn();
    for (name, at, body) in bodies {
        assert_eq!(
            d.compile_body_with(at),
            body,
            "{name}: changed across a restart"
        );
    }
}

/// The contract point: an SDK dump whose `tool_use` has `caller: null` and whose text has
/// `citations: null` (as `model_dump(mode="json")` writes unset fields) is kept as it came,
/// and the next compiled body holds no key with a null value inside `messages`.
#[test]
fn an_sdk_dumps_nulls_stay_in_the_record_and_out_of_the_next_request() {
    let d = Daemon::start();
    let sid = new_session(&d, json!({}));
    let dump = json!({"id": "msg_n", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [
            {"type": "text", "text": "Reading it.", "citations": null},
            {"type": "tool_use", "id": "toolu_n", "name": "Read", "input": {"file_path": "/a", "limit": null},
             "caller": null, "toolset_name": null},
        ],
        "stop_reason": "tool_use", "stop_sequence": null, "container": null,
        "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": null,
                  "cache_read_input_tokens": null, "cache_creation": null, "server_tool_use": null,
                  "service_tier": null}});
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "user", "content": "read /a"},
            {"type": "assistant", "message": dump},
            {"type": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_n", "content": "a"}]},
        ]}),
    );
    let read = d.call("transcript.read", json!({"session_id": sid}));
    assert_eq!(read["records"][1]["content"], dump["content"], "the record");
    let request = &compile(&d, &sid)["request"];
    let v = public_request_validator();
    let mut nulls = Vec::new();
    v.nulls(&request["messages"], "/messages", &mut nulls);
    assert_eq!(nulls, Vec::<String>::new(), "{}", request["messages"]);
    let mut sent = last_assistant(request);
    for b in sent.as_array_mut().unwrap() {
        b.as_object_mut().unwrap().remove("cache_control");
    }
    assert_eq!(
        sent,
        json!([
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "toolu_n", "name": "Read", "input": {"file_path": "/a", "limit": null}},
        ])
    );
    assert_public(&v, request, "an SDK dump with nulls");
}

#[test]
fn a_block_of_an_unknown_type_and_an_unknown_field_survive_restart_fork_and_import() {
    let mut d = Daemon::start();
    let sid = new_session(&d, json!({}));
    let blocks = json!([
        {"type": "text", "text": "here", "x_future_field": {"a": [1, 2]}},
        {"type": "hologram", "data": {"x": 1}},
    ]);
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [
            {"type": "user", "content": [{"type": "text", "text": "hi"}, {"type": "hologram_request", "depth": 3}]},
            {"type": "assistant", "content": blocks, "message_id": "msg_1"},
        ]}),
    );
    let compiled = compile(&d, &sid);
    assert_eq!(last_assistant(&compiled["request"]), blocks);
    let user = &compiled["request"]["messages"][0]["content"];
    assert!(
        user.as_array()
            .unwrap()
            .iter()
            .any(|b| b == &json!({"type": "hologram_request", "depth": 3})),
        "{user}"
    );
    let body = d.compile_body_with(json!({"session_id": sid, "now": "2026-12-01T10:00:00Z"}));

    let fork = d.call("session.fork", json!({"session_id": sid}))["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let forked = d.compile_body_with(json!({"session_id": fork, "now": "2026-12-01T10:00:00Z"}));
    assert_eq!(
        last_assistant(&serde_json::from_str(&forked).unwrap()),
        blocks
    );

    d.kill9();
    d.spawn();
    assert_eq!(
        d.compile_body_with(json!({"session_id": sid, "now": "2026-12-01T10:00:00Z"})),
        body,
        "the bytes changed across a restart"
    );

    // A Claude Code transcript holding the same blocks imports them as they are.
    let lines = [
        json!({"type": "user", "uuid": "u1", "timestamp": "2026-12-01T09:00:00Z", "message": {"role": "user", "content": "hi"}}),
        json!({"type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-12-01T09:00:05Z",
               "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": blocks,
                           "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 3, "output_tokens": 2}}}),
    ];
    let jsonl = lines
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    let imported = d.call(
        "session.import",
        json!({"jsonl": jsonl, "cwd": "/tmp/public-api"}),
    );
    let isid = imported["session_id"].as_str().unwrap();
    assert_eq!(last_assistant(&compile(&d, isid)["request"]), blocks);
}

#[test]
fn a_malformed_known_block_and_a_message_given_twice_are_refused_and_nothing_is_written() {
    let d = Daemon::start();
    let sid = new_session(&d, json!({}));
    for (records, needle) in [
        (
            json!([{"type": "assistant", "content": [{"type": "text"}]}]),
            "text",
        ),
        (
            json!([{"type": "assistant", "content": "a", "message": {"content": "b"}}]),
            "given twice",
        ),
        (
            json!([{"type": "user", "message": {"role": "assistant", "content": "b"}}]),
            "message.role",
        ),
    ] {
        let err = d
            .try_call(
                "transcript.append",
                json!({"session_id": sid, "records": records}),
            )
            .unwrap_err();
        assert_eq!(err["code"], -32602, "{err}");
        assert!(err.to_string().contains(needle), "{needle}: {err}");
    }
    let read = d.call("transcript.read", json!({"session_id": sid}));
    assert_eq!(read["records"].as_array().unwrap().len(), 0);
}

/// A default compile of every real Claude Code session is a public request, and every
/// tool its messages call is defined.
#[test]
fn the_default_compile_of_every_fixture_is_a_public_request_that_defines_its_tools() {
    let d = Daemon::start();
    let validator = public_request_validator();
    for f in common::fixture_files() {
        let name = f.display().to_string();
        let jsonl = std::fs::read_to_string(&f).unwrap();
        let r = match d.try_call(
            "session.import",
            json!({"jsonl": jsonl, "fallback_cwd": "/tmp/public-api"}),
        ) {
            Ok(r) => r,
            // A single line of a kind that is not conversation (a snapshot, a summary).
            Err(e) if e.to_string().contains("holds no records") => continue,
            Err(e) => panic!("{name}: {e}"),
        };
        let sid = r["session_id"].as_str().unwrap();
        let compiled = d.call("context.compile", json!({"session_id": sid}));
        let request = &compiled["request"];
        assert_public(&validator, request, &name);
        let defined: Vec<&str> = request["tools"]
            .as_array()
            .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        for m in request["messages"].as_array().unwrap() {
            for b in m["content"].as_array().into_iter().flatten() {
                if b["type"] == "tool_use" {
                    let n = b["name"].as_str().unwrap();
                    assert!(
                        defined.contains(&n),
                        "{name}: tool {n} is called but not defined"
                    );
                }
            }
        }
        let placeholders = compiled["metadata"]["placeholder_tools"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            placeholders.is_empty(),
            !request["messages"].to_string().contains("\"tool_use\""),
            "{name}: an import registers no tools, so every called tool is a placeholder"
        );
        assert!(compiled["metadata"].get("non_public").is_none(), "{name}");
    }
}

#[test]
fn claude_codes_global_scope_is_opt_in_and_brings_its_beta_header() {
    let d = Daemon::start();
    let sid = new_session(&d, json!({}));
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "hi"}]}),
    );
    let plain = compile(&d, &sid);
    assert!(
        !plain["request"]["system"].to_string().contains("scope"),
        "{}",
        plain["request"]["system"]
    );
    assert!(plain["metadata"]["cache"].get("headers").is_none());

    let other = new_session(&d, json!({}));
    d.call(
        "transcript.append",
        json!({"session_id": other, "records": [{"type": "user", "content": "hi"}]}),
    );
    let global = d.call(
        "context.compile",
        json!({"session_id": other, "flags": {"cache_scope": "global"}}),
    );
    assert_eq!(
        global["request"]["system"][0]["cache_control"],
        json!({"type": "ephemeral", "scope": "global"})
    );
    assert_eq!(
        global["metadata"]["cache"]["headers"]["anthropic-beta"],
        "prompt-caching-scope-2026-01-05"
    );
    assert_eq!(
        global["metadata"]["non_public"],
        json!(["cache_control.scope"])
    );
}

#[test]
fn the_compile_says_when_the_sdk_requires_streaming() {
    let d = Daemon::start();
    for (max, required) in [(32_000, true), (21_333, false), (8_000, false)] {
        let sid = new_session(
            &d,
            json!({"model": {"model": "claude-sonnet-4-5", "max_output_tokens": max}}),
        );
        d.call(
            "transcript.append",
            json!({"session_id": sid, "records": [{"type": "user", "content": "hi"}]}),
        );
        assert_eq!(
            compile(&d, &sid)["metadata"]["stream_required"],
            required,
            "max_tokens {max}"
        );
    }
}

#[test]
fn server_tool_fields_reach_the_tools_array() {
    let d = Daemon::start();
    let sid = new_session(
        &d,
        json!({"tools": [
            {"name": "Read", "input_schema": {"type": "object"}, "strict": true, "input_examples": [{"file_path": "/a"}]},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 3, "allowed_domains": ["example.com"]},
        ]}),
    );
    d.call(
        "transcript.append",
        json!({"session_id": sid, "records": [{"type": "user", "content": "hi"}]}),
    );
    let compiled = compile(&d, &sid);
    let tools = &compiled["request"]["tools"];
    assert_eq!(tools[0]["strict"], true);
    assert_eq!(tools[0]["input_examples"], json!([{"file_path": "/a"}]));
    assert_eq!(
        tools[1],
        json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 3, "allowed_domains": ["example.com"]})
    );
    assert_public(
        &public_request_validator(),
        &compiled["request"],
        "server tools",
    );
}

/// The schema check can fail: it refuses the keys the public request types lack.
#[test]
fn the_public_schema_refuses_what_the_sdk_does_not_define() {
    let v = public_request_validator();
    let public = |body: &Value| v.problems(body).is_empty();
    let ok = json!({"model": "claude-sonnet-4-5", "max_tokens": 10,
                    "messages": [{"role": "user", "content": "hi"}]});
    assert!(public(&ok));
    let mut scoped = ok.clone();
    scoped["system"] = json!([{"type": "text", "text": "x",
                               "cache_control": {"type": "ephemeral", "scope": "global"}}]);
    assert!(!public(&scoped));
    let mut referenced = ok.clone();
    referenced["messages"][0]["content"] = json!([{"type": "tool_result", "tool_use_id": "t",
                                                   "content": "r", "cache_reference": "t"}]);
    assert!(!public(&referenced));
    let mut unknown = ok.clone();
    unknown["cache_edits"] = json!([]);
    assert!(!public(&unknown));
    // What an SDK response dump holds and its request types refuse, in nested blocks.
    let answered = |content: Value| {
        let mut body = ok.clone();
        body["messages"] = json!([{"role": "user", "content": "hi"},
                                  {"role": "assistant", "content": content}]);
        body
    };
    let citation = json!({"type": "char_location", "cited_text": "x", "document_index": 0,
                          "document_title": null, "start_char_index": 0, "end_char_index": 1});
    assert!(public(&answered(json!([
        {"type": "text", "text": "t", "citations": [citation]},
        {"type": "tool_use", "id": "t", "name": "n", "input": {"a": null}},
    ]))));
    for content in [
        json!([{"type": "tool_use", "id": "t", "name": "n", "input": {}, "caller": null}]),
        json!([{"type": "text", "text": "t", "citations": null}]),
        json!([{"type": "text", "text": "t", "citations": [
            {"file_id": null, "type": "char_location", "cited_text": "x", "document_index": 0,
             "document_title": "d", "start_char_index": 0, "end_char_index": 1}]}]),
        json!([{"type": "web_search_tool_result", "tool_use_id": "s", "content": [
            {"type": "web_search_result", "url": "u", "title": "t", "encrypted_content": "e",
             "page_age": null}]}]),
    ] {
        assert!(!public(&answered(content.clone())), "{content}");
    }
}
