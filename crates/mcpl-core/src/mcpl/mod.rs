//! MCPL 0.5 ("MCP Live"): the extension of MCP that lets servers push events, hook into
//! inference, ask the host for inference, register channels and announce manifest changes.
//! It rides on MCP's `initialize` as `capabilities.experimental.mcpl` in both directions.
//!
//! - [`manifest`]: the server manifest, the host advertisement, feature-set declarations.
//! - [`capability`]: the 17 capability paths, the advertisement walk, the capability grant.
//! - [`policy`]: `featureSets/update`, the degradation receipt, feature-set derivation.
//! - [`authorize`]: host-side admission of server messages and per-injection authorization.
//! - [`digest`]: the manifest revision (RFC 8785 JCS + SHA-256).
//! - [`glob`]: the glob of name filters (tool allow/deny lists, channel narrowing).
//! - [`methods`]: a marker type per MCPL method, the method names and their gates.
//! - Messages: [`state`], [`push`], [`hooks`], [`inference`], [`channels`], [`changes`],
//!   [`content`] (MCPL's own content blocks), [`tags`].
//! - [`errors`]: the MCPL error codes.
//!
//! The choices this module makes where the spec is silent are listed in `docs/mcpl.md`.

pub mod authorize;
pub mod capability;
pub mod changes;
pub mod channels;
pub mod content;
pub mod digest;
pub mod errors;
pub mod glob;
pub mod hooks;
pub mod inference;
pub mod manifest;
pub mod methods;
mod open_enum;
pub mod policy;
pub mod push;
pub mod state;
pub mod tags;
