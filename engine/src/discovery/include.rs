//! `@include` references inside instruction files.
//!
//! References are looked for only in Markdown text, so that examples in code spans and
//! code blocks (and HTML comments) are never mistaken for includes. The token grammar
//! follows Claude Code: an `@` at the start of a text run or after whitespace, then
//! everything up to the next whitespace or backslash, where `\ ` is an escaped space.

use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::paths;

/// Extensions an include may have; anything else could be binary. Files without an
/// extension (`Makefile`, `.editorconfig`) are allowed too.
#[rustfmt::skip]
const TEXT_EXTENSIONS: &[&str] = &[
    // prose and markup
    "md", "markdown", "mdx", "mdc", "txt", "text", "rst", "adoc", "asciidoc", "org", "tex",
    "bib", "html", "htm", "xml", "svg", "css", "scss", "sass", "less",
    // data and configuration
    "json", "jsonc", "json5", "jsonl", "ndjson", "yaml", "yml", "toml", "ini", "cfg", "conf",
    "config", "env", "properties", "csv", "tsv", "lock", "log", "diff", "patch", "graphql",
    "gql", "proto", "prisma", "sql", "tf", "tfvars", "hcl", "nix", "dhall", "cue",
    // shells and build files
    "sh", "bash", "zsh", "fish", "ps1", "psm1", "bat", "cmd", "mk", "make", "cmake", "gradle",
    "dockerfile", "containerfile", "bazel", "bzl", "just",
    // source code
    "rs", "ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs", "vue", "svelte", "astro", "py",
    "pyi", "ipynb", "rb", "go", "java", "kt", "kts", "scala", "sc", "groovy", "swift", "c", "h",
    "cc", "cpp", "cxx", "hpp", "hh", "hxx", "m", "mm", "cs", "fs", "fsx", "vb", "php", "pl",
    "pm", "lua", "r", "jl", "dart", "ex", "exs", "erl", "hrl", "hs", "elm", "clj", "cljs", "edn",
    "ml", "mli", "nim", "zig", "v", "sv", "vhd", "vhdl", "sol", "wgsl", "glsl", "hlsl",
];

/// Include targets of one file, resolved to absolute, lexically normalised paths, in
/// order of first appearance and without repeats. Nothing here touches the disk:
/// existence, extension and workspace checks belong to the caller.
pub fn include_targets(body: &str, includer: &Path, home: &Path) -> Vec<PathBuf> {
    let dir = includer.parent().unwrap_or(Path::new("/"));
    let mut tokens = Vec::new();
    let mut code_depth = 0usize;
    // pulldown-cmark splits one run of text into several events (at `_`, `*`, `\`…);
    // joining them keeps a token like `@a_b.md` in one piece.
    let mut run = String::new();
    for event in Parser::new_ext(body, Options::empty()) {
        match event {
            Event::Text(text) if code_depth == 0 => run.push_str(&text),
            Event::Start(Tag::CodeBlock(_)) => {
                scan(&std::mem::take(&mut run), &mut tokens);
                code_depth += 1;
            }
            Event::End(TagEnd::CodeBlock) => code_depth = code_depth.saturating_sub(1),
            _ => scan(&std::mem::take(&mut run), &mut tokens),
        }
    }
    scan(&run, &mut tokens);

    let mut out: Vec<PathBuf> = Vec::new();
    for token in tokens {
        if let Some(path) = resolve(&token, dir, home)
            && !out.contains(&path)
        {
            out.push(path);
        }
    }
    out
}

/// Raw tokens after each `@`, with `\ ` already turned into a space.
fn scan(text: &str, out: &mut Vec<String>) {
    let mut chars = text.chars().peekable();
    let mut at_boundary = true;
    while let Some(c) = chars.next() {
        if c != '@' || !at_boundary {
            at_boundary = c.is_whitespace();
            continue;
        }
        let mut token = String::new();
        while let Some(&next) = chars.peek() {
            if next == '\\' {
                let mut lookahead = chars.clone();
                lookahead.next();
                if lookahead.peek() == Some(&' ') {
                    chars.next();
                    chars.next();
                    token.push(' ');
                    continue;
                }
                break;
            }
            if next.is_whitespace() {
                break;
            }
            token.push(next);
            chars.next();
        }
        if !token.is_empty() {
            out.push(token);
        }
        at_boundary = false;
    }
}

/// Turns a token into a path, or rejects it as not path-shaped (`@@x`, `@#tag`, `@/`).
/// `@name` and `@./name` are relative to the including file's directory.
fn resolve(token: &str, includer_dir: &Path, home: &Path) -> Option<PathBuf> {
    let path = match token.find('#') {
        Some(at) => &token[..at],
        None => token,
    };
    let resolved = if let Some(rest) = path.strip_prefix("~/") {
        home.join(rest)
    } else if path.starts_with('/') {
        if path == "/" {
            return None;
        }
        PathBuf::from(path)
    } else {
        let first = path.chars().next()?;
        if !(first.is_ascii_alphanumeric() || matches!(first, '.' | '_' | '-')) {
            return None;
        }
        includer_dir.join(path)
    };
    Some(paths::normalize(&resolved))
}

pub(crate) fn has_text_extension(path: &Path) -> bool {
    match path.extension() {
        None => true,
        Some(ext) => ext
            .to_str()
            .is_some_and(|ext| TEXT_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(body: &str) -> Vec<String> {
        include_targets(
            body,
            Path::new("/repo/docs/CLAUDE.md"),
            Path::new("/home/u"),
        )
        .into_iter()
        .map(|p| p.display().to_string())
        .collect()
    }

    #[test]
    fn forms() {
        assert_eq!(
            targets("See @a.md and @./b.md, @~/c.md, @/abs/d.md and @../e.md.\n"),
            vec![
                "/repo/docs/a.md",
                "/repo/docs/b.md,",
                "/home/u/c.md,",
                "/abs/d.md",
                "/repo/e.md.",
            ]
        );
    }

    #[test]
    fn fragment_escape_and_dedupe() {
        assert_eq!(
            targets("@my\\ notes.md#intro\n\n@my\\ notes.md\n"),
            vec!["/repo/docs/my notes.md"]
        );
    }

    #[test]
    fn code_is_never_scanned() {
        let body = "Use `@inline.md` here.\n\n```\n@fenced.md\n```\n\n    @indented.md\n\n<!-- @comment.md -->\n\n@real.md\n";
        assert_eq!(targets(body), vec!["/repo/docs/real.md"]);
    }

    #[test]
    fn not_path_shaped() {
        assert!(targets("mail me@example.com, @@x, @#tag, @/ , @!bang").is_empty());
    }

    #[test]
    fn text_split_by_markdown_stays_one_token() {
        assert_eq!(targets("**@a_b_c.md**\n"), vec!["/repo/docs/a_b_c.md"]);
        assert_eq!(
            targets("- item @list.md\n  continued @next.md\n"),
            vec!["/repo/docs/list.md", "/repo/docs/next.md"]
        );
    }

    #[test]
    fn text_extensions() {
        assert!(has_text_extension(Path::new("/x/a.MD")));
        assert!(has_text_extension(Path::new("/x/Makefile")));
        assert!(has_text_extension(Path::new("/x/.editorconfig")));
        assert!(!has_text_extension(Path::new("/x/logo.png")));
        assert!(!has_text_extension(Path::new("/x/file.")));
    }
}
