//! `messages[0]`: the user context, one meta user message computed once per session.

use std::fmt::Write as _;

use super::message::system_reminder;

/// Renders the user-context text. `claude_md` is the rendered instruction chain (empty
/// until instruction files are discovered); `date` is the session's first local date,
/// which is deliberately not rewritten at midnight (a `date_change` attachment is).
pub fn render(claude_md: Option<&str>, date: &str) -> String {
    let mut body = String::from(
        "As you work on the user's request, use the following context when it is relevant:\n",
    );
    if let Some(md) = claude_md.filter(|m| !m.is_empty()) {
        body.push_str("# claudeMd\n");
        body.push_str(md);
        body.push('\n');
    }
    body.push_str("# currentDate\n");
    let _ = writeln!(body, "Today's date is {date}.");
    body.push_str(
        "\nThis context may or may not be relevant to the task at hand. Do not respond to it unless it bears on the task.",
    );
    system_reminder(&body)
}

#[cfg(test)]
mod tests {
    #[test]
    fn carries_date_inside_a_reminder() {
        let t = super::render(None, "2026-11-29");
        assert!(t.starts_with("<system-reminder>\n"));
        assert!(t.ends_with("\n</system-reminder>"));
        assert!(t.contains("# currentDate\nToday's date is 2026-11-29."));
        assert!(!t.contains("# claudeMd"));
        assert!(super::render(Some("X"), "2026-11-29").contains("# claudeMd\nX\n"));
    }
}
