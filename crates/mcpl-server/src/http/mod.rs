//! Streamable HTTP: the MCP endpoint ([`StreamableHttp`]) as a [`tower_service::Service`] of
//! HTTP requests, framework-neutral: nest it in an axum router with
//! [`Router::nest_service`], wrap it in any tower layer, or serve it with hyper directly (see
//! the examples of its `Service` implementation). [`StreamableHttp::into_router`] (an axum
//! [`Router`]) and [`StreamableHttp::serve_at`] are conveniences over it.
//!
//! One endpoint serves both protocol eras. The stateful (2025) era:
//!
//! - `POST` carries one JSON-RPC message. An `initialize` request creates a session whose id
//!   (from a CSPRNG, 128 bits) comes back in `Mcp-Session-Id`; every later request must carry
//!   it (`400` without, `404` for an unknown or ended session). A request is answered with an
//!   SSE stream (or one JSON body with [`HttpConfig::json_response`]) carrying its response and
//!   whatever the server sends while serving it; notifications and responses get `202`.
//! - `GET` opens the session's standalone SSE stream for server-initiated messages, or resumes
//!   any stream with `Last-Event-ID`.
//! - `DELETE` ends the session.
//!
//! The stateless (2026-07-28) era (see [`stateless`]): each `POST` carries one request whose
//! `_meta` says who the client is, served inline on the HTTP task by a fresh single-use
//! transport that serving consumes; what the handler sends as it goes (progress, log messages)
//! streams through the sending half of a [`stateless::StatelessTransport`]
//! ([`stateless::StatelessSender`]); `GET` and `DELETE` get `405`. Results carry
//! `resultType`, the server's identity in `_meta`, and cache hints on lists, reads and
//! `server/discover` (see [`crate::cache`]).
//!
//! Every request is checked first: `Host` and `Origin` against allow-lists (DNS-rebinding
//! protection, on by default), `Accept`, `Content-Type`, `MCP-Protocol-Version`, and the body
//! size (default limit 4 MiB).
//!
//! # On an open network
//!
//! Every limit a client can push against has a default safe for the open internet, set in
//! [`ConnectionConfig`] (given to [`HttpConfig::connections`] and to [`serve_with`]) and
//! [`HttpConfig`]: a connection cap (one more is answered `503` and closed), a deadline for a
//! request's head (also the keep-alive idle timeout) and one for its body (`408`), one for a
//! write to a client that reads nothing (its connection is closed), bodies read into one
//! buffer bounded by the body limit whatever their chunking, a session cap at which idle
//! sessions yield to new ones, a short life for sessions that never finish their handshake,
//! bounded event storage ([`event_store::InMemoryEventStore`]), and at most
//! [`mcpl_core::engine::DEFAULT_MAX_INFLIGHT_REQUESTS`] requests of a session running at
//! once (more are refused, and counted). Each refusal is logged once at `debug` with the client's address and counted in
//! [`Refusals`]. A cancelled [`ConnectionConfig::shutdown_on`] token shuts the endpoint down
//! gracefully.
//!
//! # A fleet of instances
//!
//! Several instances of one server behind a load balancer share their state through the
//! stores: [`session_store::SessionStore`] (a 2025 session initialized at one instance is
//! continued at another, which restores it without a new `initialize`),
//! [`event_store::EventStore`] (an SSE stream cut at one resumes at another with
//! `Last-Event-ID`), and the server's [`TaskStore`](crate::task::TaskStore) (a task created at
//! one instance is polled, updated and cancelled at any other;
//! [`TaskStore::signal`](crate::task::TaskStore::signal) carries a
//! `tasks/update` or `tasks/cancel` to the instance running its handler, which a cancel
//! stops); give every instance the same [`StateSealer`](crate::request_state::StateSealer) keys
//! (rotated with [`StateSealer::builder`](crate::request_state::StateSealer::builder)). The
//! `mcpl-redis` crate implements them on Redis.
//!
//! With a session store that expires sessions itself ([`SessionStore::expires_idle`]),
//! an instance checks the store at every request to a session it holds (a `DELETE` at another
//! instance ends it here too: `404`) and, when it lets an idle session go, only drops its own
//! copy. When the store fails, a new session is refused with `503` and `Retry-After`, a
//! session held here is still served, one held elsewhere gets `503` and `Retry-After`, and
//! stateless requests are served as ever.
//!
//! A session may be served by several instances at once (the client's requests go wherever
//! the balancer sends them). With an event store that relays ([`EventStore::relays`]), what
//! the server sends outside the request streams open at an instance (a log message, a
//! resource update, a request such as `elicitation/create` sent outside a request) goes to
//! the instance where the session's standalone `GET` stream is connected, and the client's
//! answer to a request goes to the instance that sent it, wherever it is POSTed. Messages
//! sent while the standalone stream is connected nowhere are lost, as on one instance with
//! no stream open (a stream left open at an instance keeps storing them for a resumption). The
//! server's changes (list changes, resource updates) reach the clients of every instance
//! once relayed ([`Server::notify_change`] announces one made elsewhere;
//! `mcpl_redis::FleetEvents` relays them): a list change is told to a session by the instance
//! where its standalone stream is connected, a resource update by the instance where the
//! client subscribed.
//!
//! # Throughput
//!
//! The endpoint serves every request on the task of the connection that carried it (a
//! stateless request spawns no task at all), so it runs on either Tokio runtime. Where
//! requests are cheap, a current-thread runtime (`#[tokio::main(flavor = "current_thread")]`,
//! or one per core) avoids the multi-threaded scheduler's wake-ups across threads: on the
//! project's 2-core benchmark, stateless `tools/call` at 32 concurrent clients runs at about
//! 0.9x of a bare hyper server answering with precomputed bodies on a current-thread runtime,
//! and at about 0.6x on the default multi-threaded one (`docs/performance.md`). Keep the
//! multi-threaded runtime for handlers that do heavy work of their own. A standalone server
//! saves a little more per request with [`StreamableHttp::serve_at`], which hands each
//! connection to hyper with no router in between.
//!
//! # Examples
//!
//! ```no_run
//! use mcpl_server::Server;
//! use mcpl_server::http::{HttpConfig, StreamableHttp};
//!
//! # async fn run() -> std::io::Result<()> {
//! let server = Server::builder("demo", "1.0.0").build();
//! let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp");
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! mcpl_server::http::serve(listener, app).await
//! # }
//! ```

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcpl_core::Era;
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject, ErrorResponse, Message, RequestId};

use self::event_store::{EventStore, InMemoryEventStore};
use self::guard::Refusal;
use self::head::Head;
use self::listed::Listed;
use self::session::HttpSession;
use self::session_store::SessionStore;
use crate::principal::AccessToken;
use crate::server::Server;
use tracing::Instrument as _;

#[cfg(feature = "auth")]
#[cfg_attr(docsrs, doc(cfg(feature = "auth")))]
pub mod auth;
mod body;
mod config;
pub mod event_store;
pub(crate) mod guard;
pub(crate) mod head;
mod head_timer;
mod listed;
mod refusal;
mod self_wake;
mod service;
pub(crate) mod serving;
mod session;
pub mod session_store;
mod shutdown;
mod small_map;
mod sse;
mod stateful;
pub mod stateless;
mod stateless_body;
mod threads;

pub use self::config::{DEFAULT_MAX_BODY, HttpConfig};
pub use self::refusal::{RefusalEvent, RefusalKind, Refusals};
pub use self::serving::{ConnectionConfig, DEFAULT_MAX_CONNECTIONS};
pub use self::threads::ConnectionThreads;

/// The session header.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::http::SESSION_ID, "mcp-session-id");
/// ```
pub const SESSION_ID: &str = "mcp-session-id";
/// The protocol version header.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::http::PROTOCOL_VERSION, "mcp-protocol-version");
/// ```
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The resumption header.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::http::LAST_EVENT_ID, "last-event-id");
/// ```
pub const LAST_EVENT_ID: &str = "last-event-id";

/// The headers read or written on every request, as names parsed once (a lookup by `&str`
/// parses the name each time).
pub(crate) const SESSION_ID_HEADER: HeaderName = HeaderName::from_static(SESSION_ID);
/// See [`SESSION_ID_HEADER`].
pub(crate) const PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static(PROTOCOL_VERSION);

/// The Streamable HTTP endpoint of a [`Server`].
///
/// # Examples
///
/// Mounted next to an application's own routes, served on an ephemeral port, and called once
/// (a `server/discover` of the 2026 era):
///
/// ```
/// use mcpl_server::Server;
/// use mcpl_server::http::{HttpConfig, StreamableHttp};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let endpoint = StreamableHttp::new(Server::builder("demo", "1.0.0").build(), HttpConfig::new());
/// let app = axum::Router::new()
///     .route("/health", axum::routing::get(|| async { "ok" }))
///     .merge(endpoint.clone().into_router("/mcp"));
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let addr = listener.local_addr()?;
/// tokio::spawn(mcpl_server::http::serve(listener, app));
///
/// let body = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{
///     "io.modelcontextprotocol/protocolVersion":"2026-07-28",
///     "io.modelcontextprotocol/clientCapabilities":{}}}}"#;
/// let reply = reqwest::Client::new()
///     .post(format!("http://{addr}/mcp"))
///     .header("content-type", "application/json")
///     .header("accept", "application/json, text/event-stream")
///     .header("mcp-protocol-version", "2026-07-28")
///     .header("mcp-method", "server/discover")
///     .body(body)
///     .send()
///     .await?
///     .text()
///     .await?;
/// let reply: serde_json::Value = serde_json::from_str(&reply)?;
/// assert_eq!(reply["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "demo");
/// assert_eq!(endpoint.session_count(), 0, "the 2026 era has no sessions");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct StreamableHttp {
    inner: Arc<Inner>,
}

struct Inner {
    server: Server,
    /// The same server as a handler's [`Context`](crate::Context) holds it, made once (a
    /// stateless request's context takes a clone, not an allocation).
    server_side: Arc<dyn crate::context::ServerSide>,
    config: HttpConfig,
    events: Arc<dyn EventStore>,
    /// Where sessions are recorded for other endpoints to continue; `None`: nowhere.
    store: Option<Arc<dyn SessionStore>>,
    /// Keyed by the ids this endpoint made; looked up by the id a request names (a lookup
    /// adds nothing, so a fast hasher with a random seed, `foldhash`, serves).
    sessions: RwLock<HashSet<Listed, foldhash::fast::RandomState>>,
    /// Session slots taken by handshakes under way (changed with `sessions` locked).
    reserved: std::sync::atomic::AtomicUsize,
    stateless: mcpl_core::Engine,
    /// The engine every stateful-era session is a driven connection of.
    session_engine: mcpl_core::Engine,
    reaper: std::sync::Once,
    /// What its sessions' times count from (they keep milliseconds since it, not instants).
    epoch: tokio::time::Instant,
}

impl std::fmt::Debug for StreamableHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamableHttp")
            .field("server", &self.inner.server)
            .field("config", &self.inner.config)
            .field("sessions", &self.session_count())
            .finish()
    }
}

impl StreamableHttp {
    /// The endpoint of `server` with `config`, keeping SSE events in memory.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::http::{HttpConfig, StreamableHttp};
    ///
    /// let endpoint = StreamableHttp::new(Server::builder("s", "1").build(), HttpConfig::new().max_body(1 << 20));
    /// # drop(endpoint);
    /// ```
    pub fn new(server: Server, config: HttpConfig) -> Self {
        Self::with_event_store(server, config, InMemoryEventStore::default())
    }

    /// The endpoint of `server` with `config`, keeping SSE events in `events`.
    ///
    /// Sessions live in this endpoint only; see [`with_stores`](Self::with_stores) to record
    /// them where other endpoints can continue them.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::http::event_store::InMemoryEventStore;
    /// use mcpl_server::http::{HttpConfig, StreamableHttp};
    ///
    /// // Keep more events per stream for clients on flaky networks.
    /// let events = InMemoryEventStore::new(10_000);
    /// let endpoint = StreamableHttp::with_event_store(Server::builder("s", "1").build(), HttpConfig::new(), events);
    /// # drop(endpoint);
    /// ```
    pub fn with_event_store(server: Server, config: HttpConfig, events: impl EventStore) -> Self {
        Self::build(server, config, Arc::new(events), None)
    }

    /// The endpoint of `server` with `config`, keeping SSE events in `events` and recording
    /// sessions in `sessions`, so that endpoints sharing a session store (in other processes,
    /// or after a restart) continue each other's sessions.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::http::event_store::InMemoryEventStore;
    /// use mcpl_server::http::session_store::InMemorySessionStore;
    /// use mcpl_server::http::{HttpConfig, StreamableHttp};
    ///
    /// let endpoint = StreamableHttp::with_stores(
    ///     Server::builder("s", "1").build(),
    ///     HttpConfig::new(),
    ///     InMemoryEventStore::default(),
    ///     InMemorySessionStore::new(), // in practice: one shared by every instance
    /// );
    /// # drop(endpoint);
    /// ```
    pub fn with_stores(
        server: Server,
        config: HttpConfig,
        events: impl EventStore,
        sessions: impl SessionStore,
    ) -> Self {
        Self::build(server, config, Arc::new(events), Some(Arc::new(sessions)))
    }

    fn build(
        server: Server,
        config: HttpConfig,
        events: Arc<dyn EventStore>,
        store: Option<Arc<dyn SessionStore>>,
    ) -> Self {
        // Each stateless request runs on a connection of its own from this engine
        // (`engine::embed::run_request`); the endpoint itself answers it.
        let stateless = mcpl_core::Engine::new();
        let session_engine = crate::session::shared_engine(&server);
        if events.relays() {
            // Instances pass the client's answers to each other: each numbers its requests
            // from a random point, so that an answer names one instance's request only.
            match stateful::random_stream_base() {
                Ok(first) => session_engine.number_requests_from(i64::try_from(first).unwrap_or(0)),
                Err(e) => tracing::warn!(error = %e, "no OS randomness to number requests from"),
            }
        }
        config.connections.refusals.count_engine(&session_engine, None);
        StreamableHttp {
            inner: Arc::new(Inner {
                server_side: Arc::new(server.clone()),
                server,
                config,
                events,
                store,
                stateless,
                session_engine,
                sessions: RwLock::new(HashSet::default()),
                reserved: std::sync::atomic::AtomicUsize::new(0),
                reaper: std::sync::Once::new(),
                epoch: tokio::time::Instant::now(),
            }),
        }
    }

    /// An axum router serving the endpoint at `path`.
    ///
    /// Serve it with [`serve`] or [`serve_with`] (any router, with routes of your own merged
    /// in) rather than `axum::serve`: besides the connection caps, timeouts and graceful
    /// shutdown, their loop polls a connection again at once when it wakes itself mid-poll
    /// (hyper does so on every request with a body), where the runtime would requeue it and,
    /// on the multi-threaded runtime, wake another worker to take it.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::http::{HttpConfig, StreamableHttp};
    ///
    /// let mcp = StreamableHttp::new(Server::builder("s", "1").build(), HttpConfig::new()).into_router("/mcp");
    /// let app = axum::Router::new().nest("/api", mcp); // served at /api/mcp
    /// # drop(app);
    /// ```
    pub fn into_router(self, path: &str) -> Router {
        Router::new().route_service(path, self)
    }

    /// The number of live sessions.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::http::{HttpConfig, StreamableHttp};
    ///
    /// let endpoint = StreamableHttp::new(Server::builder("s", "1").build(), HttpConfig::new());
    /// assert_eq!(endpoint.session_count(), 0);
    /// ```
    pub fn session_count(&self) -> usize {
        self.inner.sessions.read().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }

    /// The refusals counted so far: those of this endpoint and of every entry point sharing
    /// its [`HttpConfig::connections`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::http::{HttpConfig, RefusalKind, StreamableHttp};
    ///
    /// let endpoint = StreamableHttp::new(Server::builder("s", "1").build(), HttpConfig::new());
    /// assert_eq!(endpoint.refusals().count(RefusalKind::BodyTooLarge), 0);
    /// ```
    pub fn refusals(&self) -> &Refusals {
        &self.inner.config.connections.refusals
    }

    /// Logs once and counts a refused request (see [`Refusals`]).
    pub(crate) fn refuse(
        &self,
        kind: RefusalKind,
        peer: Option<std::net::SocketAddr>,
        detail: &str,
    ) {
        self.refusals().record(kind, peer, detail);
    }

    /// Whether the shutdown signal fired.
    fn shutting_down(&self) -> bool {
        self.inner.config.connections.shutdown.is_fired()
    }

    /// The refusal of a request whose `Host` or `Origin` failed its check, logged and counted.
    fn host_refused(&self, r: Refusal, peer: Option<std::net::SocketAddr>) -> Response {
        let kind = match r.status {
            StatusCode::FORBIDDEN => RefusalKind::Forbidden,
            _ => RefusalKind::BadRequest,
        };
        self.refuse(kind, peer, &r.message);
        refused(r)
    }

    /// `503` for what would start at shutdown (request `id`, if it is one), logged and counted.
    fn shutdown_refused(
        &self,
        peer: Option<std::net::SocketAddr>,
        id: Option<RequestId>,
    ) -> Response {
        self.refuse(RefusalKind::ShuttingDown, peer, "shutting down");
        let mut response = rpc_error_for(
            id,
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::INTERNAL_ERROR,
            "shutting down",
        );
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        response
    }

    /// The answer to a body that could not be read, logged and counted.
    fn body_refused(&self, peer: Option<std::net::SocketAddr>, error: body::BodyError) -> Response {
        let limit = self.inner.config.max_body;
        let (kind, status, message) = match error {
            body::BodyError::TooLarge => (
                RefusalKind::BodyTooLarge,
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("request body exceeds {limit} bytes"),
            ),
            body::BodyError::TimedOut => (
                RefusalKind::BodyTimeout,
                StatusCode::REQUEST_TIMEOUT,
                "request body not received in time".to_owned(),
            ),
            body::BodyError::Malformed => (
                RefusalKind::BadRequest,
                StatusCode::BAD_REQUEST,
                "malformed request body".to_owned(),
            ),
        };
        self.refuse(kind, peer, &message);
        let mut response = rpc_error(status, ErrorCode::INVALID_REQUEST, message);
        // What is left of the body is unread: the connection cannot carry another request.
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    }

    /// Closes every session, once its in-flight requests finished (waiting at most the
    /// shutdown grace period of [`HttpConfig::connections`]): their handlers stop, their
    /// stored events are dropped; once the shutdown signal fired, the server's running task
    /// handlers stop too (their tasks recorded `cancelled`). Recorded sessions stay in the session store for
    /// other endpoints to continue. Done by itself once the shutdown signal fires; call it
    /// to wait for it after [`serve_with`] returned.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::http::{HttpConfig, StreamableHttp};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let endpoint = StreamableHttp::new(Server::builder("s", "1").build(), HttpConfig::new());
    /// endpoint.close().await;
    /// assert_eq!(endpoint.session_count(), 0);
    /// # });
    /// ```
    pub async fn close(&self) {
        let grace = self.inner.config.connections.shutdown_grace;
        let settled = async {
            loop {
                let busy = {
                    let sessions = self
                        .inner
                        .sessions
                        .read()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    sessions.iter().any(|s| s.0.is_busy())
                };
                if !busy {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        let _ = tokio::time::timeout(grace, settled).await;
        let sessions: Vec<Arc<HttpSession>> = {
            let mut sessions =
                self.inner.sessions.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            sessions.drain().map(|s| s.0).collect()
        };
        let fleet = self.inner.store.as_ref().is_some_and(|s| s.expires_idle());
        for session in sessions {
            if fleet {
                // Another instance continues it: its events stay in the shared store.
                session.detach().await;
            } else {
                session.close().await;
            }
        }
        if self.inner.config.connections.shutdown.is_fired() {
            // Task handlers run apart from any request: they stop with the server.
            self.inner.server.inner.tasks.shutdown().await;
        }
    }
}

/// Serves `router` on `listener` under the default [`ConnectionConfig`] (`TCP_NODELAY` set on
/// every connection, the default caps and timeouts); see [`serve_with`] to set them or to
/// shut down gracefully.
///
/// # Errors
///
/// None so far: it serves until dropped. A failed accept is retried after a growing pause.
///
/// # Examples
///
/// ```no_run
/// use mcpl_server::Server;
/// use mcpl_server::http::{HttpConfig, StreamableHttp};
///
/// #[tokio::main]
/// async fn main() -> std::io::Result<()> {
///     let server = Server::builder("demo", "1.0.0").build();
///     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp");
///     let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
///     mcpl_server::http::serve(listener, app).await
/// }
/// ```
pub async fn serve(listener: tokio::net::TcpListener, router: Router) -> std::io::Result<()> {
    serve_with(listener, router, ConnectionConfig::default()).await
}

/// Serves `router` on `listener` under `connections`: its connection cap, header, body and
/// write timeouts, and shutdown signal. Once that signal fires, open connections (WebSocket
/// ones too) finish their requests within the grace period, a connection opened meanwhile
/// carries one request (new work is refused with `503`), and once all are done the listener
/// is closed and this returns (see [`ConnectionConfig::shutdown_on`]). Give the
/// endpoints in `router` the same `connections` (with [`HttpConfig::connections`] and
/// [`WsConfig::connections`](crate::ws::WsConfig::connections)), so they end their streams and
/// sessions on the same signal and count refusals in the same place.
///
/// # Errors
///
/// None so far. A failed accept is retried after a growing pause, logged once per burst.
///
/// # Examples
///
/// Shut down gracefully on a signal (here a token cancelled by hand):
///
/// ```
/// use mcpl_server::Server;
/// use mcpl_server::http::{ConnectionConfig, HttpConfig, StreamableHttp};
/// use tokio_util::sync::CancellationToken;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let shutdown = CancellationToken::new();
/// let connections = ConnectionConfig::new().shutdown_on(shutdown.clone());
/// let endpoint = StreamableHttp::new(
///     Server::builder("demo", "1.0.0").build(),
///     HttpConfig::new().connections(connections.clone()),
/// );
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let serving = tokio::spawn(mcpl_server::http::serve_with(
///     listener,
///     endpoint.into_router("/mcp"),
///     connections,
/// ));
/// shutdown.cancel(); // on SIGTERM, say
/// serving.await??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    router: Router,
    connections: ConnectionConfig,
) -> std::io::Result<()> {
    let service = hyper_util::service::TowerToHyperService::new(router);
    let service_for = |peer| serving::WithPeer { inner: service.clone(), peer };
    serving::serve_connections(listener, connections, service_for).await
}

impl StreamableHttp {
    /// Serves this endpoint alone at `path` on `listener`: each connection goes straight to
    /// hyper (HTTP/1.1, `TCP_NODELAY` set), and each request to the endpoint without a router
    /// in between; any other path gets `404`. The fastest way to run a standalone server: it
    /// saves the routing and the boxing a `Router` does for every request. To mount the
    /// endpoint in an application, or to wrap it in layers (such as
    /// [`auth::BearerAuth`]), mount the endpoint itself (it is a `tower` `Service`) or
    /// [`into_router`](Self::into_router), and [`serve`] that.
    ///
    /// # Errors
    ///
    /// None so far: it serves until dropped, or until the shutdown signal of
    /// [`HttpConfig::connections`] fires, and then returns once in-flight requests finished
    /// (within the grace period) and every session is closed. A failed accept is retried
    /// after a growing pause, logged once per burst. The connections' caps and timeouts are
    /// those of [`HttpConfig::connections`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::http::{HttpConfig, StreamableHttp};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let endpoint = StreamableHttp::new(Server::builder("demo", "1.0.0").build(), HttpConfig::new());
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let addr = listener.local_addr()?;
    /// tokio::spawn(endpoint.serve_at(listener, "/mcp"));
    /// // Served at /mcp (a GET without a session is 405 in the stateless era) and nowhere else.
    /// let client = reqwest::Client::new();
    /// let at_mcp = client.get(format!("http://{addr}/mcp")).send().await?;
    /// assert_eq!(at_mcp.status(), 405);
    /// let elsewhere = client.get(format!("http://{addr}/other")).send().await?;
    /// assert_eq!(elsewhere.status(), 404);
    /// # Ok(()) }
    /// ```
    pub async fn serve_at(
        self,
        listener: tokio::net::TcpListener,
        path: &str,
    ) -> std::io::Result<()> {
        let path: Arc<str> = Arc::from(path);
        let http = self.clone();
        // Each connection gets its own handle on the endpoint and path, and each request a
        // clone of that: reference counts shared by every connection would bounce between
        // the cores serving them.
        let service_for = move |peer| {
            let endpoint = Arc::new((http.clone(), path.clone()));
            hyper::service::service_fn(move |request: hyper::Request<_>| {
                let endpoint = endpoint.clone();
                async move {
                    let (http, path) = &*endpoint;
                    if request.uri().path() != &**path {
                        return Ok::<_, Infallible>(StatusCode::NOT_FOUND.into_response());
                    }
                    // What the endpoint's `Service` does, with the peer known already (no
                    // extension to insert and read back), and hyper's body as it is.
                    Ok(serve_request(http, request, Some(peer)).await)
                }
            })
        };
        let connections = self.inner.config.connections.clone();
        serving::serve_connections(listener, connections, service_for).await?;
        self.close().await;
        Ok(())
    }
}

/// A request body the endpoint reads: hyper's, axum's, or any other.
pub(crate) trait RequestBody:
    axum::body::HttpBody<Data = bytes::Bytes, Error: Into<axum::BoxError>> + Send + Unpin + 'static
{
}

impl<B> RequestBody for B where
    B: axum::body::HttpBody<Data = bytes::Bytes, Error: Into<axum::BoxError>>
        + Send
        + Unpin
        + 'static
{
}

fn json_body(status: StatusCode, value: &impl serde::Serialize) -> Response {
    json_bytes(status, serde_json::to_vec(value).unwrap_or_default())
}

/// A response whose body is `body`, JSON already (bytes given as they are: not copied).
fn json_bytes(status: StatusCode, body: impl Into<axum::body::Body>) -> Response {
    let mut response = Response::new(body.into());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A request refused with an HTTP status and a JSON-RPC error body.
struct Reject {
    status: StatusCode,
    code: ErrorCode,
    message: String,
}

impl Reject {
    fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Self {
        Reject { status, code, message: message.into() }
    }
}

impl Reject {
    /// The response, its JSON-RPC error naming the request `id` refused (a `503` says when
    /// to retry).
    fn respond(self, id: Option<RequestId>) -> Response {
        let retry = self.status == StatusCode::SERVICE_UNAVAILABLE;
        let mut response = rpc_error_for(id, self.status, self.code, self.message);
        if retry {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

impl IntoResponse for Reject {
    fn into_response(self) -> Response {
        self.respond(None)
    }
}

/// An HTTP error carrying a JSON-RPC error body.
fn rpc_error(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Response {
    rpc_error_for(None, status, code, message)
}

/// An HTTP error carrying a JSON-RPC error body that answers request `id`.
fn rpc_error_for(
    id: Option<RequestId>,
    status: StatusCode,
    code: ErrorCode,
    message: impl Into<String>,
) -> Response {
    let error = ErrorResponse::new(id, ErrorObject::new(code, message));
    json_body(status, &Message::Error(error))
}

fn refused(r: Refusal) -> Response {
    rpc_error(r.status, ErrorCode::INVALID_REQUEST, r.message)
}

/// Serves one request from `peer` (its address, when known: for refusals' logs), in an
/// `mcp.http` span: the requests it carries are served in spans under this one. Any body
/// type: hyper's own is read as it is, not boxed first (an allocation per request).
async fn serve_request<B: RequestBody>(
    http: &StreamableHttp,
    request: axum::http::Request<B>,
    peer: Option<std::net::SocketAddr>,
) -> Response {
    let span = tracing::debug_span!(
        target: "mcpl_server::trace",
        "mcp.http",
        "http.request.method" = %request.method(),
        "client.address" = peer.map(|p| tracing::field::display(p.ip())),
        "client.port" = peer.map(|p| p.port()),
    );
    serve_in_span(http, request, peer).instrument(span).await
}

async fn serve_in_span<B: RequestBody>(
    http: &StreamableHttp,
    request: axum::http::Request<B>,
    peer: Option<std::net::SocketAddr>,
) -> Response {
    if request.method() == Method::POST {
        // Only the headers are kept (the rest of the head is not needed past this point).
        let (headers, body, token) = {
            let (parts, body) = request.into_parts();
            (parts.headers, body, access_token(&parts.extensions))
        };
        // The headers every POST reads, found in one pass.
        let head = Head::read(&headers);
        if let Err(r) = guard::check_host_and_origin(&http.inner.config.hosts, &head) {
            return http.host_refused(r, peer);
        }
        return post(http, &head, body, peer, token).await;
    }
    if let Err(r) =
        guard::check_host_and_origin(&http.inner.config.hosts, &Head::read(request.headers()))
    {
        return http.host_refused(r, peer);
    }
    // Shutting down, nothing new starts: no request and no stream (a client's answers and
    // notifications still reach the requests in flight, and DELETE still ends sessions).
    if request.method() == Method::GET && http.shutting_down() {
        return http.shutdown_refused(peer, None);
    }
    let token = access_token(request.extensions());
    match *request.method() {
        Method::GET => {
            let request = request.map(axum::body::Body::new);
            stateful::get(http, request, token.and_then(|t| t.principal())).await
        }
        Method::DELETE => {
            let request = request.map(axum::body::Body::new);
            stateful::delete(http, request, token.and_then(|t| t.principal())).await
        }
        _ => {
            let mut response = rpc_error(
                StatusCode::METHOD_NOT_ALLOWED,
                ErrorCode::INVALID_REQUEST,
                "method not allowed",
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            response
        }
    }
}

/// The access token a protecting layer verified (see `auth::BearerAuth`): what the request
/// creates is bound to its principal, and its handler sees it.
fn access_token(extensions: &axum::http::Extensions) -> Option<Arc<AccessToken>> {
    extensions.get::<AccessToken>().cloned().map(Arc::new)
}

async fn post<B: RequestBody>(
    http: &StreamableHttp,
    head: &Head<'_>,
    body: B,
    peer: Option<std::net::SocketAddr>,
    token: Option<Arc<AccessToken>>,
) -> Response {
    if let Err(r) = guard::check_post_accept(head).and_then(|()| guard::check_content_type(head)) {
        http.refuse(RefusalKind::BadRequest, peer, &r.message);
        return refused(r);
    }
    let limits = &http.inner.config;
    let body = match body::read(body, limits.max_body, limits.connections.body_timeout).await {
        Ok(body) => body,
        Err(e) => return http.body_refused(peer, e),
    };
    // A well-formed stateless-era request is read straight from the body; anything else, and
    // every other request, goes through the general decoder.
    let declared = crate::stateless::era_of(None, head.protocol_version());
    if declared == Era::Stateless && http.shutting_down() {
        return http.shutdown_refused(peer, None);
    }
    if declared == Era::Stateless {
        // In a block of its own, so that what was read is not kept across the waits below.
        if let Some(read) = stateless_body::read(&body) {
            return stateless::serve_read(http, head, read, token).await;
        }
    }
    // A well-formed request (what a 2025 session's POST usually carries) is read straight from
    // the body too, `_meta` left in its params; the reader defers anything else to the general
    // decoder, which then answers exactly as it always did.
    // A plain `tools/call` has its params read typed (`call`), not into the request's tree.
    let (message, call) = match stateless_body::read_request(&body) {
        Some(read) => (Ok(Message::Request(read.request)), read.call),
        None => (Message::decode(&body), None),
    };
    let message = match message {
        Ok(message) => message,
        Err(e) => return json_body(StatusCode::BAD_REQUEST, &Message::Error(e.to_response())),
    };
    if let (Message::Request(req), true) = (&message, http.shutting_down()) {
        return http.shutdown_refused(peer, Some(req.id.clone()));
    }
    // (A typed call has no `_meta`: its era is the header's.)
    if declared == Era::Stateless || stateless::era_of(&message) == Era::Stateless {
        let message = match message {
            Message::Request(req) => Message::Request(stateless_body::with_params(req, call)),
            other => other,
        };
        return stateless::serve(http, head, message, token).await;
    }
    stateful::post(http, head, message, call, peer, token).await
}

/// When an SSE stream of `http` ends at shutdown: a stream that carries a request's response
/// gets the grace period to carry it; any other ends at once. Either ends with a `retry` hint
/// (the connection stays up a moment past the grace for it; see
/// [`serving::serve_connections`]).
pub(crate) fn stop_at_shutdown(http: &StreamableHttp, carries_response: bool) -> sse::Stop {
    let connections = &http.inner.config.connections;
    let (fired, grace) = (connections.shutdown.fired(), connections.shutdown_grace);
    sse::Stop {
        stop: Box::pin(async move {
            fired.await;
            if carries_response {
                tokio::time::sleep(grace).await;
            }
        }),
        retry: http.inner.config.retry,
    }
}
