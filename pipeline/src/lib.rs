//! Pure stages: (projection, state, config, clock) -> (request, effects). No I/O, no async.
//! Everything that decides a byte of the compiled request lives here, with the leaves
//! every crate above shares: the clock as an input (`clock`), every bound (`limits`) and
//! the conversions that stop at a bound (`saturate`), and `sync`'s lock.
//!
//! The files are grouped by what a reader looks for: `stages/` (the request's assembly),
//! `reminders/` (attachments and reminders), `compaction/` (autocompact, collapse, snip,
//! session memory, microcompact) and `helpers/`, each a module of its own. Every module
//! of a group is also re-exported here by name (`ctxd_pipeline::budget`), so a move
//! between groups changes no caller.

pub mod clock;
pub mod limits;
pub mod saturate;
pub mod sync;

pub mod compaction;
pub mod helpers;
pub mod reminders;
pub mod stages;

pub use compaction::autocompact;
pub use compaction::collapse;
pub(crate) use compaction::cost;
pub use compaction::items;
pub(crate) use compaction::lean;
pub use compaction::microcompact;
pub use compaction::session_memory;
pub use compaction::snip;
#[cfg(test)]
pub(crate) use helpers::choices;
pub use helpers::text;
pub use reminders::attachments;
pub use reminders::capabilities;
pub use reminders::changed_files;
pub use reminders::kinds;
pub use reminders::mentions;
pub use reminders::plan_mode;
pub use reminders::relevant_memories;
pub(crate) use reminders::reported;
pub use reminders::skills;
pub use reminders::task_reminder;
pub use stages::budget;
pub use stages::cache_break;
pub(crate) use stages::cache_markers;
pub use stages::cache_prefix;
pub use stages::compile;
pub use stages::digest;
pub use stages::latch;
pub use stages::message;
pub use stages::normalize;
pub use stages::openai_chat;
pub use stages::projection;
pub use stages::records;
pub use stages::sections;
pub use stages::system;
pub use stages::thresholds;
pub use stages::tokens;
pub use stages::tool_plan;
pub(crate) use stages::tools;
pub(crate) use stages::user_context;
pub use stages::wire;
