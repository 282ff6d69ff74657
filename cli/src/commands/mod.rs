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
pub mod export;
pub mod hooks;
pub mod memory;
pub mod proxy;
pub mod service;
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

/// A session argument: a whole id; `last`, the session updated most recently; or the
/// start or the end of an id that names exactly one session. Ids are UUIDv7s, whose
/// start is a timestamp shared by sessions made close together and whose end is random,
/// so a few characters of the end usually suffice.
pub async fn resolve_session(client: &Client, arg: &str) -> Result<SessionInfo> {
    match client
        .session_get(ctxd_protocol::SessionIdParams {
            session_id: arg.into(),
        })
        .await
        .map(|r| r.session)
    {
        Ok(s) => return Ok(s),
        Err(ClientError::Rpc { code, .. }) if code == ctxd_protocol::SESSION_NOT_FOUND => {}
        Err(ClientError::Rpc { code, .. }) if code == ctxd_protocol::INVALID_PARAMS => {}
        Err(e) => return Err(e.into()),
    }
    let all = client
        .session_list(ctxd_protocol::SessionListParams {
            limit: Some(10_000),
        })
        .await
        .map(|r| r.sessions)?;
    if arg == "last" {
        return all
            .iter()
            .max_by(|a, b| a.updated_at.cmp(&b.updated_at))
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("there is no session yet (see `ctx session list`)"));
    }
    let pick = |matching: Vec<&SessionInfo>, how: &str| -> Option<Result<SessionInfo>> {
        match matching.as_slice() {
            [] => None,
            [one] => Some(Ok((*one).clone())),
            many => Some(Err(anyhow::anyhow!(
                "`{arg}` is the {how} of {} session ids: {}; give more of it",
                many.len(),
                many.iter()
                    .take(5)
                    .map(|s| s.session_id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    };
    let by_start = all
        .iter()
        .filter(|s| s.session_id.starts_with(arg))
        .collect();
    let by_end = all.iter().filter(|s| s.session_id.ends_with(arg)).collect();
    match (pick(by_start, "start"), pick(by_end, "end")) {
        (Some(Ok(one)), _) | (None | Some(Err(_)), Some(Ok(one))) => Ok(one),
        (Some(Err(e)), _) | (None, Some(Err(e))) => Err(e),
        (None, None) => bail!(
            "no session has the id `{arg}`, or an id that starts or ends with it (see `ctx session list`)"
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
    let proxy = match &s.settings.proxy {
        Some(p) => {
            let made = p.conversation.as_ref().map(|_| "proxied");
            let manage = (p.mode == ctxd_protocol::ProxyMode::Manage).then_some("manage");
            let marks: Vec<&str> = made.into_iter().chain(manage).collect();
            if marks.is_empty() {
                String::new()
            } else {
                format!("  [{}]", marks.join(", "))
            }
        }
        None => String::new(),
    };
    format!(
        "{}  {}  {}  {}{}{}",
        s.session_id,
        s.created_at,
        crate::output::count(s.record_count, "record"),
        s.cwd,
        proxy,
        s.title
            .as_deref()
            .map(|t| format!("  ({t})"))
            .unwrap_or_default()
    )
}
