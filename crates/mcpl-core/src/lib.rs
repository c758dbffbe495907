//! The core of mcpl-rs: JSON-RPC 2.0, the MCP types of every protocol revision, the protocol
//! engine and the transports that the server, client and host crates stand on.
//!
//! ```
//! use mcpl_core::{Engine, ProtocolVersion, Era};
//! use mcpl_core::transport::memory;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> mcpl_core::Result<()> {
//! assert_eq!(ProtocolVersion::LATEST.era(), Era::Stateless);
//!
//! let server = Engine::new();
//! server.on_request("ping", |_ctx, _params| async { Ok(serde_json::json!({})) });
//! let (a, b) = memory::pair();
//! server.connect(b).await?;
//! let client = Engine::new();
//! client.connect(a).await?;
//! client.request("ping", None, Default::default()).await?;
//! # Ok(()) }
//! ```
//!
//! # Modules
//!
//! - [`jsonrpc`]: messages, ids, error codes, and decoding of untrusted bytes.
//! - [`engine`]: request correlation, handlers, cancellation, progress, timeouts, lifecycle.
//! - [`transport`]: the [`Transport`] trait, newline-delimited JSON, stdio, in-memory pairs.
//! - [`era`]: protocol revisions and their eras.
//! - [`trace`]: the `tracing` spans of served and sent requests, their fields and events
//!   (`docs/observability.md` lists them all).
//! - [`mcpl`]: the MCPL 0.5 extension: types, the capability grant, the manifest digest.

#![warn(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod engine;
pub mod era;
pub mod error;
pub mod jsonrpc;
pub mod log_safe;
pub mod mcpl;
pub mod trace;
pub mod transport;
pub mod types;

#[doc(inline)]
pub use self::engine::{Engine, Peer};
#[doc(inline)]
pub use self::era::{Era, ProtocolVersion};
#[doc(inline)]
pub use self::error::{Error, ErrorKind, Result};
#[doc(inline)]
pub use self::jsonrpc::Message;
#[doc(inline)]
pub use self::transport::Transport;

// The examples of this crate's README are compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
