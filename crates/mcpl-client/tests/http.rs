//! The Streamable HTTP client transport against our own server, over real sockets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpl_client::transport::HttpTransport;
use mcpl_client::{Client, Negotiation};
use mcpl_core::engine::RequestOptions;
use mcpl_core::types::{Prompt, Tool, ToolSchema};
use mcpl_core::{ErrorKind, ProtocolVersion};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::prompt::PromptOutput;
use mcpl_server::{Server, ToolOutput};
use serde_json::{Map, Value, json};

fn server() -> Server {
    Server::builder("http-test", "0.0.1")
        .instructions("call echo")
        .tool(Tool::new("echo", ToolSchema::object()), |ctx, args| async move {
            let version = ctx.protocol_version().map(|v| v.to_string()).unwrap_or_default();
            Ok(ToolOutput::text(format!("{version} {}", Value::Object(args))))
        })
        .tool(Tool::new("slow", ToolSchema::object()), |ctx, _args| async move {
            for i in 1..=3 {
                tokio::time::sleep(Duration::from_millis(50)).await;
                ctx.progress(f64::from(i), Some(3.0), None).await.ok();
            }
            Ok(ToolOutput::text("slow done"))
        })
        .tool(Tool::new("polled", ToolSchema::object()), |ctx, _args| async move {
            ctx.progress(1.0, None, None).await.ok();
            // End the response stream mid-call; the client resumes to get the result.
            assert!(ctx.close_stream());
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(ToolOutput::text("polled done"))
        })
        .tool(Tool::new("big", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("x".repeat(64 * 1024)))
        })
        .build()
}

async fn start(config: HttpConfig) -> (SocketAddr, StreamableHttp) {
    let http = StreamableHttp::new(server(), config.retry(Duration::from_millis(50)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::http::serve(listener, http.clone().into_router("/mcp")));
    (addr, http)
}

fn transport(addr: SocketAddr) -> HttpTransport {
    HttpTransport::new(format!("http://{addr}/mcp"))
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn text(result: &mcpl_core::types::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn session_lists_and_calls_tools_then_delete_ends_it() {
    let (addr, http) = start(HttpConfig::new()).await;
    let client =
        Client::new("c", "1").with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    let details = client.connect(transport(addr)).await.unwrap();
    assert_eq!(details.protocol_version, ProtocolVersion::V2025_11_25);
    assert!(!details.is_stateless());
    assert_eq!(details.server_info.name, "http-test");
    assert_eq!(details.instructions.as_deref(), Some("call echo"));
    assert_eq!(http.session_count(), 1);
    client.ping().await.unwrap();
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), 4);
    let result = client.call_tool("echo", args(json!({"a": 1}))).await.unwrap();
    assert_eq!(text(&result), r#"2025-11-25 {"a":1}"#);
    // Concurrent calls on one session.
    let (a, b) = tokio::join!(
        client.call_tool("echo", args(json!({"n": 1}))),
        client.call_tool("echo", args(json!({"n": 2})))
    );
    assert!(text(&a.unwrap()).ends_with(r#"{"n":1}"#));
    assert!(text(&b.unwrap()).ends_with(r#"{"n":2}"#));
    client.close().await.unwrap();
    // The DELETE ended the session on the server.
    for _ in 0..50 {
        if http.session_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(http.session_count(), 0);
}

#[tokio::test]
async fn progress_arrives_over_sse_and_json_mode_works_too() {
    for json_mode in [false, true] {
        let (addr, _http) = start(HttpConfig::new().json_response(json_mode)).await;
        let client = Client::new("c", "1")
            .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
        client.connect(transport(addr)).await.unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let options =
            RequestOptions::new().on_progress(move |p| sink.lock().unwrap().push(p.progress));
        let result = client.call_tool_with("slow", Map::new(), options).await.unwrap();
        assert_eq!(text(&result), "slow done");
        let seen = seen.lock().unwrap().clone();
        if !json_mode {
            assert_eq!(seen, vec![1.0, 2.0, 3.0]);
        }
        // In JSON mode the server sends progress on the standalone GET stream, racing the
        // response; whatever arrived in time was delivered.
        assert!(seen.len() <= 3, "{seen:?}");
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_stream_that_ends_early_is_resumed_with_last_event_id() {
    let (addr, _http) = start(HttpConfig::new()).await;
    let client =
        Client::new("c", "1").with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    client.connect(transport(addr)).await.unwrap();
    let result = client.call_tool("polled", Map::new()).await.unwrap();
    assert_eq!(text(&result), "polled done");
    client.close().await.unwrap();
}

#[tokio::test]
async fn auto_negotiation_picks_the_stateless_era_and_calls_tools() {
    let (addr, http) = start(HttpConfig::new()).await;
    let client = Client::new("auto-client", "2");
    let details = client.connect(transport(addr)).await.unwrap();
    assert_eq!(details.protocol_version, ProtocolVersion::V2026_07_28);
    assert!(details.is_stateless());
    assert!(details.supported_versions.iter().any(|v| v == "2026-07-28"));
    assert!(details.supported_versions.iter().any(|v| v == "2025-11-25"));
    assert_eq!(details.server_info.name, "http-test");
    assert!(details.capabilities.tools.is_some());
    client.ping().await.unwrap();
    assert_eq!(client.list_tools().await.unwrap().len(), 4);
    let result = client.call_tool("echo", args(json!({"x": "y"}))).await.unwrap();
    assert_eq!(text(&result), r#"2026-07-28 {"x":"y"}"#);
    // Progress rides on the request's SSE stream in this era too.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let options = RequestOptions::new().on_progress(move |p| sink.lock().unwrap().push(p.progress));
    let result = client.call_tool_with("slow", Map::new(), options).await.unwrap();
    assert_eq!(text(&result), "slow done");
    assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0, 3.0]);
    let err = client.call_tool("missing", Map::new()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Rpc);
    // No session was ever created.
    assert_eq!(http.session_count(), 0);
    client.close().await.unwrap();
}

#[tokio::test]
async fn pinned_stateful_version_uses_initialize() {
    let (addr, http) = start(HttpConfig::new()).await;
    let client = Client::new("c", "1").with_protocol_version(ProtocolVersion::V2025_06_18).unwrap();
    let details = client.connect(transport(addr)).await.unwrap();
    assert_eq!(details.protocol_version, ProtocolVersion::V2025_06_18);
    assert!(details.supported_versions.is_empty());
    assert_eq!(http.session_count(), 1);
    let result = client.call_tool("echo", Map::new()).await.unwrap();
    assert_eq!(text(&result), "2025-06-18 {}");
    client.close().await.unwrap();
}

#[tokio::test]
async fn pinned_stateless_version_uses_discover() {
    let (addr, _http) = start(HttpConfig::new()).await;
    let client =
        Client::new("c", "1").with_negotiation(Negotiation::pinned(ProtocolVersion::V2026_07_28));
    let details = client.connect(transport(addr)).await.unwrap();
    assert!(details.is_stateless());
    client.close().await.unwrap();
}

#[tokio::test]
async fn an_expired_session_is_renewed_with_fresh_server_capabilities() {
    let server = server();
    let config = HttpConfig::new()
        .session_idle_timeout(Duration::from_millis(200))
        .retry(Duration::from_millis(50));
    let http = StreamableHttp::new(server.clone(), config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::http::serve(listener, http.clone().into_router("/mcp")));
    let client =
        Client::new("c", "1").with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    client.connect(transport(addr).standalone_stream(false)).await.unwrap();
    assert!(client.server().unwrap().capabilities.prompts.is_none());
    // The server gains prompts, then forgets the idle session.
    server
        .prompts_mut()
        .replace(Prompt::new("p"), |_ctx, _args| async move { Ok(PromptOutput::user_text("hi")) });
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(http.session_count(), 0);
    // The next call gets a 404: the transport initializes again and sends the call once more.
    let result = client.call_tool("echo", args(json!({"a": 2}))).await.unwrap();
    assert_eq!(text(&result), r#"2025-11-25 {"a":2}"#);
    assert!(client.is_connected());
    assert_eq!(http.session_count(), 1);
    // The client's view of the server was refreshed from the new `initialize` result.
    assert!(client.server().unwrap().capabilities.prompts.is_some());
    assert_eq!(client.list_prompts().await.unwrap()[0].name, "p");
    client.close().await.unwrap();
}

#[tokio::test]
async fn an_oversized_response_is_a_typed_error_and_the_connection_survives() {
    let (addr, _http) = start(HttpConfig::new()).await;
    for json_mode in [false, true] {
        let (addr, _http) = if json_mode {
            start(HttpConfig::new().json_response(true)).await
        } else {
            (addr, _http.clone())
        };
        let client = Client::new("c", "1");
        client.connect(transport(addr).max_response_size(16 * 1024)).await.unwrap();
        let err = client.call_tool("big", Map::new()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::MessageTooLarge, "{err}");
        client.call_tool("echo", Map::new()).await.unwrap();
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn an_unreachable_server_fails_to_connect() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let client = Client::new("c", "1");
    let err = client.connect(transport(addr)).await.unwrap_err();
    assert!(!client.is_connected());
    drop(err);
}

#[tokio::test]
async fn an_authorization_challenge_reaches_the_caller_with_its_status_and_header() {
    use axum::http::{HeaderValue, StatusCode, header};
    use axum::response::IntoResponse;
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(|| async {
            let mut r = (StatusCode::UNAUTHORIZED, r#"{"error":"invalid_token"}"#).into_response();
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(
                    r#"Bearer resource_metadata="http://x/.well-known/oauth-protected-resource""#,
                ),
            );
            r
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client =
        Client::new("c", "1").with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    let err = client.connect(HttpTransport::new(format!("http://{addr}/mcp"))).await.unwrap_err();
    // The transport's failure, not a JSON-RPC error the server never sent.
    assert_eq!(err.kind(), ErrorKind::HttpStatus, "{err}");
    assert!(err.rpc_error().is_none());
    let mcpl_core::Error::HttpStatus { status, body, challenge } = &err else { panic!("{err:?}") };
    assert_eq!(*status, 401);
    assert_eq!(body, r#"{"error":"invalid_token"}"#);
    assert!(challenge.as_deref().unwrap().contains("resource_metadata="));
    assert!(!client.is_connected());
}

/// A server whose `held` tool answers only once the test releases it, and counts the held
/// calls whose handler was dropped before answering (their client went away).
fn holding_server(release: Arc<tokio::sync::Notify>, dropped: Arc<Mutex<u32>>) -> Server {
    struct Dropped(Arc<Mutex<u32>>, bool);
    impl Drop for Dropped {
        fn drop(&mut self) {
            if !self.1 {
                *self.0.lock().unwrap() += 1;
            }
        }
    }
    Server::builder("holding", "0.0.1")
        .tool(Tool::new("held", ToolSchema::object()), move |_ctx, _args| {
            let (release, dropped) = (release.clone(), dropped.clone());
            async move {
                let mut guard = Dropped(dropped, false);
                release.notified().await;
                guard.1 = true;
                Ok(ToolOutput::text("released"))
            }
        })
        .tool(Tool::new("quick", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("quick"))
        })
        .build()
}

async fn start_holding(
    version: ProtocolVersion,
) -> (Arc<Client>, Arc<tokio::sync::Notify>, Arc<Mutex<u32>>) {
    let (release, dropped) = (Arc::new(tokio::sync::Notify::new()), Arc::new(Mutex::new(0)));
    let http =
        StreamableHttp::new(holding_server(release.clone(), dropped.clone()), HttpConfig::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::http::serve(listener, http.into_router("/mcp")));
    let client = Client::new("c", "1").with_negotiation(Negotiation::pinned(version));
    client.connect(transport(addr)).await.unwrap();
    (Arc::new(client), release, dropped)
}

#[tokio::test]
async fn a_call_waiting_for_its_answer_holds_up_no_other_call() {
    for version in [ProtocolVersion::V2026_07_28, ProtocolVersion::V2025_11_25] {
        let (client, release, _dropped) = start_holding(version).await;
        let held = tokio::spawn({
            let client = client.clone();
            async move { client.call_tool("held", ()).await.unwrap() }
        });
        // Sent while the first call's POST waits for its answer: answered at once.
        let quick = tokio::time::timeout(Duration::from_secs(10), client.call_tool("quick", ()))
            .await
            .expect("a call held up by another")
            .unwrap();
        assert_eq!(text(&quick), "quick");
        assert!(!held.is_finished());
        release.notify_one();
        let held = tokio::time::timeout(Duration::from_secs(10), held).await.unwrap().unwrap();
        assert_eq!(text(&held), "released");
    }
}

#[tokio::test]
async fn closing_ends_the_posts_of_calls_still_waiting() {
    let (client, _release, dropped) = start_holding(ProtocolVersion::V2026_07_28).await;
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.call_tool("held", ()).await })
        })
        .collect();
    // Every call reached its handler (or at least its POST is out) before the close.
    tokio::time::sleep(Duration::from_millis(200)).await;
    tokio::time::timeout(Duration::from_secs(10), client.close()).await.unwrap().unwrap();
    for call in calls {
        let outcome = tokio::time::timeout(Duration::from_secs(10), call).await.unwrap().unwrap();
        assert_eq!(outcome.unwrap_err().kind(), ErrorKind::ConnectionClosed);
    }
    // The POSTs ended with the transport: the server sees its clients gone and drops the
    // handlers that waited.
    for _ in 0..200 {
        if *dropped.lock().unwrap() == 3 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("handlers dropped: {} of 3", dropped.lock().unwrap());
}

/// Many callers on two threads at once, in either era: each gets its own answer (their POSTs
/// start on their own tasks, side by side), and the connection serves on after them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_each_get_their_own_answer_in_both_eras() {
    let (addr, _http) = start(HttpConfig::new()).await;
    for version in [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28] {
        let client = Client::new("c", "1").with_protocol_version(version).unwrap();
        client.connect(transport(addr)).await.unwrap();
        let client = Arc::new(client);
        let calls: Vec<_> = (0..64)
            .map(|i| {
                let client = client.clone();
                tokio::spawn(async move {
                    let result = client.call_tool("echo", args(json!({ "n": i }))).await.unwrap();
                    (i, text(&result))
                })
            })
            .collect();
        for call in calls {
            let (i, text) = call.await.unwrap();
            assert_eq!(text, format!("{version} {{\"n\":{i}}}"));
        }
        // The connection still serves calls after the burst.
        let after = client.call_tool("echo", args(json!({ "n": "after" }))).await.unwrap();
        assert_eq!(text(&after), format!("{version} {{\"n\":\"after\"}}"));
        client.close().await.unwrap();
    }
}
