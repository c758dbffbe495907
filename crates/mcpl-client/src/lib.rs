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
//! - [`transport`]: transports only a client needs: [`transport::ChildProcess`],
//!   [`transport::HttpTransport`] (Streamable HTTP) and [`transport::WebSocketTransport`].
//!
//! # Features
//!
//! On by default: `http`, `ws`, `child`, `auth`, `rustls`. Each is additive; turn the defaults
//! off (`default-features = false`) to pick.
//!
//! | feature | what it adds | pulls in |
//! |---|---|---|
//! | `http` | [`transport::HttpTransport`] (Streamable HTTP) | reqwest |
//! | `ws` | [`transport::WebSocketTransport`] (`ws://`, `wss://`, `mcpl://`) | tokio-tungstenite |
//! | `child` | [`transport::ChildProcess`] | tokio's `process` |
//! | `auth` | [`auth`]: OAuth 2.1 for the HTTP transport (implies `http`) | p256, base64 |
//! | `rustls` | TLS for `https://`, `wss://`, `mcpl://` with rustls (aws-lc-rs) and the Mozilla roots built in ([`transport::tls`]) | rustls, aws-lc-rs, webpki-roots |
//! | `native-tls` | TLS with the platform's implementation and roots instead (OpenSSL on Linux); `rustls` wins when both are on | native-tls |
//!
//! With neither TLS feature, `https://`, `wss://` and `mcpl://` fail with a `Transport` error
//! that names them; with only `rustls` or `native-tls` on, no transport uses it.
//!
//! # Observability
//!
//! Every request the client sends runs in a `mcp.client.request` [`tracing`] span (`DEBUG`,
//! target `mcpl_core::trace`) naming its method, JSON-RPC id, tool, prompt or resource, protocol
//! revision and era, and 2025 HTTP session; notifications in and out are `DEBUG` events, every
//! message's JSON a `TRACE` event. [`mcpl_core::trace`] has the names; [docs/observability.md]
//! lists every span, field and event.
//!
//! [docs/observability.md]: https://github.com/mcpl-rs/mcpl-rs/blob/main/docs/observability.md
//!
//! # Public dependencies
//!
//! These crates' types appear in this crate's API, so a new major version of one is a new
//! major version of `mcpl-client`: `mcpl-core`; `serde` and `serde_json` 1; `tokio` 1;
//! `futures` 0.3 (`Stream` of notifications); `url` 2 ([`transport::McplUri::resolved`]);
//! with `http`, `reqwest` 0.13 (`reqwest::Client` taken by
//! [`HttpTransport::http_client`](transport::HttpTransport::http_client) and `OAuth::http_client`,
//! `reqwest::ClientBuilder` from [`transport::http::client_builder`], `reqwest::Error` as the
//! source of transport errors); with `rustls`, `rustls` 0.23 (`rustls::ClientConfig` taken by
//! both transports' `tls_config` and made by [`transport::tls`]). tokio-tungstenite, p256 and
//! the rest stay private.

#![warn(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "auth")]
pub mod auth;
pub mod backoff;
pub mod builder;
pub mod cache;
mod calls;
pub mod capability;
pub mod client;
pub mod handlers;
pub mod input;
mod link;
mod listen;
pub mod mcpl;
pub mod negotiation;
pub mod notify;
pub mod resume;
pub mod skills;
pub mod transport;

#[doc(inline)]
pub use self::builder::ClientBuilder;
#[doc(inline)]
pub use self::cache::{CacheMode, ResponseCache};
#[doc(inline)]
pub use self::client::Client;
#[doc(inline)]
pub use self::input::InputRequiredMode;
#[doc(inline)]
pub use self::negotiation::{Negotiation, ServerDetails};
#[doc(inline)]
pub use self::notify::Subscription;
#[doc(inline)]
pub use self::resume::SessionSnapshot;

// The examples of this crate's README are compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
