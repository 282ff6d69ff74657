//! Plan mode reminders: what the model is told while the session is
//! in plan mode, when it enters again after leaving, and when it leaves.
//!
//! Everything is decided from the projection, so a restart, a fork or a replay reaches
//! the same decision: the reminders already shown are records of the transcript.
//!
//! * **Cadence.** A *turn* is a prompt the user typed. On entry the model gets a
//!   `full` reminder; then one reminder per turn, `full` on every `FULL_EVERY`th
//!   reminder since entry (1st, 6th, 11th, ...) and `sparse` otherwise. Compiles inside
//!   one turn (after tool results) add nothing.
//! * **Entry** is plan mode on while the view holds no reminder since the last exit
//!   (or none at all). When the session left plan mode earlier (a `plan_mode_exit`
//!   anywhere in the main thread, compacted or not), a `plan_mode_reentry` goes first.
//! * **Exit**: plan mode off while the view's last plan record is a reminder → one
//!   `plan_mode_exit`.
//! * **After compaction** the new history re-announces plan mode with the same `full`
//!   reminder ([`reminder`]), which counts as the first since entry of that history.
//!
//! Records use Claude Code's field names (`reminderType`, `planFilePath`, `planExists`),
//! so imported sessions render and count the same way.

use super::kinds::{PLAN_MODE, PLAN_MODE_EXIT, PLAN_MODE_REENTRY};
use std::fmt::Write as _;

use ctxd_protocol::{Record, RecordKind};
use serde_json::{Value, json};

use crate::records::{INTERRUPTED, is_user_typed};

/// Every `FULL_EVERY`th reminder since entry is a full one.
pub(crate) const FULL_EVERY: usize = 5;

/// The plan file as the session sees it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanFile<'a> {
    pub path: &'a str,
    pub exists: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReminderType {
    Full,
    Sparse,
}

impl ReminderType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Sparse => "sparse",
        }
    }
}

/// A `plan_mode` attachment.
pub fn reminder(kind: ReminderType, file: &PlanFile<'_>) -> Value {
    json!({
        "type": PLAN_MODE,
        "reminderType": kind.as_str(),
        "isSubAgent": false,
        "planFilePath": file.path,
        "planExists": file.exists,
    })
}

/// What a new history re-announces (Claude Code's order): the plan file's contents when
/// it exists, then the full reminder when the session is in plan mode (which the cadence
/// counts as the first of that history).
pub fn after_compaction(enabled: bool, path: &str, plan_text: Option<&str>) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(text) = plan_text.filter(|t| !t.trim().is_empty()) {
        out.push(json!({"type": super::kinds::PLAN_FILE_REFERENCE, "planFilePath": path, "planContent": text}));
    }
    if enabled {
        let file = PlanFile {
            path,
            exists: plan_text.is_some(),
        };
        out.push(reminder(ReminderType::Full, &file));
    }
    out
}

fn exit(file: &PlanFile<'_>) -> Value {
    json!({"type": PLAN_MODE_EXIT, "planFilePath": file.path, "planExists": file.exists})
}

fn reentry(file: &PlanFile<'_>) -> Value {
    json!({"type": PLAN_MODE_REENTRY, "planFilePath": file.path, "planExists": file.exists})
}

fn attachment_type(r: &Record) -> Option<&str> {
    if r.kind != RecordKind::Attachment || r.is_sidechain {
        return None;
    }
    r.attachment.as_ref()?.get("type")?.as_str()
}

/// A prompt the user typed (a turn), not an interruption marker.
pub fn is_turn(r: &Record) -> bool {
    !r.is_sidechain
        && is_user_typed(r)
        && !r.content.iter().any(|b| match b {
            ctxd_protocol::ContentBlock::Text { text, .. } => text.starts_with(INTERRUPTED),
            _ => false,
        })
}

/// The plan-mode attachments this compile adds. `view` is the projection (main thread,
/// after the last boundary); `all` the whole transcript (earlier exits decide re-entry).
pub fn decide<R: std::borrow::Borrow<Record>>(
    view: &[R],
    all: &[Record],
    enabled: bool,
    file: &PlanFile<'_>,
) -> Vec<Value> {
    // Walk the view once: the last plan record, reminders since the last exit, and
    // where the last reminder is. Whether a turn began after it is asked of the records
    // after it only, and only when the answer matters: a compile walks the whole view,
    // and most sessions never enter plan mode.
    let mut last: Option<&str> = None;
    let mut since_entry = 0usize;
    let mut last_reminder = 0usize;
    for (i, r) in view.iter().map(std::borrow::Borrow::borrow).enumerate() {
        match attachment_type(r) {
            Some(t @ (PLAN_MODE | PLAN_MODE_REENTRY)) => {
                if t == PLAN_MODE {
                    since_entry += 1;
                }
                last = Some(PLAN_MODE);
                last_reminder = i;
            }
            Some(PLAN_MODE_EXIT) => {
                last = Some(PLAN_MODE_EXIT);
                since_entry = 0;
            }
            _ => {}
        }
    }
    let in_plan_mode = last == Some(PLAN_MODE);
    if !enabled {
        return if in_plan_mode {
            vec![exit(file)]
        } else {
            Vec::new()
        };
    }
    if !in_plan_mode {
        let exited_before = all
            .iter()
            .any(|r| attachment_type(r) == Some(PLAN_MODE_EXIT));
        let mut out = Vec::new();
        if exited_before {
            out.push(reentry(file));
        }
        out.push(reminder(ReminderType::Full, file));
        return out;
    }
    // In plan mode, so a reminder was seen and `last_reminder` is its place.
    let turn_since_reminder = view
        .get(last_reminder + 1..)
        .is_some_and(|after| after.iter().any(|r| is_turn(r.borrow())));
    if !turn_since_reminder {
        return Vec::new();
    }
    let kind = if since_entry.is_multiple_of(FULL_EVERY) {
        ReminderType::Full
    } else {
        ReminderType::Sparse
    };
    vec![reminder(kind, file)]
}

fn field<'a>(
    obj: &'a serde_json::Map<String, Value>,
    camel: &str,
    snake: &str,
) -> Option<&'a Value> {
    obj.get(camel).or_else(|| obj.get(snake))
}

fn plan_file_of(obj: &serde_json::Map<String, Value>) -> (Option<&str>, bool) {
    (
        field(obj, "planFilePath", "plan_file_path").and_then(Value::as_str),
        field(obj, "planExists", "plan_exists")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    )
}

/// Model-facing text of `plan_mode`, `plan_mode_exit` and `plan_mode_reentry`.
pub fn render(kind: &str, obj: &serde_json::Map<String, Value>) -> Option<String> {
    let (path, exists) = plan_file_of(obj);
    match kind {
        PLAN_MODE => {
            // Records written by an earlier version carried their text.
            if let Some(text) = obj.get("content").and_then(Value::as_str) {
                return Some(text.to_string());
            }
            let sparse = field(obj, "reminderType", "reminder_type").and_then(Value::as_str)
                == Some("sparse");
            Some(if sparse {
                sparse_text(path, exists)
            } else {
                full_text(path, exists)
            })
        }
        PLAN_MODE_EXIT => Some(exit_text(path, exists)),
        PLAN_MODE_REENTRY => Some(reentry_text(path, exists)),
        _ => None,
    }
}

fn full_text(path: Option<&str>, exists: bool) -> String {
    let file = match (path, exists) {
        (Some(p), true) => format!(
            "A plan file already exists at {p}. Read it and improve it in place with your file-editing tool."
        ),
        (Some(p), false) => {
            format!("No plan file exists yet. Write your plan to {p} with your file-writing tool.")
        }
        (None, _) => "Write your plan in your answer.".to_string(),
    };
    format!(
        "Plan mode is active. The user wants a plan before anything changes: you MUST NOT \
         edit files (except the plan file named below), run commands that modify anything, \
         change configuration, commit, or otherwise alter the system. This overrides every \
         other instruction you have received.\n\n\
         ## Plan file\n{file} Build the plan there as you go: it is the only file you may \
         change; everything else is read-only.\n\n\
         ## How to work\n\
         1. Understand the request: read the code it concerns and ask the user about \
         anything ambiguous.\n\
         2. Explore the design: weigh the possible approaches against the existing code.\n\
         3. Write the plan: the steps, the files each one touches, and how the result will \
         be verified.\n\
         4. Ask the user to approve the plan. Do not start implementing until they do."
    )
}

fn sparse_text(path: Option<&str>, exists: bool) -> String {
    let file = match (path, exists) {
        (Some(p), true) => format!("the plan file at {p}"),
        (Some(p), false) => format!("the plan file at {p} (not written yet)"),
        (None, _) => "your plan".to_string(),
    };
    format!(
        "Plan mode is still active (the full instructions are earlier in the conversation): \
         everything is read-only except {file}. Finish the plan and ask the user to approve \
         it before changing anything."
    )
}

fn exit_text(path: Option<&str>, exists: bool) -> String {
    let mut text = "## Exited plan mode\nPlan mode is off: you may now edit files, run \
                    commands and make the changes the user asked for."
        .to_string();
    if let (Some(p), true) = (path, exists) {
        let _ = write!(text, " The plan is at {p} if you need to refer to it.");
    }
    text
}

fn reentry_text(path: Option<&str>, exists: bool) -> String {
    let next = match (path, exists) {
        (Some(p), true) => format!(
            "The plan file from that earlier planning is still at {p}. Read it first, then \
             decide whether the user's current request continues that plan or needs a new \
             one, and update the file accordingly."
        ),
        (Some(p), false) => format!("No plan file was written then; start the plan at {p}."),
        (None, _) => "Start a new plan.".to_string(),
    };
    format!(
        "## Re-entering plan mode\nYou are back in plan mode after leaving it earlier in \
         this session. {next}"
    )
}

#[cfg(test)]
mod tests;
