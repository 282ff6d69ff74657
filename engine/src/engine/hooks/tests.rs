//! Tests of the engine's side of hooks (`mod.rs`).

use super::*;
use crate::hooks::config::Layer;
use ctxd_pipeline::sync::lock;

/// Many sessions on a daemon holding few: the hook state (facts, configuration,
/// watches) stays within the loaded-sessions bound, and the user's settings file is
/// parsed once for all of them.
#[tokio::test]
async fn hook_state_is_bounded_and_settings_are_shared() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("user");
    let project = dir.path().join("proj");
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        home.join(".claude").join("settings.json"),
        r#"{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "true"}]}],
            "FileChanged": [{"matcher": ".envrc", "hooks": [{"type": "command", "command": "true"}]}]}}"#,
    )
    .unwrap();
    let store = ctxd_store::Store::open(&dir.path().join("t.db")).unwrap();
    let engine = Engine::new(
        store,
        dir.path(),
        Arc::new(ctxd_pipeline::clock::SystemClock),
    )
    .with_limits(ctxd_pipeline::limits::Limits {
        max_loaded_sessions: 3,
        ..Default::default()
    })
    .with_discovery(crate::engine::DiscoveryDefaults {
        managed_root: dir.path().join("managed"),
        user_home: home,
    });
    let mut ids = Vec::new();
    for _ in 0..30 {
        ids.push(crate::engine::test_support::session(&engine, &project).await);
    }
    for id in &ids {
        engine.hooks_list(id).await.unwrap();
    }
    let (sessions, layers) = engine.hooks.counts();
    assert!(sessions <= 3, "hook state of {sessions} sessions");
    // One parsed copy per file (managed, user, project, local), whatever the sessions.
    assert!(layers <= 4, "{layers} parsed settings files");
    // Settings files (4) and the FileChanged target: no watch per session beyond.
    {
        let watched = lock(&engine.hooks.watched);
        assert!(watched.len() <= 5, "{} watched paths", watched.len());
        assert!(watched.values().all(|i| i.settings.len() <= 3));
        let kept = lock(&engine.hooks.sessions);
        let user_layers: Vec<&Arc<Layer>> = kept
            .values()
            .filter_map(|s| s.config.as_ref().map(|c| &c.layers[1]))
            .collect();
        assert!(user_layers.len() >= 2);
        assert!(user_layers.windows(2).all(|w| Arc::ptr_eq(w[0], w[1])));
    }
    // Deleting every session forgets the rest, and the parsed files with it.
    for id in &ids {
        engine.delete_session(id).await.unwrap();
    }
    assert_eq!(engine.hooks.counts(), (0, 0));
    assert!(lock(&engine.hooks.watched).is_empty());
}

/// An export that fails part-way is redone whole: the file never keeps a torn or
/// repeated page.
#[tokio::test]
async fn a_failed_transcript_export_is_redone_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = ctxd_store::Store::open(&dir.path().join("t.db")).unwrap();
    let engine = Engine::new(
        store,
        dir.path(),
        Arc::new(ctxd_pipeline::clock::SystemClock),
    );
    let project = dir.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let sid = crate::engine::test_support::session(&engine, &project).await;
    let append = |text: &str| {
        let record: ctxd_protocol::RecordInput =
            serde_json::from_value(serde_json::json!({"type": "user", "content": text})).unwrap();
        engine.append(ctxd_protocol::AppendParams {
            session_id: sid.clone(),
            agent_id: None,
            records: vec![record],
            expected_last_uuid: None,
        })
    };
    let path = dir.path().join("export.jsonl");
    let lines = || std::fs::read_to_string(&path).unwrap().lines().count();
    append("one").await.unwrap();
    append("two").await.unwrap();
    let f = engine.hook_facts(&sid).await.unwrap();
    engine
        .hooks
        .export_transcript(&engine.store, &f, &path)
        .await
        .unwrap();
    assert_eq!(lines(), 2);
    // The write fails (a directory where the file was): the mark is forgotten.
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    append("three").await.unwrap();
    assert!(
        engine
            .hooks
            .export_transcript(&engine.store, &f, &path)
            .await
            .is_err()
    );
    std::fs::remove_dir(&path).unwrap();
    std::fs::write(&path, "{\"torn\": ").unwrap();
    engine
        .hooks
        .export_transcript(&engine.store, &f, &path)
        .await
        .unwrap();
    assert_eq!(lines(), 3, "rewritten whole, the torn line gone");
    append("four").await.unwrap();
    engine
        .hooks
        .export_transcript(&engine.store, &f, &path)
        .await
        .unwrap();
    assert_eq!(lines(), 4, "then appended again");
}
