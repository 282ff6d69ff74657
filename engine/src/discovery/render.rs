//! The `# claudeMd` text of `messages[0]`.

use super::types::{InstructionFile, MemoryType};

/// Stands before the files so the model treats them as binding, not as background.
pub const CLAUDE_MD_PREAMBLE: &str = "The user and the project have written the \
instructions below for this work. They take precedence over your default behaviour: \
follow them exactly as written.";

/// Preamble plus one block per renderable file, or `None` when no file qualifies.
/// Conditional rules, memory indexes and `.claude-injected-*` files never render here,
/// whatever the caller passes in.
pub fn render_claude_md(files: &[InstructionFile]) -> Option<String> {
    let blocks: Vec<String> = files
        .iter()
        .filter(|f| !f.is_conditional() && f.kind != MemoryType::Memory && !f.is_injected())
        .filter_map(render_block)
        .collect();
    if blocks.is_empty() {
        return None;
    }
    Some(format!("{CLAUDE_MD_PREAMBLE}\n\n{}", blocks.join("\n\n")))
}

/// `Contents of PATH (TYPE):` and the file text, or `None` for a blank file. Also the
/// shape a `nested_memory` attachment can use for one file.
pub fn render_block(file: &InstructionFile) -> Option<String> {
    let content = trim_blank_edges(&file.content);
    if content.is_empty() {
        return None;
    }
    // AGENTS.md is written for any coding agent, not for this one in particular: say so.
    let label = if file
        .path
        .file_name()
        .is_some_and(|n| n == super::load::AGENTS_MD)
    {
        format!("AGENTS.md, {}", file.kind.description())
    } else {
        file.kind.description().to_string()
    };
    Some(format!(
        "Contents of {} ({label}):\n\n{content}",
        file.path.display()
    ))
}

/// Drops blank lines around the text but keeps the indentation of its first line,
/// which may be an indented code block.
fn trim_blank_edges(text: &str) -> &str {
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        if !line.trim().is_empty() {
            break;
        }
        start += line.len();
    }
    text[start..].trim_end()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn file(path: &str, kind: MemoryType, content: &str) -> InstructionFile {
        InstructionFile {
            path: PathBuf::from(path),
            kind,
            content: content.to_string(),
            parent: None,
            globs: None,
        }
    }

    #[test]
    fn nothing_to_render() {
        assert_eq!(render_claude_md(&[]), None);
        let conditional = InstructionFile {
            globs: Some(vec!["src".into()]),
            ..file("/r/.claude/rules/a.md", MemoryType::Project, "x")
        };
        let only_skipped = [
            conditional,
            file("/m/MEMORY.md", MemoryType::Memory, "x"),
            file("/r/CLAUDE.md", MemoryType::Project, " \n\n"),
            file("/r/.claude-injected-x.md", MemoryType::Project, "x"),
        ];
        assert_eq!(render_claude_md(&only_skipped), None);
    }

    #[test]
    fn blocks_keep_leading_indentation() {
        let got = render_claude_md(&[
            file(
                "/r/CLAUDE.md",
                MemoryType::Project,
                "\n\n    code\nprose\n\n",
            ),
            file("/r/CLAUDE.local.md", MemoryType::Local, "mine"),
        ])
        .expect("rendered");
        assert_eq!(
            got,
            format!(
                "{CLAUDE_MD_PREAMBLE}\n\nContents of /r/CLAUDE.md ({}):\n\n    code\nprose\n\n\
                 Contents of /r/CLAUDE.local.md ({}):\n\nmine",
                MemoryType::Project.description(),
                MemoryType::Local.description()
            )
        );
    }
}
