//! The ctxd wire contract: every JSON-RPC method name, its params and result types,
//! the session event stream, error codes, and the OpenRPC document generated from them.
//!
//! It also holds where the daemon's socket is (`socket`), the one rule clients and the
//! daemon must agree on outside the wire. This crate depends on serde, serde_json,
//! schemars and libc only, so any client can embed it without pulling in the
//! daemon.

pub mod agents;
pub mod attachments;
pub mod cache;
pub mod capabilities;
pub mod compile;
pub mod error;
pub mod event;
pub mod handshake;
pub mod hooks;
pub mod memory;
pub mod methods;
pub mod models;
pub mod openrpc;
pub mod prompt;
pub mod record;
pub mod reference;
mod request_form;
pub mod send;
pub mod session;
pub mod settings;
pub mod socket;
pub mod transcript;

/// Version of the wire contract, `MAJOR.MINOR`. An incompatible change bumps the major;
/// an additive one (a method, an optional param, a result field, an event kind) bumps the
/// minor. See `handshake` for negotiation.
pub const PROTOCOL_VERSION: &str = "1.4";

pub use agents::*;
pub use attachments::*;
pub use cache::*;
pub use capabilities::*;
pub use compile::*;
pub use error::*;
pub use event::*;
pub use handshake::*;
pub use hooks::*;
pub use memory::*;
pub use methods::*;
pub use prompt::*;
pub use record::*;
pub use send::*;
pub use session::*;
pub use settings::*;
pub use transcript::*;
