pub mod autocompact;
pub mod collapse;
pub(crate) mod cost;
pub mod items;
pub(crate) mod lean;
pub mod microcompact;
pub mod session_memory;
pub mod snip;
