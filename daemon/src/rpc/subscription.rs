//! `session.subscribe`: replay what the subscriber missed from the store, then stream.
//!
//! The channel is subscribed to before the store is read, so nothing falls between the
//! replay and the stream; records the stream repeats are dropped by seq, and a gap in the
//! stream (a lag, or batches emitted out of order) is filled from the store. So every
//! record reaches the subscriber exactly once, in seq order.

use std::sync::Arc;

use ctxd_protocol::*;
use jsonrpsee::core::SubscriptionResult;
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::{PendingSubscriptionSink, RpcModule, SubscriptionMessage, SubscriptionSink};
use serde_json::json;
use tokio::sync::broadcast;

use super::context::{caller_of, count, parse};
use super::outbox::{LAG_GRACE, Outbox};
use super::{RpcContext, to_rpc_error};
use ctxd_engine::{Emitted, Engine, Subscription};

/// Records per replayed `records_appended` event.
const REPLAY_PAGE: u32 = 500;

pub(super) fn register(
    m: &mut RpcModule<RpcContext>,
) -> Result<(), jsonrpsee::core::RegisterMethodError> {
    m.register_subscription(
        method::SessionSubscribe::NAME,
        method::SessionSubscribe::NOTIFICATION,
        method::SessionSubscribe::UNSUBSCRIBE,
        |params, pending, ctx, ext| async move {
            // Counted when the stream opens or is refused.
            let started = std::time::Instant::now();
            let answered = |r: &Result<(), ErrorObjectOwned>| {
                count(&ctx.metrics, method::SessionSubscribe::NAME, started, r);
            };
            let p: <method::SessionSubscribe as Method>::Params = match parse(&params) {
                Ok(p) => p,
                Err(e) => {
                    answered(&Err(e.clone()));
                    pending.reject(e).await;
                    return Ok(());
                }
            };
            let caller = caller_of(&ext);
            let outbox = ext.get::<Arc<Outbox>>().cloned();
            let opened = Stream::open(&ctx.engine, p, caller, outbox, pending, &answered).await?;
            let Some(stream) = opened else {
                return Ok(());
            };
            stream.run().await
        },
    )?;
    Ok(())
}

/// One accepted subscription and how far it has delivered.
struct Stream {
    engine: Arc<Engine>,
    session_id: String,
    include_records: bool,
    /// The connection that subscribed (events it caused are `own`).
    caller: Option<u64>,
    rx: Subscription,
    sink: SubscriptionSink,
    /// What the connection has queued for its client (none over plain HTTP).
    outbox: Option<Arc<Outbox>>,
    _open: super::outbox::Counted,
    /// The last transcript seq delivered (or, before any, the starting point).
    delivered: u64,
}

impl Stream {
    /// Subscribes, checks `after_seq`, accepts. `None` when the call was rejected.
    async fn open(
        engine: &Arc<Engine>,
        p: SubscribeParams,
        caller: Option<u64>,
        outbox: Option<Arc<Outbox>>,
        pending: PendingSubscriptionSink,
        answered: &(dyn Fn(&Result<(), ErrorObjectOwned>) + Sync),
    ) -> Result<Option<Stream>, jsonrpsee::core::SubscriptionError> {
        let opened = async {
            let rx = engine
                .subscribe(&p.session_id)
                .await
                .map_err(to_rpc_error)?;
            // Seqs are gap-free from 1, so the count is the last seq.
            let last = engine
                .get_session(&p.session_id)
                .await
                .map_err(to_rpc_error)?
                .record_count;
            if let Some(after) = p.after_seq
                && after > last
            {
                let reason = format!("is {after}, beyond the transcript's last seq {last}");
                return Err(ErrorObjectOwned::owned(
                    INVALID_PARAMS,
                    format!("invalid params: after_seq {reason}"),
                    Some(json!({ "field": "after_seq", "reason": reason })),
                ));
            }
            Ok((rx, last))
        }
        .await;
        let (rx, last) = match opened {
            Ok(opened) => opened,
            Err(e) => {
                answered(&Err(e.clone()));
                pending.reject(e).await;
                return Ok(None);
            }
        };
        let sink = pending.accept().await?;
        answered(&Ok(()));
        let mut stream = Stream {
            engine: engine.clone(),
            session_id: p.session_id,
            include_records: p.include_records,
            caller,
            rx,
            sink,
            outbox,
            _open: super::outbox::Counted::subscription(),
            delivered: p.after_seq.unwrap_or(last),
        };
        if p.after_seq.is_some() && !stream.catch_up(None, false).await? {
            return Ok(None);
        }
        Ok(Some(stream))
    }

    async fn run(mut self) -> SubscriptionResult {
        loop {
            let received = tokio::select! {
                () = self.sink.closed() => break,
                r = self.rx.recv() => r,
            };
            if !self.room_or_end(1).await? {
                break;
            }
            let keep_going = match received {
                Ok(Emitted { event, caller }) => {
                    let own = caller.is_some() && caller == self.caller;
                    self.deliver(event, own).await?
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    let event = SessionEvent::Lagged {
                        session_id: self.session_id.clone(),
                        missed,
                        last_seq: self.delivered,
                        ended: false,
                    };
                    self.send(event, false).await?
                }
                Err(broadcast::error::RecvError::Closed) => false,
            };
            if !keep_going {
                break;
            }
        }
        Ok(())
    }

    /// Sends one live event; `false` once the stream should end.
    async fn deliver(&mut self, event: SessionEvent, own: bool) -> Result<bool, serde_json::Error> {
        let SessionEvent::RecordsAppended { records, .. } = event else {
            let last = matches!(event, SessionEvent::SessionDeleted { .. });
            return Ok(self.send(event, own).await? && !last);
        };
        let (Some(first), Some(max)) = (
            records.iter().map(|r| r.seq).min(),
            records.iter().map(|r| r.seq).max(),
        ) else {
            return Ok(true);
        };
        if max <= self.delivered {
            return Ok(true);
        }
        let contiguous = first <= self.delivered + 1;
        if self.include_records || !contiguous {
            return self.catch_up(Some(max), own && contiguous).await;
        }
        let fresh: Vec<AppendedRecord> = records
            .into_iter()
            .filter(|r| r.seq > self.delivered)
            .collect();
        self.delivered = max;
        let event = SessionEvent::RecordsAppended {
            session_id: self.session_id.clone(),
            records: fresh,
            full_records: None,
        };
        self.send(event, own).await
    }

    /// Delivers the stored records after `delivered` (up to `upto`, else to the end) as
    /// `records_appended` events of at most `REPLAY_PAGE` records. `false` when the
    /// session is gone or the subscriber left.
    async fn catch_up(&mut self, upto: Option<u64>, own: bool) -> Result<bool, serde_json::Error> {
        loop {
            if !self.room_or_end(0).await? {
                return Ok(false);
            }
            let page = self
                .engine
                .read(ReadParams {
                    session_id: self.session_id.clone(),
                    agent_id: None,
                    after_seq: self.delivered,
                    limit: Some(REPLAY_PAGE),
                })
                .await;
            let page = match page {
                Ok(p) => p,
                Err(e) => {
                    tracing::debug!(session = %self.session_id, error = %e, "subscription replay ended");
                    return Ok(false);
                }
            };
            let records: Vec<Record> = page
                .records
                .into_iter()
                .take_while(|r| upto.is_none_or(|u| r.seq <= u))
                .collect();
            let Some(last) = records.last().map(|r| r.seq) else {
                return Ok(true);
            };
            self.delivered = last;
            let event = SessionEvent::RecordsAppended {
                session_id: self.session_id.clone(),
                records: records
                    .iter()
                    .map(|r| AppendedRecord {
                        uuid: r.uuid.clone(),
                        seq: r.seq,
                    })
                    .collect(),
                full_records: self.include_records.then_some(records),
            };
            if !self.send(event, own).await? {
                return Ok(false);
            }
            if page.next_after_seq.is_none() || upto.is_some_and(|u| last >= u) {
                return Ok(true);
            }
        }
    }

    /// Waits for the connection to have room for another event. A subscriber whose
    /// connection stays full past `LAG_GRACE` is too far behind: it is told `lagged`
    /// with `ended: true` (before anything it has not been sent), and `false` ends the
    /// subscription, so what it would have queued is never held for it.
    async fn room_or_end(&self, in_hand: u64) -> Result<bool, serde_json::Error> {
        let Some(outbox) = &self.outbox else {
            return Ok(true);
        };
        if outbox.room(Some(LAG_GRACE)).await {
            return Ok(true);
        }
        tracing::debug!(session = %self.session_id, "a subscriber fell too far behind; ending it");
        let missed = self.rx.waiting() as u64 + in_hand;
        let event = SessionEvent::Lagged {
            session_id: self.session_id.clone(),
            missed,
            last_seq: self.delivered,
            ended: true,
        };
        self.send(event, false).await?;
        Ok(false)
    }

    /// `false` when the subscriber is gone.
    async fn send(&self, event: SessionEvent, own: bool) -> Result<bool, serde_json::Error> {
        let note = SessionNotification {
            seq: self.delivered,
            own,
            event,
        };
        let msg: SubscriptionMessage = serde_json::value::to_raw_value(&note)?.into();
        Ok(self.sink.send(msg).await.is_ok())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use jsonrpsee::core::params::ObjectParams;
    use tokio::sync::Notify;

    use super::*;
    use crate::rpc::build_module;
    use ctxd_engine::Store;
    use ctxd_pipeline::clock::SystemClock;

    /// A subscriber that stops reading overflows the channel: it is told `lagged` with
    /// the last seq it got, and still receives every record exactly once, in order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lagging_subscriber_is_told_and_still_gets_every_record_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let engine = Arc::new(Engine::new(store, dir.path(), Arc::new(SystemClock)));
        let module = build_module(RpcContext {
            engine: engine.clone(),
            shutdown: Arc::new(Notify::new()),
            socket: dir.path().join("s"),
            proxy: None,
            retention: Default::default(),
            metrics: Arc::new(crate::metrics::Metrics::new(None).unwrap()),
        })
        .unwrap();
        let sid = engine
            .create_session(SessionCreateParams {
                cwd: dir.path().display().to_string(),
                no_git: true,
                ..Default::default()
            })
            .await
            .unwrap()
            .session_id;
        let mut params = ObjectParams::new();
        params.insert("session_id", &sid).unwrap();
        // A one-message buffer: the subscription task blocks as soon as we stop reading.
        let mut sub = module
            .subscribe(SESSION_SUBSCRIBE, params, 1)
            .await
            .unwrap();
        let total = 2 * ctxd_engine::EVENT_BUFFER as u64;
        for i in 0..total {
            engine
                .append(AppendParams {
                    session_id: sid.clone(),
                    agent_id: None,
                    records: vec![RecordInput {
                        kind: Some(RecordKind::User),
                        content: vec![ContentBlock::text(format!("m{i}"))],
                        ..Default::default()
                    }],
                    expected_last_uuid: None,
                })
                .await
                .unwrap();
        }
        let mut seqs: Vec<u64> = Vec::new();
        let mut lagged = None;
        while seqs.last() != Some(&total) {
            let (n, _) =
                tokio::time::timeout(Duration::from_secs(20), sub.next::<SessionNotification>())
                    .await
                    .expect("an event in time")
                    .expect("open")
                    .expect("decodes");
            match n.event {
                SessionEvent::RecordsAppended { records, .. } => {
                    seqs.extend(records.iter().map(|r| r.seq));
                    assert_eq!(n.seq, *seqs.last().unwrap());
                }
                SessionEvent::Lagged {
                    missed, last_seq, ..
                } => {
                    assert_eq!(last_seq, seqs.last().copied().unwrap_or(0));
                    lagged = Some(missed);
                }
                _ => {}
            }
        }
        assert!(
            lagged.is_some_and(|m| m > 0),
            "the subscriber was told it lagged"
        );
        assert_eq!(seqs, (1..=total).collect::<Vec<_>>());
    }
}
