//! The API-level message: what `messages[]` of a Messages API request holds.

use ctxd_protocol::ContentBlock;
use serde::Serialize;

use super::shown::Shown;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One message of the request. Field order is the wire order.
///
/// A compile holds its blocks as `Block`s, borrowed from the records they come from
/// until a stage changes one: most of a history reaches the wire unchanged, and copying
/// it would be most of a compile's work.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiMessage<B = ContentBlock> {
    pub role: Role,
    pub content: Vec<B>,
}

/// A content block of a compile's messages: the record's own until a stage changes it,
/// and while it is, where it is in the transcript.
#[derive(Debug, Clone)]
pub(crate) struct Block<'a> {
    shown: Shown<'a, ContentBlock>,
    source: Option<Source>,
}

/// Names a sequence of records that only grows at its end (a session's transcript):
/// within one lineage, a position always holds the same record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lineage(std::num::NonZeroU64);

impl Lineage {
    /// A lineage no other sequence has had in this process.
    pub fn fresh() -> Lineage {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Counting from one, a u64 does not come round to zero in a process's life.
        Lineage(std::num::NonZeroU64::new(n).unwrap_or(std::num::NonZeroU64::MIN))
    }
}

/// Where a block unchanged from its record is: block `block` of the record at position
/// `record` of a transcript of `lineage`. Two blocks with the same source are the same
/// block, so the wire writer knows one unchanged since the previous request without
/// comparing its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Source {
    pub lineage: Lineage,
    pub(crate) record: u32,
    pub(crate) block: u32,
}

impl<'a> Block<'a> {
    /// A block of the stage's own making.
    pub fn new(v: ContentBlock) -> Self {
        Block {
            shown: Shown::new(v),
            source: None,
        }
    }

    /// A record's block, passed on unchanged; `source` says where it is when the record
    /// is the transcript's own.
    pub fn of_record(v: &'a ContentBlock, source: Option<Source>) -> Self {
        Block {
            shown: Shown::Kept(v),
            source,
        }
    }

    /// The block to change, copied out of its record first if still borrowed; it is no
    /// longer the record's.
    pub(crate) fn to_mut(&mut self) -> &mut ContentBlock {
        self.source = None;
        self.shown.to_mut()
    }

    pub fn into_owned(self) -> ContentBlock {
        self.shown.into_owned()
    }

    /// Where the block is in the transcript, while it is its record's own.
    #[cfg(test)]
    pub(crate) fn source(&self) -> Option<Source> {
        self.source
    }
}

impl std::ops::Deref for Block<'_> {
    type Target = ContentBlock;
    fn deref(&self) -> &ContentBlock {
        &self.shown
    }
}

impl Serialize for Block<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

/// Blocks are equal as they would be sent, borrowed or copied, wherever they came from.
impl PartialEq for Block<'_> {
    fn eq(&self, other: &Self) -> bool {
        *self.shown == *other.shown
    }
}

/// Read and write access to a message's block, owned or borrowed alike; writing copies
/// a borrowed block first.
pub trait BlockMut {
    fn block(&self) -> &ContentBlock;
    fn block_mut(&mut self) -> &mut ContentBlock;
    fn into_block(self) -> ContentBlock;
    /// Where the block is in the transcript, when it is known to be its record's own.
    fn source(&self) -> Option<Source> {
        None
    }
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
    fn source(&self) -> Option<Source> {
        self.source
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

/// How runtime text addressed to the model opens (see `system_reminder`).
pub const REMINDER_OPEN: &str = "<system-reminder>";

/// Wraps model-facing runtime text the way models already know it.
pub(crate) fn system_reminder(text: &str) -> String {
    format!("<system-reminder>\n{text}\n</system-reminder>")
}
