//! Registration of the methods of the attachments ctxd produces itself — plan mode and
//! queued input — and of client-registered system sections.

use ctxd_protocol::*;
use jsonrpsee::RpcModule;

// Registered as their caller, so the events a call causes are marked as its own.
use super::context::{RpcContext, async_method};

pub(crate) fn register(
    m: &mut RpcModule<RpcContext>,
) -> Result<(), jsonrpsee::core::RegisterMethodError> {
    async_method!(m, SESSION_SET_PLAN_MODE, |ctx, p: PlanModeParams| ctx
        .engine
        .set_plan_mode(p)
        .await)?;
    async_method!(m, TRANSCRIPT_QUEUE, |ctx, p: QueueParams| ctx
        .engine
        .queue_input(p)
        .await)?;
    async_method!(m, TRANSCRIPT_QUEUED, |ctx, p: QueuedParams| ctx
        .engine
        .queued(p)
        .await)?;
    async_method!(m, TRANSCRIPT_TAKE_QUEUED, |ctx, p: TakeQueuedParams| ctx
        .engine
        .take_queued(p)
        .await)?;
    async_method!(m, CONTEXT_SET_SECTION, |ctx, p: SetSectionParams| ctx
        .engine
        .set_section(p)
        .await)?;
    async_method!(m, CONTEXT_REMOVE_SECTION, |ctx, p: RemoveSectionParams| ctx
        .engine
        .remove_section(p)
        .await)?;
    async_method!(m, CONTEXT_RESET_SECTIONS, |ctx, p: SessionIdParams| ctx
        .engine
        .reset_sections(&p.session_id)
        .await)?;
    Ok(())
}
