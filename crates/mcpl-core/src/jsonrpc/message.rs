//! JSON-RPC 2.0 messages and their wire encoding.

use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::{ErrorCode, ErrorObject, RawJson, RequestId};

/// The only JSON-RPC version MCP speaks.
pub const JSONRPC_VERSION: &str = "2.0";

/// One JSON-RPC 2.0 message, as read from or written to a transport.
///
/// # Examples
///
/// ```
/// use mcpl_core::jsonrpc::{Message, RequestId};
///
/// let msg = Message::decode(br#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#).unwrap();
/// let Message::Request(req) = msg else { unreachable!() };
/// assert_eq!(req.id, RequestId::Number(0));
/// assert_eq!(req.method, "ping");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request, which expects a response.
    Request(Request),
    /// A notification, which expects none.
    Notification(Notification),
    /// A successful response.
    Response(Response),
    /// An error response.
    Error(ErrorResponse),
}

/// A request: a method call that expects a response carrying the same id.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The request id.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The parameters, if any.
    pub params: Option<Value>,
}

/// A notification: a method call without an id, which is never answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The parameters, if any.
    pub params: Option<Value>,
}

/// A successful response.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result, as encoded JSON: made straight from the answer's type and read straight into
    /// the caller's (see [`RawJson`]).
    pub result: RawJson,
}

/// An error response.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorResponse {
    /// The id of the request this answers; `None` (serialized as `null`) when the request's id
    /// could not be read.
    pub id: Option<RequestId>,
    /// The error.
    pub error: ErrorObject,
}

impl Request {
    /// Creates a request.
    pub fn new(id: impl Into<RequestId>, method: impl Into<String>, params: Option<Value>) -> Self {
        Request { id: id.into(), method: method.into(), params }
    }
}

impl Notification {
    /// Creates a notification.
    pub fn new(method: impl Into<String>, params: Option<Value>) -> Self {
        Notification { method: method.into(), params }
    }
}

impl Response {
    /// Creates a successful response; `result` is a [`RawJson`] or a [`Value`].
    pub fn new(id: RequestId, result: impl Into<RawJson>) -> Self {
        Response { id, result: result.into() }
    }
}

impl ErrorResponse {
    /// Creates an error response.
    pub fn new(id: Option<RequestId>, error: ErrorObject) -> Self {
        ErrorResponse { id, error }
    }
}

impl From<Request> for Message {
    fn from(m: Request) -> Self {
        Message::Request(m)
    }
}
impl From<Notification> for Message {
    fn from(m: Notification) -> Self {
        Message::Notification(m)
    }
}
impl From<Response> for Message {
    fn from(m: Response) -> Self {
        Message::Response(m)
    }
}
impl From<ErrorResponse> for Message {
    fn from(m: ErrorResponse) -> Self {
        Message::Error(m)
    }
}

impl Message {
    /// Decodes one message from untrusted bytes.
    ///
    /// # Errors
    ///
    /// Returns a [`DecodeError`] that maps to the JSON-RPC error to answer with:
    /// invalid JSON is a `-32700` parse error (id `null`); JSON that is not a valid message is a
    /// `-32600` invalid request, carrying the message's id when one could be read; a JSON array
    /// (a batch, removed from MCP after 2025-03-26) is a `-32600` too. Never panics.
    pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
        // The whole input checked as UTF-8 at once, then read as text: serde_json then checks
        // no string of it again (a message is mostly strings, each checked on its own
        // otherwise). Input that is not UTF-8 is read as bytes, for serde_json's own error.
        match std::str::from_utf8(bytes) {
            Ok(text) => Message::decode_str(text),
            Err(_) => serde_json::from_slice::<Message>(bytes)
                .map_err(|e| DecodeError::classify(bytes, e)),
        }
    }

    /// Decodes one message from untrusted text: [`Message::decode`] for input already known
    /// to be UTF-8 (a WebSocket text frame, an SSE event's data), which is not checked again.
    ///
    /// # Errors
    ///
    /// As [`Message::decode`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::jsonrpc::Message;
    ///
    /// let msg = Message::decode_str(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)?;
    /// assert_eq!(msg.method(), Some("notifications/initialized"));
    /// assert!(Message::decode_str("{").unwrap_err().is_parse_error());
    /// # Ok::<(), mcpl_core::jsonrpc::DecodeError>(())
    /// ```
    pub fn decode_str(text: &str) -> Result<Message, DecodeError> {
        serde_json::from_str::<Message>(text).map_err(|e| DecodeError::classify(text.as_bytes(), e))
    }

    /// Encodes the message as compact JSON (no trailing newline).
    pub fn encode(&self) -> Vec<u8> {
        // Room for a typical message up front, rather than growing from nothing: a 2026-era
        // request, its `_meta` included, is 300-400 bytes, and growing means a `realloc`
        // (which glibc serves under its arena's lock, where other threads' frees wait).
        let mut out = Vec::with_capacity(512);
        // Serializing a `Value`-based message into memory cannot fail: every map key is a string.
        match serde_json::to_writer(&mut out, self) {
            Ok(()) => out,
            Err(_) => Vec::new(),
        }
    }

    /// The method name of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            _ => None,
        }
    }

    /// The id of a request or response.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Message::Request(r) => Some(&r.id),
            Message::Response(r) => Some(&r.id),
            Message::Error(e) => e.id.as_ref(),
            Message::Notification(_) => None,
        }
    }
}

/// Why bytes could not be decoded into a [`Message`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", self.error.message)]
pub struct DecodeError {
    id: Option<RequestId>,
    error: ErrorObject,
    batch: bool,
}

impl DecodeError {
    fn classify(bytes: &[u8], e: serde_json::Error) -> DecodeError {
        use serde_json::error::Category;
        let syntax_ok = match e.classify() {
            Category::Syntax | Category::Eof | Category::Io => false,
            // A visitor can bail out before the rest of the input was read (a batch is refused
            // on its opening bracket); only call it an invalid message if the JSON is valid.
            Category::Data => serde_json::from_slice::<IgnoredAny>(bytes).is_ok(),
        };
        if !syntax_ok {
            return DecodeError { id: None, error: ErrorObject::parse_error(e), batch: false };
        }
        let batch = first_non_ws(bytes) == Some(b'[');
        if batch {
            return DecodeError {
                id: None,
                error: ErrorObject::invalid_request(
                    "JSON-RPC batches are not supported (removed from MCP after 2025-03-26)",
                ),
                batch: true,
            };
        }
        // Recover the id, if the message has a usable one, so the error can answer it.
        let id = serde_json::from_slice::<Value>(bytes)
            .ok()
            .and_then(|v| v.get("id").cloned())
            .and_then(|id| serde_json::from_value::<RequestId>(id).ok());
        DecodeError { id, error: ErrorObject::invalid_request(e), batch: false }
    }

    /// The JSON-RPC error code to answer with: `-32700` or `-32600`.
    pub fn code(&self) -> ErrorCode {
        self.error.code
    }

    /// Whether the input was unparseable JSON (`-32700`).
    pub fn is_parse_error(&self) -> bool {
        self.error.code == ErrorCode::PARSE_ERROR
    }

    /// Whether the input was a JSON-RPC batch.
    pub fn is_batch(&self) -> bool {
        self.batch
    }

    /// The id of the offending message, when it could be read.
    pub fn id(&self) -> Option<&RequestId> {
        self.id.as_ref()
    }

    /// The error object to send back.
    pub fn error_object(&self) -> &ErrorObject {
        &self.error
    }

    /// The error response to send back to the peer.
    pub fn to_response(&self) -> ErrorResponse {
        ErrorResponse { id: self.id.clone(), error: self.error.clone() }
    }
}

fn first_non_ws(bytes: &[u8]) -> Option<u8> {
    bytes.iter().copied().find(|b| !b.is_ascii_whitespace())
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::Request(r) => r.serialize(serializer),
            Message::Notification(n) => n.serialize(serializer),
            Message::Response(r) => r.serialize(serializer),
            Message::Error(e) => e.serialize(serializer),
        }
    }
}

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("method", &self.method)?;
        if let Some(params) = &self.params {
            map.serialize_entry("params", params)?;
        }
        map.end()
    }
}

impl Serialize for Notification {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("method", &self.method)?;
        if let Some(params) = &self.params {
            map.serialize_entry("params", params)?;
        }
        map.end()
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("result", &self.result)?;
        map.end()
    }
}

impl Serialize for ErrorResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("jsonrpc", JSONRPC_VERSION)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("error", &self.error)?;
        map.end()
    }
}

enum Field {
    JsonRpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Field, E> {
                Ok(match v {
                    "jsonrpc" => Field::JsonRpc,
                    "id" => Field::Id,
                    "method" => Field::Method,
                    "params" => Field::Params,
                    "result" => Field::Result,
                    "error" => Field::Error,
                    _ => Field::Other,
                })
            }
        }
        deserializer.deserialize_identifier(FieldVisitor)
    }
}

/// `"2.0"`, checked without allocating.
struct Version;

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct VersionVisitor;
        impl Visitor<'_> for VersionVisitor {
            type Value = Version;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"2.0\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Version, E> {
                if v == JSONRPC_VERSION {
                    Ok(Version)
                } else {
                    Err(E::custom(format_args!(
                        "unsupported jsonrpc version {v:?}, expected \"2.0\""
                    )))
                }
            }
        }
        deserializer.deserialize_str(VersionVisitor)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MessageVisitor)
    }
}

struct MessageVisitor;

fn duplicate<E: de::Error>(field: &'static str) -> E {
    E::custom(format_args!("duplicate field `{field}`"))
}

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = Message;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC 2.0 message object")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _seq: A) -> Result<Message, A::Error> {
        Err(de::Error::custom("JSON-RPC batches are not supported"))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
        let mut version = false;
        // None: absent; Some(None): null; Some(Some(id)): an id.
        let mut id: Option<Option<RequestId>> = None;
        let mut method: Option<String> = None;
        let mut params: Option<Value> = None;
        let mut result: Option<RawJson> = None;
        let mut error: Option<ErrorObject> = None;
        while let Some(key) = map.next_key::<Field>()? {
            match key {
                Field::JsonRpc => {
                    if version {
                        return Err(duplicate("jsonrpc"));
                    }
                    map.next_value::<Version>()?;
                    version = true;
                }
                Field::Id => {
                    if id.is_some() {
                        return Err(duplicate("id"));
                    }
                    id = Some(map.next_value::<Option<RequestId>>()?);
                }
                Field::Method => {
                    if method.is_some() {
                        return Err(duplicate("method"));
                    }
                    method = Some(map.next_value()?);
                }
                Field::Params => {
                    if params.is_some() {
                        return Err(duplicate("params"));
                    }
                    let value: Value = map.next_value()?;
                    match value {
                        Value::Object(_) | Value::Array(_) => params = Some(value),
                        // `"params": null` is read as absent, as many peers send it.
                        Value::Null => {}
                        _ => {
                            return Err(de::Error::custom(
                                "`params` must be an object or an array",
                            ));
                        }
                    }
                }
                Field::Result => {
                    if result.is_some() {
                        return Err(duplicate("result"));
                    }
                    result = Some(map.next_value()?);
                }
                Field::Error => {
                    if error.is_some() {
                        return Err(duplicate("error"));
                    }
                    error = Some(map.next_value()?);
                }
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !version {
            return Err(de::Error::custom("missing `jsonrpc: \"2.0\"`"));
        }
        match (method, result, error) {
            (Some(method), None, None) => match id {
                None => Ok(Message::Notification(Notification { method, params })),
                Some(Some(id)) => Ok(Message::Request(Request { id, method, params })),
                Some(None) => Err(de::Error::custom("a request id must not be null")),
            },
            (None, Some(result), None) => match id {
                Some(Some(id)) => Ok(Message::Response(Response { id, result })),
                _ => Err(de::Error::custom("a response needs a string or integer id")),
            },
            (None, None, Some(error)) => {
                Ok(Message::Error(ErrorResponse { id: id.flatten(), error }))
            }
            (None, Some(_), Some(_)) => {
                Err(de::Error::custom("a response has both `result` and `error`"))
            }
            (None, None, None) => {
                Err(de::Error::custom("a message needs `method`, `result` or `error`"))
            }
            (Some(_), _, _) => Err(de::Error::custom("a request cannot carry `result` or `error`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn round_trip(text: &str) {
        let msg = Message::decode(text.as_bytes()).unwrap();
        let back: Value = serde_json::from_slice(&msg.encode()).unwrap();
        let orig: Value = serde_json::from_str(text).unwrap();
        assert_eq!(back, orig);
    }

    #[test]
    fn decodes_each_kind_and_round_trips() {
        round_trip(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#);
        round_trip(r#"{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"x"}}"#);
        round_trip(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        round_trip(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#);
        round_trip(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"nope"}}"#);
        round_trip(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad","data":[1]}}"#,
        );
    }

    #[test]
    fn invalid_json_is_parse_error_with_null_id() {
        for bad in ["", "{", "{\"jsonrpc\":", "nul", "{} trailing", "\u{0}", "[1,"] {
            let e = Message::decode(bad.as_bytes()).unwrap_err();
            assert_eq!(e.code(), ErrorCode::PARSE_ERROR, "{bad:?}");
            assert_eq!(e.to_response().id, None);
            let wire: Value = serde_json::to_value(Message::Error(e.to_response())).unwrap();
            assert_eq!(wire["id"], Value::Null);
        }
    }

    #[test]
    fn invalid_utf8_is_a_parse_error() {
        let mut bytes = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec();
        bytes[28] = 0xff; // inside "ping"
        let e = Message::decode(&bytes).unwrap_err();
        assert!(e.is_parse_error(), "{e}");
        assert_eq!(e.id, None);
    }

    #[test]
    fn batch_is_refused_as_invalid_request() {
        let e = Message::decode(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).unwrap_err();
        assert_eq!(e.code(), ErrorCode::INVALID_REQUEST);
        assert!(e.is_batch());
        assert!(e.to_string().contains("batch"));
        let e = Message::decode(b"[]").unwrap_err();
        assert!(e.is_batch());
    }

    #[test]
    fn invalid_messages_are_invalid_request() {
        let cases = [
            json!(1),
            json!("x"),
            json!({}),
            json!({"id": 1, "method": "ping"}),
            json!({"jsonrpc": "1.0", "id": 1, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": null, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": true, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": 5}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": 3}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}}),
            json!({"jsonrpc": "2.0", "result": {}}),
            json!({"jsonrpc": "2.0", "id": 1}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "x", "result": {}}),
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}}),
        ];
        for case in cases {
            let bytes = serde_json::to_vec(&case).unwrap();
            let e = Message::decode(&bytes).unwrap_err();
            assert_eq!(e.code(), ErrorCode::INVALID_REQUEST, "{case}");
            assert!(!e.is_batch());
        }
    }

    #[test]
    fn duplicate_keys_are_invalid() {
        let e = Message::decode(br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#).unwrap_err();
        assert_eq!(e.code(), ErrorCode::INVALID_REQUEST);
    }

    #[test]
    fn invalid_request_keeps_a_readable_id() {
        let e = Message::decode(br#"{"jsonrpc":"2.0","id":42,"method":7}"#).unwrap_err();
        assert_eq!(e.id(), Some(&RequestId::Number(42)));
        assert_eq!(e.to_response().id, Some(RequestId::Number(42)));
    }

    #[test]
    fn unknown_top_level_fields_are_ignored_and_null_params_is_absent() {
        let msg =
            Message::decode(br#"{"jsonrpc":"2.0","x":1,"method":"m","params":null}"#).unwrap();
        assert_eq!(msg, Message::Notification(Notification::new("m", None)));
    }
}
