//! Batches the OS watcher's raw events. A batch is handed on once no event has arrived
//! for the quiet window, or once the longest wait has passed since its first event, so a
//! file written without pause is still reported. The batching thread sleeps on a condvar
//! while nothing is pending: an idle daemon is never woken. (notify-debouncer-full, used
//! before, ticked every quarter window forever: 53 wake-ups a second of an idle daemon.)
//!
//! Raw events are enough here: the watcher decides each batch by looking at the disk, so
//! it needs which paths were touched, not a stitched history of renames.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::{Event, RecommendedWatcher, RecursiveMode, Watcher};

/// Events held at once: past it, later events of the batch are dropped and the batch says
/// so (`overflowed`), which the receiver treats like the kernel's own queue overflow.
pub(super) const MAX_PENDING_EVENTS: usize = 10_000;

/// How long a batch waits.
#[derive(Debug, Clone, Copy)]
pub(super) struct Window {
    /// Handed on once no event arrived for this long...
    pub(crate) quiet: Duration,
    /// ...or this long after its first event, whatever followed.
    pub(crate) longest: Duration,
}

/// What the receiver gets: the batch's events, the watcher's errors, and whether events
/// were dropped past [`MAX_PENDING_EVENTS`].
#[derive(Debug, Default)]
pub(super) struct Batch {
    pub(crate) events: Vec<Event>,
    pub(crate) errors: Vec<notify::Error>,
    pub(crate) overflowed: bool,
}

#[derive(Default)]
struct Pending {
    batch: Batch,
    first: Option<Instant>,
    last: Option<Instant>,
    stop: bool,
}

impl Pending {
    fn add(&mut self, item: notify::Result<Event>, now: Instant) {
        match item {
            Ok(_) if self.batch.events.len() >= MAX_PENDING_EVENTS => {
                self.batch.overflowed = true;
            }
            Ok(event) => self.batch.events.push(event),
            Err(error) => {
                if self.batch.errors.len() < MAX_PENDING_EVENTS {
                    self.batch.errors.push(error);
                } else {
                    self.batch.overflowed = true;
                }
            }
        }
        self.first.get_or_insert(now);
        self.last = Some(now);
    }

    fn take(&mut self) -> Batch {
        self.first = None;
        self.last = None;
        std::mem::take(&mut self.batch)
    }
}

/// When the pending batch is due; `None` while nothing is pending (then the thread sleeps
/// until an event comes).
fn due(first: Option<Instant>, last: Option<Instant>, window: Window) -> Option<Instant> {
    let (first, last) = (first?, last?);
    Some((last + window.quiet).min(first + window.longest))
}

struct Shared {
    pending: Mutex<Pending>,
    wake: Condvar,
    /// How often the batching thread came back from a wait.
    #[cfg(test)]
    wakes: std::sync::atomic::AtomicUsize,
}

impl Shared {
    /// The pending batch; a panic elsewhere while it was held leaves plain data behind.
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The batching thread came back from a wait (counted in tests).
    fn woke(&self) {
        #[cfg(test)]
        self.wakes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// An OS watcher whose events reach `handler` in batches, on a thread of its own.
pub(super) struct Debouncer {
    watcher: RecommendedWatcher,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Debouncer {
    pub(super) fn new(
        window: Window,
        mut handler: impl FnMut(Batch) + Send + 'static,
    ) -> notify::Result<Debouncer> {
        let shared = Arc::new(Shared {
            pending: Mutex::new(Pending::default()),
            wake: Condvar::new(),
            #[cfg(test)]
            wakes: std::sync::atomic::AtomicUsize::new(0),
        });
        let from_os = Arc::clone(&shared);
        let watcher = RecommendedWatcher::new(
            move |item: notify::Result<Event>| {
                from_os.lock().add(item, Instant::now());
                from_os.wake.notify_one();
            },
            notify::Config::default(),
        )?;
        let batching = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("ctxd-watch-batch".into())
            .spawn(move || run(&batching, window, &mut handler))
            .map_err(notify::Error::io)?;
        Ok(Debouncer {
            watcher,
            shared,
            thread: Some(thread),
        })
    }

    pub(super) fn watch(&mut self, dir: &Path, mode: RecursiveMode) -> notify::Result<()> {
        self.watcher.watch(dir, mode)
    }

    pub(super) fn unwatch(&mut self, dir: &Path) -> notify::Result<()> {
        self.watcher.unwatch(dir)
    }
}

/// The batching thread: sleeps until an event is pending, then until its batch is due,
/// hands the batch on outside the lock, and ends when told to stop.
fn run(shared: &Shared, window: Window, handler: &mut impl FnMut(Batch)) {
    let mut pending = shared.lock();
    loop {
        if pending.stop {
            return;
        }
        let Some(at) = due(pending.first, pending.last, window) else {
            pending = shared
                .wake
                .wait(pending)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            shared.woke();
            continue;
        };
        let now = Instant::now();
        if now < at {
            pending = shared
                .wake
                .wait_timeout(pending, at - now)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
            shared.woke();
            continue;
        }
        let batch = pending.take();
        drop(pending);
        handler(batch);
        pending = shared.lock();
    }
}

impl Drop for Debouncer {
    fn drop(&mut self) {
        // Set under the lock the thread checks before it waits: the wake cannot be lost.
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::warn!("the file watcher's batching thread panicked");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Window = Window {
        quiet: Duration::from_millis(75),
        longest: Duration::from_millis(300),
    };

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn nothing_pending_is_never_due() {
        assert_eq!(due(None, None, WINDOW), None);
    }

    #[test]
    fn a_batch_is_due_a_quiet_window_after_its_last_event_at_most_the_longest_after_its_first() {
        let t = Instant::now();
        assert_eq!(due(Some(t), Some(t), WINDOW), Some(t + ms(75)));
        assert_eq!(due(Some(t), Some(t + ms(100)), WINDOW), Some(t + ms(175)));
        // Events every 50 ms would put it off forever: the longest wait ends it.
        assert_eq!(due(Some(t), Some(t + ms(250)), WINDOW), Some(t + ms(300)));
    }

    #[test]
    fn a_batch_holds_a_bounded_number_of_events_and_says_when_it_dropped_some() {
        let mut p = Pending::default();
        let t = Instant::now();
        for _ in 0..MAX_PENDING_EVENTS + 5 {
            p.add(Ok(Event::default()), t);
        }
        p.add(Err(notify::Error::generic("boom")), t + ms(1));
        assert_eq!((p.first, p.last), (Some(t), Some(t + ms(1))));
        let batch = p.take();
        assert_eq!(batch.events.len(), MAX_PENDING_EVENTS);
        assert_eq!(batch.errors.len(), 1);
        assert!(batch.overflowed);
        assert_eq!((p.first, p.last), (None, None));
        assert!(p.take().events.is_empty() && !p.take().overflowed);
    }

    /// The batching thread of an idle watcher sleeps until an event comes: over what
    /// would have been 16 ticks of the old debouncer it does not come back from its wait
    /// once, and a file written in a watched directory wakes it and is handed on. (The
    /// one wait of the suite that is a length of time: what it proves is that nothing
    /// happens during it.)
    #[test]
    fn an_idle_watcher_sleeps_until_an_event_comes() {
        let dir = tempfile::tempdir().expect("a directory");
        let (tx, rx) = std::sync::mpsc::channel();
        let mut d = Debouncer::new(WINDOW, move |b: Batch| {
            let _ = tx.send(b.events.len());
        })
        .expect("an OS watcher");
        d.watch(dir.path(), RecursiveMode::NonRecursive)
            .expect("a watch");
        let wakes = || d.shared.wakes.load(std::sync::atomic::Ordering::Relaxed);
        std::thread::sleep(ms(300));
        assert_eq!(wakes(), 0, "the idle batching thread woke");
        std::fs::write(dir.path().join("a.txt"), "a").expect("a write");
        let events = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the write's batch");
        assert!(events > 0);
        assert!(wakes() > 0);
    }
}
