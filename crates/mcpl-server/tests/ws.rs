//! The WebSocket endpoint over real sockets, driven by a raw tungstenite client: framing,
//! binary frames, oversized messages, Host/Origin guard, idle timeout.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use mcpl_core::types::{Tool, ToolSchema};
use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
use mcpl_server::{Server, ToolOutput};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// Hang guard only: nothing here is expected to take long.
const GUARD: Duration = Duration::from_secs(30);

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

fn server() -> Server {
    Server::builder("ws-test", "0.0.1")
        .tool(Tool::new("echo", ToolSchema::object()), |_ctx, args| async move {
            Ok(ToolOutput::text(Value::Object(args).to_string()))
        })
        .build()
}

async fn start(config: WsConfig) -> (SocketAddr, WebSocketEndpoint) {
    let endpoint = WebSocketEndpoint::new(server(), config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::ws::serve(listener, endpoint.clone().into_router("/ws")));
    (addr, endpoint)
}

async fn connect(addr: SocketAddr) -> Ws {
    tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await.unwrap().0
}

/// The next text frame as JSON, skipping pings and pongs.
async fn next_json(ws: &mut Ws) -> Value {
    loop {
        let message = tokio::time::timeout(GUARD, ws.next()).await.expect("hang guard");
        match message {
            Some(Ok(Message::Text(text))) => return serde_json::from_str(text.as_str()).unwrap(),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            other => panic!("expected a text frame, got {other:?}"),
        }
    }
}

async fn send(ws: &mut Ws, text: &str) {
    ws.send(Message::Text(text.into())).await.unwrap();
}

fn initialize(id: u64) -> String {
    // Pretty-printed on purpose: one message over several lines in one frame.
    serde_json::to_string_pretty(&json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}
        }
    }))
    .unwrap()
}

async fn initialized(addr: SocketAddr) -> Ws {
    let mut ws = connect(addr).await;
    send(&mut ws, &initialize(1)).await;
    let reply = next_json(&mut ws).await;
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["result"]["protocolVersion"], "2025-11-25");
    send(&mut ws, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    ws
}

/// Waits, bounded, until the close frame arrives; returns its code and reason.
async fn close_frame(ws: &mut Ws) -> (CloseCode, String) {
    loop {
        let message = tokio::time::timeout(GUARD, ws.next()).await.expect("hang guard");
        match message {
            Some(Ok(Message::Close(Some(frame)))) => {
                return (frame.code, frame.reason.as_str().to_owned());
            }
            Some(Ok(Message::Close(None))) => return (CloseCode::Status, String::new()),
            Some(Ok(_)) => continue,
            other => panic!("expected a close frame, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn pretty_printed_frames_binary_frames_and_invalid_json() {
    let (addr, endpoint) = start(WsConfig::new()).await;
    let mut ws = initialized(addr).await;
    assert_eq!(endpoint.connection_count(), 1);

    // A binary frame is ignored: the next answer is the call's.
    ws.send(Message::Binary(br#"{"jsonrpc":"2.0","id":99,"method":"ping"}"#.to_vec().into()))
        .await
        .unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "line one\nline two"}}});
    send(&mut ws, &serde_json::to_string_pretty(&call).unwrap()).await;
    let reply = next_json(&mut ws).await;
    assert_eq!(reply["id"], 2, "the binary frame got no answer: {reply}");
    let text: Value =
        serde_json::from_str(reply["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["text"], "line one\nline two");

    // Not JSON: a parse error with a null id; the connection goes on.
    send(&mut ws, "{oops").await;
    let reply = next_json(&mut ws).await;
    assert_eq!(reply["error"]["code"], -32700);
    assert_eq!(reply["id"], Value::Null);

    // Two messages in one frame are not split on the newline: the frame is invalid.
    send(
        &mut ws,
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}",
    )
    .await;
    let reply = next_json(&mut ws).await;
    assert_eq!(reply["error"]["code"], -32700);

    send(&mut ws, r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#).await;
    let reply = next_json(&mut ws).await;
    assert_eq!(reply, json!({"jsonrpc": "2.0", "id": 5, "result": {}}));

    ws.close(None).await.unwrap();
    let deadline = tokio::time::Instant::now() + GUARD;
    while endpoint.connection_count() > 0 {
        assert!(tokio::time::Instant::now() < deadline, "the connection was never released");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn requests_before_initialize_are_refused_and_a_connection_is_a_session() {
    let (addr, _endpoint) = start(WsConfig::new()).await;
    let mut ws = connect(addr).await;
    send(&mut ws, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).await;
    let reply = next_json(&mut ws).await;
    assert_eq!(reply["error"]["code"], -32600);
    send(&mut ws, &initialize(2)).await;
    assert_eq!(next_json(&mut ws).await["id"], 2);
    send(&mut ws, &initialize(3)).await;
    assert_eq!(next_json(&mut ws).await["error"]["code"], -32600, "one initialize per connection");
    // A new connection is a new session: it initializes again.
    let mut other = connect(addr).await;
    send(&mut other, &initialize(1)).await;
    assert_eq!(next_json(&mut other).await["result"]["serverInfo"]["name"], "ws-test");
}

#[tokio::test]
async fn an_oversized_message_closes_its_connection_with_1009_and_the_server_lives_on() {
    let (addr, endpoint) = start(WsConfig::new().max_message_size(1024)).await;
    let mut ws = initialized(addr).await;
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"echo","arguments":{{"x":"{}"}}}}}}"#,
        "x".repeat(4096)
    );
    // The server may close before the whole frame is written.
    let _ = ws.send(Message::Text(big.into())).await;
    // First a JSON-RPC error that says why (no id: the message was never read)...
    let reply = next_json(&mut ws).await;
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert_eq!(reply["id"], Value::Null);
    assert!(reply["error"]["message"].as_str().unwrap().contains("1024"), "{reply}");
    // ...then the close, with 1009.
    let (code, reason) = close_frame(&mut ws).await;
    assert_eq!(code, CloseCode::Size);
    assert_eq!(reason, "message too big");
    // The server still serves other connections.
    let mut again = initialized(addr).await;
    send(&mut again, r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#).await;
    assert_eq!(next_json(&mut again).await["result"], json!({}));
    assert!(endpoint.connection_count() >= 1);
}

#[tokio::test]
async fn a_message_at_the_limit_is_accepted() {
    let (addr, _endpoint) = start(WsConfig::new().max_message_size(200)).await;
    let mut ws = connect(addr).await;
    let mut ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_owned();
    ping.push_str(&" ".repeat(200 - ping.len()));
    assert_eq!(ping.len(), 200);
    send(&mut ws, &ping).await;
    assert_eq!(next_json(&mut ws).await["id"], 1);
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused_with_403() {
    let (addr, endpoint) = start(WsConfig::new().allowed_origins(["https://app.example"])).await;
    let refused = [("host", "evil.example"), ("origin", "https://evil.example")];
    for (name, value) in refused {
        let mut request = format!("ws://{addr}/ws").into_client_request().unwrap();
        request.headers_mut().insert(name, value.parse().unwrap());
        match tokio_tungstenite::connect_async(request).await {
            Err(tungstenite::Error::Http(response)) => {
                assert_eq!(response.status(), 403, "{name}: {value}");
            }
            other => panic!("{name}: {value} was not refused: {other:?}"),
        }
    }
    assert_eq!(endpoint.connection_count(), 0);
    // Listed origins and same-host origins pass.
    for origin in ["https://app.example", "http://localhost:1234"] {
        let mut request = format!("ws://{addr}/ws").into_client_request().unwrap();
        request.headers_mut().insert("origin", origin.parse().unwrap());
        assert!(tokio_tungstenite::connect_async(request).await.is_ok(), "{origin}");
    }
    // With the guard turned off, any host passes.
    let (open, _) = start(WsConfig::new().allow_any_host()).await;
    let mut request = format!("ws://{open}/ws").into_client_request().unwrap();
    request.headers_mut().insert("host", "mcp.example".parse().unwrap());
    assert!(tokio_tungstenite::connect_async(request).await.is_ok());
}

#[tokio::test]
async fn only_get_upgrades() {
    let (addr, _endpoint) = start(WsConfig::new()).await;
    let post = reqwest::Client::new().post(format!("http://{addr}/ws")).send().await.unwrap();
    assert_eq!(post.status(), 405);
    let plain_get = reqwest::Client::new().get(format!("http://{addr}/ws")).send().await.unwrap();
    assert!(plain_get.status().is_client_error(), "{}", plain_get.status());
}

#[tokio::test]
async fn a_silent_connection_is_closed_after_the_idle_timeout() {
    let idle = Duration::from_millis(300);
    let (addr, endpoint) = start(WsConfig::new().idle_timeout(Some(idle))).await;
    let mut ws = connect(addr).await;
    let (code, reason) = close_frame(&mut ws).await;
    assert_eq!(code, CloseCode::Normal);
    assert_eq!(reason, "idle timeout");
    let deadline = tokio::time::Instant::now() + GUARD;
    while endpoint.connection_count() > 0 {
        assert!(tokio::time::Instant::now() < deadline, "the connection was never released");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn pings_are_answered_and_the_server_can_ping() {
    let (addr, _endpoint) =
        start(WsConfig::new().ping_every(Some(Duration::from_millis(20))).idle_timeout(None)).await;
    let mut ws = connect(addr).await;
    ws.send(Message::Ping(b"hi".to_vec().into())).await.unwrap();
    let (mut pong, mut ping) = (false, false);
    while !(pong && ping) {
        let message = tokio::time::timeout(GUARD, ws.next()).await.expect("hang guard");
        match message {
            Some(Ok(Message::Pong(payload))) => {
                assert_eq!(&payload[..], b"hi");
                pong = true;
            }
            Some(Ok(Message::Ping(_))) => ping = true,
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn connections_beyond_the_limit_get_503() {
    let (addr, _endpoint) = start(WsConfig::new().max_connections(1)).await;
    let _first = connect(addr).await;
    match tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await {
        Err(tungstenite::Error::Http(response)) => assert_eq!(response.status(), 503),
        other => panic!("the second connection was not refused: {other:?}"),
    }
}

/// A stateless (2026-07-28) request of `method` with `params`, its client described in `_meta`.
fn stateless(id: Value, method: &str, mut params: Value) -> String {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

#[tokio::test]
async fn a_stateless_client_gets_listen_acknowledgements_and_list_changes() {
    let server = server();
    let endpoint = WebSocketEndpoint::new(server.clone(), WsConfig::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::ws::serve(listener, endpoint.into_router("/ws")));
    let mut ws = connect(addr).await;

    let filter =
        json!({"notifications": {"toolsListChanged": true, "resourcesListChanged": false}});
    send(&mut ws, &stateless(json!(7), "subscriptions/listen", filter)).await;
    let ack = next_json(&mut ws).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7, "{ack}");
    assert_eq!(ack["params"]["notifications"], json!({"toolsListChanged": true}), "{ack}");

    // Other stateless requests are served on the same connection meanwhile.
    send(&mut ws, &stateless(json!(8), "tools/list", json!({}))).await;
    let list = next_json(&mut ws).await;
    assert_eq!(list["id"], 8, "{list}");
    assert_eq!(list["result"]["resultType"], "complete", "{list}");

    let resource = mcpl_core::types::Resource::new("test://not-wanted", "not wanted");
    server
        .resources_mut()
        .add(resource, |_ctx, req| async move {
            Ok(vec![mcpl_server::resource::ResourceOutput::text(req.uri, "")])
        })
        .unwrap();
    server
        .tools_mut()
        .add(Tool::new("new", ToolSchema::object()), |_ctx, _args| async {
            Ok(ToolOutput::text("new"))
        })
        .unwrap();
    // Only what the client opted into, tagged with its subscription.
    let changed = next_json(&mut ws).await;
    assert_eq!(changed["method"], "notifications/tools/list_changed", "{changed}");
    assert_eq!(changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);

    // A filter that is not an object is refused, as over HTTP.
    send(&mut ws, &stateless(json!(9), "subscriptions/listen", json!({"notifications": 1}))).await;
    let refused = next_json(&mut ws).await;
    assert_eq!(refused["id"], 9, "{refused}");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

/// A stateless client that opens `subscriptions/listen` after `subscriptions/listen` on one
/// connection (each stays in flight until cancelled) is refused past the in-flight limit: the
/// listens it holds are bounded, and the refusals are counted.
#[tokio::test]
async fn a_flood_of_listens_on_one_websocket_is_refused_beyond_the_in_flight_limit() {
    let endpoint = WebSocketEndpoint::new(server(), WsConfig::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::ws::serve(listener, endpoint.clone().into_router("/ws")));
    let mut ws = connect(addr).await;

    let limit = mcpl_core::engine::DEFAULT_MAX_INFLIGHT_REQUESTS as u64;
    let flood = limit + 20;
    let filter = json!({"notifications": {"toolsListChanged": true}});
    for id in 1..=flood {
        send(&mut ws, &stateless(json!(id), "subscriptions/listen", filter.clone())).await;
    }
    let (mut acknowledged, mut busy) = (0u64, 0u64);
    while acknowledged + busy < flood {
        let message = next_json(&mut ws).await;
        if message["method"] == "notifications/subscriptions/acknowledged" {
            acknowledged += 1;
        } else {
            assert_eq!(message["error"]["code"], -32000, "{message}");
            assert_eq!(message["error"]["data"]["maxInFlight"], limit, "{message}");
            busy += 1;
        }
    }
    assert!(acknowledged <= limit, "{acknowledged} listens held");
    assert!(busy >= 20, "{busy} refused");
    assert_eq!(endpoint.refusals().count(mcpl_server::http::RefusalKind::InFlightLimit), busy);
}
