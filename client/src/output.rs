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
