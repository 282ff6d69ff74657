//! Registration of the `hooks.*` methods.

use ctxd_protocol::*;
use jsonrpsee::RpcModule;

use super::context::{RpcContext, async_method};

pub(crate) fn register(
    m: &mut RpcModule<RpcContext>,
) -> Result<(), jsonrpsee::core::RegisterMethodError> {
    async_method!(m, method::HooksList, |ctx, p| ctx
        .engine
        .hooks_list(&p.session_id)
        .await)?;
    async_method!(m, method::HooksPreToolUse, |ctx, p| ctx
        .engine
        .hooks_pre_tool_use(p)
        .await)?;
    async_method!(m, method::HooksPostToolUse, |ctx, p| ctx
        .engine
        .hooks_post_tool_use(p)
        .await)?;
    async_method!(m, method::HooksUserPromptSubmit, |ctx, p| ctx
        .engine
        .hooks_user_prompt_submit(p)
        .await)?;
    async_method!(m, method::HooksSessionStart, |ctx, p| ctx
        .engine
        .hooks_session_start(p)
        .await)?;
    async_method!(m, method::HooksStop, |ctx, p| ctx
        .engine
        .hooks_stop(p)
        .await)?;
    async_method!(m, method::HooksStopFailure, |ctx, p| ctx
        .engine
        .hooks_stop_failure(p)
        .await)?;
    async_method!(m, method::HooksSubagentStart, |ctx, p| ctx
        .engine
        .hooks_subagent_start(p)
        .await)?;
    async_method!(m, method::HooksSubagentStop, |ctx, p| ctx
        .engine
        .hooks_subagent_stop(p)
        .await)?;
    async_method!(m, method::HooksNotification, |ctx, p| ctx
        .engine
        .hooks_notification(p)
        .await)?;
    async_method!(m, method::HooksSessionEnd, |ctx, p| ctx
        .engine
        .hooks_session_end(p)
        .await)?;
    async_method!(m, method::HooksPermissionRequest, |ctx, p| ctx
        .engine
        .hooks_permission_request(p)
        .await)?;
    Ok(())
}
