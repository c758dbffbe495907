//! The client against a real server over a byte pipe, and against real child processes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mcpl_client::Client;
use mcpl_client::transport::ChildProcess;
use mcpl_core::transport::lines::LineTransport;
use mcpl_core::types::{Tool, ToolSchema};
use mcpl_core::{ErrorKind, ProtocolVersion};
use mcpl_server::{Server, ToolOutput};
use serde_json::json;

fn server() -> Server {
    Server::builder("pipe-server", "0.1.0")
        .instructions("use the echo tool")
        .tool(Tool::new("echo", ToolSchema::object()), |_ctx, args| async move {
            Ok(ToolOutput::text(args.get("text").and_then(|t| t.as_str()).unwrap_or("").to_owned()))
        })
        .build()
}

/// A server session on one end of a byte pipe; the client's transport for the other end.
async fn pipe() -> (mcpl_server::Session, impl mcpl_core::Transport) {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (br, bw) = tokio::io::split(b);
    let session = server().serve(LineTransport::new(br, bw)).await.unwrap();
    let (ar, aw) = tokio::io::split(a);
    (session, LineTransport::new(ar, aw))
}

#[tokio::test]
async fn handshake_lists_and_calls_tools() {
    let (session, transport) = pipe().await;
    // The stateful era, pinned (with `Negotiation::Auto` an mcpl-server answers
    // `server/discover` and the stateless era is chosen; see `auto_picks_the_stateless_era`).
    let client = Client::new("test-client", "9.9.9")
        .with_negotiation(mcpl_client::Negotiation::pinned(ProtocolVersion::V2025_11_25));
    let details = client.connect(transport).await.unwrap();
    assert_eq!(details.protocol_version, ProtocolVersion::V2025_11_25);
    assert_eq!(details.server_info.name, "pipe-server");
    assert_eq!(details.instructions.as_deref(), Some("use the echo tool"));
    client.ping().await.unwrap();
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    let args = json!({"text": "hello"}).as_object().unwrap().clone();
    let result = client.call_tool("echo", args).await.unwrap();
    assert_eq!(serde_json::to_value(&result.content).unwrap()[0]["text"], "hello");
    assert_eq!(session.client_info().unwrap().name, "test-client");
    let err = client.call_tool("missing", ()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Rpc);
}

#[tokio::test]
async fn auto_picks_the_stateless_era() {
    let (_session, transport) = pipe().await;
    let client = Client::new("test-client", "9.9.9");
    let details = client.connect(transport).await.unwrap();
    assert_eq!(details.protocol_version, ProtocolVersion::V2026_07_28);
    assert_eq!(details.server_info.name, "pipe-server");
    assert_eq!(details.instructions.as_deref(), Some("use the echo tool"));
    let args = json!({"text": "hello"}).as_object().unwrap().clone();
    let result = client.call_tool("echo", args).await.unwrap();
    assert_eq!(serde_json::to_value(&result.content).unwrap()[0]["text"], "hello");
}

#[tokio::test]
async fn older_version_is_negotiated_when_pinned() {
    let (_session, transport) = pipe().await;
    let client = Client::new("c", "1").with_protocol_version(ProtocolVersion::V2025_03_26).unwrap();
    let details = client.connect(transport).await.unwrap();
    assert_eq!(details.protocol_version, ProtocolVersion::V2025_03_26);
}

#[tokio::test]
async fn close_then_connect_again_on_the_same_client() {
    let client = Client::new("c", "1");
    for _ in 0..2 {
        let (_session, transport) = pipe().await;
        client.connect(transport).await.unwrap();
        assert!(client.server().is_some());
        let (_s2, t2) = pipe().await;
        assert_eq!(client.connect(t2).await.unwrap_err().kind(), ErrorKind::AlreadyConnected);
        client.close().await.unwrap();
        assert!(client.server().is_none());
        assert_eq!(client.ping().await.unwrap_err().kind(), ErrorKind::ConnectionClosed);
    }
}

/// A tiny scripted MCP server in Python: answers `initialize` and `tools/list`, and reports its
/// environment and working directory in its server name.
const SCRIPTED_SERVER: &str = r#"
import json, os, sys
sys.stderr.write("scripted server starting\n"); sys.stderr.flush()
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": os.environ.get("GREETING", "") + "@" + os.getcwd(), "version": "1"}}
    elif msg["method"] == "tools/list":
        result = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"#;

#[tokio::test]
async fn child_process_gets_env_and_working_dir() {
    let dir = std::env::temp_dir();
    let child = ChildProcess::new("python3")
        .args(["-c", SCRIPTED_SERVER])
        .env("GREETING", "hi")
        .current_dir(&dir);
    let client = Client::new("c", "1");
    let details = client.connect(child).await.unwrap();
    let cwd = dir.canonicalize().unwrap();
    assert_eq!(details.server_info.name, format!("hi@{}", cwd.display()));
    assert_eq!(client.list_tools().await.unwrap()[0].name, "t");
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_child_that_exits_is_a_clear_error() {
    let client = Client::new("c", "1");
    let err = client.connect(ChildProcess::new("sh").args(["-c", "exit 3"])).await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::ConnectionClosed | ErrorKind::Transport), "{err:?}");
    assert!(!client.is_connected());
    let err = client.connect(ChildProcess::new("/nonexistent/mcp-server")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connect);
    assert!(err.to_string().contains("/nonexistent/mcp-server"), "{err}");
}

/// A raw server whose `prompts/list` never ends: every page names the same next cursor.
fn looping_server() -> mcpl_core::Engine {
    let engine = mcpl_core::Engine::new();
    engine.on_request("initialize", |_ctx, _params| async move {
        Ok(json!({"protocolVersion": "2025-11-25", "capabilities": {"prompts": {}},
                  "serverInfo": {"name": "looping", "version": "1"}}))
    });
    engine.on_request("prompts/list", |_ctx, params| async move {
        let cursor = params.and_then(|p| p.get("cursor").cloned());
        let n = if cursor.is_some() { "again" } else { "first" };
        Ok(json!({"prompts": [{"name": n}], "nextCursor": "same"}))
    });
    engine.on_request("resources/list", |_ctx, params| async move {
        // A fresh cursor every page: only the page cap stops it.
        let page = params
            .and_then(|p| p.get("cursor").and_then(|c| c.as_str()).map(str::to_owned))
            .map_or(0, |c| c.parse::<u32>().unwrap() + 1);
        Ok(json!({"resources": [{"uri": format!("test://{page}"), "name": "r"}],
                  "nextCursor": page.to_string()}))
    });
    engine.on_notification("notifications/initialized", |_ctx, _params| async {});
    engine
}

#[tokio::test]
async fn list_calls_stop_at_a_repeated_cursor_and_at_the_page_cap_with_an_error() {
    let server = looping_server();
    let (a, b) = mcpl_core::transport::memory::pair();
    server.connect(b).await.unwrap();
    let client = Client::new("c", "1").with_max_pages(5);
    client.connect(a).await.unwrap();
    // First page, then "same", then "same" again: the listing would loop.
    match client.list_prompts().await {
        Err(mcpl_core::Error::ListTruncated { method, limit }) => {
            assert_eq!(method, "prompts/list");
            assert_eq!(limit, mcpl_core::error::ListLimit::RepeatedCursor);
        }
        other => panic!("{other:?}"),
    }
    // Five pages, and a sixth remains.
    match client.list_resources().await {
        Err(mcpl_core::Error::ListTruncated { method, limit }) => {
            assert_eq!(method, "resources/list");
            assert_eq!(limit, mcpl_core::error::ListLimit::Pages(5));
        }
        other => panic!("{other:?}"),
    }
    client.close().await.unwrap();
}
