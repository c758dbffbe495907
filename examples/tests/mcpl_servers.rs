//! The two MCPL example servers as real child processes over stdio, driven by a raw engine as
//! the host: the handshake, the policy, each conformance-trigger action, the host-to-server
//! methods, state and rollback, manifest announcements.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Stdio;
use std::time::Duration;

use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::transport::lines::LineTransport;
use mcpl_core::{Engine, Peer};
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(20);

/// What the host saw: server requests and notifications, by method, with their params.
type Seen = mpsc::UnboundedReceiver<(String, Value)>;

struct Host {
    peer: Peer,
    seen: Seen,
    _child: Child,
}

fn host_engine(tx: mpsc::UnboundedSender<(String, Value)>) -> Engine {
    let engine = Engine::new();
    let record = move |method: &str, params: &Option<Value>| {
        let _ = tx.send((method.to_owned(), params.clone().unwrap_or(Value::Null)));
    };
    let r = record.clone();
    engine.on_request("push/event", move |_ctx, params| {
        r("push/event", &params);
        async { Ok(json!({"accepted": true})) }
    });
    engine.on_request("model/info", |_ctx, _params| async {
        Ok(json!({"id": "host-model", "vendor": "test", "contextWindow": 8192, "capabilities": ["text"]}))
    });
    let r = record.clone();
    engine.on_request("inference/request", move |ctx, params| {
        r("inference/request", &params);
        async move {
            if params.as_ref().is_some_and(|p| p["stream"] == true) {
                for (i, delta) in ["po", "n", "g"].iter().enumerate() {
                    let chunk = json!({"requestId": ctx.id(), "index": i, "delta": delta});
                    ctx.peer().notify("inference/chunk", Some(chunk)).await.unwrap();
                }
            }
            Ok(json!({"content": "pong", "model": "host-model", "finishReason": "end_turn",
                "usage": {"inputTokens": 1, "outputTokens": 1}}))
        }
    });
    for method in ["channels/register", "channels/changed"] {
        let r = record.clone();
        engine.on_request(method, move |_ctx, params| {
            r(method, &params);
            let p = params.unwrap_or(Value::Null);
            let ids: Vec<Value> = ["channels", "added", "updated"]
                .iter()
                .flat_map(|k| p[k].as_array().cloned().unwrap_or_default())
                .map(|c| c["id"].clone())
                .chain(p["removed"].as_array().cloned().unwrap_or_default())
                .collect();
            let results: Vec<Value> =
                ids.into_iter().map(|id| json!({"id": id, "accepted": true})).collect();
            async move { Ok(json!({ "results": results })) }
        });
    }
    let r = record.clone();
    engine.on_request("channels/incoming", move |_ctx, params| {
        r("channels/incoming", &params);
        let p = params.unwrap_or(Value::Null);
        let results: Vec<Value> = p["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|m| json!({"messageId": m["messageId"], "accepted": true, "conversationId": "conv-1"}))
            .collect();
        async move { Ok(json!({ "results": results })) }
    });
    engine.on_any_notification(move |ctx, params| {
        record(ctx.method(), &params);
        async {}
    });
    engine
}

async fn start(bin: &str) -> (Host, Value) {
    let mut child = Command::new(bin)
        .arg("--conformance")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let (tx, seen) = mpsc::unbounded_channel();
    let peer = host_engine(tx).connect(LineTransport::new(stdout, stdin)).await.unwrap();
    let init = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"experimental": {"mcpl": {"version": "0.5", "featureSets": true, "pushEvents": true}}},
        "clientInfo": {"name": "raw-host", "version": "0"},
    });
    let result = peer.request("initialize", Some(init), Default::default()).await.unwrap();
    peer.notify("notifications/initialized", None).await.unwrap();
    (Host { peer, seen, _child: child }, result)
}

impl Host {
    async fn call(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        self.peer
            .request(method, Some(params), Default::default())
            .await
            .map_err(|e| e.rpc_error().cloned().unwrap_or_else(|| panic!("{method}: {e}")))
    }

    async fn tool(&self, name: &str, arguments: Value) -> Value {
        let result =
            self.call("tools/call", json!({"name": name, "arguments": arguments})).await.unwrap();
        assert_ne!(result["isError"], true, "{name}: {result}");
        result
    }

    async fn trigger(&self, arguments: Value) -> Value {
        self.tool("mcpl_conformance_trigger", arguments).await["structuredContent"].clone()
    }

    /// The next thing the host saw with `method`, skipping others.
    async fn next(&mut self, method: &str) -> Value {
        tokio::time::timeout(WAIT, async {
            loop {
                let (m, params) = self.seen.recv().await.unwrap();
                if m == method {
                    return params;
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {method}"))
    }

    fn drained(&mut self) -> Vec<String> {
        let mut methods = Vec::new();
        while let Ok((m, _)) = self.seen.try_recv() {
            methods.push(m);
        }
        methods
    }
}

#[tokio::test]
async fn the_memory_server_end_to_end() {
    let (mut host, init) = start(env!("CARGO_BIN_EXE_mcpl-memory-server")).await;
    let manifest = &init["capabilities"]["experimental"]["mcpl"];
    assert_eq!(manifest["featureSets"]["memory.store"]["rollback"], true);
    assert!(manifest["revision"].as_str().unwrap().starts_with("sha256:"));
    let tools = host.call("tools/list", json!({})).await.unwrap();
    let remember =
        tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == "remember").unwrap();
    assert_eq!(remember["_meta"]["featureSet"], "memory.store");

    // Nothing before the policy.
    let refused = host.trigger(json!({"action": "push", "featureSet": "memory.reminders"})).await;
    assert_eq!(refused, json!({"sent": false, "refusal": "not_ready"}));
    let grant = [
        "tools",
        "pushEvents",
        "contextHooks.beforeInference.observe",
        "contextHooks.beforeInference.inject.afterUser",
    ];
    let receipt =
        host.call("featureSets/update", json!({"effectiveCapabilities": grant})).await.unwrap();
    assert_eq!(receipt["accepted"], true);
    let unavailable = receipt["unavailableFeatures"].as_array().unwrap();
    let names: Vec<&str> = unavailable.iter().map(|u| u["featureSet"].as_str().unwrap()).collect();
    assert_eq!(names, ["memory.activity", "memory.persona"], "{receipt}");

    // Push, through the gate.
    let pushed = host
        .trigger(json!({"action": "push", "featureSet": "memory.reminders", "eventId": "e-1"}))
        .await;
    assert_eq!(pushed, json!({"sent": true, "result": {"accepted": true}}));
    let event = host.next("push/event").await;
    assert_eq!(
        (event["eventId"].as_str(), event["featureSet"].as_str()),
        (Some("e-1"), Some("memory.reminders"))
    );
    let mismatch = host.trigger(json!({"action": "push", "featureSet": "memory.store"})).await;
    assert_eq!(mismatch, json!({"sent": false, "refusal": "declaration_mismatch"}));
    let undeclared = host.trigger(json!({"action": "push", "featureSet": "nope"})).await;
    assert_eq!(undeclared["refusal"], "feature_set_undeclared");

    // State: a snapshot without host state, a patch against the state the host sent.
    let first = host.tool("remember", json!({"text": "the cat is called Tom"})).await;
    let cp1 = first["state"]["checkpoint"].as_str().unwrap().to_owned();
    assert_eq!(first["state"]["parent"], Value::Null);
    assert_eq!(first["state"]["data"], json!({"memories": ["the cat is called Tom"]}));
    let call = json!({"name": "remember", "arguments": {"text": "milk is out"},
        "state": {"memories": ["the cat is called Tom"]}, "checkpoint": cp1});
    let second = host.call("tools/call", call).await.unwrap();
    assert_eq!(second["state"]["parent"], cp1.as_str());
    assert_eq!(
        second["state"]["patch"],
        json!([{"op": "add", "path": "/memories/-", "value": "milk is out"}])
    );
    // The state alone (no checkpoint): it continues from the latest checkpoint.
    let cp2 = second["state"]["checkpoint"].clone();
    let call = json!({"name": "remember", "arguments": {"text": "the sky is blue"},
        "state": {"memories": ["the cat is called Tom", "milk is out"]}});
    let third = host.call("tools/call", call).await.unwrap();
    assert_eq!(third["state"]["parent"], cp2);
    let forgot = host.tool("forget", json!({"text": "sky"})).await;
    assert_eq!(
        forgot["state"]["data"],
        json!({"memories": ["the cat is called Tom", "milk is out"]})
    );
    let recalled = host.tool("recall", json!({"query": "cat"})).await;
    assert_eq!(recalled["content"][0]["text"], "the cat is called Tom");

    // The context hook: relevant memories after the user's message.
    let hook = json!({"inferenceId": "i1", "conversationId": "c1", "turnIndex": 0,
        "userMessage": "What is my cat called?",
        "model": {"id": "m", "vendor": "v", "contextWindow": 1, "capabilities": []}});
    let answer = host.call("context/beforeInference", hook).await.unwrap();
    assert_eq!(answer["featureSet"], "memory.context");
    let injections = answer["contextInjections"].as_array().unwrap();
    assert_eq!(injections.len(), 1);
    assert_eq!(injections[0]["position"], "afterUser");
    assert!(injections[0]["content"].as_str().unwrap().contains("Tom"));

    // Rollback.
    let back = host
        .call("state/rollback", json!({"featureSet": "memory.store", "checkpoint": cp1}))
        .await
        .unwrap();
    assert_eq!(back["success"], true);
    let recalled = host.tool("recall", json!({})).await;
    assert_eq!(
        recalled["content"][0]["text"], "the cat is called Tom",
        "milk is gone after the rollback"
    );
    let e = host
        .call("state/rollback", json!({"featureSet": "memory.store", "checkpoint": "gone"}))
        .await
        .unwrap_err();
    assert_eq!((e.code.0, e.data.unwrap()["checkpoint"].clone()), (-32005, json!("gone")));
    let e = host
        .call("state/rollback", json!({"featureSet": "memory.reminders", "checkpoint": cp1}))
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -32602);

    // Lifecycle, once granted: completed inferences are counted.
    let mut granted = grant.to_vec();
    granted.push("inferenceLifecycle");
    host.call("featureSets/update", json!({"effectiveCapabilities": granted})).await.unwrap();
    let completed =
        json!({"inferenceId": "i1", "conversationId": "c1", "turnIndex": 0, "phase": "completed"});
    host.peer.notify("inference/lifecycle", Some(completed)).await.unwrap();
    tokio::time::timeout(WAIT, async {
        // Notifications are handled apart from requests: poll.
        while host.tool("activity", json!({})).await["content"][0]["text"] != "c1: 1" {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the lifecycle notification was not counted");

    // A reminder pushed later.
    host.tool("remind", json!({"text": "call mum", "delayMs": 0})).await;
    let reminder = host.next("push/event").await;
    assert_eq!(reminder["featureSet"], "memory.reminders");

    // No announcement since the handshake; then one per manifest change.
    assert!(!host.drained().contains(&"mcpl/manifestChanged".to_owned()));
    let changed = host.trigger(json!({"action": "change_manifest"})).await;
    let revision = changed["result"]["revision"].clone();
    let announced = host.next("mcpl/manifestChanged").await;
    assert_eq!(announced, json!({"revision": revision, "domains": ["featureSets"]}));
    let fetched = host.call("mcpl/manifest", json!({})).await.unwrap();
    assert_eq!(fetched["revision"], revision);
    assert_eq!(fetched["featureSets"]["conformance.extra"]["uses"], json!(["tools"]));
    // Actions outside the memory server's capabilities are tool errors.
    let r = host
        .call(
            "tools/call",
            json!({"name": "mcpl_conformance_trigger", "arguments": {"action": "model_info"}}),
        )
        .await;
    assert_eq!(r.unwrap()["isError"], true);
}

#[tokio::test]
async fn the_memory_server_counts_one_inference_once() {
    let (host, _) = start(env!("CARGO_BIN_EXE_mcpl-memory-server")).await;
    host.call("featureSets/update", json!({"effectiveCapabilities": ["inferenceLifecycle"]}))
        .await
        .unwrap();
    let phase = |id: &str, conversation: &str, phase: &str| json!({"inferenceId": id, "conversationId": conversation, "turnIndex": 0, "phase": phase});
    // A terminal phase sent twice for one inference.
    for params in [
        phase("i1", "c1", "started"),
        phase("i1", "c1", "completed"),
        phase("i1", "c1", "completed"),
    ] {
        host.peer.notify("inference/lifecycle", Some(params)).await.unwrap();
    }
    // Notifications are handled in order, apart from requests: once a later inference is
    // counted, the three above were judged.
    for params in [phase("i2", "c2", "started"), phase("i2", "c2", "completed")] {
        host.peer.notify("inference/lifecycle", Some(params)).await.unwrap();
    }
    let activity = tokio::time::timeout(WAIT, async {
        loop {
            let text = host.tool("activity", json!({})).await["content"][0]["text"].clone();
            if text.as_str().is_some_and(|t| t.contains("c2: 1")) {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the later inference was not counted");
    assert!(activity.as_str().unwrap().contains("c1: 1"), "{activity}");
}

#[tokio::test]
async fn the_channel_server_end_to_end() {
    let (mut host, init) = start(env!("CARGO_BIN_EXE_mcpl-channel-server")).await;
    assert_eq!(init["capabilities"]["experimental"]["mcpl"]["channels"], true);
    let grant =
        ["channels.*", "inferenceRequest", "inferenceRequest.streaming", "modelInfo", "pushEvents"];
    host.call("featureSets/update", json!({"effectiveCapabilities": grant})).await.unwrap();
    // Channels are registered once the policy allows it.
    let registered = host.next("channels/register").await;
    let ids: Vec<&str> = registered["channels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["room:lobby", "ui"]);

    // Every trigger action.
    let r = host.trigger(json!({"action": "register_channels"})).await;
    assert_eq!(r["sent"], true);
    assert_eq!(r["result"]["results"].as_array().unwrap().len(), 2);
    let r = host.trigger(json!({"action": "channels_changed"})).await;
    assert_eq!(r["sent"], true, "{r}");
    let changed = host.next("channels/changed").await;
    assert_eq!(changed["removed"], json!(["room:lobby"]));
    assert_eq!(changed["added"][0]["id"], "ui-added");
    let r = host
        .trigger(json!({"action": "incoming", "channelId": "room:lobby", "messageId": "m-1"}))
        .await;
    assert_eq!(
        r["result"]["results"][0],
        json!({"messageId": "m-1", "accepted": true, "conversationId": "conv-1"})
    );
    let incoming = host.next("channels/incoming").await;
    assert!(incoming["messages"][0]["tags"].as_array().unwrap().contains(&json!("chat:mention")));
    let r = host
        .trigger(json!({"action": "inference", "featureSet": "chat.assist", "stream": true}))
        .await;
    assert_eq!(r["chunks"], json!(["po", "n", "g"]));
    assert_eq!(r["result"]["content"], "pong");
    let r = host
        .trigger(json!({"action": "inference", "featureSet": "chat.assist", "stream": false}))
        .await;
    assert_eq!((r["sent"].clone(), r.get("chunks")), (json!(true), None));
    let request = host.next("inference/request").await;
    assert_eq!(request["featureSet"], "chat.assist");
    let r = host.trigger(json!({"action": "model_info"})).await;
    assert_eq!(r["result"]["id"], "host-model");
    let r = host.trigger(json!({"action": "push", "featureSet": "chat.notify"})).await;
    assert_eq!(r["sent"], true);
    let r = host.trigger(json!({"action": "push", "featureSet": "chat.relay"})).await;
    assert_eq!(r["refusal"], "declaration_mismatch");

    // Host-to-server channel methods.
    let opened = host
        .call("channels/open", json!({"type": "room", "address": {"name": "dev"}}))
        .await
        .unwrap();
    assert_eq!(opened["channel"]["id"], "room:dev");
    let e = host.call("channels/open", json!({"type": "fax", "address": {}})).await.unwrap_err();
    assert_eq!(e.code.0, -32024);
    let publish = json!({"conversationId": "conv-1", "channelId": "room:dev", "content": [{"type": "text", "text": "hello dev"}]});
    let delivered = host.call("channels/publish", publish).await.unwrap();
    assert_eq!(delivered["delivered"], true);
    let e = host
        .call(
            "channels/publish",
            json!({"conversationId": "c", "channelId": "nope", "content": []}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -32023);
    let transcript = host.tool("transcript", json!({})).await;
    assert_eq!(transcript["content"][0]["text"], "room:dev: hello dev");
    assert_eq!(
        host.call("channels/close", json!({"channelId": "room:dev"})).await.unwrap()["closed"],
        true
    );
    assert_eq!(
        host.call("channels/close", json!({"channelId": "room:dev"})).await.unwrap_err().code.0,
        -32023
    );
    let ack =
        json!({"channelId": "room:lobby", "messageId": "m-1", "intent": "seen", "value": "👀"});
    assert_eq!(host.call("channels/acknowledge", ack).await.unwrap()["representation"], "👀");
    let listed = host.call("channels/list", json!({})).await.unwrap();
    assert_eq!(listed["channels"].as_array().unwrap().len(), 2);

    // A notification narrows at once: inference is then refused locally.
    host.peer
        .notify("featureSets/update", Some(json!({"disabled": ["chat.assist"]})))
        .await
        .unwrap();
    let refused = tokio::time::timeout(WAIT, async {
        loop {
            let r = host.trigger(json!({"action": "model_info"})).await;
            let r2 = host
                .trigger(
                    json!({"action": "inference", "featureSet": "chat.assist", "stream": false}),
                )
                .await;
            if r2["sent"] == false {
                return (r, r2);
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(refused.1["refusal"], "feature_set_disabled");
    assert_eq!(refused.0["sent"], true, "model/info carries no feature set");

    // Two manifest changes, two announcements with different revisions.
    let a = host.trigger(json!({"action": "change_manifest"})).await["result"]["revision"].clone();
    assert_eq!(host.next("mcpl/manifestChanged").await["revision"], a);
    let b = host.trigger(json!({"action": "change_manifest"})).await["result"]["revision"].clone();
    assert_eq!(host.next("mcpl/manifestChanged").await["revision"], b);
    assert_ne!(a, b);
    // Back to the initial manifest.
    assert_eq!(b, init["capabilities"]["experimental"]["mcpl"]["revision"]);
}

#[tokio::test]
async fn a_plain_mcp_host_gets_a_plain_mcp_server() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcpl-channel-server"))
        .arg("--conformance")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let (tx, mut seen) = mpsc::unbounded_channel();
    let peer = host_engine(tx).connect(LineTransport::new(stdout, stdin)).await.unwrap();
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mcp-only", "version": "0"}});
    let result = peer.request("initialize", Some(init), Default::default()).await.unwrap();
    assert!(result["capabilities"].get("experimental").is_none_or(|e| e.get("mcpl").is_none()));
    peer.notify("notifications/initialized", None).await.unwrap();
    let call =
        json!({"name": "mcpl_conformance_trigger", "arguments": {"action": "register_channels"}});
    let r = peer.request("tools/call", Some(call), Default::default()).await.unwrap();
    assert_eq!(r["structuredContent"], json!({"sent": false, "refusal": "not_mcpl"}));
    let e =
        peer.request("featureSets/update", Some(json!({})), Default::default()).await.unwrap_err();
    assert_eq!(e.rpc_error().unwrap().code.0, -32601);
    assert!(seen.try_recv().is_err(), "no MCPL message to a plain MCP host");
}
