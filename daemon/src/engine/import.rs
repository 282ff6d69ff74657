//! Import of a Claude Code transcript as a new session.

use std::collections::BTreeMap;

use ctxd_protocol::*;

use super::Engine;
use super::session::insert_batch;
use super::validate::validate_batch;
use crate::error::{Error, Result};
use crate::pipeline::budget::Fate;
use crate::store::context_state::{self, InstructionMemo};
use crate::store::{fates, sessions};

impl Engine {
    /// Imports a Claude Code transcript as a new session, all or nothing.
    pub async fn import_claude_code(
        &self,
        mut p: SessionImportParams,
    ) -> Result<(SessionInfo, ImportStats)> {
        // Milliseconds of CPU for a long transcript: off the async workers.
        let jsonl = std::mem::take(&mut p.jsonl);
        let (imported, inputs) = tokio::task::spawn_blocking(move || {
            let mut imported = crate::import::claude_code::parse(&jsonl)
                .map_err(|e| Error::invalid("jsonl", e.to_string()))?;
            let mut inputs = std::mem::take(&mut imported.records);
            validate_batch(&mut inputs).map_err(|e| match e {
                Error::Invalid { field, message } => {
                    Error::invalid(format!("jsonl: {field}"), message)
                }
                other => other,
            })?;
            Ok::<_, Error>((imported, inputs))
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
        let now = self.now_text();
        // Like Claude Code on resume: every imported result counts as already seen, kept
        // whole unless a content-replacement line says what the model saw instead.
        let mut import_fates: BTreeMap<String, Fate> = inputs
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
        let r = row.clone();
        self.store
            .write(&row.id, move |tx| {
                sessions::insert(tx, &r)?;
                let built = insert_batch(tx, &r.id, inputs, None, &now)?;
                let seq = built.last().map_or(0, |b| b.seq);
                fates::insert(tx, &r.id, fates::BUDGET, &import_fates, seq)?;
                let memo = InstructionMemo {
                    claude_md,
                    boundary_uuid: super::last_boundary_uuid(&built),
                    announced_date: r.start_date.clone(),
                };
                context_state::set_memo(tx, &r.id, &memo)?;
                context_state::add_loaded(tx, &r.id, &loaded)?;
                Ok(())
            })
            .await?;
        let info = self.get_session(&row.id).await?;
        for w in &imported.stats.warnings {
            tracing::warn!(session = %row.id, "import: {w}");
        }
        Ok((info, imported.stats))
    }
}
