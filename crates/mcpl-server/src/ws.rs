//! WebSocket: a [`Server`] served over WebSocket connections, as an axum [`Router`].
//!
//! MCPL needs requests from the server to the host at any time, which the 2026 Streamable HTTP
//! forbids; a WebSocket connection carries them in both directions. The rules:
//!
//! - `GET` with a WebSocket upgrade opens a connection; other methods get `405`. The `Host`
//!   and `Origin` headers are checked first, as for the Streamable HTTP endpoint (DNS-rebinding
//!   protection, on by default): a refused request gets `403` and is never upgraded.
//! - **A connection is a session**: it is served exactly as [`Server::serve`] serves a stdio
//!   connection (an `initialize` handshake for the 2025 era, or stateless-era requests that
//!   describe their client in `_meta`). A reconnect is a new session and starts with a new
//!   `initialize`.
//! - **One JSON-RPC message per text frame**, never split on newlines (a peer may pretty-print);
//!   binary frames are ignored; a text frame that is not JSON-RPC is answered with a parse
//!   error, as on stdio (see [`mcpl_core::transport::framed`]).
//! - **Size**: a message over [`WsConfig::max_message_size`] (default 4 MiB) is never buffered
//!   beyond the limit; the connection is answered with a JSON-RPC error (`-32600`) and closed
//!   with code `1009`. Other connections are not affected.
//! - **Keep-alive**: pings are answered; a connection that sends nothing (not even a ping) for
//!   [`WsConfig::idle_timeout`] (default 60 s) is closed. Clients ping at least every 30 s.
//!
//! # Examples
//!
//! ```no_run
//! use mcpl_server::Server;
//! use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
//!
//! # async fn run() -> std::io::Result<()> {
//! let server = Server::builder("demo", "1.0.0").build();
//! let app = WebSocketEndpoint::new(server, WsConfig::new()).into_router("/ws");
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! mcpl_server::ws::serve(listener, app).await
//! # }
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{self, CloseFrame, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::{SinkExt, StreamExt, future};
use mcpl_core::Error;
use mcpl_core::transport::DEFAULT_MAX_MESSAGE_SIZE;
use mcpl_core::transport::framed::{CloseCode, FramedTransport, Inbound, Outbound};
use tokio_tungstenite::tungstenite;

use crate::http::ConnectionConfig;
use crate::http::guard::{OriginRules, check_host_and_origin};
use crate::http::head::Head;
use crate::http::serving::ConnectionSlot;
use crate::http::{RefusalKind, Refusals};
use crate::principal::AccessToken;
use crate::server::Server;
use crate::session::Session;
use tracing::Instrument as _;

/// Serves `router` on `listener`, with `TCP_NODELAY` on every connection: the same as
/// [`crate::http::serve`], named here for WebSocket apps.
pub use crate::http::serve;

/// Serves `router` on `listener` under a [`ConnectionConfig`]: the same as
/// [`crate::http::serve_with`], named here for WebSocket apps. Give the endpoint the same
/// value ([`WsConfig::connections`]) so its connections close on the same shutdown signal.
pub use crate::http::serve_with;

/// The subprotocol the endpoint selects when a client offers it (`Sec-WebSocket-Protocol:
/// mcp`). Clients need not offer it.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::ws::SUBPROTOCOL, "mcp");
/// ```
pub const SUBPROTOCOL: &str = "mcp";

/// Settings of the WebSocket endpoint.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use mcpl_server::ws::WsConfig;
///
/// let config = WsConfig::new()
///     .max_message_size(1024 * 1024)
///     .allowed_hosts(["localhost", "mcp.example.com"])
///     .allowed_origins(["https://app.example.com"])
///     .idle_timeout(Some(Duration::from_secs(120)));
/// # drop(config);
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct WsConfig {
    hosts: OriginRules,
    max_message_size: usize,
    idle_timeout: Option<Duration>,
    ping_every: Option<Duration>,
    max_connections: usize,
    connections: ConnectionConfig,
}

impl Default for WsConfig {
    fn default() -> Self {
        WsConfig {
            hosts: OriginRules::default(),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            idle_timeout: Some(Duration::from_secs(60)),
            ping_every: None,
            max_connections: 10_000,
            connections: ConnectionConfig::default(),
        }
    }
}

impl WsConfig {
    /// The default settings: messages up to 4 MiB, local `Host`s only, no other `Origin`,
    /// idle connections closed after 60 s, no server pings, at most 10 000 connections.
    ///
    /// # Examples
    ///
    /// With the defaults, a local client connects while a request naming another host (a
    /// DNS-rebinding attack) is refused before the upgrade:
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    /// use tokio_tungstenite::tungstenite::{self, client::IntoClientRequest};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let endpoint = WebSocketEndpoint::new(Server::builder("s", "1").build(), WsConfig::new());
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let addr = listener.local_addr()?;
    /// tokio::spawn(mcpl_server::ws::serve(listener, endpoint.into_router("/ws")));
    ///
    /// let local = tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await;
    /// assert!(local.is_ok());
    /// let mut rebound = format!("ws://{addr}/ws").into_client_request()?;
    /// rebound.headers_mut().insert("host", "attacker.example".parse()?);
    /// match tokio_tungstenite::connect_async(rebound).await {
    ///     Err(tungstenite::Error::Http(response)) => assert_eq!(response.status(), 403),
    ///     other => panic!("not refused: {other:?}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The largest message accepted, in bytes; a larger one ends its connection (close code
    /// `1009`). Default: 4 MiB.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_server::ws::WsConfig::new().max_message_size(64 * 1024);
    /// # drop(config);
    /// ```
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes.max(1);
        self
    }

    /// The host names (without port) the `Host` header may carry; others get `403`. This is the
    /// DNS-rebinding protection. Default: `localhost`, `127.0.0.1`, `[::1]`.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_server::ws::WsConfig::new().allowed_hosts(["mcp.example.com"]);
    /// # drop(config);
    /// ```
    pub fn allowed_hosts<I: IntoIterator<Item = S>, S: Into<String>>(mut self, hosts: I) -> Self {
        self.hosts.allow_hosts(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Accepts any `Host` header. Only for servers behind a proxy that checks it.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_server::ws::WsConfig::new().allow_any_host();
    /// # drop(config);
    /// ```
    pub fn allow_any_host(mut self) -> Self {
        self.hosts.allow_any_host();
        self
    }

    /// Origins (`scheme://host[:port]`) allowed besides those on an allowed host. A request with
    /// another `Origin` gets `403`. Requests without `Origin` (non-browser clients) pass.
    /// Default: none.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_server::ws::WsConfig::new().allowed_origins(["https://app.example.com"]);
    /// # drop(config);
    /// ```
    pub fn allowed_origins<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        origins: I,
    ) -> Self {
        self.hosts.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Closes a connection after this long without any frame from the client. `None` never
    /// does. Default: 60 s.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_server::ws::WsConfig::new().idle_timeout(Some(std::time::Duration::from_secs(90)));
    /// # drop(config);
    /// ```
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Pings every client at this period. Clients ping the server, so this is rarely needed;
    /// it keeps connections through proxies that drop one-sided traffic. Default: `None`.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_server::ws::WsConfig::new().ping_every(Some(std::time::Duration::from_secs(30)));
    /// # drop(config);
    /// ```
    pub fn ping_every(mut self, period: Option<Duration>) -> Self {
        self.ping_every = period;
        self
    }

    /// The most open connections; an upgrade beyond it gets `503`. Default: 10 000.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_server::ws::WsConfig::new().max_connections(100);
    /// # drop(config);
    /// ```
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max;
        self
    }

    /// The [`ConnectionConfig`] the endpoint follows: its shutdown signal closes every
    /// connection (after its in-flight requests finish, within the grace period), and its
    /// [`Refusals`] count the upgrades refused. Serving the endpoint's router with
    /// [`serve_with`], pass the same value there. Default: [`ConnectionConfig::default`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::ConnectionConfig;
    /// use tokio_util::sync::CancellationToken;
    ///
    /// let shutdown = CancellationToken::new();
    /// let connections = ConnectionConfig::new().shutdown_on(shutdown.clone());
    /// let config = mcpl_server::ws::WsConfig::new().connections(connections);
    /// # drop(config);
    /// ```
    pub fn connections(mut self, connections: ConnectionConfig) -> Self {
        self.connections = connections;
        self
    }
}

/// The WebSocket endpoint of a [`Server`]: every connection is served as its own session.
///
/// # Examples
///
/// Mounted next to an application's own routes and served on an ephemeral port:
///
/// ```
/// use mcpl_server::Server;
/// use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let endpoint = WebSocketEndpoint::new(Server::builder("demo", "1.0.0").build(), WsConfig::new());
/// let app = axum::Router::new()
///     .route("/health", axum::routing::get(|| async { "ok" }))
///     .merge(endpoint.clone().into_router("/ws"));
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// tokio::spawn(mcpl_server::ws::serve(listener, app));
/// assert_eq!(endpoint.connection_count(), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct WebSocketEndpoint {
    server: Server,
    config: Arc<WsConfig>,
    connections: Arc<AtomicUsize>,
    on_session: Option<Arc<dyn Fn(Session) + Send + Sync>>,
}

impl std::fmt::Debug for WebSocketEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSocketEndpoint")
            .field("server", &self.server)
            .field("config", &self.config)
            .field("connections", &self.connection_count())
            .field("on_session", &self.on_session.is_some())
            .finish()
    }
}

impl WebSocketEndpoint {
    /// The endpoint of `server` with `config`.
    ///
    /// # Examples
    ///
    /// A client connects and initializes a session, one JSON-RPC message per text frame:
    ///
    /// ```
    /// use futures::{SinkExt, StreamExt};
    /// use tokio_tungstenite::tungstenite::Message;
    /// use mcpl_server::Server;
    /// use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = Server::builder("ws-demo", "1.0.0").build();
    /// let endpoint = WebSocketEndpoint::new(server, WsConfig::new().max_message_size(1 << 20));
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let addr = listener.local_addr()?;
    /// tokio::spawn(mcpl_server::ws::serve(listener, endpoint.into_router("/ws")));
    ///
    /// let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await?;
    /// let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{
    ///     "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
    /// ws.send(Message::text(init)).await?;
    /// let reply = loop {
    ///     match ws.next().await {
    ///         Some(Ok(Message::Text(text))) => break serde_json::from_str::<serde_json::Value>(&text)?,
    ///         Some(Ok(_)) => continue, // pings
    ///         other => panic!("connection ended: {other:?}"),
    ///     }
    /// };
    /// assert_eq!(reply["result"]["serverInfo"]["name"], "ws-demo");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn new(server: Server, config: WsConfig) -> Self {
        WebSocketEndpoint {
            server,
            config: Arc::new(config),
            connections: Arc::new(AtomicUsize::new(0)),
            on_session: None,
        }
    }

    /// Calls `hook` with the [`Session`] of every new connection, as soon as it is served
    /// (before its `initialize`). Through [`Session::peer`] the application sends the client
    /// requests and notifications of its own, at any time: what MCPL servers do (push events,
    /// inference requests). [`Session::closed`] tells when the connection ended.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    ///
    /// let endpoint = WebSocketEndpoint::new(Server::builder("s", "1").build(), WsConfig::new())
    ///     .on_session(|session| {
    ///         tokio::spawn(async move {
    ///             session.closed().await;
    ///             tracing::info!("a websocket session ended");
    ///         });
    ///     });
    /// # drop(endpoint);
    /// ```
    pub fn on_session(mut self, hook: impl Fn(Session) + Send + Sync + 'static) -> Self {
        self.on_session = Some(Arc::new(hook));
        self
    }

    /// An axum router serving the endpoint at `path` (`GET` only).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    ///
    /// let ws = WebSocketEndpoint::new(Server::builder("s", "1").build(), WsConfig::new()).into_router("/ws");
    /// let app = axum::Router::new().nest("/api", ws); // served at /api/ws
    /// # drop(app);
    /// ```
    pub fn into_router(self, path: &str) -> Router {
        Router::new().route(path, get(upgrade)).with_state(self)
    }

    /// The number of open connections.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures::{SinkExt, StreamExt};
    /// use tokio_tungstenite::tungstenite::Message;
    /// use mcpl_server::Server;
    /// use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let endpoint = WebSocketEndpoint::new(Server::builder("s", "1").build(), WsConfig::new());
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let addr = listener.local_addr()?;
    /// tokio::spawn(mcpl_server::ws::serve(listener, endpoint.clone().into_router("/ws")));
    /// assert_eq!(endpoint.connection_count(), 0);
    ///
    /// let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await?;
    /// assert_eq!(endpoint.connection_count(), 1, "counted from the upgrade on");
    /// ws.close(None).await?;
    /// while ws.next().await.is_some() {} // until the server closes its side
    /// // The count drops once the server has finished the connection (the timeout only guards
    /// // against a hang).
    /// tokio::time::timeout(Duration::from_secs(30), async {
    ///     while endpoint.connection_count() != 0 {
    ///         tokio::time::sleep(Duration::from_millis(10)).await;
    ///     }
    /// })
    /// .await?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn connection_count(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// The refusals counted so far (those of [`WsConfig::connections`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    ///
    /// let endpoint = WebSocketEndpoint::new(Server::builder("s", "1").build(), WsConfig::new());
    /// assert_eq!(endpoint.refusals().total(), 0);
    /// ```
    pub fn refusals(&self) -> &Refusals {
        &self.config.connections.refusals
    }
}

async fn upgrade(
    State(endpoint): State<WebSocketEndpoint>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let peer = extensions.get::<ConnectInfo<SocketAddr>>().map(|p| p.0);
    let refusals = endpoint.refusals();
    if let Err(refusal) = check_host_and_origin(&endpoint.config.hosts, &Head::read(&headers)) {
        let kind = match refusal.status {
            StatusCode::FORBIDDEN => RefusalKind::Forbidden,
            _ => RefusalKind::BadRequest,
        };
        refusals.record(kind, peer, &refusal.message);
        return (refusal.status, refusal.message).into_response();
    }
    if endpoint.config.connections.shutdown.is_fired() {
        refusals.record(RefusalKind::ShuttingDown, peer, "websocket upgrade while shutting down");
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down").into_response();
    }
    let upgrade = match upgrade {
        Ok(upgrade) => upgrade,
        Err(rejection) => {
            refusals.record(RefusalKind::BadRequest, peer, &rejection.body_text());
            return rejection.into_response();
        }
    };
    let Some(slot) = ConnectionSlot::take(&endpoint.connections, endpoint.config.max_connections)
    else {
        refusals.record(RefusalKind::ConnectionLimit, peer, "websocket connection cap reached");
        return (StatusCode::SERVICE_UNAVAILABLE, "too many connections").into_response();
    };
    // The token a protecting layer verified (see `http::auth::BearerAuth`) is the connection's.
    let token = extensions.get::<AccessToken>().cloned().map(Arc::new);
    let max = endpoint.config.max_message_size;
    // Counted until served, for the listener's shutdown to wait for.
    let upgraded = ConnectionSlot::take(&endpoint.config.connections.upgraded, usize::MAX);
    upgrade
        .max_message_size(max)
        .max_frame_size(max)
        .protocols([SUBPROTOCOL])
        .on_failed_upgrade(|e| tracing::debug!(error = %e, "websocket upgrade failed"))
        .on_upgrade(move |socket| {
            // The connection's requests are served in spans under this one.
            let span = tracing::debug_span!(
                target: "mcpl_server::trace",
                "mcp.ws",
                "client.address" = peer.map(|p| tracing::field::display(p.ip())),
                "client.port" = peer.map(|p| p.port()),
            );
            async move {
                serve_socket(&endpoint, socket, peer, token).await;
                drop((slot, upgraded));
            }
            .instrument(span)
        })
}

/// Serves one upgraded connection until it ends.
async fn serve_socket(
    endpoint: &WebSocketEndpoint,
    socket: WebSocket,
    peer: Option<SocketAddr>,
    token: Option<Arc<AccessToken>>,
) {
    let config = &endpoint.config;
    let transport = framed(socket)
        .max_message_size(config.max_message_size)
        .idle_timeout(config.idle_timeout)
        .ping_every(config.ping_every);
    let close_code = transport.close_code_handle();
    let engine = endpoint.server.engine();
    config.connections.refusals.count_engine(&engine, peer);
    match endpoint.server.serve_as(engine, transport, token).await {
        Ok(session) => {
            tracing::debug!("websocket connection open");
            if let Some(hook) = &endpoint.on_session {
                hook(session.clone());
            }
            let connections = &config.connections;
            tokio::select! {
                () = session.closed() => {}
                () = connections.shutdown.fired() => {
                    crate::session::drain(session.peer(), connections.shutdown_grace).await;
                    // The client may reconnect, to another instance: going away (1001).
                    close_code.set(CloseCode::GoingAway);
                    if let Err(e) = session.close().await {
                        tracing::debug!(error = %e, "closing a websocket connection at shutdown failed");
                    }
                    endpoint.server.inner.tasks.shutdown().await;
                }
            }
            tracing::debug!("websocket connection closed");
        }
        Err(e) => tracing::debug!(error = %e, "websocket connection could not start"),
    }
}

/// The framed transport over an axum WebSocket.
fn framed(socket: WebSocket) -> FramedTransport {
    let (sink, stream) = socket.split();
    let stream = stream.map(|item| match item {
        Ok(ws::Message::Text(text)) => Ok(Inbound::Text(text.as_str().to_owned())),
        Ok(ws::Message::Binary(_) | ws::Message::Ping(_) | ws::Message::Pong(_)) => {
            Ok(Inbound::Other)
        }
        Ok(ws::Message::Close(frame)) => Ok(match frame {
            Some(CloseFrame { code, reason }) => {
                Inbound::Closed { code: Some(code), reason: reason.as_str().to_owned() }
            }
            None => Inbound::Closed { code: None, reason: String::new() },
        }),
        Err(e) => inbound_error(e),
    });
    let sink = sink.sink_map_err(|e| Error::transport("websocket send failed", e)).with(
        |out: Outbound| {
            future::ready(Ok::<_, Error>(match out {
                Outbound::Text(text) => ws::Message::Text(text.into()),
                Outbound::Ping => ws::Message::Ping(bytes::Bytes::new()),
                Outbound::Close(code) => ws::Message::Close(Some(CloseFrame {
                    code: code.code(),
                    reason: code.reason().into(),
                })),
            }))
        },
    );
    FramedTransport::new(stream, sink)
}

/// A read error: over the size cap is [`Inbound::TooLarge`], anything else a transport error.
fn inbound_error(e: axum::Error) -> mcpl_core::Result<Inbound> {
    let inner = e.into_inner();
    match inner.downcast_ref::<tungstenite::Error>() {
        Some(tungstenite::Error::Capacity(_)) => Ok(Inbound::TooLarge),
        _ => Err(Error::transport("websocket receive failed", inner)),
    }
}
