//! The model catalogue: what ctxd knows of each Claude model (context window, output
//! limit, thinking, list prices), so a session names a model and gets its thresholds,
//! and `ctx replay` prices each call at the model's rates. A model not listed here needs
//! its profile given explicitly (`context_window` at least).
//!
//! The figures are Anthropic's published ones as of [`CATALOGUE_DATE`]; prices are US
//! dollars per million tokens.

use serde::{Deserialize, Serialize};

/// When the figures below were taken from Anthropic's model and pricing pages.
pub const CATALOGUE_DATE: &str = "2026-12-01";

/// Prices of one model, dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    pub input: f64,
    /// Writing the cache with the default five-minute TTL.
    pub cache_write_5m: f64,
    /// Writing the cache with the one-hour TTL.
    pub cache_write_1h: f64,
    pub cache_read: f64,
    pub output: f64,
}

impl Prices {
    /// The usual multipliers: 5-minute writes 1.25×, 1-hour writes 2×, reads 0.1×.
    pub const fn list(input: f64, output: f64) -> Prices {
        Prices::with_read(input, output, 0.1)
    }

    /// As [`Prices::list`] with a read multiplier of the model's own.
    pub const fn with_read(input: f64, output: f64, read: f64) -> Prices {
        Prices {
            input,
            cache_write_5m: input * 1.25,
            cache_write_1h: input * 2.0,
            cache_read: input * read,
            output,
        }
    }
}

impl Prices {
    /// Dollars for one response's usage: uncached input, cache writes by TTL (all at the
    /// five-minute price when the usage does not split them), cache reads and output.
    pub fn cost(&self, u: &crate::Usage) -> f64 {
        let (w1h, w5m) = match &u.cache_creation {
            Some(c) if c.ephemeral_5m_input_tokens + c.ephemeral_1h_input_tokens > 0 => (
                c.ephemeral_1h_input_tokens,
                u.cache_creation_input_tokens
                    .saturating_sub(c.ephemeral_1h_input_tokens),
            ),
            _ => (0, u.cache_creation_input_tokens),
        };
        (u.input_tokens as f64 * self.input
            + w5m as f64 * self.cache_write_5m
            + w1h as f64 * self.cache_write_1h
            + u.cache_read_input_tokens as f64 * self.cache_read
            + u.output_tokens as f64 * self.output)
            / 1e6
    }
}

/// One model of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelEntry {
    /// The API id; dated snapshots (`claude-opus-4-5-20251101`) match their alias.
    pub id: &'static str,
    pub context_window: u64,
    pub max_output_tokens: u64,
    pub thinking: bool,
    pub prices: Prices,
}

const fn entry(
    id: &'static str,
    context_window: u64,
    max_output_tokens: u64,
    prices: Prices,
) -> ModelEntry {
    ModelEntry {
        id,
        context_window,
        max_output_tokens,
        thinking: true,
        prices,
    }
}

const K: u64 = 1_000;
const M: u64 = 1_000_000;

/// Current models first, then the older ones real transcripts still name.
pub const CATALOGUE: &[ModelEntry] = &[
    entry(
        "claude-fable-5-2",
        M,
        128 * K,
        Prices::with_read(8.0, 40.0, 0.025),
    ),
    entry(
        "claude-fable-5-1",
        M,
        128 * K,
        Prices::with_read(10.0, 50.0, 0.025),
    ),
    entry(
        "claude-fable-5",
        M,
        128 * K,
        Prices::with_read(10.0, 50.0, 0.1),
    ),
    entry(
        "claude-opus-5-5",
        M,
        128 * K,
        Prices::with_read(4.0, 20.0, 0.05),
    ),
    entry("claude-opus-5", M, 128 * K, Prices::list(5.0, 25.0)),
    entry("claude-opus-4-8", M, 128 * K, Prices::list(5.0, 25.0)),
    entry("claude-opus-4-7", M, 128 * K, Prices::list(5.0, 25.0)),
    entry("claude-opus-4-6", M, 128 * K, Prices::list(5.0, 25.0)),
    entry("claude-opus-4-5", 200 * K, 64 * K, Prices::list(5.0, 25.0)),
    entry("claude-opus-4-1", 200 * K, 32 * K, Prices::list(15.0, 75.0)),
    entry("claude-opus-4", 200 * K, 32 * K, Prices::list(15.0, 75.0)),
    entry(
        "claude-sonnet-5-5",
        M,
        128 * K,
        Prices::with_read(2.0, 10.0, 0.05),
    ),
    entry("claude-sonnet-5", M, 128 * K, Prices::list(2.0, 10.0)),
    entry("claude-sonnet-4-6", M, 128 * K, Prices::list(3.0, 15.0)),
    entry(
        "claude-sonnet-4-5",
        200 * K,
        64 * K,
        Prices::list(3.0, 15.0),
    ),
    entry("claude-sonnet-4", 200 * K, 64 * K, Prices::list(3.0, 15.0)),
    entry(
        "claude-3-7-sonnet",
        200 * K,
        64 * K,
        Prices::list(3.0, 15.0),
    ),
    // Haiku 5.5's rates rise fivefold past 100k tokens of input; these are the base.
    entry("claude-haiku-5-5", M, 128 * K, Prices::list(0.1, 0.5)),
    entry("claude-haiku-4-5", 200 * K, 64 * K, Prices::list(1.0, 5.0)),
    ModelEntry {
        thinking: false,
        ..entry("claude-3-5-haiku", 200 * K, 8 * K, Prices::list(0.8, 4.0))
    },
];

/// The catalogue's entry for a model id: the entry whose id is the longest prefix of it
/// at a `-` boundary (`claude-opus-4-1-20250805` is `claude-opus-4-1`, not
/// `claude-opus-4`).
pub fn lookup(model: &str) -> Option<&'static ModelEntry> {
    CATALOGUE
        .iter()
        .filter(|e| {
            model == e.id
                || model
                    .strip_prefix(e.id)
                    .is_some_and(|rest| rest.starts_with('-') && is_date_or_tag(&rest[1..]))
        })
        .max_by_key(|e| e.id.len())
}

/// What may follow an id in a model name: a snapshot date (`20251101`) or a tag
/// (`latest`, `v1`), not another version number.
fn is_date_or_tag(rest: &str) -> bool {
    let first = rest.split('-').next().unwrap_or_default();
    !(first.len() <= 2 && first.chars().all(|c| c.is_ascii_digit()))
}

/// The `max_tokens` Claude Code asks for by default on these models (its current
/// release, docs/claude-code-versions.md); on the others it asked for 32,000.
pub const CLAUDE_CODE_MAX_TOKENS: &[(&str, u64)] = &[
    ("claude-opus-5-5", 128 * K),
    ("claude-sonnet-5-5", 128 * K),
    ("claude-opus-4-6", 64 * K),
    ("claude-sonnet-4-5", 32 * K),
    ("claude-haiku-4-5", 32 * K),
];

/// The output limit a session gets when its profile names a listed model and no limit:
/// what Claude Code asks for on that model, else the model's limit up to 32,000.
pub fn default_max_output(entry: &ModelEntry) -> u64 {
    CLAUDE_CODE_MAX_TOKENS
        .iter()
        .find(|(id, _)| *id == entry.id)
        .map_or(32_000, |(_, n)| *n)
        .min(entry.max_output_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_match_their_alias_and_versions_do_not_leak() {
        assert_eq!(
            lookup("claude-opus-4-5-20251101").unwrap().id,
            "claude-opus-4-5"
        );
        assert_eq!(
            lookup("claude-opus-4-1-20250805").unwrap().id,
            "claude-opus-4-1"
        );
        assert_eq!(
            lookup("claude-opus-4-20250514").unwrap().id,
            "claude-opus-4"
        );
        assert_eq!(lookup("claude-sonnet-5-5").unwrap().context_window, M);
        assert!(lookup("claude-opus-4-9").is_none());
        assert!(lookup("gpt-oss-20b").is_none());
    }

    #[test]
    fn ids_are_unique_and_prices_follow_their_multipliers() {
        for (i, e) in CATALOGUE.iter().enumerate() {
            assert!(CATALOGUE[..i].iter().all(|o| o.id != e.id), "{}", e.id);
            assert!(e.max_output_tokens < e.context_window);
            assert!((e.prices.cache_write_1h - 2.0 * e.prices.input).abs() < 1e-9);
        }
        for (id, n) in CLAUDE_CODE_MAX_TOKENS {
            let e = CATALOGUE.iter().find(|e| e.id == *id).expect(id);
            assert!(*n <= e.max_output_tokens, "{id}");
        }
    }
}

#[cfg(test)]
mod profile_tests {
    use crate::ModelProfile;

    #[test]
    fn a_profile_naming_a_listed_model_takes_its_figures() {
        let p: ModelProfile = serde_json::from_str(r#"{"model": "claude-opus-4-6"}"#).unwrap();
        assert_eq!((p.context_window, p.max_output_tokens), (1_000_000, 64_000));
        let p: ModelProfile = serde_json::from_str(r#"{"model": "claude-opus-5-5"}"#).unwrap();
        assert_eq!(
            (p.context_window, p.max_output_tokens),
            (1_000_000, 128_000)
        );
        // Where Claude Code's own default is not known, 32,000 as before.
        let p: ModelProfile = serde_json::from_str(r#"{"model": "claude-opus-4-8"}"#).unwrap();
        assert_eq!((p.context_window, p.max_output_tokens), (1_000_000, 32_000));
        let p: ModelProfile = serde_json::from_str(r#"{"model": "claude-sonnet-4-5"}"#).unwrap();
        assert_eq!((p.context_window, p.max_output_tokens), (200_000, 32_000));
        let p: ModelProfile =
            serde_json::from_str(r#"{"model": "claude-3-5-haiku-20241022"}"#).unwrap();
        assert_eq!((p.max_output_tokens, p.supports_thinking), (8_000, false));
        let given: ModelProfile =
            serde_json::from_str(r#"{"model": "claude-opus-4-6", "context_window": 200000}"#)
                .unwrap();
        assert_eq!(given.context_window, 200_000);
    }

    #[test]
    fn an_unlisted_model_needs_its_window() {
        let err = serde_json::from_str::<ModelProfile>(r#"{"model": "my-local-model"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("context_window"), "{err}");
        let p: ModelProfile =
            serde_json::from_str(r#"{"model": "my-local-model", "context_window": 32768}"#)
                .unwrap();
        assert_eq!(p.max_output_tokens, 32_000);
    }
}
