//! Which revisions of a session this daemon wrote: a loaded copy that saw all of them
//! (own writes update the copy under its lock) is current; a revision written by another
//! daemon makes it stale.
//!
//! A revision is *pending* from the moment the writer's transaction takes it until the
//! writer learns whether the commit succeeded. A reader can see a committed revision
//! before that (the commit is visible as soon as the server has it), so a check that
//! meets its own pending revision waits for the writer instead of taking the write for
//! another daemon's — which would reload the copy for nothing.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use ctxd_pipeline::sync::lock;

/// Chains remembered (one per session written); beyond, they are forgotten, which costs
/// those sessions one reload.
const MAX_CHAINS: usize = 10_000;
/// The longest a check waits for the writer to settle a pending revision (a commit takes
/// milliseconds; after this the copy is simply reloaded).
const SETTLE_WAIT: Duration = Duration::from_secs(5);

#[derive(Default)]
struct State {
    /// Contiguous own revisions per session: `(from, to)` means every revision after
    /// `from` up to `to` is this daemon's.
    chains: HashMap<String, (u64, u64)>,
    /// The revision the writer's open transaction took (one writer: at most one).
    pending: Option<(String, u64)>,
}

#[derive(Default)]
pub(crate) struct OwnWrites {
    state: Mutex<State>,
    settled: Condvar,
}

impl OwnWrites {
    /// The writer's transaction took `revision` of `session` (it holds the session's lock,
    /// so no other daemon can commit a revision of it until this one is settled).
    pub(crate) fn begin(&self, session: &str, revision: u64) {
        lock(&self.state).pending = Some((session.to_string(), revision));
    }

    /// The pending revision committed.
    pub(crate) fn committed(&self, session: &str, revision: u64) {
        let mut s = lock(&self.state);
        s.pending = None;
        let prev = revision.saturating_sub(1);
        match s.chains.get_mut(session) {
            Some(c) if c.1 == prev => c.1 = revision,
            _ => {
                if s.chains.len() >= MAX_CHAINS {
                    s.chains.clear();
                }
                s.chains.insert(session.to_string(), (prev, revision));
            }
        }
        drop(s);
        self.settled.notify_all();
    }

    /// The pending revision did not commit — or, when `unknown`, may have (the commit's
    /// answer was lost): the session's chain is dropped then, so its copies reload.
    /// Called before the transaction is rolled back, while its lock still holds.
    pub(crate) fn abandoned(&self, session: &str, unknown: bool) {
        let mut s = lock(&self.state);
        s.pending = None;
        if unknown {
            s.chains.remove(session);
        }
        drop(s);
        self.settled.notify_all();
    }

    /// Whether every revision of `session` after `known` up to `now` is this daemon's.
    /// Blocking: waits while `now` is this daemon's pending revision.
    pub(crate) fn cover(&self, session: &str, known: u64, now: u64) -> bool {
        if known == now {
            return true;
        }
        let s = lock(&self.state);
        let (s, _) = self
            .settled
            .wait_timeout_while(s, SETTLE_WAIT, |s| {
                s.pending
                    .as_ref()
                    .is_some_and(|(sid, rev)| sid == session && *rev == now)
            })
            .unwrap_or_else(|p| p.into_inner());
        s.chains
            .get(session)
            .is_some_and(|&(from, to)| from <= known && known <= to && to == now)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn chains_cover_only_contiguous_own_writes() {
        let own = OwnWrites::default();
        own.committed("s", 6);
        own.committed("s", 7);
        assert!(own.cover("s", 5, 7) && own.cover("s", 6, 7));
        assert!(!own.cover("s", 4, 7), "revision 5 was not ours");
        // Someone else wrote 8: our 9 starts a new chain.
        own.committed("s", 9);
        assert!(!own.cover("s", 7, 9));
        assert!(own.cover("s", 8, 9));
        assert!(!own.cover("t", 0, 1));
    }

    #[test]
    fn a_check_meeting_its_own_pending_revision_waits_for_the_commit() {
        let own = Arc::new(OwnWrites::default());
        own.committed("s", 1);
        own.begin("s", 2);
        let writer = own.clone();
        let settle = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            writer.committed("s", 2);
        });
        assert!(own.cover("s", 1, 2));
        settle.join().unwrap();
        // A commit whose answer was lost: the chain goes, copies reload.
        own.begin("s", 3);
        own.abandoned("s", true);
        assert!(!own.cover("s", 2, 2 + 1));
        assert!(own.cover("s", 3, 3));
    }
}
