//! The stateful (2025) era on Streamable HTTP: sessions.
//!
//! `initialize` creates a session (its id in `Mcp-Session-Id`, from a CSPRNG, 128 bits); every
//! later request names it. A request is answered with an SSE stream (or one JSON body) of its
//! response and what the server sends while serving it; `GET` opens the session's standalone
//! stream or resumes one (`Last-Event-ID`); `DELETE` ends the session. The session table is
//! bounded (idle sessions yield to new ones at the cap), idle and half-open sessions are
//! reaped, and a session store lets other instances continue a session (see the parent
//! module's docs).

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use mcpl_core::ProtocolVersion;
use mcpl_core::engine::NotRun;
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject, ErrorResponse, Message, RequestId};
use mcpl_core::types::names;
use tokio::sync::{mpsc, oneshot};

use super::event_store::EventPosition;
use super::head::{Head, text};
use super::listed::Listed;
use super::session::{Event, HttpSession, STREAM_BUFFER, StreamError};
use super::session_store::{self, SessionRecord};
use super::sse::{self, SseEvent};
use super::{
    LAST_EVENT_ID, PROTOCOL_VERSION_HEADER, RefusalKind, Reject, SESSION_ID_HEADER, StreamableHttp,
    guard, json_body, json_bytes, refused, rpc_error, rpc_error_for, stop_at_shutdown,
};
use crate::principal::{AccessToken, Principal};

mod table;

pub(in crate::http) use self::table::random_stream_base;
use self::table::{find_session, new_session_id, store_unavailable};

/// Serves a POST of the stateful era: `initialize`, or a message of a session.
pub(super) async fn post(
    http: &StreamableHttp,
    head: &Head<'_>,
    message: Message,
    call: Option<crate::router::PlainToolCall>,
    peer: Option<std::net::SocketAddr>,
    token: Option<Arc<AccessToken>>,
) -> Response {
    if let Message::Request(req) = &message
        && req.method == mcpl_core::types::names::INITIALIZE
    {
        if head.session_id.is_some() {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                "initialize must not carry Mcp-Session-Id",
            );
        }
        // Boxed, as delivering below: what a session does once (or rarely) should not weigh
        // on every request's future.
        return Box::pin(initialize(http, message, peer, token)).await;
    }
    let id = request_id(&message);
    let principal = token.as_ref().and_then(|t| t.principal());
    // The session's id as the request named it: its answer names the session with the same
    // header value (no copy, no check).
    let sent = head.session_id;
    let session = match find_session(http, sent, principal.as_ref()).await {
        Ok(s) => s,
        Err(reject) => return reject.respond(id),
    };
    if let Err(reject) = check_version_header(head.protocol_version(), &session) {
        return reject.respond(id);
    }
    match message {
        Message::Request(req) if http.inner.config.json_response && session.runs_reply(&req) => {
            json_request(http, &session, sent, req, call, token).await
        }
        Message::Request(req) => {
            // Through the session's pipeline, which takes params as a tree.
            let req = super::stateless_body::with_params(req, call);
            let id = req.id.clone();
            let opened = if http.inner.config.json_response {
                session.open_json_request(&id).map(Opened::Json)
            } else {
                session.open_request_stream(&id).map(|(stream, rx)| Opened::Sse(stream, rx))
            };
            let opened = match opened {
                Ok(opened) => opened,
                Err(StreamError::DuplicateRequest) => {
                    let error = ErrorObject::invalid_request(format_args!(
                        "request id {id} is already in flight"
                    ));
                    return json_body(
                        StatusCode::CONFLICT,
                        &Message::Error(ErrorResponse::new(Some(id), error)),
                    );
                }
                Err(_) => {
                    return rpc_error_for(
                        Some(id),
                        StatusCode::NOT_FOUND,
                        ErrorCode(-32001),
                        "session not found",
                    );
                }
            };
            // The handler runs on this task (JSON) or as the response body is polled (SSE):
            // no task spawned, no hop between tasks for the answer.
            let Ok(serving) = session.serve_request(req, token) else {
                session.abandon_request_stream(&id);
                return rpc_error_for(
                    Some(id),
                    StatusCode::NOT_FOUND,
                    ErrorCode(-32001),
                    "session ended",
                );
            };
            match opened {
                Opened::Json(rx) => {
                    serving.await;
                    json_reply(rx, &session, sent).await
                }
                Opened::Sse(stream, rx) => {
                    let mut live = Live { rx, serving: Some(serving) };
                    match live.at_once().await {
                        AtOnce::Answered(events) => {
                            sse_complete(http, &session, sent, stream, &events)
                        }
                        AtOnce::Pending(ahead) => {
                            sse_reply(http, &session, sent, stream, ahead, Some(live), true)
                        }
                    }
                }
            }
        }
        other => {
            if http.inner.events.relays()
                && let Some(id) =
                    response_id(&other).filter(|id| !session.awaits_response(id)).cloned()
            {
                // The answer to a request another instance of the fleet sent.
                tracing::debug!(session = %session.id, %id, "relaying an answer to the fleet");
                let relayed = super::event_store::Relayed::ToServer {
                    session: session.id.to_string(),
                    message: other,
                };
                http.inner.events.relay(&relayed).await;
                return StatusCode::ACCEPTED.into_response();
            }
            let cancelled = cancelled_request(&other);
            match Box::pin(session.deliver(other)).await {
                Ok(()) => {
                    if let Some(id) = cancelled {
                        // The handler stops and sends nothing more: end the request's stream.
                        session.end_request_stream(&id).await;
                    }
                    StatusCode::ACCEPTED.into_response()
                }
                Err(_) => rpc_error(StatusCode::NOT_FOUND, ErrorCode(-32001), "session ended"),
            }
        }
    }
}

/// Serves a request of an initialized session answered with one JSON body: run on this task
/// (see [`HttpSession::run_reply`]) and its answer written here, a tool's result straight
/// from its type; no stream opened for it, nothing stored, nothing queued.
async fn json_request(
    http: &StreamableHttp,
    session: &HttpSession,
    sent: Option<&HeaderValue>,
    request: mcpl_core::jsonrpc::Request,
    call: Option<crate::router::PlainToolCall>,
    token: Option<Arc<AccessToken>>,
) -> Response {
    let id = request.id.clone();
    let inner = &http.inner;
    let running = session.run_reply(&inner.server, &inner.server_side, request, call, token);
    let running = match running {
        Ok(running) => running,
        Err(NotRun::Duplicate(answer)) => return json_body(StatusCode::CONFLICT, &answer),
        Err(NotRun::Busy(answer)) => {
            return with_session_id(json_body(StatusCode::OK, &answer), session, sent);
        }
        Err(_) => {
            return rpc_error_for(
                Some(id),
                StatusCode::NOT_FOUND,
                ErrorCode(-32001),
                "session ended",
            );
        }
    };
    let body = match running.await {
        Some(Ok(reply)) => reply.to_response(&id).map_err(ErrorObject::internal),
        Some(Err(error)) => Err(error),
        // Cancelled by the client, or the session ended meanwhile.
        None => {
            return rpc_error(
                StatusCode::NOT_FOUND,
                ErrorCode(-32001),
                "session ended before the response",
            );
        }
    };
    let body = body.unwrap_or_else(|error| {
        serde_json::to_vec(&Message::Error(ErrorResponse::new(Some(id), error))).unwrap_or_default()
    });
    with_session_id(json_bytes(StatusCode::OK, body), session, sent)
}

/// A request's stream, as its answer is given: one JSON body, or an SSE stream.
enum Opened {
    Json(oneshot::Receiver<Event>),
    Sse(u64, mpsc::Receiver<Event>),
}

/// The id of `message`, if it is a request.
fn request_id(message: &Message) -> Option<RequestId> {
    match message {
        Message::Request(r) => Some(r.id.clone()),
        _ => None,
    }
}

/// The request a response or error answers.
fn response_id(message: &Message) -> Option<&RequestId> {
    match message {
        Message::Response(r) => Some(&r.id),
        Message::Error(e) => e.id.as_ref(),
        _ => None,
    }
}

/// The request a `notifications/cancelled` names.
fn cancelled_request(message: &Message) -> Option<RequestId> {
    let Message::Notification(n) = message else { return None };
    if n.method != names::NOTIFICATIONS_CANCELLED {
        return None;
    }
    let id = n.params.as_ref()?.get("requestId")?;
    serde_json::from_value(id.clone()).ok()
}

/// Checks `MCP-Protocol-Version` (`value`) on a request after `initialize`.
fn check_version_header(value: Option<&str>, session: &HttpSession) -> Result<(), Reject> {
    let Some(value) = value else {
        // Absent: the client predates the header (2025-03-26); accept.
        return Ok(());
    };
    match ProtocolVersion::parse(value) {
        Some(v) if session.protocol_version().is_none_or(|negotiated| negotiated == v) => Ok(()),
        Some(v) => Err(Reject::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            format!("MCP-Protocol-Version {v} does not match the negotiated version"),
        )),
        None => Err(Reject::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            format!("unsupported MCP-Protocol-Version {value:?}"),
        )),
    }
}

async fn initialize(
    http: &StreamableHttp,
    message: Message,
    peer: Option<std::net::SocketAddr>,
    token: Option<Arc<AccessToken>>,
) -> Response {
    let request_id = request_id(&message);
    let Some((_slot, evicted)) = http.reserve_session() else {
        http.refuse(RefusalKind::SessionLimit, peer, "session cap reached, none idle");
        let mut response = rpc_error_for(
            request_id,
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::INTERNAL_ERROR,
            "too many sessions",
        );
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return response;
    };
    if let Some(evicted) = evicted {
        tracing::debug!(session = %evicted.id, "closing an idle session to make room for a new one");
        http.drop_local(&evicted).await;
    }
    let Message::Request(req) = message else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            "initialize must be a request",
        );
    };
    let id = match new_session_id() {
        Ok(id) => id,
        Err(e) => {
            return rpc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                ErrorCode::INTERNAL_ERROR,
                format!("no randomness: {e}"),
            );
        }
    };
    let session = Arc::new(HttpSession::start(
        Arc::from(id.as_str()),
        token.as_ref().and_then(|t| t.principal()),
        (&http.inner.session_engine, http.inner.epoch),
        http.inner.events.clone(),
        0,
    ));
    let request_id = req.id.clone();
    let Ok(rx) = session.open_json_request(&request_id) else {
        return rpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::INTERNAL_ERROR,
            "session failed to start",
        );
    };
    // Served on this task, like every request of the session.
    let Ok(serving) = session.serve_request(req, token) else {
        return rpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::INTERNAL_ERROR,
            "session failed to start",
        );
    };
    serving.await;
    let Ok(event) = rx.await else {
        session.close().await;
        return rpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::INTERNAL_ERROR,
            "session ended during initialize",
        );
    };
    if event.error {
        // A refused handshake leaves no session behind.
        session.close().await;
        return json_bytes(StatusCode::OK, event.data);
    }
    if let (Some(store), Some(version), Some(client_info), Some(client_capabilities)) = (
        &http.inner.store,
        session.protocol_version(),
        session.client_info(),
        session.client_capabilities(),
    ) {
        let record = SessionRecord {
            id: id.clone(),
            protocol_version: version.to_string(),
            client_info,
            client_capabilities,
            principal: session.principal().cloned(),
        };
        if let Err(e) = store.save(record).await {
            // Not recorded, so not continued elsewhere: no session at all.
            session.close().await;
            let kind = match e.kind() {
                session_store::StoreErrorKind::Full => RefusalKind::SessionLimit,
                _ => RefusalKind::StoreUnavailable,
            };
            http.refuse(kind, peer, &e.to_string());
            return store_unavailable(&e).respond(Some(request_id));
        }
    }
    http.inner
        .sessions
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(Listed(session.clone()));
    http.start_reaper();
    let mut response = if http.inner.config.json_response {
        json_bytes(StatusCode::OK, event.data)
    } else {
        sse_reply(http, &session, None, event.position.stream, vec![event], None, false)
    };
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(SESSION_ID_HEADER, value);
    }
    response
}

/// Waits for the response on a JSON-mode request stream.
async fn json_reply(
    rx: oneshot::Receiver<Event>,
    session: &HttpSession,
    sent: Option<&HeaderValue>,
) -> Response {
    match rx.await {
        Ok(event) => with_session_id(json_bytes(StatusCode::OK, event.data), session, sent),
        Err(_) => {
            rpc_error(StatusCode::NOT_FOUND, ErrorCode(-32001), "session ended before the response")
        }
    }
}

fn sse_event(event: &Event) -> SseEvent {
    SseEvent::default().id(event.position).data(event.data.clone())
}

/// An SSE response: optionally a priming event, then `replay`, then what arrives on `live`.
fn sse_reply(
    http: &StreamableHttp,
    session: &HttpSession,
    sent: Option<&HeaderValue>,
    stream: u64,
    replay: Vec<Event>,
    live: Option<Live>,
    prime: bool,
) -> Response {
    let live_request = prime && live.is_some() && session.is_request_stream(stream);
    let first = if prime { primer(http, session, stream) } else { None };
    let last_replayed = replay.last().map(|e| e.position.seq).unwrap_or(0);
    let replayed = futures::stream::iter(replay);
    let live = futures::stream::unfold(live, move |live| async move {
        let mut live = live?;
        loop {
            let event = live.next().await?;
            // Skip what the replay already delivered.
            if event.position.seq > last_replayed {
                return Some((event, Some(live)));
            }
        }
    });
    // Once the response has been handed to the connection, the stream has nothing left to
    // resume: its stored events are dropped (ending the body is the next poll after that).
    let discard = Some((http.inner.events.clone(), session.id.clone()));
    let events = futures::stream::unfold(
        (Box::pin(replayed.chain(live)), discard, false),
        move |(mut events, discard, finished)| async move {
            match events.next().await {
                Some(event) => {
                    let done = event.answers;
                    Some((sse_event(&event), (events, discard, finished || done)))
                }
                None => {
                    if let (true, Some((store, session))) = (finished, discard) {
                        store.discard_stream(&session, stream).await;
                    }
                    None
                }
            }
        },
    );
    let events = futures::stream::iter(first).chain(events).map(Ok::<_, Infallible>);
    let stop = stop_at_shutdown(http, live_request);
    let response = sse::response_until(events, http.inner.config.keep_alive, Some(stop));
    with_session_id(response, session, sent)
}

/// The event that primes a request's stream: an id and empty data, which clients of
/// 2025-11-25 and later understand, so that they can resume a stream that closes before its
/// first real event. `None` for older clients.
fn primer(http: &StreamableHttp, session: &HttpSession, stream: u64) -> Option<SseEvent> {
    let primes = session.protocol_version().is_some_and(|v| v >= ProtocolVersion::V2025_11_25);
    let retry = http.inner.config.retry;
    primes.then(|| SseEvent::default().id(EventPosition { stream, seq: 0 }).retry(retry).data(""))
}

/// `response` naming `session` in `Mcp-Session-Id`: with `sent`, the value the request named
/// it with, if that is the session's id (a clone shares the request's bytes).
fn with_session_id(
    mut response: Response,
    session: &HttpSession,
    sent: Option<&HeaderValue>,
) -> Response {
    let value = match sent {
        Some(sent) if sent.as_bytes() == session.id.as_bytes() => Some(sent.clone()),
        _ => HeaderValue::from_str(&session.id).ok(),
    };
    if let Some(value) = value {
        response.headers_mut().insert(SESSION_ID_HEADER, value);
    }
    response
}

/// The SSE response to a request answered at once: the primer (as [`sse_reply`] sends it),
/// then `events` (the answer last) in one frame. Its stored events are forgotten once the
/// connection has taken the frame, as [`sse_reply`] does when its stream ends.
fn sse_complete(
    http: &StreamableHttp,
    session: &HttpSession,
    sent: Option<&HeaderValue>,
    stream: u64,
    events: &[Event],
) -> Response {
    let room: usize = events.iter().map(|e| e.data.len() + 48).sum();
    let mut frame = Vec::with_capacity(room + 64);
    if let Some(primer) = primer(http, session, stream) {
        primer.encode_into(&mut frame);
    }
    for event in events {
        sse_event(event).encode_into(&mut frame);
    }
    let (store, id) = (http.inner.events.clone(), session.id.clone());
    let forget = Box::pin(async move { store.discard_stream(&id, stream).await });
    with_session_id(sse::response_complete(frame.into(), forget), session, sent)
}

/// What a live SSE stream carries: the events routed to it and, for a request's own stream,
/// the request being served (polled with the body; dropped with it, it goes on by itself).
struct Live {
    rx: mpsc::Receiver<Event>,
    serving: Option<mcpl_core::engine::embed::Serving>,
}

/// What serving a request once, without waiting, gave: see [`Live::at_once`].
enum AtOnce {
    /// The request was answered and its stream ended: every event of the stream, the
    /// answer last.
    Answered(Vec<Event>),
    /// Not yet: the events that arrived meanwhile, to send ahead of the rest.
    Pending(Vec<Event>),
}

impl Live {
    fn new(rx: mpsc::Receiver<Event>) -> Live {
        Live { rx, serving: None }
    }

    /// Serves the request once, without waiting, and takes what its stream then holds.
    async fn at_once(&mut self) -> AtOnce {
        let Some(serving) = &mut self.serving else { return AtOnce::Pending(Vec::new()) };
        let polled = std::future::poll_fn(|cx| {
            std::task::Poll::Ready(std::pin::Pin::new(&mut *serving).poll(cx).is_ready())
        });
        if !polled.await {
            return AtOnce::Pending(Vec::new());
        }
        self.serving = None;
        // At most what the stream's channel holds: past that (senders on other tasks keep
        // filling it), the stream is sent as it comes.
        let mut events = Vec::new();
        while events.len() < STREAM_BUFFER {
            match self.rx.try_recv() {
                Ok(event) => events.push(event),
                Err(mpsc::error::TryRecvError::Disconnected)
                    if events.last().is_some_and(|e| e.answers) =>
                {
                    return AtOnce::Answered(events);
                }
                Err(_) => break,
            }
        }
        AtOnce::Pending(events)
    }

    /// The next event, serving the request meanwhile.
    async fn next(&mut self) -> Option<Event> {
        if let Some(serving) = &mut self.serving {
            tokio::select! {
                biased;
                event = self.rx.recv() => return event,
                () = serving => self.serving = None,
            }
        }
        self.rx.recv().await
    }
}

/// `405` for GET and DELETE without a session: only stateful-era sessions have streams to get
/// or end; the stateless era has neither.
fn no_session_method() -> Response {
    let mut response = rpc_error(
        StatusCode::METHOD_NOT_ALLOWED,
        ErrorCode::INVALID_REQUEST,
        "GET and DELETE need an Mcp-Session-Id (stateless requests use POST only)",
    );
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

pub(super) async fn get(
    http: &StreamableHttp,
    request: Request,
    principal: Option<Principal>,
) -> Response {
    let headers = request.headers();
    if !headers.contains_key(&SESSION_ID_HEADER) {
        return no_session_method();
    }
    if let Err(r) = guard::check_get_accept(headers) {
        return refused(r);
    }
    let sent = headers.get(&SESSION_ID_HEADER);
    let session = match find_session(http, sent, principal.as_ref()).await {
        Ok(s) => s,
        Err(reject) => return reject.into_response(),
    };
    if let Err(reject) = check_version_header(text(headers.get(&PROTOCOL_VERSION_HEADER)), &session)
    {
        return reject.into_response();
    }
    if let Some(last) = text(headers.get(LAST_EVENT_ID)) {
        let Some(position) = EventPosition::parse(last) else {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                "malformed Last-Event-ID",
            );
        };
        return match session.resume(position).await {
            Some((replay, live)) => {
                let live = live.map(Live::new);
                sse_reply(http, &session, sent, position.stream, replay, live, false)
            }
            None => rpc_error(
                StatusCode::NOT_FOUND,
                ErrorCode::INVALID_REQUEST,
                "cannot resume: events unavailable",
            ),
        };
    }
    match session.open_standalone() {
        Ok((stream, rx)) => {
            sse_reply(http, &session, sent, stream, Vec::new(), Some(Live::new(rx)), true)
        }
        Err(StreamError::StandaloneTaken) => rpc_error(
            StatusCode::CONFLICT,
            ErrorCode::INVALID_REQUEST,
            "the session already has a standalone SSE stream",
        ),
        Err(_) => rpc_error(StatusCode::NOT_FOUND, ErrorCode(-32001), "session not found"),
    }
}

pub(super) async fn delete(
    http: &StreamableHttp,
    request: Request,
    principal: Option<Principal>,
) -> Response {
    if !request.headers().contains_key(&SESSION_ID_HEADER) {
        return no_session_method();
    }
    let session =
        match find_session(http, request.headers().get(&SESSION_ID_HEADER), principal.as_ref())
            .await
        {
            Ok(s) => s,
            Err(reject) => return reject.into_response(),
        };
    if let Some(store) = &http.inner.store
        && let Err(e) = store.remove(&session.id).await
    {
        // Still recorded: it would live on at other endpoints. The client may retry.
        return store_unavailable(&e).into_response();
    }
    http.remove_session(&session.id);
    session.close().await;
    StatusCode::NO_CONTENT.into_response()
}
