//! The request's SHA-256 (`metadata.request_sha256`), resumed from the previous request's
//! where the two bodies agree: consecutive requests share a long prefix (the system
//! section, the tools, every earlier message), and comparing bytes is many times cheaper
//! than hashing them. SHA-256 absorbs its input in order, so its state after a prefix is
//! the same whatever follows; the digest is exactly `Sha256::digest(body)`.

use sha2::{Digest, Sha256};

/// Bytes between kept states: a multiple of SHA-256's 64-byte block. Up to one stride
/// before the first changed byte is hashed again, and a compile copies the kept states
/// (about 110 bytes each) it resumes from: 2 KiB keeps both small.
const STRIDE: usize = 2 * 1024;

/// A body and the hasher's state after each whole `STRIDE` of it.
#[derive(Clone, Default)]
pub struct BodyDigest {
    /// Shared with the wire memo of the same request (`wire::WireMemo`): one copy.
    body: std::sync::Arc<str>,
    /// `states[i]` has absorbed `body[..(i + 1) * STRIDE]`.
    states: Vec<Sha256>,
    /// The body's digest, hex.
    hex: String,
}

impl BodyDigest {
    /// The body this digest was taken of.
    pub(crate) fn body(&self) -> std::sync::Arc<str> {
        self.body.clone()
    }

    /// Whether this digest holds that very body (not a copy).
    pub(crate) fn holds(&self, body: &std::sync::Arc<str>) -> bool {
        std::sync::Arc::ptr_eq(&self.body, body)
    }

    /// Whether this is the digest of `body`.
    pub(crate) fn is_of(&self, body: &str) -> bool {
        self.body.as_bytes() == body.as_bytes()
    }

    /// The digest, in lowercase hex.
    pub(crate) fn hex(&self) -> &str {
        &self.hex
    }
}

impl std::fmt::Debug for BodyDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyDigest")
            .field("body_bytes", &self.body.len())
            .field("states", &self.states.len())
            .finish()
    }
}

/// The hex SHA-256 of `body`, and what the next request resumes from.
pub(crate) fn sha256_hex(body: &str, previous: Option<&BodyDigest>) -> (String, BodyDigest) {
    let bytes = body.as_bytes();
    // Whole strides the two bodies agree on, compared a stride at a time.
    let reusable = previous.map_or(0, |p| {
        let old = p.body.as_bytes();
        let most = p.states.len().min(bytes.len() / STRIDE);
        (0..most)
            .take_while(|k| {
                old[k * STRIDE..(k + 1) * STRIDE] == bytes[k * STRIDE..(k + 1) * STRIDE]
            })
            .count()
    });
    let mut states: Vec<Sha256> = previous.map_or_else(Vec::new, |p| p.states[..reusable].to_vec());
    let mut hasher = states.last().cloned().unwrap_or_default();
    let mut at = reusable * STRIDE;
    while at + STRIDE <= bytes.len() {
        hasher.update(&bytes[at..at + STRIDE]);
        at += STRIDE;
        states.push(hasher.clone());
    }
    hasher.update(&bytes[at..]);
    let hex = hex::encode(hasher.finalize());
    (
        hex.clone(),
        BodyDigest {
            body: std::sync::Arc::from(body),
            states,
            hex,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn plain(body: &str) -> String {
        hex::encode(Sha256::digest(body.as_bytes()))
    }

    proptest! {
        /// Whatever the previous body (a prefix of this one, sharing some of it, or
        /// nothing), the digest is the body's own.
        #[test]
        fn resumed_digest_is_the_plain_digest(
            shared in 0usize..40_000,
            old_tail in 0usize..20_000,
            new_tail in 0usize..20_000,
            fill in any::<u8>(),
        ) {
            let base: String = (0..shared).map(|i| char::from(b"abcdefghijklmnopqrstuvwxyz"[(i * 7 + usize::from(fill)) % 26])).collect();
            let old = format!("{base}{}", "x".repeat(old_tail));
            let new = format!("{base}{}", "y".repeat(new_tail));
            let (_, previous) = sha256_hex(&old, None);
            let (hex, next) = sha256_hex(&new, Some(&previous));
            prop_assert_eq!(&hex, &plain(&new));
            // And again from the new one: a chain of requests stays exact.
            let third = format!("{new}z");
            prop_assert_eq!(sha256_hex(&third, Some(&next)).0, plain(&third));
            // And the same body again.
            prop_assert_eq!(sha256_hex(&new, Some(&next)).0, plain(&new));
        }
    }

    /// The long shared prefix is not hashed again: the kept states are used (states
    /// taken from another body of the same prefix length make the digest differ).
    #[test]
    fn a_shared_prefix_resumes_from_the_kept_states() {
        let old = "a".repeat(5 * STRIDE + 10);
        let new = format!("{}b", "a".repeat(5 * STRIDE + 3));
        let (_, previous) = sha256_hex(&old, None);
        assert_eq!(sha256_hex(&new, Some(&previous)).0, plain(&new));
        let (_, other) = sha256_hex(&"c".repeat(5 * STRIDE + 10), None);
        let tampered = BodyDigest {
            body: old.clone().into(),
            states: other.states,
            hex: String::new(),
        };
        assert_ne!(sha256_hex(&new, Some(&tampered)).0, plain(&new));
        // A body that differs in its first stride resumes from nothing.
        let changed_early = format!("b{}", &new[1..]);
        assert_eq!(
            sha256_hex(&changed_early, Some(&tampered)).0,
            plain(&changed_early)
        );
    }
}
