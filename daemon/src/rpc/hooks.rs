//! Registration of the `hooks.*` methods.

use ctxd_protocol::*;
use jsonrpsee::RpcModule;

use super::context::{RpcContext, async_method};

pub(crate) fn register(
    m: &mut RpcModule<RpcContext>,
) -> Result<(), jsonrpsee::core::RegisterMethodError> {
    async_method!(m, HOOKS_LIST, |ctx, p: SessionIdParams| ctx
        .engine
        .hooks_list(&p.session_id)
        .await)?;
    async_method!(m, HOOKS_PRE_TOOL_USE, |ctx, p: PreToolUseParams| ctx
        .engine
        .hooks_pre_tool_use(p)
        .await)?;
    async_method!(m, HOOKS_POST_TOOL_USE, |ctx, p: PostToolUseParams| ctx
        .engine
        .hooks_post_tool_use(p)
        .await)?;
    async_method!(
        m,
        HOOKS_USER_PROMPT_SUBMIT,
        |ctx, p: UserPromptSubmitParams| ctx.engine.hooks_user_prompt_submit(p).await
    )?;
    async_method!(m, HOOKS_SESSION_START, |ctx, p: SessionStartParams| ctx
        .engine
        .hooks_session_start(p)
        .await)?;
    async_method!(m, HOOKS_STOP, |ctx, p: StopParams| ctx
        .engine
        .hooks_stop(p)
        .await)?;
    async_method!(m, HOOKS_STOP_FAILURE, |ctx, p: StopFailureParams| ctx
        .engine
        .hooks_stop_failure(p)
        .await)?;
    async_method!(m, HOOKS_SUBAGENT_START, |ctx, p: SubagentStartParams| ctx
        .engine
        .hooks_subagent_start(p)
        .await)?;
    async_method!(m, HOOKS_SUBAGENT_STOP, |ctx, p: SubagentStopParams| ctx
        .engine
        .hooks_subagent_stop(p)
        .await)?;
    async_method!(m, HOOKS_NOTIFICATION, |ctx, p: NotificationParams| ctx
        .engine
        .hooks_notification(p)
        .await)?;
    async_method!(m, HOOKS_SESSION_END, |ctx, p: SessionEndParams| ctx
        .engine
        .hooks_session_end(p)
        .await)?;
    async_method!(
        m,
        HOOKS_PERMISSION_REQUEST,
        |ctx, p: PermissionRequestParams| ctx.engine.hooks_permission_request(p).await
    )?;
    Ok(())
}
