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
//! - The hook is done when its process exits, not when its pipes close: a background
//!   child (`notify-send x &`) holding them open is killed with the group, and a process
//!   that left the group holding them is not waited for beyond `DRAIN_GRACE`.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

use super::decide::RawRun;

/// The daemon's own variables a hook gets, besides the settings' `env` and
/// `CLAUDE_PROJECT_DIR` (and every `LC_*`): what a shell needs to find programs and
/// speak the user's language. Nothing else of the daemon's environment reaches a hook:
/// it holds the providers' keys (`ANTHROPIC_API_KEY`, cloud credentials, ...).
pub(crate) const PASSED_ENV: [&str; 15] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
];

/// The environment of a hook's process: [`PASSED_ENV`] from the daemon's, then `extra`
/// (the settings' `env`, then ctxd's own variables), a later value winning.
pub(crate) fn hook_env(extra: &[(String, String)]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| PASSED_ENV.contains(&k.as_str()) || k.starts_with("LC_"))
        .collect();
    env.extend(extra.iter().cloned());
    env
}

/// Most bytes kept of a hook's stdout and of its stderr.
pub(crate) const OUTPUT_CAP: usize = 64 * 1024;

/// How to run one hook.
#[derive(Debug, Clone)]
pub(crate) struct RunSpec {
    pub(crate) command: String,
    pub(crate) cwd: PathBuf,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) stdin: Vec<u8>,
    pub(crate) timeout: Duration,
}

/// How long the output pipes may stay open once the hook's process group is dead: only
/// a process that left the group (`setsid`) can still hold them, and it is not waited for.
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// Reads `r` to its end or until `stop` turns true, keeping the first `cap` bytes;
/// returns the text (lossy UTF-8, with a note when cut) and whether it was cut.
async fn read_capped<R: AsyncRead + Unpin>(
    mut r: R,
    cap: usize,
    mut stop: watch::Receiver<bool>,
) -> (String, bool) {
    let mut kept = Vec::new();
    let mut total = 0usize;
    let mut buf = [0u8; 8192];
    loop {
        let read = tokio::select! {
            read = r.read(&mut buf) => read,
            _ = stop.wait_for(|s| *s) => break,
        };
        match read {
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
        let _ = write!(
            text,
            "\n[output cut by ctxd at {cap} bytes; the hook wrote {total} bytes]"
        );
    }
    (text, cut)
}

async fn read_pipe<R: AsyncRead + Unpin>(
    pipe: Option<R>,
    stop: watch::Receiver<bool>,
) -> (String, bool) {
    match pipe {
        Some(p) => read_capped(p, OUTPUT_CAP, stop).await,
        None => (String::new(), false),
    }
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
pub(crate) async fn run(spec: RunSpec) -> RawRun {
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(hook_env(&spec.env))
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
    // Both pipes are read while we wait for the exit, so a chatty hook never blocks on a
    // full pipe; the exit alone ends the wait, since a background child of the hook
    // (`notify-send x &`) may keep the pipes open after the hook is done.
    let (stop, stopped) = watch::channel(false);
    let out = tokio::spawn(read_pipe(child.stdout.take(), stopped.clone()));
    let err = tokio::spawn(read_pipe(child.stderr.take(), stopped));
    let status = tokio::time::timeout(spec.timeout, child.wait()).await;
    // Whatever happened, nothing of the hook outlives it; with the group gone the pipes
    // close and the readers finish.
    kill_group(pgid);
    writer.abort();
    let drained = async {
        let (out, err) = tokio::join!(out, err);
        (out.unwrap_or_default(), err.unwrap_or_default())
    };
    tokio::pin!(drained);
    let ((stdout, out_cut), (stderr, err_cut)) = tokio::select! {
        both = &mut drained => both,
        () = tokio::time::sleep(DRAIN_GRACE) => {
            let _ = stop.send(true);
            drained.await
        }
    };
    match status {
        Ok(status) => RawRun {
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
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
            s.rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'))
        })
    }

    /// A background child keeps the hook's stdout and stderr open (`notify-send x &`):
    /// the hook is done when it exits, with its exit code and output, and the child is
    /// killed with the group.
    #[tokio::test]
    async fn a_background_child_left_by_a_finished_hook_is_killed_too() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("bg.pid");
        let cmd = format!(
            "sleep 300 & echo $! > {}; echo done; echo note >&2; exit 3",
            pidfile.display()
        );
        let t = Instant::now();
        let r = run(spec(&cmd, Duration::from_secs(30))).await;
        assert!(!r.timed_out);
        assert_eq!(r.exit_code, Some(3));
        assert_eq!(r.stdout, "done\n");
        assert_eq!(r.stderr, "note\n");
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert_gone(&pidfile).await;
    }

    /// A process that left the group (`setsid`) and holds the pipes is not waited for
    /// beyond the drain grace; the output read until then is kept.
    #[tokio::test]
    async fn an_escaped_process_holding_the_pipes_is_not_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("escaped.pid");
        // The hook exits only once the escaped process wrote its pid (after `setsid`), so
        // the group kill cannot catch it before it left.
        let cmd = format!(
            "setsid sh -c 'echo $$ > {p}; exec sleep 300' & \
             while [ ! -s {p} ]; do sleep 0.01; done; echo kept; exit 0",
            p = pidfile.display()
        );
        let t = Instant::now();
        let r = run(spec(&cmd, Duration::from_secs(30))).await;
        assert_eq!(r.exit_code, Some(0));
        assert_eq!(r.stdout, "kept\n");
        assert!(
            t.elapsed() < DRAIN_GRACE + Duration::from_secs(3),
            "{:?}",
            t.elapsed()
        );
        // Ours to clean up: it escaped the group on purpose.
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // SAFETY: plain kill of a pid we just started.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
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
