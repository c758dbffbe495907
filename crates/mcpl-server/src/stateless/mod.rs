//! The stateless (2026-07-28) era's pipeline, one for every transport: no `initialize`; every
//! request describes its client in `_meta` and is served on its own.
//!
//! [`era_of`] decides which era a request belongs to. A stateless request then goes through
//! the same steps on stdio, WebSocket and Streamable HTTP: [`admission`] (the required `_meta`,
//! the transport's own checks, the version, removed methods, the log level, the progress
//! token), then `server/discover`, `subscriptions/listen` ([`listen`]) or the router, then
//! [`decoration`] of the result (`resultType`, the server's identity, caching hints).
//! [`serve`] runs them for a request that arrived on a connection; Streamable HTTP runs them
//! in `http::stateless`, where it adds its header checks and writes the answer itself.

pub(crate) mod admission;
pub(crate) mod decoration;
pub(crate) mod listen;

use std::sync::Arc;
use std::time::Duration;

use mcpl_core::engine::{HandlerResult, RequestContext};
use mcpl_core::jsonrpc::{ErrorObject, RawJson};
use mcpl_core::types::{meta_keys, names};
use mcpl_core::{Era, ProtocolVersion};
use serde_json::{Map, Value};

use self::admission::{MetaFacts, admit};
use self::listen::Listen;
use crate::context::Context;
use crate::principal::AccessToken;
use crate::router::Reply;
use crate::server::Server;

/// The era of a request: stateless if its `_meta` names a protocol version, or if its
/// transport declared a stateless-era revision for it (`declared`: Streamable HTTP's
/// `MCP-Protocol-Version` header); stateful otherwise. (A connection that completed the
/// `initialize` handshake stays stateful whatever its requests carry: its pipeline asks
/// this only before.)
pub(crate) fn era_of(meta: Option<&Map<String, Value>>, declared: Option<&str>) -> Era {
    let in_meta = meta.is_some_and(|m| m.contains_key(meta_keys::PROTOCOL_VERSION));
    let declared = declared
        // A header value as text: its only white space is spaces and tabs.
        .and_then(|v| ProtocolVersion::parse(v.trim_ascii()))
        .is_some_and(|v| v.era() == Era::Stateless);
    if in_meta || declared { Era::Stateless } else { Era::Stateful }
}

/// Serves one stateless-era request that arrived on a connection (stdio, WebSocket, any
/// stream transport): admission, then the method, then the result's decorations. A
/// `subscriptions/listen` stays in flight, sending its notifications on the connection, until
/// the client cancels it or the connection ends.
pub(crate) async fn serve(
    server: &Server,
    ctx: RequestContext,
    params: Option<Value>,
    token: Option<Arc<AccessToken>>,
) -> HandlerResult {
    let admitted = admit(MetaFacts::of_tree(ctx.meta()), ctx.method(), |_| Ok(()))?;
    let method = ctx.method().to_owned();
    let reply = match method.as_str() {
        names::SERVER_DISCOVER => {
            // (The router records the revision of the requests it serves.)
            if let Some(version) = admitted.client.version {
                mcpl_core::trace::record_version(&tracing::Span::current(), version);
            }
            return Ok(decoration::discover(server, Duration::ZERO).into());
        }
        names::SUBSCRIPTIONS_LISTEN => Reply::Json(listen(server, &ctx, params.as_ref()).await?),
        _ => {
            let client = crate::context::ClientCell::new(admitted.client);
            let ctx = Context::new(ctx, client).with_access_token(token);
            crate::router::dispatch_reply(server, ctx, crate::router::Params::Tree(params)).await?
        }
    };
    let page = matches!(reply, Reply::Page(_));
    let result = reply.into_json()?;
    if !result.is_object() {
        return Ok(result);
    }
    // Decorated as text (the result's members copied, not read into a tree), then checked
    // once more as the one JSON value it is.
    let info = &server.inner.info_json;
    let hint = decoration::hint(server, &method, Duration::ZERO);
    let mut out = Vec::with_capacity(result.len() + info.len() + 64);
    let write = if page { decoration::write_page } else { decoration::write_decorated };
    write(&mut out, result.as_str(), info, hint).map_err(ErrorObject::internal)?;
    String::from_utf8(out)
        .map_err(ErrorObject::internal)
        .and_then(|text| RawJson::from_text(text).map_err(ErrorObject::internal))
}

/// `subscriptions/listen` on a connection: the acknowledgement, then the notifications, sent
/// on the connection; the result once the server's changes end.
async fn listen(server: &Server, ctx: &RequestContext, params: Option<&Value>) -> HandlerResult {
    let mut listen = Listen::open(server, ctx.id(), params)?;
    let peer = ctx.peer();
    let closed = |e: mcpl_core::Error| {
        tracing::debug!(error = %e, "a subscription's connection closed");
        ErrorObject::internal("the connection closed")
    };
    let ack = listen.acknowledgement();
    peer.notify(&ack.method, ack.params).await.map_err(closed)?;
    while let Some(notification) = listen.next().await {
        peer.notify(&notification.method, notification.params).await.map_err(closed)?;
    }
    Ok(listen.ended().into())
}
