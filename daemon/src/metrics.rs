//! The daemon's metrics, for `daemon.metrics` and the `--metrics ADDR` endpoint: a
//! registry of the `prometheus` crate, which owns the text format. Calls are counted as
//! they finish (every method of the table registered through `rpc::context`'s macros,
//! on either transport); the rest is read from its owner (the engine, the store's files,
//! the retention worker, the front door) when the metrics are asked for, so nothing on a
//! hot path waits for them.
//!
//! Labels take only bounded values: a method name of the table, `ok` / `error`, and a
//! JSON-RPC error code of the daemon's own.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use prometheus::{
    Encoder, Gauge, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts,
    Registry, TextEncoder,
};

use crate::retention::RetentionStats;
use ctxd_engine::Engine;

/// How long a scrape waits for the store's session count.
const STORE_WAIT: Duration = Duration::from_secs(2);

/// Call latency buckets, in seconds: from a ping to a long `context.send` turn.
const LATENCY_BUCKETS: [f64; 14] = [
    0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0, 120.0,
];

pub(crate) struct Metrics {
    registry: Registry,
    calls: IntCounterVec,
    errors: IntCounterVec,
    latency: HistogramVec,
    uptime: Gauge,
    sessions_stored: IntGauge,
    sessions_loaded: IntGauge,
    store_error: IntGauge,
    store_bytes: Option<(IntGauge, PathBuf)>,
    ws_connections: IntGauge,
    ws_subscriptions: IntGauge,
    ws_queued_bytes: IntGauge,
    /// Counters whose count another part keeps: set from it at each scrape.
    mirrored: Vec<(&'static str, IntCounter)>,
    /// Compactions by kind, trigger and outcome, mirrored from the engine likewise.
    compactions: IntCounterVec,
    /// Held while the mirrored counters catch up: two scrapes at once would each add the
    /// same difference.
    mirroring: std::sync::Mutex<()>,
}

/// The mirrored counters: their name (without `ctxd_` and `_total`) and help.
const MIRRORED: [(&str, &str); 19] = [
    (
        "send_turns",
        "context.send turns that appended the provider's answer",
    ),
    (
        "send_turns_failed",
        "context.send turns that failed (at the provider, cancelled, or refused)",
    ),
    (
        "send_retries",
        "provider retries of the answered context.send turns",
    ),
    (
        "send_recoveries",
        "context.send turns recovered from a too-long request",
    ),
    ("send_input_tokens", "usage.input_tokens of the answers"),
    ("send_output_tokens", "usage.output_tokens of the answers"),
    (
        "send_cache_read_input_tokens",
        "usage.cache_read_input_tokens of the answers",
    ),
    (
        "send_cache_creation_input_tokens",
        "usage.cache_creation_input_tokens of the answers",
    ),
    (
        "collapses",
        "compiles whose context collapse committed at least one span",
    ),
    (
        "memory_extractions",
        "session-memory extractions that updated the document",
    ),
    (
        "memory_extractions_failed",
        "session-memory extractions that failed or were abandoned",
    ),
    (
        "cache_breaks",
        "answers whose prompt-cache reads fell unexpectedly (the cache_break event)",
    ),
    ("retention_passes", "retention passes run by the daemon"),
    ("retention_failures", "retention passes that failed"),
    (
        "retention_deleted_sessions",
        "sessions deleted by the daemon's retention",
    ),
    (
        "retention_deleted_bytes",
        "stored record bytes of the sessions deleted by retention",
    ),
    (
        "proxy_requests",
        "requests forwarded by the HTTP front door",
    ),
    ("proxy_bytes_up", "request bytes the front door forwarded"),
    (
        "proxy_bytes_down",
        "answer bytes the front door passed back",
    ),
];

impl Metrics {
    /// `sqlite_db`: the SQLite database whose files' size is reported (none on
    /// PostgreSQL).
    pub(crate) fn new(sqlite_db: Option<PathBuf>) -> Result<Metrics, prometheus::Error> {
        let registry = Registry::new();
        let calls = IntCounterVec::new(
            Opts::new("ctxd_rpc_calls_total", "JSON-RPC calls answered"),
            &["method", "outcome"],
        )?;
        let errors = IntCounterVec::new(
            Opts::new(
                "ctxd_rpc_errors_total",
                "JSON-RPC calls answered with an error, by code",
            ),
            &["method", "code"],
        )?;
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "ctxd_rpc_call_duration_seconds",
                "Time from a call's decoding to its answer",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
            &["method"],
        )?;
        let gauge = |name: &str, help: &str| IntGauge::new(name, help);
        let uptime = Gauge::new("ctxd_uptime_seconds", "Seconds since the daemon started")?;
        let sessions_stored = gauge("ctxd_sessions_stored", "Sessions in the store")?;
        let sessions_loaded = gauge(
            "ctxd_sessions_loaded",
            "Sessions whose transcript is held in memory",
        )?;
        let store_error = gauge(
            "ctxd_store_unavailable",
            "1 when the store did not answer the session count in time",
        )?;
        let store_bytes = match sqlite_db {
            Some(db) => Some((
                gauge(
                    "ctxd_store_file_bytes",
                    "Size of the SQLite store's files (database, WAL, shared memory)",
                )?,
                db,
            )),
            None => None,
        };
        let ws_connections = gauge("ctxd_websocket_connections", "Open WebSocket connections")?;
        let ws_subscriptions = gauge(
            "ctxd_websocket_subscriptions",
            "Open subscriptions on WebSocket connections",
        )?;
        let ws_queued_bytes = gauge(
            "ctxd_websocket_queued_bytes",
            "Bytes queued for WebSocket clients and not yet written",
        )?;
        registry.register(Box::new(calls.clone()))?;
        registry.register(Box::new(errors.clone()))?;
        registry.register(Box::new(latency.clone()))?;
        registry.register(Box::new(uptime.clone()))?;
        for g in [
            &sessions_stored,
            &sessions_loaded,
            &store_error,
            &ws_connections,
            &ws_subscriptions,
            &ws_queued_bytes,
        ] {
            registry.register(Box::new(g.clone()))?;
        }
        if let Some((g, _)) = &store_bytes {
            registry.register(Box::new(g.clone()))?;
        }
        let compactions = IntCounterVec::new(
            Opts::new(
                "ctxd_compactions_total",
                "Compactions by who wrote the summary (full, session_memory, server), trigger (auto, manual) and outcome",
            ),
            &["kind", "trigger", "outcome"],
        )?;
        registry.register(Box::new(compactions.clone()))?;
        let mut mirrored = Vec::with_capacity(MIRRORED.len());
        for (name, help) in MIRRORED {
            let c = IntCounter::new(format!("ctxd_{name}_total"), help)?;
            registry.register(Box::new(c.clone()))?;
            mirrored.push((name, c));
        }
        Ok(Metrics {
            registry,
            calls,
            errors,
            latency,
            uptime,
            sessions_stored,
            sessions_loaded,
            store_error,
            store_bytes,
            ws_connections,
            ws_subscriptions,
            ws_queued_bytes,
            mirrored,
            compactions,
            mirroring: std::sync::Mutex::new(()),
        })
    }

    /// Counts one answered call; `error` is its JSON-RPC error code when it failed.
    pub(crate) fn call(&self, method: &str, error: Option<i32>, took: Duration) {
        let outcome = if error.is_some() { "error" } else { "ok" };
        self.calls.with_label_values(&[method, outcome]).inc();
        if let Some(code) = error {
            self.errors
                .with_label_values(&[method, &code.to_string()])
                .inc();
        }
        self.latency
            .with_label_values(&[method])
            .observe(took.as_secs_f64());
    }

    /// The metrics now, in the Prometheus text format.
    pub(crate) async fn render(
        &self,
        engine: &Engine,
        retention: &RetentionStats,
        proxy: Option<&crate::proxy::Proxy>,
    ) -> String {
        self.uptime
            .set(Duration::from_millis(engine.uptime_ms()).as_secs_f64());
        let loaded = i64::try_from(engine.loaded_sessions()).unwrap_or(i64::MAX);
        self.sessions_loaded.set(loaded);
        match tokio::time::timeout(STORE_WAIT, engine.session_count()).await {
            Ok(Ok(n)) => {
                self.sessions_stored
                    .set(i64::try_from(n).unwrap_or(i64::MAX));
                self.store_error.set(0);
            }
            _ => self.store_error.set(1),
        }
        if let Some((gauge, db)) = &self.store_bytes {
            let size: u64 = ["", "-wal", "-shm"]
                .iter()
                .filter_map(|suffix| {
                    let mut name = db.clone().into_os_string();
                    name.push(suffix);
                    std::fs::metadata(PathBuf::from(name)).ok()
                })
                .map(|m| m.len())
                .sum();
            gauge.set(i64::try_from(size).unwrap_or(i64::MAX));
        }
        let ws = crate::rpc::websocket_status();
        let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.ws_connections.set(int(ws.connections));
        self.ws_subscriptions.set(int(ws.subscriptions));
        self.ws_queued_bytes.set(int(ws.queued_bytes));
        let turns = engine.turn_stats();
        let activity = engine.activity_stats();
        let proxy = proxy.map(crate::proxy::Proxy::status);
        let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let mirroring = self
            .mirroring
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (name, counter) in &self.mirrored {
            let now = match *name {
                "send_turns" => turns.answered,
                "send_turns_failed" => turns.failed,
                "send_retries" => turns.retries,
                "send_recoveries" => turns.recovered,
                "send_input_tokens" => turns.input_tokens,
                "send_output_tokens" => turns.output_tokens,
                "send_cache_read_input_tokens" => turns.cache_read_input_tokens,
                "send_cache_creation_input_tokens" => turns.cache_creation_input_tokens,
                "collapses" => activity.collapses,
                "memory_extractions" => activity.extractions_ok,
                "memory_extractions_failed" => activity.extractions_failed,
                "cache_breaks" => activity.cache_breaks,
                "retention_passes" => retention.passes(),
                "retention_failures" => load(&retention.failures),
                "retention_deleted_sessions" => load(&retention.deleted_sessions),
                "retention_deleted_bytes" => load(&retention.deleted_bytes),
                "proxy_requests" => proxy.as_ref().map_or(0, |p| p.requests),
                "proxy_bytes_up" => proxy.as_ref().map_or(0, |p| p.bytes_up),
                "proxy_bytes_down" => proxy.as_ref().map_or(0, |p| p.bytes_down),
                _ => counter.get(),
            };
            catch_up(counter, now);
        }
        for (kind, auto, ok, now) in activity.compactions {
            let trigger = if auto { "auto" } else { "manual" };
            let outcome = if ok { "ok" } else { "error" };
            let counter = self
                .compactions
                .with_label_values(&[kind.as_str(), trigger, outcome]);
            catch_up(&counter, now);
        }
        drop(mirroring);
        let mut out = Vec::new();
        // Encoding into memory fails only on a metric the registry itself refused.
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::warn!(error = %e, "encoding the metrics");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}

/// Brings a mirrored counter up to its owner's count `now` (a counter only grows).
fn catch_up(counter: &IntCounter, now: u64) {
    let was = counter.get();
    if now > was {
        counter.inc_by(now - was);
    }
}

/// Serves `GET /metrics` (the same text as `daemon.metrics`) on `listener` until `stop`.
/// Each connection is bounded in time, and at most 16 are served at once: a scraper
/// asks once every few seconds, nothing more.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    render: Arc<dyn Fn() -> futures::future::BoxFuture<'static, String> + Send + Sync>,
    stop: Arc<tokio::sync::Notify>,
) {
    use http_body_util::Full;
    use hyper::body::Bytes;
    use hyper::{Method, Request, Response, StatusCode};
    let slots = Arc::new(tokio::sync::Semaphore::new(16));
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = stop.notified() => return,
        };
        let Ok((stream, _)) = accepted else {
            continue;
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue;
        };
        let render = render.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let render = render.clone();
                async move {
                    if req.method() == Method::GET && req.uri().path() == "/metrics" {
                        Response::builder()
                            .header("content-type", "text/plain; version=0.0.4; charset=utf-8")
                            .body(Full::new(Bytes::from(render().await)))
                    } else {
                        Response::builder()
                            .status(StatusCode::NOT_FOUND)
                            .body(Full::new(Bytes::from_static(b"GET /metrics\n")))
                    }
                }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            let _ = tokio::time::timeout(Duration::from_secs(10), conn).await;
            drop(slot);
        });
    }
}
