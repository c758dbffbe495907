//! Serving one stateful-era connection: the `initialize` handshake and the lifecycle guard.
//!
//! Before the `initialize` response only `initialize` and `ping` are served (anything else is
//! refused with `-32600`). `initialize` negotiates the protocol version: the client's, if this
//! SDK speaks it as a stateful revision, else the newest stateful one. A second `initialize` is
//! refused.
//!
//! Once initialized, a session forwards the server's [`ServerEvent`](crate::events::ServerEvent)s
//! to its client: list changes, and updates of the resources the client subscribed to.

use std::future::{Future, ready};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use futures::future::Either;
use mcpl_core::engine::{CloseReason, Engine, HandlerResult, RequestContext};
#[cfg(feature = "http")]
use mcpl_core::engine::{NotRun, Running};
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::{
    ClientCapabilities, Implementation, InitializeRequestParams, InitializeResult, names,
};
use mcpl_core::{Era, Peer, ProtocolVersion, Result, Transport};
use serde_json::Value;

use crate::codec::{decode, encode};
use crate::context::{
    ClientCell, ClientState, Context, INITIALIZED, NEW, READY, ServerSide, SharedClientState, lock,
};
use crate::events;
use crate::router::dispatch;
use crate::server::Server;

/// One served stateful-era connection.
///
/// # Examples
///
/// ```
/// use mcpl_core::{Engine, ProtocolVersion, transport::memory};
/// use mcpl_server::Server;
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let (client_side, server_side) = memory::pair();
/// let session = Server::builder("s", "1").build().serve(server_side).await?;
/// assert_eq!(session.protocol_version(), None, "not initialized yet");
/// let client = Engine::new().connect(client_side).await?;
/// let init = json!({
///     "protocolVersion": "2025-11-25",
///     "capabilities": {"roots": {}},
///     "clientInfo": {"name": "doc-client", "version": "1"},
/// });
/// client.request("initialize", Some(init), Default::default()).await?;
/// client.notify("notifications/initialized", None).await?;
/// // `initialize` was answered before the client's request resolved.
/// assert_eq!(session.protocol_version(), Some(ProtocolVersion::V2025_11_25));
/// assert_eq!(session.client_info().unwrap().name, "doc-client");
/// assert!(session.client_capabilities().unwrap().roots.is_some());
/// session.close().await?;
/// session.closed().await;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct Session {
    engine: Engine,
    peer: Peer,
    state: Arc<SessionState>,
}

/// What a stateful-era connection knows: how far the handshake went, and the client (one
/// cell, which its handlers' contexts share).
pub(crate) type SessionState = ClientCell;

impl ClientCell {
    /// Whether `initialize` was answered (events may flow to the client).
    pub(crate) fn is_initialized(&self) -> bool {
        self.phase.load(Ordering::SeqCst) != NEW
    }

    /// Whether the handshake finished (`notifications/initialized` received).
    pub(crate) fn is_ready(&self) -> bool {
        self.phase.load(Ordering::SeqCst) == READY
    }
}

/// The stateful era's pipeline, installed on `engine` for every transport: each request goes
/// through the handshake and the lifecycle guard ([`route`]; before any `initialize`, a
/// stateless-era request goes to that era's pipeline), `notifications/initialized` completes
/// the handshake, other notifications reach MCPL. `state` finds a connection's
/// [`SessionState`].
fn install<F>(engine: &Engine, server: &Server, state: F)
where
    F: Fn(&Peer) -> Option<Arc<SessionState>> + Clone + Send + Sync + 'static,
{
    let (server, of) = (server.clone(), state.clone());
    // The server as handlers' contexts hold it, made once for every request of the engine.
    let side: Arc<dyn ServerSide> = Arc::new(server.clone());
    engine.on_any_request(move |ctx: RequestContext, params: Option<Value>| {
        route(&server, &side, of(ctx.peer()), ctx, params)
    });
    let of = state.clone();
    engine.on_notification(names::NOTIFICATIONS_INITIALIZED, move |ctx, _params| {
        if let Some(state) = of(ctx.peer()) {
            let _ = state.phase.compare_exchange(
                INITIALIZED,
                READY,
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
        }
        async {}
    });
    engine.on_any_notification(move |ctx, params| {
        let client = state(ctx.peer());
        let method = ctx.method().to_owned();
        async move {
            if let Some(client) = client {
                crate::mcpl::notification(&client, &method, params).await;
            }
        }
    });
}

/// An engine serving stateful-era connections driven by their transport (see
/// [`embed::drive_with`](mcpl_core::engine::embed::drive_with)), each carrying its own `SessionState`: one engine, and one set
/// of handlers, for every session of an endpoint.
#[cfg(feature = "http")]
pub(crate) fn shared_engine(server: &Server) -> Engine {
    let engine = server.engine();
    install(&engine, server, |peer| peer.shared_data::<SessionState>());
    engine
}

impl Server {
    /// A new engine with this server's settings (its in-flight limit, its outgoing queue's
    /// bound and write timeout).
    pub(crate) fn engine(&self) -> Engine {
        let (messages, bytes) = self.inner.max_queued;
        let config = mcpl_core::engine::EngineConfig::new()
            .max_inflight_requests(self.inner.max_inflight_requests)
            .max_queued_messages(messages)
            .max_queued_bytes(bytes)
            .write_timeout(self.inner.write_timeout);
        Engine::with_config(config)
    }

    /// Serves this server on `transport` until the peer goes away or [`Session::close`] is
    /// called.
    ///
    /// # Errors
    ///
    /// The transport's start error.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before it resolves leaves nothing running.
    ///
    /// # Examples
    ///
    /// Serving a server on each connection of a Unix socket (`no_run`: it serves forever):
    ///
    /// ```no_run
    /// use mcpl_core::transport::lines::LineTransport;
    /// use mcpl_server::Server;
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder("s", "1").build();
    /// let listener = tokio::net::UnixListener::bind("/tmp/mcp.sock")?;
    /// loop {
    ///     let (stream, _) = listener.accept().await?;
    ///     let (read, write) = tokio::io::split(stream);
    ///     let session = server.serve(LineTransport::new(read, write)).await?;
    ///     tokio::spawn(async move { session.closed().await });
    /// }
    /// # }
    /// ```
    pub async fn serve<T: Transport>(&self, transport: T) -> Result<Session> {
        self.serve_as(self.engine(), transport, None).await
    }

    /// [`serve`](Self::serve) on `engine` (one of [`engine`](Self::engine)'s), for a connection
    /// whose client presented `token` (verified): its handlers see it
    /// ([`Context::access_token`]), and what its requests create is bound to its principal.
    pub(crate) async fn serve_as<T: Transport>(
        &self,
        engine: Engine,
        transport: T,
        token: Option<Arc<crate::principal::AccessToken>>,
    ) -> Result<Session> {
        let client = ClientState { access_token: token, ..ClientState::default() };
        let state = ClientCell::new(client);
        let ours = state.clone();
        install(&engine, self, move |_peer| Some(ours.clone()));
        engine.on_close(|reason: &CloseReason| tracing::debug!(%reason, "session closed"));
        // Subscribe before connecting so no change made once the client can talk is missed.
        let events = self.subscribe_changes();
        let peer = engine.connect(transport).await?;
        let (client, ours) = (state.clone(), state.clone());
        let ready = move || ours.is_initialized();
        tokio::spawn(events::forward(events, peer.clone(), client, ready));
        Ok(Session { engine, peer, state })
    }
}

impl Session {
    /// The protocol version negotiated by `initialize`, once it happened.
    ///
    /// # Examples
    ///
    /// A client asking for a version this server does not know gets the latest one of the
    /// stateful era:
    ///
    /// ```
    /// use mcpl_core::{Engine, transport::memory};
    /// use mcpl_server::Server;
    /// use serde_json::json;
    /// use mcpl_core::ProtocolVersion;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let (client_side, server_side) = memory::pair();
    /// let session = Server::builder("s", "1").build().serve(server_side).await?;
    /// assert_eq!(session.protocol_version(), None, "not initialized yet");
    /// let client = Engine::new().connect(client_side).await?;
    /// let init = json!({"protocolVersion": "2099-01-01", "capabilities": {},
    ///     "clientInfo": {"name": "editor", "title": "Some Editor", "version": "4.2"}});
    /// client.request("initialize", Some(init), Default::default()).await?;
    /// assert_eq!(session.protocol_version(), Some(ProtocolVersion::LATEST_STATEFUL));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        lock(&self.state).version
    }

    /// The client's identity, once it initialized.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::{Engine, transport::memory};
    /// use mcpl_server::Server;
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let (client_side, server_side) = memory::pair();
    /// let session = Server::builder("s", "1").build().serve(server_side).await?;
    /// assert!(session.client_info().is_none(), "not initialized yet");
    /// let client = Engine::new().connect(client_side).await?;
    /// let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
    ///     "clientInfo": {"name": "editor", "title": "Some Editor", "version": "4.2"}});
    /// client.request("initialize", Some(init), Default::default()).await?;
    /// let info = session.client_info().unwrap();
    /// assert_eq!((info.name.as_str(), info.version.as_str()), ("editor", "4.2"));
    /// assert_eq!(info.title.as_deref(), Some("Some Editor"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn client_info(&self) -> Option<Implementation> {
        lock(&self.state).client_info.as_deref().cloned()
    }

    /// The client's capabilities, once it initialized.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::{Engine, transport::memory};
    /// use mcpl_server::Server;
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let (client_side, server_side) = memory::pair();
    /// let session = Server::builder("s", "1").build().serve(server_side).await?;
    /// assert!(session.client_capabilities().is_none(), "not initialized yet");
    /// let client = Engine::new().connect(client_side).await?;
    /// let init = json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {"listChanged": true}},
    ///     "clientInfo": {"name": "editor", "title": "Some Editor", "version": "4.2"}});
    /// client.request("initialize", Some(init), Default::default()).await?;
    /// let capabilities = session.client_capabilities().unwrap();
    /// assert!(capabilities.roots.is_some());
    /// assert!(capabilities.sampling.is_none(), "the client cannot sample");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn client_capabilities(&self) -> Option<ClientCapabilities> {
        lock(&self.state).client_capabilities.as_deref().cloned()
    }

    /// The connection's MCPL side, once a host that advertised MCPL initialized (and the
    /// server serves MCPL, see [`crate::mcpl`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::Manifest;
    /// use mcpl_core::transport::memory;
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = Server::builder("s", "1").mcpl(Mcpl::new(Manifest::new())).build();
    /// let (_host_side, server_side) = memory::pair();
    /// let session = server.serve(server_side).await?;
    /// assert!(session.mcpl().is_none(), "no initialize yet");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn mcpl(&self) -> Option<crate::mcpl::McplConnection> {
        lock(&self.state).mcpl.clone()
    }

    /// Whether the client sent `notifications/initialized`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::transport::memory;
    /// use mcpl_server::Server;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let (_client_side, server_side) = memory::pair();
    /// let session = Server::builder("s", "1").build().serve(server_side).await?;
    /// assert!(!session.is_ready(), "no notifications/initialized yet");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn is_ready(&self) -> bool {
        self.state.is_ready()
    }

    /// The client, for sending requests and notifications to it.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::{Engine, transport::memory};
    /// use mcpl_server::Server;
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let (client_side, server_side) = memory::pair();
    /// let session = Server::builder("s", "1").build().serve(server_side).await?;
    /// let client = Engine::new();
    /// client.on_request("ping", |_ctx, _params| async { Ok(json!({})) });
    /// let _client = client.connect(client_side).await?;
    /// // The server pings its client.
    /// let pong = session.peer().request("ping", None, Default::default()).await?;
    /// assert_eq!(pong, json!({}));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Resolves when the connection ends.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcpl_core::{Engine, transport::memory};
    /// use mcpl_server::Server;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let (client_side, server_side) = memory::pair();
    /// let session = Server::builder("s", "1").build().serve(server_side).await?;
    /// let client = Engine::new();
    /// let _peer = client.connect(client_side).await?;
    /// client.close().await?; // the client hangs up
    /// // (The timeout only guards against a hang.)
    /// tokio::time::timeout(Duration::from_secs(30), session.closed()).await?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn closed(&self) {
        self.peer.closed().await;
    }

    /// Closes the connection.
    ///
    /// # Errors
    ///
    /// The transport's close error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcpl_core::{Engine, transport::memory};
    /// use mcpl_server::Server;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let (client_side, server_side) = memory::pair();
    /// let session = Server::builder("s", "1").build().serve(server_side).await?;
    /// let client = Engine::new().connect(client_side).await?;
    /// session.close().await?;
    /// // The client sees the connection end (the timeout only guards against a hang), and
    /// // its requests fail from now on.
    /// tokio::time::timeout(Duration::from_secs(30), client.closed()).await?;
    /// assert!(client.request("ping", None, Default::default()).await.is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn close(&self) -> Result<()> {
        self.engine.close().await
    }
}

/// Serves one request of a session's connection, in its phase.
///
/// Not an `async fn`: what is decided at once is decided here, and the returned future holds
/// only what its branch needs (the engine boxes it for every request: one that held the
/// arguments again beside what it awaits would double that box).
fn route(
    server: &Server,
    side: &Arc<dyn ServerSide>,
    state: Option<Arc<SessionState>>,
    ctx: RequestContext,
    params: Option<Value>,
) -> impl Future<Output = HandlerResult> + Send + use<> {
    let Some(state) = state else {
        let error = ErrorObject::internal("a session connection without its state");
        return Either::Left(ready(Err(error)));
    };
    let (phase, client) = (&state.phase, state.clone());
    let token = lock(&client).take_access_token(ctx.id());
    // Before any `initialize`, a request of the stateless era (2026-07-28) is served on its
    // own, by that era's pipeline (boxed: on a session's connection that is the rare path,
    // and its future would weigh on every request's).
    if phase.load(Ordering::SeqCst) == NEW
        && crate::stateless::era_of(ctx.meta(), None) == Era::Stateless
    {
        let server = server.clone();
        let serve = async move { crate::stateless::serve(&server, ctx, params, token).await };
        return Either::Right(Either::Left(Box::pin(serve)));
    }
    if let Err(error) = crate::router::check_progress_token(ctx.meta()) {
        return Either::Left(ready(Err(error)));
    }
    match ctx.method() {
        names::INITIALIZE => {
            Either::Left(ready(initialize(server, phase, &client, ctx.peer(), params)))
        }
        method if method != names::PING && phase.load(Ordering::SeqCst) == NEW => {
            Either::Left(ready(Err(ErrorObject::invalid_request(format_args!(
                "{method} before initialize: the server is not initialized"
            )))))
        }
        _ => {
            let ctx = Context::served(ctx, client, token, side.clone());
            let server = server.clone();
            Either::Right(Either::Right(async move { dispatch(&server, ctx, params).await }))
        }
    }
}

/// Whether [`run_reply`] serves `request` on `driven`: once `initialize` was answered, every
/// request but `initialize` itself (which [`route`] refuses).
#[cfg(feature = "http")]
pub(crate) fn runs_reply(
    driven: &mcpl_core::engine::Driven,
    request: &mcpl_core::jsonrpc::Request,
) -> bool {
    driven.data::<SessionState>().is_some_and(SessionState::is_initialized)
        && request.method != names::INITIALIZE
}

/// Runs a request of an initialized session on `driven` (see [`runs_reply`]) for a transport
/// that writes its answer itself (a 2025 HTTP session answering with one JSON body), as
/// [`route`] serves it, but keeping the router's answer typed (see
/// [`Reply`](crate::router::Reply)): no handler looked up, no message built and queued for
/// the answer.
#[cfg(feature = "http")]
pub(crate) fn run_reply(
    driven: &mcpl_core::engine::Driven,
    server: &Server,
    side: &Arc<dyn ServerSide>,
    request: mcpl_core::jsonrpc::Request,
    call: Option<crate::router::PlainToolCall>,
    token: Option<Arc<crate::principal::AccessToken>>,
) -> std::result::Result<Running<crate::router::Outcome>, NotRun> {
    let Some(client) = driven.shared_data::<SessionState>() else { return Err(NotRun::Closed) };
    let (server, side) = (server.clone(), side.clone());
    driven.run_request(request, move |ctx, params| {
        if let Err(error) = crate::router::check_progress_token(ctx.meta()) {
            return Either::Left(ready(Err(error)));
        }
        let token = token.or_else(|| lock(&client).access_token.clone());
        let method = crate::router::method_name(ctx.method());
        let span = tracing::Span::current();
        let params = match call {
            Some(call) => {
                // The engine did not see these params: the span names the tool here.
                let params = crate::router::Params::Call(call);
                params.record_target(&span, ctx.method());
                params
            }
            None => crate::router::Params::Tree(params),
        };
        let ctx = Context::served(ctx, client, token, side);
        Either::Right(async move {
            let reply = crate::router::dispatch_reply(&server, ctx, params);
            let outcome = crate::unwinding::unwinding(method, reply).await;
            crate::router::record_reply(&span, &outcome);
            outcome
        })
    })
}

fn initialize(
    server: &Server,
    phase: &AtomicU8,
    client: &SharedClientState,
    peer: &Peer,
    params: Option<Value>,
) -> HandlerResult {
    let params: InitializeRequestParams = decode(params)?;
    let version = ProtocolVersion::parse(&params.protocol_version)
        .filter(|v| v.era() == Era::Stateful)
        .unwrap_or(ProtocolVersion::LATEST_STATEFUL);
    if phase.compare_exchange(NEW, INITIALIZED, Ordering::SeqCst, Ordering::SeqCst).is_err() {
        return Err(ErrorObject::invalid_request("initialize was already received"));
    }
    let mut capabilities = server.capabilities();
    // SEP-2663 defines the tasks extension for the stateless era only.
    crate::task_serving::unadvertise(&mut capabilities);
    let experimental = params.capabilities.experimental.as_ref();
    crate::mcpl::initialize(server, peer, client, experimental, &mut capabilities);
    {
        let mut c = lock(client);
        c.version = Some(version);
        c.client_info = Some(crate::interned::client_info(params.client_info));
        c.client_capabilities = Some(crate::interned::client_capabilities(params.capabilities));
    }
    // This request's span, and those of the connection's later requests, name the revision.
    mcpl_core::trace::record_version(&tracing::Span::current(), version);
    peer.update_trace_facts(|facts| facts.protocol_version = Some(version));
    tracing::debug!(%version, "initialized");
    let mut result = InitializeResult::new(version.as_str(), capabilities, server.info().clone());
    result.instructions = server.inner.instructions.clone();
    encode(result)
}

/// Waits until `peer` has no request in flight, for at most `grace`: how a graceful shutdown
/// lets a connection's handlers finish before it is closed.
pub(crate) async fn drain(peer: &Peer, grace: std::time::Duration) {
    let idle = async {
        while peer.inflight_requests() > 0 && !peer.is_closed() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    };
    let _ = tokio::time::timeout(grace, idle).await;
}
