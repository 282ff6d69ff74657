//! The API-level message: what `messages[]` of a Messages API request holds.

use ctxd_protocol::ContentBlock;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One message of the request. Field order is the wire order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiMessage {
    pub role: Role,
    pub content: Vec<ContentBlock>,
}

impl ApiMessage {
    pub fn user(content: Vec<ContentBlock>) -> Self {
        ApiMessage {
            role: Role::User,
            content,
        }
    }
    pub fn assistant(content: Vec<ContentBlock>) -> Self {
        ApiMessage {
            role: Role::Assistant,
            content,
        }
    }
}

/// How runtime text addressed to the model opens (see [`system_reminder`]).
pub const REMINDER_OPEN: &str = "<system-reminder>";

/// Wraps model-facing runtime text the way models already know it.
pub fn system_reminder(text: &str) -> String {
    format!("<system-reminder>\n{text}\n</system-reminder>")
}
