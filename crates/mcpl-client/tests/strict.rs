//! Strict capability enforcement against our own server over real HTTP sockets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{eventually, start};
use mcpl_client::{Client, Negotiation};
use mcpl_core::types::{Tool, ToolSchema};
use mcpl_core::{ErrorKind, ProtocolVersion};
use mcpl_server::http::HttpConfig;
use mcpl_server::{Server, ToolOutput};
use serde_json::Map;

fn tools_only() -> Server {
    Server::builder("strict-test", "1")
        .tool(Tool::new("echo", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("hi"))
        })
        .build()
}

#[tokio::test]
async fn unadvertised_requests_fail_locally_before_anything_is_sent() {
    for version in [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28] {
        let s = start(tools_only(), HttpConfig::new()).await;
        let client = Client::new("c", "1")
            .with_negotiation(Negotiation::pinned(version))
            .with_strict_capabilities(true);
        client.connect(s.transport()).await.unwrap();
        let caps = client.server().unwrap().capabilities;
        assert!(caps.tools.is_some() && caps.prompts.is_none() && caps.resources.is_none());
        let posts = || s.probe.seen().iter().filter(|l| l.starts_with("POST")).count();
        // The handshake: `server/discover`, or `initialize` and `notifications/initialized`
        // (whose POST may land after `connect` returned).
        let handshake = if version == ProtocolVersion::V2026_07_28 { 1 } else { 2 };
        eventually("the handshake is done", async || posts() == handshake).await;
        let before = posts();
        for error in [
            client.list_prompts().await.unwrap_err(),
            client.list_resources().await.unwrap_err(),
            client.read_resource("mem:///x").await.unwrap_err(),
        ] {
            assert_eq!(error.kind(), ErrorKind::CapabilityNotSupported, "{error}");
        }
        assert_eq!(posts(), before, "{version}: nothing was sent");
        // What the server advertises still goes through.
        client.call_tool("echo", Map::new()).await.unwrap();
        assert_eq!(posts(), before + 1);
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn without_strict_mode_the_server_answers_for_itself() {
    let s = start(tools_only(), HttpConfig::new()).await;
    let client = Client::new("c", "1");
    client.connect(s.transport()).await.unwrap();
    let error = client.list_prompts().await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Rpc, "{error}");
    assert_eq!(s.probe.count_of("prompts/list"), 1);
}
