//! Importers of other tools' transcripts.

mod chunks;
pub mod claude_code;
mod claude_code_line;
