//! Starting a daemon when none answers.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::{Client, ClientError};

/// `CTXD_BIN`, else a `ctxd` beside this executable, else `ctxd` on PATH, else
/// `~/.local/bin/ctxd`.
pub fn find_ctxd_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("CTXD_BIN") {
        return PathBuf::from(p);
    }
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        let sibling = dir.join("ctxd");
        if sibling.is_file() {
            return sibling;
        }
        // `cargo test` puts test binaries in target/debug/deps.
        if let Some(up) = dir.parent() {
            let sibling = up.join("ctxd");
            if sibling.is_file() {
                return sibling;
            }
        }
    }
    if let Some(path) = std::env::var_os("PATH")
        && let Some(found) = std::env::split_paths(&path)
            .map(|d| d.join("ctxd"))
            .find(|p| p.is_file())
    {
        return found;
    }
    // Where scripts/install puts it by default, often not on PATH.
    if let Some(home) = std::env::var_os("HOME") {
        let local = PathBuf::from(home).join(".local/bin/ctxd");
        if local.is_file() {
            return local;
        }
    }
    PathBuf::from("ctxd")
}

/// Creates the socket's directory 0700 when missing (the daemon's own rule: what it
/// holds, the socket and the log, is this user's alone) and opens the log 0600. An
/// existing directory is left as it is (it may be `/tmp`); the daemon refuses it when
/// unsafe. The log is narrowed to 0600 even when it exists: it holds paths and errors
/// about the user's sessions, and an older ctx created it 0644.
fn open_private_log(dir: &Path, log_path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(log_path)?;
    log.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(log)
}

/// Connects to the daemon on `socket`, starting one in the background first if nothing
/// answers. The daemon's log goes to `ctxd.log` beside the socket, rotated by the daemon.
pub async fn ensure_daemon(socket: &Path, home: Option<&Path>) -> Result<Client, ClientError> {
    if let Ok(c) = Client::connect(socket).await {
        return Ok(c);
    }
    let dir = socket.parent().unwrap_or(Path::new("/tmp"));
    let log_path = dir.join("ctxd.log");
    let log = open_private_log(dir, &log_path)
        .map_err(|e| ClientError::Spawn(format!("{}: {e}", log_path.display())))?;
    let bin = find_ctxd_binary();
    let mut cmd = std::process::Command::new(&bin);
    // The daemon writes its log there itself, rotated by size, so a daemon that runs for
    // months keeps a bounded log; stderr goes to the same file for what comes before the
    // log starts (a refused flag, a store that will not open).
    cmd.arg("--socket")
        .arg(socket)
        .arg("--log-file")
        .arg(&log_path);
    if let Some(h) = home {
        cmd.arg("--home").arg(h);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log));
    // Its own process group: a Ctrl-C aimed at the CLI must not stop the daemon.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .spawn()
        .map_err(|e| ClientError::Spawn(format!("{}: {e}", bin.display())))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(c) = Client::connect(socket).await {
            return Ok(c);
        }
        if let Ok(Some(status)) = child.try_wait() {
            // Another daemon may have won the race for the socket; try it once more.
            if let Ok(c) = Client::connect(socket).await {
                return Ok(c);
            }
            return Err(ClientError::Spawn(format!(
                "ctxd exited with {status}; see {}",
                log_path.display()
            )));
        }
        if Instant::now() > deadline {
            return Err(ClientError::Spawn(format!(
                "ctxd did not answer on {} within 10 s; see {}",
                socket.display(),
                log_path.display()
            )));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
