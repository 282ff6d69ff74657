//! Conversions that stop at the target type's bound instead of wrapping or truncating
//! (what `as` does): counts and durations reported in metadata and logs. A value past the
//! bound shows as the bound, which reads as "at least this many"; a wrapped one would be
//! a wrong number.

use std::time::Duration;

/// `n`, or `u32::MAX` when larger.
pub fn u32_of(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `n`, or `u64::MAX` when larger (only on a platform wider than 64 bits).
pub fn u64_of(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// `n`, or `usize::MAX` when larger (only on a platform narrower than 64 bits).
pub fn usize_of(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Whole milliseconds of `d`, or `u64::MAX` past 584 million years.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Whole microseconds of `d`, or `u64::MAX` past 584 thousand years.
pub fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Whole nanoseconds of `d` as SQL's signed integer, or `i64::MAX` past 292 years.
pub fn nanos_i64(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

/// Whole milliseconds of `d` as SQL's signed integer, or `i64::MAX` when larger.
pub fn millis_i64(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// `x` as `u64`, toward zero: 0 for NaN and below, `u64::MAX` past it. That is what `as`
/// does from a float (it saturates); the name says so where a share of a count is rounded.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn u64_from_f64(x: f64) -> u64 {
    x as u64
}

/// `x` as `usize`, toward zero: 0 for NaN and below, `usize::MAX` past it (see
/// [`u64_from_f64`]).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn usize_from_f64(x: f64) -> usize {
    x as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_past_the_bound_stop_at_it() {
        assert_eq!(u32_of(7), 7);
        assert_eq!(u32_of(u32::MAX as usize + 1), u32::MAX);
        assert_eq!(millis(Duration::from_millis(1500)), 1500);
        assert_eq!(millis(Duration::MAX), u64::MAX);
        assert_eq!(micros(Duration::MAX), u64::MAX);
        assert_eq!(nanos_i64(Duration::from_secs(1)), 1_000_000_000);
        assert_eq!(nanos_i64(Duration::MAX), i64::MAX);
        assert_eq!(millis_i64(Duration::MAX), i64::MAX);
        assert_eq!(usize_of(9), 9);
        assert_eq!(u64_of(9), 9);
        assert_eq!(u64_from_f64(2.9), 2);
        assert_eq!(u64_from_f64(-3.0), 0);
        assert_eq!(u64_from_f64(f64::NAN), 0);
        assert_eq!(u64_from_f64(1e30), u64::MAX);
        assert_eq!(usize_from_f64(7.5), 7);
    }
}
