//! Servers for the doc examples and tests of the mcpl-rs crates.
//!
//! A doc example of `mcpl-client` or `mcpl-host` needs a server to talk to: each one here is a
//! real [`mcpl_server::Server`], served in memory ([`mcpl_core::transport::memory::pair`]) or on a
//! loopback port. One of `mcpl-server` needs a host talking to the example's server: [`host`]
//! connects one in memory. So an example shows only the lines it is about and hides one:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let (_session, transport) = mcpl_test_kit::library().await?;
//! # drop(transport);
//! # Ok(()) }
//! ```
//!
//! This crate is a dev-dependency of the workspace's crates and is not published: what it
//! serves is chosen for the examples, not for users.

pub mod host;
pub mod http;
pub mod mcpl;
mod servers;

pub use servers::{library, notes};
