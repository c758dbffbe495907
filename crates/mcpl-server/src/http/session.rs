//! A stateful-era HTTP session: the transport that connects a served [`crate::Session`] to HTTP
//! requests, and the routing of outgoing messages to SSE streams.
//!
//! Each client request gets a stream; what the server sends in relation to that request (its
//! response, and notifications or requests sent while serving it) goes on that stream. Other
//! messages go on the session's standalone stream, opened by a GET. Streams outlive HTTP
//! connections: events are kept in the [`EventStore`] and a client can resume a stream with
//! `Last-Event-ID`.

use bytes::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpl_core::engine::Engine;
use mcpl_core::engine::embed::{self, Driven, NotRun, Running};
use mcpl_core::jsonrpc::{Message, RequestId};
use mcpl_core::transport::TransportSender;
use mcpl_core::types::{ClientCapabilities, Implementation};
use mcpl_core::{Peer, ProtocolVersion, Result};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::event_store::{EventPosition, EventStore, Relayed};
use super::small_map::SmallMap;
use crate::context::lock as lock_client;
use crate::principal::{AccessToken, Principal};
use crate::session::SessionState;

/// How many events may wait for a slow SSE connection before it is detached.
pub(crate) const STREAM_BUFFER: usize = 64;

/// One event of a session's stream: its message as JSON, made once (what the stream writes
/// and the event store keeps).
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub(crate) position: EventPosition,
    pub(crate) data: Bytes,
    /// The message answers a request (a response or an error): its stream ends with it.
    pub(crate) answers: bool,
    /// The message is an error response.
    pub(crate) error: bool,
}

impl Event {
    /// `message` at `position`, encoded.
    pub(crate) fn new(position: EventPosition, message: &Message) -> Event {
        Event {
            position,
            data: Bytes::from(message.encode()),
            answers: matches!(message, Message::Response(_) | Message::Error(_)),
            error: matches!(message, Message::Error(_)),
        }
    }
}

#[derive(Debug)]
struct StreamState {
    next_seq: u64,
    attached: Option<Attached>,
    /// A JSON-mode request stream: only its response goes to it.
    json: bool,
}

/// Where a stream's events go while its client is connected.
#[derive(Debug)]
enum Attached {
    /// An SSE body: every event, in order.
    Sse(mpsc::Sender<Event>),
    /// A JSON-mode request: its response, once (no channel's buffer for one message).
    Json(oneshot::Sender<Event>),
}

impl Attached {
    /// A new SSE attachment, and its receiving end (at most [`STREAM_BUFFER`] events wait).
    fn sse() -> (Attached, mpsc::Receiver<Event>) {
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        (Attached::Sse(tx), rx)
    }

    fn is_live(&self) -> bool {
        match self {
            Attached::Sse(tx) => !tx.is_closed(),
            Attached::Json(tx) => !tx.is_closed(),
        }
    }
}

#[derive(Debug, Default)]
struct Routes {
    next_stream: u64,
    by_request: SmallMap<RequestId, u64>,
    streams: SmallMap<u64, StreamState>,
    standalone: Option<u64>,
    closed: bool,
}

impl Routes {
    /// A new stream whose events go to `attached`.
    fn new_stream(&mut self, attached: Attached) -> u64 {
        self.next_stream += 1;
        let id = self.next_stream;
        let json = matches!(attached, Attached::Json(_));
        self.streams.insert(id, StreamState { next_seq: 1, attached: Some(attached), json });
        id
    }

    /// A new SSE stream, and its receiving end.
    fn new_sse_stream(&mut self) -> (u64, mpsc::Receiver<Event>) {
        let (attached, rx) = Attached::sse();
        (self.new_stream(attached), rx)
    }
}

type SharedRoutes = Arc<Mutex<Routes>>;

impl crate::context::CloseStream for Mutex<Routes> {
    fn close_stream(&self, id: &RequestId) -> bool {
        let mut routes = self.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(stream) = routes.by_request.get(id).copied() else { return false };
        // Dropping the live connection's sender ends its SSE body; events keep going to the
        // store for the client to resume.
        routes.streams.get_mut(&stream).is_some_and(|state| state.attached.take().is_some())
    }
}

fn lock(routes: &SharedRoutes) -> std::sync::MutexGuard<'_, Routes> {
    routes.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Why a stream could not be opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamError {
    /// A request with this id is already in flight in the session.
    DuplicateRequest,
    /// The standalone stream already has a live connection.
    StandaloneTaken,
    /// The session is closed.
    Closed,
}

/// A live session: a connection of the endpoint's shared session engine, driven by the HTTP
/// requests of its client. An idle session runs no task and holds no channel.
pub(crate) struct HttpSession {
    pub(crate) id: Arc<str>,
    /// Who created the session (the principal of the `initialize` request's access token);
    /// only its requests find the session.
    /// Boxed: most sessions have none, and an idle session keeps 8 bytes for it, not 32.
    principal: Option<Box<Principal>>,
    driven: Driven,
    routes: SharedRoutes,
    events: Arc<dyn EventStore>,
    /// When the session was last active, in milliseconds after its endpoint's epoch (an idle
    /// session keeps 8 bytes for it, not a lock and an `Instant`).
    last_active: AtomicU64,
    /// When it was created, in milliseconds after the same epoch (8 bytes, not an `Instant`'s
    /// 16).
    created: u64,
}

/// Milliseconds from `epoch` to now.
fn millis_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The instant `millis` milliseconds after `epoch`.
fn at_millis(epoch: Instant, millis: u64) -> Instant {
    epoch.checked_add(Duration::from_millis(millis)).unwrap_or(epoch)
}

impl std::fmt::Debug for HttpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSession").field("id", &self.id).finish()
    }
}

impl HttpSession {
    /// Starts a new session with id `id` on `engine` (see [`crate::session::shared_engine`]),
    /// numbering its streams after `first_stream` (a session restored from the store starts at
    /// a random point, so its streams never take the ids of those another endpoint opened);
    /// its times count from `epoch` (its endpoint's, see [`Self::touch`]).
    pub(crate) fn start(
        id: Arc<str>,
        principal: Option<Principal>,
        (engine, epoch): (&Engine, Instant),
        events: Arc<dyn EventStore>,
        first_stream: u64,
    ) -> HttpSession {
        let routes: SharedRoutes =
            Arc::new(Mutex::new(Routes { next_stream: first_stream, ..Routes::default() }));
        let state: Arc<SessionState> = Arc::default();
        let sender = SessionSender {
            session: id.clone(),
            relays: events.relays(),
            routes: routes.clone(),
            events: events.clone(),
            client: state.clone(),
        };
        let closer: std::sync::Weak<Mutex<Routes>> = Arc::downgrade(&routes);
        lock_client(&state).stream_closer = Some(crate::context::StreamCloser(closer));
        let driven = embed::drive_with_shared(engine, sender, state);
        // The spans of the session's requests name it.
        driven.peer().update_trace_facts(|facts| facts.session_id = Some(id.clone()));
        let created = millis_since(epoch);
        HttpSession {
            id,
            principal: principal.map(Box::new),
            driven,
            routes,
            events,
            last_active: AtomicU64::new(created),
            created,
        }
    }

    /// Who created the session, if its `initialize` carried an access token that names one.
    pub(crate) fn principal(&self) -> Option<&Principal> {
        self.principal.as_deref()
    }

    fn state(&self) -> Option<&SessionState> {
        self.driven.data::<SessionState>()
    }

    /// The protocol version negotiated by `initialize`, once it happened.
    pub(crate) fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.state().and_then(|s| lock_client(s).version)
    }

    /// The client's identity, once it initialized.
    pub(crate) fn client_info(&self) -> Option<Implementation> {
        self.state().and_then(|s| lock_client(s).client_info.as_deref().cloned())
    }

    /// The client's capabilities, once it initialized.
    pub(crate) fn client_capabilities(&self) -> Option<ClientCapabilities> {
        self.state().and_then(|s| lock_client(s).client_capabilities.as_deref().cloned())
    }

    /// Whether the session should be told about `event`: once initialized, list changes
    /// always, resource updates if the client subscribed.
    pub(crate) fn wants(&self, event: &crate::events::ServerEvent) -> bool {
        self.state().is_some_and(|s| s.is_initialized() && crate::events::wanted(s, event))
    }

    /// The client, for notifications not related to a request.
    pub(crate) fn peer(&self) -> Peer {
        self.driven.peer()
    }

    /// Records that the session is active now; `epoch` is its endpoint's (the one it was
    /// started with, as for [`Self::idle_since`] and [`Self::created`]).
    pub(crate) fn touch(&self, epoch: Instant) {
        self.last_active.fetch_max(millis_since(epoch), Ordering::Relaxed);
    }

    /// When the session was last active.
    pub(crate) fn idle_since(&self, epoch: Instant) -> Instant {
        at_millis(epoch, self.last_active.load(Ordering::Relaxed))
    }

    /// When the session was created.
    pub(crate) fn created(&self, epoch: Instant) -> Instant {
        at_millis(epoch, self.created)
    }

    /// Whether the client finished the handshake (`notifications/initialized`).
    pub(crate) fn is_ready(&self) -> bool {
        self.state().is_some_and(SessionState::is_ready)
    }

    /// Whether the session is at work: a request in flight, or a client connected to one of
    /// its streams. Such a session is never idle, however long it has been since a request.
    pub(crate) fn is_busy(&self) -> bool {
        if self.driven.peer().inflight_requests() > 0 {
            return true;
        }
        let routes = lock(&self.routes);
        !routes.by_request.is_empty()
            || routes.streams.values().any(|s| s.attached.as_ref().is_some_and(Attached::is_live))
    }

    /// Ends the stream of request `id` (cancelled by the client): its live connection's body
    /// ends, nothing more is routed to it, and its stored events are dropped.
    pub(crate) async fn end_request_stream(&self, id: &RequestId) {
        let stream = {
            let mut routes = lock(&self.routes);
            let stream = routes.by_request.remove(id);
            if let Some(stream) = stream {
                routes.streams.remove(&stream);
            }
            stream
        };
        if let Some(stream) = stream {
            self.events.discard_stream(&self.id, stream).await;
        }
    }

    /// Whether `stream` is the stream of a client request (not the standalone one).
    pub(crate) fn is_request_stream(&self, stream: u64) -> bool {
        lock(&self.routes).by_request.values().any(|s| *s == stream)
    }

    /// Sends `message`, relayed by another instance of the fleet for this session's client, on
    /// the standalone stream if it is connected here; `false` (and nothing sent) otherwise.
    pub(crate) async fn send_relayed(&self, message: Message) -> bool {
        if !self.standalone_connected() {
            return false;
        }
        let Some(state) = self.driven.shared_data::<SessionState>() else { return false };
        // Made for the message (relayed messages are rare; an idle session keeps no sender).
        let mut sender = SessionSender {
            session: self.id.clone(),
            relays: false,
            routes: self.routes.clone(),
            events: self.events.clone(),
            client: state.clone(),
        };
        sender.send_related(message, None).await.is_ok()
    }

    /// Whether the standalone stream has a live connection here.
    pub(crate) fn standalone_connected(&self) -> bool {
        let routes = lock(&self.routes);
        routes
            .standalone
            .and_then(|s| routes.streams.get(&s))
            .is_some_and(|st| st.attached.as_ref().is_some_and(Attached::is_live))
    }

    /// Whether the request `id`, sent to the client by this instance, awaits its answer.
    pub(crate) fn awaits_response(&self, id: &RequestId) -> bool {
        self.driven.peer().awaits_response(id)
    }

    /// Hands a client message to the session's connection.
    pub(crate) async fn deliver(&self, message: Message) -> Result<()> {
        self.driven.deliver(message).await
    }

    /// Serves client request `request`, which carried `token` (verified), on the caller's
    /// task (see [`Driven::serve`]): its handler sees that token, and its answer goes to the
    /// request's stream when the returned future is done (or, if it is dropped first, once the
    /// handler finishes on a task of its own).
    pub(crate) fn serve_request(
        &self,
        request: mcpl_core::jsonrpc::Request,
        token: Option<Arc<AccessToken>>,
    ) -> Result<embed::Serving> {
        let client = self.state();
        let carried = match (token, client) {
            (Some(token), Some(client)) => {
                lock_client(client).add_request_token(request.id.clone(), token);
                Some((client, request.id.clone()))
            }
            _ => None,
        };
        let serving = self.driven.serve(request);
        if serving.is_err()
            && let Some((client, id)) = carried
        {
            lock_client(client).forget_request_token(&id);
        }
        serving
    }

    /// Whether [`run_reply`](Self::run_reply) serves `request` (the session is initialized).
    pub(crate) fn runs_reply(&self, request: &mcpl_core::jsonrpc::Request) -> bool {
        crate::session::runs_reply(&self.driven, request)
    }

    /// Runs client request `request` (see [`runs_reply`](Self::runs_reply)), which carried
    /// `token` (verified), on the caller's task, for the caller to write its answer: a request
    /// answered with one JSON body, which no stream, store or queue needs to see. `call`: the
    /// params of a `tools/call` read typed, which `request` then does not carry.
    pub(crate) fn run_reply(
        &self,
        server: &crate::server::Server,
        side: &Arc<dyn crate::context::ServerSide>,
        request: mcpl_core::jsonrpc::Request,
        call: Option<crate::router::PlainToolCall>,
        token: Option<Arc<AccessToken>>,
    ) -> std::result::Result<Running<crate::router::Outcome>, NotRun> {
        crate::session::run_reply(&self.driven, server, side, request, call, token)
    }

    /// Opens the SSE stream of client request `id`.
    pub(crate) fn open_request_stream(
        &self,
        id: &RequestId,
    ) -> Result<(u64, mpsc::Receiver<Event>), StreamError> {
        let (attached, rx) = Attached::sse();
        Ok((self.open_stream(id, attached)?, rx))
    }

    /// Opens the stream of client request `id` answered with one JSON body: its response.
    pub(crate) fn open_json_request(
        &self,
        id: &RequestId,
    ) -> Result<oneshot::Receiver<Event>, StreamError> {
        let (tx, rx) = oneshot::channel();
        self.open_stream(id, Attached::Json(tx))?;
        Ok(rx)
    }

    fn open_stream(&self, id: &RequestId, attached: Attached) -> Result<u64, StreamError> {
        let mut routes = lock(&self.routes);
        if routes.closed {
            return Err(StreamError::Closed);
        }
        if routes.by_request.contains_key(id) {
            return Err(StreamError::DuplicateRequest);
        }
        let stream = routes.new_stream(attached);
        routes.by_request.insert(id.clone(), stream);
        Ok(stream)
    }

    /// Forgets a request stream whose message never reached the engine.
    pub(crate) fn abandon_request_stream(&self, id: &RequestId) {
        let mut routes = lock(&self.routes);
        if let Some(stream) = routes.by_request.remove(id) {
            routes.streams.remove(&stream);
        }
    }

    /// Opens (or re-attaches) the standalone stream for server-initiated messages.
    pub(crate) fn open_standalone(&self) -> Result<(u64, mpsc::Receiver<Event>), StreamError> {
        let mut routes = lock(&self.routes);
        if routes.closed {
            return Err(StreamError::Closed);
        }
        if let Some(stream) = routes.standalone
            && let Some(state) = routes.streams.get_mut(&stream)
        {
            if state.attached.as_ref().is_some_and(Attached::is_live) {
                return Err(StreamError::StandaloneTaken);
            }
            let (attached, rx) = Attached::sse();
            state.attached = Some(attached);
            return Ok((stream, rx));
        }
        let (stream, rx) = routes.new_sse_stream();
        routes.standalone = Some(stream);
        Ok((stream, rx))
    }

    /// Resumes a stream after `last`: the stored events after it, and a live receiver if the
    /// stream is still open. `None` if the events cannot be replayed.
    pub(crate) async fn resume(
        &self,
        last: EventPosition,
    ) -> Option<(Vec<Event>, Option<mpsc::Receiver<Event>>)> {
        // Attach first, so nothing sent meanwhile is lost; duplicates are filtered by sequence.
        let live = {
            let mut routes = lock(&self.routes);
            match routes.streams.get_mut(&last.stream) {
                Some(state) => {
                    let (attached, rx) = Attached::sse();
                    state.attached = Some(attached);
                    Some(rx)
                }
                None => None,
            }
        };
        let replay = self.events.replay_after(&self.id, last).await?;
        let events =
            replay.into_iter().map(|(position, message)| Event::new(position, &message)).collect();
        Some((events, live))
    }

    /// Ends the session: the engine closes and stored events are dropped.
    pub(crate) async fn close(&self) {
        self.detach().await;
        self.events.remove_session(&self.id).await;
    }

    /// Drops this endpoint's copy of the session (the engine closes), leaving its stored events
    /// for another endpoint sharing the store to replay.
    pub(crate) async fn detach(&self) {
        {
            let mut routes = lock(&self.routes);
            routes.closed = true;
            routes.streams.clear();
            routes.by_request.clear();
        }
        if let Err(e) = self.driven.close().await {
            tracing::debug!(error = %e, session = %self.id, "closing session engine failed");
        }
    }
}

/// Routes the engine's outgoing messages to streams.
#[derive(Clone)]
pub(crate) struct SessionSender {
    session: Arc<str>,
    /// Whether a message for the standalone stream, not connected here, is relayed to the
    /// fleet (a relaying store, and not a message relayed here by another instance).
    relays: bool,
    routes: SharedRoutes,
    events: Arc<dyn EventStore>,
    /// To forget the token of a request answered without its handler having taken it.
    client: crate::context::SharedClientState,
}

impl SessionSender {
    /// Detaches `tx` from `stream` (if still attached there) unless an event was `sent` to it.
    fn detach_unless(&self, sent: bool, stream: u64, tx: &mpsc::Sender<Event>) {
        if sent {
            return;
        }
        let mut routes = lock(&self.routes);
        if let Some(state) = routes.streams.get_mut(&stream)
            && matches!(&state.attached, Some(Attached::Sse(a)) if a.same_channel(tx))
        {
            state.attached = None;
        }
    }
}

impl TransportSender for SessionSender {
    async fn send(&mut self, message: Message) -> Result<()> {
        self.send_related(message, None).await
    }

    async fn send_related(&mut self, message: Message, related: Option<RequestId>) -> Result<()> {
        let response_to = match &message {
            Message::Response(r) => Some(r.id.clone()),
            Message::Error(e) => e.id.clone(),
            _ => None,
        };
        let finishes = response_to.is_some();
        if let Some(id) = &response_to {
            let mut client = lock_client(&self.client);
            if !client.request_tokens.is_empty() {
                client.forget_request_token(id);
            }
        }
        let mut relay = false;
        let routed = {
            let mut routes = lock(&self.routes);
            let stream = match &response_to {
                Some(id) => routes.by_request.remove(id),
                None => related
                    .and_then(|id| routes.by_request.get(&id).copied())
                    .filter(|s| routes.streams.get(s).is_some_and(|st| !st.json))
                    .or(routes.standalone),
            };
            // For the standalone stream, which is not connected here: in a fleet, the instance
            // where it is connected takes it (a stream left here still stores it for a
            // resumption).
            if response_to.is_none() && self.relays {
                let connected = stream.filter(|s| Some(*s) == routes.standalone).and_then(|s| {
                    routes
                        .streams
                        .get(&s)
                        .map(|st| st.attached.as_ref().is_some_and(Attached::is_live))
                });
                relay = stream.is_none() || connected == Some(false);
            }
            match stream
                .and_then(|stream| routes.streams.get_mut(&stream).map(|state| (stream, state)))
            {
                None => None,
                Some((stream, state)) => {
                    let position = EventPosition { stream, seq: state.next_seq };
                    state.next_seq += 1;
                    let attached = match &state.attached {
                        Some(Attached::Sse(tx)) => Some(Attached::Sse(tx.clone())),
                        // Only its response goes to a JSON-mode stream, which then ends.
                        Some(Attached::Json(_)) if finishes => state.attached.take(),
                        _ => None,
                    };
                    // A JSON-mode stream is one HTTP body: nothing to resume, nothing to keep.
                    let keep = !state.json;
                    if finishes {
                        routes.streams.remove(&stream);
                    }
                    Some((position, attached, keep))
                }
            }
        };
        if relay {
            let relayed =
                Relayed::ToClient { session: self.session.to_string(), message: message.clone() };
            self.events.relay(&relayed).await;
        }
        let Some((position, attached, keep)) = routed else {
            if !relay {
                tracing::debug!(session = %self.session, method = ?message.method(), "no stream for message; dropped");
            }
            return Ok(());
        };
        if !keep && attached.is_none() {
            return Ok(());
        }
        // Encoded once, for the store and the stream both.
        let event = Event::new(position, &message);
        if keep {
            self.events.append_encoded(&self.session, position, &message, &event.data).await;
        }
        match attached {
            Some(Attached::Sse(tx)) => {
                // Never wait for a slow connection: one that cannot keep up (or went away) is
                // detached, and its client resumes from the store with `Last-Event-ID`.
                let sent = tx.try_send(event).is_ok();
                self.detach_unless(sent, position.stream, &tx);
            }
            Some(Attached::Json(tx)) => {
                // Its client may have gone: the answer has nowhere else to go.
                let _ = tx.send(event);
            }
            None => {}
        }
        Ok(())
    }

    async fn close(self) -> Result<()> {
        let mut routes = lock(&self.routes);
        routes.closed = true;
        routes.streams.clear();
        Ok(())
    }
}
