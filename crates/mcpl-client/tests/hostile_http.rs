//! The HTTP transport against scripted, misbehaving servers over real sockets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcpl_client::transport::HttpTransport;
use mcpl_client::{Client, Negotiation};
use mcpl_core::ProtocolVersion;
use serde_json::{Value, json};

/// What the scripted server does with one request (its method and JSON body).
type Script = Arc<dyn Fn(&Method, Option<&Value>) -> Response + Send + Sync>;

/// Serves `script` on a fresh loopback port; returns the endpoint URL and how many `GET`s
/// arrived.
async fn scripted(script: Script) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let gets = Arc::new(AtomicUsize::new(0));
    let counted = gets.clone();
    let app = axum::Router::new().fallback(move |request: Request| {
        let script = script.clone();
        let counted = counted.clone();
        async move {
            let method = request.method().clone();
            if method == Method::GET {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            let body = axum::body::to_bytes(request.into_body(), 1 << 20).await.unwrap();
            let message: Option<Value> = serde_json::from_slice(&body).ok();
            script(&method, message.as_ref())
        }
    });
    tokio::spawn(mcpl_server::http::serve(listener, app));
    (url, gets)
}

fn json_answer(id: &Value, result: Value) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .header("mcp-session-id", "s1")
        .body(Body::from(body))
        .unwrap()
}

/// A 2025 server: `initialize` gets a session, notifications `202`, `GET` what `stream`
/// returns, any other request an empty result.
fn session_server(stream: impl Fn() -> Response + Send + Sync + 'static) -> Script {
    Arc::new(move |method, message| {
        if method == Method::GET {
            return stream();
        }
        if method == Method::DELETE {
            return StatusCode::OK.into_response();
        }
        let Some(message) = message else { return StatusCode::BAD_REQUEST.into_response() };
        let Some(id) = message.get("id") else { return StatusCode::ACCEPTED.into_response() };
        if message["method"] == "initialize" {
            return json_answer(
                id,
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "scripted", "version": "1"},
                }),
            );
        }
        json_answer(id, json!({}))
    })
}

fn sse(body: &'static str) -> Response {
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from(body))
        .unwrap()
}

fn pinned_2025() -> Client {
    Client::new("hostile", "0.0.1")
        .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
}

#[tokio::test]
async fn an_sse_retry_of_zero_does_not_make_the_client_reconnect_in_a_loop() {
    // Every standalone stream says `retry: 0` and ends at once, empty.
    let (url, gets) = scripted(session_server(|| sse("retry: 0\n\n"))).await;
    let client = pinned_2025();
    client.connect(HttpTransport::new(&url)).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let n = gets.load(Ordering::SeqCst);
    // The floor on the delay and the bounded attempts: a handful, not thousands.
    assert!((1..=6).contains(&n), "{n} GETs in 2 s");
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_stream_that_primes_and_ends_with_retry_zero_is_reopened_at_a_bounded_rate() {
    // A priming event each time: the stream makes progress, so the client keeps reopening it,
    // but no faster than the floor allows.
    let (url, gets) = scripted(session_server(|| sse("retry: 0\nid: 1\ndata:\n\n"))).await;
    let client = pinned_2025();
    client.connect(HttpTransport::new(&url)).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let n = gets.load(Ordering::SeqCst);
    assert!((2..=12).contains(&n), "{n} GETs in 2 s");
    client.close().await.unwrap();
}

#[allow(dead_code)]
type Recorded = Arc<Mutex<Vec<Value>>>;
