//! OAuth 2.1 authorization for the HTTP transport, as the MCP specification describes it.
//!
//! Give an [`OAuth`] to [`HttpTransport::auth`](crate::transport::HttpTransport::auth): every
//! request then carries the access token, and a `401` (or a `403` with
//! `error="insufficient_scope"`) starts the authorization flow, after which the request is sent
//! again (at most [`MAX_AUTHORIZATIONS`] times per request):
//!
//! 1. **Discovery.** The protected resource metadata (RFC 9728) comes from the challenge's
//!    `resource_metadata`, else from the well-known locations; its `resource` must identify
//!    the server. The authorization server's metadata (RFC 8414 or OpenID Connect Discovery)
//!    must name exactly the issuer it was looked up for, and must list `S256` in
//!    `code_challenge_methods_supported` (PKCE). A server without protected resource
//!    metadata is treated as the 2025-03-26 revision did: its origin is the authorization
//!    server, whose metadata, if it has none, is the default endpoints `/authorize`,
//!    `/token` and `/register` there (PKCE S256 assumed, as that revision requires it).
//! 2. **Registration**, per issuer (credentials are never used with another issuer):
//!    pre-registered credentials ([`OAuth::client`]), else a client ID metadata document URL
//!    ([`OAuth::client_metadata_url`]) when the server accepts them, else dynamic client
//!    registration (RFC 7591).
//! 3. **Authorization code with PKCE S256**: the [`Authorizer`] shows the user the
//!    authorization URL and returns the URL the browser was redirected to; its `state` and
//!    `iss` (RFC 9207) are checked before the code is exchanged. The `resource` parameter
//!    (RFC 8707) goes on both requests; the scope is the challenge's, else the resource's
//!    `scopes_supported`, else omitted, plus everything asked before on a step-up, plus
//!    `offline_access` when the authorization server lists it.
//! 4. **Tokens** live in a [`CredentialStore`]; an expired or rejected access token is first
//!    refreshed with the refresh token when there is one (a refresh the server rejects leads
//!    to a new authorization; a transient failure is reported).
//!
//! A client acting on its own behalf uses the client credentials grant instead of steps 2 and
//! 3 ([`OAuth::client_credentials`]); it authenticates with a client secret or, given a
//! [`ClientKey`], with a signed JWT assertion (`private_key_jwt`, RFC 7523). A workload with an
//! identity token from its platform presents it with the JWT bearer grant instead
//! ([`OAuth::jwt_bearer`], workload identity federation); under enterprise-managed
//! authorization, the user's ID token is exchanged at the enterprise's identity provider for
//! an ID-JAG (RFC 8693 token exchange), presented with the JWT bearer grant
//! ([`OAuth::enterprise`]).
//!
//! With a DPoP key ([`OAuth::dpop`]), tokens from authorization servers that support DPoP
//! (RFC 9449) are bound to the key and every request carries a fresh proof; server nonces are
//! followed (see [`dpop`]).
//!
//! Every URL the flow uses is judged first by the [`DiscoveryPolicy`] (HTTPS except loopback,
//! no stepping into a private network, resource metadata on the server's origin), and the
//! HTTP exchanges follow same-origin redirects only ([`crate::transport::redirect`]): a
//! hostile server cannot make the client send tokens or secrets in cleartext or to hosts
//! inside the user's network.
//!
//! Secrets (client secrets, private keys, tokens, codes, verifiers) are never logged.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use futures::future::BoxFuture;
use reqwest::Url;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

mod assertion;
mod challenge;
pub mod dpop;
mod grant;
mod metadata;
mod policy;

use self::grant::MachineGrant;
use crate::transport::redirect::{self, RedirectRefused};

pub use self::assertion::ClientKey;
pub use self::challenge::Challenge;
pub use self::grant::{Assertion, AssertionFile, AssertionSource, IdentityProvider};
pub use self::metadata::{ResourceMetadata, ServerMetadata};
pub use self::policy::{DiscoveryPolicy, UrlRefusal};

/// How many times one request is authorized before its refusal is final.
///
/// # Examples
///
/// ```
/// use mcpl_client::auth::MAX_AUTHORIZATIONS;
///
/// // A server that refuses every new token does not keep a request looping.
/// assert_eq!(MAX_AUTHORIZATIONS, 3);
/// ```
pub const MAX_AUTHORIZATIONS: u32 = 3;

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
    /// A URL the flow was about to use breaks the [`DiscoveryPolicy`]: nothing was sent to it.
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
    /// The application's [`Authorizer`] failed or the user declined.
    #[error("interactive authorization failed: {0}")]
    Interaction(String),
    /// A client's private key could not be read.
    #[error("invalid client key: {0}")]
    InvalidKey(String),
    /// A random number could not be drawn.
    #[error("no randomness available: {0}")]
    Random(String),
    /// An [`AssertionSource`] could not give an assertion.
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

/// A client's credentials at one authorization server.
///
/// # Examples
///
/// ```
/// use mcpl_client::auth::{ClientCredentials, OAuth};
///
/// let credentials = ClientCredentials::confidential("my-app", "s3cret");
/// assert_eq!(credentials.client_id, "my-app");
/// // The secret never reaches logs.
/// assert!(!format!("{credentials:?}").contains("s3cret"));
/// // Registered beforehand at one authorization server, used there only.
/// let oauth = OAuth::client_credentials(Some("https://auth.example.com".into()), credentials);
/// # drop(oauth);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    /// The client id (a URL for client ID metadata documents).
    pub client_id: String,
    /// The client secret of a confidential client.
    pub client_secret: Option<String>,
    /// How to authenticate at the token endpoint (`client_secret_basic`,
    /// `client_secret_post`, `none`); chosen from the server's metadata when unset.
    /// Ignored when [`signing_key`](Self::signing_key) is set.
    pub token_endpoint_auth_method: Option<String>,
    /// The client's private key: when set, the client authenticates with `private_key_jwt`
    /// (RFC 7523), a signed assertion addressed to the authorization server's issuer.
    pub signing_key: Option<ClientKey>,
}

impl ClientCredentials {
    /// A public client (no secret).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::{ClientCredentials, OAuth};
    /// # /// A protected MCP server (tool `hello`, scope `mcp:tools`) and its authorization server,
    /// # /// on local ports; returns the MCP URL and the issuer. The authorization server registers
    /// # /// every client as `dyn-client` / `dyn-secret`, authorizes at once (redirecting with a code)
    /// # /// and issues a token to whoever presents `dyn-secret`.
    /// # async fn protected_server() -> std::io::Result<(String, String)> {
    /// #     use std::sync::{Arc, Mutex};
    /// #     use axum::http::{StatusCode, Uri, header};
    /// #     use axum::routing::{get, post};
    /// #     use mcpl_server::http::auth::{AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError};
    /// #     fn json(status: StatusCode, value: serde_json::Value) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
    /// #         (status, [(header::CONTENT_TYPE, "application/json")], value.to_string())
    /// #     }
    /// #     struct Verifier(Arc<Mutex<Vec<String>>>);
    /// #     impl TokenVerifier for Verifier {
    /// #         fn verify<'a>(&'a self, token: &'a str) -> futures::future::BoxFuture<'a, Result<AccessToken, VerifyError>> {
    /// #             let known = self.0.lock().unwrap().iter().any(|t| t == token);
    /// #             Box::pin(async move {
    /// #                 if known { Ok(AccessToken::new(vec!["mcp:tools".to_owned()])) } else { Err(VerifyError::Invalid("unknown token".into())) }
    /// #             })
    /// #         }
    /// #     }
    /// #     let issued: Arc<Mutex<Vec<String>>> = Arc::default();
    /// #     let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let issuer = format!("http://{}", as_listener.local_addr()?);
    /// #     let metadata = serde_json::json!({
    /// #         "issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
    /// #         "token_endpoint": format!("{issuer}/token"), "registration_endpoint": format!("{issuer}/register"),
    /// #         "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
    /// #         "token_endpoint_auth_methods_supported": ["client_secret_post"],
    /// #     });
    /// #     let (iss, tokens) = (issuer.clone(), issued.clone());
    /// #     let auth_server = axum::Router::new()
    /// #         .route("/.well-known/oauth-authorization-server", get(move || { let m = metadata.clone(); async move { json(StatusCode::OK, m) } }))
    /// #         .route("/register", post(|| async { json(StatusCode::CREATED, serde_json::json!({"client_id": "dyn-client", "client_secret": "dyn-secret"})) }))
    /// #         .route("/authorize", get(move |uri: Uri| { let iss = iss.clone(); async move {
    /// #             let query: std::collections::HashMap<String, String> = reqwest::Url::parse(&format!("http://x/?{}", uri.query().unwrap_or_default())).unwrap().query_pairs().into_owned().collect();
    /// #             let mut back = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
    /// #             back.query_pairs_mut().append_pair("code", "the-code").append_pair("state", &query["state"]).append_pair("iss", &iss);
    /// #             (StatusCode::FOUND, [(header::LOCATION, back.to_string())])
    /// #         } }))
    /// #         .route("/token", post(move |body: String| { let tokens = tokens.clone(); async move {
    /// #             if !body.contains("client_secret=dyn-secret") { return json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "invalid_client"})); }
    /// #             let mut issued = tokens.lock().unwrap();
    /// #             let token = format!("tok-{}", issued.len());
    /// #             issued.push(token.clone());
    /// #             json(StatusCode::OK, serde_json::json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
    /// #         } }));
    /// #     tokio::spawn(mcpl_server::http::serve(as_listener, auth_server));
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let base = format!("http://{}", listener.local_addr()?);
    /// #     let server = mcpl_server::Server::builder("protected", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("hello", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async { Ok(mcpl_server::ToolOutput::text("hi")) })
    /// #         .build();
    /// #     let mcp = mcpl_server::http::StreamableHttp::new(server, mcpl_server::http::HttpConfig::new()).into_router("/mcp");
    /// #     let resource = ProtectedResourceMetadata::new(format!("{base}/mcp")).authorization_server(issuer.clone()).scopes_supported(["mcp:tools"]);
    /// #     let app = BearerAuth::new(Verifier(issued), resource).required_scopes(["mcp:tools"]).protect(mcp);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((format!("{base}/mcp"), issuer))
    /// # }
    /// # /// Plays the user's browser: follows the authorization URL to the redirect.
    /// # #[derive(Debug)]
    /// # struct Browser;
    /// # impl mcpl_client::auth::Authorizer for Browser {
    /// #     fn authorize<'a>(&'a self, url: &'a str) -> futures::future::BoxFuture<'a, Result<String, mcpl_client::auth::AuthError>> {
    /// #         Box::pin(async move {
    /// #             let fail = |e: reqwest::Error| mcpl_client::auth::AuthError::Interaction(e.to_string());
    /// #             let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().map_err(fail)?;
    /// #             let response = http.get(url).send().await.map_err(fail)?;
    /// #             let location = response.headers().get("location").and_then(|v| v.to_str().ok());
    /// #             location.map(str::to_owned).ok_or_else(|| mcpl_client::auth::AuthError::Interaction("no redirect".into()))
    /// #         })
    /// #     }
    /// # }
    ///
    /// // A native app registered at the authorization server without a secret.
    /// let credentials = ClientCredentials::public("my-desktop-app");
    /// assert_eq!(credentials.client_secret, None);
    /// let oauth = OAuth::new(Browser, "http://127.0.0.1:8765/callback")
    ///     .client("https://auth.example.com", credentials);
    /// # drop(oauth);
    /// ```
    pub fn public(client_id: impl Into<String>) -> Self {
        ClientCredentials {
            client_id: client_id.into(),
            client_secret: None,
            token_endpoint_auth_method: None,
            signing_key: None,
        }
    }

    /// A confidential client.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::auth::{ClientCredentials, OAuth};
    /// use mcpl_client::transport::HttpTransport;
    /// # /// A protected MCP server (tool `hello`, scope `mcp:tools`) and its authorization server,
    /// # /// on local ports; returns the MCP URL and the issuer. The authorization server registers
    /// # /// every client as `dyn-client` / `dyn-secret`, authorizes at once (redirecting with a code)
    /// # /// and issues a token to whoever presents `dyn-secret`.
    /// # async fn protected_server() -> std::io::Result<(String, String)> {
    /// #     use std::sync::{Arc, Mutex};
    /// #     use axum::http::{StatusCode, Uri, header};
    /// #     use axum::routing::{get, post};
    /// #     use mcpl_server::http::auth::{AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError};
    /// #     fn json(status: StatusCode, value: serde_json::Value) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
    /// #         (status, [(header::CONTENT_TYPE, "application/json")], value.to_string())
    /// #     }
    /// #     struct Verifier(Arc<Mutex<Vec<String>>>);
    /// #     impl TokenVerifier for Verifier {
    /// #         fn verify<'a>(&'a self, token: &'a str) -> futures::future::BoxFuture<'a, Result<AccessToken, VerifyError>> {
    /// #             let known = self.0.lock().unwrap().iter().any(|t| t == token);
    /// #             Box::pin(async move {
    /// #                 if known { Ok(AccessToken::new(vec!["mcp:tools".to_owned()])) } else { Err(VerifyError::Invalid("unknown token".into())) }
    /// #             })
    /// #         }
    /// #     }
    /// #     let issued: Arc<Mutex<Vec<String>>> = Arc::default();
    /// #     let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let issuer = format!("http://{}", as_listener.local_addr()?);
    /// #     let metadata = serde_json::json!({
    /// #         "issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
    /// #         "token_endpoint": format!("{issuer}/token"), "registration_endpoint": format!("{issuer}/register"),
    /// #         "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
    /// #         "token_endpoint_auth_methods_supported": ["client_secret_post"],
    /// #     });
    /// #     let (iss, tokens) = (issuer.clone(), issued.clone());
    /// #     let auth_server = axum::Router::new()
    /// #         .route("/.well-known/oauth-authorization-server", get(move || { let m = metadata.clone(); async move { json(StatusCode::OK, m) } }))
    /// #         .route("/register", post(|| async { json(StatusCode::CREATED, serde_json::json!({"client_id": "dyn-client", "client_secret": "dyn-secret"})) }))
    /// #         .route("/authorize", get(move |uri: Uri| { let iss = iss.clone(); async move {
    /// #             let query: std::collections::HashMap<String, String> = reqwest::Url::parse(&format!("http://x/?{}", uri.query().unwrap_or_default())).unwrap().query_pairs().into_owned().collect();
    /// #             let mut back = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
    /// #             back.query_pairs_mut().append_pair("code", "the-code").append_pair("state", &query["state"]).append_pair("iss", &iss);
    /// #             (StatusCode::FOUND, [(header::LOCATION, back.to_string())])
    /// #         } }))
    /// #         .route("/token", post(move |body: String| { let tokens = tokens.clone(); async move {
    /// #             if !body.contains("client_secret=dyn-secret") { return json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "invalid_client"})); }
    /// #             let mut issued = tokens.lock().unwrap();
    /// #             let token = format!("tok-{}", issued.len());
    /// #             issued.push(token.clone());
    /// #             json(StatusCode::OK, serde_json::json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
    /// #         } }));
    /// #     tokio::spawn(mcpl_server::http::serve(as_listener, auth_server));
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let base = format!("http://{}", listener.local_addr()?);
    /// #     let server = mcpl_server::Server::builder("protected", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("hello", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async { Ok(mcpl_server::ToolOutput::text("hi")) })
    /// #         .build();
    /// #     let mcp = mcpl_server::http::StreamableHttp::new(server, mcpl_server::http::HttpConfig::new()).into_router("/mcp");
    /// #     let resource = ProtectedResourceMetadata::new(format!("{base}/mcp")).authorization_server(issuer.clone()).scopes_supported(["mcp:tools"]);
    /// #     let app = BearerAuth::new(Verifier(issued), resource).required_scopes(["mcp:tools"]).protect(mcp);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((format!("{base}/mcp"), issuer))
    /// # }
    /// # /// Plays the user's browser: follows the authorization URL to the redirect.
    /// # #[derive(Debug)]
    /// # struct Browser;
    /// # impl mcpl_client::auth::Authorizer for Browser {
    /// #     fn authorize<'a>(&'a self, url: &'a str) -> futures::future::BoxFuture<'a, Result<String, mcpl_client::auth::AuthError>> {
    /// #         Box::pin(async move {
    /// #             let fail = |e: reqwest::Error| mcpl_client::auth::AuthError::Interaction(e.to_string());
    /// #             let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().map_err(fail)?;
    /// #             let response = http.get(url).send().await.map_err(fail)?;
    /// #             let location = response.headers().get("location").and_then(|v| v.to_str().ok());
    /// #             location.map(str::to_owned).ok_or_else(|| mcpl_client::auth::AuthError::Interaction("no redirect".into()))
    /// #         })
    /// #     }
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, issuer) = protected_server().await?;
    /// // Registered beforehand at `issuer`; the flow uses these instead of registering.
    /// let credentials = ClientCredentials::confidential("dyn-client", "dyn-secret");
    /// let oauth = Arc::new(OAuth::new(Browser, "http://127.0.0.1:8765/callback").client(issuer, credentials));
    /// let client = Client::new("my-app", "1.0.0");
    /// client.connect(HttpTransport::new(url).auth(oauth)).await?;
    /// client.call_tool("hello", ()).await?;
    /// # Ok(()) }
    /// ```
    pub fn confidential(client_id: impl Into<String>, secret: impl Into<String>) -> Self {
        ClientCredentials {
            client_id: client_id.into(),
            client_secret: Some(secret.into()),
            token_endpoint_auth_method: None,
            signing_key: None,
        }
    }

    /// A client that authenticates with `private_key_jwt` (RFC 7523): assertions signed ES256
    /// with `pem`, a PKCS#8 PEM P-256 private key.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::{ClientCredentials, OAuth};
    ///
    /// // The service's P-256 key, PKCS#8 PEM (generated here; normally read from a secret store).
    /// let pem = rcgen::KeyPair::generate()?.serialize_pem();
    /// let credentials = ClientCredentials::private_key_jwt("my-service", &pem)?;
    /// assert_eq!(credentials.token_endpoint_auth_method.as_deref(), Some("private_key_jwt"));
    /// assert!(credentials.signing_key.is_some());
    /// let oauth = OAuth::client_credentials(Some("https://auth.example.com".into()), credentials);
    /// # drop(oauth);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn private_key_jwt(client_id: impl Into<String>, pem: &str) -> Result<Self, AuthError> {
        Ok(ClientCredentials {
            client_id: client_id.into(),
            client_secret: None,
            token_endpoint_auth_method: Some("private_key_jwt".to_owned()),
            signing_key: Some(ClientKey::from_pkcs8_pem(pem)?),
        })
    }
}

impl fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<redacted>"))
            .field("token_endpoint_auth_method", &self.token_endpoint_auth_method)
            .field("signing_key", &self.signing_key)
            .finish()
    }
}

/// The tokens obtained for one MCP server.
///
/// # Examples
///
/// ```
/// use mcpl_client::auth::{CredentialStore, MemoryStore, TokenType, Tokens};
///
/// let tokens = Tokens {
///     access_token: "eyJhbGciOi...".into(),
///     refresh_token: Some("r-123".into()),
///     scope: Some("mcp:tools".into()),
///     issuer: "https://auth.example.com".into(),
///     token_type: TokenType::Bearer,
/// };
/// // Never in logs.
/// assert!(!format!("{tokens:?}").contains("eyJhbGciOi"));
/// let store = MemoryStore::default();
/// store.set_tokens("https://mcp.example.com/mcp", Some(tokens.clone()));
/// assert_eq!(store.tokens("https://mcp.example.com/mcp"), Some(tokens));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Tokens {
    /// The access token.
    pub access_token: String,
    /// The refresh token, when one was issued.
    pub refresh_token: Option<String>,
    /// The scopes requested for these tokens (space-separated), reused on step-up.
    pub scope: Option<String>,
    /// The issuer that issued them.
    pub issuer: String,
    /// How the access token is presented: bearer, or bound to the DPoP key.
    pub token_type: TokenType,
}

/// How an access token is presented (the `token_type` of the token response).
///
/// # Examples
///
/// ```
/// use mcpl_client::auth::TokenType;
///
/// assert_eq!(TokenType::default(), TokenType::Bearer);
/// assert_eq!(TokenType::Dpop.scheme(), "DPoP");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum TokenType {
    /// `Authorization: Bearer <token>` (RFC 6750).
    #[default]
    Bearer,
    /// `Authorization: DPoP <token>` with a proof of the key it is bound to (RFC 9449).
    Dpop,
}

impl TokenType {
    /// The scheme of the `Authorization` header.
    pub fn scheme(self) -> &'static str {
        match self {
            TokenType::Bearer => "Bearer",
            TokenType::Dpop => "DPoP",
        }
    }
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("access_token", &"<redacted>")
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "<redacted>"))
            .field("scope", &self.scope)
            .field("issuer", &self.issuer)
            .field("token_type", &self.token_type)
            .finish()
    }
}

/// Where client registrations (by issuer) and tokens (by MCP server URL) are kept. The
/// default, [`MemoryStore`], forgets them when the process ends.
///
/// # Examples
///
/// A store that keeps tokens across restarts (here in a shared map standing in for a keychain):
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::{Arc, Mutex};
///
/// use mcpl_client::Client;
/// use mcpl_client::auth::{ClientCredentials, CredentialStore, OAuth, Tokens};
/// use mcpl_client::transport::HttpTransport;
/// # /// A protected MCP server (tool `hello`, scope `mcp:tools`) and its authorization server,
/// # /// on local ports; returns the MCP URL and the issuer. The authorization server registers
/// # /// every client as `dyn-client` / `dyn-secret`, authorizes at once (redirecting with a code)
/// # /// and issues a token to whoever presents `dyn-secret`.
/// # async fn protected_server() -> std::io::Result<(String, String)> {
/// #     use std::sync::{Arc, Mutex};
/// #     use axum::http::{StatusCode, Uri, header};
/// #     use axum::routing::{get, post};
/// #     use mcpl_server::http::auth::{AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError};
/// #     fn json(status: StatusCode, value: serde_json::Value) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
/// #         (status, [(header::CONTENT_TYPE, "application/json")], value.to_string())
/// #     }
/// #     struct Verifier(Arc<Mutex<Vec<String>>>);
/// #     impl TokenVerifier for Verifier {
/// #         fn verify<'a>(&'a self, token: &'a str) -> futures::future::BoxFuture<'a, Result<AccessToken, VerifyError>> {
/// #             let known = self.0.lock().unwrap().iter().any(|t| t == token);
/// #             Box::pin(async move {
/// #                 if known { Ok(AccessToken::new(vec!["mcp:tools".to_owned()])) } else { Err(VerifyError::Invalid("unknown token".into())) }
/// #             })
/// #         }
/// #     }
/// #     let issued: Arc<Mutex<Vec<String>>> = Arc::default();
/// #     let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// #     let issuer = format!("http://{}", as_listener.local_addr()?);
/// #     let metadata = serde_json::json!({
/// #         "issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
/// #         "token_endpoint": format!("{issuer}/token"), "registration_endpoint": format!("{issuer}/register"),
/// #         "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
/// #         "token_endpoint_auth_methods_supported": ["client_secret_post"],
/// #     });
/// #     let (iss, tokens) = (issuer.clone(), issued.clone());
/// #     let auth_server = axum::Router::new()
/// #         .route("/.well-known/oauth-authorization-server", get(move || { let m = metadata.clone(); async move { json(StatusCode::OK, m) } }))
/// #         .route("/register", post(|| async { json(StatusCode::CREATED, serde_json::json!({"client_id": "dyn-client", "client_secret": "dyn-secret"})) }))
/// #         .route("/authorize", get(move |uri: Uri| { let iss = iss.clone(); async move {
/// #             let query: std::collections::HashMap<String, String> = reqwest::Url::parse(&format!("http://x/?{}", uri.query().unwrap_or_default())).unwrap().query_pairs().into_owned().collect();
/// #             let mut back = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
/// #             back.query_pairs_mut().append_pair("code", "the-code").append_pair("state", &query["state"]).append_pair("iss", &iss);
/// #             (StatusCode::FOUND, [(header::LOCATION, back.to_string())])
/// #         } }))
/// #         .route("/token", post(move |body: String| { let tokens = tokens.clone(); async move {
/// #             if !body.contains("client_secret=dyn-secret") { return json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "invalid_client"})); }
/// #             let mut issued = tokens.lock().unwrap();
/// #             let token = format!("tok-{}", issued.len());
/// #             issued.push(token.clone());
/// #             json(StatusCode::OK, serde_json::json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
/// #         } }));
/// #     tokio::spawn(mcpl_server::http::serve(as_listener, auth_server));
/// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// #     let base = format!("http://{}", listener.local_addr()?);
/// #     let server = mcpl_server::Server::builder("protected", "1.0.0")
/// #         .tool(mcpl_core::types::Tool::new("hello", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async { Ok(mcpl_server::ToolOutput::text("hi")) })
/// #         .build();
/// #     let mcp = mcpl_server::http::StreamableHttp::new(server, mcpl_server::http::HttpConfig::new()).into_router("/mcp");
/// #     let resource = ProtectedResourceMetadata::new(format!("{base}/mcp")).authorization_server(issuer.clone()).scopes_supported(["mcp:tools"]);
/// #     let app = BearerAuth::new(Verifier(issued), resource).required_scopes(["mcp:tools"]).protect(mcp);
/// #     tokio::spawn(mcpl_server::http::serve(listener, app));
/// #     Ok((format!("{base}/mcp"), issuer))
/// # }
/// # /// Plays the user's browser: follows the authorization URL to the redirect.
/// # #[derive(Debug)]
/// # struct Browser;
/// # impl mcpl_client::auth::Authorizer for Browser {
/// #     fn authorize<'a>(&'a self, url: &'a str) -> futures::future::BoxFuture<'a, Result<String, mcpl_client::auth::AuthError>> {
/// #         Box::pin(async move {
/// #             let fail = |e: reqwest::Error| mcpl_client::auth::AuthError::Interaction(e.to_string());
/// #             let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().map_err(fail)?;
/// #             let response = http.get(url).send().await.map_err(fail)?;
/// #             let location = response.headers().get("location").and_then(|v| v.to_str().ok());
/// #             location.map(str::to_owned).ok_or_else(|| mcpl_client::auth::AuthError::Interaction("no redirect".into()))
/// #         })
/// #     }
/// # }
///
/// #[derive(Debug, Default, Clone)]
/// struct Keychain {
///     clients: Arc<Mutex<HashMap<String, ClientCredentials>>>,
///     tokens: Arc<Mutex<HashMap<String, Tokens>>>,
/// }
///
/// impl CredentialStore for Keychain {
///     fn client(&self, issuer: &str) -> Option<ClientCredentials> {
///         self.clients.lock().unwrap().get(issuer).cloned()
///     }
///     fn set_client(&self, issuer: &str, client: ClientCredentials) {
///         self.clients.lock().unwrap().insert(issuer.to_owned(), client);
///     }
///     fn tokens(&self, server: &str) -> Option<Tokens> {
///         self.tokens.lock().unwrap().get(server).cloned()
///     }
///     fn set_tokens(&self, server: &str, tokens: Option<Tokens>) {
///         let mut all = self.tokens.lock().unwrap();
///         match tokens {
///             Some(tokens) => all.insert(server.to_owned(), tokens),
///             None => all.remove(server),
///         };
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (url, issuer) = protected_server().await?;
/// let keychain = Keychain::default();
/// let oauth = OAuth::new(Browser, "http://127.0.0.1:8765/callback").store(keychain.clone());
/// let client = Client::new("my-app", "1.0.0");
/// client.connect(HttpTransport::new(url.clone()).auth(Arc::new(oauth))).await?;
///
/// // The registration and the tokens were kept in the keychain.
/// assert_eq!(keychain.client(&issuer).map(|c| c.client_id).as_deref(), Some("dyn-client"));
/// assert_eq!(keychain.tokens(&url).map(|t| t.issuer), Some(issuer));
/// # Ok(()) }
/// ```
pub trait CredentialStore: Send + Sync + fmt::Debug {
    /// The client registered at `issuer`.
    fn client(&self, issuer: &str) -> Option<ClientCredentials>;
    /// Records the client registered at `issuer`.
    fn set_client(&self, issuer: &str, client: ClientCredentials);
    /// The tokens for the MCP server at `server`.
    fn tokens(&self, server: &str) -> Option<Tokens>;
    /// Records (or with `None` forgets) the tokens for the MCP server at `server`.
    fn set_tokens(&self, server: &str, tokens: Option<Tokens>);
}

/// A [`CredentialStore`] in memory.
///
/// # Examples
///
/// ```
/// use mcpl_client::auth::{ClientCredentials, CredentialStore, MemoryStore};
///
/// let store = MemoryStore::default();
/// assert!(store.client("https://auth.example.com").is_none());
/// store.set_client("https://auth.example.com", ClientCredentials::public("my-app"));
/// assert_eq!(store.client("https://auth.example.com").map(|c| c.client_id).as_deref(), Some("my-app"));
/// // Registrations are per issuer.
/// assert!(store.client("https://other.example.com").is_none());
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    clients: Mutex<HashMap<String, ClientCredentials>>,
    tokens: Mutex<HashMap<String, Tokens>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl CredentialStore for MemoryStore {
    fn client(&self, issuer: &str) -> Option<ClientCredentials> {
        lock(&self.clients).get(issuer).cloned()
    }
    fn set_client(&self, issuer: &str, client: ClientCredentials) {
        lock(&self.clients).insert(issuer.to_owned(), client);
    }
    fn tokens(&self, server: &str) -> Option<Tokens> {
        lock(&self.tokens).get(server).cloned()
    }
    fn set_tokens(&self, server: &str, tokens: Option<Tokens>) {
        match tokens {
            Some(t) => lock(&self.tokens).insert(server.to_owned(), t),
            None => lock(&self.tokens).remove(server),
        };
    }
}

/// The interactive step: show the user the authorization URL (open a browser) and return the
/// full URL the authorization server redirected to (the `redirect_uri` with `code`, `state`
/// and maybe `iss`), typically caught by a local HTTP listener.
///
/// # Examples
///
/// A headless authorizer for tests, which plays the browser: it follows the authorization URL and
/// returns where the authorization server redirected (a desktop app would open the URL in the
/// browser and catch the redirect on a local listener):
///
/// ```
/// use futures::future::BoxFuture;
/// use mcpl_client::auth::{AuthError, Authorizer, OAuth};
///
/// #[derive(Debug)]
/// struct FollowRedirect;
///
/// impl Authorizer for FollowRedirect {
///     fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, AuthError>> {
///         Box::pin(async move {
///             let fail = |e: reqwest::Error| AuthError::Interaction(e.to_string());
///             let http = reqwest::Client::builder()
///                 .redirect(reqwest::redirect::Policy::none())
///                 .build()
///                 .map_err(fail)?;
///             let response = http.get(url).send().await.map_err(fail)?;
///             let location = response.headers().get("location").and_then(|v| v.to_str().ok());
///             location.map(str::to_owned).ok_or_else(|| AuthError::Interaction("no redirect".into()))
///         })
///     }
/// }
///
/// let oauth = OAuth::new(FollowRedirect, "http://127.0.0.1:8765/callback");
/// # drop(oauth);
/// ```
pub trait Authorizer: Send + Sync + fmt::Debug {
    /// Runs the interaction for `authorization_url`.
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<String, AuthError>>;
}

/// The OAuth client of one application; see the [module documentation](self).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
///
/// use mcpl_client::Client;
/// use mcpl_client::auth::OAuth;
/// use mcpl_client::transport::HttpTransport;
/// use mcpl_core::types::ContentBlock;
/// # /// A protected MCP server (tool `hello`, scope `mcp:tools`) and its authorization server,
/// # /// on local ports; returns the MCP URL and the issuer. The authorization server registers
/// # /// every client as `dyn-client` / `dyn-secret`, authorizes at once (redirecting with a code)
/// # /// and issues a token to whoever presents `dyn-secret`.
/// # async fn protected_server() -> std::io::Result<(String, String)> {
/// #     use std::sync::{Arc, Mutex};
/// #     use axum::http::{StatusCode, Uri, header};
/// #     use axum::routing::{get, post};
/// #     use mcpl_server::http::auth::{AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError};
/// #     fn json(status: StatusCode, value: serde_json::Value) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
/// #         (status, [(header::CONTENT_TYPE, "application/json")], value.to_string())
/// #     }
/// #     struct Verifier(Arc<Mutex<Vec<String>>>);
/// #     impl TokenVerifier for Verifier {
/// #         fn verify<'a>(&'a self, token: &'a str) -> futures::future::BoxFuture<'a, Result<AccessToken, VerifyError>> {
/// #             let known = self.0.lock().unwrap().iter().any(|t| t == token);
/// #             Box::pin(async move {
/// #                 if known { Ok(AccessToken::new(vec!["mcp:tools".to_owned()])) } else { Err(VerifyError::Invalid("unknown token".into())) }
/// #             })
/// #         }
/// #     }
/// #     let issued: Arc<Mutex<Vec<String>>> = Arc::default();
/// #     let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// #     let issuer = format!("http://{}", as_listener.local_addr()?);
/// #     let metadata = serde_json::json!({
/// #         "issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
/// #         "token_endpoint": format!("{issuer}/token"), "registration_endpoint": format!("{issuer}/register"),
/// #         "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
/// #         "token_endpoint_auth_methods_supported": ["client_secret_post"],
/// #     });
/// #     let (iss, tokens) = (issuer.clone(), issued.clone());
/// #     let auth_server = axum::Router::new()
/// #         .route("/.well-known/oauth-authorization-server", get(move || { let m = metadata.clone(); async move { json(StatusCode::OK, m) } }))
/// #         .route("/register", post(|| async { json(StatusCode::CREATED, serde_json::json!({"client_id": "dyn-client", "client_secret": "dyn-secret"})) }))
/// #         .route("/authorize", get(move |uri: Uri| { let iss = iss.clone(); async move {
/// #             let query: std::collections::HashMap<String, String> = reqwest::Url::parse(&format!("http://x/?{}", uri.query().unwrap_or_default())).unwrap().query_pairs().into_owned().collect();
/// #             let mut back = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
/// #             back.query_pairs_mut().append_pair("code", "the-code").append_pair("state", &query["state"]).append_pair("iss", &iss);
/// #             (StatusCode::FOUND, [(header::LOCATION, back.to_string())])
/// #         } }))
/// #         .route("/token", post(move |body: String| { let tokens = tokens.clone(); async move {
/// #             if !body.contains("client_secret=dyn-secret") { return json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "invalid_client"})); }
/// #             let mut issued = tokens.lock().unwrap();
/// #             let token = format!("tok-{}", issued.len());
/// #             issued.push(token.clone());
/// #             json(StatusCode::OK, serde_json::json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
/// #         } }));
/// #     tokio::spawn(mcpl_server::http::serve(as_listener, auth_server));
/// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// #     let base = format!("http://{}", listener.local_addr()?);
/// #     let server = mcpl_server::Server::builder("protected", "1.0.0")
/// #         .tool(mcpl_core::types::Tool::new("hello", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async { Ok(mcpl_server::ToolOutput::text("hi")) })
/// #         .build();
/// #     let mcp = mcpl_server::http::StreamableHttp::new(server, mcpl_server::http::HttpConfig::new()).into_router("/mcp");
/// #     let resource = ProtectedResourceMetadata::new(format!("{base}/mcp")).authorization_server(issuer.clone()).scopes_supported(["mcp:tools"]);
/// #     let app = BearerAuth::new(Verifier(issued), resource).required_scopes(["mcp:tools"]).protect(mcp);
/// #     tokio::spawn(mcpl_server::http::serve(listener, app));
/// #     Ok((format!("{base}/mcp"), issuer))
/// # }
/// # /// Plays the user's browser: follows the authorization URL to the redirect.
/// # #[derive(Debug)]
/// # struct Browser;
/// # impl mcpl_client::auth::Authorizer for Browser {
/// #     fn authorize<'a>(&'a self, url: &'a str) -> futures::future::BoxFuture<'a, Result<String, mcpl_client::auth::AuthError>> {
/// #         Box::pin(async move {
/// #             let fail = |e: reqwest::Error| mcpl_client::auth::AuthError::Interaction(e.to_string());
/// #             let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().map_err(fail)?;
/// #             let response = http.get(url).send().await.map_err(fail)?;
/// #             let location = response.headers().get("location").and_then(|v| v.to_str().ok());
/// #             location.map(str::to_owned).ok_or_else(|| mcpl_client::auth::AuthError::Interaction("no redirect".into()))
/// #         })
/// #     }
/// # }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (url, _issuer) = protected_server().await?;
/// // `Browser` shows the user the authorization page and returns the redirect it ends on.
/// let oauth = Arc::new(OAuth::new(Browser, "http://127.0.0.1:8765/callback").client_name("My App"));
/// let client = Client::new("my-app", "1.0.0");
/// // The first request is refused (401): discovery, registration, authorization with PKCE,
/// // the token; then the request goes again, with the token.
/// client.connect(HttpTransport::new(url.clone()).auth(oauth.clone())).await?;
/// let result = client.call_tool("hello", ()).await?;
/// assert_eq!(result.content, [ContentBlock::text("hi")]);
/// assert!(oauth.access_token(&url).is_some());
/// # Ok(()) }
/// ```
pub struct OAuth {
    http: reqwest::Client,
    /// The user interaction; `None` for a client acting on its own behalf.
    authorizer: Option<Box<dyn Authorizer>>,
    store: Arc<dyn CredentialStore>,
    redirect_uri: String,
    client_name: String,
    client_metadata_url: Option<String>,
    preregistered: HashMap<String, ClientCredentials>,
    /// A client acting on its own behalf: its grant, its credentials, and the issuer they
    /// belong to (`None`: any issuer the protected resource names).
    machine: Option<Machine>,
    /// The DPoP key, when tokens are to be bound to one.
    dpop: Option<ClientKey>,
    /// The DPoP nonces servers gave.
    nonces: dpop::Nonces,
    /// The last assertion refused, so that it is not sent again.
    refused: grant::Refused,
    /// The rules for the URLs discovery produces.
    policy: DiscoveryPolicy,
    /// Serializes authorization flows.
    flow: tokio::sync::Mutex<()>,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("redirect_uri", &self.redirect_uri)
            .field("client_name", &self.client_name)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("preregistered", &self.preregistered.keys().collect::<Vec<_>>())
            .field("store", &self.store)
            .field("machine", &self.machine)
            .field("dpop", &self.dpop.as_ref().map(ClientKey::thumbprint))
            .finish_non_exhaustive()
    }
}

impl OAuth {
    /// An OAuth client whose user interaction is `authorizer`, receiving the authorization
    /// response at `redirect_uri`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::auth::OAuth;
    /// use mcpl_client::transport::HttpTransport;
    /// # /// A protected MCP server (tool `hello`, scope `mcp:tools`) and its authorization server,
    /// # /// on local ports; returns the MCP URL and the issuer. The authorization server registers
    /// # /// every client as `dyn-client` / `dyn-secret`, authorizes at once (redirecting with a code)
    /// # /// and issues a token to whoever presents `dyn-secret`.
    /// # async fn protected_server() -> std::io::Result<(String, String)> {
    /// #     use std::sync::{Arc, Mutex};
    /// #     use axum::http::{StatusCode, Uri, header};
    /// #     use axum::routing::{get, post};
    /// #     use mcpl_server::http::auth::{AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError};
    /// #     fn json(status: StatusCode, value: serde_json::Value) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
    /// #         (status, [(header::CONTENT_TYPE, "application/json")], value.to_string())
    /// #     }
    /// #     struct Verifier(Arc<Mutex<Vec<String>>>);
    /// #     impl TokenVerifier for Verifier {
    /// #         fn verify<'a>(&'a self, token: &'a str) -> futures::future::BoxFuture<'a, Result<AccessToken, VerifyError>> {
    /// #             let known = self.0.lock().unwrap().iter().any(|t| t == token);
    /// #             Box::pin(async move {
    /// #                 if known { Ok(AccessToken::new(vec!["mcp:tools".to_owned()])) } else { Err(VerifyError::Invalid("unknown token".into())) }
    /// #             })
    /// #         }
    /// #     }
    /// #     let issued: Arc<Mutex<Vec<String>>> = Arc::default();
    /// #     let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let issuer = format!("http://{}", as_listener.local_addr()?);
    /// #     let metadata = serde_json::json!({
    /// #         "issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
    /// #         "token_endpoint": format!("{issuer}/token"), "registration_endpoint": format!("{issuer}/register"),
    /// #         "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
    /// #         "token_endpoint_auth_methods_supported": ["client_secret_post"],
    /// #     });
    /// #     let (iss, tokens) = (issuer.clone(), issued.clone());
    /// #     let auth_server = axum::Router::new()
    /// #         .route("/.well-known/oauth-authorization-server", get(move || { let m = metadata.clone(); async move { json(StatusCode::OK, m) } }))
    /// #         .route("/register", post(|| async { json(StatusCode::CREATED, serde_json::json!({"client_id": "dyn-client", "client_secret": "dyn-secret"})) }))
    /// #         .route("/authorize", get(move |uri: Uri| { let iss = iss.clone(); async move {
    /// #             let query: std::collections::HashMap<String, String> = reqwest::Url::parse(&format!("http://x/?{}", uri.query().unwrap_or_default())).unwrap().query_pairs().into_owned().collect();
    /// #             let mut back = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
    /// #             back.query_pairs_mut().append_pair("code", "the-code").append_pair("state", &query["state"]).append_pair("iss", &iss);
    /// #             (StatusCode::FOUND, [(header::LOCATION, back.to_string())])
    /// #         } }))
    /// #         .route("/token", post(move |body: String| { let tokens = tokens.clone(); async move {
    /// #             if !body.contains("client_secret=dyn-secret") { return json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "invalid_client"})); }
    /// #             let mut issued = tokens.lock().unwrap();
    /// #             let token = format!("tok-{}", issued.len());
    /// #             issued.push(token.clone());
    /// #             json(StatusCode::OK, serde_json::json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
    /// #         } }));
    /// #     tokio::spawn(mcpl_server::http::serve(as_listener, auth_server));
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let base = format!("http://{}", listener.local_addr()?);
    /// #     let server = mcpl_server::Server::builder("protected", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("hello", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async { Ok(mcpl_server::ToolOutput::text("hi")) })
    /// #         .build();
    /// #     let mcp = mcpl_server::http::StreamableHttp::new(server, mcpl_server::http::HttpConfig::new()).into_router("/mcp");
    /// #     let resource = ProtectedResourceMetadata::new(format!("{base}/mcp")).authorization_server(issuer.clone()).scopes_supported(["mcp:tools"]);
    /// #     let app = BearerAuth::new(Verifier(issued), resource).required_scopes(["mcp:tools"]).protect(mcp);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((format!("{base}/mcp"), issuer))
    /// # }
    /// # /// Plays the user's browser: follows the authorization URL to the redirect.
    /// # #[derive(Debug)]
    /// # struct Browser;
    /// # impl mcpl_client::auth::Authorizer for Browser {
    /// #     fn authorize<'a>(&'a self, url: &'a str) -> futures::future::BoxFuture<'a, Result<String, mcpl_client::auth::AuthError>> {
    /// #         Box::pin(async move {
    /// #             let fail = |e: reqwest::Error| mcpl_client::auth::AuthError::Interaction(e.to_string());
    /// #             let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().map_err(fail)?;
    /// #             let response = http.get(url).send().await.map_err(fail)?;
    /// #             let location = response.headers().get("location").and_then(|v| v.to_str().ok());
    /// #             location.map(str::to_owned).ok_or_else(|| mcpl_client::auth::AuthError::Interaction("no redirect".into()))
    /// #         })
    /// #     }
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, _issuer) = protected_server().await?;
    /// // The authorization response comes back to a local listener at the redirect URI.
    /// let oauth = OAuth::new(Browser, "http://127.0.0.1:8765/callback");
    /// let client = Client::new("my-app", "1.0.0");
    /// client.connect(HttpTransport::new(url).auth(Arc::new(oauth))).await?;
    /// client.ping().await?;
    /// # Ok(()) }
    /// ```
    pub fn new(authorizer: impl Authorizer + 'static, redirect_uri: impl Into<String>) -> Self {
        OAuth {
            http: default_http(),
            authorizer: Some(Box::new(authorizer)),
            store: Arc::new(MemoryStore::default()),
            redirect_uri: redirect_uri.into(),
            client_name: "mcpl-client".to_owned(),
            client_metadata_url: None,
            preregistered: HashMap::new(),
            machine: None,
            dpop: None,
            nonces: dpop::Nonces::default(),
            refused: grant::Refused::default(),
            policy: DiscoveryPolicy::default(),
            flow: tokio::sync::Mutex::new(()),
        }
    }

    /// An OAuth client acting on its own behalf (no user, no browser): tokens come from the
    /// client credentials grant with `credentials`, which belong to the authorization server
    /// `issuer`. With `issuer` `None` they are presented to whichever authorization server the
    /// protected resource names: only do that for servers you trust to name the right one.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::auth::{ClientCredentials, OAuth};
    /// use mcpl_client::transport::HttpTransport;
    /// use mcpl_core::types::ContentBlock;
    /// # /// A protected MCP server (tool `hello`, scope `mcp:tools`) and its authorization server,
    /// # /// on local ports; returns the MCP URL and the issuer. The authorization server registers
    /// # /// every client as `dyn-client` / `dyn-secret`, authorizes at once (redirecting with a code)
    /// # /// and issues a token to whoever presents `dyn-secret`.
    /// # async fn protected_server() -> std::io::Result<(String, String)> {
    /// #     use std::sync::{Arc, Mutex};
    /// #     use axum::http::{StatusCode, Uri, header};
    /// #     use axum::routing::{get, post};
    /// #     use mcpl_server::http::auth::{AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError};
    /// #     fn json(status: StatusCode, value: serde_json::Value) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
    /// #         (status, [(header::CONTENT_TYPE, "application/json")], value.to_string())
    /// #     }
    /// #     struct Verifier(Arc<Mutex<Vec<String>>>);
    /// #     impl TokenVerifier for Verifier {
    /// #         fn verify<'a>(&'a self, token: &'a str) -> futures::future::BoxFuture<'a, Result<AccessToken, VerifyError>> {
    /// #             let known = self.0.lock().unwrap().iter().any(|t| t == token);
    /// #             Box::pin(async move {
    /// #                 if known { Ok(AccessToken::new(vec!["mcp:tools".to_owned()])) } else { Err(VerifyError::Invalid("unknown token".into())) }
    /// #             })
    /// #         }
    /// #     }
    /// #     let issued: Arc<Mutex<Vec<String>>> = Arc::default();
    /// #     let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let issuer = format!("http://{}", as_listener.local_addr()?);
    /// #     let metadata = serde_json::json!({
    /// #         "issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
    /// #         "token_endpoint": format!("{issuer}/token"), "registration_endpoint": format!("{issuer}/register"),
    /// #         "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
    /// #         "token_endpoint_auth_methods_supported": ["client_secret_post"],
    /// #     });
    /// #     let (iss, tokens) = (issuer.clone(), issued.clone());
    /// #     let auth_server = axum::Router::new()
    /// #         .route("/.well-known/oauth-authorization-server", get(move || { let m = metadata.clone(); async move { json(StatusCode::OK, m) } }))
    /// #         .route("/register", post(|| async { json(StatusCode::CREATED, serde_json::json!({"client_id": "dyn-client", "client_secret": "dyn-secret"})) }))
    /// #         .route("/authorize", get(move |uri: Uri| { let iss = iss.clone(); async move {
    /// #             let query: std::collections::HashMap<String, String> = reqwest::Url::parse(&format!("http://x/?{}", uri.query().unwrap_or_default())).unwrap().query_pairs().into_owned().collect();
    /// #             let mut back = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
    /// #             back.query_pairs_mut().append_pair("code", "the-code").append_pair("state", &query["state"]).append_pair("iss", &iss);
    /// #             (StatusCode::FOUND, [(header::LOCATION, back.to_string())])
    /// #         } }))
    /// #         .route("/token", post(move |body: String| { let tokens = tokens.clone(); async move {
    /// #             if !body.contains("client_secret=dyn-secret") { return json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "invalid_client"})); }
    /// #             let mut issued = tokens.lock().unwrap();
    /// #             let token = format!("tok-{}", issued.len());
    /// #             issued.push(token.clone());
    /// #             json(StatusCode::OK, serde_json::json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
    /// #         } }));
    /// #     tokio::spawn(mcpl_server::http::serve(as_listener, auth_server));
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let base = format!("http://{}", listener.local_addr()?);
    /// #     let server = mcpl_server::Server::builder("protected", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("hello", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async { Ok(mcpl_server::ToolOutput::text("hi")) })
    /// #         .build();
    /// #     let mcp = mcpl_server::http::StreamableHttp::new(server, mcpl_server::http::HttpConfig::new()).into_router("/mcp");
    /// #     let resource = ProtectedResourceMetadata::new(format!("{base}/mcp")).authorization_server(issuer.clone()).scopes_supported(["mcp:tools"]);
    /// #     let app = BearerAuth::new(Verifier(issued), resource).required_scopes(["mcp:tools"]).protect(mcp);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((format!("{base}/mcp"), issuer))
    /// # }
    /// # /// Plays the user's browser: follows the authorization URL to the redirect.
    /// # #[derive(Debug)]
    /// # struct Browser;
    /// # impl mcpl_client::auth::Authorizer for Browser {
    /// #     fn authorize<'a>(&'a self, url: &'a str) -> futures::future::BoxFuture<'a, Result<String, mcpl_client::auth::AuthError>> {
    /// #         Box::pin(async move {
    /// #             let fail = |e: reqwest::Error| mcpl_client::auth::AuthError::Interaction(e.to_string());
    /// #             let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().map_err(fail)?;
    /// #             let response = http.get(url).send().await.map_err(fail)?;
    /// #             let location = response.headers().get("location").and_then(|v| v.to_str().ok());
    /// #             location.map(str::to_owned).ok_or_else(|| mcpl_client::auth::AuthError::Interaction("no redirect".into()))
    /// #         })
    /// #     }
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, issuer) = protected_server().await?;
    /// // A background service: no user, no browser, credentials for one issuer only.
    /// let credentials = ClientCredentials::confidential("dyn-client", "dyn-secret");
    /// let oauth = Arc::new(OAuth::client_credentials(Some(issuer), credentials));
    /// let client = Client::new("nightly-job", "1.0.0");
    /// client.connect(HttpTransport::new(url.clone()).auth(oauth.clone())).await?;
    /// let result = client.call_tool("hello", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("hi")]);
    /// assert!(oauth.access_token(&url).is_some());
    /// # Ok(()) }
    /// ```
    pub fn client_credentials(issuer: Option<String>, credentials: ClientCredentials) -> Self {
        Self::machine(Machine { issuer, credentials, grant: MachineGrant::ClientCredentials })
    }

    /// A workload authorizing with the JWT bearer grant (RFC 7523 section 2.1, workload
    /// identity federation): the identity token its platform issued (from `assertion`,
    /// asked anew for every token request) is presented at the authorization server
    /// (`issuer`, or any the protected resource names when `None`), which trusts the platform
    /// and issues an access token. `credentials` authenticate the client there (often a
    /// public client: the assertion is the proof). A refusal is final: the grant is not
    /// retried, and no other grant is tried.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::{Assertion, ClientCredentials, OAuth};
    ///
    /// let oauth = OAuth::jwt_bearer(
    ///     Some("https://auth.example.com".into()),
    ///     ClientCredentials::public("billing-worker"),
    ///     Assertion::new("eyJ...workload-token"),
    /// );
    /// assert!(format!("{oauth:?}").contains("JwtBearer"));
    /// ```
    pub fn jwt_bearer(
        issuer: Option<String>,
        credentials: ClientCredentials,
        assertion: impl AssertionSource + 'static,
    ) -> Self {
        let grant = MachineGrant::JwtBearer(Arc::new(assertion));
        Self::machine(Machine { issuer, credentials, grant })
    }

    /// Enterprise-managed authorization: the user's ID token is exchanged at the enterprise's
    /// identity provider `idp` (RFC 8693) for an ID-JAG addressed to the MCP server's
    /// authorization server and naming the MCP server as its resource; that authorization
    /// server (`issuer`, or any the protected resource names when `None`) takes it with the
    /// JWT bearer grant, the client authenticating with `credentials`, and issues the access
    /// token. No browser is involved: the enterprise's policy at the identity provider
    /// decides.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::{Assertion, ClientCredentials, IdentityProvider, OAuth};
    ///
    /// let idp = IdentityProvider::new(
    ///     "https://idp.example.com",
    ///     ClientCredentials::public("my-app-at-the-idp"),
    ///     Assertion::new("eyJ...id-token"),
    /// );
    /// let oauth = OAuth::enterprise(None, ClientCredentials::confidential("my-app", "secret"), idp);
    /// assert!(format!("{oauth:?}").contains("idp.example.com"));
    /// ```
    pub fn enterprise(
        issuer: Option<String>,
        credentials: ClientCredentials,
        idp: IdentityProvider,
    ) -> Self {
        Self::machine(Machine {
            issuer,
            credentials,
            grant: MachineGrant::Enterprise(Box::new(idp)),
        })
    }

    fn machine(machine: Machine) -> Self {
        OAuth {
            http: default_http(),
            authorizer: None,
            store: Arc::new(MemoryStore::default()),
            redirect_uri: String::new(),
            client_name: "mcpl-client".to_owned(),
            client_metadata_url: None,
            preregistered: HashMap::new(),
            machine: Some(machine),
            dpop: None,
            nonces: dpop::Nonces::default(),
            refused: grant::Refused::default(),
            policy: DiscoveryPolicy::default(),
            flow: tokio::sync::Mutex::new(()),
        }
    }

    /// Binds tokens to `key` with DPoP (RFC 9449) at every authorization server that supports
    /// `ES256` proofs (`dpop_signing_alg_values_supported`): each token request and each
    /// request to the MCP server then carries a fresh proof signed with the key, and the
    /// servers' nonces are followed. A token stolen without the key is useless. Tokens kept in
    /// a [`CredentialStore`] across restarts need the same key again.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::{ClientCredentials, ClientKey, OAuth};
    ///
    /// let key = ClientKey::generate()?;
    /// let oauth = OAuth::client_credentials(None, ClientCredentials::confidential("svc", "s"))
    ///     .dpop(key.clone());
    /// assert!(format!("{oauth:?}").contains(&key.thumbprint()));
    /// # Ok::<(), mcpl_client::auth::AuthError>(())
    /// ```
    #[must_use]
    pub fn dpop(mut self, key: ClientKey) -> Self {
        self.dpop = Some(key);
        self
    }

    /// The name given in dynamic client registration. Default: `mcpl-client`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::OAuth;
    /// # /// A protected MCP server (tool `hello`, scope `mcp:tools`) and its authorization server,
    /// # /// on local ports; returns the MCP URL and the issuer. The authorization server registers
    /// # /// every client as `dyn-client` / `dyn-secret`, authorizes at once (redirecting with a code)
    /// # /// and issues a token to whoever presents `dyn-secret`.
    /// # async fn protected_server() -> std::io::Result<(String, String)> {
    /// #     use std::sync::{Arc, Mutex};
    /// #     use axum::http::{StatusCode, Uri, header};
    /// #     use axum::routing::{get, post};
    /// #     use mcpl_server::http::auth::{AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError};
    /// #     fn json(status: StatusCode, value: serde_json::Value) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
    /// #         (status, [(header::CONTENT_TYPE, "application/json")], value.to_string())
    /// #     }
    /// #     struct Verifier(Arc<Mutex<Vec<String>>>);
    /// #     impl TokenVerifier for Verifier {
    /// #         fn verify<'a>(&'a self, token: &'a str) -> futures::future::BoxFuture<'a, Result<AccessToken, VerifyError>> {
    /// #             let known = self.0.lock().unwrap().iter().any(|t| t == token);
    /// #             Box::pin(async move {
    /// #                 if known { Ok(AccessToken::new(vec!["mcp:tools".to_owned()])) } else { Err(VerifyError::Invalid("unknown token".into())) }
    /// #             })
    /// #         }
    /// #     }
    /// #     let issued: Arc<Mutex<Vec<String>>> = Arc::default();
    /// #     let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let issuer = format!("http://{}", as_listener.local_addr()?);
    /// #     let metadata = serde_json::json!({
    /// #         "issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
    /// #         "token_endpoint": format!("{issuer}/token"), "registration_endpoint": format!("{issuer}/register"),
    /// #         "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
    /// #         "token_endpoint_auth_methods_supported": ["client_secret_post"],
    /// #     });
    /// #     let (iss, tokens) = (issuer.clone(), issued.clone());
    /// #     let auth_server = axum::Router::new()
    /// #         .route("/.well-known/oauth-authorization-server", get(move || { let m = metadata.clone(); async move { json(StatusCode::OK, m) } }))
    /// #         .route("/register", post(|| async { json(StatusCode::CREATED, serde_json::json!({"client_id": "dyn-client", "client_secret": "dyn-secret"})) }))
    /// #         .route("/authorize", get(move |uri: Uri| { let iss = iss.clone(); async move {
    /// #             let query: std::collections::HashMap<String, String> = reqwest::Url::parse(&format!("http://x/?{}", uri.query().unwrap_or_default())).unwrap().query_pairs().into_owned().collect();
    /// #             let mut back = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
    /// #             back.query_pairs_mut().append_pair("code", "the-code").append_pair("state", &query["state"]).append_pair("iss", &iss);
    /// #             (StatusCode::FOUND, [(header::LOCATION, back.to_string())])
    /// #         } }))
    /// #         .route("/token", post(move |body: String| { let tokens = tokens.clone(); async move {
    /// #             if !body.contains("client_secret=dyn-secret") { return json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "invalid_client"})); }
    /// #             let mut issued = tokens.lock().unwrap();
    /// #             let token = format!("tok-{}", issued.len());
    /// #             issued.push(token.clone());
    /// #             json(StatusCode::OK, serde_json::json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
    /// #         } }));
    /// #     tokio::spawn(mcpl_server::http::serve(as_listener, auth_server));
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let base = format!("http://{}", listener.local_addr()?);
    /// #     let server = mcpl_server::Server::builder("protected", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("hello", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async { Ok(mcpl_server::ToolOutput::text("hi")) })
    /// #         .build();
    /// #     let mcp = mcpl_server::http::StreamableHttp::new(server, mcpl_server::http::HttpConfig::new()).into_router("/mcp");
    /// #     let resource = ProtectedResourceMetadata::new(format!("{base}/mcp")).authorization_server(issuer.clone()).scopes_supported(["mcp:tools"]);
    /// #     let app = BearerAuth::new(Verifier(issued), resource).required_scopes(["mcp:tools"]).protect(mcp);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((format!("{base}/mcp"), issuer))
    /// # }
    /// # /// Plays the user's browser: follows the authorization URL to the redirect.
    /// # #[derive(Debug)]
    /// # struct Browser;
    /// # impl mcpl_client::auth::Authorizer for Browser {
    /// #     fn authorize<'a>(&'a self, url: &'a str) -> futures::future::BoxFuture<'a, Result<String, mcpl_client::auth::AuthError>> {
    /// #         Box::pin(async move {
    /// #             let fail = |e: reqwest::Error| mcpl_client::auth::AuthError::Interaction(e.to_string());
    /// #             let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().map_err(fail)?;
    /// #             let response = http.get(url).send().await.map_err(fail)?;
    /// #             let location = response.headers().get("location").and_then(|v| v.to_str().ok());
    /// #             location.map(str::to_owned).ok_or_else(|| mcpl_client::auth::AuthError::Interaction("no redirect".into()))
    /// #         })
    /// #     }
    /// # }
    ///
    /// // The name the authorization server shows the user on its consent page.
    /// let oauth = OAuth::new(Browser, "http://127.0.0.1:8765/callback").client_name("My Editor");
    /// assert!(format!("{oauth:?}").contains("My Editor"));
    /// ```
    #[must_use]
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The HTTPS URL of this client's metadata document, used as its client id at
    /// authorization servers that accept client ID metadata documents.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::OAuth;
    /// # /// A protected MCP server (tool `hello`, scope `mcp:tools`) and its authorization server,
    /// # /// on local ports; returns the MCP URL and the issuer. The authorization server registers
    /// # /// every client as `dyn-client` / `dyn-secret`, authorizes at once (redirecting with a code)
    /// # /// and issues a token to whoever presents `dyn-secret`.
    /// # async fn protected_server() -> std::io::Result<(String, String)> {
    /// #     use std::sync::{Arc, Mutex};
    /// #     use axum::http::{StatusCode, Uri, header};
    /// #     use axum::routing::{get, post};
    /// #     use mcpl_server::http::auth::{AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError};
    /// #     fn json(status: StatusCode, value: serde_json::Value) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
    /// #         (status, [(header::CONTENT_TYPE, "application/json")], value.to_string())
    /// #     }
    /// #     struct Verifier(Arc<Mutex<Vec<String>>>);
    /// #     impl TokenVerifier for Verifier {
    /// #         fn verify<'a>(&'a self, token: &'a str) -> futures::future::BoxFuture<'a, Result<AccessToken, VerifyError>> {
    /// #             let known = self.0.lock().unwrap().iter().any(|t| t == token);
    /// #             Box::pin(async move {
    /// #                 if known { Ok(AccessToken::new(vec!["mcp:tools".to_owned()])) } else { Err(VerifyError::Invalid("unknown token".into())) }
    /// #             })
    /// #         }
    /// #     }
    /// #     let issued: Arc<Mutex<Vec<String>>> = Arc::default();
    /// #     let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let issuer = format!("http://{}", as_listener.local_addr()?);
    /// #     let metadata = serde_json::json!({
    /// #         "issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
    /// #         "token_endpoint": format!("{issuer}/token"), "registration_endpoint": format!("{issuer}/register"),
    /// #         "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
    /// #         "token_endpoint_auth_methods_supported": ["client_secret_post"],
    /// #     });
    /// #     let (iss, tokens) = (issuer.clone(), issued.clone());
    /// #     let auth_server = axum::Router::new()
    /// #         .route("/.well-known/oauth-authorization-server", get(move || { let m = metadata.clone(); async move { json(StatusCode::OK, m) } }))
    /// #         .route("/register", post(|| async { json(StatusCode::CREATED, serde_json::json!({"client_id": "dyn-client", "client_secret": "dyn-secret"})) }))
    /// #         .route("/authorize", get(move |uri: Uri| { let iss = iss.clone(); async move {
    /// #             let query: std::collections::HashMap<String, String> = reqwest::Url::parse(&format!("http://x/?{}", uri.query().unwrap_or_default())).unwrap().query_pairs().into_owned().collect();
    /// #             let mut back = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
    /// #             back.query_pairs_mut().append_pair("code", "the-code").append_pair("state", &query["state"]).append_pair("iss", &iss);
    /// #             (StatusCode::FOUND, [(header::LOCATION, back.to_string())])
    /// #         } }))
    /// #         .route("/token", post(move |body: String| { let tokens = tokens.clone(); async move {
    /// #             if !body.contains("client_secret=dyn-secret") { return json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "invalid_client"})); }
    /// #             let mut issued = tokens.lock().unwrap();
    /// #             let token = format!("tok-{}", issued.len());
    /// #             issued.push(token.clone());
    /// #             json(StatusCode::OK, serde_json::json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
    /// #         } }));
    /// #     tokio::spawn(mcpl_server::http::serve(as_listener, auth_server));
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let base = format!("http://{}", listener.local_addr()?);
    /// #     let server = mcpl_server::Server::builder("protected", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("hello", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async { Ok(mcpl_server::ToolOutput::text("hi")) })
    /// #         .build();
    /// #     let mcp = mcpl_server::http::StreamableHttp::new(server, mcpl_server::http::HttpConfig::new()).into_router("/mcp");
    /// #     let resource = ProtectedResourceMetadata::new(format!("{base}/mcp")).authorization_server(issuer.clone()).scopes_supported(["mcp:tools"]);
    /// #     let app = BearerAuth::new(Verifier(issued), resource).required_scopes(["mcp:tools"]).protect(mcp);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((format!("{base}/mcp"), issuer))
    /// # }
    /// # /// Plays the user's browser: follows the authorization URL to the redirect.
    /// # #[derive(Debug)]
    /// # struct Browser;
    /// # impl mcpl_client::auth::Authorizer for Browser {
    /// #     fn authorize<'a>(&'a self, url: &'a str) -> futures::future::BoxFuture<'a, Result<String, mcpl_client::auth::AuthError>> {
    /// #         Box::pin(async move {
    /// #             let fail = |e: reqwest::Error| mcpl_client::auth::AuthError::Interaction(e.to_string());
    /// #             let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().map_err(fail)?;
    /// #             let response = http.get(url).send().await.map_err(fail)?;
    /// #             let location = response.headers().get("location").and_then(|v| v.to_str().ok());
    /// #             location.map(str::to_owned).ok_or_else(|| mcpl_client::auth::AuthError::Interaction("no redirect".into()))
    /// #         })
    /// #     }
    /// # }
    ///
    /// // Where this client publishes its metadata document; servers that accept URL client ids
    /// // use it instead of registering the client.
    /// let oauth = OAuth::new(Browser, "http://127.0.0.1:8765/callback")
    ///     .client_metadata_url("https://app.example.com/oauth/client.json");
    /// assert!(format!("{oauth:?}").contains("https://app.example.com/oauth/client.json"));
    /// ```
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Credentials registered beforehand at the authorization server `issuer`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::auth::{ClientCredentials, OAuth};
    /// use mcpl_client::transport::HttpTransport;
    /// # /// A protected MCP server (tool `hello`, scope `mcp:tools`) and its authorization server,
    /// # /// on local ports; returns the MCP URL and the issuer. The authorization server registers
    /// # /// every client as `dyn-client` / `dyn-secret`, authorizes at once (redirecting with a code)
    /// # /// and issues a token to whoever presents `dyn-secret`.
    /// # async fn protected_server() -> std::io::Result<(String, String)> {
    /// #     use std::sync::{Arc, Mutex};
    /// #     use axum::http::{StatusCode, Uri, header};
    /// #     use axum::routing::{get, post};
    /// #     use mcpl_server::http::auth::{AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError};
    /// #     fn json(status: StatusCode, value: serde_json::Value) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
    /// #         (status, [(header::CONTENT_TYPE, "application/json")], value.to_string())
    /// #     }
    /// #     struct Verifier(Arc<Mutex<Vec<String>>>);
    /// #     impl TokenVerifier for Verifier {
    /// #         fn verify<'a>(&'a self, token: &'a str) -> futures::future::BoxFuture<'a, Result<AccessToken, VerifyError>> {
    /// #             let known = self.0.lock().unwrap().iter().any(|t| t == token);
    /// #             Box::pin(async move {
    /// #                 if known { Ok(AccessToken::new(vec!["mcp:tools".to_owned()])) } else { Err(VerifyError::Invalid("unknown token".into())) }
    /// #             })
    /// #         }
    /// #     }
    /// #     let issued: Arc<Mutex<Vec<String>>> = Arc::default();
    /// #     let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let issuer = format!("http://{}", as_listener.local_addr()?);
    /// #     let metadata = serde_json::json!({
    /// #         "issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
    /// #         "token_endpoint": format!("{issuer}/token"), "registration_endpoint": format!("{issuer}/register"),
    /// #         "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
    /// #         "token_endpoint_auth_methods_supported": ["client_secret_post"],
    /// #     });
    /// #     let (iss, tokens) = (issuer.clone(), issued.clone());
    /// #     let auth_server = axum::Router::new()
    /// #         .route("/.well-known/oauth-authorization-server", get(move || { let m = metadata.clone(); async move { json(StatusCode::OK, m) } }))
    /// #         .route("/register", post(|| async { json(StatusCode::CREATED, serde_json::json!({"client_id": "dyn-client", "client_secret": "dyn-secret"})) }))
    /// #         .route("/authorize", get(move |uri: Uri| { let iss = iss.clone(); async move {
    /// #             let query: std::collections::HashMap<String, String> = reqwest::Url::parse(&format!("http://x/?{}", uri.query().unwrap_or_default())).unwrap().query_pairs().into_owned().collect();
    /// #             let mut back = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
    /// #             back.query_pairs_mut().append_pair("code", "the-code").append_pair("state", &query["state"]).append_pair("iss", &iss);
    /// #             (StatusCode::FOUND, [(header::LOCATION, back.to_string())])
    /// #         } }))
    /// #         .route("/token", post(move |body: String| { let tokens = tokens.clone(); async move {
    /// #             if !body.contains("client_secret=dyn-secret") { return json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "invalid_client"})); }
    /// #             let mut issued = tokens.lock().unwrap();
    /// #             let token = format!("tok-{}", issued.len());
    /// #             issued.push(token.clone());
    /// #             json(StatusCode::OK, serde_json::json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
    /// #         } }));
    /// #     tokio::spawn(mcpl_server::http::serve(as_listener, auth_server));
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let base = format!("http://{}", listener.local_addr()?);
    /// #     let server = mcpl_server::Server::builder("protected", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("hello", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async { Ok(mcpl_server::ToolOutput::text("hi")) })
    /// #         .build();
    /// #     let mcp = mcpl_server::http::StreamableHttp::new(server, mcpl_server::http::HttpConfig::new()).into_router("/mcp");
    /// #     let resource = ProtectedResourceMetadata::new(format!("{base}/mcp")).authorization_server(issuer.clone()).scopes_supported(["mcp:tools"]);
    /// #     let app = BearerAuth::new(Verifier(issued), resource).required_scopes(["mcp:tools"]).protect(mcp);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((format!("{base}/mcp"), issuer))
    /// # }
    /// # /// Plays the user's browser: follows the authorization URL to the redirect.
    /// # #[derive(Debug)]
    /// # struct Browser;
    /// # impl mcpl_client::auth::Authorizer for Browser {
    /// #     fn authorize<'a>(&'a self, url: &'a str) -> futures::future::BoxFuture<'a, Result<String, mcpl_client::auth::AuthError>> {
    /// #         Box::pin(async move {
    /// #             let fail = |e: reqwest::Error| mcpl_client::auth::AuthError::Interaction(e.to_string());
    /// #             let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().map_err(fail)?;
    /// #             let response = http.get(url).send().await.map_err(fail)?;
    /// #             let location = response.headers().get("location").and_then(|v| v.to_str().ok());
    /// #             location.map(str::to_owned).ok_or_else(|| mcpl_client::auth::AuthError::Interaction("no redirect".into()))
    /// #         })
    /// #     }
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, issuer) = protected_server().await?;
    /// // Registered beforehand at `issuer`: no dynamic registration there.
    /// let credentials = ClientCredentials::confidential("dyn-client", "dyn-secret");
    /// let oauth = OAuth::new(Browser, "http://127.0.0.1:8765/callback").client(issuer, credentials);
    /// let client = Client::new("my-app", "1.0.0");
    /// client.connect(HttpTransport::new(url).auth(Arc::new(oauth))).await?;
    /// client.ping().await?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn client(mut self, issuer: impl Into<String>, credentials: ClientCredentials) -> Self {
        self.preregistered.insert(issuer.into(), credentials);
        self
    }

    /// Keeps registrations and tokens in `store`. Default: a [`MemoryStore`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::auth::{ClientCredentials, CredentialStore, MemoryStore, OAuth, Tokens};
    /// use mcpl_client::transport::HttpTransport;
    /// # /// A protected MCP server (tool `hello`, scope `mcp:tools`) and its authorization server,
    /// # /// on local ports; returns the MCP URL and the issuer. The authorization server registers
    /// # /// every client as `dyn-client` / `dyn-secret`, authorizes at once (redirecting with a code)
    /// # /// and issues a token to whoever presents `dyn-secret`.
    /// # async fn protected_server() -> std::io::Result<(String, String)> {
    /// #     use std::sync::{Arc, Mutex};
    /// #     use axum::http::{StatusCode, Uri, header};
    /// #     use axum::routing::{get, post};
    /// #     use mcpl_server::http::auth::{AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError};
    /// #     fn json(status: StatusCode, value: serde_json::Value) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
    /// #         (status, [(header::CONTENT_TYPE, "application/json")], value.to_string())
    /// #     }
    /// #     struct Verifier(Arc<Mutex<Vec<String>>>);
    /// #     impl TokenVerifier for Verifier {
    /// #         fn verify<'a>(&'a self, token: &'a str) -> futures::future::BoxFuture<'a, Result<AccessToken, VerifyError>> {
    /// #             let known = self.0.lock().unwrap().iter().any(|t| t == token);
    /// #             Box::pin(async move {
    /// #                 if known { Ok(AccessToken::new(vec!["mcp:tools".to_owned()])) } else { Err(VerifyError::Invalid("unknown token".into())) }
    /// #             })
    /// #         }
    /// #     }
    /// #     let issued: Arc<Mutex<Vec<String>>> = Arc::default();
    /// #     let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let issuer = format!("http://{}", as_listener.local_addr()?);
    /// #     let metadata = serde_json::json!({
    /// #         "issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
    /// #         "token_endpoint": format!("{issuer}/token"), "registration_endpoint": format!("{issuer}/register"),
    /// #         "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
    /// #         "token_endpoint_auth_methods_supported": ["client_secret_post"],
    /// #     });
    /// #     let (iss, tokens) = (issuer.clone(), issued.clone());
    /// #     let auth_server = axum::Router::new()
    /// #         .route("/.well-known/oauth-authorization-server", get(move || { let m = metadata.clone(); async move { json(StatusCode::OK, m) } }))
    /// #         .route("/register", post(|| async { json(StatusCode::CREATED, serde_json::json!({"client_id": "dyn-client", "client_secret": "dyn-secret"})) }))
    /// #         .route("/authorize", get(move |uri: Uri| { let iss = iss.clone(); async move {
    /// #             let query: std::collections::HashMap<String, String> = reqwest::Url::parse(&format!("http://x/?{}", uri.query().unwrap_or_default())).unwrap().query_pairs().into_owned().collect();
    /// #             let mut back = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
    /// #             back.query_pairs_mut().append_pair("code", "the-code").append_pair("state", &query["state"]).append_pair("iss", &iss);
    /// #             (StatusCode::FOUND, [(header::LOCATION, back.to_string())])
    /// #         } }))
    /// #         .route("/token", post(move |body: String| { let tokens = tokens.clone(); async move {
    /// #             if !body.contains("client_secret=dyn-secret") { return json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "invalid_client"})); }
    /// #             let mut issued = tokens.lock().unwrap();
    /// #             let token = format!("tok-{}", issued.len());
    /// #             issued.push(token.clone());
    /// #             json(StatusCode::OK, serde_json::json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
    /// #         } }));
    /// #     tokio::spawn(mcpl_server::http::serve(as_listener, auth_server));
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let base = format!("http://{}", listener.local_addr()?);
    /// #     let server = mcpl_server::Server::builder("protected", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("hello", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async { Ok(mcpl_server::ToolOutput::text("hi")) })
    /// #         .build();
    /// #     let mcp = mcpl_server::http::StreamableHttp::new(server, mcpl_server::http::HttpConfig::new()).into_router("/mcp");
    /// #     let resource = ProtectedResourceMetadata::new(format!("{base}/mcp")).authorization_server(issuer.clone()).scopes_supported(["mcp:tools"]);
    /// #     let app = BearerAuth::new(Verifier(issued), resource).required_scopes(["mcp:tools"]).protect(mcp);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((format!("{base}/mcp"), issuer))
    /// # }
    /// # /// Plays the user's browser: follows the authorization URL to the redirect.
    /// # #[derive(Debug)]
    /// # struct Browser;
    /// # impl mcpl_client::auth::Authorizer for Browser {
    /// #     fn authorize<'a>(&'a self, url: &'a str) -> futures::future::BoxFuture<'a, Result<String, mcpl_client::auth::AuthError>> {
    /// #         Box::pin(async move {
    /// #             let fail = |e: reqwest::Error| mcpl_client::auth::AuthError::Interaction(e.to_string());
    /// #             let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().map_err(fail)?;
    /// #             let response = http.get(url).send().await.map_err(fail)?;
    /// #             let location = response.headers().get("location").and_then(|v| v.to_str().ok());
    /// #             location.map(str::to_owned).ok_or_else(|| mcpl_client::auth::AuthError::Interaction("no redirect".into()))
    /// #         })
    /// #     }
    /// # }
    ///
    /// /// A handle on one store shared by the OAuth clients of the process.
    /// #[derive(Debug, Clone, Default)]
    /// struct Shared(Arc<MemoryStore>);
    ///
    /// impl CredentialStore for Shared {
    ///     fn client(&self, issuer: &str) -> Option<ClientCredentials> {
    ///         self.0.client(issuer)
    ///     }
    ///     fn set_client(&self, issuer: &str, client: ClientCredentials) {
    ///         self.0.set_client(issuer, client)
    ///     }
    ///     fn tokens(&self, server: &str) -> Option<Tokens> {
    ///         self.0.tokens(server)
    ///     }
    ///     fn set_tokens(&self, server: &str, tokens: Option<Tokens>) {
    ///         self.0.set_tokens(server, tokens)
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, _issuer) = protected_server().await?;
    /// let store = Shared::default();
    /// let first = Arc::new(OAuth::new(Browser, "http://127.0.0.1:8765/callback").store(store.clone()));
    /// Client::new("my-app", "1.0.0").connect(HttpTransport::new(url.clone()).auth(first)).await?;
    ///
    /// // A second OAuth client on the same store starts with the token the first one obtained.
    /// let second = OAuth::new(Browser, "http://127.0.0.1:8765/callback").store(store);
    /// assert!(second.access_token(&url).is_some());
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn store(mut self, store: impl CredentialStore + 'static) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// Uses `client` for the requests to metadata, registration and token endpoints. The
    /// default client follows same-origin redirects only; `client` keeps its own redirect
    /// policy, so build it with [`redirect::policy`] (or `Policy::none()`) to keep that rule.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use mcpl_client::auth::OAuth;
    /// # /// A protected MCP server (tool `hello`, scope `mcp:tools`) and its authorization server,
    /// # /// on local ports; returns the MCP URL and the issuer. The authorization server registers
    /// # /// every client as `dyn-client` / `dyn-secret`, authorizes at once (redirecting with a code)
    /// # /// and issues a token to whoever presents `dyn-secret`.
    /// # async fn protected_server() -> std::io::Result<(String, String)> {
    /// #     use std::sync::{Arc, Mutex};
    /// #     use axum::http::{StatusCode, Uri, header};
    /// #     use axum::routing::{get, post};
    /// #     use mcpl_server::http::auth::{AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError};
    /// #     fn json(status: StatusCode, value: serde_json::Value) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
    /// #         (status, [(header::CONTENT_TYPE, "application/json")], value.to_string())
    /// #     }
    /// #     struct Verifier(Arc<Mutex<Vec<String>>>);
    /// #     impl TokenVerifier for Verifier {
    /// #         fn verify<'a>(&'a self, token: &'a str) -> futures::future::BoxFuture<'a, Result<AccessToken, VerifyError>> {
    /// #             let known = self.0.lock().unwrap().iter().any(|t| t == token);
    /// #             Box::pin(async move {
    /// #                 if known { Ok(AccessToken::new(vec!["mcp:tools".to_owned()])) } else { Err(VerifyError::Invalid("unknown token".into())) }
    /// #             })
    /// #         }
    /// #     }
    /// #     let issued: Arc<Mutex<Vec<String>>> = Arc::default();
    /// #     let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let issuer = format!("http://{}", as_listener.local_addr()?);
    /// #     let metadata = serde_json::json!({
    /// #         "issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
    /// #         "token_endpoint": format!("{issuer}/token"), "registration_endpoint": format!("{issuer}/register"),
    /// #         "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
    /// #         "token_endpoint_auth_methods_supported": ["client_secret_post"],
    /// #     });
    /// #     let (iss, tokens) = (issuer.clone(), issued.clone());
    /// #     let auth_server = axum::Router::new()
    /// #         .route("/.well-known/oauth-authorization-server", get(move || { let m = metadata.clone(); async move { json(StatusCode::OK, m) } }))
    /// #         .route("/register", post(|| async { json(StatusCode::CREATED, serde_json::json!({"client_id": "dyn-client", "client_secret": "dyn-secret"})) }))
    /// #         .route("/authorize", get(move |uri: Uri| { let iss = iss.clone(); async move {
    /// #             let query: std::collections::HashMap<String, String> = reqwest::Url::parse(&format!("http://x/?{}", uri.query().unwrap_or_default())).unwrap().query_pairs().into_owned().collect();
    /// #             let mut back = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
    /// #             back.query_pairs_mut().append_pair("code", "the-code").append_pair("state", &query["state"]).append_pair("iss", &iss);
    /// #             (StatusCode::FOUND, [(header::LOCATION, back.to_string())])
    /// #         } }))
    /// #         .route("/token", post(move |body: String| { let tokens = tokens.clone(); async move {
    /// #             if !body.contains("client_secret=dyn-secret") { return json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "invalid_client"})); }
    /// #             let mut issued = tokens.lock().unwrap();
    /// #             let token = format!("tok-{}", issued.len());
    /// #             issued.push(token.clone());
    /// #             json(StatusCode::OK, serde_json::json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
    /// #         } }));
    /// #     tokio::spawn(mcpl_server::http::serve(as_listener, auth_server));
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let base = format!("http://{}", listener.local_addr()?);
    /// #     let server = mcpl_server::Server::builder("protected", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("hello", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async { Ok(mcpl_server::ToolOutput::text("hi")) })
    /// #         .build();
    /// #     let mcp = mcpl_server::http::StreamableHttp::new(server, mcpl_server::http::HttpConfig::new()).into_router("/mcp");
    /// #     let resource = ProtectedResourceMetadata::new(format!("{base}/mcp")).authorization_server(issuer.clone()).scopes_supported(["mcp:tools"]);
    /// #     let app = BearerAuth::new(Verifier(issued), resource).required_scopes(["mcp:tools"]).protect(mcp);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((format!("{base}/mcp"), issuer))
    /// # }
    /// # /// Plays the user's browser: follows the authorization URL to the redirect.
    /// # #[derive(Debug)]
    /// # struct Browser;
    /// # impl mcpl_client::auth::Authorizer for Browser {
    /// #     fn authorize<'a>(&'a self, url: &'a str) -> futures::future::BoxFuture<'a, Result<String, mcpl_client::auth::AuthError>> {
    /// #         Box::pin(async move {
    /// #             let fail = |e: reqwest::Error| mcpl_client::auth::AuthError::Interaction(e.to_string());
    /// #             let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().map_err(fail)?;
    /// #             let response = http.get(url).send().await.map_err(fail)?;
    /// #             let location = response.headers().get("location").and_then(|v| v.to_str().ok());
    /// #             location.map(str::to_owned).ok_or_else(|| mcpl_client::auth::AuthError::Interaction("no redirect".into()))
    /// #         })
    /// #     }
    /// # }
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Discovery, registration and token requests through a client with its own timeouts.
    /// let http = reqwest::Client::builder()
    ///     .timeout(Duration::from_secs(10))
    ///     .redirect(mcpl_client::transport::redirect::policy())
    ///     .build()?;
    /// let oauth = OAuth::new(Browser, "http://127.0.0.1:8765/callback").http_client(http);
    /// # drop(oauth);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = client;
        self
    }

    /// The rules for the URLs discovery produces (see [`DiscoveryPolicy`]). Default:
    /// [`DiscoveryPolicy::default`]: HTTPS (plain HTTP to loopback only), no stepping from the
    /// server's network into a private one, resource metadata on the server's origin.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::auth::{ClientCredentials, DiscoveryPolicy, OAuth};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let oauth = OAuth::client_credentials(None, ClientCredentials::confidential("svc", "s3cret"));
    /// // A server on plain HTTP off loopback gets no authorization: no token would be safe there.
    /// let err = oauth.handle_refusal("http://192.0.2.1:9/mcp", 401, None, None).await.unwrap_err();
    /// assert_eq!(err.kind(), "url_refused");
    ///
    /// // A lab without TLS.
    /// let lab = OAuth::client_credentials(None, ClientCredentials::confidential("svc", "s3cret"))
    ///     .discovery_policy(DiscoveryPolicy::new().allow_http(true));
    /// # drop(lab);
    /// # }
    /// ```
    #[must_use]
    pub fn discovery_policy(mut self, policy: DiscoveryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The access token to send to the MCP server at `server`, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::auth::OAuth;
    /// use mcpl_client::transport::HttpTransport;
    /// # /// A protected MCP server (tool `hello`, scope `mcp:tools`) and its authorization server,
    /// # /// on local ports; returns the MCP URL and the issuer. The authorization server registers
    /// # /// every client as `dyn-client` / `dyn-secret`, authorizes at once (redirecting with a code)
    /// # /// and issues a token to whoever presents `dyn-secret`.
    /// # async fn protected_server() -> std::io::Result<(String, String)> {
    /// #     use std::sync::{Arc, Mutex};
    /// #     use axum::http::{StatusCode, Uri, header};
    /// #     use axum::routing::{get, post};
    /// #     use mcpl_server::http::auth::{AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError};
    /// #     fn json(status: StatusCode, value: serde_json::Value) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
    /// #         (status, [(header::CONTENT_TYPE, "application/json")], value.to_string())
    /// #     }
    /// #     struct Verifier(Arc<Mutex<Vec<String>>>);
    /// #     impl TokenVerifier for Verifier {
    /// #         fn verify<'a>(&'a self, token: &'a str) -> futures::future::BoxFuture<'a, Result<AccessToken, VerifyError>> {
    /// #             let known = self.0.lock().unwrap().iter().any(|t| t == token);
    /// #             Box::pin(async move {
    /// #                 if known { Ok(AccessToken::new(vec!["mcp:tools".to_owned()])) } else { Err(VerifyError::Invalid("unknown token".into())) }
    /// #             })
    /// #         }
    /// #     }
    /// #     let issued: Arc<Mutex<Vec<String>>> = Arc::default();
    /// #     let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let issuer = format!("http://{}", as_listener.local_addr()?);
    /// #     let metadata = serde_json::json!({
    /// #         "issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
    /// #         "token_endpoint": format!("{issuer}/token"), "registration_endpoint": format!("{issuer}/register"),
    /// #         "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
    /// #         "token_endpoint_auth_methods_supported": ["client_secret_post"],
    /// #     });
    /// #     let (iss, tokens) = (issuer.clone(), issued.clone());
    /// #     let auth_server = axum::Router::new()
    /// #         .route("/.well-known/oauth-authorization-server", get(move || { let m = metadata.clone(); async move { json(StatusCode::OK, m) } }))
    /// #         .route("/register", post(|| async { json(StatusCode::CREATED, serde_json::json!({"client_id": "dyn-client", "client_secret": "dyn-secret"})) }))
    /// #         .route("/authorize", get(move |uri: Uri| { let iss = iss.clone(); async move {
    /// #             let query: std::collections::HashMap<String, String> = reqwest::Url::parse(&format!("http://x/?{}", uri.query().unwrap_or_default())).unwrap().query_pairs().into_owned().collect();
    /// #             let mut back = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
    /// #             back.query_pairs_mut().append_pair("code", "the-code").append_pair("state", &query["state"]).append_pair("iss", &iss);
    /// #             (StatusCode::FOUND, [(header::LOCATION, back.to_string())])
    /// #         } }))
    /// #         .route("/token", post(move |body: String| { let tokens = tokens.clone(); async move {
    /// #             if !body.contains("client_secret=dyn-secret") { return json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "invalid_client"})); }
    /// #             let mut issued = tokens.lock().unwrap();
    /// #             let token = format!("tok-{}", issued.len());
    /// #             issued.push(token.clone());
    /// #             json(StatusCode::OK, serde_json::json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
    /// #         } }));
    /// #     tokio::spawn(mcpl_server::http::serve(as_listener, auth_server));
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let base = format!("http://{}", listener.local_addr()?);
    /// #     let server = mcpl_server::Server::builder("protected", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("hello", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async { Ok(mcpl_server::ToolOutput::text("hi")) })
    /// #         .build();
    /// #     let mcp = mcpl_server::http::StreamableHttp::new(server, mcpl_server::http::HttpConfig::new()).into_router("/mcp");
    /// #     let resource = ProtectedResourceMetadata::new(format!("{base}/mcp")).authorization_server(issuer.clone()).scopes_supported(["mcp:tools"]);
    /// #     let app = BearerAuth::new(Verifier(issued), resource).required_scopes(["mcp:tools"]).protect(mcp);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((format!("{base}/mcp"), issuer))
    /// # }
    /// # /// Plays the user's browser: follows the authorization URL to the redirect.
    /// # #[derive(Debug)]
    /// # struct Browser;
    /// # impl mcpl_client::auth::Authorizer for Browser {
    /// #     fn authorize<'a>(&'a self, url: &'a str) -> futures::future::BoxFuture<'a, Result<String, mcpl_client::auth::AuthError>> {
    /// #         Box::pin(async move {
    /// #             let fail = |e: reqwest::Error| mcpl_client::auth::AuthError::Interaction(e.to_string());
    /// #             let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().map_err(fail)?;
    /// #             let response = http.get(url).send().await.map_err(fail)?;
    /// #             let location = response.headers().get("location").and_then(|v| v.to_str().ok());
    /// #             location.map(str::to_owned).ok_or_else(|| mcpl_client::auth::AuthError::Interaction("no redirect".into()))
    /// #         })
    /// #     }
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, _issuer) = protected_server().await?;
    /// let oauth = Arc::new(OAuth::new(Browser, "http://127.0.0.1:8765/callback"));
    /// assert_eq!(oauth.access_token(&url), None);
    /// let client = Client::new("my-app", "1.0.0");
    /// client.connect(HttpTransport::new(url.clone()).auth(oauth.clone())).await?;
    /// // Now there is one, for this server only.
    /// assert!(oauth.access_token(&url).is_some());
    /// assert_eq!(oauth.access_token("http://127.0.0.1:9/other"), None);
    /// # Ok(()) }
    /// ```
    pub fn access_token(&self, server: &str) -> Option<String> {
        self.store.tokens(server).map(|t| t.access_token)
    }

    /// Handles a refusal of a request to `server` that carried `sent` (the access token, if
    /// any): `Ok(())` means a new token is ready and the request should be sent again.
    ///
    /// # Errors
    ///
    /// Any [`AuthError`] of the flow; a `403` that is not `insufficient_scope` is refused with
    /// [`AuthError::Refused`].
    ///
    /// # Examples
    ///
    /// What [`HttpTransport`](crate::transport::HttpTransport) does with a `401`, by hand:
    ///
    /// ```
    /// use mcpl_client::auth::OAuth;
    /// # /// A protected MCP server (tool `hello`, scope `mcp:tools`) and its authorization server,
    /// # /// on local ports; returns the MCP URL and the issuer. The authorization server registers
    /// # /// every client as `dyn-client` / `dyn-secret`, authorizes at once (redirecting with a code)
    /// # /// and issues a token to whoever presents `dyn-secret`.
    /// # async fn protected_server() -> std::io::Result<(String, String)> {
    /// #     use std::sync::{Arc, Mutex};
    /// #     use axum::http::{StatusCode, Uri, header};
    /// #     use axum::routing::{get, post};
    /// #     use mcpl_server::http::auth::{AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError};
    /// #     fn json(status: StatusCode, value: serde_json::Value) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
    /// #         (status, [(header::CONTENT_TYPE, "application/json")], value.to_string())
    /// #     }
    /// #     struct Verifier(Arc<Mutex<Vec<String>>>);
    /// #     impl TokenVerifier for Verifier {
    /// #         fn verify<'a>(&'a self, token: &'a str) -> futures::future::BoxFuture<'a, Result<AccessToken, VerifyError>> {
    /// #             let known = self.0.lock().unwrap().iter().any(|t| t == token);
    /// #             Box::pin(async move {
    /// #                 if known { Ok(AccessToken::new(vec!["mcp:tools".to_owned()])) } else { Err(VerifyError::Invalid("unknown token".into())) }
    /// #             })
    /// #         }
    /// #     }
    /// #     let issued: Arc<Mutex<Vec<String>>> = Arc::default();
    /// #     let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let issuer = format!("http://{}", as_listener.local_addr()?);
    /// #     let metadata = serde_json::json!({
    /// #         "issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
    /// #         "token_endpoint": format!("{issuer}/token"), "registration_endpoint": format!("{issuer}/register"),
    /// #         "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
    /// #         "token_endpoint_auth_methods_supported": ["client_secret_post"],
    /// #     });
    /// #     let (iss, tokens) = (issuer.clone(), issued.clone());
    /// #     let auth_server = axum::Router::new()
    /// #         .route("/.well-known/oauth-authorization-server", get(move || { let m = metadata.clone(); async move { json(StatusCode::OK, m) } }))
    /// #         .route("/register", post(|| async { json(StatusCode::CREATED, serde_json::json!({"client_id": "dyn-client", "client_secret": "dyn-secret"})) }))
    /// #         .route("/authorize", get(move |uri: Uri| { let iss = iss.clone(); async move {
    /// #             let query: std::collections::HashMap<String, String> = reqwest::Url::parse(&format!("http://x/?{}", uri.query().unwrap_or_default())).unwrap().query_pairs().into_owned().collect();
    /// #             let mut back = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
    /// #             back.query_pairs_mut().append_pair("code", "the-code").append_pair("state", &query["state"]).append_pair("iss", &iss);
    /// #             (StatusCode::FOUND, [(header::LOCATION, back.to_string())])
    /// #         } }))
    /// #         .route("/token", post(move |body: String| { let tokens = tokens.clone(); async move {
    /// #             if !body.contains("client_secret=dyn-secret") { return json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "invalid_client"})); }
    /// #             let mut issued = tokens.lock().unwrap();
    /// #             let token = format!("tok-{}", issued.len());
    /// #             issued.push(token.clone());
    /// #             json(StatusCode::OK, serde_json::json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
    /// #         } }));
    /// #     tokio::spawn(mcpl_server::http::serve(as_listener, auth_server));
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let base = format!("http://{}", listener.local_addr()?);
    /// #     let server = mcpl_server::Server::builder("protected", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("hello", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async { Ok(mcpl_server::ToolOutput::text("hi")) })
    /// #         .build();
    /// #     let mcp = mcpl_server::http::StreamableHttp::new(server, mcpl_server::http::HttpConfig::new()).into_router("/mcp");
    /// #     let resource = ProtectedResourceMetadata::new(format!("{base}/mcp")).authorization_server(issuer.clone()).scopes_supported(["mcp:tools"]);
    /// #     let app = BearerAuth::new(Verifier(issued), resource).required_scopes(["mcp:tools"]).protect(mcp);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((format!("{base}/mcp"), issuer))
    /// # }
    /// # /// Plays the user's browser: follows the authorization URL to the redirect.
    /// # #[derive(Debug)]
    /// # struct Browser;
    /// # impl mcpl_client::auth::Authorizer for Browser {
    /// #     fn authorize<'a>(&'a self, url: &'a str) -> futures::future::BoxFuture<'a, Result<String, mcpl_client::auth::AuthError>> {
    /// #         Box::pin(async move {
    /// #             let fail = |e: reqwest::Error| mcpl_client::auth::AuthError::Interaction(e.to_string());
    /// #             let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().map_err(fail)?;
    /// #             let response = http.get(url).send().await.map_err(fail)?;
    /// #             let location = response.headers().get("location").and_then(|v| v.to_str().ok());
    /// #             location.map(str::to_owned).ok_or_else(|| mcpl_client::auth::AuthError::Interaction("no redirect".into()))
    /// #         })
    /// #     }
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, _issuer) = protected_server().await?;
    /// let oauth = OAuth::new(Browser, "http://127.0.0.1:8765/callback");
    ///
    /// let refused = reqwest::Client::new().post(&url).body("{}").send().await?;
    /// assert_eq!(refused.status(), 401);
    /// let challenge = refused.headers().get("www-authenticate").and_then(|v| v.to_str().ok());
    /// oauth.handle_refusal(&url, 401, challenge, None).await?;
    ///
    /// // A token is ready: send the request again with it.
    /// let token = oauth.access_token(&url).expect("a token");
    /// assert!(token.starts_with("tok-"));
    /// # Ok(()) }
    /// ```
    pub async fn handle_refusal(
        &self,
        server: &str,
        status: u16,
        www_authenticate: Option<&str>,
        sent: Option<&str>,
    ) -> Result<(), AuthError> {
        let challenge = www_authenticate.map(Challenge::parse).unwrap_or_default();
        if challenge.error.as_deref() == Some(dpop::USE_DPOP_NONCE) {
            // RFC 9449 section 9: the refusal carried a nonce (the transport took it); the
            // answer is the same request with a proof carrying it.
            if self.dpop.is_some() && self.nonces.get(server).is_some() {
                tracing::debug!(%server, "the server asks for a DPoP nonce; sending again");
                return Ok(());
            }
            return Err(AuthError::Refused {
                error: dpop::USE_DPOP_NONCE.to_owned(),
                description: Some("the server asked for a DPoP nonce and gave none".into()),
            });
        }
        if status == 403 && !challenge.is_insufficient_scope() {
            return Err(AuthError::Refused {
                error: challenge.error.unwrap_or_else(|| "forbidden".to_owned()),
                description: None,
            });
        }
        let _flow = self.flow.lock().await;
        let current = self.store.tokens(server);
        if current.as_ref().map(|t| t.access_token.as_str()) != sent {
            // Another request renewed the token meanwhile: just send again.
            return Ok(());
        }
        let server_url =
            self.policy.check("MCP server", server, &metadata::parse_url(server)?).await?;
        let discovered = metadata::discover_resource(
            &self.http,
            &self.policy,
            &server_url,
            challenge.resource_metadata.as_deref(),
        )
        .await;
        let (resource, legacy) = match discovered {
            Ok(resource) => (resource, false),
            Err(AuthError::NoResourceMetadata { .. }) => {
                // 2025-03-26: no protected resource metadata; the authorization server is at
                // the server's origin.
                tracing::debug!(%server, "no protected resource metadata; 2025-03-26 discovery");
                (metadata::legacy_resource(server, &server_url), true)
            }
            Err(e) => return Err(e),
        };
        let issuer =
            resource.authorization_servers.first().cloned().ok_or_else(|| {
                AuthError::NoServerMetadata { issuer: "(none listed)".to_owned() }
            })?;
        self.policy.check("authorization server", &issuer, &server_url).await?;
        let as_meta = match metadata::discover_server(&self.http, &issuer).await {
            Ok(meta) => meta,
            Err(AuthError::NoServerMetadata { .. }) if legacy => {
                // 2025-03-26: no metadata either; the default endpoints at the origin.
                tracing::debug!(%issuer, "no authorization server metadata; default endpoints");
                metadata::default_endpoints(&issuer)
            }
            Err(e) => return Err(e),
        };
        self.check_endpoints(&as_meta, &server_url).await?;
        if resource.dpop_bound_access_tokens_required == Some(true) {
            if self.dpop.is_none() {
                return Err(AuthError::DpopUnavailable("the client has no DPoP key".into()));
            }
            if self.dpop_key(&as_meta).is_none() {
                return Err(AuthError::DpopUnavailable(format!(
                    "the authorization server {issuer} does not support ES256 proofs"
                )));
            }
        }
        let same_issuer = current.as_ref().filter(|t| t.issuer == issuer);
        if status == 401 {
            if let Some(refresh) = same_issuer.and_then(|t| t.refresh_token.clone()) {
                let scope = same_issuer.and_then(|t| t.scope.clone());
                match self.refresh(server, &issuer, &as_meta, &resource, &refresh, scope).await {
                    Ok(()) => return Ok(()),
                    Err(AuthError::Refused { error, .. }) => {
                        tracing::debug!(%error, "refresh token rejected; authorizing again");
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        let previous = if challenge.is_insufficient_scope() {
            same_issuer.and_then(|t| t.scope.clone())
        } else {
            None
        };
        let scope = select_scope(&challenge, &resource, &as_meta, previous.as_deref());
        match &self.machine {
            Some(machine) => {
                if machine.issuer.as_ref().is_some_and(|e| e != &issuer) {
                    return Err(AuthError::NoRegistration { issuer });
                }
                // No refresh tokens without a user: `offline_access` means nothing here.
                let scope = scope
                    .map(|s| {
                        s.split(' ')
                            .filter(|s| *s != "offline_access")
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .filter(|s| !s.is_empty());
                // The assertion the grant rests on (the workload's token, the user's ID token):
                // once refused, it is not sent again (a rotated one is).
                let source = match &machine.grant {
                    MachineGrant::ClientCredentials => None,
                    MachineGrant::JwtBearer(source) => Some(source.assertion().await?),
                    MachineGrant::Enterprise(idp) => Some(idp.id_token.assertion().await?),
                };
                let digest: Option<[u8; 32]> = source.as_ref().map(|a| Sha256::digest(a).into());
                if let Some(refusal) = digest.and_then(|d| self.refused.previous(server, d)) {
                    tracing::debug!(%server, "this assertion was refused already; not sent again");
                    return Err(refusal);
                }
                let mut form = vec![("grant_type", machine.grant.grant_type().to_owned())];
                let outcome = async {
                    match (&machine.grant, source) {
                        (MachineGrant::JwtBearer(_), Some(jwt)) => form.push(("assertion", jwt)),
                        (MachineGrant::Enterprise(idp), Some(id_token)) => {
                            let scope = scope.as_deref();
                            let jag =
                                self.id_jag(idp, id_token, &as_meta, &resource, scope).await?;
                            form.push(("assertion", jag));
                        }
                        _ => {}
                    }
                    form.push(("resource", resource.resource.clone()));
                    if let Some(scope) = &scope {
                        form.push(("scope", scope.clone()));
                    }
                    tracing::debug!(%issuer, grant = machine.grant.grant_type(), "token request");
                    self.token_request(&as_meta, &machine.credentials, form).await
                }
                .await;
                match (outcome, digest) {
                    (Ok(tokens), _) => {
                        self.save(server, &issuer, tokens, scope);
                        Ok(())
                    }
                    (Err(e), Some(digest)) => {
                        self.refused.record(server, digest, &e);
                        Err(e)
                    }
                    (Err(e), None) => Err(e),
                }
            }
            None => self.authorize(server, &issuer, &as_meta, &resource, scope).await,
        }
    }

    /// Judges the endpoints an authorization server's metadata names.
    /// An ID-JAG for the authorization server of `meta` and `resource`, by token exchange
    /// (RFC 8693) of the user's ID token at the identity provider.
    async fn id_jag(
        &self,
        idp: &IdentityProvider,
        id_token: String,
        meta: &ServerMetadata,
        resource: &ResourceMetadata,
        scope: Option<&str>,
    ) -> Result<String, AuthError> {
        let idp_meta = match &idp.token_endpoint {
            Some(endpoint) => metadata::token_endpoint_only(&idp.issuer, endpoint),
            None => metadata::discover_server(&self.http, &idp.issuer).await?,
        };
        let mut form = vec![
            ("grant_type", grant::TOKEN_EXCHANGE_GRANT.to_owned()),
            ("requested_token_type", grant::ID_JAG_TOKEN_TYPE.to_owned()),
            ("audience", meta.issuer.clone()),
            ("resource", resource.resource.clone()),
            ("subject_token", id_token),
            ("subject_token_type", grant::ID_TOKEN_TYPE.to_owned()),
        ];
        if let Some(scope) = scope {
            form.push(("scope", scope.to_owned()));
        }
        tracing::debug!(idp = %idp.issuer, audience = %meta.issuer, "token exchange for an ID-JAG");
        let response = self.exchange(&idp_meta, &idp.client, form, None).await?;
        grant::id_jag(&response)
    }

    /// The DPoP key to use with the authorization server of `meta`: the client's, when the
    /// server supports `ES256` proofs.
    fn dpop_key(&self, meta: &ServerMetadata) -> Option<&ClientKey> {
        let supported = meta.dpop_signing_alg_values_supported.iter().flatten();
        self.dpop.as_ref().filter(|_| supported.into_iter().any(|a| a == dpop::ALG))
    }

    /// What to send with a request of `method` to the MCP server `server`: the
    /// `Authorization` header value and, for a DPoP-bound token, the proof (`DPoP` header).
    /// `None` without a token (or for a DPoP-bound token without the key).
    pub(crate) fn presentation(&self, server: &str, method: &str) -> Option<Presentation> {
        let tokens = self.store.tokens(server)?;
        let authorization = format!("{} {}", tokens.token_type.scheme(), tokens.access_token);
        let proof = match tokens.token_type {
            TokenType::Bearer => None,
            TokenType::Dpop => {
                let Some(key) = &self.dpop else {
                    tracing::warn!(%server, "a DPoP-bound token but no DPoP key; not sent");
                    return None;
                };
                let nonce = self.nonces.get(server);
                let proof =
                    dpop::proof(key, method, server, Some(&tokens.access_token), nonce.as_deref());
                match proof {
                    Ok(proof) => Some(proof),
                    Err(e) => {
                        tracing::warn!(error = %e, "no DPoP proof; the token is not sent");
                        return None;
                    }
                }
            }
        };
        Some(Presentation { access_token: tokens.access_token, authorization, proof })
    }

    /// Takes the `DPoP-Nonce` a response from `url` carries, for the next proofs sent there.
    pub(crate) fn take_nonce(&self, url: &str, headers: &reqwest::header::HeaderMap) {
        if self.dpop.is_none() {
            return;
        }
        if let Some(nonce) = headers.get(dpop::NONCE_HEADER).and_then(|v| v.to_str().ok()) {
            self.nonces.set(url, nonce);
        }
    }

    async fn check_endpoints(&self, meta: &ServerMetadata, server: &Url) -> Result<(), AuthError> {
        self.policy.check("token endpoint", &meta.token_endpoint, server).await?;
        if let Some(url) = &meta.authorization_endpoint {
            self.policy.check("authorization endpoint", url, server).await?;
        }
        if let Some(url) = &meta.registration_endpoint {
            self.policy.check("registration endpoint", url, server).await?;
        }
        Ok(())
    }

    async fn credentials(
        &self,
        issuer: &str,
        meta: &ServerMetadata,
    ) -> Result<ClientCredentials, AuthError> {
        if let Some(c) = self.preregistered.get(issuer) {
            return Ok(c.clone());
        }
        if let Some(c) = self.store.client(issuer) {
            return Ok(c);
        }
        if let (Some(url), Some(true)) =
            (&self.client_metadata_url, meta.client_id_metadata_document_supported)
        {
            return Ok(ClientCredentials::public(url.clone()));
        }
        let Some(endpoint) = &meta.registration_endpoint else {
            return Err(AuthError::NoRegistration { issuer: issuer.to_owned() });
        };
        let supported = meta.token_endpoint_auth_methods_supported.clone().unwrap_or_default();
        let method = ["client_secret_basic", "client_secret_post", "none"]
            .into_iter()
            .find(|m| supported.iter().any(|s| s == m))
            .unwrap_or("client_secret_basic");
        let body = json!({
            "client_name": self.client_name,
            "redirect_uris": [self.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": application_type(&self.redirect_uri),
        });
        let response = self
            .http
            .post(endpoint)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| AuthError::exchange(endpoint, &e))?;
        let status = response.status();
        let value = json_body(response, endpoint).await?;
        if !status.is_success() {
            return Err(oauth_error(&value, status));
        }
        let client_id = value
            .get("client_id")
            .and_then(Value::as_str)
            .ok_or_else(|| AuthError::InvalidResponse("registration without client_id".into()))?;
        let credentials = ClientCredentials {
            client_id: client_id.to_owned(),
            client_secret: value.get("client_secret").and_then(Value::as_str).map(str::to_owned),
            token_endpoint_auth_method: value
                .get("token_endpoint_auth_method")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| Some(method.to_owned())),
            signing_key: None,
        };
        tracing::debug!(%issuer, client_id = %credentials.client_id, "registered the client");
        self.store.set_client(issuer, credentials.clone());
        Ok(credentials)
    }

    async fn authorize(
        &self,
        server: &str,
        issuer: &str,
        meta: &ServerMetadata,
        resource: &ResourceMetadata,
        scope: Option<String>,
    ) -> Result<(), AuthError> {
        if !meta.code_challenge_methods_supported.iter().flatten().any(|m| m == "S256") {
            return Err(AuthError::PkceUnsupported { issuer: issuer.to_owned() });
        }
        let client = self.credentials(issuer, meta).await?;
        let jkt = self.dpop_key(meta).map(ClientKey::thumbprint);
        let verifier = random_token(32)?;
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        let state = random_token(16)?;
        let endpoint = meta
            .authorization_endpoint
            .as_deref()
            .ok_or_else(|| AuthError::NoServerMetadata { issuer: issuer.to_owned() })?;
        let mut url = Url::parse(endpoint).map_err(|e| AuthError::InvalidUrl {
            url: endpoint.to_owned(),
            detail: e.to_string(),
        })?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &self.redirect_uri)
                .append_pair("code_challenge", &challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state)
                .append_pair("resource", &resource.resource);
            if let Some(scope) = &scope {
                query.append_pair("scope", scope);
            }
            if let Some(jkt) = &jkt {
                // RFC 9449 section 10: the code is bound to the key too.
                query.append_pair("dpop_jkt", jkt);
            }
        }
        tracing::debug!(%issuer, scope = ?scope, "starting interactive authorization");
        let Some(authorizer) = &self.authorizer else {
            return Err(AuthError::Interaction("no authorizer for user interaction".into()));
        };
        let redirected = authorizer.authorize(url.as_str()).await?;
        let redirected = Url::parse(&redirected).map_err(|e| AuthError::InvalidUrl {
            url: "(authorization response)".to_owned(),
            detail: e.to_string(),
        })?;
        let params: HashMap<String, String> = redirected.query_pairs().into_owned().collect();
        if params.get("state") != Some(&state) {
            return Err(AuthError::InvalidResponse("state does not match".into()));
        }
        // RFC 9207: a present `iss` must be exactly the issuer; an advertised one must be there.
        match params.get("iss") {
            Some(iss) if iss != &meta.issuer => {
                return Err(AuthError::InvalidResponse(format!(
                    "iss {iss:?} is not the issuer {:?}",
                    meta.issuer
                )));
            }
            None if meta.authorization_response_iss_parameter_supported == Some(true) => {
                return Err(AuthError::InvalidResponse(
                    "iss missing though the server advertises it".into(),
                ));
            }
            _ => {}
        }
        if let Some(error) = params.get("error") {
            return Err(AuthError::Refused {
                error: error.clone(),
                description: params.get("error_description").cloned(),
            });
        }
        let code =
            params.get("code").ok_or_else(|| AuthError::InvalidResponse("no code".into()))?;
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code.clone()),
            ("redirect_uri", self.redirect_uri.clone()),
            ("code_verifier", verifier),
            ("resource", resource.resource.clone()),
        ];
        let tokens = self.token_request(meta, &client, form).await?;
        self.save(server, issuer, tokens, scope);
        Ok(())
    }

    async fn refresh(
        &self,
        server: &str,
        issuer: &str,
        meta: &ServerMetadata,
        resource: &ResourceMetadata,
        refresh_token: &str,
        scope: Option<String>,
    ) -> Result<(), AuthError> {
        let client = match &self.machine {
            Some(machine) => machine.credentials.clone(),
            None => self.credentials(issuer, meta).await?,
        };
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.to_owned()),
            ("resource", resource.resource.clone()),
        ];
        let mut tokens = self.token_request(meta, &client, form).await?;
        if tokens.0.get("refresh_token").is_none() {
            tokens.0.insert("refresh_token".to_owned(), Value::String(refresh_token.to_owned()));
        }
        self.save(server, issuer, tokens, scope);
        Ok(())
    }

    /// Records the tokens of a token response.
    fn save(
        &self,
        server: &str,
        issuer: &str,
        (response, token_type): (serde_json::Map<String, Value>, TokenType),
        scope: Option<String>,
    ) {
        let text = |k: &str| response.get(k).and_then(Value::as_str).map(str::to_owned);
        let Some(access_token) = text("access_token") else { return };
        let tokens = Tokens {
            access_token,
            refresh_token: text("refresh_token"),
            scope: scope.or_else(|| text("scope")),
            issuer: issuer.to_owned(),
            token_type,
        };
        tracing::debug!(%issuer, scope = ?tokens.scope, ?token_type, "obtained an access token");
        self.store.set_tokens(server, Some(tokens));
    }

    /// A token request for an access token (with a DPoP proof when the server supports it),
    /// and how the token is presented.
    async fn token_request(
        &self,
        meta: &ServerMetadata,
        client: &ClientCredentials,
        form: Vec<(&'static str, String)>,
    ) -> Result<(serde_json::Map<String, Value>, TokenType), AuthError> {
        let key = self.dpop_key(meta);
        let map = self.exchange(meta, client, form, key).await?;
        if !map.get("access_token").is_some_and(Value::is_string) {
            return Err(AuthError::InvalidResponse("token response without access_token".into()));
        }
        let token_type = map.get("token_type").and_then(Value::as_str).unwrap_or("Bearer");
        let token_type = if token_type.eq_ignore_ascii_case("bearer") {
            TokenType::Bearer
        } else if token_type.eq_ignore_ascii_case("dpop") && key.is_some() {
            TokenType::Dpop
        } else {
            return Err(AuthError::InvalidResponse(format!(
                "unsupported token_type {token_type:?}"
            )));
        };
        Ok((map, token_type))
    }

    /// A request to the token endpoint of `meta`, the client authenticated as its
    /// registration says, with a DPoP proof signed by `dpop` when given (sent again, once,
    /// with the server's nonce when it asks for one): the response object.
    async fn exchange(
        &self,
        meta: &ServerMetadata,
        client: &ClientCredentials,
        form: Vec<(&'static str, String)>,
        dpop: Option<&ClientKey>,
    ) -> Result<serde_json::Map<String, Value>, AuthError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (response, nonce_given) =
                self.send_token_request(meta, client, &form, dpop).await?;
            let status = response.status();
            if status.is_server_error() {
                // Transient: not a verdict on the grant (a refresh token stays usable).
                return Err(AuthError::Http {
                    url: meta.token_endpoint.clone(),
                    detail: format!("HTTP {status}"),
                });
            }
            let value = json_body(response, &meta.token_endpoint).await?;
            if !status.is_success() {
                let error = oauth_error(&value, status);
                let wants_nonce = matches!(&error, AuthError::Refused { error, .. } if error == dpop::USE_DPOP_NONCE);
                if wants_nonce && nonce_given && attempt == 1 {
                    tracing::debug!(url = %meta.token_endpoint, "DPoP nonce required; sending again");
                    continue;
                }
                return Err(error);
            }
            let Value::Object(map) = value else {
                return Err(AuthError::InvalidResponse("token response is not an object".into()));
            };
            return Ok(map);
        }
    }

    /// Sends one token request; the response, and whether it gave a new DPoP nonce.
    async fn send_token_request(
        &self,
        meta: &ServerMetadata,
        client: &ClientCredentials,
        form: &[(&'static str, String)],
        dpop: Option<&ClientKey>,
    ) -> Result<(reqwest::Response, bool), AuthError> {
        let mut form = form.to_vec();
        let method = token_auth_method(meta, client);
        let mut request = self
            .http
            .post(&meta.token_endpoint)
            .header(reqwest::header::ACCEPT, "application/json");
        if let Some(key) = dpop {
            let nonce = self.nonces.get(&meta.token_endpoint);
            let proof = dpop::proof(key, "POST", &meta.token_endpoint, None, nonce.as_deref())?;
            request = request.header("DPoP", proof);
        }
        match (method, &client.client_secret, &client.signing_key) {
            ("private_key_jwt", _, Some(key)) => {
                // RFC 7523bis: the audience is the authorization server's issuer identifier.
                let jwt = key.assertion(&client.client_id, &meta.issuer)?;
                form.push(("client_assertion_type", assertion::JWT_BEARER.to_owned()));
                form.push(("client_assertion", jwt));
            }
            ("client_secret_basic", Some(secret), _) => {
                let pair = format!("{}:{}", form_encode(&client.client_id), form_encode(secret));
                request = request.header(
                    reqwest::header::AUTHORIZATION,
                    format!("Basic {}", STANDARD.encode(pair)),
                );
            }
            ("client_secret_post", Some(secret), _) => {
                form.push(("client_id", client.client_id.clone()));
                form.push(("client_secret", secret.clone()));
            }
            _ => form.push(("client_id", client.client_id.clone())),
        }
        let body = form
            .iter()
            .map(|(k, v)| format!("{k}={}", form_encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let response = request
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .map_err(|e| AuthError::exchange(&meta.token_endpoint, &e))?;
        let nonce = response.headers().get(dpop::NONCE_HEADER).and_then(|v| v.to_str().ok());
        let nonce_given =
            dpop.is_some() && nonce.is_some_and(|n| self.nonces.set(&meta.token_endpoint, n));
        Ok((response, nonce_given))
    }
}

/// A client acting on its own behalf.
#[derive(Debug)]
struct Machine {
    /// The issuer the credentials belong to; `None`: any the protected resource names.
    issuer: Option<String>,
    credentials: ClientCredentials,
    grant: MachineGrant,
}

/// The credentials on one request to an MCP server.
pub(crate) struct Presentation {
    /// The access token (to tell, on a refusal, whether it was renewed meanwhile).
    pub(crate) access_token: String,
    /// The `Authorization` header value.
    pub(crate) authorization: String,
    /// The `DPoP` header value, for a DPoP-bound token.
    pub(crate) proof: Option<String>,
}

/// The HTTP client of the OAuth exchanges unless one is given: same-origin redirects only.
fn default_http() -> reqwest::Client {
    reqwest::Client::builder().redirect(redirect::policy()).build().unwrap_or_else(|e| {
        tracing::warn!(error = %e, "no HTTP client with the redirect policy; using the default");
        reqwest::Client::new()
    })
}

/// `native` for loopback or custom-scheme redirects, `web` otherwise.
fn application_type(redirect_uri: &str) -> &'static str {
    match Url::parse(redirect_uri) {
        Ok(url) if url.scheme() == "https" => match url.host_str() {
            Some("localhost" | "127.0.0.1" | "[::1]") => "native",
            _ => "web",
        },
        _ => "native",
    }
}

/// The token endpoint authentication to use with `client`.
fn token_auth_method(meta: &ServerMetadata, client: &ClientCredentials) -> &'static str {
    if client.signing_key.is_some() {
        return "private_key_jwt";
    }
    if client.client_secret.is_none() {
        return "none";
    }
    let registered = client.token_endpoint_auth_method.as_deref();
    let supported = meta.token_endpoint_auth_methods_supported.as_deref();
    let allowed = |m: &str| supported.is_none_or(|s| s.iter().any(|x| x == m));
    match registered {
        Some("client_secret_post") => "client_secret_post",
        Some("client_secret_basic") => "client_secret_basic",
        Some("none") => "none",
        _ if allowed("client_secret_basic") => "client_secret_basic",
        _ if allowed("client_secret_post") => "client_secret_post",
        _ => "none",
    }
}

/// The scope to request: the challenge's, else the resource's `scopes_supported`, else none;
/// joined with `previous` (step-up) and `offline_access` when the server offers it.
fn select_scope(
    challenge: &Challenge,
    resource: &ResourceMetadata,
    meta: &ServerMetadata,
    previous: Option<&str>,
) -> Option<String> {
    fn add(scopes: &mut Vec<String>, s: &str) {
        if !s.is_empty() && !scopes.iter().any(|x| x == s) {
            scopes.push(s.to_owned());
        }
    }
    let mut scopes: Vec<String> = Vec::new();
    for s in previous.unwrap_or_default().split(' ') {
        add(&mut scopes, s);
    }
    match (&challenge.scope, &resource.scopes_supported) {
        (Some(scope), _) => scope.split(' ').for_each(|s| add(&mut scopes, s)),
        (None, Some(supported)) => supported.iter().for_each(|s| add(&mut scopes, s)),
        (None, None) => {}
    }
    if !scopes.is_empty() && meta.supports_scope("offline_access") {
        add(&mut scopes, "offline_access");
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

async fn json_body(response: reqwest::Response, url: &str) -> Result<Value, AuthError> {
    let body = metadata::read_limited(response, url).await?;
    serde_json::from_slice(&body).map_err(|e| AuthError::InvalidResponse(format!("{url}: {e}")))
}

fn oauth_error(value: &Value, status: reqwest::StatusCode) -> AuthError {
    AuthError::Refused {
        error: value
            .get("error")
            .and_then(Value::as_str)
            .map_or_else(|| format!("HTTP {status}"), str::to_owned),
        description: value.get("error_description").and_then(Value::as_str).map(str::to_owned),
    }
}

/// `application/x-www-form-urlencoded` encoding of one value.
fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `bytes` random bytes, base64url-encoded.
fn random_token(bytes: usize) -> Result<String, AuthError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| AuthError::Random(e.to_string()))?;
    Ok(URL_SAFE_NO_PAD.encode(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(scopes: Option<&[&str]>) -> ServerMetadata {
        serde_json::from_value(json!({
            "issuer": "https://as", "authorization_endpoint": "https://as/a",
            "token_endpoint": "https://as/t",
            "scopes_supported": scopes,
        }))
        .unwrap_or_else(|e| unreachable!("{e}"))
    }

    fn resource(scopes: Option<&[&str]>) -> ResourceMetadata {
        serde_json::from_value(json!({ "resource": "https://r/mcp", "scopes_supported": scopes }))
            .unwrap_or_else(|e| unreachable!("{e}"))
    }

    #[test]
    fn scope_selection_order() {
        let c = Challenge { scope: Some("a".into()), ..Challenge::default() };
        assert_eq!(
            select_scope(&c, &resource(Some(&["x"])), &meta(None), None).as_deref(),
            Some("a")
        );
        let none = Challenge::default();
        assert_eq!(
            select_scope(&none, &resource(Some(&["x", "y"])), &meta(None), None).as_deref(),
            Some("x y")
        );
        assert_eq!(select_scope(&none, &resource(None), &meta(None), None), None);
        assert_eq!(
            select_scope(&c, &resource(None), &meta(Some(&["offline_access"])), Some("b a"))
                .as_deref(),
            Some("b a offline_access")
        );
        assert_eq!(
            select_scope(&none, &resource(None), &meta(Some(&["offline_access"])), None),
            None
        );
    }

    #[test]
    fn form_encoding_and_secrets_stay_out_of_debug() {
        assert_eq!(form_encode("a b&c=d:é"), "a+b%26c%3Dd%3A%C3%A9");
        let c = ClientCredentials::confidential("id", "s3cret");
        assert!(!format!("{c:?}").contains("s3cret"));
        let t = Tokens {
            access_token: "tok".into(),
            refresh_token: Some("ref".into()),
            scope: None,
            issuer: "i".into(),
            token_type: TokenType::Bearer,
        };
        let text = format!("{t:?}");
        assert!(!text.contains("tok\"") && !text.contains("ref\""), "{text}");
    }

    #[test]
    fn pkce_verifier_is_long_enough() {
        let v = random_token(32).unwrap_or_default();
        assert_eq!(v.len(), 43);
    }
}
