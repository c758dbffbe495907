//! What the sender, the streams and the session renewal share: the HTTP client, the session,
//! the headers every request carries, and how a response becomes messages or a typed failure.

use std::collections::HashSet;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::Either;
use mcpl_core::jsonrpc::{ErrorResponse, Message, RequestId};
use mcpl_core::transport::{Incoming, SessionHandle, TransportEvent};
use mcpl_core::types::{meta_keys, names};
use mcpl_core::{Error, Result};
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::body::{ReadError, read_limited, read_snippet};
use super::{LAST_EVENT_ID, MCP_METHOD, MCP_NAME, PROTOCOL_VERSION, SESSION_ID};
use crate::transport::failure;
use crate::transport::headers::{ToolHeaders, header_text};

pub(super) struct Shared {
    pub(super) http: reqwest::Client,
    pub(super) url: String,
    /// `url` parsed once, so that a request does not parse it again (`None` if it does not
    /// parse: every request then fails as reqwest reports it).
    pub(super) parsed: Option<reqwest::Url>,
    /// The URL without credentials, for errors and logs.
    pub(super) endpoint: String,
    /// The connect timeout of the transport's own client (unknown for the caller's).
    pub(super) connect_timeout: Option<Duration>,
    pub(super) headers: HeaderMap,
    /// The headers every 2026-era `POST` at one protocol version carries (`headers`, `Accept`,
    /// `Content-Type`, `MCP-Protocol-Version`), made once per version rather than per request.
    pub(super) stateless_headers: Mutex<Option<(String, HeaderMap)>>,
    pub(super) max: usize,
    pub(super) max_resume: u32,
    pub(super) min_retry: Duration,
    pub(super) standalone: bool,
    pub(super) session: Mutex<Option<String>>,
    pub(super) version: Mutex<Option<String>>,
    /// The `x-mcp-header` annotations learnt from `tools/list` results.
    pub(super) tool_headers: ToolHeaders,
    /// The ids of `tools/list` requests in flight, whose results teach `tool_headers`.
    pub(super) tools_list_ids: Mutex<HashSet<RequestId>>,
    /// The owner's view of the session (see [`SessionHandle`]).
    pub(super) handle: SessionHandle,
    pub(super) inbox: mpsc::Sender<Result<Incoming>>,
    pub(super) tasks: Mutex<Vec<AbortHandle>>,
    /// Cancelled when the transport closes: the POSTs of requests sent apart end then.
    pub(super) stop: mcpl_core::engine::CancellationToken,
    /// The body of the `initialize` request, replayed to renew an expired session.
    pub(super) hello: Mutex<Option<Vec<u8>>>,
    /// Held while a session is renewed, so that concurrent 404s renew it once.
    pub(super) renewing: tokio::sync::Mutex<()>,
    /// Counts renewals, for the ids of the replayed `initialize`.
    pub(super) renewals: AtomicU64,
    #[cfg(feature = "auth")]
    pub(super) auth: Option<Arc<crate::auth::OAuth>>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What an outgoing message means for the HTTP exchange (borrowed from the message).
pub(super) struct Outgoing<'a> {
    /// The request's id, for requests.
    pub(super) id: Option<&'a RequestId>,
    /// The request's method, for requests and notifications.
    pub(super) method: Option<&'a str>,
    /// The protocol version in `params._meta`, for 2026-era requests.
    pub(super) stateless_version: Option<&'a str>,
    /// The `Mcp-Name` value, for the methods that need one.
    pub(super) name: Option<&'a str>,
}

impl Outgoing<'static> {
    /// A message of a 2025 session, whose headers depend on nothing in it.
    pub(super) const SESSION: Outgoing<'static> =
        Outgoing { id: None, method: None, stateless_version: None, name: None };
}

impl<'a> Outgoing<'a> {
    pub(super) fn of(message: &'a Message) -> Outgoing<'a> {
        let (id, method, params) = match message {
            Message::Request(r) => (Some(&r.id), Some(r.method.as_str()), r.params.as_ref()),
            Message::Notification(n) => (None, Some(n.method.as_str()), n.params.as_ref()),
            _ => (None, None, None),
        };
        let stateless_version = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(meta_keys::PROTOCOL_VERSION))
            .and_then(Value::as_str);
        let name_key = match method {
            Some(names::TOOLS_CALL | names::PROMPTS_GET) => Some("name"),
            Some(names::RESOURCES_READ) => Some("uri"),
            Some("tasks/get" | "tasks/update" | "tasks/cancel") => Some("taskId"),
            _ => None,
        };
        let name = name_key.and_then(|k| params.and_then(|p| p.get(k))).and_then(Value::as_str);
        Outgoing { id, method, stateless_version, name }
    }
}

/// The names of the headers the transport sets, made once: a name given as a string is parsed
/// on every insert, and one that is not a standard header is copied too.
pub(super) static SESSION_ID_HEADER: HeaderName = HeaderName::from_static(SESSION_ID);
/// `MCP-Protocol-Version`.
pub(super) static PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static(PROTOCOL_VERSION);
/// `Mcp-Method`.
pub(super) static MCP_METHOD_HEADER: HeaderName = HeaderName::from_static(MCP_METHOD);
/// `Mcp-Name`.
pub(super) static MCP_NAME_HEADER: HeaderName = HeaderName::from_static(MCP_NAME);
/// `Last-Event-ID`.
pub(super) static LAST_EVENT_ID_HEADER: HeaderName = HeaderName::from_static(LAST_EVENT_ID);

/// The `Mcp-Method` values of the methods a client sends most, made once (checked when the
/// crate is built).
static METHOD_VALUES: [(&str, HeaderValue); 10] = [
    (names::TOOLS_CALL, HeaderValue::from_static(names::TOOLS_CALL)),
    (names::TOOLS_LIST, HeaderValue::from_static(names::TOOLS_LIST)),
    (names::RESOURCES_READ, HeaderValue::from_static(names::RESOURCES_READ)),
    (names::RESOURCES_LIST, HeaderValue::from_static(names::RESOURCES_LIST)),
    (names::RESOURCES_TEMPLATES_LIST, HeaderValue::from_static(names::RESOURCES_TEMPLATES_LIST)),
    (names::PROMPTS_GET, HeaderValue::from_static(names::PROMPTS_GET)),
    (names::PROMPTS_LIST, HeaderValue::from_static(names::PROMPTS_LIST)),
    (names::COMPLETION_COMPLETE, HeaderValue::from_static(names::COMPLETION_COMPLETE)),
    (names::SERVER_DISCOVER, HeaderValue::from_static(names::SERVER_DISCOVER)),
    (names::SUBSCRIPTIONS_LISTEN, HeaderValue::from_static(names::SUBSCRIPTIONS_LISTEN)),
];

/// The `Mcp-Method` value of `method`; `None` if it is not representable as a header value.
pub(super) fn method_value(method: &str) -> Option<HeaderValue> {
    match METHOD_VALUES.iter().find(|(known, _)| *known == method) {
        Some((_, value)) => Some(value.clone()),
        None => HeaderValue::from_str(method).ok(),
    }
}

/// The media type of a JSON body, as a `Content-Type` starts (any case).
const JSON: &str = "application/json";

/// The `WWW-Authenticate` challenge of `response`, if it carries one.
fn challenge(response: &reqwest::Response) -> Option<String> {
    let value = response.headers().get(reqwest::header::WWW_AUTHENTICATE)?;
    value.to_str().ok().map(str::to_owned)
}

pub(super) fn session_expired() -> Error {
    Error::Transport {
        context: "session expired: the server no longer knows this session (HTTP 404)".into(),
        source: None,
    }
}

pub(super) fn insert_owned(headers: &mut HeaderMap, name: &str, value: &str) {
    match (HeaderName::try_from(name), HeaderValue::from_str(value)) {
        (Ok(n), Ok(v)) => {
            headers.insert(n, v);
        }
        _ => tracing::warn!(header = name, "not representable as a header; omitted"),
    }
}

pub(super) fn insert(headers: &mut HeaderMap, name: &HeaderName, value: &str) {
    match HeaderValue::from_str(value) {
        Ok(v) => {
            headers.insert(name.clone(), v);
        }
        Err(_) => {
            tracing::warn!(header = name.as_str(), "value not representable as a header; omitted");
        }
    }
}

/// Sets `Authorization` (and `DPoP`, for a DPoP-bound token) for a request of `method` to
/// `url`; the access token sent, if any.
#[cfg(feature = "auth")]
pub(super) fn authorize(
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

/// Room for the headers a request adds to the ones it starts from (accept, content type,
/// version, session, method and name, a tool's parameters).
const HEADER_ROOM: usize = 8;

/// A copy of `headers` with [`HEADER_ROOM`] entries to spare: a clone has none, so the headers
/// each request adds would grow it (its entries and its index made again, per request).
fn with_room(headers: &HeaderMap) -> HeaderMap {
    let Ok(mut copy) = HeaderMap::try_with_capacity(headers.len() + HEADER_ROOM) else {
        return headers.clone();
    };
    for (name, value) in headers {
        copy.append(name.clone(), value.clone());
    }
    copy
}

impl Shared {
    pub(super) fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let handle = tokio::spawn(task).abort_handle();
        let mut tasks = lock(&self.tasks);
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle);
    }

    /// A request of `method` to the endpoint.
    pub(super) fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        match &self.parsed {
            Some(url) => self.http.request(method, url.clone()),
            None => self.http.request(method, &self.url),
        }
    }

    pub(super) fn base_headers(&self) -> HeaderMap {
        let mut headers = with_room(&self.headers);
        headers.insert(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        headers
    }

    /// Adds the OAuth credentials of a request of `method` (a DPoP proof is made for one
    /// request only).
    pub(super) fn authorize(&self, headers: &mut HeaderMap, method: &str) {
        #[cfg(feature = "auth")]
        if let Some(auth) = &self.auth {
            authorize(headers, auth, &self.url, method);
        }
        #[cfg(not(feature = "auth"))]
        let _ = (headers, method);
    }

    /// POSTs `body`; with OAuth, a refusal runs the authorization flow and the POST is sent
    /// again with the new token (at most [`crate::auth::MAX_AUTHORIZATIONS`] times).
    pub(super) async fn post(
        &self,
        headers: HeaderMap,
        body: Vec<u8>,
    ) -> reqwest::Result<reqwest::Response> {
        #[cfg(feature = "auth")]
        if let Some(auth) = &self.auth {
            let mut headers = headers;
            let mut attempts = 0;
            loop {
                let sent = authorize(&mut headers, auth, &self.url, "POST");
                let response = self.post_once(headers.clone(), body.clone()).await?;
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
                // Boxed: the authorization flow's future is large, and rarely runs.
                let outcome = Box::pin(auth.handle_refusal(
                    &self.url,
                    status.as_u16(),
                    challenge.as_deref(),
                    sent.as_deref(),
                ))
                .await;
                if let Err(e) = outcome {
                    tracing::warn!(error = %e, kind = e.kind(), "authorization failed");
                    return Ok(response);
                }
            }
        }
        self.post_once(headers, body).await
    }

    /// One `POST` of `body` with exactly `headers` (the client's default headers are added by
    /// reqwest). The request is made directly rather than through a `RequestBuilder`, which
    /// would merge the headers into an empty map one by one.
    async fn post_once(
        &self,
        headers: HeaderMap,
        body: Vec<u8>,
    ) -> reqwest::Result<reqwest::Response> {
        let request = match &self.parsed {
            Some(url) => {
                let mut request = reqwest::Request::new(reqwest::Method::POST, url.clone());
                *request.headers_mut() = headers;
                *request.body_mut() = Some(body.into());
                request
            }
            // Fails as reqwest reports an unparsable URL.
            None => self.http.post(&self.url).headers(headers).body(body).build()?,
        };
        self.http.execute(request).await
    }

    pub(super) fn session_headers(&self) -> HeaderMap {
        let mut headers = self.base_headers();
        if let Some(session) = lock(&self.session).as_deref() {
            insert(&mut headers, &SESSION_ID_HEADER, session);
        }
        if let Some(version) = lock(&self.version).as_deref() {
            insert(&mut headers, &PROTOCOL_VERSION_HEADER, version);
        }
        headers
    }

    /// The headers of a `POST` of `out`.
    pub(super) fn post_headers(&self, out: &Outgoing<'_>) -> HeaderMap {
        match out.stateless_version {
            Some(version) => {
                let mut headers = self.stateless_headers(version);
                if let Some(method) = out.method {
                    match method_value(method) {
                        Some(value) => {
                            headers.insert(MCP_METHOD_HEADER.clone(), value);
                        }
                        None => tracing::warn!(
                            header = MCP_METHOD,
                            "value not representable as a header; omitted"
                        ),
                    }
                }
                if let Some(name) = out.name {
                    // The encoded text is moved into the header value, not copied.
                    match HeaderValue::try_from(header_text(name)) {
                        Ok(value) => {
                            headers.insert(MCP_NAME_HEADER.clone(), value);
                        }
                        Err(_) => tracing::warn!(
                            header = MCP_NAME,
                            "value not representable as a header; omitted"
                        ),
                    }
                }
                headers
            }
            None => {
                let mut headers = self.session_headers();
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                headers
            }
        }
    }

    /// The headers every 2026-era `POST` at `version` carries: made on the first request at
    /// that version, then copied.
    fn stateless_headers(&self, version: &str) -> HeaderMap {
        let mut made = lock(&self.stateless_headers);
        if let Some((known, headers)) = made.as_ref()
            && known == version
        {
            return with_room(headers);
        }
        let mut headers = self.base_headers();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        insert(&mut headers, &PROTOCOL_VERSION_HEADER, version);
        *made = Some((version.to_owned(), headers.clone()));
        headers
    }

    /// Delivers a message from the server, learning tool annotations from `tools/list`
    /// results on the way.
    pub(super) async fn deliver(&self, message: Message) {
        self.learn(&message);
        let _ = self.inbox.send(Ok(Incoming::Message(message))).await;
    }

    /// What the transport learns from a message of the server before it is delivered: the
    /// tool annotations of a `tools/list` result.
    pub(super) fn learn(&self, message: &Message) {
        if let Message::Response(r) = message {
            if lock(&self.tools_list_ids).remove(&r.id) {
                self.tool_headers.learn(&r.result.to_value());
            }
        } else if let Message::Error(e) = message
            && let Some(id) = &e.id
        {
            lock(&self.tools_list_ids).remove(id);
        }
    }

    /// The `Mcp-Param-*` headers of a `tools/call`, or the tool and why it must not be called.
    pub(super) fn param_headers(
        &self,
        message: &Message,
    ) -> Result<Vec<(String, String)>, (String, String)> {
        match message {
            Message::Request(r) => match r.params.as_ref().and_then(Value::as_object) {
                Some(params) => self.tool_headers.for_call(params),
                None => Ok(Vec::new()),
            },
            _ => Ok(Vec::new()),
        }
    }

    /// The typed error of an exchange that failed with `e`.
    pub(super) fn failed(&self, e: reqwest::Error) -> Error {
        failure::http(&self.endpoint, e, self.connect_timeout)
    }

    /// Fails request `id`, whose `POST` failed with `e`; a server found gone (see
    /// [`failure::gone`]) ends the connection too.
    pub(super) async fn fail_post(&self, id: &RequestId, e: reqwest::Error) {
        let gone = failure::gone(&e);
        let error = self.failed(e);
        let gone = gone.then(|| failure::copy(&error));
        self.fail(id, error).await;
        if let Some(gone) = gone {
            tracing::debug!(error = %gone, "the server cannot be reached; the connection ends");
            self.end(gone).await;
        }
    }

    /// Fails request `id` with `error`, told to the engine beside the server's messages.
    pub(super) async fn fail(&self, id: &RequestId, error: Error) {
        tracing::debug!(%id, error = %error, "request failed in the HTTP transport");
        lock(&self.tools_list_ids).remove(id);
        let failed = TransportEvent::RequestFailed { id: id.clone(), error };
        let _ = self.inbox.send(Ok(Incoming::Event(failed))).await;
    }

    /// Ends the connection with `error`.
    pub(super) async fn end(&self, error: Error) {
        let _ = self.inbox.send(Err(error)).await;
    }

    /// Reads the response to request `id` and delivers what it carries, except the answer
    /// to the request when the body holds it alone: that one is returned, for the caller to
    /// hand to the engine directly (see [`mcpl_core::transport::SendApart`]) or to deliver.
    ///
    /// A JSON body, the common case, is read by a future that holds only what it needs (it
    /// is boxed for every request); every other response is served by a boxed future of its
    /// own, and the JSON path's rare turns are boxed where they start.
    pub(super) fn answer(
        self: Arc<Self>,
        id: RequestId,
        initialize: bool,
        sent_session: bool,
        response: reqwest::Response,
    ) -> impl Future<Output = Option<Message>> + Send + 'static {
        let status = response.status();
        let json = !(status == StatusCode::NOT_FOUND && sent_session)
            && status != StatusCode::UNAUTHORIZED
            && status != StatusCode::FORBIDDEN
            && response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(
                |v| v.get(..JSON.len()).is_some_and(|start| start.eq_ignore_ascii_case(JSON)),
            );
        if !json {
            let other = self.answer_other(id, initialize, sent_session, response);
            return Either::Right(Box::pin(other));
        }
        let challenge = challenge(&response);
        Either::Left(async move {
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
                            // A refusal that could not name the request: it answers this one.
                            let Message::Error(e) = message else { return None };
                            let answer = ErrorResponse::new(Some(id), e.error).into();
                            self.learn(&answer);
                            return Some(answer);
                        }
                        if answers {
                            self.learn(&message);
                            return Some(message);
                        }
                        Box::pin(self.deliver(message)).await;
                        let detail = format!("HTTP {status}: the body does not answer the request");
                        let error = Error::ProtocolViolation { detail, source: None };
                        Box::pin(self.fail(&id, error)).await;
                    }
                    Err(_) if !status.is_success() => {
                        let error =
                            Error::http_status(status.as_u16(), &body, challenge.as_deref());
                        Box::pin(self.fail(&id, error)).await;
                    }
                    Err(e) => {
                        let detail = format!("HTTP {status}: the body is not a JSON-RPC message");
                        let error = Error::ProtocolViolation { detail, source: Some(Box::new(e)) };
                        Box::pin(self.fail(&id, error)).await;
                    }
                },
                Err(ReadError::TooLarge) => Box::pin(self.too_large(&id)).await,
                Err(ReadError::Http(e)) => Box::pin(self.fail(&id, self.failed(e))).await,
            }
            None
        })
    }

    /// [`answer`](Self::answer) for every response but a JSON body.
    async fn answer_other(
        self: Arc<Self>,
        id: RequestId,
        initialize: bool,
        sent_session: bool,
        response: reqwest::Response,
    ) -> Option<Message> {
        let status = response.status();
        if status == StatusCode::NOT_FOUND && sent_session {
            Box::pin(self.end(session_expired())).await;
            return None;
        }
        let challenge = challenge(&response);
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            // Authorization failures carry OAuth bodies, not JSON-RPC: hand the caller the
            // status and the challenge so it can authorize and retry.
            let body = Box::pin(read_snippet(response)).await;
            let error = Error::http_status(status.as_u16(), &body, challenge.as_deref());
            Box::pin(self.fail(&id, error)).await;
            return None;
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        if content_type.starts_with("text/event-stream") && status.is_success() {
            // Boxed: the stream's futures are large, and a JSON answer does not need them.
            let end = Box::pin(self.read_sse(response, Some(&id), initialize)).await;
            Box::pin(self.resume(id, initialize, end)).await;
            return None;
        }
        // JSON bodies are read by `answer` itself.
        if !status.is_success() {
            let body = Box::pin(read_snippet(response)).await;
            let error = Error::http_status(status.as_u16(), &body, challenge.as_deref());
            Box::pin(self.fail(&id, error)).await;
            return None;
        }
        let shown: String = content_type.chars().take(100).collect();
        let detail =
            format!("HTTP {status} with content type {shown:?}, neither JSON nor an event stream");
        Box::pin(self.fail(&id, Error::ProtocolViolation { detail, source: None })).await;
        None
    }

    /// Fails request `id`, whose response exceeds the size limit.
    pub(super) async fn too_large(&self, id: &RequestId) {
        self.fail(id, Error::MessageTooLarge { limit: self.max }).await;
    }

    /// Records the version an `initialize` result names, for the `MCP-Protocol-Version` header.
    pub(super) fn learn_version(&self, message: &Message) {
        if let Message::Response(r) = message
            && let Some(v) = r.result.to_value().get("protocolVersion").and_then(Value::as_str)
        {
            *lock(&self.version) = Some(v.to_owned());
            self.handle.set_protocol_version(v);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use mcpl_core::jsonrpc::Request;
    use mcpl_core::transport::Transport;
    use serde_json::json;

    use super::*;
    use crate::transport::HttpTransport;

    fn call(version: &str, method: &str, name: &str) -> Message {
        let meta = json!({ meta_keys::PROTOCOL_VERSION: version });
        Request::new(7, method, Some(json!({"name": name, "_meta": meta}))).into()
    }

    fn text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
        headers.get(name).and_then(|v| v.to_str().ok())
    }

    #[test]
    fn a_copy_with_room_keeps_every_value_and_takes_a_requests_headers_without_growing() {
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", HeaderValue::from_static("k"));
        headers.append("x-tag", HeaderValue::from_static("a"));
        headers.append("x-tag", HeaderValue::from_static("b"));
        let mut copy = with_room(&headers);
        assert_eq!(copy, headers);
        let room = copy.capacity();
        for i in 0..HEADER_ROOM {
            let name = HeaderName::from_bytes(format!("x-added-{i}").as_bytes()).unwrap();
            copy.insert(name, HeaderValue::from_static("v"));
        }
        assert_eq!(copy.capacity(), room, "no growth for the headers a request adds");
        assert_eq!(copy.get_all("x-tag").iter().count(), 2);
    }

    #[tokio::test]
    async fn stateless_headers_are_made_once_per_version_and_follow_each_message() {
        let transport = HttpTransport::new("http://127.0.0.1:9/mcp").header("x-api-key", "k");
        let (sender, _receiver) = transport.unwrap().start().await.unwrap();
        let shared = &sender.shared;
        for (version, method, name) in [
            ("2026-07-28", "tools/call", "echo"),
            ("2026-07-28", "prompts/get", "greet"),
            // A version the transport has not seen: the kept headers are made anew.
            ("2099-01-01", "tools/call", "echo"),
            ("2026-07-28", "tools/call", "é"),
        ] {
            let message = call(version, method, name);
            let headers = shared.post_headers(&Outgoing::of(&message));
            assert_eq!(text(&headers, PROTOCOL_VERSION), Some(version));
            assert_eq!(text(&headers, MCP_METHOD), Some(method));
            assert_eq!(text(&headers, MCP_NAME), Some(header_text(name).as_str()));
            assert_eq!(text(&headers, "x-api-key"), Some("k"));
            assert_eq!(text(&headers, "content-type"), Some("application/json"));
            assert_eq!(text(&headers, "accept"), Some("application/json, text/event-stream"));
            assert!(headers.get(SESSION_ID).is_none());
            assert_eq!(headers.len(), 6, "{headers:?}");
        }
        let kept = lock(&shared.stateless_headers).as_ref().map(|(v, _)| v.clone());
        assert_eq!(kept.as_deref(), Some("2026-07-28"));
        // Session-era messages carry the session's headers, not the stateless ones.
        *lock(&shared.session) = Some("s-1".into());
        let message: Message = Request::new(8, "tools/call", Some(json!({"name": "echo"}))).into();
        let headers = shared.post_headers(&Outgoing::of(&message));
        assert_eq!(text(&headers, SESSION_ID), Some("s-1"));
        assert!(headers.get(MCP_METHOD).is_none());
        assert_eq!(text(&headers, "content-type"), Some("application/json"));
    }

    #[test]
    fn method_values_match_their_methods() {
        for (method, value) in &METHOD_VALUES {
            assert_eq!(value.to_str().unwrap(), *method);
        }
        assert_eq!(method_value("tools/call").unwrap(), "tools/call");
        assert_eq!(method_value("x/custom").unwrap(), "x/custom");
        assert!(method_value("bad\nmethod").is_none());
    }
}
