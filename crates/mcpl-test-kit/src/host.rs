//! An MCPL host in memory, for the doc examples of `mcpl-server`: a host [`Engine`] connected
//! to the example's [`Server`], its handshake done.
//!
//! ```
//! use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
//! use mcpl_server::Server;
//! use mcpl_server::mcpl::Mcpl;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let manifest = Manifest::new()
//!     .with_push_events(true)
//!     .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]));
//! let server = Server::builder("alerts", "1").mcpl(Mcpl::new(manifest)).build();
//! let (session, host) = mcpl_test_kit::host::connect(&server).await?;
//! let conn = session.mcpl().ok_or("the host speaks MCPL")?;
//! assert!(!conn.is_ready());
//! mcpl_test_kit::host::grant(&host, &["pushEvents"]).await?;
//! assert!(conn.is_ready() && conn.is_enabled("alerts"));
//! # Ok(()) }
//! ```

use mcpl_core::transport::memory;
use mcpl_core::{Engine, Peer};
use mcpl_server::{Server, Session};
use serde_json::{Value, json};

/// The `initialize` params of an MCPL host: protocol `2025-11-25`, client `host` `1`, and
/// `"experimental": {"mcpl": {"version": "0.5", "featureSets": true}}`.
pub fn initialize_params() -> Value {
    json!({
        "protocolVersion": "2025-11-25",
        "clientInfo": {"name": "host", "version": "1"},
        "capabilities": {"experimental": {"mcpl": {"version": "0.5", "featureSets": true}}}
    })
}

/// A host engine that answers what a server asks of an MCPL host, always the same way:
///
/// - `ping`: `{}`;
/// - `push/event`: accepted, with the inference id `inf-for-<eventId>`;
/// - `inference/request`: `"pong"` from model `m-1` (1 input token, 2 output tokens); with
///   `stream: true`, first the chunks `"po"` and `"ng"` (`inference/chunk`);
/// - `model/info`: `m-1` of `acme`, a window of 200,000 tokens, `["text"]`;
/// - `channels/register`: each channel accepted;
/// - `channels/changed`: each removed id accepted;
/// - `channels/list`: one channel, `general` (`chat`, `#general`, bidirectional);
/// - `channels/incoming`: each message accepted, in conversation `c-1`.
///
/// Register more handlers on it (or replace one) before [`connect_with`].
pub fn engine() -> Engine {
    let host = Engine::new();
    host.on_request("ping", |_ctx, _params| async { Ok(json!({})) });
    host.on_request("push/event", |_ctx, params| async move {
        let params = params.unwrap_or_default();
        let id = params["eventId"].as_str().unwrap_or("?");
        Ok(json!({"accepted": true, "inferenceId": format!("inf-for-{id}")}))
    });
    host.on_request("inference/request", |ctx, params| async move {
        if params.unwrap_or_default()["stream"] == true {
            for (index, delta) in ["po", "ng"].into_iter().enumerate() {
                let chunk = json!({"requestId": ctx.id(), "index": index, "delta": delta});
                // A chunk the server no longer waits for is nobody's loss.
                let _ = ctx.peer().notify("inference/chunk", Some(chunk)).await;
            }
        }
        Ok(json!({"content": "pong", "model": "m-1", "finishReason": "end_turn",
            "usage": {"inputTokens": 1, "outputTokens": 2}}))
    });
    host.on_request("model/info", |_ctx, _params| async {
        Ok(json!({"id": "m-1", "vendor": "acme", "contextWindow": 200000, "capabilities": ["text"]}))
    });
    host.on_request("channels/register", |_ctx, params| async move {
        let params = params.unwrap_or_default();
        let channels = params["channels"].as_array().cloned().unwrap_or_default();
        let results: Vec<_> =
            channels.iter().map(|c| json!({"id": c["id"], "accepted": true})).collect();
        Ok(json!({"results": results}))
    });
    host.on_request("channels/changed", |_ctx, params| async move {
        let params = params.unwrap_or_default();
        let removed = params["removed"].as_array().cloned().unwrap_or_default();
        let results: Vec<_> =
            removed.iter().map(|id| json!({"id": id, "accepted": true})).collect();
        Ok(json!({"results": results}))
    });
    host.on_request("channels/list", |_ctx, _params| async {
        let general =
            json!({"id": "general", "type": "chat", "label": "#general", "direction": "bidirectional"});
        Ok(json!({"channels": [general]}))
    });
    host.on_request("channels/incoming", |_ctx, params| async move {
        let params = params.unwrap_or_default();
        let messages = params["messages"].as_array().cloned().unwrap_or_default();
        let results: Vec<_> = messages
            .iter()
            .map(
                |m| json!({"messageId": m["messageId"], "accepted": true, "conversationId": "c-1"}),
            )
            .collect();
        Ok(json!({"results": results}))
    });
    host
}

/// Serves `server` in memory and connects an MCPL host to it ([`engine`]'s answers), its
/// `initialize` ([`initialize_params`]) and `notifications/initialized` sent. The host has not
/// sent its policy yet: the server's [`McplConnection`](mcpl_server::mcpl::McplConnection)
/// exists but is not ready (see [`grant`]).
///
/// Returns the served session (keep it alive) and the host's end.
pub async fn connect(server: &Server) -> mcpl_core::Result<(Session, Peer)> {
    connect_with(server, &engine()).await
}

/// [`connect`] with the host `engine` given: its handlers answer the server.
pub async fn connect_with(server: &Server, engine: &Engine) -> mcpl_core::Result<(Session, Peer)> {
    let (host_side, server_side) = memory::pair();
    let session = server.serve(server_side).await?;
    let host = engine.connect(host_side).await?;
    host.request("initialize", Some(initialize_params()), Default::default()).await?;
    host.notify("notifications/initialized", None).await?;
    Ok((session, host))
}

/// The host's policy: a `featureSets/update` request granting `capabilities`
/// (`effectiveCapabilities`), nothing enabled or disabled by name. Once it is answered, the
/// connection is ready.
///
/// Returns the server's answer (the degradation receipt).
pub async fn grant(host: &Peer, capabilities: &[&str]) -> mcpl_core::Result<Value> {
    let policy = json!({"effectiveCapabilities": capabilities});
    host.request("featureSets/update", Some(policy), Default::default()).await
}
