//! Nested memory: instruction files that become relevant when the agent touches a path,
//! delivered as a `nested_memory` attachment at the tail.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::chain::each_rules_home;
use super::load::{Loader, RuleFilter};
use super::paths;
use super::types::{DiscoveryConfig, InstructionFile, MemoryType};
use super::worktree::NestedWorktree;

/// Instruction files to inject because the agent read or edited `touched` (relative
/// paths are taken against the cwd), in this order:
///
/// 1. managed, then user conditional rules whose `paths:` match `touched` relative to
///    the cwd;
/// 2. each directory strictly below the cwd down to `touched`'s own directory,
///    outermost first: `CLAUDE.md`, `.claude/CLAUDE.md`, `.claude/rules/**` (the
///    unconditional ones and the conditional ones matching relative to that
///    directory, in rule-file order), `CLAUDE.local.md`;
/// 3. conditional rules of each directory from `/` down to the cwd, matching relative
///    to that directory (the folder holding `.claude/`); the worktree rule applies.
///
/// Every file comes with its includes. A path outside the cwd gets no step 2, and in
/// steps 1 and 3 only patterns whose base directory contains it can match.
///
/// `loaded` should hold every path already in the conversation (the start-up chain and
/// earlier results of this function); `read_files` the files the agent has read as
/// ordinary files. Either spelling of a path works: both sides are compared with
/// symlinks resolved. A file is filtered individually, so the includes of an already
/// loaded file can still arrive on their own.
pub(crate) fn nested_for_path(
    cfg: &DiscoveryConfig,
    touched: &Path,
    loaded: &BTreeSet<PathBuf>,
    read_files: &BTreeSet<PathBuf>,
) -> Vec<InstructionFile> {
    let mut loader = Loader::new(cfg);
    let cwd = loader.cwd.clone();
    let touched = paths::absolutize(touched, &cwd);
    let mut out = Vec::new();

    let from_cwd = RuleFilter::Matching {
        base: &cwd,
        touched: &touched,
    };
    each_rules_home(cfg, &mut loader, &from_cwd, false, &mut out);

    for dir in dirs_below_cwd(&cwd, &touched) {
        let filter = RuleFilter::UnconditionalOrMatching {
            base: &dir,
            touched: &touched,
        };
        loader.checked_in(&dir, MemoryType::Project, &filter, &mut out);
        loader.plain(&dir.join("CLAUDE.local.md"), MemoryType::Local, &mut out);
    }

    let worktree = NestedWorktree::detect(&cwd);
    for dir in paths::ancestors_top_down(&cwd) {
        if NestedWorktree::hides(worktree.as_ref(), &dir) {
            continue;
        }
        let filter = RuleFilter::Matching {
            base: &dir,
            touched: &touched,
        };
        let rules = dir.join(".claude").join("rules");
        loader.rules(&rules, MemoryType::Project, &filter, &mut out);
    }

    let known: BTreeSet<PathBuf> = loaded
        .iter()
        .chain(read_files)
        .flat_map(|p| {
            let p = paths::absolutize(p, &cwd);
            [paths::canonicalish(&p), p]
        })
        .collect();
    out.retain(|file| !known.contains(&file.path) && !known.contains(&file.canonical_path()));
    out
}

/// Directories strictly below `cwd` down to the parent of `touched`, outermost first,
/// spelled under `cwd` even when `touched` used another spelling of the same tree.
fn dirs_below_cwd(cwd: &Path, touched: &Path) -> Vec<PathBuf> {
    let Some(parent) = touched.parent() else {
        return Vec::new();
    };
    let Some(rel) = paths::relative_within(cwd, parent) else {
        return Vec::new();
    };
    let mut dir = cwd.to_path_buf();
    rel.components()
        .map(|component| {
            dir.push(component);
            dir.clone()
        })
        .collect()
}
