//! Import of a Claude Code transcript as a new session.

use std::collections::BTreeMap;

use ctxd_protocol::*;

use super::Engine;
use super::session::materialise;
use super::validate::validate_from;
use crate::error::{Error, Result};
use crate::import::chunks;
use crate::pipeline::budget::Fate;
use crate::store::context_state::{self, InstructionMemo};
use crate::store::{fates, records, sessions};

/// Fewer records than this are checked and serialised on one thread: a thread costs more
/// than it saves.
const MIN_RECORDS_PER_PIECE: usize = 64;

/// An import's records, checked, numbered from the first and serialised before the write.
struct Prepared {
    records: Vec<Record>,
    /// `records[i]` as the JSON stored for it.
    bodies: Vec<String>,
}

/// Checks, numbers and serialises the records of a new session's transcript. The checks
/// and the serialising run on separate threads, and so off the store's writer, which then
/// only stores rows: the writer serves every session, and an import is its longest write.
fn prepare(mut inputs: Vec<RecordInput>, now: &str) -> Result<Prepared> {
    let len = chunks::slice_len(inputs.len(), MIN_RECORDS_PER_PIECE);
    // The parse has already dropped repeated uuids, so no slice can repeat another's.
    let checked = chunks::map(inputs.chunks_mut(len).enumerate(), |(k, slice)| {
        validate_from(slice, k * len)
    });
    for result in checked {
        result.map_err(|e| match e {
            Error::Invalid { field, message } => Error::invalid(format!("jsonl: {field}"), message),
            other => other,
        })?;
    }
    let records = materialise(inputs, None, now);
    let serialised = chunks::map(records.chunks(len), |slice| {
        slice
            .iter()
            .map(serde_json::to_string)
            .collect::<serde_json::Result<Vec<String>>>()
    });
    let mut bodies = Vec::with_capacity(records.len());
    for slice in serialised {
        bodies.extend(slice?);
    }
    Ok(Prepared { records, bodies })
}

impl Engine {
    /// Imports a Claude Code transcript as a new session, all or nothing.
    pub async fn import_claude_code(
        &self,
        mut p: SessionImportParams,
    ) -> Result<(SessionInfo, ImportStats)> {
        // Milliseconds of CPU for a long transcript: off the async workers.
        let jsonl = std::mem::take(&mut p.jsonl);
        let now = self.now_text();
        let stamp = now.clone();
        let (imported, prepared) = tokio::task::spawn_blocking(move || {
            let mut imported = crate::import::claude_code::parse(&jsonl)
                .map_err(|e| Error::invalid("jsonl", e.to_string()))?;
            let inputs = std::mem::take(&mut imported.records);
            let prepared = prepare(inputs, &stamp)?;
            Ok::<_, Error>((imported, prepared))
        })
        .await
        .map_err(|e| Error::Internal(format!("import task: {e}")))??;
        let cwd = p
            .cwd
            .or(imported.cwd)
            .or(p.fallback_cwd)
            .ok_or_else(|| Error::invalid("cwd", "the transcript names no cwd; pass one"))?;
        let start_date = imported
            .first_timestamp
            .as_deref()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.format("%Y-%m-%d").to_string());
        let row = self
            .new_row(&SessionCreateParams {
                cwd,
                model: p.model,
                settings: None,
                additional_directories: vec![],
                system: None,
                tools: vec![],
                title: p
                    .title
                    .or(imported.source_session_id.map(|s| format!("import of {s}"))),
                start_date,
                no_git: true,
            })
            .await?;
        // Like Claude Code on resume: every imported result counts as already seen, kept
        // whole unless a content-replacement line says what the model saw instead.
        let mut import_fates: BTreeMap<String, Fate> = prepared
            .records
            .iter()
            .flat_map(|r| r.content.iter())
            .filter_map(|b| match b {
                ContentBlock::ToolResult { tool_use_id, .. } => {
                    Some((tool_use_id.clone(), Fate::Kept))
                }
                _ => None,
            })
            .collect();
        for (id, rep) in imported.replacements {
            import_fates.insert(id, Fate::Replaced(rep));
        }
        let import_fates: Vec<(String, Fate)> = import_fates.into_iter().collect();
        let (claude_md, loaded) = self.startup_instructions(&row).await?;
        let seq = prepared.records.last().map_or(0, |b| b.seq);
        let memo = InstructionMemo {
            claude_md,
            boundary_uuid: super::last_boundary_uuid(&prepared.records),
            announced_date: row.start_date.clone(),
        };
        let r = row.clone();
        let prepared = self
            .store
            .write(&row.id, move |tx| {
                sessions::insert(tx, &r)?;
                records::insert_serialised(tx, &r.id, &prepared.records, &prepared.bodies)?;
                sessions::touch(tx, &r.id, &now)?;
                fates::insert(tx, &r.id, fates::BUDGET, &import_fates, seq)?;
                context_state::set_memo(tx, &r.id, &memo)?;
                context_state::add_loaded(tx, &r.id, &loaded)?;
                // Handed back, so that freeing them is not the writer's time.
                Ok(prepared)
            })
            .await?;
        drop(prepared);
        let info = self.get_session(&row.id).await?;
        for w in &imported.stats.warnings {
            tracing::warn!(session = %row.id, "import: {w}");
        }
        Ok((info, imported.stats))
    }
}
