//! MCPL 0.5 on the server side, over a line transport (real bytes), with a raw engine as the
//! host: the manifest in `initialize`, readiness, the policy (request and notification forms),
//! the gate of every server-to-host send, every host-to-server handler, state results,
//! rollback errors and manifest announcements.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::mcpl::channels::{
    ChannelDescriptor, ChannelDirection, CloseChannelResult, OpenChannelResult, PublishResult,
};
use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
use mcpl_core::mcpl::errors;
use mcpl_core::mcpl::hooks::{BeforeInferenceResult, ContextInjection, Position};
use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
use mcpl_core::mcpl::state::{RollbackResult, StateCheckpoint};
use mcpl_core::transport::lines::LineTransport;
use mcpl_core::types::{Tool, ToolSchema};
use mcpl_core::{Engine, Peer};
use mcpl_server::mcpl::{Mcpl, McplConnection, McplTool, PushEvent, SendErrorKind, WithState};
use mcpl_server::{Server, Session, ToolOutput};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(10);

fn manifest() -> Manifest {
    let mut store = FeatureSet::new("Stateful store", ["tools"]);
    store.rollback = Some(true);
    Manifest::new()
        .with_push_events(true)
        .with_model_info(true)
        .with_inference_lifecycle(true)
        .with_inference_request(Capability::Flag(true))
        .with_context_hooks(Capability::Flag(true))
        .with_channels(Capability::Flag(true))
        .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
        .with_feature_set("mismatch", FeatureSet::new("Declares too little", ["modelInfo"]))
        .with_feature_set(
            "ai",
            FeatureSet::new("Inference", ["inferenceRequest", "inferenceRequest.streaming"]),
        )
        .with_feature_set("ai.plain", FeatureSet::new("Inference", ["inferenceRequest"]))
        .with_feature_set(
            "ctx",
            FeatureSet::new("Context", ["contextHooks.beforeInference.inject.afterUser"]),
        )
        .with_feature_set("store", store)
        .with_feature_set("plain", FeatureSet::new("No rollback", ["tools"]))
}

fn injection(position: Position, text: String) -> ContextInjection {
    ContextInjection::new("test", position, TextOrBlocks::Text(text))
}

type Seen = Arc<Mutex<Vec<(String, Value)>>>;

fn server(seen: Seen) -> Server {
    let (lifecycle, publish, typing) = (seen.clone(), seen.clone(), seen.clone());
    let mcpl = Mcpl::new(manifest())
        .on_before_inference(|_conn, params| async move {
            let user = params.user_message.unwrap_or_else(|| "<null>".into());
            Ok(BeforeInferenceResult::new("ctx").with_context_injections(vec![
                injection(Position::AfterUser, format!("after: {user}")),
                injection(Position::System, "system".into()),
                injection(Position::BeforeUser, "before".into()),
            ]))
        })
        .on_inference_lifecycle(move |_conn, params| {
            let seen = lifecycle.clone();
            async move {
                seen.lock().unwrap().push(("lifecycle".into(), json!(params.inference_id)));
            }
        })
        .on_rollback(|_conn, params| async move {
            if params.checkpoint == "known" {
                Ok(RollbackResult::new(params.checkpoint, true))
            } else {
                Err(errors::checkpoint_not_found(&params.checkpoint))
            }
        })
        .on_channel_open(|_conn, params| async move {
            if params.channel_type == "broken" {
                return Err(errors::channel_open_failed("cannot open broken channels"));
            }
            Ok(OpenChannelResult::new(ChannelDescriptor::new(
                "c1",
                params.channel_type,
                "C1",
                ChannelDirection::Bidirectional,
            )))
        })
        .on_channel_close(|_conn, params| async move {
            if params.channel_id == "c1" {
                Ok(CloseChannelResult::new(true))
            } else {
                Err(errors::unknown_channel(&params.channel_id))
            }
        })
        .on_channel_publish(move |_conn, params| {
            let seen = publish.clone();
            async move {
                seen.lock().unwrap().push(("publish".into(), json!(params.channel_id)));
                Ok(PublishResult::new(true).with_message_id("m1"))
            }
        })
        .on_channel_typing(move |_conn, params| {
            let seen = typing.clone();
            async move {
                seen.lock().unwrap().push(("typing".into(), json!(params.channel_id)));
            }
        });
    Server::builder("mcpl-test", "1.0.0")
        .mcpl(mcpl)
        .tool(
            Tool::new("count", ToolSchema::object()).in_feature_set("store"),
            |ctx, _args| async move {
                let fields = ctx.mcpl_state().clone();
                let n = fields.state.as_ref().and_then(|s| s["n"].as_u64()).unwrap_or(0) + 1;
                let state =
                    StateCheckpoint::snapshot(format!("n{n}"), fields.checkpoint, json!({"n": n}));
                Ok(ToolOutput::text(n.to_string()).with_state(state))
            },
        )
        .try_build()
        .unwrap()
}

struct Host {
    peer: Peer,
    notifications: mpsc::UnboundedReceiver<(String, Value)>,
    server: Server,
    seen: Seen,
    session: Session,
}

fn host_engine(tx: mpsc::UnboundedSender<(String, Value)>) -> Engine {
    let engine = Engine::new();
    engine.on_request("push/event", |_ctx, params| async move {
        let id = params.unwrap()["eventId"].clone();
        Ok(json!({"accepted": true, "inferenceId": id}))
    });
    engine.on_request("model/info", |_ctx, _params| async {
        Ok(json!({"id": "m-1", "vendor": "test", "contextWindow": 1000, "capabilities": ["text"]}))
    });
    engine.on_request("inference/request", |ctx, params| async move {
        let params = params.unwrap();
        if params["stream"] == true {
            for (i, delta) in ["po", "n", "g"].iter().enumerate() {
                let chunk = json!({"requestId": ctx.id(), "index": i, "delta": delta});
                ctx.peer().notify("inference/chunk", Some(chunk)).await.unwrap();
            }
        }
        Ok(json!({"content": "pong", "model": "m-1", "finishReason": "end_turn",
            "usage": {"inputTokens": 1, "outputTokens": 3}}))
    });
    engine.on_request("channels/register", |_ctx, params| async move {
        let results: Vec<Value> = params.unwrap()["channels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| json!({"id": c["id"], "accepted": true}))
            .collect();
        Ok(json!({ "results": results }))
    });
    engine.on_any_notification(move |ctx, params| {
        let _ = tx.send((ctx.method().to_owned(), params.unwrap_or(Value::Null)));
        async {}
    });
    engine
}

async fn connect(mcpl: bool) -> (Host, Value) {
    let seen: Seen = Arc::default();
    connect_to(server(seen.clone()), seen, mcpl).await
}

/// Connects a raw host to `server` over a line transport and runs `initialize`.
async fn connect_to(server: Server, seen: Seen, mcpl: bool) -> (Host, Value) {
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (r, w) = tokio::io::split(theirs);
    let session = server.serve(LineTransport::new(r, w)).await.unwrap();
    let (tx, notifications) = mpsc::unbounded_channel();
    let (r, w) = tokio::io::split(ours);
    let peer = host_engine(tx).connect(LineTransport::new(r, w)).await.unwrap();
    let experimental = if mcpl {
        json!({"mcpl": {"version": "0.5", "pushEvents": true, "featureSets": true}})
    } else {
        json!({})
    };
    let init = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"experimental": experimental},
        "clientInfo": {"name": "raw-host", "version": "0"},
    });
    let result = peer.request("initialize", Some(init), Default::default()).await.unwrap();
    peer.notify("notifications/initialized", None).await.unwrap();
    (Host { peer, notifications, server, seen, session }, result)
}

impl Host {
    async fn call(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        self.peer
            .request(method, Some(params), Default::default())
            .await
            .map_err(|e| e.rpc_error().cloned().unwrap_or_else(|| panic!("{method}: {e}")))
    }

    async fn policy(&self, grant: &[&str]) -> Value {
        self.call("featureSets/update", json!({ "effectiveCapabilities": grant })).await.unwrap()
    }

    fn conn(&self) -> McplConnection {
        let all = self.server.mcpl_connections();
        assert_eq!(all.len(), 1);
        all.into_iter().next().unwrap()
    }

    /// Waits until `check` holds (notifications are applied asynchronously).
    async fn until(&self, what: &str, check: impl Fn(&McplConnection) -> bool) {
        let conn = self.conn();
        tokio::time::timeout(WAIT, async {
            while !check(&conn) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
    }

    async fn next_notification(&mut self) -> (String, Value) {
        tokio::time::timeout(WAIT, self.notifications.recv()).await.unwrap().unwrap()
    }

    fn no_notification(&mut self) {
        if let Ok(n) = self.notifications.try_recv() {
            panic!("unexpected notification {n:?}");
        }
    }
}

fn ping(feature_set: &str) -> InferenceRequestParams {
    InferenceRequestParams::new(
        feature_set,
        vec![InferenceMessage::new("user", TextOrBlocks::Text("ping".into()))],
    )
}

fn kind<T: std::fmt::Debug>(r: Result<T, mcpl_server::mcpl::SendError>) -> SendErrorKind {
    r.unwrap_err().kind()
}

fn code(e: &ErrorObject) -> i64 {
    e.code.0
}

#[tokio::test]
async fn a_host_without_mcpl_gets_plain_mcp() {
    let (host, init) = connect(false).await;
    assert!(init["capabilities"]["experimental"].get("mcpl").is_none(), "{init}");
    assert!(host.server.mcpl_connections().is_empty());
    assert!(host.session.mcpl().is_none());
    let e =
        host.call("featureSets/update", json!({"effectiveCapabilities": []})).await.unwrap_err();
    assert_eq!(code(&e), -32601);
    let e = host.call("mcpl/manifest", json!({})).await.unwrap_err();
    assert_eq!(code(&e), -32601);
}

#[tokio::test]
async fn the_manifest_rides_on_initialize_with_its_computed_revision() {
    let (host, init) = connect(true).await;
    let sent = &init["capabilities"]["experimental"]["mcpl"];
    let manifest = Manifest::from_value(sent.clone()).unwrap();
    assert_eq!(manifest.revision(), Some(manifest.compute_revision().unwrap()));
    assert_eq!(sent["featureSets"]["alerts"]["uses"], json!(["pushEvents"]));
    let conn = host.session.mcpl().unwrap();
    assert_eq!(conn.host().version, "0.5");
    assert!(!conn.is_ready() && conn.grant().is_empty());
    // mcpl/manifest is ungated: it answers before any policy, from the same snapshot.
    let fetched = host.call("mcpl/manifest", json!({})).await.unwrap();
    assert_eq!(&fetched, sent);
}

#[tokio::test]
async fn nothing_is_sent_before_the_first_policy_request_is_answered() {
    let (host, _) = connect(true).await;
    let conn = host.conn();
    assert!(!conn.is_ready());
    let refused = conn.push_event(PushEvent::new("alerts", vec![McplContent::text("x")])).await;
    assert_eq!(refused.unwrap_err().kind(), SendErrorKind::NotReady);
    assert_eq!(conn.model_info().await.unwrap_err().kind(), SendErrorKind::NotReady);
    // A notification cannot establish readiness.
    host.peer
        .notify("featureSets/update", Some(json!({"effectiveCapabilities": ["pushEvents"]})))
        .await
        .unwrap();
    let e = host.call("context/beforeInference", json!({})).await.unwrap_err();
    assert_eq!(code(&e), -32002);
    assert!(!conn.is_ready());
    // The request does, and is answered with the receipt.
    let receipt = host.policy(&["pushEvents"]).await;
    assert_eq!(receipt["accepted"], true);
    assert_eq!(receipt["mode"], "degraded");
    let unavailable = receipt["unavailableFeatures"].as_array().unwrap();
    assert!(unavailable.iter().any(|u| u["featureSet"] == "ai" && u["effect"] == "disabled"));
    assert!(!unavailable.iter().any(|u| u["featureSet"] == "alerts"));
    assert!(conn.is_ready());
    let sent = conn
        .push_event(PushEvent::new("alerts", vec![McplContent::text("x")]).event_id("e1"))
        .await;
    assert_eq!(sent.unwrap().inference_id.as_deref(), Some("e1"));
}

#[tokio::test]
async fn every_gated_send_refuses_locally() {
    let (host, _) = connect(true).await;
    let conn = host.conn();
    host.policy(&["pushEvents", "modelInfo", "inferenceRequest"]).await;
    let push = |set: &str| PushEvent::new(set, vec![McplContent::text("x")]);
    assert_eq!(kind(conn.push_event(push("nope")).await), SendErrorKind::FeatureSetUndeclared);
    assert_eq!(kind(conn.push_event(push("mismatch")).await), SendErrorKind::DeclarationMismatch);
    assert_eq!(kind(conn.push_event(push("ai")).await), SendErrorKind::FeatureSetDisabled);
    assert!(conn.push_event(push("alerts")).await.is_ok());
    // Streaming needs its own grant; the plain request goes through.
    let streaming = conn.request_inference_streaming(ping("ai.plain"), |_| {}).await;
    assert_eq!(kind(streaming), SendErrorKind::NotGranted);
    assert_eq!(conn.request_inference(ping("ai.plain")).await.unwrap().content, "pong");
    assert_eq!(conn.model_info().await.unwrap().id, "m-1");
    let channel = ChannelDescriptor::new("c", "chat", "C", ChannelDirection::Outbound);
    assert_eq!(kind(conn.register_channels(vec![channel]).await), SendErrorKind::NotGranted);
    assert_eq!(kind(conn.channels_changed(Default::default()).await), SendErrorKind::NotGranted);
    assert_eq!(kind(conn.list_channels().await), SendErrorKind::NotGranted);
    assert_eq!(kind(conn.channels_incoming(vec![]).await), SendErrorKind::NotGranted);
    match conn.register_channels(vec![]).await.unwrap_err() {
        mcpl_server::mcpl::SendError::NotGranted { capability } => {
            assert_eq!(capability, "channels.register");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn streaming_inference_delivers_every_chunk_before_the_result() {
    let (host, _) = connect(true).await;
    let conn = host.conn();
    host.policy(&["inferenceRequest", "inferenceRequest.streaming"]).await;
    for _ in 0..5 {
        let chunks = Arc::new(Mutex::new(Vec::new()));
        let c = chunks.clone();
        let result = conn
            .request_inference_streaming(ping("ai"), move |chunk| {
                c.lock().unwrap().push((chunk.index, chunk.delta));
            })
            .await
            .unwrap();
        assert_eq!(result.content, "pong");
        let chunks = chunks.lock().unwrap().clone();
        assert_eq!(chunks, [(0, "po".to_owned()), (1, "n".to_owned()), (2, "g".to_owned())]);
    }
}

#[tokio::test]
async fn grants_narrow_and_widen_only_by_request_and_notifications_only_narrow() {
    let (host, _) = connect(true).await;
    let conn = host.conn();
    host.policy(&["pushEvents", "modelInfo"]).await;
    assert!(conn.is_enabled("alerts"));
    // A notification applies its `disabled` list at once and ignores grant fields.
    let narrowing = json!({"disabled": ["alerts"], "effectiveCapabilities": ["channels.register"]});
    host.peer.notify("featureSets/update", Some(narrowing)).await.unwrap();
    host.until("alerts disabled", |c| !c.is_enabled("alerts")).await;
    assert!(!conn.is_granted("channels.register"), "a notification never widens");
    let refused = conn.push_event(PushEvent::new("alerts", vec![])).await.unwrap_err();
    assert_eq!(refused.kind(), SendErrorKind::FeatureSetDisabled);
    // A request reduces at once.
    host.policy(&["modelInfo"]).await;
    assert!(!conn.is_granted("pushEvents"));
    assert_eq!(
        conn.push_event(PushEvent::new("alerts", vec![])).await.unwrap_err().kind(),
        SendErrorKind::NotGranted
    );
    // And widens, with `enabled` as an allowlist.
    let receipt = host
        .call("featureSets/update", json!({"effectiveCapabilities": ["pushEvents", "channels.*", "tools"], "enabled": ["alerts"]}))
        .await
        .unwrap();
    assert!(
        receipt["unavailableFeatures"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["featureSet"] == "plain" && u["reason"] == "not_selected")
    );
    assert!(conn.is_enabled("alerts") && conn.is_granted("channels.register"));
    assert!(!conn.is_granted("modelInfo"), "absent from the new grant");
    // A path both granted and denied: -32602, and the grant becomes empty.
    let e = host
        .call(
            "featureSets/update",
            json!({"effectiveCapabilities": ["pushEvents"], "deniedCapabilities": ["pushEvents"]}),
        )
        .await
        .unwrap_err();
    assert_eq!(code(&e), -32602);
    assert!(conn.grant().is_empty());
    assert_eq!(
        conn.push_event(PushEvent::new("alerts", vec![])).await.unwrap_err().kind(),
        SendErrorKind::NotGranted
    );
}

#[tokio::test]
async fn before_inference_drops_ungranted_injections_and_passes_the_user_message() {
    let (host, _) = connect(true).await;
    let params = json!({"inferenceId": "i1", "conversationId": "c", "turnIndex": 0,
        "userMessage": "hello", "model": {"id": "m", "vendor": "v", "contextWindow": 1, "capabilities": []}});
    host.policy(&["pushEvents"]).await;
    let e = host.call("context/beforeInference", params.clone()).await.unwrap_err();
    assert_eq!(code(&e), -32002);
    assert!(
        e.data.unwrap()["capability"].as_str().unwrap().starts_with("contextHooks.beforeInference")
    );
    // Only afterUser granted: the other two positions are dropped.
    host.policy(&["contextHooks.beforeInference.inject.afterUser"]).await;
    let r = host.call("context/beforeInference", params.clone()).await.unwrap();
    let injections = r["contextInjections"].as_array().unwrap();
    assert_eq!(injections.len(), 1, "{r}");
    assert_eq!(injections[0]["position"], "afterUser");
    assert_eq!(injections[0]["content"], "after: hello", "userMessage passed as given");
    // System granted too: kept as well.
    host.policy(&[
        "contextHooks.beforeInference.inject.afterUser",
        "contextHooks.beforeInference.inject.system",
    ])
    .await;
    let r = host.call("context/beforeInference", params.clone()).await.unwrap();
    let positions: Vec<_> =
        r["contextInjections"].as_array().unwrap().iter().map(|i| i["position"].clone()).collect();
    assert_eq!(positions, [json!("afterUser"), json!("system")]);
    // The answer's set disabled by the host: every injection goes.
    let policy = json!({"effectiveCapabilities": ["contextHooks.beforeInference.inject.afterUser"], "disabled": ["ctx"]});
    host.call("featureSets/update", policy).await.unwrap();
    let r = host.call("context/beforeInference", params).await.unwrap();
    assert_eq!(r["contextInjections"], json!([]));
    assert_eq!(r["featureSet"], "ctx");
}

#[tokio::test]
async fn host_to_server_methods_are_gated_and_answered() {
    let (host, _) = connect(true).await;
    host.policy(&["channels.lifecycle", "channels.publish", "channels.acknowledge"]).await;
    // Not granted: -32002 with the capability.
    let e = host.call("channels/list", json!({})).await.unwrap_err();
    assert_eq!(code(&e), -32002);
    assert_eq!(e.data.unwrap()["capability"], "channels.register");
    // Granted and served.
    let open = json!({"type": "chat", "address": {}});
    assert_eq!(host.call("channels/open", open).await.unwrap()["channel"]["id"], "c1");
    let e = host.call("channels/open", json!({"type": "broken", "address": {}})).await.unwrap_err();
    assert_eq!(code(&e), -32024);
    assert_eq!(
        host.call("channels/close", json!({"channelId": "c1"})).await.unwrap()["closed"],
        true
    );
    let e = host.call("channels/close", json!({"channelId": "zz"})).await.unwrap_err();
    assert_eq!(code(&e), -32023);
    let publish = json!({"conversationId": "c", "channelId": "c1", "content": [{"type": "text", "text": "hi"}]});
    assert_eq!(host.call("channels/publish", publish.clone()).await.unwrap()["messageId"], "m1");
    host.peer.notify("channels/publish", Some(publish)).await.unwrap();
    // Granted but no handler: -32601; removed 0.5 methods: -32601; bad params: -32602.
    let ack = json!({"channelId": "c1", "messageId": "m", "intent": "seen"});
    assert_eq!(code(&host.call("channels/acknowledge", ack).await.unwrap_err()), -32601);
    for removed in
        ["context/afterInference", "scope/elevate", "featureSets/changed", "tags/describe"]
    {
        assert_eq!(code(&host.call(removed, json!({})).await.unwrap_err()), -32601, "{removed}");
    }
    assert_eq!(code(&host.call("channels/open", json!({"type": 5})).await.unwrap_err()), -32602);
    // Notifications: typing is not granted (dropped), lifecycle neither; then grant them.
    host.peer.notify("channels/typing", Some(json!({"channelId": "c1"}))).await.unwrap();
    host.peer
        .notify("inference/lifecycle", Some(json!({"inferenceId": "i0", "phase": "started"})))
        .await
        .unwrap();
    // Notifications are handled in order, apart from requests: wait for a granted one before
    // widening the grant, so the two above were judged under the old grant.
    let barrier = json!({"conversationId": "c", "channelId": "barrier", "content": []});
    host.peer.notify("channels/publish", Some(barrier)).await.unwrap();
    let seen = host.seen.clone();
    tokio::time::timeout(WAIT, async {
        while !seen.lock().unwrap().iter().any(|(_, v)| *v == json!("barrier")) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    host.policy(&["channels.typing", "inferenceLifecycle"]).await;
    host.peer.notify("channels/typing", Some(json!({"channelId": "c9"}))).await.unwrap();
    host.peer
        .notify("inference/lifecycle", Some(json!({"inferenceId": "i1", "phase": "started"})))
        .await
        .unwrap();
    tokio::time::timeout(WAIT, async {
        while seen.lock().unwrap().len() < 5 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            ("publish".to_owned(), json!("c1")),
            ("publish".to_owned(), json!("c1")),
            ("publish".to_owned(), json!("barrier")),
            ("typing".to_owned(), json!("c9")),
            ("lifecycle".to_owned(), json!("i1")),
        ]
    );
}

#[tokio::test]
async fn rollback_serves_only_rollback_sets_and_reports_unknown_checkpoints() {
    let (host, _) = connect(true).await;
    host.policy(&["tools"]).await;
    let ok =
        host.call("state/rollback", json!({"featureSet": "store", "checkpoint": "known"})).await;
    assert_eq!(ok.unwrap()["success"], true);
    let e = host
        .call("state/rollback", json!({"featureSet": "store", "checkpoint": "pruned"}))
        .await
        .unwrap_err();
    assert_eq!(code(&e), -32005);
    assert_eq!(e.data.unwrap()["checkpoint"], "pruned");
    let e = host
        .call("state/rollback", json!({"featureSet": "plain", "checkpoint": "known"}))
        .await
        .unwrap_err();
    assert_eq!(code(&e), -32602);
    let e = host
        .call("state/rollback", json!({"featureSet": "nope", "checkpoint": "known"}))
        .await
        .unwrap_err();
    assert_eq!(code(&e), -32003);
}

#[tokio::test]
async fn tools_read_the_state_fields_and_return_a_checkpoint() {
    let (host, _) = connect(true).await;
    let tools = host.call("tools/list", json!({})).await.unwrap();
    assert_eq!(tools["tools"][0]["_meta"]["featureSet"], "store");
    let call = json!({"name": "count", "arguments": {}, "state": {"n": 4}, "checkpoint": "n4"});
    let result = host.call("tools/call", call).await.unwrap();
    assert_eq!(result["content"][0]["text"], "5");
    assert_eq!(result["state"], json!({"checkpoint": "n5", "parent": "n4", "data": {"n": 5}}));
    let first = host.call("tools/call", json!({"name": "count", "arguments": {}})).await.unwrap();
    assert_eq!(first["state"], json!({"checkpoint": "n1", "parent": null, "data": {"n": 1}}));
}

#[tokio::test]
async fn manifest_changes_are_announced_once_per_revision_and_never_after_the_handshake() {
    let (mut host, _) = connect(true).await;
    host.policy(&[]).await;
    host.call("mcpl/manifest", json!({})).await.unwrap();
    host.no_notification();
    // A version-only change is not announced.
    host.server.update_mcpl_manifest(|m| m.with_member("version", json!("0.5.1"))).unwrap();
    // A feature-set change is, with its domain; the fetched manifest has the same revision.
    let revision = host
        .server
        .update_mcpl_manifest(|m| m.with_feature_set("extra", FeatureSet::new("Extra", ["tools"])))
        .unwrap();
    let (method, params) = host.next_notification().await;
    assert_eq!(method, "mcpl/manifestChanged");
    assert_eq!(params, json!({"revision": revision.as_str(), "domains": ["featureSets"]}));
    let fetched = host.call("mcpl/manifest", json!({})).await.unwrap();
    assert_eq!(fetched["revision"], revision.as_str());
    assert_eq!(fetched["featureSets"]["extra"]["uses"], json!(["tools"]));
    // A capability change.
    let revision = host.server.update_mcpl_manifest(|m| m.with_push_events(false)).unwrap();
    let (_, params) = host.next_notification().await;
    assert_eq!(params, json!({"revision": revision.as_str(), "domains": ["capabilities"]}));
    // Setting the same manifest again announces nothing.
    let same = host.server.mcpl_manifest().unwrap();
    host.server.set_mcpl_manifest(same).unwrap();
    host.call("mcpl/manifest", json!({})).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    host.no_notification();
    // A manifest without a revision is refused and the installed one stays.
    let bad = Manifest::new().with_feature_set("bad name", FeatureSet::new("x", ["tools"]));
    assert_eq!(host.server.set_mcpl_manifest(bad).unwrap_err().kind(), "identifier_charset");
    assert_eq!(host.server.mcpl_manifest().unwrap().revision(), Some(revision));
}

/// A manifest whose `notes` set does not parse (`rollback` is not a boolean).
fn manifest_with_a_malformed_set() -> Manifest {
    let mut map = Manifest::new()
        .with_push_events(true)
        .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
        .into_map();
    map["featureSets"]["notes"] =
        json!({"description": "Notes", "uses": ["tools"], "rollback": "yes"});
    Manifest::from_map(map)
}

#[tokio::test]
async fn the_builder_refuses_a_feature_set_it_cannot_serve_and_serves_the_rest() {
    // `try_build` names the set it cannot use.
    let refused = Server::builder("s", "1")
        .mcpl(Mcpl::new(manifest_with_a_malformed_set()))
        .try_build()
        .unwrap_err();
    assert_eq!(refused.problems.len(), 1, "{refused}");
    assert!(refused.to_string().contains("\"notes\""), "{refused}");
    // So is a set whose `uses` is not a list of capability paths.
    let manifest = Manifest::new()
        .with_feature_set("later", FeatureSet::new("State updates", ["stateUpdate"]))
        .with_feature_set("none", FeatureSet::new("Nothing", Vec::<String>::new()));
    let refused = Server::builder("s", "1").mcpl(Mcpl::new(manifest)).try_build().unwrap_err();
    assert_eq!(refused.problems.len(), 2, "{refused}");

    // `build` leaves the set out; every other set works, and the receipt tells the truth.
    let server = Server::builder("s", "1").mcpl(Mcpl::new(manifest_with_a_malformed_set())).build();
    let (host, init) = connect_to(server, Seen::default(), true).await;
    let served = &init["capabilities"]["experimental"]["mcpl"];
    assert_eq!(served["featureSets"].as_object().unwrap().len(), 1, "{served}");
    assert!(served["featureSets"]["alerts"].is_object());
    let receipt = host.policy(&["pushEvents", "tools"]).await;
    assert_eq!(receipt["accepted"], true);
    let conn = host.conn();
    assert!(conn.is_enabled("alerts"));
    let pushed = conn.push_event(PushEvent::new("alerts", vec![McplContent::text("x")])).await;
    assert!(pushed.unwrap().accepted);
    let refused = conn.push_event(PushEvent::new("notes", vec![McplContent::text("x")])).await;
    assert_eq!(kind(refused), SendErrorKind::FeatureSetUndeclared);

    // At run time, such a manifest is refused and the installed one stays.
    let before = host.server.mcpl_manifest().unwrap();
    let e = host.server.set_mcpl_manifest(manifest_with_a_malformed_set()).unwrap_err();
    assert_eq!(e.kind(), "invalid_feature_set");
    let cause = std::error::Error::source(&e).expect("the set is the cause");
    assert!(cause.to_string().contains("\"notes\""), "{cause}");
    assert_eq!(host.server.mcpl_manifest().unwrap(), before);
}

/// A server that records each `inference/lifecycle` it hands to its handler, as
/// `("lifecycle", [inferenceId, phase])`.
fn lifecycle_server(seen: Seen, configure: impl FnOnce(Mcpl) -> Mcpl) -> Server {
    let manifest = Manifest::new().with_inference_lifecycle(true).with_feature_set(
        "activity",
        FeatureSet::new("Inference activity", ["inferenceLifecycle"]),
    );
    let mcpl = Mcpl::new(manifest).on_inference_lifecycle(move |_conn, params| {
        let seen = seen.clone();
        async move {
            let phase = serde_json::to_value(params.phase).unwrap();
            seen.lock().unwrap().push(("lifecycle".into(), json!([params.inference_id, phase])));
        }
    });
    Server::builder("activity", "1").mcpl(configure(mcpl)).try_build().unwrap()
}

impl Host {
    async fn lifecycle(&self, inference_id: &str, phase: &str) {
        let params = json!({"inferenceId": inference_id, "phase": phase});
        self.peer.notify("inference/lifecycle", Some(params)).await.unwrap();
    }

    /// Waits until the handler saw `[inference_id, phase]` (notifications are handled in
    /// order: everything sent before it was judged by then).
    async fn lifecycle_seen(&self, inference_id: &str, phase: &str) {
        let wanted = json!([inference_id, phase]);
        tokio::time::timeout(WAIT, async {
            while !self.seen.lock().unwrap().iter().any(|(_, v)| *v == wanted) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("the handler never saw {wanted}"));
    }

    fn lifecycles(&self) -> Vec<Value> {
        self.seen.lock().unwrap().iter().map(|(_, v)| v.clone()).collect()
    }
}

#[tokio::test]
async fn the_handler_gets_one_terminal_phase_per_inference() {
    let seen = Seen::default();
    let (host, _) = connect_to(lifecycle_server(seen.clone(), |m| m), seen, true).await;
    host.policy(&["inferenceLifecycle"]).await;
    for (id, phase) in [
        ("i1", "started"),
        ("i1", "completed"),
        // A retried terminal, and a contradicting one: both dropped.
        ("i1", "completed"),
        ("i1", "aborted"),
        // A terminal without `started` is tolerated, once.
        ("i2", "failed"),
        ("i2", "failed"),
        // A duplicated `started` is dropped; the inference stays in flight.
        ("i3", "started"),
        ("i3", "started"),
        ("i4", "completed"),
    ] {
        host.lifecycle(id, phase).await;
    }
    host.lifecycle_seen("i4", "completed").await;
    assert_eq!(
        host.lifecycles(),
        [
            json!(["i1", "started"]),
            json!(["i1", "completed"]),
            json!(["i2", "failed"]),
            json!(["i3", "started"]),
            json!(["i4", "completed"]),
        ]
    );
    assert_eq!(host.conn().inferences_in_flight(), ["i3"]);
}

#[tokio::test]
async fn an_inference_without_a_terminal_phase_leaves_flight_after_the_safety_timeout() {
    let seen = Seen::default();
    let server =
        lifecycle_server(seen.clone(), |m| m.lifecycle_timeout(Duration::from_millis(200)));
    let (host, _) = connect_to(server, seen, true).await;
    host.policy(&["inferenceLifecycle"]).await;
    host.lifecycle("lost", "started").await;
    host.lifecycle_seen("lost", "started").await;
    // The host never says how it ended: the server stops waiting.
    host.until("the safety timeout", |conn| conn.inferences_in_flight().is_empty()).await;
    // A terminal arriving after all is still handed over once.
    host.lifecycle("lost", "completed").await;
    host.lifecycle("lost", "completed").await;
    host.lifecycle("next", "started").await;
    host.lifecycle_seen("next", "started").await;
    assert_eq!(
        host.lifecycles(),
        [json!(["lost", "started"]), json!(["lost", "completed"]), json!(["next", "started"])]
    );
}
