//! The files ctxd touches outside its store, below the engine: reads of files named by
//! outside input that cannot hang or exhaust the reader (`safe_read`), canonical paths
//! (`paths`), and the project trust list in the home (`trust`).
//!
//! A crate of its own because two sides edit the trust list: the engine, which checks it
//! before a project's hooks run, and `ctx trust`, which must not link the engine (nor, with
//! it, the store and its databases). The client library is not the place, since the engine
//! must not depend on a client; the pipeline is not either, since it does no I/O. The
//! list's bounded read and canonical paths come along so that each has one implementation.

pub mod paths;
pub mod safe_read;
pub mod trust;
