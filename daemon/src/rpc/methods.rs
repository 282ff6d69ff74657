//! Registration of every method of `ctxd_protocol::method_table`, through the table's
//! generated `MethodHandlers`.

use ctxd_protocol::*;
use jsonrpsee::RpcModule;
use jsonrpsee::core::RegisterMethodError;
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

pub(crate) fn build_module(ctx: RpcContext) -> Result<RpcModule<RpcContext>, RegisterMethodError> {
    let mut m = RpcModule::new(ctx);
    register_every_method(&mut Registrar(&mut m))?;
    m.register_method(RPC_DISCOVER, |_, _, _| {
        RpcResult::Ok(ctxd_protocol::openrpc::document())
    })?;
    Ok(m)
}

/// Registers each method of the table on the module it holds: the table's
/// [`MethodHandlers`] has one function per method, so one left out does not compile.
struct Registrar<'a>(&'a mut RpcModule<RpcContext>);

impl MethodHandlers for Registrar<'_> {
    type Error = RegisterMethodError;

    fn daemon_initialize(&mut self) -> Result<(), RegisterMethodError> {
        sync_method!(self.0, method::DaemonInitialize, |ctx, p| initialize(
            ctx, p
        ))?;
        Ok(())
    }

    fn daemon_status(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::DaemonStatus, |ctx, _p| {
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
        Ok(())
    }

    fn daemon_ping(&mut self) -> Result<(), RegisterMethodError> {
        sync_method!(self.0, method::DaemonPing, |_ctx, _p| Ok(PingResponse {
            pong: true
        }))?;
        Ok(())
    }

    fn daemon_shutdown(&mut self) -> Result<(), RegisterMethodError> {
        sync_method!(self.0, method::DaemonShutdown, |ctx, _p| {
            let notify = ctx.shutdown.clone();
            // Let this response leave before the listener closes.
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                notify.notify_one();
            });
            Ok(ShutdownResponse { stopping: true })
        })?;
        Ok(())
    }

    fn proxy_status(&mut self) -> Result<(), RegisterMethodError> {
        sync_method!(self.0, method::ProxyStatus, |ctx, _p| {
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
        Ok(())
    }

    fn daemon_backup(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::DaemonBackup, |ctx, p| ctx
            .engine
            .backup(p)
            .await)?;
        Ok(())
    }

    fn daemon_gc(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::DaemonGc, |ctx, p| ctx.engine.gc(p).await)?;
        Ok(())
    }

    fn daemon_metrics(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::DaemonMetrics, |ctx, _p| Ok(
            MetricsResponse {
                text: ctx
                    .metrics
                    .render(&ctx.engine, &ctx.retention, ctx.proxy.as_deref())
                    .await,
            }
        ))?;
        Ok(())
    }

    fn session_create(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::SessionCreate, |ctx, p| ctx
            .engine
            .create_session(p)
            .await
            .map(|session| SessionCreateResponse { session }))?;
        Ok(())
    }

    fn session_list(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::SessionList, |ctx, p| ctx
            .engine
            .list_sessions(p)
            .await
            .map(|sessions| SessionListResponse { sessions }))?;
        Ok(())
    }

    fn session_get(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::SessionGet, |ctx, p| ctx
            .engine
            .get_session(&p.session_id)
            .await
            .map(|session| SessionGetResponse { session }))?;
        Ok(())
    }

    fn session_update(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::SessionUpdate, |ctx, p| ctx
            .engine
            .update_session(p)
            .await
            .map(|session| SessionGetResponse { session }))?;
        Ok(())
    }

    fn session_fork(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::SessionFork, |ctx, p| ctx
            .engine
            .fork_session(p)
            .await
            .map(|session| SessionForkResponse { session }))?;
        Ok(())
    }

    fn session_delete(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::SessionDelete, |ctx, p| ctx
            .engine
            .delete_session(&p.session_id)
            .await
            .map(|deleted| SessionDeleteResponse { deleted }))?;
        Ok(())
    }

    fn session_import(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::SessionImport, |ctx, p| ctx
            .engine
            .import_claude_code(p)
            .await
            .map(|(session, stats)| SessionImportResponse {
                session_id: session.session_id.clone(),
                session,
                stats,
            }))?;
        Ok(())
    }

    fn agent_start(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::AgentStart, |ctx, p| ctx
            .engine
            .start_agent(p)
            .await)?;
        Ok(())
    }

    fn agent_finish(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::AgentFinish, |ctx, p| ctx
            .engine
            .finish_agent(p)
            .await)?;
        Ok(())
    }

    fn agent_list(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::AgentList, |ctx, p| ctx
            .engine
            .list_agents(&p.session_id)
            .await)?;
        Ok(())
    }

    fn session_subscribe(&mut self) -> Result<(), RegisterMethodError> {
        super::subscription::register(self.0)
    }

    fn session_unsubscribe(&mut self) -> Result<(), RegisterMethodError> {
        // Registered with `session.subscribe`, as its unsubscribe method.
        Ok(())
    }

    fn transcript_append(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::TranscriptAppend, |ctx, p| ctx
            .engine
            .append(p)
            .await)?;
        Ok(())
    }

    fn transcript_read(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::TranscriptRead, |ctx, p| ctx
            .engine
            .read(p)
            .await)?;
        Ok(())
    }

    fn transcript_reject_media(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::TranscriptRejectMedia, |ctx, p| ctx
            .engine
            .reject_media(p)
            .await
            .map(|rejected| RejectMediaResponse { rejected }))?;
        Ok(())
    }

    fn capabilities_set_tools(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::CapabilitiesSetTools, |ctx, p| ctx
            .engine
            .set_tools(p)
            .await
            .map(|count| ToolsSetResponse { count }))?;
        Ok(())
    }

    fn capabilities_list_tools(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::CapabilitiesListTools, |ctx, p| ctx
            .engine
            .list_tools(&p.session_id)
            .await
            .map(|tools| ToolsListResponse { tools }))?;
        Ok(())
    }

    fn capabilities_mcp_connect(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::CapabilitiesMcpConnect, |ctx, p| ctx
            .engine
            .mcp_connect(p)
            .await)?;
        Ok(())
    }

    fn capabilities_mcp_set_instructions(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::CapabilitiesMcpSetInstructions, |ctx, p| ctx
            .engine
            .mcp_set_instructions(p)
            .await)?;
        Ok(())
    }

    fn capabilities_mcp_disconnect(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::CapabilitiesMcpDisconnect, |ctx, p| ctx
            .engine
            .mcp_disconnect(p)
            .await)?;
        Ok(())
    }

    fn capabilities_set_agents(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::CapabilitiesSetAgents, |ctx, p| ctx
            .engine
            .set_agents(p)
            .await)?;
        Ok(())
    }

    fn capabilities_discover_tools(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::CapabilitiesDiscoverTools, |ctx, p| ctx
            .engine
            .discover_tools(p)
            .await)?;
        Ok(())
    }

    fn capabilities_invoke_skill(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::CapabilitiesInvokeSkill, |ctx, p| {
            ctx.engine
                .invoke_skill(p)
                .await
                .map(|()| AckResponse { ok: true })
        })?;
        Ok(())
    }

    fn capabilities_skills(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::CapabilitiesSkills, |ctx, p| ctx
            .engine
            .skills(&p.session_id)
            .await)?;
        Ok(())
    }

    fn capabilities_get(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::CapabilitiesGet, |ctx, p| ctx
            .engine
            .capabilities(&p.session_id)
            .await)?;
        Ok(())
    }

    fn context_compile(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::ContextCompile, |ctx, p| ctx
            .engine
            .compile(p)
            .await
            .and_then(compile_response))?;
        Ok(())
    }

    fn context_snip(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::ContextSnip, |ctx, p| ctx
            .engine
            .snip(p)
            .await)?;
        Ok(())
    }

    fn context_compact(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::ContextCompact, |ctx, p| ctx
            .engine
            .compact(p)
            .await)?;
        Ok(())
    }

    fn context_send(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::ContextSend, |ctx, p| ctx
            .engine
            .send(p)
            .await)?;
        Ok(())
    }

    fn context_send_stream(&mut self) -> Result<(), RegisterMethodError> {
        super::send_stream::register(self.0)
    }

    fn context_send_unsubscribe(&mut self) -> Result<(), RegisterMethodError> {
        // Registered with `context.send_stream`, as its unsubscribe method.
        Ok(())
    }

    fn context_cancel(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::ContextCancel, |ctx, p| ctx
            .engine
            .cancel_turn(p)
            .await)?;
        Ok(())
    }

    fn memory_get(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::MemoryGet, |ctx, p| ctx
            .engine
            .memory_get(&p.session_id)
            .await)?;
        Ok(())
    }

    fn memory_update(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::MemoryUpdate, |ctx, p| ctx
            .engine
            .memory_update(p, None)
            .await
            .map(|version| MemoryUpdateResponse { version }))?;
        Ok(())
    }

    fn memory_extract(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::MemoryExtract, |ctx, p| ctx
            .engine
            .extract_now(&p.session_id)
            .await
            .map(|version| MemoryUpdateResponse { version }))?;
        Ok(())
    }

    fn context_collapse_list(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::ContextCollapseList, |ctx, p| ctx
            .engine
            .collapse_list(&p.session_id)
            .await
            .map(|collapses| CollapseListResponse { collapses }))?;
        Ok(())
    }

    fn context_collapse_undo(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::ContextCollapseUndo, |ctx, p| ctx
            .engine
            .collapse_undo(p)
            .await
            .map(|()| AckResponse { ok: true }))?;
        Ok(())
    }

    fn context_report_error(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::ContextReportError, |ctx, p| ctx
            .engine
            .report_error(p)
            .await
            .and_then(compile_response))?;
        Ok(())
    }

    fn context_provide_summary(&mut self) -> Result<(), RegisterMethodError> {
        sync_method!(self.0, method::ContextProvideSummary, |ctx, p| ctx
            .engine
            .provide_summary(p)
            .map(|()| AckResponse { ok: true })
            .map_err(to_rpc_error))?;
        Ok(())
    }

    fn context_touch_paths(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::ContextTouchPaths, |ctx, p| ctx
            .engine
            .touch_paths(&p.session_id, p.paths)
            .await
            .map(|()| AckResponse { ok: true }))?;
        Ok(())
    }

    fn context_report_read(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::ContextReportRead, |ctx, p| ctx
            .engine
            .report_read(&p.session_id, &p.path)
            .await
            .map(|()| AckResponse { ok: true }))?;
        Ok(())
    }

    fn transcript_parse_claude_code(&mut self) -> Result<(), RegisterMethodError> {
        sync_method!(self.0, method::TranscriptParseClaudeCode, |ctx, p| ctx
            .engine
            .parse_claude_code(p)
            .map_err(to_rpc_error))?;
        Ok(())
    }

    fn context_replacements(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::ContextReplacements, |ctx, p| ctx
            .engine
            .replacements(&p.session_id)
            .await
            .map(|replacements| ReplacementsResponse { replacements }))?;
        Ok(())
    }

    fn context_usage(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::ContextUsage, |ctx, p| ctx
            .engine
            .usage(&p.session_id)
            .await)?;
        Ok(())
    }

    fn context_cache_report(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::ContextCacheReport, |ctx, p| ctx
            .engine
            .cache_report(&p.session_id)
            .await)?;
        Ok(())
    }

    fn hooks_list(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::HooksList, |ctx, p| ctx
            .engine
            .hooks_list(&p.session_id)
            .await)?;
        Ok(())
    }

    fn hooks_pre_tool_use(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::HooksPreToolUse, |ctx, p| ctx
            .engine
            .hooks_pre_tool_use(p)
            .await)?;
        Ok(())
    }

    fn hooks_post_tool_use(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::HooksPostToolUse, |ctx, p| ctx
            .engine
            .hooks_post_tool_use(p)
            .await)?;
        Ok(())
    }

    fn hooks_user_prompt_submit(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::HooksUserPromptSubmit, |ctx, p| ctx
            .engine
            .hooks_user_prompt_submit(p)
            .await)?;
        Ok(())
    }

    fn hooks_session_start(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::HooksSessionStart, |ctx, p| ctx
            .engine
            .hooks_session_start(p)
            .await)?;
        Ok(())
    }

    fn hooks_stop(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::HooksStop, |ctx, p| ctx
            .engine
            .hooks_stop(p)
            .await)?;
        Ok(())
    }

    fn hooks_stop_failure(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::HooksStopFailure, |ctx, p| ctx
            .engine
            .hooks_stop_failure(p)
            .await)?;
        Ok(())
    }

    fn hooks_subagent_start(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::HooksSubagentStart, |ctx, p| ctx
            .engine
            .hooks_subagent_start(p)
            .await)?;
        Ok(())
    }

    fn hooks_subagent_stop(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::HooksSubagentStop, |ctx, p| ctx
            .engine
            .hooks_subagent_stop(p)
            .await)?;
        Ok(())
    }

    fn hooks_notification(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::HooksNotification, |ctx, p| ctx
            .engine
            .hooks_notification(p)
            .await)?;
        Ok(())
    }

    fn hooks_session_end(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::HooksSessionEnd, |ctx, p| ctx
            .engine
            .hooks_session_end(p)
            .await)?;
        Ok(())
    }

    fn hooks_permission_request(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::HooksPermissionRequest, |ctx, p| ctx
            .engine
            .hooks_permission_request(p)
            .await)?;
        Ok(())
    }

    fn session_set_plan_mode(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::SessionSetPlanMode, |ctx, p| ctx
            .engine
            .set_plan_mode(p)
            .await)?;
        Ok(())
    }

    fn transcript_queue(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::TranscriptQueue, |ctx, p| ctx
            .engine
            .queue_input(p)
            .await)?;
        Ok(())
    }

    fn transcript_queued(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::TranscriptQueued, |ctx, p| ctx
            .engine
            .queued(p)
            .await)?;
        Ok(())
    }

    fn transcript_take_queued(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::TranscriptTakeQueued, |ctx, p| ctx
            .engine
            .take_queued(p)
            .await)?;
        Ok(())
    }

    fn context_set_section(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::ContextSetSection, |ctx, p| ctx
            .engine
            .set_section(p)
            .await)?;
        Ok(())
    }

    fn context_remove_section(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::ContextRemoveSection, |ctx, p| ctx
            .engine
            .remove_section(p)
            .await)?;
        Ok(())
    }

    fn context_reset_sections(&mut self) -> Result<(), RegisterMethodError> {
        async_method!(self.0, method::ContextResetSections, |ctx, p| ctx
            .engine
            .reset_sections(&p.session_id)
            .await)?;
        Ok(())
    }
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
