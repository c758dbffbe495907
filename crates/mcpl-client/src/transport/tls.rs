//! TLS for `https://`, `wss://` and `mcpl://`: which implementation, and which roots.
//!
//! - `rustls` (the default feature): rustls with the aws-lc-rs provider and the Mozilla root
//!   certificates ([webpki-roots](https://docs.rs/webpki-roots)), built into the binary, so
//!   that HTTPS works the same everywhere, with no system certificate store needed. The HTTP
//!   and WebSocket transports share [`default_config`]; their `tls_config` replaces it (to
//!   trust a private CA, see [`config_with_roots`]).
//! - `native-tls` (without `rustls`): the platform's TLS and its roots (OpenSSL on Linux,
//!   Security.framework on macOS, SChannel on Windows).
//! - neither: `https://`, `wss://` and `mcpl://` fail with a transport error that names these
//!   features.
//!
//! # Examples
//!
//! ```
//! use std::sync::Arc;
//!
//! use mcpl_client::transport::{HttpTransport, WebSocketTransport, tls};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // What both transports use unless told otherwise.
//! let public = Arc::new(tls::default_config()?);
//! let http = HttpTransport::new("https://mcp.example.com/mcp").tls_config(public.clone());
//! let ws = WebSocketTransport::new("wss://mcp.example.com/ws").tls_config(public);
//! # drop((http, ws));
//! # Ok(()) }
//! ```

use std::sync::Arc;

use mcpl_core::{Error, Result};

/// The crypto provider of every configuration built here (aws-lc-rs); no process-wide
/// provider needs to be installed.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// The client configuration the transports use by default: rustls with the Mozilla root
/// certificates, TLS 1.2 and 1.3, no client certificate.
///
/// # Errors
///
/// `Transport` if the provider supports none of the default protocol versions (it always
/// does: this is the one fallible step of a rustls configuration).
///
/// # Examples
///
/// ```
/// let config = mcpl_client::transport::tls::default_config()?;
/// assert!(config.alpn_protocols.is_empty());
/// # Ok::<(), mcpl_core::Error>(())
/// ```
pub fn default_config() -> Result<rustls::ClientConfig> {
    let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    config_with_roots(roots)
}

/// A client configuration that trusts `roots` only (for example a private CA), with the
/// same provider and protocol versions as [`default_config`].
///
/// # Errors
///
/// `Transport` if the provider supports none of the default protocol versions.
///
/// # Examples
///
/// Trusting a private CA, for both transports:
///
/// ```
/// use std::sync::Arc;
///
/// use mcpl_client::transport::{HttpTransport, tls};
/// use rustls::RootCertStore;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let private_ca = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])?.cert.der().clone();
/// let mut roots = RootCertStore::empty();
/// roots.add(private_ca)?; // a rustls::pki_types::CertificateDer
/// let config = Arc::new(tls::config_with_roots(roots)?);
/// let transport = HttpTransport::new("https://localhost:8443/mcp").tls_config(config);
/// # drop(transport);
/// # Ok(()) }
/// ```
pub fn config_with_roots(roots: rustls::RootCertStore) -> Result<rustls::ClientConfig> {
    Ok(rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::transport("tls setup failed", e))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
