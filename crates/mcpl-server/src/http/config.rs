//! [`HttpConfig`]: the settings of the Streamable HTTP endpoint.

use std::time::Duration;

use super::guard::OriginRules;
use super::serving::ConnectionConfig;

/// The default request body limit: 4 MiB.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::http::DEFAULT_MAX_BODY, 4 * 1024 * 1024);
/// ```
pub const DEFAULT_MAX_BODY: usize = 4 * 1024 * 1024;

/// Settings of the Streamable HTTP endpoint.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use mcpl_server::http::HttpConfig;
///
/// let config = HttpConfig::new()
///     .max_body(1024 * 1024)
///     .allowed_hosts(["localhost", "mcp.example.com"])
///     .allowed_origins(["https://app.example.com"])
///     .keep_alive(Duration::from_secs(10));
/// # drop(config);
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct HttpConfig {
    pub(crate) max_body: usize,
    pub(crate) hosts: OriginRules,
    pub(crate) json_response: bool,
    pub(crate) keep_alive: Duration,
    pub(crate) retry: Duration,
    pub(crate) session_idle_timeout: Duration,
    pub(crate) handshake_timeout: Duration,
    pub(crate) max_sessions: usize,
    pub(crate) cache_ttl: Duration,
    pub(crate) connections: ConnectionConfig,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            max_body: DEFAULT_MAX_BODY,
            hosts: OriginRules::default(),
            json_response: false,
            keep_alive: Duration::from_secs(15),
            retry: Duration::from_secs(1),
            session_idle_timeout: Duration::from_secs(30 * 60),
            handshake_timeout: Duration::from_secs(10),
            max_sessions: 10_000,
            cache_ttl: Duration::ZERO,
            connections: ConnectionConfig::default(),
        }
    }
}

impl HttpConfig {
    /// The default settings.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_server::http::HttpConfig::new();
    /// # drop(config);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The largest request body accepted; larger ones get `413`. Default: 4 MiB.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_server::http::HttpConfig::new().max_body(64 * 1024);
    /// # drop(config);
    /// ```
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// The host names (without port) the `Host` header may carry; others get `403`. This is the
    /// DNS-rebinding protection. Default: `localhost`, `127.0.0.1`, `[::1]`.
    ///
    /// Whatever the list, a `Host` that is not a valid authority (`host[:port]`, no userinfo,
    /// a port of at most 65535), and a request with more than one `Host`, get `400`; an
    /// `Origin` that is not exactly `http(s)://host[:port]`, or more than one, gets `403`.
    ///
    /// # Examples
    ///
    /// ```
    /// // Behind a reverse proxy that forwards `Host: mcp.example.com`.
    /// let config = mcpl_server::http::HttpConfig::new().allowed_hosts(["mcp.example.com"]);
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
    /// let config = mcpl_server::http::HttpConfig::new().allow_any_host();
    /// # drop(config);
    /// ```
    pub fn allow_any_host(mut self) -> Self {
        self.hosts.allow_any_host();
        self
    }

    /// Origins (`scheme://host[:port]`) allowed besides those on an allowed host. Requests with
    /// another `Origin` get `403`. Default: none.
    ///
    /// This allow-list and CORS are two halves of serving a browser app on another origin. The
    /// allow-list is the endpoint's defence (against DNS rebinding and cross-site requests): a
    /// request from an origin not on it is refused whatever the browser does. CORS is what lets
    /// the browser send those requests and read the answers at all: the endpoint does not
    /// answer preflights or add `Access-Control-*` headers itself, so add a CORS layer for the
    /// same origins (and expose `Mcp-Session-Id`, which 2025 clients read).
    ///
    /// # Examples
    ///
    /// ```
    /// use axum::http::{HeaderName, HeaderValue, Method};
    /// use mcpl_server::Server;
    /// use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// use tower_http::cors::{Any, CorsLayer};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// const APP: &str = "https://app.example.com";
    /// let config = HttpConfig::new().allowed_origins([APP]);
    /// let cors = CorsLayer::new()
    ///     .allow_origin(HeaderValue::from_static(APP))
    ///     .allow_methods([Method::GET, Method::POST, Method::DELETE])
    ///     .allow_headers(Any)
    ///     .expose_headers([HeaderName::from_static("mcp-session-id")]);
    /// let app = StreamableHttp::new(Server::builder("demo", "1.0.0").build(), config)
    ///     .into_router("/mcp")
    ///     .layer(cors);
    /// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// # let url = format!("http://{}/mcp", listener.local_addr()?);
    /// # tokio::spawn(mcpl_server::http::serve(listener, app));
    /// # let http = reqwest::Client::new();
    ///
    /// // The browser's preflight from the app is answered by the CORS layer...
    /// let preflight = http
    ///     .request(reqwest::Method::OPTIONS, &url)
    ///     .header("Origin", APP)
    ///     .header("Access-Control-Request-Method", "POST")
    ///     .send()
    ///     .await?;
    /// assert_eq!(preflight.headers()["access-control-allow-origin"], APP);
    ///
    /// // ...and a request from an origin on neither list is refused by the endpoint.
    /// let forged = http
    ///     .post(&url)
    ///     .header("Origin", "https://evil.example")
    ///     .header("Content-Type", "application/json")
    ///     .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
    ///     .send()
    ///     .await?;
    /// assert_eq!(forged.status(), 403);
    /// # Ok(()) }
    /// ```
    pub fn allowed_origins<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        origins: I,
    ) -> Self {
        self.hosts.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Answer requests with a single JSON body instead of an SSE stream. Related
    /// notifications then go to the session's GET stream. Default: `false` (SSE).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_server::http::HttpConfig::new().json_response(true);
    /// # drop(config);
    /// ```
    pub fn json_response(mut self, json: bool) -> Self {
        self.json_response = json;
        self
    }

    /// How often idle SSE streams get a keep-alive comment. Default: 15 s.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_server::http::HttpConfig::new().keep_alive(std::time::Duration::from_secs(30));
    /// # drop(config);
    /// ```
    pub fn keep_alive(mut self, every: Duration) -> Self {
        self.keep_alive = every;
        self
    }

    /// The reconnection delay advised to clients in SSE `retry` fields. Default: 1 s.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_server::http::HttpConfig::new().retry(std::time::Duration::from_millis(500));
    /// # drop(config);
    /// ```
    pub fn retry(mut self, delay: Duration) -> Self {
        self.retry = delay;
        self
    }

    /// How long a session may go unused before it is closed. A session with a request in
    /// flight, or with a client connected to one of its SSE streams, is in use however long
    /// that lasts. Default: 30 minutes.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_server::http::HttpConfig::new()
    ///     .session_idle_timeout(std::time::Duration::from_secs(5 * 60));
    /// # drop(config);
    /// ```
    pub fn session_idle_timeout(mut self, timeout: Duration) -> Self {
        self.session_idle_timeout = timeout;
        self
    }

    /// How long a new session may take to finish its handshake (`initialize`, then
    /// `notifications/initialized`) before it is closed, so that sessions opened and left
    /// hold no slot for long. Default: 10 s.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_server::http::HttpConfig::new()
    ///     .handshake_timeout(std::time::Duration::from_secs(30));
    /// # drop(config);
    /// ```
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// The `ttlMs` put on stateless-era list, read and discover results that set none
    /// themselves and have no hint set with
    /// [`ServerBuilder::cache_hint`](crate::ServerBuilder::cache_hint) (see [`crate::cache`]).
    /// Default: 0 (clients re-fetch each time).
    ///
    /// # Examples
    ///
    /// ```
    /// // Clients may reuse list, read and discover results for a minute unless told otherwise.
    /// let config = mcpl_server::http::HttpConfig::new().cache_ttl(std::time::Duration::from_secs(60));
    /// # drop(config);
    /// ```
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = ttl;
        self
    }

    /// The most live sessions. At the cap, a new session takes the place of an idle one
    /// (one that never finished its handshake first, then the least recently used); with
    /// none idle, `initialize` gets `503` with `Retry-After`. Default: 10 000.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_server::http::HttpConfig::new().max_sessions(100);
    /// # drop(config);
    /// ```
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max;
        self
    }

    /// How connections are accepted, timed, capped and shut down ([`ConnectionConfig`]): used
    /// by [`StreamableHttp::serve_at`](super::StreamableHttp::serve_at) for its listener, and
    /// by the endpoint itself for the body deadline, the shutdown signal (which ends its SSE
    /// streams and sessions) and where refusals are counted. Serving the endpoint's router
    /// with [`serve_with`](super::serve_with), pass the same value there. Default:
    /// [`ConnectionConfig::default`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::{ConnectionConfig, HttpConfig};
    ///
    /// let config = HttpConfig::new().connections(ConnectionConfig::new().max_connections(256));
    /// # drop(config);
    /// ```
    pub fn connections(mut self, connections: ConnectionConfig) -> Self {
        self.connections = connections;
        self
    }
}
