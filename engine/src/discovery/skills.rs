//! Skill discovery: Claude Code's places, read from disk.
//!
//! * `~/.claude/skills/<name>/SKILL.md` (user);
//! * `<dir>/.claude/skills/<name>/SKILL.md` for every directory from the cwd up to the
//!   repository root (the nearest ancestor holding `.git`; outside a repository the cwd
//!   only), nearest first;
//! * the legacy `.claude/commands/**/*.md` of the same directories and of `~/.claude`
//!   (`commands/a/b.md` is `a:b`).
//!
//! A name is taken once, in that order: project skills (nearest directory first), user
//! skills, project commands, user commands. Front matter (`name`, `description`,
//! `when_to_use`/`when-to-use`, `paths`, `allowed-tools`, `model`) is YAML read with
//! serde_norway; a file whose front matter does not parse, is not a mapping, is not
//! closed, or gives a field the wrong type is skipped and reported, never fatal.
//! Without a description the first line of the body serves. `paths:` make a skill
//! conditional: its patterns match gitignore-style relative to its base (the directory
//! holding `.claude/` for project skills, the cwd for user skills).
//!
//! Files are read like instruction files: regular files only, at most
//! `MAX_SKILL_FILE_BYTES`, UTF-8; a project skill whose file resolves outside the
//! directory holding its `.claude/` (a symlink out of the repository) is skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_norway::Value;
use sha2::{Digest, Sha256};

use super::front_matter::{normalize_patterns, split, split_patterns};
use super::paths;
use ctxd_fs::safe_read;
use ctxd_pipeline::limits::{MAX_SKILL_FILE_BYTES, MAX_SKILLS};

/// Where a skill came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SkillSource {
    Project,
    User,
    ProjectCommand,
    UserCommand,
}

impl SkillSource {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SkillSource::Project => "project",
            SkillSource::User => "user",
            SkillSource::ProjectCommand => "project_command",
            SkillSource::UserCommand => "user_command",
        }
    }
}

/// One usable skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDef {
    /// What the `Skill` tool takes: the directory's name, or the command's path.
    pub name: String,
    /// Front matter `name`, when it says something else.
    pub(crate) display_name: Option<String>,
    pub(crate) description: String,
    pub(crate) when_to_use: Option<String>,
    /// `None`: unconditional.
    pub(crate) paths: Option<Vec<String>>,
    /// What `paths` are relative to.
    pub(crate) base: PathBuf,
    pub(crate) path: PathBuf,
    pub(crate) source: SkillSource,
    pub(crate) allowed_tools: Vec<String>,
    pub(crate) model: Option<String>,
    /// Fingerprint of what the listing says about the skill.
    pub(crate) sig: String,
}

/// Where to look, computed once per working directory.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SkillRoots {
    /// Directories whose `.claude/` may hold skills, nearest first (cwd … repo root).
    pub(crate) project_dirs: Vec<PathBuf>,
    pub(crate) user_home: PathBuf,
}

impl SkillRoots {
    pub fn new(cwd: &Path, user_home: &Path) -> SkillRoots {
        let cwd = paths::normalize(cwd);
        let repo = cwd
            .ancestors()
            .take(ctxd_pipeline::limits::MAX_ANCESTOR_DIRS)
            .find(|d| d.join(".git").exists());
        let project_dirs = match repo {
            Some(root) => cwd
                .ancestors()
                .take_while(|d| d.starts_with(root))
                .map(Path::to_path_buf)
                .collect(),
            None => vec![cwd.clone()],
        };
        SkillRoots {
            project_dirs,
            user_home: user_home.to_path_buf(),
        }
    }

    fn cwd(&self) -> &Path {
        self.project_dirs.first().map_or(Path::new("/"), |p| p)
    }
}

/// What one scan found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Scan {
    pub(crate) skills: Vec<SkillDef>,
    /// Files that could not be used, with the reason.
    pub(crate) skipped: Vec<(PathBuf, String)>,
    /// Directories whose changes can change the result: watch them.
    pub(crate) dirs: Vec<PathBuf>,
    /// Directories among `dirs` watched only for something to appear in them (a
    /// `.claude` folder, its `skills` or `commands`): their other changes do not matter.
    pub(crate) waits: BTreeMap<PathBuf, Vec<PathBuf>>,
}

impl Scan {
    /// Whether a change reported in `dir` can change what a new scan finds.
    pub(crate) fn matters(&self, dir: &Path) -> bool {
        match self.waits.get(dir) {
            Some(wanted) => wanted.iter().any(|w| w.exists()),
            None => self.dirs.iter().any(|d| d == dir),
        }
    }
}

struct Scanner<'a> {
    roots: &'a SkillRoots,
    out: Scan,
    names: BTreeSet<String>,
    dirs: BTreeSet<PathBuf>,
    budget: usize,
}

/// Finds every skill of `roots`.
pub(crate) fn scan(roots: &SkillRoots) -> Scan {
    let mut s = Scanner {
        roots,
        out: Scan::default(),
        names: BTreeSet::new(),
        dirs: BTreeSet::new(),
        budget: MAX_SKILLS,
    };
    for dir in &roots.project_dirs {
        s.skills_dir(dir, SkillSource::Project);
    }
    s.skills_dir(&roots.user_home, SkillSource::User);
    for dir in &roots.project_dirs {
        s.commands_dir(dir, SkillSource::ProjectCommand);
    }
    s.commands_dir(&roots.user_home, SkillSource::UserCommand);
    s.out.dirs = s.dirs.into_iter().collect();
    s.out
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    v.sort();
    v
}

impl Scanner<'_> {
    /// The directories to watch for `owner/.claude/KIND`: the folder when it exists
    /// (and its subfolders, added by the caller), else the nearest existing of
    /// `owner/.claude` and (for project directories) `owner`.
    fn watch_for(&mut self, owner: &Path, kind: &str, user: bool) -> bool {
        let folder = owner.join(".claude").join(kind);
        if folder.is_dir() {
            self.dirs.insert(folder);
            return true;
        }
        let claude = owner.join(".claude");
        if claude.is_dir() {
            self.dirs.insert(claude.clone());
            self.out.waits.entry(claude).or_default().push(folder);
        } else if !user && owner.is_dir() {
            self.dirs.insert(owner.to_path_buf());
            let waits = self.out.waits.entry(owner.to_path_buf()).or_default();
            if !waits.contains(&claude) {
                waits.push(claude);
            }
        }
        false
    }

    fn base_for(&self, owner: &Path, source: SkillSource) -> PathBuf {
        match source {
            SkillSource::Project | SkillSource::ProjectCommand => owner.to_path_buf(),
            SkillSource::User | SkillSource::UserCommand => self.roots.cwd().to_path_buf(),
        }
    }

    fn skills_dir(&mut self, owner: &Path, source: SkillSource) {
        let user = source == SkillSource::User;
        if !self.watch_for(owner, "skills", user) {
            return;
        }
        let folder = owner.join(".claude").join("skills");
        for entry in sorted_entries(&folder) {
            if !entry.is_dir() {
                continue;
            }
            self.dirs.insert(entry.clone());
            let Some(name) = entry.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let file = entry.join("SKILL.md");
            if !file.exists() {
                continue;
            }
            let base = self.base_for(owner, source);
            self.add(name.to_string(), &file, owner, base, source);
        }
    }

    fn commands_dir(&mut self, owner: &Path, source: SkillSource) {
        let user = source == SkillSource::UserCommand;
        if !self.watch_for(owner, "commands", user) {
            return;
        }
        let folder = owner.join(".claude").join("commands");
        let mut stack: Vec<(PathBuf, Vec<String>)> = vec![(folder, Vec::new())];
        let mut seen = BTreeSet::new();
        let started = std::time::Instant::now();
        while let Some((dir, prefix)) = stack.pop() {
            if started.elapsed() > ctxd_pipeline::limits::MAX_WALK_TIME {
                tracing::warn!(dir = %dir.display(), "commands folder walk ran out of time (MAX_WALK_TIME); the rest is skipped");
                break;
            }
            if prefix.len() > ctxd_pipeline::limits::MAX_WALK_DEPTH {
                tracing::warn!(dir = %dir.display(), limit = ctxd_pipeline::limits::MAX_WALK_DEPTH, "commands folder nested too deep (MAX_WALK_DEPTH); skipped");
                continue;
            }
            if !paths::canonical(&dir).is_some_and(|c| seen.insert(c)) {
                continue;
            }
            let mut subdirs = Vec::new();
            for entry in sorted_entries(&dir) {
                let Some(stem) = entry.file_stem().and_then(|n| n.to_str()) else {
                    continue;
                };
                if entry.is_dir() {
                    self.dirs.insert(entry.clone());
                    let mut p = prefix.clone();
                    p.push(stem.to_string());
                    subdirs.push((entry, p));
                } else if entry.extension().is_some_and(|x| x == "md") {
                    let mut p = prefix.clone();
                    p.push(stem.to_string());
                    let base = self.base_for(owner, source);
                    self.add(p.join(":"), &entry, owner, base, source);
                }
            }
            // Depth-first in name order.
            stack.extend(subdirs.into_iter().rev());
        }
    }

    fn add(&mut self, name: String, file: &Path, owner: &Path, base: PathBuf, source: SkillSource) {
        if self.names.contains(&name) {
            return;
        }
        if self.budget == 0 {
            if self
                .out
                .skipped
                .last()
                .is_none_or(|(_, r)| !r.starts_with("more than"))
            {
                self.out.skipped.push((
                    file.to_path_buf(),
                    format!("more than {MAX_SKILLS} skills (MAX_SKILLS); the rest are not read"),
                ));
            }
            return;
        }
        self.budget -= 1;
        if matches!(source, SkillSource::Project | SkillSource::ProjectCommand)
            && let Some(canonical) = paths::canonical(file)
            && paths::relative_within(owner, &canonical).is_none()
        {
            self.out.skipped.push((
                file.to_path_buf(),
                "the file links outside the project directory holding its .claude folder".into(),
            ));
            return;
        }
        let text = match safe_read::read_text(file, MAX_SKILL_FILE_BYTES, "MAX_SKILL_FILE_BYTES") {
            Ok(t) => t,
            Err(e) => {
                self.out
                    .skipped
                    .push((file.to_path_buf(), format!("cannot read it: {e}")));
                return;
            }
        };
        match parse(&name, &text) {
            Ok(mut def) => {
                def.base = base;
                def.path = file.to_path_buf();
                def.source = source;
                self.names.insert(name);
                self.out.skills.push(def);
            }
            Err(reason) => self.out.skipped.push((file.to_path_buf(), reason)),
        }
    }
}

fn string_field(map: &serde_norway::Mapping, keys: &[&str]) -> Result<Option<String>, String> {
    for k in keys {
        match map.get(*k) {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => return Ok(Some(s.trim().to_string())),
            Some(Value::Number(n)) => return Ok(Some(n.to_string())),
            Some(Value::Bool(b)) => return Ok(Some(b.to_string())),
            Some(other) => {
                return Err(format!(
                    "front matter field `{k}` must be a string, found {}",
                    yaml_kind(other)
                ));
            }
        }
    }
    Ok(None)
}

fn list_field(map: &serde_norway::Mapping, keys: &[&str]) -> Result<Option<Vec<String>>, String> {
    for k in keys {
        match map.get(*k) {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => return Ok(Some(split_patterns(s))),
            Some(Value::Sequence(items)) => {
                let mut out = Vec::new();
                for item in items {
                    match item {
                        Value::String(s) => out.extend(split_patterns(s)),
                        other => {
                            return Err(format!(
                                "front matter field `{k}` must list strings, found {}",
                                yaml_kind(other)
                            ));
                        }
                    }
                }
                return Ok(Some(out));
            }
            Some(other) => {
                return Err(format!(
                    "front matter field `{k}` must be a string or a list, found {}",
                    yaml_kind(other)
                ));
            }
        }
    }
    Ok(None)
}

fn yaml_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

fn first_line(body: &str) -> String {
    body.lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .to_string()
}

fn signature(name: &str, description: &str, when: Option<&str>) -> String {
    let mut h = Sha256::new();
    for part in [name, description, when.unwrap_or("")] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    hex::encode(&h.finalize()[..6])
}

/// A skill file's front matter and body; `Err` says why the file cannot be used.
pub fn parse(name: &str, raw: &str) -> Result<SkillDef, String> {
    let text = raw.strip_prefix('\u{feff}').unwrap_or(raw);
    let (map, body) = match split(text) {
        Some((yaml, body)) if yaml.trim().is_empty() => (serde_norway::Mapping::new(), body),
        Some((yaml, body)) => match serde_norway::from_str::<Value>(yaml) {
            Ok(Value::Mapping(m)) => (m, body),
            Ok(other) => {
                return Err(format!(
                    "front matter must be a mapping of fields, found {}",
                    yaml_kind(&other)
                ));
            }
            Err(e) => return Err(format!("front matter is not valid YAML: {e}")),
        },
        None if text.lines().next().is_some_and(|l| l.trim_end() == "---") => {
            return Err("front matter opens with `---` but is never closed".into());
        }
        None => (serde_norway::Mapping::new(), text),
    };
    let display_name = string_field(&map, &["name"])?.filter(|n| !n.is_empty() && n != name);
    let description = match string_field(&map, &["description"])? {
        Some(d) if !d.is_empty() => d,
        _ => first_line(body),
    };
    let when_to_use =
        string_field(&map, &["when_to_use", "when-to-use"])?.filter(|w| !w.is_empty());
    let paths = list_field(&map, &["paths"])?.and_then(normalize_patterns);
    let allowed_tools = match list_field(&map, &["allowed-tools", "allowed_tools"])? {
        // `Read, Grep` or `Read Grep`: Claude Code accepts both.
        Some(v) => v
            .iter()
            .flat_map(|s| s.split_whitespace())
            .map(str::to_string)
            .collect(),
        None => Vec::new(),
    };
    let model = string_field(&map, &["model"])?;
    let sig = signature(name, &description, when_to_use.as_deref());
    Ok(SkillDef {
        name: name.to_string(),
        display_name,
        description,
        when_to_use,
        paths,
        base: PathBuf::new(),
        path: PathBuf::new(),
        source: SkillSource::Project,
        allowed_tools,
        model,
        sig,
    })
}

/// The body of a skill file as invoked (front matter dropped), for the post-compact
/// restore; `None` when it cannot be read now.
pub(crate) fn body(path: &Path) -> Option<String> {
    let text = safe_read::read_text(path, MAX_SKILL_FILE_BYTES, "MAX_SKILL_FILE_BYTES").ok()?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text).to_string();
    Some(match split(&text) {
        Some((_, body)) => body.trim_start_matches(['\r', '\n']).to_string(),
        None => text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn front_matter_fields_and_fallbacks() {
        let d = parse(
            "review",
            "---\nname: Code review\ndescription: Review a change\nwhen-to-use: after edits\npaths: [\"src/**/*.rs\", \"docs/**\"]\nallowed-tools: Read, Grep\nmodel: haiku\n---\n# Review\nSteps.\n",
        )
        .unwrap();
        assert_eq!(d.display_name.as_deref(), Some("Code review"));
        assert_eq!(d.description, "Review a change");
        assert_eq!(d.when_to_use.as_deref(), Some("after edits"));
        assert_eq!(
            d.paths,
            Some(vec!["src/**/*.rs".to_string(), "docs".to_string()])
        );
        assert_eq!(d.allowed_tools, ["Read", "Grep"]);
        assert_eq!(d.model.as_deref(), Some("haiku"));
        let plain = parse("x", "# Do the thing\nbody").unwrap();
        assert_eq!(plain.description, "Do the thing");
        assert_eq!(plain.paths, None);
        assert_ne!(plain.sig, parse("x", "# Do another thing").unwrap().sig);
    }

    #[test]
    fn malformed_front_matter_is_refused_with_a_reason() {
        for (raw, why) in [
            ("---\ndescription: [unclosed\n---\nB", "not valid YAML"),
            ("---\n- a\n- b\n---\nB", "must be a mapping"),
            ("---\ndescription: ok\nno end\n", "never closed"),
            (
                "---\ndescription: {a: 1}\n---\nB",
                "`description` must be a string",
            ),
            ("---\npaths: [1, 2]\n---\nB", "`paths` must list strings"),
        ] {
            let e = parse("s", raw).unwrap_err();
            assert!(e.contains(why), "{raw:?}: {e}");
        }
    }

    #[test]
    fn places_order_and_precedence() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let repo = t.path().join("repo");
        let cwd = repo.join("pkg");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        for (dir, rel, text) in [
            (
                &cwd,
                ".claude/skills/review/SKILL.md",
                "---\ndescription: near\n---\n",
            ),
            (
                &repo,
                ".claude/skills/review/SKILL.md",
                "---\ndescription: far\n---\n",
            ),
            (
                &repo,
                ".claude/skills/lint/SKILL.md",
                "---\ndescription: lint\npaths: src/**\n---\n",
            ),
            (
                &home,
                ".claude/skills/mine/SKILL.md",
                "---\ndescription: mine\n---\n",
            ),
            (&repo, ".claude/commands/git/commit.md", "Commit nicely\n"),
            (
                &home,
                ".claude/commands/mine.md",
                "shadowed by the user skill\n",
            ),
            (
                &repo,
                ".claude/skills/bad/SKILL.md",
                "---\ndescription: [\n---\n",
            ),
            (
                &repo,
                ".claude/skills/empty-dir/README.md",
                "no SKILL.md here\n",
            ),
        ] {
            write(&dir.join(rel), text);
        }
        let roots = SkillRoots::new(&cwd, &home);
        assert_eq!(roots.project_dirs, vec![cwd.clone(), repo.clone()]);
        let s = scan(&roots);
        let got: Vec<(&str, &str, &str)> = s
            .skills
            .iter()
            .map(|d| (d.name.as_str(), d.description.as_str(), d.source.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("review", "near", "project"),
                ("lint", "lint", "project"),
                ("mine", "mine", "user"),
                ("git:commit", "Commit nicely", "project_command"),
            ]
        );
        assert_eq!(s.skills[1].base, repo);
        assert_eq!(
            s.skills[2].base, cwd,
            "user skills match relative to the cwd"
        );
        assert_eq!(s.skipped.len(), 1);
        assert!(s.skipped[0].0.ends_with("bad/SKILL.md"));
        assert!(s.dirs.contains(&repo.join(".claude/skills/review")));
        assert!(s.dirs.contains(&cwd.join(".claude/skills")));
        assert!(s.dirs.contains(&repo.join(".claude/commands/git")));
    }

    #[test]
    fn outside_a_repository_only_the_cwd_and_links_out_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let cwd = t.path().join("work");
        write(
            &t.path().join("secret.md"),
            "---\ndescription: s\n---\nsecret\n",
        );
        std::fs::create_dir_all(cwd.join(".claude/skills/leak")).unwrap();
        std::os::unix::fs::symlink(
            t.path().join("secret.md"),
            cwd.join(".claude/skills/leak/SKILL.md"),
        )
        .unwrap();
        let roots = SkillRoots::new(&cwd, &t.path().join("nohome"));
        assert_eq!(roots.project_dirs, vec![cwd.clone()]);
        let s = scan(&roots);
        assert!(s.skills.is_empty());
        assert!(s.skipped[0].1.contains("links outside"));
        // No .claude folder: only its appearance in the cwd matters.
        let bare = t.path().join("bare");
        std::fs::create_dir_all(&bare).unwrap();
        let empty = scan(&SkillRoots::new(&bare, &t.path().join("nohome")));
        assert_eq!(empty.dirs, vec![bare.clone()]);
        assert!(!empty.matters(&bare));
        std::fs::create_dir_all(bare.join(".claude")).unwrap();
        assert!(empty.matters(&bare));
        assert!(!empty.matters(&t.path().join("elsewhere")));
    }

    #[test]
    fn body_drops_front_matter() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("SKILL.md");
        write(&f, "---\ndescription: d\n---\n\nDo this.\n");
        assert_eq!(body(&f).as_deref(), Some("Do this.\n"));
    }
}
