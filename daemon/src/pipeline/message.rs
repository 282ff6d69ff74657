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
///
/// A compile holds its blocks as [`Block`]s, borrowed from the records they come from
/// until a stage changes one: most of a history reaches the wire unchanged, and copying
/// it would be most of a compile's work.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiMessage<B = ContentBlock> {
    pub role: Role,
    pub content: Vec<B>,
}

/// A content block of a compile's messages: the record's own until a stage changes it.
pub type Block<'a> = super::shown::Shown<'a, ContentBlock>;

/// Read and write access to a message's block, owned or borrowed alike; writing copies
/// a borrowed block first.
pub trait BlockMut {
    fn block(&self) -> &ContentBlock;
    fn block_mut(&mut self) -> &mut ContentBlock;
    fn into_block(self) -> ContentBlock;
}

impl BlockMut for ContentBlock {
    fn block(&self) -> &ContentBlock {
        self
    }
    fn block_mut(&mut self) -> &mut ContentBlock {
        self
    }
    fn into_block(self) -> ContentBlock {
        self
    }
}

impl BlockMut for Block<'_> {
    fn block(&self) -> &ContentBlock {
        self
    }
    fn block_mut(&mut self) -> &mut ContentBlock {
        self.to_mut()
    }
    fn into_block(self) -> ContentBlock {
        self.into_owned()
    }
}

impl ApiMessage<Block<'_>> {
    /// The message with blocks of its own (for callers that keep it past the records).
    pub fn into_owned(self) -> ApiMessage {
        ApiMessage {
            role: self.role,
            content: self.content.into_iter().map(Block::into_owned).collect(),
        }
    }
}

impl<B> ApiMessage<B> {
    pub fn user(content: Vec<B>) -> Self {
        ApiMessage {
            role: Role::User,
            content,
        }
    }
    pub fn assistant(content: Vec<B>) -> Self {
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
