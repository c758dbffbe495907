//! `Mcp-Param-*` headers (SEP-2243, 2026 era): tool arguments whose input-schema property
//! carries `"x-mcp-header": "<Name>"` are mirrored into an `Mcp-Param-<Name>` header on
//! `tools/call`, so that HTTP intermediaries can route on them.
//!
//! The HTTP transport learns the annotations from every `tools/list` result it delivers and
//! keeps them per tool. An annotation is valid when it is a non-empty RFC 9110 token, unique
//! case-insensitively within the tool, on a `string`, `integer` or `boolean` property reached
//! only through `properties`. A tool with an invalid annotation must not be called: its calls
//! are refused locally. Values that are not plain visible ASCII (or have leading or trailing
//! whitespace) are sent in the Base64 form `=?base64?…?=`; `null` or absent arguments send no
//! header.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use serde_json::{Map, Value};

/// The prefix of a mirrored argument's header.
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::transport::HttpTransport;
/// use mcpl_client::transport::headers::MCP_PARAM_PREFIX;
/// use serde_json::json;
/// # type Seen = std::sync::Arc<std::sync::Mutex<Vec<axum::http::HeaderMap>>>;
/// # async fn serve_recording() -> std::io::Result<(String, Seen)> {
/// #     use mcpl_core::types::{Tool, ToolSchema};
/// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
/// #     let schema = ToolSchema::object()
/// #         .with_property("region", json!({"type": "string", "x-mcp-header": "Region"}));
/// #     let server = mcpl_server::Server::builder("regional", "1.0.0")
/// #         .tool(Tool::new("deploy", schema), |_ctx, _args| async move {
/// #             Ok(mcpl_server::ToolOutput::text("deployed"))
/// #         })
/// #         .build();
/// #     let seen = Seen::default();
/// #     let log = seen.clone();
/// #     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp").layer(
/// #         axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
/// #             log.lock().unwrap().push(request.headers().clone());
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
/// // The `deploy` tool's `region` property says `"x-mcp-header": "Region"`.
/// let (url, seen) = serve_recording().await?;
/// let client = Client::new("my-app", "1.0.0");
/// client.connect(HttpTransport::new(url)).await?;
/// client.list_tools().await?; // the transport learns the annotations here
/// client.call_tool("deploy", json!({"region": "eu-west"})).await?;
///
/// let header = format!("{MCP_PARAM_PREFIX}region");
/// let seen = seen.lock().unwrap();
/// let sent = seen.last().and_then(|h| h.get(&header)?.to_str().ok());
/// assert_eq!(sent, Some("eu-west"));
/// # Ok(()) }
/// ```
pub const MCP_PARAM_PREFIX: &str = "mcp-param-";

/// One `x-mcp-header` annotation: where the argument is, and the header it goes to.
#[derive(Debug, Clone, PartialEq)]
struct Annotation {
    path: Vec<String>,
    header: String,
}

/// What the transport knows about each tool's annotations.
#[derive(Debug, Default)]
pub(crate) struct ToolHeaders {
    tools: Mutex<HashMap<String, Result<Vec<Annotation>, String>>>,
}

impl ToolHeaders {
    /// Learns the annotations of the tools in a `tools/list` result.
    pub(crate) fn learn(&self, result: &Value) {
        let Some(tools) = result.get("tools").and_then(Value::as_array) else { return };
        let mut known = self.tools.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else { continue };
            let schema = tool.get("inputSchema").cloned().unwrap_or(Value::Null);
            let annotations = annotations(&schema);
            if let Err(detail) = &annotations {
                tracing::info!(tool = ?name, detail = ?detail, "tool has invalid x-mcp-header annotations");
            }
            known.insert(name.to_owned(), annotations);
        }
    }

    /// The `Mcp-Param-*` headers (lower-case names, encoded values) of a `tools/call` with
    /// `params`; `Err` with the reason when the tool's annotations are invalid. Tools the
    /// transport has not seen get no headers.
    pub(crate) fn for_call(
        &self,
        params: &Map<String, Value>,
    ) -> Result<Vec<(String, String)>, (String, String)> {
        let Some(name) = params.get("name").and_then(Value::as_str) else { return Ok(Vec::new()) };
        let known = self.tools.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let annotations = match known.get(name) {
            None => return Ok(Vec::new()),
            Some(Err(detail)) => return Err((name.to_owned(), detail.clone())),
            Some(Ok(a)) => a,
        };
        let arguments = params.get("arguments");
        let mut headers = Vec::new();
        for annotation in annotations {
            let mut value = arguments;
            for step in &annotation.path {
                value = value.and_then(|v| v.get(step));
            }
            let text = match value {
                Some(Value::String(s)) => header_text(s),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Number(n)) => n.to_string(),
                // Absent or null: no header. Objects and arrays cannot be mirrored.
                _ => continue,
            };
            headers.push((
                format!("{MCP_PARAM_PREFIX}{}", annotation.header.to_ascii_lowercase()),
                text,
            ));
        }
        Ok(headers)
    }
}

/// The annotations of an input schema, or why they are invalid.
fn annotations(schema: &Value) -> Result<Vec<Annotation>, String> {
    let mut found = Vec::new();
    collect(schema, &mut Vec::new(), &mut found)?;
    let mut seen = HashSet::new();
    for a in &found {
        if !seen.insert(a.header.to_ascii_lowercase()) {
            return Err(format!("header {:?} is declared twice", a.header));
        }
    }
    Ok(found)
}

fn collect(
    schema: &Value,
    path: &mut Vec<String>,
    found: &mut Vec<Annotation>,
) -> Result<(), String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (property, sub) in properties {
        path.push(property.clone());
        if let Some(header) = sub.get("x-mcp-header") {
            let at = path.join(".");
            let Some(header) = header.as_str() else {
                return Err(format!("x-mcp-header of {at} is not a string"));
            };
            if header.is_empty() || !header.bytes().all(is_tchar) {
                return Err(format!("x-mcp-header {header:?} of {at} is not a header token"));
            }
            let primitive = matches!(
                sub.get("type").and_then(Value::as_str),
                Some("string" | "integer" | "boolean")
            );
            if !primitive {
                return Err(format!(
                    "x-mcp-header {header:?} is on {at}, which is not a string, integer or boolean"
                ));
            }
            found.push(Annotation { path: path.clone(), header: header.to_owned() });
        }
        collect(sub, path, found)?;
        path.pop();
    }
    Ok(())
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Encodes a value for `Mcp-Name` or `Mcp-Param-*`: as is when it is visible ASCII (spaces
/// allowed inside) without leading or trailing whitespace, otherwise in the Base64 sentinel
/// form `=?base64?…?=`.
pub(crate) fn header_text(value: &str) -> String {
    let visible = value.bytes().all(|b| (0x20..0x7f).contains(&b));
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let looks_encoded = value.starts_with("=?base64?") && value.ends_with("?=");
    let plain = visible && !padded && !looks_encoded;
    if plain { value.to_owned() } else { format!("=?base64?{}?=", base64(value.as_bytes())) }
}

pub(crate) fn base64(bytes: &[u8]) -> String {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn known(schema: Value) -> ToolHeaders {
        let headers = ToolHeaders::default();
        headers.learn(&json!({"tools": [{"name": "t", "inputSchema": schema}]}));
        headers
    }

    fn call(h: &ToolHeaders, arguments: Value) -> Result<Vec<(String, String)>, (String, String)> {
        let params = json!({"name": "t", "arguments": arguments});
        h.for_call(params.as_object().unwrap())
    }

    #[test]
    fn annotated_arguments_are_mirrored_and_encoded() {
        let h = known(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "flag": {"type": "boolean", "x-mcp-header": "Flag"},
            "deep": {"type": "object", "properties": {"k": {"type": "string", "x-mcp-header": "K"}}},
            "plain": {"type": "string"}
        }}));
        let mut got = call(
            &h,
            json!({"region": " padded", "n": 42, "flag": false,
            "deep": {"k": "v w"}, "plain": "x"}),
        )
        .unwrap();
        got.sort();
        assert_eq!(
            got,
            vec![
                ("mcp-param-flag".into(), "false".into()),
                ("mcp-param-k".into(), "v w".into()),
                ("mcp-param-n".into(), "42".into()),
                ("mcp-param-region".into(), format!("=?base64?{}?=", base64(b" padded"))),
            ]
        );
        // Null or absent: no header.
        assert_eq!(call(&h, json!({"region": null})).unwrap(), vec![]);
    }

    #[test]
    fn invalid_annotations_refuse_the_tool() {
        for schema in [
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A:B"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Ä"}}}),
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": 1}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "X"},
                                  "b": {"type": "string", "x-mcp-header": "x"}}}),
        ] {
            let h = known(schema.clone());
            let (tool, _) = call(&h, json!({})).unwrap_err();
            assert_eq!(tool, "t", "{schema}");
        }
    }

    #[test]
    fn header_text_is_base64_when_not_plain_ascii() {
        assert_eq!(header_text("get_weather"), "get_weather");
        assert_eq!(header_text("us west 1"), "us west 1");
        assert_eq!(header_text(""), "");
        assert_eq!(header_text("héllo"), format!("=?base64?{}?=", base64("héllo".as_bytes())));
        assert_eq!(header_text("\tx"), format!("=?base64?{}?=", base64(b"\tx")));
        assert_eq!(base64(b"Hello"), "SGVsbG8=");
        assert_eq!(base64(b"Hi"), "SGk=");
        assert_eq!(base64(b"abc"), "YWJj");
    }
}
