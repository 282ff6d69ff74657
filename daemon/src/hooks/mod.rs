//! Hooks from Claude Code's settings files.
//!
//! The decisions are pure and tested here: what a settings file configures
//! ([`config`]), which hooks match an event ([`matcher`], [`config::Effective`]), what a
//! hook's exit code and output mean and how parallel results merge ([`decide`]), the
//! event JSON a hook reads ([`input`]) and the transcript lines it may read
//! ([`transcript`]). The edges are [`files`] (settings files on disk, trust, stamps)
//! and [`runner`] (the process). The engine (`engine/hooks.rs`) decides when an event
//! fires and what its outcome does to the session.

pub mod agent_tools;
pub mod config;
pub mod decide;
pub mod files;
pub mod http;
pub mod input;
pub mod matcher;
pub mod prompt;
pub mod runner;
pub mod transcript;
pub mod trust;
