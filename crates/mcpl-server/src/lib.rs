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
//! One server serves both protocol eras. To 2025-11-25 (and older) clients: the `initialize`
//! handshake with version negotiation, a lifecycle guard and sessions. To 2026-07-28 clients:
//! stateless requests with per-request `_meta`, `server/discover`, `subscriptions/listen`,
//! input-required results and cache hints. Over stdio, any stream transport, WebSocket and
//! Streamable HTTP (2025 sessions with SSE resumption, 2026 stateless requests, on one
//! endpoint): `ping`, tools (typed arguments, input and output schema validation), resources
//! and resource templates (with subscriptions), prompts, argument completion, logging,
//! pagination of every list, changes of all of these while clients are connected, the tasks and
//! skills extensions, and MCPL 0.5 ([`mcpl`]).
//!
//! # Modules
//!
//! - [`builder`]: [`ServerBuilder`], which collects the server's identity and features.
//! - [`cache`]: cache hints (`ttlMs`, `cacheScope`) of 2026-07-28 list and discover results.
//! - [`registry`]: handles that change a running server's features.
//! - [`tool`]: tool handlers and what they return; [`schema`]: their JSON Schemas.
//! - [`resource`]: resource handlers; [`uri_template`]: RFC 6570 templates they are routed by.
//! - [`prompt`]: prompt handlers.
//! - [`completion`]: completers for prompt arguments and template variables.
//! - [`events`]: [`ServerEvent`], what sessions tell clients about changes.
//! - [`context`]: [`Context`], what a handler knows about its request.
//! - [`input`]: asking the client for input (elicitation, sampling, roots) from a handler, in
//!   both eras; [`state`]: sealing the state such handlers carry between rounds.
//! - [`session`]: serving one connection; the handshake and the lifecycle guard.
//! - [`task`]: the tasks extension (SEP-2663): tool calls answered with a task to poll.
//! - [`skills`]: the skills extension (SEP-2640): Agent Skills served from code or from a
//!   directory tree (`skills/list`, `skills/get`, `resources/directory/read`).
//! - [`stdio`]: serving on this process's stdin and stdout.
//! - [`http`]: serving over Streamable HTTP.
//! - [`ws`]: serving over WebSocket (one connection, one session; for MCPL).
//! - [`mcpl`]: MCPL 0.5 (server push, context hooks, inference requests, channels, manifest
//!   changes) on stateful connections.

#![warn(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod builder;
pub mod cache;
pub mod completion;
pub mod context;
pub mod events;
pub mod http;
mod ids;
pub mod input;
pub mod mcpl;
mod pagination;
pub mod prompt;
pub mod registry;
pub mod resource;
mod router;
pub mod schema;
pub mod session;
pub mod skills;
pub mod state;
mod stateless_era;
pub mod stdio;
pub mod task;
pub mod tool;
pub mod uri_template;
pub mod ws;

#[doc(inline)]
pub use self::builder::{
    BuildError, DEFAULT_WRITE_TIMEOUT, RegistrationError, Server, ServerBuilder,
};
#[doc(inline)]
pub use self::context::Context;
#[doc(inline)]
pub use self::events::ServerEvent;
#[doc(inline)]
pub use self::session::Session;
#[doc(inline)]
pub use self::tool::ToolOutput;

// The examples of this crate's README are compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
