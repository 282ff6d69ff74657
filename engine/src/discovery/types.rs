//! The data that discovery consumes and produces.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::paths;

/// Where enterprise-managed instructions live unless the session says otherwise.
pub const DEFAULT_MANAGED_ROOT: &str = "/etc/claude-code";

/// Everything discovery needs to know about a session. Paths should be absolute; a
/// relative `cwd` is resolved against the daemon's working directory, and relative
/// additional directories, memory entry points and touched paths against `cwd`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscoveryConfig {
    /// Managed-policy root (`/etc/claude-code` by default).
    pub managed_root: PathBuf,
    /// The user's real home; user-level files live in `user_home/.claude`, and `@~/`
    /// includes resolve against it.
    pub(crate) user_home: PathBuf,
    /// The session's *original* cwd: the root→cwd walk and the "external include"
    /// boundary are both anchored here.
    pub(crate) cwd: PathBuf,
    /// `--add-dir` style directories whose instruction files load after the cwd chain.
    pub(crate) additional_directories: Vec<PathBuf>,
    /// `claudeMdExcludes`: glob patterns matched against absolute paths (`*` stays within
    /// one path component, `**` crosses them).
    pub(crate) excludes: Vec<String>,
    /// The user approved includes that leave the workspace.
    pub allow_external_includes: bool,
    /// Auto/team memory index files; they end the chain and never render into `claudeMd`.
    pub(crate) memory_entry_points: Vec<PathBuf>,
    /// Read `AGENTS.md` beside every `CLAUDE.md` the chain reads (right after it).
    pub(crate) agents_md: bool,
    /// The bytes all instruction files of one walk may hold together (a share of the
    /// model's window); files past it are skipped.
    pub(crate) total_bytes: u64,
}

impl DiscoveryConfig {
    /// A config with the default managed root and no optional inputs.
    pub fn new(cwd: impl Into<PathBuf>, user_home: impl Into<PathBuf>) -> Self {
        Self {
            managed_root: PathBuf::from(DEFAULT_MANAGED_ROOT),
            user_home: user_home.into(),
            cwd: cwd.into(),
            additional_directories: Vec::new(),
            excludes: Vec::new(),
            allow_external_includes: false,
            memory_entry_points: Vec::new(),
            agents_md: true,
            total_bytes: ctxd_pipeline::limits::MAX_INSTRUCTION_TOTAL_BYTES,
        }
    }

    /// `user_home/.claude`.
    pub(crate) fn user_dir(&self) -> PathBuf {
        self.user_home.join(".claude")
    }

    /// `cwd` made absolute and lexically normalised, the form every walk starts from.
    pub(crate) fn absolute_cwd(&self) -> PathBuf {
        let cwd = std::path::absolute(&self.cwd).unwrap_or_else(|_| self.cwd.clone());
        paths::normalize(&cwd)
    }
}

/// Where an instruction file came from. Included files inherit their includer's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryType {
    /// Organisation policy under the managed root.
    Managed,
    /// `~/.claude/CLAUDE.md` and `~/.claude/rules`.
    User,
    /// Checked-in files of a directory between `/` and the cwd (or below it, at runtime).
    Project,
    /// `CLAUDE.local.md`: personal, not checked in.
    Local,
    /// Files of an additional directory.
    AdditionalDir,
    /// An auto/team memory index.
    Memory,
}

impl MemoryType {
    /// The short phrase shown after the path in a `Contents of …` block.
    pub(crate) fn description(self) -> &'static str {
        match self {
            Self::Managed => "organisation-wide instructions set by an administrator",
            Self::User => "the user's own instructions for every project",
            Self::Project => "project instructions, committed to the repository",
            Self::Local => "the user's private instructions for this project, not committed",
            Self::AdditionalDir => "instructions from an additional working directory",
            Self::Memory => "memory index",
        }
    }

    /// `claudeMdExcludes` is a user preference; it must not switch off policy or memory.
    pub(crate) fn honours_excludes(self) -> bool {
        matches!(
            self,
            Self::User | Self::Project | Self::Local | Self::AdditionalDir
        )
    }

    /// Files that arrive with a checkout (or from policy) must not pull arbitrary files
    /// from elsewhere on disk without approval; the user's own files may.
    pub(crate) fn confined_to_workspace(self) -> bool {
        !matches!(self, Self::User | Self::Memory)
    }
}

/// One entry of the instruction chain. Includes are entries of their own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstructionFile {
    /// The path as discovered (lexically normalised, symlinks not resolved).
    pub(crate) path: PathBuf,
    pub(crate) kind: MemoryType,
    /// File text with any YAML front matter removed.
    pub(crate) content: String,
    /// The file whose `@include` pulled this one in.
    pub(crate) parent: Option<PathBuf>,
    /// `paths:` patterns of a conditional rule; included files carry their root rule's.
    pub(crate) globs: Option<Vec<String>>,
}

impl InstructionFile {
    /// Conditional entries load only when a matching path is touched.
    pub(crate) fn is_conditional(&self) -> bool {
        self.globs.is_some()
    }

    /// The path with symlinks resolved (the path itself if that fails); this is the
    /// identity used for de-duplication and for the `loaded`/`read_files` sets.
    pub(crate) fn canonical_path(&self) -> PathBuf {
        paths::canonicalish(&self.path)
    }

    /// Whether the file name marks a programmatically injected file, which is never
    /// part of the chain.
    pub(crate) fn is_injected(&self) -> bool {
        paths::is_injected(&self.path)
    }

    pub fn new(
        path: &Path,
        kind: MemoryType,
        content: String,
        parent: Option<&Path>,
        globs: Option<Vec<String>>,
    ) -> Self {
        Self {
            path: path.to_path_buf(),
            kind,
            content,
            parent: parent.map(Path::to_path_buf),
            globs,
        }
    }
}
