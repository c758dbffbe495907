//! The stateless (2026-07-28) era: every POST is one self-describing request, served by a
//! fresh single-use transport.
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
use mcpl_core::engine::{Engine, LazyMeta, RequestContext};
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject, ErrorResponse, Message, Request, RequestId};
use mcpl_core::transport::{Transport, TransportReceiver, TransportSender};
use mcpl_core::types::{meta_keys, names};
use mcpl_core::{Era, Error, ProtocolVersion, Result};
use serde_json::{Map, Value, json};

use super::sse::{self, SseEvent};
use super::stateless_body::{Incoming, MetaFacts};
use super::{PROTOCOL_VERSION, StreamableHttp, json_body};
use crate::context::{ClientState, Context, SharedClientState};
use crate::events::ServerEvent;

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

use crate::stateless_era::{REMOVED, client_state};

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
pub(crate) async fn serve(http: StreamableHttp, headers: HeaderMap, message: Message) -> Response {
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
    serve_request(http, headers, request, None, facts).await
}

/// Serves one stateless-era POST read straight from its body (see `stateless_body`).
pub(crate) async fn serve_read(
    http: StreamableHttp,
    headers: HeaderMap,
    read: Incoming,
) -> Response {
    serve_request(http, headers, read.request, read.meta, read.facts).await
}

/// Serves `request`, whose `_meta` is in its params or, read on demand, in `raw_meta`; `facts`
/// are what the checks read of it.
async fn serve_request(
    http: StreamableHttp,
    headers: HeaderMap,
    request: Request,
    raw_meta: Option<LazyMeta>,
    facts: MetaFacts,
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
    let streaming = progress || log_level.is_some();
    let cacheable = crate::stateless_era::cacheable(&request.method);
    // The client state the handler reads, from the facts already read (not from `_meta` again).
    let client: SharedClientState = Arc::new(Mutex::new(ClientState {
        version: ProtocolVersion::parse(version),
        client_capabilities: capabilities.flatten(),
        log_level,
        ..ClientState::default()
    }));
    // The sending half of a single-use transport: the engine serves this one request inline,
    // so nothing reads a receiving half.
    let (sender, output) = StatelessSender::for_request(id);
    let engine = http.stateless_engine();
    let driver: Driver = Box::pin(async move {
        let client = Some(Box::new(client) as Box<dyn std::any::Any + Send + Sync>);
        if let Err(e) = engine.serve_request_with(request, raw_meta, client, sender).await {
            tracing::debug!(error = %e, "stateless request ended early");
        }
    });
    let decorate = Decorator { http: http.clone(), cacheable };
    if streaming {
        sse(output, driver, decorate, http.inner.config.keep_alive)
    } else {
        json_reply(output, driver, decorate).await
    }
}

/// Serves the request; polled by whoever writes the HTTP response, and dropped (cancelling the
/// handler) when the client goes away.
type Driver = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// The engine that serves stateless requests: one per endpoint, holding the router; each
/// request runs through [`Engine::serve_request_with`] with the client state of its own `_meta`
/// attached to it (or, failing that, read from `_meta`).
pub(crate) fn stateless_engine(server: &crate::Server) -> Engine {
    let engine = Engine::new();
    let server = server.clone();
    engine.on_any_request(move |ctx: RequestContext, params: Option<Value>| {
        let server = server.clone();
        async move {
            let client = match ctx.peer().data::<SharedClientState>() {
                Some(client) => client.clone(),
                None => Arc::new(Mutex::new(client_state(ctx.meta()))),
            };
            let method = ctx.method().to_owned();
            crate::router::dispatch(&server, Context::new(ctx, client), &method, params).await
        }
    });
    engine
}

/// Adds what every stateless-era result carries.
struct Decorator {
    http: StreamableHttp,
    /// The method, if its results carry caching hints.
    cacheable: Option<&'static str>,
}

impl Decorator {
    fn apply(&self, message: Message) -> Message {
        let Some(method) = self.cacheable else { return message };
        let Message::Response(mut response) = message else { return message };
        if let Value::Object(result) = &mut response.result {
            decorate_result(&self.http, method, result);
        }
        Message::Response(response)
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
        out.extend_from_slice(br#""_meta":{"#);
        write_server_info(&mut out, server_info)?;
        out.push(b'}');
    }
    for (key, value) in result {
        comma(&mut out);
        serde_json::to_writer(&mut out, key)?;
        out.push(b':');
        match value {
            Value::Object(meta) if key == "_meta" && !meta.contains_key(meta_keys::SERVER_INFO) => {
                out.push(b'{');
                for (key, value) in meta {
                    serde_json::to_writer(&mut out, key)?;
                    out.push(b':');
                    serde_json::to_writer(&mut out, value)?;
                    out.push(b',');
                }
                write_server_info(&mut out, server_info)?;
                out.push(b'}');
            }
            _ => serde_json::to_writer(&mut out, value)?,
        }
    }
    out.extend_from_slice(b"}}");
    Ok(out)
}

/// Writes `"<serverInfo key>":<server_info>` (`server_info` is JSON already).
fn write_server_info(out: &mut Vec<u8>, server_info: &str) -> serde_json::Result<()> {
    serde_json::to_writer(&mut *out, meta_keys::SERVER_INFO)?;
    out.push(b':');
    out.extend_from_slice(server_info.as_bytes());
    Ok(())
}

async fn json_reply(
    mut output: StatelessOutput,
    mut driver: Driver,
    decorate: Decorator,
) -> Response {
    let mut driving = true;
    loop {
        let message = tokio::select! {
            message = output.recv() => message,
            () = &mut driver, if driving => {
                driving = false;
                continue;
            }
        };
        match message {
            Some(message @ Message::Response(_)) => {
                let message = decorate.apply(message);
                return match wire(&message, &decorate.http.inner.server_info_json) {
                    Ok(body) => super::json_bytes(StatusCode::OK, body),
                    Err(e) => json_body(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        &Message::Error(ErrorResponse::new(
                            message.id().cloned(),
                            ErrorObject::internal(e),
                        )),
                    ),
                };
            }
            Some(Message::Error(e)) => {
                return json_body(status_for(&e.error), &Message::Error(e));
            }
            // Without a progress token or log level nothing else is expected; drop it.
            Some(_) => {}
            None => break,
        }
    }
    json_body(
        StatusCode::INTERNAL_SERVER_ERROR,
        &Message::Error(ErrorResponse::new(
            None,
            ErrorObject::internal("the request ended without a response"),
        )),
    )
}

fn sse(
    output: StatelessOutput,
    driver: Driver,
    decorate: Decorator,
    keep_alive: std::time::Duration,
) -> Response {
    let state = Some((output, Some(driver), decorate));
    let events = futures::stream::unfold(state, |state| async move {
        let (mut output, mut driver, decorate) = state?;
        let message = loop {
            tokio::select! {
                message = output.recv() => break message?,
                () = async { if let Some(d) = driver.as_mut() { d.await } }, if driver.is_some() => {
                    driver = None;
                }
            }
        };
        let done = matches!(message, Message::Response(_) | Message::Error(_));
        let message = decorate.apply(message);
        let data = wire(&message, &decorate.http.inner.server_info_json)
            .ok()
            .and_then(|data| String::from_utf8(data).ok())
            .unwrap_or_default();
        let event = SseEvent::default().data(data);
        Some((
            Ok::<_, std::convert::Infallible>(event),
            (!done).then_some((output, driver, decorate)),
        ))
    });
    sse::response(events, keep_alive)
}

/// `subscriptions/listen`: an SSE stream of the list changes the client opted into.
fn listen(http: &StreamableHttp, request: Request) -> Response {
    let filter =
        request.params.as_ref().and_then(|p| p.get("notifications")).cloned().unwrap_or(json!({}));
    let wants = |key: &str| filter.get(key).and_then(Value::as_bool).unwrap_or(false);
    let tools = wants("toolsListChanged");
    let prompts = wants("promptsListChanged");
    let resources = wants("resourcesListChanged");
    let uris: Vec<String> = filter
        .get("resourceSubscriptions")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
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
    sse::response(events, http.inner.config.keep_alive)
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
