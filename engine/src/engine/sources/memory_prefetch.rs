//! Relevant-memory prefetch (session memory is `compaction/memory.rs`): when a prompt
//! the user typed is appended, the memory directories are scanned and scored for it in
//! the background, while the client goes on (and the model runs); the next compile of the
//! session waits for the result within its collection bound and consumes it once. If it
//! is not ready in time, the source is reported `skipped` and a later compile of the same
//! turn takes it. A newer prompt replaces an older prefetch. Prefetches live in memory: a
//! restart between the append and the compile drops that prompt's memories.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use ctxd_protocol::{ContentBlock, MemorySelector, Record};
use tokio::sync::watch;

use crate::discovery::memories::{self, MemoryFile};
use crate::engine::sources::source_input::{Effect, Found, SourceInput};
use crate::engine::{Engine, Loaded, SessionCell};
use ctxd_pipeline::plan_mode;
use ctxd_pipeline::relevant_memories::{self as rm, Chosen, Surfaced};
use ctxd_providers::Summariser;
use ctxd_store::error::{Error, Result};

/// A prefetch gives up after this long (a model selector that never answers).
const PREFETCH_TIMEOUT: Duration = Duration::from_secs(30);

type Outcome = std::result::Result<Vec<Chosen>, String>;

struct Prefetch {
    prompt_uuid: String,
    result: watch::Receiver<Option<Arc<Outcome>>>,
    consumed: bool,
}

/// The newest prefetch of each session.
#[derive(Default)]
pub(crate) struct Prefetches {
    pending: Mutex<HashMap<String, Prefetch>>,
    fitted: Arc<FittedIndexes>,
}

impl Prefetches {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Prefetch>> {
        ctxd_pipeline::sync::lock(&self.pending)
    }

    /// Starts scoring for `sid`'s prompt `prompt_uuid` in the background, replacing the
    /// session's older prefetch.
    fn start(&self, sid: &str, prompt_uuid: &str, input: PrefetchInput) {
        let (tx, rx) = watch::channel(None);
        self.lock().insert(
            sid.to_string(),
            Prefetch {
                prompt_uuid: prompt_uuid.to_string(),
                result: rx,
                consumed: false,
            },
        );
        tokio::spawn(async move {
            let outcome = match tokio::time::timeout(PREFETCH_TIMEOUT, run_prefetch(input)).await {
                Ok(o) => o,
                Err(_) => Err(format!(
                    "the prefetch took longer than {} s",
                    PREFETCH_TIMEOUT.as_secs()
                )),
            };
            // Nobody waiting (the session moved on) is fine.
            let _ = tx.send(Some(Arc::new(outcome)));
        });
    }

    /// The result to wait for when `sid`'s prefetch is for `prompt_uuid` and not
    /// consumed yet.
    fn waiting(
        &self,
        sid: &str,
        prompt_uuid: &str,
    ) -> Option<watch::Receiver<Option<Arc<Outcome>>>> {
        match self.lock().get(sid) {
            Some(p) if p.prompt_uuid == prompt_uuid && !p.consumed => Some(p.result.clone()),
            _ => None,
        }
    }

    /// Drops a session's prefetch (unloaded or deleted): per-session state lives only as
    /// long as the session is in memory.
    pub(crate) fn forget(&self, sid: &str) {
        self.lock().remove(sid);
    }

    /// Marks `sid`'s prefetch for `prompt_uuid` consumed: its memories were shown (or
    /// its failure reported) once.
    pub(crate) fn consumed(&self, sid: &str, prompt_uuid: &str) {
        if let Some(p) = self.lock().get_mut(sid)
            && p.prompt_uuid == prompt_uuid
        {
            p.consumed = true;
        }
    }

    /// Whether the session's prefetch was consumed (`None`: there is none).
    #[cfg(test)]
    pub(crate) fn state(&self, sid: &str) -> Option<bool> {
        self.lock().get(sid).map(|p| p.consumed)
    }
}

/// Scorers fitted to the memory files in use, by what they were fitted to: a prompt
/// ranks against a kept index unless a file changed. A few are kept (one per set of
/// memory directories in use), the oldest dropped first.
#[derive(Default)]
pub(crate) struct FittedIndexes(Mutex<Vec<(u64, Arc<rm::Index>)>>);

const MAX_FITTED: usize = 8;

impl FittedIndexes {
    fn get_or_fit(&self, files: &[MemoryFile]) -> Arc<rm::Index> {
        let key = memories::index_key(files);
        if let Some((_, index)) = ctxd_pipeline::sync::lock(&self.0)
            .iter()
            .find(|(k, _)| *k == key)
        {
            return index.clone();
        }
        let index = Arc::new(memories::index(files));
        let mut kept = ctxd_pipeline::sync::lock(&self.0);
        kept.retain(|(k, _)| *k != key);
        if kept.len() >= MAX_FITTED {
            kept.remove(0);
        }
        kept.push((key, index.clone()));
        index
    }
}

/// What a prefetch needs, owned, so it runs without the session.
pub(crate) struct PrefetchInput {
    pub(crate) dirs: Vec<PathBuf>,
    pub(crate) query: String,
    pub(crate) surfaced: Surfaced,
    pub(crate) now: DateTime<Utc>,
    /// The model selector, when the session asks for one and has a model provider.
    pub(crate) selector: Option<Summariser>,
    pub(crate) fitted: Arc<FittedIndexes>,
}

/// The text of a typed prompt (its text blocks).
fn prompt_text(r: &Record) -> String {
    r.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Scans, selects and cuts: the whole prefetch. Blocking parts run on the blocking pool.
pub(crate) async fn run_prefetch(input: PrefetchInput) -> Outcome {
    let dirs = input.dirs.clone();
    let files = tokio::task::spawn_blocking(move || memories::scan(&dirs))
        .await
        .map_err(|e| format!("memory scan: {e}"))?;
    // Files already surfaced stay in the scorer's corpus (so its fit does not change with
    // every prompt) but are never picked again.
    let eligible: Vec<bool> = files
        .iter()
        .map(|f| !input.surfaced.paths.contains(&f.path.display().to_string()))
        .collect();
    if !eligible.contains(&true) {
        return Ok(Vec::new());
    }
    let mut picked: Option<Vec<usize>> = None;
    if let Some(selector) = &input.selector {
        let manifest: String = files
            .iter()
            .zip(&eligible)
            .filter(|(_, e)| **e)
            .map(|(f, _)| format!("- {}: {} — {}\n", f.rel, f.name, f.description))
            .collect();
        match selector.select_memories(&input.query, &manifest).await {
            Ok(names) => {
                picked = Some(
                    names
                        .iter()
                        .filter_map(|n| {
                            files
                                .iter()
                                .zip(&eligible)
                                .position(|(f, e)| *e && &f.rel == n)
                        })
                        .take(rm::MAX_FILES)
                        .collect(),
                );
            }
            Err(e) => {
                tracing::warn!(error = %e, "memory selector failed; using the offline scorer");
            }
        }
    }
    let (files, picked) = match picked {
        Some(p) => (files, p),
        None => {
            let query = input.query.clone();
            let fitted = input.fitted.clone();
            tokio::task::spawn_blocking(move || {
                let index = fitted.get_or_fit(&files);
                let picked = index.rank(&query, |i| eligible[i], rm::MAX_FILES);
                (files, picked)
            })
            .await
            .map_err(|e| format!("memory scorer: {e}"))?
        }
    };
    let now_ms = input.now.timestamp_millis();
    Ok(picked
        .into_iter()
        .map(|i| {
            let f = &files[i];
            let path = f.path.display().to_string();
            let age_days = (now_ms - f.mtime_ms).max(0) / 86_400_000;
            Chosen {
                content: rm::cut(&f.body, &path),
                header: rm::header(&path, age_days),
                mtime_ms: f.mtime_ms,
                path,
            }
        })
        .collect())
}

impl Engine {
    /// The memory directories of a session: the project's auto-memory directory and the
    /// ones its settings name.
    pub(crate) fn memory_dirs(&self, l: &Loaded) -> Vec<PathBuf> {
        let s = &l.row.settings.attachments.relevant_memories;
        let mut dirs = Vec::new();
        if s.auto_memory != Some(false) {
            dirs.push(memories::auto_memory_dir(
                &self.discovery.user_home,
                std::path::Path::new(&l.row.original_cwd),
            ));
        }
        for d in &s.directories {
            dirs.push(std::path::Path::new(&l.row.cwd).join(d));
        }
        dirs
    }

    /// Starts the prefetch for the newest prompt the user typed in `batch` (appended to
    /// `l`, whose records do not hold it yet).
    pub(crate) fn start_memory_prefetch(&self, cell: &SessionCell, l: &Loaded, batch: &[Record]) {
        let settings = &l.row.settings.attachments.relevant_memories;
        if settings.enabled == Some(false) {
            return;
        }
        let Some(prompt) = batch.iter().rev().find(|r| plan_mode::is_turn(r)) else {
            return;
        };
        let query = prompt_text(prompt);
        // A directory that does not exist holds no memory: with none, the scan would find
        // nothing, and a turn costs no task and no trip to the blocking pool for it.
        let mut dirs: Vec<PathBuf> = self.memory_dirs(l);
        dirs.retain(|d| d.is_dir());
        if query.trim().is_empty() || dirs.is_empty() {
            return;
        }
        let selector = match settings.selector {
            MemorySelector::Offline => None,
            MemorySelector::Model => self
                .summaries
                .summariser(l, cell, &self.env)
                .ok()
                .filter(|s| matches!(s.kind(), "anthropic" | "openai")),
        };
        let input = PrefetchInput {
            dirs,
            query,
            surfaced: l.records.surfaced().clone(),
            now: self.clock.now(),
            selector,
            fitted: self.memories.fitted.clone(),
        };
        self.memories.start(&l.row.id, &prompt.uuid, input);
    }

    /// Waits for the prefetch of the newest prompt (the caller bounds the wait) and turns
    /// it into the attachment, leaving out what the view already shows.
    pub(crate) async fn source_memories(&self, input: &SourceInput<'_>) -> Result<Found> {
        let view = &input.view;
        let Some(newest) = view.iter().rev().find(|r| plan_mode::is_turn(r)) else {
            return Ok(Found::default());
        };
        let Some(mut rx) = self.memories.waiting(&input.row.id, &newest.uuid) else {
            return Ok(Found::default());
        };
        let outcome = rx
            .wait_for(Option::is_some)
            .await
            .map_err(|_| Error::Internal("the memory prefetch ended without a result".into()))?
            .clone()
            .ok_or_else(|| Error::Internal("no prefetch result".into()))?;
        let chosen = match outcome.as_ref() {
            Ok(c) => c.clone(),
            Err(why) => {
                // Reported once; the turn goes on without memories.
                self.memories.consumed(&input.row.id, &newest.uuid);
                return Err(Error::Internal(why.clone()));
            }
        };
        let value = rm::attachment(chosen, &rm::surfaced(view));
        let prompt = newest.uuid.clone();
        Ok(Found::of(value, input, Effect::Memories(prompt)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, body: &str) -> MemoryFile {
        MemoryFile {
            path: PathBuf::from(format!("/m/{name}.md")),
            rel: format!("{name}.md"),
            name: name.into(),
            description: format!("about {name}"),
            kind: None,
            body: body.into(),
            mtime_ms: 1,
        }
    }

    /// A prompt ranks against the kept index; a changed file fits a new one; surfaced
    /// files stay in the corpus but are never picked.
    #[test]
    fn a_fitted_index_is_reused_until_a_file_changes() {
        let fitted = FittedIndexes::default();
        let files = vec![
            file("deploy", "tag the release, then run the deploy script"),
            file("testing", "run cargo test before pushing"),
        ];
        let a = fitted.get_or_fit(&files);
        assert!(Arc::ptr_eq(&a, &fitted.get_or_fit(&files)));
        assert_eq!(a.rank("how do I deploy the release", |_| true, 5), [0]);
        assert!(
            a.rank("how do I deploy the release", |i| i != 0, 5)
                .is_empty()
        );
        let mut changed = files.clone();
        changed[1].body = "deploy only from main".into();
        let b = fitted.get_or_fit(&changed);
        assert!(!Arc::ptr_eq(&a, &b));
        assert!(Arc::ptr_eq(&b, &fitted.get_or_fit(&changed)));
        assert!(
            Arc::ptr_eq(&a, &fitted.get_or_fit(&files)),
            "both sets are kept"
        );
    }
}
