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
//! Failures of one request (an HTTP error without a JSON-RPC body, a response over the size
//! limit, a stream that could not be resumed) answer that request with a JSON-RPC error whose
//! `data.transport` says what happened; [`Client`](crate::Client) lifts an oversized response
//! to [`Error::MessageTooLarge`].
//!
//! A `404` for anything that carried a session id means the server forgot the session: the
//! transport initializes again (replaying the client's `initialize`), adopts the new session,
//! sends the message once more, and hands the client the new `initialize` result (the local
//! notification [`SESSION_RENEWED`]) so that its view of the server's capabilities is
//! refreshed; the transport's [`SessionHandle`] follows the new session id. Only when that
//! fails does the connection end with a transport error "session expired" (pending requests
//! then fail with `ConnectionClosed`). A session continued with
//! [`HttpTransport::resume_session`] has no `initialize` of its own to replay, so a `404` ends
//! it that way at once.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject, ErrorResponse, Message, Notification, RequestId};
use mcpl_core::transport::{
    DEFAULT_MAX_MESSAGE_SIZE, SessionHandle, Transport, TransportReceiver, TransportSender,
};
use mcpl_core::types::{meta_keys, names};
use mcpl_core::{Error, Result};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::headers::{ToolHeaders, header_text};
use super::redirect::{self, RedirectRefused};

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

/// The value of `data.transport` on the error answering a request whose response exceeded the
/// size limit.
///
/// # Examples
///
/// A raw engine over the transport sees the error as the transport made it ([`Client`](crate::Client)
/// turns it into [`Error::MessageTooLarge`]):
///
/// ```
/// use mcpl_client::transport::HttpTransport;
/// use mcpl_client::transport::http::TOO_LARGE;
/// use mcpl_core::types::{Meta, ClientCapabilities};
/// use mcpl_core::{Engine, ProtocolVersion};
/// use serde_json::json;
/// # async fn serve_http() -> std::io::Result<String> {
/// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
/// #     let server = mcpl_server::Server::builder("big", "1.0.0")
/// #         .tool(mcpl_core::types::Tool::new("big", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async move {
/// #             Ok(mcpl_server::ToolOutput::text("x".repeat(8192)))
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
/// let peer = Engine::new().connect(HttpTransport::new(url).max_response_size(4096)).await?;
/// let meta = Meta::for_request(ProtocolVersion::V2026_07_28, &ClientCapabilities::default());
/// let call = json!({"name": "big", "arguments": {}, "_meta": meta});
/// let err = peer.request("tools/call", Some(call), Default::default()).await.unwrap_err();
/// let data = err.rpc_error().and_then(|e| e.data.clone()).unwrap_or_default();
/// assert_eq!(data["transport"], TOO_LARGE);
/// assert_eq!(data["limit"], 4096);
/// # Ok(()) }
/// ```
pub const TOO_LARGE: &str = "message-too-large";

/// The value of `data.transport` on the error answering a request that the server redirected
/// where the client does not follow (see [`redirect`]);
/// [`Client`](crate::Client) lifts it to a transport error whose source is the
/// [`RedirectRefused`].
///
/// # Examples
///
/// ```
/// use mcpl_client::transport::http::REDIRECT_REFUSED;
///
/// assert_eq!(REDIRECT_REFUSED, "redirect-refused");
/// ```
pub const REDIRECT_REFUSED: &str = "redirect-refused";

/// The method of the local notification (never sent on the wire) that the transport hands
/// the client after it renewed an expired 2025 session; its params are the new `initialize`
/// result, from which [`Client`](crate::Client) refreshes the server's details.
///
/// # Examples
///
/// A raw engine over the transport hears of a renewal with this notification ([`Client`](crate::Client)
/// refreshes [`Client::server`](crate::Client::server) from it):
///
/// ```
/// use std::time::Duration;
///
/// use mcpl_client::transport::HttpTransport;
/// use mcpl_client::transport::http::SESSION_RENEWED;
/// use mcpl_core::Engine;
/// use mcpl_server::Server;
/// use mcpl_server::http::{HttpConfig, StreamableHttp};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // A server that forgets sessions idle for 100 ms.
/// let config = HttpConfig::new().session_idle_timeout(Duration::from_millis(100));
/// let http = StreamableHttp::new(Server::builder("forgetful", "1.0.0").build(), config);
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let url = format!("http://{}/mcp", listener.local_addr()?);
/// tokio::spawn(mcpl_server::http::serve(listener, http.clone().into_router("/mcp")));
///
/// let engine = Engine::new();
/// let (tx, mut renewed) = tokio::sync::mpsc::unbounded_channel();
/// engine.on_notification(SESSION_RENEWED, move |_ctx, params| {
///     tx.send(params).ok();
///     async {}
/// });
/// let peer = engine.connect(HttpTransport::new(url).standalone_stream(false)).await?;
/// let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
///     "clientInfo": {"name": "raw", "version": "1"}});
/// peer.request("initialize", Some(init), Default::default()).await?;
/// peer.notify("notifications/initialized", None).await?;
///
/// // Wait until the server has forgotten the session; the next request renews it.
/// let forgotten = async {
///     while http.session_count() > 0 {
///         tokio::time::sleep(Duration::from_millis(50)).await;
///     }
/// };
/// tokio::time::timeout(Duration::from_secs(30), forgotten).await?;
/// peer.request("ping", None, Default::default()).await?;
/// let result = renewed.recv().await.flatten().expect("the new initialize result");
/// assert_eq!(result["serverInfo"]["name"], "forgetful");
/// # Ok(()) }
/// ```
pub const SESSION_RENEWED: &str = "mcpl/sessionRenewed";

/// The value of `data.transport` on the error answering a `tools/call` that was not sent
/// because the tool's `x-mcp-header` annotations are invalid (`data.tool`, `data.detail`).
///
/// # Examples
///
/// ```
/// use mcpl_client::transport::http::INVALID_TOOL_HEADERS;
///
/// // Data of the local error answering a `tools/call` that was never sent. The client
/// // lifts it to `Error::InvalidToolHeaders` with the tool and the detail.
/// assert_eq!(INVALID_TOOL_HEADERS, "invalid-tool-headers");
/// ```
pub const INVALID_TOOL_HEADERS: &str = "invalid-tool-headers";

/// How long to wait before resuming a stream when the server did not say.
const DEFAULT_RETRY: Duration = Duration::from_millis(500);
/// The shortest wait before reopening or resuming a stream, whatever `retry` the server
/// asks for, unless configured ([`HttpTransport::min_retry`]).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use mcpl_client::transport::http::DEFAULT_MIN_RETRY;
///
/// // A server's `retry: 0` does not make the client reconnect in a loop.
/// assert_eq!(DEFAULT_MIN_RETRY, Duration::from_millis(250));
/// ```
pub const DEFAULT_MIN_RETRY: Duration = Duration::from_millis(250);
/// The longest `retry` honoured, and the longest backoff.
const MAX_RETRY: Duration = Duration::from_secs(30);
/// How many messages from the server may wait for the client to take them before the
/// transport stops reading its streams (backpressure: a server that floods a stream is
/// slowed down to the client's pace).
const INBOX: usize = 16;
/// How long opening the standalone stream may hold up the handshake.
const STANDALONE_WAIT: Duration = Duration::from_secs(5);
/// A standalone stream that ends sooner than this without a single event counts as a failed
/// attempt (so a server that ends every stream at once is given up on).
const SHORT_STREAM: Duration = Duration::from_secs(1);

/// The wait before reopening a stream: the server's `retry` (or 500 ms) but at least `floor`,
/// doubled for each failed attempt in a row, at most 30 s.
fn backoff(retry: Option<Duration>, floor: Duration, failures: u32) -> Duration {
    let base = retry.unwrap_or(DEFAULT_RETRY).max(floor).min(MAX_RETRY);
    base.saturating_mul(1u32 << failures.min(6)).min(MAX_RETRY)
}

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
    session: SessionHandle,
    #[cfg(feature = "auth")]
    auth: Option<Arc<crate::auth::OAuth>>,
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
            session: self.session.detached_copy(),
            #[cfg(feature = "auth")]
            auth: self.auth.clone(),
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
            session: SessionHandle::new(),
            #[cfg(feature = "auth")]
            auth: None,
        }
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
    /// at most 30 s) it is given up.
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
        let http = match self.http {
            Some(http) => http,
            None => reqwest::Client::builder()
                .redirect(redirect::policy())
                .build()
                .map_err(|e| Error::transport("could not build the HTTP client", e))?,
        };
        let (tx, rx) = mpsc::channel(INBOX);
        let shared = Arc::new(Shared {
            http,
            url: self.url,
            headers: self.headers,
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

struct Shared {
    http: reqwest::Client,
    url: String,
    headers: HeaderMap,
    max: usize,
    max_resume: u32,
    min_retry: Duration,
    standalone: bool,
    session: Mutex<Option<String>>,
    version: Mutex<Option<String>>,
    /// The `x-mcp-header` annotations learnt from `tools/list` results.
    tool_headers: ToolHeaders,
    /// The ids of `tools/list` requests in flight, whose results teach `tool_headers`.
    tools_list_ids: Mutex<HashSet<RequestId>>,
    /// The owner's view of the session (see [`SessionHandle`]).
    handle: SessionHandle,
    inbox: mpsc::Sender<Result<Message>>,
    tasks: Mutex<Vec<AbortHandle>>,
    /// The body of the `initialize` request, replayed to renew an expired session.
    hello: Mutex<Option<Vec<u8>>>,
    /// Held while a session is renewed, so that concurrent 404s renew it once.
    renewing: tokio::sync::Mutex<()>,
    /// Counts renewals, for the ids of the replayed `initialize`.
    renewals: AtomicU64,
    #[cfg(feature = "auth")]
    auth: Option<Arc<crate::auth::OAuth>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What an outgoing message means for the HTTP exchange.
struct Outgoing {
    /// The request's id, for requests.
    id: Option<RequestId>,
    /// The request's method, for requests and notifications.
    method: Option<String>,
    /// The protocol version in `params._meta`, for 2026-era requests.
    stateless_version: Option<String>,
    /// The `Mcp-Name` value, for the methods that need one.
    name: Option<String>,
}

impl Outgoing {
    fn of(message: &Message) -> Outgoing {
        let (id, method, params) = match message {
            Message::Request(r) => (Some(r.id.clone()), Some(r.method.clone()), r.params.as_ref()),
            Message::Notification(n) => (None, Some(n.method.clone()), n.params.as_ref()),
            _ => (None, None, None),
        };
        let stateless_version = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(meta_keys::PROTOCOL_VERSION))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let name_key = match method.as_deref() {
            Some(names::TOOLS_CALL | names::PROMPTS_GET) => Some("name"),
            Some(names::RESOURCES_READ) => Some("uri"),
            Some("tasks/get" | "tasks/update" | "tasks/cancel") => Some("taskId"),
            _ => None,
        };
        let name = name_key
            .and_then(|k| params.and_then(|p| p.get(k)))
            .and_then(Value::as_str)
            .map(str::to_owned);
        Outgoing { id, method, stateless_version, name }
    }
}

/// The sending half of an [`HttpTransport`]: one `POST` per message.
///
/// # Examples
///
/// ```
/// use mcpl_client::transport::HttpTransport;
/// use mcpl_core::jsonrpc::{Message, Request};
/// use mcpl_core::transport::{Transport, TransportReceiver, TransportSender};
/// use mcpl_core::types::{ClientCapabilities, Meta};
/// use mcpl_core::ProtocolVersion;
/// use serde_json::json;
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
/// let (mut tx, mut rx) = HttpTransport::new(url).start().await?;
/// // Each message the sender sends is one POST; its answer reaches the receiver.
/// let meta = Meta::for_request(ProtocolVersion::V2026_07_28, &ClientCapabilities::default());
/// let discover = Request::new(1, "server/discover", Some(json!({"_meta": meta})));
/// tx.send(Message::Request(discover)).await?;
/// let Some(Message::Response(response)) = rx.recv().await? else { panic!("no response") };
/// assert!(response.result["supportedVersions"].is_array());
/// tx.close().await?;
/// # Ok(()) }
/// ```
pub struct HttpSender {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for HttpSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSender")
            .field("url", &super::redacted_url(self.shared.url.as_str()))
            .field("session", &lock(&self.shared.session).is_some())
            .finish()
    }
}

impl TransportSender for HttpSender {
    async fn send(&mut self, message: Message) -> Result<()> {
        if let Message::Error(ErrorResponse { id: None, .. }) = &message {
            // An error about an unreadable server message: nothing on the server can use it.
            tracing::debug!("not posting an id-less error response");
            return Ok(());
        }
        let out = Outgoing::of(&message);
        let with_session = out.stateless_version.is_none();
        let mut headers = self.shared.post_headers(&out);
        if let (Some(id), Some(method)) = (&out.id, out.method.as_deref()) {
            if method == names::TOOLS_LIST {
                lock(&self.shared.tools_list_ids).insert(id.clone());
            }
            if method == names::TOOLS_CALL && !with_session {
                match self.shared.param_headers(&message) {
                    Ok(params) => {
                        for (name, value) in params {
                            insert_owned(&mut headers, &name, &value);
                        }
                    }
                    Err((tool, detail)) => {
                        // Clients must not call a tool whose annotations are invalid.
                        self.shared.fail_with(
                            id,
                            format!("tool {tool:?} has invalid x-mcp-header annotations: {detail}"),
                            json!({ "transport": INVALID_TOOL_HEADERS, "tool": tool, "detail": detail }),
                        ).await;
                        return Ok(());
                    }
                }
            }
        }
        let body = message.encode();
        let stale = lock(&self.shared.session).clone().filter(|_| with_session);
        let sent_session = stale.is_some();
        let Some(id) = out.id.clone() else {
            // Notifications and responses: wait for the `202` so they stay in order.
            let mut response = self
                .shared
                .post(headers, body.clone())
                .await
                .map_err(|e| post_error("could not POST to the MCP endpoint", e))?;
            if let (StatusCode::NOT_FOUND, Some(stale)) = (response.status(), &stale) {
                if !self.shared.renew(stale).await {
                    return Err(session_expired());
                }
                let headers = self.shared.post_headers(&out);
                response = self
                    .shared
                    .post(headers, body)
                    .await
                    .map_err(|e| post_error("could not POST to the MCP endpoint", e))?;
            }
            let status = response.status();
            if status == StatusCode::NOT_FOUND && sent_session {
                return Err(session_expired());
            }
            if !status.is_success() {
                tracing::warn!(%status, method = ?out.method, "the server refused a message");
            }
            if out.method.as_deref() == Some(names::NOTIFICATIONS_INITIALIZED)
                && status.is_success()
            {
                Shared::open_standalone(&self.shared).await;
            }
            return Ok(());
        };
        let is_initialize = out.method.as_deref() == Some(names::INITIALIZE) && with_session;
        if is_initialize {
            *lock(&self.shared.hello) = Some(body.clone());
            // The session id must be known before anything else is sent.
            let response = match self.shared.post(headers, body).await {
                Ok(response) => response,
                Err(e) if RedirectRefused::find(&e).is_some() => {
                    self.shared.fail_post(&id, &e).await;
                    return Ok(());
                }
                Err(e) => return Err(Error::transport("could not POST initialize", e)),
            };
            if let Some(session) = response.headers().get(SESSION_ID).and_then(|v| v.to_str().ok())
            {
                *lock(&self.shared.session) = Some(session.to_owned());
                self.shared.handle.set(session, None);
            }
            let shared = self.shared.clone();
            self.shared.spawn(async move {
                shared.answer(id.clone(), true, false, response).await;
            });
            return Ok(());
        }
        let shared = self.shared.clone();
        self.shared.spawn(async move {
            let response = match shared.post(headers, body.clone()).await {
                Ok(r) if r.status() == StatusCode::NOT_FOUND && stale.is_some() => {
                    // The session expired: renew it and send the request once more.
                    let renewed = match &stale {
                        Some(stale) => shared.renew(stale).await,
                        None => false,
                    };
                    if !renewed {
                        let _ = shared.inbox.send(Err(session_expired())).await;
                        return;
                    }
                    let headers = shared.post_headers(&out);
                    shared.post(headers, body).await
                }
                other => other,
            };
            match response {
                Ok(response) => shared.answer(id, false, sent_session, response).await,
                Err(e) => shared.fail_post(&id, &e).await,
            }
        });
        Ok(())
    }

    /// Stops every stream and, in the 2025 era, ends the session with `DELETE` (unless the
    /// [`SessionHandle`] asks to keep it for a later resume).
    async fn close(self) -> Result<()> {
        for task in lock(&self.shared.tasks).drain(..) {
            task.abort();
        }
        let session = lock(&self.shared.session).take();
        if self.shared.handle.keeps_on_close() {
            tracing::debug!(kept = session.is_some(), "closing without ending the session");
            return Ok(());
        }
        if let Some(session) = session {
            let mut headers = self.shared.base_headers();
            self.shared.authorize(&mut headers, "DELETE");
            insert(&mut headers, SESSION_ID, &session);
            if let Some(v) = lock(&self.shared.version).clone() {
                insert(&mut headers, PROTOCOL_VERSION, &v);
            }
            match self.shared.http.delete(&self.shared.url).headers(headers).send().await {
                Ok(r)
                    if r.status().is_success() || r.status() == StatusCode::METHOD_NOT_ALLOWED => {}
                Ok(r) => tracing::debug!(status = %r.status(), "DELETE of the session refused"),
                Err(e) => tracing::debug!(error = %e, "DELETE of the session failed"),
            }
        }
        Ok(())
    }
}

/// The receiving half of an [`HttpTransport`]: every message from every response and stream.
///
/// # Examples
///
/// ```
/// use mcpl_client::transport::HttpTransport;
/// use mcpl_core::jsonrpc::{Message, Request};
/// use mcpl_core::transport::{Transport, TransportReceiver, TransportSender};
/// use serde_json::json;
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
/// let (mut tx, mut rx) = HttpTransport::new(url).start().await?;
/// // A 2025-era handshake, by hand.
/// let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
///     "clientInfo": {"name": "raw", "version": "1"}});
/// tx.send(Message::Request(Request::new(0, "initialize", Some(init)))).await?;
/// let Some(Message::Response(response)) = rx.recv().await? else { panic!("no response") };
/// assert_eq!(response.result["serverInfo"]["name"], "echo-server");
/// tx.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct HttpReceiver {
    inbox: mpsc::Receiver<Result<Message>>,
}

impl TransportReceiver for HttpReceiver {
    async fn recv(&mut self) -> Result<Option<Message>> {
        match self.inbox.recv().await {
            Some(Ok(message)) => Ok(Some(message)),
            Some(Err(e)) => Err(e),
            None => Ok(None),
        }
    }
}

/// The transport error of a `POST` that failed with `e`: a refused redirect is its source.
fn post_error(context: &str, e: reqwest::Error) -> Error {
    let source: mcpl_core::error::BoxError = match RedirectRefused::find(&e) {
        Some(refused) => Box::new(refused.clone()),
        None => Box::new(e),
    };
    Error::Transport { context: context.to_owned(), source: Some(source) }
}

fn session_expired() -> Error {
    Error::Transport {
        context: "session expired: the server no longer knows this session (HTTP 404)".into(),
        source: None,
    }
}

fn insert_owned(headers: &mut HeaderMap, name: &str, value: &str) {
    match (HeaderName::try_from(name), HeaderValue::from_str(value)) {
        (Ok(n), Ok(v)) => {
            headers.insert(n, v);
        }
        _ => tracing::warn!(header = name, "not representable as a header; omitted"),
    }
}

fn insert(headers: &mut HeaderMap, name: &'static str, value: &str) {
    match HeaderValue::from_str(value) {
        Ok(v) => {
            headers.insert(name, v);
        }
        Err(_) => tracing::warn!(header = name, "value not representable as a header; omitted"),
    }
}

/// Sets `Authorization` (and `DPoP`, for a DPoP-bound token) for a request of `method` to
/// `url`; the access token sent, if any.
#[cfg(feature = "auth")]
fn authorize(
    headers: &mut HeaderMap,
    auth: &crate::auth::OAuth,
    url: &str,
    method: &str,
) -> Option<String> {
    headers.remove(reqwest::header::AUTHORIZATION);
    headers.remove("dpop");
    let presented = auth.presentation(url, method)?;
    let mut value = HeaderValue::try_from(presented.authorization).ok()?;
    value.set_sensitive(true);
    headers.insert(reqwest::header::AUTHORIZATION, value);
    if let Some(proof) = presented.proof.and_then(|p| HeaderValue::try_from(p).ok()) {
        headers.insert("dpop", proof);
    }
    Some(presented.access_token)
}

/// How a request's stream ended.
enum StreamEnd {
    /// The response arrived.
    Answered,
    /// The stream ended first; resume after the last event id.
    Ended {
        last_id: Option<String>,
        retry: Option<Duration>,
        /// Whether the stream carried any event (a message, or an event id).
        progressed: bool,
    },
}

impl Shared {
    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let handle = tokio::spawn(task).abort_handle();
        let mut tasks = lock(&self.tasks);
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle);
    }

    fn base_headers(&self) -> HeaderMap {
        let mut headers = self.headers.clone();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        headers
    }

    /// Adds the OAuth credentials of a request of `method` (a DPoP proof is made for one
    /// request only).
    fn authorize(&self, headers: &mut HeaderMap, method: &str) {
        #[cfg(feature = "auth")]
        if let Some(auth) = &self.auth {
            authorize(headers, auth, &self.url, method);
        }
        #[cfg(not(feature = "auth"))]
        let _ = (headers, method);
    }

    /// POSTs `body`; with OAuth, a refusal runs the authorization flow and the POST is sent
    /// again with the new token (at most [`crate::auth::MAX_AUTHORIZATIONS`] times).
    async fn post(&self, headers: HeaderMap, body: Vec<u8>) -> reqwest::Result<reqwest::Response> {
        #[cfg(feature = "auth")]
        if let Some(auth) = &self.auth {
            let mut headers = headers;
            let mut attempts = 0;
            loop {
                let sent = authorize(&mut headers, auth, &self.url, "POST");
                let request = self.http.post(&self.url).headers(headers.clone());
                let response = request.body(body.clone()).send().await?;
                auth.take_nonce(&self.url, response.headers());
                let status = response.status();
                let refused = status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN;
                if !refused || attempts >= crate::auth::MAX_AUTHORIZATIONS {
                    return Ok(response);
                }
                attempts += 1;
                let challenge = response
                    .headers()
                    .get(reqwest::header::WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let outcome = auth
                    .handle_refusal(
                        &self.url,
                        status.as_u16(),
                        challenge.as_deref(),
                        sent.as_deref(),
                    )
                    .await;
                if let Err(e) = outcome {
                    tracing::warn!(error = %e, kind = e.kind(), "authorization failed");
                    return Ok(response);
                }
            }
        }
        self.http.post(&self.url).headers(headers).body(body).send().await
    }

    fn session_headers(&self) -> HeaderMap {
        let mut headers = self.base_headers();
        if let Some(session) = lock(&self.session).as_deref() {
            insert(&mut headers, SESSION_ID, session);
        }
        if let Some(version) = lock(&self.version).as_deref() {
            insert(&mut headers, PROTOCOL_VERSION, version);
        }
        headers
    }

    fn post_headers(&self, out: &Outgoing) -> HeaderMap {
        let mut headers = match &out.stateless_version {
            Some(version) => {
                let mut headers = self.base_headers();
                insert(&mut headers, PROTOCOL_VERSION, version);
                if let Some(method) = &out.method {
                    insert(&mut headers, MCP_METHOD, method);
                }
                if let Some(name) = &out.name {
                    insert(&mut headers, MCP_NAME, &header_text(name));
                }
                headers
            }
            None => self.session_headers(),
        };
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers
    }

    /// Delivers a message from the server, learning tool annotations from `tools/list`
    /// results on the way.
    async fn deliver(&self, message: Message) {
        if let Message::Response(r) = &message {
            if lock(&self.tools_list_ids).remove(&r.id) {
                self.tool_headers.learn(&r.result);
            }
        } else if let Message::Error(e) = &message {
            if let Some(id) = &e.id {
                lock(&self.tools_list_ids).remove(id);
            }
        }
        let _ = self.inbox.send(Ok(message)).await;
    }

    /// The `Mcp-Param-*` headers of a `tools/call`, or the tool and why it must not be called.
    fn param_headers(&self, message: &Message) -> Result<Vec<(String, String)>, (String, String)> {
        match message {
            Message::Request(r) => match r.params.as_ref().and_then(Value::as_object) {
                Some(params) => self.tool_headers.for_call(params),
                None => Ok(Vec::new()),
            },
            _ => Ok(Vec::new()),
        }
    }

    /// Answers request `id`, whose `POST` failed with `e`.
    async fn fail_post(&self, id: &RequestId, e: &reqwest::Error) {
        match RedirectRefused::find(e) {
            Some(refused) => self.refuse_redirect(id, refused).await,
            None => self.fail(id, format!("could not POST the request: {e}")).await,
        }
    }

    /// Answers request `id` with the refusal of a redirect.
    async fn refuse_redirect(&self, id: &RequestId, refused: &RedirectRefused) {
        self.fail_with(id, format!("{refused}"), refused.to_data()).await;
    }

    /// Answers request `id` with a transport error.
    async fn fail(&self, id: &RequestId, context: String) {
        self.fail_with(id, context, json!({ "transport": "http" })).await;
    }

    async fn fail_with(&self, id: &RequestId, context: String, data: Value) {
        tracing::debug!(%id, %context, "request failed in the HTTP transport");
        let error = ErrorObject::new(ErrorCode::INTERNAL_ERROR, context).with_data(data);
        self.deliver(ErrorResponse::new(Some(id.clone()), error).into()).await;
    }

    async fn too_large(&self, id: &RequestId) {
        self.fail_with(
            id,
            format!("the response exceeds the limit of {} bytes", self.max),
            json!({ "transport": TOO_LARGE, "limit": self.max }),
        )
        .await;
    }

    /// Reads the response to request `id` and delivers what it carries.
    async fn answer(
        self: Arc<Self>,
        id: RequestId,
        initialize: bool,
        sent_session: bool,
        response: reqwest::Response,
    ) {
        let status = response.status();
        if status == StatusCode::NOT_FOUND && sent_session {
            let _ = self.inbox.send(Err(session_expired())).await;
            return;
        }
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            // Authorization failures carry OAuth bodies, not JSON-RPC: hand the caller the
            // status and the challenge so it can authorize and retry.
            let challenge = response
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            self.fail_with(
                &id,
                format!("HTTP {status}: the server requires authorization"),
                json!({ "transport": "http", "status": status.as_u16(), "wwwAuthenticate": challenge }),
            ).await;
            return;
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        if content_type.starts_with("text/event-stream") && status.is_success() {
            let end = self.read_sse(response, Some(&id), initialize).await;
            self.resume(id, initialize, end).await;
            return;
        }
        if content_type.starts_with("application/json") {
            match read_limited(response, self.max).await {
                Ok(body) => match Message::decode(&body) {
                    Ok(message) => {
                        if initialize {
                            self.learn_version(&message);
                        }
                        let answers = matches!(&message, Message::Response(_) | Message::Error(_))
                            && message.id() == Some(&id);
                        let id_less_error = matches!(&message, Message::Error(e) if e.id.is_none());
                        if id_less_error {
                            // A refusal that could not name the request: answer it here.
                            if let Message::Error(e) = message {
                                let error = e.error;
                                self.deliver(ErrorResponse::new(Some(id), error).into()).await;
                            }
                            return;
                        }
                        self.deliver(message).await;
                        if !answers {
                            self.fail(&id, format!("HTTP {status}: the body did not answer")).await;
                        }
                    }
                    Err(e) => self.fail(&id, format!("HTTP {status}: unreadable body: {e}")).await,
                },
                Err(ReadError::TooLarge) => self.too_large(&id).await,
                Err(ReadError::Http(e)) => {
                    self.fail(&id, format!("reading the body failed: {e}")).await
                }
            }
            return;
        }
        self.fail_with(
            &id,
            format!("HTTP {status} with no JSON-RPC response"),
            json!({ "transport": "http", "status": status.as_u16() }),
        )
        .await;
    }

    /// Records the version an `initialize` result names, for the `MCP-Protocol-Version` header.
    fn learn_version(&self, message: &Message) {
        if let Message::Response(r) = message {
            if let Some(v) = r.result.get("protocolVersion").and_then(Value::as_str) {
                *lock(&self.version) = Some(v.to_owned());
                self.handle.set_protocol_version(v);
            }
        }
    }

    /// Resumes a request's stream that ended before its response.
    async fn resume(self: Arc<Self>, id: RequestId, initialize: bool, mut end: StreamEnd) {
        let mut attempts = 0;
        loop {
            let (last_id, retry) = match end {
                StreamEnd::Answered => return,
                StreamEnd::Ended { last_id: Some(last_id), retry, .. } => (last_id, retry),
                StreamEnd::Ended { last_id: None, .. } => {
                    self.fail(&id, "the response stream ended before the response".into()).await;
                    return;
                }
            };
            if attempts >= self.max_resume {
                self.fail(&id, format!("the response stream ended; {attempts} resumptions failed"))
                    .await;
                return;
            }
            attempts += 1;
            tokio::time::sleep(backoff(retry, self.min_retry, 0)).await;
            let mut headers = self.session_headers();
            self.authorize(&mut headers, "GET");
            headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
            insert(&mut headers, LAST_EVENT_ID, &last_id);
            let response =
                match self.http.request(Method::GET, &self.url).headers(headers).send().await {
                    Ok(r) => r,
                    Err(e) => {
                        if let Some(refused) = RedirectRefused::find(&e) {
                            self.refuse_redirect(&id, refused).await;
                            return;
                        }
                        tracing::debug!(error = %e, "resumption GET failed");
                        end = StreamEnd::Ended { last_id: Some(last_id), retry, progressed: false };
                        continue;
                    }
                };
            let status = response.status();
            if status == StatusCode::NOT_FOUND && lock(&self.session).is_some() {
                // The stream belonged to a session the server forgot: renew the session for
                // later requests; this one's answer is lost with it.
                let stale = lock(&self.session).clone().unwrap_or_default();
                if self.renew(&stale).await {
                    self.fail(&id, "the session expired while the response was pending".into())
                        .await;
                } else {
                    let _ = self.inbox.send(Err(session_expired())).await;
                }
                return;
            }
            if !status.is_success() {
                self.fail(&id, format!("resuming the response stream got HTTP {status}")).await;
                return;
            }
            end = match self.read_sse(response, Some(&id), initialize).await {
                StreamEnd::Ended { last_id: new_id, retry: new_retry, progressed } => {
                    StreamEnd::Ended {
                        last_id: new_id.or(Some(last_id)),
                        retry: new_retry.or(retry),
                        progressed,
                    }
                }
                answered => answered,
            };
        }
    }

    /// Renews the session `stale` that the server no longer knows (HTTP 404): replays the
    /// `initialize` request, adopts the new session id, sends `notifications/initialized` and
    /// hands the new `initialize` result to the client as the local notification
    /// [`SESSION_RENEWED`]. Concurrent callers renew once. Returns whether a session is live.
    async fn renew(&self, stale: &str) -> bool {
        let _renewing = self.renewing.lock().await;
        if let Some(current) = lock(&self.session).clone() {
            if current != stale {
                return true;
            }
        }
        let Some(hello) = lock(&self.hello).clone() else { return false };
        let n = self.renewals.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::info!(renewal = n, "the server forgot the session; initializing again");
        match self.reinitialize(&hello, n).await {
            Ok((session, result)) => {
                let version = result.get("protocolVersion").and_then(Value::as_str);
                // The owner's handle follows, so that a snapshot taken from now on holds the
                // new session, not the one the server forgot.
                self.handle.set(&session, version);
                *lock(&self.session) = Some(session);
                if let Some(v) = version {
                    *lock(&self.version) = Some(v.to_owned());
                }
                let mut headers = self.session_headers();
                self.authorize(&mut headers, "POST");
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                let initialized =
                    json!({"jsonrpc": "2.0", "method": names::NOTIFICATIONS_INITIALIZED});
                let sent = self
                    .http
                    .post(&self.url)
                    .headers(headers)
                    .body(initialized.to_string())
                    .send()
                    .await;
                if let Err(e) = sent {
                    tracing::debug!(error = %e, "notifications/initialized after renewal failed");
                }
                let renewed = Notification::new(SESSION_RENEWED, Some(result));
                self.deliver(renewed.into()).await;
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "renewing the session failed");
                *lock(&self.session) = None;
                self.handle.clear();
                false
            }
        }
    }

    /// Sends `hello` (an `initialize` request) under a fresh id; returns the new session id
    /// and the result.
    async fn reinitialize(
        &self,
        hello: &[u8],
        n: u64,
    ) -> std::result::Result<(String, Value), String> {
        let mut request: Value = serde_json::from_slice(hello).map_err(|e| e.to_string())?;
        let id = format!("mcpl-renew-{n}");
        request["id"] = json!(id);
        let mut headers = self.base_headers();
        self.authorize(&mut headers, "POST");
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let response = self
            .http
            .post(&self.url)
            .headers(headers)
            .body(request.to_string())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("initialize got HTTP {status}"));
        }
        let session = response
            .headers()
            .get(SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or("the server assigned no session")?;
        let sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/event-stream"));
        let id = RequestId::String(id);
        let answer = if sse {
            let mut parser = SseParser::new(self.max);
            let mut stream = response.bytes_stream();
            let mut found = None;
            'read: while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| e.to_string())?;
                for event in parser.feed(&chunk) {
                    let Ok(data) = event else { continue };
                    match Message::decode(data.as_bytes()) {
                        Ok(m) if m.id() == Some(&id) => {
                            found = Some(m);
                            break 'read;
                        }
                        Ok(other) => self.deliver(other).await,
                        Err(_) => {}
                    }
                }
            }
            found.ok_or("the initialize stream ended without a result")?
        } else {
            let body = read_limited(response, self.max).await.map_err(|_| "unreadable body")?;
            Message::decode(&body).map_err(|e| e.to_string())?
        };
        match answer {
            Message::Response(r) => Ok((session, r.result)),
            Message::Error(e) => Err(format!("initialize failed: {}", e.error.message)),
            _ => Err("initialize got no response".to_owned()),
        }
    }

    /// Opens the standalone `GET` stream of a 2025 session.
    ///
    /// Returns once the server answered the first `GET` (or after [`STANDALONE_WAIT`]), so that
    /// what the server sends on the stream right after the handshake is not lost. Reading
    /// continues in the background: when the stream ends, it is reopened with `Last-Event-ID`
    /// after the server's `retry` (default 500 ms); failed attempts back off exponentially
    /// (capped at 30 s) and give up after `max_resume_attempts` in a row.
    async fn open_standalone(shared: &Arc<Self>) {
        if !shared.standalone || lock(&shared.session).is_none() {
            return;
        }
        let first = tokio::time::timeout(STANDALONE_WAIT, shared.get_stream(None)).await.ok();
        let this = shared.clone();
        shared.spawn(async move { this.standalone_loop(first).await });
    }

    /// `GET` of the session's event stream, after `last_id` if given.
    async fn get_stream(&self, last_id: Option<&str>) -> reqwest::Result<reqwest::Response> {
        let mut headers = self.session_headers();
        self.authorize(&mut headers, "GET");
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(last) = last_id {
            insert(&mut headers, LAST_EVENT_ID, last);
        }
        self.http.get(&self.url).headers(headers).send().await
    }

    async fn standalone_loop(
        self: Arc<Self>,
        mut next: Option<reqwest::Result<reqwest::Response>>,
    ) {
        let mut last_id: Option<String> = None;
        let mut retry = None;
        let mut failures: u32 = 0;
        loop {
            let response = match next.take() {
                Some(response) => response,
                None => self.get_stream(last_id.as_deref()).await,
            };
            match response {
                Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                    tracing::debug!("the server offers no standalone stream");
                    return;
                }
                Ok(r) if r.status() == StatusCode::NOT_FOUND => {
                    let stale = lock(&self.session).clone().unwrap_or_default();
                    if !self.renew(&stale).await {
                        let _ = self.inbox.send(Err(session_expired())).await;
                        return;
                    }
                    // A new session: its stream starts afresh.
                    last_id = None;
                    continue;
                }
                Ok(r) if r.status() == StatusCode::CONFLICT => {
                    // A continued (resumed) session whose previous stream the server has not
                    // seen end yet: try again after the backoff, within the same bound.
                    failures += 1;
                    tracing::debug!(failures, "the standalone stream is still taken; retrying");
                    if failures > self.max_resume {
                        return;
                    }
                }
                Ok(r) if r.status().is_success() => {
                    let opened = tokio::time::Instant::now();
                    if let StreamEnd::Ended { last_id: l, retry: r, progressed } =
                        self.read_sse(r, None, false).await
                    {
                        last_id = l.or(last_id);
                        retry = r.or(retry);
                        if progressed || opened.elapsed() >= SHORT_STREAM {
                            failures = 0;
                        } else {
                            // Ended at once with nothing in it: an attempt that failed.
                            failures += 1;
                            tracing::debug!(failures, "the standalone stream ended empty");
                            if failures > self.max_resume {
                                return;
                            }
                        }
                    }
                }
                Ok(r) => {
                    tracing::debug!(status = %r.status(), "standalone stream refused");
                    return;
                }
                Err(e) if RedirectRefused::find(&e).is_some() => {
                    tracing::debug!(error = %e, "the standalone stream was redirected; not reopening");
                    return;
                }
                Err(e) => {
                    failures += 1;
                    tracing::debug!(error = %e, failures, "standalone stream failed");
                    if failures > self.max_resume {
                        return;
                    }
                }
            }
            tokio::time::sleep(backoff(retry, self.min_retry, failures)).await;
        }
    }

    /// Reads an SSE stream, delivering every message, until it ends or answers `id`.
    async fn read_sse(
        &self,
        response: reqwest::Response,
        id: Option<&RequestId>,
        initialize: bool,
    ) -> StreamEnd {
        let mut parser = SseParser::new(self.max);
        let mut stream = response.bytes_stream();
        let mut delivered = false;
        while let Some(chunk) = stream.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(e) => {
                    tracing::debug!(error = %e, "SSE stream broke");
                    break;
                }
            };
            for event in parser.feed(&chunk) {
                let data = match event {
                    Ok(data) => data,
                    Err(ReadError::TooLarge) => {
                        if let Some(id) = id {
                            self.too_large(id).await;
                            return StreamEnd::Answered;
                        }
                        tracing::warn!(limit = self.max, "SSE event over the size limit; dropped");
                        continue;
                    }
                    Err(ReadError::Http(_)) => continue,
                };
                match Message::decode(data.as_bytes()) {
                    Ok(message) => {
                        let answers = id.is_some()
                            && matches!(&message, Message::Response(_) | Message::Error(_))
                            && message.id() == id;
                        if answers && initialize {
                            self.learn_version(&message);
                        }
                        delivered = true;
                        self.deliver(message).await;
                        if answers {
                            return StreamEnd::Answered;
                        }
                    }
                    Err(e) => {
                        let _ = self.inbox.send(Err(Error::InvalidMessage(Box::new(e)))).await;
                    }
                }
            }
        }
        let progressed = delivered || parser.last_id.is_some();
        StreamEnd::Ended { last_id: parser.last_id, retry: parser.retry, progressed }
    }
}

enum ReadError {
    TooLarge,
    Http(reqwest::Error),
}

async fn read_limited(response: reqwest::Response, max: usize) -> Result<Vec<u8>, ReadError> {
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(ReadError::TooLarge);
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(ReadError::Http)?;
        if body.len() + chunk.len() > max {
            return Err(ReadError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// An incremental parser for `text/event-stream`: yields the `data` of each event that has any.
struct SseParser {
    max: usize,
    line: Vec<u8>,
    data: String,
    has_data: bool,
    oversized: bool,
    last_id: Option<String>,
    retry: Option<Duration>,
    pending_cr: bool,
}

impl SseParser {
    fn new(max: usize) -> Self {
        SseParser {
            max,
            line: Vec::new(),
            data: String::new(),
            has_data: false,
            oversized: false,
            last_id: None,
            retry: None,
            pending_cr: false,
        }
    }

    fn feed(&mut self, bytes: &[u8]) -> Vec<Result<String, ReadError>> {
        let mut events = Vec::new();
        for &b in bytes {
            if self.pending_cr {
                self.pending_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' | b'\r' => {
                    self.pending_cr = b == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.line_done(&line) {
                        events.push(event);
                    }
                }
                _ => {
                    if self.line.len() <= self.max {
                        self.line.push(b);
                    } else {
                        self.oversized = true;
                    }
                }
            }
        }
        events
    }

    fn line_done(&mut self, line: &[u8]) -> Option<Result<String, ReadError>> {
        if line.is_empty() {
            // Dispatch.
            let oversized = std::mem::take(&mut self.oversized);
            let has_data = std::mem::take(&mut self.has_data);
            let data = std::mem::take(&mut self.data);
            if oversized {
                return Some(Err(ReadError::TooLarge));
            }
            if !has_data || data.trim().is_empty() {
                return None;
            }
            return Some(Ok(data));
        }
        if line[0] == b':' {
            return None;
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                if self.data.len() + value.len() > self.max {
                    self.oversized = true;
                } else {
                    self.data.push_str(value);
                }
            }
            "id" if !value.contains('\0') => {
                self.last_id = Some(value.to_owned()).filter(|v| !v.is_empty());
            }
            "retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;

    fn ok(events: Vec<Result<String, ReadError>>) -> Vec<String> {
        events.into_iter().map(|e| e.unwrap_or_else(|_| panic!("too large"))).collect()
    }

    #[test]
    fn sse_multi_line_data_ids_retry_comments_and_priming() {
        let mut p = SseParser::new(1024);
        let text =
            ": comment\r\nid: 1\r\ndata:\r\n\r\nid: 2\nretry: 250\ndata: {\"a\":\ndata: 1}\n\n";
        // Fed byte by byte to exercise split chunks.
        let mut events = Vec::new();
        for b in text.as_bytes() {
            events.extend(p.feed(std::slice::from_ref(b)));
        }
        assert_eq!(ok(events), vec!["{\"a\":\n1}".to_owned()]);
        assert_eq!(p.last_id.as_deref(), Some("2"));
        assert_eq!(p.retry, Some(Duration::from_millis(250)));
    }

    #[test]
    fn the_retry_delay_has_a_floor_and_a_ceiling() {
        let floor = DEFAULT_MIN_RETRY;
        assert_eq!(backoff(Some(Duration::ZERO), floor, 0), floor);
        assert_eq!(backoff(Some(Duration::ZERO), floor, 2), floor * 4);
        assert_eq!(backoff(None, floor, 0), DEFAULT_RETRY);
        assert_eq!(backoff(Some(Duration::from_secs(3600)), floor, 0), MAX_RETRY);
        assert_eq!(backoff(Some(Duration::from_secs(1)), floor, 40), MAX_RETRY);
    }

    #[test]
    fn sse_oversized_event_is_reported() {
        let mut p = SseParser::new(8);
        let events = p.feed(b"data: 0123456789abcdef\n\ndata: ok\n\n");
        assert!(matches!(events[0], Err(ReadError::TooLarge)));
        assert_eq!(events.len(), 2);
        assert!(matches!(&events[1], Ok(d) if d == "ok"));
    }
}
