//! The authorization flow of an [`OAuth`] client: answering a refusal (discovery,
//! registration, the grants, refresh), and presenting tokens on requests.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use reqwest::Url;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{
    AuthError, Challenge, ClientCredentials, ClientKey, IdentityProvider, MachineGrant, OAuth,
    Presentation, ResourceMetadata, ServerMetadata, TokenType, Tokens, application_type, assertion,
    dpop, form_encode, grant, json_body, metadata, oauth_error, random_token, select_scope,
    token_auth_method,
};

impl OAuth {
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
        if status == 401
            && let Some(refresh) = same_issuer.and_then(|t| t.refresh_token.clone())
        {
            let scope = same_issuer.and_then(|t| t.scope.clone());
            match self.refresh(server, &issuer, &as_meta, &resource, &refresh, scope).await {
                Ok(()) => return Ok(()),
                Err(AuthError::Refused { error, .. }) => {
                    tracing::debug!(%error, "refresh token rejected; authorizing again");
                }
                Err(e) => return Err(e),
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
