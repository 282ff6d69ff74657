//! Import of a Claude Code transcript as a new session.

use std::collections::BTreeMap;

use ctxd_protocol::*;

use crate::engine::Engine;
use crate::engine::session::loaded::last_boundary_uuid;
use crate::engine::session::transcript::materialise;
use crate::import::chunks;
use crate::import::claude_code::Imported;
use crate::validate::{check_stored_size, validate_fields_from};
use ctxd_pipeline::budget::Fate;
use ctxd_store::context_state::{self, InstructionMemo};
use ctxd_store::error::{Error, Result};
use ctxd_store::sessions::SessionRow;
use ctxd_store::{fates, records, sessions};

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
    // The source agent's usage measured its own system prompt and tools, not the request
    // ctxd compiles from these records.
    for r in records.iter_mut().filter(|r| r.usage.is_some()) {
        r.foreign_usage = true;
    }
    let results = records
        .iter()
        .flat_map(|r| r.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.clone()),
            _ => None,
        })
        .collect();
    let boundary_uuid = last_boundary_uuid(&records);
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

/// A sub-agent's thread found in a transcript: its sidechain records, and the call of
/// the main thread that started it.
struct ThreadImport {
    agent: AgentInfo,
    records: Vec<RecordInput>,
}

/// Splits the sub-agents' sidechain records (those naming an `agentId`) off the main
/// thread, one thread per agent linked to the call that started it: named by the
/// records (`parentToolUseID`) or by the call's result (`toolUseResult.agentId`). A
/// thread with no such call stays in the main thread's sidechain, as stored before.
fn split_threads(records: Vec<RecordInput>) -> (Vec<RecordInput>, Vec<ThreadImport>) {
    let agent_of = |r: &RecordInput| r.claude_code_agent().map(str::to_owned);
    // The main thread's calls (id → agent type) and results (id → record).
    let mut calls: BTreeMap<String, String> = BTreeMap::new();
    let mut results: BTreeMap<String, (Option<String>, Option<String>)> = BTreeMap::new();
    let mut by_result: BTreeMap<String, String> = BTreeMap::new();
    let mut links: BTreeMap<String, String> = BTreeMap::new();
    for r in &records {
        if let Some(agent) = agent_of(r) {
            if let Some(call) = r.claude_code("parentToolUseID").and_then(|v| v.as_str()) {
                links.entry(agent).or_insert_with(|| call.to_owned());
            }
            continue;
        }
        if r.is_sidechain {
            continue;
        }
        for b in &r.content {
            match b {
                ContentBlock::ToolUse { id, input, .. } => {
                    let kind = input
                        .get("subagent_type")
                        .and_then(|v| v.as_str())
                        .unwrap_or("general-purpose");
                    calls.insert(id.clone(), kind.to_owned());
                }
                ContentBlock::ToolResult { tool_use_id, .. } => {
                    results.insert(tool_use_id.clone(), (r.uuid.clone(), r.timestamp.clone()));
                    if let Some(a) = r
                        .claude_code("toolUseResult")
                        .and_then(|t| t.get("agentId"))
                        .and_then(|v| v.as_str())
                    {
                        by_result.insert(a.to_owned(), tool_use_id.clone());
                    }
                }
                _ => {}
            }
        }
    }
    let mut main = Vec::with_capacity(records.len());
    let mut threads: Vec<ThreadImport> = Vec::new();
    for mut r in records {
        let Some(agent) = agent_of(&r) else {
            main.push(r);
            continue;
        };
        let call = links.get(&agent).or_else(|| by_result.get(&agent));
        let Some((call, kind)) = call.and_then(|c| calls.get(c).map(|k| (c, k))) else {
            main.push(r);
            continue;
        };
        r.is_sidechain = false;
        match threads.iter_mut().find(|t| t.agent.agent_id == agent) {
            Some(t) => t.records.push(r),
            None => {
                let (result_uuid, finished_at) = results.get(call).cloned().unwrap_or_default();
                threads.push(ThreadImport {
                    agent: AgentInfo {
                        agent_id: agent,
                        agent_type: kind.clone(),
                        parent_session_id: String::new(),
                        tool_use_id: call.clone(),
                        finished_at: result_uuid.as_ref().and(finished_at),
                        result_uuid,
                    },
                    records: vec![r],
                });
            }
        }
    }
    (main, threads)
}

/// The fates of imported results: each seen whole, unless a replacement says what the
/// model saw instead.
fn seen_fates(results: Vec<String>, replacements: Vec<(String, String)>) -> Vec<(String, Fate)> {
    let mut fates: BTreeMap<String, Fate> =
        results.into_iter().map(|id| (id, Fate::Kept)).collect();
    for (id, rep) in replacements {
        fates.insert(id, Fate::Replaced(rep));
    }
    fates.into_iter().collect()
}

/// Where a transcript comes from.
enum Source {
    Text(String),
    /// An absolute path the daemon reads.
    File(String),
}

impl Source {
    /// The transcript's records; a file is held to the bound of a request's text.
    fn parse(self, max: u64) -> Result<Imported> {
        use crate::import::claude_code::{parse, parse_reader};
        let path = match self {
            Source::Text(jsonl) => {
                return parse(&jsonl).map_err(|e| Error::invalid("jsonl", e.to_string()));
            }
            Source::File(path) => path,
        };
        let invalid = |message: String| Error::invalid("path", format!("{path}: {message}"));
        if !std::path::Path::new(&path).is_absolute() {
            return Err(invalid("must be an absolute path".into()));
        }
        let file = std::fs::File::open(&path).map_err(|e| invalid(e.to_string()))?;
        let meta = file.metadata().map_err(|e| invalid(e.to_string()))?;
        // A FIFO or a device could be read forever.
        if !meta.is_file() {
            return Err(invalid("not a regular file".into()));
        }
        if meta.len() > max {
            return Err(invalid(format!(
                "{} bytes, over the bound of {max} bytes (--max-request-bytes)",
                meta.len()
            )));
        }
        parse_reader(file, max).map_err(|e| invalid(e.to_string()))
    }
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
        let source = match (p.path.take(), std::mem::take(&mut p.jsonl)) {
            (None, jsonl) => Source::Text(jsonl),
            (Some(path), jsonl) if jsonl.is_empty() => Source::File(path),
            (Some(_), _) => {
                return Err(Error::invalid(
                    "path",
                    "give the transcript as `jsonl` or as `path`, not both",
                ));
            }
        };
        let max = u64::from(self.limits.max_request_bytes);
        let stamp = self.now_text();
        // Milliseconds of CPU for a long transcript: off the async workers.
        let (mut imported, mut prepared, threads) = tokio::task::spawn_blocking(move || {
            let mut imported = source.parse(max)?;
            let (inputs, threads) = split_threads(std::mem::take(&mut imported.records));
            let prepared = prepare(inputs, &stamp)?;
            let threads = threads
                .into_iter()
                .map(|t| Ok((t.agent, prepare(t.records, &stamp)?)))
                .collect::<Result<Vec<_>>>()?;
            Ok::<_, Error>((imported, prepared, threads))
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
        let import_fates = seen_fates(
            std::mem::take(&mut prepared.results),
            std::mem::take(&mut imported.replacements),
        );
        imported.stats.agents = threads.len() as u64;
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
        // Each sub-agent's thread: a session of its own under the new one.
        let threads: Vec<(SessionRow, Prepared)> = threads
            .into_iter()
            .map(|(mut agent, p)| {
                agent.parent_session_id.clone_from(&row.id);
                let thread = SessionRow {
                    id: uuid::Uuid::now_v7().to_string(),
                    parent_session_id: Some(row.id.clone()),
                    title: Some(format!("{} agent {}", agent.agent_type, agent.agent_id)),
                    agent: Some(agent),
                    ..row.clone()
                };
                (thread, p)
            })
            .collect();
        let r = row.clone();
        let prepared = self
            .store
            .write(&row.id, move |tx| {
                sessions::insert(tx, &r)?;
                records::insert_rows(tx, &r.id, &prepared.rows)?;
                fates::insert(tx, &r.id, fates::BUDGET, &import_fates, seq)?;
                context_state::set_memo(tx, &r.id, &memo)?;
                context_state::add_loaded(tx, &r.id, &loaded)?;
                for (thread, mut p) in threads {
                    let seq = p.rows.last().map_or(0, |r| r.seq);
                    let fates_of = seen_fates(std::mem::take(&mut p.results), Vec::new());
                    sessions::insert(tx, &thread)?;
                    records::insert_rows(tx, &thread.id, &p.rows)?;
                    fates::insert(tx, &thread.id, fates::BUDGET, &fates_of, seq)?;
                    let memo = InstructionMemo {
                        boundary_uuid: std::mem::take(&mut p.boundary_uuid),
                        ..memo.clone()
                    };
                    context_state::set_memo(tx, &thread.id, &memo)?;
                    context_state::add_loaded(tx, &thread.id, &loaded)?;
                }
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
