//! Registration of the methods of the attachments ctxd produces itself — plan mode and
//! queued input — and of client-registered system sections.

use ctxd_protocol::*;
use jsonrpsee::RpcModule;

// Registered as their caller, so the events a call causes are marked as its own.
use super::context::{RpcContext, async_method};

pub(crate) fn register(
    m: &mut RpcModule<RpcContext>,
) -> Result<(), jsonrpsee::core::RegisterMethodError> {
    async_method!(m, method::SessionSetPlanMode, |ctx, p| ctx
        .engine
        .set_plan_mode(p)
        .await)?;
    async_method!(m, method::TranscriptQueue, |ctx, p| ctx
        .engine
        .queue_input(p)
        .await)?;
    async_method!(m, method::TranscriptQueued, |ctx, p| ctx
        .engine
        .queued(p)
        .await)?;
    async_method!(m, method::TranscriptTakeQueued, |ctx, p| ctx
        .engine
        .take_queued(p)
        .await)?;
    async_method!(m, method::ContextSetSection, |ctx, p| ctx
        .engine
        .set_section(p)
        .await)?;
    async_method!(m, method::ContextRemoveSection, |ctx, p| ctx
        .engine
        .remove_section(p)
        .await)?;
    async_method!(m, method::ContextResetSections, |ctx, p| ctx
        .engine
        .reset_sections(&p.session_id)
        .await)?;
    Ok(())
}
