//! `AGENTS.md` beside every `CLAUDE.md` the chain reads.

use std::collections::BTreeSet;

use super::test_tree::Tree;
use super::*;

#[test]
fn agents_md_follows_claude_md_in_every_directory() {
    let t = Tree::new();
    t.write("etc/claude-code/CLAUDE.md", "managed")
        .write("etc/claude-code/AGENTS.md", "managed agents")
        .write("home/.claude/CLAUDE.md", "user")
        .write("home/.claude/AGENTS.md", "user agents")
        .write("repo/AGENTS.md", "repo agents, no CLAUDE.md here")
        .write("repo/pkg/CLAUDE.md", "pkg")
        .write("repo/pkg/AGENTS.md", "pkg agents\n@notes.md")
        .write("repo/pkg/notes.md", "included by AGENTS.md")
        .write("repo/pkg/.claude/CLAUDE.md", "pkg dot")
        .write("repo/pkg/.claude/rules/r.md", "pkg rule")
        .write("repo/pkg/CLAUDE.local.md", "pkg local")
        .write("repo/pkg/sub/AGENTS.md", "nested agents");
    let chain = startup_chain(&t.cfg("repo/pkg"));
    assert_eq!(
        t.rel(&chain),
        vec![
            "etc/claude-code/CLAUDE.md",
            "etc/claude-code/AGENTS.md",
            "home/.claude/CLAUDE.md",
            "home/.claude/AGENTS.md",
            "repo/AGENTS.md",
            "repo/pkg/CLAUDE.md",
            "repo/pkg/AGENTS.md",
            "repo/pkg/notes.md",
            "repo/pkg/.claude/CLAUDE.md",
            "repo/pkg/.claude/rules/r.md",
            "repo/pkg/CLAUDE.local.md",
        ]
    );
    let text = render_claude_md(&chain).expect("rendered");
    let label = format!(
        "Contents of {} (AGENTS.md, {}):",
        t.path("repo/pkg/AGENTS.md").display(),
        MemoryType::Project.description()
    );
    assert!(text.contains(&label), "{text}");
    let plain = format!(
        "Contents of {} ({}):",
        t.path("repo/pkg/CLAUDE.md").display(),
        MemoryType::Project.description()
    );
    assert!(text.contains(&plain));

    // Nested lookups read it too, after the directory's CLAUDE.md.
    let loaded: BTreeSet<_> = chain.iter().map(|f| f.canonical_path()).collect();
    let nested = nested_for_path(
        &t.cfg("repo/pkg"),
        &t.path("repo/pkg/sub/x.rs"),
        &loaded,
        &BTreeSet::new(),
    );
    assert_eq!(t.rel(&nested), vec!["repo/pkg/sub/AGENTS.md"]);
}

#[test]
fn agents_md_can_be_switched_off_and_is_read_once_when_linked() {
    let t = Tree::new();
    t.write("repo/AGENTS.md", "shared instructions")
        .symlink("AGENTS.md", "repo/CLAUDE.md");
    let mut cfg = t.cfg("repo");
    let chain = startup_chain(&cfg);
    assert_eq!(t.rel(&chain), vec!["repo/CLAUDE.md"]);
    cfg.agents_md = false;
    t.write("repo/sub/AGENTS.md", "x");
    let off = startup_chain(&t.cfg("repo/sub"));
    assert_eq!(t.rel(&off), vec!["repo/CLAUDE.md", "repo/sub/AGENTS.md"]);
    let mut cfg = t.cfg("repo/sub");
    cfg.agents_md = false;
    assert_eq!(t.rel(&startup_chain(&cfg)), vec!["repo/CLAUDE.md"]);
}
