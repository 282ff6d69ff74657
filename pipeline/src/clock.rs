//! The clock is an input like any other, so compiles and tests can pin time.

use chrono::{DateTime, Datelike, FixedOffset, Local, Offset, SecondsFormat, TimeZone, Utc};

/// Time and the time zone: both inputs, so nothing a compile shows depends on the
/// machine's clock or zone unless the daemon is running for real.
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
    /// The offset from UTC of the user's local time at `at` (DST included).
    fn utc_offset(&self, at: DateTime<Utc>) -> FixedOffset;
    /// The local calendar date, `YYYY-MM-DD`.
    fn local_date(&self) -> String {
        let now = self.now();
        local_date(now, self.utc_offset(now))
    }
}

/// The calendar date, `YYYY-MM-DD`, of `at` in the zone `offset`.
pub fn local_date(at: DateTime<Utc>, offset: FixedOffset) -> String {
    let local = at.with_timezone(&offset);
    // Every compile asks; chrono's `format` parses its pattern at each call. Years
    // outside four digits take chrono's form (a sign, more digits).
    if (0..=9999).contains(&local.year()) {
        format!(
            "{:04}-{:02}-{:02}",
            local.year(),
            local.month(),
            local.day()
        )
    } else {
        local.format("%Y-%m-%d").to_string()
    }
}

/// UTC: the zone of fixed clocks and of sessions replayed without one.
pub fn utc() -> FixedOffset {
    Utc.fix()
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
    fn utc_offset(&self, at: DateTime<Utc>) -> FixedOffset {
        Local.offset_from_utc_datetime(&at.naive_utc()).fix()
    }
}

/// A clock that always says the same thing, in UTC (tests, replays).
pub struct FixedClock(pub DateTime<Utc>);

impl Clock for FixedClock {
    fn now(&self) -> DateTime<Utc> {
        self.0
    }
    fn utc_offset(&self, _at: DateTime<Utc>) -> FixedOffset {
        utc()
    }
}

/// Timestamps are stored as RFC 3339 with milliseconds and `Z`, like Claude Code's.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_clock_is_utc_and_its_local_date_is_the_utc_date() {
        let c = FixedClock("2026-11-29T23:59:59Z".parse().unwrap());
        assert_eq!(c.utc_offset(c.now()), utc());
        assert_eq!(c.local_date(), "2026-11-29");
        let east = FixedOffset::east_opt(3600).unwrap();
        assert_eq!(local_date(c.now(), east), "2026-11-30");
    }

    proptest::proptest! {
        /// The date is chrono's `%Y-%m-%d` of the instant in the zone, whatever both.
        #[test]
        fn the_local_date_is_chronos_form(
            secs in -400_000_000_000i64..400_000_000_000,
            offset in -86_399i32..86_400,
        ) {
            let (Some(at), Some(zone)) =
                (DateTime::from_timestamp(secs, 0), FixedOffset::east_opt(offset))
            else {
                return Ok(());
            };
            let expected = at.with_timezone(&zone).format("%Y-%m-%d").to_string();
            proptest::prop_assert_eq!(local_date(at, zone), expected);
        }
    }
}
