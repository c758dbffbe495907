//! Every transport failure is its own error kind, with its cause kept, over real failing
//! transports: a closed port, a silent listener, servers answering `500` or garbage, a server
//! that stalls, a program that does not exist. And `Client::closed` resolves once the HTTP
//! transport knows the server is gone.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcpl_client::transport::{ChildProcess, HttpTransport, WebSocketTransport};
use mcpl_client::{Client, Negotiation};
use mcpl_core::engine::RequestOptions;
use mcpl_core::types::{Tool, ToolSchema};
use mcpl_core::{Error, ErrorKind, ProtocolVersion};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::{Server, ToolOutput};
use serde_json::{Value, json};

/// No test waits longer than this.
const GUARD: Duration = Duration::from_secs(30);

/// A loopback address nothing listens on.
fn closed_port() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// The text of `e` and all its causes.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        next = cause.source();
    }
    text
}

fn pinned_2025() -> Client {
    Client::new("c", "1").with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
}

async fn connect_err(client: &Client, transport: impl mcpl_core::Transport) -> Error {
    tokio::time::timeout(GUARD, client.connect(transport)).await.expect("hang guard").unwrap_err()
}

/// Serves `answer` (given each request's JSON body, `None` for a `GET`) on a loopback port.
async fn scripted(answer: impl Fn(Option<Value>) -> Response + Send + Sync + 'static) -> String {
    let answer = Arc::new(answer);
    let app = axum::Router::new().fallback(move |request: Request| {
        let answer = answer.clone();
        async move {
            let body = axum::body::to_bytes(request.into_body(), 1 << 20).await.unwrap();
            answer(serde_json::from_slice(&body).ok())
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(mcpl_server::http::serve(listener, app));
    url
}

fn with_type(status: StatusCode, content_type: &str, body: impl Into<Body>) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .body(body.into())
        .unwrap()
}

/// A 2025 server whose `initialize` works and whose other requests get `rest`.
fn initialize_then(
    rest: impl Fn(&Value) -> Response + Send + Sync + 'static,
) -> impl Fn(Option<Value>) -> Response + Send + Sync + 'static {
    move |message| {
        let Some(message) = message else { return StatusCode::METHOD_NOT_ALLOWED.into_response() };
        let Some(id) = message.get("id").cloned() else {
            return StatusCode::ACCEPTED.into_response();
        };
        if message["method"] == "initialize" {
            let result = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "scripted", "version": "1"}});
            let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
            return Response::builder()
                .header(header::CONTENT_TYPE, "application/json")
                .header("mcp-session-id", "s1")
                .body(Body::from(body))
                .unwrap();
        }
        rest(&message)
    }
}

#[tokio::test]
async fn a_refused_http_connection_is_connect_with_its_cause() {
    let url = format!("http://{}/mcp", closed_port());
    for client in [Client::new("c", "1"), pinned_2025()] {
        let e = connect_err(&client, HttpTransport::new(url.clone())).await;
        assert_eq!(e.kind(), ErrorKind::Connect, "{}", chain(&e));
        assert!(e.rpc_error().is_none());
        assert!(e.to_string().contains(&url), "{e}");
        let cause = chain(&e).to_ascii_lowercase();
        assert!(cause.contains("refused") || cause.contains("connect"), "{cause}");
        assert!(std::error::Error::source(&e).is_some());
    }
}

#[tokio::test]
async fn a_silent_tls_server_is_a_transport_timeout() {
    // Takes TCP connections (the kernel's backlog) and never answers the TLS handshake.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/mcp", silent.local_addr().unwrap());
    let transport = HttpTransport::new(url).connect_timeout(Duration::from_millis(300));
    let e = connect_err(&pinned_2025(), transport).await;
    assert_eq!(e.kind(), ErrorKind::TransportTimeout, "{}", chain(&e));
    assert!(matches!(e, Error::TransportTimeout { timeout: Some(_), .. }), "{e:?}");
    drop(silent);
}

#[tokio::test]
async fn an_http_error_status_is_its_status_with_the_start_of_the_body() {
    let url = scripted(|_| {
        let body = Body::from(format!("database down\n{}", "x".repeat(64 * 1024)));
        (StatusCode::INTERNAL_SERVER_ERROR, body).into_response()
    })
    .await;
    let e = connect_err(&pinned_2025(), HttpTransport::new(url)).await;
    assert_eq!(e.kind(), ErrorKind::HttpStatus, "{}", chain(&e));
    let Error::HttpStatus { status, body, .. } = &e else { panic!("{e:?}") };
    assert_eq!(*status, 500);
    assert!(body.starts_with("database down"), "{body}");
    assert_eq!(body.len(), mcpl_core::error::HTTP_BODY_SNIPPET);
    assert!(e.rpc_error().is_none());
}

#[tokio::test]
async fn garbage_and_a_wrong_content_type_are_protocol_violations() {
    let garbage = scripted(|_| with_type(StatusCode::OK, "application/json", "{not json")).await;
    let e = connect_err(&pinned_2025(), HttpTransport::new(garbage)).await;
    assert_eq!(e.kind(), ErrorKind::ProtocolViolation, "{}", chain(&e));
    assert!(std::error::Error::source(&e).is_some(), "the JSON error is kept");

    let html = scripted(|_| with_type(StatusCode::OK, "text/html", "<html>hi</html>")).await;
    let e = connect_err(&pinned_2025(), HttpTransport::new(html)).await;
    assert_eq!(e.kind(), ErrorKind::ProtocolViolation, "{}", chain(&e));
    assert!(e.to_string().contains("text/html"), "{e}");

    // An event stream that ends before the response, with no id to resume from.
    let cut = scripted(|_| with_type(StatusCode::OK, "text/event-stream", ": nothing\n\n")).await;
    let e = connect_err(&pinned_2025(), HttpTransport::new(cut)).await;
    assert_eq!(e.kind(), ErrorKind::ProtocolViolation, "{}", chain(&e));
}

/// A failure after the handshake is the transport's too, not "peer returned error -32603".
#[tokio::test]
async fn a_later_http_failure_is_not_blamed_on_the_server() {
    let url = scripted(initialize_then(|_| {
        (StatusCode::BAD_GATEWAY, "upstream unavailable").into_response()
    }))
    .await;
    let client = pinned_2025();
    tokio::time::timeout(GUARD, client.connect(HttpTransport::new(url).standalone_stream(false)))
        .await
        .unwrap()
        .unwrap();
    let e = tokio::time::timeout(GUARD, client.call_tool("echo", ())).await.unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::HttpStatus, "{}", chain(&e));
    assert!(
        matches!(&e, Error::HttpStatus { status: 502, body, .. } if body == "upstream unavailable")
    );
    assert!(e.rpc_error().is_none());
    // The server answered: the connection goes on.
    assert!(client.is_connected());
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_stalled_server_is_a_request_timeout() {
    let url = scripted(initialize_then(|message| {
        let id = message["id"].clone();
        if message["method"] == "tools/call" {
            // Headers at once, then a body that never comes.
            let stalled = futures::stream::pending::<Result<Vec<u8>, std::io::Error>>();
            return Response::builder()
                .header(header::CONTENT_TYPE, "text/event-stream")
                .body(Body::from_stream(stalled))
                .unwrap();
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "result": {}}).to_string();
        with_type(StatusCode::OK, "application/json", body)
    }))
    .await;
    let client = pinned_2025();
    tokio::time::timeout(GUARD, client.connect(HttpTransport::new(url).standalone_stream(false)))
        .await
        .unwrap()
        .unwrap();
    let options = RequestOptions::new().timeout(Duration::from_millis(300));
    let call = client.call_tool_with("echo", (), options);
    let e = tokio::time::timeout(GUARD, call).await.unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::RequestTimeout, "{}", chain(&e));
    client.ping().await.unwrap();
    client.close().await.unwrap();
}

#[tokio::test]
async fn websocket_failures_have_their_kinds() {
    let refused = WebSocketTransport::new(format!("ws://{}/ws", closed_port()));
    let e = connect_err(&Client::new("c", "1"), refused).await;
    assert_eq!(e.kind(), ErrorKind::Connect, "{}", chain(&e));
    assert!(std::error::Error::source(&e).is_some());

    // An upgrade answered with an error status: the status and the start of the body.
    let url = scripted(|_| (StatusCode::SERVICE_UNAVAILABLE, "try later").into_response()).await;
    let upgrade = WebSocketTransport::new(url.replace("http://", "ws://"));
    let e = connect_err(&Client::new("c", "1"), upgrade).await;
    assert!(
        matches!(&e, Error::HttpStatus { status: 503, body, .. } if body == "try later"),
        "{e:?}"
    );

    // A listener that never answers the upgrade.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let stuck = WebSocketTransport::new(format!("ws://{}/ws", silent.local_addr().unwrap()))
        .connect_timeout(Duration::from_millis(300));
    let e = connect_err(&Client::new("c", "1"), stuck).await;
    assert_eq!(e.kind(), ErrorKind::TransportTimeout, "{}", chain(&e));
}

#[tokio::test]
async fn a_server_program_that_cannot_start_is_connect() {
    let missing = ChildProcess::new("/nonexistent/mcpl-test-server");
    let e = connect_err(&Client::new("c", "1"), missing).await;
    assert_eq!(e.kind(), ErrorKind::Connect, "{}", chain(&e));
    let cause = std::error::Error::source(&e).unwrap().downcast_ref::<std::io::Error>();
    assert_eq!(cause.map(std::io::Error::kind), Some(std::io::ErrorKind::NotFound));
}

/// An echo server over Streamable HTTP on a runtime of its own (in its own thread), so that
/// it can be killed: its listener, connections and streams all dropped at once.
struct Killable {
    url: String,
    kill: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Killable {
    fn start() -> Killable {
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (kill, killed) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            runtime.spawn(async move {
                let server = Server::builder("killable", "1")
                    .tool(Tool::new("echo", ToolSchema::object()), |_ctx, _args| async {
                        Ok(ToolOutput::text("hi"))
                    })
                    .build();
                let config = HttpConfig::new().retry(Duration::from_millis(50));
                let app = StreamableHttp::new(server, config).into_router("/mcp");
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                url_tx.send(format!("http://{}/mcp", listener.local_addr().unwrap())).unwrap();
                mcpl_server::http::serve(listener, app).await
            });
            let _ = killed.recv();
            runtime.shutdown_background();
        });
        let url = url_rx.recv_timeout(GUARD).unwrap();
        Killable { url, kill, thread }
    }

    fn kill(self) {
        self.kill.send(()).unwrap();
        self.thread.join().unwrap();
    }
}

/// A 2025 session with its standalone stream: once the server is killed, the stream ends, it
/// cannot be reopened, and the connection ends without any request being made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_resolves_after_the_http_server_is_killed() {
    let server = Killable::start();
    let client = pinned_2025();
    let transport = HttpTransport::new(&server.url).min_retry(Duration::from_millis(20));
    tokio::time::timeout(GUARD, client.connect(transport)).await.unwrap().unwrap();
    client.call_tool("echo", ()).await.unwrap();
    let closed = client.closed();
    server.kill();
    tokio::time::timeout(GUARD, closed).await.expect("closed() resolves once the server is gone");
    assert!(!client.is_connected());
}

/// The stateless era has no stream: the first request that finds the server gone fails with
/// a transport error (not a JSON-RPC one), and the connection ends with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_resolves_once_a_request_finds_the_server_gone() {
    let server = Killable::start();
    let client = Client::new("c", "1");
    let transport = HttpTransport::new(&server.url);
    let details = tokio::time::timeout(GUARD, client.connect(transport)).await.unwrap().unwrap();
    assert!(details.is_stateless());
    client.call_tool("echo", ()).await.unwrap();
    server.kill();
    let e = tokio::time::timeout(GUARD, client.call_tool("echo", ())).await.unwrap().unwrap_err();
    // A new connection is refused, or the pooled one was reset before any response.
    assert!(matches!(e.kind(), ErrorKind::Connect | ErrorKind::Transport), "{}", chain(&e));
    assert!(e.is_unreachable() && e.rpc_error().is_none(), "{}", chain(&e));
    tokio::time::timeout(GUARD, client.closed()).await.expect("closed() resolves");
    assert!(!client.is_connected());
}
