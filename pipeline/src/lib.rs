//! Pure stages: (projection, state, config, clock) -> (request, effects). No I/O, no async.
//! Everything that decides a byte of the compiled request lives here, with the leaves
//! every crate above shares: the clock as an input (`clock`), every bound (`limits`) and
//! the conversions that stop at a bound (`saturate`), and `sync`'s lock.
//!
//! The files are grouped by what a reader looks for: `stages/` (the request's assembly),
//! `reminders/` (attachments and reminders), `compaction/` (autocompact, collapse, snip,
//! session memory, microcompact) and `helpers/`; the module paths stay flat
//! (`ctxd_pipeline::budget`), so a move between groups changes no caller.

#[path = "reminders/attachments.rs"]
pub mod attachments;
#[path = "compaction/autocompact.rs"]
pub mod autocompact;
#[path = "stages/budget.rs"]
pub mod budget;
#[path = "stages/cache_break.rs"]
pub mod cache_break;
#[path = "stages/cache_markers.rs"]
pub(crate) mod cache_markers;
#[path = "stages/cache_prefix.rs"]
pub mod cache_prefix;
#[path = "reminders/capabilities.rs"]
pub mod capabilities;
#[path = "reminders/changed_files.rs"]
pub mod changed_files;
#[cfg(test)]
#[path = "helpers/choices.rs"]
pub(crate) mod choices;
pub mod clock;
#[path = "compaction/collapse/mod.rs"]
pub mod collapse;
#[path = "stages/compile.rs"]
pub mod compile;
#[path = "stages/contract.rs"]
pub(crate) mod contract;
#[path = "compaction/cost.rs"]
pub(crate) mod cost;
#[path = "stages/digest.rs"]
pub mod digest;
#[path = "compaction/items.rs"]
pub mod items;
#[path = "reminders/kinds.rs"]
pub mod kinds;
#[path = "stages/latch.rs"]
pub mod latch;
#[path = "compaction/lean.rs"]
pub(crate) mod lean;
pub mod limits;
#[path = "reminders/mentions.rs"]
pub mod mentions;
#[path = "stages/message.rs"]
pub mod message;
#[path = "compaction/microcompact.rs"]
pub mod microcompact;
#[path = "stages/normalize/mod.rs"]
pub mod normalize;
#[path = "stages/openai_chat.rs"]
pub mod openai_chat;
#[path = "reminders/plan_mode.rs"]
pub mod plan_mode;
#[path = "stages/projection.rs"]
pub mod projection;
#[path = "stages/records.rs"]
pub mod records;
#[path = "reminders/relevant_memories.rs"]
pub mod relevant_memories;
#[path = "reminders/reported.rs"]
pub(crate) mod reported;
pub mod saturate;
#[path = "stages/sections.rs"]
pub mod sections;
#[path = "compaction/session_memory/mod.rs"]
pub mod session_memory;
#[path = "stages/shown.rs"]
pub(crate) mod shown;
#[path = "reminders/skills.rs"]
pub mod skills;
#[path = "compaction/snip.rs"]
pub mod snip;
pub mod sync;
#[path = "stages/system.rs"]
pub mod system;
#[path = "reminders/task_reminder.rs"]
pub mod task_reminder;
#[path = "helpers/text.rs"]
pub mod text;
#[path = "stages/thresholds.rs"]
pub mod thresholds;
#[path = "stages/tokens.rs"]
pub mod tokens;
#[path = "stages/tool_plan.rs"]
pub mod tool_plan;
#[path = "stages/tools.rs"]
pub(crate) mod tools;
#[path = "stages/usage.rs"]
pub(crate) mod usage;
#[path = "stages/user_context.rs"]
pub(crate) mod user_context;
#[path = "stages/wire.rs"]
pub mod wire;
