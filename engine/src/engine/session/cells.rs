//! Session cells: which sessions the engine holds in memory, and for how long. [`Cells`]
//! owns them and their LRU order; nothing else touches either.
//!
//! A cell exists while someone uses it (an operation holds a [`CellRef`]), while its
//! session is loaded, or while it has subscribers. When the last [`CellRef`] goes and the
//! cell is neither loaded nor subscribed, it is removed, so calls naming unknown (or
//! merely unloaded) sessions leave nothing behind; a [`Subscription`] that ends checks
//! its cell the same way. Loaded sessions are kept in LRU order;
//! past `Limits::max_loaded_sessions` the least recently used idle one is unloaded (the
//! store holds everything it had, so its next use reloads the same state).
//!
//! Invariant: one live cell per session id. A cell is only removed from the map while the
//! map's lock is held and the map's `Arc` is the only one, and new `Arc`s are only handed
//! out under that lock, so no operation can end up holding a removed cell while another
//! gets a fresh one.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use ctxd_protocol::SessionEvent;
use tokio::sync::broadcast;

use crate::engine::{Emitted, Loaded};
use ctxd_pipeline::sync::lock;

/// Events a subscriber may fall behind by before it is told it lagged.
pub const EVENT_BUFFER: usize = 1024;

pub(crate) struct SessionCell {
    pub(crate) state: tokio::sync::Mutex<Option<Loaded>>,
    /// Created on the first subscription and dropped once nobody listens: the buffer is
    /// `EVENT_BUFFER` slots, too much to keep for every session touched.
    events: Mutex<Option<broadcast::Sender<Emitted>>>,
}

impl SessionCell {
    fn new() -> SessionCell {
        SessionCell {
            state: tokio::sync::Mutex::new(None),
            events: Mutex::new(None),
        }
    }

    /// The session's event channel (created if needed), for a sender that must know
    /// whether anyone receives.
    pub(crate) fn sender(&self) -> broadcast::Sender<Emitted> {
        lock(&self.events)
            .get_or_insert_with(|| broadcast::channel(EVENT_BUFFER).0)
            .clone()
    }

    fn subscribe(&self) -> broadcast::Receiver<Emitted> {
        lock(&self.events)
            .get_or_insert_with(|| broadcast::channel(EVENT_BUFFER).0)
            .subscribe()
    }

    /// Sends to the subscribers, if any, marked with the caller that caused it; a
    /// channel nobody listens to any more is freed.
    pub fn send(&self, event: SessionEvent) {
        let mut slot = lock(&self.events);
        if let Some(tx) = slot.as_ref() {
            if tx.receiver_count() == 0 {
                *slot = None;
            } else {
                let _ = tx.send(Emitted::now(event));
            }
        }
    }

    /// Frees the channel if nobody receives from it.
    fn free_unheard_channel(&self) {
        let mut slot = lock(&self.events);
        if slot.as_ref().is_some_and(|tx| tx.receiver_count() == 0) {
            *slot = None;
        }
    }

    pub(crate) fn has_subscribers(&self) -> bool {
        lock(&self.events)
            .as_ref()
            .is_some_and(|tx| tx.receiver_count() > 0)
    }
}

/// A subscriber's end of a session's event channel. When it goes, its cell is checked
/// again like after any operation: a cell kept only for this subscriber is removed, and
/// a channel nobody listens to any more is freed (its buffer is `EVENT_BUFFER` slots).
pub struct Subscription {
    /// Taken in `drop`, so the receiver is gone before the cell is checked.
    rx: Option<broadcast::Receiver<Emitted>>,
    cells: Arc<Cells>,
    id: String,
}

impl Subscription {
    /// The next event, as `broadcast::Receiver::recv`.
    pub async fn recv(&mut self) -> Result<Emitted, broadcast::error::RecvError> {
        match self.rx.as_mut() {
            Some(rx) => rx.recv().await,
            None => Err(broadcast::error::RecvError::Closed),
        }
    }

    /// Events waiting to be received.
    pub fn waiting(&self) -> usize {
        self.rx.as_ref().map_or(0, broadcast::Receiver::len)
    }

    /// An event if one is waiting, as `broadcast::Receiver::try_recv`.
    pub fn try_recv(&mut self) -> Result<Emitted, broadcast::error::TryRecvError> {
        match self.rx.as_mut() {
            Some(rx) => rx.try_recv(),
            None => Err(broadcast::error::TryRecvError::Closed),
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        drop(self.rx.take());
        let cell = self.cells.cell(&self.id);
        cell.free_unheard_channel();
        // Dropping the handle removes the cell if nothing else keeps it.
        drop(cell);
    }
}

/// An operation's handle on a cell; releases the cell when dropped if nothing else keeps
/// it alive.
pub(crate) struct CellRef<'a> {
    cells: &'a Cells,
    id: String,
    cell: Option<Arc<SessionCell>>,
}

impl std::ops::Deref for CellRef<'_> {
    type Target = SessionCell;
    fn deref(&self) -> &SessionCell {
        // Only `Drop` takes the Arc out.
        self.cell.as_deref().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for CellRef<'_> {
    fn drop(&mut self) {
        let Some(cell) = self.cell.take() else { return };
        let mut cells = lock(&self.cells.map);
        drop(cell);
        let idle = cells.get(&self.id).is_some_and(|c| {
            Arc::strong_count(c) == 1
                && !c.has_subscribers()
                && c.state.try_lock().is_ok_and(|s| s.is_none())
        });
        if idle {
            cells.remove(&self.id);
        }
    }
}

/// Loaded sessions by last use.
#[derive(Default)]
pub(crate) struct Lru {
    tick: u64,
    by_id: HashMap<String, u64>,
    order: BTreeMap<u64, String>,
}

impl Lru {
    fn touch(&mut self, id: &str) {
        self.tick += 1;
        if let Some(old) = self.by_id.insert(id.to_string(), self.tick) {
            self.order.remove(&old);
        }
        self.order.insert(self.tick, id.to_string());
    }

    fn remove(&mut self, id: &str) {
        if let Some(t) = self.by_id.remove(id) {
            self.order.remove(&t);
        }
    }

    fn len(&self) -> usize {
        self.by_id.len()
    }
}

/// The live cells and their LRU order: the one owner of both.
pub(crate) struct Cells {
    map: Mutex<HashMap<String, Arc<SessionCell>>>,
    /// Loaded sessions by last use, for eviction beyond `max_loaded`.
    lru: Mutex<Lru>,
    max_loaded: usize,
}

impl Cells {
    /// No cells yet; at most `max_loaded` sessions loaded (at least one).
    pub(crate) fn new(max_loaded: usize) -> Cells {
        Cells {
            map: Mutex::new(HashMap::new()),
            lru: Mutex::new(Lru::default()),
            max_loaded: max_loaded.max(1),
        }
    }

    /// The cell of session `id`, created empty if there is none.
    pub(crate) fn cell(&self, id: &str) -> CellRef<'_> {
        let cell = lock(&self.map)
            .entry(id.to_string())
            .or_insert_with(|| Arc::new(SessionCell::new()))
            .clone();
        CellRef {
            cells: self,
            id: id.to_string(),
            cell: Some(cell),
        }
    }

    /// The cell of session `id` if one is live; never creates one.
    pub(crate) fn live_cell(&self, id: &str) -> Option<CellRef<'_>> {
        let cell = lock(&self.map).get(id)?.clone();
        Some(CellRef {
            cells: self,
            id: id.to_string(),
            cell: Some(cell),
        })
    }

    /// Subscribes to session `id`'s events (creating its channel); the cell lives at
    /// least as long as the subscription.
    pub(crate) fn subscribe(self: &Arc<Self>, id: &str) -> Subscription {
        let rx = self.cell(id).subscribe();
        Subscription {
            rx: Some(rx),
            cells: self.clone(),
            id: id.to_string(),
        }
    }

    /// How many session cells are live (loaded, subscribed or in use).
    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        lock(&self.map).len()
    }

    /// Forgets a deleted or unknown session's cell.
    pub(crate) fn drop_cell(&self, id: &str) {
        lock(&self.lru).remove(id);
        lock(&self.map).remove(id);
    }

    /// How many sessions are loaded.
    pub(crate) fn loaded(&self) -> usize {
        lock(&self.lru).len()
    }

    /// Marks `id` as just used; called with its cell's state lock held.
    pub(crate) fn touch_loaded(&self, id: &str) {
        lock(&self.lru).touch(id);
    }

    /// Called after `id` was loaded (its state lock held): unloads the least recently used
    /// idle sessions beyond the bound, and returns their ids (the engine forgets what it
    /// keeps for them beside their cells). Busy ones (their lock taken) are passed over;
    /// the bound is then exceeded only by sessions in use right now.
    #[must_use]
    pub(crate) fn loaded_now(&self, id: &str) -> Vec<String> {
        let mut freed: Vec<Loaded> = Vec::new();
        let mut unloaded: Vec<String> = Vec::new();
        {
            let mut lru = lock(&self.lru);
            lru.touch(id);
            let max = self.max_loaded;
            if lru.len() <= max {
                return unloaded;
            }
            let mut cells = lock(&self.map);
            let mut excess = lru.len() - max;
            let oldest: Vec<String> = lru
                .order
                .values()
                .filter(|v| v.as_str() != id)
                .cloned()
                .collect();
            for victim in oldest {
                if excess == 0 {
                    break;
                }
                let Some(cell) = cells.get(&victim).cloned() else {
                    lru.remove(&victim);
                    excess -= 1;
                    continue;
                };
                let Ok(mut state) = cell.state.try_lock() else {
                    continue;
                };
                freed.extend(state.take());
                drop(state);
                lru.remove(&victim);
                unloaded.push(victim.clone());
                excess -= 1;
                if Arc::strong_count(&cell) == 2 && !cell.has_subscribers() {
                    cells.remove(&victim);
                }
            }
        }
        if !freed.is_empty() {
            tracing::debug!(
                unloaded = freed.len(),
                "unloaded least recently used sessions"
            );
        }
        // The transcripts are dropped here, after both locks are released, and so is the
        // rest of the unloaded sessions' state.
        drop(freed);
        unloaded
    }
}

impl crate::engine::Engine {
    /// Drops what the engine keeps for a session beside its cell: hook state (rebuilt from
    /// the settings files on next use), a pending memory prefetch (no compile waits for
    /// it), the session's hold on its skill catalog. For a session unloaded or deleted.
    pub(crate) fn forget_session_state(&self, sid: &str) {
        self.hooks.forget(sid);
        self.memories.forget(sid);
        self.skills.forget(sid, self.watches.watcher());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Engine;
    use crate::engine::test_support::session;
    use ctxd_protocol::{AppendParams, ContentBlock, RecordInput, RecordKind};

    fn engine_with(dir: &std::path::Path, max_loaded: usize) -> Arc<Engine> {
        let store = ctxd_store::Store::open(&dir.join("t.db")).unwrap();
        let limits = ctxd_pipeline::limits::Limits {
            max_loaded_sessions: max_loaded,
            ..Default::default()
        };
        Arc::new(
            Engine::new(store, dir, Arc::new(ctxd_pipeline::clock::SystemClock))
                .with_limits(limits),
        )
    }

    /// Subscriptions that end leave no cell (nor its event buffer) behind, including the
    /// cells LRU eviction passed over while they had subscribers.
    #[tokio::test]
    async fn ended_subscriptions_leave_no_cells_behind() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine_with(dir.path(), 2);
        let mut ids = Vec::new();
        for _ in 0..20 {
            ids.push(session(&engine, dir.path()).await);
        }
        // Subscribe and unsubscribe: the sessions exist but are not loaded.
        for id in &ids {
            drop(engine.subscribe(id).await.unwrap());
        }
        assert_eq!(engine.cells.live(), 0);
        // Subscribed and loaded (appends load them): eviction passes over subscribed cells.
        let mut subs = Vec::new();
        for id in &ids {
            subs.push(engine.subscribe(id).await.unwrap());
            engine
                .append(AppendParams {
                    session_id: id.clone(),
                    agent_id: None,
                    records: vec![RecordInput {
                        kind: Some(RecordKind::User),
                        content: vec![ContentBlock::text("hi")],
                        ..Default::default()
                    }],
                    expected_last_uuid: None,
                })
                .await
                .unwrap();
        }
        assert_eq!(engine.cells.live(), ids.len());
        assert!(engine.loaded_sessions() <= 2);
        drop(subs);
        assert!(
            engine.cells.live() <= 2,
            "{} cells live after every subscription ended",
            engine.cells.live()
        );
        // A cell that stays (loaded) frees its channel when its last subscriber goes.
        let kept = lock(&engine.cells.map).values().next().cloned().unwrap();
        assert!(lock(&kept.events).is_none());
    }

    #[test]
    fn lru_orders_by_last_touch() {
        let mut l = Lru::default();
        l.touch("a");
        l.touch("b");
        l.touch("a");
        assert_eq!(l.order.values().collect::<Vec<_>>(), vec!["b", "a"]);
        l.remove("b");
        assert_eq!(l.len(), 1);
    }
}
