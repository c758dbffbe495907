//! The `tracing` spans and events of the engine: their names, their fields, and what a
//! connection tells them about itself.
//!
//! Every request an engine serves runs in a [`SERVER_REQUEST`] span, and every request it sends
//! in a [`CLIENT_REQUEST`] span, both at `DEBUG` level (target `mcpl_core::trace`). Their fields
//! follow OpenTelemetry's semantic conventions for MCP where one fits ([`field`]). A span costs
//! nothing beyond a check of the callsite's interest when no subscriber wants it: its fields are
//! read from the message only once it is enabled. Notifications received and sent are `DEBUG`
//! events; every message's JSON is a `TRACE` event (and only then serialized).
//!
//! What the engine cannot know, the connection's owner tells it with
//! [`Peer::update_trace_facts`](crate::Peer::update_trace_facts): the negotiated protocol
//! version and the session id, recorded on each later span of the connection. The full list of
//! spans, fields and events is in `docs/observability.md`.
//!
//! # Examples
//!
//! ```
//! use mcpl_core::trace::{self, field};
//!
//! assert_eq!(trace::SERVER_REQUEST, "mcp.server.request");
//! assert_eq!(field::METHOD, "mcp.method.name");
//! ```

use std::fmt;
use std::sync::Arc;

use serde_json::Value;
use tracing::Span;
use tracing::field::{Empty, display};

use crate::era::ProtocolVersion;
use crate::jsonrpc::{ErrorObject, Message, RawJson, RequestId};

/// The name of the span of a request this endpoint serves (OpenTelemetry span kind `SERVER`).
pub const SERVER_REQUEST: &str = "mcp.server.request";

/// The name of the span of a request this endpoint sends (OpenTelemetry span kind `CLIENT`),
/// whichever side it is on: a server asking its client for `sampling/createMessage` sends one
/// too.
pub const CLIENT_REQUEST: &str = "mcp.client.request";

/// The field names of the request spans (OpenTelemetry's names where its MCP conventions have
/// one).
pub mod field {
    /// The request's method (`tools/call`).
    pub const METHOD: &str = "mcp.method.name";
    /// The request's JSON-RPC id, as text (a string id quoted and escaped).
    pub const REQUEST_ID: &str = "jsonrpc.request.id";
    /// The tool a `tools/call` names.
    pub const TOOL_NAME: &str = "gen_ai.tool.name";
    /// The prompt a `prompts/get` names.
    pub const PROMPT_NAME: &str = "gen_ai.prompt.name";
    /// The resource a `resources/read`, `resources/subscribe` or `resources/unsubscribe`
    /// names.
    pub const RESOURCE_URI: &str = "mcp.resource.uri";
    /// The protocol revision the request was made in (`2025-11-25`, `2026-07-28`).
    pub const PROTOCOL_VERSION: &str = "mcp.protocol.version";
    /// The era of that revision: `stateful` (2025-11-25 and older, with `initialize`) or
    /// `stateless` (2026-07-28 and newer). Not an OpenTelemetry name.
    pub const ERA: &str = "mcpl.era";
    /// The Streamable HTTP session (`Mcp-Session-Id`) of a 2025-era request.
    pub const SESSION_ID: &str = "mcp.session.id";
    /// The JSON-RPC error code of an answer that is an error (`-32602`).
    pub const STATUS_CODE: &str = "rpc.response.status_code";
    /// Why the request failed: the JSON-RPC error code, `tool_error` for a tool result with
    /// `isError`, or the kind of a local failure (`request_timeout`, `connection_closed`,
    /// `cancelled`).
    pub const ERROR_TYPE: &str = "error.type";
    /// The IP address of the peer that sent an HTTP request or opened a WebSocket connection
    /// (on the server's `mcp.http` and `mcp.ws` spans).
    pub const CLIENT_ADDRESS: &str = "client.address";
    /// The port of that peer.
    pub const CLIENT_PORT: &str = "client.port";
}

/// What a connection tells the spans of its requests about itself (see
/// [`Peer::update_trace_facts`](crate::Peer::update_trace_facts)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceFacts {
    /// The protocol revision the connection negotiated, if it did.
    pub protocol_version: Option<ProtocolVersion>,
    /// The connection's session id (Streamable HTTP, 2025 era), if it has one.
    pub session_id: Option<Arc<str>>,
}

/// A request span named `$name` (span names are literals) with every field of
/// [`field`], the method and the id set, the rest filled in as they become known.
macro_rules! request_span {
    ($name:literal, $method:expr, $id:expr) => {
        tracing::debug_span!(
            $name,
            "mcp.method.name" = $method,
            "jsonrpc.request.id" = %$id,
            "gen_ai.tool.name" = Empty,
            "gen_ai.prompt.name" = Empty,
            "mcp.resource.uri" = Empty,
            "mcp.protocol.version" = Empty,
            "mcpl.era" = Empty,
            "mcp.session.id" = Empty,
            "rpc.response.status_code" = Empty,
            "error.type" = Empty,
        )
    };
}

/// The span a served request runs in.
pub(crate) fn server_span(
    method: &str,
    id: &RequestId,
    params: Option<&Value>,
    facts: impl FnOnce() -> TraceFacts,
) -> Span {
    let span = request_span!("mcp.server.request", method, id);
    fill(&span, method, params, facts);
    span
}

/// The span a sent request waits in.
pub(crate) fn client_span(
    method: &str,
    id: &RequestId,
    params: Option<&Value>,
    facts: impl FnOnce() -> TraceFacts,
) -> Span {
    let span = request_span!("mcp.client.request", method, id);
    fill(&span, method, params, facts);
    span
}

/// Records what the request names and what its connection knows, once the span is enabled.
fn fill(span: &Span, method: &str, params: Option<&Value>, facts: impl FnOnce() -> TraceFacts) {
    if span.is_disabled() {
        return;
    }
    record_target(span, method, params);
    let facts = facts();
    if let Some(version) = facts.protocol_version {
        record_version(span, version);
    }
    if let Some(session) = &facts.session_id {
        span.record(field::SESSION_ID, &**session);
    }
}

/// Records the protocol revision of a request (and its era) on `span`.
///
/// # Examples
///
/// ```
/// use mcpl_core::ProtocolVersion;
///
/// // A server knows the revision of a stateless request only once it read its `_meta`.
/// mcpl_core::trace::record_version(&tracing::Span::current(), ProtocolVersion::LATEST);
/// ```
pub fn record_version(span: &Span, version: ProtocolVersion) {
    span.record(field::PROTOCOL_VERSION, version.as_str());
    span.record(field::ERA, version.era().as_str());
}

/// Records what a request of `method` names (its tool, prompt or resource) on `span`: for a
/// transport that serves a request whose params the engine did not see
/// ([`embed::run_request`](crate::engine::embed::run_request)).
///
/// # Examples
///
/// ```
/// let params = serde_json::json!({ "name": "echo", "arguments": {} });
/// mcpl_core::trace::record_target(&tracing::Span::current(), "tools/call", Some(&params));
/// ```
pub fn record_target(span: &Span, method: &str, params: Option<&Value>) {
    if span.is_disabled() {
        return;
    }
    if let Some((field, target)) = target(method, params) {
        span.record(field, target);
    }
}

/// The field and value of what a request of `method` names: its tool, prompt or resource.
pub(crate) fn target<'a>(
    method: &str,
    params: Option<&'a Value>,
) -> Option<(&'static str, &'a str)> {
    let (field, key) = match method {
        "tools/call" => (field::TOOL_NAME, "name"),
        "prompts/get" => (field::PROMPT_NAME, "name"),
        "resources/read"
        | "resources/subscribe"
        | "resources/unsubscribe"
        | "notifications/resources/updated" => (field::RESOURCE_URI, "uri"),
        _ => return None,
    };
    params?.get(key)?.as_str().map(|value| (field, value))
}

/// Records an error answer on a request's span: its code as `rpc.response.status_code` and
/// `error.type`.
///
/// # Examples
///
/// ```
/// use mcpl_core::jsonrpc::ErrorObject;
///
/// // A transport that answers a request itself records the error it answers with.
/// let error = ErrorObject::invalid_params("no such tool");
/// mcpl_core::trace::record_error(&tracing::Span::current(), &error);
/// ```
pub fn record_error(span: &Span, error: &ErrorObject) {
    if span.is_disabled() {
        return;
    }
    span.record(field::STATUS_CODE, error.code.0);
    span.record(field::ERROR_TYPE, display(error.code.0));
}

/// Records the answer of a served request on its span: an error's code, or `tool_error` for
/// a `tools/call` result with `isError`.
pub(crate) fn record_answer(span: &Span, tool_call: bool, answer: &Result<RawJson, ErrorObject>) {
    if span.is_disabled() {
        return;
    }
    match answer {
        Ok(result) => record_result(span, tool_call, result),
        Err(error) => record_error(span, error),
    }
}

/// Records `error.type = tool_error` for a `tools/call` result with `isError`.
fn record_result(span: &Span, tool_call: bool, result: &RawJson) {
    /// The one field of a tool's result a span records.
    #[derive(serde::Deserialize)]
    struct ToolError {
        #[serde(rename = "isError")]
        is_error: Option<bool>,
    }
    if tool_call && result.decode::<ToolError>().is_ok_and(|r| r.is_error == Some(true)) {
        span.record(field::ERROR_TYPE, "tool_error");
    }
}

/// Records the outcome of a sent request on its span (see [`record_answer`]; a local failure
/// records its kind as `error.type`).
pub(crate) fn record_outcome(span: &Span, tool_call: bool, outcome: &crate::Result<RawJson>) {
    if span.is_disabled() {
        return;
    }
    match outcome {
        Ok(result) => record_result(span, tool_call, result),
        Err(e) => match e.rpc_error() {
            Some(error) => record_error(span, error),
            None => {
                span.record(field::ERROR_TYPE, display(ErrorKindName(e.kind())));
            }
        },
    }
}

/// An error kind as a trace value: `RequestTimeout` as `request_timeout`.
struct ErrorKindName(crate::ErrorKind);

impl fmt::Display for ErrorKindName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = format!("{:?}", self.0);
        for (i, c) in name.char_indices() {
            if c.is_ascii_uppercase() {
                if i > 0 {
                    f.write_str("_")?;
                }
                write!(f, "{}", c.to_ascii_lowercase())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// Which way a message went.
#[derive(Clone, Copy)]
pub(crate) enum Direction {
    /// From the peer.
    In,
    /// To the peer.
    Out,
}

/// Logs a message going in or out: a notification's method at `DEBUG`, any message's JSON at
/// `TRACE` (serialized only then).
pub(crate) fn message(direction: Direction, message: &Message) {
    if let Message::Notification(n) = message {
        match direction {
            Direction::In => tracing::debug!(
                        mcp.method.name = %n.method,
                "notification received"
            ),
            Direction::Out => tracing::debug!(
                        mcp.method.name = %n.method,
                "notification sent"
            ),
        }
    }
    if tracing::enabled!(tracing::Level::TRACE) {
        let json = Json(message);
        match direction {
            Direction::In => {
                tracing::trace!(json = %json, "message received");
            }
            Direction::Out => {
                tracing::trace!(json = %json, "message sent");
            }
        }
    }
}

/// A message shown as its JSON.
struct Json<'a>(&'a Message);

impl fmt::Display for Json<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match serde_json::to_string(self.0) {
            Ok(json) => f.write_str(&json),
            Err(_) => f.write_str("<unserializable>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn targets_come_from_the_params_of_the_methods_that_name_one() {
        let call = json!({"name": "echo", "arguments": {}});
        assert_eq!(target("tools/call", Some(&call)), Some((field::TOOL_NAME, "echo")));
        let get = json!({"name": "greet"});
        assert_eq!(target("prompts/get", Some(&get)), Some((field::PROMPT_NAME, "greet")));
        let read = json!({"uri": "file:///a"});
        assert_eq!(target("resources/read", Some(&read)), Some((field::RESOURCE_URI, "file:///a")));
        assert_eq!(target("tools/list", Some(&call)), None);
        assert_eq!(target("tools/call", Some(&json!({"name": 7}))), None);
        assert_eq!(target("tools/call", None), None);
    }

    #[test]
    fn error_kinds_read_as_snake_case() {
        let name = ErrorKindName(crate::ErrorKind::RequestTimeout).to_string();
        assert_eq!(name, "request_timeout");
        let name = ErrorKindName(crate::ErrorKind::ConnectionClosed).to_string();
        assert_eq!(name, "connection_closed");
    }
}
