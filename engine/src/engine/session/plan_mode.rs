//! `session.set_plan_mode`: the plan-mode switch. The reminders
//! themselves are decided at each compile from the transcript (pipeline/reminders/plan_mode.rs).

use ctxd_protocol::{PlanModeParams, PlanModeResponse, SessionEvent};

use crate::engine::Engine;
use crate::engine::session::loaded::loaded_mut;
use ctxd_pipeline::limits::MAX_PLAN_BYTES;
use ctxd_store::error::{Error, Result};
use ctxd_store::sessions::{self, SessionRow};

impl Engine {
    /// The plan state a new history re-announces (see `plan_mode::after_compaction`).
    pub(crate) fn plan_after_compaction(&self, row: &SessionRow) -> Vec<serde_json::Value> {
        let path = self.plan_file_path(row);
        let text = if self.plan_file_allowed(row, &path) {
            ctxd_fs::safe_read::read_text(&path, MAX_PLAN_BYTES, "MAX_PLAN_BYTES").ok()
        } else {
            tracing::warn!(session = %row.id, path = %path.display(), "plan file outside the workspace: not read");
            None
        };
        ctxd_pipeline::plan_mode::after_compaction(
            row.settings.plan_mode,
            &path.display().to_string(),
            text.as_deref(),
        )
    }

    /// ctxd reads the plan file itself, with the daemon's permissions: only inside the
    /// session's workspace or its own session directory (symlinks resolved).
    fn plan_file_allowed(&self, row: &SessionRow, path: &std::path::Path) -> bool {
        let mut roots = crate::discovery::workspace_roots(&row.cwd, &row.additional_directories);
        roots.push(crate::discovery::canonicalish(&self.session_dir(&row.id)));
        crate::discovery::inside_any(path, &roots)
    }

    pub async fn set_plan_mode(&self, p: PlanModeParams) -> Result<PlanModeResponse> {
        if let Some(f) = &p.plan_file
            && f.trim().is_empty()
        {
            return Err(Error::invalid(
                "plan_file",
                "must name a file (omit it to keep the current one)",
            ));
        }
        let cell = self.cells.cell(&p.session_id);
        let mut guard = cell.state.lock().await;
        self.load_or_drop(&p.session_id, &mut guard).await?;
        let l = loaded_mut(&mut guard)?;
        let mut row = l.row.clone();
        row.settings.plan_mode = p.enabled;
        if let Some(f) = p.plan_file {
            row.settings.plan_file = Some(f);
            let path = self.plan_file_path(&row);
            if !self.plan_file_allowed(&row, &path) {
                return Err(Error::invalid(
                    "plan_file",
                    format!(
                        "{} is outside the session's workspace (cwd and additional directories)",
                        path.display()
                    ),
                ));
            }
        }
        row.updated_at = self.now_text();
        let stored = row.clone();
        self.store
            .write_current(&p.session_id, l.revision, move |tx| {
                sessions::update(tx, &stored)
            })
            .await?;
        l.row = row;
        let path = self.plan_file_path(&l.row);
        let p2 = path.clone();
        let plan_exists = tokio::task::spawn_blocking(move || p2.is_file())
            .await
            .map_err(|e| Error::Internal(format!("plan file check: {e}")))?;
        drop(guard);
        self.emit(
            &cell,
            SessionEvent::SessionUpdated {
                session_id: p.session_id.clone(),
            },
        );
        Ok(PlanModeResponse {
            plan_mode: p.enabled,
            plan_file: path.display().to_string(),
            plan_exists,
        })
    }
}
