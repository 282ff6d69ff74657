//! The compile path's own bookkeeping: when the budget's plan may be skipped.

use ctxd_protocol::{SessionCreateParams, ToolSpec};
use serde_json::json;

use crate::engine::test_support::{append, compile, engine};
use ctxd_pipeline::cache_prefix::KeyShape;

/// Once the plan has nothing to decide, turns of text keep it settled (the settled
/// inputs follow the transcript without a plan), and a tool result that arrives after
/// them is still decided at the next compile.
#[tokio::test]
async fn text_turns_keep_the_budget_settled_and_a_later_result_is_still_decided() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    let tool: ToolSpec = serde_json::from_value(json!({
        "name": "Fetch", "input_schema": {"type": "object"}, "max_result_size_chars": 1000}))
    .unwrap();
    let sid = engine
        .create_session(SessionCreateParams {
            cwd: dir.path().display().to_string(),
            no_git: true,
            tools: vec![tool],
            ..Default::default()
        })
        .await
        .unwrap()
        .session_id;
    let settled_at = || async {
        let cell = engine.cells.cell(&sid);
        let guard = cell.state.lock().await;
        let l = guard.as_ref().unwrap();
        let settled = l.budget_settled.as_ref().map(|b| b.records);
        (settled, l.records.len())
    };

    append(
        &engine,
        &sid,
        json!([{"type": "user", "content": "fetch the page"}]),
    )
    .await;
    compile(&engine, &sid).await;
    let (settled, len) = settled_at().await;
    assert_eq!(settled, Some(len));
    append(
        &engine,
        &sid,
        json!([
            {"type": "assistant", "message_id": "m1", "content": [{"type": "text", "text": "Which page?"}]},
            {"type": "user", "content": "the docs"},
        ]),
    )
    .await;
    let c = compile(&engine, &sid).await;
    assert!(c.metadata.replaced.is_empty());
    let (settled, len) = settled_at().await;
    assert_eq!(settled, Some(len), "the settled inputs follow the text");

    append(
        &engine,
        &sid,
        json!([
            {"type": "assistant", "message_id": "m2", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "Fetch", "input": {}}]},
            {"type": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x".repeat(5_000)}]},
        ]),
    )
    .await;
    let c = compile(&engine, &sid).await;
    assert_eq!(c.metadata.replaced, ["toolu_1"]);
}

/// The session's last request compiled again without the previous request's memo and
/// digest (every block serialised and compared afresh): its body and cache key, and the
/// cache key the session kept of the last compile.
async fn compiled_afresh(
    engine: &crate::engine::Engine,
    sid: &str,
) -> (String, KeyShape, KeyShape) {
    let cell = engine.cells.cell(sid);
    let guard = cell.state.lock().await;
    let l = guard.as_ref().unwrap();
    let kept = l.cache.previous.as_deref().unwrap().clone();
    let mut l = l.clone();
    l.cache.wire = None;
    l.cache.digest = None;
    let now = "2026-03-01T10:00:00Z".parse().unwrap();
    let c =
        crate::engine::compile::assemble(&l, None, &crate::engine::compile::Ask::at(now)).unwrap();
    (c.body, c.shape, kept)
}

/// `compiled_afresh`, checked against the compile that just returned `body`.
async fn assert_as_afresh(engine: &crate::engine::Engine, sid: &str, body: &str, what: &str) {
    let (fresh, fresh_shape, kept) = compiled_afresh(engine, sid).await;
    assert_eq!(body, fresh, "{what}");
    assert_eq!(kept, fresh_shape, "{what}: cache key");
}

/// A compile copies each block that is the transcript's own, at the same place as in the
/// previous request, without comparing it (its source says it is the same block): on
/// real sessions, turn after turn (an attachment, text, tool calls with results the
/// budget replaces, thinking, a typed prompt after each), the bytes are those of a
/// compile that compares every block.
#[tokio::test]
async fn a_compile_resumed_from_its_memo_writes_the_bytes_of_one_without() {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/claude-code");
    // One session shows short ids (snip): its typed messages carry them, worked out
    // once as the transcript takes each record in.
    for (fixture, snip) in [
        ("spotter/tool_heavy.jsonl", false),
        ("spotter/short.jsonl", true),
        ("spotter/subagent.jsonl", false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine(dir.path());
        let jsonl = std::fs::read_to_string(root.join(fixture)).unwrap();
        let (info, _) = engine
            .import_claude_code(ctxd_protocol::SessionImportParams {
                jsonl,
                path: None,
                cwd: None,
                fallback_cwd: Some(dir.path().display().to_string()),
                model: None,
                title: None,
            })
            .await
            .unwrap();
        let sid = info.session_id;
        if snip {
            let mut settings = info.settings;
            settings.snip_enabled = true;
            let update = ctxd_protocol::SessionUpdateParams::settings(&sid, settings);
            engine.update_session(update).await.unwrap();
        }
        let first = compile(&engine, &sid).await;
        assert_eq!(first.body.contains("[id:"), snip, "{fixture}");
        assert_as_afresh(&engine, &sid, &first.body, fixture).await;
        for turn in 0..6 {
            let id = format!("toolu_turn_{turn}");
            let result = if turn % 2 == 0 {
                "y".repeat(60_000)
            } else {
                format!("line {turn}")
            };
            append(
                &engine,
                &sid,
                json!([
                    {"type": "attachment", "is_meta": true, "attachment": {
                        "type": "nested_memory", "path": format!("/src/m{turn}/CLAUDE.md"),
                        "content": format!("rules for module {turn}")}},
                    {"type": "user", "content": format!("turn {turn}: go on")},
                    {"type": "assistant", "message_id": format!("m_turn_{turn}"), "content": [
                        {"type": "thinking", "thinking": "which file next", "signature": "sig"},
                        {"type": "text", "text": format!("Reading part {turn}.")},
                        {"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": "/tmp/x"}}]},
                    {"type": "user", "content": [
                        {"type": "tool_result", "tool_use_id": id, "content": result}]},
                ]),
            )
            .await;
            let c = compile(&engine, &sid).await;
            let what = format!("{fixture}, turn {turn}");
            assert_as_afresh(&engine, &sid, &c.body, &what).await;
            // And the same request again: every block copied.
            let again = compile(&engine, &sid).await;
            assert_eq!(again.body, c.body, "{what} again");
            assert_as_afresh(&engine, &sid, &again.body, &what).await;
        }
    }
}

/// Within one lineage a position always holds the same record: growing alone keeps the
/// lineage, growing while a copy shares the records takes a new one (the two may now
/// differ at the same position), and no two transcripts start with the same one.
#[test]
fn a_transcript_keeps_its_lineage_only_while_it_alone_grows() {
    let record = |uuid: &str| {
        ctxd_protocol::Record::new(
            ctxd_protocol::RecordKind::User,
            uuid,
            "2026-03-01T10:00:00Z",
            vec![ctxd_protocol::ContentBlock::text(uuid)],
        )
    };
    let mut t = crate::engine::Transcript::new(vec![record("a")]);
    let first = t.lineage();
    t.extend([record("b")]);
    assert_eq!(t.lineage(), first);
    let copy = t.clone();
    assert_eq!(copy.lineage(), first);
    t.extend([record("c")]);
    assert_ne!(t.lineage(), first);
    assert_eq!(copy.lineage(), first);
    assert_eq!(copy.len(), 2);
    assert_ne!(
        crate::engine::Transcript::new(Vec::new()).lineage(),
        crate::engine::Transcript::default().lineage()
    );
}
