//! The git snapshot of SPEC §3.1, taken once at session start. The commands run in
//! parallel with `--no-optional-locks` so a snapshot never contends with the user's git.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use tokio::process::Command;

const STATUS_LIMIT: usize = 2_000;

async fn git(cwd: &Path, args: &[&str]) -> Option<String> {
    let out = tokio::time::timeout(
        Duration::from_secs(5),
        Command::new("git")
            .arg("--no-optional-locks")
            .args(args)
            .current_dir(cwd)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .ok()?
    .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
}

/// Renders the snapshot, or `None` outside a git work tree (or when git is missing).
pub async fn snapshot(cwd: &Path) -> Option<String> {
    let inside = git(cwd, &["rev-parse", "--is-inside-work-tree"]).await?;
    if inside != "true" {
        return None;
    }
    let (branch, main, user, status, log) = tokio::join!(
        git(cwd, &["branch", "--show-current"]),
        git(cwd, &["rev-parse", "--abbrev-ref", "origin/HEAD"]),
        git(cwd, &["config", "user.name"]),
        git(cwd, &["status", "--short"]),
        git(cwd, &["log", "--oneline", "-n", "5"]),
    );
    let main = main.map_or_else(
        || "main".into(),
        |m| m.trim_start_matches("origin/").to_string(),
    );
    Some(render(
        branch.as_deref().unwrap_or("(unknown)"),
        &main,
        user.as_deref(),
        status.as_deref().unwrap_or(""),
        log.as_deref().unwrap_or(""),
    ))
}

pub fn render(branch: &str, main: &str, user: Option<&str>, status: &str, log: &str) -> String {
    let mut status_text = if status.is_empty() {
        "(clean)".to_string()
    } else if status.chars().count() > STATUS_LIMIT {
        let cut: String = status.chars().take(STATUS_LIMIT).collect();
        format!(
            "{cut}\n... (status cut at {STATUS_LIMIT} characters; run `git status` for the rest)"
        )
    } else {
        status.to_string()
    };
    if status_text.ends_with('\n') {
        status_text.pop();
    }
    let mut s = String::from(
        "This is the git state when the session started. It is a snapshot: it will not update as the conversation goes on.\n",
    );
    let _ = write!(s, "Current branch: {branch}\n\n");
    let _ = write!(
        s,
        "Main branch (usually the target of pull requests): {main}\n\n"
    );
    if let Some(u) = user.filter(|u| !u.is_empty()) {
        let _ = write!(s, "Git user: {u}\n\n");
    }
    let _ = write!(s, "Status:\n{status_text}\n\n");
    let _ = write!(
        s,
        "Recent commits:\n{}",
        if log.is_empty() { "(none)" } else { log }
    );
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn long_status_is_cut_with_a_note() {
        let status = "M a\n".repeat(1000);
        let r = super::render("b", "main", None, &status, "abc x");
        assert!(r.contains("status cut at 2000 characters"));
        assert!(r.contains("Current branch: b"));
        assert!(!r.contains("Git user"));
    }

    #[tokio::test]
    async fn no_snapshot_outside_a_repository() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(super::snapshot(d.path()).await, None);
    }
}
