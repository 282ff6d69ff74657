//! Session and transcript operations: create, update, fork, delete, tools, append,
//! read, snip. The compile path is the engine's `compile.rs`, the import in `import.rs`, the
//! checks of what clients send in the crate's `validate.rs`.

use std::path::Path;

use ctxd_protocol::*;
use uuid::Uuid;

use crate::engine::Engine;
use crate::engine::session::loaded::{last_boundary_uuid, loaded_mut};
use crate::engine::session::transcript::{expect_last, insert_batch};
use crate::validate::{
    check_date, check_model, check_settings, check_system, check_tools, validate_batch,
};
use ctxd_pipeline::budget::Fate;
use ctxd_pipeline::snip;
use ctxd_store::context_state::{self, InstructionMemo};
use ctxd_store::error::{Error, Result};
use ctxd_store::sessions::SessionRow;
use ctxd_store::{cache_edits, fates, outputs, records, sessions};

/// A memo boundary no history has: forces the memoized user context to be recomputed.
const CWD_CHANGED: &str = "#cwd-changed";
const DEFAULT_PAGE: u32 = 500;

/// An append up to this size as JSON, and of at most [`SHORT_APPEND_RECORDS`], is a short
/// write ([`ctxd_store::Store::write_short`]): stored in about a millisecond at most,
/// on the calling thread when the store's writer is idle.
const SHORT_APPEND_BYTES: usize = 256 * 1024;
const SHORT_APPEND_RECORDS: usize = 256;

/// Copies session `src` into a new session `nid`: its row (as `edit` changes it), its
/// records up to seq `upto`, and every piece of state a compile reads. Returns the
/// records copied.
fn copy_session(
    tx: &mut dyn ctxd_store::Db,
    src: &str,
    nid: &str,
    upto: u64,
    now: &str,
    edit: impl FnOnce(&mut SessionRow, &[Record]),
) -> Result<Vec<Record>> {
    let mut row = sessions::get(tx, src)?;
    let recs = records::up_to(tx, src, upto)?;
    let tools = sessions::tools(tx, src)?;
    let rejected = sessions::rejected_media(tx, src)?;
    row.id = nid.to_string();
    row.created_at = now.to_string();
    row.updated_at = now.to_string();
    edit(&mut row, &recs);
    sessions::insert(tx, &row)?;
    sessions::set_tools(tx, nid, &tools)?;
    records::insert_all(tx, nid, &recs)?;
    for (u, i) in rejected {
        sessions::add_rejected_media(tx, nid, &u, i)?;
    }
    fates::copy(tx, src, nid)?;
    context_state::copy(tx, src, nid)?;
    let last = recs.last().map_or(0, |r| r.seq);
    ctxd_store::capabilities::copy(tx, src, nid, last)?;
    // Pinned edits name message indexes of the whole history; a fork that ends earlier
    // starts without them.
    if upto == u64::MAX {
        cache_edits::copy(tx, src, nid)?;
    }
    ctxd_store::compile_log::copy(tx, src, nid)?;
    outputs::copy(tx, src, nid)?;
    ctxd_store::sections::copy(tx, src, nid)?;
    Ok(recs)
}

impl Engine {
    pub async fn create_session(&self, p: SessionCreateParams) -> Result<SessionInfo> {
        let row = self.new_row(&p).await?;
        let tools = p.tools;
        check_tools(&tools)?;
        if row.settings.hooks.trust_project {
            let list = ctxd_fs::trust::list_path(&self.home);
            let project = std::path::PathBuf::from(&row.original_cwd);
            tokio::task::spawn_blocking(move || ctxd_fs::trust::trust(&list, &project))
                .await
                .map_err(|e| Error::Internal(format!("trust task: {e}")))?
                .map_err(|e| Error::Storage(format!("writing the trust list: {e}")))?;
        }
        // SessionStart context is in place before the first request is compiled.
        let (claude_md, loaded) = self.startup_instructions(&row).await?;
        let started = self.hooks_created(&row).await;
        let memo = InstructionMemo {
            claude_md,
            boundary_uuid: String::new(),
            announced_date: row.start_date.clone(),
        };
        let (r, l2, now) = (row.clone(), loaded.clone(), self.now_text());
        let built = self
            .store
            .write(&row.id, move |tx| {
                sessions::insert(tx, &r)?;
                sessions::set_tools(tx, &r.id, &tools)?;
                context_state::set_memo(tx, &r.id, &memo)?;
                context_state::add_loaded(tx, &r.id, &l2)?;
                if started.is_empty() {
                    return Ok(Vec::new());
                }
                insert_batch(tx, &r.id, started, None, &now)
            })
            .await?;
        self.hooks_created_instructions(&row, &loaded);
        Ok(row.info(built.len() as u64, built.last().map(|b| b.uuid.clone())))
    }

    pub(crate) async fn new_row(&self, p: &SessionCreateParams) -> Result<SessionRow> {
        if !Path::new(&p.cwd).is_absolute() {
            return Err(Error::invalid("cwd", "must be an absolute path"));
        }
        let model = p.model.clone().unwrap_or_default();
        check_model(&model)?;
        let settings = p.settings.clone().unwrap_or_default();
        check_settings(&settings, &model)?;
        if let Some(s) = &p.system {
            check_system(s)?;
        }
        for (i, d) in p.additional_directories.iter().enumerate() {
            if !Path::new(d).is_absolute() {
                return Err(Error::invalid(
                    format!("additional_directories[{i}]"),
                    "must be an absolute path",
                ));
            }
        }
        let start_date = match &p.start_date {
            Some(d) => {
                check_date(d)?;
                d.clone()
            }
            None => self.clock.local_date(),
        };
        let git_snapshot = if p.no_git {
            None
        } else {
            crate::git::snapshot(Path::new(&p.cwd)).await
        };
        let now = self.now_text();
        Ok(SessionRow {
            id: Uuid::now_v7().to_string(),
            cwd: p.cwd.clone(),
            original_cwd: p.cwd.clone(),
            model,
            settings,
            additional_directories: p.additional_directories.clone(),
            system: p.system.clone(),
            start_date,
            git_snapshot,
            parent_session_id: None,
            forked_from_uuid: None,
            title: p.title.clone(),
            created_at: now.clone(),
            updated_at: now,
            agent: None,
        })
    }

    pub async fn list_sessions(&self, p: SessionListParams) -> Result<Vec<SessionInfo>> {
        let limit = p.limit.unwrap_or(100).min(10_000);
        self.store
            .read(move |c| {
                let rows = sessions::list(c, limit)?;
                let mut out = Vec::with_capacity(rows.len());
                for r in rows {
                    let n = records::count(c, &r.id)?;
                    let last = records::last(c, &r.id)?.map(|l| l.1);
                    out.push(r.info(n, last));
                }
                Ok(out)
            })
            .await
    }

    pub async fn get_session(&self, id: &str) -> Result<SessionInfo> {
        let sid = id.to_string();
        self.store
            .read(move |c| {
                let r = sessions::get(c, &sid)?;
                let n = records::count(c, &sid)?;
                let last = records::last(c, &sid)?.map(|l| l.1);
                Ok(r.info(n, last))
            })
            .await
    }

    /// A session's settings alone (one row read, nothing counted).
    pub async fn session_settings(&self, id: &str) -> Result<SessionSettings> {
        let sid = id.to_string();
        self.store
            .read(move |c| sessions::get(c, &sid).map(|r| r.settings))
            .await
    }

    /// The sessions the HTTP front door made, among the newest `limit`, oldest first:
    /// each with the conversation it records.
    pub async fn proxied_sessions(&self, limit: u32) -> Result<Vec<(String, String)>> {
        self.store
            .read(move |c| {
                let mut out: Vec<(String, String)> = sessions::list(c, limit)?
                    .into_iter()
                    .filter_map(|r| {
                        let key = r.settings.proxy?.conversation?;
                        Some((r.id, key))
                    })
                    .collect();
                out.reverse();
                Ok(out)
            })
            .await
    }

    pub async fn session_count(&self) -> Result<u64> {
        self.store.read(sessions::count).await
    }

    /// `daemon.gc`: retention by age, then by the size of what is stored.
    pub async fn gc(&self, p: GcParams) -> Result<GcResponse> {
        if p.idle_days.is_none() && p.max_store_bytes.is_none() {
            return Err(Error::invalid(
                "idle_days",
                "give idle_days, max_store_bytes or both",
            ));
        }
        if p.idle_days == Some(0) {
            return Err(Error::invalid("idle_days", "must be at least 1"));
        }
        let now = match &p.now {
            Some(t) => chrono::DateTime::parse_from_rfc3339(t)
                .map_err(|e| Error::invalid("now", format!("not RFC 3339 ({t:?}): {e}")))?
                .with_timezone(&chrono::Utc),
            None => self.clock.now(),
        };
        let cutoff = p
            .idle_days
            .map(|d| now - chrono::Duration::days(i64::from(d)));
        let sessions = self.store.read(sessions::by_age).await?;
        let mut deleted = Vec::new();
        let mut kept = Vec::new();
        for (id, updated_at, bytes) in sessions {
            // A time that does not parse is never taken for old.
            let idle = cutoff.is_some_and(|c| {
                chrono::DateTime::parse_from_rfc3339(&updated_at).is_ok_and(|t| t < c)
            });
            if idle {
                deleted.push(GcDeleted {
                    session_id: id,
                    updated_at,
                    bytes,
                    reason: "idle".into(),
                });
            } else {
                kept.push((id, updated_at, bytes));
            }
        }
        let mut kept_bytes: u64 = kept.iter().map(|k| k.2).sum();
        if let Some(max) = p.max_store_bytes {
            // Oldest first: `by_age` orders by `updated_at`.
            let mut rest = kept.into_iter();
            while kept_bytes > max {
                let Some((id, updated_at, bytes)) = rest.next() else {
                    break;
                };
                kept_bytes -= bytes;
                deleted.push(GcDeleted {
                    session_id: id,
                    updated_at,
                    bytes,
                    reason: "quota".into(),
                });
            }
        }
        if !p.dry_run {
            for d in &deleted {
                match self.delete_session(&d.session_id).await {
                    // Deleted meanwhile by someone else: what gc wanted.
                    Ok(_) | Err(Error::SessionNotFound(_)) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(GcResponse {
            dry_run: p.dry_run,
            deleted,
            kept_bytes,
        })
    }

    /// `daemon.backup`: a consistent copy of the store in a new file.
    pub async fn backup(&self, p: BackupParams) -> Result<BackupResponse> {
        let path = Path::new(&p.path);
        let invalid = |m: &str| Error::invalid("path", format!("{}: {m}", p.path));
        if !path.is_absolute() {
            return Err(invalid("must be an absolute path"));
        }
        // Never over an existing file: a backup that replaced the wrong one is lost data.
        if std::fs::symlink_metadata(path).is_ok() {
            return Err(invalid("already exists"));
        }
        if !path.parent().is_some_and(Path::is_dir) {
            return Err(invalid("its directory does not exist"));
        }
        let started = std::time::Instant::now();
        let bytes = self.store.backup(path.to_path_buf()).await?;
        Ok(BackupResponse {
            path: p.path,
            bytes,
            elapsed_ms: ctxd_pipeline::saturate::millis(started.elapsed()),
        })
    }

    pub async fn update_session(&self, p: SessionUpdateParams) -> Result<SessionInfo> {
        if let Some(m) = &p.model {
            check_model(m)?;
        }
        if let Some(s) = &p.system {
            check_system(s)?;
        }
        if let Some(c) = &p.cwd
            && !Path::new(c).is_absolute()
        {
            return Err(Error::invalid("cwd", "must be an absolute path"));
        }
        let cwd_changed = p.cwd.is_some();
        let old_cwd = match cwd_changed {
            true => Some(self.hook_facts(&p.session_id).await?.cwd),
            false => None,
        };
        let cell = self.cells.cell(&p.session_id);
        let mut guard = cell.state.lock().await;
        let now = self.now_text();
        let sid = p.session_id.clone();
        let row = self
            .store
            .write(&sid.clone(), move |tx| {
                let mut row = sessions::get(tx, &sid)?;
                if let Some(m) = p.model {
                    row.model = m;
                }
                if let Some(patch) = p.settings {
                    let mut merged = serde_json::to_value(&row.settings)?;
                    ctxd_protocol::merge_patch(&mut merged, patch);
                    row.settings = serde_json::from_value(merged)
                        .map_err(|e| Error::invalid("settings", e.to_string()))?;
                }
                if let Some(s) = p.system {
                    row.system = Some(s);
                }
                if let Some(t) = p.title {
                    row.title = Some(t);
                }
                // The merged pair is what compiles will run with.
                check_settings(&row.settings, &row.model)?;
                if let Some(c) = p.cwd
                    && c != row.cwd
                {
                    row.cwd = c;
                    // A cwd change resets the memoized user context: mark the memo as
                    // belonging to no history, so the next compile recomputes it.
                    if let Some(mut m) = context_state::memo(tx, &row.id)? {
                        m.boundary_uuid = CWD_CHANGED.into();
                        context_state::set_memo(tx, &row.id, &m)?;
                    }
                    // The memoized system sections (the environment names the cwd) too.
                    ctxd_store::sections::clear(tx, &row.id)?;
                }
                row.updated_at = now;
                sessions::update(tx, &row)?;
                Ok(row)
            })
            .await?;
        if let Some(l) = guard.as_mut() {
            l.row = row.clone();
            if cwd_changed && let Some(m) = l.memo.as_mut() {
                m.boundary_uuid = CWD_CHANGED.into();
            }
            if cwd_changed {
                l.sections.memo = None;
            }
        }
        drop(guard);
        self.emit(
            &cell,
            SessionEvent::SessionUpdated {
                session_id: row.id.clone(),
            },
        );
        if let Some(old) = old_cwd.filter(|o| *o != row.cwd) {
            self.hooks_cwd_changed(&row.id, old, row.cwd.clone());
        }
        self.get_session(&row.id).await
    }

    pub async fn fork_session(&self, p: SessionForkParams) -> Result<SessionInfo> {
        let now = self.now_text();
        let new_id = Uuid::now_v7().to_string();
        let src = p.session_id.clone();
        let nid = new_id.clone();
        self.store
            .write(&p.session_id.clone(), move |tx| {
                let upto = match &p.up_to_uuid {
                    Some(u) => records::seq_of(tx, &src, u)?,
                    None => u64::MAX,
                };
                let recs = copy_session(tx, &src, &nid, upto, &now, |row, recs| {
                    row.parent_session_id = Some(src.clone());
                    row.forked_from_uuid = recs.last().map(|r| r.uuid.clone());
                    // A fork of a sub-agent's thread is a session of its own.
                    row.agent = None;
                })?;
                // The sub-agents started by the calls the fork keeps go with it, each
                // thread whole, now the fork's.
                let calls: std::collections::HashSet<&str> = recs
                    .iter()
                    .flat_map(|r| r.content.iter())
                    .filter_map(|b| match b {
                        ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
                        _ => None,
                    })
                    .collect();
                for agent in sessions::agents(tx, &src)? {
                    let Some(info) = agent.agent.as_ref() else {
                        continue;
                    };
                    if !calls.contains(info.tool_use_id.as_str()) {
                        continue;
                    }
                    let thread = Uuid::now_v7().to_string();
                    copy_session(tx, &agent.id, &thread, u64::MAX, &now, |row, _| {
                        row.parent_session_id = Some(nid.clone());
                        if let Some(a) = row.agent.as_mut() {
                            a.parent_session_id.clone_from(&nid);
                            // An answer recorded after the fork's end is not the fork's.
                            if a.result_uuid
                                .as_ref()
                                .is_some_and(|u| !recs.iter().any(|r| &r.uuid == u))
                            {
                                a.result_uuid = None;
                                a.finished_at = None;
                            }
                        }
                    })?;
                }
                Ok(())
            })
            .await?;
        self.get_session(&new_id).await
    }

    pub async fn delete_session(&self, id: &str) -> Result<bool> {
        // A session's sub-agents go with it (they cannot have sub-agents of their own).
        let parent = id.to_string();
        let threads = self
            .store
            .read(move |db| sessions::agents(db, &parent))
            .await?;
        for t in threads {
            Box::pin(self.delete_session(&t.id)).await?;
        }
        let cell = self.cells.cell(id);
        let mut guard = cell.state.lock().await;
        let sid = id.to_string();
        let dir_text = self.session_dir(id).display().to_string();
        let (deleted, shared) = self
            .store
            .write(id, move |tx| {
                let shared = fates::referenced_elsewhere(tx, &sid, &dir_text)?;
                Ok((sessions::delete(tx, &sid)?, shared))
            })
            .await?;
        *guard = None;
        drop(guard);
        if !deleted {
            self.cells.drop_cell(id);
            return Err(Error::SessionNotFound(id.to_string()));
        }
        let dir = self.session_dir(id);
        if shared {
            tracing::info!(
                session = id,
                "keeping session files: a fork's replacements point at them"
            );
        } else if dir.exists()
            && let Err(e) = tokio::fs::remove_dir_all(&dir).await
        {
            tracing::warn!(session = id, error = %e, "could not remove session files");
        }
        self.emit(
            &cell,
            SessionEvent::SessionDeleted {
                session_id: id.to_string(),
            },
        );
        self.cells.drop_cell(id);
        self.forget_session_state(id);
        Ok(true)
    }

    pub async fn set_tools(&self, p: ToolsSetParams) -> Result<u32> {
        check_tools(&p.tools)?;
        let cell = self.cells.cell(&p.session_id);
        let mut guard = cell.state.lock().await;
        let sid = p.session_id.clone();
        let tools = p.tools.clone();
        let now = self.now_text();
        self.store
            .write(&p.session_id, move |tx| {
                if !sessions::exists(tx, &sid)? {
                    return Err(Error::SessionNotFound(sid.clone()));
                }
                sessions::set_tools(tx, &sid, &tools)?;
                sessions::touch(tx, &sid, &now)
            })
            .await?;
        if let Some(l) = guard.as_mut() {
            l.tools = std::sync::Arc::new(p.tools.clone());
        }
        drop(guard);
        self.emit(
            &cell,
            SessionEvent::SessionUpdated {
                session_id: p.session_id.clone(),
            },
        );
        Ok(ctxd_pipeline::saturate::u32_of(p.tools.len()))
    }

    pub async fn list_tools(&self, id: &str) -> Result<Vec<ToolSpec>> {
        let sid = id.to_string();
        self.store
            .read(move |c| {
                if !sessions::exists(c, &sid)? {
                    return Err(Error::SessionNotFound(sid.clone()));
                }
                sessions::tools(c, &sid)
            })
            .await
    }

    pub async fn append(&self, mut p: AppendParams) -> Result<AppendResponse> {
        self.on_thread(&mut p.session_id, &mut p.agent_id).await?;
        let mut inputs = p.records;
        if inputs.is_empty() {
            return Err(Error::invalid("records", "must hold at least one record"));
        }
        if inputs.len() > ctxd_pipeline::limits::MAX_APPEND_RECORDS {
            return Err(Error::invalid(
                "records",
                format!(
                    "holds {} records; one append takes at most {} (MAX_APPEND_RECORDS): split the batch",
                    inputs.len(),
                    ctxd_pipeline::limits::MAX_APPEND_RECORDS
                ),
            ));
        }
        let bytes = validate_batch(&mut inputs)?;
        // UserPromptSubmit hooks may refuse the batch or add context after a prompt.
        let inputs = self.hooks_user_prompts(&p.session_id, inputs).await?;
        let short = bytes <= SHORT_APPEND_BYTES && inputs.len() <= SHORT_APPEND_RECORDS;
        let cell = self.cells.cell(&p.session_id);
        let mut guard = cell.state.lock().await;
        // Observing file tools needs the earlier records (a result names its tool_use).
        self.load_or_drop(&p.session_id, &mut guard).await?;
        let now = self.now_text();
        let sid = p.session_id.clone();
        let expected = p.expected_last_uuid;
        let insert =
            move |tx: &mut dyn ctxd_store::Db| insert_batch(tx, &sid, inputs, expected, &now);
        let built = match short {
            true => self.store.write_short(&p.session_id, insert).await?,
            false => self.store.write(&p.session_id, insert).await?,
        };
        let appended: Vec<AppendedRecord> = built
            .iter()
            .map(|r| AppendedRecord {
                uuid: r.uuid.clone(),
                seq: r.seq,
            })
            .collect();
        let last_uuid = built.last().map(|r| r.uuid.clone());
        let responded = built
            .iter()
            .any(|r| r.kind == RecordKind::Assistant && !r.is_sidechain && !r.is_virtual);
        // The provider's compaction: a summary resets the breaker, a null one is a failed
        // compaction it counts.
        let server_compactions: Vec<bool> = built
            .iter()
            .filter_map(ctxd_pipeline::projection::server_compaction)
            .collect();
        if let Some(l) = guard.as_mut() {
            self.observe(
                &l.row.cwd,
                &l.row.additional_directories,
                &l.row.id,
                &l.records,
                &built,
            )
            .await;
            self.start_memory_prefetch(&cell, l, &built);
            let first_seq = built.first().map_or(0, |r| r.seq);
            let reported = built
                .iter()
                .any(|r| r.kind == RecordKind::Assistant && !r.is_sidechain && r.usage.is_some());
            // Only a boundary in this batch can move the last one.
            let boundary = last_boundary_uuid(&built);

            l.records.extend(built);
            if reported {
                self.check_cache_break(&cell, l, first_seq);
            }
            if responded {
                // The post-sampling point: maybe start a session-memory extraction.
                self.after_response(&cell, l).await;
            }
            if !boundary.is_empty() && boundary != l.boundary_uuid {
                // A compaction starts a new history: edits of the old one do not apply.
                l.boundary_uuid = boundary;
                l.pinned_edits.clear();
            }
        }
        drop(guard);
        for ok in server_compactions {
            self.record_server_compaction(&p.session_id, ok).await;
        }
        self.emit(
            &cell,
            SessionEvent::RecordsAppended {
                session_id: p.session_id.clone(),
                records: appended.clone(),
                full_records: None,
            },
        );
        Ok(AppendResponse {
            appended,
            last_uuid,
        })
    }

    pub async fn read(&self, mut p: ReadParams) -> Result<ReadResponse> {
        self.on_thread(&mut p.session_id, &mut p.agent_id).await?;
        let limit = p
            .limit
            .unwrap_or(DEFAULT_PAGE)
            .clamp(1, ctxd_pipeline::limits::MAX_READ_PAGE);
        let sid = p.session_id.clone();
        let after = p.after_seq;
        // Sequence numbers are stored as signed 64-bit integers.
        if i64::try_from(after).is_err() {
            return Err(Error::invalid(
                "after_seq",
                format!("must be at most {}", i64::MAX),
            ));
        }
        let (recs, last) = self
            .store
            .read(move |c| {
                if !sessions::exists(c, &sid)? {
                    return Err(Error::SessionNotFound(sid.clone()));
                }
                Ok((
                    records::page(c, &sid, after, limit)?,
                    records::last(c, &sid)?,
                ))
            })
            .await?;
        let next_after_seq = match (recs.last(), last) {
            (Some(r), Some((last_seq, _))) if r.seq < last_seq => Some(r.seq),
            _ => None,
        };
        Ok(ReadResponse {
            records: recs,
            next_after_seq,
        })
    }

    pub async fn reject_media(&self, p: RejectMediaParams) -> Result<bool> {
        let cell = self.cells.cell(&p.session_id);
        let mut guard = cell.state.lock().await;
        let sid = p.session_id.clone();
        let uuid = p.record_uuid.clone();
        let index = p.block_index;
        self.store
            .write(&p.session_id, move |tx| {
                if !sessions::exists(tx, &sid)? {
                    return Err(Error::SessionNotFound(sid.clone()));
                }
                let seq = records::seq_of(tx, &sid, &uuid)?;
                let rec = records::page(tx, &sid, seq - 1, 1)?;
                let ok = rec
                    .first()
                    .and_then(|r| r.content.get(index as usize))
                    .is_some_and(|b| {
                        matches!(
                            b,
                            ContentBlock::Image { .. }
                                | ContentBlock::Document { .. }
                                | ContentBlock::ToolResult { .. }
                        )
                    });
                if !ok {
                    return Err(Error::invalid(
                        "block_index",
                        "must name an image, document or tool_result block of the record",
                    ));
                }
                sessions::add_rejected_media(tx, &sid, &uuid, index)
            })
            .await?;
        if let Some(l) = guard.as_mut() {
            l.rejected_media.insert((p.record_uuid, p.block_index));
        }
        Ok(true)
    }

    /// Removes a range of messages by short ids: appends a `snip_boundary` record.
    pub async fn snip(&self, p: SnipParams) -> Result<SnipResponse> {
        let cell = self.cells.cell(&p.session_id);
        let mut guard = cell.state.lock().await;
        self.load_or_drop(&p.session_id, &mut guard).await?;
        let l = loaded_mut(&mut guard)?;
        if !l.row.settings.snip_enabled {
            return Err(Error::invalid(
                "session_id",
                "snip is not enabled for this session (settings.snip_enabled)",
            ));
        }
        let view = l.records.view();
        let plan = snip::plan(&view, &p.from_id, &p.to_id).map_err(|e| match e {
            snip::SnipError::UnknownId(ref id) if *id == p.to_id => {
                Error::invalid("to_id", e.to_string())
            }
            snip::SnipError::UnknownId(_) => Error::invalid("from_id", e.to_string()),
            other @ snip::SnipError::Backwards { .. } => Error::invalid("to_id", other.to_string()),
        })?;
        let boundary = RecordInput {
            kind: Some(RecordKind::System),
            subtype: Some(snip::SNIP_BOUNDARY.into()),
            data: Some(serde_json::json!({
                "removed_uuids": plan.removed,
                "tokens_freed": plan.tokens_freed,
                "from_id": p.from_id,
                "to_id": p.to_id,
            })),
            ..RecordInput::default()
        };
        let expected = expect_last(l);
        let now = self.now_text();
        let sid = p.session_id.clone();
        let built = self
            .store
            .write(&p.session_id, move |tx| {
                insert_batch(tx, &sid, vec![boundary], expected, &now)
            })
            .await?;
        let boundary_uuid = built.first().map(|r| r.uuid.clone()).unwrap_or_default();
        let appended: Vec<AppendedRecord> = built
            .iter()
            .map(|r| AppendedRecord {
                uuid: r.uuid.clone(),
                seq: r.seq,
            })
            .collect();
        l.records.extend(built);
        drop(guard);
        self.emit(
            &cell,
            SessionEvent::RecordsAppended {
                session_id: p.session_id.clone(),
                records: appended,
                full_records: None,
            },
        );
        Ok(SnipResponse {
            removed: plan.removed,
            tokens_freed: plan.tokens_freed,
            widened_by: plan.widened_by as u64,
            boundary_uuid,
        })
    }

    /// Converts a Claude Code transcript without storing anything.
    pub fn parse_claude_code(&self, p: ParseClaudeCodeParams) -> Result<ParseClaudeCodeResponse> {
        use crate::import::claude_code::{ImportError, parse};
        let imported = match parse(&p.jsonl) {
            Ok(i) => i,
            // Nothing but UI lines: a valid transcript with nothing to replay.
            Err(ImportError::Empty) => {
                return Ok(ParseClaudeCodeResponse {
                    records: Vec::new(),
                    source_lines: Vec::new(),
                    replacements: Vec::new(),
                    stats: ImportStats::default(),
                    cwd: None,
                    first_timestamp: None,
                });
            }
            Err(e) => return Err(Error::invalid("jsonl", e.to_string())),
        };
        Ok(ParseClaudeCodeResponse {
            records: imported.records,
            source_lines: imported.source_lines.iter().map(|l| *l as u64).collect(),
            replacements: imported
                .replacements
                .into_iter()
                .map(|(tool_use_id, replacement)| ToolResultReplacement {
                    tool_use_id,
                    replacement,
                })
                .collect(),
            stats: imported.stats,
            cwd: imported.cwd,
            first_timestamp: imported.first_timestamp,
        })
    }

    pub async fn replacements(&self, id: &str) -> Result<Vec<Replacement>> {
        let sid = id.to_string();
        let rows = self
            .store
            .read(move |c| {
                if !sessions::exists(c, &sid)? {
                    return Err(Error::SessionNotFound(sid.clone()));
                }
                fates::all(c, &sid)
            })
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| Replacement {
                tool_use_id: r.tool_use_id,
                stage: r.stage,
                replacement: match r.fate {
                    Fate::Kept => None,
                    Fate::Replaced(s) => Some(s),
                },
                decided_seq: r.decided_seq,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn text(uuid: &str) -> RecordInput {
        serde_json::from_value(serde_json::json!({
            "type": "user", "uuid": uuid, "content": "hello",
        }))
        .unwrap()
    }

    /// A batch naming a uuid the session holds fails with that uuid and writes nothing of
    /// the batch, not even the records before it.
    #[tokio::test]
    async fn a_known_uuid_fails_the_whole_batch() {
        let dir = tempfile::tempdir().unwrap();
        let store = ctxd_store::Store::open(&dir.path().join("t.db")).unwrap();
        let engine = Engine::new(
            store,
            dir.path(),
            Arc::new(ctxd_pipeline::clock::SystemClock),
        );
        let sid = crate::engine::test_support::session(&engine, dir.path()).await;
        let a = "0199e0a0-0000-7000-8000-00000000000a";
        let b = "0199e0a0-0000-7000-8000-00000000000b";
        let append = |records| AppendParams {
            session_id: sid.clone(),
            agent_id: None,
            records,
            expected_last_uuid: None,
        };
        engine.append(append(vec![text(a)])).await.unwrap();
        let err = engine
            .append(append(vec![text(b), text(a)]))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::DuplicateRecord(u) if u == a),
            "{err:?}"
        );
        let read = engine
            .read(ReadParams {
                session_id: sid.clone(),
                agent_id: None,
                after_seq: 0,
                limit: None,
            })
            .await
            .unwrap();
        let uuids: Vec<&str> = read.records.iter().map(|r| r.uuid.as_str()).collect();
        assert_eq!(uuids, [a]);
        // The session goes on: the same batch without the known record lands.
        engine.append(append(vec![text(b)])).await.unwrap();
    }
}
