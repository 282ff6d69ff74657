//! The embedded summariser: offline and deterministic. It fills the nine sections from the
//! transcript itself (extractive, no model): user messages verbatim, files touched,
//! errors, the latest work. Same records → same bytes.
//!
//! Budget: the text must fit `max_summary_tokens` under the daemon's estimate (characters
//! / 4, ×4/3). Detail is given up in a fixed order: problem solving, technical concepts,
//! current work, code excerpts, then caps on errors, files, tasks and the request; user
//! messages are elided from the middle only after that, and the first and the last one
//! always stay.
//!
//! Instructions (`/compact Focus on …`, PreCompact hooks) cannot steer an extractive
//! summary's reading, but they order it: they are stated in section 1, and the files and
//! errors whose text names one of their words come first, so they are the last to be cut.
//!
//! A projection that starts after an earlier compaction holds that summary as its first
//! user record. Its request, user messages, files and tasks are carried into the new
//! summary (parsed back by section title), so they survive any number of compactions.

mod carry;
mod facts;
mod render;

use super::SummaryInput;
use facts::Facts;

const INDENT: &str = "   ";
const NONE: &str = "None recorded.";
const LEFT_OUT: &str = "(left out for length)";

/// The longest focus instruction kept in a summary, in characters.
const FOCUS_CHARS: usize = 1_000;

pub(crate) fn summarise(input: &SummaryInput<'_>) -> String {
    let mut facts = Facts::gather(input.records, input.head_truncated);
    if let Some(focus) = input
        .custom_instructions
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        facts.focus_on(&ctxd_pipeline::text::clip(focus, FOCUS_CHARS));
    }
    render::fit(&facts, input.max_summary_tokens)
}

#[cfg(test)]
mod tests;
