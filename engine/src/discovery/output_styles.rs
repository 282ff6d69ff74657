//! Output styles, as Claude Code has them: `.claude/output-styles/*.md` of the project,
//! then of the user (`~/.claude/output-styles`), then the styles ctxd ships. A file's
//! front matter may give `name` (else the file's stem), `description` and
//! `keep-coding-instructions`; its body is the style's prompt.

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

/// The style named `name` (compared without case): the project's, else the user's, else
/// a built-in one. `default` and unknown names give `None`.
pub(crate) fn find(name: &str, cwd: &Path, user_home: &Path) -> Option<OutputStyle> {
    if name.eq_ignore_ascii_case("default") {
        return None;
    }
    for owner in [cwd, user_home] {
        if let Some(style) = in_folder(&owner.join(".claude").join("output-styles"), name) {
            return Some(style);
        }
    }
    builtin(name)
}

fn in_folder(folder: &Path, name: &str) -> Option<OutputStyle> {
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
        let style = read(&path)?;
        style.name.eq_ignore_ascii_case(name).then_some(style)
    })
}

fn read(path: &Path) -> Option<OutputStyle> {
    let raw = match crate::safe_read::read_text(path, MAX_STYLE_BYTES, "MAX_STYLE_BYTES") {
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
        let terse = find("TERSE", &project, &user).unwrap();
        assert_eq!(terse.name, "Terse");
        assert_eq!(terse.prompt, "Answer in one line.");
        assert_eq!(terse.description.as_deref(), Some("Few words"));
        assert!(!terse.keep_coding_instructions);
        let pirate = find("pirate", &project, &user).unwrap();
        assert_eq!(
            (pirate.name.as_str(), pirate.prompt.as_str()),
            ("Pirate", "Talk like a pirate.")
        );
        assert_eq!(
            find("explanatory", &project, &user).unwrap().name,
            "Explanatory"
        );
        assert!(
            find("learning", &project, &user)
                .unwrap()
                .keep_coding_instructions
        );
        assert!(find("default", &project, &user).is_none());
        assert!(find("nope", &project, &user).is_none());
    }
}
