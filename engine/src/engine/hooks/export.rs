//! The session exported as Claude Code JSONL, for hooks when the client names no
//! transcript of its own: each export appends only the records added since the last,
//! and a failed one makes the next rewrite the file whole.

use std::path::Path;

use super::Facts;
use super::state::HookState;
use crate::hooks::transcript;
use ctxd_pipeline::sync::lock;
use ctxd_store::Store;
use ctxd_store::error::Result;

impl HookState {
    /// Appends the records since the last export. A failed export forgets its mark, so
    /// the next one rewrites the file whole: a torn or repeated page never stays.
    pub(super) async fn export_transcript(
        &self,
        store: &Store,
        f: &Facts,
        path: &Path,
    ) -> Result<()> {
        let mark = lock(&self.exported)
            .entry(f.id.clone())
            .or_default()
            .clone();
        let mut mark = mark.lock().await;
        let result = export_since(store, f, path, &mut mark).await;
        if result.is_err() {
            *mark = None;
        }
        result
    }
}

async fn export_since(store: &Store, f: &Facts, path: &Path, mark: &mut Option<u64>) -> Result<()> {
    const PAGE: u32 = 1_000;
    let mut after = match *mark {
        Some(seq) if path.exists() => seq,
        _ => 0,
    };
    let mut truncate = after == 0;
    loop {
        let (sid, from) = (f.id.clone(), after);
        let page = store
            .read(move |c| ctxd_store::records::page(c, &sid, from, PAGE))
            .await?;
        let Some(last) = page.last().map(|r| r.seq) else {
            break;
        };
        let mut text = String::new();
        for r in &page {
            text.push_str(&transcript::line(r, &f.id, &f.cwd));
            text.push('\n');
        }
        write_lines(path, text, truncate).await?;
        truncate = false;
        after = last;
        *mark = Some(after);
    }
    if truncate {
        write_lines(path, String::new(), true).await?;
    }
    *mark = Some(after);
    Ok(())
}

async fn write_lines(path: &Path, text: String, truncate: bool) -> Result<()> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        use std::io::Write;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(!truncate)
            .truncate(truncate)
            .open(&path)?;
        f.write_all(text.as_bytes())
    })
    .await
    .map_err(|e| ctxd_store::error::Error::Internal(format!("transcript export task: {e}")))?
    .map_err(|e| ctxd_store::error::Error::Internal(format!("transcript export: {e}")))
}
