//! Import of a Claude Code transcript as a new session.

use std::collections::BTreeMap;

use ctxd_protocol::*;

use super::Engine;
use super::session::materialise;
use super::validate::{check_stored_size, validate_fields_from};
use crate::error::{Error, Result};
use crate::import::chunks;
use crate::pipeline::budget::Fate;
use crate::store::context_state::{self, InstructionMemo};
use crate::store::{fates, records, sessions};

/// Fewer records than this are checked and serialised on one thread: a thread costs more
/// than it saves.
const MIN_RECORDS_PER_PIECE: usize = 16;

/// An import's records, checked, numbered from the first and made into rows before the
/// write, with what the session's state needs of them.
struct Prepared {
    rows: Vec<records::Row>,
    /// The `tool_use_id` of every tool result, in order.
    results: Vec<String>,
    /// The uuid of the last compact boundary ("" for none).
    boundary_uuid: String,
}

/// Checks, numbers and serialises the records of a new session's transcript. The checks
/// and the serialising run on separate threads, and so off the store's writer, which then
/// only stores rows: the writer serves every session, and an import is its longest write.
/// The records' content is freed there too, as each becomes its row.
fn prepare(mut inputs: Vec<RecordInput>, now: &str) -> Result<Prepared> {
    let len = chunks::slice_len(inputs.len(), MIN_RECORDS_PER_PIECE);
    // The parse has already dropped repeated uuids, so no slice can repeat another's.
    // Each record's size is checked on its row's body below: serialised once, not twice.
    let checked = chunks::map(inputs.chunks_mut(len).enumerate(), |(k, slice)| {
        validate_fields_from(slice, k * len)
    });
    for result in checked {
        result.map_err(in_jsonl)?;
    }
    let mut records = materialise(inputs, None, now);
    let results = records
        .iter()
        .flat_map(|r| r.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.clone()),
            _ => None,
        })
        .collect();
    let boundary_uuid = super::last_boundary_uuid(&records);
    // Owned slices, each with the index of its first record, so that each record is
    // moved into its row and freed on the thread that made it.
    let mut slices = Vec::new();
    while records.len() > len {
        let at = records.len() - len;
        slices.push((at, records.split_off(at)));
    }
    slices.push((0, records));
    slices.reverse();
    let made = chunks::map(slices, |(first, slice)| {
        slice
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let row = records::Row::of(r)?;
                check_stored_size(first + i, row.body.len())?;
                Ok(row)
            })
            .collect::<Result<Vec<_>>>()
    });
    let mut rows = Vec::with_capacity(made.iter().map(|m| m.as_ref().map_or(0, Vec::len)).sum());
    for slice in made {
        rows.extend(slice.map_err(in_jsonl)?);
    }
    Ok(Prepared {
        rows,
        results,
        boundary_uuid,
    })
}

/// A record's error as the import reports it: its field within the file's records.
fn in_jsonl(e: Error) -> Error {
    match e {
        Error::Invalid { field, message } => Error::invalid(format!("jsonl: {field}"), message),
        other => other,
    }
}

impl Engine {
    /// Imports a Claude Code transcript as a new session, all or nothing.
    pub async fn import_claude_code(
        &self,
        mut p: SessionImportParams,
    ) -> Result<(SessionInfo, ImportStats)> {
        // Milliseconds of CPU for a long transcript: off the async workers.
        let jsonl = std::mem::take(&mut p.jsonl);
        let stamp = self.now_text();
        let (imported, mut prepared) = tokio::task::spawn_blocking(move || {
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
        let mut import_fates: BTreeMap<String, Fate> = std::mem::take(&mut prepared.results)
            .into_iter()
            .map(|id| (id, Fate::Kept))
            .collect();
        for (id, rep) in imported.replacements {
            import_fates.insert(id, Fate::Replaced(rep));
        }
        let import_fates: Vec<(String, Fate)> = import_fates.into_iter().collect();
        let (claude_md, loaded) = self.startup_instructions(&row).await?;
        let seq = prepared.rows.last().map_or(0, |r| r.seq);
        // What the session is once written: the row as inserted, with its records. Told
        // from here rather than read back, which cost a tenth of a small import.
        let info = row.info(
            prepared.rows.len() as u64,
            prepared.rows.last().map(|r| r.uuid.clone()),
        );
        let memo = InstructionMemo {
            claude_md,
            boundary_uuid: std::mem::take(&mut prepared.boundary_uuid),
            announced_date: row.start_date.clone(),
        };
        let r = row.clone();
        let prepared = self
            .store
            .write(&row.id, move |tx| {
                sessions::insert(tx, &r)?;
                records::insert_rows(tx, &r.id, &prepared.rows)?;
                fates::insert(tx, &r.id, fates::BUDGET, &import_fates, seq)?;
                context_state::set_memo(tx, &r.id, &memo)?;
                context_state::add_loaded(tx, &r.id, &loaded)?;
                // Handed back, so that freeing them is not the writer's time.
                Ok(prepared)
            })
            .await?;
        drop(prepared);
        for w in &imported.stats.warnings {
            tracing::warn!(session = %row.id, "import: {w}");
        }
        Ok((info, imported.stats))
    }
}
