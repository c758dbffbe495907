#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! `mcpl_host::Host` reaching MCPL servers over a 2025-era Streamable HTTP session and over
//! WebSocket (the memory server, served in-process on real sockets).

use std::time::Duration;

use mcpl_core::mcpl::hooks::BeforeInferenceParams;
use mcpl_host::config::HostConfig;
use mcpl_host::{Host, HostEvent};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
use serde_json::json;

const GUARD: Duration = Duration::from_secs(30);

/// Context hooks are granted only when a server's configuration asks for them.
const HOOKS: [&str; 2] =
    ["contextHooks.beforeInference.observe", "contextHooks.beforeInference.inject.*"];

#[tokio::test]
async fn one_host_over_http_and_websocket() {
    let http_server = mcpl_examples::mcpl_memory::memory_server(false);
    let app = StreamableHttp::new(http_server, HttpConfig::new()).into_router("/mcp");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http_url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(mcpl_server::http::serve(listener, app));

    let ws_server = mcpl_examples::mcpl_memory::memory_server(false);
    let app = WebSocketEndpoint::new(ws_server, WsConfig::new()).into_router("/ws");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ws_url = format!("ws://{}/ws", listener.local_addr().unwrap());
    tokio::spawn(mcpl_server::ws::serve(listener, app));

    let config = HostConfig::from_json(
        &json!({"servers": {"web": {"url": http_url, "grant": {"allow": HOOKS}},
                            "sock": {"url": ws_url, "grant": {"allow": HOOKS}}}})
        .to_string(),
    )
    .unwrap();
    let (host, mut events) =
        tokio::time::timeout(GUARD, Host::start(config)).await.unwrap().unwrap();
    let phases: Vec<String> =
        host.servers().iter().map(|(id, _, p)| format!("{id}:{p:?}")).collect();
    assert_eq!(phases, ["sock:Connected", "web:Connected"]);
    let names: Vec<String> = host.tools().iter().map(|t| t.name.clone()).collect();
    assert!(names.contains(&"mcpl--web--remember".to_owned()), "{names:?}");
    assert!(names.contains(&"mcpl--sock--remember".to_owned()), "{names:?}");

    // A stateful call over each transport; each server's state lands on its own tree.
    for (server, fact) in [("web", "the cat is called Tom"), ("sock", "the dog is called Rex")] {
        let call = host
            .call_tool(&format!("mcpl--{server}--remember"), json!({"text": fact}))
            .await
            .unwrap();
        assert_eq!(call.server, server);
        assert!(
            matches!(call.state, mcpl_host::checkpoint::RecordOutcome::Recorded { .. }),
            "{:?}",
            call.state
        );
    }
    let web = host.checkpoints().keys().into_iter().filter(|k| k.server == "web").count();
    assert!(web >= 1);

    // Hooks fan out over both transports.
    let params: BeforeInferenceParams = serde_json::from_value(json!({
        "inferenceId": "i1", "conversationId": "c1", "turnIndex": 0,
        "userMessage": "what are the cat and the dog called?",
        "model": {"id": "m", "vendor": "v", "contextWindow": 8192, "capabilities": []}}))
    .unwrap();
    let out = host.before_inference(params).await;
    let servers: Vec<&str> = out.after_user.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(servers, ["sock", "web"], "{out:?}");

    // The connection events arrived on the host's stream.
    let mut connected = 0;
    while let Ok(Some(e)) = tokio::time::timeout(Duration::from_millis(200), events.recv()).await {
        if matches!(e, HostEvent::Connected { .. }) {
            connected += 1;
        }
    }
    assert_eq!(connected, 2);
    host.shutdown().await;
}

#[tokio::test]
async fn server_inference_requests_reach_the_hosts_handler_with_streaming() {
    let server = mcpl_examples::mcpl_channels::channel_server(true);
    let app = WebSocketEndpoint::new(server, WsConfig::new()).into_router("/ws");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/ws", listener.local_addr().unwrap());
    tokio::spawn(mcpl_server::ws::serve(listener, app));

    let config = HostConfig::from_json(
        &json!({"servers": {"chat": {"url": url, "grant": {"allow": [
            "modelInfo", "inferenceRequest", "inferenceRequest.streaming", "channels.*"]}}}})
        .to_string(),
    )
    .unwrap();
    let model = serde_json::from_value(
        json!({"id": "host-model", "vendor": "test", "contextWindow": 1000, "capabilities": []}),
    )
    .unwrap();
    let (host, mut events) = Host::builder(config)
        .model_info(model)
        .on_inference(|server, call| async move {
            assert_eq!(server, "chat");
            if let Some(chunks) = &call.chunks {
                for part in ["po", "ng"] {
                    chunks.send(part).await.map_err(mcpl_core::jsonrpc::ErrorObject::internal)?;
                }
            }
            Ok(serde_json::from_value(json!({"content": "pong", "model": "host-model",
                "finishReason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 1}}))
            .unwrap())
        })
        .start()
        .await
        .unwrap();
    let trigger = "mcpl--chat--mcpl_conformance_trigger";
    let args = json!({"action": "inference", "featureSet": "chat.assist", "stream": true});
    let call = host.call_tool(trigger, args).await.unwrap();
    let outcome = call.result.structured_content.as_ref().unwrap();
    assert_eq!(outcome["sent"], true, "{outcome}");
    assert_eq!(outcome["result"]["content"], "pong");
    assert_eq!(outcome["chunks"], json!(["po", "ng"]));

    // A push from the same server arrives on the event stream.
    let args = json!({"action": "push", "featureSet": "chat.notify"});
    let call = host.call_tool(trigger, args).await.unwrap();
    assert_eq!(call.result.structured_content.as_ref().unwrap()["sent"], true);
    let push = tokio::time::timeout(GUARD, async {
        loop {
            if let Some(HostEvent::Push { server, event }) = events.recv().await {
                return (server, event);
            }
        }
    })
    .await
    .unwrap();
    assert_eq!((push.0.as_str(), push.1.feature_set.as_str()), ("chat", "chat.notify"));
    host.shutdown().await;
}
