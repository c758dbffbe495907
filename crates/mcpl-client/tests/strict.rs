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

#[tokio::test]
async fn every_typed_call_is_checked_subscribe_completion_and_logging_included() {
    let s = start(tools_only(), HttpConfig::new()).await;
    let client = Client::new("c", "1")
        .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
        .with_strict_capabilities(true);
    client.connect(s.transport()).await.unwrap();
    let caps = client.server().unwrap().capabilities;
    assert!(caps.resources.is_none() && caps.completions.is_none());
    let posts = || s.probe.seen().iter().filter(|l| l.starts_with("POST")).count();
    eventually("the handshake is done", async || posts() == 2).await;
    let complete = serde_json::from_value(serde_json::json!({
        "ref": {"type": "ref/prompt", "name": "p"},
        "argument": {"name": "a", "value": "x"}
    }))
    .unwrap();
    let mut errors = vec![
        client.subscribe_resource("mem:///x").await.unwrap_err(),
        client.unsubscribe_resource("mem:///x").await.unwrap_err(),
        client.list_resource_templates().await.unwrap_err(),
        client.get_prompt("p", Default::default()).await.unwrap_err(),
        client.complete(complete).await.unwrap_err(),
    ];
    if caps.logging.is_none() {
        errors.push(client.set_log_level(mcpl_core::types::LoggingLevel::Info).await.unwrap_err());
    }
    for error in errors {
        assert_eq!(error.kind(), ErrorKind::CapabilityNotSupported, "{error}");
    }
    assert_eq!(posts(), 2, "nothing was sent");
    client.close().await.unwrap();
}
