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
// What the daemon needs of the store comes through the engine, so the daemon does not
// depend on the store crate (it knows no SQL): which store `--store` names and the
// handle [`Engine::new`] takes, and the error every engine call answers with (the
// store's, since a store write runs the engine's closures and carries their errors).
pub use ctxd_store::error::{Error, Result};
pub use ctxd_store::{DEFAULT_POOL, Store, StoreConfig};
