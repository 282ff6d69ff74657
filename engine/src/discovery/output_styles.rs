//! Output styles, as Claude Code has them: `.claude/output-styles/*.md` of the project,
//! then of the user (`~/.claude/output-styles`), then the styles ctxd ships. A file's
//! front matter may give `name` (else the file's stem), `description` and
//! `keep-coding-instructions`; its body is the style's prompt.
//!
//! A project's styles arrive with its checkout, so they follow the rule of its hooks:
//! they are read only once the user trusted the project (`ctx trust`), and even then a
//! style file whose canonical path leaves the project (a link to `~/.aws/credentials`)
//! is refused: its text would go to the provider in the system prompt.

use std::path::Path;

use super::front_matter;
use ctxd_pipeline::limits::MAX_STYLE_BYTES;
use ctxd_pipeline::limits::MAX_STYLE_FILES;
pub(crate) use ctxd_pipeline::system::OutputStyle;

/// The styles ctxd ships (in its own words). `default` is no style at all.
fn builtin(name: &str) -> Option<OutputStyle> {
    let (name, description, prompt) = match name.to_ascii_lowercase().as_str() {
        "explanatory" => (
            "Explanatory",
            "Explains the choices it makes while it works",
            "Besides doing the task, help the user understand the codebase and your choices. \
             Before or after a change, add a short \"Insight\" note (two or three points) on \
             why the code is shaped as it is or why you chose this approach. Keep the notes \
             specific to this project, not general programming advice.",
        ),
        "learning" => (
            "Learning",
            "Leaves small, meaningful pieces for the user to write",
            "Work with the user as a teacher would. Do the routine parts yourself, but where a \
             piece of code carries a real decision (a few lines of logic, a design choice), \
             stop and ask the user to write it: mark the spot with a TODO(human) comment, say \
             what it must do and what to consider, and wait for them. Explain briefly why the \
             piece matters.",
        ),
        _ => return None,
    };
    Some(OutputStyle {
        name: name.into(),
        description: Some(description.into()),
        prompt: prompt.into(),
        keep_coding_instructions: true,
    })
}

/// The style named `name` (compared without case): the project's when `project_trusted`,
/// else the user's, else a built-in one. `default` and unknown names give `None`.
pub(crate) fn find(
    name: &str,
    cwd: &Path,
    user_home: &Path,
    project_trusted: bool,
) -> Option<OutputStyle> {
    if name.eq_ignore_ascii_case("default") {
        return None;
    }
    let folder = |owner: &Path| owner.join(".claude").join("output-styles");
    if project_trusted && let Some(style) = in_folder(&folder(cwd), name, Some(cwd)) {
        return Some(style);
    }
    if let Some(style) = in_folder(&folder(user_home), name, None) {
        return Some(style);
    }
    builtin(name)
}

/// The style of that name in `folder`; with `confined_to`, files whose canonical path
/// leaves that directory are not read.
fn in_folder(folder: &Path, name: &str, confined_to: Option<&Path>) -> Option<OutputStyle> {
    let mut files: Vec<_> = std::fs::read_dir(folder)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.sort();
    if files.len() > MAX_STYLE_FILES {
        tracing::warn!(folder = %folder.display(), limit = MAX_STYLE_FILES, "too many output styles; the rest are not read");
        files.truncate(MAX_STYLE_FILES);
    }
    files.into_iter().find_map(|path| {
        let style = read(&path, confined_to)?;
        style.name.eq_ignore_ascii_case(name).then_some(style)
    })
}

fn read(path: &Path, confined_to: Option<&Path>) -> Option<OutputStyle> {
    let raw = match confined_to {
        Some(root) => {
            ctxd_fs::safe_read::read_text_within(path, root, MAX_STYLE_BYTES, "MAX_STYLE_BYTES")
        }
        None => ctxd_fs::safe_read::read_text(path, MAX_STYLE_BYTES, "MAX_STYLE_BYTES"),
    };
    let raw = match raw {
        Ok(raw) => raw,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "output style not read");
            return None;
        }
    };
    let stem = path.file_stem()?.to_string_lossy().to_string();
    let (meta, body) = match front_matter::split(&raw) {
        Some((yaml, body)) => (
            serde_norway::from_str::<serde_norway::Value>(yaml)
                .unwrap_or(serde_norway::Value::Null),
            body,
        ),
        None => (serde_norway::Value::Null, raw.as_str()),
    };
    let text = |key: &str| {
        meta.get(key)
            .and_then(serde_norway::Value::as_str)
            .map(str::to_string)
    };
    Some(OutputStyle {
        name: text("name").unwrap_or(stem),
        description: text("description"),
        prompt: body.trim().to_string(),
        keep_coding_instructions: meta
            .get("keep-coding-instructions")
            .and_then(serde_norway::Value::as_bool)
            .unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_wins_over_the_user_and_both_over_the_builtins() {
        let dir = tempfile::tempdir().unwrap();
        let (project, user) = (dir.path().join("p"), dir.path().join("u"));
        for (owner, text) in [
            (
                &project,
                "---\nname: Terse\ndescription: Few words\n---\nAnswer in one line.\n",
            ),
            (
                &user,
                "---\nname: terse\nkeep-coding-instructions: true\n---\nUser's terse.\n",
            ),
        ] {
            let folder = owner.join(".claude/output-styles");
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(folder.join("t.md"), text).unwrap();
        }
        std::fs::write(
            user.join(".claude/output-styles/Pirate.md"),
            "Talk like a pirate.",
        )
        .unwrap();
        let terse = find("TERSE", &project, &user, true).unwrap();
        assert_eq!(terse.name, "Terse");
        assert_eq!(terse.prompt, "Answer in one line.");
        assert_eq!(terse.description.as_deref(), Some("Few words"));
        assert!(!terse.keep_coding_instructions);
        let pirate = find("pirate", &project, &user, true).unwrap();
        assert_eq!(
            (pirate.name.as_str(), pirate.prompt.as_str()),
            ("Pirate", "Talk like a pirate.")
        );
        assert_eq!(
            find("explanatory", &project, &user, true).unwrap().name,
            "Explanatory"
        );
        assert!(
            find("learning", &project, &user, true)
                .unwrap()
                .keep_coding_instructions
        );
        assert!(find("default", &project, &user, true).is_none());
        assert!(find("nope", &project, &user, true).is_none());
    }

    #[test]
    fn an_untrusted_project_has_no_styles_and_a_trusted_one_none_that_links_out() {
        let dir = tempfile::tempdir().unwrap();
        let (project, user) = (dir.path().join("p"), dir.path().join("u"));
        for owner in [&project, &user] {
            std::fs::create_dir_all(owner.join(".claude/output-styles")).unwrap();
        }
        let styles = project.join(".claude/output-styles");
        std::fs::write(styles.join("terse.md"), "Project's terse.").unwrap();
        std::fs::write(user.join(".claude/output-styles/terse.md"), "User's terse.").unwrap();
        let secret = dir.path().join("credentials");
        std::fs::write(&secret, "aws_secret_access_key = x").unwrap();
        std::os::unix::fs::symlink(&secret, styles.join("leak.md")).unwrap();
        let prompt =
            |name: &str, trusted: bool| find(name, &project, &user, trusted).map(|s| s.prompt);
        assert_eq!(prompt("terse", false).as_deref(), Some("User's terse."));
        assert_eq!(prompt("terse", true).as_deref(), Some("Project's terse."));
        assert_eq!(prompt("leak", false), None);
        assert_eq!(prompt("leak", true), None);
    }
}
