//! The ctxd wire contract: every JSON-RPC method name, its params and result types,
//! the session event stream, error codes, and the OpenRPC document generated from them.
//!
//! This crate depends on serde, serde_json and schemars only, so any client can embed it
//! without pulling in the daemon.

pub mod capabilities;
pub mod compile;
pub mod error;
pub mod event;
pub mod memory;
pub mod methods;
pub mod openrpc;
pub mod record;
pub mod session;
pub mod transcript;

/// Version of the wire contract. Bumped on every incompatible change; additive changes
/// bump the minor part.
pub const PROTOCOL_VERSION: &str = "1.0";

pub use capabilities::*;
pub use compile::*;
pub use error::*;
pub use event::*;
pub use memory::*;
pub use methods::*;
pub use record::*;
pub use session::*;
pub use transcript::*;
