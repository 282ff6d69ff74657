//! Retention on a schedule: the daemon's own `daemon.gc`, with the limits of its
//! configuration (`--retention-idle-days`, `--retention-max-store-bytes`), once at start
//! and then every `--retention-interval-secs`. The same engine call as the method, so a
//! session `ctx gc` would delete is the one the worker deletes.
//!
//! The idle days count back from the worker's clock, an input like the engine's, so a test
//! can put the daemon days ahead instead of waiting for them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ctxd_engine::Engine;
use ctxd_pipeline::clock::Clock;
use ctxd_protocol::GcParams;
use tokio::sync::{Notify, watch};

/// What the worker deletes, and how often it looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionOptions {
    /// Delete the sessions not updated for this many days (at least 1).
    pub idle_days: Option<u32>,
    /// Then the least recently updated until the rest's records fit in this many bytes.
    pub max_store_bytes: Option<u64>,
    /// The time between two passes.
    pub every: Duration,
}

impl RetentionOptions {
    /// Whether there is anything to enforce.
    pub fn enabled(&self) -> bool {
        self.idle_days.is_some() || self.max_store_bytes.is_some()
    }
}

/// What the worker did since the daemon started (for `daemon.metrics`).
#[derive(Debug)]
pub struct RetentionStats {
    /// Passes finished (each one a `daemon.gc`, whether it deleted anything or failed);
    /// watched by tests that wait for a pass.
    passes: watch::Sender<u64>,
    pub(crate) failures: AtomicU64,
    pub(crate) deleted_sessions: AtomicU64,
    pub(crate) deleted_bytes: AtomicU64,
}

impl Default for RetentionStats {
    fn default() -> Self {
        RetentionStats {
            passes: watch::Sender::new(0),
            failures: AtomicU64::new(0),
            deleted_sessions: AtomicU64::new(0),
            deleted_bytes: AtomicU64::new(0),
        }
    }
}

impl RetentionStats {
    pub fn passes(&self) -> u64 {
        *self.passes.borrow()
    }

    /// A receiver that sees each finished pass.
    pub fn watch_passes(&self) -> watch::Receiver<u64> {
        self.passes.subscribe()
    }
}

/// One pass: `daemon.gc` with the configured limits at the clock's time.
pub(crate) async fn pass(
    engine: &Engine,
    options: &RetentionOptions,
    clock: &dyn Clock,
    stats: &RetentionStats,
) {
    let now = clock
        .now()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let params = GcParams {
        idle_days: options.idle_days,
        max_store_bytes: options.max_store_bytes,
        dry_run: false,
        now: Some(now),
    };
    match engine.gc(params).await {
        Ok(done) => {
            let bytes: u64 = done.deleted.iter().map(|d| d.bytes).sum();
            let sessions = done.deleted.len() as u64;
            stats
                .deleted_sessions
                .fetch_add(sessions, Ordering::Relaxed);
            stats.deleted_bytes.fetch_add(bytes, Ordering::Relaxed);
            if sessions > 0 {
                tracing::info!(
                    sessions,
                    bytes,
                    kept_bytes = done.kept_bytes,
                    "retention: deleted sessions"
                );
            } else {
                tracing::debug!(kept_bytes = done.kept_bytes, "retention: nothing to delete");
            }
        }
        Err(error) => {
            stats.failures.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(%error, "retention: the pass failed; the next one tries again");
        }
    }
    stats.passes.send_modify(|n| *n += 1);
}

/// Runs a pass at once and then every `options.every` until `stop` is notified.
pub(crate) async fn worker(
    engine: Arc<Engine>,
    options: RetentionOptions,
    clock: Arc<dyn Clock>,
    stats: Arc<RetentionStats>,
    stop: Arc<Notify>,
) {
    let mut tick = tokio::time::interval(options.every);
    // A daemon suspended for hours makes up with one pass, not a burst.
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = stop.notified() => return,
        }
        pass(&engine, &options, &*clock, &stats).await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use ctxd_engine::Engine;
    use ctxd_pipeline::clock::FixedClock;
    use ctxd_protocol::SessionCreateParams;
    use tokio::sync::Notify;

    use super::{RetentionOptions, RetentionStats, worker};

    async fn session(engine: &Engine, dir: &std::path::Path) -> String {
        engine
            .create_session(SessionCreateParams {
                cwd: dir.display().to_string(),
                no_git: true,
                ..Default::default()
            })
            .await
            .unwrap()
            .session_id
    }

    /// Sessions written on 1 March; the worker's clock says 10 March: with 7 idle days
    /// its first pass deletes them, with 30 it keeps them. No waiting: the pass at start
    /// is the event, seen through the stats.
    #[tokio::test]
    async fn the_worker_deletes_by_its_clock_at_start() {
        for (idle_days, left) in [(7, 0), (30, 2)] {
            let dir = tempfile::tempdir().unwrap();
            let store = ctxd_engine::Store::open(&dir.path().join("t.db")).unwrap();
            let written = Arc::new(FixedClock("2026-03-01T10:00:00Z".parse().unwrap()));
            let engine = Arc::new(Engine::new(store, &dir.path().join("home"), written));
            session(&engine, dir.path()).await;
            session(&engine, dir.path()).await;
            let later = Arc::new(FixedClock("2026-03-10T10:00:00Z".parse().unwrap()));
            let stats = Arc::new(RetentionStats::default());
            let stop = Arc::new(Notify::new());
            let options = RetentionOptions {
                idle_days: Some(idle_days),
                max_store_bytes: None,
                every: Duration::from_secs(3600),
            };
            let mut passes = stats.watch_passes();
            let task = tokio::spawn(worker(
                engine.clone(),
                options,
                later,
                stats.clone(),
                stop.clone(),
            ));
            passes.wait_for(|n| *n >= 1).await.unwrap();
            stop.notify_one();
            task.await.unwrap();
            assert_eq!(engine.session_count().await.unwrap(), left, "{idle_days}");
            let deleted = stats
                .deleted_sessions
                .load(std::sync::atomic::Ordering::Relaxed);
            assert_eq!(deleted, 2 - left, "{idle_days}");
        }
    }
}
