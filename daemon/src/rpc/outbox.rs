//! The bytes waiting to go out on one WebSocket connection, and who may add to them.
//!
//! The connection counts every message it has taken for the client and not yet handed to
//! the socket (answers and notifications alike). Past `MAX_WS_QUEUED_BYTES` it stops reading the
//! client, answers of calls that finished in their own task wait for room, and a
//! subscription that cannot get room within `LAG_GRACE` is ended with a `lagged` event.
//! So what a client that never reads costs the daemon is bounded, and all of it goes when
//! the client does.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// How long a subscription waits for room before its subscriber is too far behind.
pub(crate) const LAG_GRACE: Duration = Duration::from_secs(2);

/// Sums over every connection, for `daemon.status`.
pub(crate) struct Totals {
    connections: AtomicU64,
    subscriptions: AtomicU64,
    queued: AtomicU64,
    running: AtomicU64,
    waiting: AtomicU64,
}

pub(crate) static TOTALS: Totals = Totals {
    connections: AtomicU64::new(0),
    subscriptions: AtomicU64::new(0),
    queued: AtomicU64::new(0),
    running: AtomicU64::new(0),
    waiting: AtomicU64::new(0),
};

/// What `daemon.status` reports of WebSocket connections.
pub(crate) fn status() -> ctxd_protocol::WebSocketStatus {
    ctxd_protocol::WebSocketStatus {
        connections: TOTALS.connections.load(Ordering::Relaxed),
        subscriptions: TOTALS.subscriptions.load(Ordering::Relaxed),
        queued_bytes: TOTALS.queued.load(Ordering::Relaxed),
        calls_running: TOTALS.running.load(Ordering::Relaxed),
        answers_waiting: TOTALS.waiting.load(Ordering::Relaxed),
    }
}

/// One unit of a total, for as long as it lives.
pub(crate) struct Counted(&'static AtomicU64);

impl Counted {
    pub(crate) fn connection() -> Counted {
        Counted::of(&TOTALS.connections)
    }
    pub(crate) fn subscription() -> Counted {
        Counted::of(&TOTALS.subscriptions)
    }
    pub(crate) fn running() -> Counted {
        Counted::of(&TOTALS.running)
    }
    pub(crate) fn waiting() -> Counted {
        Counted::of(&TOTALS.waiting)
    }
    fn of(total: &'static AtomicU64) -> Counted {
        total.fetch_add(1, Ordering::Relaxed);
        Counted(total)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

pub(crate) struct Outbox {
    queued: AtomicUsize,
    room: Notify,
    limit: usize,
}

impl Outbox {
    pub(crate) fn new(limit: usize) -> Outbox {
        Outbox {
            queued: AtomicUsize::new(0),
            room: Notify::new(),
            limit,
        }
    }

    pub(crate) fn has_room(&self) -> bool {
        self.queued.load(Ordering::Acquire) < self.limit
    }

    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    /// `bytes` more are queued.
    pub(crate) fn add(&self, bytes: usize) {
        self.queued.fetch_add(bytes, Ordering::AcqRel);
        TOTALS.queued.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// `bytes` went to the socket: whoever waits for room may go on.
    pub(crate) fn taken(&self, bytes: usize) {
        let before = self
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |q| {
                Some(q.saturating_sub(bytes))
            })
            .unwrap_or_default();
        let gone = before.min(bytes);
        TOTALS.queued.fetch_sub(gone as u64, Ordering::Relaxed);
        if before >= self.limit && before.saturating_sub(bytes) < self.limit {
            self.room.notify_waiters();
        }
    }

    /// Counts `bytes` in if the queue is below its bound.
    fn try_reserve(&self, bytes: usize) -> bool {
        let reserved = self
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |q| {
                (q < self.limit).then_some(q + bytes)
            })
            .is_ok();
        if reserved {
            TOTALS.queued.fetch_add(bytes as u64, Ordering::Relaxed);
        }
        reserved
    }

    /// Waits until the queue is below its bound and counts `bytes` in, in one step, so
    /// that any number of waiters take the room one at a time.
    pub(crate) async fn reserve(&self, bytes: usize) {
        self.until(|| self.try_reserve(bytes)).await;
    }

    /// Waits until `ready` holds, asked again each time room is made.
    async fn until(&self, mut ready: impl FnMut() -> bool) {
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            // Registered before asking, so room made in between is not missed.
            notified.as_mut().enable();
            if ready() {
                return;
            }
            notified.await;
        }
    }

    /// Waits until the queue is below its bound; `false` when `within` passed first.
    pub(crate) async fn room(&self, within: Option<Duration>) -> bool {
        let wait = self.until(|| self.has_room());
        match within {
            Some(limit) => tokio::time::timeout(limit, wait).await.is_ok(),
            None => {
                wait.await;
                true
            }
        }
    }

    /// The connection ended: nobody waits for room any more.
    pub(crate) fn close(&self) {
        let left = self.queued.swap(0, Ordering::AcqRel);
        TOTALS.queued.fetch_sub(left as u64, Ordering::Relaxed);
        self.room.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_waiter_goes_on_once_the_queue_drops_below_its_bound() {
        let outbox = std::sync::Arc::new(Outbox::new(100));
        outbox.add(150);
        assert!(!outbox.has_room());
        assert!(!outbox.room(Some(Duration::from_millis(10))).await);
        let waiter = tokio::spawn({
            let outbox = outbox.clone();
            async move { outbox.room(None).await }
        });
        outbox.taken(20);
        assert!(!outbox.has_room(), "130 is still past the bound");
        outbox.taken(40);
        assert!(waiter.await.unwrap());
        assert_eq!(outbox.queued(), 90);
        outbox.taken(1_000);
        assert_eq!(outbox.queued(), 0, "never below nothing");
    }

    /// Waiters woken together take the room one at a time: the second waits again.
    #[tokio::test]
    async fn reservations_take_the_room_one_at_a_time() {
        let outbox = std::sync::Arc::new(Outbox::new(100));
        outbox.add(100);
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let outbox = outbox.clone();
                tokio::spawn(async move { outbox.reserve(80).await })
            })
            .collect();
        tokio::task::yield_now().await;
        outbox.taken(50);
        let mut waiters = waiters.into_iter();
        let (a, b) = (waiters.next().unwrap(), waiters.next().unwrap());
        tokio::select! {
            _ = a => {}
            _ = b => {}
        }
        assert_eq!(outbox.queued(), 130, "one reservation of 80 on top of 50");
    }
}
