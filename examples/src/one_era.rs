//! A plain MCP server that speaks one protocol era only, as servers built on other SDKs do: a
//! 2026-07-28-only server (no `initialize`) or a 2025-only one (no `server/discover`), over
//! stdio or Streamable HTTP. `mcpl-server` serves both eras on every transport; these wrap it
//! and refuse the other era's messages the way a one-era server answers them.
//!
//! - Stdio ([`OneEra`], a [`Transport`] around another): a 2026-only server answers every
//!   request without `_meta.protocolVersion` (`initialize`, `ping`) with `-32601`, and drops
//!   notifications without it (`notifications/initialized`); a 2025-only server answers every
//!   request with it (`server/discover`) with `-32601`.
//! - Streamable HTTP ([`refuse_other_era`], an axum middleware): a 2026-only server answers a
//!   `POST` without the stateless `MCP-Protocol-Version` header with `400` and `-32022` naming
//!   `2026-07-28`, and `GET`/`DELETE` with `405`; a 2025-only server answers a stateless `POST`
//!   with `400` (no valid session), as TypeScript SDK v1 servers do.
//!
//! The `mcp-era-server` binary serves [`era_server`] this way:
//!
//! ```text
//! mcp-era-server --era 2026            # stdio
//! mcp-era-server --era 2025 --http 127.0.0.1:0   # prints its URL on stdout
//! ```

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use mcpl_core::jsonrpc::{ErrorObject, ErrorResponse, Message, RequestId};
use mcpl_core::transport::{Transport, TransportReceiver, TransportSender};
use mcpl_core::types::{Tool, ToolSchema, meta_keys};
use mcpl_core::{Era, Error, Result};
use mcpl_server::{Server, ToolOutput};
use serde_json::{Value, json};
use tokio::sync::Mutex;

/// A plain MCP server for one era: `echo {text}`, `era` (the era of the request that called
/// it) and `grow` (adds a tool `grown-<n>`, so clients are told the list changed).
pub fn era_server(era: Era) -> Server {
    let name = match era {
        Era::Stateless => "era-2026",
        Era::Stateful => "era-2025",
    };
    let echo = ToolSchema::object().with_property("text", json!({"type": "string"}));
    Server::builder(name, env!("CARGO_PKG_VERSION"))
        .tool(Tool::new("echo", echo), |_ctx, args| async move {
            let text = args.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
            Ok(ToolOutput::text(text))
        })
        .tool(Tool::new("era", ToolSchema::object()), |ctx, _args| async move {
            let version = ctx.protocol_version().map(|v| v.to_string()).unwrap_or_default();
            Ok(ToolOutput::text(version))
        })
        .tool(Tool::new("grow", ToolSchema::object()), |ctx, _args| async move {
            let Some(server) = ctx.server() else { return Ok(ToolOutput::error("no server")) };
            let grown = server.tools().iter().filter(|t| t.name.starts_with("grown-")).count();
            let name = format!("grown-{}", grown + 1);
            let added = server
                .tools_mut()
                .add(Tool::new(name.clone(), ToolSchema::object()), |_ctx, _args| async {
                    Ok(ToolOutput::text("grown"))
                });
            match added {
                Ok(_) => Ok(ToolOutput::text(name)),
                Err(e) => Ok(ToolOutput::error(e.to_string())),
            }
        })
        .build()
}

/// Whether a message belongs to the stateless era: its `_meta` names a protocol version.
fn is_stateless(message: &Message) -> bool {
    let params = match message {
        Message::Request(r) => r.params.as_ref(),
        Message::Notification(n) => n.params.as_ref(),
        _ => None,
    };
    params.and_then(|p| p.get("_meta")).and_then(|m| m.get(meta_keys::PROTOCOL_VERSION)).is_some()
}

/// What a server of `era` does with `message`: `None` to serve it, `Some(None)` to drop it,
/// `Some(Some(answer))` to refuse it.
fn refusal(era: Era, message: &Message) -> Option<Option<Message>> {
    let stateless = is_stateless(message);
    let other_era = match message {
        Message::Request(_) | Message::Notification(_) => stateless != (era == Era::Stateless),
        _ => false,
    };
    if !other_era {
        return None;
    }
    match message {
        Message::Request(r) => {
            let error = ErrorObject::method_not_found(&r.method);
            Some(Some(Message::Error(ErrorResponse::new(Some(r.id.clone()), error))))
        }
        _ => Some(None),
    }
}

/// A transport that lets only one era's messages through (see the module docs).
#[derive(Debug)]
pub struct OneEra<T> {
    inner: T,
    era: Era,
}

impl<T> OneEra<T> {
    /// `inner`, speaking `era` only.
    pub fn new(inner: T, era: Era) -> Self {
        OneEra { inner, era }
    }
}

type Shared<S> = Arc<Mutex<Option<S>>>;

/// The sending half of [`OneEra`] (shared with its receiver, which answers refusals).
#[derive(Debug)]
pub struct OneEraSender<S>(Shared<S>);

/// The receiving half of [`OneEra`].
#[derive(Debug)]
pub struct OneEraReceiver<R, S> {
    inner: R,
    sender: Shared<S>,
    era: Era,
}

impl<T: Transport> Transport for OneEra<T> {
    type Sender = OneEraSender<T::Sender>;
    type Receiver = OneEraReceiver<T::Receiver, T::Sender>;

    async fn start(self) -> Result<(Self::Sender, Self::Receiver)> {
        let (sender, receiver) = self.inner.start().await?;
        let sender = Arc::new(Mutex::new(Some(sender)));
        let receiving = OneEraReceiver { inner: receiver, sender: sender.clone(), era: self.era };
        Ok((OneEraSender(sender), receiving))
    }
}

impl<S: TransportSender> TransportSender for OneEraSender<S> {
    async fn send(&mut self, message: Message) -> Result<()> {
        match self.0.lock().await.as_mut() {
            Some(sender) => sender.send(message).await,
            None => Err(Error::ConnectionClosed),
        }
    }

    async fn send_related(&mut self, message: Message, related: Option<RequestId>) -> Result<()> {
        match self.0.lock().await.as_mut() {
            Some(sender) => sender.send_related(message, related).await,
            None => Err(Error::ConnectionClosed),
        }
    }

    async fn close(self) -> Result<()> {
        let sender = self.0.lock().await.take();
        match sender {
            Some(sender) => sender.close().await,
            None => Ok(()),
        }
    }
}

impl<R: TransportReceiver, S: TransportSender> TransportReceiver for OneEraReceiver<R, S> {
    async fn recv(&mut self) -> Result<Option<Message>> {
        loop {
            let Some(message) = self.inner.recv().await? else { return Ok(None) };
            match refusal(self.era, &message) {
                None => return Ok(Some(message)),
                Some(None) => {}
                Some(Some(answer)) => {
                    if let Some(sender) = self.sender.lock().await.as_mut() {
                        sender.send(answer).await?;
                    }
                }
            }
        }
    }
}

/// The largest request body the middleware reads.
const MAX_BODY: usize = 4 * 1024 * 1024;

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    if let Ok(value) = "application/json".parse() {
        response.headers_mut().insert("content-type", value);
    }
    response
}

/// An axum middleware (`from_fn_with_state(era, refuse_other_era)`) that refuses the other
/// era's requests (see the module docs).
pub async fn refuse_other_era(State(era): State<Era>, request: Request, next: Next) -> Response {
    let stateless_header = request
        .headers()
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .and_then(mcpl_core::ProtocolVersion::parse)
        .is_some_and(|v| v.era() == Era::Stateless);
    let method = request.method().clone();
    match era {
        Era::Stateless if method != Method::POST => {
            return json_response(StatusCode::METHOD_NOT_ALLOWED, &json!({}));
        }
        Era::Stateless if !stateless_header => {}
        Era::Stateful if method == Method::POST && stateless_header => {}
        _ => return next.run(request).await,
    }
    let (_, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_BODY).await.unwrap_or_default();
    let id = serde_json::from_slice::<Value>(&bytes).ok().and_then(|v| v.get("id").cloned());
    let error = match era {
        Era::Stateless => json!({"code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"}}),
        Era::Stateful => {
            json!({"code": -32000, "message": "Bad Request: No valid session ID provided"})
        }
    };
    json_response(StatusCode::BAD_REQUEST, &json!({"jsonrpc": "2.0", "id": id, "error": error}))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn message(value: Value) -> Message {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn each_era_refuses_the_other() {
        let initialize = message(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25"}}));
        let discover = message(json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover",
            "params": {"_meta": {meta_keys::PROTOCOL_VERSION: "2026-07-28"}}}));
        let initialized = message(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert!(refusal(Era::Stateful, &initialize).is_none());
        assert!(refusal(Era::Stateless, &discover).is_none());
        let Some(Some(Message::Error(refused))) = refusal(Era::Stateless, &initialize) else {
            panic!("initialize served by a 2026-only server")
        };
        assert_eq!(refused.error.code.0, -32601);
        assert!(matches!(refusal(Era::Stateful, &discover), Some(Some(Message::Error(_)))));
        assert!(matches!(refusal(Era::Stateless, &initialized), Some(None)));
    }
}
