//! Helpers a few areas of the daemon's tests share.

pub mod capabilities;
pub mod openrpc;
pub mod pg_cluster;
