//! Building an [`OAuth`] client: the [`Authorizer`] of the user interaction, the grants of a
//! client acting on its own behalf, and the settings.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::{
    AssertionSource, AuthError, ClientCredentials, ClientKey, CredentialStore, DiscoveryPolicy,
    IdentityProvider, Machine, MachineGrant, MemoryCredentialStore, OAuth, default_http, dpop,
    grant,
};

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
            store: Arc::new(MemoryCredentialStore::default()),
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
            store: Arc::new(MemoryCredentialStore::default()),
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

    /// Keeps registrations and tokens in `store`. Default: a [`MemoryCredentialStore`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::auth::{ClientCredentials, CredentialStore, MemoryCredentialStore, OAuth, Tokens};
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
    /// struct Shared(Arc<MemoryCredentialStore>);
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
    /// policy, so build it with [`redirect::policy`](crate::transport::redirect::policy) (or
    /// `Policy::none()`) to keep that rule, or start from
    /// [`client_builder`](crate::transport::http::client_builder), which also has the default TLS.
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
}
