//! A small client for ctxd: typed calls over a WebSocket on the daemon's Unix socket
//! (`transport`), subscriptions to session events (`Subscription`), and starting a
//! daemon on demand.

mod spawn;
mod subscription;
pub mod text;
mod transport;

use std::path::{Path, PathBuf};

use ctxd_protocol::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use thiserror::Error;
use tokio::net::UnixStream;

pub use spawn::{ensure_daemon, find_ctxd_binary};
pub use subscription::Subscription;

#[derive(Debug, Error)]
pub enum ClientError {
    #[error("cannot connect to ctxd at {path}: {source}")]
    Connect {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The daemon answered with a JSON-RPC error.
    #[error("{message} (code {code})")]
    Rpc {
        code: i32,
        message: String,
        data: Option<serde_json::Value>,
    },
    #[error("transport: {0}")]
    Transport(String),
    #[error("could not start ctxd: {0}")]
    Spawn(String),
}

/// Where clients look for the daemon when no socket is given: the same rules as `ctxd`.
pub use ctxd_protocol::socket::resolve_socket;

pub struct Client {
    connection: transport::Connection,
    socket: PathBuf,
}

impl Client {
    pub async fn connect(socket: &Path) -> Result<Client, ClientError> {
        let stream = UnixStream::connect(socket)
            .await
            .map_err(|source| ClientError::Connect {
                path: socket.to_path_buf(),
                source,
            })?;
        Ok(Client {
            connection: transport::Connection::open(stream).await?,
            socket: socket.to_path_buf(),
        })
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Any method, by name, with by-name params.
    pub async fn call<P: Serialize + Send, R: DeserializeOwned>(
        &self,
        method: &str,
        params: P,
    ) -> Result<R, ClientError> {
        let result = self.connection.call(method, &params).await?;
        serde_json::from_str(result.get())
            .map_err(|e| ClientError::Transport(format!("decoding {method}'s result: {e}")))
    }

    /// Appends records given as JSON values (the daemon validates them).
    pub async fn append_values(
        &self,
        session_id: &str,
        records: Vec<serde_json::Value>,
        expected_last_uuid: Option<Option<String>>,
    ) -> Result<AppendResponse, ClientError> {
        let mut params = serde_json::json!({ "session_id": session_id, "records": records });
        if let Some(e) = expected_last_uuid {
            params["expected_last_uuid"] = serde_json::json!(e);
        }
        self.call(TRANSCRIPT_APPEND, params).await
    }

    /// The handshake: fails with `UNSUPPORTED_PROTOCOL_VERSION` when the daemon speaks
    /// another major version than this client.
    pub async fn initialize(&self, client_name: &str) -> Result<InitializeResult, ClientError> {
        self.call(
            DAEMON_INITIALIZE,
            InitializeParams {
                client_info: PeerInfo {
                    name: client_name.into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                },
                protocol_version: PROTOCOL_VERSION.into(),
            },
        )
        .await
    }

    /// A session's events from now on.
    pub async fn subscribe(
        &self,
        session_id: &str,
    ) -> Result<Subscription<SessionEvent>, ClientError> {
        let p = SubscribeParams::from_now(session_id);
        self.subscribe_to(SESSION_SUBSCRIBE, &p, SESSION_UNSUBSCRIBE)
            .await
    }

    /// Any subscription method, by name, with by-name params; items as raw JSON.
    pub async fn subscribe_raw(
        &self,
        method: &str,
        params: serde_json::Value,
        unsubscribe: &str,
    ) -> Result<Subscription<serde_json::Value>, ClientError> {
        self.subscribe_to(method, &params, unsubscribe).await
    }

    async fn subscribe_to<T, P: Serialize>(
        &self,
        method: &str,
        params: &P,
        unsubscribe: &str,
    ) -> Result<Subscription<T>, ClientError> {
        let (id, items, connection) = self
            .connection
            .subscribe(method, params, unsubscribe)
            .await?;
        Ok(Subscription::new(id, items, connection))
    }
}

/// One typed method per row of the protocol's method table, named after the method
/// (`session.create` is `session_create`): params and result are the table's types, and a
/// subscription method returns its [`Subscription`] of the table's item type.
macro_rules! client_methods {
    ($(
        $konst:ident $marker:ident $fname:ident = $name:literal ($params:ty) -> $result:ty : $summary:literal
        $(notifies $nconst:ident = $nname:literal until $unsub:ident with $item:ty)?
    ;)*) => {
        impl Client {
            $(client_method!($fname, $marker, $summary, $params, $result $(, $item)?);)*
        }
    };
}

macro_rules! client_method {
    ($fname:ident, $marker:ident, $summary:literal, $params:ty, $result:ty) => {
        #[doc = $summary]
        pub async fn $fname(&self, params: $params) -> Result<$result, ClientError> {
            self.call(<method::$marker as Method>::NAME, params).await
        }
    };
    ($fname:ident, $marker:ident, $summary:literal, $params:ty, $result:ty, $item:ty) => {
        #[doc = $summary]
        pub async fn $fname(&self, params: $params) -> Result<Subscription<$item>, ClientError> {
            self.subscribe_to(
                <method::$marker as Method>::NAME,
                &params,
                <method::$marker as SubscriptionMethod>::UNSUBSCRIBE,
            )
            .await
        }
    };
}

ctxd_protocol::with_methods!(client_methods);
