//! The MCPL agent host: what an agent framework embeds to run many MCPL servers at once.
//!
//! Every tool a server offers reaches the model under a namespaced name,
//! `<prefix>--<tool>`, where the prefix defaults to `mcpl--<server id>`. Two servers may only
//! be configured together if their prefixes can never produce the same name; [`prefixes_meet`]
//! decides that exactly.
//!
//! ```
//! use mcpl_host::{prefixes_meet, naming::ToolName};
//!
//! assert!(!prefixes_meet("foo", "foo-bar"));
//! assert!(prefixes_meet("foo", "foo-")); // "foo---x": foo's tool "-x", foo-'s tool "x"
//! assert!(prefixes_meet("foo", "foo--bar"));
//!
//! let name = ToolName::new("mcpl--weather", "forecast");
//! assert_eq!(name.to_string(), "mcpl--weather--forecast");
//! ```
//!
//! # Modules
//!
//! - [`prefix`]: the prefix-meeting rule.
//! - [`alerts`]: ops alerts (failures log, tracing, throttled webhook).
//! - [`naming`]: namespaced tool names and default prefixes.
//! - [`host`]: the host itself: connections, routing, state, reconnects.
//! - [`config`]: the host configuration file.
//! - [`checkpoint`]: per-(server, feature set) checkpoint trees, attribution, persistence.
//! - [`registry`]: which servers are configured, connecting or connected (reservations).
//! - [`tools`]: listings (first wins), allow/deny filters, routing namespaced names.
//! - [`unavailable`]: why a server's feature sets are disabled, and what would enable them.
//!
//! # Features
//!
//! On by default: `http`, `ws`, `child`, `rustls`; each is additive and turns on the same
//! feature of `mcpl-client`. A configured server whose transport is left out fails to connect
//! with an error naming the feature.
//!
//! | feature | servers it reaches | pulls in |
//! |---|---|---|
//! | `http` | `url: http(s)://...` (Streamable HTTP); also the ops webhook ([`alerts::WebhookSink`]) | reqwest |
//! | `ws` | `url: ws://`, `wss://`, `mcpl://` | tokio-tungstenite |
//! | `child` | `command: ...` (stdio child processes) | tokio's `process` |
//! | `rustls` | TLS with rustls (aws-lc-rs) and the Mozilla roots | rustls |
//! | `native-tls` | TLS with the platform's implementation instead | native-tls |
//!
//! # Public dependencies
//!
//! These crates' types appear in this crate's API, so a new major version of one is a new
//! major version of `mcpl-host`: `mcpl-core` and `mcpl-client` (their types in hook, sampling
//! and elicitation handlers); `serde_json` 1; `tokio` 1 (the
//! `tokio::sync::mpsc::Receiver` of [`HostEvent`]s from [`HostBuilder::start`]).
//! reqwest stays private.

#![warn(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod alerts;
pub mod checkpoint;
pub mod config;
mod dedupe;
pub mod error;
pub mod host;
mod listen;
pub mod naming;
pub mod prefix;
pub mod registry;
pub mod tools;
pub mod unavailable;

#[doc(inline)]
pub use self::host::{Host, HostBuilder, HostError, HostEvent, Injections, ToolCall};
#[doc(inline)]
pub use self::prefix::prefixes_meet;

// The examples of this crate's README are compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
