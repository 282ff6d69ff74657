//! Dynamic system sections and their caching class (Claude Code's `systemPromptSection`
//! and `DANGEROUS_uncachedSystemPromptSection`).
//!
//! * **Memoized** sections (the default, and ctxd's own: environment, language, output
//!   style) are computed once per history: the text a section had at the first compile
//!   after it was registered is kept in the session's memo and reused byte for byte until
//!   a compaction, a cwd change or `context.reset_sections`. Changing a memoized
//!   section's registered text therefore shows only after one of those.
//! * **Uncached** sections carry a reason and are computed at every compile (a
//!   `current_time` source is recomputed from the compile's instant); a change breaks the
//!   prompt cache from the system prompt on, so every compile reports them with their
//!   reason and whether they changed.

use std::collections::BTreeMap;

use chrono::{DateTime, FixedOffset};
use ctxd_protocol::{SectionCaching, SectionSource, SystemSection, UncachedSectionReport};

/// The memo of one history: memoized section texts by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SectionMemo {
    /// The compact boundary the memo belongs to ('' before any).
    pub boundary_uuid: String,
    pub texts: BTreeMap<String, String>,
}

pub(crate) fn is_uncached(s: &SystemSection) -> bool {
    s.caching == Some(SectionCaching::Uncached)
}

/// The text of a section computed now.
pub(crate) fn compute(s: &SystemSection, now: DateTime<FixedOffset>) -> String {
    match s.source {
        Some(SectionSource::CurrentTime) => format!(
            "# Current time\nIt is now {} (UTC{}).",
            now.format("%Y-%m-%d %H:%M"),
            now.format("%:z")
        ),
        None => s.text.clone(),
    }
}

/// The sections as this compile shows them: memoized ones from the memo (computed now
/// when the memo has none yet), uncached ones computed now.
pub fn resolve(
    sections: &[SystemSection],
    memo: Option<&BTreeMap<String, String>>,
    now: DateTime<FixedOffset>,
) -> Vec<SystemSection> {
    sections
        .iter()
        .map(|s| {
            let text = match memo.and_then(|m| m.get(&s.name)) {
                Some(frozen) if !is_uncached(s) => frozen.clone(),
                _ => compute(s, now),
            };
            SystemSection { text, ..s.clone() }
        })
        .collect()
}

/// The memoized sections the memo lacks, computed now (what the engine freezes before
/// the compile that first shows them).
pub fn missing_from_memo(
    sections: &[SystemSection],
    memo: &BTreeMap<String, String>,
    now: DateTime<FixedOffset>,
) -> BTreeMap<String, String> {
    sections
        .iter()
        .filter(|s| !is_uncached(s) && !memo.contains_key(&s.name))
        .map(|s| (s.name.clone(), compute(s, now)))
        .collect()
}

/// The uncached sections of `resolved`, with whether each differs from `previous` (the
/// hashes of the previous compile's, from its fingerprint; a section new since then
/// counts as changed only when there was a previous compile).
pub(crate) fn uncached_report(
    resolved: &[SystemSection],
    previous: Option<&BTreeMap<String, u64>>,
) -> Vec<UncachedSectionReport> {
    resolved
        .iter()
        .filter(|s| is_uncached(s))
        .map(|s| UncachedSectionReport {
            name: s.name.clone(),
            reason: s.reason.clone().unwrap_or_default(),
            changed: previous.is_some_and(|p| p.get(&s.name) != Some(&text_hash(&s.text))),
        })
        .collect()
}

/// The hashes of the uncached texts of `resolved`, kept in the compile's fingerprint
/// for the next compile to compare with (so the comparison survives a reload).
pub(crate) fn uncached_hashes(resolved: &[SystemSection]) -> BTreeMap<String, u64> {
    resolved
        .iter()
        .filter(|s| is_uncached(s))
        .map(|s| (s.name.clone(), text_hash(&s.text)))
        .collect()
}

fn text_hash(text: &str) -> u64 {
    super::cache_prefix::hash_bytes(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sec(name: &str, text: &str, caching: Option<SectionCaching>) -> SystemSection {
        SystemSection {
            name: name.into(),
            text: text.into(),
            caching,
            reason: caching
                .filter(|c| *c == SectionCaching::Uncached)
                .map(|_| "changes".into()),
            source: None,
        }
    }

    #[test]
    fn memoized_texts_freeze_and_uncached_ones_follow_the_registration() {
        let now: DateTime<FixedOffset> = "2026-11-29T10:00:00Z".parse().unwrap();
        let v1 = [
            sec("env", "cwd /a", Some(SectionCaching::Memoized)),
            sec("notes", "v1", None),
            sec("flags", "f1", Some(SectionCaching::Uncached)),
        ];
        let memo = missing_from_memo(&v1, &BTreeMap::new(), now);
        assert_eq!(memo.len(), 2, "uncached sections are never memoized");
        let v2 = [
            sec("env", "cwd /b", Some(SectionCaching::Memoized)),
            sec("notes", "v2", None),
            sec("flags", "f2", Some(SectionCaching::Uncached)),
        ];
        let shown = resolve(&v2, Some(&memo), now);
        let texts: Vec<&str> = shown.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(texts, ["cwd /a", "v1", "f2"]);
        assert!(missing_from_memo(&v2, &memo, now).is_empty());
        let before = uncached_hashes(&resolve(&v1, Some(&memo), now));
        let report = uncached_report(&shown, Some(&before));
        assert_eq!(report.len(), 1);
        assert!(report[0].changed && report[0].reason == "changes");
        assert!(!uncached_report(&shown, None)[0].changed);
    }

    #[test]
    fn current_time_is_computed_from_the_compile_instant() {
        let mut s = sec("clock", "", Some(SectionCaching::Uncached));
        s.source = Some(SectionSource::CurrentTime);
        let a = compute(&s, "2026-11-29T10:00:00Z".parse().unwrap());
        let b = compute(&s, "2026-11-29T10:07:00Z".parse().unwrap());
        assert_eq!(a, "# Current time\nIt is now 2026-11-29 10:00 (UTC+00:00).");
        assert_ne!(a, b);
        // The zone is an input: the same instant in Auckland is the next morning.
        let nz = compute(&s, "2026-11-29T23:30:00+13:00".parse().unwrap());
        assert_eq!(
            nz,
            "# Current time\nIt is now 2026-11-29 23:30 (UTC+13:00)."
        );
    }
}
