//! Thresholds and warning state, from the model profile.
//!
//! `E = W − min(O, 20,000)`; autocompact at `E − 13,000` (a percentage override may
//! lower it, never raise it); warning and error at `threshold − 20,000`; blocking at
//! `E − 3,000`. For W = 200,000: O = 8,000 → 179,000; O ≥ 20,000 → 167,000.
//!
//! Claude Code's buffers are fixed sizes, so below a window of about 26,000 tokens
//! its threshold reaches 0 and the context reads full from the first turn. Here each
//! buffer is also at most a share, the one it is of a window where Claude Code's figures
//! hold (E = 120,000): the autocompact buffer an eighth of `E`, the warning gap a fifth
//! of the threshold, the blocking buffer a fortieth of `E`. From `E` = 120,000 up the
//! figures are Claude Code's; below, every threshold is the same share of `E`, so they
//! keep their order and their distances down to the smallest window a session may have
//! (`MIN_CONTEXT_WINDOW`). docs/long-context.md shows the rule and a table of it, which
//! a test below computes from this code.

use ctxd_protocol::{ContextState, ModelProfile, SessionSettings};

pub(crate) const SUMMARY_RESERVE_MAX: u64 = 20_000;
pub(crate) const AUTOCOMPACT_BUFFER: u64 = 13_000;
pub(crate) const WARNING_BUFFER: u64 = 20_000;
pub(crate) const BLOCKING_BUFFER: u64 = 3_000;
/// The smallest context window a model profile may have: below it the system prompt,
/// the tools and one turn leave no room a compaction could make.
pub const MIN_CONTEXT_WINDOW: u64 = 16_000;

fn autocompact_buffer(e: u64) -> u64 {
    AUTOCOMPACT_BUFFER.min(e / 8)
}

fn warning_buffer(threshold: u64) -> u64 {
    WARNING_BUFFER.min(threshold / 5)
}

fn blocking_buffer(e: u64) -> u64 {
    BLOCKING_BUFFER.min(e / 40)
}

pub fn effective_window(model: &ModelProfile) -> u64 {
    model
        .context_window
        .saturating_sub(model.max_output_tokens.min(SUMMARY_RESERVE_MAX))
}

pub fn autocompact_threshold(model: &ModelProfile, settings: &SessionSettings) -> u64 {
    let e = effective_window(model);
    let base = e.saturating_sub(autocompact_buffer(e));
    match settings.autocompact_pct_override {
        Some(pct) => {
            let share = u128::from(e) * u128::from(pct) / 100;
            base.min(u64::try_from(share).unwrap_or(u64::MAX))
        }
        None => base,
    }
}

pub fn blocking_limit(model: &ModelProfile, settings: &SessionSettings) -> u64 {
    let e = effective_window(model);
    e.saturating_sub(
        settings
            .blocking_limit_margin
            .unwrap_or_else(|| blocking_buffer(e)),
    )
}

/// Where `tokens` (the estimate after snip) stands.
pub(crate) fn state(model: &ModelProfile, settings: &SessionSettings, tokens: u64) -> ContextState {
    let threshold = autocompact_threshold(model, settings);
    let warning = threshold.saturating_sub(warning_buffer(threshold));
    let blocking = blocking_limit(model, settings);
    let percent_left = if threshold == 0 {
        0
    } else {
        // Rounded like Math.round: half up.
        // In u128: the threshold derives from a client's context window.
        let left = u128::from(threshold.saturating_sub(tokens));
        let t = u128::from(threshold);
        u64::try_from((left * 200 + t) / (t * 2)).unwrap_or(100)
    };
    ContextState {
        effective_window: effective_window(model),
        autocompact_threshold: threshold,
        warning_threshold: warning,
        blocking_limit: blocking,
        effective_tokens: tokens,
        percent_left,
        is_above_warning: tokens >= warning,
        is_above_error: tokens >= warning,
        above_autocompact: tokens >= threshold,
        at_blocking_limit: tokens >= blocking,
    }
}

/// The level announced by `warning_state_changed` events.
pub fn level(s: &ContextState) -> &'static str {
    if s.at_blocking_limit {
        "blocking"
    } else if s.above_autocompact {
        "autocompact"
    } else if s.is_above_warning {
        "warning"
    } else {
        "ok"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(o: u64) -> ModelProfile {
        ModelProfile {
            context_window: 200_000,
            max_output_tokens: o,
            ..ModelProfile::default()
        }
    }

    #[test]
    fn threshold_table() {
        let s = SessionSettings::default();
        assert_eq!(autocompact_threshold(&model(8_000), &s), 179_000);
        assert_eq!(autocompact_threshold(&model(32_000), &s), 167_000);
        assert_eq!(autocompact_threshold(&model(20_000), &s), 167_000);
        assert_eq!(blocking_limit(&model(32_000), &s), 177_000);
        let st = state(&model(32_000), &s, 147_000);
        assert!(st.is_above_warning && !st.above_autocompact);
        assert_eq!(st.warning_threshold, 147_000);
        assert!(!state(&model(32_000), &s, 146_999).is_above_warning);
        assert!(state(&model(32_000), &s, 167_000).above_autocompact);
        assert!(state(&model(32_000), &s, 177_000).at_blocking_limit);
        assert_eq!(state(&model(32_000), &s, 0).percent_left, 100);
        assert_eq!(state(&model(32_000), &s, 200_000).percent_left, 0);
    }

    /// Small windows keep every threshold meaningful and in order; from E = 120,000 up
    /// the buffers are Claude Code's.
    #[test]
    fn thresholds_stay_meaningful_down_to_the_smallest_window() {
        let s = SessionSettings::default();
        for (w, o) in [
            (16_000, 4_000),
            (20_000, 8_000),
            (26_000, 8_000),
            (32_000, 8_000),
            (48_000, 8_000),
            (64_000, 8_000),
        ] {
            let m = ModelProfile {
                context_window: w,
                max_output_tokens: o,
                ..ModelProfile::default()
            };
            let e = effective_window(&m);
            let st = state(&m, &s, 0);
            assert!(st.autocompact_threshold >= e * 7 / 8, "{w}: {st:?}");
            assert!(st.warning_threshold >= st.autocompact_threshold * 4 / 5);
            assert!(st.warning_threshold < st.autocompact_threshold);
            assert!(st.autocompact_threshold < st.blocking_limit && st.blocking_limit < e);
            assert_eq!(st.percent_left, 100, "{w}: an empty context is not full");
        }
        let cc = |w, o| ModelProfile {
            context_window: w,
            max_output_tokens: o,
            ..ModelProfile::default()
        };
        assert_eq!(autocompact_threshold(&cc(20_000, 8_000), &s), 10_500);
        assert_eq!(blocking_limit(&cc(20_000, 8_000), &s), 11_700);
        assert_eq!(autocompact_threshold(&cc(32_000, 8_000), &s), 21_000);
        // Where Claude Code's own figures hold, they are the figures.
        assert_eq!(autocompact_threshold(&cc(140_000, 20_000), &s), 107_000);
        assert_eq!(blocking_limit(&cc(140_000, 20_000), &s), 117_000);
        assert_eq!(state(&cc(140_000, 20_000), &s, 0).warning_threshold, 87_000);
    }

    /// The table in docs/long-context.md ("Thresholds by window") is this code's: each
    /// row's figures are computed here and compared, so the two cannot drift apart.
    #[test]
    fn the_docs_threshold_table_is_the_codes() {
        let doc = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/long-context.md"
        ));
        let header =
            "| window | max output | effective window | autocompact | warning | blocking |";
        let at = doc
            .find(header)
            .expect("docs/long-context.md has the threshold table");
        let n = |cell: &str| -> u64 { cell.trim().replace(',', "").parse().expect("a number") };
        let mut rows = 0;
        for line in doc[at..]
            .lines()
            .skip(2)
            .map(str::trim)
            .take_while(|l| l.starts_with('|'))
        {
            let cells: Vec<u64> = line.trim_matches('|').split('|').map(n).collect();
            let [w, o, e, auto, warn, block] = cells[..] else {
                panic!("a row of six numbers: {line}");
            };
            let st = state(&cc(w, o), &SessionSettings::default(), 0);
            let code = [
                w,
                o,
                st.effective_window,
                st.autocompact_threshold,
                st.warning_threshold,
                st.blocking_limit,
            ];
            assert_eq!([w, o, e, auto, warn, block], code, "docs: {line}");
            rows += 1;
        }
        assert!(rows >= 6, "the table lost its rows: {rows}");

        fn cc(w: u64, o: u64) -> ModelProfile {
            ModelProfile {
                context_window: w,
                max_output_tokens: o,
                ..ModelProfile::default()
            }
        }
    }

    #[test]
    fn percentage_override_only_lowers() {
        let mut s = SessionSettings {
            autocompact_pct_override: Some(50),
            ..SessionSettings::default()
        };
        assert_eq!(autocompact_threshold(&model(32_000), &s), 90_000);
        s.autocompact_pct_override = Some(99);
        assert_eq!(autocompact_threshold(&model(32_000), &s), 167_000);
    }

    #[test]
    fn extreme_numbers_saturate() {
        let huge = ModelProfile {
            context_window: u64::MAX,
            max_output_tokens: 8_000,
            ..ModelProfile::default()
        };
        let s = SessionSettings {
            autocompact_pct_override: Some(100),
            blocking_limit_margin: Some(u64::MAX),
            ..SessionSettings::default()
        };
        assert_eq!(autocompact_threshold(&huge, &s), u64::MAX - 8_000 - 13_000);
        assert_eq!(blocking_limit(&huge, &s), 0);
        let st = state(&huge, &s, u64::MAX);
        assert_eq!(st.percent_left, 0);
        assert_eq!(state(&huge, &s, 0).percent_left, 100);
    }

    #[test]
    fn blocking_margin_is_configurable() {
        let s = SessionSettings {
            blocking_limit_margin: Some(10_000),
            ..SessionSettings::default()
        };
        assert_eq!(blocking_limit(&model(32_000), &s), 170_000);
    }
}
