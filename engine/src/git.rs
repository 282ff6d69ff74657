//! The git snapshot, taken once at session start. The commands run in
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
pub(crate) async fn snapshot(cwd: &Path) -> Option<String> {
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
    let main = match main {
        Some(m) => m.trim_start_matches("origin/").to_string(),
        None => main_without_origin_head(cwd).await,
    };
    // A detached HEAD has no branch name: say where it is instead of nothing.
    let branch = match branch.filter(|b| !b.is_empty()) {
        Some(b) => b,
        None => match git(cwd, &["rev-parse", "--short", "HEAD"]).await {
            Some(sha) => format!("(detached HEAD at {sha})"),
            None => "(no commit yet)".into(),
        },
    };
    Some(render(
        &branch,
        &main,
        user.as_deref(),
        status.as_deref().unwrap_or(""),
        log.as_deref().unwrap_or(""),
    ))
}

/// The main branch when `origin/HEAD` is not set (a clone made without it, or a repo
/// whose remote was added by hand): the first of `main` and `master` that exists on
/// `origin`, then locally; `main` when neither does.
async fn main_without_origin_head(cwd: &Path) -> String {
    for (name, r) in [
        ("main", "refs/remotes/origin/main"),
        ("master", "refs/remotes/origin/master"),
        ("main", "refs/heads/main"),
        ("master", "refs/heads/master"),
    ] {
        if git(cwd, &["rev-parse", "--verify", "--quiet", r])
            .await
            .is_some()
        {
            return name.to_string();
        }
    }
    "main".into()
}

pub(crate) fn render(
    branch: &str,
    main: &str,
    user: Option<&str>,
    status: &str,
    log: &str,
) -> String {
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

    /// A detached HEAD names where it is; without `origin/HEAD` the main branch is the
    /// one `origin` has (`master` here), not a guessed `main`.
    #[tokio::test]
    async fn a_detached_head_and_a_master_only_remote() {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@e",
                    "-c",
                    "init.defaultBranch=master",
                ])
                .args(args)
                .current_dir(dir.path())
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        run(&["init", "-q"]);
        run(&["commit", "-q", "--allow-empty", "-m", "first"]);
        run(&["update-ref", "refs/remotes/origin/master", "HEAD"]);
        run(&["checkout", "-q", "--detach"]);
        let s = super::snapshot(dir.path()).await.unwrap();
        assert!(s.contains("Current branch: (detached HEAD at "), "{s}");
        assert!(
            s.contains("Main branch (usually the target of pull requests): master"),
            "{s}"
        );
    }

    #[tokio::test]
    async fn no_snapshot_outside_a_repository() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(super::snapshot(d.path()).await, None);
    }
}
