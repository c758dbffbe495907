//! OAuth end to end over real sockets: a protected `mcpl-server`, a small authorization
//! server, and `mcpl-client` discovering, registering, authorizing with PKCE and retrying.

#![cfg(feature = "auth")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::future::BoxFuture;
use mcpl_client::Client;
use mcpl_client::auth::{AuthError, Authorizer, ClientCredentials, OAuth};
use mcpl_client::transport::HttpTransport;
use mcpl_core::types::{Tool, ToolSchema};
use mcpl_server::http::auth::{
    AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError,
};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::{Server, ToolOutput};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// How the test authorization server misbehaves.
#[derive(Clone, Copy, Default)]
struct Quirks {
    no_s256: bool,
    wrong_iss: bool,
}

#[derive(Default)]
struct AsState {
    base: String,
    quirks: Quirks,
    registrations: Vec<Value>,
    authorizations: Vec<HashMap<String, String>>,
    token_requests: Vec<HashMap<String, String>>,
    challenge: Option<String>,
    issued: HashMap<String, Vec<String>>,
    /// The token endpoint answers 503.
    token_down: bool,
}

type Shared = Arc<Mutex<AsState>>;

fn pairs(query: &str) -> HashMap<String, String> {
    reqwest::Url::parse(&format!("http://x/?{query}")).unwrap().query_pairs().into_owned().collect()
}

fn json_response(status: StatusCode, value: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], value.to_string()).into_response()
}

async fn as_metadata(State(s): State<Shared>) -> Response {
    let s = s.lock().unwrap();
    let methods = if s.quirks.no_s256 { json!(["plain"]) } else { json!(["S256"]) };
    json_response(
        StatusCode::OK,
        &json!({
            "issuer": s.base,
            "authorization_endpoint": format!("{}/authorize", s.base),
            "token_endpoint": format!("{}/token", s.base),
            "registration_endpoint": format!("{}/register", s.base),
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": methods,
            "token_endpoint_auth_methods_supported": ["client_secret_post"],
            "authorization_response_iss_parameter_supported": true,
        }),
    )
}

async fn register(State(s): State<Shared>, body: String) -> Response {
    s.lock().unwrap().registrations.push(serde_json::from_str(&body).unwrap());
    json_response(
        StatusCode::CREATED,
        &json!({ "client_id": "dyn-client", "client_secret": "dyn-secret" }),
    )
}

async fn authorize(State(s): State<Shared>, uri: Uri) -> Response {
    let query = pairs(uri.query().unwrap_or_default());
    let mut s = s.lock().unwrap();
    s.challenge = query.get("code_challenge").cloned();
    let iss =
        if s.quirks.wrong_iss { "https://evil.example.com".to_owned() } else { s.base.clone() };
    let mut target = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
    target
        .query_pairs_mut()
        .append_pair("code", "the-code")
        .append_pair("state", &query["state"])
        .append_pair("iss", &iss);
    s.authorizations.push(query);
    (StatusCode::FOUND, [(header::LOCATION, target.to_string())]).into_response()
}

async fn token(State(s): State<Shared>, body: String) -> Response {
    let form = pairs(&body);
    let mut s = s.lock().unwrap();
    if s.token_down {
        return json_response(StatusCode::SERVICE_UNAVAILABLE, &json!({}));
    }
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let machine = form.get("grant_type").map(String::as_str) == Some("client_credentials");
    let refresh = form.get("grant_type").map(String::as_str) == Some("refresh_token");
    let grant_ok = if refresh {
        form.get("refresh_token").map(String::as_str) == Some("the-refresh-token")
    } else {
        machine || s.challenge.as_deref() == Some(computed.as_str())
    };
    let ok = grant_ok && form.get("client_secret").map(String::as_str) == Some("dyn-secret");
    let requested = if machine { Some(&form) } else { s.authorizations.last() };
    let scopes: Vec<String> = requested
        .and_then(|a| a.get("scope"))
        .map(|sc| sc.split(' ').map(str::to_owned).collect())
        .unwrap_or_default();
    s.token_requests.push(form);
    if !ok {
        return json_response(StatusCode::BAD_REQUEST, &json!({ "error": "invalid_grant" }));
    }
    let token = format!("tok-{}", s.issued.len());
    s.issued.insert(token.clone(), scopes);
    json_response(
        StatusCode::OK,
        &json!({
            "access_token": token, "token_type": "Bearer", "expires_in": 3600,
            "refresh_token": "the-refresh-token",
        }),
    )
}

struct Verifier(Shared);

impl TokenVerifier for Verifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AccessToken, VerifyError>> {
        Box::pin(async move {
            match self.0.lock().unwrap().issued.get(token) {
                Some(scopes) => Ok(AccessToken::new(scopes.clone())),
                None => Err(VerifyError::Invalid("unknown".into())),
            }
        })
    }
}

#[derive(Debug)]
struct FollowRedirect;

impl Authorizer for FollowRedirect {
    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(async move {
            let http = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap();
            let response =
                http.get(url).send().await.map_err(|e| AuthError::Interaction(e.to_string()))?;
            Ok(response.headers()[header::LOCATION].to_str().unwrap().to_owned())
        })
    }
}

/// Starts the authorization server and the protected MCP server; returns the state and the
/// MCP endpoint URL.
async fn start(quirks: Quirks) -> (Shared, String) {
    let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let as_base = format!("http://{}", as_listener.local_addr().unwrap());
    let state: Shared =
        Arc::new(Mutex::new(AsState { base: as_base.clone(), quirks, ..AsState::default() }));
    let auth_server = Router::new()
        .route("/.well-known/oauth-authorization-server", get(as_metadata))
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(state.clone());
    tokio::spawn(mcpl_server::http::serve(as_listener, auth_server));

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = Server::builder("protected", "0.0.1")
        .tool(Tool::new("hello", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("hi"))
        })
        .build();
    let mcp = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp");
    let metadata = ProtectedResourceMetadata::new(format!("{base}/mcp"))
        .authorization_server(as_base)
        .scopes_supported(["mcp:tools"]);
    let app = BearerAuth::new(Verifier(state.clone()), metadata)
        .required_scopes(["mcp:tools"])
        .protect(mcp);
    tokio::spawn(mcpl_server::http::serve(listener, app));
    (state, format!("{base}/mcp"))
}

fn oauth() -> Arc<OAuth> {
    Arc::new(OAuth::new(FollowRedirect, "http://127.0.0.1:1/callback").client_name("auth-test"))
}

#[tokio::test]
async fn a_client_authorizes_and_reaches_a_protected_server() {
    let (state, url) = start(Quirks::default()).await;
    let client = Client::new("auth-test", "0.0.1");
    client.connect(HttpTransport::new(&url).auth(oauth())).await.unwrap();
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools[0].name, "hello");
    client.close().await.unwrap();

    let s = state.lock().unwrap();
    assert_eq!(s.registrations.len(), 1, "registered once");
    assert_eq!(s.registrations[0]["redirect_uris"], json!(["http://127.0.0.1:1/callback"]));
    assert_eq!(s.registrations[0]["application_type"], "native");
    assert_eq!(s.authorizations.len(), 1, "authorized once");
    let a = &s.authorizations[0];
    assert_eq!(a["code_challenge_method"], "S256");
    assert_eq!(a["resource"], url);
    assert_eq!(a["scope"], "mcp:tools");
    assert_eq!(a["client_id"], "dyn-client");
    let t = &s.token_requests[0];
    assert_eq!(t["grant_type"], "authorization_code");
    assert_eq!(t["resource"], url);
    assert_eq!(t["client_id"], "dyn-client");
}

#[tokio::test]
async fn a_server_without_s256_is_refused_before_authorization() {
    let (state, url) = start(Quirks { no_s256: true, ..Quirks::default() }).await;
    let client = Client::new("auth-test", "0.0.1");
    let outcome = client.connect(HttpTransport::new(&url).auth(oauth())).await;
    assert!(outcome.is_err());
    assert!(state.lock().unwrap().authorizations.is_empty());
}

#[tokio::test]
async fn a_wrong_iss_stops_the_flow_before_the_token_request() {
    let (state, url) = start(Quirks { wrong_iss: true, ..Quirks::default() }).await;
    let client = Client::new("auth-test", "0.0.1");
    let outcome = client.connect(HttpTransport::new(&url).auth(oauth())).await;
    assert!(outcome.is_err());
    let s = state.lock().unwrap();
    assert!(!s.authorizations.is_empty());
    assert!(s.token_requests.is_empty());
}

#[tokio::test]
async fn a_machine_client_uses_the_client_credentials_grant() {
    let (state, url) = start(Quirks::default()).await;
    let issuer = state.lock().unwrap().base.clone();
    let oauth = OAuth::client_credentials(
        Some(issuer),
        ClientCredentials::confidential("dyn-client", "dyn-secret"),
    );
    let client = Client::new("auth-test", "0.0.1");
    client.connect(HttpTransport::new(&url).auth(Arc::new(oauth))).await.unwrap();
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    client.close().await.unwrap();
    let s = state.lock().unwrap();
    assert!(s.authorizations.is_empty(), "no user interaction");
    assert!(s.registrations.is_empty(), "no registration");
    let t = &s.token_requests[0];
    assert_eq!(t["grant_type"], "client_credentials");
    assert_eq!(t["scope"], "mcp:tools");
    assert_eq!(t["resource"], url);
}

#[tokio::test]
async fn client_credentials_are_not_sent_to_another_issuer() {
    let (state, url) = start(Quirks::default()).await;
    let oauth = OAuth::client_credentials(
        Some("https://other-issuer.example.com".to_owned()),
        ClientCredentials::confidential("dyn-client", "dyn-secret"),
    );
    let client = Client::new("auth-test", "0.0.1");
    assert!(client.connect(HttpTransport::new(&url).auth(Arc::new(oauth))).await.is_err());
    assert!(state.lock().unwrap().token_requests.is_empty());
}

#[tokio::test]
async fn a_rejected_access_token_is_refreshed_without_a_new_authorization() {
    let (state, url) = start(Quirks::default()).await;
    let client = Client::new("auth-test", "0.0.1");
    client.connect(HttpTransport::new(&url).auth(oauth())).await.unwrap();
    // The server forgets every token issued so far: the next request is refused.
    state.lock().unwrap().issued.clear();
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    client.close().await.unwrap();
    let s = state.lock().unwrap();
    assert_eq!(s.authorizations.len(), 1, "no second interactive authorization");
    let grants: Vec<&str> = s.token_requests.iter().map(|t| t["grant_type"].as_str()).collect();
    assert_eq!(grants, ["authorization_code", "refresh_token"]);
    assert_eq!(s.token_requests[1]["resource"], url);
}

#[tokio::test]
async fn a_transient_refresh_failure_keeps_the_refresh_token() {
    let (state, url) = start(Quirks::default()).await;
    let client = Client::new("auth-test", "0.0.1");
    client.connect(HttpTransport::new(&url).auth(oauth())).await.unwrap();
    {
        let mut s = state.lock().unwrap();
        s.issued.clear();
        s.token_down = true;
    }
    // The refresh fails transiently: the request fails, and no new authorization is started.
    assert!(client.list_tools().await.is_err());
    assert_eq!(state.lock().unwrap().authorizations.len(), 1);
    // Once the endpoint is back, the same refresh token works.
    state.lock().unwrap().token_down = false;
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    client.close().await.unwrap();
    let s = state.lock().unwrap();
    assert_eq!(s.authorizations.len(), 1);
    let grants: Vec<&str> = s.token_requests.iter().map(|t| t["grant_type"].as_str()).collect();
    assert_eq!(grants, ["authorization_code", "refresh_token"]);
}
