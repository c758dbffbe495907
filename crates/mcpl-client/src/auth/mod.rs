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
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::Url;
use serde_json::Value;

mod assertion;
mod challenge;
mod credentials;
pub mod dpop;
mod error;
mod flow;
mod grant;
mod metadata;
mod oauth;
mod policy;

use self::grant::MachineGrant;

pub use self::assertion::ClientKey;
pub use self::challenge::Challenge;
#[allow(deprecated)]
pub use self::credentials::MemoryStore;
pub use self::credentials::{
    ClientCredentials, CredentialStore, MemoryCredentialStore, TokenType, Tokens,
};
pub use self::error::AuthError;
pub use self::grant::{Assertion, AssertionFile, AssertionSource, IdentityProvider};
pub use self::metadata::{ResourceMetadata, ServerMetadata};
pub use self::oauth::Authorizer;
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
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

/// The HTTP client of the OAuth exchanges unless one is given: same-origin redirects only, and
/// the transport's default TLS.
fn default_http() -> reqwest::Client {
    let built = crate::transport::http::client_builder().and_then(|builder| {
        builder.build().map_err(|e| mcpl_core::Error::transport("no HTTP client", e))
    });
    built.unwrap_or_else(|e| {
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
    use serde_json::json;

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
