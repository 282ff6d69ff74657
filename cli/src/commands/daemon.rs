//! `ctx daemon status|metrics|stop`.

use anyhow::Result;
use clap::Subcommand;
use ctx_client::Client;

use super::Ctx;
use crate::output::{outln, print_json};

#[derive(Subcommand, Debug)]
pub enum DaemonCmd {
    /// Protocol version, paths, uptime.
    Status,
    /// The daemon's metrics in the Prometheus text format (calls and errors by method,
    /// sessions, store size, context.send turns and tokens, retention, uptime).
    Metrics,
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
        DaemonCmd::Metrics => {
            let m = ctx
                .connect()
                .await?
                .daemon_metrics(ctxd_protocol::NoParams {})
                .await?;
            if ctx.json {
                print_json(&m)?;
            } else {
                // The text ends with its own newline.
                use std::io::Write as _;
                std::io::stdout().lock().write_all(m.text.as_bytes())?;
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
            let pid = c.daemon_status(ctxd_protocol::NoParams {}).await?.pid;
            let r = c.daemon_shutdown(ctxd_protocol::NoParams {}).await?;
            drop(c);
            // The answer comes before the daemon has closed its store and exited; a
            // caller that starts another daemon (or copies the store) needs it gone.
            let deadline = std::time::Instant::now() + STOP_WAIT;
            while running(pid) {
                if std::time::Instant::now() > deadline {
                    anyhow::bail!(
                        "ctxd (pid {pid}) is still stopping after {} s",
                        STOP_WAIT.as_secs()
                    );
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            if ctx.json {
                print_json(&r)?;
            } else {
                outln!("ctxd on {} stopped (pid {pid})", ctx.socket.display());
            }
        }
    }
    Ok(())
}

/// How long `ctx daemon stop` waits for the daemon to exit.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Whether process `pid` still runs (a zombie, exited but not yet reaped by its parent,
/// does not).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}
