//! Summariser providers.
