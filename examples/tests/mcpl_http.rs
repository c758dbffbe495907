//! MCPL over a 2025 Streamable HTTP session and over WebSocket (real sockets), with a raw
//! engine as the host. HTTP: the channel example server behind `StreamableHttp`, the host over
//! `mcpl-client`'s `HttpTransport`; server requests and announcements reach the host on the
//! session's standalone stream. WebSocket: the memory server behind `WebSocketEndpoint`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use mcpl_client::transport::HttpTransport;
use mcpl_core::Engine;
use mcpl_server::http::{HttpConfig, StreamableHttp};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(20);

/// The next thing the host saw with `method`, skipping others.
async fn next(seen: &mut mpsc::UnboundedReceiver<(String, Value)>, method: &str) -> Value {
    tokio::time::timeout(WAIT, async {
        loop {
            let (m, p) = seen.recv().await.unwrap();
            if m == method {
                return p;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {method}"))
}

#[tokio::test]
async fn mcpl_over_a_2025_http_session() {
    let server = mcpl_examples::mcpl_channels::channel_server(true);
    let app = StreamableHttp::new(server.clone(), HttpConfig::new()).into_router("/mcp");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(mcpl_server::http::serve(listener, app));

    let (tx, mut seen) = mpsc::unbounded_channel::<(String, Value)>();
    let host = Engine::new();
    let t = tx.clone();
    host.on_request("channels/register", move |_ctx, params| {
        let params = params.unwrap_or(Value::Null);
        let results: Vec<Value> = params["channels"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|c| json!({"id": c["id"], "accepted": true}))
            .collect();
        let _ = t.send(("channels/register".into(), params));
        async move { Ok(json!({ "results": results })) }
    });
    host.on_request("inference/request", |ctx, params| async move {
        if params.as_ref().is_some_and(|p| p["stream"] == true) {
            for (i, delta) in ["a", "b", "c", "d"].iter().enumerate() {
                let chunk = json!({"requestId": ctx.id(), "index": i, "delta": delta});
                ctx.peer().notify("inference/chunk", Some(chunk)).await.unwrap();
            }
        }
        Ok(json!({"content": "abcd", "model": "m", "finishReason": "end_turn",
            "usage": {"inputTokens": 1, "outputTokens": 4}}))
    });
    host.on_any_notification(move |ctx, params| {
        let _ = tx.send((ctx.method().to_owned(), params.unwrap_or(Value::Null)));
        async {}
    });
    let peer = host.connect(HttpTransport::new(url)).await.unwrap();
    let init = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"experimental": {"mcpl": {"version": "0.5", "featureSets": true}}},
        "clientInfo": {"name": "http-host", "version": "0"},
    });
    let result = peer.request("initialize", Some(init), Default::default()).await.unwrap();
    let revision = result["capabilities"]["experimental"]["mcpl"]["revision"].clone();
    assert!(revision.as_str().unwrap().starts_with("sha256:"));
    peer.notify("notifications/initialized", None).await.unwrap();
    assert_eq!(server.mcpl_connections().len(), 1);

    let grant = json!({"effectiveCapabilities": ["channels.register", "inferenceRequest", "inferenceRequest.streaming", "modelInfo"]});
    let receipt =
        peer.request("featureSets/update", Some(grant), Default::default()).await.unwrap();
    assert_eq!(receipt["accepted"], true);
    // on_ready registers the channels over the standalone stream.
    let registered = next(&mut seen, "channels/register").await;
    assert_eq!(registered["channels"].as_array().unwrap().len(), 2);

    let call = |arguments: Value| {
        let peer = peer.clone();
        async move {
            let params = json!({"name": "mcpl_conformance_trigger", "arguments": arguments});
            let r = peer.request("tools/call", Some(params), Default::default()).await.unwrap();
            r["structuredContent"].clone()
        }
    };
    let streamed =
        call(json!({"action": "inference", "featureSet": "chat.assist", "stream": true})).await;
    assert_eq!(streamed["result"]["content"], "abcd", "{streamed}");
    assert_eq!(streamed["chunks"], json!(["a", "b", "c", "d"]));
    let refused = call(json!({"action": "incoming", "channelId": "ui"})).await;
    assert_eq!(refused, json!({"sent": false, "refusal": "not_granted"}));

    // The announcement goes on the standalone stream too.
    let changed = call(json!({"action": "change_manifest"})).await;
    let announced = next(&mut seen, "mcpl/manifestChanged").await;
    assert_eq!(announced["revision"], changed["result"]["revision"]);
    assert_ne!(announced["revision"], revision);
}

#[tokio::test]
async fn mcpl_over_websocket() {
    use mcpl_client::transport::WebSocketTransport;
    use mcpl_server::ws::{WebSocketEndpoint, WsConfig};

    let server = mcpl_examples::mcpl_memory::memory_server(true);
    let app = WebSocketEndpoint::new(server.clone(), WsConfig::new()).into_router("/ws");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/ws", listener.local_addr().unwrap());
    tokio::spawn(mcpl_server::ws::serve(listener, app));

    let (tx, mut seen) = mpsc::unbounded_channel::<(String, Value)>();
    let host = Engine::new();
    let t = tx.clone();
    host.on_request("push/event", move |_ctx, params| {
        let _ = t.send(("push/event".into(), params.unwrap_or(Value::Null)));
        async { Ok(json!({"accepted": true})) }
    });
    host.on_any_notification(move |ctx, params| {
        let _ = tx.send((ctx.method().to_owned(), params.unwrap_or(Value::Null)));
        async {}
    });
    let peer = host.connect(WebSocketTransport::new(url)).await.unwrap();
    let init = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"experimental": {"mcpl": {"version": "0.5", "featureSets": true}}},
        "clientInfo": {"name": "ws-host", "version": "0"},
    });
    let result = peer.request("initialize", Some(init), Default::default()).await.unwrap();
    assert!(
        result["capabilities"]["experimental"]["mcpl"]["featureSets"]["memory.store"].is_object()
    );
    peer.notify("notifications/initialized", None).await.unwrap();
    let grant = json!({"effectiveCapabilities": ["pushEvents", "tools"]});
    peer.request("featureSets/update", Some(grant), Default::default()).await.unwrap();

    let trigger = |arguments: Value| {
        let peer = peer.clone();
        async move {
            let params = json!({"name": "mcpl_conformance_trigger", "arguments": arguments});
            let r = peer.request("tools/call", Some(params), Default::default()).await.unwrap();
            r["structuredContent"].clone()
        }
    };
    let pushed =
        trigger(json!({"action": "push", "featureSet": "memory.reminders", "eventId": "ws-1"}))
            .await;
    assert_eq!(pushed, json!({"sent": true, "result": {"accepted": true}}));
    assert_eq!(next(&mut seen, "push/event").await["eventId"], "ws-1");
    let changed = trigger(json!({"action": "change_manifest"})).await;
    let announced = next(&mut seen, "mcpl/manifestChanged").await;
    assert_eq!(announced["revision"], changed["result"]["revision"]);
    assert_eq!(server.mcpl_connections().len(), 1);
}
