//! The scripted host the suite plays: one MCPL connection to the server under test, recording
//! every server-initiated message and answering server requests from a [`Responder`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpl_client::transport::{ChildProcess, WebSocketTransport};
use mcpl_core::engine::{RequestContext, RequestOptions};
use mcpl_core::jsonrpc::{ErrorObject, RequestId};
use mcpl_core::mcpl::manifest::Manifest;
use mcpl_core::{Engine, ErrorKind, Peer};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// How long the suite waits for any one answer from the server.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the server under test is.
#[derive(Debug, Clone)]
pub enum Target {
    /// A command line, run with `sh -c` (stdio: newline-delimited JSON-RPC).
    Command(String),
    /// A WebSocket URL (`ws://`, `wss://` or `mcpl://`): one JSON-RPC message per text frame.
    Url(String),
}

/// One message the server sent to the host.
#[derive(Debug, Clone)]
pub(crate) struct Inbound {
    /// The method.
    pub(crate) method: String,
    /// The params (`null` when absent).
    pub(crate) params: Value,
    /// The request id, for requests; `None` for notifications.
    pub(crate) id: Option<RequestId>,
}

impl Inbound {
    pub(crate) fn is_request(&self) -> bool {
        self.id.is_some()
    }
}

/// How the host answers the server's requests. Checks change it to provoke behaviour.
#[derive(Debug, Clone)]
pub(crate) struct Responder {
    /// The answer to `push/event`.
    pub(crate) push: Result<Value, ErrorObject>,
    /// Accept only the first descriptor of `channels/register` (the rest get `accepted:false`).
    pub(crate) register_first_only: bool,
    /// Deltas streamed before an `inference/request` result when it asks for `stream: true`.
    pub(crate) chunks: Vec<String>,
}

impl Default for Responder {
    fn default() -> Self {
        Responder {
            push: Ok(json!({"accepted": true})),
            register_first_only: false,
            chunks: vec!["po".into(), "ng".into()],
        }
    }
}

/// The model the suite's host claims to run.
pub(crate) fn model_info() -> Value {
    json!({"id": "conformance-model", "vendor": "mcpl-conformance", "contextWindow": 8192,
           "capabilities": ["text"]})
}

/// The host's `experimental.mcpl` advertisement: everything.
pub(crate) fn host_advertisement() -> Value {
    json!({
        "version": "0.5",
        "pushEvents": true,
        "contextHooks": {"beforeInference": true},
        "inferenceLifecycle": true,
        "inferenceRequest": {"streaming": true},
        "modelInfo": true,
        "channels": true,
        "featureSets": true,
    })
}

async fn answer(
    responder: Arc<Mutex<Responder>>,
    ctx: RequestContext,
    method: String,
    params: Value,
) -> Result<Value, ErrorObject> {
    let r = match responder.lock() {
        Ok(r) => r.clone(),
        Err(p) => p.into_inner().clone(),
    };
    match method.as_str() {
        "ping" => Ok(json!({})),
        "push/event" => r.push,
        "model/info" => Ok(model_info()),
        "inference/request" => {
            let stream = params.get("stream").and_then(Value::as_bool).unwrap_or(false);
            let id = serde_json::to_value(ctx.id()).unwrap_or(Value::Null);
            if stream {
                for (index, delta) in r.chunks.iter().enumerate() {
                    let chunk = json!({"requestId": id, "index": index, "delta": delta});
                    ctx.peer()
                        .notify("inference/chunk", Some(chunk))
                        .await
                        .map_err(|e| ErrorObject::internal(e.to_string()))?;
                }
            }
            Ok(json!({"content": r.chunks.concat(), "model": "conformance-model",
                      "finishReason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 1}}))
        }
        "channels/register" | "channels/changed" => {
            let list = if method == "channels/register" { "channels" } else { "added" };
            let items = params.get(list).and_then(Value::as_array).cloned().unwrap_or_default();
            let results: Vec<Value> = items
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let id = d.get("id").cloned().unwrap_or(Value::Null);
                    if r.register_first_only && i > 0 {
                        json!({"id": id, "accepted": false, "reason": "conformance_rejected"})
                    } else {
                        json!({"id": id, "accepted": true})
                    }
                })
                .collect();
            Ok(json!({"results": results}))
        }
        "channels/incoming" => {
            let items =
                params.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
            let results: Vec<Value> = items
                .iter()
                .map(|m| {
                    json!({"messageId": m.get("messageId").cloned().unwrap_or(Value::Null),
                           "accepted": true, "conversationId": "conformance-conversation"})
                })
                .collect();
            Ok(json!({"results": results}))
        }
        "channels/list" => Ok(json!({"channels": []})),
        _ => Err(ErrorObject::method_not_found(&method)),
    }
}

/// One connection of the scripted host to the server under test.
#[derive(Debug)]
pub(crate) struct HostConn {
    engine: Engine,
    peer: Peer,
    inbound: mpsc::UnboundedReceiver<Inbound>,
    /// Messages taken off the channel while looking for another one.
    seen: Vec<Inbound>,
    /// The answers to server requests.
    pub(crate) responder: Arc<Mutex<Responder>>,
    /// The `initialize` result.
    pub(crate) init: Value,
}

/// What went wrong talking to the server (not a protocol verdict).
pub(crate) type Failure = String;

impl HostConn {
    /// Connects and runs `initialize` + `notifications/initialized`, advertising MCPL when
    /// `mcpl` is true.
    pub(crate) async fn open(target: &Target, mcpl: bool) -> Result<HostConn, Failure> {
        let engine = Engine::new();
        let (tx, inbound) = mpsc::unbounded_channel();
        let responder = Arc::new(Mutex::new(Responder::default()));
        {
            let tx = tx.clone();
            let responder = responder.clone();
            engine.on_any_request(move |ctx: RequestContext, params: Option<Value>| {
                let method = ctx.method().to_owned();
                let params = params.unwrap_or(Value::Null);
                let _ = tx.send(Inbound {
                    method: method.clone(),
                    params: params.clone(),
                    id: Some(ctx.id().clone()),
                });
                answer(responder.clone(), ctx, method, params)
            });
        }
        engine.on_any_notification(move |ctx, params: Option<Value>| {
            let _ = tx.send(Inbound {
                method: ctx.method().to_owned(),
                params: params.unwrap_or(Value::Null),
                id: None,
            });
            async {}
        });
        let peer = match target {
            Target::Command(cmd) => {
                let child = ChildProcess::new("sh").arg("-c").arg(format!("exec {cmd}"));
                engine.connect(child).await.map_err(|e| format!("cannot start the server: {e}"))?
            }
            Target::Url(url) => {
                let ws = WebSocketTransport::new(url.clone());
                engine.connect(ws).await.map_err(|e| format!("cannot connect to {url}: {e}"))?
            }
        };
        let mut capabilities = json!({});
        if mcpl {
            capabilities = json!({"experimental": {"mcpl": host_advertisement()}});
        }
        let params = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": {"name": "mcpl-conformance", "version": env!("CARGO_PKG_VERSION")},
        });
        let options = RequestOptions::new().timeout(ANSWER_TIMEOUT);
        let init = peer
            .request("initialize", Some(params), options)
            .await
            .map_err(|e| format!("initialize failed: {e}"))?;
        peer.notify("notifications/initialized", None)
            .await
            .map_err(|e| format!("notifications/initialized failed: {e}"))?;
        Ok(HostConn { engine, peer, inbound, seen: Vec::new(), responder, init })
    }

    /// The server's `experimental.mcpl` member of the `initialize` result, verbatim.
    pub(crate) fn raw_manifest(&self) -> Option<&Value> {
        self.init.pointer("/capabilities/experimental/mcpl")
    }

    /// The server's manifest, when it is an object.
    pub(crate) fn manifest(&self) -> Option<Manifest> {
        self.raw_manifest().and_then(|v| Manifest::from_value(v.clone()).ok())
    }

    /// Whether the server declares MCP `tools`.
    pub(crate) fn has_mcp_tools(&self) -> bool {
        self.init.pointer("/capabilities/tools").is_some()
    }

    /// Sends a request; `Ok(Err(e))` is the server's JSON-RPC error, `Err` a failure (timeout,
    /// closed connection).
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Result<Value, ErrorObject>, Failure> {
        let options = RequestOptions::new().timeout(ANSWER_TIMEOUT);
        match self.peer.request(method, Some(params), options).await {
            Ok(v) => Ok(Ok(v)),
            Err(e) => match e.kind() {
                ErrorKind::Rpc
                | ErrorKind::UnsupportedProtocolVersion
                | ErrorKind::MissingRequiredClientCapability
                | ErrorKind::HeaderMismatch => Ok(Err(e.to_error_object())),
                _ => Err(format!("{method}: {e}")),
            },
        }
    }

    /// Sends a notification.
    pub(crate) async fn notify(&self, method: &str, params: Value) -> Result<(), Failure> {
        self.peer.notify(method, Some(params)).await.map_err(|e| format!("{method}: {e}"))
    }

    /// Sends a `featureSets/update` request with `params`.
    pub(crate) async fn policy(
        &self,
        params: Value,
    ) -> Result<Result<Value, ErrorObject>, Failure> {
        self.request("featureSets/update", params).await
    }

    /// Waits up to `within` for a message of `method` (earlier ones first).
    pub(crate) async fn expect(&mut self, method: &str, within: Duration) -> Option<Inbound> {
        if let Some(i) = self.seen.iter().position(|m| m.method == method) {
            return Some(self.seen.remove(i));
        }
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, self.inbound.recv()).await {
                Ok(Some(m)) if m.method == method => return Some(m),
                Ok(Some(m)) => self.seen.push(m),
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// Every message that arrived (or arrives within `window`) whose method is in `methods`.
    pub(crate) async fn collect(&mut self, methods: &[&str], window: Duration) -> Vec<Inbound> {
        let deadline = tokio::time::Instant::now() + window;
        while let Ok(Some(m)) = tokio::time::timeout_at(deadline, self.inbound.recv()).await {
            self.seen.push(m);
        }
        let (hit, rest): (Vec<_>, Vec<_>) =
            self.seen.drain(..).partition(|m| methods.contains(&m.method.as_str()));
        self.seen = rest;
        hit
    }

    /// Forgets every message received so far.
    pub(crate) async fn drain(&mut self) {
        while let Ok(m) = self.inbound.try_recv() {
            drop(m);
        }
        self.seen.clear();
    }

    /// Calls the trigger tool (see the suite's README). `None` when the server has no such
    /// tool; otherwise the `structuredContent` the tool returned.
    pub(crate) async fn trigger(&self, action: &str, mut args: Value) -> Result<Value, Failure> {
        if let Value::Object(m) = &mut args {
            m.insert("action".into(), json!(action));
        }
        let params = json!({"name": super::TRIGGER_TOOL, "arguments": args});
        match self.request("tools/call", params).await? {
            Ok(result) => {
                if result.get("isError") == Some(&Value::Bool(true)) {
                    return Err(format!("the trigger tool failed for {action}: {result}"));
                }
                result.get("structuredContent").cloned().ok_or_else(|| {
                    format!("the trigger tool returned no structuredContent: {result}")
                })
            }
            Err(e) => {
                Err(format!("the trigger tool answered an error for {action}: {}", e.message))
            }
        }
    }

    /// Closes the connection (and ends a child process).
    pub(crate) async fn close(self) {
        let _ = self.engine.close().await;
    }
}
