//! The ctxd engine: store, sessions, pipeline, RPC server. See ARCHITECTURE.md.

pub mod clock;
pub mod daemon;
pub mod discovery;
pub mod engine;
pub mod error;
pub mod git;
pub mod hooks;
pub mod import;
pub mod pipeline;
pub mod providers;
pub mod rpc;
pub mod store;
pub mod watch;
