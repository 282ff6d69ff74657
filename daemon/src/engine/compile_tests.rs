//! The compile path's own bookkeeping: when the budget's plan may be skipped.

use ctxd_protocol::{SessionCreateParams, ToolSpec};
use serde_json::json;

use crate::engine::test_support::{append, compile, engine};

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
        let cell = engine.cell(&sid);
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
