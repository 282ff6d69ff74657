//! The daemon's black-box tests, one module per area, in one binary so that the daemon
//! is linked once. Each test starts the real `ctxd` it talks to (`common::Daemon`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test panics on what it did not expect

mod common;
mod support;

mod agents;
mod attachments;
mod budget;
mod cache;
mod capabilities;
mod compaction;
mod compile;
mod conformance;
mod disk_full;
mod durability;
mod hardening;
mod hooks;
mod hooks_bounds;
mod hooks_http_and_model;
mod import;
mod instructions;
mod layering;
mod longcontext;
mod memory_collapse;
mod openai_chat;
mod operations;
mod protocol;
mod proxy;
mod public_api;
mod rpc;
mod send;
mod server_context;
mod shared_store;
mod skills;
mod websocket;
