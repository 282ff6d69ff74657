//! A subscription's stream of items. Dropping it ends the subscription on the daemon.

use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Weak;
use std::task::{Context, Poll};

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::ClientError;
use crate::transport::Shared;

/// Items of one subscription, decoded as `T`. Ends (`None`) when the daemon ends it, the
/// connection closes, or this side fell more than a thousand items behind.
pub struct Subscription<T> {
    items: mpsc::Receiver<Box<RawValue>>,
    /// The subscription's id, as the daemon wrote it in JSON.
    id: String,
    connection: Weak<Shared>,
    _item: PhantomData<fn() -> T>,
}

impl<T> Subscription<T> {
    pub(crate) fn new(
        id: String,
        items: mpsc::Receiver<Box<RawValue>>,
        connection: Weak<Shared>,
    ) -> Subscription<T> {
        Subscription {
            items,
            id,
            connection,
            _item: PhantomData,
        }
    }

    /// The subscription's id, as JSON.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl<T: DeserializeOwned> Subscription<T> {
    /// The next item; `None` once the subscription has ended.
    pub async fn next(&mut self) -> Option<Result<T, serde_json::Error>> {
        let raw = self.items.recv().await?;
        Some(serde_json::from_str(raw.get()))
    }

    /// Ends the subscription on the daemon and waits until the request is written.
    pub async fn unsubscribe(mut self) -> Result<(), ClientError> {
        let Some(shared) = self.connection.upgrade() else {
            return Ok(());
        };
        // Forgotten here, so `drop` has nothing left to do.
        self.connection = Weak::new();
        match shared.forget_subscription(&self.id) {
            Some(method) => shared.unsubscribe(&method, &self.id).await,
            None => Ok(()),
        }
    }
}

impl<T: DeserializeOwned> futures::Stream for Subscription<T> {
    type Item = Result<T, serde_json::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.items
            .poll_recv(cx)
            .map(|raw| raw.map(|raw| serde_json::from_str(raw.get())))
    }
}

impl<T> Drop for Subscription<T> {
    fn drop(&mut self) {
        let Some(shared) = self.connection.upgrade() else {
            return;
        };
        let Some(method) = shared.forget_subscription(&self.id) else {
            return;
        };
        // Telling the daemon needs a write; without a runtime to write on, the
        // subscription ends with the connection instead.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let id = std::mem::take(&mut self.id);
            runtime.spawn(async move {
                let _ = shared.unsubscribe(&method, &id).await;
            });
        }
    }
}

impl<T> std::fmt::Debug for Subscription<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .finish()
    }
}
