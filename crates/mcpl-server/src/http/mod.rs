//! Streamable HTTP: the MCP endpoint as an axum [`Router`], mountable in any
//! axum or tower application.
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
//! `Last-Event-ID`), and the server's [`TaskStore`](crate::task::TaskStore) (tasks polled and
//! cancelled anywhere); give every instance the same
//! [`StateSealer`](crate::state::StateSealer) key. The `mcpl-redis` crate implements them on
//! Redis. With a session store that expires sessions itself ([`SessionStore::expires_idle`]),
//! an instance checks the store at every request to a session it holds (a `DELETE` at another
//! instance ends it here too: `404`) and, when it lets an idle session go, only drops its own
//! copy. When
//! the store fails, a new session is refused with `503` and `Retry-After`, a session held here
//! is still served, one held elsewhere gets `503` and `Retry-After`, and stateless requests
//! are served as ever. The server's changes (list changes, resource updates) reach the
//! clients of every instance once relayed ([`Server::notify_change`] announces one made
//! elsewhere; `mcpl_redis::FleetEvents` relays them); other messages for
//! a session (a log message, a request) reach only the streams open at the instance serving
//! the request.
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

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use futures::StreamExt;
use mcpl_core::ProtocolVersion;
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject, ErrorResponse, Message, RequestId};
use mcpl_core::types::{InitializeRequestParams, names};
use tokio::sync::mpsc;

use self::auth::{AccessToken, Principal};
use self::event_store::{EventPosition, EventStore, InMemoryEventStore};
use self::guard::Refusal;
use self::session::{Event, HttpSession, StreamError};
use self::session_store::{SessionRecord, SessionStore};
use self::sse::SseEvent;
use crate::builder::Server;

pub mod auth;
mod body;
mod config;
pub mod event_store;
pub(crate) mod guard;
mod refusal;
pub(crate) mod serving;
mod session;
pub mod session_store;
mod sse;
pub mod stateless;
mod stateless_body;

pub use self::config::{DEFAULT_MAX_BODY, HttpConfig};
pub use self::refusal::{RefusalEvent, RefusalKind, Refusals};
pub use self::serving::{ConnectionConfig, DEFAULT_MAX_CONNECTIONS};

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
    config: HttpConfig,
    events: Arc<dyn EventStore>,
    /// Where sessions are recorded for other endpoints to continue; `None`: nowhere.
    store: Option<Arc<dyn SessionStore>>,
    sessions: RwLock<HashMap<Arc<str>, Arc<HttpSession>>>,
    /// Session slots taken by handshakes under way (changed with `sessions` locked).
    reserved: std::sync::atomic::AtomicUsize,
    stateless: mcpl_core::Engine,
    /// The engine every stateful-era session is a driven connection of.
    session_engine: mcpl_core::Engine,
    /// The server's identity as JSON, put in every stateless-era result's `_meta`.
    server_info: serde_json::Value,
    /// `server_info` serialized, written as it is into each stateless-era result.
    server_info_json: String,
    reaper: std::sync::Once,
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
        // (`Engine::run_request`); the endpoint itself answers it.
        let stateless = mcpl_core::Engine::new();
        let session_engine = crate::session::shared_engine(&server);
        config.connections.refusals.count_engine(&session_engine, None);
        let server_info = serde_json::to_value(server.info()).unwrap_or_default();
        let server_info_json = server_info.to_string();
        StreamableHttp {
            inner: Arc::new(Inner {
                server,
                config,
                events,
                store,
                stateless,
                session_engine,
                server_info,
                server_info_json,
                sessions: RwLock::new(HashMap::new()),
                reserved: std::sync::atomic::AtomicUsize::new(0),
                reaper: std::sync::Once::new(),
            }),
        }
    }

    /// An axum router serving the endpoint at `path`.
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
        Router::new().route(path, any(handle)).with_state(self)
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
        self.inner.config.connections.shutdown.is_cancelled()
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

    fn stateless_engine(&self) -> mcpl_core::Engine {
        self.inner.stateless.clone()
    }

    fn session(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.inner
            .sessions
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    fn remove_session(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.inner.sessions.write().unwrap_or_else(std::sync::PoisonError::into_inner).remove(id)
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
                    sessions.values().any(|s| s.is_busy())
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
            sessions.drain().map(|(_, s)| s).collect()
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
        if self.inner.config.connections.shutdown.is_cancelled() {
            // Task handlers run apart from any request: they stop with the server.
            self.inner.server.inner.tasks.shutdown().await;
        }
    }

    /// Takes a session slot for a handshake, atomically: at the cap, the idle session that
    /// never finished its handshake, else the least recently used idle one, is evicted (and
    /// returned, to be closed). `None`: the cap is reached and every session is busy.
    fn reserve_session(&self) -> Option<(SessionSlot<'_>, Option<Arc<HttpSession>>)> {
        use std::sync::atomic::Ordering;
        let inner = &*self.inner;
        let mut sessions =
            inner.sessions.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let taken = sessions.len() + inner.reserved.load(Ordering::SeqCst);
        let evicted = if taken < inner.config.max_sessions {
            None
        } else {
            let victim = sessions
                .values()
                .filter(|s| !s.is_busy())
                .min_by_key(|s| (s.is_ready(), s.idle_since()))
                .map(|s| s.id.clone())?;
            sessions.remove(&victim)
        };
        inner.reserved.fetch_add(1, Ordering::SeqCst);
        Some((SessionSlot(inner), evicted))
    }

    /// Closes a session this endpoint let go of (idle, or evicted at the cap), already out
    /// of its table. With a store that expires sessions itself (a fleet's), only this copy
    /// ends: the client may carry on at another instance. Otherwise the session ends.
    async fn drop_local(&self, session: &HttpSession) {
        match &self.inner.store {
            Some(store) if store.expires_idle() => session.detach().await,
            Some(store) => {
                if let Err(e) = store.remove(&session.id).await {
                    tracing::warn!(session = %session.id, error = %e, "session store remove failed");
                }
                session.close().await;
            }
            None => session.close().await,
        }
    }

    fn start_reaper(&self) {
        let weak = Arc::downgrade(&self.inner);
        let config = &self.inner.config;
        let period = (config.session_idle_timeout.min(config.handshake_timeout) / 4)
            .max(Duration::from_millis(100));
        self.inner.reaper.call_once(|| {
            let changes = self.inner.server.subscribe_changes();
            tokio::spawn(forward_changes(weak.clone(), changes));
            tokio::spawn(close_at_shutdown(
                weak.clone(),
                self.inner.config.connections.shutdown.clone(),
            ));
            tokio::spawn(reap(weak, period));
        });
    }
}

/// Closes every session once `shutdown` fires (see [`StreamableHttp::close`]).
async fn close_at_shutdown(inner: Weak<Inner>, shutdown: tokio_util::sync::CancellationToken) {
    shutdown.cancelled().await;
    if let Some(inner) = inner.upgrade() {
        StreamableHttp { inner }.close().await;
    }
}

/// A session slot reserved for a handshake under way; freed when dropped (by then the
/// session is in the table, or failed).
struct SessionSlot<'a>(&'a Inner);

impl Drop for SessionSlot<'_> {
    fn drop(&mut self) {
        self.0.reserved.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Tells every live session about the server's changes, until the endpoint is dropped: one
/// task for all sessions, so an idle session costs no task of its own.
async fn forward_changes(
    inner: Weak<Inner>,
    mut changes: tokio::sync::broadcast::Receiver<crate::events::ServerEvent>,
) {
    use crate::events::ServerEvent;
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let batch = match changes.recv().await {
            Ok(event) => vec![event],
            Err(RecvError::Closed) => return,
            Err(RecvError::Lagged(missed)) => {
                // Resource updates are lost; the lists may have changed, so say so.
                tracing::warn!(missed, "sessions fell behind on server events");
                vec![
                    ServerEvent::ToolsListChanged,
                    ServerEvent::ResourcesListChanged,
                    ServerEvent::PromptsListChanged,
                ]
            }
        };
        let Some(inner) = inner.upgrade() else { return };
        let sessions: Vec<Arc<HttpSession>> = inner
            .sessions
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        drop(inner);
        for event in &batch {
            for session in sessions.iter().filter(|s| s.wants(event)) {
                // Queued without waiting: a session whose connection closed is skipped.
                let _ = session.peer().notify(event.method(), event.params()).await;
            }
        }
    }
}

/// Closes sessions idle for longer than the configured timeout, until the endpoint is dropped.
async fn reap(inner: Weak<Inner>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let Some(inner) = inner.upgrade() else { return };
        let (idle, handshake) = (inner.config.session_idle_timeout, inner.config.handshake_timeout);
        let expired: Vec<Arc<HttpSession>> = {
            let mut sessions =
                inner.sessions.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            let ids: Vec<Arc<str>> = sessions
                .iter()
                .filter(|(_, s)| {
                    if s.is_busy() {
                        // In-flight requests and open streams are activity.
                        s.touch();
                        false
                    } else if !s.is_ready() {
                        s.created().elapsed() > handshake
                    } else {
                        s.idle_since().elapsed() > idle
                    }
                })
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| sessions.remove(id)).collect()
        };
        for session in expired {
            tracing::debug!(session = %session.id, "closing idle session");
            let http = StreamableHttp { inner: inner.clone() };
            http.drop_local(&session).await;
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
    /// [`auth::BearerAuth`]), use [`into_router`](Self::into_router) and [`serve`] instead.
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
        let service_for = move |peer| {
            let (http, path) = (http.clone(), path.clone());
            hyper::service::service_fn(move |request: hyper::Request<_>| {
                let (http, path) = (http.clone(), path.clone());
                async move {
                    if request.uri().path() != &*path {
                        return Ok::<_, Infallible>(StatusCode::NOT_FOUND.into_response());
                    }
                    let request = request.map(axum::body::Body::new);
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

/// A random first stream number for a restored session: below 2^52, so its streams' numbers
/// stay exact as JSON numbers too, and far from those of any other copy of the session.
fn random_stream_base() -> Result<u64, getrandom::Error> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)?;
    Ok((u64::from_le_bytes(bytes) >> 12).max(1 << 32))
}

fn new_session_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn json_body(status: StatusCode, value: &impl serde::Serialize) -> Response {
    json_bytes(status, serde_json::to_vec(value).unwrap_or_default())
}

/// A response whose body is `body`, JSON already.
fn json_bytes(status: StatusCode, body: Vec<u8>) -> Response {
    (status, [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body)
        .into_response()
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

/// The id of `message`, if it is a request.
fn request_id(message: &Message) -> Option<RequestId> {
    match message {
        Message::Request(r) => Some(r.id.clone()),
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

fn refused(r: Refusal) -> Response {
    rpc_error(r.status, ErrorCode::INVALID_REQUEST, r.message)
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

async fn handle(State(http): State<StreamableHttp>, request: Request) -> Response {
    let peer = serving::peer_of(&request);
    serve_request(http, request, peer).await
}

/// Serves one request from `peer` (its address, when known: for refusals' logs).
async fn serve_request(
    http: StreamableHttp,
    request: Request,
    peer: Option<std::net::SocketAddr>,
) -> Response {
    if let Err(r) = guard::check_host_and_origin(&http.inner.config.hosts, request.headers()) {
        let kind = match r.status {
            StatusCode::FORBIDDEN => RefusalKind::Forbidden,
            _ => RefusalKind::BadRequest,
        };
        http.refuse(kind, peer, &r.message);
        return refused(r);
    }
    // Shutting down, nothing new starts: no request and no stream (a client's answers and
    // notifications still reach the requests in flight, and DELETE still ends sessions).
    if request.method() == Method::GET && http.shutting_down() {
        return http.shutdown_refused(peer, None);
    }
    // The access token a protecting layer verified (see `auth::BearerAuth`): what the
    // request creates is bound to its principal, and its handler sees it.
    let token = request.extensions().get::<AccessToken>().cloned().map(Arc::new);
    match *request.method() {
        Method::POST => post(http, request, peer, token).await,
        Method::GET => get(http, request, token.and_then(|t| t.principal())).await,
        Method::DELETE => delete(http, request, token.and_then(|t| t.principal())).await,
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

/// Checks `MCP-Protocol-Version` on a request after `initialize`.
fn check_version_header(headers: &HeaderMap, session: &HttpSession) -> Result<(), Reject> {
    let Some(value) = header_str(headers, PROTOCOL_VERSION) else {
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

/// Finds the session a request names: `400` without the header, `404` for one that is
/// neither live here nor recorded in the session store, or that another principal created
/// (the request acts for `principal`): to the request, the session does not exist.
async fn find_session(
    http: &StreamableHttp,
    headers: &HeaderMap,
    principal: Option<&Principal>,
) -> Result<Arc<HttpSession>, Reject> {
    let Some(id) = header_str(headers, SESSION_ID) else {
        return Err(Reject::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            "missing Mcp-Session-Id header",
        ));
    };
    let not_found = || Reject::new(StatusCode::NOT_FOUND, ErrorCode(-32001), "session not found");
    let another = || {
        tracing::debug!(session = %id, "a request for a session another principal created");
        not_found()
    };
    if let Some(session) = http.session(id) {
        if session.principal.as_ref() != principal {
            return Err(another());
        }
        session.touch();
        if let Some(store) = &http.inner.store {
            match store.touch(id).await {
                Ok(true) => {}
                Ok(false) => {
                    // Ended elsewhere (deleted at another endpoint, or expired): here too.
                    tracing::debug!(session = %id, "session no longer recorded; closing it");
                    if http.remove_session(id).is_some() {
                        session.close().await;
                    }
                    return Err(Reject::new(
                        StatusCode::NOT_FOUND,
                        ErrorCode(-32001),
                        "session not found",
                    ));
                }
                // The live copy keeps serving while the store is away.
                Err(e) => tracing::warn!(session = %id, error = %e, "session store touch failed"),
            }
        }
        return Ok(session);
    }
    let recorded = match &http.inner.store {
        Some(store) => store.load(id).await.map_err(|e| store_unavailable(&e))?,
        None => None,
    };
    match recorded {
        Some(record) if record.principal.as_ref() != principal => Err(another()),
        Some(record) => restore(http, record).await,
        None => Err(not_found()),
    }
}

/// `503` with `Retry-After` for a request that needs the session store while it fails.
fn store_unavailable(error: &session_store::StoreError) -> Reject {
    tracing::warn!(error = %error, "session store failed");
    let message = match error.kind() {
        session_store::StoreErrorKind::Full => "too many sessions",
        _ => "the session store is unavailable",
    };
    Reject::new(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::INTERNAL_ERROR, message)
}

/// Brings a recorded session back to life by replaying its handshake server-side.
async fn restore(http: &StreamableHttp, record: SessionRecord) -> Result<Arc<HttpSession>, Reject> {
    let failed = |what: &str| {
        Reject::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::INTERNAL_ERROR,
            format!("could not restore the session: {what}"),
        )
    };
    // Streams numbered from a random point: never the ids another endpoint gave this
    // session's streams, whose events a shared event store may hold.
    let first_stream = random_stream_base().map_err(|e| failed(&e.to_string()))?;
    let session = Arc::new(HttpSession::start(
        Arc::from(record.id.as_str()),
        record.principal.clone(),
        &http.inner.session_engine,
        http.inner.events.clone(),
        first_stream,
    ));
    let params = InitializeRequestParams::new(
        record.protocol_version.clone(),
        record.client_capabilities.clone(),
        record.client_info.clone(),
    );
    let params = serde_json::to_value(params).map_err(|e| failed(&e.to_string()))?;
    let id = RequestId::from("mcpl-session-restore");
    let (_, mut rx) = session.open_request_stream(&id, true).map_err(|_| failed("stream"))?;
    session
        .deliver(mcpl_core::jsonrpc::Request::new(id, names::INITIALIZE, Some(params)).into())
        .await
        .map_err(|_| failed("engine"))?;
    match rx.recv().await.map(|e| e.message) {
        Some(Message::Response(_)) => {}
        _ => {
            session.close().await;
            return Err(failed("the handshake was refused"));
        }
    }
    let initialized = mcpl_core::jsonrpc::Notification::new(names::NOTIFICATIONS_INITIALIZED, None);
    session.deliver(initialized.into()).await.map_err(|_| failed("engine"))?;
    // Another request may have restored the same session meanwhile: keep the first.
    let live = {
        let mut sessions =
            http.inner.sessions.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        sessions.entry(session.id.clone()).or_insert_with(|| session.clone()).clone()
    };
    if !Arc::ptr_eq(&live, &session) {
        session.close().await;
    }
    tracing::debug!(session = %record.id, "restored session from the session store");
    http.start_reaper();
    Ok(live)
}

async fn post(
    http: StreamableHttp,
    request: Request,
    peer: Option<std::net::SocketAddr>,
    token: Option<Arc<AccessToken>>,
) -> Response {
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    if let Err(r) =
        guard::check_post_accept(&headers).and_then(|()| guard::check_content_type(&headers))
    {
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
    if stateless::stateless_header(&headers) && http.shutting_down() {
        return http.shutdown_refused(peer, None);
    }
    if stateless::stateless_header(&headers) {
        if let Some(read) = stateless_body::read(&body) {
            return stateless::serve_read(http, headers, read, token).await;
        }
    }
    let message = match Message::decode(&body) {
        Ok(message) => message,
        Err(e) => return json_body(StatusCode::BAD_REQUEST, &Message::Error(e.to_response())),
    };
    if let (Message::Request(req), true) = (&message, http.shutting_down()) {
        return http.shutdown_refused(peer, Some(req.id.clone()));
    }
    if stateless::is_stateless(&message, &headers) {
        return stateless::serve(http, headers, message, token).await;
    }
    if let Message::Request(req) = &message {
        if req.method == mcpl_core::types::names::INITIALIZE {
            if headers.contains_key(SESSION_ID) {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    ErrorCode::INVALID_REQUEST,
                    "initialize must not carry Mcp-Session-Id",
                );
            }
            return initialize(http, message, peer, token).await;
        }
    }
    let id = request_id(&message);
    let principal = token.as_ref().and_then(|t| t.principal());
    let session = match find_session(&http, &headers, principal.as_ref()).await {
        Ok(s) => s,
        Err(reject) => return reject.respond(id),
    };
    if let Err(reject) = check_version_header(&headers, &session) {
        return reject.respond(id);
    }
    match message {
        Message::Request(req) => {
            let id = req.id.clone();
            let json = http.inner.config.json_response;
            let (stream, rx) = match session.open_request_stream(&id, json) {
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
            if session.deliver_request(req, token).await.is_err() {
                session.abandon_request_stream(&id);
                return rpc_error_for(
                    Some(id),
                    StatusCode::NOT_FOUND,
                    ErrorCode(-32001),
                    "session ended",
                );
            }
            if json {
                json_reply(rx, &session.id).await
            } else {
                sse_reply(&http, &session, stream, Vec::new(), Some(rx), true)
            }
        }
        other => {
            let cancelled = cancelled_request(&other);
            match session.deliver(other).await {
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

async fn initialize(
    http: StreamableHttp,
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
        &http.inner.session_engine,
        http.inner.events.clone(),
        0,
    ));
    let request_id = req.id.clone();
    let Ok((_stream, mut rx)) = session.open_request_stream(&request_id, true) else {
        return rpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::INTERNAL_ERROR,
            "session failed to start",
        );
    };
    if session.deliver_request(req, token).await.is_err() {
        return rpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::INTERNAL_ERROR,
            "session failed to start",
        );
    }
    let Some(event) = rx.recv().await else {
        session.close().await;
        return rpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::INTERNAL_ERROR,
            "session ended during initialize",
        );
    };
    if matches!(event.message, Message::Error(_)) {
        // A refused handshake leaves no session behind.
        session.close().await;
        return json_body(StatusCode::OK, &event.message);
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
            principal: session.principal.clone(),
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
        .insert(session.id.clone(), session.clone());
    http.start_reaper();
    let mut response = if http.inner.config.json_response {
        json_body(StatusCode::OK, &event.message)
    } else {
        sse_reply(&http, &session, event.position.stream, vec![event], None, false)
    };
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(SESSION_ID, value);
    }
    response
}

/// Waits for the response on a JSON-mode request stream.
async fn json_reply(mut rx: mpsc::Receiver<Event>, session_id: &str) -> Response {
    while let Some(event) = rx.recv().await {
        if matches!(event.message, Message::Response(_) | Message::Error(_)) {
            let mut response = json_body(StatusCode::OK, &event.message);
            if let Ok(value) = HeaderValue::from_str(session_id) {
                response.headers_mut().insert(SESSION_ID, value);
            }
            return response;
        }
    }
    rpc_error(StatusCode::NOT_FOUND, ErrorCode(-32001), "session ended before the response")
}

fn sse_event(event: &Event) -> SseEvent {
    let data = serde_json::to_string(&event.message).unwrap_or_default();
    SseEvent::default().id(event.position.to_event_id()).data(data)
}

/// An SSE response: optionally a priming event, then `replay`, then what arrives on `live`.
fn sse_reply(
    http: &StreamableHttp,
    session: &HttpSession,
    stream: u64,
    replay: Vec<Event>,
    live: Option<mpsc::Receiver<Event>>,
    prime: bool,
) -> Response {
    let live_request = prime && live.is_some() && session.is_request_stream(stream);
    // Clients of 2025-11-25 and later understand an event with an id and empty data, which
    // lets them resume a stream that closes before its first real event.
    let primes =
        prime && session.protocol_version().is_some_and(|v| v >= ProtocolVersion::V2025_11_25);
    let retry = http.inner.config.retry;
    let first = primes.then(|| {
        SseEvent::default().id(EventPosition { stream, seq: 0 }.to_event_id()).retry(retry).data("")
    });
    let last_replayed = replay.last().map(|e| e.position.seq).unwrap_or(0);
    let replayed = futures::stream::iter(replay);
    let live = futures::stream::unfold(live, move |rx| async move {
        let mut rx = rx?;
        loop {
            let event = rx.recv().await?;
            // Skip what the replay already delivered.
            if event.position.seq > last_replayed {
                return Some((event, Some(rx)));
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
                    let done = matches!(event.message, Message::Response(_) | Message::Error(_));
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
    let mut response = sse::response_until(events, http.inner.config.keep_alive, Some(stop));
    if let Ok(value) = HeaderValue::from_str(&session.id) {
        response.headers_mut().insert(SESSION_ID, value);
    }
    response
}

/// When an SSE stream of `http` ends at shutdown: a stream that carries a request's response
/// gets the grace period to carry it; any other ends at once. Either ends with a `retry` hint
/// (the connection stays up a moment past the grace for it; see
/// [`serving::serve_connections`]).
pub(crate) fn stop_at_shutdown(http: &StreamableHttp, carries_response: bool) -> sse::Stop {
    let connections = &http.inner.config.connections;
    let (token, grace) = (connections.shutdown.clone(), connections.shutdown_grace);
    sse::Stop {
        stop: Box::pin(async move {
            token.cancelled().await;
            if carries_response {
                tokio::time::sleep(grace).await;
            }
        }),
        retry: http.inner.config.retry,
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

async fn get(http: StreamableHttp, request: Request, principal: Option<Principal>) -> Response {
    let headers = request.headers();
    if !headers.contains_key(SESSION_ID) {
        return no_session_method();
    }
    if let Err(r) = guard::check_get_accept(headers) {
        return refused(r);
    }
    let session = match find_session(&http, headers, principal.as_ref()).await {
        Ok(s) => s,
        Err(reject) => return reject.into_response(),
    };
    if let Err(reject) = check_version_header(headers, &session) {
        return reject.into_response();
    }
    if let Some(last) = header_str(headers, LAST_EVENT_ID) {
        let Some(position) = EventPosition::parse(last) else {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                "malformed Last-Event-ID",
            );
        };
        return match session.resume(position).await {
            Some((replay, live)) => {
                sse_reply(&http, &session, position.stream, replay, live, false)
            }
            None => rpc_error(
                StatusCode::NOT_FOUND,
                ErrorCode::INVALID_REQUEST,
                "cannot resume: events unavailable",
            ),
        };
    }
    match session.open_standalone() {
        Ok((stream, rx)) => sse_reply(&http, &session, stream, Vec::new(), Some(rx), true),
        Err(StreamError::StandaloneTaken) => rpc_error(
            StatusCode::CONFLICT,
            ErrorCode::INVALID_REQUEST,
            "the session already has a standalone SSE stream",
        ),
        Err(_) => rpc_error(StatusCode::NOT_FOUND, ErrorCode(-32001), "session not found"),
    }
}

async fn delete(http: StreamableHttp, request: Request, principal: Option<Principal>) -> Response {
    if !request.headers().contains_key(SESSION_ID) {
        return no_session_method();
    }
    let session = match find_session(&http, request.headers(), principal.as_ref()).await {
        Ok(s) => s,
        Err(reject) => return reject.into_response(),
    };
    if let Some(store) = &http.inner.store {
        if let Err(e) = store.remove(&session.id).await {
            // Still recorded: it would live on at other endpoints. The client may retry.
            return store_unavailable(&e).into_response();
        }
    }
    http.remove_session(&session.id);
    session.close().await;
    StatusCode::NO_CONTENT.into_response()
}
