//! Reading files named by outside input (instruction files, files the agent read) without
//! letting them hang or exhaust the daemon: only regular files (a FIFO blocks its reader
//! until a writer comes, a device may never end), opened non-blocking so a file swapped
//! for a FIFO after the check cannot block the open either, and never more than a cap.

use std::fs::{File, Metadata, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("not a regular file")]
    NotRegular,
    #[error("{size} bytes, more than the {limit} allowed ({bound})")]
    TooLarge {
        size: u64,
        limit: u64,
        bound: &'static str,
    },
    #[error("not UTF-8 text")]
    NotText,
    #[error("leads outside {}", .0.display())]
    Outside(std::path::PathBuf),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Opens `path` for reading if it is a regular file (symlinks followed).
pub fn open_regular(path: &Path) -> Result<(File, Metadata), ReadError> {
    if !std::fs::metadata(path)?.is_file() {
        return Err(ReadError::NotRegular);
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular);
    }
    Ok((file, meta))
}

/// The whole text of a regular file of at most `limit` bytes; `bound` names the limit in
/// the error.
pub fn read_text(path: &Path, limit: u64, bound: &'static str) -> Result<String, ReadError> {
    let (file, meta) = open_regular(path)?;
    read_opened(file, &meta, limit, bound)
}

/// [`read_text`] of a file that arrived with a checkout: read only when its canonical
/// path (every symlink on the way resolved) lies inside `root`, so a link to
/// `~/.aws/credentials` is refused, whoever wrote it. The canonical path is what is opened,
/// and with `O_NOFOLLOW`, so a link put in its place after the check is not followed.
pub fn read_text_within(
    path: &Path,
    root: &Path,
    limit: u64,
    bound: &'static str,
) -> Result<String, ReadError> {
    let real = std::fs::canonicalize(path)?;
    if !real.starts_with(crate::paths::canonicalish(root)) {
        return Err(ReadError::Outside(root.to_path_buf()));
    }
    if !std::fs::symlink_metadata(&real)?.is_file() {
        return Err(ReadError::NotRegular);
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(&real)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular);
    }
    read_opened(file, &meta, limit, bound)
}

/// [`read_text`] of a file [`open_regular`] opened, for a caller that checks the open
/// file's metadata before it reads.
pub fn read_opened(
    file: File,
    meta: &Metadata,
    limit: u64,
    bound: &'static str,
) -> Result<String, ReadError> {
    let too_large = |size| ReadError::TooLarge { size, limit, bound };
    if meta.len() > limit {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(ctxd_pipeline::saturate::usize_of(meta.len()));
    // The file may grow between the stat and the read: never take more than the cap.
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|_| ReadError::NotText)
}

/// At most `limit` bytes from the start of a regular file, cut back to whole UTF-8
/// characters; for files that are read for their head only (large memory files).
pub fn read_head(path: &Path, limit: u64) -> Result<String, ReadError> {
    let (file, _) = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes)?;
    match String::from_utf8(bytes) {
        Ok(s) => Ok(s),
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            // A character cut by the cap is fine; invalid bytes before it are not text.
            if e.as_bytes().len() - valid > 3 {
                return Err(ReadError::NotText);
            }
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).map_err(|_| ReadError::NotText)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_devices_and_large_files_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.md");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            assert!(matches!(
                read_text(&fifo, 100, "x"),
                Err(ReadError::NotRegular)
            ));
        }
        assert!(matches!(
            read_text(Path::new("/dev/zero"), 100, "x"),
            Err(ReadError::NotRegular)
        ));
        let big = dir.path().join("big.md");
        File::create(&big).unwrap().set_len(1 << 30).unwrap();
        assert!(matches!(
            read_text(&big, 100, "x"),
            Err(ReadError::TooLarge { size, .. }) if size == 1 << 30
        ));
        let ok = dir.path().join("ok.md");
        std::fs::write(&ok, "hello").unwrap();
        assert_eq!(read_text(&ok, 5, "x").unwrap(), "hello");
        assert!(read_text(&ok, 4, "x").is_err());
        std::fs::write(&ok, [0xff, 0xfe]).unwrap();
        assert!(matches!(read_text(&ok, 5, "x"), Err(ReadError::NotText)));
    }

    #[test]
    fn a_confined_read_refuses_what_links_out_of_its_root() {
        let dir = tempfile::tempdir().unwrap();
        let (root, outside) = (dir.path().join("proj"), dir.path().join("secret"));
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(&outside, "secret").unwrap();
        std::fs::write(root.join("sub/in.md"), "inside").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("out.md")).unwrap();
        std::os::unix::fs::symlink(root.join("sub/in.md"), root.join("in-link.md")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("up")).unwrap();
        let within = |p: &str| read_text_within(&root.join(p), &root, 100, "x");
        assert_eq!(within("sub/in.md").unwrap(), "inside");
        assert_eq!(within("in-link.md").unwrap(), "inside");
        assert!(matches!(within("out.md"), Err(ReadError::Outside(_))));
        assert!(matches!(within("up/secret"), Err(ReadError::Outside(_))));
        assert!(matches!(within("sub"), Err(ReadError::NotRegular)));
    }
}
