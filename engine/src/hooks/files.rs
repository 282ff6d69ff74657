//! The filesystem edge of hook configuration: where a session's settings files are,
//! whether each may supply hooks, and a cheap stamp to notice that one changed.
//!
//! What "trusted" means here (hook commands run only from configured
//! sources):
//! - only four files are ever read: `MANAGED_ROOT/managed-settings.json`,
//!   `USER_HOME/.claude/settings.json`, and `PROJECT/.claude/settings.json` and
//!   `PROJECT/.claude/settings.local.json` where PROJECT is the session's original cwd.
//!   A settings file anywhere else — a parent or child directory of the project, an
//!   additional directory, a directory the session later `cd`s into — is never read;
//! - the managed root is the daemon's (`--managed-root`), never a session's choice, so
//!   a client cannot swap the policy that `allowManagedHooksOnly` enforces;
//! - a file owned by another user (root may own the managed file), or writable by
//!   everyone, is refused as untrusted: whoever can write it could run commands as us;
//! - so is a file in a directory every user may write to without the sticky bit: there
//!   anyone can put another file in its place;
//! - the file is opened once, and its owner and mode are those of the open file, whose
//!   bytes are then read: a file swapped in between the check and the read is never the
//!   one read.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::config::{FileState, Layer, Source, parse_settings};
use ctxd_pipeline::limits::MAX_HOOK_SETTINGS_BYTES;

/// The settings files of one session, in precedence order.
pub(crate) fn settings_paths(
    managed_root: &Path,
    user_home: &Path,
    project: &Path,
) -> Vec<(Source, PathBuf)> {
    vec![
        (Source::Managed, managed_root.join("managed-settings.json")),
        (
            Source::User,
            user_home.join(".claude").join("settings.json"),
        ),
        (
            Source::Project,
            project.join(".claude").join("settings.json"),
        ),
        (
            Source::Local,
            project.join(".claude").join("settings.local.json"),
        ),
    ]
}

/// Identity and contents stamp of a file: any write, replace, chmod or chown changes
/// it. `None` when the file does not exist (or cannot be seen).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

pub(crate) fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp {
        dev: m.dev(),
        ino: m.ino(),
        size: m.size(),
        mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
    })
}

/// Why a file may not supply hooks, if it may not.
fn distrust(source: Source, meta: &std::fs::Metadata) -> Option<String> {
    let me = ctxd_protocol::socket::own_uid();
    let owner_ok = meta.uid() == me || (source == Source::Managed && meta.uid() == 0);
    if !owner_ok {
        return Some(format!(
            "owned by uid {}, not by this user (uid {me})",
            meta.uid()
        ));
    }
    if meta.mode() & 0o002 != 0 {
        return Some("writable by every user".into());
    }
    None
}

/// Why the directory holding a settings file lets others replace it, if it does.
fn distrust_dir(path: &Path) -> Option<String> {
    let dir = path.parent()?;
    let m = std::fs::metadata(dir).ok()?;
    let sticky = m.mode() & 0o1000 != 0;
    (m.mode() & 0o002 != 0 && !sticky).then(|| {
        format!(
            "in {}, which every user may write to (no sticky bit)",
            dir.display()
        )
    })
}

/// Opens, checks and reads one settings file, all through one open file.
fn read_trusted(source: Source, path: &Path) -> FileState {
    use ctxd_fs::safe_read::{ReadError, open_regular, read_opened};
    if let Some(why) = distrust_dir(path) {
        return FileState::Untrusted(why);
    }
    let too_large = || FileState::Invalid(format!("larger than {MAX_HOOK_SETTINGS_BYTES} bytes"));
    let (file, meta) = match open_regular(path) {
        Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return FileState::Absent;
        }
        Err(e @ ReadError::NotRegular) => return FileState::Invalid(e.to_string()),
        Err(e) => return FileState::Invalid(format!("cannot read it: {e}")),
        Ok(opened) => opened,
    };
    if meta.len() > MAX_HOOK_SETTINGS_BYTES {
        return too_large();
    }
    if let Some(why) = distrust(source, &meta) {
        return FileState::Untrusted(why);
    }
    match read_opened(
        file,
        &meta,
        MAX_HOOK_SETTINGS_BYTES,
        "MAX_HOOK_SETTINGS_BYTES",
    ) {
        Ok(text) => match parse_settings(&text) {
            Ok(s) => FileState::Loaded(s),
            Err(e) => FileState::Invalid(e),
        },
        Err(ReadError::TooLarge { .. }) => too_large(),
        Err(e @ ReadError::NotText) => FileState::Invalid(e.to_string()),
        Err(e) => FileState::Invalid(format!("cannot read it: {e}")),
    }
}

/// Reads one settings file into a layer.
pub(crate) fn load(source: Source, path: &Path) -> Layer {
    let file = path.display().to_string();
    let state = read_trusted(source, path);
    Layer {
        source,
        file,
        state,
    }
}

/// The layer of a project settings file whose directory is not trusted.
pub(crate) fn untrusted_layer(source: Source, path: &Path) -> Layer {
    Layer {
        source,
        file: path.display().to_string(),
        state: FileState::Untrusted(
            "the project directory is not trusted: run `ctx trust DIR` (or create the session with settings.hooks.trust_project)".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn absent_loaded_invalid_and_world_writable() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("settings.json");
        assert!(matches!(load(Source::Project, &p).state, FileState::Absent));
        std::fs::write(
            &p,
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}"#,
        )
        .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let l = load(Source::Project, &p);
        assert_eq!(l.hook_count(), 1);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
        let l = load(Source::Project, &p);
        assert!(matches!(&l.state, FileState::Untrusted(w) if w.contains("every user")));
        assert_eq!(l.hook_count(), 0);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(&p, "{oops").unwrap();
        assert!(matches!(
            load(Source::Project, &p).state,
            FileState::Invalid(_)
        ));
        assert!(matches!(
            load(Source::Project, dir.path()).state,
            FileState::Invalid(_)
        ));
    }

    #[test]
    fn a_directory_anyone_may_write_to_is_refused_unless_sticky() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("settings.json");
        std::fs::write(
            &p,
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}"#,
        )
        .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let l = load(Source::Project, &p);
        assert!(
            matches!(&l.state, FileState::Untrusted(w) if w.contains("sticky")),
            "{:?}",
            l.state
        );
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert_eq!(load(Source::Project, &p).hook_count(), 1);
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    }

    #[test]
    fn stamps_change_on_write_and_chmod() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        assert_eq!(stamp(&p), None);
        std::fs::write(&p, "{}").unwrap();
        let a = stamp(&p).unwrap();
        std::fs::write(&p, "{ }").unwrap();
        let b = stamp(&p).unwrap();
        assert_ne!(a, b);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_ne!(stamp(&p).unwrap(), b);
    }

    #[test]
    fn the_four_places() {
        let p = settings_paths(
            Path::new("/etc/claude-code"),
            Path::new("/home/u"),
            Path::new("/w/proj"),
        );
        let names: Vec<String> = p.iter().map(|(_, p)| p.display().to_string()).collect();
        assert_eq!(
            names,
            [
                "/etc/claude-code/managed-settings.json",
                "/home/u/.claude/settings.json",
                "/w/proj/.claude/settings.json",
                "/w/proj/.claude/settings.local.json"
            ]
        );
    }
}
