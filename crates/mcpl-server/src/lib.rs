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
//! endpoint; the same pipeline per era on every transport): `ping`, tools (typed arguments, input and output schema validation), resources
//! and resource templates (with subscriptions), prompts, argument completion, logging,
//! pagination of every list, changes of all of these while clients are connected, the tasks and
//! skills extensions, and MCPL 0.5 ([`mcpl`]).
//!
//! # Modules
//!
//! - [`builder`]: [`ServerBuilder`], which collects the server's identity and features;
//!   [`server`]: the [`Server`] it builds.
//! - [`cache`]: cache hints (`ttlMs`, `cacheScope`) of 2026-07-28 list and discover results.
//! - [`registry`]: handles that change a running server's features.
//! - [`tool`]: tool handlers and what they return; [`schema`]: their JSON Schemas.
//! - [`resource`]: resource handlers; [`uri_template`]: RFC 6570 templates they are routed by.
//! - [`prompt`]: prompt handlers.
//! - [`principal`]: who a request acts for (its verified access token), what sessions, tasks
//!   and request state are bound to.
//! - [`completion`]: completers for prompt arguments and template variables.
//! - [`events`]: [`ServerEvent`], what sessions tell clients about changes.
//! - [`context`]: [`Context`], what a handler knows about its request.
//! - [`input`]: asking the client for input (elicitation, sampling, roots) from a handler, in
//!   both eras; [`request_state`]: sealing the `requestState` such handlers carry between
//!   rounds (not MCPL state, which is `mcpl_core::mcpl::state`).
//! - [`session`]: serving one connection; the handshake and the lifecycle guard.
//! - [`task`]: the tasks extension (SEP-2663): tool calls answered with a task to poll.
//! - [`skills`]: the skills extension (SEP-2640): Agent Skills served from code or from a
//!   directory tree (`skills/list`, `skills/get`, `resources/directory/read`).
//! - [`stdio`]: serving on this process's stdin and stdout.
//! - [`http`]: serving over Streamable HTTP.
//! - [`ws`]: serving over WebSocket (one connection, one session; for MCPL).
//! - [`mcpl`]: MCPL 0.5 (server push, context hooks, inference requests, channels, manifest
//!   changes) on stateful connections.
//!
//! # Features
//!
//! All on by default; each is additive. A stdio-only server turns them off
//! (`default-features = false`) and builds 76 crates instead of 171.
//!
//! | feature | what it adds | pulls in |
//! |---|---|---|
//! | `http` | [`http`]: Streamable HTTP serving (both eras) | axum, hyper |
//! | `ws` | [`ws`]: WebSocket serving (implies `http`: it shares the listener and its guards) | axum's WebSocket, tungstenite |
//! | `auth` | [`http::auth`]: OAuth 2.1 bearer tokens (DPoP-bound too) and protected resource metadata (implies `http`) | p256 |
//! | `schema` | typed tools ([`ServerBuilder::typed_tool`], structured output with [`Json`]), typed prompts ([`ServerBuilder::typed_prompt`]), [`schema::input_schema_for`] | schemars |
//! | `validation` | arguments and structured content checked against the tools' JSON Schemas | jsonschema |
//!
//! Without `validation` a tool's schemas are sent to clients as written and not checked on
//! the server (typed tools still refuse arguments that do not deserialize).
//!
//! # Observability
//!
//! Every request the server serves runs in a `mcp.server.request` [`tracing`] span (`DEBUG`,
//! target `mcpl_core::trace`) naming its method, JSON-RPC id, tool, prompt or resource, protocol
//! revision and era, and 2025 HTTP session, under an `mcp.http` span (per HTTP request) or an
//! `mcp.ws` span (per WebSocket connection) naming the client's address; notifications in and
//! out are `DEBUG` events, every message's JSON a `TRACE` event. [`mcpl_core::trace`] has the
//! names; [docs/observability.md] lists every span, field and event, and the `http-server`
//! example wires `tracing-subscriber` with `RUST_LOG`.
//!
//! [docs/observability.md]: https://github.com/mcpl-rs/mcpl-rs/blob/main/docs/observability.md
//!
//! # Public dependencies
//!
//! These crates' types appear in this crate's API, so a new major version of one is a new
//! major version of `mcpl-server`: `mcpl-core`; `serde` and `serde_json` 1 (tool arguments,
//! results); `tokio` 1 (`tokio::net::TcpListener` in [`http::serve`],
//! `tokio::sync::broadcast::Receiver` from [`Server::subscribe_changes`]) and `tokio-util` 0.7
//! (`CancellationToken`, for shutdown); `futures` 0.3 (`Stream` of events); with `http` or
//! `ws`, `axum` 0.8 (`axum::Router` from `into_router`, taken by [`http::serve`] and
//! [`http::auth::BearerAuth::protect`]; `axum::response::Response`, the endpoint's response
//! type), `tower-service` 0.3 ([`http::StreamableHttp`] is a `tower_service::Service`, over
//! `http` 1 requests) and `bytes` 1 (the JSON of an event given to
//! [`http::event_store::EventStore::append_encoded`]); with `schema`, `schemars` 1 (the
//! `JsonSchema` bound of typed tools). hyper, jsonschema, tungstenite and the crypto crates
//! stay private.

#![warn(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod builder;
pub mod cache;
mod codec;
pub mod events;
mod features;
mod handler;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
mod ids;
mod interned;
pub mod mcpl;
mod pagination;
pub mod registry;
#[cfg(feature = "http")]
mod result_json;
mod router;
pub mod server;
pub mod session;
pub mod skills;
/// The old name of [`request_state`] (sealing `requestState`; MCPL feature-set state is
/// `mcpl_core::mcpl::state`).
#[doc(hidden)]
pub use self::request_state as state;
mod stateless;
pub mod stdio;
mod task_serving;
mod unwinding;
pub mod uri_template;
// What a handler author reads lives in one folder, `src/handler/`, apart from the serving
// machinery (builder, server, router, registry, events, task serving, transports), which
// imports it and is never imported by it.
pub use self::handler::{
    completion, context, input, principal, prompt, request_state, resource, schema, task, tool,
};
#[cfg(feature = "ws")]
#[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
pub mod ws;

#[doc(inline)]
pub use self::builder::{BuildError, DEFAULT_WRITE_TIMEOUT, RegistrationError, ServerBuilder};
#[doc(inline)]
pub use self::context::Context;
#[doc(inline)]
pub use self::events::ServerEvent;
#[doc(inline)]
pub use self::server::Server;
#[doc(inline)]
pub use self::session::Session;
#[doc(inline)]
pub use self::tool::ToolOutput;
#[cfg(feature = "schema")]
#[doc(inline)]
pub use self::tool::{IntoToolReply, Json};

// The examples of this crate's README are compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
