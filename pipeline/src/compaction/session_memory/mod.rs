//! Session memory: a
//! structured notes document kept up to date in the background, so that a later compaction
//! can use the notes as its summary instead of re-reading the whole history.
//!
//! Everything here is pure: the document's shape and caps, the extraction gates, the
//! embedded (model-free) extractor, and which raw tail a session-memory compact keeps.
//! The engine decides when to run an extraction, stores the document and
//! `last_summarized_message_id`, and builds the compacted history.
//!
//! # The document
//!
//! Ten sections, in the order of [`SECTIONS`]. Each section is rendered as
//!
//! ```text
//! # Heading
//! _description_
//!
//! body (only when the section has one)
//!
//! ```
//!
//! so an empty section is exactly `# Heading\n_description_\n\n` and [`template`] is the
//! ten empty sections. Every function that returns a document re-renders it in this
//! canonical shape: headings and descriptions are always ours, bodies have their lines'
//! trailing whitespace and their leading and trailing blank lines removed.
//!
//! Reading a document back (ours or a model's) is lenient, because models drift:
//! - a heading is a line of one to three `#`, a space and one of our headings (ASCII case
//!   ignored), outside a fenced code block; any other line is body text, so a `# comment`
//!   inside a shell snippet stays where it is;
//! - the first non-blank body line is dropped when it is the section's description (with
//!   or without its underscores, whitespace ignored), because we render our own;
//! - a heading that appears twice collects both bodies;
//! - text before the first heading is not part of the structure and is dropped (models
//!   sometimes open with a sentence about their answer); it still counts as content for
//!   [`is_template`].
//!
//! # Caps
//!
//! Sizes are characters / 4, like the rest of the daemon's estimates. [`enforce_caps`]
//! cuts each section body to [`MAX_SECTION_TOKENS`], then, if the whole document is still
//! over [`MAX_TOTAL_TOKENS`], cuts the largest bodies to one common size (the largest that
//! fits), so small sections are never sacrificed for a big one. Cuts fall on line
//! boundaries and leave a note saying how many lines went; the Worklog keeps its newest
//! lines, every other section its oldest (a section's first lines usually hold its
//! substance, a log's last lines its most recent steps). `enforce_caps` is idempotent.

/// The sections, in order: (heading, one-line description). The descriptions tell a model
/// (and a reader) what belongs where; they are our own words.
pub const SECTIONS: [(&str, &str); 10] = [
    (
        "Session Title",
        "A short, distinctive title for this session: a few words, no filler.",
    ),
    (
        "Current State",
        "What is being worked on right now, what was just finished, and the next step.",
    ),
    (
        "Task Specification",
        "What the user asked for: goals, requirements, constraints and the decisions they made.",
    ),
    (
        "Files and Functions",
        "The files and functions that matter: what each one holds and what was done to it.",
    ),
    (
        "Workflow",
        "The commands that were run (build, test, lint, run) and how to read their output.",
    ),
    (
        "Errors and Corrections",
        "Errors that came up and how they were fixed; approaches that failed; corrections from the user.",
    ),
    (
        "Codebase and System Documentation",
        "How the relevant parts of the system fit together: components, data flow, conventions.",
    ),
    (
        "Learnings",
        "What worked, what did not, what to avoid, and what the user prefers.",
    ),
    (
        "Key Results",
        "Answers, findings and results the user asked for, stated exactly.",
    ),
    (
        "Worklog",
        "A terse log of the steps taken, one line each, oldest first.",
    ),
];

pub(super) const TITLE: usize = 0;
pub(super) const STATE: usize = 1;
pub(super) const TASK: usize = 2;
pub(super) const FILES: usize = 3;
pub(super) const WORKFLOW: usize = 4;
pub(super) const ERRORS: usize = 5;
pub(super) const RESULTS: usize = 8;
pub(super) const WORKLOG: usize = 9;
pub(super) const N: usize = SECTIONS.len();

pub const MAX_SECTION_TOKENS: u64 = 2_000;
pub const MAX_TOTAL_TOKENS: u64 = 12_000;

/// Characters per estimated token (the daemon-wide rule, see `tokens`).
pub(super) const CHARS_PER_TOKEN: usize = 4;

pub(super) fn chars(s: &str) -> usize {
    s.chars().count()
}

pub(super) fn token_chars(tokens: u64) -> usize {
    usize::try_from(tokens)
        .unwrap_or(usize::MAX)
        .saturating_mul(CHARS_PER_TOKEN)
}

mod document;
mod extractor;
mod gates;
mod keep;

pub use document::*;
pub use extractor::*;
pub use gates::*;
pub use keep::*;

#[cfg(test)]
mod tests;
