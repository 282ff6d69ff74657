//! `ctx proxy env|status`: the daemon's HTTP front door (`ctxd --http`).

use anyhow::{Result, bail};
use clap::Subcommand;

use super::Ctx;
use crate::output::{outln, print_json};

#[derive(Subcommand, Debug)]
pub enum ProxyCmd {
    /// Print `export ANTHROPIC_BASE_URL=…` and `export OPENAI_BASE_URL=…` for a shell:
    /// `eval "$(ctx proxy env)"` points the SDKs (and Claude Code) at ctxd.
    Env,
    /// The front door: where it listens, sessions seen, requests and bytes forwarded.
    Status,
}

pub async fn run(ctx: &Ctx, cmd: &ProxyCmd) -> Result<()> {
    let s = ctx
        .connect()
        .await?
        .proxy_status(ctxd_protocol::NoParams {})
        .await?;
    match cmd {
        ProxyCmd::Env => {
            let (Some(anthropic), Some(openai)) = (&s.anthropic_base_url, &s.openai_base_url)
            else {
                bail!(
                    "this ctxd serves no HTTP front door: start it with `ctxd --http 127.0.0.1:PORT`"
                );
            };
            if ctx.json {
                print_json(&serde_json::json!({
                    "ANTHROPIC_BASE_URL": anthropic,
                    "OPENAI_BASE_URL": openai,
                }))?;
            } else {
                outln!("export ANTHROPIC_BASE_URL={anthropic}\nexport OPENAI_BASE_URL={openai}");
            }
        }
        ProxyCmd::Status => {
            if ctx.json {
                print_json(&s)?;
            } else if let Some(listen) = &s.listen {
                outln!(
                    "listening {listen}\nsessions seen {}\nrequests {}\nbytes up {}\nbytes down {}",
                    s.sessions_seen,
                    s.requests,
                    s.bytes_up,
                    s.bytes_down
                );
            } else {
                outln!("no HTTP front door (start ctxd with --http 127.0.0.1:PORT)");
            }
        }
    }
    Ok(())
}
