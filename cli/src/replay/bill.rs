//! The replay's bill: what the provider would have charged for ctxd's requests, priced
//! call by call beside the source's own recorded bill for the same calls.

use chrono::{DateTime, Utc};
use ctxd_protocol::Usage;

use super::{ReplayStep, ReplaySummary};
use crate::cost::Billed;

/// The running simulation of the provider's bill.
#[derive(Default)]
pub(super) struct Bill {
    prefix: Option<u64>,
    /// The TTL the cache was last written with: what the next gap is measured against.
    one_hour: bool,
    recorded_write_5m: u64,
    recorded_write_1h: u64,
    last_request: Option<DateTime<Utc>>,
    predicted_read: u64,
    predicted_input: u64,
    recorded_read: u64,
    recorded_input: u64,
    simulated: f64,
    recorded: f64,
    calls: u64,
}

impl Bill {
    /// The bill's totals, into the summary.
    pub(super) fn summarise(&self, summary: &mut ReplaySummary) {
        let share = |read: u64, input: u64| {
            if input == 0 {
                0.0
            } else {
                read as f64 / input as f64
            }
        };
        summary.predicted_cache_read_share = share(self.predicted_read, self.predicted_input);
        summary.recorded_cache_read_share = share(self.recorded_read, self.recorded_input);
        summary.simulated_cost_total = self.simulated;
        summary.recorded_cost_total = self.recorded;
        summary.costed_calls = self.calls;
        summary.tokens_sent = self.predicted_input;
        summary.tokens_read = self.predicted_read;
        summary.recorded_cache_write_5m_tokens = self.recorded_write_5m;
        summary.recorded_cache_write_1h_tokens = self.recorded_write_1h;
        summary.inferred_prefix_tokens = self.prefix.unwrap_or(0);
    }

    /// Prices one answered compile: what the provider's cache would serve of ctxd's
    /// request, next to the source's own bill for the same call.
    ///
    /// ctxd's compile does not carry the original agent's system prompt and tools. Their
    /// size `P` is inferred once, from the first call ctxd estimated without an anchor
    /// (recorded input minus ctxd's estimate), and counted as a constant prefix that the
    /// cache serves on every call but the first and those after a gap longer than the TTL.
    /// An anchored estimate already counts `P` (the anchor is the source's usage); an
    /// unanchored one does not. Of the rest — ctxd's own request — the share ctxd predicted
    /// for its own prefix is read. ctxd's last message carries a breakpoint, so every input
    /// token is either read or written. On a call where ctxd's cache is cold (the first, or
    /// after a gap longer than the TTL), the constant prefix is read as far as the source's
    /// call read it: agents share their system prompt and tools across sessions, so the
    /// provider often still holds them.
    ///
    /// The source's usage counted every tool result whole. Where the replay's compiles
    /// cleared some, an anchored estimate still counts them, so their tokens are taken off.
    pub(super) fn simulate(&mut self, step: &mut ReplayStep, sim: Sim<'_>) {
        let Sim {
            recorded,
            at,
            prices,
            ttl_override,
            cleared_tokens,
        } = sim;
        if self.prefix.is_none()
            && step.anchor_tokens == 0
            && let Some(u) = recorded
        {
            let input = u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;
            self.prefix = Some(input.saturating_sub(step.estimated_tokens));
        }
        let prefix = self.prefix.unwrap_or(0);
        let own = if step.anchor_tokens == 0 {
            step.estimated_tokens
        } else {
            step.estimated_tokens
                .saturating_sub(prefix)
                .saturating_sub(cleared_tokens)
        };
        let total = own + prefix;
        // The entry the previous call wrote lives as long as the TTL it was written with.
        let ttl_secs = if self.one_hour { 3_600 } else { 300 };
        step.cache_expired = match (self.last_request, at) {
            (Some(prev), Some(now)) => (now - prev).num_seconds() > ttl_secs,
            _ => false,
        };
        let read = if step.cache_expired || self.last_request.is_none() {
            // ctxd's own entry is cold, but the original agent's prefix is the agent's, not
            // this session's: the provider served of it what the source's call read.
            recorded.map_or(0, |u| u.cache_read_input_tokens.min(prefix))
        } else {
            let share = if step.request_tokens == 0 {
                0.0
            } else {
                step.predicted_read_tokens as f64 / step.request_tokens as f64
            };
            prefix + ctxd_pipeline::saturate::u64_from_f64((own as f64 * share).round())
        };
        if at.is_some() {
            self.last_request = at;
        }
        // The source's writes of this call at each TTL; ctxd's writes follow the same split
        // (the agent chose the TTL), a call that wrote nothing keeps the last one.
        let recorded_split = recorded.map(|u| recorded_writes(u, ttl_override));
        // The lean policy chose this call's lifetime itself: its writes are priced, and
        // its entry lives, at that one.
        let chosen = step.cost.as_ref().map(|c| c.ttl == "1h");
        let one_hour_share = match (chosen, recorded_split) {
            (Some(one_hour), _) => f64::from(u8::from(one_hour)),
            (None, Some((w5, w1))) if w5 + w1 > 0 => w1 as f64 / (w5 + w1) as f64,
            _ => f64::from(u8::from(self.one_hour)),
        };
        self.one_hour = one_hour_share >= 0.5;
        let output = recorded.map_or(0, |u| u.output_tokens);
        let write = total - read.min(total);
        let write_1h =
            ctxd_pipeline::saturate::u64_from_f64((write as f64 * one_hour_share).round())
                .min(write);
        let simulated = Billed {
            uncached: 0,
            cache_write_5m: write - write_1h,
            cache_write_1h: write_1h,
            cache_read: read.min(total),
            output,
        };
        step.predicted_cache_read_tokens = simulated.cache_read;
        step.predicted_cache_write_tokens = simulated.cache_write();
        step.predicted_uncached_tokens = simulated.uncached;
        step.simulated_cost = simulated.cost(prices);
        self.simulated += step.simulated_cost;
        self.predicted_read += simulated.cache_read;
        self.predicted_input += simulated.input_side();
        self.calls += 1;
        if let Some(u) = recorded {
            let billed = recorded_bill(u, ttl_override);
            let cost = match compaction_iterations(u) {
                Some(iterations) => iterations
                    .iter()
                    .map(|it| recorded_bill(it, ttl_override).cost(prices))
                    .sum(),
                None => billed.cost(prices),
            };
            step.recorded_cost = Some(cost);
            self.recorded += cost;
            self.recorded_read += billed.cache_read;
            self.recorded_input += billed.input_side();
            self.recorded_write_5m += billed.cache_write_5m;
            self.recorded_write_1h += billed.cache_write_1h;
        }
    }
}

/// One answered call, as `simulate` prices it.
pub(super) struct Sim<'a> {
    pub(super) recorded: Option<&'a Usage>,
    pub(super) at: Option<DateTime<Utc>>,
    pub(super) prices: &'a crate::cost::Prices,
    pub(super) ttl_override: Option<bool>,
    /// Tokens of the results cleared so far (see `clears::Watch::cleared_tokens`).
    pub(super) cleared_tokens: u64,
}

/// A recorded call's tokens as the provider billed them, its writes at their TTL.
fn recorded_bill(u: &Usage, ttl_override: Option<bool>) -> Billed {
    let (cache_write_5m, cache_write_1h) = recorded_writes(u, ttl_override);
    Billed {
        uncached: u.input_tokens,
        cache_write_5m,
        cache_write_1h,
        cache_read: u.cache_read_input_tokens,
        output: u.output_tokens,
    }
}

/// The sampling iterations of a response that compacted on the server: its top-level
/// counts are the last iteration's only, and the bill is the sum of all of them.
fn compaction_iterations(u: &Usage) -> Option<Vec<Usage>> {
    let items = u.iterations.as_ref()?.as_array()?;
    let parsed: Vec<Usage> = items
        .iter()
        .map(|it| serde_json::from_value(it.clone()))
        .collect::<Result<_, _>>()
        .ok()?;
    (!parsed.is_empty()).then_some(parsed)
}

/// A recorded call's cache writes as `(five_minute, one_hour)`: all at the TTL given on
/// the command line, else as the usage split them (all five-minute when it did not).
fn recorded_writes(u: &Usage, ttl_override: Option<bool>) -> (u64, u64) {
    let all = u.cache_creation_input_tokens;
    match (ttl_override, u.cache_write_split()) {
        (Some(true), _) => (0, all),
        (Some(false), _) | (None, None) => (all, 0),
        // The split is the provider's; the total is what was billed.
        (None, Some((_, w1))) => (all.saturating_sub(w1), w1.min(all)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn usage(v: serde_json::Value) -> Usage {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn writes_follow_the_recorded_split_unless_overridden() {
        let u = usage(json!({"input_tokens": 1, "output_tokens": 1,
            "cache_creation_input_tokens": 100,
            "cache_creation": {"ephemeral_5m_input_tokens": 30, "ephemeral_1h_input_tokens": 70}}));
        assert_eq!(recorded_writes(&u, None), (30, 70));
        assert_eq!(recorded_writes(&u, Some(false)), (100, 0));
        assert_eq!(recorded_writes(&u, Some(true)), (0, 100));
        let unsplit = usage(json!({"cache_creation_input_tokens": 100}));
        assert_eq!(recorded_writes(&unsplit, None), (100, 0));
    }

    #[test]
    fn a_server_compaction_is_billed_for_every_iteration() {
        let u = usage(json!({"input_tokens": 23000, "output_tokens": 1000,
            "iterations": [
                {"type": "compaction", "input_tokens": 180000, "output_tokens": 3500},
                {"type": "message", "input_tokens": 23000, "output_tokens": 1000}]}));
        let its = compaction_iterations(&u).unwrap();
        assert_eq!(its.len(), 2);
        assert_eq!(its[0].input_tokens, 180_000);
        assert!(compaction_iterations(&usage(json!({"input_tokens": 1}))).is_none());
    }
}
