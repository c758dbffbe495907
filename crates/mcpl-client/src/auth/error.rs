//! [`AuthError`]: why authorization failed.

use super::UrlRefusal;
use crate::transport::redirect::RedirectRefused;

/// Why authorization failed.
///
/// # Examples
///
/// ```
/// use mcpl_client::auth::{AuthError, ClientCredentials};
///
/// match ClientCredentials::private_key_jwt("my-service", "not a key") {
///     Err(AuthError::InvalidKey(detail)) => assert!(detail.contains("PKCS#8")),
///     other => panic!("expected InvalidKey, got {other:?}"),
/// }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// An HTTP exchange with a metadata, registration or token endpoint failed.
    #[error("HTTP exchange with {url} failed: {detail}")]
    Http {
        /// The URL requested.
        url: String,
        /// What went wrong.
        detail: String,
    },
    /// A metadata, registration or token endpoint redirected where the client does not
    /// follow (another origin, or too many hops; see [`crate::transport::redirect`]).
    #[error("the request to {url} was redirected")]
    Redirect {
        /// The URL requested.
        url: String,
        /// Why the redirect was not followed.
        #[source]
        source: RedirectRefused,
    },
    /// A URL the flow was about to use breaks the [`DiscoveryPolicy`](super::DiscoveryPolicy):
    /// nothing was sent to it.
    #[error("{what} {url} refused")]
    UrlRefused {
        /// What the URL is: `MCP server`, `resource metadata`, `authorization server`,
        /// `authorization endpoint`, `token endpoint` or `registration endpoint`.
        what: &'static str,
        /// The URL.
        url: String,
        /// Which rule it breaks.
        #[source]
        reason: UrlRefusal,
    },
    /// A URL could not be parsed.
    #[error("invalid URL {url:?}: {detail}")]
    InvalidUrl {
        /// The URL.
        url: String,
        /// What is wrong with it.
        detail: String,
    },
    /// A metadata document could not be decoded.
    #[error("invalid metadata at {url}: {detail}")]
    InvalidMetadata {
        /// Where it came from.
        url: String,
        /// What is wrong with it.
        detail: String,
    },
    /// No protected resource metadata was found.
    #[error("no protected resource metadata found for {server}")]
    NoResourceMetadata {
        /// The MCP server.
        server: String,
    },
    /// The protected resource metadata names another resource than the server.
    #[error("the protected resource metadata names resource {resource}, not server {server}")]
    ResourceMismatch {
        /// The MCP server.
        server: String,
        /// The resource the metadata names.
        resource: String,
    },
    /// No authorization server metadata was found.
    #[error("no authorization server metadata found for issuer {issuer}")]
    NoServerMetadata {
        /// The issuer.
        issuer: String,
    },
    /// The metadata names another issuer than the one it was fetched for.
    #[error("authorization server metadata names issuer {found}, expected {expected}")]
    IssuerMismatch {
        /// The issuer looked up.
        expected: String,
        /// The issuer in the document.
        found: String,
    },
    /// The authorization server does not support PKCE with S256.
    #[error("the authorization server {issuer} does not support PKCE S256")]
    PkceUnsupported {
        /// The issuer.
        issuer: String,
    },
    /// There is no way to obtain a client id at this authorization server.
    #[error("no client registration possible at {issuer}")]
    NoRegistration {
        /// The issuer.
        issuer: String,
    },
    /// The authorization server refused a request (`error` of RFC 6749).
    #[error("the authorization server refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused {
        /// The OAuth error code.
        error: String,
        /// Its description.
        description: Option<String>,
    },
    /// The authorization response was invalid: wrong `state` or `iss`, no code.
    #[error("invalid authorization response: {0}")]
    InvalidResponse(String),
    /// The application's [`Authorizer`](super::Authorizer) failed or the user declined.
    #[error("interactive authorization failed: {0}")]
    Interaction(String),
    /// A client's private key could not be read.
    #[error("invalid client key: {0}")]
    InvalidKey(String),
    /// A random number could not be drawn.
    #[error("no randomness available: {0}")]
    Random(String),
    /// An [`AssertionSource`](super::AssertionSource) could not give an assertion.
    #[error("no assertion: {0}")]
    Assertion(String),
    /// The protected resource requires DPoP-bound tokens, and the client has no DPoP key or
    /// the authorization server does not support `ES256` proofs.
    #[error("the resource requires DPoP and {0}")]
    DpopUnavailable(String),
}

impl AuthError {
    /// The error of a failed exchange with `url`: [`AuthError::Redirect`] for a refused
    /// redirect, else [`AuthError::Http`].
    pub(crate) fn exchange(url: &str, e: &reqwest::Error) -> AuthError {
        match RedirectRefused::find(e) {
            Some(refused) => AuthError::Redirect { url: url.to_owned(), source: refused.clone() },
            None => AuthError::Http { url: url.to_owned(), detail: e.to_string() },
        }
    }

    /// A stable name for the kind of failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::{Challenge, OAuth, ClientCredentials};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let oauth = OAuth::client_credentials(None, ClientCredentials::confidential("svc", "secret"));
    /// // A 403 that is not `insufficient_scope` is final: no new token will help.
    /// let forbidden = r#"Bearer error="forbidden""#;
    /// assert!(!Challenge::parse(forbidden).is_insufficient_scope());
    /// let err = oauth.handle_refusal("http://127.0.0.1:9/mcp", 403, Some(forbidden), None).await.unwrap_err();
    /// // A stable name, for logs and metrics.
    /// assert_eq!(err.kind(), "refused");
    /// # }
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            AuthError::Http { .. } => "http",
            AuthError::Redirect { .. } => "redirect",
            AuthError::UrlRefused { .. } => "url_refused",
            AuthError::InvalidUrl { .. } => "invalid_url",
            AuthError::InvalidMetadata { .. } => "invalid_metadata",
            AuthError::NoResourceMetadata { .. } => "no_resource_metadata",
            AuthError::ResourceMismatch { .. } => "resource_mismatch",
            AuthError::NoServerMetadata { .. } => "no_server_metadata",
            AuthError::IssuerMismatch { .. } => "issuer_mismatch",
            AuthError::PkceUnsupported { .. } => "pkce_unsupported",
            AuthError::NoRegistration { .. } => "no_registration",
            AuthError::InvalidKey(_) => "invalid_key",
            AuthError::Refused { .. } => "refused",
            AuthError::InvalidResponse(_) => "invalid_response",
            AuthError::Interaction(_) => "interaction",
            AuthError::Random(_) => "random",
            AuthError::Assertion(_) => "assertion",
            AuthError::DpopUnavailable(_) => "dpop_unavailable",
        }
    }
}
