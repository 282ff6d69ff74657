//! Skills as the model sees them: the listing of skills not announced before, its
//! character budget, the sent-set folded from earlier listings, invocations read from
//! `Skill` tool_uses, and the restore of invoked skills after a compaction.
//!
//! The sent-set is the fold of every `skill_listing` record of the main thread — across
//! compact boundaries: like Claude Code, a compaction does not re-list skills (the model
//! keeps the `Skill` tool, and invoked skills are restored), so a skill is listed once per
//! session unless its description changes. Restart, fork and import rebuild it from the
//! records alone.

use super::kinds::{INVOKED_SKILLS, SKILL_LISTING};
use std::collections::BTreeMap;

use ctxd_protocol::{ContentBlock, Record, RecordKind};
use serde_json::{Value, json};

/// Claude Code's sentence before the listed skills.
pub(crate) const LISTING_HEADING: &str =
    "The following skills are available for use with the Skill tool:";

/// A description (with its when-to-use) is never listed longer than this.
const MAX_DESCRIPTION_CHARS: usize = 250;
/// Below this a cut description says nothing: list names only.
const MIN_DESCRIPTION_CHARS: usize = 20;
/// Invoked skills restored after a compaction, in tokens (≈ 4 characters each).
pub(crate) const RESTORE_SKILL_TOKENS: usize = 5_000;
pub(crate) const RESTORE_SKILLS_TOTAL_TOKENS: usize = 25_000;
const CHARS_PER_TOKEN: usize = 4;

/// Characters one listing may take: about 1% of the context window.
pub fn listing_budget(context_window: u64) -> usize {
    crate::saturate::usize_of(context_window).saturating_mul(CHARS_PER_TOKEN) / 100
}

/// What the listing needs of one skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub when_to_use: Option<&'a str>,
    /// Fingerprint of what the listing says about it: a change re-lists the skill.
    pub sig: &'a str,
}

/// Skills announced so far: name → signature ('' when an imported record did not say).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sent {
    skills: BTreeMap<String, String>,
    omitted: BTreeMap<String, ()>,
    /// Listing records folded in.
    pub records: u64,
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.as_object()
        .map(|o| crate::text::string_list(o, &[key]))
        .unwrap_or_default()
}

impl Sent {
    pub fn apply(&mut self, attachment: &Value) {
        if attachment.get("type").and_then(Value::as_str) != Some(SKILL_LISTING) {
            return;
        }
        self.records += 1;
        let names = strings(attachment, "names");
        let sigs = strings(attachment, "sigs");
        if names.is_empty() {
            // Claude Code's records carry the text only: `- name: description` lines.
            if let Some(content) = attachment.get("content").and_then(Value::as_str) {
                for line in content.lines() {
                    if let Some(rest) = line.strip_prefix("- ") {
                        // Names may hold colons themselves (`plugin:skill`): the
                        // description starts after the first ": ".
                        let name = rest
                            .split_once(": ")
                            .map_or(rest.trim_end_matches(':'), |(n, _)| n)
                            .trim();
                        if !name.is_empty() {
                            self.skills.insert(name.to_string(), String::new());
                        }
                    }
                }
            }
        }
        for (i, n) in names.into_iter().enumerate() {
            self.omitted.remove(&n);
            self.skills
                .insert(n, sigs.get(i).cloned().unwrap_or_default());
        }
        let omitted_sigs = strings(attachment, "omitted_sigs");
        for (i, n) in strings(attachment, "omitted").into_iter().enumerate() {
            self.skills
                .insert(n.clone(), omitted_sigs.get(i).cloned().unwrap_or_default());
            self.omitted.insert(n, ());
        }
        for n in strings(attachment, "removed") {
            self.skills.remove(&n);
            self.omitted.remove(&n);
        }
    }

    /// Announced with this signature (or with an unknown one).
    pub fn covers(&self, name: &str, sig: &str) -> bool {
        self.skills
            .get(name)
            .is_some_and(|s| s.is_empty() || s == sig)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.skills.contains_key(name)
    }

    pub fn is_omitted(&self, name: &str) -> bool {
        self.omitted.contains_key(name)
    }

    /// Announced by ctxd (with a signature), not merely read from an imported record.
    pub fn listed_by_us(&self, name: &str) -> bool {
        self.skills.get(name).is_some_and(|s| !s.is_empty())
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.skills.keys().map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }
}

fn description_of(e: &Entry<'_>) -> String {
    let d = e.description.trim();
    match e.when_to_use.map(str::trim).filter(|w| !w.is_empty()) {
        Some(w) if d.is_empty() => w.to_string(),
        Some(w) => format!("{d} - {w}"),
        None => d.to_string(),
    }
    .replace(['\n', '\r'], " ")
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// The longest description every entry may keep so that `total` characters of
/// descriptions fit in `available`: short ones stay whole, long ones share the rest.
fn fair_cap(lengths: &[usize], available: usize) -> usize {
    let mut sorted = lengths.to_vec();
    sorted.sort_unstable();
    let mut left = available;
    for (i, len) in sorted.iter().enumerate() {
        let share = left / (sorted.len() - i);
        if *len > share {
            return share;
        }
        left -= len;
    }
    usize::MAX
}

/// The `skill_listing` payload for skills not announced before (in the given order) and
/// skills announced before that are gone; `None` when there is nothing to say. The text
/// stays within `budget` characters: descriptions are cut first, then only names are
/// listed, then the rest are counted instead of named.
pub fn listing(
    new: &[Entry<'_>],
    removed: &[String],
    budget: usize,
    initial: bool,
) -> Option<Value> {
    if new.is_empty() && removed.is_empty() {
        return None;
    }
    let descriptions: Vec<String> = new
        .iter()
        .map(|e| cut(&description_of(e), MAX_DESCRIPTION_CHARS))
        .collect();
    let line = |e: &Entry<'_>, d: &str| {
        if d.is_empty() {
            format!("- {}", e.name)
        } else {
            format!("- {}: {d}", e.name)
        }
    };
    let full: Vec<String> = new
        .iter()
        .zip(&descriptions)
        .map(|(e, d)| line(e, d))
        .collect();
    let joined_len = |lines: &[String]| {
        lines.iter().map(|l| l.chars().count()).sum::<usize>() + lines.len().saturating_sub(1)
    };
    let mut lines = full;
    let mut shown = new.len();
    if joined_len(&lines) > budget {
        // Names (with `- ` and `: `) and newlines come first; descriptions share the rest.
        let overhead: usize = new
            .iter()
            .map(|e| e.name.chars().count() + 4)
            .sum::<usize>()
            + new.len().saturating_sub(1);
        let lengths: Vec<usize> = descriptions.iter().map(|d| d.chars().count()).collect();
        let cap = fair_cap(&lengths, budget.saturating_sub(overhead));
        if overhead <= budget && cap >= MIN_DESCRIPTION_CHARS {
            lines = new
                .iter()
                .zip(&descriptions)
                .map(|(e, d)| line(e, &cut(d, cap)))
                .collect();
        } else {
            lines = new.iter().map(|e| format!("- {}", e.name)).collect();
            let mut used = 0usize;
            shown = 0;
            for l in &lines {
                let add = l.chars().count() + usize::from(shown > 0);
                if used + add > budget {
                    break;
                }
                used += add;
                shown += 1;
            }
            lines.truncate(shown);
        }
    }
    let names: Vec<&str> = new[..shown].iter().map(|e| e.name).collect();
    let sigs: Vec<&str> = new[..shown].iter().map(|e| e.sig).collect();
    let mut v = json!({
        "type": SKILL_LISTING,
        "initial": initial,
        "content": lines.join("\n"),
        "names": names,
        "sigs": sigs,
    });
    if shown < new.len() {
        v["omitted"] = json!(new[shown..].iter().map(|e| e.name).collect::<Vec<_>>());
        v["omitted_sigs"] = json!(new[shown..].iter().map(|e| e.sig).collect::<Vec<_>>());
    }
    if !removed.is_empty() {
        v["removed"] = json!(removed);
    }
    Some(v)
}

/// The model-facing text of a `skill_listing` record (ours or Claude Code's).
pub(crate) fn render_listing(obj: &serde_json::Map<String, Value>) -> Option<String> {
    let mut parts = Vec::new();
    let content = obj.get("content").and_then(Value::as_str).unwrap_or("");
    if !content.trim().is_empty() {
        parts.push(format!("{LISTING_HEADING}\n\n{content}"));
    }
    let omitted = obj
        .get("omitted")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if omitted > 0 {
        parts.push(format!(
            "({omitted} more skills are available but not listed: the listing is limited to about 1% of the context window.)"
        ));
    }
    let removed: Vec<&str> = obj
        .get("removed")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !removed.is_empty() {
        parts.push(format!(
            "These skills are no longer available; do not invoke them:\n{}",
            removed
                .iter()
                .map(|n| format!("- {n}"))
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// Skills a record invokes through the `Skill` tool (`{"skill": NAME}`; older clients
/// said `command`), without a leading `/`.
pub fn invocations(r: &Record) -> impl Iterator<Item = String> + '_ {
    let assistant = r.kind == RecordKind::Assistant && !r.is_sidechain;
    r.content
        .iter()
        .filter(move |_| assistant)
        .filter_map(|b| match b {
            ContentBlock::ToolUse { name, input, .. } if name == "Skill" => {
                let raw = ["skill", "command", "name"]
                    .iter()
                    .find_map(|k| input.get(*k).and_then(Value::as_str))?;
                let n = raw.trim().trim_start_matches('/');
                // `/name args` typed as one string: the name is the first word.
                let n = n.split_whitespace().next()?;
                Some(n.to_string())
            }
            _ => None,
        })
}

/// One invoked skill to restore, newest invocation first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invoked {
    pub name: String,
    pub path: String,
    pub content: String,
}

/// The `invoked_skills` payload restored after a compaction: each skill at most 5,000
/// tokens (cut with a note), 25,000 in all, newest first; once less than a quarter of a
/// skill's cap is left, skills that do not fit whole are left out.
pub fn restore(skills: &[Invoked]) -> Option<Value> {
    let per = RESTORE_SKILL_TOKENS * CHARS_PER_TOKEN;
    let mut left = RESTORE_SKILLS_TOTAL_TOKENS * CHARS_PER_TOKEN;
    let mut out = Vec::new();
    for s in skills {
        let mut content = s.content.trim_end().to_string();
        // A sliver of a skill misleads more than it helps: restore one only whole or
        // with at least a quarter of its cap.
        if content.chars().count() > left && left < per / 4 {
            continue;
        }
        let max = per.min(left);
        if content.chars().count() > max {
            let note = format!(
                "\n\n[... the rest of this skill was cut when the conversation was compacted; read {} for the full text]",
                s.path
            );
            let keep = max.saturating_sub(note.chars().count());
            let mut kept: String = content.chars().take(keep).collect();
            // End on a line where one is near, so a sentence is not cut in half.
            if let Some(nl) = kept.rfind('\n')
                && nl > kept.len() / 2
            {
                kept.truncate(nl);
            }
            content = kept + &note;
        }
        left = left.saturating_sub(content.chars().count());
        out.push(json!({"name": s.name, "path": s.path, "content": content}));
    }
    (!out.is_empty()).then(|| json!({"type": INVOKED_SKILLS, "skills": out}))
}

/// The model-facing text of an `invoked_skills` record.
pub(crate) fn render_invoked(obj: &serde_json::Map<String, Value>) -> Option<String> {
    let skills = obj.get("skills")?.as_array()?;
    let blocks: Vec<String> = skills
        .iter()
        .filter_map(|s| {
            let name = s.get("name")?.as_str()?;
            let content = s.get("content").and_then(Value::as_str).unwrap_or("");
            let path = s
                .get("path")
                .and_then(Value::as_str)
                .map(|p| format!("Path: {p}\n\n"))
                .unwrap_or_default();
            Some(format!("### Skill: {name}\n{path}{content}"))
        })
        .collect();
    if blocks.is_empty() {
        return None;
    }
    Some(format!(
        "These skills were invoked earlier in this session and restored after the conversation was compacted. Keep following their instructions where they still apply:\n\n{}",
        blocks.join("\n\n")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e<'a>(name: &'a str, d: &'a str) -> Entry<'a> {
        Entry {
            name,
            description: d,
            when_to_use: None,
            sig: "s1",
        }
    }

    #[test]
    fn small_listings_are_whole_and_fold_into_the_sent_set() {
        let mut w = e("review", "Review a change");
        w.when_to_use = Some("when asked to review");
        let v = listing(&[w, e("commit", "Write a commit")], &[], 8_000, true).unwrap();
        assert_eq!(
            v["content"],
            "- review: Review a change - when asked to review\n- commit: Write a commit"
        );
        let text = render_listing(v.as_object().unwrap()).unwrap();
        assert!(text.starts_with(LISTING_HEADING));
        let mut sent = Sent::default();
        sent.apply(&v);
        assert!(sent.covers("review", "s1") && !sent.covers("review", "s2"));
        assert!(!sent.covers("other", "s1"));
    }

    #[test]
    fn the_budget_cuts_descriptions_then_names_then_counts() {
        let long = "x".repeat(400);
        let many: Vec<String> = (0..1000).map(|i| format!("skill-{i:04}")).collect();
        let entries: Vec<Entry<'_>> = many.iter().map(|n| e(n, &long)).collect();
        let budget = listing_budget(200_000);
        assert_eq!(budget, 8_000);
        let v = listing(&entries, &[], budget, true).unwrap();
        let content = v["content"].as_str().unwrap();
        assert!(content.chars().count() <= budget, "{}", content.len());
        let listed = v["names"].as_array().unwrap().len();
        let omitted = v["omitted"].as_array().unwrap().len();
        assert_eq!(listed + omitted, 1000);
        assert!(listed > 400, "names only: {listed}");
        assert!(
            render_listing(v.as_object().unwrap())
                .unwrap()
                .contains(&format!("{omitted} more skills"))
        );
        let mut sent = Sent::default();
        sent.apply(&v);
        assert!(
            entries.iter().all(|x| sent.covers(x.name, x.sig)),
            "omitted ones are announced too"
        );
        assert!(sent.is_omitted("skill-0999"));

        // Twenty skills with long descriptions: cut, but every name with some text.
        let few: Vec<Entry<'_>> = many[..50].iter().map(|n| e(n, &long)).collect();
        let v = listing(&few, &[], 4_000, false).unwrap();
        let content = v["content"].as_str().unwrap();
        assert!(content.chars().count() <= 4_000);
        assert!(
            content
                .lines()
                .all(|l| l.contains(": xxx") && l.ends_with('…'))
        );
        assert!(v.get("omitted").is_none());
    }

    #[test]
    fn fair_cap_keeps_short_descriptions_whole() {
        assert_eq!(fair_cap(&[10, 10, 100], 60), 40);
        assert_eq!(fair_cap(&[10, 10], 60), usize::MAX);
    }

    #[test]
    fn removals_and_claude_code_records() {
        let v = listing(&[], &["gone".into()], 100, false).unwrap();
        let t = render_listing(v.as_object().unwrap()).unwrap();
        assert_eq!(
            t,
            "These skills are no longer available; do not invoke them:\n- gone"
        );
        let mut sent = Sent::default();
        sent.apply(&json!({"type": "skill_listing", "content": "- a: one\n- b\nnot a line\n- plugin:review: reviews: carefully\n- git:commit:", "skillCount": 4, "isInitial": true}));
        assert!(sent.covers("a", "anything") && sent.covers("b", "x"));
        // Namespaced names keep their colons.
        assert!(sent.covers("plugin:review", "x") && sent.covers("git:commit", "x"));
        assert!(!sent.contains("plugin") && !sent.contains("git"));
        sent.apply(&v);
        sent.apply(&json!({"type": "skill_listing", "removed": ["a"]}));
        assert!(!sent.contains("a"));
        assert_eq!(sent.records, 3);
    }

    fn assistant(input: Value) -> Record {
        serde_json::from_value(
            json!({"uuid": "u", "seq": 1, "type": "assistant", "timestamp": "t",
            "content": [{"type": "tool_use", "id": "t1", "name": "Skill", "input": input}]}),
        )
        .unwrap()
    }

    #[test]
    fn invocations_read_the_skill_tool() {
        assert_eq!(
            invocations(&assistant(json!({"skill": "review"}))).collect::<Vec<_>>(),
            ["review"]
        );
        assert_eq!(
            invocations(&assistant(json!({"command": "/commit -m x"}))).collect::<Vec<_>>(),
            ["commit"]
        );
        assert_eq!(invocations(&assistant(json!({"other": 1}))).count(), 0);
    }

    #[test]
    fn restore_caps_each_skill_and_the_total_newest_first() {
        let big = "line of skill text\n".repeat(3_000);
        let skills: Vec<Invoked> = (0..7)
            .map(|i| Invoked {
                name: format!("s{i}"),
                path: format!("/p/s{i}/SKILL.md"),
                content: big.clone(),
            })
            .collect();
        let v = restore(&skills).unwrap();
        let out = v["skills"].as_array().unwrap();
        assert_eq!(out.len(), 5, "25,000 tokens hold five cut skills");
        assert_eq!(out[0]["name"], "s0");
        for s in out {
            let c = s["content"].as_str().unwrap();
            assert!(c.chars().count() <= 20_000);
            assert!(
                c.ends_with("read /p/".to_string().as_str()) || c.contains("for the full text]")
            );
        }
        let small = restore(&[Invoked {
            name: "a".into(),
            path: "/a".into(),
            content: "Do A.\n".into(),
        }])
        .unwrap();
        assert_eq!(small["skills"][0]["content"], "Do A.");
        let text = render_invoked(small.as_object().unwrap()).unwrap();
        assert!(text.contains("### Skill: a\nPath: /a\n\nDo A."));
        assert_eq!(restore(&[]), None);
        // Once the total is nearly spent, a skill too big to fit whole is left out, but a
        // smaller, older one that fits whole is still restored.
        let mut mixed: Vec<Invoked> = (0..5)
            .map(|i| Invoked {
                name: format!("big{i}"),
                path: format!("/p/big{i}/SKILL.md"),
                content: "x".repeat(19_500),
            })
            .collect();
        mixed.push(Invoked {
            name: "huge".into(),
            path: "/p/huge/SKILL.md".into(),
            content: big.clone(),
        });
        mixed.push(Invoked {
            name: "tiny".into(),
            path: "/p/tiny/SKILL.md".into(),
            content: "Do the tiny thing.".into(),
        });
        let v = restore(&mixed).unwrap();
        let names: Vec<&str> = v["skills"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["name"].as_str())
            .collect();
        assert_eq!(names, ["big0", "big1", "big2", "big3", "big4", "tiny"]);
    }
}
