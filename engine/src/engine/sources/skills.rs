//! Skills at the engine: one catalog per set of skill places (shared by the sessions of a
//! project), rescanned only when the watcher reports a change in one of its directories
//! (or, with no working watcher, when a stamp of its files changed); the per-compile
//! `skill_listing`; conditional activation by touched paths; the post-compact restore of
//! invoked skills.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use ctxd_protocol::{SessionEvent, SkillInfo, SkillsResponse, SkippedSkill};
use serde_json::Value;

use crate::discovery::skills::{Scan, SkillDef, SkillRoots, body, scan};
use crate::engine::session::loaded::loaded_mut;
use crate::engine::sources::files::file_tool_path;
use crate::engine::{Engine, Loaded, SessionCell};
use crate::watch::FileWatcher;
use ctxd_pipeline::skills::{self as listing, Entry, Invoked};
use ctxd_pipeline::sync::lock;
use ctxd_store::context_state;
use ctxd_store::error::{Error, Result};

/// The skills of one set of places.
pub(crate) struct Catalog {
    pub(crate) roots: SkillRoots,
    state: Mutex<CatalogState>,
}

#[derive(Default)]
struct CatalogState {
    scan: Option<Arc<Scan>>,
    /// Bumped by every rescan.
    generation: u64,
    dirty: bool,
    /// Watcher reports so far: a rescan clears `dirty` only if none came in while it ran.
    changes: u64,
    /// Directories watched for this catalog.
    watched: Vec<PathBuf>,
    /// Sessions told when it changes.
    sessions: BTreeSet<String>,
    /// mtimes of the scanned directories and files, for when no watcher is trusted.
    stamps: Vec<(PathBuf, Option<SystemTime>)>,
}

/// Every catalog of the engine, by places.
#[derive(Default)]
pub(crate) struct SkillCatalogs {
    map: Mutex<HashMap<SkillRoots, Arc<Catalog>>>,
    /// `context.touch_paths` calls so far: touched paths that no record shows.
    touches: AtomicU64,
}

impl SkillCatalogs {
    /// Paths were touched by RPC: conditional skills must look at them.
    pub(crate) fn touched(&self) {
        self.touches.fetch_add(1, Ordering::Relaxed);
    }
}

fn stamps(scan: &Scan) -> Vec<(PathBuf, Option<SystemTime>)> {
    scan.dirs
        .iter()
        .chain(scan.skills.iter().map(|s| &s.path))
        .map(|p| {
            (
                p.clone(),
                std::fs::metadata(p).and_then(|m| m.modified()).ok(),
            )
        })
        .collect()
}

/// A catalog's skills at one moment.
pub(crate) struct Snapshot {
    pub(crate) scan: Arc<Scan>,
    pub(crate) generation: u64,
}

impl SkillCatalogs {
    /// The catalog of a session's places (created on first use).
    fn catalog(&self, sid: &str, cwd: &str, user_home: &Path) -> Arc<Catalog> {
        let roots = SkillRoots::new(Path::new(cwd), user_home);
        let c = lock(&self.map)
            .entry(roots.clone())
            .or_insert_with(|| {
                Arc::new(Catalog {
                    roots,
                    state: Mutex::new(CatalogState {
                        dirty: true,
                        ..Default::default()
                    }),
                })
            })
            .clone();
        lock(&c.state).sessions.insert(sid.to_string());
        c
    }

    /// The catalog's skills, rescanned first when something changed. Without a trusted
    /// `watcher` the scanned files' stamps are checked on every call.
    async fn now(&self, c: &Arc<Catalog>, watcher: Option<&FileWatcher>) -> Result<Snapshot> {
        let trusted = watcher.is_some_and(|w| !w.is_degraded());
        let (stale, old_stamps, changes) = {
            let st = lock(&c.state);
            let stale = st.dirty || st.scan.is_none();
            if let (false, true, Some(scan)) = (stale, trusted, &st.scan) {
                // The watcher vouches for it: no trip to the disk.
                return Ok(Snapshot {
                    scan: scan.clone(),
                    generation: st.generation,
                });
            }
            (stale, st.stamps.clone(), st.changes)
        };
        let roots = c.roots.clone();
        let fresh = tokio::task::spawn_blocking(move || {
            if !stale
                && old_stamps
                    .iter()
                    .all(|(p, t)| std::fs::metadata(p).and_then(|m| m.modified()).ok() == *t)
            {
                return None;
            }
            let s = scan(&roots);
            let st = stamps(&s);
            Some((s, st))
        })
        .await
        .map_err(|e| Error::Internal(format!("skill scan: {e}")))?;
        let mut st = lock(&c.state);
        if let Some((s, stamps)) = fresh {
            let old = std::mem::take(&mut st.watched);
            if let Some(w) = watcher {
                // Watch the new set before dropping the old one: shared directories keep
                // their OS watch.
                for d in &s.dirs {
                    w.watch_dir(d);
                }
                for d in &old {
                    w.unwatch_dir(d);
                }
            }
            st.watched.clone_from(&s.dirs);
            st.scan = Some(Arc::new(s));
            st.stamps = stamps;
            st.generation += 1;
            // A report that arrived during the scan may describe what the scan missed.
            st.dirty = st.changes != changes;
        }
        match &st.scan {
            Some(scan) => Ok(Snapshot {
                scan: scan.clone(),
                generation: st.generation,
            }),
            None => Err(Error::Internal("skill catalog without a scan".into())),
        }
    }

    /// A session unloaded or deleted is no longer told of changes; a catalog no session
    /// uses any more stops watching and goes (the next session on those places scans
    /// again).
    pub(crate) fn forget(&self, sid: &str, watcher: Option<&FileWatcher>) {
        let mut map = lock(&self.map);
        let unused: Vec<SkillRoots> = map
            .iter()
            .filter_map(|(roots, c)| {
                let mut st = lock(&c.state);
                st.sessions.remove(sid);
                st.sessions.is_empty().then(|| roots.clone())
            })
            .collect();
        for roots in unused {
            if let Some(c) = map.remove(&roots) {
                let watched = std::mem::take(&mut lock(&c.state).watched);
                if let Some(w) = watcher {
                    for d in &watched {
                        w.unwatch_dir(d);
                    }
                }
            }
        }
    }

    /// The watcher saw a change in `dir` (or lost track of everything: `None`): the
    /// catalogs it matters to scan again, and the sessions to tell.
    fn changed(&self, dir: Option<&Path>) -> Vec<String> {
        let catalogs: Vec<Arc<Catalog>> = lock(&self.map).values().cloned().collect();
        let mut told = Vec::new();
        for c in catalogs {
            let mut st = lock(&c.state);
            let matters = match (dir, &st.scan) {
                (None, _) => true,
                (Some(_), None) => false,
                (Some(d), Some(scan)) => scan.matters(d),
            };
            if !matters {
                continue;
            }
            st.dirty = true;
            st.changes += 1;
            told.extend(st.sessions.iter().cloned());
        }
        told
    }
}

impl Engine {
    /// Tells the sessions whose skills `dir` holds (all, for `None`) that they changed.
    pub(crate) fn skills_changed(&self, dir: Option<&Path>) {
        for sid in self.skills.changed(dir) {
            let cell = self.cells.cell(&sid);
            self.emit(
                &cell,
                SessionEvent::CapabilitiesChanged {
                    session_id: sid,
                    what: "skills".into(),
                },
            );
        }
    }

    /// Reports skipped skill files the session has not been told about.
    fn warn_skipped(&self, cell: &SessionCell, l: &mut Loaded, scan: &Scan) {
        for (path, reason) in &scan.skipped {
            let key = (path.display().to_string(), reason.clone());
            if l.caps.warned.insert(key.clone()) {
                tracing::warn!(session = %l.row.id, path = %key.0, "skill skipped: {reason}");
                self.emit(
                    cell,
                    SessionEvent::Warning {
                        session_id: l.row.id.clone(),
                        source: "skills".into(),
                        path: Some(key.0),
                        message: format!("skill skipped: {reason}"),
                    },
                );
            }
        }
    }

    /// The catalog of the session, scanned.
    pub(crate) async fn session_skills(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
    ) -> Result<Snapshot> {
        let c = match &l.caps.catalog {
            Some(c) if c.0 == l.row.cwd => c.1.clone(),
            _ => {
                let c = self
                    .skills
                    .catalog(&l.row.id, &l.row.cwd, &self.discovery.user_home);
                l.caps.catalog = Some((l.row.cwd.clone(), c.clone()));
                c
            }
        };
        let snap = self.skills.now(&c, self.watches.watcher()).await?;
        if l.caps.skills_seen.map(|s| s.0) != Some(snap.generation) {
            self.warn_skipped(cell, l, &snap.scan);
        }
        Ok(snap)
    }

    /// This compile's `skill_listing`, if any, and the catalog generation it saw:
    /// unconditional skills not announced yet (or changed since), conditional ones whose
    /// paths the agent touched, removals. When neither the catalog nor the sent-set moved
    /// since the last compile, only touched paths are looked at (and nothing at all when
    /// no conditional skill waits), so a compile is not O(skills).
    pub(crate) async fn skill_listing(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
    ) -> Result<(Option<Value>, u64)> {
        let snap = self.session_skills(cell, l).await?;
        let sent_records = l.caps.ledger.sent_skills.records;
        let unchanged = l.caps.skills_seen == Some((snap.generation, sent_records));
        if !unchanged || l.caps.dormant.is_none() {
            let sent = &l.caps.ledger.sent_skills;
            l.caps.dormant = Some(
                snap.scan
                    .skills
                    .iter()
                    .any(|s| s.paths.is_some() && !sent.contains(&s.name)),
            );
        }
        let dormant = l.caps.dormant.unwrap_or(false);
        if unchanged && !dormant {
            return Ok((None, snap.generation));
        }
        // Paths are touched by file tools in appended records or by `touch_paths`; when
        // neither happened since the last look, the touched set is empty.
        let touches = self.skills.touches.load(Ordering::Relaxed);
        let (looked, seen_touches) = l.caps.touch_seen;
        let cwd = l.row.cwd.clone();
        let new_uses = l.records[looked.min(l.records.len())..].iter().any(|r| {
            r.content.iter().any(|b| {
                matches!(b, ctxd_protocol::ContentBlock::ToolUse { name, input, .. }
                    if file_tool_path(name, input, &cwd).is_some())
            })
        });
        l.caps.touch_seen = (l.records.len(), touches);
        let touched: Vec<PathBuf> = if dormant && (new_uses || touches != seen_touches) {
            let sid = l.row.id.clone();
            self.store
                .read(move |c| context_state::touched(c, &sid))
                .await?
                .into_iter()
                .map(PathBuf::from)
                .collect()
        } else {
            Vec::new()
        };
        if unchanged && touched.is_empty() {
            return Ok((None, snap.generation));
        }
        let sent = &l.caps.ledger.sent_skills;
        let mut entries: Vec<Entry<'_>> = Vec::new();
        for s in &snap.scan.skills {
            let wanted = match &s.paths {
                None => !sent.covers(&s.name, &s.sig),
                Some(_) if sent.contains(&s.name) => !sent.covers(&s.name, &s.sig),
                Some(globs) => touched
                    .iter()
                    .any(|t| crate::discovery::paths_match(globs, &s.base, t)),
            };
            if wanted {
                entries.push(Entry {
                    name: &s.name,
                    description: &s.description,
                    when_to_use: s.when_to_use.as_deref(),
                    sig: &s.sig,
                });
            }
        }
        let present: BTreeSet<&str> = snap.scan.skills.iter().map(|s| s.name.as_str()).collect();
        let removed: Vec<String> = sent
            .names()
            .filter(|n| sent.listed_by_us(n) && !present.contains(n))
            .map(str::to_string)
            .collect();
        let payload = listing::listing(
            &entries,
            &removed,
            listing::listing_budget(l.row.model.context_window),
            sent.is_empty(),
        );
        Ok((payload, snap.generation))
    }

    /// The skill named `name` in the session's catalog.
    pub(crate) async fn find_skill(
        &self,
        cell: &SessionCell,
        l: &mut Loaded,
        name: &str,
    ) -> Result<Option<SkillDef>> {
        let snap = self.session_skills(cell, l).await?;
        Ok(snap.scan.skills.iter().find(|s| s.name == name).cloned())
    }

    /// The `invoked_skills` restore of a new history: invoked skills newest first, as
    /// their files read now, within the caps.
    pub(crate) async fn invoked_restore(&self, l: &Loaded) -> Result<Option<Value>> {
        let mut invoked: Vec<(u64, String)> = l
            .caps
            .ledger
            .invocations(&l.records)
            .into_iter()
            .map(|(n, s)| (s, n))
            .chain(l.caps.state.invoked.iter().map(|s| (s.seq, s.name.clone())))
            .collect();
        if invoked.is_empty() {
            return Ok(None);
        }
        invoked.sort_by(|a, b| b.cmp(a));
        let catalog = match &l.caps.catalog {
            Some((_, c)) => c.clone(),
            None => self
                .skills
                .catalog(&l.row.id, &l.row.cwd, &self.discovery.user_home),
        };
        let snap = self.skills.now(&catalog, self.watches.watcher()).await?;
        let mut seen = BTreeSet::new();
        let wanted: Vec<(String, PathBuf)> = invoked
            .into_iter()
            .filter(|(_, n)| seen.insert(n.clone()))
            .filter_map(|(_, n)| {
                let s = snap.scan.skills.iter().find(|s| s.name == n)?;
                Some((n, s.path.clone()))
            })
            .collect();
        let read = tokio::task::spawn_blocking(move || {
            wanted
                .into_iter()
                .filter_map(|(name, path)| {
                    Some(Invoked {
                        content: body(&path)?,
                        path: path.display().to_string(),
                        name,
                    })
                })
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| Error::Internal(format!("skill read: {e}")))?;
        Ok(listing::restore(&read))
    }

    /// `capabilities.skills`.
    pub async fn skills(&self, sid: &str) -> Result<SkillsResponse> {
        let cell = self.cells.cell(sid);
        let mut guard = cell.state.lock().await;
        self.load_or_drop(sid, &mut guard).await?;
        let l = loaded_mut(&mut guard)?;
        l.refresh_ledger();
        let snap = self.session_skills(&cell, l).await?;
        let sent = &l.caps.ledger.sent_skills;
        let invoked: BTreeSet<&str> = l
            .caps
            .ledger
            .invoked
            .keys()
            .map(String::as_str)
            .chain(l.caps.state.invoked.iter().map(|s| s.name.as_str()))
            .collect();
        let skills = snap
            .scan
            .skills
            .iter()
            .map(|s| {
                let state = if sent.is_omitted(&s.name) && sent.covers(&s.name, &s.sig) {
                    "omitted"
                } else if sent.covers(&s.name, &s.sig) {
                    "listed"
                } else if s.paths.is_some() && !sent.contains(&s.name) {
                    "dormant"
                } else {
                    "pending"
                };
                SkillInfo {
                    name: s.name.clone(),
                    description: s.description.clone(),
                    when_to_use: s.when_to_use.clone(),
                    source: s.source.as_str().into(),
                    path: s.path.display().to_string(),
                    paths: s.paths.clone().unwrap_or_default(),
                    base: s.base.display().to_string(),
                    state: state.into(),
                    invoked: invoked.contains(s.name.as_str()),
                    allowed_tools: s.allowed_tools.clone(),
                    model: s.model.clone(),
                }
            })
            .collect();
        let present: BTreeSet<&str> = snap.scan.skills.iter().map(|s| s.name.as_str()).collect();
        Ok(SkillsResponse {
            skills,
            removed: sent
                .names()
                .filter(|n| sent.listed_by_us(n) && !present.contains(n))
                .map(str::to_string)
                .collect(),
            skipped: snap
                .scan
                .skipped
                .iter()
                .map(|(p, r)| SkippedSkill {
                    path: p.display().to_string(),
                    reason: r.clone(),
                })
                .collect(),
            listing_budget_chars: listing::listing_budget(l.row.model.context_window) as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ctxd_protocol::CompileParams;

    use crate::engine::{DiscoveryDefaults, Engine};
    use ctxd_pipeline::clock::FixedClock;
    use ctxd_store::Store;

    /// Catalogs live while a loaded session uses them: many projects on a daemon that
    /// keeps few sessions loaded do not pile up scans and directory watches.
    #[tokio::test]
    async fn skill_catalogs_go_with_the_last_session_using_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let engine = Engine::new(
            Store::open(&root.join("t.db")).unwrap(),
            &root.join("home"),
            Arc::new(FixedClock("2026-03-01T10:00:00Z".parse().unwrap())),
        )
        .with_limits(ctxd_pipeline::limits::Limits {
            max_loaded_sessions: 2,
            ..Default::default()
        })
        .with_discovery(DiscoveryDefaults {
            managed_root: root.join("managed"),
            user_home: root.join("user"),
        });
        let mut ids = Vec::new();
        for i in 0..6 {
            let project = root.join(format!("p{i}"));
            let skill = project.join(".claude/skills/review");
            std::fs::create_dir_all(&skill).unwrap();
            std::fs::write(
                skill.join("SKILL.md"),
                "---\nname: review\ndescription: Reviews.\n---\nBody",
            )
            .unwrap();
            let sid = crate::engine::test_support::session(&engine, &project).await;
            engine
                .compile(CompileParams {
                    session_id: sid.clone(),
                    ..Default::default()
                })
                .await
                .unwrap();
            ids.push(sid);
        }
        let catalogs = ctxd_pipeline::sync::lock(&engine.skills.map).len();
        assert!(catalogs <= 2, "{catalogs} catalogs for 2 loaded sessions");
        for id in &ids {
            engine.delete_session(id).await.unwrap();
        }
        assert_eq!(ctxd_pipeline::sync::lock(&engine.skills.map).len(), 0);
    }
}
