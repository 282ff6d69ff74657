//! The notes document read back into our ten sections, rendered canonically, and cut to
//! its caps.

use super::*;

/// A document read back into our ten sections.
#[derive(Debug, Default)]
pub(super) struct Doc {
    pub(super) bodies: [String; N],
    /// Non-blank text before the first heading.
    pub(super) preamble: bool,
    /// Which of our headings appeared.
    pub(super) present: [bool; N],
}

/// Which of our sections `line` opens, if it is a heading (see the module docs).
pub(super) fn heading_index(line: &str) -> Option<usize> {
    let hashes = line.len() - line.trim_start_matches('#').len();
    if !(1..=3).contains(&hashes) {
        return None;
    }
    let rest = line[hashes..].strip_prefix(' ')?.trim();
    SECTIONS
        .iter()
        .position(|(h, _)| h.eq_ignore_ascii_case(rest))
}

pub(super) fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

pub(super) fn squeeze(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

pub(super) fn is_description(line: &str, index: usize) -> bool {
    let t = line.trim().trim_matches(|c| c == '_' || c == '*');
    squeeze(t) == squeeze(SECTIONS[index].1)
}

pub(super) fn parse(doc: &str) -> Doc {
    let mut lines: [Vec<&str>; N] = Default::default();
    let mut parsed = Doc::default();
    let mut current: Option<usize> = None;
    let mut in_fence = false;
    for line in doc.lines() {
        let line = line.trim_end();
        if !in_fence && let Some(i) = heading_index(line) {
            current = Some(i);
            parsed.present[i] = true;
            continue;
        }
        if is_fence(line) {
            in_fence = !in_fence;
        }
        match current {
            Some(i) => lines[i].push(line),
            None => parsed.preamble |= !line.trim().is_empty(),
        }
    }
    for (i, body) in lines.iter().enumerate() {
        let mut body: &[&str] = body;
        while body.first().is_some_and(|l| l.trim().is_empty()) {
            body = &body[1..];
        }
        if body.first().is_some_and(|l| is_description(l, i)) {
            body = &body[1..];
        }
        parsed.bodies[i] = trim_blank_lines(&body.join("\n"));
    }
    parsed
}

pub(super) fn trim_blank_lines(body: &str) -> String {
    let lines: Vec<&str> = body.lines().map(str::trim_end).collect();
    let start = lines.iter().position(|l| !l.is_empty());
    let end = lines.iter().rposition(|l| !l.is_empty());
    match (start, end) {
        (Some(s), Some(e)) => lines[s..=e].join("\n"),
        _ => String::new(),
    }
}

pub(super) fn render(bodies: &[String; N]) -> String {
    let mut out = String::new();
    for ((heading, description), body) in SECTIONS.iter().zip(bodies) {
        out.push_str("# ");
        out.push_str(heading);
        out.push_str("\n_");
        out.push_str(description);
        out.push_str("_\n");
        if !body.is_empty() {
            out.push('\n');
            out.push_str(body);
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

/// The empty document: per section `# Heading\n_description_\n\n`, in [`SECTIONS`] order.
pub fn template() -> String {
    render(&Default::default())
}

/// True when no section holds anything beyond its heading and description (whitespace
/// ignored). An empty string is a template too: it holds no notes either.
pub fn is_template(doc: &str) -> bool {
    let parsed = parse(doc);
    !parsed.preamble && parsed.bodies.iter().all(|b| b.trim().is_empty())
}

// ---------------------------------------------------------------------------------------
// Caps.

pub(super) const CAP_NOTE_TAIL: &str =
    "cut here to keep this section within the session-memory limits]_";

pub(super) fn cap_note(lines: usize) -> String {
    let s = if lines == 1 { "" } else { "s" };
    format!("_[{lines} line{s} {CAP_NOTE_TAIL}")
}

pub(super) fn is_cap_note(line: &str) -> bool {
    let t = line.trim();
    t.starts_with("_[") && t.ends_with(CAP_NOTE_TAIL)
}

/// The Worklog's newest lines matter most; every other section's oldest.
pub(super) fn keeps_newest(index: usize) -> bool {
    index == WORKLOG
}

/// Cuts `body` to at most `limit` characters on line boundaries, with the note made by
/// `note(lines_cut)` where the lines went (after the kept head, or before the kept tail
/// when `newest`). Earlier cap notes are dropped first, so cutting again never stacks
/// them. When not one whole line fits, the first (newest: last) line is cut inside,
/// marked with `…`; when not even the note fits, the note alone is returned (it says
/// more than an empty section).
pub(super) fn cut(
    body: &str,
    limit: usize,
    newest: bool,
    note: &dyn Fn(usize) -> String,
) -> String {
    if chars(body) <= limit {
        return body.to_string();
    }
    let mut lines: Vec<&str> = body.lines().filter(|l| !is_cap_note(l)).collect();
    let stripped = lines.join("\n");
    if chars(&stripped) <= limit {
        return stripped;
    }
    if newest {
        lines.reverse();
    }
    let total = lines.len();
    // The most lines whose text, a newline each and the note fit.
    let mut best = 0;
    let mut used = 0;
    for (k, line) in lines.iter().enumerate() {
        used += chars(line) + 1;
        if used + chars(&note(total - k - 1)) <= limit {
            best = k + 1;
        } else {
            break;
        }
    }
    let mut kept: Vec<String> = lines[..best].iter().map(|l| (*l).to_string()).collect();
    let mut cut_lines = total - best;
    if best == 0 {
        let n = note(total);
        let room = limit.saturating_sub(chars(&n) + 2);
        if room > 0
            && let Some(first) = lines.first()
        {
            let part: String = if newest {
                let skip = chars(first).saturating_sub(room);
                first.chars().skip(skip).collect()
            } else {
                first.chars().take(room).collect()
            };
            kept.push(if newest {
                format!("…{part}")
            } else {
                format!("{part}…")
            });
        }
        cut_lines = total;
    }
    if newest {
        kept.reverse();
        kept.insert(0, note(cut_lines));
    } else {
        kept.push(note(cut_lines));
    }
    kept.join("\n")
}

/// Each section within [`MAX_SECTION_TOKENS`], the whole document within
/// [`MAX_TOTAL_TOKENS`] (see the module docs); the result is in canonical shape.
pub fn enforce_caps(doc: &str) -> String {
    let parsed = parse(doc);
    let section_limit = token_chars(MAX_SECTION_TOKENS);
    let bodies: [String; N] =
        std::array::from_fn(|i| cut(&parsed.bodies[i], section_limit, keeps_newest(i), &cap_note));
    let total_limit = token_chars(MAX_TOTAL_TOKENS);
    let rendered = render(&bodies);
    if chars(&rendered) <= total_limit {
        return rendered;
    }
    let cut_all = |limit: usize| -> [String; N] {
        std::array::from_fn(|i| cut(&bodies[i], limit, keeps_newest(i), &cap_note))
    };
    // The largest common body size that fits. A smaller limit never yields a longer
    // document, so a binary search finds it.
    let (mut lo, mut hi) = (0usize, bodies.iter().map(|b| chars(b)).max().unwrap_or(0));
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if chars(&render(&cut_all(mid))) <= total_limit {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    render(&cut_all(lo))
}

/// The document as it goes into a session-memory compact summary: each section cut to
/// `max_section_tokens`, with a note where lines were cut that points to the full notes
/// at `full_path` (the model can read them there when it needs the detail).
pub fn for_summary(doc: &str, max_section_tokens: u64, full_path: &str) -> String {
    let parsed = parse(doc);
    let limit = token_chars(max_section_tokens);
    let note = |n: usize| {
        let s = if n == 1 { "" } else { "s" };
        format!("_[{n} more line{s} of this section in the full notes: {full_path}]_")
    };
    let bodies: [String; N] =
        std::array::from_fn(|i| cut(&parsed.bodies[i], limit, keeps_newest(i), &note));
    render(&bodies)
}

/// A model's updated document, accepted against the `previous` one: `None` when it holds
/// none of our headings (not a notes document at all, so keeping it would wipe the notes);
/// otherwise sections the model left out keep their previous body (it was told to return
/// every section, so a missing one is an omission, not a deletion), then the caps.
pub fn accept_update(previous: &str, updated: &str) -> Option<String> {
    let new = parse(updated);
    if !new.present.contains(&true) {
        return None;
    }
    let old = parse(previous);
    let bodies: [String; N] = std::array::from_fn(|i| {
        if new.present[i] {
            new.bodies[i].clone()
        } else {
            old.bodies[i].clone()
        }
    });
    Some(enforce_caps(&render(&bodies)))
}
