//! Logs to a file, rotated by size: the current file and at most `max_files` rotated
//! copies (`NAME.1` the newest … `NAME.N` the oldest), each closed once it passes
//! `max_bytes` (so at most one line over), so the whole log stays under
//! `(max_files + 1) × (max_bytes + one line)` however long the daemon runs. The rotation
//! is `file-rotate`'s; this module only adapts it to tracing.
//!
//! Two things it adds: a write that fails (a full disk) loses the line instead of failing
//! the caller, as on stderr (see `LossyStderr` in `main.rs`); and a panic inside the
//! rotation is caught. `file-rotate` asserts that the file it renames still exists and
//! that its directory can be created, and a log line is written from inside request
//! handlers: a user removing `ctxd.log` by hand must cost that line, not the request.
//! After such a failure the file is reopened at the next write.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use anyhow::Context;
use file_rotate::compression::Compression;
use file_rotate::suffix::AppendCount;
use file_rotate::{ContentLimit, FileRotate};

/// The smallest rotation size accepted: below it the files would hold a few lines each.
pub const MIN_MAX_BYTES: u64 = 1024;

/// A size-rotated log file, shared by every log line of the daemon.
pub struct LogFile(Mutex<FileRotate<AppendCount>>);

impl LogFile {
    /// Opens (or creates, `0600`) `path` for appending; an existing file is narrowed to
    /// `0600`, and a missing directory is created `0700`.
    pub fn open(path: &Path, max_bytes: u64, max_files: usize) -> anyhow::Result<LogFile> {
        use std::os::unix::fs::DirBuilderExt;
        anyhow::ensure!(
            max_bytes >= MIN_MAX_BYTES,
            "log_max_bytes must be at least {MIN_MAX_BYTES}"
        );
        let max_bytes = usize::try_from(max_bytes).context("log_max_bytes is too large")?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("creating the log directory {}", dir.display()))?;
        }
        let mut options = OpenOptions::new();
        options.read(true).create(true).append(true).mode(0o600);
        // Opened once here so that an unwritable path stops the daemon at start, with the
        // reason, rather than losing every line.
        let file = options
            .open(path)
            .with_context(|| format!("opening the log file {}", path.display()))?;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("restricting the log file {}", path.display()))?;
        drop(file);
        let rotate = std::panic::catch_unwind(|| {
            FileRotate::new(
                path,
                AppendCount::new(max_files),
                ContentLimit::BytesSurpassed(max_bytes),
                Compression::None,
                Some(options),
            )
        })
        .map_err(|_| anyhow::anyhow!("cannot rotate the log file {}", path.display()))?;
        Ok(LogFile(Mutex::new(rotate)))
    }

    /// The paths the log may occupy: the file and its rotated copies.
    pub fn paths(path: &Path, max_files: usize) -> Vec<PathBuf> {
        let mut out = vec![path.to_path_buf()];
        for n in 1..=max_files {
            let mut name = path.as_os_str().to_os_string();
            name.push(format!(".{n}"));
            out.push(PathBuf::from(name));
        }
        out
    }
}

/// One log line's hold on the file.
pub struct Line<'a>(MutexGuard<'a, FileRotate<AppendCount>>);

impl Write for Line<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let file = &mut *self.0;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| file.write_all(buf)));
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        let file = &mut *self.0;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| file.flush()));
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogFile {
    type Writer = Line<'a>;
    fn make_writer(&'a self) -> Line<'a> {
        Line(self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[cfg(test)]
mod tests {
    use super::LogFile;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    use tracing_subscriber::fmt::MakeWriter;

    #[test]
    fn rotation_keeps_the_count_and_survives_a_removed_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs").join("ctxd.log");
        let log = LogFile::open(&path, 1024, 2).unwrap();
        let mut line = vec![b'x'; 99];
        line.push(b'\n');
        for _ in 0..60 {
            log.make_writer().write_all(&line).unwrap();
        }
        let names: Vec<_> = LogFile::paths(&path, 3)
            .into_iter()
            .map(|p| p.exists())
            .collect();
        assert_eq!(names, [true, true, true, false]);
        for p in LogFile::paths(&path, 2) {
            let meta = std::fs::metadata(&p).unwrap();
            assert!(meta.len() <= 1024 + 100, "{}: {}", p.display(), meta.len());
            assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{}", p.display());
        }
        // Removed by hand: the rotation that finds it gone loses a line, then goes on.
        std::fs::remove_file(&path).unwrap();
        for _ in 0..60 {
            log.make_writer().write_all(&line).unwrap();
        }
        assert!(path.exists());
        assert!(!LogFile::paths(&path, 3)[3].exists());
    }
}
