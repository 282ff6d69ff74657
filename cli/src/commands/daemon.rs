//! `ctx daemon status|metrics|stop|install-service|uninstall-service`.

use std::path::Path;

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
    /// Run the daemon as a user service: write a systemd user unit pair (socket
    /// activated, on the socket the clients find) or a launchd agent naming the `ctxd`
    /// ctx would start, with ctx's home and socket, and enable it.
    InstallService(super::service::ServiceArgs),
    /// Disable the user service and remove its files.
    UninstallService(super::service::ServiceArgs),
}

pub async fn run(ctx: &Ctx, cmd: &DaemonCmd) -> Result<()> {
    match cmd {
        DaemonCmd::InstallService(a) => return super::service::install(ctx, a),
        DaemonCmd::UninstallService(a) => return super::service::uninstall(ctx, a),
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
            let status = c.daemon_status(ctxd_protocol::NoParams {}).await?;
            let pid = status.pid;
            // Opened before the call, so that a daemon gone by the time it answers still
            // leaves a file to wait on; a daemon too old to hold one is not waited for.
            let home_lock = std::fs::File::open(Path::new(&status.home).join("daemon.lock")).ok();
            let r = c.daemon_shutdown(ctxd_protocol::NoParams {}).await?;
            drop(c);
            // The answer comes before the daemon has closed its store and exited; a
            // caller that starts another daemon (or copies the store) needs it gone. The
            // daemon lets go of its home's lock after closing the store, as it exits.
            if let Some(lock) = home_lock {
                let (tx, rx) = tokio::sync::oneshot::channel();
                // A thread of its own: a blocking lock cannot be abandoned, and this one
                // ends with the process if the daemon never lets go.
                std::thread::spawn(move || {
                    let _ = tx.send(lock.lock_shared().map(|()| lock));
                });
                match tokio::time::timeout(STOP_WAIT, rx).await {
                    Ok(Ok(Ok(lock))) => drop(lock),
                    Ok(Ok(Err(e))) => anyhow::bail!("waiting for ctxd (pid {pid}) to exit: {e}"),
                    Ok(Err(_)) => anyhow::bail!("waiting for ctxd (pid {pid}) to exit failed"),
                    Err(_) => anyhow::bail!(
                        "ctxd (pid {pid}) is still stopping after {} s",
                        STOP_WAIT.as_secs()
                    ),
                }
            }
            // The kernel lets go of the lock as the process exits, a moment before the
            // process is gone; where `/proc` shows that moment, wait for it too.
            let gone_by = std::time::Instant::now() + EXIT_WAIT;
            while running(pid) && std::time::Instant::now() < gone_by {
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
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

/// How long `ctx daemon stop` waits, after the daemon let go of its home, for its
/// process to be gone.
const EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Whether process `pid` still runs, where `/proc` tells (Linux); elsewhere, false. A
/// zombie (exited, not yet reaped by its parent) does not run, unless other threads of
/// it are still ending: its main thread shows `Z` before they are done.
fn running(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The fields after the command name (in parentheses): state is the first, the
    // number of threads the eighteenth.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let zombie = matches!(fields.first(), Some(&"Z" | &"X"));
    let threads: u64 = fields.get(17).and_then(|t| t.parse().ok()).unwrap_or(1);
    !zombie || threads > 1
}
