//! The ctxd engine: store, sessions, pipeline, RPC server. See ARCHITECTURE.md.

pub mod daemon;
pub mod discovery;
pub mod engine;
pub mod error;
#[cfg(test)]
mod fuzz;
pub mod git;
pub mod hooks;
pub mod import;
pub mod providers;
pub mod rpc;
pub mod safe_read;
pub mod store;
mod sync;
pub mod watch;
