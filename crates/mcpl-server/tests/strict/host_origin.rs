//! `Host` and `Origin` are parsed by the authority grammar (RFC 3986, RFC 6454) and refused
//! when they do not parse: `400` for a `Host` (RFC 9112, also for two of them), `403` for an
//! `Origin` (the MCP transport's rule for an invalid one).

use std::net::SocketAddr;

use mcpl_server::Server;
use mcpl_server::http::HttpConfig;
use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
use serde_json::json;

use crate::support::{raw, raw_post, request, serve_app, serve_direct, serve_router};

fn discover() -> String {
    request(json!(1), "server/discover", json!({})).to_string()
}

/// A stateless `server/discover` with the given `Host`/`Origin` lines.
async fn discover_with(addr: SocketAddr, lines: &[&str]) -> u16 {
    let mut headers = lines.to_vec();
    headers.extend(["mcp-protocol-version: 2026-07-28", "mcp-method: server/discover"]);
    raw(addr, &raw_post(&headers, &discover())).await.0
}

async fn both_entry_points() -> [SocketAddr; 2] {
    let server = || Server::builder("strict-host", "1").build();
    [
        serve_router(server(), HttpConfig::new()).await,
        serve_direct(server(), HttpConfig::new()).await,
    ]
}

#[tokio::test]
async fn a_host_that_does_not_parse_is_refused_with_400() {
    for addr in both_entry_points().await {
        assert_eq!(discover_with(addr, &["host: localhost:3000"]).await, 200);
        assert_eq!(discover_with(addr, &["host: [::1]:3000"]).await, 200);
        assert_eq!(discover_with(addr, &["host: evil.com"]).await, 403, "parses, not allowed");
        for bad in [
            "[::1]evil.com",
            "[::1]:80evil",
            "localhost:1@evil.com",
            "user@localhost",
            "localhost:abc",
            "localhost:99999",
            "localhost:80:80",
            "[::1",
            "[not-an-ip]",
            "local host",
            "localhost/path",
            "localhost?q",
            "",
        ] {
            let line = format!("host: {bad}");
            assert_eq!(discover_with(addr, &[&line]).await, 400, "Host {bad:?}");
        }
    }
}

#[tokio::test]
async fn a_host_that_does_not_parse_is_refused_even_when_any_host_is_allowed() {
    let server = Server::builder("strict-host", "1").build();
    let addr = serve_router(server, HttpConfig::new().allow_any_host()).await;
    assert_eq!(discover_with(addr, &["host: mcp.example.com"]).await, 200);
    assert_eq!(discover_with(addr, &["host: [::1]evil.com"]).await, 400);
    assert_eq!(discover_with(addr, &["host: a@mcp.example.com"]).await, 400);
}

#[tokio::test]
async fn two_host_headers_are_refused_with_400() {
    for addr in both_entry_points().await {
        let twice = ["host: localhost", "host: localhost"];
        assert_eq!(discover_with(addr, &twice).await, 400);
        let different = ["host: localhost", "host: evil.com"];
        assert_eq!(discover_with(addr, &different).await, 400);
    }
}

#[tokio::test]
async fn an_origin_that_does_not_parse_is_refused_with_403() {
    for addr in both_entry_points().await {
        let host = "host: localhost:3000";
        for good in ["http://localhost:3000", "https://127.0.0.1", "http://[::1]:9"] {
            let origin = format!("origin: {good}");
            assert_eq!(discover_with(addr, &[host, &origin]).await, 200, "Origin {good:?}");
        }
        for bad in [
            "http://localhost:1@evil.com",
            "http://localhost@evil.com",
            "http://[::1]evil.com",
            "http://localhost:3000/",
            "http://localhost:3000/path",
            "http://localhost:port",
            "http://localhost:99999",
            "http://localhost?x",
            "http://",
            "localhost:3000",
            "null",
            "ftp://localhost",
            "HTTP://localhost",
        ] {
            let origin = format!("origin: {bad}");
            assert_eq!(discover_with(addr, &[host, &origin]).await, 403, "Origin {bad:?}");
        }
        let two = [host, "origin: http://localhost:3000", "origin: http://localhost:3000"];
        assert_eq!(discover_with(addr, &two).await, 403, "two Origin headers");
    }
}

#[tokio::test]
async fn the_websocket_endpoint_parses_host_and_origin_the_same_way() {
    let server = Server::builder("strict-ws", "1").build();
    let app = WebSocketEndpoint::new(server, WsConfig::new()).into_router("/ws");
    let addr = serve_app(app).await;
    let upgrade = |lines: &[&str]| {
        let mut request = String::from("GET /ws HTTP/1.1\r\n");
        for line in lines {
            request.push_str(line);
            request.push_str("\r\n");
        }
        request.push_str(
            "connection: upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\n\
             sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        );
        request.into_bytes()
    };
    let (status, _) = raw(addr, &upgrade(&["host: localhost"])).await;
    assert_eq!(status, 101);
    let (status, _) = raw(addr, &upgrade(&["host: [::1]evil.com"])).await;
    assert_eq!(status, 400);
    let (status, _) = raw(addr, &upgrade(&["host: localhost", "host: localhost"])).await;
    assert_eq!(status, 400);
    let (status, _) =
        raw(addr, &upgrade(&["host: localhost", "origin: http://localhost:1@evil.com"])).await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn a_refusal_is_logged_once_at_debug_with_the_peer_and_the_reason() {
    let app = mcpl_server::http::StreamableHttp::new(
        Server::builder("strict-host", "1").build(),
        HttpConfig::new(),
    )
    .into_router("/mcp");
    let (addr, logs) = crate::support::spawn_logged_server(move |listener| async move {
        let app = app.into_make_service_with_connect_info::<SocketAddr>();
        axum::serve(listener, app).await
    });
    assert_eq!(discover_with(addr, &["host: [::1]evil.com"]).await, 400);
    assert_eq!(discover_with(addr, &["host: localhost", "origin: http://a@evil.com"]).await, 403);
    let lines = logs.lines_with("mcpl_server::refusal");
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(lines.iter().all(|l| l.contains("DEBUG") && l.contains("127.0.0.1:")), "{lines:#?}");
    assert!(lines[0].contains("bad_request") && lines[0].contains("malformed Host header"));
    assert!(lines[1].contains("forbidden") && lines[1].contains("is not allowed"), "{lines:#?}");
}
