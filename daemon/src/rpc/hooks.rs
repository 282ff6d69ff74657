//! Registration of the `hooks.*` methods (SPEC §10).

use ctxd_protocol::*;
use jsonrpsee::RpcModule;

use super::methods::{RpcContext, parse};
use super::to_rpc_error;

macro_rules! hook_method {
    ($m:expr, $name:expr, $pt:ty, |$ctx:ident, $p:ident| $body:expr) => {
        $m.register_async_method($name, |params, $ctx, _| async move {
            let $p: $pt = parse(&params)?;
            $body.await.map_err(to_rpc_error)
        })?;
    };
}

pub fn register(m: &mut RpcModule<RpcContext>) -> Result<(), jsonrpsee::core::RegisterMethodError> {
    hook_method!(m, HOOKS_LIST, SessionIdParams, |ctx, p| ctx
        .engine
        .hooks_list(&p.session_id));
    hook_method!(m, HOOKS_PRE_TOOL_USE, PreToolUseParams, |ctx, p| ctx
        .engine
        .hooks_pre_tool_use(p));
    hook_method!(m, HOOKS_POST_TOOL_USE, PostToolUseParams, |ctx, p| ctx
        .engine
        .hooks_post_tool_use(p));
    hook_method!(
        m,
        HOOKS_USER_PROMPT_SUBMIT,
        UserPromptSubmitParams,
        |ctx, p| ctx.engine.hooks_user_prompt_submit(p)
    );
    hook_method!(m, HOOKS_SESSION_START, SessionStartParams, |ctx, p| ctx
        .engine
        .hooks_session_start(p));
    hook_method!(m, HOOKS_STOP, StopParams, |ctx, p| ctx.engine.hooks_stop(p));
    hook_method!(m, HOOKS_STOP_FAILURE, StopFailureParams, |ctx, p| ctx
        .engine
        .hooks_stop_failure(p));
    hook_method!(m, HOOKS_SUBAGENT_START, SubagentStartParams, |ctx, p| ctx
        .engine
        .hooks_subagent_start(p));
    hook_method!(m, HOOKS_SUBAGENT_STOP, SubagentStopParams, |ctx, p| ctx
        .engine
        .hooks_subagent_stop(p));
    hook_method!(m, HOOKS_NOTIFICATION, NotificationParams, |ctx, p| ctx
        .engine
        .hooks_notification(p));
    Ok(())
}
