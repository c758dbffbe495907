//! Bearer-token protection of the HTTP endpoint over real sockets: challenges, scopes, the
//! protected resource metadata document.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use mcpl_server::Server;
use mcpl_server::http::auth::{
    AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError,
};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use serde_json::{Value, json};

struct Tokens;

impl TokenVerifier for Tokens {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AccessToken, VerifyError>> {
        Box::pin(async move {
            match token {
                "good" => Ok(AccessToken::new(["mcp:tools", "mcp:read"]).client_id("c1")),
                "narrow" => Ok(AccessToken::new(["mcp:read"])),
                "stale" => Ok(AccessToken::new(["mcp:tools"])
                    .expires_at(SystemTime::now() - Duration::from_secs(60))),
                "flaky" => Err(VerifyError::Unavailable("introspection down".into())),
                _ => Err(VerifyError::Invalid("unknown".into())),
            }
        })
    }
}

/// Starts a protected server; returns its base URL (`http://127.0.0.1:port`).
async fn start() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = Server::builder("auth-test", "0.0.1").build();
    let mcp = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp");
    let metadata = ProtectedResourceMetadata::new(format!("{base}/mcp"))
        .authorization_server("https://as.example.com")
        .scopes_supported(["mcp:tools", "mcp:read"]);
    let app = BearerAuth::new(Tokens, metadata).required_scopes(["mcp:tools"]).protect(mcp);
    tokio::spawn(mcpl_server::http::serve(listener, app));
    base
}

fn initialize() -> String {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": { "name": "t", "version": "1" }
        }
    })
    .to_string()
}

async fn post(base: &str, token: Option<&str>) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize());
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    request.send().await.unwrap()
}

fn challenge(response: &reqwest::Response) -> String {
    response.headers().get("www-authenticate").unwrap().to_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_request_without_a_token_is_challenged_with_the_metadata_url_and_scope() {
    let base = start().await;
    let response = post(&base, None).await;
    assert_eq!(response.status(), 401);
    let value = challenge(&response);
    assert!(value.starts_with("Bearer "), "{value}");
    assert!(
        value.contains(&format!(
            "resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
        )),
        "{value}"
    );
    assert!(value.contains("scope=\"mcp:tools\""), "{value}");
    assert!(!value.contains("error="), "no error code without credentials: {value}");
}

#[tokio::test]
async fn the_metadata_document_is_public() {
    let base = start().await;
    let response =
        reqwest::get(format!("{base}/.well-known/oauth-protected-resource/mcp")).await.unwrap();
    assert_eq!(response.status(), 200);
    let doc: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(doc["resource"], format!("{base}/mcp"));
    assert_eq!(doc["authorization_servers"], json!(["https://as.example.com"]));
    assert_eq!(doc["scopes_supported"], json!(["mcp:tools", "mcp:read"]));
    assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
}

#[tokio::test]
async fn invalid_and_expired_tokens_get_invalid_token() {
    let base = start().await;
    for token in ["forged", "stale"] {
        let response = post(&base, Some(token)).await;
        assert_eq!(response.status(), 401, "{token}");
        let value = challenge(&response);
        assert!(value.contains("error=\"invalid_token\""), "{token}: {value}");
        assert!(value.contains("resource_metadata="), "{token}: {value}");
    }
}

#[tokio::test]
async fn a_token_without_the_required_scope_gets_insufficient_scope() {
    let base = start().await;
    let response = post(&base, Some("narrow")).await;
    assert_eq!(response.status(), 403);
    let value = challenge(&response);
    assert!(value.contains("error=\"insufficient_scope\""), "{value}");
    assert!(value.contains("scope=\"mcp:tools\""), "{value}");
    let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(body["error"], "insufficient_scope");
}

#[tokio::test]
async fn a_verifier_outage_is_503_not_401() {
    let base = start().await;
    let response = post(&base, Some("flaky")).await;
    assert_eq!(response.status(), 503);
    assert!(response.headers().get("www-authenticate").is_none());
}

#[tokio::test]
async fn a_valid_token_reaches_the_mcp_endpoint() {
    let base = start().await;
    let response = post(&base, Some("good")).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("mcp-session-id").is_some());
    let text = response.text().await.unwrap();
    assert!(text.contains("\"protocolVersion\""), "{text}");
    // The scheme is case-insensitive.
    let response = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", "bearer good")
        .body(initialize())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}
