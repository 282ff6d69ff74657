//! Instruction-file discovery (CLAUDE.md chain).
