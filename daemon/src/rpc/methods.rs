//! Registration of every method of `ctxd_protocol::method_table`.

use ctxd_protocol::*;
use jsonrpsee::RpcModule;
use jsonrpsee::types::ErrorObjectOwned;
use serde_json::json;

use super::context::{RpcContext, async_method, sync_method};
use super::to_rpc_error;

type RpcResult<T> = Result<T, ErrorObjectOwned>;

/// The compiled body travels as a `RawValue`, so no layer re-encodes (and reorders) it.
fn compile_response(c: ctxd_pipeline::compile::Compiled) -> ctxd_engine::Result<CompileResponse> {
    let request = serde_json::value::RawValue::from_string(c.body)
        .map_err(|e| ctxd_engine::Error::Internal(e.to_string()))?;
    Ok(CompileResponse {
        request,
        metadata: c.metadata,
    })
}

/// How long `daemon.status` waits for the store's session count.
const STATUS_STORE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

pub(crate) fn build_module(
    ctx: RpcContext,
) -> Result<RpcModule<RpcContext>, jsonrpsee::core::RegisterMethodError> {
    let mut m = RpcModule::new(ctx);

    sync_method!(m, method::DaemonInitialize, |ctx, p| initialize(ctx, p))?;
    async_method!(m, method::DaemonStatus, |ctx, _p| {
        // The status answers while the store does not, and says so.
        let (sessions, store_error) =
            match tokio::time::timeout(STATUS_STORE_WAIT, ctx.engine.session_count()).await {
                Ok(Ok(n)) => (n, None),
                Ok(Err(e)) => (ctx.engine.loaded_sessions() as u64, Some(e.to_string())),
                Err(_) => (
                    ctx.engine.loaded_sessions() as u64,
                    Some(format!(
                        "the store did not answer within {} s",
                        STATUS_STORE_WAIT.as_secs()
                    )),
                ),
            };
        Ok(DaemonStatus {
            protocol_version: PROTOCOL_VERSION.into(),
            daemon_version: env!("CARGO_PKG_VERSION").into(),
            pid: std::process::id(),
            socket: ctx.socket.display().to_string(),
            home: ctx.engine.home().display().to_string(),
            uptime_ms: ctx.engine.uptime_ms(),
            sessions,
            store_error,
            loaded_sessions: ctx.engine.loaded_sessions() as u64,
            websocket: super::outbox::status(),
        })
    })?;
    sync_method!(m, method::ProxyStatus, |ctx, _p| {
        Ok(match &ctx.proxy {
            Some(proxy) => {
                let s = proxy.status();
                ProxyStatusResponse {
                    listening: true,
                    listen: Some(s.listen),
                    openai_base_url: Some(format!("{}/v1", s.base_url)),
                    anthropic_base_url: Some(s.base_url),
                    sessions_seen: s.sessions_seen,
                    requests: s.requests,
                    bytes_up: s.bytes_up,
                    bytes_down: s.bytes_down,
                }
            }
            None => ProxyStatusResponse {
                listening: false,
                listen: None,
                anthropic_base_url: None,
                openai_base_url: None,
                sessions_seen: 0,
                requests: 0,
                bytes_up: 0,
                bytes_down: 0,
            },
        })
    })?;
    sync_method!(m, method::DaemonPing, |_ctx, _p| Ok(PingResponse {
        pong: true
    }))?;
    sync_method!(m, method::DaemonShutdown, |ctx, _p| {
        let notify = ctx.shutdown.clone();
        // Let this response leave before the listener closes.
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            notify.notify_one();
        });
        Ok(ShutdownResponse { stopping: true })
    })?;

    async_method!(m, method::DaemonBackup, |ctx, p| ctx.engine.backup(p).await)?;
    async_method!(m, method::DaemonGc, |ctx, p| ctx.engine.gc(p).await)?;
    async_method!(m, method::DaemonMetrics, |ctx, _p| Ok(MetricsResponse {
        text: ctx
            .metrics
            .render(&ctx.engine, &ctx.retention, ctx.proxy.as_deref())
            .await,
    }))?;
    async_method!(m, method::SessionCreate, |ctx, p| ctx
        .engine
        .create_session(p)
        .await
        .map(|session| SessionCreateResponse { session }))?;
    async_method!(m, method::SessionList, |ctx, p| ctx
        .engine
        .list_sessions(p)
        .await
        .map(|sessions| SessionListResponse { sessions }))?;
    async_method!(m, method::SessionGet, |ctx, p| ctx
        .engine
        .get_session(&p.session_id)
        .await
        .map(|session| SessionGetResponse { session }))?;
    async_method!(m, method::SessionUpdate, |ctx, p| ctx
        .engine
        .update_session(p)
        .await
        .map(|session| SessionGetResponse { session }))?;
    async_method!(m, method::SessionFork, |ctx, p| ctx
        .engine
        .fork_session(p)
        .await
        .map(|session| SessionForkResponse { session }))?;
    async_method!(m, method::SessionDelete, |ctx, p| ctx
        .engine
        .delete_session(&p.session_id)
        .await
        .map(|deleted| SessionDeleteResponse { deleted }))?;
    async_method!(m, method::AgentStart, |ctx, p| ctx
        .engine
        .start_agent(p)
        .await)?;
    async_method!(m, method::AgentFinish, |ctx, p| ctx
        .engine
        .finish_agent(p)
        .await)?;
    async_method!(m, method::AgentList, |ctx, p| ctx
        .engine
        .list_agents(&p.session_id)
        .await)?;
    async_method!(m, method::SessionImport, |ctx, p| ctx
        .engine
        .import_claude_code(p)
        .await
        .map(|(session, stats)| SessionImportResponse {
            session_id: session.session_id.clone(),
            session,
            stats,
        }))?;
    async_method!(m, method::TranscriptAppend, |ctx, p| ctx
        .engine
        .append(p)
        .await)?;
    async_method!(m, method::TranscriptRead, |ctx, p| ctx.engine.read(p).await)?;
    async_method!(m, method::TranscriptRejectMedia, |ctx, p| ctx
        .engine
        .reject_media(p)
        .await
        .map(|rejected| RejectMediaResponse { rejected }))?;
    async_method!(m, method::CapabilitiesSetTools, |ctx, p| ctx
        .engine
        .set_tools(p)
        .await
        .map(|count| ToolsSetResponse { count }))?;
    async_method!(m, method::CapabilitiesListTools, |ctx, p| ctx
        .engine
        .list_tools(&p.session_id)
        .await
        .map(|tools| ToolsListResponse { tools }))?;
    async_method!(m, method::CapabilitiesMcpConnect, |ctx, p| ctx
        .engine
        .mcp_connect(p)
        .await)?;
    async_method!(m, method::CapabilitiesMcpSetInstructions, |ctx, p| ctx
        .engine
        .mcp_set_instructions(p)
        .await)?;
    async_method!(m, method::CapabilitiesMcpDisconnect, |ctx, p| ctx
        .engine
        .mcp_disconnect(p)
        .await)?;
    async_method!(m, method::CapabilitiesSetAgents, |ctx, p| ctx
        .engine
        .set_agents(p)
        .await)?;
    async_method!(m, method::CapabilitiesDiscoverTools, |ctx, p| ctx
        .engine
        .discover_tools(p)
        .await)?;
    async_method!(m, method::CapabilitiesInvokeSkill, |ctx, p| {
        ctx.engine
            .invoke_skill(p)
            .await
            .map(|()| AckResponse { ok: true })
    })?;
    async_method!(m, method::CapabilitiesSkills, |ctx, p| ctx
        .engine
        .skills(&p.session_id)
        .await)?;
    async_method!(m, method::CapabilitiesGet, |ctx, p| ctx
        .engine
        .capabilities(&p.session_id)
        .await)?;
    async_method!(m, method::ContextCompile, |ctx, p| ctx
        .engine
        .compile(p)
        .await
        .and_then(compile_response))?;
    async_method!(m, method::ContextReplacements, |ctx, p| ctx
        .engine
        .replacements(&p.session_id)
        .await
        .map(|replacements| ReplacementsResponse { replacements }))?;
    async_method!(m, method::ContextUsage, |ctx, p| ctx
        .engine
        .usage(&p.session_id)
        .await)?;
    async_method!(m, method::ContextCacheReport, |ctx, p| ctx
        .engine
        .cache_report(&p.session_id)
        .await)?;
    async_method!(m, method::ContextSnip, |ctx, p| ctx.engine.snip(p).await)?;
    async_method!(m, method::ContextSend, |ctx, p| ctx.engine.send(p).await)?;
    async_method!(m, method::ContextCancel, |ctx, p| ctx
        .engine
        .cancel_turn(p)
        .await)?;
    async_method!(m, method::ContextCompact, |ctx, p| ctx
        .engine
        .compact(p)
        .await)?;
    async_method!(m, method::ContextReportError, |ctx, p| ctx
        .engine
        .report_error(p)
        .await
        .and_then(compile_response))?;
    sync_method!(m, method::ContextProvideSummary, |ctx, p| ctx
        .engine
        .provide_summary(p)
        .map(|()| AckResponse { ok: true })
        .map_err(to_rpc_error))?;
    async_method!(m, method::MemoryGet, |ctx, p| ctx
        .engine
        .memory_get(&p.session_id)
        .await)?;
    async_method!(m, method::MemoryUpdate, |ctx, p| ctx
        .engine
        .memory_update(p, None)
        .await
        .map(|version| MemoryUpdateResponse { version }))?;
    async_method!(m, method::MemoryExtract, |ctx, p| ctx
        .engine
        .extract_now(&p.session_id)
        .await
        .map(|version| MemoryUpdateResponse { version }))?;
    async_method!(m, method::ContextCollapseList, |ctx, p| ctx
        .engine
        .collapse_list(&p.session_id)
        .await
        .map(|collapses| CollapseListResponse { collapses }))?;
    async_method!(m, method::ContextCollapseUndo, |ctx, p| ctx
        .engine
        .collapse_undo(p)
        .await
        .map(|()| AckResponse { ok: true }))?;
    async_method!(m, method::ContextTouchPaths, |ctx, p| ctx
        .engine
        .touch_paths(&p.session_id, p.paths)
        .await
        .map(|()| AckResponse { ok: true }))?;
    async_method!(m, method::ContextReportRead, |ctx, p| ctx
        .engine
        .report_read(&p.session_id, &p.path)
        .await
        .map(|()| AckResponse { ok: true }))?;
    sync_method!(m, method::TranscriptParseClaudeCode, |ctx, p| ctx
        .engine
        .parse_claude_code(p)
        .map_err(to_rpc_error))?;
    m.register_method(RPC_DISCOVER, |_, _, _| {
        RpcResult::Ok(ctxd_protocol::openrpc::document())
    })?;

    super::subscription::register(&mut m)?;
    super::send_stream::register(&mut m)?;
    super::hooks::register(&mut m)?;
    super::attachments::register(&mut m)?;
    Ok(m)
}

/// The handshake: negotiate the version, say what this daemon offers.
fn initialize(ctx: &RpcContext, p: InitializeParams) -> RpcResult<InitializeResult> {
    let Some(version) = negotiate(&p.protocol_version) else {
        let supported = PROTOCOL_VERSION
            .split('.')
            .next()
            .unwrap_or(PROTOCOL_VERSION);
        return Err(ErrorObjectOwned::owned(
            UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "protocol version {:?} is not supported: this ctxd speaks {supported}.x (up to {PROTOCOL_VERSION}); use a client for major version {supported}",
                p.protocol_version
            ),
            Some(json!({
                "requested": p.protocol_version,
                "supported": [format!("{supported}.x")],
                "server_protocol_version": PROTOCOL_VERSION,
            })),
        ));
    };
    tracing::info!(
        client = %p.client_info.name,
        client_version = %p.client_info.version,
        protocol = %version,
        "client initialized"
    );
    let mut methods: Vec<String> = method_table().iter().map(|m| m.name.to_string()).collect();
    methods.push(RPC_DISCOVER.to_string());
    let default_summariser = serde_json::to_value(ctx.engine.default_summariser())
        .ok()
        .and_then(|v| v["kind"].as_str().map(str::to_string))
        .unwrap_or_default();
    Ok(InitializeResult {
        server_info: PeerInfo {
            name: "ctxd".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        protocol_version: version,
        server_protocol_version: PROTOCOL_VERSION.into(),
        capabilities: Capabilities {
            methods,
            transports: vec!["http".into(), "websocket".into()],
            subscriptions: SubscriptionCapabilities {
                resumable: true,
                include_records: true,
                buffer_events: ctxd_engine::EVENT_BUFFER as u64,
            },
            file_watching: ctx.engine.watching(),
            default_summariser,
        },
        limits: super::limits::limits(ctx.engine.limits()),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use std::sync::Arc;
    use tokio::sync::Notify;

    use super::*;
    use ctxd_engine::Engine;
    use ctxd_engine::Store;
    use ctxd_pipeline::clock::SystemClock;

    /// The OpenRPC document and the registered methods must name the same set.
    #[tokio::test]
    async fn registered_methods_match_the_document() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let engine = Arc::new(Engine::new(store, dir.path(), Arc::new(SystemClock)));
        let module = build_module(RpcContext {
            engine,
            shutdown: Arc::new(Notify::new()),
            socket: dir.path().join("s"),
            proxy: None,
            retention: Default::default(),
            metrics: Arc::new(crate::metrics::Metrics::new(None).unwrap()),
        })
        .unwrap();
        let registered: BTreeSet<String> = module.method_names().map(str::to_string).collect();
        let doc = ctxd_protocol::openrpc::document();
        let mut documented: BTreeSet<String> = doc["methods"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_string())
            .collect();
        for m in doc["methods"].as_array().unwrap() {
            if let Some(u) = m["x-subscription"]["unsubscribe"].as_str() {
                documented.insert(u.to_string());
            }
        }
        assert_eq!(registered, documented);
    }
}
