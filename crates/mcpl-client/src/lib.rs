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
//! Both eras are spoken: by default [`Client::connect`] tries the stateless (2026-07-28) era
//! with `server/discover` and falls back to the `initialize` handshake of the stateful (2025)
//! era; [`Negotiation::Pinned`] fixes the revision. Calls today: `ping`, tools,
//! `resources/list`, `resources/read` and `prompts/list`. A client instance can be closed and
//! connected again, or suspended and resumed without a new handshake ([`resume`]).
//!
//! Optional: strict capability enforcement ([`Client::with_strict_capabilities`], see
//! [`capability`]) and a response cache ([`Client::with_cache`], see [`cache`]).
//!
//! # Modules
//!
//! - [`client`]: [`Client`], the handshake and the typed calls.
//! - [`capability`]: which server capability each request needs (strict enforcement).
//! - [`cache`]: the response cache ([`ResponseCache`], pluggable [`cache::CacheStore`]).
//! - [`resume`]: [`SessionSnapshot`], suspend and resume.
//! - [`transport`]: transports only a client needs: [`transport::ChildProcess`] and
//!   [`transport::HttpTransport`] (Streamable HTTP).

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod cache;
pub mod capability;
pub mod client;
mod listing;
pub mod resume;
pub mod transport;

#[doc(inline)]
pub use self::cache::{CacheMode, ResponseCache};
#[doc(inline)]
pub use self::client::{Client, Negotiation, ServerDetails};
#[doc(inline)]
pub use self::resume::SessionSnapshot;
