//! The WebSocket client transport against mcpl-server's WebSocket endpoint, over real sockets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[cfg(feature = "rustls")]
mod tls_listener;

use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use mcpl_client::transport::WebSocketTransport;
use mcpl_client::{Client, Negotiation};
use mcpl_core::types::{
    ElicitAction, ElicitRequestFormParams, ElicitResult, ElicitationSchema, StringSchema, Tool,
    ToolSchema,
};
use mcpl_core::{ErrorKind, ProtocolVersion, Transport};
use mcpl_server::input::ToolReply;
use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
use mcpl_server::{Server, ToolOutput};
use serde_json::{Map, Value, json};

/// Hang guard only.
const GUARD: Duration = Duration::from_secs(30);

fn server() -> Server {
    Server::builder("ws-e2e", "0.0.1")
        .tool(Tool::new("echo", ToolSchema::object()), |ctx, args| async move {
            let version = ctx.protocol_version().map(|v| v.to_string()).unwrap_or_default();
            Ok(ToolOutput::text(format!("{version} {}", Value::Object(args))))
        })
        .tool(Tool::new("greet", ToolSchema::object()), |ctx, _args| async move {
            if let Some(name) = ctx.elicited("name").and_then(|c| c.get("name")).cloned() {
                return Ok(ToolReply::from(ToolOutput::text(format!(
                    "hello {}",
                    serde_json::to_value(&name).unwrap()
                ))));
            }
            let form = ElicitationSchema::default()
                .with_property("name", StringSchema::default())
                .with_required("name");
            let ask = ElicitRequestFormParams::new("Your name?", form);
            Ok(ctx.input_required().elicit("name", ask).into())
        })
        .tool(Tool::new("big", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("x".repeat(64 * 1024)))
        })
        .build()
}

/// Refuses upgrades without `Authorization: Bearer secret`, to show custom headers arrive.
async fn require_token(request: Request, next: Next) -> Response {
    let authorized =
        request.headers().get("authorization").is_some_and(|v| v.as_bytes() == b"Bearer secret");
    if authorized { next.run(request).await } else { StatusCode::UNAUTHORIZED.into_response() }
}

struct Running {
    addr: SocketAddr,
    server: Server,
    endpoint: WebSocketEndpoint,
}

async fn start(config: WsConfig) -> Running {
    let server = server();
    let endpoint = WebSocketEndpoint::new(server.clone(), config);
    let app = endpoint.clone().into_router("/ws").layer(axum::middleware::from_fn(require_token));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::ws::serve(listener, app));
    Running { addr, server, endpoint }
}

impl Running {
    fn transport(&self) -> WebSocketTransport {
        WebSocketTransport::new(format!("ws://{}/ws", self.addr))
            .header("authorization", "Bearer secret")
    }

    async fn wait_for_connections(&self, n: usize) {
        let deadline = tokio::time::Instant::now() + GUARD;
        while self.endpoint.connection_count() != n {
            assert!(tokio::time::Instant::now() < deadline, "never reached {n} connections");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn text(result: &mcpl_core::types::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_2025_session_over_websocket_with_server_requests_and_notifications() {
    let s = start(WsConfig::new()).await;
    let (changed_tx, mut changed) = tokio::sync::mpsc::unbounded_channel();
    let client = Client::builder("ws-client", "1")
        .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
        .on_elicitation(|form| async move {
            assert_eq!(form.message, "Your name?");
            let mut result = ElicitResult::new(ElicitAction::Accept);
            result.content = Some(serde_json::from_value(json!({"name": "Ada"})).unwrap());
            Ok(result)
        })
        .on_tools_list_changed(move || {
            let tx = changed_tx.clone();
            async move {
                let _ = tx.send(());
            }
        })
        .build();
    let details = client.connect(s.transport()).await.unwrap();
    assert_eq!(details.protocol_version, ProtocolVersion::V2025_11_25);
    assert_eq!(details.server_info.name, "ws-e2e");
    assert_eq!(s.endpoint.connection_count(), 1);

    let echoed = client.call_tool("echo", args(json!({"a": "b\nc"}))).await.unwrap();
    assert_eq!(text(&echoed), r#"2025-11-25 {"a":"b\nc"}"#);

    // A request from the server to the client (elicitation/create) in the middle of a call.
    let greeted = client.call_tool("greet", Map::new()).await.unwrap();
    assert_eq!(text(&greeted), r#"hello "Ada""#);

    // A notification from the server, unsolicited.
    s.server
        .tools_mut()
        .add(Tool::new("later", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("later"))
        })
        .unwrap();
    tokio::time::timeout(GUARD, changed.recv()).await.expect("hang guard").unwrap();
    assert_eq!(client.list_tools().await.unwrap().len(), 4);
    client.ping().await.unwrap();

    client.close().await.unwrap();
    s.wait_for_connections(0).await;

    // A reconnect is a new session with a new initialize.
    client.connect(s.transport()).await.unwrap();
    assert_eq!(s.endpoint.connection_count(), 1);
    client.ping().await.unwrap();
    client.close().await.unwrap();
}

#[tokio::test]
async fn the_server_sends_requests_of_its_own_at_any_time() {
    use mcpl_core::types::Root;
    let server = server();
    let (sessions_tx, mut sessions) = tokio::sync::mpsc::unbounded_channel();
    let endpoint = WebSocketEndpoint::new(server, WsConfig::new()).on_session(move |session| {
        let _ = sessions_tx.send(session);
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::ws::serve(listener, endpoint.into_router("/ws")));

    let client = Client::builder("c", "1")
        .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
        .on_roots(|| async { Ok(vec![Root::new("file:///work")]) })
        .build();
    client.connect(WebSocketTransport::new(format!("ws://{addr}/ws"))).await.unwrap();
    let session = tokio::time::timeout(GUARD, sessions.recv()).await.expect("hang guard").unwrap();
    assert_eq!(session.client_info().unwrap().name, "c");
    // Not in answer to anything: the server asks, the client answers.
    let roots = session.peer().request("roots/list", None, Default::default()).await.unwrap();
    assert_eq!(roots["roots"][0]["uri"], "file:///work");
    client.close().await.unwrap();
    tokio::time::timeout(GUARD, session.closed()).await.expect("hang guard");
}

#[tokio::test]
async fn the_client_answers_the_servers_ping_with_an_empty_result() {
    let (sessions_tx, mut sessions) = tokio::sync::mpsc::unbounded_channel();
    let endpoint = WebSocketEndpoint::new(server(), WsConfig::new()).on_session(move |session| {
        let _ = sessions_tx.send(session);
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::ws::serve(listener, endpoint.into_router("/ws")));

    // A client with no handlers of its own configured.
    let client =
        Client::new("c", "1").with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    client.connect(WebSocketTransport::new(format!("ws://{addr}/ws"))).await.unwrap();
    let session = tokio::time::timeout(GUARD, sessions.recv()).await.expect("hang guard").unwrap();
    let pong = session.peer().request("ping", None, Default::default()).await.unwrap();
    assert_eq!(pong, json!({}));
    // With `_meta` (a progress token) too.
    let params = json!({"_meta": {"progressToken": "p1"}});
    let pong = session.peer().request("ping", Some(params), Default::default()).await.unwrap();
    assert_eq!(pong, json!({}));
    // The connection is still good both ways.
    client.ping().await.unwrap();
    client.close().await.unwrap();
    tokio::time::timeout(GUARD, session.closed()).await.expect("hang guard");
}

#[tokio::test]
async fn the_default_negotiation_works_over_websocket() {
    let s = start(WsConfig::new()).await;
    let client = Client::new("auto", "1");
    let details = client.connect(s.transport()).await.unwrap();
    let echoed = client.call_tool("echo", args(json!({"k": 1}))).await.unwrap();
    assert!(text(&echoed).ends_with(r#"{"k":1}"#), "{}", text(&echoed));
    assert!(!details.protocol_version.as_str().is_empty());
    client.close().await.unwrap();
}

#[tokio::test]
async fn custom_headers_are_sent_and_refusals_are_their_http_status() {
    let s = start(WsConfig::new()).await;
    // Without the token the middleware refuses the upgrade.
    let bare = WebSocketTransport::new(format!("ws://{}/ws", s.addr));
    let e = Client::new("c", "1").connect(bare).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::HttpStatus);
    assert!(e.to_string().contains("401"), "{e}");
    // A foreign Origin is refused by the DNS-rebinding guard.
    let foreign = s.transport().header("origin", "https://evil.example");
    let e = Client::new("c", "1").connect(foreign).await.unwrap_err();
    assert!(e.to_string().contains("403"), "{e}");
    assert_eq!(s.endpoint.connection_count(), 0);
}

#[tokio::test]
async fn an_oversized_message_from_the_server_ends_the_connection_not_the_server() {
    let s = start(WsConfig::new()).await;
    let client =
        Client::new("c", "1").with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    client.connect(s.transport().max_message_size(16 * 1024)).await.unwrap();
    let e = tokio::time::timeout(GUARD, client.call_tool("big", Map::new()))
        .await
        .expect("hang guard")
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionClosed, "{e}");
    s.wait_for_connections(0).await;
    // The server serves the next connection, and a large enough limit gets the message.
    let other = Client::new("c", "1");
    other.connect(s.transport()).await.unwrap();
    assert_eq!(text(&other.call_tool("big", Map::new()).await.unwrap()).len(), 64 * 1024);
    other.close().await.unwrap();
}

#[tokio::test]
async fn an_oversized_message_to_the_server_ends_the_connection_not_the_server() {
    let s = start(WsConfig::new().max_message_size(1024)).await;
    let client =
        Client::new("c", "1").with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    client.connect(s.transport()).await.unwrap();
    let e =
        tokio::time::timeout(GUARD, client.call_tool("echo", args(json!({"x": "y".repeat(4096)}))))
            .await
            .expect("hang guard")
            .unwrap_err();
    // The server answers an id-less -32600 and closes with 1009; the call fails either way.
    assert!(matches!(e.kind(), ErrorKind::ConnectionClosed | ErrorKind::Rpc), "{e}");
    s.wait_for_connections(0).await;
    let other = Client::new("c", "1");
    other.connect(s.transport()).await.unwrap();
    other.ping().await.unwrap();
}

#[tokio::test]
async fn client_pings_keep_a_connection_alive_past_the_server_idle_timeout() {
    // The server closes after 2 s of silence; the client pings every 50 ms and says nothing
    // else for 3 s.
    let s = start(WsConfig::new().idle_timeout(Some(Duration::from_secs(2)))).await;
    let client = Client::new("c", "1");
    client.connect(s.transport().ping_every(Some(Duration::from_millis(50)))).await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(client.is_connected());
    client.ping().await.unwrap();
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_silent_server_is_left_after_the_client_idle_timeout() {
    let s = start(WsConfig::new().idle_timeout(None)).await;
    let client = Client::new("c", "1");
    // Long enough for the handshake on a loaded machine, short enough to wait for.
    let transport = s.transport().ping_every(None).idle_timeout(Some(Duration::from_secs(1)));
    client.connect(transport).await.unwrap();
    s.wait_for_connections(0).await;
    let deadline = tokio::time::Instant::now() + GUARD;
    while client.is_connected() {
        assert!(tokio::time::Instant::now() < deadline, "the client never gave up");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn addresses_are_checked_before_dialling() {
    for bad in [
        "mcpl://user@example.com/x",
        "mcpl:///x",
        "mcpl://example.com/a/../b",
        "mcpl://example.com/x#f",
        "mcpl://example.com:0/x",
        "http://example.com/x",
        "ws:///x",
        "wss://",
        "ws:example.com/x",
        "wss://example.com/x#f",
    ] {
        let e = WebSocketTransport::new(bad).start().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Transport, "{bad}");
        assert!(e.to_string().contains("invalid websocket address"), "{bad}: {e}");
    }
}

#[tokio::test]
async fn mcpl_uris_dial_tls_and_identify_by_their_canonical_form() {
    let s = start(WsConfig::new()).await;
    let transport = WebSocketTransport::new(format!("MCPL://127.0.0.1:{}/ws", s.addr.port()));
    assert_eq!(transport.endpoint(), Some(format!("mcpl://127.0.0.1:{}/ws", s.addr.port())));
    // The server speaks plain ws: the TLS handshake an mcpl:// URI demands fails, cleanly.
    let e = tokio::time::timeout(GUARD, transport.connect_timeout(GUARD).start())
        .await
        .expect("hang guard")
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Tls, "{e}");
    let ws = WebSocketTransport::new(format!("ws://LOCALHOST:{}/ws", s.addr.port()));
    assert_eq!(ws.endpoint(), Some(format!("ws://localhost:{}/ws", s.addr.port())));
}

/// `mcpl://` over real TLS (needs the `rustls` feature, on by default).
#[cfg(feature = "rustls")]
mod tls {
    use super::*;

    use crate::tls_listener::TlsListener;

    fn ring() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
        std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider())
    }

    #[tokio::test]
    async fn an_mcpl_uri_session_over_tls() {
        use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
        let issued = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let cert = issued.cert.der().clone();
        let key =
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(issued.signing_key.serialize_der()));
        let server_tls = rustls::ServerConfig::builder_with_provider(ring())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], key)
            .unwrap();
        let endpoint = WebSocketEndpoint::new(server(), WsConfig::new());
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = tcp.local_addr().unwrap().port();
        let listener = TlsListener {
            tcp,
            acceptor: tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(server_tls)),
        };
        let app = endpoint.clone().into_router("/ws");
        tokio::spawn(async move { axum::serve(listener, app).await });

        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).unwrap();
        let client_tls = rustls::ClientConfig::builder_with_provider(ring())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let uri = format!("mcpl://LocalHost:{port}/ws");
        let transport = WebSocketTransport::new(&uri).tls_config(std::sync::Arc::new(client_tls));
        assert_eq!(transport.endpoint(), Some(format!("mcpl://localhost:{port}/ws")));
        let client = Client::builder("tls", "1")
            .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
            .on_elicitation(|_form| async move {
                let mut result = ElicitResult::new(ElicitAction::Accept);
                result.content = Some(serde_json::from_value(json!({"name": "Tls"})).unwrap());
                Ok(result)
            })
            .build();
        client.connect(transport).await.unwrap();
        assert_eq!(endpoint.connection_count(), 1);
        let greeted = client.call_tool("greet", Map::new()).await.unwrap();
        assert_eq!(text(&greeted), r#"hello "Tls""#);
        client.close().await.unwrap();

        // With the default roots the self-signed certificate is not trusted: a TLS error.
        let e = WebSocketTransport::new(&uri).start().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Tls, "{e}");
    }
}
