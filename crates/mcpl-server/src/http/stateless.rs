//! The stateless (2026-07-28) era: every POST is one self-describing request, served by a
//! fresh single-use transport.
//!
//! The endpoint makes one per POST and serving consumes it, so it serves exactly once by
//! construction: the request runs inline on the HTTP task through
//! [`Engine::run_request`](mcpl_core::Engine::run_request), what its handler sends as it goes
//! reaches the client through the sending half of a [`StatelessTransport`]
//! ([`StatelessSender`]) when the client asked for progress or log messages, and the answer is
//! written by the endpoint (a tool's result straight from its type). [`StatelessTransport`]
//! itself, whose clones share one use and refuse a second with
//! [`Error::StatelessTransportReuse`], serves an engine of your own the same way.
//!
//! Checks run in the order the protocol fixes: the required `_meta` keys (`-32602`), the HTTP
//! headers against the body (`-32020`), the protocol version (`-32022`), the method (`-32601`,
//! HTTP 404), then the method itself. Results get `resultType`, the server's identity in
//! `_meta`, and caching hints where the revision requires them.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::http::header::AsHeaderName;
use axum::http::{HeaderMap, HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use futures::StreamExt;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender};
use mcpl_core::engine::{Engine, LazyMeta};
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject, ErrorResponse, Message, Request, RequestId};
use mcpl_core::transport::{Transport, TransportReceiver, TransportSender};
use mcpl_core::types::{SubscriptionFilter, meta_keys, names};
use mcpl_core::{Era, Error, ProtocolVersion, Result};
use serde::Deserialize as _;
use serde_json::{Map, Value, json};

use super::auth::AccessToken;
use super::sse::{self, SseEvent};
use super::stateless_body::{Incoming, MetaFacts};
use super::{PROTOCOL_VERSION, StreamableHttp, json_body};
use crate::context::{ClientState, Context, SharedClientState};
use crate::events::ServerEvent;
use crate::router::Reply;

/// The `Mcp-Method` header.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::http::stateless::MCP_METHOD, "mcp-method");
/// ```
pub const MCP_METHOD: &str = "mcp-method";
/// The `Mcp-Name` header.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::http::stateless::MCP_NAME, "mcp-name");
/// ```
pub const MCP_NAME: &str = "mcp-name";
/// The prefix of the headers mirrored from `x-mcp-header` tool arguments.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::http::stateless::MCP_PARAM_PREFIX, "mcp-param-");
/// ```
pub const MCP_PARAM_PREFIX: &str = "mcp-param-";

use crate::stateless_era::REMOVED;

/// Whether a POST belongs to the stateless era: its `_meta` names a protocol version, or its
/// `MCP-Protocol-Version` header names a stateless-era revision.
pub(crate) fn is_stateless(message: &Message, headers: &HeaderMap) -> bool {
    let params = match message {
        Message::Request(r) => r.params.as_ref(),
        Message::Notification(n) => n.params.as_ref(),
        _ => None,
    };
    let in_meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(meta_keys::PROTOCOL_VERSION))
        .is_some();
    in_meta || stateless_header(headers)
}

/// Whether the `MCP-Protocol-Version` header names a stateless-era revision.
pub(crate) fn stateless_header(headers: &HeaderMap) -> bool {
    headers
        .get(&PROTOCOL_VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(ProtocolVersion::parse)
        .is_some_and(|v| v.era() == Era::Stateless)
}

/// A stateless-era refusal: an HTTP status and a JSON-RPC error answering `id`.
fn refuse(status: StatusCode, id: Option<RequestId>, error: ErrorObject) -> Response {
    json_body(status, &Message::Error(ErrorResponse::new(id, error)))
}

fn mismatch(id: &RequestId, detail: impl std::fmt::Display) -> Response {
    refuse(
        StatusCode::BAD_REQUEST,
        Some(id.clone()),
        ErrorObject::new(ErrorCode::HEADER_MISMATCH, format!("Header mismatch: {detail}")),
    )
}

/// The HTTP status for a JSON-RPC error answered as a single JSON body.
fn status_for(error: &ErrorObject) -> StatusCode {
    match error.code {
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        ErrorCode::HEADER_MISMATCH
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// Trims optional whitespace and decodes the `=?base64?…?=` form.
fn header_value(raw: &str, allow_base64: bool) -> Option<Cow<'_, str>> {
    let v = raw.trim_matches([' ', '\t']);
    if allow_base64 {
        if let Some(inner) = v.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) {
            let bytes = base64::engine::general_purpose::STANDARD.decode(inner).ok()?;
            return String::from_utf8(bytes).ok().map(Cow::Owned);
        }
    }
    Some(Cow::Borrowed(v))
}

fn header(headers: &HeaderMap, name: impl AsHeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The headers read on every request, parsed once.
const PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static(PROTOCOL_VERSION);
const METHOD_HEADER: HeaderName = HeaderName::from_static(MCP_METHOD);
const NAME_HEADER: HeaderName = HeaderName::from_static(MCP_NAME);

/// A tool argument as its `Mcp-Param-*` header would carry it.
fn header_form(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn same_param(header: &str, body: &Value) -> bool {
    match body {
        Value::Number(n) => header.parse::<f64>().ok().zip(n.as_f64()).is_some_and(|(a, b)| a == b),
        other => header_form(other).is_some_and(|b| b == header),
    }
}

/// Checks `Mcp-Param-*` headers of a `tools/call` against the tool's `x-mcp-header`
/// arguments (top-level properties).
fn check_param_headers(
    http: &StreamableHttp,
    headers: &HeaderMap,
    params: &Map<String, Value>,
) -> Result<(), String> {
    let Some(name) = params.get("name").and_then(Value::as_str) else { return Ok(()) };
    let checked = http.inner.server.with_tool_definition(name, |tool| {
        let Some(properties) = tool.input_schema.properties.as_ref() else { return Ok(()) };
        check_tool_headers(properties, headers, params)
    });
    checked.unwrap_or(Ok(()))
}

/// Checks the `Mcp-Param-*` headers against the `x-mcp-header` properties of one tool.
fn check_tool_headers(
    properties: &Map<String, Value>,
    headers: &HeaderMap,
    params: &Map<String, Value>,
) -> Result<(), String> {
    let arguments = params.get("arguments").and_then(Value::as_object);
    for (property, schema) in properties {
        let Some(header_name) = schema.get("x-mcp-header").and_then(Value::as_str) else {
            continue;
        };
        let full = format!("{MCP_PARAM_PREFIX}{}", header_name.to_ascii_lowercase());
        let body = arguments.and_then(|a| a.get(property)).filter(|v| !v.is_null());
        let sent = header(headers, &full);
        match (body, sent) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(format!("missing Mcp-Param-{header_name}"));
            }
            (None, Some(_)) => {
                return Err(format!("Mcp-Param-{header_name} without its argument"));
            }
            (Some(body), Some(raw)) => match header_value(raw, true) {
                Some(v) if same_param(&v, body) => {}
                _ => {
                    return Err(format!("Mcp-Param-{header_name} differs from the body"));
                }
            },
        }
    }
    Ok(())
}

/// Serves one stateless-era POST read by the general decoder.
pub(crate) async fn serve(
    http: StreamableHttp,
    headers: HeaderMap,
    message: Message,
    token: Option<Arc<AccessToken>>,
) -> Response {
    let request = match message {
        Message::Request(r) => r,
        // No client notification means anything over stateless HTTP; accept and ignore.
        Message::Notification(_) => return StatusCode::ACCEPTED.into_response(),
        Message::Response(_) | Message::Error(_) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                None,
                ErrorObject::invalid_request("clients send no responses in the stateless era"),
            );
        }
    };
    let meta = request.params.as_ref().and_then(|p| p.get("_meta")).and_then(Value::as_object);
    let facts = MetaFacts::of_tree(meta);
    serve_request(http, headers, request, None, facts, token).await
}

/// Serves one stateless-era POST read straight from its body (see `stateless_body`).
pub(crate) async fn serve_read(
    http: StreamableHttp,
    headers: HeaderMap,
    read: Incoming,
    token: Option<Arc<AccessToken>>,
) -> Response {
    serve_request(http, headers, read.request, read.meta, read.facts, token).await
}

/// Serves `request`, whose `_meta` is in its params or, read on demand, in `raw_meta`; `facts`
/// are what the checks read of it; `token` is the request's verified access token, if any.
async fn serve_request(
    http: StreamableHttp,
    headers: HeaderMap,
    request: Request,
    raw_meta: Option<LazyMeta>,
    facts: MetaFacts,
    token: Option<Arc<AccessToken>>,
) -> Response {
    let id = request.id.clone();
    let no_params = Map::new();
    let params = request.params.as_ref().and_then(Value::as_object).unwrap_or(&no_params);
    let MetaFacts { version, capabilities, log_level, progress } = facts;

    // (a) The required `_meta` keys.
    let (Some(version), Some(_)) = (version.as_deref(), capabilities.as_ref()) else {
        return refuse(
            StatusCode::BAD_REQUEST,
            Some(id),
            ErrorObject::invalid_params(format_args!(
                "_meta must carry {} and {}",
                meta_keys::PROTOCOL_VERSION,
                meta_keys::CLIENT_CAPABILITIES
            )),
        );
    };

    // (b) Headers against the body.
    match header(&headers, &PROTOCOL_VERSION_HEADER).map(|v| v.trim_matches([' ', '\t'])) {
        Some(v) if v == version => {}
        Some(_) => return mismatch(&id, "MCP-Protocol-Version differs from _meta"),
        None => return mismatch(&id, "missing MCP-Protocol-Version"),
    }
    match header(&headers, &METHOD_HEADER).map(|v| v.trim_matches([' ', '\t'])) {
        Some(m) if m == request.method => {}
        Some(_) => return mismatch(&id, "Mcp-Method differs from the body"),
        None => return mismatch(&id, "missing Mcp-Method"),
    }
    let name_field = match request.method.as_str() {
        names::TOOLS_CALL | names::PROMPTS_GET => Some("name"),
        names::RESOURCES_READ => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    };
    if let Some(field) = name_field {
        let body = params.get(field).and_then(Value::as_str);
        let sent = header(&headers, &NAME_HEADER).and_then(|raw| header_value(raw, true));
        match (body, sent) {
            (Some(b), Some(s)) if b == s => {}
            (_, None) => return mismatch(&id, "missing Mcp-Name"),
            _ => return mismatch(&id, "Mcp-Name differs from the body"),
        }
    }
    if request.method == names::TOOLS_CALL {
        if let Err(detail) = check_param_headers(&http, &headers, params) {
            return mismatch(&id, detail);
        }
    }

    // (c) The protocol version.
    if ProtocolVersion::parse(version).is_none_or(|v| v.era() != Era::Stateless) {
        return refuse(
            StatusCode::BAD_REQUEST,
            Some(id),
            crate::stateless_era::unsupported_version(version),
        );
    }

    // (d) The method.
    if REMOVED.contains(&request.method.as_str()) {
        return refuse(
            StatusCode::NOT_FOUND,
            Some(id),
            ErrorObject::method_not_found(&request.method),
        );
    }
    let log_level = match log_level {
        Ok(level) => level,
        Err(e) => {
            return refuse(StatusCode::BAD_REQUEST, Some(id), ErrorObject::invalid_params(e));
        }
    };
    if progress == Some(false) {
        return refuse(StatusCode::BAD_REQUEST, Some(id), crate::router::invalid_progress_token());
    }
    if request.method == names::SERVER_DISCOVER {
        return json_body(
            StatusCode::OK,
            &Message::Response(mcpl_core::jsonrpc::Response::new(id, discover(&http))),
        );
    }
    if request.method == names::SUBSCRIPTIONS_LISTEN {
        return listen(&http, request);
    }

    // (e) The method itself, served inline on this task.
    let streaming = progress.is_some() || log_level.is_some();
    let cacheable = crate::stateless_era::cacheable(&request.method);
    // The client state the handler reads, from the facts already read (not from `_meta` again).
    let client: SharedClientState = Arc::new(Mutex::new(ClientState {
        version: ProtocolVersion::parse(version),
        client_capabilities: capabilities.flatten(),
        log_level,
        ..ClientState::default()
    }));
    // The engine runs the router inline on this task and hands its answer back: this
    // endpoint writes it (a tool's result straight from its type, see `wire_reply`).
    let call = Call {
        engine: http.stateless_engine(),
        server: http.inner.server.clone(),
        request,
        meta: raw_meta,
        client,
        token,
    };
    let decorate = Decorator { http: http.clone(), cacheable };
    if streaming {
        // What the handler sends as it goes (progress, log messages) is streamed before the
        // answer.
        let (sender, output) = StatelessSender::for_request(id.clone());
        let stop = super::stop_at_shutdown(&http, true);
        sse(id, output, Box::pin(call.run(sender)), decorate, (http.inner.config.keep_alive, stop))
    } else {
        // Without a progress token or log level nothing but the answer is wanted. (Boxed: the
        // handler's future is large, and the HTTP layer moves this one around.)
        let outcome = Box::pin(call.run(Discard)).await;
        json_reply(&id, outcome, &decorate)
    }
}

/// One stateless request, ready to be served: the endpoint's single-use transport for one
/// POST. Serving consumes it ([`Call::run`]), so it cannot serve twice.
struct Call {
    engine: Engine,
    server: crate::Server,
    request: Request,
    meta: Option<LazyMeta>,
    client: SharedClientState,
    token: Option<Arc<AccessToken>>,
}

impl Call {
    /// Serves the request inline on this task, sending what its handler sends as it goes
    /// through `sender`, and gives the router's answer (`None` if `sender` failed: the
    /// response can no longer be written).
    async fn run<S: TransportSender>(self, mut sender: S) -> Option<Outcome> {
        let Call { engine, server, request, meta, client, token } = self;
        let Request { id, method, params } = request;
        let run = engine.run_request(id, method, meta, None, &mut sender, |ctx| {
            let method = ctx.method().to_owned();
            let ctx = Context::new(ctx, client).with_access_token(token);
            async move {
                let reply = crate::router::dispatch_reply(&server, ctx, &method, params);
                crate::router::unwinding(&method, reply).await
            }
        });
        match run.await {
            Ok(outcome) => Some(outcome),
            Err(e) => {
                tracing::debug!(error = %e, "stateless request ended early");
                None
            }
        }
    }
}

/// Serves the request and gives the router's answer (`None` if the response can no longer be
/// written); polled by whoever writes the HTTP response, and dropped (cancelling the handler)
/// when the client goes away.
type Driver = std::pin::Pin<Box<dyn std::future::Future<Output = Option<Outcome>> + Send>>;

/// How the router answered.
type Outcome = std::result::Result<Reply, ErrorObject>;

/// A sender that drops what it is given: for a request whose client asked for nothing but the
/// answer (no progress token, no log level).
struct Discard;

impl TransportSender for Discard {
    async fn send(&mut self, _message: Message) -> Result<()> {
        Ok(())
    }

    async fn close(self) -> Result<()> {
        Ok(())
    }
}

/// Adds what every stateless-era result carries.
struct Decorator {
    http: StreamableHttp,
    /// The method, if its results carry caching hints.
    cacheable: Option<&'static str>,
}

impl Decorator {
    /// Adds the caching hints to a cacheable method's answer.
    fn apply(&self, outcome: Outcome) -> Outcome {
        let Some(method) = self.cacheable else { return outcome };
        let mut value = outcome?.into_value()?;
        if let Value::Object(result) = &mut value {
            decorate_result(&self.http, method, result);
        }
        Ok(Reply::Value(value))
    }

    /// The answer to request `id` as it goes on the wire, with the HTTP status of a single
    /// JSON body.
    fn answer(&self, id: &RequestId, outcome: Option<Outcome>) -> (StatusCode, Vec<u8>) {
        let outcome = outcome
            .unwrap_or_else(|| Err(ErrorObject::internal("the request ended without a response")));
        let error = match self.apply(outcome) {
            Ok(reply) => match wire_reply(id, reply, &self.http.inner.server_info_json) {
                Ok(body) => return (StatusCode::OK, body),
                Err(e) => ErrorObject::internal(e),
            },
            Err(error) => error,
        };
        let status = status_for(&error);
        let message = Message::Error(ErrorResponse::new(Some(id.clone()), error));
        (status, serde_json::to_vec(&message).unwrap_or_default())
    }
}

/// Adds the caching hints of a cacheable result. `resultType` (when absent: `complete`) and
/// `_meta.serverInfo` are added as the result is serialized (see `WithServerInfo`): the server's
/// identity is written from the endpoint's copy, never cloned into each result.
fn decorate_result(http: &StreamableHttp, method: &str, result: &mut Map<String, Value>) {
    crate::stateless_era::cache_hints(
        &http.inner.server,
        method,
        http.inner.config.cache_ttl,
        result,
    );
}

fn discover(http: &StreamableHttp) -> Value {
    let mut result = crate::stateless_era::discover_result(&http.inner.server);
    decorate_result(http, names::SERVER_DISCOVER, &mut result);
    result.entry("resultType").or_insert_with(|| json!("complete"));
    let meta = result.entry("_meta").or_insert_with(|| json!({}));
    if let Some(meta) = meta.as_object_mut() {
        meta.entry(meta_keys::SERVER_INFO).or_insert_with(|| http.inner.server_info.clone());
    }
    Value::Object(result)
}

/// A stateless-era message as it goes on the wire. A response's result gains `resultType`
/// (`complete`, unless the handler set one) and `_meta` with the server's identity (unless the
/// handler set one), written from the endpoint's serialized copy (`server_info`, JSON) instead
/// of being inserted into each result.
fn wire(message: &Message, server_info: &str) -> serde_json::Result<Vec<u8>> {
    let result = match message {
        Message::Response(response) => match &response.result {
            Value::Object(result) => Some((&response.id, result)),
            _ => None,
        },
        _ => None,
    };
    let Some((id, result)) = result else { return serde_json::to_vec(message) };
    let mut out = Vec::with_capacity(256 + server_info.len());
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut out, id)?;
    out.extend_from_slice(br#","result":{"#);
    let mut first = true;
    let mut comma = |out: &mut Vec<u8>| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
    };
    if !result.contains_key("resultType") {
        comma(&mut out);
        out.extend_from_slice(br#""resultType":"complete""#);
    }
    if !result.contains_key("_meta") {
        comma(&mut out);
        out.extend_from_slice(br#""_meta":"#);
        write_meta(&mut out, &Map::new(), server_info)?;
    }
    for (key, value) in result {
        comma(&mut out);
        serde_json::to_writer(&mut out, key)?;
        out.push(b':');
        match value {
            Value::Object(meta) if key == "_meta" => write_meta(&mut out, meta, server_info)?,
            _ => serde_json::to_writer(&mut out, value)?,
        }
    }
    out.extend_from_slice(b"}}");
    Ok(out)
}

/// The answer to request `id` as it goes on the wire, like [`wire`]; a tool's result is
/// serialized straight from its type, with `resultType` and `_meta` (and in it the server's
/// identity, unless the handler set one) written first.
fn wire_reply(id: &RequestId, reply: Reply, server_info: &str) -> serde_json::Result<Vec<u8>> {
    let mut result = match reply {
        // Members the type does not know may not repeat the two this writes.
        Reply::Tool(result)
            if !result.extra.contains_key("_meta") && !result.extra.contains_key("resultType") =>
        {
            result
        }
        reply => {
            let result = reply.into_value().map_err(|e| serde::ser::Error::custom(e.message))?;
            return wire(
                &Message::Response(mcpl_core::jsonrpc::Response::new(id.clone(), result)),
                server_info,
            );
        }
    };
    let (meta, result_type) = (result.meta.take().unwrap_or_default().0, result.result_type.take());
    let mut out = Vec::with_capacity(256 + server_info.len());
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut out, id)?;
    out.extend_from_slice(br#","result":{"resultType":"#);
    match &result_type {
        Some(t) => serde_json::to_writer(&mut out, t)?,
        None => out.extend_from_slice(br#""complete""#),
    }
    out.extend_from_slice(br#","_meta":"#);
    write_meta(&mut out, &meta, server_info)?;
    // The rest of the result is an object whose members follow the two above: its opening
    // brace becomes a comma (or, if it has no members, it goes).
    let at = out.len();
    serde_json::to_writer(&mut out, &result)?;
    if out[at..] == *b"{}" {
        out.truncate(at);
    } else if out.get(at) == Some(&b'{') && out.last() == Some(&b'}') {
        out[at] = b',';
        out.pop();
    } else {
        return Err(serde::ser::Error::custom("a tool's result is not an object"));
    }
    out.extend_from_slice(b"}}");
    Ok(out)
}

/// Writes a result's `_meta` object: its members, then the server's identity
/// (`server_info`, JSON already) unless the handler set one.
fn write_meta(
    out: &mut Vec<u8>,
    meta: &Map<String, Value>,
    server_info: &str,
) -> serde_json::Result<()> {
    out.push(b'{');
    for (i, (key, value)) in meta.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, key)?;
        out.push(b':');
        serde_json::to_writer(&mut *out, value)?;
    }
    if !meta.contains_key(meta_keys::SERVER_INFO) {
        if !meta.is_empty() {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, meta_keys::SERVER_INFO)?;
        out.push(b':');
        out.extend_from_slice(server_info.as_bytes());
    }
    out.push(b'}');
    Ok(())
}

fn json_reply(id: &RequestId, outcome: Option<Outcome>, decorate: &Decorator) -> Response {
    let (status, body) = decorate.answer(id, outcome);
    super::json_bytes(status, body)
}

/// An SSE response: what the handler sends as it goes, then the answer.
fn sse(
    id: RequestId,
    output: StatelessOutput,
    driver: Driver,
    decorate: Decorator,
    (keep_alive, stop): (std::time::Duration, sse::Stop),
) -> Response {
    let state = Some((output, Some(driver), None, (id, decorate)));
    let events = futures::stream::unfold(state, |state| async move {
        let (mut output, mut driver, mut outcome, answer) = state?;
        let data = loop {
            tokio::select! {
                biased;
                message = output.recv() => match message {
                    Some(message) => {
                        break wire(&message, &answer.1.http.inner.server_info_json).ok();
                    }
                    // The handler is done and all it sent was streamed: the answer is last.
                    None if driver.is_none() => {
                        let (id, decorate) = &answer;
                        let (_, body) = decorate.answer(id, outcome.take());
                        let data = String::from_utf8(body).unwrap_or_default();
                        return Some((Ok(SseEvent::default().data(data)), None));
                    }
                    // The sender is gone only once the handler is done.
                    None => {
                        if let Some(d) = driver.take() {
                            outcome = d.await;
                        }
                    }
                },
                done = async { if let Some(d) = driver.as_mut() { d.await } else { None } },
                    if driver.is_some() =>
                {
                    driver = None;
                    outcome = done;
                }
            }
        };
        let data = data.and_then(|data| String::from_utf8(data).ok()).unwrap_or_default();
        Some((
            Ok::<_, std::convert::Infallible>(SseEvent::default().data(data)),
            Some((output, driver, outcome, answer)),
        ))
    });
    // At shutdown the call gets the grace period to answer, then the stream ends with a
    // `retry` hint.
    sse::response_until(events, keep_alive, Some(stop))
}

/// The filter of a `subscriptions/listen` request: its `notifications`, an object of the
/// filter's members only (a member this server does not know is refused, so that a typo is not
/// read as "nothing wanted"), each of its type; resource URIs within the server's cap.
fn listen_filter(
    http: &StreamableHttp,
    request: &Request,
) -> Result<SubscriptionFilter, ErrorObject> {
    let notifications = request.params.as_ref().and_then(|p| p.get("notifications"));
    let Some(notifications) = notifications.filter(|n| n.is_object()) else {
        return Err(ErrorObject::invalid_params("notifications must be an object"));
    };
    let filter = SubscriptionFilter::deserialize(notifications)
        .map_err(|e| ErrorObject::invalid_params(format_args!("notifications: {e}")))?;
    if let Some(unknown) = filter.extra.keys().next() {
        return Err(ErrorObject::invalid_params(format_args!(
            "notifications: unknown member {unknown:?}"
        )));
    }
    let max = http.inner.server.max_uri_length();
    if filter.resource_subscriptions.iter().flatten().any(|uri| uri.len() > max) {
        return Err(crate::resource::uri_too_long(max));
    }
    Ok(filter)
}

/// `subscriptions/listen`: an SSE stream of the list changes the client opted into.
fn listen(http: &StreamableHttp, request: Request) -> Response {
    let filter = match listen_filter(http, &request) {
        Ok(filter) => filter,
        Err(error) => return refuse(status_for(&error), Some(request.id), error),
    };
    let tools = filter.tools_list_changed.unwrap_or(false);
    let prompts = filter.prompts_list_changed.unwrap_or(false);
    let resources = filter.resources_list_changed.unwrap_or(false);
    let uris: Vec<String> = filter.resource_subscriptions.unwrap_or_default();
    let mut honoured = Map::new();
    if tools {
        honoured.insert("toolsListChanged".into(), json!(true));
    }
    if prompts {
        honoured.insert("promptsListChanged".into(), json!(true));
    }
    if resources {
        honoured.insert("resourcesListChanged".into(), json!(true));
    }
    if !uris.is_empty() {
        honoured.insert("resourceSubscriptions".into(), json!(uris));
    }
    let subscription = serde_json::to_value(&request.id).unwrap_or_default();
    let tag = move |mut params: Map<String, Value>| {
        params.insert("_meta".into(), json!({ meta_keys::SUBSCRIPTION_ID: subscription.clone() }));
        Value::Object(params)
    };
    let ack = json!({
        "jsonrpc": "2.0",
        "method": names::NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED,
        "params": tag(Map::from_iter([("notifications".to_owned(), Value::Object(honoured))])),
    });
    let changes = http.inner.server.subscribe_changes();
    let first = futures::stream::iter([SseEvent::default().data(ack.to_string())]);
    let rest = futures::stream::unfold(changes, move |mut changes| {
        let (tag, uris) = (tag.clone(), uris.clone());
        async move {
            loop {
                let event = match changes.recv().await {
                    Ok(event) => event,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                };
                let wanted = match &event {
                    ServerEvent::ToolsListChanged => tools,
                    ServerEvent::PromptsListChanged => prompts,
                    ServerEvent::ResourcesListChanged => resources,
                    ServerEvent::ResourceUpdated { uri } => uris.contains(uri),
                };
                if !wanted {
                    continue;
                }
                let params =
                    event.params().and_then(|p| p.as_object().cloned()).unwrap_or_default();
                let note =
                    json!({ "jsonrpc": "2.0", "method": event.method(), "params": tag(params) });
                return Some((SseEvent::default().data(note.to_string()), changes));
            }
        }
    });
    let events = first.chain(rest).map(Ok::<_, std::convert::Infallible>);
    // At shutdown the stream ends at once, with a `retry` hint.
    let stop = super::stop_at_shutdown(http, false);
    sse::response_until(events, http.inner.config.keep_alive, Some(stop))
}

/// A transport that serves exactly one request.
///
/// It is created with the request and hands the engine that request, then whatever the engine
/// sends goes to the [`StatelessOutput`] until the response to the request. Starting it a
/// second time — even through a shared `Arc`, from many tasks at once — fails with
/// [`Error::StatelessTransportReuse`] before anything is written.
///
/// A server-to-client request (sampling, elicitation, roots) does not exist in the stateless
/// era; one sent through this transport is answered at once with a `-32601` error (ask for
/// input with an input-required result instead).
///
/// Clones share the one use: of any number of clones started at once, exactly one starts.
///
/// # Examples
///
/// ```
/// use mcpl_core::jsonrpc::{Message, Request};
/// use mcpl_core::{Engine, ErrorKind};
/// use mcpl_server::http::stateless::StatelessTransport;
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let engine = Engine::new();
/// engine.on_request("ping", |_ctx, _params| async { Ok(json!({})) });
/// let (transport, mut output) = StatelessTransport::new(Request::new(1, "ping", None));
/// let again = transport.clone();
/// let _peer = engine.connect(transport).await?;
/// match output.recv().await {
///     Some(Message::Response(response)) => assert_eq!(response.result, json!({})),
///     other => panic!("unexpected {other:?}"),
/// }
/// // Single use: a clone cannot serve another request.
/// let err = Engine::new().connect(again).await.unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::StatelessTransportReuse);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct StatelessTransport {
    shared: Arc<SingleUse>,
}

#[derive(Debug)]
struct SingleUse {
    claimed: AtomicBool,
    parts: Mutex<Option<Parts>>,
}

#[derive(Debug)]
struct Parts {
    request: Request,
    output: UnboundedSender<Message>,
}

/// Receives what the engine sends through a [`StatelessTransport`], in order.
///
/// Also a [`Stream`](futures::Stream) of the messages.
///
/// # Examples
///
/// ```
/// use mcpl_core::jsonrpc::Request;
/// use mcpl_server::http::stateless::{StatelessOutput, StatelessTransport};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let (transport, mut output): (StatelessTransport, StatelessOutput) =
///     StatelessTransport::new(Request::new(1, "tools/list", None));
/// drop(transport);
/// // Nothing was sent, and the sender is gone with the transport.
/// assert!(output.recv().await.is_none());
/// # });
/// ```
#[derive(Debug)]
pub struct StatelessOutput {
    rx: UnboundedReceiver<Message>,
}

impl StatelessOutput {
    /// The next message sent; `None` once the transport's sender is gone.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::jsonrpc::{Message, Request};
    /// use mcpl_core::Engine;
    /// use mcpl_server::http::stateless::StatelessTransport;
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let engine = Engine::new();
    /// engine.on_request("work", |ctx, _params| async move {
    ///     let _ = ctx.peer().notify("notifications/message", Some(json!({"data": "hi"}))).await;
    ///     Ok(json!({}))
    /// });
    /// let (transport, mut output) = StatelessTransport::new(Request::new(1, "work", None));
    /// let _peer = engine.connect(transport).await?;
    /// // What the handler sent as it went, then its answer.
    /// assert!(matches!(output.recv().await, Some(Message::Notification(_))));
    /// assert!(matches!(output.recv().await, Some(Message::Response(_))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn recv(&mut self) -> Option<Message> {
        self.rx.next().await
    }
}

impl futures::Stream for StatelessOutput {
    type Item = Message;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Message>> {
        std::pin::Pin::new(&mut self.rx).poll_next(cx)
    }
}

impl StatelessTransport {
    /// A transport serving `request`, and the receiver of what is sent back.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::jsonrpc::Request;
    /// use mcpl_server::http::stateless::StatelessTransport;
    ///
    /// let (transport, _output) = StatelessTransport::new(Request::new("a", "server/discover", None));
    /// # drop(transport);
    /// ```
    pub fn new(request: Request) -> (StatelessTransport, StatelessOutput) {
        // Futures channels allocate nothing up front (Tokio's allocate a block of slots).
        let (output, rx) = futures::channel::mpsc::unbounded();
        let shared = SingleUse {
            claimed: AtomicBool::new(false),
            parts: Mutex::new(Some(Parts { request, output })),
        };
        (StatelessTransport { shared: Arc::new(shared) }, StatelessOutput { rx })
    }
}

impl Transport for StatelessTransport {
    type Sender = StatelessSender;
    type Receiver = StatelessReceiver;

    async fn start(self) -> Result<(StatelessSender, StatelessReceiver)> {
        if self.shared.claimed.swap(true, Ordering::SeqCst) {
            return Err(Error::StatelessTransportReuse);
        }
        let parts = self.shared.parts.lock().unwrap_or_else(PoisonError::into_inner).take();
        let Some(Parts { request, output }) = parts else {
            return Err(Error::StatelessTransportReuse);
        };
        let (loopback, loopback_rx) = futures::channel::mpsc::unbounded();
        let id = request.id.clone();
        Ok((
            StatelessSender { id, output, loopback: Some(loopback) },
            StatelessReceiver { first: Some(request), loopback: loopback_rx },
        ))
    }
}

/// The sending half of a [`StatelessTransport`].
///
/// # Examples
///
/// ```
/// use mcpl_core::jsonrpc::{Message, Request, Response};
/// use mcpl_core::transport::{Transport, TransportReceiver, TransportSender};
/// use mcpl_server::http::stateless::StatelessTransport;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let (transport, mut output) = StatelessTransport::new(Request::new(1, "ping", None));
/// let (mut sender, mut receiver) = transport.start().await?;
/// let Some(Message::Request(request)) = receiver.recv().await? else { panic!("the request") };
/// sender.send(Response::new(request.id, serde_json::json!({})).into()).await?;
/// assert!(matches!(output.recv().await, Some(Message::Response(_))));
/// // The exchange is over: the receiving side ends.
/// assert!(receiver.recv().await?.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct StatelessSender {
    id: RequestId,
    output: UnboundedSender<Message>,
    /// To the receiving half, if there is one.
    loopback: Option<UnboundedSender<Option<Message>>>,
}

impl StatelessSender {
    /// A sender answering request `id` with no receiving half, and what it sends.
    fn for_request(id: RequestId) -> (StatelessSender, StatelessOutput) {
        let (output, rx) = futures::channel::mpsc::unbounded();
        (StatelessSender { id, output, loopback: None }, StatelessOutput { rx })
    }

    fn loop_back(&self, message: Option<Message>) {
        if let Some(loopback) = &self.loopback {
            let _ = loopback.unbounded_send(message);
        }
    }
}

impl TransportSender for StatelessSender {
    async fn send(&mut self, message: Message) -> Result<()> {
        match message {
            Message::Request(r) => {
                let error = ErrorObject::method_not_found(&r.method).with_data(json!({
                    "reason": "server-to-client requests do not exist in the stateless era"
                }));
                self.loop_back(Some(ErrorResponse::new(Some(r.id), error).into()));
                Ok(())
            }
            message => {
                let done = message.id() == Some(&self.id)
                    && matches!(message, Message::Response(_) | Message::Error(_));
                self.output.unbounded_send(message).map_err(|_| Error::ConnectionClosed)?;
                if done {
                    // The one exchange is over: end the receiving side too.
                    self.loop_back(None);
                }
                Ok(())
            }
        }
    }

    async fn close(self) -> Result<()> {
        Ok(())
    }
}

/// The receiving half of a [`StatelessTransport`].
///
/// # Examples
///
/// ```
/// use mcpl_core::jsonrpc::{Message, Request};
/// use mcpl_core::transport::{Transport, TransportReceiver};
/// use mcpl_server::http::stateless::StatelessTransport;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let (transport, _output) = StatelessTransport::new(Request::new(7, "tools/list", None));
/// let (_sender, mut receiver) = transport.start().await?;
/// // The one request comes first.
/// let Some(Message::Request(request)) = receiver.recv().await? else { panic!("the request") };
/// assert_eq!(request.method, "tools/list");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct StatelessReceiver {
    first: Option<Request>,
    loopback: UnboundedReceiver<Option<Message>>,
}

impl TransportReceiver for StatelessReceiver {
    async fn recv(&mut self) -> Result<Option<Message>> {
        if let Some(request) = self.first.take() {
            return Ok(Some(Message::Request(request)));
        }
        Ok(self.loopback.next().await.flatten())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use mcpl_core::types::CallToolResult;

    fn on_the_wire(result: Value) -> Value {
        let message =
            Message::Response(mcpl_core::jsonrpc::Response::new(RequestId::from(7), result));
        let bytes = wire(&message, r#"{"name":"s","version":"1"}"#).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn a_result_gains_its_result_type_and_the_server_identity() {
        let info = json!({"name": "s", "version": "1"});
        assert_eq!(
            on_the_wire(json!({"content": [], "isError": false})),
            json!({"jsonrpc": "2.0", "id": 7, "result": {
                "content": [], "isError": false, "resultType": "complete",
                "_meta": {meta_keys::SERVER_INFO: info},
            }})
        );
        assert_eq!(
            on_the_wire(json!({})),
            json!({"jsonrpc": "2.0", "id": 7, "result": {
                "resultType": "complete", "_meta": {meta_keys::SERVER_INFO: info},
            }})
        );
    }

    #[test]
    fn what_the_handler_set_is_kept() {
        let info = json!({"name": "s", "version": "1"});
        let own = json!({"name": "own"});
        assert_eq!(
            on_the_wire(json!({"resultType": "input_required", "_meta": {"a": "\"b\""}})),
            json!({"jsonrpc": "2.0", "id": 7, "result": {
                "resultType": "input_required",
                "_meta": {"a": "\"b\"", meta_keys::SERVER_INFO: info},
            }})
        );
        assert_eq!(
            on_the_wire(json!({"_meta": {meta_keys::SERVER_INFO: own}})),
            json!({"jsonrpc": "2.0", "id": 7, "result": {
                "resultType": "complete", "_meta": {meta_keys::SERVER_INFO: own},
            }})
        );
        assert_eq!(
            on_the_wire(json!({"_meta": null})),
            json!({"jsonrpc": "2.0", "id": 7, "result": {"resultType": "complete", "_meta": null}})
        );
    }

    /// A tool's result written from its type, as JSON.
    fn typed_on_the_wire(result: CallToolResult) -> Value {
        let id = RequestId::from("r-1");
        let bytes = wire_reply(&id, Reply::Tool(Box::new(result)), r#"{"name":"s","version":"1"}"#)
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn a_typed_tool_result_goes_as_its_value_would() {
        use mcpl_core::types::{ContentBlock, Meta, ResultType};
        let own = json!({"name": "own"});
        let results = [
            CallToolResult::success(vec![ContentBlock::text("a \"quoted\"\n text")]),
            CallToolResult::error("failed"),
            CallToolResult {
                structured_content: Some(json!({"n": 1, "s": [true, null]})),
                meta: Some(Meta(Map::from_iter([("k".to_owned(), json!({"x": 1}))]))),
                extra: Map::from_iter([("other".to_owned(), json!(2))]),
                ..CallToolResult::default()
            },
            CallToolResult {
                meta: Some(Meta(Map::from_iter([(meta_keys::SERVER_INFO.to_owned(), own)]))),
                result_type: Some(ResultType::Complete),
                ..CallToolResult::default()
            },
            CallToolResult { meta: Some(Meta::new()), ..CallToolResult::default() },
            // Unknown members repeating the two the writer adds: the value path takes over.
            CallToolResult {
                extra: Map::from_iter([("_meta".to_owned(), json!({"z": 0}))]),
                ..CallToolResult::default()
            },
        ];
        for result in results {
            let mut by_value = on_the_wire(serde_json::to_value(&result).unwrap());
            by_value["id"] = json!("r-1");
            assert_eq!(typed_on_the_wire(result), by_value);
        }
    }

    #[test]
    fn other_messages_go_as_they_are() {
        let message =
            Message::Response(mcpl_core::jsonrpc::Response::new(RequestId::from(1), json!([1])));
        let bytes = wire(&message, "{}").unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap()["result"], json!([1]));
        let error = Message::Error(ErrorResponse::new(
            Some(RequestId::from(1)),
            ErrorObject::internal("x"),
        ));
        assert_eq!(wire(&error, "{}").unwrap(), serde_json::to_vec(&error).unwrap());
    }
}
