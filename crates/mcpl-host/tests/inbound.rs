#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! What servers send the host, over real WebSocket connections: push events (deduplicated
//! across reconnects), sampling, elicitation and roots requests routed to the embedder, and
//! tools tagged with a top-level `featureSet`.

mod support;

use std::collections::BTreeMap;

use mcpl_core::mcpl::content::McplContent;
use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
use mcpl_core::mcpl::state::StateCheckpoint;
use mcpl_core::types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitAction, ElicitRequestFormParams,
    ElicitRequestURLParams, ElicitResult, ElicitValue, ElicitationSchema, Role, Root,
    SamplingContent, SamplingMessage, SamplingMessageContentBlock, StringSchema, TextContent, Tool,
    ToolSchema,
};
use mcpl_host::checkpoint::RecordOutcome;
use mcpl_host::config::HostConfig;
use mcpl_host::{Host, HostEvent};
use mcpl_server::input::ToolReply;
use mcpl_server::mcpl::{Mcpl, PushEvent, WithState};
use mcpl_server::{Server, ToolOutput};
use serde_json::json;
use support::{Gate, Mode, drain, next_event, serve, server, text};

/// The manifest of a server that pushes events in one feature set, `alerts`.
fn pushes_alerts() -> Manifest {
    Manifest::new()
        .with_push_events(true)
        .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
}

/// An MCPL server whose `alert` tool pushes the event `evt-1` every time (a server retrying an
/// event it is not sure was delivered).
fn alerts() -> Server {
    Server::builder("alerts", "1.0.0")
        .mcpl(Mcpl::new(pushes_alerts()))
        .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
            let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
            let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
                .event_id("evt-1");
            match mcpl.push_event(event).await {
                Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
                Err(refused) => Ok(ToolOutput::error(refused.to_string())),
            }
        })
        .build()
}

fn pushes(events: &[HostEvent]) -> usize {
    events.iter().filter(|e| matches!(e, HostEvent::Push { .. })).count()
}

#[tokio::test]
async fn a_push_retried_after_a_reconnect_is_delivered_once() {
    let gate = Gate::new(serve(alerts()).await, Mode::Pass).await;
    let config = server("alerts", &gate.url, json!({"reconnectIntervalMs": 20}));
    let (host, mut events) =
        Host::start(HostConfig::default().with_servers(vec![config])).await.unwrap();
    let call = host.call_tool("mcpl--alerts--alert", json!({})).await.unwrap();
    assert_eq!(text(&call.result), "accepted: true");
    let HostEvent::Push { server, event } =
        next_event(&mut events, "the push", |e| matches!(e, HostEvent::Push { .. })).await
    else {
        unreachable!()
    };
    assert_eq!((server.as_str(), event.event_id.as_str()), ("alerts", "evt-1"));

    // The connection drops; the host reconnects; the server retries the same event.
    gate.kill();
    next_event(&mut events, "the drop", |e| matches!(e, HostEvent::Disconnected { .. })).await;
    next_event(&mut events, "the reconnect", |e| matches!(e, HostEvent::Connected { .. })).await;
    let call = host.call_tool("mcpl--alerts--alert", json!({})).await.unwrap();
    assert_eq!(text(&call.result), "accepted: true", "the retry is answered");
    // The host's handler ran before the tool's answer came back: no second delivery is queued.
    assert_eq!(pushes(&drain(&mut events)), 0, "the retried event was delivered again");
    host.shutdown().await;
}

/// An MCPL server whose `flood` tool pushes `count` events with ids `evt-{from}` onwards and
/// says how many the host accepted (a server flooding a host whose application reads slowly).
fn flooding() -> Server {
    Server::builder("flood", "1.0.0")
        .mcpl(Mcpl::new(pushes_alerts()))
        .tool(Tool::new("flood", ToolSchema::object()), |ctx, args| async move {
            let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
            let number = |key: &str| args.get(key).and_then(serde_json::Value::as_u64).unwrap_or(0);
            let (from, count) = (number("from"), number("count"));
            let mut accepted = Vec::new();
            let mut reasons = std::collections::BTreeSet::new();
            for i in from..from + count {
                let event = PushEvent::new("alerts", vec![McplContent::text("more")])
                    .event_id(format!("evt-{i}"));
                match mcpl.push_event(event).await {
                    Ok(result) if result.accepted => accepted.push(i),
                    Ok(result) => {
                        reasons.insert(result.reason.unwrap_or_default());
                    }
                    Err(refused) => return Ok(ToolOutput::error(refused.to_string())),
                }
            }
            Ok(ToolOutput::text(json!({"accepted": accepted, "reasons": reasons}).to_string()))
        })
        .build()
}

fn pushed_ids(events: &[HostEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            HostEvent::Push { event, .. } => Some(event.event_id.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_flood_of_pushes_waits_in_a_bounded_queue_and_the_rest_are_declined() {
    let config = server("flood", &format!("ws://{}/ws", serve(flooding()).await), json!({}));
    let (host, mut events) = Host::builder(HostConfig::default().with_servers(vec![config]))
        .event_capacity(8)
        .start()
        .await
        .unwrap();
    next_event(&mut events, "the tools", |e| matches!(e, HostEvent::ToolsChanged { .. })).await;
    drain(&mut events);

    // Nobody reads: 8 fit, the other 992 are declined, and the host holds no more than 8.
    let call = host.call_tool("mcpl--flood--flood", json!({"from": 0, "count": 1000})).await;
    let answer: serde_json::Value = serde_json::from_str(&text(&call.unwrap().result)).unwrap();
    assert_eq!(answer["accepted"], json!((0..8).collect::<Vec<_>>()));
    let reasons = answer["reasons"].as_array().unwrap();
    assert_eq!(reasons.len(), 1);
    assert!(reasons[0].as_str().unwrap().contains("queue is full"), "{reasons:?}");
    let read = drain(&mut events);
    assert_eq!(pushed_ids(&read), (0..8).map(|i| format!("evt-{i}")).collect::<Vec<_>>());
    assert!(!read.iter().any(|e| matches!(e, HostEvent::Missed { .. })), "a push is never missed");

    // A declined event is not remembered: sent again once there is room, it is delivered.
    let call = host.call_tool("mcpl--flood--flood", json!({"from": 8, "count": 3})).await;
    let answer: serde_json::Value = serde_json::from_str(&text(&call.unwrap().result)).unwrap();
    assert_eq!(answer["accepted"], json!([8, 9, 10]));
    assert_eq!(pushed_ids(&drain(&mut events)), ["evt-8", "evt-9", "evt-10"]);
    // An accepted one is: sent again, it is answered and not delivered twice.
    let call = host.call_tool("mcpl--flood--flood", json!({"from": 10, "count": 1})).await;
    let answer: serde_json::Value = serde_json::from_str(&text(&call.unwrap().result)).unwrap();
    assert_eq!(answer["accepted"], json!([10]));
    assert!(pushed_ids(&drain(&mut events)).is_empty());
    host.shutdown().await;
}

/// A plain MCP server whose tools need the client's model, user and roots.
fn asking() -> Server {
    Server::builder("asker", "1.0.0")
        .tool(Tool::new("title", ToolSchema::object()), |ctx, _args| async move {
            if let Some(answer) = ctx.sampling_response("ask") {
                let SamplingContent::Single(SamplingMessageContentBlock::Text(t)) = &answer.content
                else {
                    return Ok(ToolOutput::error("not text").into());
                };
                return Ok(ToolOutput::text(format!("{} by {}", t.text, answer.model)).into());
            }
            let ask = TextContent::new("A title?");
            let message = SamplingMessage::new(Role::User, SamplingMessageContentBlock::Text(ask));
            let params = CreateMessageRequestParams::new(vec![message], 20);
            Ok::<ToolReply, _>(ctx.input_required().sample("ask", params).into())
        })
        .tool(Tool::new("greet", ToolSchema::object()), |ctx, _args| async move {
            if let Some(ElicitValue::String(name)) = ctx.elicited("who").and_then(|c| c.get("name"))
            {
                return Ok(ToolOutput::text(format!("Hello, {name}!")).into());
            }
            let form = ElicitationSchema::default()
                .with_property("name", StringSchema::default())
                .with_required("name");
            let ask = ElicitRequestFormParams::new("What is your name?", form);
            Ok::<ToolReply, _>(ctx.input_required().elicit("who", ask).into())
        })
        .tool(Tool::new("sign_in", ToolSchema::object()), |ctx, _args| async move {
            if let Some(answer) = ctx.elicitation_response("url") {
                return Ok(ToolOutput::text(format!("sign-in: {:?}", answer.action)).into());
            }
            let ask = ElicitRequestURLParams::new("Sign in", "https://example.com/sign-in");
            Ok::<ToolReply, _>(ctx.input_required().elicit("url", ask).into())
        })
        .tool(Tool::new("dirs", ToolSchema::object()), |ctx, _args| async move {
            let Some(roots) = ctx.roots_response("roots") else {
                return Ok::<ToolReply, _>(ctx.input_required().list_roots("roots").into());
            };
            let uris: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
            Ok(ToolOutput::text(uris.join(", ")).into())
        })
        .build()
}

#[tokio::test]
async fn sampling_elicitation_and_roots_reach_the_embedder() {
    let gate = Gate::new(serve(asking()).await, Mode::Pass).await;
    let config = HostConfig::default().with_servers(vec![server("asker", &gate.url, json!({}))]);
    let (host, _events) = Host::builder(config)
        .on_sampling(|server, params| async move {
            let reply =
                TextContent::new(format!("{server}'s title ({} message)", params.messages.len()));
            let reply = SamplingMessageContentBlock::Text(reply);
            Ok(CreateMessageResult::new(Role::Assistant, reply, "host-model"))
        })
        .on_elicitation(|server, form| async move {
            assert_eq!(form.message, "What is your name?");
            let mut result = ElicitResult::new(ElicitAction::Accept);
            let name = ElicitValue::String(format!("user of {server}"));
            result.content = Some(BTreeMap::from([("name".to_owned(), name)]));
            Ok(result)
        })
        .on_url_elicitation(|_server, request| async move {
            assert_eq!(request.url, "https://example.com/sign-in");
            Ok(ElicitResult::new(ElicitAction::Decline))
        })
        .on_roots(|server| async move {
            Ok(vec![Root::new(format!("file:///work/{server}")), Root::new("file:///shared")])
        })
        .start()
        .await
        .unwrap();
    let call = |name: &'static str| {
        let host = host.clone();
        async move { text(&host.call_tool(name, json!({})).await.unwrap().result) }
    };
    assert_eq!(call("mcpl--asker--title").await, "asker's title (1 message) by host-model");
    assert_eq!(call("mcpl--asker--greet").await, "Hello, user of asker!");
    assert_eq!(call("mcpl--asker--sign_in").await, "sign-in: Decline");
    assert_eq!(call("mcpl--asker--dirs").await, "file:///work/asker, file:///shared");
    host.shutdown().await;
}

#[tokio::test]
async fn a_top_level_feature_set_tag_attributes_state() {
    // Two host-managed sets: an untagged tool's state could belong to either.
    let host_managed = |name: &str| {
        let mut set = FeatureSet::new(name, ["tools"]);
        set.extra.insert("hostState".into(), json!(true));
        set
    };
    let manifest = Manifest::new()
        .with_feature_set("notes.a", host_managed("a"))
        .with_feature_set("notes.b", host_managed("b"));
    // Tagged by the top-level `featureSet` member (not `_meta.featureSet`).
    let put: Tool = serde_json::from_value(
        json!({"name": "put", "inputSchema": {"type": "object"}, "featureSet": "notes.b"}),
    )
    .unwrap();
    let server_def = Server::builder("tagged", "1.0.0")
        .mcpl(Mcpl::new(manifest))
        .tool(put, |_ctx, _args| async {
            let state = StateCheckpoint::snapshot("c1", None, json!({"items": ["milk"]}));
            Ok(ToolOutput::text("put").with_state(state))
        })
        .build();
    let gate = Gate::new(serve(server_def).await, Mode::Pass).await;
    let config = HostConfig::default().with_servers(vec![server("t", &gate.url, json!({}))]);
    let (host, _events) = Host::start(config).await.unwrap();
    assert_eq!(
        host.tools()[0].extra["featureSet"],
        "notes.b",
        "the tag reaches the model's listing"
    );
    let call = host.call_tool("mcpl--t--put", json!({})).await.unwrap();
    assert!(
        matches!(&call.state, RecordOutcome::Recorded { feature_set, .. } if feature_set == "notes.b"),
        "{:?}",
        call.state
    );
    let tree = host.checkpoints().tree("t", "notes.b").unwrap();
    assert_eq!(tree.current_state(), Some(&json!({"items": ["milk"]})));
    assert_eq!(host.checkpoints().tree("t", "notes.a").unwrap().current, None);
    host.shutdown().await;
}
