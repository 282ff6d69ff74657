//! The clock is an input like any other, so compiles and tests can pin time.

use chrono::{DateTime, Local, SecondsFormat, Utc};

pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
    /// The local calendar date, `YYYY-MM-DD`.
    fn local_date(&self) -> String;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
    fn local_date(&self) -> String {
        Local::now().format("%Y-%m-%d").to_string()
    }
}

/// A clock that always says the same thing (tests, replays).
pub struct FixedClock(pub DateTime<Utc>);

impl Clock for FixedClock {
    fn now(&self) -> DateTime<Utc> {
        self.0
    }
    fn local_date(&self) -> String {
        self.0.format("%Y-%m-%d").to_string()
    }
}

/// Timestamps are stored as RFC 3339 with milliseconds and `Z`, like Claude Code's.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}
