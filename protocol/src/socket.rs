//! Where the daemon's socket is, by the rules every client and the daemon share: an
//! explicit socket, else `HOME/ctxd.sock` for an explicit home (`CTXD_HOME`), else
//! `$XDG_RUNTIME_DIR/ctxd/ctxd.sock`, else `/tmp/ctxd-UID/ctxd.sock`.

use std::path::{Path, PathBuf};

/// The socket's file name inside a home or runtime directory.
pub const SOCKET_NAME: &str = "ctxd.sock";

/// The user this process runs as (its effective uid).
pub fn own_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The socket when neither a socket nor a home is given: the user's runtime directory
/// when the platform has one (an absolute `XDG_RUNTIME_DIR`), else a per-user directory
/// in `/tmp`.
pub fn default_socket() -> PathBuf {
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    match runtime {
        Some(dir) => dir.join("ctxd").join(SOCKET_NAME),
        None => PathBuf::from(format!("/tmp/ctxd-{}", own_uid())).join(SOCKET_NAME),
    }
}

/// The socket a client should use: `socket` if given, else the one in `home`, else
/// `default_socket`.
pub fn resolve_socket(socket: Option<PathBuf>, home: Option<&Path>) -> PathBuf {
    match (socket, home) {
        (Some(s), _) => s,
        (None, Some(h)) => h.join(SOCKET_NAME),
        (None, None) => default_socket(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_socket_wins_then_the_home() {
        let s = resolve_socket(Some("/x/s.sock".into()), Some(Path::new("/h")));
        assert_eq!(s, PathBuf::from("/x/s.sock"));
        let h = resolve_socket(None, Some(Path::new("/h")));
        assert_eq!(h, PathBuf::from("/h/ctxd.sock"));
        assert!(resolve_socket(None, None).ends_with(SOCKET_NAME));
    }
}
