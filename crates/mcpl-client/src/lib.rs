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
//! era; [`Negotiation::Pinned`] fixes the revision. A client instance can be closed and
//! connected again, or suspended and resumed without a new handshake ([`resume`]).
//!
//! Typed calls cover tools, resources and templates, prompts, completion, the logging level,
//! `ping` and skills ([`skills`]); list calls follow pagination. Server requests (sampling, elicitation, roots)
//! and 2026 input-required results reach the [`handlers`]; notifications reach the handlers of
//! [`notify`], and `subscriptions/listen` is a [`Subscription`] stream.
//!
//! Optional: strict capability enforcement ([`Client::with_strict_capabilities`], see
//! [`capability`]) and a response cache ([`Client::with_cache`], see [`cache`]). Every typed
//! call takes the same path: strict check, then the cache, then the wire.
//!
//! # Modules
//!
//! - [`client`]: [`Client`], the handshake and the typed calls.
//! - [`capability`]: which server capability each request needs (strict enforcement).
//! - [`cache`]: the response cache ([`ResponseCache`], pluggable [`cache::CacheStore`]).
//! - [`handlers`]: answering sampling, elicitation and roots requests.
//! - [`input`]: 2026 input-required results, fulfilled automatically or by the caller.
//! - [`mcpl`]: the MCPL 0.5 host side of a connection ([`mcpl::McplHost`]).
//! - [`notify`]: notification handlers and `subscriptions/listen`.
//! - [`resume`]: [`SessionSnapshot`], suspend and resume.
//! - [`skills`]: the skills extension (SEP-2640): listing, getting and loading skills, every
//!   file checked against its entry.
//! - [`transport`]: transports only a client needs: [`transport::ChildProcess`] and
//!   [`transport::HttpTransport`] (Streamable HTTP).

#![warn(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "auth")]
pub mod auth;
pub mod cache;
mod calls;
pub mod capability;
pub mod client;
pub mod handlers;
pub mod input;
pub mod mcpl;
pub mod notify;
pub mod resume;
pub mod skills;
pub mod transport;

#[doc(inline)]
pub use self::cache::{CacheMode, ResponseCache};
#[doc(inline)]
pub use self::client::{Client, Negotiation, ServerDetails};
#[doc(inline)]
pub use self::input::InputRequiredMode;
#[doc(inline)]
pub use self::notify::Subscription;
#[doc(inline)]
pub use self::resume::SessionSnapshot;

// The examples of this crate's README are compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
