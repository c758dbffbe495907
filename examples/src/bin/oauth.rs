//! `oauth`: a client reaching an OAuth-protected MCP server, end to end in one process.
//!
//! Three parts on real sockets (ephemeral ports):
//!
//! - a minimal authorization server: its RFC 8414 metadata and a token endpoint issuing tokens
//!   with the client credentials grant to one client (`client_secret_basic`);
//! - the weather server behind `mcpl_server::http::auth::BearerAuth`, which answers `401` with
//!   the metadata URL and serves the protected resource metadata document;
//! - an `mcpl-client` with `OAuth::client_credentials`: its first request is refused, it
//!   discovers the authorization server, obtains a token and sends the request again.
//!
//! Run it with `cargo run -p mcpl-examples --bin oauth`. Interactive clients use
//! `OAuth::new(authorizer, redirect_uri)` instead (authorization code with PKCE).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::future::BoxFuture;
use mcpl_client::Client;
use mcpl_client::auth::{ClientCredentials, OAuth};
use mcpl_client::transport::HttpTransport;
use mcpl_examples::weather_server;
use mcpl_server::http::auth::{
    AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError,
};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use serde_json::{Map, json};

const CLIENT_ID: &str = "example-client";
const CLIENT_SECRET: &str = "example-secret";
/// `client_secret_basic` for the credentials above: base64 of `example-client:example-secret`.
const BASIC: &str = "Basic ZXhhbXBsZS1jbGllbnQ6ZXhhbXBsZS1zZWNyZXQ=";

/// The tokens the authorization server issued (shared with the resource server's verifier;
/// a real deployment would validate JWTs or introspect instead).
#[derive(Clone, Default)]
struct Issued {
    issuer: String,
    tokens: Arc<Mutex<HashSet<String>>>,
}

impl Issued {
    fn tokens(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.tokens.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn json(status: StatusCode, value: &serde_json::Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], value.to_string()).into_response()
}

async fn metadata(State(issued): State<Issued>) -> Response {
    json(
        StatusCode::OK,
        &json!({
            "issuer": issued.issuer,
            "token_endpoint": format!("{}/token", issued.issuer),
            "grant_types_supported": ["client_credentials"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            "scopes_supported": ["weather"],
        }),
    )
}

async fn token(State(issued): State<Issued>, headers: HeaderMap, body: String) -> Response {
    let authorized =
        headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) == Some(BASIC);
    if !authorized || !body.split('&').any(|p| p == "grant_type=client_credentials") {
        return json(StatusCode::UNAUTHORIZED, &json!({ "error": "invalid_client" }));
    }
    let token = format!("token-{}", issued.tokens().len() + 1);
    issued.tokens().insert(token.clone());
    json(
        StatusCode::OK,
        &json!({ "access_token": token, "token_type": "Bearer", "expires_in": 3600 }),
    )
}

impl TokenVerifier for Issued {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AccessToken, VerifyError>> {
        Box::pin(async move {
            if self.tokens().contains(token) {
                Ok(AccessToken::new(["weather"]).client_id(CLIENT_ID))
            } else {
                Err(VerifyError::Invalid("not issued here".into()))
            }
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The authorization server.
    let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let issuer = format!("http://{}", as_listener.local_addr()?);
    let issued = Issued { issuer: issuer.clone(), ..Issued::default() };
    let auth_server = Router::new()
        .route("/.well-known/oauth-authorization-server", get(metadata))
        .route("/token", post(token))
        .with_state(issued.clone());
    tokio::spawn(mcpl_server::http::serve(as_listener, auth_server));

    // The protected MCP server.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let mcp = StreamableHttp::new(weather_server(), HttpConfig::new()).into_router("/mcp");
    let resource = ProtectedResourceMetadata::new(url.clone())
        .authorization_server(issuer.clone())
        .scopes_supported(["weather"]);
    let app = BearerAuth::new(issued, resource).required_scopes(["weather"]).protect(mcp);
    tokio::spawn(mcpl_server::http::serve(listener, app));

    // The client.
    let oauth = OAuth::client_credentials(
        Some(issuer),
        ClientCredentials::confidential(CLIENT_ID, CLIENT_SECRET),
    );
    let client = Client::new("oauth-example", "1.0.0");
    let details = client.connect(HttpTransport::new(&url).auth(Arc::new(oauth))).await?;
    println!("connected to {} (authorized)", details.server_info.name);
    for tool in client.list_tools().await? {
        println!("tool {}", tool.name);
    }
    let mut arguments = Map::new();
    arguments.insert("city".into(), json!("Lisbon"));
    let result = client.call_tool("forecast", arguments).await?;
    println!("call forecast -> {}", serde_json::to_string(&result.content)?);
    client.close().await?;
    println!("closed");
    Ok(())
}
