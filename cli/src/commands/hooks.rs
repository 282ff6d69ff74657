//! `ctx hooks SESSION`: the settings files ctxd read for a session and every hook they
//! configure, with its source file and whether it runs.

use std::fmt::Write as _;

use anyhow::Result;
use ctx_client::Client;
use ctxd_protocol::{HOOKS_LIST, HooksListResponse, SessionIdParams};

use super::context::SessionArg;
use super::{Ctx, session_id};
use crate::output::{outln, print_json};

#[derive(clap::Args, Debug)]
pub struct TrustArgs {
    /// The project directory [default: the current directory].
    dir: Option<std::path::PathBuf>,
    /// Take the directory out of the trust list.
    #[arg(long, conflicts_with = "list")]
    remove: bool,
    /// Print the trust list.
    #[arg(long)]
    list: bool,
}

/// Edits the trust list in the daemon's home (the daemon reads it before each hook).
pub async fn trust(ctx: &Ctx, client: &Client, a: &TrustArgs) -> Result<()> {
    let home =
        std::path::PathBuf::from(client.daemon_status(ctxd_protocol::NoParams {}).await?.home);
    let list = ctxd_fs::trust::list_path(&home);
    if a.list {
        let entries: Vec<String> = ctxd_fs::trust::entries(&list)
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        if ctx.json {
            return print_json(&serde_json::json!({ "trusted": entries }));
        }
        for e in &entries {
            outln!("{e}");
        }
        return Ok(());
    }
    let dir = match &a.dir {
        Some(d) => std::path::absolute(d)?,
        None => std::env::current_dir()?,
    };
    anyhow::ensure!(dir.is_dir(), "{} is not a directory", dir.display());
    if a.remove {
        let was = ctxd_fs::trust::distrust(&list, &dir)?;
        if ctx.json {
            return print_json(&serde_json::json!({ "removed": was, "dir": dir }));
        }
        outln!(
            "{} {}",
            dir.display(),
            if was {
                "is no longer trusted"
            } else {
                "was not in the trust list"
            }
        );
        return Ok(());
    }
    ctxd_fs::trust::trust(&list, &dir)?;
    if ctx.json {
        return print_json(&serde_json::json!({ "trusted": dir }));
    }
    outln!(
        "{} is trusted: its project settings may run hooks",
        dir.display()
    );
    Ok(())
}

pub async fn show(ctx: &Ctx, client: &Client, a: &SessionArg) -> Result<()> {
    let r: HooksListResponse = client
        .call(
            HOOKS_LIST,
            SessionIdParams {
                session_id: session_id(client, &a.session).await?,
            },
        )
        .await?;
    if ctx.json {
        return print_json(&r);
    }
    outln!("{}", render(&r).trim_end());
    Ok(())
}

fn render(r: &HooksListResponse) -> String {
    let mut out = String::from("settings files:\n");
    for f in &r.files {
        let detail = match (&f.error, f.status.as_str()) {
            (Some(e), _) => format!(": {e}"),
            (None, "loaded") => format!(" ({} hooks)", f.hooks),
            _ => String::new(),
        };
        let _ = writeln!(out, "  {:<8} {:<9} {}{detail}", f.source, f.status, f.file);
    }
    if let Some(why) = &r.all_disabled {
        let _ = writeln!(out, "no hook runs: {why}");
    }
    if r.hooks.is_empty() {
        out.push_str("no hooks configured\n");
        return out;
    }
    out.push_str("hooks (precedence order):\n");
    for h in &r.hooks {
        let matcher = h
            .matcher
            .as_deref()
            .filter(|m| !m.is_empty())
            .unwrap_or("*");
        let state = match &h.inactive_reason {
            None => String::new(),
            Some(why) => format!("  [not run: {why}]"),
        };
        let _ = writeln!(
            out,
            "  {:<18} {:<16} {:<8} {}  ({} s, {}){state}",
            h.event.as_str(),
            matcher,
            h.source,
            h.command,
            h.timeout_secs,
            h.file
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxd_protocol::{ConfiguredHook, HookEvent, HookSourceFile};

    #[test]
    fn renders_files_and_hooks_with_why_not() {
        let r = HooksListResponse {
            files: vec![HookSourceFile {
                source: "project".into(),
                file: "/p/.claude/settings.json".into(),
                status: "loaded".into(),
                error: None,
                hooks: 1,
            }],
            hooks: vec![ConfiguredHook {
                event: HookEvent::PreToolUse,
                matcher: Some("Bash".into()),
                command: "./check.sh".into(),
                timeout_secs: 5.0,
                source: "project".into(),
                file: "/p/.claude/settings.json".into(),
                active: false,
                inactive_reason: Some("managed settings set allowManagedHooksOnly".into()),
            }],
            all_disabled: None,
        };
        let text = render(&r);
        assert!(text.contains("project  loaded    /p/.claude/settings.json (1 hooks)"));
        assert!(text.contains("PreToolUse"));
        assert!(text.contains("Bash"));
        assert!(text.contains("./check.sh  (5 s, /p/.claude/settings.json)"));
        assert!(text.contains("[not run: managed settings set allowManagedHooksOnly]"));
    }
}
