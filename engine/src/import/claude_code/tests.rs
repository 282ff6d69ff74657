use super::*;
use ctxd_protocol::{ToolResultBlock, ToolResultContent, Usage};
use serde_json::json;
use std::path::{Path, PathBuf};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/claude-code");

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
}

fn fixtures() -> Vec<(PathBuf, String)> {
    let mut paths = Vec::new();
    walk(Path::new(FIXTURES), &mut paths);
    paths.sort();
    assert!(paths.len() > 60, "fixtures not found under {FIXTURES}");
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

fn fixture(rel: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{rel}")).unwrap()
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The lines, with each sub-agent message an `agent_progress` line carries right after
/// that line (the converter imports it as a sidechain record).
fn conversation_lines(text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for l in lines(text) {
        let agent = (l["type"] == "progress" && l["data"]["type"] == "agent_progress")
            .then(|| l["data"]["message"].clone())
            .filter(|m| m["type"] == "user" || m["type"] == "assistant");
        out.push(l);
        out.extend(agent);
    }
    out
}

fn blocks_of(line: &Value) -> Vec<Value> {
    line["message"]["content"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn malformed_line(result: Result<Imported, ImportError>) -> (usize, String) {
    match result {
        Err(ImportError::Malformed { line, message }) => (line, message),
        other => panic!("expected Malformed, got {other:?}"),
    }
}

fn claude_code(record: &RecordInput) -> &Value {
    &record.meta.as_ref().expect("meta")["claude_code"]
}

/// Counts computed from the raw JSON, independently of the converter.
#[test]
fn every_fixture_imports_with_matching_counts() {
    for (path, text) in fixtures() {
        let name = path.display();
        let raw = conversation_lines(&text);
        let is_record = |l: &Value| {
            matches!(
                l["type"].as_str(),
                Some("user" | "assistant" | "system" | "attachment")
            )
        };
        let record_lines = raw.iter().filter(|l| is_record(l)).count();
        let result = parse(&text);
        if record_lines == 0 {
            // summary / queue-operation / file-history-snapshot samples hold only UI lines.
            assert!(
                matches!(result, Err(ImportError::Empty)),
                "{name}: {result:?}"
            );
            continue;
        }
        let imported = result.unwrap_or_else(|e| panic!("{name}: {e}"));
        let stats = &imported.stats;

        // Independent: first occurrence of each uuid, non-empty content.
        let mut seen = HashSet::new();
        let mut kept = Vec::new();
        let mut other_types: BTreeMap<String, u64> = BTreeMap::new();
        for l in &raw {
            if !is_record(l) {
                *other_types
                    .entry(l["type"].as_str().unwrap().to_owned())
                    .or_default() += 1;
                continue;
            }
            if let Some(u) = l["uuid"].as_str()
                && !seen.insert(u.to_owned())
            {
                continue;
            }
            kept.push(l);
        }
        let empty = |kind: &str| {
            stats
                .skipped
                .get(&format!("empty:{kind}"))
                .copied()
                .unwrap_or(0)
        };
        let of_type = |t: &str| kept.iter().filter(|l| l["type"] == t).count() as u64;
        assert_eq!(stats.lines, lines(&text).len() as u64, "{name}");
        assert_eq!(stats.user, of_type("user") - empty("user"), "{name}");
        assert_eq!(
            stats.assistant,
            of_type("assistant") - empty("assistant"),
            "{name}"
        );
        assert_eq!(stats.system, of_type("system"), "{name}");
        assert_eq!(stats.records, imported.records.len() as u64, "{name}");
        assert_eq!(
            stats.records,
            stats.user + stats.assistant + stats.system + stats.attachment,
            "{name}"
        );
        for (t, n) in &other_types {
            assert_eq!(stats.skipped.get(t), Some(n), "{name}: skipped {t}");
        }

        let count_blocks = |t: &str| {
            kept.iter()
                .flat_map(|l| blocks_of(l))
                .filter(|b| b["type"] == t)
                .count() as u64
        };
        assert_eq!(stats.tool_use, count_blocks("tool_use"), "{name}");
        assert_eq!(stats.tool_result, count_blocks("tool_result"), "{name}");
        let raw_images = kept
            .iter()
            .flat_map(|l| blocks_of(l))
            .map(|b| match b["type"].as_str() {
                Some("image") => 1,
                Some("tool_result") => b["content"]
                    .as_array()
                    .map_or(0, |c| c.iter().filter(|x| x["type"] == "image").count()),
                _ => 0,
            })
            .sum::<usize>();
        let images = imported
            .records
            .iter()
            .flat_map(|r| &r.content)
            .map(|b| match b {
                ContentBlock::Image { .. } => 1,
                ContentBlock::ToolResult {
                    content: ToolResultContent::Blocks(bs),
                    ..
                } => bs
                    .iter()
                    .filter(|x| matches!(x, ToolResultBlock::Image { .. }))
                    .count(),
                _ => 0,
            })
            .sum::<usize>();
        assert_eq!(images, raw_images, "{name}: images");

        // Per record: usage, message id and is_error survive.
        let by_uuid: HashMap<&str, &Value> = kept
            .iter()
            .filter_map(|l| Some((l["uuid"].as_str()?, *l)))
            .collect();
        for r in &imported.records {
            let line = by_uuid[r.uuid.as_deref().unwrap()];
            assert_eq!(r.timestamp.as_deref(), line["timestamp"].as_str(), "{name}");
            if r.kind == Some(RecordKind::Assistant) {
                assert_eq!(
                    r.message_id.as_deref(),
                    line["message"]["id"].as_str(),
                    "{name}"
                );
                assert_eq!(
                    r.model.as_deref(),
                    line["message"]["model"].as_str(),
                    "{name}"
                );
                let u = &line["message"]["usage"];
                match &r.usage {
                    Some(usage) => {
                        assert_eq!(Some(usage.input_tokens), u["input_tokens"].as_u64());
                        assert_eq!(Some(usage.output_tokens), u["output_tokens"].as_u64());
                        assert_eq!(
                            Some(usage.cache_creation_input_tokens),
                            u["cache_creation_input_tokens"].as_u64()
                        );
                        assert_eq!(
                            Some(usage.cache_read_input_tokens),
                            u["cache_read_input_tokens"].as_u64()
                        );
                    }
                    None => assert!(u.is_null(), "{name}: usage lost"),
                }
            }
            let raw_errors: Vec<bool> = blocks_of(line)
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| b["is_error"].as_bool().unwrap_or(false))
                .collect();
            let errors: Vec<bool> = r
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolResult { is_error, .. } => Some(*is_error),
                    _ => None,
                })
                .collect();
            assert_eq!(errors, raw_errors, "{name}");
            if line.get("toolUseResult").is_some() {
                assert_eq!(
                    claude_code(r)["toolUseResult"],
                    line["toolUseResult"],
                    "{name}"
                );
            }
        }

        // Parent chains: every parent is an earlier record of the import.
        let mut earlier = HashSet::new();
        for r in &imported.records {
            if let Some(p) = &r.parent_uuid {
                assert!(earlier.contains(p.as_str()), "{name}: dangling parent {p}");
            }
            earlier.insert(r.uuid.as_deref().unwrap());
        }

        assert_eq!(
            imported.cwd.as_deref(),
            raw.iter().find_map(|l| l["cwd"].as_str()),
            "{name}"
        );
        assert_eq!(
            imported.source_session_id.as_deref(),
            raw.iter().find_map(|l| l["sessionId"].as_str()),
            "{name}"
        );
        assert_eq!(
            imported.first_timestamp.as_deref(),
            kept.iter().find_map(|l| l["timestamp"].as_str()),
            "{name}"
        );
    }
}

#[test]
fn split_assistant_responses_share_message_id() {
    let mut split = 0;
    for rel in [
        "spotter/short.jsonl",
        "spotter/tool_heavy.jsonl",
        "spotter/subagent.jsonl",
    ] {
        let text = fixture(rel);
        let mut raw: HashMap<String, usize> = HashMap::new();
        for l in conversation_lines(&text)
            .iter()
            .filter(|l| l["type"] == "assistant")
        {
            *raw.entry(l["message"]["id"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
        let imported = parse(&text).unwrap();
        let mut got: HashMap<String, usize> = HashMap::new();
        for r in &imported.records {
            if let Some(id) = &r.message_id {
                assert_eq!(r.kind, Some(RecordKind::Assistant));
                *got.entry(id.clone()).or_default() += 1;
            }
        }
        assert_eq!(got, raw, "{rel}");
        split += got.values().filter(|n| **n > 1).count();
    }
    assert!(split > 0, "the spotter fixtures hold split responses");
}

#[test]
fn image_blocks_survive() {
    let imported = parse(&fixture("line-kinds/user/image.jsonl")).unwrap();
    let raw = lines(&fixture("line-kinds/user/image.jsonl"));
    let raw_source = blocks_of(&raw[0])
        .into_iter()
        .find(|b| b["type"] == "image")
        .unwrap()["source"]
        .clone();
    let source = imported.records[0]
        .content
        .iter()
        .find_map(|b| match b {
            ContentBlock::Image { source, .. } => Some(source.clone()),
            _ => None,
        })
        .expect("image block");
    assert_eq!(serde_json::to_value(source).unwrap(), raw_source);
}

#[test]
fn is_error_survives_on_error_fixtures() {
    let mut checked = 0;
    for (path, text) in fixtures() {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        if !file.ends_with("_error.jsonl") {
            continue;
        }
        let imported = parse(&text).unwrap();
        let errored = imported
            .records
            .iter()
            .flat_map(|r| &r.content)
            .any(|b| matches!(b, ContentBlock::ToolResult { is_error: true, .. }));
        assert!(errored, "{file}");
        checked += 1;
    }
    assert!(checked >= 8);
}

#[test]
fn assistant_fields_and_usage() {
    let imported = parse(&fixture("line-kinds/assistant/assistant.jsonl")).unwrap();
    let r = &imported.records[0];
    assert_eq!(r.kind, Some(RecordKind::Assistant));
    let usage = r.usage.as_ref().unwrap();
    assert_eq!(
        Usage {
            cache_creation: None,
            service_tier: None,
            ..usage.clone()
        },
        Usage::of_counts(4, 2, 4756, 12008)
    );
    // The TTL split and the tier are kept as the line had them.
    assert_eq!(usage.cache_write_split(), Some((4756, 0)));
    assert_eq!(usage.service_tier, Some(json!("standard")));
    assert!(
        r.message_id
            .as_deref()
            .is_some_and(|id| id.starts_with("msg_"))
    );
    assert!(r.model.is_some());
    assert!(claude_code(r).get("requestId").is_some());

    let thinking = parse(&fixture("line-kinds/assistant/thinking.jsonl")).unwrap();
    assert!(thinking.records[0].content.iter().any(|b| matches!(
        b,
        ContentBlock::Thinking { signature, .. } if !signature.is_empty()
    )));
}

#[test]
fn malformed_lines_name_line_and_field() {
    let (line, msg) = malformed_line(parse("{\"type\":\"user\"}\nnot json"));
    assert_eq!(line, 1);
    assert!(msg.contains("message"), "{msg}");

    let ok = r#"{"type":"user","uuid":"a","message":{"role":"user","content":"hi"}}"#;
    // A line that is no JSON object is skipped and named, not fatal.
    let skipped = parse(&format!("{ok}\n\n   \nnot json\n[1,2]\n")).unwrap();
    assert_eq!(skipped.records.len(), 1);
    assert_eq!(skipped.stats.skipped["not_json"], 2);
    assert!(
        skipped.stats.warnings[0].contains("line 4 (not valid JSON")
            && skipped.stats.warnings[0].contains("line 5 (expected a JSON object"),
        "{:?}",
        skipped.stats.warnings
    );

    let (line, msg) = malformed_line(parse(&format!("{ok}\n{{\"uuid\":\"x\"}}")));
    assert_eq!((line, msg.contains("`type`")), (2, true), "{msg}");

    let bad_block = r#"{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{}}]}}"#;
    let (line, msg) = malformed_line(parse(&format!("{ok}\n{bad_block}")));
    assert_eq!(line, 2);
    assert!(
        msg.contains("message.content[0]") && msg.contains("`id`"),
        "{msg}"
    );

    let bad_inner = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"text":"x"}]}]}}"#;
    let (_, msg) = malformed_line(parse(bad_inner));
    assert!(
        msg.contains("message.content[0]") && msg.contains("`type` of a tool result block"),
        "{msg}"
    );

    let bad_uuid = r#"{"type":"user","uuid":7,"message":{"content":"x"}}"#;
    assert!(malformed_line(parse(bad_uuid)).1.contains("`uuid`"));

    let bad_ts = r#"{"type":"user","timestamp":"yesterday","message":{"content":"x"}}"#;
    assert!(malformed_line(parse(bad_ts)).1.contains("timestamp"));

    let bad_usage = r#"{"type":"assistant","message":{"content":"x","usage":{"input_tokens":-1}}}"#;
    assert!(malformed_line(parse(bad_usage)).1.contains("message.usage"));

    let bad_attachment = r#"{"type":"attachment","attachment":{"kind":"x"}}"#;
    assert!(
        malformed_line(parse(bad_attachment))
            .1
            .contains("attachment.type")
    );

    let wrong_role = r#"{"type":"user","message":{"content":[{"type":"tool_use","id":"t","name":"R","input":{}}]}}"#;
    assert!(
        malformed_line(parse(wrong_role))
            .1
            .contains("not allowed in a user line")
    );

    let bad_input = r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"R","input":"x"}]}}"#;
    assert!(
        malformed_line(parse(bad_input))
            .1
            .contains("message.content[0].input")
    );

    let spaced_uuid = r#"{"type":"user","uuid":"a b","message":{"content":"x"}}"#;
    assert!(malformed_line(parse(spaced_uuid)).1.contains("`uuid`"));

    assert!(matches!(parse(""), Err(ImportError::Empty)));
    assert!(matches!(parse("\n\n"), Err(ImportError::Empty)));
}

#[test]
fn relinks_over_skipped_lines() {
    let text = [
        r#"{"type":"progress","uuid":"p0","parentUuid":null}"#,
        r#"{"type":"user","uuid":"u1","parentUuid":"p0","message":{"content":"hi"}}"#,
        r#"{"type":"progress","uuid":"p1","parentUuid":"u1"}"#,
        r#"{"type":"progress","uuid":"p2","parentUuid":"p1"}"#,
        r#"{"type":"assistant","uuid":"a1","parentUuid":"p2","message":{"id":"m","content":"ok"}}"#,
        r#"{"type":"user","uuid":"e1","parentUuid":"a1","message":{"content":""}}"#,
        r#"{"type":"user","uuid":"u2","parentUuid":"e1","message":{"content":"next"}}"#,
        r#"{"type":"user","uuid":"u3","parentUuid":"elsewhere","message":{"content":"x"}}"#,
    ]
    .join("\n");
    let imported = parse(&text).unwrap();
    let parents: Vec<(Option<&str>, Option<&str>)> = imported
        .records
        .iter()
        .map(|r| (r.uuid.as_deref(), r.parent_uuid.as_deref()))
        .collect();
    assert_eq!(
        parents,
        [
            (Some("u1"), None),
            (Some("a1"), Some("u1")),
            (Some("u2"), Some("a1")),
            (Some("u3"), None),
        ]
    );
    assert_eq!(claude_code(&imported.records[1])["parentUuid"], "p2");
    assert_eq!(claude_code(&imported.records[3])["parentUuid"], "elsewhere");
    assert_eq!(imported.stats.skipped["progress"], 3);
    assert_eq!(imported.stats.skipped["empty:user"], 1);
}

#[test]
fn relinks_over_progress_lines_in_fixture() {
    let text = fixture("spotter/subagent.jsonl");
    let raw = lines(&text);
    let progress: HashMap<&str, Option<&str>> = raw
        .iter()
        .filter(|l| l["type"] == "progress")
        .map(|l| (l["uuid"].as_str().unwrap(), l["parentUuid"].as_str()))
        .collect();
    let imported = parse(&text).unwrap();
    let mut relinked = 0;
    for r in imported.records.iter().filter(|r| !r.is_sidechain) {
        let original = raw
            .iter()
            .find(|l| l["uuid"].as_str() == r.uuid.as_deref())
            .unwrap()["parentUuid"]
            .as_str();
        let Some(original) = original.filter(|p| progress.contains_key(p)) else {
            continue;
        };
        let mut expected = Some(original);
        while let Some(p) = expected.filter(|p| progress.contains_key(p)) {
            expected = progress[p];
        }
        assert_eq!(r.parent_uuid.as_deref(), expected);
        assert_eq!(claude_code(r)["parentUuid"], original);
        relinked += 1;
    }
    assert!(relinked > 0);
}

#[test]
fn compact_boundary_maps_to_system_data() {
    let text = [
        r#"{"type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"content":"hi"}}"#,
        r#"{"parentUuid":null,"logicalParentUuid":"u1","isSidechain":false,"userType":"external","cwd":"/w","sessionId":"s","version":"2.0.0","gitBranch":"main","type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"timestamp":"2026-01-01T00:01:00.000Z","uuid":"c1","level":"info","compactMetadata":{"trigger":"auto","preTokens":167123}}"#,
        r#"{"type":"user","uuid":"s1","parentUuid":"c1","isCompactSummary":true,"isVisibleInTranscriptOnly":true,"message":{"content":"summary"}}"#,
    ]
    .join("\n");
    let imported = parse(&text).unwrap();
    let boundary = &imported.records[1];
    assert_eq!(boundary.kind, Some(RecordKind::System));
    assert_eq!(boundary.subtype.as_deref(), Some("compact_boundary"));
    assert_eq!(
        boundary.data,
        Some(json!({
            "content": "Conversation compacted",
            "level": "info",
            "logical_parent_uuid": "u1",
            "trigger": "auto",
            "pre_tokens": 167123,
        }))
    );
    assert_eq!(boundary.parent_uuid, None);
    let summary = &imported.records[2];
    assert!(summary.is_compact_summary && summary.is_virtual);
    assert_eq!(summary.parent_uuid.as_deref(), Some("c1"));
    assert_eq!(imported.stats.system, 1);
    assert_eq!(imported.cwd.as_deref(), Some("/w"));
    assert_eq!(imported.source_session_id.as_deref(), Some("s"));
    assert_eq!(
        imported.first_timestamp.as_deref(),
        Some("2026-01-01T00:00:00.000Z")
    );
}

#[test]
fn system_lines_keep_payload_in_snake_case() {
    let imported = parse(&fixture("spotter/subagent.jsonl")).unwrap();
    let hook = imported
        .records
        .iter()
        .find(|r| r.subtype.as_deref() == Some("stop_hook_summary"))
        .expect("stop hook summary");
    let data = hook.data.as_ref().unwrap();
    assert_eq!(data["hook_count"], 3);
    assert!(data["tool_use_id"].is_string());
    assert!(data.get("sessionId").is_none() && data.get("session_id").is_none());

    let info = parse(&fixture("line-kinds/system/system_info.jsonl")).unwrap();
    assert_eq!(info.records[0].subtype.as_deref(), Some("informational"));
    assert_eq!(info.records[0].data.as_ref().unwrap()["level"], "info");
}

#[test]
fn blocks_are_kept_as_the_line_had_them() {
    let text = r#"{"type":"assistant","uuid":"a","message":{"id":"m","model":"<synthetic>","stop_sequence":null,"content":[{"type":"server_tool_use","id":"srv","name":"web_search","input":{"q":"x"}},{"type":"text","text":"t","cache_control":{"type":"ephemeral"},"citations":[1]},{"type":"tool_use","id":"t1","name":"Bash","input":{},"caller":{"type":"direct"}},{"type":"hologram","data":{"x":1}}]}}"#;
    let imported = parse(text).unwrap();
    let r = &imported.records[0];
    assert_eq!(r.model.as_deref(), Some("<synthetic>"));
    // Every block as it came, but the stale cache marker that ctxd places itself.
    assert_eq!(
        serde_json::to_value(&r.content).unwrap(),
        json!([
            {"type":"server_tool_use","id":"srv","name":"web_search","input":{"q":"x"}},
            {"type":"text","text":"t","citations":[1]},
            {"type":"tool_use","id":"t1","name":"Bash","input":{},"caller":{"type":"direct"}},
            {"type":"hologram","data":{"x":1}},
        ])
    );
    assert_eq!(
        r.message_extra,
        Some(serde_json::from_value(json!({"stop_sequence": null})).unwrap())
    );
    assert!(
        imported
            .stats
            .skipped
            .keys()
            .all(|k| !k.starts_with("block:"))
    );
    assert_eq!(imported.stats.tool_use, 1);
}

#[test]
fn duplicates_attachments_and_meta() {
    let text = [
        r#"{"type":"user","uuid":"u1","message":{"content":"a"},"toolUseResult":{"stdout":"x"},"permissionMode":"plan","version":"2.0"}"#,
        r#"{"type":"user","uuid":"u1","message":{"content":"again"}}"#,
        r#"{"type":"attachment","uuid":"t1","parentUuid":"u1","attachment":{"type":"date_change","date":"2026-01-02"}}"#,
        r#"{"type":"queue-operation","operation":"enqueue"}"#,
    ]
    .join("\n");
    let imported = parse(&text).unwrap();
    assert_eq!(imported.records.len(), 2);
    assert_eq!(imported.stats.skipped[DUPLICATE_UUID], 1);
    assert_eq!(
        imported.stats.warnings.len(),
        1,
        "{:?}",
        imported.stats.warnings
    );
    assert!(imported.stats.warnings[0].starts_with("1 line(s) repeat"));
    assert_eq!(imported.stats.skipped["queue-operation"], 1);
    assert_eq!(
        imported.records[0].meta,
        Some(json!({"claude_code": {"toolUseResult": {"stdout": "x"}, "permissionMode": "plan"}}))
    );
    let att = &imported.records[1];
    assert_eq!(att.kind, Some(RecordKind::Attachment));
    assert_eq!(
        att.attachment,
        Some(json!({"type":"date_change","date":"2026-01-02"}))
    );
    assert_eq!(att.parent_uuid.as_deref(), Some("u1"));
    assert_eq!(att.meta, None);
    assert_eq!(imported.stats.attachment, 1);
    assert_eq!(imported.stats.lines, 4);
}

#[test]
fn records_round_trip_through_the_wire_type() {
    // What the daemon receives must deserialize as a RecordInput (deny_unknown_fields).
    let imported = parse(&fixture("spotter/tool_heavy.jsonl")).unwrap();
    for r in &imported.records {
        let wire = serde_json::to_value(r).unwrap();
        let back: RecordInput = serde_json::from_value(wire).unwrap();
        assert_eq!(&back, r);
    }
}

/// Cut into pieces parsed apart, a transcript converts exactly as in one piece: the
/// same records, counts, relinks and warnings; duplicates are found across pieces; the
/// malformed line reported is the first in the file, numbered as in the file.
#[test]
fn pieces_parse_as_one() {
    let mut whole = String::new();
    for (_, text) in fixtures().iter().take(12) {
        whole.push_str(text);
        if !whole.ends_with('\n') {
            whole.push('\n');
        }
    }
    // A line repeated far from its first occurrence lands in another piece.
    let first_record = whole
        .lines()
        .find(|l| l.contains("\"uuid\"") && l.contains("\"type\":\"user\""))
        .unwrap()
        .to_string();
    whole.push_str(&first_record);
    whole.push('\n');
    let one = parse_in(&whole, chunks::split(&whole, 1, 1)).unwrap();
    assert!(
        one.stats
            .skipped
            .get(DUPLICATE_UUID)
            .is_some_and(|&n| n >= 1)
    );
    for parts in [2, 3, 7] {
        let pieces = chunks::split(&whole, parts, 1);
        assert!(pieces.len() > 1, "{parts} parts");
        assert_eq!(parse_in(&whole, pieces).unwrap(), one, "{parts} pieces");
    }

    // Two malformed lines, in different pieces: the first is reported, by its number.
    let mut lines: Vec<&str> = whole.lines().collect();
    let (early, late) = (lines.len() / 3, lines.len() * 5 / 6);
    lines[early] = r#"{"type":"user","uuid":"u-bad","message":{"role":"user","content":5}}"#;
    lines[late] = r#"{"uuid":"late"}"#;
    let broken = lines.join("\n");
    for parts in [1, 2, 5] {
        match parse_in(&broken, chunks::split(&broken, parts, 1)) {
            Err(ImportError::Malformed { line, .. }) => assert_eq!(line, early + 1),
            other => panic!("{parts} pieces: {other:?}"),
        }
    }
}

/// A transcript read from a file, a few bytes at a time, is what the same text gives
/// whole; a malformed line or byte is reported by its number in the file, and a text
/// over the bound is refused.
#[test]
fn a_transcript_read_in_pieces_is_the_same_as_whole() {
    let mut whole = String::new();
    for (_, text) in fixtures().iter().take(12) {
        whole.push_str(text);
        if !whole.ends_with('\n') {
            whole.push('\n');
        }
    }
    let one = parse(&whole).unwrap();
    for read_bytes in [1, 100, 4096, 1 << 20] {
        let read = read_in(whole.as_bytes(), u64::MAX, read_bytes).unwrap();
        assert_eq!(read, one, "{read_bytes} bytes at a time");
    }
    // No line end after the last line.
    let trimmed = whole.trim_end();
    assert_eq!(read_in(trimmed.as_bytes(), u64::MAX, 100).unwrap(), one);

    let mut lines: Vec<&str> = whole.lines().collect();
    let early = lines.len() / 3;
    lines[early] = r#"{"type":"user","uuid":"u-bad","message":{"role":"user","content":5}}"#;
    let broken = lines.join("\n");
    for read_bytes in [1, 100, 1 << 20] {
        match read_in(broken.as_bytes(), u64::MAX, read_bytes) {
            Err(ImportError::Malformed { line, .. }) => assert_eq!(line, early + 1),
            other => panic!("{read_bytes} bytes at a time: {other:?}"),
        }
    }

    let mut bytes = whole.as_bytes().to_vec();
    let at = bytes.len() / 2;
    bytes[at] = 0xff;
    let line = 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count();
    for read_bytes in [100, 1 << 20] {
        match read_in(&bytes[..], u64::MAX, read_bytes) {
            Err(ImportError::Malformed { line: l, message }) => {
                assert_eq!((l, message.as_str()), (line, "not valid UTF-8"));
            }
            other => panic!("{read_bytes} bytes at a time: {other:?}"),
        }
    }

    let max = whole.len() as u64 - 1;
    assert!(matches!(
        read_in(whole.as_bytes(), max, 4096),
        Err(ImportError::TooLong { max: m }) if m == max
    ));
    assert!(read_in(whole.as_bytes(), whole.len() as u64, 4096).is_ok());
}

/// A transcript that changed between the two reads is refused rather than imported
/// from a plan that does not describe it.
#[test]
fn a_transcript_that_changes_between_the_reads_is_refused() {
    let text = fixture("spotter/short.jsonl");
    let plan = plan_in(text.as_bytes(), u64::MAX, 4096, |_| {}).unwrap();
    let records = |t: &str| {
        records_in(t.as_bytes(), u64::MAX, 4096, &plan, |_| {
            Ok::<_, ImportError>(())
        })
    };
    assert!(records(&text).is_ok());
    let user = text
        .lines()
        .find(|l| l.contains("\"type\":\"user\""))
        .unwrap();
    let longer = format!("{text}\n{}\n", user.replace("\"uuid\":\"", "\"uuid\":\"0"));
    assert!(matches!(records(&longer), Err(ImportError::Changed)));
}

#[test]
fn recorded_call_lines_are_kept_as_system_records_with_their_fields() {
    let text =
        std::fs::read_to_string(format!("{FIXTURES}/../probe/claude-code-2.1.332.jsonl")).unwrap();
    let imported = parse(&text).unwrap();
    let raw = lines(&text);
    let mut kinds: Vec<&str> = Vec::new();
    for (record, line) in imported.records.iter().zip(&imported.source_lines) {
        let source = &raw[line - 1];
        let Some(subtype) = record.subtype.as_deref() else {
            continue;
        };
        if !super::super::claude_code_line::RECORDED_CALL_KINDS.contains(&subtype) {
            continue;
        }
        assert_eq!(source["type"], subtype);
        // Every field beyond the envelope, under its own name, with its own value.
        let data = record.data.as_ref().unwrap().as_object().unwrap();
        for (k, v) in source.as_object().unwrap() {
            if ctxd_protocol::CLAUDE_CODE_ENVELOPE.contains(&k.as_str()) {
                assert!(!data.contains_key(k), "{k}");
            } else {
                assert_eq!(&data[k], v, "{subtype}.{k}");
            }
        }
        match source["timestamp"].as_str() {
            Some(t) => assert_eq!(record.timestamp.as_deref(), Some(t)),
            // The time of the line before it.
            None => assert!(record.timestamp.is_some(), "{subtype} at line {line}"),
        }
        if !kinds.contains(&subtype) {
            kinds.push(subtype);
        }
    }
    kinds.sort_unstable();
    let mut all = super::super::claude_code_line::RECORDED_CALL_KINDS.to_vec();
    all.sort_unstable();
    assert_eq!(kinds, all, "the probe writes every kind");
    assert_eq!(
        imported.stats.skipped.keys().collect::<Vec<_>>(),
        ["queue-operation"]
    );

    // The 2.1.3xx fields of conversation lines stay on their records.
    let rendered = imported
        .records
        .iter()
        .find(|r| {
            r.kind == Some(RecordKind::Attachment) && claude_code(r).get("rendered").is_some()
        })
        .expect("an attachment with `rendered`");
    assert!(claude_code(rendered)["renderedRole"].is_string());
    let answer = imported
        .records
        .iter()
        .find(|r| r.kind == Some(RecordKind::Assistant))
        .unwrap();
    for key in ["requestRef", "requestedModel", "promptCacheRequested"] {
        assert!(claude_code(answer)[key].is_string(), "{key}");
    }
}
