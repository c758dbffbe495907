//! OAuth discovery against scripted servers over real sockets: what a hostile MCP server can
//! steer with its challenge and its metadata, and the 2025-03-26 fallbacks.

#![cfg(feature = "auth")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::Request;
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use mcpl_client::auth::{AuthError, Authorizer, ClientCredentials, OAuth, UrlRefusal};
use mcpl_client::transport::HttpTransport;
use mcpl_client::{Client, Negotiation};
use mcpl_core::ProtocolVersion;
use serde_json::{Value, json};

/// What a scripted server saw: `"GET /path"`, with the body of POSTs appended.
type Seen = Arc<Mutex<Vec<String>>>;

fn json_response(value: &Value) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], value.to_string()).into_response()
}

/// A listener on a fresh loopback port, and its origin.
async fn bind() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    (listener, origin)
}

/// Serves on `listener` the answers `route` picks from the method and path; everything it
/// gets is recorded.
fn serve(
    listener: tokio::net::TcpListener,
    route: impl Fn(&str, &str) -> Option<Response> + Clone + Send + Sync + 'static,
) -> Seen {
    serve_requests(listener, move |parts, _body| route(parts.method.as_str(), parts.uri.path()))
}

/// [`serve`] with the whole request in hand.
fn serve_requests(
    listener: tokio::net::TcpListener,
    route: impl Fn(&Parts, &[u8]) -> Option<Response> + Clone + Send + Sync + 'static,
) -> Seen {
    let seen = Seen::default();
    let log = seen.clone();
    let app = axum::Router::new().fallback(move |request: Request| {
        let route = route.clone();
        let log = log.clone();
        async move {
            let (parts, body) = request.into_parts();
            let body = axum::body::to_bytes(body, 1 << 20).await.unwrap();
            let line = format!("{} {}", parts.method, parts.uri.path());
            log.lock().unwrap().push(format!("{line} {}", String::from_utf8_lossy(&body)));
            route(&parts, &body).unwrap_or_else(|| StatusCode::NOT_FOUND.into_response())
        }
    });
    tokio::spawn(mcpl_server::http::serve(listener, app));
    seen
}

/// A complete authorization server at `origin` (whose metadata names `endpoints_at` for its
/// token and registration endpoints), protecting `resource`.
fn authorization_server(
    origin: &str,
    resource: &str,
    endpoints_at: &str,
) -> impl Fn(&str, &str) -> Option<Response> + Clone + Send + Sync + 'static {
    let (origin, resource, endpoints_at) =
        (origin.to_owned(), resource.to_owned(), endpoints_at.to_owned());
    move |method: &str, path: &str| match (method, path) {
        ("GET", "/prm") | ("GET", "/.well-known/oauth-protected-resource") => {
            Some(json_response(&json!({"resource": resource, "authorization_servers": [origin]})))
        }
        ("GET", "/.well-known/oauth-authorization-server") => Some(json_response(&json!({
            "issuer": origin,
            "authorization_endpoint": format!("{origin}/authorize"),
            "token_endpoint": format!("{endpoints_at}/token"),
            "registration_endpoint": format!("{endpoints_at}/register"),
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_post"],
        }))),
        ("POST", "/register") => Some(
            (
                StatusCode::CREATED,
                json_response(&json!({"client_id": "c", "client_secret": "the-secret"})),
            )
                .into_response(),
        ),
        ("POST", "/token") => Some(json_response(
            &json!({"access_token": "t", "token_type": "Bearer", "expires_in": 60}),
        )),
        _ => None,
    }
}

/// Records every authorization URL it is shown and declines.
#[derive(Debug, Default, Clone)]
struct Recording(Arc<Mutex<Vec<String>>>);

impl Authorizer for Recording {
    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(async move {
            self.0.lock().unwrap().push(url.to_owned());
            Err(AuthError::Interaction("declined".into()))
        })
    }
}

/// An MCP endpoint that refuses everything with `401` and `challenge`.
fn refusing(challenge: String) -> impl Fn(&str, &str) -> Option<Response> + Clone + Send + Sync {
    move |method: &str, path: &str| {
        (method == "POST" && path == "/mcp").then(|| {
            (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, challenge.clone())])
                .into_response()
        })
    }
}

async fn bounded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f).await.expect("bounded")
}

#[tokio::test]
async fn resource_metadata_on_another_origin_is_not_followed() {
    let (mcp_listener, mcp_origin) = bind().await;
    let (attacker_listener, attacker) = bind().await;
    let url = format!("{mcp_origin}/mcp");
    // The attacker's origin serves a complete authorization server, and resource metadata
    // that claims the victim's MCP endpoint as its resource.
    let attacker_seen = serve(attacker_listener, authorization_server(&attacker, &url, &attacker));
    // The MCP server points its challenge at the attacker.
    let challenge = format!(r#"Bearer resource_metadata="{attacker}/prm""#);
    serve(mcp_listener, refusing(challenge.clone()));

    let user = Recording::default();
    let oauth = Arc::new(OAuth::new(user.clone(), "http://127.0.0.1:1/callback"));
    let client = Client::new("discovery", "0.0.1");
    let outcome = bounded(client.connect(HttpTransport::new(&url).auth(oauth.clone()))).await;
    assert!(outcome.is_err());
    assert!(user.0.lock().unwrap().is_empty(), "the user was sent to {:?}", user.0.lock().unwrap());
    assert!(attacker_seen.lock().unwrap().is_empty(), "{:?}", attacker_seen.lock().unwrap());

    let refusal = bounded(oauth.handle_refusal(&url, 401, Some(&challenge), None)).await;
    match refusal {
        Err(AuthError::UrlRefused { what, url, reason }) => {
            assert_eq!((what, reason), ("resource metadata", UrlRefusal::CrossOrigin));
            assert_eq!(url, format!("{attacker}/prm"));
        }
        other => panic!("{other:?}"),
    }
    assert!(attacker_seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn secrets_are_not_sent_to_a_plain_http_token_endpoint_off_loopback() {
    // Loopback authorization server whose metadata names plain-http endpoints elsewhere
    // (TEST-NET-1: nothing listens there, and the client must not even try).
    let (listener, as_origin) = bind().await;
    let url = format!("{as_origin}/mcp");
    serve(listener, authorization_server(&as_origin, &url, "http://192.0.2.1:9"));
    let oauth = OAuth::client_credentials(
        Some(as_origin.clone()),
        ClientCredentials::confidential("c", "the-secret"),
    );
    let challenge = format!(r#"Bearer resource_metadata="{as_origin}/prm""#);
    let refusal = tokio::time::timeout(
        Duration::from_secs(5),
        oauth.handle_refusal(&url, 401, Some(&challenge), None),
    )
    .await;
    match refusal.expect("refused at once, without a connection attempt") {
        Err(AuthError::UrlRefused { what, reason, .. }) => {
            assert_eq!((what, reason), ("token endpoint", UrlRefusal::NotHttps));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_mcp_server_on_plain_http_off_loopback_gets_no_authorization() {
    let oauth = OAuth::client_credentials(None, ClientCredentials::confidential("c", "s"));
    let refusal = tokio::time::timeout(
        Duration::from_secs(5),
        oauth.handle_refusal("http://192.0.2.1:9/mcp", 401, None, None),
    )
    .await;
    match refusal.expect("refused at once, without a connection attempt") {
        Err(AuthError::UrlRefused { what, reason, .. }) => {
            assert_eq!((what, reason), ("MCP server", UrlRefusal::NotHttps));
        }
        other => panic!("{other:?}"),
    }
}

/// Plays the user's browser: requests the authorization URL and returns where it redirects.
#[derive(Debug, Default, Clone)]
struct Browser(Arc<Mutex<Vec<String>>>);

impl Authorizer for Browser {
    fn authorize<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(async move {
            self.0.lock().unwrap().push(url.to_owned());
            let http = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap();
            let response = http.get(url).send().await.unwrap();
            Ok(response.headers()[header::LOCATION].to_str().unwrap().to_owned())
        })
    }
}

/// A 2025-03-26 server with no protected resource metadata: the MCP endpoint wants the
/// token `t` (`WWW-Authenticate: Bearer` with no parameters otherwise); `oauth(path)` answers
/// its OAuth endpoints (authorization, token, registration) under `prefix`, and its
/// metadata at the root when `metadata` is set.
fn legacy_server(
    origin: &str,
    prefix: &'static str,
    metadata: bool,
) -> impl Fn(&Parts, &[u8]) -> Option<Response> + Clone + Send + Sync + 'static {
    let origin = origin.to_owned();
    move |parts: &Parts, body: &[u8]| {
        let path = parts.uri.path();
        match (parts.method.as_str(), path) {
            ("POST", "/mcp") => {
                let authorized =
                    parts.headers.get(header::AUTHORIZATION).is_some_and(|v| v == "Bearer t");
                if !authorized {
                    return Some(
                        (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")])
                            .into_response(),
                    );
                }
                let message: Value = serde_json::from_slice(body).unwrap();
                let Some(id) = message.get("id") else {
                    return Some(StatusCode::ACCEPTED.into_response());
                };
                let result = match message["method"].as_str() {
                    Some("initialize") => json!({
                        "protocolVersion": "2025-03-26", "capabilities": {"tools": {}},
                        "serverInfo": {"name": "legacy", "version": "1"},
                    }),
                    Some("tools/list") => json!({"tools": []}),
                    _ => json!({}),
                };
                Some(json_response(&json!({"jsonrpc": "2.0", "id": id, "result": result})))
            }
            ("GET", "/.well-known/oauth-authorization-server") if metadata => {
                Some(json_response(&json!({
                    "issuer": origin,
                    "authorization_endpoint": format!("{origin}{prefix}/authorize"),
                    "token_endpoint": format!("{origin}{prefix}/token"),
                    "registration_endpoint": format!("{origin}{prefix}/register"),
                    "response_types_supported": ["code"],
                    "code_challenge_methods_supported": ["S256"],
                })))
            }
            ("GET", p) if p == format!("{prefix}/authorize") => {
                let query: std::collections::HashMap<String, String> = reqwest::Url::parse(
                    &format!("http://x/?{}", parts.uri.query().unwrap_or_default()),
                )
                .unwrap()
                .query_pairs()
                .into_owned()
                .collect();
                let mut back = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
                back.query_pairs_mut()
                    .append_pair("code", "the-code")
                    .append_pair("state", &query["state"]);
                Some((StatusCode::FOUND, [(header::LOCATION, back.to_string())]).into_response())
            }
            ("POST", p) if p == format!("{prefix}/token") => Some(json_response(
                &json!({"access_token": "t", "token_type": "Bearer", "expires_in": 60}),
            )),
            ("POST", p) if p == format!("{prefix}/register") => Some(
                (
                    StatusCode::CREATED,
                    json_response(&json!({"client_id": "c", "client_secret": "s"})),
                )
                    .into_response(),
            ),
            _ => None,
        }
    }
}

/// Connects a 2025-03-26 client to `url` with OAuth; returns the paths requested in order.
async fn legacy_flow(url: &str, seen: &Seen) -> Vec<String> {
    let browser = Browser::default();
    let oauth = Arc::new(OAuth::new(browser.clone(), "http://127.0.0.1:1/callback"));
    let client = Client::new("discovery", "0.0.1")
        .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_03_26));
    bounded(client.connect(HttpTransport::new(url).auth(oauth))).await.unwrap();
    client.list_tools().await.unwrap();
    client.close().await.unwrap();
    assert_eq!(browser.0.lock().unwrap().len(), 1, "one interactive authorization");
    seen.lock()
        .unwrap()
        .iter()
        .map(|line| line.splitn(3, ' ').take(2).collect::<Vec<_>>().join(" "))
        .collect()
}

#[tokio::test]
async fn without_resource_metadata_the_server_origin_is_the_authorization_server() {
    let (listener, origin) = bind().await;
    let seen = serve_requests(listener, legacy_server(&origin, "/oauth", true));
    let paths = legacy_flow(&format!("{origin}/mcp"), &seen).await;
    for expected in [
        "GET /.well-known/oauth-authorization-server",
        "POST /oauth/register",
        "GET /oauth/authorize",
        "POST /oauth/token",
    ] {
        assert!(paths.iter().any(|p| p == expected), "{expected} missing from {paths:?}");
    }
}

#[tokio::test]
async fn without_any_metadata_the_default_endpoints_are_used() {
    let (listener, origin) = bind().await;
    let seen = serve_requests(listener, legacy_server(&origin, "", false));
    let paths = legacy_flow(&format!("{origin}/mcp"), &seen).await;
    for expected in ["POST /register", "GET /authorize", "POST /token"] {
        assert!(paths.iter().any(|p| p == expected), "{expected} missing from {paths:?}");
    }
}
