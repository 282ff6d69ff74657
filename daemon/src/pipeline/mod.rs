//! Pure stages: (projection, state, config, clock) -> (request, effects). No I/O, no async.
//! Everything that decides a byte of the compiled request lives here.

pub mod attachments;
pub mod autocompact;
pub mod budget;
pub mod cache_break;
pub mod cache_markers;
pub mod cache_prefix;
pub mod capabilities;
pub mod changed_files;
#[cfg(test)]
pub(crate) mod choices;
pub mod collapse;
pub mod compile;
pub mod contract;
pub mod digest;
pub mod latch;
pub mod mentions;
pub mod message;
pub mod microcompact;
pub mod normalize;
pub mod openai_chat;
pub mod plan_mode;
pub mod projection;
pub mod records;
pub mod relevant_memories;
pub mod reported;
pub mod sections;
pub mod session_memory;
pub mod shown;
pub mod skills;
pub mod snip;
pub mod system;
pub mod task_reminder;
pub mod text;
pub mod thresholds;
pub mod tokens;
pub mod tool_plan;
pub mod tools;
pub mod usage;
pub mod user_context;
pub mod wire;
