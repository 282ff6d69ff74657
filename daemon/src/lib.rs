//! The ctxd daemon: its paths and start (`daemon`) and the JSON-RPC server (`rpc`) over
//! the engine. See ARCHITECTURE.md.

pub mod daemon;
#[cfg(test)]
mod fuzz;
mod metrics;
pub mod proxy;
pub mod retention;
pub(crate) mod rpc;
