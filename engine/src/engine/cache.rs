//! Prompt-cache care at the engine: the session's latched flags, the previous request's
//! cache key (for the predicted prefix), the fingerprints of recent compiles (for
//! attributing breaks), the `cache_break` event on reported usage, and the
//! `context.cache_report` and `context.usage` answers.

use std::sync::Arc;

use ctxd_protocol::{CacheReportResponse, RecordKind, RequestFlags, SessionEvent, UsageResponse};

use crate::engine::compile;
use crate::engine::session::loaded::loaded_mut;
use crate::engine::session::transcript::materialise;
use crate::engine::{Engine, Loaded, SessionCell};
use ctxd_pipeline::cache_break::{self, Fingerprint};
use ctxd_pipeline::cache_prefix::KeyShape;
use ctxd_pipeline::compile::Compiled;
use ctxd_pipeline::latch::{self, Latched};
use ctxd_store::compile_log;
use ctxd_store::error::{Error, Result};

/// Fingerprints kept in memory: a break is judged against the calls just before it.
const RECENT: usize = 16;
/// The expected break of a client's request whose history is not the one it sent before.
pub const HISTORY_EDITED: &str = "history_edited";

/// The cache-related state of a loaded session (cloned into every compile's snapshot,
/// so the previous request's units are shared, not copied).
#[derive(Debug, Default, Clone)]
pub(crate) struct CacheState {
    pub(crate) latch: Option<Latched>,
    /// The previous main request's cache key, and the history it belonged to.
    pub(crate) previous: Option<Arc<KeyShape>>,
    pub(crate) previous_boundary: Option<String>,
    /// The newest request's body digest (in memory only: after a restart the first
    /// digest is computed whole).
    pub(crate) digest: Option<Arc<ctxd_pipeline::digest::BodyDigest>>,
    /// The newest request's blocks as written (in memory only, like the digest).
    pub(crate) wire: Option<Arc<ctxd_pipeline::wire::WireMemo>>,
    /// Newest last.
    pub(crate) recent: Vec<Fingerprint>,
    pub(crate) next_id: u64,
}

impl CacheState {
    pub(crate) fn load(conn: &mut dyn ctxd_store::Db, sid: &str) -> Result<CacheState> {
        let newest = compile_log::newest(conn, sid)?;
        Ok(CacheState {
            latch: compile_log::latch(conn, sid)?,
            next_id: newest.as_ref().map_or(1, |n| n.id + 1),
            previous_boundary: newest.as_ref().map(|n| n.boundary_uuid.clone()),
            previous: newest.and_then(|n| n.shape).map(Arc::new),
            digest: None,
            wire: None,
            recent: compile_log::fingerprints(conn, sid, Some(RECENT as u64))?,
        })
    }

    /// The flags the current history carries (defaults before the first compile of it).
    pub(crate) fn flags(&self, boundary_uuid: &str) -> RequestFlags {
        latch::resolve(self.latch.as_ref(), boundary_uuid, None).flags
    }
}

impl Engine {
    /// Validates what the client asked for and settles it against the latch; the latch
    /// is stored before the request that carries it is shown. Returns the notes.
    pub(crate) async fn settle_flags(
        &self,
        l: &mut Loaded,
        requested: Option<&RequestFlags>,
    ) -> Result<Vec<String>> {
        if let Some(r) = requested {
            latch::validate(r).map_err(|(field, why)| Error::invalid(&field, why))?;
        }
        let mut edits = l
            .row
            .settings
            .provider_context_management
            .as_ref()
            .map(|c| c.edits.clone())
            .unwrap_or_default();
        if let Some(compact) = threshold_compaction_edit(&self.summaries.config(&l.row.settings))
            && !edits
                .iter()
                .any(|e| e.get("type").and_then(|t| t.as_str()) == Some(latch::COMPACT_EDIT))
        {
            edits.push(compact);
        }
        let session = latch::session_flags(&edits);
        let merged = session
            .map(|s| latch::with_session_flags(requested, l.cache.flags(&l.boundary_uuid), &s));
        let requested = merged.as_ref().or(requested);
        let res = latch::resolve(l.cache.latch.as_ref(), &l.boundary_uuid, requested);
        if res.changed {
            let latched = Latched {
                boundary_uuid: l.boundary_uuid.clone(),
                flags: res.flags,
            };
            let (sid, stored) = (l.row.id.clone(), latched.clone());
            self.store
                .write_current(&l.row.id, l.revision, move |tx| {
                    compile_log::set_latch(tx, &sid, &stored)
                })
                .await?;
            l.cache.latch = Some(latched);
        }
        Ok(res.notes)
    }

    /// Takes note of a compile whose request is about to be shown: why its prefix broke
    /// when the break is expected, and (main requests only) its cache key and
    /// fingerprint as the session's newest.
    pub(crate) fn record_compile(
        &self,
        l: &mut Loaded,
        c: &mut Compiled,
        side_request: bool,
        now: chrono::DateTime<chrono::Utc>,
    ) {
        let cache = &mut c.metadata.cache;
        let last = last_call(&l.records);
        // The provider keeps a cache entry for its TTL after the last call that wrote or
        // read it: past that, nothing of the prefix is served, whatever the bytes say.
        // The lifetime the previous request was written with: the lean policy chooses
        // it per call (its shape says which), else it is the latched one.
        let previous_1h = l.cache.previous.as_ref().and_then(|p| p.ttl_1h);
        let expired = l.cache.previous.is_some()
            && last.and_then(call_time).is_some_and(|at| {
                let one_hour =
                    previous_1h.unwrap_or(cache.flags.cache_ttl.as_deref() == Some(latch::TTL_1H));
                let ttl_secs = if one_hour { 3_600 } else { 300 };
                (now - at).num_seconds() > ttl_secs
            });
        if expired {
            cache.predicted_read_tokens = 0;
        }
        // The provider's context editing cleared part of the last request: the entry it
        // cached is the cleared request, which this one rewrites from the first result
        // it clears anew, whatever ctxd's own bytes say.
        let server_edited =
            last.is_some_and(|r| cache_break::ServerReport::of(r).cleared_input_tokens > 0);
        let expected = match &l.cache.previous {
            None => Some("first_compile"),
            Some(_) if expired => Some("ttl_expiry"),
            Some(_) if server_edited => Some(cache_break::SERVER_CONTEXT_EDIT),
            Some(_) if cache.first_difference.is_none() => None,
            Some(_) if l.cache.previous_boundary.as_deref() != Some(l.boundary_uuid.as_str()) => {
                Some("compaction")
            }
            Some(_) if !c.metadata.microcompact.cache_edits_added.is_empty() => Some("cache_edit"),
            Some(_) if !c.metadata.microcompact.time_based_cleared.is_empty() => {
                Some("time_based_microcompact")
            }
            Some(_) if !c.metadata.microcompact.policy_cleared.is_empty() => Some("lean_policy"),
            Some(_) => None,
        };
        cache.expected_break = expected.map(str::to_string).or_else(|| {
            // An uncached section that changed breaks the cache by design: name it.
            let system_differs = cache
                .first_difference
                .as_deref()
                .is_some_and(|d| d.starts_with("system"));
            c.metadata
                .uncached_sections
                .iter()
                .find(|s| s.changed && system_differs)
                .map(|s| format!("uncached_section:{}", s.name))
        });
        if side_request {
            return;
        }
        // Taken, not copied: the caller reads the request and its metadata only.
        let mut fp = std::mem::take(&mut c.fingerprint);
        fp.expected_break.clone_from(&cache.expected_break);
        fp.predicted_read_tokens = cache.predicted_read_tokens;
        fp.predicted_miss = l.cache.previous.is_some()
            && (expired || cache.first_difference.is_some() || cache.expected_break.is_some());
        l.cache.digest = Some(c.digest.clone());
        l.cache.wire = Some(c.wire.clone());
        self.keep_as_previous(l, fp, std::mem::take(&mut c.shape));
    }

    /// Makes a request the session's newest: its cache key the next one's `previous`,
    /// its fingerprint among the recent ones, and both in the compile log.
    fn keep_as_previous(&self, l: &mut Loaded, fp: Fingerprint, shape: KeyShape) {
        let id = l.cache.next_id;
        l.cache.next_id += 1;
        // One copy serves as the next request's `previous` and as the log row below.
        let shape = Arc::new(shape);
        l.cache.previous = Some(shape.clone());
        l.cache.previous_boundary = Some(l.boundary_uuid.clone());
        l.cache.recent.push(fp.clone());
        if l.cache.recent.len() > RECENT {
            l.cache.recent.remove(0);
        }
        // Not awaited: the request must not wait for its own bookkeeping. The cell keeps
        // the newest state; the store serves restarts and reports, and it is queued
        // ahead of any later write of the session.
        let (sid, boundary) = (l.row.id.clone(), l.boundary_uuid.clone());
        self.store
            .write_detached("compile log", &l.row.id, move |tx| {
                compile_log::insert(tx, &sid, id, &boundary, &fp, &shape)
            });
    }

    /// Takes note of a request a client sent itself (the HTTP front door's observe
    /// mode) before its exchange is appended, as `record_compile` does of ctxd's own: its
    /// predicted cache read against the previous request, and its fingerprint, so a drop
    /// in the answer's cache reads is named (`context.cache_report`, `cache_break`).
    pub async fn note_request(
        &self,
        sid: &str,
        body: &serde_json::Value,
        betas: &[String],
        sent_at: chrono::DateTime<chrono::Utc>,
    ) -> Result<()> {
        let cell = self.cells.cell(sid);
        let mut guard = cell.state.lock().await;
        self.load_or_drop(sid, &mut guard).await?;
        let l = loaded_mut(&mut guard)?;
        let shape = KeyShape::of_request(body, betas);
        let prediction = ctxd_pipeline::cache_prefix::predict(l.cache.previous.as_deref(), &shape);
        let last_seq = l.records.last().map_or(0, |r| r.seq);
        let mut fp = Fingerprint::of_request(body, &shape, betas, last_seq, sent_at);
        let last = last_call(&l.records);
        let ttl_secs = if fp.ttl_is_1h() { 3_600 } else { 300 };
        let expired = last
            .and_then(call_time)
            .is_some_and(|at| (sent_at - at).num_seconds() > ttl_secs);
        let edited = prediction
            .first_difference
            .as_deref()
            .is_some_and(|d| d.starts_with("messages"));
        fp.expected_break = match &l.cache.previous {
            None => Some("first_compile"),
            Some(_) if expired => Some("ttl_expiry"),
            Some(_) if edited => Some(HISTORY_EDITED),
            Some(_) => None,
        }
        .map(str::to_string);
        fp.predicted_read_tokens = if expired { 0 } else { prediction.read_tokens() };
        fp.predicted_miss =
            l.cache.previous.is_some() && (expired || prediction.first_difference.is_some());
        self.keep_as_previous(l, fp, shape);
        Ok(())
    }

    /// After an append whose records from `first_seq` on report usage: a new call whose
    /// cache reads dropped is a break; announce it.
    pub(crate) fn check_cache_break(&self, cell: &SessionCell, l: &Loaded, first_seq: u64) {
        // The last two calls are enough; look back only as far as needed.
        let from = l
            .records
            .iter()
            .rposition(|r| {
                r.kind == RecordKind::Assistant
                    && !r.is_sidechain
                    && r.usage.is_some()
                    && r.seq < first_seq
            })
            .map_or(0, |i| {
                // The previous call's response may have begun a few records earlier.
                l.records[..i]
                    .iter()
                    .rposition(|r| r.kind == RecordKind::User && !r.is_sidechain)
                    .unwrap_or(0)
            });
        let (calls, boundaries) = cache_break::calls(&l.records[from..]);
        let rows = cache_break::analyse(&calls, &boundaries, &l.cache.recent);
        for row in rows.into_iter().filter(|r| r.seq >= first_seq) {
            if let Some(b) = row.cache_break {
                self.activity.cache_break();
                tracing::info!(session = %l.row.id, cause = %b.cause, read = b.read_tokens,
                    previous = b.previous_read_tokens, "cache break");
                self.emit(
                    cell,
                    SessionEvent::CacheBreak {
                        session_id: l.row.id.clone(),
                        uuid: row.uuid,
                        record_seq: row.seq,
                        cache_break: b,
                    },
                );
            }
        }
    }

    /// `context.cache_report`: every call of the session with its prediction and cause.
    pub async fn cache_report(&self, sid: &str) -> Result<CacheReportResponse> {
        let cell = self.cells.cell(sid);
        let mut guard = cell.state.lock().await;
        self.load_or_drop(sid, &mut guard).await?;
        let l = loaded_mut(&mut guard)?;
        let s = sid.to_string();
        let compiles = self
            .store
            .read(move |c| compile_log::fingerprints(c, &s, None))
            .await?;
        // The newest compiles may still be on their way to the store.
        let stored_to = compiles.last().map_or(0, |f| f.last_seq);
        let mut all = compiles;
        all.extend(
            l.cache
                .recent
                .iter()
                .filter(|f| f.last_seq > stored_to)
                .cloned(),
        );
        let (calls, boundaries) = cache_break::calls(&l.records);
        let mut calls = cache_break::analyse(&calls, &boundaries, &all);
        // Each call priced at the model that answered it, the session's when unnamed.
        let by_uuid: std::collections::HashMap<&str, &ctxd_protocol::Record> = l
            .records
            .iter()
            .filter(|r| r.usage.is_some())
            .map(|r| (r.uuid.as_str(), r))
            .collect();
        let mut cost_usd = 0.0;
        for c in &mut calls {
            let Some(r) = by_uuid.get(c.uuid.as_str()) else {
                continue;
            };
            let model = r.model.clone().unwrap_or_else(|| l.row.model.model.clone());
            c.cost_usd = ctxd_protocol::models::lookup(&model)
                .zip(r.usage.as_ref())
                .map(|(e, u)| e.prices.cost(u));
            cost_usd += c.cost_usd.unwrap_or(0.0);
            c.model = Some(model);
        }
        let breaks = calls.iter().filter(|c| c.cache_break.is_some()).count() as u64;
        let diagnosed = calls.iter().filter(|c| c.agrees.is_some()).count() as u64;
        let agreed = calls.iter().filter(|c| c.agrees == Some(true)).count() as u64;
        Ok(CacheReportResponse {
            calls,
            breaks,
            diagnosed,
            agreed,
            cost_usd,
        })
    }

    /// `context.usage`: the picture of what the next request would hold, computed without
    /// changing anything: the attachments the next compile would append are counted
    /// (capability deltas, the skill listing, what the sources find) but not appended,
    /// no fate is frozen, nothing is compacted.
    pub async fn usage(&self, sid: &str) -> Result<UsageResponse> {
        let cell = self.cells.cell(sid);
        let mut guard = cell.state.lock().await;
        self.load_or_drop(sid, &mut guard).await?;
        let l = loaded_mut(&mut guard)?;
        let now = self.clock.now();
        let ask = compile::Ask {
            usage_picture: true,
            ..compile::Ask::at(now)
        };
        let mut pending = self.pending_capabilities(&cell, l, now).await?;
        pending.extend(self.pending_attachments(l, now).await);
        let c = if pending.is_empty() {
            compile::assemble(l, None, &ask)?
        } else {
            let last = l.records.last().map(|r| (r.seq, r.uuid.clone()));
            let mut records: Vec<ctxd_protocol::Record> = l.records.iter().cloned().collect();
            records.extend(materialise(
                pending,
                last,
                &ctxd_pipeline::clock::rfc3339(now),
            ));
            let history = compile::History::unindexed(&records, &l.boundary_uuid, &l.pinned_edits);
            compile::assemble(l, Some(history), &ask)?
        };
        let picture = c
            .usage
            .ok_or_else(|| Error::Internal("usage picture missing".into()))?;
        Ok(UsageResponse {
            model: l.row.model.model.clone(),
            context_window: l.row.model.context_window,
            used_tokens: c.metadata.context.effective_tokens,
            autocompact_threshold: c.metadata.context.autocompact_threshold,
            categories: picture.categories,
            attachments: picture.attachments,
            messages: u64::from(c.metadata.message_count),
        })
    }
}

/// When the session's last model call answered: the newest main-thread assistant record
/// with usage.
/// The provider's threshold compaction as a context-management edit, when the session's
/// summariser asks for it.
fn threshold_compaction_edit(
    cfg: &ctxd_protocol::SummariserConfig,
) -> Option<serde_json::Map<String, serde_json::Value>> {
    let ctxd_protocol::SummariserConfig::Server {
        mode: ctxd_protocol::ServerCompactionMode::Threshold,
        trigger_tokens,
        pause_after_compaction,
        instructions,
    } = cfg
    else {
        return None;
    };
    let mut e = serde_json::Map::new();
    e.insert("type".into(), latch::COMPACT_EDIT.into());
    if let Some(t) = trigger_tokens {
        e.insert(
            "trigger".into(),
            serde_json::json!({"type": "input_tokens", "value": t}),
        );
    }
    if *pause_after_compaction {
        e.insert("pause_after_compaction".into(), true.into());
    }
    if let Some(i) = instructions {
        e.insert("instructions".into(), i.clone().into());
    }
    Some(e)
}

fn last_call(records: &[ctxd_protocol::Record]) -> Option<&ctxd_protocol::Record> {
    records.iter().rev().find(|r| {
        r.kind == ctxd_protocol::RecordKind::Assistant && r.usage.is_some() && !r.is_sidechain
    })
}

fn call_time(r: &ctxd_protocol::Record) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(&r.timestamp)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use sha2::{Digest, Sha256};

    use crate::engine::test_support::{append, compile, engine, session};

    /// A compile whose body equals the previous one's keeps that request's memo and
    /// digest themselves, not copies; one with something new makes its own, and its
    /// digest is the plain SHA-256 of its bytes.
    #[tokio::test]
    async fn an_unchanged_request_keeps_the_previous_memo() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine(dir.path());
        let sid = session(&engine, dir.path()).await;
        let kept = || async {
            let cell = engine.cells.cell(&sid);
            let guard = cell.state.lock().await;
            let cache = &guard.as_ref().unwrap().cache;
            (cache.wire.clone().unwrap(), cache.digest.clone().unwrap())
        };
        append(
            &engine,
            &sid,
            json!([{"type": "user", "content": "the parser"}]),
        )
        .await;
        let first = compile(&engine, &sid).await;
        let (wire, digest) = kept().await;
        let again = compile(&engine, &sid).await;
        assert_eq!(again.body, first.body);
        let (same_wire, same_digest) = kept().await;
        assert!(Arc::ptr_eq(&wire, &same_wire));
        assert!(Arc::ptr_eq(&digest, &same_digest));
        assert_eq!(again.metadata.request_sha256, first.metadata.request_sha256);

        append(
            &engine,
            &sid,
            json!([{"type": "user", "content": "and the lexer"}]),
        )
        .await;
        let next = compile(&engine, &sid).await;
        assert_ne!(next.body, first.body);
        let (new_wire, new_digest) = kept().await;
        assert!(!Arc::ptr_eq(&wire, &new_wire));
        assert!(!Arc::ptr_eq(&digest, &new_digest));
        assert_eq!(
            next.metadata.request_sha256,
            hex::encode(Sha256::digest(next.body.as_bytes()))
        );
    }
}
