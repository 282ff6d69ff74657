//! `ctx context` (what fills the window, Claude Code's `/context`) and `ctx cache` (every
//! call's cache reads next to ctxd's prediction, with the breaks and their causes).

use anyhow::Result;
use ctx_client::Client;
use ctxd_protocol::*;

use super::context::SessionArg;
use super::{Ctx, session_id};
use crate::cache_view;
use crate::output::{outln, print_json};

pub async fn context(ctx: &Ctx, client: &Client, a: &SessionArg) -> Result<()> {
    let u: UsageResponse = client
        .call(
            CONTEXT_USAGE,
            UsageParams {
                session_id: session_id(client, &a.session).await?,
            },
        )
        .await?;
    if ctx.json {
        return print_json(&u);
    }
    let color = std::io::IsTerminal::is_terminal(&std::io::stdout());
    outln!("{}", cache_view::render_context(&u, color).trim_end());
    Ok(())
}

pub async fn cache(ctx: &Ctx, client: &Client, a: &SessionArg) -> Result<()> {
    let r: CacheReportResponse = client
        .call(
            CONTEXT_CACHE_REPORT,
            CacheReportParams {
                session_id: session_id(client, &a.session).await?,
            },
        )
        .await?;
    if ctx.json {
        return print_json(&r);
    }
    outln!("{}", cache_view::render_cache(&r).trim_end());
    Ok(())
}
