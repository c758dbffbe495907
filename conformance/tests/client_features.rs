//! `mcpl-client`'s typed calls and notification handlers against the conformance fixture
//! server (`mcpl-server`) over real HTTP sockets, in both eras.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../src/fixture/mod.rs"]
#[allow(dead_code, unreachable_pub)]
mod fixture;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use futures::StreamExt;
use mcpl_client::transport::HttpTransport;
use mcpl_client::{Client, Negotiation};
use mcpl_core::ProtocolVersion;
use mcpl_core::types::{
    CompleteRequestParams, CompletionArgument, ElicitAction, ElicitResult, ElicitValue,
    LoggingLevel, PromptReference, ResourceContents, ServerNotification, SubscriptionFilter,
};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

/// A hang guard only: nothing here is timed.
const GUARD: Duration = Duration::from_secs(20);

async fn start() -> SocketAddr {
    let http = StreamableHttp::new(fixture::server().unwrap(), HttpConfig::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::http::serve(listener, http.into_router("/mcp")));
    addr
}

/// A client that answers the fixture's context form and reports notifications on `events`.
fn client(version: ProtocolVersion, events: mpsc::UnboundedSender<String>) -> Client {
    let (tools, prompts, updated, log) = (events.clone(), events.clone(), events.clone(), events);
    Client::builder("features-test", "1")
        .with_negotiation(Negotiation::pinned(version))
        .on_elicitation(|_form| async move {
            let mut result = ElicitResult::new(ElicitAction::Accept);
            let content = BTreeMap::from([("context".into(), ElicitValue::String("ctx".into()))]);
            result.content = Some(content);
            Ok(result)
        })
        .on_tools_list_changed(move || {
            let tools = tools.clone();
            async move { tools.send("tools changed".into()).unwrap() }
        })
        .on_prompts_list_changed(move || {
            let prompts = prompts.clone();
            async move { prompts.send("prompts changed".into()).unwrap() }
        })
        .on_resource_updated(move |uri| {
            let updated = updated.clone();
            async move { updated.send(format!("updated {uri}")).unwrap() }
        })
        .on_log_message(move |message| {
            let log = log.clone();
            async move { log.send(format!("log {}", message.data)).unwrap() }
        })
        .build()
}

async fn next(events: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(GUARD, events.recv()).await.expect("hang guard").unwrap()
}

/// What both eras offer alike: resources, templates, prompts (one asking for input),
/// completion.
async fn typed_calls(client: &Client) {
    let resources = client.list_resources().await.unwrap();
    assert!(resources.iter().any(|r| r.uri == "test://static-text"), "{resources:?}");
    let templates = client.list_resource_templates().await.unwrap();
    assert!(templates.iter().any(|t| t.uri_template == "test://template/{id}/data"));
    let read = client.read_resource("test://static-text").await.unwrap();
    match &read.contents[..] {
        [ResourceContents::Text(t)] => {
            assert_eq!(t.text, "This is the content of the static text resource.");
        }
        other => panic!("{other:?}"),
    }
    let prompts = client.list_prompts().await.unwrap();
    assert!(prompts.iter().any(|p| p.name == "test_simple_prompt"));
    let args = BTreeMap::from([("arg1".into(), "hello".into()), ("arg2".into(), "world".into())]);
    let prompt = client.get_prompt("test_prompt_with_arguments", args).await.unwrap();
    let text = serde_json::to_string(&prompt.messages).unwrap();
    assert!(text.contains("arg1='hello', arg2='world'"), "{text}");
    // Input required (2026) or an elicitation request (2025), through the same handler.
    let prompt = client.get_prompt("test_input_required_result_prompt", BTreeMap::new()).await;
    let text = serde_json::to_string(&prompt.unwrap().messages).unwrap();
    assert!(text.contains("Answer using this context: ctx"), "{text}");
    let reference = PromptReference::new("test_prompt_with_arguments");
    let argument = CompletionArgument::new("arg1", String::new());
    let completion = client.complete(CompleteRequestParams::new(reference, argument)).await;
    completion.unwrap();
}

#[tokio::test]
async fn stateful_http_calls_notifications_and_subscriptions() {
    let addr = start().await;
    let (tx, mut events) = mpsc::unbounded_channel();
    let client = client(ProtocolVersion::V2025_11_25, tx);
    client.connect(HttpTransport::new(format!("http://{addr}/mcp"))).await.unwrap();
    typed_calls(&client).await;

    client.set_log_level(LoggingLevel::Debug).await.unwrap();
    client.call_tool("test_tool_with_logging", Map::new()).await.unwrap();
    assert_eq!(next(&mut events).await, r#"log "Tool execution started""#);

    client.subscribe_resource("test://watched-resource").await.unwrap();
    client.unsubscribe_resource("test://watched-resource").await.unwrap();

    client.call_tool("test_trigger_tool_change", Map::new()).await.unwrap();
    let mut seen = Vec::new();
    while !seen.contains(&"tools changed".to_owned()) {
        seen.push(next(&mut events).await);
    }
    client.call_tool("test_trigger_prompt_change", Map::new()).await.unwrap();
    while !seen.contains(&"prompts changed".to_owned()) {
        seen.push(next(&mut events).await);
    }
    // No listen in the stateful era.
    let err = client.listen(SubscriptionFilter::default()).await.unwrap_err();
    assert_eq!(err.kind(), mcpl_core::ErrorKind::CapabilityNotSupported);
    client.close().await.unwrap();
}

#[tokio::test]
async fn stateless_http_calls_and_listen_stream() {
    let addr = start().await;
    let (tx, mut events) = mpsc::unbounded_channel();
    let client = client(ProtocolVersion::V2026_07_28, tx);
    client.connect(HttpTransport::new(format!("http://{addr}/mcp"))).await.unwrap();
    typed_calls(&client).await;

    let filter = SubscriptionFilter::default().with_tools_list_changed(true);
    let mut listen = client.listen(filter).await.unwrap();
    let first = tokio::time::timeout(GUARD, listen.next()).await.expect("hang guard").unwrap();
    let ServerNotification::SubscriptionsAcknowledged(ack) = first else { panic!("{first:?}") };
    assert_eq!(ack.notifications.tools_list_changed, Some(true));

    client.call_tool("test_trigger_tool_change", Map::new()).await.unwrap();
    let change = tokio::time::timeout(GUARD, listen.next()).await.expect("hang guard").unwrap();
    assert!(matches!(change, ServerNotification::ToolListChanged(_)), "{change:?}");
    // The registered handler sees it too.
    assert_eq!(next(&mut events).await, "tools changed");
    drop(listen);
    let value: Value = serde_json::to_value(client.list_tools().await.unwrap().len()).unwrap();
    assert!(value.as_u64().unwrap() > 0);
}
