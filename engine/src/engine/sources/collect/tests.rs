//! Attachment collection through the engine: the time bound, queued input around tool
//! pairs, the memory prefetch.

use std::sync::Arc;

use ctxd_protocol::{
    AppendParams, CompileParams, ContentBlock, QueueParams, QueuedParams, RecordInput, RecordKind,
    SessionCreateParams, SessionSettings, SourceStatus, TakeQueuedParams, ToolResultContent,
};
use serde_json::json;

use super::SourceFaults;
use crate::engine::{DiscoveryDefaults, Engine};
use ctxd_pipeline::clock::FixedClock;
use ctxd_store::Store;

struct Fixture {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    engine: Arc<Engine>,
}

fn fixture() -> Fixture {
    fixture_with(SourceFaults::default())
}

/// A fixture whose engine runs the failing sources `faults` names in every collection.
fn fixture_with(faults: SourceFaults) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let store = Store::open(&root.join("t.db")).unwrap();
    let clock = Arc::new(FixedClock("2026-03-01T10:00:00Z".parse().unwrap()));
    let engine = Engine::new(store, &root.join("home"), clock)
        .with_discovery(DiscoveryDefaults {
            managed_root: root.join("managed"),
            user_home: root.join("user"),
        })
        .with_source_faults(faults);
    std::fs::create_dir_all(root.join("work")).unwrap();
    Fixture {
        _dir: dir,
        root,
        engine: Arc::new(engine),
    }
}

impl Fixture {
    async fn session(&self, settings: serde_json::Value) -> String {
        let settings: SessionSettings = serde_json::from_value(settings).unwrap();
        self.engine
            .create_session(SessionCreateParams {
                cwd: self.root.join("work").display().to_string(),
                settings: Some(settings),
                start_date: Some("2026-03-01".into()),
                no_git: true,
                ..Default::default()
            })
            .await
            .unwrap()
            .session_id
    }

    async fn append(&self, sid: &str, records: Vec<serde_json::Value>) {
        let records: Vec<RecordInput> = records
            .into_iter()
            .map(|v| serde_json::from_value(v).unwrap())
            .collect();
        self.engine
            .append(AppendParams {
                session_id: sid.into(),
                agent_id: None,
                records,
                expected_last_uuid: None,
            })
            .await
            .unwrap();
    }

    /// Queues `text` for the session's main thread.
    async fn queue(&self, sid: &str, text: &str) {
        self.engine
            .queue_input(QueueParams {
                session_id: sid.into(),
                text: Some(text.into()),
                content: vec![],
                agent_id: None,
            })
            .await
            .unwrap();
    }

    async fn compile(&self, sid: &str) -> ctxd_protocol::CompileMetadata {
        self.engine
            .compile(CompileParams {
                session_id: sid.into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .metadata
    }

    async fn kinds(&self, sid: &str) -> Vec<String> {
        let recs = self
            .engine
            .read(ctxd_protocol::ReadParams {
                session_id: sid.into(),
                agent_id: None,
                after_seq: 0,
                limit: Some(1000),
            })
            .await
            .unwrap()
            .records;
        recs.iter()
            .map(|r| match r.kind {
                RecordKind::Attachment => {
                    let t = r.attachment.as_ref().unwrap()["type"]
                        .as_str()
                        .unwrap()
                        .to_string();
                    if r.is_sidechain {
                        format!("{t}@sidechain")
                    } else {
                        t
                    }
                }
                RecordKind::User
                    if r.content
                        .iter()
                        .any(|b| matches!(b, ContentBlock::ToolResult { .. })) =>
                {
                    "tool_result".into()
                }
                RecordKind::Assistant
                    if r.content
                        .iter()
                        .any(|b| matches!(b, ContentBlock::ToolUse { .. })) =>
                {
                    "tool_use".into()
                }
                k => format!("{k:?}").to_lowercase(),
            })
            .collect()
    }
}

fn prompt(text: &str) -> serde_json::Value {
    json!({"type": "user", "content": [{"type": "text", "text": text}]})
}

#[tokio::test]
async fn a_source_past_the_bound_is_skipped_and_reported() {
    let f = fixture_with(SourceFaults {
        stall: true,
        panic: false,
    });
    let sid = f
        .session(json!({"attachments": {"collect_timeout_ms": 50}}))
        .await;
    f.append(&sid, vec![prompt("hello")]).await;
    let m = f.compile(&sid).await;
    let names: Vec<&str> = m
        .attachment_sources
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "queued_commands",
            "at_mentions",
            "date_change",
            "changed_files",
            "nested_memory",
            "plan_mode",
            "task_reminder",
            "relevant_memories",
            "test_stall"
        ]
    );
    let stalled = m.attachment_sources.last().unwrap();
    assert_eq!(stalled.status, SourceStatus::Skipped);
    assert!(
        stalled.reason.as_deref().unwrap().contains("50 ms"),
        "{stalled:?}"
    );
    assert!(stalled.micros >= 50_000);
}

/// A source that panics is reported failed and adds nothing; a stalled one is still cut
/// off by the bound, and every other source lands as usual.
#[tokio::test]
async fn a_panicking_source_fails_alone() {
    let f = fixture_with(SourceFaults {
        stall: true,
        panic: true,
    });
    let sid = f
        .session(json!({"attachments": {"collect_timeout_ms": 50}}))
        .await;
    f.append(&sid, vec![prompt("hello")]).await;
    f.queue(&sid, "and the docs").await;
    let m = f.compile(&sid).await;
    let by_name = |n: &str| {
        m.attachment_sources
            .iter()
            .find(|s| s.name == n)
            .unwrap_or_else(|| panic!("no report for {n}: {:?}", m.attachment_sources))
    };
    let panicked = by_name("test_panic");
    assert_eq!(panicked.status, SourceStatus::Failed);
    assert_eq!(panicked.reason.as_deref(), Some("the source panicked"));
    assert_eq!(panicked.attachments, 0);
    assert_eq!(by_name("test_stall").status, SourceStatus::Skipped);
    let queued = by_name("queued_commands");
    assert_eq!((queued.status, queued.attachments), (SourceStatus::Ok, 1));
    assert!(
        m.attachment_sources
            .iter()
            .filter(|s| !s.name.starts_with("test_"))
            .all(|s| s.status == SourceStatus::Ok),
        "{:?}",
        m.attachment_sources
    );
    assert!(f.kinds(&sid).await.contains(&"queued_command".to_string()));
}
#[tokio::test]
async fn queued_input_waits_for_the_tool_results_and_stays_with_its_agent() {
    let f = fixture();
    let sid = f.session(json!({})).await;
    f.append(&sid, vec![
        prompt("refactor the parser"),
        json!({"type": "assistant", "message_id": "m1", "content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
            {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "pwd"}}]}),
        json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]}),
    ])
    .await;
    let q = |text: &str, agent: Option<&str>| QueueParams {
        session_id: sid.clone(),
        text: Some(text.into()),
        content: vec![],
        agent_id: agent.map(str::to_string),
    };
    // "main" names the main thread, as transcript.queued lists it.
    f.engine
        .queue_input(q("also update the docs", Some("main")))
        .await
        .unwrap();
    f.engine
        .queue_input(q("subagent: check the lexer", Some("agent-7")))
        .await
        .unwrap();
    // t2 has no result yet: nothing may go between the tool_use and its result.
    f.compile(&sid).await;
    assert!(!f.kinds(&sid).await.contains(&"queued_command".to_string()));
    f.append(&sid, vec![json!({"type": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "b"}]})]).await;
    let m = f.compile(&sid).await;
    assert_eq!(m.attachments_added.len(), 1);
    assert_eq!(
        f.kinds(&sid).await,
        [
            "user",
            "tool_use",
            "tool_result",
            "tool_result",
            "queued_command"
        ]
    );
    // Delivered once; the sub-agent's entry is still waiting for it.
    f.compile(&sid).await;
    let left = f
        .engine
        .queued(QueuedParams {
            session_id: sid.clone(),
            agent_id: None,
        })
        .await
        .unwrap();
    assert_eq!(left.entries.len(), 1);
    assert_eq!(left.entries[0].agent_id.as_deref(), Some("agent-7"));
    let taken = f
        .engine
        .take_queued(TakeQueuedParams {
            session_id: sid.clone(),
            agent_id: "agent-7".into(),
        })
        .await
        .unwrap();
    assert_eq!(taken.records.len(), 1);
    assert!(taken.texts[0].contains("subagent: check the lexer"));
    assert_eq!(
        f.kinds(&sid).await.last().unwrap(),
        "queued_command@sidechain"
    );
    assert!(
        f.engine
            .queued(QueuedParams {
                session_id: sid.clone(),
                agent_id: None
            })
            .await
            .unwrap()
            .entries
            .is_empty()
    );
    // Bad input changes nothing.
    let err = f
        .engine
        .queue_input(QueueParams {
            session_id: sid.clone(),
            text: None,
            content: vec![],
            agent_id: None,
        })
        .await;
    assert!(err.is_err());
}

#[tokio::test]
async fn the_memory_prefetch_is_consumed_once_and_never_repeats_a_file() {
    let f = fixture();
    let work = f.root.join("work");
    let mem = crate::discovery::memories::auto_memory_dir(&f.root.join("user"), &work);
    std::fs::create_dir_all(&mem).unwrap();
    std::fs::write(
        mem.join("MEMORY.md"),
        "- [sqlite](sqlite.md): schema notes\n",
    )
    .unwrap();
    std::fs::write(
        mem.join("sqlite.md"),
        "---\nname: sqlite-migrations\ndescription: How schema migrations work here\n---\nMigrations are append-only.\n",
    )
    .unwrap();
    std::fs::write(
        mem.join("deploy.md"),
        "---\nname: deploy\ndescription: Release steps\n---\nTag and push.\n",
    )
    .unwrap();
    let sid = f
        .session(json!({"attachments": {"collect_timeout_ms": 10000}}))
        .await;
    f.append(
        &sid,
        vec![prompt("add a sqlite migration for the new table")],
    )
    .await;
    let m = f.compile(&sid).await;
    let report = m
        .attachment_sources
        .iter()
        .find(|s| s.name == "relevant_memories")
        .unwrap();
    assert_eq!((report.status, report.attachments), (SourceStatus::Ok, 1));
    // Consumed by the compile that wrote it: the next compile does not take it again.
    assert_eq!(f.engine.memories.state(&sid), Some(true));
    let again = f.compile(&sid).await;
    let report = again
        .attachment_sources
        .iter()
        .find(|s| s.name == "relevant_memories")
        .unwrap();
    assert_eq!((report.status, report.attachments), (SourceStatus::Ok, 0));
    let kinds = f.kinds(&sid).await;
    assert_eq!(
        kinds.iter().filter(|k| *k == "relevant_memories").count(),
        1,
        "{kinds:?}"
    );
    let recs = f
        .engine
        .read(ctxd_protocol::ReadParams {
            session_id: sid.clone(),
            agent_id: None,
            after_seq: 0,
            limit: Some(100),
        })
        .await
        .unwrap()
        .records;
    let att = recs
        .iter()
        .find_map(|r| {
            r.attachment
                .clone()
                .filter(|a| a["type"] == "relevant_memories")
        })
        .unwrap();
    assert_eq!(att["memories"].as_array().unwrap().len(), 1);
    assert!(
        att["memories"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("sqlite.md")
    );
    // The same topic again: the file is not shown twice.
    f.append(
        &sid,
        vec![
            json!({"type": "assistant", "content": [{"type": "text", "text": "done"}]}),
            prompt("one more sqlite migration"),
        ],
    )
    .await;
    f.compile(&sid).await;
    let kinds = f.kinds(&sid).await;
    assert_eq!(
        kinds.iter().filter(|k| *k == "relevant_memories").count(),
        1,
        "{kinds:?}"
    );
    let _ = ToolResultContent::Text(String::new());
}

/// A collection keeps what the last one read from the store while nothing it reads has
/// been written since, and reads again after any such write.
#[tokio::test]
async fn the_collection_keeps_its_rows_until_what_it_reads_is_written() {
    let f = fixture();
    let sid = f.session(json!({})).await;
    f.append(&sid, vec![prompt("refactor the parser")]).await;
    f.compile(&sid).await;
    // Stored behind the engine's back, without the note every store function that
    // writes these tables makes: the kept rows hide it, which shows they are kept.
    let hidden = format!(
        "INSERT INTO queued_input (session_id, queue_id, agent_id, content, queued_at)
         VALUES ('{sid}', '00000000-0000-0000-0000-000000000001', '',
                 '[{{\"type\":\"text\",\"text\":\"hidden\"}}]', '2026-03-01T10:00:00Z')"
    );
    f.engine
        .store
        .write(&sid, move |db| {
            db.execute(&hidden, &[])?;
            Ok(())
        })
        .await
        .unwrap();
    let m = f.compile(&sid).await;
    assert!(m.attachments_added.is_empty(), "{:?}", m.attachments_added);
    // Queuing through the engine notes its write: the next collection reads again and
    // finds both entries.
    f.queue(&sid, "also update the docs").await;
    let m = f.compile(&sid).await;
    assert_eq!(m.attachments_added.len(), 2, "{:?}", f.kinds(&sid).await);
}
