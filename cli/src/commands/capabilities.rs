//! `ctx skills SID` and `ctx capabilities SID`: what a session can do and what the model
//! has been told about it.

use std::fmt::Write as _;

use anyhow::Result;
use ctx_client::Client;
use ctxd_protocol::*;

use super::context::SessionArg;
use super::{Ctx, resolve_session};
use crate::output::{outln, print_json};

async fn id(client: &Client, a: &SessionArg) -> Result<SessionIdParams> {
    Ok(SessionIdParams {
        session_id: resolve_session(client, &a.session).await?.session_id,
    })
}

/// The skills of a session as text: one line each, then skipped files.
pub fn skills_text(r: &SkillsResponse) -> String {
    let mut out = String::new();
    if r.skills.is_empty() {
        out.push_str("no skills\n");
    }
    for s in &r.skills {
        let mut flags = Vec::new();
        if !s.paths.is_empty() {
            flags.push(format!("paths: {}", s.paths.join(", ")));
        }
        if s.invoked {
            flags.push("invoked".to_string());
        }
        let flags = if flags.is_empty() {
            String::new()
        } else {
            format!("  [{}]", flags.join("; "))
        };
        let _ = writeln!(
            out,
            "{:<8} {:<15} {}: {}{flags}",
            s.state, s.source, s.name, s.description
        );
    }
    for n in &r.removed {
        let _ = writeln!(out, "removed  {n} (announced as gone at the next compile)");
    }
    for s in &r.skipped {
        let _ = writeln!(out, "skipped  {}: {}", s.path, s.reason);
    }
    let _ = writeln!(out, "listing budget: {} characters", r.listing_budget_chars);
    out
}

/// Tools, MCP servers, agent types and what was announced, as text.
pub fn capabilities_text(r: &CapabilitiesResponse) -> String {
    let mut out = String::from("tools:\n");
    if r.tools.is_empty() {
        out.push_str("  (none)\n");
    }
    for t in &r.tools {
        let server = t
            .mcp_server
            .as_deref()
            .map(|s| format!("  (MCP {s})"))
            .unwrap_or_default();
        let _ = writeln!(out, "  {:<10} {}{server}", t.state, t.name);
    }
    out.push_str("mcp servers:\n");
    if r.mcp_servers.is_empty() {
        out.push_str("  (none)\n");
    }
    for s in &r.mcp_servers {
        let _ = writeln!(
            out,
            "  {}  {} tools, {} characters of instructions, {}",
            s.name,
            s.tools.len(),
            s.instructions_chars,
            if s.in_system {
                "in system"
            } else {
                "announced by delta"
            }
        );
    }
    out.push_str("agents:\n");
    if r.agents.is_empty() {
        out.push_str("  (none)\n");
    }
    for a in &r.agents {
        let _ = writeln!(out, "  {}: {}", a.agent_type, a.description);
    }
    let list = |v: &[String]| {
        if v.is_empty() {
            "(none)".to_string()
        } else {
            v.join(", ")
        }
    };
    let _ = writeln!(
        out,
        "announced in this history:\n  deferred tools: {}\n  agent types: {}\n  mcp servers: {}",
        list(&r.announced_deferred_tools),
        list(&r.announced_agent_types),
        list(&r.announced_mcp_servers)
    );
    out
}

/// `ctx skills SESSION`.
pub async fn skills(ctx: &Ctx, client: &Client, a: &SessionArg) -> Result<()> {
    let r: SkillsResponse = client
        .call(CAPABILITIES_SKILLS, id(client, a).await?)
        .await?;
    if ctx.json {
        return print_json(&r);
    }
    outln!("{}", skills_text(&r).trim_end());
    Ok(())
}

/// `ctx capabilities SESSION`.
pub async fn capabilities(ctx: &Ctx, client: &Client, a: &SessionArg) -> Result<()> {
    let r: CapabilitiesResponse = client.call(CAPABILITIES_GET, id(client, a).await?).await?;
    if ctx.json {
        return print_json(&r);
    }
    outln!("{}", capabilities_text(&r).trim_end());
    Ok(())
}
