//! OAuth 2.1 bearer tokens for the HTTP endpoint: the server acting as a protected resource.
//!
//! [`BearerAuth`] wraps a [`Router`] so that every request must carry `Authorization: Bearer
//! <token>`; the token is checked by a [`TokenVerifier`] the application provides (JWT
//! validation, introspection against the authorization server, a lookup table...). What the
//! client gets back follows RFC 6750 and the MCP authorization specification:
//!
//! - no token: `401` with `WWW-Authenticate: Bearer resource_metadata="<url>"` (and
//!   `scope="..."` when scopes are required), so that the client can discover the
//!   authorization server;
//! - a token the verifier rejects, or one that has expired: `401` with `error="invalid_token"`;
//! - a valid token lacking a required scope: `403` with `error="insufficient_scope"` and the
//!   scopes needed (the client may ask for them: step-up authorization).
//!
//! DPoP-bound tokens (RFC 9449) are accepted through the same [`TokenVerifier`]: presented as
//! `Authorization: DPoP <token>` with a proof of possession of the key the verifier reports
//! ([`AccessToken::dpop_jkt`]), checked as the [`dpop`] module describes; a refused proof gets
//! `401` with `WWW-Authenticate: DPoP error="invalid_dpop_proof"`. [`BearerAuth::dpop`] tunes
//! the checks, and can refuse plain bearer tokens.
//!
//! Behind it, what a request creates belongs to the principal of its token (its subject, or
//! its client without one: see [`AccessToken::principal`]): a 2025-era session (another
//! principal's requests naming it get `404`, as for a session that does not exist), a task
//! (`tasks/get`, `tasks/update` and `tasks/cancel` of another principal answer "not found") and
//! the sealed `requestState` of an input-required result (refused as invalid for another
//! principal). Handlers see the verified token of the request they serve with
//! [`Context::access_token`](crate::Context::access_token). Without `BearerAuth`, every request
//! is the same anonymous principal, and nothing changes.
//!
//! The protected resource metadata document (RFC 9728) is served, without authentication, at
//! its well-known path: `/.well-known/oauth-protected-resource` followed by the path of the
//! resource identifier (`/.well-known/oauth-protected-resource/mcp` for
//! `https://example.com/mcp`).
//!
//! # Examples
//!
//! ```no_run
//! use mcpl_server::Server;
//! use mcpl_server::http::auth::{
//!     AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError,
//! };
//! use mcpl_server::http::{HttpConfig, StreamableHttp};
//!
//! #[derive(Debug)]
//! struct OneToken;
//!
//! impl TokenVerifier for OneToken {
//!     fn verify<'a>(
//!         &'a self,
//!         token: &'a str,
//!     ) -> futures::future::BoxFuture<'a, Result<AccessToken, VerifyError>> {
//!         Box::pin(async move {
//!             if token == "let-me-in" {
//!                 Ok(AccessToken::new(["mcp:tools"]))
//!             } else {
//!                 Err(VerifyError::Invalid("unknown token".into()))
//!             }
//!         })
//!     }
//! }
//!
//! # async fn run() -> std::io::Result<()> {
//! let server = Server::builder("demo", "1.0.0").build();
//! let mcp = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp");
//! let metadata = ProtectedResourceMetadata::new("http://127.0.0.1:3000/mcp")
//!     .authorization_server("https://auth.example.com")
//!     .scopes_supported(["mcp:tools"]);
//! let app = BearerAuth::new(OneToken, metadata).required_scopes(["mcp:tools"]).protect(mcp);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! mcpl_server::http::serve(listener, app).await
//! # }
//! ```

use std::sync::Arc;
use std::time::SystemTime;

pub mod dpop;

pub use self::dpop::{DPOP_ALGORITHM, DpopConfig, DpopError};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use futures::future::BoxFuture;
use serde::Serialize;

#[doc(inline)]
pub use crate::principal::{AccessToken, Principal};

/// The path prefix of protected resource metadata documents (RFC 9728).
///
/// # Examples
///
/// ```
/// use mcpl_server::http::auth::{PROTECTED_RESOURCE_WELL_KNOWN, ProtectedResourceMetadata};
///
/// assert_eq!(PROTECTED_RESOURCE_WELL_KNOWN, "/.well-known/oauth-protected-resource");
/// let metadata = ProtectedResourceMetadata::new("https://mcp.example.com/mcp");
/// assert!(metadata.well_known_path().starts_with(PROTECTED_RESOURCE_WELL_KNOWN));
/// ```
pub const PROTECTED_RESOURCE_WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// Why a [`TokenVerifier`] did not accept a token.
///
/// # Examples
///
/// ```
/// use mcpl_server::http::auth::VerifyError;
///
/// // What a verifier asking an introspection endpoint might return.
/// fn from_introspection(status: u16, active: bool) -> Result<(), VerifyError> {
///     match (status, active) {
///         (200, true) => Ok(()),
///         (200, false) => Err(VerifyError::Invalid("token is not active".into())),
///         (status, _) => Err(VerifyError::Unavailable(format!("introspection answered {status}"))),
///     }
/// }
/// assert!(matches!(from_introspection(200, false), Err(VerifyError::Invalid(_))));
/// let down = from_introspection(502, false).unwrap_err();
/// assert_eq!(down.to_string(), "the access token could not be verified: introspection answered 502");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The token is not valid here (unknown, revoked, expired, for another audience...): the
    /// client gets `401` with `error="invalid_token"`.
    #[error("invalid access token: {0}")]
    Invalid(String),
    /// The token could not be checked now (the introspection endpoint is down...): the client
    /// gets `503`.
    #[error("the access token could not be verified: {0}")]
    Unavailable(String),
}

impl VerifyError {
    /// A stable name for the kind of failure: `invalid_token` or `verifier_unavailable`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::auth::VerifyError;
    ///
    /// assert_eq!(VerifyError::Invalid("revoked".into()).kind(), "invalid_token");
    /// assert_eq!(VerifyError::Unavailable("timeout".into()).kind(), "verifier_unavailable");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            VerifyError::Invalid(_) => "invalid_token",
            VerifyError::Unavailable(_) => "verifier_unavailable",
        }
    }
}

/// Checks access tokens: the application's link to its authorization server.
///
/// Implementations must check everything that makes the token valid for this server: its
/// signature or introspection result, its expiry, and its audience (the token must have been
/// issued for this resource; never accept tokens meant for another).
///
/// # Examples
///
/// A verifier backed by a table of issued tokens:
///
/// ```
/// use std::collections::HashMap;
/// use futures::future::BoxFuture;
/// use mcpl_server::http::auth::{AccessToken, TokenVerifier, VerifyError};
///
/// #[derive(Debug)]
/// struct Issued(HashMap<String, AccessToken>);
///
/// impl TokenVerifier for Issued {
///     fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AccessToken, VerifyError>> {
///         Box::pin(async move {
///             self.0.get(token).cloned().ok_or_else(|| VerifyError::Invalid("unknown token".into()))
///         })
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let issued = Issued(HashMap::from([(
///     "t0k3n".to_owned(),
///     AccessToken::new(["mcp:tools"]).subject("ada"),
/// )]));
/// assert_eq!(issued.verify("t0k3n").await.unwrap().subject.as_deref(), Some("ada"));
/// assert_eq!(issued.verify("forged").await.unwrap_err().kind(), "invalid_token");
/// # });
/// ```
pub trait TokenVerifier: Send + Sync + 'static {
    /// Verifies `token` (the value after `Bearer `).
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AccessToken, VerifyError>>;
}

/// The protected resource metadata document (RFC 9728) of an MCP server.
///
/// # Examples
///
/// ```
/// use mcpl_server::http::auth::ProtectedResourceMetadata;
///
/// let metadata = ProtectedResourceMetadata::new("https://mcp.example.com/mcp")
///     .authorization_server("https://auth.example.com")
///     .scopes_supported(["mcp:tools", "mcp:resources"])
///     .resource_name("Example MCP server");
/// let document = serde_json::to_value(&metadata)?;
/// assert_eq!(
///     document,
///     serde_json::json!({
///         "resource": "https://mcp.example.com/mcp",
///         "authorization_servers": ["https://auth.example.com"],
///         "scopes_supported": ["mcp:tools", "mcp:resources"],
///         "bearer_methods_supported": ["header"],
///         "resource_name": "Example MCP server",
///     })
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Serialize)]
pub struct ProtectedResourceMetadata {
    resource: String,
    authorization_servers: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scopes_supported: Option<Vec<String>>,
    bearer_methods_supported: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource_documentation: Option<String>,
    /// Set by [`BearerAuth`]: the DPoP proof algorithms accepted (RFC 9728).
    #[serde(skip_serializing_if = "Option::is_none")]
    dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Set by [`BearerAuth`] when only DPoP-bound tokens are accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    dpop_bound_access_tokens_required: Option<bool>,
}

impl ProtectedResourceMetadata {
    /// The metadata of the resource identified by `resource`: the canonical URL of the MCP
    /// endpoint, such as `https://mcp.example.com/mcp`, exactly as clients will send it in the
    /// `resource` parameter.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::auth::ProtectedResourceMetadata;
    ///
    /// let metadata = ProtectedResourceMetadata::new("https://mcp.example.com/mcp");
    /// assert_eq!(metadata.resource(), "https://mcp.example.com/mcp");
    /// let document = serde_json::to_value(&metadata)?;
    /// assert_eq!(document["bearer_methods_supported"], serde_json::json!(["header"]));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn new(resource: impl Into<String>) -> Self {
        ProtectedResourceMetadata {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes_supported: None,
            bearer_methods_supported: vec!["header".to_owned()],
            resource_name: None,
            resource_documentation: None,
            dpop_signing_alg_values_supported: None,
            dpop_bound_access_tokens_required: None,
        }
    }

    /// Adds the issuer identifier of an authorization server that issues tokens for this
    /// resource.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::auth::ProtectedResourceMetadata;
    ///
    /// let metadata = ProtectedResourceMetadata::new("https://mcp.example.com/mcp")
    ///     .authorization_server("https://auth.example.com")
    ///     .authorization_server("https://login.partner.example");
    /// let document = serde_json::to_value(&metadata)?;
    /// assert_eq!(
    ///     document["authorization_servers"],
    ///     serde_json::json!(["https://auth.example.com", "https://login.partner.example"])
    /// );
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    #[must_use]
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// The scopes clients may request for this resource.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::auth::ProtectedResourceMetadata;
    ///
    /// let metadata = ProtectedResourceMetadata::new("https://mcp.example.com/mcp")
    ///     .scopes_supported(["mcp:read", "mcp:write"]);
    /// let document = serde_json::to_value(&metadata)?;
    /// assert_eq!(document["scopes_supported"], serde_json::json!(["mcp:read", "mcp:write"]));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    #[must_use]
    pub fn scopes_supported<S: Into<String>>(
        mut self,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.scopes_supported = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// A human-readable name of the resource.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::auth::ProtectedResourceMetadata;
    ///
    /// let metadata = ProtectedResourceMetadata::new("https://mcp.example.com/mcp")
    ///     .resource_name("Weather tools");
    /// assert_eq!(serde_json::to_value(&metadata)?["resource_name"], "Weather tools");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    #[must_use]
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// A URL of human-readable documentation of the resource.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::auth::ProtectedResourceMetadata;
    ///
    /// let metadata = ProtectedResourceMetadata::new("https://mcp.example.com/mcp")
    ///     .resource_documentation("https://docs.example.com/mcp");
    /// let document = serde_json::to_value(&metadata)?;
    /// assert_eq!(document["resource_documentation"], "https://docs.example.com/mcp");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    #[must_use]
    pub fn resource_documentation(mut self, url: impl Into<String>) -> Self {
        self.resource_documentation = Some(url.into());
        self
    }

    /// The resource identifier.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::auth::ProtectedResourceMetadata;
    ///
    /// let metadata = ProtectedResourceMetadata::new("https://mcp.example.com/mcp");
    /// assert_eq!(metadata.resource(), "https://mcp.example.com/mcp");
    /// ```
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The path the document is served at: the well-known prefix followed by the path of the
    /// resource identifier (`/.well-known/oauth-protected-resource/mcp` for
    /// `https://example.com/mcp`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::auth::ProtectedResourceMetadata;
    ///
    /// let mcp = ProtectedResourceMetadata::new("https://example.com/mcp");
    /// assert_eq!(mcp.well_known_path(), "/.well-known/oauth-protected-resource/mcp");
    /// let root = ProtectedResourceMetadata::new("https://example.com/");
    /// assert_eq!(root.well_known_path(), "/.well-known/oauth-protected-resource");
    /// ```
    pub fn well_known_path(&self) -> String {
        let path = self.resource.parse::<Uri>().map(|u| u.path().to_owned()).unwrap_or_default();
        let path = path.trim_end_matches('/');
        format!("{PROTECTED_RESOURCE_WELL_KNOWN}{path}")
    }

    /// The absolute URL of the document, derived from the resource identifier.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::auth::ProtectedResourceMetadata;
    ///
    /// let metadata = ProtectedResourceMetadata::new("https://example.com:8443/tenants/a/mcp");
    /// assert_eq!(
    ///     metadata.well_known_url(),
    ///     "https://example.com:8443/.well-known/oauth-protected-resource/tenants/a/mcp"
    /// );
    /// ```
    pub fn well_known_url(&self) -> String {
        let origin = match self.resource.parse::<Uri>() {
            Ok(uri) => match (uri.scheme_str(), uri.authority()) {
                (Some(scheme), Some(authority)) => format!("{scheme}://{authority}"),
                _ => String::new(),
            },
            Err(_) => String::new(),
        };
        format!("{origin}{}", self.well_known_path())
    }
}

/// Requires a valid bearer token on every request of a [`Router`] and serves the protected
/// resource metadata document. See the [module documentation](self).
///
/// # Examples
///
/// An MCP endpoint behind a bearer token, served on an ephemeral port and called without a
/// token, then with one:
///
/// ```
/// use mcpl_server::Server;
/// use mcpl_server::http::auth::{BearerAuth, ProtectedResourceMetadata};
/// use mcpl_server::http::{HttpConfig, StreamableHttp};
/// # use mcpl_test_kit::http::Tokens;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let addr = listener.local_addr()?;
/// let mcp = StreamableHttp::new(Server::builder("demo", "1.0.0").build(), HttpConfig::new());
/// let metadata = ProtectedResourceMetadata::new(format!("http://{addr}/mcp"))
///     .authorization_server("https://auth.example.com");
/// // `Tokens` is the application's `TokenVerifier`; it knows the token "reader".
/// let app = BearerAuth::new(Tokens, metadata).protect(mcp.into_router("/mcp"));
/// tokio::spawn(mcpl_server::http::serve(listener, app));
///
/// let discover = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{
///     "io.modelcontextprotocol/protocolVersion":"2026-07-28",
///     "io.modelcontextprotocol/clientCapabilities":{}}}}"#;
/// let post = |token: Option<&str>| {
///     let mut request = reqwest::Client::new()
///         .post(format!("http://{addr}/mcp"))
///         .header("content-type", "application/json")
///         .header("accept", "application/json, text/event-stream")
///         .header("mcp-protocol-version", "2026-07-28")
///         .header("mcp-method", "server/discover")
///         .body(discover);
///     if let Some(token) = token {
///         request = request.bearer_auth(token);
///     }
///     request.send()
/// };
/// let refused = post(None).await?;
/// assert_eq!(refused.status(), 401);
/// let challenge = refused.headers()["www-authenticate"].to_str()?;
/// assert_eq!(
///     challenge,
///     format!(r#"Bearer resource_metadata="http://{addr}/.well-known/oauth-protected-resource/mcp""#)
/// );
/// assert_eq!(post(Some("reader")).await?.status(), 200);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub struct BearerAuth {
    inner: Inner,
}

struct Inner {
    verifier: Box<dyn TokenVerifier>,
    metadata: ProtectedResourceMetadata,
    metadata_url: String,
    required_scopes: Vec<String>,
    dpop: dpop::ProofChecker,
}

impl std::fmt::Debug for BearerAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BearerAuth")
            .field("metadata", &self.inner.metadata)
            .field("metadata_url", &self.inner.metadata_url)
            .field("required_scopes", &self.inner.required_scopes)
            .finish_non_exhaustive()
    }
}

impl BearerAuth {
    /// Checks tokens with `verifier`, advertising `metadata`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::auth::{BearerAuth, ProtectedResourceMetadata};
    /// # use mcpl_test_kit::http::Tokens;
    ///
    /// // `Tokens` is the application's `TokenVerifier`.
    /// let auth = BearerAuth::new(
    ///     Tokens,
    ///     ProtectedResourceMetadata::new("https://mcp.example.com/mcp")
    ///         .authorization_server("https://auth.example.com"),
    /// );
    /// // Challenges point clients at the metadata document.
    /// let shown = format!("{auth:?}");
    /// assert!(shown.contains("https://mcp.example.com/.well-known/oauth-protected-resource/mcp"));
    /// ```
    pub fn new(verifier: impl TokenVerifier, metadata: ProtectedResourceMetadata) -> Self {
        let metadata_url = metadata.well_known_url();
        let mut metadata = metadata;
        metadata.dpop_signing_alg_values_supported = Some(vec![DPOP_ALGORITHM.to_owned()]);
        BearerAuth {
            inner: Inner {
                verifier: Box::new(verifier),
                metadata,
                metadata_url,
                required_scopes: Vec::new(),
                dpop: dpop::ProofChecker::new(DpopConfig::default()),
            },
        }
    }

    /// How DPoP proofs are checked (default [`DpopConfig::new`]); with
    /// [`DpopConfig::required`], bearer tokens are refused and the metadata says so.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcpl_server::http::auth::{BearerAuth, DpopConfig, ProtectedResourceMetadata};
    /// # use mcpl_server::http::auth::{AccessToken, TokenVerifier, VerifyError};
    /// # struct Jwts;
    /// # impl TokenVerifier for Jwts {
    /// #     fn verify<'a>(&'a self, _: &'a str) -> futures::future::BoxFuture<'a, Result<AccessToken, VerifyError>> {
    /// #         Box::pin(async { Err(VerifyError::Invalid("no".into())) })
    /// #     }
    /// # }
    ///
    /// let metadata = ProtectedResourceMetadata::new("https://mcp.example.com/mcp");
    /// let auth = BearerAuth::new(Jwts, metadata)
    ///     .dpop(DpopConfig::new().max_clock_skew(Duration::from_secs(30)).required(true));
    /// # drop(auth);
    /// ```
    #[must_use]
    pub fn dpop(mut self, config: DpopConfig) -> Self {
        self.inner.metadata.dpop_bound_access_tokens_required =
            config.is_required().then_some(true);
        self.inner.dpop = dpop::ProofChecker::new(config);
        self
    }

    /// Scopes every token must grant; a valid token without them gets `403`
    /// `insufficient_scope`. They are also named in the `401` challenge.
    ///
    /// # Examples
    ///
    /// A token that may read but not write is refused by an endpoint requiring both:
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::http::auth::{BearerAuth, ProtectedResourceMetadata};
    /// use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// # use mcpl_test_kit::http::Tokens;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let addr = listener.local_addr()?;
    /// let mcp = StreamableHttp::new(Server::builder("demo", "1.0.0").build(), HttpConfig::new());
    /// let metadata = ProtectedResourceMetadata::new(format!("http://{addr}/mcp"));
    /// // `Tokens` grants "mcp:read" to "reader", "mcp:read" and "mcp:write" to "writer".
    /// let app = BearerAuth::new(Tokens, metadata)
    ///     .required_scopes(["mcp:read", "mcp:write"])
    ///     .protect(mcp.into_router("/mcp"));
    /// tokio::spawn(mcpl_server::http::serve(listener, app));
    ///
    /// let reply = reqwest::Client::new()
    ///     .post(format!("http://{addr}/mcp"))
    ///     .bearer_auth("reader")
    ///     .body("{}")
    ///     .send()
    ///     .await?;
    /// assert_eq!(reply.status(), 403);
    /// let challenge = reply.headers()["www-authenticate"].to_str()?;
    /// assert!(challenge.contains(r#"error="insufficient_scope""#));
    /// assert!(challenge.contains(r#"scope="mcp:read mcp:write""#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    #[must_use]
    pub fn required_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.inner.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The URL of the metadata document given in challenges. Default: derived from the
    /// resource identifier (see [`ProtectedResourceMetadata::well_known_url`]); set it when the
    /// server is reached through a proxy that changes the origin.
    ///
    /// # Examples
    ///
    /// The server listens on a local port, but clients reach it through a public proxy:
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::http::auth::{BearerAuth, ProtectedResourceMetadata};
    /// use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// # use mcpl_test_kit::http::Tokens;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let addr = listener.local_addr()?;
    /// let mcp = StreamableHttp::new(Server::builder("demo", "1.0.0").build(), HttpConfig::new());
    /// let public = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
    /// let app = BearerAuth::new(Tokens, ProtectedResourceMetadata::new("https://mcp.example.com/mcp"))
    ///     .metadata_url(public)
    ///     .protect(mcp.into_router("/mcp"));
    /// tokio::spawn(mcpl_server::http::serve(listener, app));
    ///
    /// let reply = reqwest::Client::new().post(format!("http://{addr}/mcp")).body("{}").send().await?;
    /// assert_eq!(reply.status(), 401);
    /// let challenge = reply.headers()["www-authenticate"].to_str()?;
    /// assert_eq!(challenge, format!(r#"Bearer resource_metadata="{public}""#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    #[must_use]
    pub fn metadata_url(mut self, url: impl Into<String>) -> Self {
        self.inner.metadata_url = url.into();
        self
    }

    /// `router` with every route requiring a valid token, plus the (public) metadata route.
    ///
    /// # Examples
    ///
    /// Routes mounted next to the MCP endpoint are protected too, and read the verified
    /// [`AccessToken`] from the request's extensions:
    ///
    /// ```
    /// use axum::Extension;
    /// use axum::routing::get;
    /// use mcpl_server::Server;
    /// use mcpl_server::http::auth::{AccessToken, BearerAuth, ProtectedResourceMetadata};
    /// use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// # use mcpl_test_kit::http::Tokens;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let addr = listener.local_addr()?;
    /// let mcp = StreamableHttp::new(Server::builder("demo", "1.0.0").build(), HttpConfig::new());
    /// let app = mcp.into_router("/mcp").route(
    ///     "/whoami",
    ///     get(|Extension(token): Extension<AccessToken>| async move { token.subject.unwrap_or_default() }),
    /// );
    /// let metadata = ProtectedResourceMetadata::new(format!("http://{addr}/mcp"))
    ///     .authorization_server("https://auth.example.com");
    /// let app = BearerAuth::new(Tokens, metadata).protect(app);
    /// tokio::spawn(mcpl_server::http::serve(listener, app));
    ///
    /// let http = reqwest::Client::new();
    /// let whoami = http.get(format!("http://{addr}/whoami")).bearer_auth("reader").send().await?;
    /// assert_eq!(whoami.text().await?, "ada");
    /// let anonymous = http.get(format!("http://{addr}/whoami")).send().await?;
    /// assert_eq!(anonymous.status(), 401);
    ///
    /// // The metadata document needs no token.
    /// let document = http
    ///     .get(format!("http://{addr}/.well-known/oauth-protected-resource/mcp"))
    ///     .send()
    ///     .await?
    ///     .text()
    ///     .await?;
    /// let document: serde_json::Value = serde_json::from_str(&document)?;
    /// assert_eq!(document["authorization_servers"][0], "https://auth.example.com");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn protect(self, router: Router) -> Router {
        let path = self.inner.metadata.well_known_path();
        let inner = Arc::new(self.inner);
        let metadata = inner.clone();
        let protected = router.layer(middleware::from_fn_with_state(inner, check));
        let public = Router::new().route(
            &path,
            get(move || {
                let metadata = metadata.clone();
                async move { serve_metadata(&metadata) }
            }),
        );
        protected.merge(public)
    }
}

fn serve_metadata(inner: &Inner) -> Response {
    let mut response = super::json_body(StatusCode::OK, &inner.metadata);
    response
        .headers_mut()
        .insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    response
}

async fn check(State(inner): State<Arc<Inner>>, mut request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            let dpop = scheme.eq_ignore_ascii_case("dpop");
            (dpop || scheme.eq_ignore_ascii_case("bearer")).then(|| (dpop, rest.trim().to_owned()))
        })
        .filter(|(_, t)| !t.is_empty());
    let Some((dpop, token)) = presented else {
        return challenge(&inner, StatusCode::UNAUTHORIZED, None, "authorization required");
    };
    match inner.verifier.verify(&token).await {
        Ok(access) => {
            if let Err(refusal) = check_binding(&inner, &request, dpop, &token, &access) {
                tracing::debug!(kind = refusal.kind(), reason = %refusal, "DPoP refused");
                return dpop_challenge(&inner, refusal);
            }
            if access.expires_at.is_some_and(|at| at <= SystemTime::now()) {
                return challenge(
                    &inner,
                    StatusCode::UNAUTHORIZED,
                    Some("invalid_token"),
                    "the access token expired",
                );
            }
            if !access.has_scopes(&inner.required_scopes) {
                return challenge(
                    &inner,
                    StatusCode::FORBIDDEN,
                    Some("insufficient_scope"),
                    "the access token lacks a required scope",
                );
            }
            request.extensions_mut().insert(access);
            next.run(request).await
        }
        Err(VerifyError::Invalid(reason)) => {
            tracing::debug!(%reason, "bearer token refused");
            challenge(
                &inner,
                StatusCode::UNAUTHORIZED,
                Some("invalid_token"),
                "invalid access token",
            )
        }
        Err(VerifyError::Unavailable(reason)) => {
            tracing::warn!(%reason, "bearer token could not be verified");
            let body = serde_json::json!({
                "error": "temporarily_unavailable",
                "error_description": "the access token could not be verified",
            });
            super::json_body(StatusCode::SERVICE_UNAVAILABLE, &body)
        }
    }
}

/// A quoted-string for an auth-param (RFC 9110 section 5.6.4).
fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Checks how the token is bound: a DPoP-bound one comes with a valid proof, a bearer one only
/// where bearer tokens are accepted.
fn check_binding(
    inner: &Inner,
    request: &Request,
    dpop: bool,
    token: &str,
    access: &AccessToken,
) -> Result<(), DpopError> {
    if !dpop {
        return match (&access.dpop_jkt, inner.dpop.config.is_required()) {
            (Some(_), _) => Err(DpopError::BoundTokenAsBearer),
            (None, true) => Err(DpopError::BearerRefused),
            (None, false) => Ok(()),
        };
    }
    // The URL the client addressed: the resource's origin (the server may sit behind a
    // proxy) and the request's path.
    let uri = request.uri();
    let origin = inner
        .metadata
        .resource
        .parse::<Uri>()
        .ok()
        .and_then(|r| Some(format!("{}://{}", r.scheme_str()?, r.authority()?)));
    let url = format!("{}{}", origin.unwrap_or_default(), uri.path());
    let presented = dpop::Request {
        method: request.method().as_str(),
        url,
        token,
        proofs: request.headers().get_all("dpop").iter().map(HeaderValue::as_bytes).collect(),
    };
    inner.dpop.check(&presented, access.dpop_jkt.as_deref())
}

/// The `401` refusing a request for `refusal`, with a `DPoP` challenge.
fn dpop_challenge(inner: &Inner, refusal: DpopError) -> Response {
    let error = refusal.oauth_error();
    let description = refusal.to_string();
    let value = format!(
        "DPoP error={}, error_description={}, algs={}, resource_metadata={}",
        quoted(error),
        quoted(&description),
        quoted(DPOP_ALGORITHM),
        quoted(&inner.metadata_url)
    );
    let body = serde_json::json!({ "error": error, "error_description": description });
    let mut response = super::json_body(StatusCode::UNAUTHORIZED, &body);
    let value = HeaderValue::try_from(value).unwrap_or_else(|_| HeaderValue::from_static("DPoP"));
    response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    response
}

fn challenge(
    inner: &Inner,
    status: StatusCode,
    error: Option<&str>,
    description: &str,
) -> Response {
    let mut params = Vec::new();
    if let Some(error) = error {
        params.push(format!("error={}", quoted(error)));
        params.push(format!("error_description={}", quoted(description)));
    }
    if !inner.required_scopes.is_empty() {
        params.push(format!("scope={}", quoted(&inner.required_scopes.join(" "))));
    }
    params.push(format!("resource_metadata={}", quoted(&inner.metadata_url)));
    // Where only DPoP-bound tokens are accepted, the challenge names that scheme (RFC 9449
    // section 7.1) and its algorithms.
    let value = if inner.dpop.config.is_required() {
        params.push(format!("algs={}", quoted(DPOP_ALGORITHM)));
        format!("DPoP {}", params.join(", "))
    } else {
        format!("Bearer {}", params.join(", "))
    };
    let body = serde_json::json!({
        "error": error.unwrap_or("invalid_request"),
        "error_description": description,
    });
    let mut response = super::json_body(status, &body);
    match HeaderValue::try_from(value) {
        Ok(v) => {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        Err(_) => {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_path_follows_the_resource_path() {
        let m = ProtectedResourceMetadata::new("https://example.com/mcp");
        assert_eq!(m.well_known_path(), "/.well-known/oauth-protected-resource/mcp");
        assert_eq!(
            m.well_known_url(),
            "https://example.com/.well-known/oauth-protected-resource/mcp"
        );
        let root = ProtectedResourceMetadata::new("https://example.com");
        assert_eq!(root.well_known_path(), "/.well-known/oauth-protected-resource");
    }

    #[test]
    fn quoted_escapes() {
        assert_eq!(quoted(r#"a"b\c"#), r#""a\"b\\c""#);
    }
}
