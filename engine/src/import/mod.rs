//! Importers of other tools' transcripts.

pub(crate) mod chunks;
pub mod claude_code;
mod claude_code_line;

#[cfg(test)]
mod summary_tests;
