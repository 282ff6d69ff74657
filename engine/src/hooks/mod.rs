//! Hooks from Claude Code's settings files.
//!
//! The decisions are pure and tested here: what a settings file configures
//! (`config`), which hooks match an event (`matcher`, `config::Effective`), what a
//! hook's exit code and output mean and how parallel results merge (`decide`), the
//! event JSON a hook reads (`input`) and the transcript lines it may read
//! (`transcript`). The edges are `files` (settings files on disk, trust, stamps; the
//! trust list itself is `ctxd_fs::trust`)
//! and `runner` (the process). The engine (`engine/hooks/mod.rs`) decides when an event
//! fires and what its outcome does to the session.

pub(crate) mod agent_tools;
pub(crate) mod config;
pub(crate) mod decide;
pub(crate) mod files;
pub(crate) mod http;
pub(crate) mod input;
pub(crate) mod matcher;
pub(crate) mod prompt;
pub(crate) mod runner;
pub(crate) mod transcript;
