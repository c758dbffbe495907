//! Session resume against our own server over real HTTP sockets: one test per promise.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::{Running, start};
use mcpl_client::cache::{MemoryStore, ResponseCache};
use mcpl_client::transport::HttpTransport;
use mcpl_client::{Client, Negotiation, SessionSnapshot};
use mcpl_core::types::{Tool, ToolSchema};
use mcpl_core::{ErrorKind, ProtocolVersion};
use mcpl_server::http::HttpConfig;
use mcpl_server::{Server, ToolOutput};
use serde_json::{Map, json};

async fn serve() -> Running {
    let server = Server::builder("resume-test", "3.1.4")
        .instructions("resume me")
        .tool(Tool::new("echo", ToolSchema::object()), |ctx, args| async move {
            let version = ctx.protocol_version().map(|v| v.to_string()).unwrap_or_default();
            Ok(ToolOutput::text(format!("{version} {}", serde_json::Value::Object(args))))
        })
        .build();
    start(server, HttpConfig::new().cache_ttl(std::time::Duration::from_secs(600))).await
}

fn stateful() -> Client {
    stateful_builder().build()
}

fn stateful_builder() -> mcpl_client::ClientBuilder {
    Client::builder("c", "1").with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
}

/// Through JSON and back, as an application would store it.
fn saved(snapshot: &SessionSnapshot) -> SessionSnapshot {
    serde_json::from_str(&serde_json::to_string(snapshot).unwrap()).unwrap()
}

fn text(result: &mcpl_core::types::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn suspending_keeps_the_session_on_the_server_and_terminate_ends_it() {
    let s = serve().await;
    let client = stateful();
    client.connect(s.transport()).await.unwrap();
    assert_eq!(s.http.session_count(), 1);
    let snapshot = client.suspend().await.unwrap();
    assert!(!client.is_connected());
    assert!(snapshot.session_id.is_some());
    // The close was awaited, and it sent no DELETE.
    assert!(!s.probe.seen().iter().any(|l| l == "DELETE"), "{:?}", s.probe.seen());
    assert_eq!(s.http.session_count(), 1);

    client.resume(s.transport(), saved(&snapshot)).await.unwrap();
    client.terminate().await.unwrap();
    assert!(s.probe.seen().iter().any(|l| l == "DELETE"));
    assert_eq!(s.http.session_count(), 0);
}

#[tokio::test]
async fn resume_continues_the_same_2025_session_on_the_same_instance() {
    let s = serve().await;
    let client = stateful();
    client.connect(s.transport()).await.unwrap();
    let snapshot = client.suspend().await.unwrap();
    let posts_before = s.probe.seen().iter().filter(|l| *l == "POST").count();

    client.resume(s.transport(), saved(&snapshot)).await.unwrap();
    // No initialize: the next POST is the call, on the old session.
    let result = client.call_tool("echo", Map::new()).await.unwrap();
    assert_eq!(text(&result), "2025-11-25 {}");
    assert_eq!(s.probe.seen().iter().filter(|l| *l == "POST").count(), posts_before + 1);
    assert_eq!(s.http.session_count(), 1);
    assert_eq!(client.session_snapshot().unwrap().session_id, snapshot.session_id);
    client.terminate().await.unwrap();
}

#[tokio::test]
async fn an_http_transport_built_with_a_session_id_continues_that_session() {
    let s = serve().await;
    let first = stateful();
    first.connect(s.transport()).await.unwrap();
    let snapshot = first.suspend().await.unwrap();
    let id = snapshot.session_id.clone().unwrap();

    // Another client instance, with a transport that names the session itself.
    let second = stateful();
    let transport =
        HttpTransport::new(s.url()).resume_session(id.clone(), ProtocolVersion::V2025_11_25);
    second.resume(transport, saved(&snapshot)).await.unwrap();
    let result = second.call_tool("echo", mcpl_core_args()).await.unwrap();
    assert_eq!(text(&result), r#"2025-11-25 {"k":1}"#);
    assert_eq!(s.http.session_count(), 1);
    // A transport continuing another session than the snapshot's is refused.
    let third = stateful();
    let wrong = HttpTransport::new(s.url()).resume_session("not-it", ProtocolVersion::V2025_11_25);
    let error = third.resume(wrong, saved(&snapshot)).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Transport);
    assert!(!third.is_connected());
    second.terminate().await.unwrap();
    assert_eq!(s.http.session_count(), 0);
}

fn mcpl_core_args() -> Map<String, serde_json::Value> {
    json!({"k": 1}).as_object().unwrap().clone()
}

#[tokio::test]
async fn a_saved_discover_result_resumes_with_zero_round_trips() {
    let s = serve().await;
    let client = Client::new("c", "1");
    let details = client.connect(s.transport()).await.unwrap();
    assert!(details.is_stateless());
    assert!(details.discover.is_some());
    let snapshot = client.suspend().await.unwrap();
    let before = s.probe.count();

    client.resume(s.transport(), saved(&snapshot)).await.unwrap();
    assert!(client.is_connected());
    assert_eq!(s.probe.count(), before, "resume sent nothing: {:?}", s.probe.seen());
    let result = client.call_tool("echo", Map::new()).await.unwrap();
    assert_eq!(text(&result), "2026-07-28 {}");
    assert_eq!(s.probe.count(), before + 1);
    assert_eq!(s.probe.count_of("server/discover"), 1);
}

#[tokio::test]
async fn getters_return_the_servers_data_after_resume() {
    for client in [stateful(), Client::new("c", "1")] {
        let s = serve().await;
        let details = client.connect(s.transport()).await.unwrap();
        let snapshot = client.suspend().await.unwrap();
        assert!(client.server().is_none());
        let resumed = client.resume(s.transport(), saved(&snapshot)).await.unwrap();
        assert_eq!(resumed, details);
        let server = client.server().unwrap();
        assert_eq!(server, details);
        assert_eq!(server.server_info.name, "resume-test");
        assert_eq!(server.server_info.version, "3.1.4");
        assert_eq!(server.instructions.as_deref(), Some("resume me"));
        assert!(server.capabilities.tools.is_some());
        assert_eq!(server.protocol_version, details.protocol_version);
        assert_eq!(server.discover.is_some(), details.is_stateless());
        client.terminate().await.unwrap();
    }
}

#[tokio::test]
async fn a_strict_client_keeps_enforcing_capabilities_after_resume() {
    let s = serve().await;
    let client = Client::new("c", "1").with_strict_capabilities(true);
    client.connect(s.transport()).await.unwrap();
    let snapshot = client.suspend().await.unwrap();
    client.resume(s.transport(), saved(&snapshot)).await.unwrap();
    let before = s.probe.count();
    // The server has tools but no prompts and no resources.
    let error = client.list_prompts().await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::CapabilityNotSupported);
    let error = client.read_resource("mem:///x").await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::CapabilityNotSupported);
    assert_eq!(s.probe.count(), before, "nothing was sent");
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
}

#[tokio::test]
async fn the_response_cache_keeps_the_servers_partition_after_resume() {
    let s = serve().await;
    let store = Arc::new(MemoryStore::new());
    let client = Client::builder("c", "1").with_cache(ResponseCache::new(store.clone())).build();
    client.connect(s.transport()).await.unwrap();
    client.list_tools().await.unwrap();
    assert_eq!(s.probe.count_of("tools/list"), 1);
    let snapshot = client.suspend().await.unwrap();
    assert_eq!(snapshot.endpoint.as_deref(), Some(s.url().as_str()));

    client.resume(s.transport(), saved(&snapshot)).await.unwrap();
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    assert_eq!(s.probe.count_of("tools/list"), 1, "answered from the server's partition");
    assert_eq!(store.len(), 1);
    // A snapshot is refused by a transport that leads elsewhere.
    let other = serve().await;
    client.close().await.unwrap();
    let error = client.resume(other.transport(), saved(&snapshot)).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Transport);
}

#[tokio::test]
async fn a_resumed_2025_session_still_hears_the_servers_notifications() {
    let s = serve().await;
    let long = std::time::Duration::from_secs(600);
    let client = stateful_builder()
        .with_cache(ResponseCache::in_memory().principal("p").default_ttl(long))
        .build();
    client.connect(s.transport()).await.unwrap();
    let snapshot = client.suspend().await.unwrap();
    let suspended_at = s.probe.count();
    client.resume(s.transport(), saved(&snapshot)).await.unwrap();
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    // The continued session's standalone stream reopens (a GET after the resume).
    common::eventually("the stream reopens", async || {
        s.probe.seen()[suspended_at..].iter().any(|l| l == "GET")
    })
    .await;
    s.server
        .tools_mut()
        .add(Tool::new("added", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("new"))
        })
        .unwrap();
    // tools/list_changed arrives on that stream and invalidates the cached list.
    common::eventually("the list change arrives", async || {
        client.list_tools().await.unwrap().len() == 2
    })
    .await;
    client.terminate().await.unwrap();
}

#[tokio::test]
async fn a_renewed_session_is_the_one_a_snapshot_holds() {
    let server = Server::builder("renew-test", "1")
        .tool(Tool::new("echo", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("hi"))
        })
        .build();
    let config = HttpConfig::new().session_idle_timeout(std::time::Duration::from_millis(200));
    let s = start(server, config).await;
    let client = stateful();
    client.connect(s.transport().standalone_stream(false)).await.unwrap();
    let old = client.session_snapshot().unwrap().session_id.unwrap();
    // The server forgets the idle session; the next call renews it (404 -> initialize).
    common::eventually("the session expires", async || s.http.session_count() == 0).await;
    client.call_tool("echo", Map::new()).await.unwrap();
    assert_eq!(s.http.session_count(), 1);
    let snapshot = client.suspend().await.unwrap();
    let renewed = snapshot.session_id.clone().unwrap();
    assert_ne!(renewed, old, "the snapshot holds the renewed session, not the forgotten one");
    // Resuming it continues the live session: a resumed transport has no initialize to
    // replay, so with the old id this call would end in "session expired".
    let initializes = s.probe.count();
    client.resume(s.transport().standalone_stream(false), saved(&snapshot)).await.unwrap();
    client.call_tool("echo", Map::new()).await.unwrap();
    assert_eq!(s.probe.count(), initializes + 1, "one POST: the call, no new handshake");
    assert_eq!(s.http.session_count(), 1);
    assert_eq!(client.session_snapshot().unwrap().session_id.as_deref(), Some(renewed.as_str()));
    client.terminate().await.unwrap();
}

const WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// An MCPL server whose `alert` tool pushes an event to the host and reports its answer.
fn mcpl_server() -> Server {
    use mcpl_core::mcpl::content::McplContent;
    use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
    use mcpl_server::mcpl::{Mcpl, PushEvent};
    let manifest = Manifest::new()
        .with_push_events(true)
        .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]));
    Server::builder("mcpl-resume", "1")
        .mcpl(Mcpl::new(manifest))
        .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
            let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
            let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")]);
            match mcpl.push_event(event).await {
                Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
                Err(refused) => Ok(ToolOutput::error(refused.to_string())),
            }
        })
        .try_build()
        .unwrap()
}

#[tokio::test]
async fn resuming_an_mcpl_session_reattaches_the_mcpl_host() {
    use mcpl_client::mcpl::{HostPolicy, McplHost, McplStatus, PushOutcome};
    tokio::time::timeout(WAIT, async {
        let s = start(mcpl_server(), HttpConfig::new()).await;
        let host = McplHost::builder(HostPolicy::default())
            .on_push_event(|_event| async { PushOutcome::accepted(None) })
            .build();
        let client = stateful_builder().with_mcpl(host.clone()).build();
        client.connect(s.transport()).await.unwrap();
        assert_eq!(host.status(), Some(McplStatus::Ready));
        let snapshot = client.suspend().await.unwrap();
        assert_eq!(host.status(), None, "no connection, no MCPL");

        client.resume(s.transport(), saved(&snapshot)).await.unwrap();
        // The host speaks MCPL again, with the server's grant in force on both sides.
        assert_eq!(host.status(), Some(McplStatus::Ready));
        assert!(host.grant().is_some_and(|g| g.is_granted("pushEvents")));
        assert!(host.enabled_feature_sets().unwrap().contains(&"alerts".to_owned()));
        let conns = s.server.mcpl_connections();
        assert_eq!(conns.len(), 1, "the same server-side MCPL session");
        assert!(conns[0].is_enabled("alerts"));
        // A push from the server reaches the host's handler.
        let result = client.call_tool("alert", Map::new()).await.unwrap();
        assert_eq!(text(&result), "accepted: true");
        client.terminate().await.unwrap();
    })
    .await
    .expect("hang");
}

#[tokio::test]
async fn a_transport_without_an_endpoint_is_never_cached_even_when_resumed() {
    tokio::time::timeout(WAIT, async {
        let s = serve().await;
        let store = Arc::new(MemoryStore::new());
        let client =
            Client::builder("c", "1").with_cache(ResponseCache::new(store.clone())).build();
        client.connect(s.transport()).await.unwrap();
        assert_eq!(client.list_tools().await.unwrap()[0].name, "echo");
        assert_eq!(store.len(), 1);
        let snapshot = client.suspend().await.unwrap();

        // Resumed over an in-memory pipe to another server: that pipe names no endpoint, so
        // the snapshot's cannot stand in for it.
        let other = Server::builder("other", "1")
            .tool(Tool::new("other-tool", ToolSchema::object()), |_ctx, _args| async move {
                Ok(ToolOutput::text("other"))
            })
            .build();
        let (ours, theirs) = mcpl_core::transport::memory::pair();
        let _session = other.serve(theirs).await.unwrap();
        client.resume(ours, saved(&snapshot)).await.unwrap();
        assert_eq!(client.list_tools().await.unwrap()[0].name, "other-tool");
        assert_eq!(client.session_snapshot().unwrap().endpoint, None);
        assert_eq!(store.len(), 1, "nothing of the pipe was cached");
        client.close().await.unwrap();
    })
    .await
    .expect("hang");
}

/// A transport whose close fails (the connection itself works), with an endpoint.
struct FailingClose(mcpl_core::transport::memory::MemoryTransport);

struct FailingCloseSender<S>(S);

impl mcpl_core::Transport for FailingClose {
    type Sender = FailingCloseSender<
        <mcpl_core::transport::memory::MemoryTransport as mcpl_core::Transport>::Sender,
    >;
    type Receiver =
        <mcpl_core::transport::memory::MemoryTransport as mcpl_core::Transport>::Receiver;

    async fn start(self) -> mcpl_core::Result<(Self::Sender, Self::Receiver)> {
        let (sender, receiver) = self.0.start().await?;
        Ok((FailingCloseSender(sender), receiver))
    }

    fn endpoint(&self) -> Option<String> {
        Some("test:failing-close".into())
    }
}

impl<S: mcpl_core::transport::TransportSender> mcpl_core::transport::TransportSender
    for FailingCloseSender<S>
{
    async fn send(&mut self, message: mcpl_core::jsonrpc::Message) -> mcpl_core::Result<()> {
        self.0.send(message).await
    }

    async fn close(self) -> mcpl_core::Result<()> {
        let _ = self.0.close().await;
        Err(mcpl_core::Error::Transport { context: "close failed".into(), source: None })
    }
}

#[tokio::test]
async fn suspend_returns_the_snapshot_even_when_the_close_fails() {
    tokio::time::timeout(WAIT, async {
        let server = Server::builder("s", "1").build();
        let (ours, theirs) = mcpl_core::transport::memory::pair();
        let _session = server.serve(theirs).await.unwrap();
        let client = Client::new("c", "1");
        let details = client.connect(FailingClose(ours)).await.unwrap();
        assert!(details.is_stateless());
        // The session is kept on the server; losing its snapshot would orphan it.
        let snapshot = client.suspend().await.expect("the snapshot, whatever the close did");
        assert_eq!(snapshot.server, details);
        assert_eq!(snapshot.endpoint.as_deref(), Some("test:failing-close"));
        assert!(!client.is_connected());
    })
    .await
    .expect("hang");
}

#[tokio::test]
async fn after_the_server_ends_the_connection_the_client_holds_nothing_of_it() {
    tokio::time::timeout(WAIT, async {
        for client in [Client::new("c", "1"), stateful()] {
            let server = Server::builder("s", "1").build();
            let (ours, theirs) = mcpl_core::transport::memory::pair();
            let session = server.serve(theirs).await.unwrap();
            client.connect(ours).await.unwrap();
            assert!(client.server().is_some() && client.session_snapshot().is_some());
            session.close().await.unwrap();
            client.closed().await;
            assert!(client.server().is_none());
            assert!(client.session_snapshot().is_none());
            let e = client.suspend().await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ConnectionClosed);
        }
    })
    .await
    .expect("hang");
}
