//! Scenario tests over real directory trees.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::test_tree::Tree;
use super::*;

fn none() -> BTreeSet<PathBuf> {
    BTreeSet::new()
}

#[test]
fn full_startup_order() {
    let t = Tree::new();
    t.write("etc/claude-code/CLAUDE.md", "managed")
        .write("etc/claude-code/.claude/rules/b.md", "managed rule b")
        .write("etc/claude-code/.claude/rules/a/x.md", "managed rule a/x")
        .write(
            "etc/claude-code/.claude/rules/cond.md",
            "---\npaths: src\n---\nmanaged cond",
        )
        .write("home/.claude/CLAUDE.md", "user")
        .write("home/.claude/rules/u.md", "user rule")
        .write("CLAUDE.md", "tree root")
        .write("repo/CLAUDE.md", "repo")
        .write("repo/.claude/CLAUDE.md", "repo dot")
        .write("repo/.claude/rules/r.md", "repo rule")
        .write("repo/.claude/rules/.claude-injected-hook.md", "injected")
        .write("repo/CLAUDE.local.md", "repo local")
        .write("repo/pkg/CLAUDE.md", "pkg")
        .write("repo/pkg/CLAUDE.local.md", "pkg local")
        .write("repo/pkg/deeper/CLAUDE.md", "below cwd: nested only")
        .write("extra/CLAUDE.md", "extra")
        .write("extra/.claude/CLAUDE.md", "extra dot")
        .write("extra/.claude/rules/e.md", "extra rule")
        .write(
            "extra/CLAUDE.local.md",
            "additional dirs have no local file",
        )
        .write("mem/MEMORY.md", "- memory index");
    let mut cfg = t.cfg("repo/pkg");
    cfg.additional_directories = vec![t.path("extra")];
    cfg.memory_entry_points = vec![t.path("mem/MEMORY.md")];

    let chain = startup_chain(&cfg);
    use MemoryType::*;
    let expected: Vec<(String, MemoryType)> = [
        ("etc/claude-code/CLAUDE.md", Managed),
        ("etc/claude-code/.claude/rules/a/x.md", Managed),
        ("etc/claude-code/.claude/rules/b.md", Managed),
        ("home/.claude/CLAUDE.md", User),
        ("home/.claude/rules/u.md", User),
        ("CLAUDE.md", Project),
        ("repo/CLAUDE.md", Project),
        ("repo/.claude/CLAUDE.md", Project),
        ("repo/.claude/rules/r.md", Project),
        ("repo/CLAUDE.local.md", Local),
        ("repo/pkg/CLAUDE.md", Project),
        ("repo/pkg/CLAUDE.local.md", Local),
        ("extra/CLAUDE.md", AdditionalDir),
        ("extra/.claude/CLAUDE.md", AdditionalDir),
        ("extra/.claude/rules/e.md", AdditionalDir),
        ("mem/MEMORY.md", Memory),
    ]
    .into_iter()
    .map(|(p, k)| (p.to_string(), k))
    .collect();
    assert_eq!(t.rel_kinds(&chain), expected);
    assert!(
        chain
            .iter()
            .all(|f| f.globs.is_none() && f.parent.is_none())
    );

    let text = render_claude_md(&chain).expect("rendered");
    assert!(text.starts_with(CLAUDE_MD_PREAMBLE));
    assert!(text.contains("extra rule"));
    assert!(
        !text.contains("memory index"),
        "memory entry points are not rendered"
    );
    assert!(!text.contains("managed cond"));
}

#[test]
fn includes_follow_their_includer_depth_first() {
    let t = Tree::new();
    t.write("repo/CLAUDE.md", "top\n@a.md\n@./b.md\n")
        .write("repo/a.md", "a\n@sub/a1.md\n")
        .write("repo/sub/a1.md", "a1 @../b.md")
        .write("repo/b.md", "b")
        .write("repo/CLAUDE.local.md", "local");
    let chain = startup_chain(&t.cfg("repo"));
    assert_eq!(
        t.rel(&chain),
        vec![
            "repo/CLAUDE.md",
            "repo/a.md",
            "repo/sub/a1.md",
            "repo/b.md",
            "repo/CLAUDE.local.md"
        ]
    );
    let parents: Vec<Option<PathBuf>> = chain.iter().map(|f| f.parent.clone()).collect();
    assert_eq!(
        parents,
        vec![
            None,
            Some(t.path("repo/CLAUDE.md")),
            Some(t.path("repo/a.md")),
            Some(t.path("repo/sub/a1.md")),
            None,
        ]
    );
    assert!(chain[1..4].iter().all(|f| f.kind == MemoryType::Project));
}

#[test]
fn includes_in_code_are_ignored() {
    let t = Tree::new();
    t.write(
        "repo/CLAUDE.md",
        "Run `@inline.md` like so:\n\n```md\n@fenced.md\n```\n\n    @indented.md\n",
    )
    .write("repo/inline.md", "x")
    .write("repo/fenced.md", "x")
    .write("repo/indented.md", "x");
    assert_eq!(
        t.rel(&startup_chain(&t.cfg("repo"))),
        vec!["repo/CLAUDE.md"]
    );
}

#[test]
fn include_depth_stops_after_five() {
    let t = Tree::new();
    t.write("repo/CLAUDE.md", "d0 @d1.md");
    for depth in 1..=6 {
        t.write(
            &format!("repo/d{depth}.md"),
            &format!("d{depth} @d{}.md", depth + 1),
        );
    }
    let got = t.rel(&startup_chain(&t.cfg("repo")));
    assert_eq!(
        got,
        vec![
            "repo/CLAUDE.md",
            "repo/d1.md",
            "repo/d2.md",
            "repo/d3.md",
            "repo/d4.md",
            "repo/d5.md"
        ]
    );
}

#[test]
fn include_cycle_terminates_with_each_file_once() {
    let t = Tree::new();
    t.write("repo/CLAUDE.md", "@a.md")
        .write("repo/a.md", "a @b.md")
        .write("repo/b.md", "b @a.md @CLAUDE.md @./a.md");
    assert_eq!(
        t.rel(&startup_chain(&t.cfg("repo"))),
        vec!["repo/CLAUDE.md", "repo/a.md", "repo/b.md"]
    );
}

#[test]
fn missing_and_binary_includes_are_ignored() {
    let t = Tree::new();
    t.write("repo/CLAUDE.md", "@missing.md @logo.png @docs")
        .write("repo/logo.png", "not really")
        .mkdir("repo/docs");
    assert_eq!(
        t.rel(&startup_chain(&t.cfg("repo"))),
        vec!["repo/CLAUDE.md"]
    );
}

#[cfg(unix)]
#[test]
fn external_includes_need_approval_except_for_user_files() {
    let t = Tree::new();
    t.write("repo/CLAUDE.md", "@../outside/x.md @linked.md")
        .write("repo/CLAUDE.local.md", "@../outside/local.md")
        .write("outside/x.md", "x")
        .write("outside/local.md", "l")
        .write("outside/via-link.md", "v")
        .symlink("../outside/via-link.md", "repo/linked.md")
        .write("home/.claude/CLAUDE.md", "@~/../outside/user.md")
        .write("outside/user.md", "u");
    let mut cfg = t.cfg("repo");
    assert_eq!(
        t.rel(&startup_chain(&cfg)),
        vec![
            "home/.claude/CLAUDE.md",
            "outside/user.md",
            "repo/CLAUDE.md",
            "repo/CLAUDE.local.md"
        ]
    );
    cfg.allow_external_includes = true;
    assert_eq!(
        t.rel(&startup_chain(&cfg)),
        vec![
            "home/.claude/CLAUDE.md",
            "outside/user.md",
            "repo/CLAUDE.md",
            "outside/x.md",
            "repo/linked.md",
            "repo/CLAUDE.local.md",
            "outside/local.md",
        ]
    );
}

#[test]
fn excludes_skip_user_and_project_but_never_managed() {
    let t = Tree::new();
    t.write("etc/claude-code/CLAUDE.md", "managed")
        .write("home/.claude/CLAUDE.md", "user")
        .write("repo/CLAUDE.md", "project @inc.md")
        .write("repo/inc.md", "reachable only through an excluded file")
        .write("repo/CLAUDE.local.md", "local @notes.md")
        .write("repo/notes.md", "included from local, excluded by pattern")
        .write("repo/.claude/rules/keep.md", "kept");
    let mut cfg = t.cfg("repo");
    cfg.excludes = vec![
        format!("{}/**/CLAUDE.md", t.root().display()),
        "**/notes.md".to_string(),
    ];
    assert_eq!(
        t.rel(&startup_chain(&cfg)),
        vec![
            "etc/claude-code/CLAUDE.md",
            "repo/.claude/rules/keep.md",
            "repo/CLAUDE.local.md"
        ]
    );
}

#[test]
fn nested_worktree_hides_checked_in_files_of_the_main_checkout() {
    let t = Tree::new();
    let wt = "repo/.claude/worktrees/feat";
    t.mkdir("repo/.git/worktrees/feat")
        .write("repo/.git/worktrees/feat/commondir", "../..\n")
        .write(
            &format!("{wt}/.git"),
            &format!("gitdir: {}\n", t.path("repo/.git/worktrees/feat").display()),
        )
        .write("CLAUDE.md", "above the main checkout")
        .write("repo/CLAUDE.md", "main copy")
        .write("repo/.claude/CLAUDE.md", "main dot copy")
        .write("repo/.claude/rules/r.md", "main rule copy")
        .write(
            "repo/.claude/rules/c.md",
            "---\npaths: \"*.rs\"\n---\nmain cond copy",
        )
        .write("repo/CLAUDE.local.md", "local, main checkout only")
        .write(&format!("{wt}/CLAUDE.md"), "worktree copy")
        .write(&format!("{wt}/.claude/rules/r.md"), "worktree rule")
        .write(
            &format!("{wt}/.claude/rules/c.md"),
            "---\npaths: \"*.rs\"\n---\nwt cond",
        );
    let cfg = t.cfg(wt);
    assert_eq!(
        t.rel(&startup_chain(&cfg)),
        vec![
            "CLAUDE.md".to_string(),
            "repo/CLAUDE.local.md".to_string(),
            format!("{wt}/CLAUDE.md"),
            format!("{wt}/.claude/rules/r.md"),
        ]
    );
    let touched = t.path(&format!("{wt}/src/lib.rs"));
    assert_eq!(
        t.rel(&nested_for_path(&cfg, &touched, &none(), &none())),
        vec![format!("{wt}/.claude/rules/c.md")]
    );
}

#[test]
fn conditional_rule_loads_once_on_matching_touch() {
    let t = Tree::new();
    t.write(
        "repo/.claude/rules/ts.md",
        "---\npaths:\n  - \"src/**/*.ts\"\n---\nTS rules\n",
    )
    .write("repo/.claude/rules/plain.md", "always");
    let cfg = t.cfg("repo");
    assert_eq!(
        t.rel(&startup_chain(&cfg)),
        vec!["repo/.claude/rules/plain.md"]
    );
    assert_eq!(
        t.rel(&conditional_rules(&cfg)),
        vec!["repo/.claude/rules/ts.md"]
    );

    let touched = t.path("repo/src/api/handler.ts");
    let first = nested_for_path(&cfg, &touched, &none(), &none());
    assert_eq!(t.rel(&first), vec!["repo/.claude/rules/ts.md"]);
    assert_eq!(first[0].content, "TS rules\n");
    assert_eq!(first[0].globs, Some(vec!["src/**/*.ts".to_string()]));

    let loaded: BTreeSet<PathBuf> = first.iter().map(|f| f.path.clone()).collect();
    assert!(nested_for_path(&cfg, &touched, &loaded, &none()).is_empty());
    let miss = t.path("repo/docs/readme.md");
    assert!(nested_for_path(&cfg, &miss, &none(), &none()).is_empty());
}

#[test]
fn managed_and_user_conditional_rules_match_relative_to_cwd() {
    let t = Tree::new();
    t.write(
        "etc/claude-code/.claude/rules/m.md",
        "---\npaths: \"*.rs\"\n---\nmanaged rs",
    )
    .write(
        "home/.claude/rules/u.md",
        "---\npaths: crates/\n---\nuser crates",
    )
    .write(
        "repo/.claude/rules/p.md",
        "---\npaths: \"*.rs\"\n---\nproject rs",
    )
    .mkdir("repo/crates/core");
    let cfg = t.cfg("repo");
    let touched = t.path("repo/crates/core/lib.rs");
    assert_eq!(
        t.rel(&nested_for_path(&cfg, &touched, &none(), &none())),
        vec![
            "etc/claude-code/.claude/rules/m.md",
            "home/.claude/rules/u.md",
            "repo/.claude/rules/p.md"
        ]
    );
    // Relative touched paths are taken against the cwd.
    let relative = nested_for_path(&cfg, std::path::Path::new("main.rs"), &none(), &none());
    assert_eq!(
        t.rel(&relative),
        vec![
            "etc/claude-code/.claude/rules/m.md",
            "repo/.claude/rules/p.md"
        ]
    );
}

#[test]
fn touching_outside_cwd_only_matches_rules_whose_base_contains_it() {
    let t = Tree::new();
    t.write(
        "repo/.claude/rules/lib.md",
        "---\npaths: lib\n---\nlib rule",
    )
    .write(
        "etc/claude-code/.claude/rules/m.md",
        "---\npaths: \"**/*.ts\"\n---\nmanaged",
    )
    .write("repo/lib/CLAUDE.md", "sibling of cwd: never nested")
    .mkdir("repo/app");
    let cfg = t.cfg("repo/app");
    let touched = t.path("repo/lib/x.ts");
    assert_eq!(
        t.rel(&nested_for_path(&cfg, &touched, &none(), &none())),
        vec!["repo/.claude/rules/lib.md"]
    );
}

#[test]
fn nested_instruction_files_arrive_on_first_touch() {
    let t = Tree::new();
    t.write("repo/CLAUDE.md", "root")
        .write("repo/pkg/CLAUDE.md", "pkg @guide.md")
        .write("repo/pkg/guide.md", "pkg guide")
        .write("repo/pkg/.claude/rules/u.md", "pkg rule")
        .write(
            "repo/pkg/.claude/rules/c.md",
            "---\npaths: \"*.rs\"\n---\npkg rs",
        )
        .write(
            "repo/pkg/.claude/rules/d.md",
            "---\npaths: \"*.md\"\n---\npkg md",
        )
        .write("repo/pkg/CLAUDE.local.md", "pkg local")
        .write("repo/pkg/src/CLAUDE.md", "src");
    let cfg = t.cfg("repo");
    let startup = startup_chain(&cfg);
    assert_eq!(t.rel(&startup), vec!["repo/CLAUDE.md"]);

    let touched = t.path("repo/pkg/src/lib.rs");
    let mut loaded: BTreeSet<PathBuf> = startup.iter().map(|f| f.path.clone()).collect();
    let first = nested_for_path(&cfg, &touched, &loaded, &none());
    assert_eq!(
        t.rel(&first),
        vec![
            "repo/pkg/CLAUDE.md",
            "repo/pkg/guide.md",
            "repo/pkg/.claude/rules/c.md",
            "repo/pkg/.claude/rules/u.md",
            "repo/pkg/CLAUDE.local.md",
            "repo/pkg/src/CLAUDE.md",
        ]
    );
    loaded.extend(first.iter().map(|f| f.path.clone()));
    assert!(nested_for_path(&cfg, &touched, &loaded, &none()).is_empty());
    // A sibling file only brings what is new for it.
    let doc = t.path("repo/pkg/README.md");
    assert_eq!(
        t.rel(&nested_for_path(&cfg, &doc, &loaded, &none())),
        vec!["repo/pkg/.claude/rules/d.md"]
    );
}

#[test]
fn files_already_read_are_not_injected() {
    let t = Tree::new();
    t.write("repo/pkg/CLAUDE.md", "pkg @guide.md")
        .write("repo/pkg/guide.md", "guide");
    let cfg = t.cfg("repo");
    let read: BTreeSet<PathBuf> = [t.path("repo/pkg/CLAUDE.md")].into();
    let got = nested_for_path(&cfg, &t.path("repo/pkg/main.rs"), &none(), &read);
    assert_eq!(t.rel(&got), vec!["repo/pkg/guide.md"]);
}

#[test]
fn double_star_paths_are_unconditional_and_malformed_front_matter_is_stripped() {
    let t = Tree::new();
    t.write("repo/.claude/rules/all.md", "---\npaths: \"**\"\n---\nall")
        .write(
            "repo/.claude/rules/bad.md",
            "---\npaths: [oops\n---\nbad yaml body",
        );
    let chain = startup_chain(&t.cfg("repo"));
    assert_eq!(
        t.rel(&chain),
        vec!["repo/.claude/rules/all.md", "repo/.claude/rules/bad.md"]
    );
    assert_eq!(chain[0].content, "all");
    assert_eq!(chain[1].content, "bad yaml body");
    assert!(chain.iter().all(|f| f.globs.is_none()));
}

#[test]
fn conditional_rule_includes_travel_with_their_rule() {
    let t = Tree::new();
    t.write(
        "repo/.claude/rules/api.md",
        "---\npaths: api\n---\nAPI @../api-detail.md",
    )
    .write(
        "repo/.claude/api-detail.md",
        "---\npaths: other\n---\ndetail",
    );
    let cfg = t.cfg("repo");
    assert!(t.rel(&startup_chain(&cfg)).is_empty());
    let got = nested_for_path(&cfg, &t.path("repo/api/v1.rs"), &none(), &none());
    assert_eq!(
        t.rel(&got),
        vec!["repo/.claude/rules/api.md", "repo/.claude/api-detail.md"]
    );
    assert_eq!(got[1].globs, Some(vec!["api".to_string()]));
    assert_eq!(got[1].parent, Some(t.path("repo/.claude/rules/api.md")));
    assert_eq!(got[1].content, "detail");
}

#[test]
fn rules_order_is_deterministic() {
    let t = Tree::new();
    for name in [
        "zeta.md", "b/2.md", "Alpha.md", "b/1.md", "b-c.md", "a.md", "b/a/0.md",
    ] {
        t.write(&format!("repo/.claude/rules/{name}"), name);
    }
    let cfg = t.cfg("repo");
    let first = t.rel(&startup_chain(&cfg));
    assert_eq!(first, t.rel(&startup_chain(&cfg)));
    let names: Vec<String> = first
        .iter()
        .map(|p| p.trim_start_matches("repo/.claude/rules/").to_string())
        .collect();
    assert_eq!(
        names,
        vec![
            "Alpha.md", "a.md", "b/1.md", "b/2.md", "b/a/0.md", "b-c.md", "zeta.md"
        ]
    );
}

#[cfg(unix)]
#[test]
fn symlink_cycles_in_rules_are_safe() {
    let t = Tree::new();
    t.write("repo/.claude/rules/a.md", "a")
        .write("repo/.claude/rules/sub/b.md", "b")
        .symlink("..", "repo/.claude/rules/sub/up")
        .symlink(".", "repo/.claude/rules/self")
        .symlink("a.md", "repo/.claude/rules/alias.md")
        .write("shared/s.md", "shared")
        .symlink("../../../shared", "repo/.claude/rules/linked");
    // A link leading out of the workspace is confined like an include ...
    assert_eq!(
        t.rel(&startup_chain(&t.cfg("repo"))),
        vec!["repo/.claude/rules/a.md", "repo/.claude/rules/sub/b.md"]
    );
    // ... unless the user allowed external includes.
    let mut cfg = t.cfg("repo");
    cfg.allow_external_includes = true;
    assert_eq!(
        t.rel(&startup_chain(&cfg)),
        vec![
            "repo/.claude/rules/a.md",
            "repo/.claude/rules/linked/s.md",
            "repo/.claude/rules/sub/b.md"
        ]
    );
}

#[cfg(unix)]
#[test]
fn rule_and_claude_md_links_out_of_the_workspace_are_refused() {
    let t = Tree::new();
    t.write("outside/secret.md", "SECRET")
        .write("repo/.claude/rules/ok.md", "fine")
        .symlink("../../../outside/secret.md", "repo/.claude/rules/x.md")
        .symlink("../outside/secret.md", "repo/CLAUDE.local.md")
        .write("home/.claude/rules/mine.md", "user rule")
        .symlink("../../../outside/secret.md", "home/.claude/rules/linked.md");
    let chain = startup_chain(&t.cfg("repo"));
    // The user's own rules may link anywhere; the checkout's may not.
    assert_eq!(
        t.rel(&chain),
        vec![
            "home/.claude/rules/linked.md",
            "home/.claude/rules/mine.md",
            "repo/.claude/rules/ok.md"
        ]
    );
}

#[test]
fn monorepo_shaped_tree() {
    let t = Tree::new();
    t.write("home/.claude/CLAUDE.md", "Prefer small commits.\n")
        .write("mono/CLAUDE.md", "@AGENTS.md\n")
        .write(
            "mono/AGENTS.md",
            "# Agents guide\n\nThis monorepo publishes `@scope/core` and depends on \
             @types/node and @scope/core at runtime.\n\n- Run `pnpm -r test` before \
             pushing.\n- Email owners@example.com for access.\n",
        )
        .write("mono/.claude/rules/style.md", "Use 2-space indentation.\n")
        .write(
            "mono/.claude/rules/web-ui.md",
            "---\npaths: packages/web/src/**/*.tsx\n---\nComponents are function components.\n",
        )
        .write(
            "mono/packages/api/CLAUDE.md",
            "API: every handler validates input.\n",
        )
        .write(
            "mono/packages/web/CLAUDE.md",
            "Web: use the design tokens.\n",
        )
        .write("mono/packages/web/src/App.tsx", "export {}\n");
    let cfg = t.cfg("mono");

    let startup = startup_chain(&cfg);
    assert_eq!(
        t.rel(&startup),
        vec![
            "home/.claude/CLAUDE.md",
            "mono/CLAUDE.md",
            "mono/AGENTS.md",
            "mono/.claude/rules/style.md"
        ]
    );
    let rendered = render_claude_md(&startup).expect("rendered");
    insta::assert_snapshot!("monorepo_claude_md", t.redact(&rendered));

    let mut loaded: BTreeSet<PathBuf> = startup.iter().map(|f| f.path.clone()).collect();
    let api = nested_for_path(
        &cfg,
        &t.path("mono/packages/api/src/server.ts"),
        &loaded,
        &none(),
    );
    assert_eq!(t.rel(&api), vec!["mono/packages/api/CLAUDE.md"]);
    loaded.extend(api.iter().map(|f| f.path.clone()));

    let web = nested_for_path(
        &cfg,
        &t.path("mono/packages/web/src/App.tsx"),
        &loaded,
        &none(),
    );
    assert_eq!(
        t.rel(&web),
        vec![
            "mono/packages/web/CLAUDE.md",
            "mono/.claude/rules/web-ui.md"
        ]
    );
    loaded.extend(web.iter().map(|f| f.path.clone()));
    let again = nested_for_path(
        &cfg,
        &t.path("mono/packages/web/src/App.tsx"),
        &loaded,
        &none(),
    );
    assert!(again.is_empty());
}
