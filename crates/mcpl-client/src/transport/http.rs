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
//! to [`Error::MessageTooLarge`]. A `404` for a request that carried a session id means the
//! session expired: the connection ends with a transport error "session expired" and pending
//! requests fail with `ConnectionClosed`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject, ErrorResponse, Message, RequestId};
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

/// The `Mcp-Session-Id` header.
pub const SESSION_ID: &str = "mcp-session-id";
/// The `MCP-Protocol-Version` header.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The `Mcp-Method` header (2026 era).
pub const MCP_METHOD: &str = "mcp-method";
/// The `Mcp-Name` header (2026 era).
pub const MCP_NAME: &str = "mcp-name";
/// The `Last-Event-ID` header.
pub const LAST_EVENT_ID: &str = "last-event-id";

/// The value of `data.transport` on the error answering a request whose response exceeded the
/// size limit.
pub const TOO_LARGE: &str = "message-too-large";

/// How long to wait before resuming a stream when the server did not say.
const DEFAULT_RETRY: Duration = Duration::from_millis(500);
/// The longest `retry` honoured.
const MAX_RETRY: Duration = Duration::from_secs(30);

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
#[derive(Debug)]
#[must_use]
pub struct HttpTransport {
    url: String,
    http: Option<reqwest::Client>,
    headers: HeaderMap,
    max_response_size: usize,
    max_resume_attempts: u32,
    standalone_stream: bool,
    session: SessionHandle,
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
            standalone_stream: self.standalone_stream,
            session: self.session.detached_copy(),
        }
    }
}

impl HttpTransport {
    /// The endpoint at `url`, such as `http://127.0.0.1:3000/mcp`.
    pub fn new(url: impl Into<String>) -> Self {
        HttpTransport {
            url: url.into(),
            http: None,
            headers: HeaderMap::new(),
            max_response_size: DEFAULT_MAX_MESSAGE_SIZE,
            max_resume_attempts: 3,
            standalone_stream: true,
            session: SessionHandle::new(),
        }
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
    /// client with reqwest's defaults.
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// Sends `name: value` with every HTTP request (for example `Authorization`).
    ///
    /// # Errors
    ///
    /// `Transport` if the name or value is not a valid header.
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
    pub fn max_response_size(mut self, bytes: usize) -> Self {
        self.max_response_size = bytes;
        self
    }

    /// How many times a request's SSE stream that ended early is resumed. Default: 3.
    pub fn max_resume_attempts(mut self, attempts: u32) -> Self {
        self.max_resume_attempts = attempts;
        self
    }

    /// Whether to open the standalone `GET` stream after the 2025 handshake. Default: `true`.
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
                .build()
                .map_err(|e| Error::transport("could not build the HTTP client", e))?,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            http,
            url: self.url,
            headers: self.headers,
            max: self.max_response_size,
            max_resume: self.max_resume_attempts,
            standalone: self.standalone_stream,
            session: Mutex::new(self.session.id()),
            version: Mutex::new(self.session.protocol_version()),
            handle: self.session,
            inbox: tx,
            tasks: Mutex::new(Vec::new()),
        });
        if lock(&shared.session).is_some() {
            // A continued session: its standalone stream reopens at once.
            Shared::open_standalone(&shared);
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
    standalone: bool,
    session: Mutex<Option<String>>,
    version: Mutex<Option<String>>,
    /// The owner's view of the session (see [`SessionHandle`]).
    handle: SessionHandle,
    inbox: mpsc::UnboundedSender<Result<Message>>,
    tasks: Mutex<Vec<AbortHandle>>,
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
pub struct HttpSender {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for HttpSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSender")
            .field("url", &self.shared.url)
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
        let body = message.encode();
        let with_session = out.stateless_version.is_none();
        let headers = self.shared.post_headers(&out);
        let sent_session = with_session && headers.contains_key(SESSION_ID);
        let request = self.shared.http.post(&self.shared.url).headers(headers).body(body);
        let Some(id) = out.id.clone() else {
            // Notifications and responses: wait for the `202` so they stay in order.
            let response = request
                .send()
                .await
                .map_err(|e| Error::transport("could not POST to the MCP endpoint", e))?;
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
                Shared::open_standalone(&self.shared);
            }
            return Ok(());
        };
        let is_initialize = out.method.as_deref() == Some(names::INITIALIZE) && with_session;
        if is_initialize {
            // The session id must be known before anything else is sent.
            let response = request
                .send()
                .await
                .map_err(|e| Error::transport("could not POST initialize", e))?;
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
            match request.send().await {
                Ok(response) => shared.answer(id, false, sent_session, response).await,
                Err(e) => shared.fail(&id, format!("could not POST the request: {e}")),
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
#[derive(Debug)]
pub struct HttpReceiver {
    inbox: mpsc::UnboundedReceiver<Result<Message>>,
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

fn session_expired() -> Error {
    Error::Transport {
        context: "session expired: the server no longer knows this session (HTTP 404)".into(),
        source: None,
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

/// How a request's stream ended.
enum StreamEnd {
    /// The response arrived.
    Answered,
    /// The stream ended first; resume after the last event id.
    Ended { last_id: Option<String>, retry: Option<Duration> },
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

    /// Delivers a message from the server.
    fn deliver(&self, message: Message) {
        let _ = self.inbox.send(Ok(message));
    }

    /// Answers request `id` with a transport error.
    fn fail(&self, id: &RequestId, context: String) {
        self.fail_with(id, context, json!({ "transport": "http" }));
    }

    fn fail_with(&self, id: &RequestId, context: String, data: Value) {
        tracing::debug!(%id, %context, "request failed in the HTTP transport");
        let error = ErrorObject::new(ErrorCode::INTERNAL_ERROR, context).with_data(data);
        self.deliver(ErrorResponse::new(Some(id.clone()), error).into());
    }

    fn too_large(&self, id: &RequestId) {
        self.fail_with(
            id,
            format!("the response exceeds the limit of {} bytes", self.max),
            json!({ "transport": TOO_LARGE, "limit": self.max }),
        );
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
            let _ = self.inbox.send(Err(session_expired()));
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
            );
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
                                self.deliver(ErrorResponse::new(Some(id), error).into());
                            }
                            return;
                        }
                        self.deliver(message);
                        if !answers {
                            self.fail(&id, format!("HTTP {status}: the body did not answer"));
                        }
                    }
                    Err(e) => self.fail(&id, format!("HTTP {status}: unreadable body: {e}")),
                },
                Err(ReadError::TooLarge) => self.too_large(&id),
                Err(ReadError::Http(e)) => self.fail(&id, format!("reading the body failed: {e}")),
            }
            return;
        }
        self.fail(&id, format!("HTTP {status} with no JSON-RPC response"));
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
                StreamEnd::Ended { last_id: Some(last_id), retry } => (last_id, retry),
                StreamEnd::Ended { last_id: None, .. } => {
                    self.fail(&id, "the response stream ended before the response".into());
                    return;
                }
            };
            if attempts >= self.max_resume {
                self.fail(&id, format!("the response stream ended; {attempts} resumptions failed"));
                return;
            }
            attempts += 1;
            tokio::time::sleep(retry.unwrap_or(DEFAULT_RETRY).min(MAX_RETRY)).await;
            let mut headers = self.session_headers();
            headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
            insert(&mut headers, LAST_EVENT_ID, &last_id);
            let response =
                match self.http.request(Method::GET, &self.url).headers(headers).send().await {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::debug!(error = %e, "resumption GET failed");
                        end = StreamEnd::Ended { last_id: Some(last_id), retry };
                        continue;
                    }
                };
            let status = response.status();
            if status == StatusCode::NOT_FOUND && lock(&self.session).is_some() {
                let _ = self.inbox.send(Err(session_expired()));
                return;
            }
            if !status.is_success() {
                self.fail(&id, format!("resuming the response stream got HTTP {status}"));
                return;
            }
            end = match self.read_sse(response, Some(&id), initialize).await {
                StreamEnd::Ended { last_id: new_id, retry: new_retry } => StreamEnd::Ended {
                    last_id: new_id.or(Some(last_id)),
                    retry: new_retry.or(retry),
                },
                answered => answered,
            };
        }
    }

    /// Opens the standalone `GET` stream of a 2025 session.
    fn open_standalone(shared: &Arc<Self>) {
        if !shared.standalone || lock(&shared.session).is_none() {
            return;
        }
        let this = shared.clone();
        shared.spawn(async move {
            let mut last_id: Option<String> = None;
            let mut retry = None;
            let mut attempts = 0;
            loop {
                let mut headers = this.session_headers();
                headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
                if let Some(last) = &last_id {
                    insert(&mut headers, LAST_EVENT_ID, last);
                }
                match this.http.get(&this.url).headers(headers).send().await {
                    Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                        tracing::debug!("the server offers no standalone stream");
                        return;
                    }
                    Ok(r) if r.status() == StatusCode::NOT_FOUND => {
                        let _ = this.inbox.send(Err(session_expired()));
                        return;
                    }
                    Ok(r) if r.status() == StatusCode::CONFLICT => {
                        // A continued session whose previous stream the server has not seen
                        // end yet: try again after the delay.
                        tracing::debug!("the standalone stream is still taken; retrying");
                    }
                    Ok(r) if r.status().is_success() => {
                        attempts = 0;
                        if let StreamEnd::Ended { last_id: l, retry: r } =
                            this.read_sse(r, None, false).await
                        {
                            last_id = l.or(last_id);
                            retry = r.or(retry);
                        }
                    }
                    Ok(r) => {
                        tracing::debug!(status = %r.status(), "standalone stream refused");
                        return;
                    }
                    Err(e) => tracing::debug!(error = %e, "standalone stream failed"),
                }
                attempts += 1;
                if attempts > this.max_resume {
                    return;
                }
                tokio::time::sleep(retry.unwrap_or(DEFAULT_RETRY).min(MAX_RETRY)).await;
            }
        });
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
                            self.too_large(id);
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
                        self.deliver(message);
                        if answers {
                            return StreamEnd::Answered;
                        }
                    }
                    Err(e) => {
                        let _ = self.inbox.send(Err(Error::InvalidMessage(Box::new(e))));
                    }
                }
            }
        }
        StreamEnd::Ended { last_id: parser.last_id, retry: parser.retry }
    }
}

/// Encodes a value for `Mcp-Name`: as is when it is visible ASCII, otherwise with the Base64
/// sentinel form `=?base64?…?=`.
fn header_text(value: &str) -> String {
    let visible = value.bytes().all(|b| (0x20..0x7f).contains(&b));
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let looks_encoded = value.starts_with("=?base64?") && value.ends_with("?=");
    let plain = visible && !padded && !looks_encoded;
    if plain { value.to_owned() } else { format!("=?base64?{}?=", base64(value.as_bytes())) }
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
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
    fn sse_oversized_event_is_reported() {
        let mut p = SseParser::new(8);
        let events = p.feed(b"data: 0123456789abcdef\n\ndata: ok\n\n");
        assert!(matches!(events[0], Err(ReadError::TooLarge)));
        assert_eq!(events.len(), 2);
        assert!(matches!(&events[1], Ok(d) if d == "ok"));
    }

    #[test]
    fn mcp_name_is_base64_when_not_plain_ascii() {
        assert_eq!(header_text("get_weather"), "get_weather");
        assert_eq!(header_text("héllo"), format!("=?base64?{}?=", base64("héllo".as_bytes())));
        assert_eq!(base64(b"Hello"), "SGVsbG8=");
        assert_eq!(base64(b"Hi"), "SGk=");
        assert_eq!(base64(b"abc"), "YWJj");
    }
}
