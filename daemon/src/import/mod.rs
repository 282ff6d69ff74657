//! Importers of other tools' transcripts.

pub mod claude_code;
