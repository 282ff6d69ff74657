//! A small client for ctxd: typed calls over a WebSocket on the daemon's Unix socket,
//! subscriptions to session events, and starting a daemon on demand.

mod spawn;
pub mod text;

use std::path::{Path, PathBuf};
use std::time::Duration;

use ctxd_protocol::*;
use jsonrpsee::core::ClientError as RpcClientError;
use jsonrpsee::core::client::{ClientT, Subscription, SubscriptionClientT};
use jsonrpsee::core::traits::ToRpcParams;
use jsonrpsee::ws_client::{WsClient, WsClientBuilder};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use thiserror::Error;
use tokio::net::UnixStream;

pub use spawn::{ensure_daemon, find_ctxd_binary};

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

impl From<RpcClientError> for ClientError {
    fn from(e: RpcClientError) -> Self {
        match e {
            RpcClientError::Call(obj) => ClientError::Rpc {
                code: obj.code(),
                message: obj.message().to_string(),
                data: obj.data().and_then(|d| serde_json::from_str(d.get()).ok()),
            },
            other => ClientError::Transport(other.to_string()),
        }
    }
}

/// Params passed by name, as ctxd expects.
struct Named<T>(T);

impl<T: Serialize> ToRpcParams for Named<T> {
    fn to_rpc_params(self) -> Result<Option<Box<RawValue>>, serde_json::Error> {
        serde_json::value::to_raw_value(&self.0).map(Some)
    }
}

/// Where clients look for the daemon when no socket is given: the same rules as `ctxd`.
pub fn resolve_socket(socket: Option<PathBuf>, home: Option<&Path>) -> PathBuf {
    if let Some(s) = socket {
        return s;
    }
    if let Some(h) = home {
        return h.join("ctxd.sock");
    }
    let dirs = directories::ProjectDirs::from("dev", "ctxd", "ctxd");
    ctxd::daemon::default_socket(dirs.as_ref())
}

pub struct Client {
    ws: WsClient,
    socket: PathBuf,
}

const MAX_MESSAGE: u32 = 256 * 1024 * 1024;

impl Client {
    pub async fn connect(socket: &Path) -> Result<Client, ClientError> {
        let stream = UnixStream::connect(socket)
            .await
            .map_err(|source| ClientError::Connect {
                path: socket.to_path_buf(),
                source,
            })?;
        let ws = WsClientBuilder::default()
            .max_request_size(MAX_MESSAGE)
            .max_response_size(MAX_MESSAGE)
            .request_timeout(Duration::from_secs(600))
            .build_with_stream("ws://localhost", stream)
            .await
            .map_err(|e| ClientError::Transport(e.to_string()))?;
        Ok(Client {
            ws,
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
        Ok(self.ws.request(method, Named(params)).await?)
    }

    pub async fn status(&self) -> Result<DaemonStatus, ClientError> {
        self.call(DAEMON_STATUS, NoParams {}).await
    }

    pub async fn ping(&self) -> Result<PingResponse, ClientError> {
        self.call(DAEMON_PING, NoParams {}).await
    }

    pub async fn shutdown(&self) -> Result<ShutdownResponse, ClientError> {
        self.call(DAEMON_SHUTDOWN, NoParams {}).await
    }

    pub async fn create_session(&self, p: SessionCreateParams) -> Result<SessionInfo, ClientError> {
        let r: SessionCreateResponse = self.call(SESSION_CREATE, p).await?;
        Ok(r.session)
    }

    pub async fn list_sessions(&self, limit: Option<u32>) -> Result<Vec<SessionInfo>, ClientError> {
        let r: SessionListResponse = self.call(SESSION_LIST, SessionListParams { limit }).await?;
        Ok(r.sessions)
    }

    pub async fn get_session(&self, session_id: &str) -> Result<SessionInfo, ClientError> {
        let r: SessionGetResponse = self
            .call(
                SESSION_GET,
                SessionIdParams {
                    session_id: session_id.into(),
                },
            )
            .await?;
        Ok(r.session)
    }

    pub async fn fork_session(
        &self,
        session_id: &str,
        up_to_uuid: Option<String>,
    ) -> Result<SessionInfo, ClientError> {
        let r: SessionForkResponse = self
            .call(
                SESSION_FORK,
                SessionForkParams {
                    session_id: session_id.into(),
                    up_to_uuid,
                },
            )
            .await?;
        Ok(r.session)
    }

    pub async fn delete_session(&self, session_id: &str) -> Result<bool, ClientError> {
        let r: SessionDeleteResponse = self
            .call(
                SESSION_DELETE,
                SessionIdParams {
                    session_id: session_id.into(),
                },
            )
            .await?;
        Ok(r.deleted)
    }

    pub async fn import(
        &self,
        p: SessionImportParams,
    ) -> Result<SessionImportResponse, ClientError> {
        self.call(SESSION_IMPORT, p).await
    }

    pub async fn append(&self, p: AppendParams) -> Result<AppendResponse, ClientError> {
        self.call(TRANSCRIPT_APPEND, p).await
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

    pub async fn read(&self, p: ReadParams) -> Result<ReadResponse, ClientError> {
        self.call(TRANSCRIPT_READ, p).await
    }

    pub async fn set_tools(&self, p: ToolsSetParams) -> Result<ToolsSetResponse, ClientError> {
        self.call(CAPABILITIES_SET_TOOLS, p).await
    }

    pub async fn compile(&self, p: CompileParams) -> Result<CompileResponse, ClientError> {
        self.call(CONTEXT_COMPILE, p).await
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
        self.subscribe_with(SubscribeParams {
            session_id: session_id.into(),
            after_seq: None,
            include_records: false,
        })
        .await
    }

    /// A session's events with their sequence numbers, first replaying records after
    /// `after_seq` when it is given.
    pub async fn subscribe_from(
        &self,
        session_id: &str,
        after_seq: Option<u64>,
        include_records: bool,
    ) -> Result<Subscription<SessionNotification>, ClientError> {
        self.subscribe_with(SubscribeParams {
            session_id: session_id.into(),
            after_seq,
            include_records,
        })
        .await
    }

    /// Any subscription method, by name, with by-name params; items as raw JSON.
    pub async fn subscribe_raw(
        &self,
        method: &str,
        params: serde_json::Value,
        unsubscribe: &str,
    ) -> Result<Subscription<serde_json::Value>, ClientError> {
        Ok(self
            .ws
            .subscribe(method, Named(params), unsubscribe)
            .await?)
    }

    async fn subscribe_with<T: DeserializeOwned>(
        &self,
        p: SubscribeParams,
    ) -> Result<Subscription<T>, ClientError> {
        Ok(self
            .ws
            .subscribe(SESSION_SUBSCRIBE, Named(p), SESSION_UNSUBSCRIBE)
            .await?)
    }
}
