//! Temporary directory trees for discovery tests.

use std::path::{Path, PathBuf};

use super::types::{DiscoveryConfig, InstructionFile, MemoryType};

/// A temp dir with `etc/claude-code` as managed root and `home` as the user's home.
pub(crate) struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub(crate) fn root(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    pub(crate) fn write(&self, rel: &str, content: &str) -> &Self {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
        self
    }

    pub(crate) fn mkdir(&self, rel: &str) -> &Self {
        std::fs::create_dir_all(self.path(rel)).expect("mkdir");
        self
    }

    #[cfg(unix)]
    pub(crate) fn symlink(&self, target: &str, link: &str) -> &Self {
        let link = self.path(link);
        std::fs::create_dir_all(link.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink(target, link).expect("symlink");
        self
    }

    pub(crate) fn cfg(&self, cwd: &str) -> DiscoveryConfig {
        let mut cfg = DiscoveryConfig::new(self.path(cwd), self.path("home"));
        cfg.managed_root = self.path("etc/claude-code");
        cfg
    }

    /// Paths relative to the tree; files outside it (a stray `/CLAUDE.md` on the test
    /// machine) are dropped so results do not depend on the host.
    pub(crate) fn rel(&self, files: &[InstructionFile]) -> Vec<String> {
        files
            .iter()
            .filter_map(|f| f.path.strip_prefix(self.root()).ok())
            .map(|p| p.display().to_string())
            .collect()
    }

    /// Like [`Tree::rel`], with each file's type.
    pub(crate) fn rel_kinds(&self, files: &[InstructionFile]) -> Vec<(String, MemoryType)> {
        files
            .iter()
            .filter_map(|f| {
                let rel = f.path.strip_prefix(self.root()).ok()?;
                Some((rel.display().to_string(), f.kind))
            })
            .collect()
    }

    pub(crate) fn redact(&self, text: &str) -> String {
        text.replace(&self.root().display().to_string(), "[TMP]")
    }
}
