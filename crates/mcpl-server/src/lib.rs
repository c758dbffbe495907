//! Build an MCP server once and serve it over any transport.
//!
//! ```
//! use mcpl_server::{Server, ToolOutput};
//! use mcpl_core::types::{Tool, ToolSchema};
//!
//! let server = Server::builder("echo-server", "1.0.0")
//!     .instructions("Echoes what you send.")
//!     .tool(
//!         Tool::new("echo", ToolSchema::object().with_property("text", serde_json::json!({"type": "string"}))),
//!         |_ctx, args| async move {
//!             let text = args.get("text").and_then(|v| v.as_str()).unwrap_or_default().to_owned();
//!             Ok(ToolOutput::text(text))
//!         },
//!     )
//!     .build();
//! # drop(server);
//! // Serve it on stdin/stdout: mcpl_server::stdio::serve(server).await?;
//! ```
//!
//! This release serves the stateful (2025) era over stream transports: the `initialize`
//! handshake with version negotiation and a lifecycle guard, `ping`, `tools/list` (in
//! registration order) and `tools/call`.
//!
//! # Modules
//!
//! - [`builder`]: [`ServerBuilder`], which collects the server's identity and features.
//! - [`tool`]: tool handlers and what they return.
//! - [`context`]: [`Context`], what a handler knows about its request.
//! - [`session`]: serving one connection; the handshake and the lifecycle guard.
//! - [`stdio`]: serving on this process's stdin and stdout.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod builder;
pub mod context;
mod router;
pub mod session;
pub mod stdio;
pub mod tool;

#[doc(inline)]
pub use self::builder::{Server, ServerBuilder};
#[doc(inline)]
pub use self::context::Context;
#[doc(inline)]
pub use self::session::Session;
#[doc(inline)]
pub use self::tool::ToolOutput;
