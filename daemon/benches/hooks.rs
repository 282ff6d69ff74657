//! `cargo bench -p ctxd --bench hooks`: what hooks cost per event (issue 12).
//!
//! 1. `PreToolUse` when the session has no settings file at all;
//! 2. `PreToolUse` when settings configure hooks, none matching this tool;
//! 3. `PreToolUse` with one trivial hook (`true`) that matches;
//! 4. appending a typed prompt with no `UserPromptSubmit` hook, against the same append
//!    with hooks switched off for the session (`settings.hooks.disabled`), so the
//!    difference is what the hook check adds to the append path.
//!
//! Medians over `CTXD_BENCH_ITERS` (default 500; the `true` hook 1/5 of that).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it did not expect

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxd_engine::Store;
use ctxd_engine::{DiscoveryDefaults, Engine};
use ctxd_pipeline::clock::SystemClock;
use ctxd_protocol::*;

fn iters() -> usize {
    std::env::var("CTXD_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn write_settings(project: &Path, v: serde_json::Value) {
    let dir = project.join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("settings.json"), v.to_string()).unwrap();
}

async fn session(engine: &Engine, cwd: &Path, settings: Option<SessionSettings>) -> String {
    std::fs::create_dir_all(cwd).unwrap();
    engine
        .create_session(SessionCreateParams {
            cwd: cwd.display().to_string(),
            no_git: true,
            settings,
            ..Default::default()
        })
        .await
        .unwrap()
        .session_id
}

async fn pre_tool_use(engine: &Engine, sid: &str, n: usize) -> (Duration, u32) {
    let mut times = Vec::with_capacity(n);
    let mut ran = 0;
    for _ in 0..n {
        let t = Instant::now();
        let o = engine
            .hooks_pre_tool_use(PreToolUseParams {
                session_id: sid.to_string(),
                tool_name: "Bash".into(),
                tool_input: serde_json::json!({"command": "ls"}),
                tool_use_id: None,
            })
            .await
            .unwrap();
        times.push(t.elapsed());
        ran = o.ran;
    }
    (median(times), ran)
}

async fn appends(engine: &Engine, sid: &str, n: usize) -> Duration {
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        engine
            .append(AppendParams {
                session_id: sid.to_string(),
                agent_id: None,
                records: vec![RecordInput {
                    kind: Some(RecordKind::User),
                    content: vec![ContentBlock::text(format!("prompt {i}"))],
                    ..RecordInput::default()
                }],
                expected_last_uuid: None,
            })
            .await
            .unwrap();
        times.push(t.elapsed());
    }
    median(times)
}

#[tokio::main]
async fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path();
    let store = Store::open(&tmp.join("h.db")).unwrap();
    let engine = Arc::new(
        Engine::new(store, tmp, Arc::new(SystemClock)).with_discovery(DiscoveryDefaults {
            managed_root: tmp.join("managed"),
            user_home: tmp.join("user-home"),
        }),
    );
    engine.start_watching().await.unwrap();
    let n = iters();

    let bare = session(&engine, &tmp.join("bare"), None).await;
    let (t, ran) = pre_tool_use(&engine, &bare, n).await;
    assert_eq!(ran, 0);
    println!("hooks    PreToolUse, no settings file:              median {t:?} per event");

    let other = tmp.join("other");
    write_settings(
        &other,
        serde_json::json!({"hooks": {
            "PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "true"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "true"}]}]
        }}),
    );
    let other = session(&engine, &other, None).await;
    let (t, ran) = pre_tool_use(&engine, &other, n).await;
    assert_eq!(ran, 0);
    println!("hooks    PreToolUse, hooks configured, none match:  median {t:?} per event");

    let trivial = tmp.join("trivial");
    write_settings(
        &trivial,
        serde_json::json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}),
    );
    let trivial = session(&engine, &trivial, None).await;
    let (t, ran) = pre_tool_use(&engine, &trivial, (n / 5).max(10)).await;
    assert_eq!(ran, 1);
    println!("hooks    PreToolUse, one `true` hook:               median {t:?} per event");

    let off = session(
        &engine,
        &tmp.join("off"),
        Some(SessionSettings {
            hooks: HookSettings {
                disabled: true,
                ..HookSettings::default()
            },
            ..SessionSettings::default()
        }),
    )
    .await;
    let checked = session(&engine, &tmp.join("checked"), None).await;
    // Interleaved rounds so drift (other load, the WAL growing) hits both alike.
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        a.push(appends(&engine, &off, n / 5).await);
        b.push(appends(&engine, &checked, n / 5).await);
    }
    let (a, b) = (median(a), median(b));
    println!(
        "hooks    append of a typed prompt: hooks disabled {a:?}, no hook configured {b:?} (check adds {:?})",
        b.saturating_sub(a)
    );
}
