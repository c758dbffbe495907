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

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use futures::future::BoxFuture;
use serde::Serialize;

/// The path prefix of protected resource metadata documents (RFC 9728).
pub const PROTECTED_RESOURCE_WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// What a [`TokenVerifier`] learnt from a valid access token. It is added to the request's
/// extensions, for handlers mounted next to the MCP endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessToken {
    /// The scopes the token grants.
    pub scopes: Vec<String>,
    /// The client the token was issued to, when known.
    pub client_id: Option<String>,
    /// The user (or other subject) the token stands for, when known.
    pub subject: Option<String>,
    /// When the token expires, when known; an expired token is refused.
    pub expires_at: Option<SystemTime>,
}

impl AccessToken {
    /// A token granting `scopes`, with no client, subject or expiry recorded.
    pub fn new<S: Into<String>>(scopes: impl IntoIterator<Item = S>) -> Self {
        AccessToken {
            scopes: scopes.into_iter().map(Into::into).collect(),
            client_id: None,
            subject: None,
            expires_at: None,
        }
    }

    /// Records the client the token was issued to.
    #[must_use]
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// Records the subject the token stands for.
    #[must_use]
    pub fn subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }

    /// Records when the token expires.
    #[must_use]
    pub fn expires_at(mut self, at: SystemTime) -> Self {
        self.expires_at = Some(at);
        self
    }

    fn has_scopes(&self, required: &[String]) -> bool {
        required.iter().all(|s| self.scopes.contains(s))
    }
}

/// Why a [`TokenVerifier`] did not accept a token.
#[derive(Debug, thiserror::Error)]
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
pub trait TokenVerifier: Send + Sync + 'static {
    /// Verifies `token` (the value after `Bearer `).
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AccessToken, VerifyError>>;
}

/// The protected resource metadata document (RFC 9728) of an MCP server.
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
}

impl ProtectedResourceMetadata {
    /// The metadata of the resource identified by `resource`: the canonical URL of the MCP
    /// endpoint, such as `https://mcp.example.com/mcp`, exactly as clients will send it in the
    /// `resource` parameter.
    pub fn new(resource: impl Into<String>) -> Self {
        ProtectedResourceMetadata {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes_supported: None,
            bearer_methods_supported: vec!["header".to_owned()],
            resource_name: None,
            resource_documentation: None,
        }
    }

    /// Adds the issuer identifier of an authorization server that issues tokens for this
    /// resource.
    #[must_use]
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// The scopes clients may request for this resource.
    #[must_use]
    pub fn scopes_supported<S: Into<String>>(
        mut self,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.scopes_supported = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// A human-readable name of the resource.
    #[must_use]
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// A URL of human-readable documentation of the resource.
    #[must_use]
    pub fn resource_documentation(mut self, url: impl Into<String>) -> Self {
        self.resource_documentation = Some(url.into());
        self
    }

    /// The resource identifier.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The path the document is served at: the well-known prefix followed by the path of the
    /// resource identifier (`/.well-known/oauth-protected-resource/mcp` for
    /// `https://example.com/mcp`).
    pub fn well_known_path(&self) -> String {
        let path = self.resource.parse::<Uri>().map(|u| u.path().to_owned()).unwrap_or_default();
        let path = path.trim_end_matches('/');
        format!("{PROTECTED_RESOURCE_WELL_KNOWN}{path}")
    }

    /// The absolute URL of the document, derived from the resource identifier.
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
pub struct BearerAuth {
    inner: Inner,
}

struct Inner {
    verifier: Box<dyn TokenVerifier>,
    metadata: ProtectedResourceMetadata,
    metadata_url: String,
    required_scopes: Vec<String>,
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
    pub fn new(verifier: impl TokenVerifier, metadata: ProtectedResourceMetadata) -> Self {
        let metadata_url = metadata.well_known_url();
        BearerAuth {
            inner: Inner {
                verifier: Box::new(verifier),
                metadata,
                metadata_url,
                required_scopes: Vec::new(),
            },
        }
    }

    /// Scopes every token must grant; a valid token without them gets `403`
    /// `insufficient_scope`. They are also named in the `401` challenge.
    #[must_use]
    pub fn required_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.inner.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The URL of the metadata document given in challenges. Default: derived from the
    /// resource identifier (see [`ProtectedResourceMetadata::well_known_url`]); set it when the
    /// server is reached through a proxy that changes the origin.
    #[must_use]
    pub fn metadata_url(mut self, url: impl Into<String>) -> Self {
        self.inner.metadata_url = url.into();
        self
    }

    /// `router` with every route requiring a valid token, plus the (public) metadata route.
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
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim().to_owned())
        })
        .filter(|t| !t.is_empty());
    let Some(token) = token else {
        return challenge(&inner, StatusCode::UNAUTHORIZED, None, "authorization required");
    };
    match inner.verifier.verify(&token).await {
        Ok(access) => {
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
    let value = format!("Bearer {}", params.join(", "));
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
