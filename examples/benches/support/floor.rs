//! The `serve` bench's floor server: the limit server's stack (hyper, tokio, one task per
//! connection) doing what a careful hand-written endpoint must do for a stateless
//! `tools/call`, and nothing of this SDK: the era's headers checked, the body parsed with
//! `serde` into typed values (the envelope, `params`, `arguments`, `_meta`) and compared with
//! the headers, the result built as typed values and serialized. Between the limit server
//! (no parsing at all) and ours, it tells what parsing and checking cost from what the SDK
//! costs. Stateless `tools/call` only: anything else is refused.

use std::collections::BTreeMap;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::limit::TEXT;

#[derive(Deserialize)]
struct Envelope<'a> {
    jsonrpc: &'a str,
    #[serde(borrow)]
    id: &'a RawValue,
    method: String,
    params: Params,
}

#[derive(Deserialize)]
struct Params {
    name: String,
    #[serde(default)]
    arguments: BTreeMap<String, Value>,
    #[serde(rename = "_meta")]
    meta: Meta,
}

#[derive(Deserialize)]
struct Meta {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: String,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    client_capabilities: BTreeMap<String, Value>,
}

#[derive(Serialize)]
struct Answer<'a> {
    jsonrpc: &'a str,
    id: &'a RawValue,
    result: CallResult<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CallResult<'a> {
    result_type: &'a str,
    content: Vec<Text>,
    is_error: bool,
}

#[derive(Serialize)]
struct Text {
    #[serde(rename = "type")]
    kind: &'static str,
    text: String,
}

fn status(status: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The headers a stateless POST must carry: a loopback `Host`, JSON in, JSON or SSE out, the
/// era's version and method.
fn headers_ok(headers: &HeaderMap) -> bool {
    let host = headers.get(HOST).and_then(|v| v.to_str().ok());
    host.is_some_and(|h| h.starts_with("127.0.0.1:") || h.starts_with("localhost:"))
        && headers.get(CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/json"))
        && headers
            .get(ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("application/json") && v.contains("text/event-stream"))
}

async fn handle(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, hyper::Error> {
    if request.method() != Method::POST || !headers_ok(request.headers()) {
        return Ok(status(StatusCode::BAD_REQUEST));
    }
    let version = header(request.headers(), "mcp-protocol-version").map(str::to_owned);
    let method = header(request.headers(), "mcp-method").map(str::to_owned);
    let name = header(request.headers(), "mcp-name").map(str::to_owned);
    let body = request.into_body().collect().await?.to_bytes();
    let Ok(envelope) = serde_json::from_slice::<Envelope>(&body) else {
        return Ok(status(StatusCode::BAD_REQUEST));
    };
    let params = &envelope.params;
    let agrees = envelope.jsonrpc == "2.0"
        && method.as_deref() == Some(envelope.method.as_str())
        && name.as_deref() == Some(params.name.as_str())
        && version.as_deref() == Some(params.meta.protocol_version.as_str())
        && params.meta.client_capabilities.len() < 64;
    if !agrees || envelope.method != "tools/call" || params.name != "test_simple_text" {
        return Ok(status(StatusCode::BAD_REQUEST));
    }
    let text = if params.arguments.is_empty() { TEXT.to_owned() } else { String::new() };
    let result = CallResult {
        result_type: "complete",
        content: vec![Text { kind: "text", text }],
        is_error: false,
    };
    let answer = Answer { jsonrpc: "2.0", id: envelope.id, result };
    let Ok(bytes) = serde_json::to_vec(&answer) else {
        return Ok(status(StatusCode::INTERNAL_SERVER_ERROR));
    };
    let mut response = Response::new(Full::new(Bytes::from(bytes)));
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}

/// Serves on a loopback port it prints on stdout, on `runtime`, until killed.
pub(crate) fn serve(runtime: tokio::runtime::Runtime) {
    super::limit::serve_with(runtime, handle);
}
