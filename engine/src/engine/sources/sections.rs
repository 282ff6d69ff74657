//! System sections for real: the memo of memoized sections (frozen before
//! the compile that first shows them, reset by a compaction, a cwd change or
//! `context.reset_sections`) and the `context.*_section` methods a client registers
//! sections with. Which uncached sections changed is judged against the previous
//! compile's fingerprint (the engine's `cache.rs`), so it survives a reload or a restart.

use std::collections::BTreeMap;

use ctxd_protocol::{
    AckResponse, RemoveSectionParams, SectionCaching, SessionEvent, SetSectionParams, SystemPrompt,
};

use crate::engine::session::loaded::{StyleKey, loaded_mut};
use crate::engine::{Engine, Loaded};
use ctxd_pipeline::limits::MAX_SECTION_BYTES;
use ctxd_pipeline::sections::{self, SectionMemo};
use ctxd_pipeline::system::{self, SystemInputs};
use ctxd_store::error::{Error, Result};
use ctxd_store::sessions;

/// What a loaded session holds of its sections.
#[derive(Debug, Clone, Default)]
pub(crate) struct SectionState {
    pub(crate) memo: Option<SectionMemo>,
}

impl SectionState {
    /// The memo when it belongs to the current history.
    pub(crate) fn texts_for(&self, boundary: &str) -> Option<&BTreeMap<String, String>> {
        self.memo
            .as_ref()
            .filter(|m| m.boundary_uuid == boundary)
            .map(|m| &m.texts)
    }
}

/// The inputs of the sections (what the environment section and the client's sections
/// depend on).
fn inputs<'a>(l: &'a Loaded, now: chrono::DateTime<chrono::FixedOffset>) -> SystemInputs<'a> {
    SystemInputs {
        prompt: l.row.system.as_ref(),
        settings: &l.row.settings,
        cwd: &l.row.cwd,
        additional_directories: &l.row.additional_directories,
        git_snapshot: None,
        platform: l.row.settings.platform.as_deref().unwrap_or(&l.platform),
        section_memo: None,
        now,
        has_mcp_tools: false,
        // Frozen by the capability state (its memo of the first compile), not here.
        mcp_instructions: None,
        output_style: l.selected_output_style(),
    }
}

pub(crate) fn check_section(s: &ctxd_protocol::SystemSection, field: &str) -> Result<()> {
    if s.name.trim().is_empty() {
        return Err(Error::invalid(format!("{field}.name"), "must not be empty"));
    }
    if s.caching == Some(SectionCaching::Uncached) && s.reason.as_deref().is_none_or(str::is_empty)
    {
        return Err(Error::invalid(
            format!("{field}.reason"),
            "uncached sections break the prompt cache when they change; state why",
        ));
    }
    if s.text.len() > MAX_SECTION_BYTES {
        return Err(Error::invalid(
            format!("{field}.text"),
            format!(
                "is {} bytes; a section holds at most {MAX_SECTION_BYTES}",
                s.text.len()
            ),
        ));
    }
    Ok(())
}

impl Loaded {
    /// The output style the session selected, when one was found.
    pub(crate) fn selected_output_style(&self) -> Option<&ctxd_pipeline::system::OutputStyle> {
        self.output_style.as_ref().and_then(|(_, s)| s.as_ref())
    }
}

impl Engine {
    /// Looks the selected output style up (the project's when the project is trusted, the
    /// user's, ctxd's own) when the setting names one not looked up yet, or the cwd or
    /// the trust list changed since.
    fn find_output_style(&self, l: &mut Loaded) {
        let Some(name) = l.row.settings.output_style.clone() else {
            l.output_style = None;
            return;
        };
        let list = ctxd_fs::trust::list_path(&self.home);
        let key = StyleKey {
            name,
            cwd: l.row.cwd.clone(),
            trust_list: crate::hooks::files::stamp(&list),
        };
        if l.output_style.as_ref().is_some_and(|(k, _)| *k == key) {
            return;
        }
        let cwd = std::path::Path::new(&l.row.cwd);
        let trusted = ctxd_fs::trust::is_trusted(&list, cwd);
        let found = crate::discovery::output_styles::find(
            &key.name,
            cwd,
            &self.discovery.user_home,
            trusted,
        );
        if found.is_none() && !key.name.eq_ignore_ascii_case("default") {
            tracing::warn!(session = %l.row.id, style = %key.name, "no output style of this name; the model is told the name only");
        }
        l.output_style = Some((key, found));
    }

    /// Freezes the memoized sections this compile is the first to show (a new history
    /// starts a new memo).
    pub(crate) async fn refresh_sections(
        &self,
        l: &mut Loaded,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<()> {
        self.find_output_style(l);
        let current = l.sections.texts_for(&l.boundary_uuid).cloned();
        let fresh = current.is_none();
        let texts = current.unwrap_or_default();
        let local = now.with_timezone(&l.utc_offset);
        let list = system::dynamic_sections(&inputs(l, local));
        let missing = sections::missing_from_memo(&list, &texts, local);
        if missing.is_empty() && !fresh {
            return Ok(());
        }
        let mut memo = SectionMemo {
            boundary_uuid: l.boundary_uuid.clone(),
            texts,
        };
        memo.texts.extend(missing);
        let (sid, stored) = (l.row.id.clone(), memo.clone());
        self.store
            .write_current(&l.row.id, l.revision, move |tx| {
                ctxd_store::sections::set(tx, &sid, &stored)
            })
            .await?;
        l.sections.memo = Some(memo);
        Ok(())
    }

    /// Changes the session's dynamic sections under its lock; `reset` also drops the memo.
    async fn edit_sections(
        &self,
        sid: &str,
        edit: impl FnOnce(&mut Vec<ctxd_protocol::SystemSection>, &mut Option<SectionMemo>) -> bool
        + Send,
    ) -> Result<bool> {
        let cell = self.cells.cell(sid);
        let mut guard = cell.state.lock().await;
        self.load_or_drop(sid, &mut guard).await?;
        let l = loaded_mut(&mut guard)?;
        let mut row = l.row.clone();
        let mut prompt = row.system.clone().unwrap_or_else(SystemPrompt::default);
        let mut memo = l.sections.memo.clone();
        let changed = edit(&mut prompt.dynamic_sections, &mut memo);
        row.system = Some(prompt);
        row.updated_at = self.now_text();
        let (stored, memo2) = (row.clone(), memo.clone());
        self.store
            .write_current(sid, l.revision, move |tx| {
                sessions::update(tx, &stored)?;
                match &memo2 {
                    Some(m) => ctxd_store::sections::set(tx, &stored.id, m),
                    None => ctxd_store::sections::clear(tx, &stored.id),
                }
            })
            .await?;
        l.row = row;
        l.sections.memo = memo;
        drop(guard);
        self.emit(
            &cell,
            SessionEvent::SessionUpdated {
                session_id: sid.to_string(),
            },
        );
        Ok(changed)
    }

    /// `context.set_section`: registers (or replaces, by name) a dynamic section. A
    /// memoized section keeps the text it first showed until the memo is reset.
    pub async fn set_section(&self, p: SetSectionParams) -> Result<AckResponse> {
        check_section(&p.section, "section")?;
        let section = p.section;
        self.edit_sections(&p.session_id, move |list, _| {
            match list.iter_mut().find(|s| s.name == section.name) {
                Some(slot) => *slot = section,
                None => list.push(section),
            }
            true
        })
        .await
        .map(|ok| AckResponse { ok })
    }

    /// `context.remove_section`: its memoized text goes too, so registering it again
    /// computes it afresh. `ok` is false when no such section was registered.
    pub async fn remove_section(&self, p: RemoveSectionParams) -> Result<AckResponse> {
        let name = p.name;
        self.edit_sections(&p.session_id, move |list, memo| {
            let before = list.len();
            list.retain(|s| s.name != name);
            if let Some(m) = memo {
                m.texts.remove(&name);
            }
            list.len() != before
        })
        .await
        .map(|ok| AckResponse { ok })
    }

    /// `context.reset_sections`: the next compile computes every memoized section again.
    pub async fn reset_sections(&self, sid: &str) -> Result<AckResponse> {
        self.edit_sections(sid, |_, memo| {
            *memo = None;
            true
        })
        .await
        .map(|ok| AckResponse { ok })
    }
}
