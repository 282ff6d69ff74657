//! What a compile adds before it projects the transcript: the attachment collection and
//! each source it asks (instruction files, read files, `@` mentions, capabilities,
//! skills, relevant memories), and the memoized system sections. Whatever a source
//! decides is stored, so every later compile, restart and fork replays the same bytes.

pub(super) mod capabilities;
pub(super) mod collect;
pub(super) mod files;
pub(super) mod memory_prefetch;
pub(super) mod mentions;
pub(super) mod sections;
pub(super) mod skills;
pub(super) mod source_input;
