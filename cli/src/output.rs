//! Writing to stdout without panicking on a closed pipe (`ctx events | head -1`).
//!
//! `println!` panics when stdout is gone; everything the CLI prints goes through these
//! instead, and `main` turns the resulting broken-pipe error into a quiet exit.

use std::io::{ErrorKind, Write};

use anyhow::Result;

/// `println!` that returns the write error instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?;
    }};
}
pub(crate) use outln;

/// Pretty JSON and a newline.
pub fn print_json<T: serde::Serialize>(v: &T) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, v)?;
    writeln!(out)?;
    Ok(())
}

/// Compact JSON on one line, flushed (for streams).
pub fn print_json_line<T: serde::Serialize>(v: &T) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, v)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// Whether the error is stdout's reader having gone away.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == ErrorKind::BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(ErrorKind::BrokenPipe))
    })
}

/// `n` and the noun, plural unless `n` is 1: "1 record", "3 records".
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A duration for people: "850 ms", "42 s", "3 min 5 s", "2 h 14 min", "3 d 4 h".
pub fn duration_ms(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0 => format!("{ms} ms"),
        1..60 => format!("{s} s"),
        60..3_600 => format!("{} min {} s", s / 60, s % 60),
        3_600..86_400 => format!("{} h {} min", s / 3_600, s % 3_600 / 60),
        _ => format!("{} d {} h", s / 86_400, s % 86_400 / 3_600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_durations_read_as_words() {
        assert_eq!(count(1u64, "message"), "1 message");
        assert_eq!(count(0u64, "record"), "0 records");
        assert_eq!(count(12u32, "record"), "12 records");
        assert_eq!(duration_ms(850), "850 ms");
        assert_eq!(duration_ms(97_619), "1 min 37 s");
        assert_eq!(duration_ms(8_040_000), "2 h 14 min");
        assert_eq!(duration_ms(273_600_000), "3 d 4 h");
    }
}
