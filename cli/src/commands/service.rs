//! `ctx daemon install-service|uninstall-service`: the daemon as a user service.
//!
//! On Linux, a systemd user unit pair: `ctxd.socket` holds the socket `ctx` and the
//! clients find, and `ctxd.service` runs `ctxd` on it at the first connection (the daemon
//! takes an inherited listening socket). On macOS, a launchd user agent that keeps the
//! daemon running on its own socket (launchd's socket passing is not supported). The
//! units are written by `ctx` so that they name the `ctxd` it would start itself, and the
//! home and socket it was given.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};
use clap::{Args, ValueEnum};

use super::Ctx;
use crate::output::{outln, print_json};

/// Which service manager the unit is for.
#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
pub enum Manager {
    Systemd,
    Launchd,
}

#[derive(Args, Debug)]
pub struct ServiceArgs {
    /// The service manager [default: launchd on macOS, systemd elsewhere].
    #[arg(long, value_enum)]
    manager: Option<Manager>,
    /// Only write (or remove) the files; do not ask the service manager to load or
    /// unload them.
    #[arg(long)]
    no_enable: bool,
}

/// The launchd agent's label, and its file's name without `.plist`.
const LABEL: &str = "dev.ctxd.ctxd";

pub fn install(ctx: &Ctx, a: &ServiceArgs) -> Result<()> {
    let ctxd = ctx_client::find_ctxd_binary();
    let ctxd = std::path::absolute(&ctxd).unwrap_or(ctxd);
    if !ctxd.is_file() {
        bail!(
            "no ctxd binary found (looked at CTXD_BIN, beside ctx, on PATH and in ~/.local/bin): install it first (scripts/install) or set CTXD_BIN"
        );
    }
    let manager = a.manager.unwrap_or_else(default_manager);
    let files = unit_files(ctx, manager, &ctxd)?;
    for (path, text) in &files {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        write_whole(path, text)?;
    }
    if manager == Manager::Systemd
        && let Err(e) = verify(&files)
    {
        // Units systemd refuses are not left for it to find.
        for (path, _) in &files {
            let _ = std::fs::remove_file(path);
        }
        return Err(e);
    }
    let enabled = !a.no_enable && enable(manager, &files)?;
    report(ctx, "installed", &files, enabled)
}

pub fn uninstall(ctx: &Ctx, a: &ServiceArgs) -> Result<()> {
    let manager = a.manager.unwrap_or_else(default_manager);
    let files = unit_paths(manager)?;
    let present: Vec<PathBuf> = files.into_iter().filter(|p| p.exists()).collect();
    let disabled = !a.no_enable && !present.is_empty() && disable(manager, &present)?;
    for path in &present {
        std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
    }
    let files: Vec<(PathBuf, String)> = present.into_iter().map(|p| (p, String::new())).collect();
    report(ctx, "removed", &files, disabled)
}

fn default_manager() -> Manager {
    if cfg!(target_os = "macos") {
        Manager::Launchd
    } else {
        Manager::Systemd
    }
}

fn report(ctx: &Ctx, verb: &str, files: &[(PathBuf, String)], managed: bool) -> Result<()> {
    if ctx.json {
        let paths: Vec<String> = files.iter().map(|(p, _)| p.display().to_string()).collect();
        let mut out = serde_json::Map::new();
        out.insert(verb.to_string(), paths.into());
        out.insert("service_manager_told".to_string(), managed.into());
        return print_json(&out);
    }
    if files.is_empty() {
        outln!("no service files to remove");
    }
    for (path, _) in files {
        outln!("{verb} {}", path.display());
    }
    if managed {
        outln!("the service manager was told");
    }
    Ok(())
}

/// Writes through a temporary file in the same directory, so that a unit is never seen
/// half written.
fn write_whole(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("ctx-tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

fn home_dir() -> Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .context("HOME is not set: it says where the user's service files go")
}

fn unit_paths(manager: Manager) -> Result<Vec<PathBuf>> {
    Ok(match manager {
        Manager::Systemd => {
            let config = match std::env::var_os("XDG_CONFIG_HOME").filter(|c| !c.is_empty()) {
                Some(c) => PathBuf::from(c),
                None => home_dir()?.join(".config"),
            };
            let units = config.join("systemd/user");
            vec![units.join("ctxd.socket"), units.join("ctxd.service")]
        }
        Manager::Launchd => vec![
            home_dir()?
                .join("Library/LaunchAgents")
                .join(format!("{LABEL}.plist")),
        ],
    })
}

/// The files and their text for `ctxd` at `ctxd`, with the home and socket `ctx` runs
/// with (the defaults unless given).
fn unit_files(ctx: &Ctx, manager: Manager, ctxd: &Path) -> Result<Vec<(PathBuf, String)>> {
    let paths = unit_paths(manager)?;
    let home = ctx.home.as_deref().map(absolute).transpose()?;
    // The socket is written only when it is not the default the clients resolve alone.
    let socket = (home.is_some() || ctx.socket != ctxd_protocol::socket::default_socket())
        .then(|| absolute(&ctx.socket))
        .transpose()?;
    Ok(match manager {
        Manager::Systemd => {
            let listen = match &socket {
                Some(s) => systemd_escape(&s.display().to_string()),
                None => "%t/ctxd/ctxd.sock".to_string(),
            };
            let env = match &home {
                Some(h) => format!(
                    "Environment={}\n",
                    systemd_quote(&format!("CTXD_HOME={}", h.display()))
                ),
                None => String::new(),
            };
            let socket_unit = format!(
                "[Unit]\nDescription=ctxd context engine (socket)\n\n[Socket]\nListenStream={listen}\nSocketMode=0600\nDirectoryMode=0700\n\n[Install]\nWantedBy=sockets.target\n"
            );
            let service_unit = format!(
                "[Unit]\nDescription=ctxd context engine daemon\nRequires=ctxd.socket\nAfter=ctxd.socket\n\n[Service]\n# Written by `ctx daemon install-service`. Settings come from the home's config.toml,\n# provider keys from its `env` file (the daemon reads both itself); the log goes to the\n# journal unless config.toml sets `log_file`.\n{env}ExecStart={}\nRestart=on-failure\n\n[Install]\nAlso=ctxd.socket\nWantedBy=default.target\n",
                systemd_quote(&ctxd.display().to_string())
            );
            vec![
                (paths[0].clone(), socket_unit),
                (paths[1].clone(), service_unit),
            ]
        }
        Manager::Launchd => {
            let mut args = vec![ctxd.display().to_string()];
            if let Some(s) = &socket {
                args.push("--socket".into());
                args.push(s.display().to_string());
            }
            args.extend(["--log-file".into(), "ctxd.log".into()]);
            let args: String = args
                .iter()
                .map(|a| format!("    <string>{}</string>\n", xml_escape(a)))
                .collect();
            let env = match &home {
                Some(h) => format!(
                    "  <key>EnvironmentVariables</key>\n  <dict><key>CTXD_HOME</key><string>{}</string></dict>\n",
                    xml_escape(&h.display().to_string())
                ),
                None => String::new(),
            };
            let plist = format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\">\n<dict>\n  <key>Label</key><string>{LABEL}</string>\n  <key>ProgramArguments</key>\n  <array>\n{args}  </array>\n{env}  <key>RunAtLoad</key><true/>\n  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>\n</dict>\n</plist>\n"
            );
            vec![(paths[0].clone(), plist)]
        }
    })
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("resolving {}", p.display()))
}

/// `%` starts a specifier in a unit file; a literal one is doubled.
fn systemd_escape(s: &str) -> String {
    s.replace('%', "%%")
}

/// One word of a unit's command line or `Environment=`, quoted so that spaces, quotes and
/// backslashes in a path stay part of it.
fn systemd_quote(s: &str) -> String {
    let escaped = systemd_escape(s).replace('\\', "\\\\").replace('"', "\\\"");
    format!("\"{escaped}\"")
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `systemd-analyze verify` on the units where it is installed (a bad setting, or an
/// `ExecStart` that does not exist, fails it).
fn verify(files: &[(PathBuf, String)]) -> Result<()> {
    let found = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|d| d.join("systemd-analyze").is_file())
    });
    if !found {
        return Ok(());
    }
    let mut cmd = Command::new("systemd-analyze");
    cmd.args(["--user", "verify"])
        .args(files.iter().map(|(p, _)| p));
    // `--user` needs a runtime directory, which a shell outside a login session lacks.
    let scratch = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(_) => None,
        None => {
            use std::os::unix::fs::DirBuilderExt as _;
            let dir = std::env::temp_dir().join(format!("ctx-runtime-{}", std::process::id()));
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&dir)
                .with_context(|| format!("creating {}", dir.display()))?;
            cmd.env("XDG_RUNTIME_DIR", &dir);
            Some(dir)
        }
    };
    let verified = run(&mut cmd);
    if let Some(dir) = scratch {
        let _ = std::fs::remove_dir_all(dir);
    }
    verified?;
    outln!("systemd-analyze verify: the units are valid");
    Ok(())
}

/// Asks the service manager to load the units; false (with what to run) when it cannot
/// be reached, e.g. from a shell outside the user's login session.
fn enable(manager: Manager, files: &[(PathBuf, String)]) -> Result<bool> {
    match manager {
        Manager::Systemd => {
            if !systemd_reachable() {
                outln!(
                    "systemd's user manager is not reachable from here; to start it: systemctl --user daemon-reload && systemctl --user enable --now ctxd.socket"
                );
                return Ok(false);
            }
            run(Command::new("systemctl").args(["--user", "daemon-reload"]))?;
            run(Command::new("systemctl").args(["--user", "enable", "--now", "ctxd.socket"]))?;
            Ok(true)
        }
        Manager::Launchd => {
            run(Command::new("launchctl")
                .arg("load")
                .arg("-w")
                .arg(&files[0].0))?;
            Ok(true)
        }
    }
}

fn disable(manager: Manager, present: &[PathBuf]) -> Result<bool> {
    match manager {
        Manager::Systemd => {
            if !systemd_reachable() {
                return Ok(false);
            }
            run(Command::new("systemctl").args([
                "--user",
                "disable",
                "--now",
                "ctxd.socket",
                "ctxd.service",
            ]))?;
            Ok(true)
        }
        Manager::Launchd => {
            run(Command::new("launchctl")
                .arg("unload")
                .arg("-w")
                .arg(&present[0]))?;
            Ok(true)
        }
    }
}

fn systemd_reachable() -> bool {
    Command::new("systemctl")
        .args(["--user", "show-environment"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn run(cmd: &mut Command) -> Result<()> {
    let shown = format!("{cmd:?}");
    let out = cmd.output().with_context(|| format!("running {shown}"))?;
    if !out.status.success() {
        bail!(
            "{shown} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_keeps_its_spaces_quotes_and_percent_signs() {
        assert_eq!(systemd_quote("/a b/c"), "\"/a b/c\"");
        assert_eq!(systemd_quote("/x\"y\\z%h"), "\"/x\\\"y\\\\z%%h\"");
        assert_eq!(xml_escape("a<b&\"c\">"), "a&lt;b&amp;&quot;c&quot;&gt;");
    }
}
