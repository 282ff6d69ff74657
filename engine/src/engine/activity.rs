//! What the engine's own work since the start did, counted for the daemon's metrics:
//! compactions by kind, trigger and outcome, collapses committed, memory extractions and
//! cache breaks. Counted where each finishes; read as a snapshot, so a scrape never waits
//! on a session.

use std::sync::atomic::{AtomicU64, Ordering};

/// Who wrote a compaction's summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionKind {
    /// ctxd's summariser over the whole history.
    Full,
    /// The session-memory document in place of a summary.
    SessionMemory,
    /// The provider's own compaction.
    Server,
}

impl CompactionKind {
    pub const ALL: [CompactionKind; 3] = [Self::Full, Self::SessionMemory, Self::Server];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::SessionMemory => "session_memory",
            Self::Server => "server",
        }
    }
}

/// One counter per (kind, automatic or manual, ok or failed).
const COMPACTION_CELLS: usize = 3 * 2 * 2;

#[derive(Default)]
pub(crate) struct Activity {
    compactions: [AtomicU64; COMPACTION_CELLS],
    collapses: AtomicU64,
    extractions_ok: AtomicU64,
    extractions_failed: AtomicU64,
    cache_breaks: AtomicU64,
}

/// A snapshot of `Activity`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActivityStats {
    /// Compactions: (kind, automatic, ok) and how many.
    pub compactions: Vec<(CompactionKind, bool, bool, u64)>,
    /// Collapse compiles that committed at least one span.
    pub collapses: u64,
    pub extractions_ok: u64,
    pub extractions_failed: u64,
    /// Reported answers whose cache reads fell unexpectedly (the `cache_break` event).
    pub cache_breaks: u64,
}

fn cell(kind: CompactionKind, auto: bool, ok: bool) -> usize {
    let k = match kind {
        CompactionKind::Full => 0,
        CompactionKind::SessionMemory => 1,
        CompactionKind::Server => 2,
    };
    k * 4 + usize::from(auto) * 2 + usize::from(ok)
}

/// Adds `n` to a counter read by the metrics, saturating: a counter that wrapped would
/// read as a reset.
pub(crate) fn count(counter: &AtomicU64, n: u64) {
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        Some(v.saturating_add(n))
    });
}

impl Activity {
    pub(crate) fn compaction(&self, kind: CompactionKind, auto: bool, ok: bool) {
        count(&self.compactions[cell(kind, auto, ok)], 1);
    }

    pub(crate) fn collapse(&self) {
        count(&self.collapses, 1);
    }

    pub(crate) fn extraction(&self, ok: bool) {
        let counter = if ok {
            &self.extractions_ok
        } else {
            &self.extractions_failed
        };
        count(counter, 1);
    }

    pub(crate) fn cache_break(&self) {
        count(&self.cache_breaks, 1);
    }

    pub(crate) fn snapshot(&self) -> ActivityStats {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut compactions = Vec::with_capacity(COMPACTION_CELLS);
        for kind in CompactionKind::ALL {
            for auto in [true, false] {
                for ok in [true, false] {
                    let n = load(&self.compactions[cell(kind, auto, ok)]);
                    compactions.push((kind, auto, ok, n));
                }
            }
        }
        ActivityStats {
            compactions,
            collapses: load(&self.collapses),
            extractions_ok: load(&self.extractions_ok),
            extractions_failed: load(&self.extractions_failed),
            cache_breaks: load(&self.cache_breaks),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_compaction_lands_in_its_own_cell() {
        let a = Activity::default();
        a.compaction(CompactionKind::SessionMemory, true, true);
        a.compaction(CompactionKind::Full, false, false);
        a.compaction(CompactionKind::Full, false, false);
        let s = a.snapshot();
        let n = |kind, auto, ok| {
            s.compactions
                .iter()
                .find(|c| (c.0, c.1, c.2) == (kind, auto, ok))
                .map(|c| c.3)
        };
        assert_eq!(n(CompactionKind::SessionMemory, true, true), Some(1));
        assert_eq!(n(CompactionKind::Full, false, false), Some(2));
        assert_eq!(s.compactions.iter().map(|c| c.3).sum::<u64>(), 3);
        assert_eq!(s.compactions.len(), COMPACTION_CELLS);
    }
}
