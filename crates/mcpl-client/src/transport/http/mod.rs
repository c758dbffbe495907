//! Streamable HTTP, the client side, for both protocol eras.
//!
//! Every outgoing message is one `POST`. What the transport adds follows from the message
//! itself, so the transport needs no coupling to the client:
//!
//! - A request whose `params._meta` names a protocol version
//!   (`io.modelcontextprotocol/protocolVersion`) is a **2026-era** request: it is sent with
//!   `MCP-Protocol-Version` set to that version, `Mcp-Method` set to its method, and `Mcp-Name`
//!   set to `params.name` (`tools/call`, `prompts/get`), `params.uri` (`resources/read`) or
//!   `params.taskId` (`tasks/*`). No session id is sent.
//! - Anything else is **2025-era** traffic: the `Mcp-Session-Id` the server returned for
//!   `initialize` goes on every later request, and so does `MCP-Protocol-Version` once the
//!   `initialize` result named it. After `notifications/initialized` the standalone `GET`
//!   stream is opened (a `405` is fine), and closing the transport `DELETE`s the session.
//!
//! Responses may be one JSON body or an SSE stream; every message on either reaches the
//! receiver. A request's SSE stream that ends before its response is resumed with `GET` and
//! `Last-Event-ID` (bounded attempts, honouring the server's `retry`).
//!
//! A request that fails in the transport fails with a typed error, told to the engine as a
//! [`TransportEvent::RequestFailed`] (never as a JSON-RPC error the server did not send):
//! [`ErrorKind::Connect`](mcpl_core::ErrorKind::Connect) for a refused connection,
//! [`Tls`](mcpl_core::ErrorKind::Tls), [`TransportTimeout`](mcpl_core::ErrorKind::TransportTimeout)
//! for a connect timeout, [`HttpStatus`](mcpl_core::ErrorKind::HttpStatus) for an error status
//! without a JSON-RPC body (with the start of the body and any `WWW-Authenticate` challenge),
//! [`ProtocolViolation`](mcpl_core::ErrorKind::ProtocolViolation) for a body that is neither
//! JSON nor an event stream or does not answer the request,
//! [`MessageTooLarge`](mcpl_core::ErrorKind::MessageTooLarge) for a response over the size
//! limit, [`InvalidToolHeaders`](mcpl_core::ErrorKind::InvalidToolHeaders) for a `tools/call`
//! that must not be sent. The library's error is the [`source`](std::error::Error::source).
//!
//! The connection ends (and [`Client::closed`](crate::Client::closed) resolves) once the
//! transport knows the server is gone: a request could not connect (refused, TLS, connect
//! timeout) or its connection closed before any response, or the standalone stream could not
//! be reopened within its retries because the server cannot be reached.
//!
//! A `404` for anything that carried a session id means the server forgot the session: the
//! transport initializes again (replaying the client's `initialize`), adopts the new session,
//! sends the message once more, and tells the engine with [`TransportEvent::SessionRenewed`]
//! and the new `initialize` result, so that the client's view of the server's capabilities is
//! refreshed; the transport's [`SessionHandle`] follows the new session id. Only when that
//! fails does the connection end with a transport error "session expired" (pending requests
//! then fail with `ConnectionClosed`). A session continued with
//! [`HttpTransport::resume_session`] has no `initialize` of its own to replay, so a `404` ends
//! it that way at once.
//!
//! [`TransportEvent::RequestFailed`]: mcpl_core::transport::TransportEvent::RequestFailed
//! [`TransportEvent::SessionRenewed`]: mcpl_core::transport::TransportEvent::SessionRenewed

mod body;
mod receiver;
mod retry;
mod sender;
mod session;
mod shared;
mod sse;
mod stream;

use std::collections::HashSet;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpl_core::transport::{DEFAULT_MAX_MESSAGE_SIZE, SessionHandle, Transport};
use mcpl_core::{Error, Result};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::sync::mpsc;

pub use self::receiver::HttpReceiver;
pub use self::retry::DEFAULT_MIN_RETRY;
pub use self::sender::HttpSender;
use self::shared::{Shared, lock};
use super::headers::ToolHeaders;
use super::redirect;

/// The `Mcp-Session-Id` header.
///
/// # Examples
///
/// ```
/// use mcpl_client::transport::HttpTransport;
/// use mcpl_client::transport::http::SESSION_ID;
/// use mcpl_client::{Client, Negotiation};
/// use mcpl_core::ProtocolVersion;
/// # type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, axum::http::HeaderMap)>>>;
/// # /// An echo server over Streamable HTTP on a local port; `Seen` records each request's
/// # /// method and headers.
/// # async fn serve_recording() -> std::io::Result<(String, Seen)> {
/// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
/// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
/// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
/// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
/// #             Ok(mcpl_server::ToolOutput::text(text))
/// #         })
/// #         .build();
/// #     let seen = Seen::default();
/// #     let log = seen.clone();
/// #     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp").layer(
/// #         axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
/// #             log.lock().unwrap().push((request.method().to_string(), request.headers().clone()));
/// #             next.run(request)
/// #         }),
/// #     );
/// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// #     let url = format!("http://{}/mcp", listener.local_addr()?);
/// #     tokio::spawn(mcpl_server::http::serve(listener, app));
/// #     Ok((url, seen))
/// # }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (url, seen) = serve_recording().await?;
/// let client = Client::new("my-app", "1.0.0")
///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
/// client.connect(HttpTransport::new(url)).await?;
/// client.ping().await?;
///
/// // After `initialize`, every request carries the session id the server handed out.
/// let id = client.session_snapshot().and_then(|s| s.session_id).expect("a 2025 session");
/// let seen = seen.lock().unwrap();
/// let last = &seen.last().expect("requests").1;
/// assert_eq!(last.get(SESSION_ID).and_then(|v| v.to_str().ok()), Some(id.as_str()));
/// # Ok(()) }
/// ```
pub const SESSION_ID: &str = "mcp-session-id";
/// The `MCP-Protocol-Version` header.
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::transport::HttpTransport;
/// use mcpl_client::transport::http::PROTOCOL_VERSION;
/// # type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, axum::http::HeaderMap)>>>;
/// # /// An echo server over Streamable HTTP on a local port; `Seen` records each request's
/// # /// method and headers.
/// # async fn serve_recording() -> std::io::Result<(String, Seen)> {
/// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
/// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
/// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
/// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
/// #             Ok(mcpl_server::ToolOutput::text(text))
/// #         })
/// #         .build();
/// #     let seen = Seen::default();
/// #     let log = seen.clone();
/// #     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp").layer(
/// #         axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
/// #             log.lock().unwrap().push((request.method().to_string(), request.headers().clone()));
/// #             next.run(request)
/// #         }),
/// #     );
/// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// #     let url = format!("http://{}/mcp", listener.local_addr()?);
/// #     tokio::spawn(mcpl_server::http::serve(listener, app));
/// #     Ok((url, seen))
/// # }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (url, seen) = serve_recording().await?;
/// let client = Client::new("my-app", "1.0.0");
/// client.connect(HttpTransport::new(url)).await?;
/// client.list_tools().await?;
///
/// let seen = seen.lock().unwrap();
/// let version = seen.last().and_then(|(_, h)| h.get(PROTOCOL_VERSION)?.to_str().ok());
/// assert_eq!(version, Some("2026-07-28"));
/// # Ok(()) }
/// ```
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The `Mcp-Method` header (2026 era).
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::transport::HttpTransport;
/// use mcpl_client::transport::http::MCP_METHOD;
/// # type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, axum::http::HeaderMap)>>>;
/// # /// An echo server over Streamable HTTP on a local port; `Seen` records each request's
/// # /// method and headers.
/// # async fn serve_recording() -> std::io::Result<(String, Seen)> {
/// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
/// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
/// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
/// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
/// #             Ok(mcpl_server::ToolOutput::text(text))
/// #         })
/// #         .build();
/// #     let seen = Seen::default();
/// #     let log = seen.clone();
/// #     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp").layer(
/// #         axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
/// #             log.lock().unwrap().push((request.method().to_string(), request.headers().clone()));
/// #             next.run(request)
/// #         }),
/// #     );
/// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// #     let url = format!("http://{}/mcp", listener.local_addr()?);
/// #     tokio::spawn(mcpl_server::http::serve(listener, app));
/// #     Ok((url, seen))
/// # }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (url, seen) = serve_recording().await?;
/// let client = Client::new("my-app", "1.0.0");
/// client.connect(HttpTransport::new(url)).await?;
/// client.list_tools().await?;
///
/// // 2026-era requests name their method in a header, for routers and gateways.
/// let seen = seen.lock().unwrap();
/// let methods: Vec<&str> =
///     seen.iter().filter_map(|(_, h)| h.get(MCP_METHOD)?.to_str().ok()).collect();
/// assert_eq!(methods, ["server/discover", "tools/list"]);
/// # Ok(()) }
/// ```
pub const MCP_METHOD: &str = "mcp-method";
/// The `Mcp-Name` header (2026 era).
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::transport::HttpTransport;
/// use mcpl_client::transport::http::MCP_NAME;
/// # type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, axum::http::HeaderMap)>>>;
/// # /// An echo server over Streamable HTTP on a local port; `Seen` records each request's
/// # /// method and headers.
/// # async fn serve_recording() -> std::io::Result<(String, Seen)> {
/// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
/// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
/// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
/// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
/// #             Ok(mcpl_server::ToolOutput::text(text))
/// #         })
/// #         .build();
/// #     let seen = Seen::default();
/// #     let log = seen.clone();
/// #     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp").layer(
/// #         axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
/// #             log.lock().unwrap().push((request.method().to_string(), request.headers().clone()));
/// #             next.run(request)
/// #         }),
/// #     );
/// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// #     let url = format!("http://{}/mcp", listener.local_addr()?);
/// #     tokio::spawn(mcpl_server::http::serve(listener, app));
/// #     Ok((url, seen))
/// # }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (url, seen) = serve_recording().await?;
/// let client = Client::new("my-app", "1.0.0");
/// client.connect(HttpTransport::new(url)).await?;
/// client.call_tool("echo", ()).await?;
///
/// // A 2026-era `tools/call` names its tool in a header.
/// let seen = seen.lock().unwrap();
/// let name = seen.last().and_then(|(_, h)| h.get(MCP_NAME)?.to_str().ok());
/// assert_eq!(name, Some("echo"));
/// # Ok(()) }
/// ```
pub const MCP_NAME: &str = "mcp-name";
/// The `Last-Event-ID` header.
///
/// # Examples
///
/// ```
/// use mcpl_client::transport::http::LAST_EVENT_ID;
/// use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
///
/// // The header a resumed SSE stream's `GET` carries: the id of the last event received.
/// let mut headers = HeaderMap::new();
/// headers.insert(HeaderName::from_static(LAST_EVENT_ID), HeaderValue::from_static("42"));
/// assert_eq!(headers["Last-Event-ID"], "42");
/// ```
pub const LAST_EVENT_ID: &str = "last-event-id";

/// How long connecting (TCP and TLS) may take by default, with the transport's own HTTP
/// client: 30 s.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use mcpl_client::transport::http::DEFAULT_CONNECT_TIMEOUT;
///
/// assert_eq!(DEFAULT_CONNECT_TIMEOUT, Duration::from_secs(30));
/// ```
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How many messages from the server may wait for the client to take them before the
/// transport stops reading its streams (backpressure: a server that floods a stream is
/// slowed down to the client's pace).
const INBOX: usize = 16;

/// A Streamable HTTP endpoint to connect to.
///
/// # Examples
///
/// ```no_run
/// use mcpl_client::Client;
/// use mcpl_client::transport::HttpTransport;
///
/// # async fn run() -> mcpl_core::Result<()> {
/// let client = Client::new("my-app", "1.0.0");
/// client.connect(HttpTransport::new("http://127.0.0.1:3000/mcp")).await?;
/// # Ok(()) }
/// ```
///
/// Its [`endpoint`](Transport::endpoint) identity is the URL; its
/// [`session`](Transport::session) handle holds the 2025-era session id.
#[must_use]
pub struct HttpTransport {
    url: String,
    http: Option<reqwest::Client>,
    headers: HeaderMap,
    max_response_size: usize,
    max_resume_attempts: u32,
    min_retry: Duration,
    standalone_stream: bool,
    connect_timeout: Duration,
    session: SessionHandle,
    #[cfg(feature = "auth")]
    auth: Option<Arc<crate::auth::OAuth>>,
    #[cfg(feature = "rustls")]
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl std::fmt::Debug for HttpTransport {
    /// The URL without its user info and query, and header names only: both can carry
    /// credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<&str> = self.headers.keys().map(|name| name.as_str()).collect();
        f.debug_struct("HttpTransport")
            .field("url", &super::redacted_url(&self.url))
            .field("headers", &headers)
            .field("max_response_size", &self.max_response_size)
            .field("max_resume_attempts", &self.max_resume_attempts)
            .field("standalone_stream", &self.standalone_stream)
            .finish_non_exhaustive()
    }
}

impl Clone for HttpTransport {
    /// A copy configured the same way, with its own session handle (seeded like this one's),
    /// so that the copies never share a live session.
    fn clone(&self) -> Self {
        HttpTransport {
            url: self.url.clone(),
            http: self.http.clone(),
            headers: self.headers.clone(),
            max_response_size: self.max_response_size,
            max_resume_attempts: self.max_resume_attempts,
            min_retry: self.min_retry,
            standalone_stream: self.standalone_stream,
            connect_timeout: self.connect_timeout,
            session: self.session.detached_copy(),
            #[cfg(feature = "auth")]
            auth: self.auth.clone(),
            #[cfg(feature = "rustls")]
            tls: self.tls.clone(),
        }
    }
}

impl HttpTransport {
    /// The endpoint at `url`, such as `http://127.0.0.1:3000/mcp`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::transport::HttpTransport;
    /// use mcpl_core::Transport;
    /// # type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, axum::http::HeaderMap)>>>;
    /// # /// An echo server over Streamable HTTP on a local port; `Seen` records each request's
    /// # /// method and headers.
    /// # async fn serve_recording() -> std::io::Result<(String, Seen)> {
    /// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
    /// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
    /// #             Ok(mcpl_server::ToolOutput::text(text))
    /// #         })
    /// #         .build();
    /// #     let seen = Seen::default();
    /// #     let log = seen.clone();
    /// #     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp").layer(
    /// #         axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
    /// #             log.lock().unwrap().push((request.method().to_string(), request.headers().clone()));
    /// #             next.run(request)
    /// #         }),
    /// #     );
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let url = format!("http://{}/mcp", listener.local_addr()?);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((url, seen))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, _seen) = serve_recording().await?;
    /// let transport = HttpTransport::new(url.clone());
    /// // The URL is the endpoint identity the response cache partitions by.
    /// assert_eq!(transport.endpoint(), Some(url));
    ///
    /// let client = Client::new("my-app", "1.0.0");
    /// let details = client.connect(transport).await?;
    /// assert_eq!(details.server_info.name, "echo-server");
    /// # Ok(()) }
    /// ```
    pub fn new(url: impl Into<String>) -> Self {
        HttpTransport {
            url: url.into(),
            http: None,
            headers: HeaderMap::new(),
            max_response_size: DEFAULT_MAX_MESSAGE_SIZE,
            max_resume_attempts: 3,
            min_retry: DEFAULT_MIN_RETRY,
            standalone_stream: true,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            session: SessionHandle::new(),
            #[cfg(feature = "auth")]
            auth: None,
            #[cfg(feature = "rustls")]
            tls: None,
        }
    }

    /// The TLS settings for `https://` (for example to trust a private CA, see
    /// [`tls::config_with_roots`](super::tls::config_with_roots)). Default:
    /// [`tls::default_config`](super::tls::default_config), rustls with the Mozilla root
    /// certificates. A client given with [`http_client`](Self::http_client) keeps its own.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcpl_client::transport::{HttpTransport, tls};
    /// use rustls::RootCertStore;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let private_ca = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])?.cert.der().clone();
    /// let mut roots = RootCertStore::empty();
    /// roots.add(private_ca)?;
    /// let config = Arc::new(tls::config_with_roots(roots)?);
    /// let transport = HttpTransport::new("https://localhost:8443/mcp").tls_config(config);
    /// # drop(transport);
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "rustls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
    pub fn tls_config(mut self, config: Arc<rustls::ClientConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// Authorizes with OAuth: every request carries the access token, and a `401` (or a `403`
    /// `insufficient_scope`) runs the authorization flow and sends the request again. See
    /// [`crate::auth`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::auth::OAuth;
    /// use mcpl_client::transport::HttpTransport;
    /// # /// A protected MCP server (tool `hello`, scope `mcp:tools`) and its authorization server,
    /// # /// on local ports; returns the MCP URL and the issuer. The authorization server registers
    /// # /// every client as `dyn-client` / `dyn-secret`, authorizes at once (redirecting with a code)
    /// # /// and issues a token to whoever presents `dyn-secret`.
    /// # async fn protected_server() -> std::io::Result<(String, String)> {
    /// #     use std::sync::{Arc, Mutex};
    /// #     use axum::http::{StatusCode, Uri, header};
    /// #     use axum::routing::{get, post};
    /// #     use mcpl_server::http::auth::{AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError};
    /// #     fn json(status: StatusCode, value: serde_json::Value) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
    /// #         (status, [(header::CONTENT_TYPE, "application/json")], value.to_string())
    /// #     }
    /// #     struct Verifier(Arc<Mutex<Vec<String>>>);
    /// #     impl TokenVerifier for Verifier {
    /// #         fn verify<'a>(&'a self, token: &'a str) -> futures::future::BoxFuture<'a, Result<AccessToken, VerifyError>> {
    /// #             let known = self.0.lock().unwrap().iter().any(|t| t == token);
    /// #             Box::pin(async move {
    /// #                 if known { Ok(AccessToken::new(vec!["mcp:tools".to_owned()])) } else { Err(VerifyError::Invalid("unknown token".into())) }
    /// #             })
    /// #         }
    /// #     }
    /// #     let issued: Arc<Mutex<Vec<String>>> = Arc::default();
    /// #     let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let issuer = format!("http://{}", as_listener.local_addr()?);
    /// #     let metadata = serde_json::json!({
    /// #         "issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
    /// #         "token_endpoint": format!("{issuer}/token"), "registration_endpoint": format!("{issuer}/register"),
    /// #         "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
    /// #         "token_endpoint_auth_methods_supported": ["client_secret_post"],
    /// #     });
    /// #     let (iss, tokens) = (issuer.clone(), issued.clone());
    /// #     let auth_server = axum::Router::new()
    /// #         .route("/.well-known/oauth-authorization-server", get(move || { let m = metadata.clone(); async move { json(StatusCode::OK, m) } }))
    /// #         .route("/register", post(|| async { json(StatusCode::CREATED, serde_json::json!({"client_id": "dyn-client", "client_secret": "dyn-secret"})) }))
    /// #         .route("/authorize", get(move |uri: Uri| { let iss = iss.clone(); async move {
    /// #             let query: std::collections::HashMap<String, String> = reqwest::Url::parse(&format!("http://x/?{}", uri.query().unwrap_or_default())).unwrap().query_pairs().into_owned().collect();
    /// #             let mut back = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
    /// #             back.query_pairs_mut().append_pair("code", "the-code").append_pair("state", &query["state"]).append_pair("iss", &iss);
    /// #             (StatusCode::FOUND, [(header::LOCATION, back.to_string())])
    /// #         } }))
    /// #         .route("/token", post(move |body: String| { let tokens = tokens.clone(); async move {
    /// #             if !body.contains("client_secret=dyn-secret") { return json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "invalid_client"})); }
    /// #             let mut issued = tokens.lock().unwrap();
    /// #             let token = format!("tok-{}", issued.len());
    /// #             issued.push(token.clone());
    /// #             json(StatusCode::OK, serde_json::json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
    /// #         } }));
    /// #     tokio::spawn(mcpl_server::http::serve(as_listener, auth_server));
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let base = format!("http://{}", listener.local_addr()?);
    /// #     let server = mcpl_server::Server::builder("protected", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("hello", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async { Ok(mcpl_server::ToolOutput::text("hi")) })
    /// #         .build();
    /// #     let mcp = mcpl_server::http::StreamableHttp::new(server, mcpl_server::http::HttpConfig::new()).into_router("/mcp");
    /// #     let resource = ProtectedResourceMetadata::new(format!("{base}/mcp")).authorization_server(issuer.clone()).scopes_supported(["mcp:tools"]);
    /// #     let app = BearerAuth::new(Verifier(issued), resource).required_scopes(["mcp:tools"]).protect(mcp);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((format!("{base}/mcp"), issuer))
    /// # }
    /// # /// Plays the user's browser: follows the authorization URL to the redirect.
    /// # #[derive(Debug)]
    /// # struct Browser;
    /// # impl mcpl_client::auth::Authorizer for Browser {
    /// #     fn authorize<'a>(&'a self, url: &'a str) -> futures::future::BoxFuture<'a, Result<String, mcpl_client::auth::AuthError>> {
    /// #         Box::pin(async move {
    /// #             let fail = |e: reqwest::Error| mcpl_client::auth::AuthError::Interaction(e.to_string());
    /// #             let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().map_err(fail)?;
    /// #             let response = http.get(url).send().await.map_err(fail)?;
    /// #             let location = response.headers().get("location").and_then(|v| v.to_str().ok());
    /// #             location.map(str::to_owned).ok_or_else(|| mcpl_client::auth::AuthError::Interaction("no redirect".into()))
    /// #         })
    /// #     }
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, _issuer) = protected_server().await?;
    /// // Without authorization the server refuses the connection.
    /// let client = Client::new("my-app", "1.0.0");
    /// assert!(client.connect(HttpTransport::new(url.clone())).await.is_err());
    ///
    /// let oauth = Arc::new(OAuth::new(Browser, "http://127.0.0.1:8765/callback"));
    /// client.connect(HttpTransport::new(url).auth(oauth)).await?;
    /// client.call_tool("hello", ()).await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "auth")]
    pub fn auth(mut self, oauth: Arc<crate::auth::OAuth>) -> Self {
        self.auth = Some(oauth);
        self
    }

    /// Continues the existing 2025-era session `session_id`, which speaks `protocol_version`
    /// (a stateful-era revision), instead of starting one: every request carries the id and
    /// `MCP-Protocol-Version`, and no `initialize` is needed (the standalone `GET` stream opens
    /// when the transport starts). Use it with [`Client::resume`](crate::Client::resume), which
    /// skips the handshake.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::HttpTransport;
    /// use mcpl_core::{ProtocolVersion, Transport};
    ///
    /// let transport = HttpTransport::new("http://127.0.0.1:3000/mcp")
    ///     .resume_session("4f1c2a", ProtocolVersion::V2025_11_25);
    /// assert_eq!(transport.session().and_then(|s| s.id()).as_deref(), Some("4f1c2a"));
    /// ```
    pub fn resume_session(
        self,
        session_id: impl Into<String>,
        protocol_version: mcpl_core::ProtocolVersion,
    ) -> Self {
        self.session.set(session_id, Some(protocol_version.as_str()));
        self
    }

    /// Uses `client` for every HTTP request (for proxies, TLS settings, timeouts). Default: a
    /// client with reqwest's defaults, except that it follows same-origin redirects only (see
    /// [`redirect`]); `client` keeps its own redirect policy, so build it with
    /// [`redirect::policy`] to keep that rule.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::transport::HttpTransport;
    /// # type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, axum::http::HeaderMap)>>>;
    /// # /// An echo server over Streamable HTTP on a local port; `Seen` records each request's
    /// # /// method and headers.
    /// # async fn serve_recording() -> std::io::Result<(String, Seen)> {
    /// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
    /// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
    /// #             Ok(mcpl_server::ToolOutput::text(text))
    /// #         })
    /// #         .build();
    /// #     let seen = Seen::default();
    /// #     let log = seen.clone();
    /// #     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp").layer(
    /// #         axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
    /// #             log.lock().unwrap().push((request.method().to_string(), request.headers().clone()));
    /// #             next.run(request)
    /// #         }),
    /// #     );
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let url = format!("http://{}/mcp", listener.local_addr()?);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((url, seen))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, _seen) = serve_recording().await?;
    /// // Proxies, TLS roots, connection limits: whatever reqwest offers.
    /// let http = reqwest::Client::builder()
    ///     .connect_timeout(Duration::from_secs(5))
    ///     .user_agent("my-app/1.0.0")
    ///     .redirect(mcpl_client::transport::redirect::policy())
    ///     .build()?;
    /// let client = Client::new("my-app", "1.0.0");
    /// client.connect(HttpTransport::new(url).http_client(http)).await?;
    /// client.ping().await?;
    /// # Ok(()) }
    /// ```
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// Sends `name: value` with every HTTP request (for example `Authorization`).
    ///
    /// # Errors
    ///
    /// `Transport` if the name or value is not a valid header.
    ///
    /// # Examples
    ///
    /// ```
    /// use axum::http::StatusCode;
    /// use axum::response::IntoResponse;
    /// use mcpl_client::Client;
    /// use mcpl_client::transport::HttpTransport;
    /// use mcpl_server::Server;
    /// use mcpl_server::http::{HttpConfig, StreamableHttp};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // A server behind a gateway that wants an API key.
    /// let app = StreamableHttp::new(Server::builder("s", "1").build(), HttpConfig::new())
    ///     .into_router("/mcp")
    ///     .layer(axum::middleware::from_fn(
    ///         |request: axum::extract::Request, next: axum::middleware::Next| async move {
    ///             if request.headers().get("x-api-key").is_some_and(|key| key == "s3cret") {
    ///                 next.run(request).await
    ///             } else {
    ///                 StatusCode::UNAUTHORIZED.into_response()
    ///             }
    ///         },
    ///     ));
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let url = format!("http://{}/mcp", listener.local_addr()?);
    /// tokio::spawn(mcpl_server::http::serve(listener, app));
    ///
    /// let client = Client::new("my-app", "1.0.0");
    /// assert!(client.connect(HttpTransport::new(url.clone())).await.is_err());
    /// client.connect(HttpTransport::new(url).header("x-api-key", "s3cret")?).await?;
    ///
    /// // A header that cannot be sent is refused up front.
    /// assert!(HttpTransport::new("http://127.0.0.1/mcp").header("x-api-key", "line\nbreak").is_err());
    /// # Ok(()) }
    /// ```
    pub fn header(mut self, name: &str, value: &str) -> Result<Self> {
        let name = HeaderName::try_from(name)
            .map_err(|e| Error::transport(format!("invalid header name {name:?}"), e))?;
        let value = HeaderValue::try_from(value)
            .map_err(|e| Error::transport(format!("invalid value for header {name}"), e))?;
        self.headers.insert(name, value);
        Ok(self)
    }

    /// The largest message accepted from the server (one JSON body, or one SSE event).
    /// Default: 4 MiB.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::transport::HttpTransport;
    /// use mcpl_core::ErrorKind;
    /// # async fn serve_http() -> std::io::Result<String> {
    /// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// #     let server = mcpl_server::Server::builder("big", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("big", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async move {
    /// #             Ok(mcpl_server::ToolOutput::text("x".repeat(8192)))
    /// #         })
    /// #         .tool(mcpl_core::types::Tool::new("small", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async move {
    /// #             Ok(mcpl_server::ToolOutput::text("x"))
    /// #         })
    /// #         .build();
    /// #     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp");
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let url = format!("http://{}/mcp", listener.local_addr()?);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok(url)
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let url = serve_http().await?;
    /// let client = Client::new("my-app", "1.0.0");
    /// client.connect(HttpTransport::new(url).max_response_size(4096)).await?;
    ///
    /// let err = client.call_tool("big", ()).await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::MessageTooLarge);
    /// // Only that call failed: the connection goes on.
    /// client.call_tool("small", ()).await?;
    /// # Ok(()) }
    /// ```
    pub fn max_response_size(mut self, bytes: usize) -> Self {
        self.max_response_size = bytes;
        self
    }

    /// How many times a request's SSE stream that ended early is resumed. Default: 3.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::transport::HttpTransport;
    /// # type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, axum::http::HeaderMap)>>>;
    /// # /// An echo server over Streamable HTTP on a local port; `Seen` records each request's
    /// # /// method and headers.
    /// # async fn serve_recording() -> std::io::Result<(String, Seen)> {
    /// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
    /// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
    /// #             Ok(mcpl_server::ToolOutput::text(text))
    /// #         })
    /// #         .build();
    /// #     let seen = Seen::default();
    /// #     let log = seen.clone();
    /// #     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp").layer(
    /// #         axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
    /// #             log.lock().unwrap().push((request.method().to_string(), request.headers().clone()));
    /// #             next.run(request)
    /// #         }),
    /// #     );
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let url = format!("http://{}/mcp", listener.local_addr()?);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((url, seen))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, _seen) = serve_recording().await?;
    /// // A flaky network: resume a broken response stream up to 10 times before giving up.
    /// let client = Client::new("my-app", "1.0.0");
    /// client.connect(HttpTransport::new(url).max_resume_attempts(10)).await?;
    /// client.ping().await?;
    /// # Ok(()) }
    /// ```
    pub fn max_resume_attempts(mut self, attempts: u32) -> Self {
        self.max_resume_attempts = attempts;
        self
    }

    /// The shortest wait before a stream is reopened or resumed, whatever `retry` the server
    /// sends (a `retry: 0` would otherwise make the client reconnect in a tight loop).
    /// Default: [`DEFAULT_MIN_RETRY`] (250 ms).
    ///
    /// The standalone stream of a 2025 session is reopened after it ends; one that ends
    /// within a second without any event counts as a failed attempt, and after
    /// [`max_resume_attempts`](Self::max_resume_attempts) of those in a row (each wait doubled,
    /// with jitter, at most 30 s: see [`Backoff`](crate::backoff::Backoff)) it is given up.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use mcpl_client::transport::HttpTransport;
    ///
    /// // Never poll a server more than once a second, whatever it asks.
    /// let transport = HttpTransport::new("http://127.0.0.1:3000/mcp").min_retry(Duration::from_secs(1));
    /// # drop(transport);
    /// ```
    pub fn min_retry(mut self, floor: Duration) -> Self {
        self.min_retry = floor;
        self
    }

    /// Whether to open the standalone `GET` stream after the 2025 handshake. Default: `true`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::HttpTransport;
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_core::ProtocolVersion;
    /// # type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, axum::http::HeaderMap)>>>;
    /// # /// An echo server over Streamable HTTP on a local port; `Seen` records each request's
    /// # /// method and headers.
    /// # async fn serve_recording() -> std::io::Result<(String, Seen)> {
    /// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
    /// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
    /// #             Ok(mcpl_server::ToolOutput::text(text))
    /// #         })
    /// #         .build();
    /// #     let seen = Seen::default();
    /// #     let log = seen.clone();
    /// #     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp").layer(
    /// #         axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
    /// #             log.lock().unwrap().push((request.method().to_string(), request.headers().clone()));
    /// #             next.run(request)
    /// #         }),
    /// #     );
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let url = format!("http://{}/mcp", listener.local_addr()?);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((url, seen))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, seen) = serve_recording().await?;
    /// let client = Client::new("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    /// // Only requests and their responses: no `GET` stream for server-initiated messages.
    /// client.connect(HttpTransport::new(url).standalone_stream(false)).await?;
    /// client.ping().await?;
    /// assert!(seen.lock().unwrap().iter().all(|(method, _)| method == "POST"));
    /// # Ok(()) }
    /// ```
    pub fn standalone_stream(mut self, open: bool) -> Self {
        self.standalone_stream = open;
        self
    }

    /// How long connecting to the server (TCP and the TLS handshake) may take; a request that
    /// could not connect in time fails with
    /// [`ErrorKind::TransportTimeout`](mcpl_core::ErrorKind::TransportTimeout) and ends the
    /// connection. Default: [`DEFAULT_CONNECT_TIMEOUT`] (30 s). A client given with
    /// [`http_client`](Self::http_client) keeps its own.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use mcpl_client::transport::HttpTransport;
    ///
    /// let transport = HttpTransport::new("https://mcp.example.com/mcp")
    ///     .connect_timeout(Duration::from_secs(5));
    /// # drop(transport);
    /// ```
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }
}

impl Transport for HttpTransport {
    type Sender = HttpSender;
    type Receiver = HttpReceiver;

    fn endpoint(&self) -> Option<String> {
        Some(self.url.clone())
    }

    fn session(&self) -> Option<SessionHandle> {
        Some(self.session.clone())
    }

    async fn start(self) -> Result<(HttpSender, HttpReceiver)> {
        #[cfg(not(any(feature = "rustls", feature = "native-tls")))]
        if self.url.get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://")) {
            return Err(Error::Transport {
                context: "https:// needs the `rustls` or `native-tls` feature of mcpl-client"
                    .into(),
                source: None,
            });
        }
        let own_client = self.http.is_none();
        let http = match self.http {
            Some(http) => http,
            None => {
                #[cfg(feature = "rustls")]
                let builder = match self.tls {
                    Some(tls) => reqwest::Client::builder()
                        .redirect(redirect::policy())
                        .tls_backend_preconfigured(Arc::unwrap_or_clone(tls)),
                    None => client_builder()?,
                };
                #[cfg(not(feature = "rustls"))]
                let builder = client_builder()?;
                builder
                    .connect_timeout(self.connect_timeout)
                    .build()
                    .map_err(|e| Error::transport("could not build the HTTP client", e))?
            }
        };
        let (tx, rx) = mpsc::channel(INBOX);
        let shared = Arc::new(Shared {
            http,
            endpoint: super::redacted_url(&self.url),
            connect_timeout: own_client.then_some(self.connect_timeout),
            parsed: reqwest::Url::parse(&self.url).ok(),
            url: self.url,
            headers: self.headers,
            stateless_headers: Mutex::new(None),
            max: self.max_response_size,
            max_resume: self.max_resume_attempts,
            min_retry: self.min_retry,
            standalone: self.standalone_stream,
            session: Mutex::new(self.session.id()),
            version: Mutex::new(self.session.protocol_version()),
            handle: self.session,
            tool_headers: ToolHeaders::default(),
            tools_list_ids: Mutex::new(HashSet::new()),
            inbox: tx,
            tasks: Mutex::new(Vec::new()),
            stop: mcpl_core::engine::CancellationToken::new(),
            hello: Mutex::new(None),
            renewing: tokio::sync::Mutex::new(()),
            renewals: AtomicU64::new(0),
            #[cfg(feature = "auth")]
            auth: self.auth,
        });
        if lock(&shared.session).is_some() {
            // A continued session: its standalone stream reopens at once (through the same
            // loop as after a handshake, which also retries while the server still holds the
            // previous connection's stream).
            Shared::open_standalone(&shared).await;
        }
        Ok((HttpSender { shared }, HttpReceiver { inbox: rx }))
    }
}

/// A `reqwest` client builder set up as the transport's own client: the redirect rule of
/// [`redirect::policy`] and the default TLS of [`super::tls`] (rustls with the Mozilla roots;
/// the platform's TLS with `native-tls` alone). Build on it (timeouts, proxies, a user agent)
/// and hand the client to [`HttpTransport::http_client`] or to the OAuth client.
///
/// # Errors
///
/// `Transport` if the TLS configuration cannot be made (see
/// [`tls::default_config`](super::tls::default_config)).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use mcpl_client::transport::HttpTransport;
/// use mcpl_client::transport::http::client_builder;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let http = client_builder()?.connect_timeout(Duration::from_secs(5)).build()?;
/// let transport = HttpTransport::new("https://mcp.example.com/mcp").http_client(http);
/// # drop(transport);
/// # Ok(()) }
/// ```
pub fn client_builder() -> Result<reqwest::ClientBuilder> {
    let builder = reqwest::Client::builder().redirect(redirect::policy());
    #[cfg(feature = "rustls")]
    let builder = builder.tls_backend_preconfigured(super::tls::default_config()?);
    #[cfg(all(feature = "native-tls", not(feature = "rustls")))]
    let builder = builder.tls_backend_native();
    Ok(builder)
}
