//! The process edge: runs one hook command and reports what it did.
//!
//! - `/bin/sh -c COMMAND`, the command exactly as configured. Event data reaches the
//!   hook only on stdin (JSON) and in the environment (`CLAUDE_PROJECT_DIR`), never
//!   through the command string.
//! - The hook leads its own process group. At its timeout the whole group is killed
//!   (SIGKILL), so a hook that forked a sleeper leaves no process behind; the group is
//!   also killed once the hook has exited, so nothing it started outlives it (a hook
//!   that wants to leave something running must start it in a new session, `setsid`).
//! - stdout and stderr are read concurrently, each kept up to [`OUTPUT_CAP`] bytes and
//!   drained (not kept) beyond, so a flooding hook neither blocks nor grows memory.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::decide::RawRun;

/// Most bytes kept of a hook's stdout and of its stderr.
pub const OUTPUT_CAP: usize = 64 * 1024;

/// How to run one hook.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub command: String,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub stdin: Vec<u8>,
    pub timeout: Duration,
}

/// Reads all of `r`, keeping the first `cap` bytes; returns the text (lossy UTF-8, with
/// a note when cut) and whether it was cut.
async fn read_capped<R: AsyncRead + Unpin>(mut r: R, cap: usize) -> (String, bool) {
    let mut kept = Vec::new();
    let mut total = 0usize;
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                total += n;
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    let cut = total > cap;
    let mut text = String::from_utf8_lossy(&kept).into_owned();
    if cut {
        // A multi-byte character split by the cap shows as U+FFFD; drop it.
        while text.ends_with('\u{FFFD}') {
            text.pop();
        }
        text.push_str(&format!(
            "\n[output cut by ctxd at {cap} bytes; the hook wrote {total} bytes]"
        ));
    }
    (text, cut)
}

/// SIGKILL to the whole process group led by `pgid`. Errors (the group is already
/// gone) are expected and ignored.
fn kill_group(pgid: u32) {
    let Ok(pgid) = i32::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: killpg has no memory-safety preconditions; a stale or empty group only
    // yields ESRCH.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

/// Runs the hook to completion or to its timeout. Never fails: a process that cannot
/// start is reported in `spawn_error`.
pub async fn run(spec: RunSpec) -> RawRun {
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return RawRun {
                spawn_error: Some(e.to_string()),
                duration: started.elapsed(),
                timeout: spec.timeout,
                ..RawRun::default()
            };
        }
    };
    let pgid = child.id().unwrap_or(0);
    let stdin = child.stdin.take();
    let input = spec.stdin;
    // Written concurrently: a hook that does not read its stdin must not stall us.
    let writer = tokio::spawn(async move {
        if let Some(mut w) = stdin {
            let _ = w.write_all(&input).await;
            let _ = w.shutdown().await;
        }
    });
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let io = async {
        let out = async {
            match stdout {
                Some(s) => read_capped(s, OUTPUT_CAP).await,
                None => (String::new(), false),
            }
        };
        let err = async {
            match stderr {
                Some(s) => read_capped(s, OUTPUT_CAP).await,
                None => (String::new(), false),
            }
        };
        let ((out, out_cut), (err, err_cut)) = tokio::join!(out, err);
        let status = child.wait().await;
        (out, out_cut, err, err_cut, status)
    };
    let result = tokio::time::timeout(spec.timeout, io).await;
    // Whatever happened, nothing of the hook outlives it.
    kill_group(pgid);
    writer.abort();
    match result {
        Ok((stdout, out_cut, stderr, err_cut, status)) => RawRun {
            exit_code: status.ok().and_then(|s| s.code()),
            stdout,
            stderr,
            output_cut: out_cut || err_cut,
            timed_out: false,
            duration: started.elapsed(),
            spawn_error: None,
            timeout: spec.timeout,
        },
        Err(_) => RawRun {
            exit_code: None,
            timed_out: true,
            duration: started.elapsed(),
            timeout: spec.timeout,
            ..RawRun::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(command: &str, timeout: Duration) -> RunSpec {
        RunSpec {
            command: command.into(),
            cwd: std::env::temp_dir(),
            env: vec![("CLAUDE_PROJECT_DIR".into(), "/proj".into())],
            stdin: br#"{"hook_event_name":"Stop"}"#.to_vec(),
            timeout,
        }
    }

    #[tokio::test]
    async fn stdin_env_exit_code_and_output() {
        let r = run(spec(
            "cat; echo; echo \"$CLAUDE_PROJECT_DIR\"; echo err >&2; exit 3",
            Duration::from_secs(10),
        ))
        .await;
        assert_eq!(r.exit_code, Some(3));
        assert_eq!(r.stdout, "{\"hook_event_name\":\"Stop\"}\n/proj\n");
        assert_eq!(r.stderr, "err\n");
        assert!(!r.timed_out && !r.output_cut);
    }

    fn alive(pid: i32) -> bool {
        // SAFETY: signal 0 only checks for existence.
        unsafe { libc::kill(pid, 0) == 0 }
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_group_including_a_forked_sleeper() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("sleeper.pid");
        let cmd = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
        let r = run(spec(&cmd, Duration::from_millis(500))).await;
        assert!(r.timed_out);
        assert_eq!(r.exit_code, None);
        assert_gone(&pidfile).await;
    }

    /// The process whose pid the hook wrote to `pidfile` is gone: SIGKILL is sent
    /// before `run` returns, and a zombie waiting for init to reap it counts as gone.
    async fn assert_gone(pidfile: &std::path::Path) {
        let pid: i32 = std::fs::read_to_string(pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while alive(pid) && !is_zombie(pid) {
            assert!(Instant::now() < deadline, "process {pid} outlived its hook");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn is_zombie(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|rest| rest.trim_start().starts_with('Z'))
            })
            .unwrap_or(true)
    }

    #[tokio::test]
    async fn a_background_child_left_by_a_finished_hook_is_killed_too() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("bg.pid");
        let cmd = format!(
            "sleep 300 >/dev/null 2>&1 & echo $! > {}; exit 0",
            pidfile.display()
        );
        let r = run(spec(&cmd, Duration::from_secs(10))).await;
        assert_eq!(r.exit_code, Some(0));
        assert_gone(&pidfile).await;
    }

    #[tokio::test]
    async fn a_flood_is_capped_with_a_note() {
        let r = run(spec(
            "head -c 1000000 /dev/zero | tr '\\0' a; head -c 200000 /dev/zero | tr '\\0' b >&2",
            Duration::from_secs(20),
        ))
        .await;
        assert_eq!(r.exit_code, Some(0));
        assert!(r.output_cut);
        assert!(r.stdout.starts_with(&"a".repeat(OUTPUT_CAP)));
        assert!(r.stdout.contains("the hook wrote 1000000 bytes"));
        assert!(r.stdout.len() < OUTPUT_CAP + 200);
        assert!(r.stderr.contains("the hook wrote 200000 bytes"));
    }

    #[tokio::test]
    async fn a_hook_that_ignores_stdin_is_fine_and_a_bad_cwd_is_reported() {
        let mut s = spec("exit 0", Duration::from_secs(10));
        s.stdin = vec![b'x'; 1 << 20];
        assert_eq!(run(s).await.exit_code, Some(0));
        let mut s = spec("true", Duration::from_secs(10));
        s.cwd = PathBuf::from("/nonexistent/dir/for/ctxd");
        let r = run(s).await;
        assert!(r.spawn_error.is_some());
    }
}
