#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! An MCPL host client (`with_mcpl`, `Negotiation::Auto`) tries `initialize` first, where MCPL
//! lives, and reaches a server that only speaks the stateless (2026-07-28) era with
//! `server/discover`, as plain MCP: over TCP against a scripted server, and over Streamable
//! HTTP against an `mcpl-server` whose endpoint refuses the 2025 era.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use mcpl_client::Client;
use mcpl_client::mcpl::{HostPolicy, McplHost};
use mcpl_client::transport::HttpTransport;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::transport::lines::LineTransport;
use mcpl_core::types::{ContentBlock, Tool, ToolSchema};
use mcpl_core::{Engine, ErrorKind, ProtocolVersion};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::{Server, ToolOutput};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};

/// Generous hang guard only.
const GUARD: Duration = Duration::from_secs(30);

type Log = Arc<Mutex<Vec<(String, Value)>>>;

/// A scripted server over TCP lines: `initialize` and `server/discover` answer as `script`
/// says, `tools/list` lists one tool; every request is logged.
async fn scripted(
    initialize: Result<Value, ErrorObject>,
    discover: Result<Value, ErrorObject>,
) -> (std::net::SocketAddr, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log: Log = Arc::default();
    let engine = Engine::new();
    for (method, answer) in [
        ("initialize", initialize),
        ("server/discover", discover),
        (
            "tools/list",
            Ok(json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}],
                                 "resultType": "complete"})),
        ),
    ] {
        let log = log.clone();
        engine.on_request(method, move |_ctx, params| {
            log.lock().unwrap().push((method.to_owned(), params.unwrap_or_default()));
            let answer = answer.clone();
            async move { answer }
        });
    }
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (r, w) = stream.into_split();
        let _peer = engine.connect(LineTransport::new(r, w)).await.unwrap();
        std::future::pending::<()>().await;
    });
    (addr, log)
}

fn discover_result() -> Value {
    json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
           "resultType": "complete",
           "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "stateless", "version": "1"}}})
}

async fn connect_tcp(
    client: &Client,
    addr: std::net::SocketAddr,
) -> mcpl_core::Result<mcpl_client::ServerDetails> {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (r, w) = stream.into_split();
    tokio::time::timeout(GUARD, client.connect(LineTransport::new(r, w))).await.expect("hang")
}

fn methods(log: &Log) -> Vec<String> {
    log.lock().unwrap().iter().map(|(m, _)| m.clone()).collect()
}

#[tokio::test]
async fn an_mcpl_host_reaches_a_stateless_only_server_as_plain_mcp() {
    let unknown = Err(ErrorObject::method_not_found("initialize"));
    let (addr, log) = scripted(unknown, Ok(discover_result())).await;
    let host = McplHost::new(HostPolicy::default());
    let client = Client::builder("host", "1").with_mcpl(host.clone()).build();
    let details = connect_tcp(&client, addr).await.unwrap();
    assert_eq!(details.protocol_version, ProtocolVersion::V2026_07_28);
    assert_eq!(details.server_info.name, "stateless");
    // No MCPL on this connection.
    assert_eq!(host.status(), None);
    assert!(!host.is_ready());
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools[0].name, "echo");
    assert_eq!(methods(&log), ["initialize", "server/discover", "tools/list"]);
    // The stateless era never sees the MCPL advertisement (it lives on `initialize`).
    let entries = log.lock().unwrap().clone();
    let initialize = &entries[0].1;
    assert!(initialize["capabilities"]["experimental"]["mcpl"].is_object(), "{initialize}");
    for (method, params) in &entries[1..] {
        let caps = &params["_meta"]["io.modelcontextprotocol/clientCapabilities"];
        assert!(caps.is_object(), "{method}: {params}");
        assert!(caps["experimental"]["mcpl"].is_null(), "{method}: {params}");
    }
    client.close().await.unwrap();
}

#[tokio::test]
async fn when_both_eras_fail_the_error_of_the_era_the_server_speaks_is_returned() {
    // `initialize` is known but fails; `server/discover` is unknown: the initialize error.
    let broken = Err(ErrorObject::internal("the database is down"));
    let (addr, log) = scripted(broken, Err(ErrorObject::method_not_found("server/discover"))).await;
    let client =
        Client::builder("host", "1").with_mcpl(McplHost::new(HostPolicy::default())).build();
    let err = connect_tcp(&client, addr).await.unwrap_err();
    assert!(err.rpc_error().is_some_and(|o| o.message.contains("the database is down")), "{err}");
    assert_eq!(methods(&log), ["initialize", "server/discover"]);

    // `initialize` is unknown; `server/discover` fails: the discover error.
    let unknown = Err(ErrorObject::method_not_found("initialize"));
    let (addr, _log) = scripted(unknown, Err(ErrorObject::internal("not today"))).await;
    let client =
        Client::builder("host", "1").with_mcpl(McplHost::new(HostPolicy::default())).build();
    let err = connect_tcp(&client, addr).await.unwrap_err();
    assert!(err.rpc_error().is_some_and(|o| o.message.contains("not today")), "{err}");
}

/// Refuses every 2025-era POST (no stateless-era `MCP-Protocol-Version`) as a server that only
/// speaks 2026-07-28 does: `400` with `-32022` naming the versions it speaks.
async fn stateless_only(request: Request, next: Next) -> Response {
    let stateless = request
        .headers()
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == "2026-07-28");
    if stateless {
        return next.run(request).await;
    }
    let (_, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
    let id = serde_json::from_slice::<Value>(&bytes).ok().and_then(|v| v.get("id").cloned());
    let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022,
        "message": "Unsupported protocol version",
        "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"}}});
    let mut response = Response::new(Body::from(error.to_string()));
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response.headers_mut().insert("content-type", "application/json".parse().unwrap());
    response.into_response()
}

#[tokio::test]
async fn over_http_a_stateless_only_endpoint_is_reached_without_mcpl() {
    let server = Server::builder("echo", "1.0.0")
        .tool(Tool::new("echo", ToolSchema::object()), |_ctx, args| async move {
            let text = args.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
            Ok(ToolOutput::text(text))
        })
        .build();
    let app = StreamableHttp::new(server, HttpConfig::new())
        .into_router("/mcp")
        .layer(axum::middleware::from_fn(stateless_only));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(mcpl_server::http::serve(listener, app));

    let host = McplHost::new(HostPolicy::default());
    let client = Client::builder("host", "1").with_mcpl(host.clone()).build();
    let details = tokio::time::timeout(GUARD, client.connect(HttpTransport::new(url.clone())))
        .await
        .expect("hang")
        .unwrap();
    assert!(details.is_stateless());
    assert_eq!(host.status(), None);
    let args = json!({"text": "hi"}).as_object().cloned().unwrap();
    let result = client.call_tool("echo", args).await.unwrap();
    assert_eq!(result.content, [ContentBlock::text("hi")]);
    client.close().await.unwrap();

    // Pinned to the 2025 era, the same server is refused with its versions.
    let pinned = Client::builder("host", "1")
        .with_negotiation(mcpl_client::Negotiation::pinned(ProtocolVersion::V2025_11_25))
        .with_mcpl(McplHost::new(HostPolicy::default()))
        .build();
    let err = tokio::time::timeout(GUARD, pinned.connect(HttpTransport::new(url)))
        .await
        .expect("hang")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnsupportedProtocolVersion, "{err}");
}
