//! Reading one instruction file and, depth-first, the files it `@include`s.
//!
//! A [`Loader`] lives for one walk (the startup chain, or one nested lookup) and
//! remembers the canonical path of every file it emitted, which is what removes
//! duplicates across the walk and makes include cycles impossible.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::exclude::Excludes;
use super::types::{DiscoveryConfig, InstructionFile, MemoryType};
use super::{front_matter, include, paths, rules};
use ctxd_fs::safe_read::ReadError;
use ctxd_pipeline::limits::MAX_INSTRUCTION_FILE_BYTES;

/// The directory a discovered file belongs to: the one holding its `.claude` folder
/// (`DIR/.claude/rules/a/b.md` → `DIR`), else its own directory (`DIR/CLAUDE.md` → `DIR`).
fn owner_dir(path: &Path) -> PathBuf {
    path.ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == ".claude"))
        .and_then(Path::parent)
        .or_else(|| path.parent())
        .unwrap_or(Path::new("/"))
        .to_path_buf()
}

/// The file name other coding agents (Codex, Cursor, ...) read their instructions from.
pub(crate) const AGENTS_MD: &str = "AGENTS.md";

/// Which rule files of a `.claude/rules` folder a walk wants.
pub(crate) enum RuleFilter<'a> {
    /// Rules without `paths:` (start-up).
    Unconditional,
    /// Every conditional rule, whatever it matches.
    Conditional,
    /// Unconditional rules plus conditional ones matching `touched` relative to `base`.
    UnconditionalOrMatching { base: &'a Path, touched: &'a Path },
    /// Only conditional rules matching `touched` relative to `base`.
    Matching { base: &'a Path, touched: &'a Path },
}

impl RuleFilter<'_> {
    fn accepts(&self, globs: Option<&[String]>) -> bool {
        match (self, globs) {
            (Self::Unconditional, globs) => globs.is_none(),
            (Self::Conditional, globs) => globs.is_some(),
            (Self::UnconditionalOrMatching { .. }, None) => true,
            (
                Self::UnconditionalOrMatching { base, touched } | Self::Matching { base, touched },
                Some(globs),
            ) => rules::patterns_match(globs, base, touched),
            (Self::Matching { .. }, None) => false,
        }
    }
}

/// How a file entered the walk, which decides what its `paths:` means.
enum Origin<'a> {
    /// `CLAUDE.md`, `.claude/CLAUDE.md`, `CLAUDE.local.md`: `paths:` is not a condition
    /// there (only rules are conditional), so it is stripped and ignored.
    Plain,
    Rule(&'a RuleFilter<'a>),
    /// An include belongs to its root: it loads when the root loads, and carries the
    /// root's condition instead of its own.
    Include(Option<Vec<String>>),
    /// Memory indexes are data, not instructions: no includes, no conditions.
    Memory,
}

pub(crate) struct Loader<'a> {
    cfg: &'a DiscoveryConfig,
    /// Absolute, normalised original cwd.
    pub(crate) cwd: PathBuf,
    /// Canonical roots an include may point into without approval: the cwd and the
    /// additional directories (the user already opened those to the session).
    workspace: Vec<PathBuf>,
    excludes: Excludes,
    seen: HashSet<PathBuf>,
    /// Bytes of instruction text read so far in this walk.
    total: u64,
}

impl<'a> Loader<'a> {
    pub fn new(cfg: &'a DiscoveryConfig) -> Self {
        let cwd = cfg.absolute_cwd();
        let mut workspace = vec![paths::canonicalish(&cwd)];
        for dir in &cfg.additional_directories {
            workspace.push(paths::canonicalish(&paths::absolutize(dir, &cwd)));
        }
        Self {
            cfg,
            cwd,
            workspace,
            excludes: Excludes::new(&cfg.excludes),
            seen: HashSet::new(),
            total: 0,
        }
    }

    /// A non-rule instruction file and its includes.
    pub(crate) fn plain(&mut self, path: &Path, kind: MemoryType, out: &mut Vec<InstructionFile>) {
        self.visit(path, kind, 0, None, Origin::Plain, out);
    }

    /// `DIR/CLAUDE.md`, then (when enabled) `DIR/AGENTS.md`: the instructions other
    /// coding agents read, wherever the chain reads a `CLAUDE.md`.
    pub(crate) fn claude_md(
        &mut self,
        dir: &Path,
        kind: MemoryType,
        out: &mut Vec<InstructionFile>,
    ) {
        self.plain(&dir.join("CLAUDE.md"), kind, out);
        if self.cfg.agents_md {
            self.plain(&dir.join(AGENTS_MD), kind, out);
        }
    }

    /// `CLAUDE.md` (+ `AGENTS.md`) → `.claude/CLAUDE.md` (+ `AGENTS.md`) →
    /// `.claude/rules/**` of one directory.
    pub(crate) fn checked_in(
        &mut self,
        dir: &Path,
        kind: MemoryType,
        filter: &RuleFilter<'_>,
        out: &mut Vec<InstructionFile>,
    ) {
        self.claude_md(dir, kind, out);
        self.claude_md(&dir.join(".claude"), kind, out);
        self.rules(&dir.join(".claude").join("rules"), kind, filter, out);
    }

    /// The wanted files of a rules folder, in [`rules::rule_files`] order.
    pub(crate) fn rules(
        &mut self,
        rules_dir: &Path,
        kind: MemoryType,
        filter: &RuleFilter<'_>,
        out: &mut Vec<InstructionFile>,
    ) {
        // A symlinked directory may lead anywhere: the walk enters only directories the
        // rules themselves could be read from.
        let owner = owner_dir(rules_dir);
        let enter = |dir: &Path| self.confined_ok(dir, kind, &owner);
        for file in rules::rule_files(rules_dir, &enter) {
            self.visit(&file, kind, 0, None, Origin::Rule(filter), out);
        }
    }

    pub(crate) fn memory(&mut self, path: &Path, out: &mut Vec<InstructionFile>) {
        let path = paths::absolutize(path, &self.cwd);
        self.visit(&path, MemoryType::Memory, 0, None, Origin::Memory, out);
    }

    fn visit(
        &mut self,
        path: &Path,
        kind: MemoryType,
        depth: usize,
        parent: Option<&Path>,
        origin: Origin<'_>,
        out: &mut Vec<InstructionFile>,
    ) {
        if depth > ctxd_pipeline::limits::MAX_INCLUDE_DEPTH || paths::is_injected(path) {
            return;
        }
        if kind.honours_excludes() && self.excludes.matches(path) {
            tracing::debug!(path = %path.display(), "excluded by claudeMdExcludes");
            return;
        }
        // Most candidates do not exist. Resolving a path costs a readlink per component,
        // each walking the path again (quadratic in its depth); a missing file is told
        // by one lookup.
        if std::fs::symlink_metadata(path).is_err() {
            return;
        }
        let Some(canonical) = paths::canonical(path) else {
            return;
        };
        if self.seen.contains(&canonical) {
            return;
        }
        if depth == 0 && !self.confined_ok(&canonical, kind, &owner_dir(path)) {
            tracing::warn!(path = %path.display(), target = %canonical.display(), "instruction file links outside the workspace; skipped");
            return;
        }
        let raw = match ctxd_fs::safe_read::read_text(
            path,
            MAX_INSTRUCTION_FILE_BYTES,
            "MAX_INSTRUCTION_FILE_BYTES",
        ) {
            Ok(raw) => raw,
            Err(err @ (ReadError::NotRegular | ReadError::TooLarge { .. })) => {
                tracing::warn!(path = %path.display(), %err, "instruction file skipped");
                return;
            }
            Err(err) => {
                tracing::debug!(path = %path.display(), %err, "skipping unreadable instruction file");
                return;
            }
        };
        if self.total + raw.len() as u64 > self.cfg.total_bytes {
            tracing::warn!(
                path = %path.display(),
                limit = self.cfg.total_bytes,
                "instruction files exceed their share of the window (INSTRUCTION_WINDOW_SHARE_PCT, at most MAX_INSTRUCTION_TOTAL_BYTES); skipped"
            );
            return;
        }
        self.total += raw.len() as u64;
        let parsed = front_matter::parse(&raw, path);
        let globs = match origin {
            Origin::Plain | Origin::Memory => None,
            Origin::Include(inherited) => inherited,
            Origin::Rule(filter) => {
                // Decided before marking the file seen, so a rule this walk does not
                // want can still be reached by an explicit include.
                if !filter.accepts(parsed.paths.as_deref()) {
                    return;
                }
                parsed.paths
            }
        };
        self.seen.insert(canonical);
        if parsed.body.trim().is_empty() {
            return;
        }
        let includes =
            if depth < ctxd_pipeline::limits::MAX_INCLUDE_DEPTH && kind != MemoryType::Memory {
                include::include_targets(&parsed.body, path, &self.cfg.user_home)
            } else {
                Vec::new()
            };
        out.push(InstructionFile::new(
            path,
            kind,
            parsed.body,
            parent,
            globs.clone(),
        ));
        for target in includes {
            if !self.include_allowed(&target, kind) {
                continue;
            }
            let origin = Origin::Include(globs.clone());
            self.visit(&target, kind, depth + 1, Some(path), origin, out);
        }
    }

    /// Whether a file (or rules directory) of `kind` discovered under `owner` may be read
    /// from `canonical`: files that arrive with a checkout or from policy stay inside the
    /// workspace or the directory they were found in, symlinks included, unless the user
    /// allowed external includes.
    fn confined_ok(&self, canonical: &Path, kind: MemoryType, owner: &Path) -> bool {
        if !kind.confined_to_workspace() || self.cfg.allow_external_includes {
            return true;
        }
        let canonical = paths::canonicalish(canonical);
        canonical.starts_with(paths::canonicalish(owner))
            || self
                .workspace
                .iter()
                .any(|root| canonical.starts_with(root))
    }

    fn include_allowed(&self, target: &Path, kind: MemoryType) -> bool {
        if !include::has_text_extension(target) {
            tracing::debug!(path = %target.display(), "include is not a text file");
            return false;
        }
        if !kind.confined_to_workspace() || self.cfg.allow_external_includes {
            return true;
        }
        // Missing targets are silently dropped later anyway; resolving symlinks here is
        // what stops a link inside the workspace from smuggling in an outside file.
        let Some(canonical) = paths::canonical(target) else {
            return false;
        };
        let inside = self
            .workspace
            .iter()
            .any(|root| canonical.starts_with(root));
        if !inside {
            tracing::debug!(path = %target.display(), "external include refused");
        }
        inside
    }
}
