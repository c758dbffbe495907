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
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(30);
/// How long a silent connection lives by default: 60 s.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long opening the connection (TCP, TLS, upgrade) may take by default: 30 s.
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
    #[cfg(feature = "tls")]
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
}

impl std::fmt::Debug for WebSocketTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values may be credentials: only their names are shown.
        let headers: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("WebSocketTransport")
            .field("url", &self.url)
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
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    Tls(Url),
}

impl WebSocketTransport {
    /// A transport to `url`: `ws://`, `wss://` or `mcpl://`. The address is checked when the
    /// transport starts.
    pub fn new(url: impl Into<String>) -> Self {
        WebSocketTransport {
            url: url.into(),
            headers: Vec::new(),
            subprotocols: Vec::new(),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            ping_every: Some(DEFAULT_PING_INTERVAL),
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            #[cfg(feature = "tls")]
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
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Offers a subprotocol (`Sec-WebSocket-Protocol`), such as `"mcp"`. The server must then
    /// select one of those offered. Default: none offered.
    pub fn subprotocol(mut self, protocol: impl Into<String>) -> Self {
        self.subprotocols.push(protocol.into());
        self
    }

    /// The largest message accepted from the server, in bytes; a larger one ends the
    /// connection. Default: 4 MiB.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes.max(1);
        self
    }

    /// How often to ping the server; `None` never does. Default: 30 s.
    pub fn ping_every(mut self, period: Option<Duration>) -> Self {
        self.ping_every = period;
        self
    }

    /// Ends the connection after this long without any frame from the server (pongs
    /// included); `None` never does. Default: 60 s.
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// How long opening the connection may take. Default: 30 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The TLS settings for `wss://` and `mcpl://` (for example to trust a private CA).
    /// Default: rustls with the Mozilla root certificates.
    #[cfg(feature = "tls")]
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

    #[cfg(feature = "tls")]
    fn connector(&self, target: &Target) -> Result<tokio_tungstenite::Connector> {
        match target {
            Target::Plain(_) => Ok(tokio_tungstenite::Connector::Plain),
            Target::Tls(_) => {
                let config = match &self.tls {
                    Some(config) => config.clone(),
                    None => std::sync::Arc::new(default_tls()?),
                };
                Ok(tokio_tungstenite::Connector::Rustls(config))
            }
        }
    }
}

/// rustls with the ring provider and the Mozilla roots; no process-wide provider is needed.
#[cfg(feature = "tls")]
fn default_tls() -> Result<rustls::ClientConfig> {
    let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::transport("tls setup failed", e))?
        .with_root_certificates(roots)
        .with_no_client_auth())
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
        #[cfg(feature = "tls")]
        let connecting = tokio_tungstenite::connect_async_tls_with_config(
            request,
            Some(config),
            true,
            Some(self.connector(&target)?),
        );
        #[cfg(not(feature = "tls"))]
        let connecting = {
            if let Target::Tls(_) = target {
                return Err(Error::Transport {
                    context: "wss:// and mcpl:// need the `tls` feature of mcpl-client".into(),
                    source: None,
                });
            }
            tokio_tungstenite::connect_async_with_config(request, Some(config), true)
        };
        let (stream, _response) = tokio::time::timeout(self.connect_timeout, connecting)
            .await
            .map_err(|_| Error::Transport {
                context: format!("websocket connect to {url} timed out"),
                source: None,
            })?
            .map_err(|e| connect_error(&url, e))?;
        tracing::debug!(%url, "websocket connected");
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

fn connect_error(url: &Url, e: tungstenite::Error) -> Error {
    match e {
        tungstenite::Error::Http(response) => Error::Transport {
            context: format!("websocket upgrade to {url} refused with HTTP {}", response.status()),
            source: None,
        },
        e => Error::transport(format!("websocket connect to {url} failed"), e),
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
