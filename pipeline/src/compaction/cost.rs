//! The lean policy's cost model: what an action at this compile is expected to cost or
//! save against doing nothing, priced at the model catalogue's rates over the calls the
//! session is expected to make, from its own pace (`docs/policy.md`, "The cost model").
//!
//! Everything here is arithmetic over the records and the compile's inputs, so a replay,
//! a restart and a fork price the same compile the same way.

use chrono::{DateTime, Utc};
use ctxd_protocol::models::Prices;
use ctxd_protocol::{Pace, Record, RecordKind};

/// A five-minute cache entry's life, and a one-hour one's, in seconds.
pub(crate) const FIVE_MINUTES: i64 = 300;
pub(crate) const ONE_HOUR: i64 = 3_600;

/// Before a session has shown its own pace, it counts as this many gaps, one of them
/// between five minutes and an hour: a session's own gaps outweigh the prior within a
/// few dozen calls.
const PRIOR_GAPS: f64 = 30.0;
const PRIOR_COLD: f64 = 1.0;

/// The warm calls a clear is credited with at most: past that, a compaction or the end
/// of the session comes first.
const MAX_WARM_CALLS: f64 = 100.0;

/// The prices a compile is weighed at: the catalogue's for its model, else its newest
/// model's (what a session naming no known model most likely runs).
pub(crate) fn prices_for(model: &str) -> Prices {
    let base = model.trim_end_matches("[1m]");
    ctxd_protocol::models::lookup(base)
        .or_else(|| ctxd_protocol::models::CATALOGUE.first())
        .map_or(Prices::list(15.0, 75.0), |e| e.prices)
}

fn time_of(r: &Record) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(&r.timestamp)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The gaps between the main thread's consecutive model responses, by length.
pub(crate) fn pace(records: &[Record]) -> Pace {
    let mut pace = Pace::default();
    let mut last: Option<(Option<&str>, DateTime<Utc>)> = None;
    for r in records
        .iter()
        .filter(|r| r.kind == RecordKind::Assistant && !r.is_sidechain)
    {
        let id = r.message_id.as_deref();
        if last.is_some_and(|(prev, _)| id.is_some() && prev == id) {
            continue;
        }
        let Some(at) = time_of(r) else { continue };
        pace.calls += 1;
        if let Some((_, prev)) = last {
            match (at - prev).num_seconds() {
                g if g <= FIVE_MINUTES => pace.within_5m += 1,
                g if g <= ONE_HOUR => pace.within_1h += 1,
                _ => pace.over_1h += 1,
            }
        }
        last = Some((id, at));
    }
    pace
}

/// The chance that the gap after a call ends a five-minute entry but not an hour's.
pub(crate) fn p_within_1h(p: &Pace) -> f64 {
    let gaps = (p.within_5m + p.within_1h + p.over_1h) as f64;
    (p.within_1h as f64 + PRIOR_COLD) / (gaps + PRIOR_GAPS)
}

/// The chance that the gap after a call outlives an entry of the given life.
fn p_cold(p: &Pace, one_hour: bool) -> f64 {
    let gaps = (p.within_5m + p.within_1h + p.over_1h) as f64;
    let cold = if one_hour {
        p.over_1h
    } else {
        p.within_1h + p.over_1h
    };
    (cold as f64 + PRIOR_COLD) / (gaps + PRIOR_GAPS)
}

/// Calls expected before the cache next goes cold, this one included (the mean of a
/// geometric run), at most [`MAX_WARM_CALLS`].
pub(crate) fn expected_warm_calls(p: &Pace, one_hour: bool) -> f64 {
    (1.0 / p_cold(p, one_hour)).min(MAX_WARM_CALLS)
}

/// Dollars for `tokens` at `per_million`.
fn dollars(tokens: u64, per_million: f64) -> f64 {
    tokens as f64 * per_million / 1e6
}

/// What writing this request's `write` new tokens with the one-hour lifetime saves
/// against five minutes: with the chance of a gap that outlives five minutes but not an
/// hour, the next call reads the whole `request` instead of writing it again; in every
/// case the new tokens cost the one-hour write's premium.
pub(crate) fn ttl_1h_saving(prices: &Prices, pace: &Pace, request: u64, write: u64) -> f64 {
    p_within_1h(pace) * dollars(request, prices.cache_write_5m - prices.cache_read)
        - dollars(write, prices.cache_write_1h - prices.cache_write_5m)
}

/// What clearing `cleared` tokens while the cache is warm saves against waiting for the
/// next cold point (where it is free): each of the `warm_calls` calls until then reads
/// them no more, but the `rewritten` tokens after the first of them are written again
/// now instead of read.
pub(crate) fn warm_clear_saving(
    prices: &Prices,
    warm_calls: f64,
    cleared: u64,
    rewritten: u64,
) -> f64 {
    warm_calls * dollars(cleared, prices.cache_read)
        - dollars(rewritten, prices.cache_write_5m - prices.cache_read)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// $3 input: 5-minute writes $3.75, 1-hour writes $6, reads $0.30 per million.
    fn sonnet() -> Prices {
        Prices::list(3.0, 15.0)
    }

    fn pace(within_5m: u64, within_1h: u64, over_1h: u64) -> Pace {
        Pace {
            calls: within_5m + within_1h + over_1h + 1,
            within_5m,
            within_1h,
            over_1h,
        }
    }

    #[test]
    fn a_one_hour_write_is_priced_against_the_rewrite_it_may_save() {
        // 70 gaps of the session's own, 9 of them between five minutes and an hour:
        // with the prior, (9 + 1) / (70 + 30) = 0.1.
        let p = pace(60, 9, 1);
        assert!((p_within_1h(&p) - 0.1).abs() < 1e-12);
        // 100,000 tokens read again instead of written: 0.1 × 100,000 × $3.45 / 1e6 =
        // $0.0345; 2,000 new tokens at the $2.25 premium: $0.0045.
        let s = ttl_1h_saving(&sonnet(), &p, 100_000, 2_000);
        assert!((s - (0.0345 - 0.0045)).abs() < 1e-12, "{s}");
        // Writing the whole request again (after a compaction) does not pay:
        // $0.0345 - 100,000 × $2.25 / 1e6 = -$0.1905.
        let s = ttl_1h_saving(&sonnet(), &p, 100_000, 100_000);
        assert!((s + 0.1905).abs() < 1e-12, "{s}");
    }

    #[test]
    fn a_warm_clear_pays_over_the_expected_warm_calls() {
        // (4 + 1) cold gaps over (70 + 30): 20 warm calls expected at five minutes.
        let p = pace(66, 3, 1);
        assert!((expected_warm_calls(&p, false) - 20.0).abs() < 1e-9);
        // At one hour only the gap over an hour is cold: 100 / 2, capped at 100 anyway.
        assert!((expected_warm_calls(&p, true) - 50.0).abs() < 1e-9);
        // 10,000 tokens cleared, read 20 times no more: 20 × 10,000 × $0.30 / 1e6 =
        // $0.06; 40,000 written again: 40,000 × $3.45 / 1e6 = $0.138.
        let s = warm_clear_saving(&sonnet(), 20.0, 10_000, 40_000);
        assert!((s - (0.06 - 0.138)).abs() < 1e-12, "{s}");
        // 20,000 rewritten: $0.069 against $0.06 still loses; 15,000: $0.05175 wins.
        assert!(warm_clear_saving(&sonnet(), 20.0, 10_000, 20_000) < 0.0);
        assert!(warm_clear_saving(&sonnet(), 20.0, 10_000, 15_000) > 0.0);
    }

    #[test]
    fn the_pace_counts_each_response_once_by_its_gap() {
        let rec = |id: &str, at: &str| -> Record {
            serde_json::from_value(json!({"uuid": format!("u{id}{at}"), "seq": 1,
                "type": "assistant", "timestamp": at, "message_id": id, "content": []}))
            .unwrap()
        };
        let records = vec![
            rec("a", "2026-11-29T10:00:00Z"),
            // The same response in a second record.
            rec("a", "2026-11-29T10:00:05Z"),
            rec("b", "2026-11-29T10:04:00Z"),
            rec("c", "2026-11-29T10:30:00Z"),
            rec("d", "2026-11-29T12:00:00Z"),
        ];
        assert_eq!(
            super::pace(&records),
            Pace {
                calls: 4,
                within_5m: 1,
                within_1h: 1,
                over_1h: 1
            }
        );
    }

    #[test]
    fn an_unknown_model_is_priced_as_the_newest_one() {
        assert_eq!(
            prices_for("claude-sonnet-4-5[1m]"),
            ctxd_protocol::models::lookup("claude-sonnet-4-5")
                .unwrap()
                .prices
        );
        assert_eq!(
            prices_for("gpt-x"),
            ctxd_protocol::models::CATALOGUE[0].prices
        );
    }
}
