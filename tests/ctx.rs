//! The black-box tests of `ctx` and the client packages, one module per area, in one
//! binary.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it did not expect

mod common;

mod cli;
mod cli_cache;
mod clients;
mod compaction_windows;
