//! Connect to MCP servers and call what they offer.
//!
//! ```no_run
//! use mcpl_client::Client;
//! use mcpl_client::transport::ChildProcess;
//!
//! # async fn run() -> mcpl_core::Result<()> {
//! let client = Client::new("my-app", "1.0.0");
//! client.connect(ChildProcess::new("my-mcp-server").arg("--stdio")).await?;
//! for tool in client.list_tools().await? {
//!     println!("{}", tool.name);
//! }
//! client.close().await?;
//! # Ok(()) }
//! ```
//!
//! This release speaks the stateful (2025) era: the `initialize` handshake, `ping`, and
//! tools. A client instance can be closed and connected again.
//!
//! # Modules
//!
//! - [`client`]: [`Client`], the handshake and the typed calls.
//! - [`transport`]: transports only a client needs, such as [`transport::ChildProcess`].

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod client;
pub mod transport;

#[doc(inline)]
pub use self::client::{Client, ServerDetails};
