//! Registration of the methods of the attachments ctxd produces itself — plan mode and
//! queued input (SPEC §5) — and of client-registered system sections (SPEC §3.1).

use ctxd_protocol::*;
use jsonrpsee::RpcModule;

use super::methods::{RpcContext, parse};
use super::to_rpc_error;

macro_rules! method {
    ($m:expr, $name:expr, $pt:ty, |$ctx:ident, $p:ident| $body:expr) => {
        $m.register_async_method($name, |params, $ctx, _| async move {
            let $p: $pt = parse(&params)?;
            $body.await.map_err(to_rpc_error)
        })?;
    };
}

pub fn register(m: &mut RpcModule<RpcContext>) -> Result<(), jsonrpsee::core::RegisterMethodError> {
    method!(m, SESSION_SET_PLAN_MODE, PlanModeParams, |ctx, p| ctx
        .engine
        .set_plan_mode(p));
    method!(m, TRANSCRIPT_QUEUE, QueueParams, |ctx, p| ctx
        .engine
        .queue_input(p));
    method!(m, TRANSCRIPT_QUEUED, QueuedParams, |ctx, p| ctx
        .engine
        .queued(p));
    method!(m, TRANSCRIPT_TAKE_QUEUED, TakeQueuedParams, |ctx, p| ctx
        .engine
        .take_queued(p));
    method!(m, CONTEXT_SET_SECTION, SetSectionParams, |ctx, p| ctx
        .engine
        .set_section(p));
    method!(m, CONTEXT_REMOVE_SECTION, RemoveSectionParams, |ctx, p| ctx
        .engine
        .remove_section(p));
    method!(m, CONTEXT_RESET_SECTIONS, SessionIdParams, |ctx, p| ctx
        .engine
        .reset_sections(&p.session_id));
    Ok(())
}
