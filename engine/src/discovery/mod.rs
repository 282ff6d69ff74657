//! Instruction-file discovery: the CLAUDE.md chain and the files nested below the cwd.
//!
//! Pure logic over filesystem reads: no watching, no async, no database. The caller
//! decides when to run it and remembers what was already shown to the model.
//!
//! * [`startup_chain`] — the files of `messages[0]`, in prompt order.
//! * [`render_claude_md`] — the `# claudeMd` text made from that chain.
//! * `nested_for_path` — files that become relevant when the agent touches a path.
//! * [`conditional_rules`] — every conditional rule, e.g. to watch them.
//!
//! Decisions worth knowing:
//!
//! * **Rules order.** `.claude/rules` is walked depth-first with siblings sorted by the
//!   bytes of their names, files and directories interleaved (equivalently: relative
//!   paths sorted component by component, so `a/z.md` < `a-b.md` < `b.md`). Only
//!   `*.md` files count. Symlinks are followed; a directory already walked (by
//!   canonical path) is skipped, so symlink loops end; at most 10,000 entries per folder.
//! * **Confinement.** Managed, project, local and additional-directory files — rules,
//!   `CLAUDE.md`s and their symlinked directories alike — are read only where their
//!   canonical path lies inside the workspace (cwd, additional directories) or inside the
//!   directory they were found in (the one holding `.claude/`), unless
//!   `allow_external_includes`: a `rules/x.md` linked to `/etc/passwd` is skipped.
//! * **Reading.** Only regular files (never FIFOs or devices, which could block),
//!   valid UTF-8, at most 1 MiB each and 4 MiB per walk; larger files are skipped
//!   (logged), never read whole.
//! * **Includes** are emitted after their includer, depth-first in order of first
//!   appearance (what Claude Code's code does; a comment there says otherwise). A
//!   top-level file has depth 0; depth 5 loads, depth 6 does not. Relative targets
//!   resolve against the including file's directory. Each file appears once per walk,
//!   keyed by canonical path, which also makes cycles terminate. Missing targets,
//!   directories and non-text extensions are skipped quietly.
//! * **External includes.** For managed, project, local and additional-directory
//!   files, a target whose canonical path lies outside the cwd and outside every
//!   additional directory is refused unless `allow_external_includes`. User files may
//!   include anything.
//! * **Conditions.** Only rule files are conditional. An included file carries its
//!   root rule's `paths:` (its own `paths:` is stripped and ignored), so a rule's
//!   includes load with it or not at all. `paths:` in `CLAUDE.md`-type files is ignored.
//! * **Matching** is gitignore-style (the `ignore` crate, parents included, `!`
//!   negation honoured), relative to the directory holding `.claude/` for project
//!   rules and to the cwd for managed and user rules. A path outside that base never
//!   matches.
//! * **Excludes** (`claudeMdExcludes`) are globs over absolute paths (`*` within one
//!   component) tested against both the discovered and the canonical path; they apply
//!   to user, project, local and additional-directory files and their includes, never
//!   to managed files or memory entry points.
//! * **Worktrees.** When the cwd is in a linked worktree nested inside its main
//!   checkout, committed files (`CLAUDE.md`, `.claude/CLAUDE.md`, `.claude/rules`) of
//!   directories inside the main checkout but above the worktree are skipped, at
//!   start-up and for conditional rules; `CLAUDE.local.md` still loads.
//! * **Memory entry points** end the chain as [`MemoryType::Memory`] entries, without
//!   include processing, and never render into `claudeMd`.
//! * **AGENTS.md** (on unless `agents_md` is off): wherever the chain reads a
//!   `CLAUDE.md` (managed root, `~/.claude`, each directory and its `.claude/`,
//!   additional directories, nested directories) it then reads `AGENTS.md` from the same
//!   directory, as a file of the same type with its own includes, labelled `AGENTS.md`
//!   when rendered. A `CLAUDE.md` that is a symlink to (or includes) `AGENTS.md` loads
//!   it once: identity is the canonical path.
//! * Empty (whitespace-only) files are not entries. Unreadable files are skipped.

mod chain;
mod exclude;
mod front_matter;
mod include;
mod load;
pub mod memories;
mod nested;
pub(crate) mod output_styles;
mod paths;
pub(crate) use paths::{absolutize, canonical, canonicalish, inside_any, workspace_roots};
mod render;
mod rules;
pub mod skills;
mod types;
mod worktree;

pub use front_matter::parse as parse_front_matter;
pub use include::include_targets;
#[cfg(test)]
mod agents_md_tests;
#[cfg(test)]
mod test_tree;
#[cfg(test)]
mod tests;

pub use chain::{conditional_rules, startup_chain};
pub(crate) use nested::nested_for_path;
pub use render::{CLAUDE_MD_PREAMBLE, render_block, render_claude_md};
pub(crate) use rules::patterns_match as paths_match;
pub use types::{DEFAULT_MANAGED_ROOT, DiscoveryConfig, InstructionFile, MemoryType};
