//! The start-up chain, loaded once per session into `messages[0]`.

use std::path::{Path, PathBuf};

use super::load::{Loader, RuleFilter};
use super::paths;
use super::types::{DiscoveryConfig, InstructionFile, MemoryType};
use super::worktree::NestedWorktree;

/// Every unconditional instruction file of the session, in prompt order: managed,
/// user, `/`→cwd (per directory: `CLAUDE.md`, `.claude/CLAUDE.md`, `.claude/rules/**`,
/// `CLAUDE.local.md`), additional directories, memory entry points. Each file is
/// followed by its includes, depth-first. Conditional rules are not here; see
/// [`conditional_rules`] and `super::nested_for_path`.
pub fn startup_chain(cfg: &DiscoveryConfig) -> Vec<InstructionFile> {
    let mut loader = Loader::new(cfg);
    let mut out = Vec::new();
    let filter = RuleFilter::Unconditional;
    each_rules_home(cfg, &mut loader, &filter, true, &mut out);

    let cwd = loader.cwd.clone();
    let worktree = NestedWorktree::detect(&cwd);
    for dir in paths::ancestors_top_down(&cwd) {
        if !NestedWorktree::hides(worktree.as_ref(), &dir) {
            loader.checked_in(&dir, MemoryType::Project, &filter, &mut out);
        }
        loader.plain(&dir.join("CLAUDE.local.md"), MemoryType::Local, &mut out);
    }

    for dir in &cfg.additional_directories {
        let dir = paths::absolutize(dir, &cwd);
        loader.checked_in(&dir, MemoryType::AdditionalDir, &filter, &mut out);
    }

    for entry in &cfg.memory_entry_points {
        loader.memory(entry, &mut out);
    }
    out
}

/// Every conditional rule the session could inject later (managed, user, and `/`→cwd
/// project rules, with their includes), e.g. to know which files to watch.
pub fn conditional_rules(cfg: &DiscoveryConfig) -> Vec<InstructionFile> {
    let mut loader = Loader::new(cfg);
    let mut out = Vec::new();
    let filter = RuleFilter::Conditional;
    each_rules_home(cfg, &mut loader, &filter, false, &mut out);
    let cwd = loader.cwd.clone();
    let worktree = NestedWorktree::detect(&cwd);
    for dir in paths::ancestors_top_down(&cwd) {
        if !NestedWorktree::hides(worktree.as_ref(), &dir) {
            let rules = dir.join(".claude").join("rules");
            loader.rules(&rules, MemoryType::Project, &filter, &mut out);
        }
    }
    out
}

/// Managed then user: their `CLAUDE.md` (when `with_claude_md`) and their rules.
/// The managed root mirrors a project (`ROOT/.claude/rules`); the user directory is
/// itself a `.claude` folder (`~/.claude/rules`).
pub(crate) fn each_rules_home(
    cfg: &DiscoveryConfig,
    loader: &mut Loader<'_>,
    filter: &RuleFilter<'_>,
    with_claude_md: bool,
    out: &mut Vec<InstructionFile>,
) {
    let user_dir = cfg.user_dir();
    let homes: [(&Path, PathBuf, MemoryType); 2] = [
        (
            &cfg.managed_root,
            cfg.managed_root.join(".claude").join("rules"),
            MemoryType::Managed,
        ),
        (&user_dir, user_dir.join("rules"), MemoryType::User),
    ];
    for (dir, rules, kind) in homes {
        if with_claude_md {
            loader.claude_md(dir, kind, out);
        }
        loader.rules(&rules, kind, filter, out);
    }
}
