//! Relevant memories: which memory files to show for the
//! newest prompt, how much of each, and how they read. Pure: the engine scans the
//! directories and reads the files (prefetch), this module scores, cuts and renders.
//!
//! * **Scoring** (offline selector): BM25 (the `bm25` crate's English tokenizer: Unicode
//!   normalisation, stop words, stemming) over one document per file — its name three
//!   times, its description twice, its body once, so a match in the name outweighs one
//!   in the body — against the prompt. Files scoring at least `RELATIVE_CUTOFF` of the
//!   best are kept, best first (ties by path), at most [`MAX_FILES`].
//! * **Caps**: at most [`MAX_FILES`] files per prompt, each cut to `MAX_LINES` lines and
//!   `MAX_BYTES` bytes with a note saying so, within a session budget of
//!   `SESSION_BUDGET` bytes counted over the projection (so a compaction frees it).
//! * **No repeats**: a file already surfaced in the projection, or read by the model
//!   there, is never surfaced again.
//! * **Stable bytes**: the header (with the file's age) is computed when the attachment
//!   is made and stored in it, so rendering never depends on the clock.

use super::kinds::RELEVANT_MEMORIES;
use std::collections::BTreeSet;

use bm25::{Embedder, EmbedderBuilder, Language, Scorer};
use ctxd_protocol::{ContentBlock, Record, RecordKind};
use serde_json::{Value, json};

pub const MAX_FILES: usize = 5;
pub(crate) const MAX_LINES: usize = 200;
pub(crate) const MAX_BYTES: usize = 4 * 1024;
pub(crate) const SESSION_BUDGET: usize = 60 * 1024;
/// Files scoring below this share of the best score are not relevant enough.
pub(crate) const RELATIVE_CUTOFF: f32 = 0.4;

/// A memory file as the scorer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate<'a> {
    pub path: &'a str,
    pub name: &'a str,
    pub description: &'a str,
    pub body: &'a str,
}

/// Indices of the candidates relevant to `query`, best first, at most `limit`.
pub fn score(query: &str, candidates: &[Candidate<'_>], limit: usize) -> Vec<usize> {
    Index::build(candidates).rank(query, |_| true, limit)
}

/// The scorer fitted to a set of memory files. Fitting (the corpus statistics and every
/// file's embedding) is most of a selection's cost, so the engine keeps an index while
/// the files stay the same and only ranks per prompt.
pub struct Index {
    embedder: Embedder,
    scorer: Scorer<usize>,
    paths: Vec<String>,
}

impl Index {
    pub fn build(candidates: &[Candidate<'_>]) -> Index {
        let docs: Vec<String> = candidates
            .iter()
            .map(|c| {
                format!(
                    "{n} {n} {n}\n{d} {d}\n{b}",
                    n = c.name.replace(['-', '_'], " "),
                    d = c.description,
                    b = c.body
                )
            })
            .collect();
        let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
        let embedder: Embedder =
            EmbedderBuilder::with_fit_to_corpus(Language::English, &refs).build();
        let mut scorer = Scorer::<usize>::new();
        for (i, d) in refs.iter().enumerate() {
            scorer.upsert(&i, embedder.embed(d));
        }
        Index {
            embedder,
            scorer,
            paths: candidates.iter().map(|c| c.path.to_string()).collect(),
        }
    }

    /// Indices of the `eligible` files relevant to `query`, best first, at most `limit`:
    /// those scoring at least `RELATIVE_CUTOFF` of the best eligible one.
    pub fn rank(&self, query: &str, eligible: impl Fn(usize) -> bool, limit: usize) -> Vec<usize> {
        if self.paths.is_empty() || query.trim().is_empty() || limit == 0 {
            return Vec::new();
        }
        let query = self.embedder.embed(query);
        let mut scored: Vec<(usize, f32)> = self
            .scorer
            .matches(&query)
            .into_iter()
            .filter(|m| m.score > 0.0 && eligible(m.id))
            .map(|m| (m.id, m.score))
            .collect();
        // The scorer's order among equal scores follows a hash set: fix it by path.
        scored.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| self.paths[a.0].cmp(&self.paths[b.0]))
                .then_with(|| a.0.cmp(&b.0))
        });
        let Some(best) = scored.first().map(|s| s.1) else {
            return Vec::new();
        };
        scored
            .into_iter()
            .filter(|(_, s)| *s >= best * RELATIVE_CUTOFF)
            .take(limit)
            .map(|(i, _)| i)
            .collect()
    }
}

/// What the projection already holds: surfaced memory paths (and the model's reads),
/// and the bytes of memory content shown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Surfaced {
    pub paths: BTreeSet<String>,
    pub(crate) bytes: usize,
}

pub fn surfaced<R: std::borrow::Borrow<Record>>(view: &[R]) -> Surfaced {
    let mut out = Surfaced::default();
    for r in view {
        out.add(r.borrow());
    }
    out
}

impl Surfaced {
    /// Takes in one more record of the projection.
    pub(crate) fn add(&mut self, r: &Record) {
        match r.kind {
            RecordKind::Attachment => {
                let Some(a) = r.attachment.as_ref() else {
                    return;
                };
                if a.get("type").and_then(Value::as_str) != Some(RELEVANT_MEMORIES) {
                    return;
                }
                for m in a
                    .get("memories")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(p) = m.get("path").and_then(Value::as_str) {
                        self.paths.insert(p.to_string());
                    }
                    self.bytes += m.get("content").and_then(Value::as_str).map_or(0, str::len);
                }
            }
            RecordKind::Assistant => {
                for b in &r.content {
                    if let ContentBlock::ToolUse { name, input, .. } = b
                        && name == "Read"
                        && let Some(p) = input.get("file_path").and_then(Value::as_str)
                    {
                        self.paths.insert(p.to_string());
                    }
                }
            }
            _ => {}
        }
    }
}

/// At most `MAX_LINES` lines and `MAX_BYTES` bytes of `text`, with a note naming the
/// cut and where the whole file is.
pub fn cut(text: &str, path: &str) -> String {
    let text = text.trim_end();
    let mut reason = None;
    let mut end = text.len();
    if let Some((i, _)) = text.match_indices('\n').nth(MAX_LINES - 1) {
        end = i;
        reason = Some(format!("first {MAX_LINES} lines shown"));
    }
    if end > MAX_BYTES {
        let mut at = MAX_BYTES;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        // Prefer to end on a whole line when one ends in the second half.
        end = match text[..at].rfind('\n') {
            Some(nl) if nl > MAX_BYTES / 2 => nl,
            _ => at,
        };
        reason = Some(format!("first {} KB shown", MAX_BYTES / 1024));
    }
    match reason {
        None => text.to_string(),
        Some(why) => format!(
            "{}\n\n> This memory file was cut ({why}). Read {path} for the rest.",
            &text[..end]
        ),
    }
}

/// The line above a memory's text. Memories older than a day say how old they are and
/// that claims about code may be out of date.
pub fn header(path: &str, age_days: i64) -> String {
    match age_days {
        d if d <= 0 => format!("Memory {path}:"),
        1 => format!(
            "Memory {path} (saved yesterday; it is a note from an earlier session, so check \
             what it says about code against the code as it is now):"
        ),
        d => format!(
            "Memory {path} (saved {d} days ago; it is a note from an earlier session, so check \
             what it says about code against the code as it is now):"
        ),
    }
}

/// One memory chosen for the attachment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    pub path: String,
    pub content: String,
    pub mtime_ms: i64,
    pub header: String,
}

/// The `relevant_memories` attachment for `chosen` (already in order), leaving out files
/// already surfaced and whatever would overrun the session budget. `None` when nothing is
/// left.
pub fn attachment(chosen: Vec<Chosen>, already: &Surfaced) -> Option<Value> {
    let mut budget = SESSION_BUDGET.saturating_sub(already.bytes);
    let mut memories = Vec::new();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    for c in chosen {
        // A selector may name a file twice: it is shown once.
        if memories.len() == MAX_FILES
            || already.paths.contains(&c.path)
            || !taken.insert(c.path.clone())
        {
            continue;
        }
        if c.content.len() > budget {
            continue;
        }
        budget -= c.content.len();
        memories.push(json!({
            "path": c.path,
            "content": c.content,
            "mtimeMs": c.mtime_ms,
            "header": c.header,
        }));
    }
    (!memories.is_empty()).then(|| json!({"type": RELEVANT_MEMORIES, "memories": memories}))
}

/// Model-facing text of a `relevant_memories` attachment: each memory under its header.
pub fn render(obj: &serde_json::Map<String, Value>) -> Option<String> {
    let memories = obj.get("memories")?.as_array()?;
    let parts: Vec<String> = memories
        .iter()
        .filter_map(|m| {
            let path = m.get("path")?.as_str()?;
            let content = m.get("content")?.as_str()?;
            let header = m
                .get("header")
                .and_then(Value::as_str)
                .map_or_else(|| header(path, 0), str::to_string);
            Some(format!("{header}\n\n{content}"))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

#[cfg(test)]
mod tests;
