//! How a streamed model call fails. A leaf of `providers`: the Messages stream and the
//! Chat Completions stream both end in it.

use std::time::Duration;

/// Why a streamed call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// The provider refused or failed: its HTTP status when it answered with one, the
    /// error's type (`overloaded_error`, `invalid_request_error`, ...) and message.
    #[error("{message}")]
    Provider {
        status: Option<u16>,
        kind: Option<String>,
        message: String,
    },
    /// The stream broke the event grammar or ended early.
    #[error("the provider's stream is malformed: {0}")]
    Malformed(String),
    #[error("the provider's answer is over {0} bytes")]
    TooBig(usize),
    #[error("the provider did not finish within {0:?}")]
    Timeout(Duration),
    /// Names what is wrong (an unset key variable, a bad URL or header), never a secret.
    #[error("settings.provider: {0}")]
    Misconfigured(String),
    /// The provider said the request does not fit its window (or is too large).
    #[error("{message}")]
    TooLong {
        status: u16,
        kind: Option<String>,
        token_gap: Option<u64>,
        message: String,
    },
}
