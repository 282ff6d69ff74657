//! `ctx memory-worker`: an external session-memory extractor. It subscribes to sessions,
//! and on each `extraction_due` reads the transcript after the last summarised record,
//! runs the configured summariser's extraction, and writes the memory back with an
//! optimistic version check (a stale write is refused and skipped).

use anyhow::{Context, Result};
use ctx_client::Client;
use ctxd_protocol::*;
use ctxd_providers::{Summariser, SummaryInput};
use futures::StreamExt;

async fn all_records(client: &Client, sid: &str) -> Result<Vec<Record>> {
    let mut out = Vec::new();
    let mut after = 0;
    loop {
        let page = client
            .transcript_read(ReadParams {
                session_id: sid.to_string(),
                agent_id: None,
                after_seq: after,
                limit: Some(5000),
            })
            .await?;
        out.extend(page.records);
        match page.next_after_seq {
            Some(n) => after = n,
            None => return Ok(out),
        }
    }
}

/// One extraction for `sid`; returns the new version, or `None` when nothing was new or
/// the write lost a race.
pub async fn extract_once(
    client: &Client,
    sid: &str,
    summariser: &Summariser,
) -> Result<Option<u64>> {
    let mem: MemoryGetResponse = client
        .call(
            MEMORY_GET,
            SessionIdParams {
                session_id: sid.to_string(),
            },
        )
        .await?;
    let records = all_records(client, sid).await?;
    let start_boundary = records
        .iter()
        .rposition(|r| {
            r.kind == RecordKind::System && r.subtype.as_deref() == Some("compact_boundary")
        })
        .map_or(0, |i| i + 1);
    let view: Vec<&Record> = records[start_boundary..]
        .iter()
        .filter(|r| !r.is_sidechain && !r.is_virtual)
        .collect();
    let start = mem
        .last_summarized_uuid
        .as_deref()
        .and_then(|u| view.iter().position(|r| r.uuid == u))
        .map_or(0, |i| i + 1);
    let new = &view[start..];
    if new.is_empty() {
        return Ok(None);
    }
    let messages = ctxd_pipeline::normalize::normalize(
        new,
        &ctxd_pipeline::normalize::NormalizeOptions {
            supports_thinking: true,
            rejected_media: &Default::default(),
            short_ids: false,
            transcript: None,
        },
    )
    .into_owned_messages();
    let document = summariser
        .extract(
            &mem.document,
            SummaryInput {
                records: new,
                messages: &messages,
                custom_instructions: None,
                head_truncated: false,
                max_summary_tokens: ctxd_pipeline::session_memory::MAX_TOTAL_TOKENS,
            },
        )
        .await
        .map_err(|e| anyhow::anyhow!("extraction for {sid}: {e}"))?;
    let last = ctxd_pipeline::session_memory::safe_last_summarized(&view);
    let r: Result<MemoryUpdateResponse, _> = client
        .call(
            MEMORY_UPDATE,
            MemoryUpdateParams {
                session_id: sid.to_string(),
                document,
                expected_version: mem.version,
                last_summarized_uuid: last,
                writer: Some(format!("worker:{}", summariser.kind())),
            },
        )
        .await;
    match r {
        Ok(v) => Ok(Some(v.version)),
        Err(ctx_client::ClientError::Rpc { code, .. }) if code == CONFLICT => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Serves the given sessions (all existing ones when empty) until interrupted.
pub async fn run(
    socket: &std::path::Path,
    sessions: Vec<String>,
    cfg: SummariserConfig,
    once: bool,
) -> Result<()> {
    let client = Client::connect(socket).await?;
    let summariser = Summariser::new(&cfg, None).map_err(|e| anyhow::anyhow!("summariser: {e}"))?;
    let sessions = if sessions.is_empty() {
        client
            .session_list(ctxd_protocol::SessionListParams {
                limit: Some(10_000),
            })
            .await
            .map(|r| r.sessions)?
            .into_iter()
            .map(|s| s.session_id)
            .collect()
    } else {
        sessions
    };
    if once {
        for sid in &sessions {
            let v = extract_once(&client, sid, &summariser).await?;
            println!(
                "{sid}: {}",
                v.map_or("nothing new".to_string(), |v| format!("memory version {v}"))
            );
        }
        return Ok(());
    }
    let mut streams = Vec::new();
    for sid in &sessions {
        streams.push(
            client
                .subscribe(sid)
                .await
                .with_context(|| format!("subscribing to {sid}"))?,
        );
    }
    eprintln!(
        "memory worker: serving {} session(s) with the {} extractor",
        sessions.len(),
        summariser.kind()
    );
    let mut merged = futures::stream::select_all(streams);
    while let Some(ev) = merged.next().await {
        let Ok(SessionEvent::ExtractionDue { session_id, .. }) = ev else {
            continue;
        };
        match extract_once(&client, &session_id, &summariser).await {
            Ok(Some(v)) => eprintln!("{session_id}: wrote memory version {v}"),
            Ok(None) => {
                eprintln!("{session_id}: nothing written (nothing new, or a newer version exists)");
            }
            Err(e) => eprintln!("{session_id}: {e:#}"),
        }
    }
    Ok(())
}
