//! WebSocket, the client side: `ws://`, `wss://` and `mcpl://` servers.
//!
//! One JSON-RPC message travels per text frame (never split on newlines, so a server may
//! pretty-print); binary frames are ignored; the connection is the session, so a reconnect is
//! a new transport and a new `initialize`. The transport pings the server every 30 s and gives
//! up on a connection that was silent for 60 s (pongs count), both configurable. Messages over
//! the size limit (default 4 MiB) are never buffered beyond it. See
//! [`mcpl_core::transport::framed`] for the exact framing rules.
//!
//! `mcpl://` URIs are resolved per MCPL RFC-004 (see [`McplUri`]): always TLS, port 443 by
//! default. `wss://` and `mcpl://` need the `tls` feature (on by default): rustls with the
//! Mozilla root certificates, or a [`rustls::ClientConfig`] of your own.
//!
//! # Examples
//!
//! ```no_run
//! use mcpl_client::Client;
//! use mcpl_client::transport::WebSocketTransport;
//!
//! # async fn run() -> mcpl_core::Result<()> {
//! let transport = WebSocketTransport::new("mcpl://mcp.example.com/agent")
//!     .header("authorization", "Bearer 3xampl3");
//! let client = Client::new("my-host", "1.0.0");
//! client.connect(transport).await?;
//! # Ok(()) }
//! ```

use std::time::Duration;

use futures::{SinkExt, StreamExt, future};
use mcpl_core::transport::framed::{
    FramedReceiver, FramedSender, FramedTransport, Inbound, Outbound,
};
use mcpl_core::transport::{DEFAULT_MAX_MESSAGE_SIZE, Transport};
use mcpl_core::{Error, Result};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{self, Message};
use url::Url;

use super::mcpl_uri::McplUri;

/// How often the client pings by default: 30 s.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use mcpl_client::transport::WebSocketTransport;
/// use mcpl_client::transport::ws::DEFAULT_PING_INTERVAL;
///
/// assert_eq!(DEFAULT_PING_INTERVAL, Duration::from_secs(30));
/// // Behind a proxy that drops connections idle for 20 s: ping more often.
/// let transport = WebSocketTransport::new("ws://127.0.0.1:8080/ws")
///     .ping_every(Some(DEFAULT_PING_INTERVAL / 3));
/// # drop(transport);
/// ```
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(30);
/// How long a silent connection lives by default: 60 s.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use mcpl_client::transport::ws::{DEFAULT_IDLE_TIMEOUT, DEFAULT_PING_INTERVAL};
///
/// assert_eq!(DEFAULT_IDLE_TIMEOUT, Duration::from_secs(60));
/// // Two pings go unanswered before a connection counts as dead.
/// assert_eq!(DEFAULT_IDLE_TIMEOUT, 2 * DEFAULT_PING_INTERVAL);
/// ```
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long opening the connection (TCP, TLS, upgrade) may take by default: 30 s.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use mcpl_client::transport::WebSocketTransport;
/// use mcpl_client::transport::ws::DEFAULT_CONNECT_TIMEOUT;
///
/// assert_eq!(DEFAULT_CONNECT_TIMEOUT, Duration::from_secs(30));
/// let impatient = WebSocketTransport::new("wss://mcp.example.com/ws")
///     .connect_timeout(DEFAULT_CONNECT_TIMEOUT / 6);
/// # drop(impatient);
/// ```
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A WebSocket connection to a server, not yet opened. See the [module documentation](self).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use mcpl_client::transport::WebSocketTransport;
/// use mcpl_core::Transport;
///
/// let transport = WebSocketTransport::new("mcpl://Example.COM:443/agent")
///     .header("authorization", "Bearer token")
///     .max_message_size(1024 * 1024)
///     .ping_every(Some(Duration::from_secs(20)));
/// // The identity of an mcpl:// server is its canonical URI.
/// assert_eq!(transport.endpoint().as_deref(), Some("mcpl://example.com/agent"));
/// ```
#[derive(Clone)]
#[must_use]
pub struct WebSocketTransport {
    url: String,
    headers: Vec<(String, String)>,
    subprotocols: Vec<String>,
    max_message_size: usize,
    ping_every: Option<Duration>,
    idle_timeout: Option<Duration>,
    connect_timeout: Duration,
    #[cfg(feature = "rustls")]
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
}

impl std::fmt::Debug for WebSocketTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values may be credentials: only their names are shown.
        let headers: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("WebSocketTransport")
            .field("url", &super::redacted_url(&self.url))
            .field("headers", &headers)
            .field("subprotocols", &self.subprotocols)
            .field("max_message_size", &self.max_message_size)
            .field("ping_every", &self.ping_every)
            .field("idle_timeout", &self.idle_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}

/// Where the transport connects, once the configured address is understood.
enum Target {
    Plain(Url),
    #[cfg_attr(not(any(feature = "rustls", feature = "native-tls")), allow(dead_code))]
    Tls(Url),
}

impl WebSocketTransport {
    /// A transport to `url`: `ws://`, `wss://` or `mcpl://`. The address is checked when the
    /// transport starts.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::transport::WebSocketTransport;
    /// use mcpl_core::types::ContentBlock;
    /// use mcpl_core::{ErrorKind, Transport};
    /// use serde_json::json;
    /// # use mcpl_test_kit::http::serve_ws;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let url = serve_ws().await?; // ws://127.0.0.1:<port>/ws
    /// let client = Client::new("my-app", "1.0.0");
    /// client.connect(WebSocketTransport::new(url)).await?;
    /// let result = client.call_tool("echo", json!({"text": "over a socket"})).await?;
    /// assert_eq!(result.content, [ContentBlock::text("over a socket")]);
    ///
    /// // The address is checked when the transport starts, before anything is dialled.
    /// let err = WebSocketTransport::new("http://example.com/ws").start().await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::Transport);
    /// assert!(err.to_string().contains("invalid websocket address"));
    /// # Ok(()) }
    /// ```
    pub fn new(url: impl Into<String>) -> Self {
        WebSocketTransport {
            url: url.into(),
            headers: Vec::new(),
            subprotocols: Vec::new(),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            ping_every: Some(DEFAULT_PING_INTERVAL),
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            #[cfg(feature = "rustls")]
            tls: None,
        }
    }

    /// A transport to a resolved `mcpl://` URI.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::{McplUri, WebSocketTransport};
    ///
    /// let uri: McplUri = "mcpl://example.com/x".parse()?;
    /// let transport = WebSocketTransport::mcpl(&uri);
    /// # drop(transport);
    /// # Ok::<(), mcpl_client::transport::McplUriError>(())
    /// ```
    pub fn mcpl(uri: &McplUri) -> Self {
        Self::new(uri.canonical())
    }

    /// Adds a header to the upgrade request (for example `Authorization`). Invalid names or
    /// values fail the start of the transport.
    ///
    /// # Examples
    ///
    /// ```
    /// use axum::http::StatusCode;
    /// use axum::response::IntoResponse;
    /// use mcpl_client::Client;
    /// use mcpl_client::transport::WebSocketTransport;
    /// use mcpl_core::ErrorKind;
    /// use mcpl_server::Server;
    /// use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // A server that wants a bearer token on the upgrade request.
    /// let app = WebSocketEndpoint::new(Server::builder("s", "1").build(), WsConfig::new())
    ///     .into_router("/ws")
    ///     .layer(axum::middleware::from_fn(
    ///         |request: axum::extract::Request, next: axum::middleware::Next| async move {
    ///             let authorized = request.headers().get("authorization");
    ///             if authorized.is_some_and(|value| value == "Bearer 3xampl3") {
    ///                 next.run(request).await
    ///             } else {
    ///                 StatusCode::UNAUTHORIZED.into_response()
    ///             }
    ///         },
    ///     ));
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let url = format!("ws://{}/ws", listener.local_addr()?);
    /// tokio::spawn(mcpl_server::ws::serve(listener, app));
    ///
    /// let client = Client::new("my-app", "1.0.0");
    /// let refused = client.connect(WebSocketTransport::new(url.clone())).await.unwrap_err();
    /// // The refusal is the upgrade's HTTP status.
    /// assert_eq!(refused.kind(), ErrorKind::HttpStatus);
    /// assert!(matches!(refused, mcpl_core::Error::HttpStatus { status: 401, .. }));
    /// client.connect(WebSocketTransport::new(url).header("authorization", "Bearer 3xampl3")).await?;
    /// client.ping().await?;
    /// # Ok(()) }
    /// ```
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Offers a subprotocol (`Sec-WebSocket-Protocol`), such as `"mcp"`. The server must then
    /// select one of those offered. Default: none offered.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::transport::WebSocketTransport;
    /// # use mcpl_test_kit::http::serve_ws;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let url = serve_ws().await?;
    /// // An mcpl-server selects "mcp" when it is offered.
    /// let transport = WebSocketTransport::new(url).subprotocol(mcpl_server::ws::SUBPROTOCOL);
    /// let client = Client::new("my-app", "1.0.0");
    /// client.connect(transport).await?;
    /// client.ping().await?;
    /// # Ok(()) }
    /// ```
    pub fn subprotocol(mut self, protocol: impl Into<String>) -> Self {
        self.subprotocols.push(protocol.into());
        self
    }

    /// The largest message accepted from the server, in bytes; a larger one ends the
    /// connection. Default: 4 MiB.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::transport::WebSocketTransport;
    /// use mcpl_core::ErrorKind;
    /// # use mcpl_test_kit::http::serve_ws;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let url = serve_ws().await?;
    /// let client = Client::new("my-app", "1.0.0");
    /// client.connect(WebSocketTransport::new(url).max_message_size(16 * 1024)).await?;
    ///
    /// // The `big` tool answers 64 KiB: over the limit, which ends the connection.
    /// let err = client.call_tool("big", ()).await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::ConnectionClosed);
    /// # Ok(()) }
    /// ```
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes.max(1);
        self
    }

    /// How often to ping the server; `None` never does. Default: 30 s.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::transport::WebSocketTransport;
    /// # use mcpl_test_kit::http::serve_ws;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let url = serve_ws().await?;
    /// // Keep the connection warm through proxies that drop idle ones after 20 s.
    /// let transport = WebSocketTransport::new(url).ping_every(Some(Duration::from_secs(10)));
    /// let client = Client::new("my-app", "1.0.0");
    /// client.connect(transport).await?;
    /// client.ping().await?;
    /// # Ok(()) }
    /// ```
    pub fn ping_every(mut self, period: Option<Duration>) -> Self {
        self.ping_every = period;
        self
    }

    /// Ends the connection after this long without any frame from the server (pongs
    /// included); `None` never does. Default: 60 s.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::transport::WebSocketTransport;
    /// # use mcpl_test_kit::http::serve_ws;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let url = serve_ws().await?; // a server that never pings
    /// // No pings of our own (whose pongs would count), and little patience.
    /// let transport =
    ///     WebSocketTransport::new(url).ping_every(None).idle_timeout(Some(Duration::from_secs(1)));
    /// let client = Client::new("my-app", "1.0.0");
    /// client.connect(transport).await?;
    ///
    /// // After a second of silence the client leaves the connection.
    /// tokio::time::timeout(Duration::from_secs(30), client.closed()).await?;
    /// assert!(!client.is_connected());
    /// # Ok(()) }
    /// ```
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// How long opening the connection may take. Default: 30 s.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use mcpl_client::transport::WebSocketTransport;
    /// use mcpl_core::{ErrorKind, Transport};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // A listener that takes TCP connections but never answers the upgrade.
    /// let stuck = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let url = format!("ws://{}/ws", stuck.local_addr()?);
    ///
    /// let transport = WebSocketTransport::new(url).connect_timeout(Duration::from_millis(200));
    /// let err = transport.start().await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::TransportTimeout);
    /// # drop(stuck);
    /// # Ok(()) }
    /// ```
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The TLS settings for `wss://` and `mcpl://` (for example to trust a private CA, see
    /// [`tls::config_with_roots`](super::tls::config_with_roots)). Default:
    /// [`tls::default_config`](super::tls::default_config), rustls with the Mozilla root
    /// certificates.
    ///
    /// # Examples
    ///
    /// Trusting a private certificate authority (here a self-signed certificate made on the spot):
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::transport::WebSocketTransport;
    /// use rustls::RootCertStore;
    /// # struct TlsListener { tcp: tokio::net::TcpListener, acceptor: tokio_rustls::TlsAcceptor }
    /// # impl axum::serve::Listener for TlsListener {
    /// #     type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    /// #     type Addr = std::net::SocketAddr;
    /// #     async fn accept(&mut self) -> (Self::Io, Self::Addr) {
    /// #         loop {
    /// #             let Ok((tcp, addr)) = self.tcp.accept().await else { continue };
    /// #             if let Ok(tls) = self.acceptor.accept(tcp).await { return (tls, addr) }
    /// #         }
    /// #     }
    /// #     fn local_addr(&self) -> std::io::Result<Self::Addr> { self.tcp.local_addr() }
    /// # }
    /// # /// An MCP server over `wss://` with a self-signed certificate for `localhost`.
    /// # async fn serve_wss() -> Result<(u16, rustls::pki_types::CertificateDer<'static>), Box<dyn std::error::Error>> {
    /// #     use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
    /// #     let issued = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])?;
    /// #     let cert = issued.cert.der().clone();
    /// #     let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(issued.signing_key.serialize_der()));
    /// #     let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    /// #     let server_tls = rustls::ServerConfig::builder_with_provider(provider)
    /// #         .with_safe_default_protocol_versions()?
    /// #         .with_no_client_auth()
    /// #         .with_single_cert(vec![cert.clone()], key)?;
    /// #     let server = mcpl_server::Server::builder("private", "1.0.0").build();
    /// #     let app = mcpl_server::ws::WebSocketEndpoint::new(server, Default::default()).into_router("/ws");
    /// #     let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let port = tcp.local_addr()?.port();
    /// #     let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_tls));
    /// #     tokio::spawn(async move { axum::serve(TlsListener { tcp, acceptor }, app).await });
    /// #     Ok((port, cert))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (port, private_ca) = serve_wss().await?;
    /// let url = format!("wss://localhost:{port}/ws");
    ///
    /// let mut roots = RootCertStore::empty();
    /// roots.add(private_ca)?;
    /// let tls = mcpl_client::transport::tls::config_with_roots(roots)?;
    /// let client = Client::new("my-app", "1.0.0");
    /// let details = client.connect(WebSocketTransport::new(&url).tls_config(Arc::new(tls))).await?;
    /// assert_eq!(details.server_info.name, "private");
    ///
    /// // With the default (public) roots the certificate is not trusted.
    /// let other = Client::new("my-app", "1.0.0");
    /// assert!(other.connect(WebSocketTransport::new(&url)).await.is_err());
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "rustls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
    pub fn tls_config(mut self, config: std::sync::Arc<rustls::ClientConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    fn target(&self) -> Result<Target> {
        let invalid = |detail: String| Error::Transport {
            context: format!("invalid websocket address {:?}: {detail}", self.url),
            source: None,
        };
        let scheme = self.url.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            Some(super::mcpl_uri::SCHEME) => {
                let uri = McplUri::parse(&self.url).map_err(|e| invalid(e.to_string()))?;
                Ok(Target::Tls(uri.resolved().clone()))
            }
            Some("ws" | "wss") => {
                // As for mcpl://, an empty authority is refused before parsing: a WHATWG
                // parser reads `ws:///x` as host `x`.
                let rest = self.url.split_once(':').map_or("", |(_, rest)| rest);
                let authority = rest
                    .strip_prefix("//")
                    .map(|r| r.split(['/', '\\', '?', '#']).next().unwrap_or_default());
                if authority.is_none_or(str::is_empty) {
                    return Err(invalid("no host".into()));
                }
                let url = Url::parse(&self.url).map_err(|e| invalid(e.to_string()))?;
                if url.host_str().is_none_or(str::is_empty) {
                    return Err(invalid("no host".into()));
                }
                if url.fragment().is_some() {
                    return Err(invalid("a websocket URL has no fragment".into()));
                }
                Ok(if url.scheme() == "ws" { Target::Plain(url) } else { Target::Tls(url) })
            }
            _ => Err(invalid("the scheme must be ws, wss or mcpl".into())),
        }
    }

    fn request(&self, url: &Url) -> Result<tungstenite::handshake::client::Request> {
        let mut request = url
            .as_str()
            .into_client_request()
            .map_err(|e| Error::transport("invalid websocket request", e))?;
        let headers = request.headers_mut();
        for (name, value) in &self.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| Error::transport(format!("invalid header name {name:?}"), e))?;
            let value = HeaderValue::from_str(value)
                .map_err(|e| Error::transport(format!("invalid value of header {name}"), e))?;
            headers.append(name, value);
        }
        if !self.subprotocols.is_empty() {
            let offered = self.subprotocols.join(", ");
            let value = HeaderValue::from_str(&offered)
                .map_err(|e| Error::transport("invalid subprotocol", e))?;
            headers.insert("sec-websocket-protocol", value);
        }
        Ok(request)
    }

    /// rustls: the configured TLS settings, or the default ones (see [`super::tls`]).
    #[cfg(feature = "rustls")]
    fn connector(&self, target: &Target) -> Result<Option<tokio_tungstenite::Connector>> {
        Ok(Some(match target {
            Target::Plain(_) => tokio_tungstenite::Connector::Plain,
            Target::Tls(_) => {
                let config = match &self.tls {
                    Some(config) => config.clone(),
                    None => std::sync::Arc::new(super::tls::default_config()?),
                };
                tokio_tungstenite::Connector::Rustls(config)
            }
        }))
    }

    /// native-tls alone: tokio-tungstenite's connector with the platform's roots.
    #[cfg(all(feature = "native-tls", not(feature = "rustls")))]
    fn connector(&self, _target: &Target) -> Result<Option<tokio_tungstenite::Connector>> {
        Ok(None)
    }
}

impl Transport for WebSocketTransport {
    type Sender = FramedSender;
    type Receiver = FramedReceiver;

    async fn start(self) -> Result<(FramedSender, FramedReceiver)> {
        let target = self.target()?;
        let url = match &target {
            Target::Plain(url) | Target::Tls(url) => url.clone(),
        };
        let request = self.request(&url)?;
        let max = self.max_message_size;
        let config =
            WebSocketConfig::default().max_message_size(Some(max)).max_frame_size(Some(max));
        #[cfg(any(feature = "rustls", feature = "native-tls"))]
        let connecting = tokio_tungstenite::connect_async_tls_with_config(
            request,
            Some(config),
            true,
            self.connector(&target)?,
        );
        #[cfg(not(any(feature = "rustls", feature = "native-tls")))]
        let connecting = {
            if let Target::Tls(_) = target {
                return Err(Error::Transport {
                    context: "wss:// and mcpl:// need the `rustls` or `native-tls` feature of \
                              mcpl-client"
                        .into(),
                    source: None,
                });
            }
            tokio_tungstenite::connect_async_with_config(request, Some(config), true)
        };
        let endpoint = super::redacted_url(url.as_str());
        let (stream, _response) = tokio::time::timeout(self.connect_timeout, connecting)
            .await
            .map_err(|_| Error::TransportTimeout {
                during: format!("connecting to {endpoint}"),
                timeout: Some(self.connect_timeout),
            })?
            .map_err(|e| connect_error(&endpoint, e))?;
        tracing::debug!(%endpoint, "websocket connected");
        let endpoint = self.endpoint().unwrap_or_default();
        framed(stream)
            .max_message_size(max)
            .ping_every(self.ping_every)
            .idle_timeout(self.idle_timeout)
            .endpoint(endpoint)
            .start()
            .await
    }

    /// The canonical URI for `mcpl://`, the URL otherwise.
    fn endpoint(&self) -> Option<String> {
        match McplUri::parse(&self.url) {
            Ok(uri) => Some(uri.canonical().to_owned()),
            Err(_) => Some(Url::parse(&self.url).map_or_else(|_| self.url.clone(), String::from)),
        }
    }
}

/// The typed error of a connection to `endpoint` (a URL without credentials) that failed
/// with `e`: a refused upgrade is the HTTP status with the start of its body, a TLS failure
/// [`Error::Tls`], any other I/O failure while connecting [`Error::Connect`].
fn connect_error(endpoint: &str, e: tungstenite::Error) -> Error {
    match e {
        tungstenite::Error::Http(response) => {
            let challenge = response
                .headers()
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = response.body().as_deref().unwrap_or_default();
            Error::http_status(response.status().as_u16(), body, challenge.as_deref())
        }
        e if super::failure::is_tls(&e) => {
            Error::Tls { endpoint: endpoint.to_owned(), source: Box::new(e) }
        }
        #[cfg(any(feature = "rustls", feature = "native-tls"))]
        tungstenite::Error::Tls(e) => {
            Error::Tls { endpoint: endpoint.to_owned(), source: Box::new(e) }
        }
        tungstenite::Error::Io(e) => {
            Error::Connect { endpoint: endpoint.to_owned(), source: Box::new(e) }
        }
        tungstenite::Error::Url(e) => {
            Error::transport(format!("invalid websocket address {endpoint}"), e)
        }
        e @ (tungstenite::Error::Protocol(_) | tungstenite::Error::HttpFormat(_)) => {
            Error::ProtocolViolation {
                detail: format!("the websocket upgrade from {endpoint} is invalid"),
                source: Some(Box::new(e)),
            }
        }
        e => Error::transport(format!("websocket connect to {endpoint} failed"), e),
    }
}

/// The framed transport over a tungstenite client stream.
fn framed<S>(stream: tokio_tungstenite::WebSocketStream<S>) -> FramedTransport
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sink, stream) = stream.split();
    let stream = stream.map(|item| match item {
        Ok(Message::Text(text)) => Ok(Inbound::Text(text.as_str().to_owned())),
        Ok(Message::Binary(_) | Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => {
            Ok(Inbound::Other)
        }
        Ok(Message::Close(frame)) => Ok(match frame {
            Some(frame) => Inbound::Closed {
                code: Some(u16::from(frame.code)),
                reason: frame.reason.as_str().to_owned(),
            },
            None => Inbound::Closed { code: None, reason: String::new() },
        }),
        Err(tungstenite::Error::Capacity(_)) => Ok(Inbound::TooLarge),
        Err(e) => Err(Error::transport("websocket receive failed", e)),
    });
    let sink = sink.sink_map_err(|e| Error::transport("websocket send failed", e)).with(
        |out: Outbound| {
            future::ready(Ok::<_, Error>(match out {
                Outbound::Text(text) => Message::Text(text.into()),
                Outbound::Ping => Message::Ping(Default::default()),
                Outbound::Close(code) => Message::Close(Some(CloseFrame {
                    code: code.code().into(),
                    reason: code.reason().into(),
                })),
            }))
        },
    );
    FramedTransport::new(stream, sink)
}
