//! Events between daemons sharing one database: `NOTIFY ctxd_events` carries what one
//! daemon caused, `LISTEN` on a dedicated connection hands the others' notes to the
//! engine, which passes them to its local subscribers.
//!
//! Appends are announced inside the transaction that inserts them (delivered exactly when
//! it commits, never for a rolled-back batch); other events are published after the fact
//! on a connection of their own, best effort: a note that cannot be sent (the database
//! away, the payload over PostgreSQL's 8,000-byte limit) is dropped with a warning.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::Duration;

use ctxd_protocol::SessionEvent;
use postgres::fallible_iterator::FallibleIterator;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::UnboundedSender;

use super::connect;

/// The channel every ctxd daemon of a database listens on.
pub(crate) const CHANNEL: &str = "ctxd_events";
/// PostgreSQL refuses payloads of 8,000 bytes and more.
const MAX_PAYLOAD: usize = 7_999;
/// Events waiting for the publisher; more are dropped (the database is away).
pub(crate) const PUBLISH_QUEUE: usize = 4_096;
/// How long a lost connection waits before the next attempt.
const RECONNECT: Duration = Duration::from_secs(1);

/// One note from a daemon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Remote {
    /// The daemon that caused it (its instance id).
    pub from: String,
    pub session_id: String,
    #[serde(flatten)]
    pub what: RemoteWhat,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemoteWhat {
    /// Records `first_seq..=last_seq` were committed.
    Appended { first_seq: u64, last_seq: u64 },
    /// Any other event, as subscribers see it.
    Event(SessionEvent),
}

impl Remote {
    /// The JSON payload, or `None` when it is too long for `NOTIFY`.
    pub(crate) fn payload(&self) -> Option<String> {
        let text = serde_json::to_string(self).ok()?;
        (text.len() <= MAX_PAYLOAD).then_some(text)
    }
}

/// Sends queued notes on its own connection until the queue's senders are gone.
pub fn publish(config: postgres::Config, queue: Receiver<String>) {
    let mut client: Option<postgres::Client> = None;
    while let Ok(payload) = queue.recv() {
        if client.as_ref().is_none_or(|c| c.is_closed()) {
            client = connect(&config).ok();
        }
        let Some(c) = client.as_mut() else {
            tracing::warn!("event not published: the database is unreachable");
            continue;
        };
        if let Err(e) = c.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload]) {
            tracing::warn!(error = %e, "event not published");
        }
    }
}

/// Queues a note for the publisher; a full queue drops it.
pub(crate) fn enqueue(queue: &SyncSender<String>, note: &Remote) {
    let Some(payload) = note.payload() else {
        tracing::warn!(session = %note.session_id, "event not published: too large for NOTIFY");
        return;
    };
    if let Err(TrySendError::Full(_)) = queue.try_send(payload) {
        tracing::warn!(session = %note.session_id, "event not published: the queue is full");
    }
}

/// Listens until `stop` is set or nobody receives: notes from other daemons go to `out`.
/// A lost connection is retried every second; notes sent meanwhile are missed (records
/// are not lost: subscribers fill seq gaps from the store on the next append).
pub(crate) fn listen(
    config: postgres::Config,
    instance: String,
    out: UnboundedSender<Remote>,
    stop: Arc<AtomicBool>,
) {
    while !stop.load(Ordering::Relaxed) && !out.is_closed() {
        let mut client = match connect(&config) {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(error = %e, "listener: database unreachable");
                std::thread::sleep(RECONNECT);
                continue;
            }
        };
        if let Err(e) = client.batch_execute(&format!("LISTEN {CHANNEL}")) {
            tracing::warn!(error = %e, "listener: LISTEN failed");
            std::thread::sleep(RECONNECT);
            continue;
        }
        tracing::debug!("listening for other daemons' events");
        'connected: while !stop.load(Ordering::Relaxed) && !out.is_closed() {
            let mut notes = client.notifications();
            let mut batch = notes.timeout_iter(Duration::from_millis(500));
            loop {
                match batch.next() {
                    Ok(None) => break,
                    Ok(Some(n)) => match serde_json::from_str::<Remote>(n.payload()) {
                        Ok(r) if r.from != instance => {
                            let _ = out.send(r);
                        }
                        Ok(_) => {}
                        Err(e) => tracing::debug!(error = %e, "listener: unreadable note"),
                    },
                    Err(e) => {
                        tracing::warn!(error = %e, "listener: connection lost");
                        break 'connected;
                    }
                }
            }
            drop(batch);
            drop(notes);
            if client.is_closed() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_round_trip_and_large_ones_are_refused() {
        let note = Remote {
            from: "a".into(),
            session_id: "s".into(),
            what: RemoteWhat::Appended {
                first_seq: 3,
                last_seq: 5,
            },
        };
        let text = note.payload().unwrap();
        assert_eq!(serde_json::from_str::<Remote>(&text).unwrap(), note);
        let big = Remote {
            what: RemoteWhat::Event(SessionEvent::SessionUpdated {
                session_id: "x".repeat(9_000),
            }),
            ..note
        };
        assert_eq!(big.payload(), None);
    }
}
