//! What a client keeps: its registration ([`ClientCredentials`]), its [`Tokens`], and the
//! [`CredentialStore`] that holds both ([`MemoryCredentialStore`] in memory).

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use super::{AuthError, ClientKey, lock};

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
/// use mcpl_client::auth::{CredentialStore, MemoryCredentialStore, TokenType, Tokens};
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
/// let store = MemoryCredentialStore::default();
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
/// default, [`MemoryCredentialStore`], forgets them when the process ends.
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
/// use mcpl_client::auth::{ClientCredentials, CredentialStore, MemoryCredentialStore};
///
/// let store = MemoryCredentialStore::default();
/// assert!(store.client("https://auth.example.com").is_none());
/// store.set_client("https://auth.example.com", ClientCredentials::public("my-app"));
/// assert_eq!(store.client("https://auth.example.com").map(|c| c.client_id).as_deref(), Some("my-app"));
/// // Registrations are per issuer.
/// assert!(store.client("https://other.example.com").is_none());
/// ```
#[derive(Debug, Default)]
pub struct MemoryCredentialStore {
    clients: Mutex<HashMap<String, ClientCredentials>>,
    tokens: Mutex<HashMap<String, Tokens>>,
}

/// The former name of [`MemoryCredentialStore`] (`MemoryStore` also named the response
/// cache's and the host's checkpoint store).
#[deprecated(note = "renamed MemoryCredentialStore")]
pub type MemoryStore = MemoryCredentialStore;

impl CredentialStore for MemoryCredentialStore {
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
