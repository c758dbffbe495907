//! The HTTP headers of a stateless-era request checked against its body (`-32020`):
//! `MCP-Protocol-Version` against `_meta`, `Mcp-Method`, `Mcp-Name` against the name the
//! method's params carry, and `Mcp-Param-*` against a tool's `x-mcp-header` arguments.

use std::borrow::Cow;

use axum::http::HeaderMap;
use base64::Engine as _;
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject, Request};
use mcpl_core::types::names;
use serde_json::{Map, Value};

use super::MCP_PARAM_PREFIX;
use crate::http::head::{Head, text};
use crate::router::PlainToolCall;
use crate::server::Server;

/// The `-32020` refusal of headers that do not match the body.
fn mismatch(detail: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::new(ErrorCode::HEADER_MISMATCH, format!("Header mismatch: {detail}"))
}

/// Checks the headers of `request`, whose `_meta` names `version`, against its body (its
/// params in `call`, if they were read typed).
pub(super) fn check(
    server: &Server,
    head: &Head<'_>,
    request: &Request,
    call: Option<&PlainToolCall>,
    version: &str,
) -> Result<(), ErrorObject> {
    // (Optional white space is spaces and tabs; a header value read as text holds no other
    // ASCII white space, so `trim_ascii` trims exactly that.)
    match head.protocol_version().map(str::trim_ascii) {
        Some(v) if v == version => {}
        Some(_) => return Err(mismatch("MCP-Protocol-Version differs from _meta")),
        None => return Err(mismatch("missing MCP-Protocol-Version")),
    }
    match text(head.method).map(str::trim_ascii) {
        Some(m) if m == request.method => {}
        Some(_) => return Err(mismatch("Mcp-Method differs from the body")),
        None => return Err(mismatch("missing Mcp-Method")),
    }
    let no_params = Map::new();
    let params = request.params.as_ref().and_then(Value::as_object).unwrap_or(&no_params);
    // What the body names, and a tool's arguments, from wherever the params are.
    let member = |field: &str| match call {
        Some(call) => (field == "name").then_some(call.name.as_str()),
        None => params.get(field).and_then(Value::as_str),
    };
    let arguments = match call {
        Some(call) => call.arguments.as_ref(),
        None => params.get("arguments").and_then(Value::as_object),
    };
    let name_field = match request.method.as_str() {
        names::TOOLS_CALL | names::PROMPTS_GET => Some("name"),
        names::RESOURCES_READ => Some("uri"),
        names::TASKS_GET | names::TASKS_UPDATE | names::TASKS_CANCEL => Some("taskId"),
        _ => None,
    };
    if let Some(field) = name_field {
        let body = member(field);
        let sent = text(head.name).and_then(|raw| header_value(raw, true));
        match (body, sent) {
            (Some(b), Some(s)) if b == s => {}
            (_, None) => return Err(mismatch("missing Mcp-Name")),
            _ => return Err(mismatch("Mcp-Name differs from the body")),
        }
    }
    if request.method == names::TOOLS_CALL {
        check_param_headers(server, head.map, member("name"), arguments).map_err(mismatch)?;
    }
    Ok(())
}

/// Trims optional white space (`raw` is a header value read as text: its only white space is
/// spaces and tabs) and decodes the `=?base64?…?=` form.
fn header_value(raw: &str, allow_base64: bool) -> Option<Cow<'_, str>> {
    let v = raw.trim_ascii();
    if allow_base64
        && let Some(inner) = v.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?="))
    {
        let bytes = base64::engine::general_purpose::STANDARD.decode(inner).ok()?;
        return String::from_utf8(bytes).ok().map(Cow::Owned);
    }
    Some(Cow::Borrowed(v))
}

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
    server: &Server,
    headers: &HeaderMap,
    name: Option<&str>,
    arguments: Option<&Map<String, Value>>,
) -> Result<(), String> {
    let Some(name) = name else { return Ok(()) };
    let checked = server.with_tool_definition(name, |tool| {
        let Some(properties) = tool.input_schema.properties.as_ref() else { return Ok(()) };
        check_tool_headers(properties, headers, arguments)
    });
    checked.unwrap_or(Ok(()))
}

/// Checks the `Mcp-Param-*` headers against the `x-mcp-header` properties of one tool.
fn check_tool_headers(
    properties: &Map<String, Value>,
    headers: &HeaderMap,
    arguments: Option<&Map<String, Value>>,
) -> Result<(), String> {
    for (property, schema) in properties {
        let Some(header_name) = schema.get("x-mcp-header").and_then(Value::as_str) else {
            continue;
        };
        let full = format!("{MCP_PARAM_PREFIX}{}", header_name.to_ascii_lowercase());
        let body = arguments.and_then(|a| a.get(property)).filter(|v| !v.is_null());
        let sent = text(headers.get(&full));
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
