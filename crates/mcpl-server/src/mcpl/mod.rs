//! MCPL 0.5 on the server side: the manifest, the per-connection policy, the gated sends and
//! the host-to-server methods.
//!
//! Enable MCPL with [`ServerBuilder::mcpl`](crate::ServerBuilder::mcpl) and an [`Mcpl`]: the
//! server's [`Manifest`] (its revision is computed here, never set by hand) and the handlers of
//! the host-to-server methods it serves. MCPL works on every stateful connection the server
//! serves (stdio, any [`Transport`](mcpl_core::Transport) given to
//! [`Server::serve`](crate::Server::serve), 2025 HTTP sessions): it needs `initialize`.
//!
//! - The manifest goes into `capabilities.experimental.mcpl` of the `initialize` result when
//!   the host advertised MCPL in its `initialize` request; a host without MCPL gets a plain MCP
//!   server and no MCPL message.
//! - Each MCPL connection gets an [`McplConnection`]: its policy (readiness, the
//!   [`CapabilityGrant`], the enabled feature sets) and the one gated path for server-to-host
//!   messages (`push/event`, `inference/request`, `model/info`, `channels/*`). Reach it from a
//!   handler with [`Context::mcpl`](crate::Context::mcpl), or all of them with
//!   [`Server::mcpl_connections`](crate::Server::mcpl_connections).
//! - `featureSets/update` is answered by the SDK (see [`McplConnection`]); `mcpl/manifest`
//!   too, from the same snapshot [`Server::set_mcpl_manifest`](crate::Server::set_mcpl_manifest)
//!   installs and announces (`mcpl/manifestChanged`).
//! - Tools may belong to a feature set and carry MCPL state (see [`McplTool`],
//!   [`WithState`] and [`Context::mcpl_state`](crate::Context::mcpl_state)).
//!
//! # Examples
//!
//! A server that pushes events in a feature set, once the host granted `pushEvents`:
//!
//! ```
//! use mcpl_core::mcpl::content::McplContent;
//! use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
//! use mcpl_core::types::{Tool, ToolSchema};
//! use mcpl_server::mcpl::{Mcpl, PushEvent};
//! use mcpl_server::{Server, ToolOutput};
//!
//! let manifest = Manifest::new()
//!     .with_push_events(true)
//!     .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]));
//! let server = Server::builder("alerts", "1.0.0")
//!     .mcpl(Mcpl::new(manifest))
//!     .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
//!         let Some(mcpl) = ctx.mcpl() else {
//!             return Ok(ToolOutput::error("the host does not speak MCPL"));
//!         };
//!         let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")]);
//!         match mcpl.push_event(event).await {
//!             Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
//!             Err(refused) => Ok(ToolOutput::error(refused.to_string())),
//!         }
//!     })
//!     .build();
//! assert!(server.mcpl_manifest().unwrap().revision().is_some());
//! ```

mod connection;
mod error;
mod handlers;
mod hub;
mod lifecycle;
mod route;
mod tool;

pub use self::connection::{McplConnection, PushEvent};
pub use self::error::{ManifestError, SendError, SendErrorKind};
pub use self::handlers::Mcpl;
pub use self::tool::{McplTool, WithState};

pub(crate) use self::hub::McplHub;
pub(crate) use self::route::{initialize, notification, request};

#[doc(no_inline)]
pub use mcpl_core::mcpl::capability::CapabilityGrant;
#[doc(no_inline)]
pub use mcpl_core::mcpl::manifest::Manifest;

/// Whether `method` is an MCPL method (or one removed in 0.5) the server routes to MCPL.
pub(crate) fn is_mcpl_method(method: &str) -> bool {
    use mcpl_core::mcpl::methods::names;
    matches!(
        method,
        names::FEATURE_SETS_UPDATE
            | names::CONTEXT_BEFORE_INFERENCE
            | names::INFERENCE_LIFECYCLE
            | names::INFERENCE_CHUNK
            | names::STATE_ROLLBACK
            | names::CHANNELS_LIST
            | names::CHANNELS_OPEN
            | names::CHANNELS_CLOSE
            | names::CHANNELS_PUBLISH
            | names::CHANNELS_OUTGOING_CHUNK
            | names::CHANNELS_OUTGOING_COMPLETE
            | names::CHANNELS_ACKNOWLEDGE
            | names::CHANNELS_TYPING
            | names::MANIFEST
    ) || names::REMOVED.contains(&method)
}
