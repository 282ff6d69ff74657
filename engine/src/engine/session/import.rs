//! Import of a Claude Code transcript as a new session.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;

use ctxd_protocol::*;

use crate::engine::Engine;
use crate::engine::session::loaded::last_boundary_uuid;
use crate::engine::session::transcript::materialise;
use crate::import::chunks;
use crate::import::claude_code::{self, ImportError, Plan};
use crate::validate::{check_stored_size, validate_fields_from};
use ctxd_pipeline::budget::Fate;
use ctxd_store::context_state::{self, InstructionMemo};
use ctxd_store::error::{Error, Result};
use ctxd_store::sessions::SessionRow;
use ctxd_store::{fates, records, sessions};

/// Fewer records than this are checked and serialised on one thread: a thread costs more
/// than it saves.
const MIN_RECORDS_PER_PIECE: usize = 16;

/// A thread's records, checked, numbered from the first and made into rows before the
/// write, read by read, with what the session's state needs of them.
#[derive(Default)]
struct Prepared {
    rows: Vec<records::Row>,
    /// The `tool_use_id` of every tool result, in order.
    results: Vec<String>,
    /// The uuid of the last compact boundary ("" for none).
    boundary_uuid: String,
    /// The seq and uuid of the last record made, which the next read's records follow.
    last: Option<(u64, String)>,
    /// Records given so far: the index of the next one.
    given: usize,
    /// The first record that fails its checks, and the first whose row fails: the import
    /// reports the former if any (as checking every record before any row would).
    invalid: Option<Error>,
    unstorable: Option<Error>,
}

impl Prepared {
    /// Checks, numbers and serialises the next records of a thread. The checks and the
    /// serialising run on separate threads, and so off the store's writer, which then
    /// only stores rows: the writer serves every session, and an import is its longest
    /// write. The records' content is freed there too, as each becomes its row.
    fn add(&mut self, mut inputs: Vec<RecordInput>, now: &str) {
        let first = self.given;
        self.given += inputs.len();
        if self.invalid.is_some() || inputs.is_empty() {
            return;
        }
        let len = chunks::slice_len(inputs.len(), MIN_RECORDS_PER_PIECE);
        // The parse has already dropped repeated uuids, so no slice can repeat another's.
        // Each record's size is checked on its row's body below: serialised once, not twice.
        let checked = chunks::map(inputs.chunks_mut(len).enumerate(), |(k, slice)| {
            validate_fields_from(slice, first + k * len)
        });
        if let Some(e) = checked.into_iter().find_map(Result::err) {
            self.invalid = Some(in_jsonl(e));
            self.rows = Vec::new();
            return;
        }
        let mut records = materialise(inputs, self.last.take(), now);
        // The source agent's usage measured its own system prompt and tools, not the
        // request ctxd compiles from these records.
        for r in records.iter_mut().filter(|r| r.usage.is_some()) {
            r.foreign_usage = true;
        }
        self.last = records.last().map(|r| (r.seq, r.uuid.clone()));
        self.results
            .extend(
                records
                    .iter()
                    .flat_map(|r| r.content.iter())
                    .filter_map(|b| match b {
                        ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.clone()),
                        _ => None,
                    }),
            );
        let boundary_uuid = last_boundary_uuid(&records);
        if !boundary_uuid.is_empty() {
            self.boundary_uuid = boundary_uuid;
        }
        if self.unstorable.is_some() {
            return;
        }
        // Owned slices, each with the index of its first record, so that each record is
        // moved into its row and freed on the thread that made it.
        let mut slices = Vec::new();
        while records.len() > len {
            let at = records.len() - len;
            slices.push((first + at, records.split_off(at)));
        }
        slices.push((first, records));
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
        for slice in made {
            match slice {
                Ok(rows) => self.rows.extend(rows),
                Err(e) => {
                    self.unstorable = Some(in_jsonl(e));
                    self.rows = Vec::new();
                    return;
                }
            }
        }
    }

    /// The thread's rows, or the error of its first bad record.
    fn done(mut self) -> Result<Self> {
        match self.invalid.take().or(self.unstorable.take()) {
            Some(e) => Err(e),
            None => Ok(self),
        }
    }
}

/// The sub-agents' threads of a transcript, learnt from its records in order: the
/// sidechain records naming an `agentId`, one thread per agent linked to the call that
/// started it, named by the records (`parentToolUseID`) or by the call's result
/// (`toolUseResult.agentId`). A thread with no such call stays in the main thread's
/// sidechain, as stored before.
#[derive(Default)]
struct Splitter {
    /// The main thread's calls (id → agent type) and results (id → record).
    calls: BTreeMap<String, String>,
    results: BTreeMap<String, (Option<String>, Option<String>)>,
    by_result: BTreeMap<String, String>,
    links: BTreeMap<String, String>,
    /// Every agent, in the order its first record comes.
    agents: Vec<String>,
    seen: HashSet<String>,
}

/// The threads [`Splitter`] found: each agent's, in the order its first record comes.
struct Threads {
    agents: Vec<AgentInfo>,
    index: HashMap<String, usize>,
}

impl Splitter {
    fn observe(&mut self, r: &RecordInput) {
        if let Some(agent) = r.claude_code_agent() {
            if let Some(call) = r.claude_code("parentToolUseID").and_then(|v| v.as_str()) {
                self.links
                    .entry(agent.to_owned())
                    .or_insert_with(|| call.to_owned());
            }
            if self.seen.insert(agent.to_owned()) {
                self.agents.push(agent.to_owned());
            }
            return;
        }
        if r.is_sidechain {
            return;
        }
        for b in &r.content {
            match b {
                ContentBlock::ToolUse { id, input, .. } => {
                    let kind = input
                        .get("subagent_type")
                        .and_then(|v| v.as_str())
                        .unwrap_or("general-purpose");
                    self.calls.insert(id.clone(), kind.to_owned());
                }
                ContentBlock::ToolResult { tool_use_id, .. } => {
                    self.results
                        .insert(tool_use_id.clone(), (r.uuid.clone(), r.timestamp.clone()));
                    if let Some(a) = r
                        .claude_code("toolUseResult")
                        .and_then(|t| t.get("agentId"))
                        .and_then(|v| v.as_str())
                    {
                        self.by_result.insert(a.to_owned(), tool_use_id.clone());
                    }
                }
                _ => {}
            }
        }
    }

    fn finish(self) -> Threads {
        let mut threads = Threads {
            agents: Vec::new(),
            index: HashMap::new(),
        };
        for agent in self.agents {
            let call = self
                .links
                .get(&agent)
                .or_else(|| self.by_result.get(&agent));
            let Some((call, kind)) = call.and_then(|c| self.calls.get(c).map(|k| (c, k))) else {
                continue;
            };
            let (result_uuid, finished_at) = self.results.get(call).cloned().unwrap_or_default();
            threads.index.insert(agent.clone(), threads.agents.len());
            threads.agents.push(AgentInfo {
                agent_id: agent,
                agent_type: kind.clone(),
                parent_session_id: String::new(),
                tool_use_id: call.clone(),
                finished_at: result_uuid.as_ref().and(finished_at),
                result_uuid,
            });
        }
        threads
    }
}

impl Threads {
    /// The thread a record goes to: 0 for the main one, else 1 + its agent's.
    fn of(&self, r: &mut RecordInput) -> usize {
        let Some(&i) = r.claude_code_agent().and_then(|a| self.index.get(a)) else {
            return 0;
        };
        r.is_sidechain = false;
        i + 1
    }
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
    /// The transcript from its start (each pass reads it anew); a file is held to the
    /// bound of a request's text.
    fn open(&self, max: u64) -> Result<Box<dyn Read + '_>> {
        let path = match self {
            Source::Text(jsonl) => return Ok(Box::new(jsonl.as_bytes())),
            Source::File(path) => path,
        };
        let invalid = |message: String| Error::invalid("path", format!("{path}: {message}"));
        if !std::path::Path::new(path).is_absolute() {
            return Err(invalid("must be an absolute path".into()));
        }
        let file = std::fs::File::open(path).map_err(|e| invalid(e.to_string()))?;
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
        Ok(Box::new(file))
    }

    fn invalid(&self, e: ImportError) -> Error {
        match self {
            Source::Text(_) => Error::invalid("jsonl", e.to_string()),
            Source::File(path) => Error::invalid("path", format!("{path}: {e}")),
        }
    }

    /// Reads the transcript twice: first what it holds (counts, repeats, relinks, the
    /// sub-agents' threads), then its records, each made into its row as it is read. So
    /// only the rows are held, not every record's tree.
    fn prepare(self, max: u64, now: &str) -> Result<Made> {
        let mut splitter = Splitter::default();
        let plan = claude_code::plan(self.open(max)?, max, |r| splitter.observe(r))
            .map_err(|e| self.invalid(e))?;
        let threads = splitter.finish();
        let mut prepared: Vec<Prepared> = std::iter::repeat_with(Prepared::default)
            .take(threads.agents.len() + 1)
            .collect();
        let read = claude_code::records(self.open(max)?, max, &plan, |made| {
            let mut each: Vec<Vec<RecordInput>> = vec![Vec::new(); prepared.len()];
            for (mut r, _) in made {
                each[threads.of(&mut r)].push(r);
            }
            for (p, inputs) in prepared.iter_mut().zip(each) {
                p.add(inputs, now);
            }
            // No later error outranks the main thread's first bad record.
            match prepared[0].invalid.take() {
                Some(e) => Err(Stopped::At(e)),
                None => Ok(()),
            }
        });
        match read {
            Ok(()) => {}
            Err(Stopped::At(e)) => return Err(e),
            Err(Stopped::Import(e)) => return Err(self.invalid(e)),
        }
        let mut prepared = prepared.into_iter();
        let main = prepared.next().unwrap_or_default().done()?;
        let threads = threads
            .agents
            .into_iter()
            .zip(prepared)
            .map(|(agent, p)| Ok((agent, p.done()?)))
            .collect::<Result<Vec<_>>>()?;
        Ok((plan, main, threads))
    }
}

/// What an import reads: the plan of its transcript, the main thread's rows and each
/// sub-agent's.
type Made = (Plan, Prepared, Vec<(AgentInfo, Prepared)>);

/// Why the second pass stopped.
enum Stopped {
    Import(ImportError),
    At(Error),
}

impl From<ImportError> for Stopped {
    fn from(e: ImportError) -> Self {
        Stopped::Import(e)
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
        let (mut imported, mut prepared, threads) =
            tokio::task::spawn_blocking(move || source.prepare(max, &stamp))
                .await
                .map_err(|e| Error::Internal(format!("import task: {e}")))??;
        // A transcript written elsewhere may name a cwd that is not an absolute path here
        // (a Windows path, a relative one): reported, and the caller's fallback used.
        let source_cwd = match imported.cwd.take() {
            Some(c) if !std::path::Path::new(&c).is_absolute() => {
                imported.stats.warnings.push(format!(
                    "the transcript's cwd {c:?} is not an absolute path; the session's cwd is {}",
                    p.cwd
                        .as_deref()
                        .or(p.fallback_cwd.as_deref())
                        .unwrap_or("the one you pass")
                ));
                None
            }
            other => other,
        };
        let cwd = p.cwd.or(source_cwd).or(p.fallback_cwd).ok_or_else(|| {
            Error::invalid("cwd", "the transcript names no absolute cwd; pass one")
        })?;
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
