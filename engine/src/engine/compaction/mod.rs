//! Making room: the full compact and its circuit breaker, context collapse, session
//! memory and its compact, the provider's own compaction, and which summariser writes a
//! summary.

pub(super) mod collapse;
pub(super) mod compact;
pub(super) mod memory;
pub(super) mod server_compact;
pub(super) mod summariser;
