//! The commands of `ctx`, one module per group, and what they share: how to reach the
//! daemon, how a session argument becomes a session id, and how a disabled feature is
//! explained.

pub mod attachments;
pub mod cache;
pub mod capabilities;
pub mod collapse;
pub mod context;
pub mod daemon;
pub mod demo;
pub mod events;
pub mod hooks;
pub mod memory;
pub mod session;
pub mod settings;
pub mod transcript;

use std::path::PathBuf;

use anyhow::{Result, bail};
use ctx_client::{Client, ClientError, ensure_daemon, resolve_socket};
use ctxd_protocol::SessionInfo;

/// The global options every command runs with.
pub struct Ctx {
    pub socket: PathBuf,
    pub home: Option<PathBuf>,
    pub no_start: bool,
    pub json: bool,
}

impl Ctx {
    pub fn new(socket: Option<PathBuf>, home: Option<PathBuf>, no_start: bool, json: bool) -> Ctx {
        Ctx {
            socket: resolve_socket(socket, home.as_deref()),
            home,
            no_start,
            json,
        }
    }

    /// A connection to the daemon, starting one unless `--no-start`.
    pub async fn connect(&self) -> Result<Client> {
        let r = if self.no_start {
            Client::connect(&self.socket).await
        } else {
            ensure_daemon(&self.socket, self.home.as_deref()).await
        };
        r.map_err(|e| match e {
            ClientError::Connect { path, .. } => anyhow::anyhow!(
                "no ctxd answers on {} (start one with `ctxd`, or drop --no-start)",
                path.display()
            ),
            other => other.into(),
        })
    }
}

/// A session argument: a whole id, or a prefix that names exactly one session.
pub async fn resolve_session(client: &Client, arg: &str) -> Result<SessionInfo> {
    match client.get_session(arg).await {
        Ok(s) => return Ok(s),
        Err(ClientError::Rpc { code, .. }) if code == ctxd_protocol::SESSION_NOT_FOUND => {}
        Err(ClientError::Rpc { code, .. }) if code == ctxd_protocol::INVALID_PARAMS => {}
        Err(e) => return Err(e.into()),
    }
    let all = client.list_sessions(Some(10_000)).await?;
    let matching: Vec<&SessionInfo> = all
        .iter()
        .filter(|s| s.session_id.starts_with(arg))
        .collect();
    match matching.as_slice() {
        [one] => Ok((*one).clone()),
        [] => bail!("no session has the id or id prefix `{arg}` (see `ctx session list`)"),
        many => bail!(
            "`{arg}` is the start of {} session ids: {}; give more of it",
            many.len(),
            many.iter()
                .take(5)
                .map(|s| s.session_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The id of the session an argument names.
pub async fn session_id(client: &Client, arg: &str) -> Result<String> {
    Ok(resolve_session(client, arg).await?.session_id)
}

/// The message for a command that needs a feature the session has off.
pub fn feature_off(feature: &str, sid: &str, setting: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{feature} is off for session {sid}; turn it on with `ctx session set {sid} {setting}`"
    )
}

/// One line per session for `session list`.
pub fn session_line(s: &SessionInfo) -> String {
    format!(
        "{}  {}  {}  {}{}",
        s.session_id,
        s.created_at,
        crate::output::count(s.record_count, "record"),
        s.cwd,
        s.title
            .as_deref()
            .map(|t| format!("  ({t})"))
            .unwrap_or_default()
    )
}
