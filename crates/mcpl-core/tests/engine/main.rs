//! Engine integration tests: request handling and the lifecycle invariants.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, unreachable_pub)]

mod apart;
mod backpressure;
mod driven;
mod inline;
mod lifecycle;
mod requests;
mod support;
mod wire;
