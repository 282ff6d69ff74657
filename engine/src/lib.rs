//! The engine: one state cell per live session, the turn (compile, collapse, compact,
//! send), and the edges it asks for I/O — instruction and skill discovery, hooks, file
//! watching, the git snapshot, Claude Code import (the model providers are
//! `ctxd-providers`). It knows no JSON-RPC:
//! the daemon's RPC server calls in through [`Engine`].

pub mod discovery;
mod engine;
mod git;
pub mod hooks;
pub mod import;
pub mod validate;
pub(crate) mod watch;

pub use engine::{
    ActivityStats, CompactionKind, DiscoveryDefaults, EVENT_BUFFER, Emitted, Engine, Subscription,
    TurnStats, as_caller,
};
