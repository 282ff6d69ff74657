//! What the engine's unit tests start from (tests only).

use std::path::Path;

use ctxd_protocol::SessionCreateParams;

use crate::engine::Engine;

/// A session in `dir`, outside git.
pub(crate) async fn session(engine: &Engine, dir: &Path) -> String {
    engine
        .create_session(SessionCreateParams {
            cwd: dir.display().to_string(),
            no_git: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .session_id
}

/// An engine on a fresh store in `dir`, its clock fixed.
pub(crate) fn engine(dir: &Path) -> Engine {
    let store = ctxd_store::Store::open(&dir.join("t.db")).unwrap();
    let clock = std::sync::Arc::new(ctxd_pipeline::clock::FixedClock(
        "2026-03-01T10:00:00Z".parse().unwrap(),
    ));
    Engine::new(store, &dir.join("home"), clock)
}

/// Appends `records`, given as the JSON of `RecordInput`s.
pub async fn append(engine: &Engine, sid: &str, records: serde_json::Value) {
    let records: Vec<ctxd_protocol::RecordInput> = serde_json::from_value(records).unwrap();
    engine
        .append(ctxd_protocol::AppendParams {
            session_id: sid.into(),
            agent_id: None,
            records,
            expected_last_uuid: None,
        })
        .await
        .unwrap();
}

/// Compiles the session's next request.
pub async fn compile(engine: &Engine, sid: &str) -> ctxd_pipeline::compile::Compiled {
    engine
        .compile(ctxd_protocol::CompileParams {
            session_id: sid.into(),
            ..Default::default()
        })
        .await
        .unwrap()
}
