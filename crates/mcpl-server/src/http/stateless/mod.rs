//! The stateless (2026-07-28) era on Streamable HTTP: every POST is one self-describing
//! request, served once.
//!
//! Each POST goes through the stateless era's pipeline, the one stdio and WebSocket use too:
//! the required `_meta` keys (`-32602`), then this transport's headers against the body
//! (`-32020`), the protocol version (`-32022`), the method (`-32601`, HTTP 404), then the
//! method itself; results get `resultType`, the server's identity in `_meta`, and caching hints
//! where the revision requires them. Serving a POST consumes its request, so it serves
//! exactly once by construction: the request runs inline on the HTTP task, what its handler
//! sends as it goes (progress, log messages, when the client asked for them) streams through a
//! [`StatelessSender`], and the endpoint writes the answer (a tool's result straight from its
//! type). A [`StatelessTransport`] serves such a request with an engine of your own
//! ([`Engine::connect`](mcpl_core::Engine::connect)); its clones share the one use and refuse
//! a second with [`Error::StatelessTransportReuse`](mcpl_core::Error).

mod headers;
mod transport;
mod wire;

use std::borrow::Cow;
use std::future::{Future, ready};
use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures::future::Either;
use futures::{FutureExt as _, StreamExt};
use mcpl_core::Era;
use mcpl_core::engine::embed;
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject, ErrorResponse, Message, Request, RequestId};
use mcpl_core::types::names;
use serde_json::Value;
use tracing::Instrument as _;

use self::transport::InlineRequest;
pub use self::transport::{
    StatelessOutput, StatelessReceiver, StatelessSender, StatelessTransport,
};
use self::wire::{wire, wire_reply};
use super::head::Head;
use super::sse::{self, SseEvent};
use super::stateless_body::Incoming;
use super::{StreamableHttp, json_body};
use crate::context::Context;
use crate::principal::AccessToken;
use crate::stateless::admission::{MetaFacts, admit};
use crate::stateless::decoration;
use crate::stateless::listen::Listen;

/// The `Mcp-Method` header.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::http::stateless::MCP_METHOD, "mcp-method");
/// ```
pub const MCP_METHOD: &str = "mcp-method";
/// The `Mcp-Name` header.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::http::stateless::MCP_NAME, "mcp-name");
/// ```
pub const MCP_NAME: &str = "mcp-name";
/// The prefix of the headers mirrored from `x-mcp-header` tool arguments.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::http::stateless::MCP_PARAM_PREFIX, "mcp-param-");
/// ```
pub const MCP_PARAM_PREFIX: &str = "mcp-param-";

/// The era `message` names itself, by the one rule ([`crate::stateless::era_of`]): a POST
/// is of the stateless era if this says so or its `MCP-Protocol-Version` header does.
pub(crate) fn era_of(message: &Message) -> Era {
    let params = match message {
        Message::Request(r) => r.params.as_ref(),
        Message::Notification(n) => n.params.as_ref(),
        _ => None,
    };
    let meta = params.and_then(|p| p.get("_meta")).and_then(Value::as_object);
    crate::stateless::era_of(meta, None)
}

/// A stateless-era refusal: an HTTP status and a JSON-RPC error answering `id`.
fn refuse(status: StatusCode, id: Option<RequestId>, error: ErrorObject) -> Response {
    json_body(status, &Message::Error(ErrorResponse::new(id, error)))
}

/// The HTTP status of a request admission refused: `404` for an unknown method, else `400`.
fn refusal_status(error: &ErrorObject) -> StatusCode {
    match error.code {
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::BAD_REQUEST,
    }
}

/// The HTTP status for a JSON-RPC error answered as a single JSON body.
fn status_for(error: &ErrorObject) -> StatusCode {
    match error.code {
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        ErrorCode::HEADER_MISMATCH
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// Serves one stateless-era POST read by the general decoder.
pub(crate) async fn serve(
    http: &StreamableHttp,
    head: &Head<'_>,
    message: Message,
    token: Option<Arc<AccessToken>>,
) -> Response {
    let request = match message {
        Message::Request(r) => r,
        // No client notification means anything over stateless HTTP; accept and ignore.
        Message::Notification(_) => return StatusCode::ACCEPTED.into_response(),
        Message::Response(_) | Message::Error(_) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                None,
                ErrorObject::invalid_request("clients send no responses in the stateless era"),
            );
        }
    };
    let meta = request.params.as_ref().and_then(|p| p.get("_meta")).and_then(Value::as_object);
    let facts = MetaFacts::of_tree(meta);
    let read = Incoming { request, call: None, meta: None, facts };
    Box::pin(serve_request(http, head, read, token)).await
}

/// Serves one stateless-era POST read straight from its body (see `stateless_body`).
// Inlined (as `serve_request` is) so that the future is built where `post` keeps it, not
// built here and moved there: it holds the call inline (see `serve_request`).
#[inline(always)]
pub(crate) fn serve_read<'a>(
    http: &'a StreamableHttp,
    head: &Head<'_>,
    read: Incoming,
    token: Option<Arc<AccessToken>>,
) -> impl Future<Output = Response> + Send + use<'a> {
    serve_request(http, head, read, token)
}

/// Serves the request `read`, whose `_meta` is in its params or, read on demand, in its `meta`,
/// and whose params are in its `call` if they were read typed; its `facts` are what admission
/// reads of it; `token` is the request's verified access token, if any. Its headers (`sent`)
/// are checked before it is served.
///
/// Not an `async fn`: admission and the answers given at once happen here, and the returned
/// future holds only what serving the method needs (not the request's `_meta` facts too).
#[inline(always)]
fn serve_request<'a>(
    http: &'a StreamableHttp,
    head: &Head<'_>,
    read: Incoming,
    token: Option<Arc<AccessToken>>,
) -> impl Future<Output = Response> + Send + use<'a> {
    let Incoming { request, call: plain, meta: raw_meta, facts } = read;
    let id = request.id.clone();
    let server = &http.inner.server;
    let checked = admit(facts, &request.method, |version| {
        headers::check(server, head, &request, plain.as_ref(), version)
    });
    let admitted = match checked {
        Ok(admitted) => admitted,
        Err(error) => return Either::Left(ready(refuse(refusal_status(&error), Some(id), error))),
    };
    let ttl = http.inner.config.cache_ttl;
    match request.method.as_str() {
        names::SERVER_DISCOVER => {
            let result = decoration::discover(server, ttl);
            let response = mcpl_core::jsonrpc::Response::new(id, result);
            return Either::Left(ready(json_body(StatusCode::OK, &Message::Response(response))));
        }
        names::SUBSCRIPTIONS_LISTEN => return Either::Left(ready(listen(http, request))),
        _ => {}
    }

    // The method itself, served inline on this task by the request's single-use transport:
    // the engine runs the router and hands its answer back, and this endpoint writes it (a
    // tool's result straight from its type, see `wire_reply`).
    let cacheable = decoration::cacheable(&request.method);
    let client = crate::context::ClientCell::new(admitted.client);
    let (request, output) = InlineRequest::new(request, raw_meta, admitted.streaming);
    match output {
        // What the handler sends as it goes (progress, log messages) is streamed before the
        // answer.
        Some(output) => {
            let stop = super::stop_at_shutdown(http, true);
            // The response body polls it, after this handler returned: it keeps this span.
            let owned = http.clone();
            let call = async move { call(&owned, request, plain, client, token).await };
            let driver = Box::pin(call.in_current_span());
            let decorate = Decorator { http: Cow::Owned(http.clone()), cacheable };
            let keep_alive = http.inner.config.keep_alive;
            Either::Left(ready(sse(id, output, driver, decorate, (keep_alive, stop))))
        }
        // Without a progress token or log level nothing but the answer is wanted.
        None => Either::Right(async move {
            // Not boxed: built in place (this function and the engine's entry points are
            // inlined into the endpoint's future), the call's future is neither copied into a
            // box of its own (about 1.4 KB, past the allocator's per-thread cache) nor moved
            // between layers.
            let outcome = call(http, request, plain, client, token).await;
            json_reply(&id, outcome, &Decorator { http: Cow::Borrowed(http), cacheable })
        }),
    }
}

/// The method itself, served inline on this task: the engine runs the router and hands its
/// answer back, for the endpoint to write (a tool's result straight from its type, see
/// `wire_reply`). `plain`: the params, if they were read typed. `None`: the request ended
/// without one.
async fn call(
    http: &StreamableHttp,
    request: InlineRequest,
    plain: Option<PlainToolCall>,
    client: crate::context::SharedClientState,
    token: Option<Arc<AccessToken>>,
) -> Option<Outcome> {
    let server = &http.inner.server;
    let server_side = http.inner.server_side.clone();
    let (Request { id, method, params }, meta, mut sender) = request.into_parts();
    let run =
        embed::run_request(&http.inner.stateless, id, method, meta, None, &mut sender, |ctx| {
            let method = crate::router::method_name(ctx.method());
            let params = match plain {
                Some(plain) => Params::Call(plain),
                None => Params::Tree(params),
            };
            // The engine did not see the params: what they name goes on the span here.
            let span = tracing::Span::current();
            params.record_target(&span, ctx.method());
            let ctx = Context::served(ctx, client, token, server_side);
            // Made here, not in an `async` block that would hold the context a second time.
            let reply = crate::router::dispatch_reply(server, ctx, params);
            crate::unwinding::unwinding(method, reply).map(move |outcome| {
                crate::router::record_reply(&span, &outcome);
                outcome
            })
        });
    match run.await {
        Ok(outcome) => Some(outcome),
        Err(e) => {
            tracing::debug!(error = %e, "stateless request ended early");
            None
        }
    }
}

/// Serves the request and gives the router's answer (`None` if the response can no longer be
/// written); polled by whoever writes the HTTP response, and dropped (cancelling the handler)
/// when the client goes away.
type Driver = std::pin::Pin<Box<dyn std::future::Future<Output = Option<Outcome>> + Send>>;

use crate::router::{Outcome, Params, PlainToolCall};

/// Adds what every stateless-era result carries.
struct Decorator<'a> {
    /// Borrowed where the answer is written before the endpoint returns; owned by an SSE
    /// response's stream.
    http: Cow<'a, StreamableHttp>,
    /// The method, if its results carry caching hints.
    cacheable: Option<&'static str>,
}

impl Decorator<'_> {
    /// The answer to request `id` as it goes on the wire, with the HTTP status of a single
    /// JSON body.
    fn answer(&self, id: &RequestId, outcome: Option<Outcome>) -> (StatusCode, Vec<u8>) {
        let outcome = outcome
            .unwrap_or_else(|| Err(ErrorObject::internal("the request ended without a response")));
        let inner = &self.http.inner;
        let hint =
            self.cacheable.and_then(|m| decoration::hint(&inner.server, m, inner.config.cache_ttl));
        let error = match outcome {
            Ok(reply) => match wire_reply(id, reply, &inner.server.inner.info_json, hint) {
                Ok(body) => return (StatusCode::OK, body),
                Err(e) => ErrorObject::internal(e),
            },
            Err(error) => error,
        };
        let status = status_for(&error);
        let message = Message::Error(ErrorResponse::new(Some(id.clone()), error));
        (status, serde_json::to_vec(&message).unwrap_or_default())
    }
}

fn json_reply(id: &RequestId, outcome: Option<Outcome>, decorate: &Decorator) -> Response {
    let (status, body) = decorate.answer(id, outcome);
    super::json_bytes(status, body)
}

/// An SSE response: what the handler sends as it goes, then the answer.
fn sse(
    id: RequestId,
    output: StatelessOutput,
    driver: Driver,
    decorate: Decorator<'static>,
    (keep_alive, stop): (std::time::Duration, sse::Stop),
) -> Response {
    let state = Some((output, Some(driver), None, (id, decorate)));
    let events = futures::stream::unfold(state, |state| async move {
        let (mut output, mut driver, mut outcome, answer) = state?;
        let data = loop {
            tokio::select! {
                biased;
                message = output.recv() => match message {
                    Some(message) => {
                        break wire(&message, &answer.1.http.inner.server.inner.info_json, None).ok();
                    }
                    // The handler is done and all it sent was streamed: the answer is last.
                    None if driver.is_none() => {
                        let (id, decorate) = &answer;
                        let (_, body) = decorate.answer(id, outcome.take());
                        let data = String::from_utf8(body).unwrap_or_default();
                        return Some((Ok(SseEvent::default().data(data)), None));
                    }
                    // The sender is gone only once the handler is done.
                    None => {
                        if let Some(d) = driver.take() {
                            outcome = d.await;
                        }
                    }
                },
                done = async { if let Some(d) = driver.as_mut() { d.await } else { None } },
                    if driver.is_some() =>
                {
                    driver = None;
                    outcome = done;
                }
            }
        };
        let data = data.and_then(|data| String::from_utf8(data).ok()).unwrap_or_default();
        Some((
            Ok::<_, std::convert::Infallible>(SseEvent::default().data(data)),
            Some((output, driver, outcome, answer)),
        ))
    });
    // At shutdown the call gets the grace period to answer, then the stream ends with a
    // `retry` hint.
    sse::response_until(events, keep_alive, Some(stop))
}

/// `subscriptions/listen`: an SSE stream of the acknowledgement, then of the notifications
/// the client opted into; at shutdown it ends at once, with a `retry` hint.
fn listen(http: &StreamableHttp, request: Request) -> Response {
    let listen = match Listen::open(&http.inner.server, &request.id, request.params.as_ref()) {
        Ok(listen) => listen,
        Err(error) => return refuse(status_for(&error), Some(request.id), error),
    };
    let event = |notification| {
        let data = serde_json::to_string(&Message::Notification(notification)).unwrap_or_default();
        Ok::<_, std::convert::Infallible>(SseEvent::default().data(data))
    };
    let first = futures::stream::iter([event(listen.acknowledgement())]);
    let rest = futures::stream::unfold(listen, move |mut listen| async move {
        let notification = listen.next().await?;
        Some((event(notification), listen))
    });
    let stop = super::stop_at_shutdown(http, false);
    sse::response_until(first.chain(rest), http.inner.config.keep_alive, Some(stop))
}
