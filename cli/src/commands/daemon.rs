//! `ctx daemon status|stop`.

use anyhow::Result;
use clap::Subcommand;
use ctx_client::Client;

use super::Ctx;
use crate::output::{outln, print_json};

#[derive(Subcommand, Debug)]
pub enum DaemonCmd {
    /// Protocol version, paths, uptime.
    Status,
    /// Stop the daemon (never starts one).
    Stop,
}

pub async fn run(ctx: &Ctx, cmd: &DaemonCmd) -> Result<()> {
    match cmd {
        DaemonCmd::Status => {
            let s = ctx
                .connect()
                .await?
                .daemon_status(ctxd_protocol::NoParams {})
                .await?;
            if ctx.json {
                print_json(&s)?;
            } else {
                outln!(
                    "ctxd {} (protocol {}) pid {} up {}\nsocket {}\nhome   {}\nsessions {}",
                    s.daemon_version,
                    s.protocol_version,
                    s.pid,
                    crate::output::duration_ms(s.uptime_ms),
                    s.socket,
                    s.home,
                    s.sessions
                );
            }
        }
        DaemonCmd::Stop => {
            let Ok(c) = Client::connect(&ctx.socket).await else {
                if ctx.json {
                    print_json(&serde_json::json!({ "stopping": false, "running": false }))?;
                } else {
                    outln!("no ctxd running on {}", ctx.socket.display());
                }
                return Ok(());
            };
            let r = c.daemon_shutdown(ctxd_protocol::NoParams {}).await?;
            if ctx.json {
                print_json(&r)?;
            } else {
                outln!("ctxd on {} is stopping", ctx.socket.display());
            }
        }
    }
    Ok(())
}
