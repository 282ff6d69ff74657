//! Attachment kinds: every `attachment.type` ctxd emits or renders, in one place. The
//! feature modules that make an attachment and the renderer that words it both name its
//! kind from here, and the renderer matches every kind exhaustively; a kind ctxd does not
//! know (a client's own, or a newer Claude Code's) is kept verbatim as `Other`.

/// An attachment's `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AttachmentKind<'a> {
    DateChange,
    HookAdditionalContext,
    HookBlockingError,
    /// Claude Code's queued input (imported).
    QueuedCommands,
    /// ctxd's queued input (`transcript.queue`).
    QueuedCommand,
    DeferredToolsDelta,
    AgentListingDelta,
    McpInstructionsDelta,
    SkillListing,
    InvokedSkills,
    /// An externally changed file: ctxd's, or Claude Code's (`changed_files`).
    EditedTextFile,
    ChangedFiles,
    NestedMemory,
    AtMention,
    /// The plan re-injected after a compaction: ctxd's, or Claude Code's reference.
    PlanFile,
    PlanFileReference,
    PlanMode,
    PlanModeExit,
    PlanModeReentry,
    TodoReminder,
    TaskReminder,
    RelevantMemories,
    /// Any other type, as written.
    Other(&'a str),
}

macro_rules! kinds {
    ($($variant:ident = $name:literal as $konst:ident),* $(,)?) => {
        $(#[doc = concat!("`", $name, "`")] pub const $konst: &str = $name;)*

        impl<'a> AttachmentKind<'a> {
            /// The kind a `type` string names.
            pub(crate) fn of(name: &'a str) -> AttachmentKind<'a> {
                match name {
                    $($name => AttachmentKind::$variant,)*
                    other => AttachmentKind::Other(other),
                }
            }

            /// The `type` string, exactly as written.
            pub const fn as_str(self) -> &'a str {
                match self {
                    $(AttachmentKind::$variant => $name,)*
                    AttachmentKind::Other(name) => name,
                }
            }
        }
    };
}

kinds! {
    DateChange = "date_change" as DATE_CHANGE,
    HookAdditionalContext = "hook_additional_context" as HOOK_ADDITIONAL_CONTEXT,
    HookBlockingError = "hook_blocking_error" as HOOK_BLOCKING_ERROR,
    QueuedCommands = "queued_commands" as QUEUED_COMMANDS,
    QueuedCommand = "queued_command" as QUEUED_COMMAND,
    DeferredToolsDelta = "deferred_tools_delta" as DEFERRED_TOOLS_DELTA,
    AgentListingDelta = "agent_listing_delta" as AGENT_LISTING_DELTA,
    McpInstructionsDelta = "mcp_instructions_delta" as MCP_INSTRUCTIONS_DELTA,
    SkillListing = "skill_listing" as SKILL_LISTING,
    InvokedSkills = "invoked_skills" as INVOKED_SKILLS,
    EditedTextFile = "edited_text_file" as EDITED_TEXT_FILE,
    ChangedFiles = "changed_files" as CHANGED_FILES,
    NestedMemory = "nested_memory" as NESTED_MEMORY,
    AtMention = "at_mention" as AT_MENTION,
    PlanFile = "plan_file" as PLAN_FILE,
    PlanFileReference = "plan_file_reference" as PLAN_FILE_REFERENCE,
    PlanMode = "plan_mode" as PLAN_MODE,
    PlanModeExit = "plan_mode_exit" as PLAN_MODE_EXIT,
    PlanModeReentry = "plan_mode_reentry" as PLAN_MODE_REENTRY,
    TodoReminder = "todo_reminder" as TODO_REMINDER,
    TaskReminder = "task_reminder" as TASK_REMINDER,
    RelevantMemories = "relevant_memories" as RELEVANT_MEMORIES,
}

impl AttachmentKind<'_> {
    /// Kinds whose renderer says everything there is: when it has nothing to say, the
    /// attachment shows nothing (no fallback to its `content` or fields).
    pub(crate) fn silent_when_empty(self) -> bool {
        match self {
            AttachmentKind::DeferredToolsDelta
            | AttachmentKind::AgentListingDelta
            | AttachmentKind::McpInstructionsDelta
            | AttachmentKind::SkillListing
            | AttachmentKind::InvokedSkills => true,
            AttachmentKind::DateChange
            | AttachmentKind::HookAdditionalContext
            | AttachmentKind::HookBlockingError
            | AttachmentKind::QueuedCommands
            | AttachmentKind::QueuedCommand
            | AttachmentKind::EditedTextFile
            | AttachmentKind::ChangedFiles
            | AttachmentKind::NestedMemory
            | AttachmentKind::AtMention
            | AttachmentKind::PlanFile
            | AttachmentKind::PlanFileReference
            | AttachmentKind::PlanMode
            | AttachmentKind::PlanModeExit
            | AttachmentKind::PlanModeReentry
            | AttachmentKind::TodoReminder
            | AttachmentKind::TaskReminder
            | AttachmentKind::RelevantMemories
            | AttachmentKind::Other(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_and_unknown_ones_stay_verbatim() {
        for name in [
            DATE_CHANGE,
            AT_MENTION,
            PLAN_MODE_REENTRY,
            RELEVANT_MEMORIES,
        ] {
            let kind = AttachmentKind::of(name);
            assert!(!matches!(kind, AttachmentKind::Other(_)), "{name}");
            assert_eq!(kind.as_str(), name);
        }
        assert_eq!(
            AttachmentKind::of("a_newer_kind"),
            AttachmentKind::Other("a_newer_kind")
        );
        assert_eq!(AttachmentKind::of("a_newer_kind").as_str(), "a_newer_kind");
    }
}
