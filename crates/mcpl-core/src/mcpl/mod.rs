//! MCPL 0.5 ("MCP Live"): the extension of MCP that lets servers push events, hook into
//! inference, ask for inference, register channels and announce manifest changes.
//!
//! - [`digest`]: the manifest revision (RFC 8785 JCS + SHA-256).

pub mod capability;
pub mod digest;
