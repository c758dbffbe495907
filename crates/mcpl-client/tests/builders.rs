//! A built client or host has a fixed configuration: configuring a clone of its builder, or
//! (deprecated) configuring a clone of the handle, never changes another handle.
#![allow(clippy::unwrap_used)]

use mcpl_client::Client;
use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
use mcpl_core::mcpl::capability::paths;
use mcpl_core::transport::memory::{MemoryTransport, pair};
use mcpl_core::types::{ContentBlock, Root, Tool, ToolSchema};
use mcpl_server::{Server, Session, ToolOutput};
use mcpl_test_kit::mcpl::alerts_server;

/// A server whose `probe` tool says whether the calling client declared roots.
async fn probe_server() -> (Session, MemoryTransport) {
    let server = Server::builder("probe", "1.0.0")
        .tool(Tool::new("probe", ToolSchema::object()), |ctx, _args| async move {
            Ok(ToolOutput::text(format!("roots: {}", ctx.supports_roots())))
        })
        .build();
    let (ours, theirs) = pair();
    (server.serve(theirs).await.unwrap(), ours)
}

async fn probe(client: &Client) -> Vec<ContentBlock> {
    let (_session, transport) = probe_server().await;
    client.connect(transport).await.unwrap();
    let content = client.call_tool("probe", ()).await.unwrap().content;
    client.close().await.unwrap();
    content
}

fn roots() -> impl Fn() -> std::future::Ready<mcpl_client::handlers::HandlerResult<Vec<Root>>>
+ Send
+ Sync
+ 'static {
    || std::future::ready(Ok(vec![Root::new("file:///project")]))
}

#[tokio::test]
async fn a_configured_clone_of_a_builder_leaves_the_other_clients_alone() {
    let builder = Client::builder("app", "1.0.0");
    let with_roots = builder.clone().on_roots(roots()).build();
    let plain = builder.build();
    assert_eq!(probe(&with_roots).await, [ContentBlock::text("roots: true")]);
    assert_eq!(probe(&plain).await, [ContentBlock::text("roots: false")]);
    // Clones of a built client share its handlers.
    assert_eq!(probe(&with_roots.clone()).await, [ContentBlock::text("roots: true")]);
}

#[tokio::test]
#[allow(deprecated)]
async fn configuring_a_clone_of_a_client_no_longer_changes_the_original() {
    let original = Client::new("app", "1.0.0");
    let configured = original.clone().on_roots(roots());
    assert!(original.capabilities().roots.is_none());
    assert!(configured.capabilities().roots.is_some());
    assert_eq!(probe(&original).await, [ContentBlock::text("roots: false")]);
    assert_eq!(probe(&configured).await, [ContentBlock::text("roots: true")]);
}

#[tokio::test]
#[allow(deprecated)]
async fn configuring_a_clone_of_a_host_no_longer_changes_the_original() {
    let builder = McplHost::builder(HostPolicy::default());
    let plain = builder.clone().build();
    let accepting = builder.on_push_event(|_event| async { PushOutcome::accepted(None) }).build();
    // The deprecated forms configure a new host; the one they are called on is unchanged.
    let changed = plain.clone().on_push_event(|_event| async { PushOutcome::accepted(None) });
    assert!(!plain.supported().contains(paths::PUSH_EVENTS));
    assert!(changed.supported().contains(paths::PUSH_EVENTS));

    for (host, expected) in [(&accepting, true), (&plain, false)] {
        let (_server, _session, transport) = alerts_server().await.unwrap();
        let client = Client::builder("host", "1.0.0").with_mcpl(host.clone()).build();
        client.connect(transport).await.unwrap();
        assert!(host.is_ready());
        let result = client.call_tool("alert", ()).await.unwrap();
        let accepted = result.content == [ContentBlock::text("accepted: true")];
        assert_eq!(accepted, expected, "{:?}", result.content);
    }
}
