//! The offline summary of a collapsed span: deterministic, short, built from the span
//! itself (first lines of user messages, files, tools with counts, errors, the last
//! conclusion).

use crate::attachments;
use crate::message::REMINDER_OPEN;
use crate::records::{file_action, is_user_typed, path_of, result_text};
use crate::text::{first_line, squash};
use ctxd_protocol::{ContentBlock, Record, RecordKind};
use std::collections::{BTreeMap, HashMap};

use super::*;

#[derive(Debug, Default)]
pub(super) struct Facts {
    /// First line of each user-typed message, in order.
    users: Vec<String>,
    /// (path, actions), in order of first touch.
    files: Vec<(String, Vec<&'static str>)>,
    tools: BTreeMap<String, usize>,
    /// (tool, first line of the error), in order.
    errors: Vec<(String, String)>,
    reminders: BTreeMap<String, usize>,
    outcome: Option<String>,
}

impl Facts {
    fn gather(records: &[&Record]) -> Facts {
        let mut f = Facts::default();
        let mut tool_names: HashMap<&str, &str> = HashMap::new();
        for r in records.iter().filter(|r| !r.is_virtual && !r.is_sidechain) {
            match r.kind {
                RecordKind::User => f.user(r, &tool_names),
                RecordKind::Assistant => f.assistant(r, &mut tool_names),
                RecordKind::Attachment => {
                    if attachments::render(r).is_some() {
                        let kind = r.attachment_type().unwrap_or("attachment").to_string();
                        *f.reminders.entry(kind).or_default() += 1;
                    }
                }
                RecordKind::System => {}
            }
        }
        f
    }

    fn user(&mut self, r: &Record, tool_names: &HashMap<&str, &str>) {
        if is_user_typed(r) {
            let line = r
                .content
                .iter()
                .find_map(|b| match b {
                    ContentBlock::Text { text, .. } if !text.starts_with(REMINDER_OPEN) => {
                        first_line(text).map(str::to_owned)
                    }
                    _ => None,
                })
                .or_else(|| {
                    r.content.iter().find_map(|b| match b {
                        ContentBlock::Image { .. } => Some("[image]".to_string()),
                        ContentBlock::Document { .. } => Some("[document]".to_string()),
                        _ => None,
                    })
                });
            self.users.extend(line);
        }
        for b in &r.content {
            if let ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error: true,
                ..
            } = b
            {
                let tool = tool_names
                    .get(tool_use_id.as_str())
                    .copied()
                    .unwrap_or("tool");
                let text = result_text(content);
                let text = text.trim();
                // Claude Code wraps tool errors in a tag that says nothing itself.
                let text = text
                    .strip_prefix("<tool_use_error>")
                    .map_or(text, |t| t.strip_suffix("</tool_use_error>").unwrap_or(t));
                let line = first_line(text).unwrap_or("(no message)").to_owned();
                self.errors.push((tool.to_string(), line));
            }
        }
    }

    fn assistant<'r>(&mut self, r: &'r Record, tool_names: &mut HashMap<&'r str, &'r str>) {
        for b in &r.content {
            match b {
                ContentBlock::ToolUse {
                    id, name, input, ..
                } => {
                    tool_names.insert(id, name);
                    *self.tools.entry(name.clone()).or_default() += 1;
                    let path = path_of(input);
                    if let (Some(action), Some(path)) = (file_action(name), path) {
                        self.touch(path, action);
                    }
                }
                ContentBlock::Text { text, .. } if !text.trim().is_empty() => {
                    self.outcome = Some(squash(text));
                }
                _ => {}
            }
        }
    }

    fn touch(&mut self, path: &str, action: &'static str) {
        match self.files.iter_mut().find(|(p, _)| p == path) {
            Some((_, actions)) => {
                if !actions.contains(&action) {
                    actions.push(action);
                }
            }
            None => self.files.push((path.to_string(), vec![action])),
        }
    }
}

/// How much of each kind of fact a rendering shows. Levels give detail up in a fixed
/// order: middle user messages and reminders first, then line width, files, errors.
pub(super) struct Detail {
    users: usize,
    width: usize,
    files: usize,
    tools: usize,
    errors: usize,
    reminders: bool,
}

pub(super) const LEVELS: [Detail; 6] = [
    Detail {
        users: usize::MAX,
        width: 160,
        files: 12,
        tools: 12,
        errors: 3,
        reminders: true,
    },
    Detail {
        users: 6,
        width: 100,
        files: 8,
        tools: 8,
        errors: 2,
        reminders: false,
    },
    Detail {
        users: 4,
        width: 72,
        files: 5,
        tools: 6,
        errors: 1,
        reminders: false,
    },
    Detail {
        users: 2,
        width: 48,
        files: 3,
        tools: 4,
        errors: 0,
        reminders: false,
    },
    Detail {
        users: 1,
        width: 32,
        files: 1,
        tools: 3,
        errors: 0,
        reminders: false,
    },
    Detail {
        users: 1,
        width: 24,
        files: 0,
        tools: 2,
        errors: 0,
        reminders: false,
    },
];

pub(super) fn cut(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let keep = width.saturating_sub(3);
    format!("{}...", s.chars().take(keep).collect::<String>())
}

/// Paths are cut from the left: the file name says more than the root.
pub(super) fn cut_left(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    let keep = width.saturating_sub(3);
    format!("...{}", s.chars().skip(n - keep).collect::<String>())
}

pub(super) fn counted(entries: &BTreeMap<String, usize>, limit: usize) -> String {
    // Most used first; the map's order breaks ties by name.
    let mut list: Vec<(&String, &usize)> = entries.iter().collect();
    list.sort_by(|a, b| b.1.cmp(a.1));
    let mut parts: Vec<String> = list
        .iter()
        .take(limit)
        .map(|(name, n)| match n {
            1 => (*name).clone(),
            _ => format!("{name} x{n}"),
        })
        .collect();
    if list.len() > limit {
        parts.push(format!("+{} more", list.len() - limit));
    }
    parts.join(", ")
}

pub(super) fn render_facts(f: &Facts, d: &Detail) -> String {
    let mut lines: Vec<String> = Vec::new();
    if !f.users.is_empty() {
        lines.push(format!("User messages ({}):", f.users.len()));
        let n = f.users.len();
        let shown: Vec<usize> = if n <= d.users {
            (0..n).collect()
        } else if d.users <= 1 {
            vec![0]
        } else {
            // The first ones set the span's task, the last one where it ended up.
            (0..d.users - 1).chain([n - 1]).collect()
        };
        for (k, &i) in shown.iter().enumerate() {
            if k > 0 && i != shown[k - 1] + 1 {
                lines.push(format!("- ... {} more", i - shown[k - 1] - 1));
            }
            lines.push(format!("- {}", cut(&f.users[i], d.width)));
        }
        if let Some(&last) = shown.last()
            && last + 1 < n
        {
            lines.push(format!("- ... {} more", n - last - 1));
        }
    }
    if !f.files.is_empty() {
        if d.files == 0 {
            lines.push(format!("Files: {} touched", f.files.len()));
        } else {
            let mut parts: Vec<String> = f
                .files
                .iter()
                .take(d.files)
                .map(|(p, a)| format!("{} ({})", cut_left(p, d.width), a.join(", ")))
                .collect();
            if f.files.len() > d.files {
                parts.push(format!("+{} more", f.files.len() - d.files));
            }
            lines.push(format!("Files: {}", parts.join("; ")));
        }
    }
    if !f.tools.is_empty() {
        lines.push(format!("Tools: {}", counted(&f.tools, d.tools)));
    }
    if !f.errors.is_empty() {
        if d.errors == 0 {
            lines.push(format!("Errors: {}", f.errors.len()));
        } else {
            let mut parts: Vec<String> = f
                .errors
                .iter()
                .take(d.errors)
                .map(|(tool, msg)| format!("{tool}: {}", cut(msg, d.width)))
                .collect();
            if f.errors.len() > d.errors {
                parts.push(format!("+{} more", f.errors.len() - d.errors));
            }
            lines.push(format!("Errors ({}): {}", f.errors.len(), parts.join("; ")));
        }
    }
    if d.reminders && !f.reminders.is_empty() {
        lines.push(format!("Reminders: {}", counted(&f.reminders, 8)));
    }
    if let Some(outcome) = &f.outcome {
        lines.push(format!("Outcome: {}", cut(outcome, d.width * 2)));
    }
    if lines.is_empty() {
        lines.push("No messages or tool calls.".into());
    }
    lines.join("\n")
}

/// The summary's token cap for a span of `span_tokens`: a tenth, within 50..=600.
pub(super) fn summary_cap(span_tokens: u64) -> u64 {
    (span_tokens / 10).clamp(MIN_SUMMARY_TOKENS, MAX_SUMMARY_TOKENS)
}

/// The most characters whose estimate stays within `cap` tokens.
pub(super) fn max_chars(cap: u64) -> usize {
    // scaled(ceil(c / 4)) <= cap  <=>  ceil(c / 4) <= floor(3 * cap / 4).
    usize::try_from(cap * 3 / 4 * 4).unwrap_or(usize::MAX)
}

/// Deterministic offline summary of a span: user messages' first lines, files touched,
/// tools with counts, tool errors, reminders, the last assistant text. At most a tenth of
/// the span's estimated tokens (at least 50) and at most 600, under the daemon's estimate.
pub fn summarize_span(records: &[&Record]) -> String {
    let limit = max_chars(summary_cap(records_tokens(records)));
    let facts = Facts::gather(records);
    let mut text = String::new();
    for d in &LEVELS {
        text = render_facts(&facts, d);
        if text.chars().count() <= limit {
            return text;
        }
    }
    cut(&text, limit)
}
