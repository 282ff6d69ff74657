//! Reading an earlier summary back: its request, user messages, files and tasks are
//! carried into the new summary (parsed by section title), so they survive any number of
//! compactions.

use super::NONE;
use super::facts::{Facts, FileEntry, UserItem};
use crate::prompt::SECTION_TITLES;
use ctxd_pipeline::text::clip;

impl Facts {
    /// Takes over what an earlier summary knew; returns its pending tasks, which count only
    /// when this projection has no task list of its own.
    pub(super) fn carry(&mut self, summary: &str) -> Vec<String> {
        let Some(sections) = split_sections(summary) else {
            // Not in our shape: keep its opening as the request, so the intent survives.
            self.primary = Some(format!(
                "(from an earlier summary) {}",
                clip(summary.trim(), 2_000)
            ));
            return Vec::new();
        };
        if let Some(body) = &sections[0]
            && !body.trim().is_empty()
        {
            self.primary = Some(body.trim().to_string());
        }
        if let Some(body) = &sections[2] {
            for item in list_items(body) {
                let UserItem::Message(line) = item else {
                    continue;
                };
                let first = line.lines().next().unwrap_or_default();
                let (path, actions) = match first.rsplit_once(" (") {
                    Some((p, a)) if a.ends_with(')') => (p, a.trim_end_matches(')')),
                    _ => (first, ""),
                };
                if path.is_empty() || path.contains(' ') && !path.starts_with('/') {
                    continue;
                }
                self.files.push(FileEntry {
                    path: path.to_string(),
                    actions: actions
                        .split(", ")
                        .filter(|a| !a.is_empty())
                        .map(str::to_string)
                        .collect(),
                    excerpts: Vec::new(),
                });
            }
        }
        if let Some(body) = &sections[5] {
            self.users = list_items(body)
                .into_iter()
                .filter(|i| !matches!(i, UserItem::Message(m) if m == NONE))
                .collect();
        }
        sections[6]
            .as_deref()
            .map(|body| {
                list_items(body)
                    .into_iter()
                    .filter_map(|i| match i {
                        UserItem::Message(m) if m != NONE => Some(m),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Section bodies by title, when the text has at least one of our headings.
fn split_sections(text: &str) -> Option<[Option<String>; 9]> {
    let mut out: [Option<String>; 9] = Default::default();
    let mut current: Option<usize> = None;
    let mut found = false;
    for raw in text.lines() {
        let bare = raw.trim().trim_start_matches(['#', '*', ' ']);
        let heading = SECTION_TITLES.iter().enumerate().find_map(|(i, title)| {
            let rest = bare.strip_prefix(&format!("{}. ", i + 1))?;
            let rest = rest.get(..title.len())?;
            rest.eq_ignore_ascii_case(title).then_some(i)
        });
        if let Some(i) = heading {
            current = Some(i);
            found = true;
            out[i].get_or_insert_with(String::new);
            continue;
        }
        if let Some(i) = current
            && let Some(body) = out[i].as_mut()
        {
            body.push_str(raw);
            body.push('\n');
        }
    }
    found.then_some(out)
}

/// List items of a section body: `- ` at an indent of at most three spaces starts an
/// item, other lines continue it; our omission lines become counts.
fn list_items(body: &str) -> Vec<UserItem> {
    let mut items: Vec<UserItem> = Vec::new();
    let mut open = false;
    for raw in body.lines() {
        let indent = raw.len() - raw.trim_start().len();
        let trimmed = raw.trim();
        if let Some(n) = parse_omitted(trimmed) {
            items.push(UserItem::Omitted(n));
            open = false;
            continue;
        }
        if indent <= 3
            && let Some(rest) = trimmed.strip_prefix("- ")
        {
            items.push(UserItem::Message(rest.to_string()));
            open = true;
            continue;
        }
        match items.last_mut() {
            Some(UserItem::Message(m)) if open => {
                m.push('\n');
                m.push_str(raw);
            }
            _ if !trimmed.is_empty() => {
                items.push(UserItem::Message(trimmed.to_string()));
                open = true;
            }
            _ => {}
        }
    }
    // Blank lines between items belong to no message.
    for item in &mut items {
        if let UserItem::Message(m) = item {
            m.truncate(m.trim_end().len());
        }
    }
    items
}

fn parse_omitted(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("(… ")?;
    if !line.contains(" omitted") {
        return None;
    }
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}
