//! Several daemons, one database (a shared PostgreSQL store).
//!
//! - **Current copies.** Every write transaction bumps the session's revision. Before a
//!   loaded session is used, its stored revision is read: if every revision since the copy
//!   was loaded is this daemon's own (written through the copy), the copy is current;
//!   otherwise another daemon wrote and the copy is reloaded. A compile is then the same
//!   bytes whichever daemon runs it (a reload compiles what a restart would).
//! - **Events.** What a daemon emits is published (`NOTIFY`); each daemon passes the
//!   others' notes to its own subscribers. Appends are announced by the transaction that
//!   stored them and reach subscribers as `records_appended` read from the store.
//! - **Files.** Persisted tool outputs are rows; a daemon that loads a session writes the
//!   files it lacks (create-once) at the path the replacement text names, and keeps the
//!   session-memory mirror in step with the stored document.
//!
//! On SQLite (one daemon per database) none of this runs.

use std::path::{Component, Path};

use ctxd_protocol::SessionEvent;

use crate::engine::compile;
use crate::engine::{Engine, Loaded};
use ctxd_store::error::Result;
use ctxd_store::{Remote, RemoteWhat, memory, outputs, records};

/// The session a note or event is about.
fn session_of(event: &SessionEvent) -> Option<String> {
    serde_json::to_value(event)
        .ok()?
        .get("session_id")?
        .as_str()
        .map(str::to_string)
}

/// A persisted output may only be written where ctxd itself writes them:
/// `…/sessions/SID/tool-results/FILE`, absolute, with no `.` or `..` steps.
fn output_path_ok(path: &Path) -> bool {
    let names: Vec<&str> = path
        .components()
        .map(|c| match c {
            Component::Normal(n) => n.to_str(),
            Component::RootDir => Some(""),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default();
    path.is_absolute()
        && names.len() >= 5
        && names[names.len() - 2] == "tool-results"
        && names[names.len() - 4] == "sessions"
}

impl Engine {
    /// Drops a loaded copy that another daemon's writes made stale (the caller reloads
    /// it); keeps the announced warning level across the reload.
    pub(crate) async fn check_current(
        &self,
        id: &str,
        slot: &mut Option<Loaded>,
    ) -> Result<Option<&'static str>> {
        if !self.store.shared() {
            return Ok(None);
        }
        let Some(l) = slot.as_mut() else {
            return Ok(None);
        };
        match self.store.still_current(id, l.revision).await? {
            Some(now) => {
                l.revision = now;
                Ok(None)
            }
            None => {
                tracing::debug!(
                    session = id,
                    loaded = l.revision,
                    "written elsewhere: reloading"
                );
                let level = l.level;
                *slot = None;
                Ok(Some(level))
            }
        }
    }

    /// Publishes an event for the subscribers of the other daemons of a shared store.
    pub(crate) fn publish(&self, event: &SessionEvent) {
        let Some(from) = self.store.instance() else {
            return;
        };
        match event {
            // Announced by the transaction that stored them, exactly when it commits.
            SessionEvent::RecordsAppended { .. }
            // Answered here only: the compaction waiting for it runs on this daemon.
            | SessionEvent::SummaryRequested { .. }
            // Made per subscription.
            | SessionEvent::Lagged { .. } => return,
            _ => {}
        }
        let Some(session_id) = session_of(event) else {
            return;
        };
        self.store.publish(&Remote {
            from: from.to_string(),
            session_id,
            what: RemoteWhat::Event(event.clone()),
        });
    }

    /// Hands the other daemons' notes to this daemon's subscribers, for as long as the
    /// engine lives.
    pub fn start_remote(self: &std::sync::Arc<Self>) {
        let Some(mut notes) = self.store.remote() else {
            return;
        };
        let weak = std::sync::Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some(note) = notes.recv().await {
                let Some(engine) = weak.upgrade() else { break };
                engine.on_remote(note).await;
            }
        });
    }

    async fn on_remote(&self, note: Remote) {
        let sid = note.session_id;
        if let RemoteWhat::Event(SessionEvent::MemoryUpdated { .. }) = &note.what
            && self.session_dir(&sid).exists()
            && let Err(e) = self.refresh_memory_mirror(&sid).await
        {
            tracing::warn!(session = %sid, error = %e, "could not refresh the session-memory mirror");
        }
        let Some(cell) = self.cells.live_cell(&sid) else {
            return;
        };
        if !cell.has_subscribers() {
            return;
        }
        let event = match note.what {
            RemoteWhat::Event(e) => e,
            RemoteWhat::Appended {
                first_seq,
                last_seq,
            } => {
                let (s, after) = (sid.clone(), first_seq.saturating_sub(1));
                let n = u32::try_from(last_seq.saturating_sub(after)).unwrap_or(u32::MAX);
                let page = self
                    .store
                    .read(move |c| records::page(c, &s, after, n))
                    .await;
                let Ok(page) = page else {
                    // Subscribers fill the gap from the store with the next append.
                    return;
                };
                crate::engine::appended_event(&sid, &page)
            }
        };
        cell.send(event);
    }

    /// Writes the session's persisted outputs this machine lacks (create-once), so the
    /// paths its compiles show are readable here. Failures are logged: the bytes of a
    /// compile never depend on them, and the next load tries again.
    pub(crate) async fn materialise_outputs(&self, sid: &str) {
        let s = sid.to_string();
        let listed = match self.store.read(move |c| outputs::list(c, &s)).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(session = sid, error = %e, "could not list persisted outputs");
                return;
            }
        };
        for (path, len) in listed {
            let p = Path::new(&path);
            if std::fs::metadata(p).is_ok_and(|m| m.len() == len) {
                continue;
            }
            let (Some(dir), Some(name)) = (p.parent(), p.file_name().and_then(|n| n.to_str()))
            else {
                continue;
            };
            if !output_path_ok(p) {
                tracing::warn!(
                    session = sid,
                    path,
                    "refusing to write a persisted output outside a tool-results directory"
                );
                continue;
            }
            let (s, q) = (sid.to_string(), path.clone());
            let written = match self.store.read(move |c| outputs::content(c, &s, &q)).await {
                Ok(Some(content)) => compile::write_once(dir, name, content)
                    .await
                    .map_err(|e| e.to_string()),
                Ok(None) => Ok(()),
                Err(e) => Err(e.to_string()),
            };
            if let Err(e) = written {
                tracing::warn!(session = sid, path, error = %e, "could not write a persisted output");
            }
        }
    }

    /// Rewrites `summary.md` when it differs from the stored document.
    pub(crate) async fn refresh_memory_mirror(&self, sid: &str) -> Result<()> {
        let s = sid.to_string();
        let Some(row) = self.store.read(move |c| memory::get(c, &s)).await? else {
            return Ok(());
        };
        self.mirror_if_changed(sid, &row.document).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_written_only_into_tool_results_directories() {
        assert!(output_path_ok(Path::new(
            "/home/u/.local/share/ctxd/sessions/S/tool-results/t1.txt"
        )));
        assert!(!output_path_ok(Path::new("/etc/passwd")));
        assert!(!output_path_ok(Path::new(
            "/h/sessions/S/tool-results/../../../../etc/x"
        )));
        assert!(!output_path_ok(Path::new(
            "relative/sessions/S/tool-results/x"
        )));
        assert!(!output_path_ok(Path::new("/h/sessions/S/other/x")));
    }

    #[test]
    fn events_name_their_session() {
        let e = SessionEvent::SessionUpdated {
            session_id: "s1".into(),
        };
        assert_eq!(session_of(&e).as_deref(), Some("s1"));
    }
}
