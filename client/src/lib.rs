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

    /// `agent.start`: a sub-agent's thread for the parent's call `p.tool_use_id`.
    pub async fn start_agent(
        &self,
        p: AgentStartParams,
    ) -> Result<AgentStartResponse, ClientError> {
        self.call(AGENT_START, p).await
    }

    /// `agent.finish`: the sub-agent's answer becomes the parent's tool result.
    pub async fn finish_agent(
        &self,
        p: AgentFinishParams,
    ) -> Result<AgentFinishResponse, ClientError> {
        self.call(AGENT_FINISH, p).await
    }

    pub async fn list_agents(&self, session_id: &str) -> Result<Vec<AgentThread>, ClientError> {
        let r: AgentListResponse = self
            .call(
                AGENT_LIST,
                SessionIdParams {
                    session_id: session_id.into(),
                },
            )
            .await?;
        Ok(r.agents)
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

    /// Runs a `context.send` turn and streams it: `started`, the provider's events, then
    /// `finished` (the appended message) or `failed`. Dropping or unsubscribing cancels
    /// the turn.
    pub async fn send_stream(
        &self,
        session_id: &str,
    ) -> Result<Subscription<TurnEvent>, ClientError> {
        let p = SendParams {
            session_id: session_id.into(),
            agent_id: None,
        };
        self.subscribe_to(CONTEXT_SEND_STREAM, &p, CONTEXT_SEND_UNSUBSCRIBE)
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

    async fn subscribe_with<T: DeserializeOwned>(
        &self,
        p: SubscribeParams,
    ) -> Result<Subscription<T>, ClientError> {
        self.subscribe_to(SESSION_SUBSCRIBE, &p, SESSION_UNSUBSCRIBE)
            .await
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
