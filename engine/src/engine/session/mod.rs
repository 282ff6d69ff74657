//! A session's life: its cell and the LRU of cells, what a cell holds once loaded, the
//! transcript and every write that grows it, the session operations (create, fork,
//! append, read, snip), queued input, import, sub-agent threads, plan mode, and the
//! checks that keep a cell current when other daemons share the store.

pub(super) mod agents;
pub(super) mod cells;
pub(super) mod events;
pub(super) mod import;
pub(super) mod loaded;
pub(super) mod ops;
pub(super) mod plan_mode;
pub(super) mod queue;
pub(super) mod remote;
pub(super) mod transcript;
