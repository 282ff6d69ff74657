//! What travels on a session's event channel: the event, and which caller caused it.
//!
//! The caller is an opaque number the edge chooses (the RPC layer uses the connection
//! id). It rides in a task-local for the duration of one call, so the engine's many
//! emit sites need no extra parameter; work spawned in the background (extraction,
//! watcher events) has no caller.

use std::future::Future;

use ctxd_protocol::SessionEvent;

tokio::task_local! {
    static CALLER: u64;
}

/// One event as broadcast to a session's subscribers.
#[derive(Debug, Clone)]
pub struct Emitted {
    pub event: SessionEvent,
    /// The caller whose call caused it, if any.
    pub caller: Option<u64>,
}

impl Emitted {
    pub(crate) fn now(event: SessionEvent) -> Emitted {
        Emitted {
            event,
            caller: CALLER.try_with(|c| *c).ok(),
        }
    }
}

/// Runs `f` on behalf of `caller`: events it emits carry that caller.
pub async fn as_caller<F: Future>(caller: u64, f: F) -> F::Output {
    CALLER.scope(caller, f).await
}
