//! The error type of the SDK.
//!
//! [`Error`] is the one error of the protocol-facing API of every mcpl crate (see
//! `docs/architecture.md`, "One error type for the protocol"). Most variants can reach either
//! side; a few are raised by one side only, and say so: the client's transports raise
//! [`Connect`](Error::Connect), [`Tls`](Error::Tls), [`HttpStatus`](Error::HttpStatus) and
//! [`InvalidToolHeaders`](Error::InvalidToolHeaders), the client's calls
//! [`InputRequired`](Error::InputRequired) and [`ListTruncated`](Error::ListTruncated), and the
//! server's single-use HTTP transport
//! [`StatelessTransportReuse`](Error::StatelessTransportReuse).

use std::time::Duration;

use crate::jsonrpc::{DecodeError, ErrorCode, ErrorObject};

/// A boxed error from a transport or a user callback.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Displays an error and its causes (its [`source`](std::error::Error::source) chain),
/// `: `-separated: for a log line or a message that must say everything at once, since an
/// error's own Display names only what failed at its level.
///
/// # Examples
///
/// ```
/// use mcpl_core::error::ErrorChain;
///
/// #[derive(Debug, thiserror::Error)]
/// #[error("cannot load the settings")]
/// struct Load(#[source] std::io::Error);
///
/// let error = Load(std::io::Error::other("disk gone"));
/// assert_eq!(ErrorChain(&error).to_string(), "cannot load the settings: disk gone");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'a));

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(c) = cause {
            write!(f, ": {c}")?;
            cause = c.source();
        }
        Ok(())
    }
}

/// What went wrong, as a small `Copy` value that stays stable across releases.
///
/// Match on this instead of on [`Error`]'s variants or its message text (which is not stable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `connect` on an instance that already has a connection (or is connecting).
    AlreadyConnected,
    /// The connection is closed, or was closed while the operation was pending.
    ConnectionClosed,
    /// A single-use stateless transport was used a second time.
    StatelessTransportReuse,
    /// A request got no response in time.
    RequestTimeout,
    /// A write to the peer made no progress in time: the peer stopped reading.
    WriteTimeout,
    /// A request was cancelled.
    Cancelled,
    /// The peer did not advertise the capability an operation needs.
    CapabilityNotSupported,
    /// The peer does not support the requested protocol version.
    UnsupportedProtocolVersion,
    /// HTTP headers disagree with the message body.
    HeaderMismatch,
    /// The request needs a client capability that was not declared.
    MissingRequiredClientCapability,
    /// The peer answered with a JSON-RPC error.
    Rpc,
    /// Bytes from the peer were not a valid message.
    InvalidMessage,
    /// A message exceeded the configured size limit.
    MessageTooLarge,
    /// The transport failed (I/O or another transport error).
    Transport,
    /// No connection to the peer could be made: it was refused, the host is unreachable, its
    /// name did not resolve, or the server process could not be started.
    Connect,
    /// The TLS handshake with the peer failed (an untrusted or invalid certificate, no common
    /// protocol version or cipher).
    Tls,
    /// The transport gave up waiting for the peer: connecting, a handshake, or a connection
    /// that stayed silent (the engine's own wait for a response is
    /// [`RequestTimeout`](Self::RequestTimeout)).
    TransportTimeout,
    /// The peer broke the rules of the transport: an unexpected content type, a body or event
    /// stream that could not be read, a response that does not answer the request.
    ProtocolViolation,
    /// The HTTP server answered with an error status and no JSON-RPC message.
    HttpStatus,
    /// A value could not be (de)serialized into the expected type.
    Serialization,
    /// The server still needs input the client did not supply (manual mode, or the round cap).
    InputRequired,
    /// A tool's `x-mcp-header` annotations are invalid, so the tool cannot be called.
    InvalidToolHeaders,
    /// A paginated listing stopped before its last page: what was collected is not the list.
    ListTruncated,
}

/// The error type of every mcpl crate.
///
/// Ask [`Error::kind`] what happened; the variants carry the details. The `Display` text
/// describes only this level (the cause is in [`std::error::Error::source`]) and is not stable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `connect` was called on an instance that already has a connection or is connecting.
    #[error("already connected; close the current connection first")]
    AlreadyConnected,
    /// The connection is closed, or was closed while the operation was pending.
    #[error("connection closed")]
    ConnectionClosed,
    /// A single-use stateless transport was used a second time.
    #[error("stateless transport reused: it serves exactly one request")]
    StatelessTransportReuse,
    /// A request got no response in time.
    #[error("request {method:?} timed out after {elapsed:?}")]
    RequestTimeout {
        /// The method of the request.
        method: String,
        /// How long the request waited.
        elapsed: Duration,
    },
    /// A write to the peer did not finish within the write timeout (see
    /// [`EngineConfig::write_timeout`](crate::engine::EngineConfig::write_timeout)): the peer
    /// stopped reading, and its connection was closed.
    #[error("the peer read nothing for {timeout:?} (write timeout)")]
    WriteTimeout {
        /// The timeout.
        timeout: Duration,
    },
    /// A request was cancelled.
    #[error("request cancelled{}", reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    Cancelled {
        /// Why, if known.
        reason: Option<String>,
    },
    /// The peer did not advertise the capability an operation needs.
    #[error("peer does not support {capability}")]
    CapabilityNotSupported {
        /// The capability, as a path such as `tools` or `resources.subscribe`.
        capability: String,
    },
    /// The peer does not support the requested protocol version.
    #[error("protocol version {requested:?} is not supported (supported: {supported:?})")]
    UnsupportedProtocolVersion {
        /// The version that was asked for.
        requested: String,
        /// The versions the peer supports, if it said.
        supported: Vec<String>,
    },
    /// HTTP headers disagree with the message body, or a required header is missing.
    #[error("header mismatch: {detail}")]
    HeaderMismatch {
        /// What disagreed.
        detail: String,
    },
    /// The request needs a client capability the request did not declare.
    #[error("missing required client capability")]
    MissingRequiredClientCapability {
        /// The capabilities the server requires, as sent in the error data.
        required: serde_json::Value,
    },
    /// The peer answered with a JSON-RPC error.
    #[error("peer returned error {}: {}", .0.code.0, .0.message)]
    Rpc(Box<ErrorObject>),
    /// Bytes from the peer were not a valid message.
    #[error("invalid message from peer")]
    InvalidMessage(#[source] Box<DecodeError>),
    /// A message exceeded the configured size limit.
    #[error("message exceeds the limit of {limit} bytes")]
    MessageTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// Transport I/O failed.
    #[error("transport i/o failed")]
    Io(#[source] std::io::Error),
    /// No connection to the peer could be made (refused, unreachable, an unknown host name, a
    /// server process that could not be started).
    #[error("could not connect to {endpoint}")]
    Connect {
        /// Where the transport tried to connect (a URL without credentials, a program).
        endpoint: String,
        /// Why it could not.
        #[source]
        source: BoxError,
    },
    /// The TLS handshake with the peer failed (an untrusted or invalid certificate, no common
    /// protocol version).
    #[error("the TLS handshake with {endpoint} failed")]
    Tls {
        /// The peer (a URL without credentials).
        endpoint: String,
        /// The TLS library's error.
        #[source]
        source: BoxError,
    },
    /// The transport gave up waiting for the peer.
    #[error("{during} timed out")]
    TransportTimeout {
        /// What the transport was waiting for ("connecting to ...", "the websocket handshake").
        during: String,
        /// The timeout, when the transport knows it (a client of the caller's own may have
        /// set it).
        timeout: Option<Duration>,
    },
    /// The peer broke the rules of the transport (an unexpected content type, an unreadable
    /// body or event stream, a response that does not answer the request).
    #[error("the peer broke the transport protocol: {detail}")]
    ProtocolViolation {
        /// What the peer did.
        detail: String,
        /// The cause, if any (a JSON error, an I/O error).
        #[source]
        source: Option<BoxError>,
    },
    /// The HTTP server answered with an error status and no JSON-RPC message. `body` is the
    /// start of what it sent (at most [`HTTP_BODY_SNIPPET`] bytes, as text).
    #[error("the server answered HTTP {status}{}", snippet(body))]
    HttpStatus {
        /// The status code.
        status: u16,
        /// The start of the body, as text (lossy UTF-8), at most [`HTTP_BODY_SNIPPET`] bytes.
        body: String,
        /// The `WWW-Authenticate` challenge of a `401` or `403`, if any.
        challenge: Option<Box<str>>,
    },
    /// Another transport failure.
    #[error("transport failed: {context}")]
    Transport {
        /// What the transport was doing.
        context: String,
        /// The cause, if any.
        #[source]
        source: Option<BoxError>,
    },
    /// A value could not be (de)serialized into the expected type.
    #[error("could not (de)serialize {what}")]
    Serialization {
        /// What was being converted.
        what: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// The server answered `input_required` (2026-07-28) and the client did not fulfil it: it
    /// is in manual mode (`rounds` is 0) or the server still asked for input after the round
    /// cap. The last input-required result is handed over so the caller can answer it and
    /// retry. Raised by `mcpl-client` only.
    #[error("the server requires input (after {rounds} fulfilled rounds)")]
    InputRequired {
        /// How many rounds were fulfilled before giving up.
        rounds: usize,
        /// The last input-required result.
        result: Box<crate::types::InputRequiredResult>,
    },
    /// A tool's `x-mcp-header` annotations break the rules (SEP-2243), so clients must not
    /// call it. Raised by `mcpl-client`'s HTTP transport only.
    #[error("tool {tool:?} has invalid x-mcp-header annotations: {detail}")]
    InvalidToolHeaders {
        /// The tool.
        tool: String,
        /// What is wrong.
        detail: String,
    },
    /// A paginated listing stopped before its last page (a cap was reached, or the server
    /// repeated a cursor): the pages collected are not the whole list, so none is returned.
    /// Raised by `mcpl-client` only.
    #[error("{method} stopped before its last page: {limit}")]
    ListTruncated {
        /// The list method (`tools/list`, `resources/list`, ...).
        method: String,
        /// What stopped it.
        limit: ListLimit,
    },
}

/// The most bytes of an HTTP error body kept in [`Error::HttpStatus`]: 512.
pub const HTTP_BODY_SNIPPET: usize = 512;

/// `": "` and the body, escaped, for the text of [`Error::HttpStatus`]; nothing for an empty
/// body.
fn snippet(body: &str) -> String {
    let body = body.trim();
    if body.is_empty() { String::new() } else { format!(": {body:?}") }
}

/// What stopped a paginated listing before its last page ([`Error::ListTruncated`]).
///
/// # Examples
///
/// ```
/// use mcpl_core::error::ListLimit;
///
/// assert_eq!(ListLimit::Items(10_000).to_string(), "more than 10000 items");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ListLimit {
    /// The page cap: this many pages were followed and the last had a next cursor.
    Pages(usize),
    /// The item cap: the pages hold more items than this.
    Items(usize),
    /// The byte cap: the pages' JSON is larger than this.
    Bytes(usize),
    /// The server sent a cursor it had sent before: following it would loop.
    RepeatedCursor,
}

impl std::fmt::Display for ListLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListLimit::Pages(n) => write!(f, "{n} pages followed, more remain"),
            ListLimit::Items(n) => write!(f, "more than {n} items"),
            ListLimit::Bytes(n) => write!(f, "more than {n} bytes"),
            ListLimit::RepeatedCursor => f.write_str("the server repeated a cursor"),
        }
    }
}

impl Error {
    /// What went wrong, as a stable [`ErrorKind`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::AlreadyConnected => ErrorKind::AlreadyConnected,
            Error::ConnectionClosed => ErrorKind::ConnectionClosed,
            Error::StatelessTransportReuse => ErrorKind::StatelessTransportReuse,
            Error::RequestTimeout { .. } => ErrorKind::RequestTimeout,
            Error::WriteTimeout { .. } => ErrorKind::WriteTimeout,
            Error::Cancelled { .. } => ErrorKind::Cancelled,
            Error::CapabilityNotSupported { .. } => ErrorKind::CapabilityNotSupported,
            Error::UnsupportedProtocolVersion { .. } => ErrorKind::UnsupportedProtocolVersion,
            Error::HeaderMismatch { .. } => ErrorKind::HeaderMismatch,
            Error::MissingRequiredClientCapability { .. } => {
                ErrorKind::MissingRequiredClientCapability
            }
            Error::Rpc(_) => ErrorKind::Rpc,
            Error::InvalidMessage(_) => ErrorKind::InvalidMessage,
            Error::MessageTooLarge { .. } => ErrorKind::MessageTooLarge,
            Error::Io(_) | Error::Transport { .. } => ErrorKind::Transport,
            Error::Connect { .. } => ErrorKind::Connect,
            Error::Tls { .. } => ErrorKind::Tls,
            Error::TransportTimeout { .. } => ErrorKind::TransportTimeout,
            Error::ProtocolViolation { .. } => ErrorKind::ProtocolViolation,
            Error::HttpStatus { .. } => ErrorKind::HttpStatus,
            Error::Serialization { .. } => ErrorKind::Serialization,
            Error::InputRequired { .. } => ErrorKind::InputRequired,
            Error::InvalidToolHeaders { .. } => ErrorKind::InvalidToolHeaders,
            Error::ListTruncated { .. } => ErrorKind::ListTruncated,
        }
    }

    /// Builds the error for a JSON-RPC error response from the peer, lifting the MCP error codes
    /// that have typed variants (`-32020`, `-32021`, `-32022`).
    pub fn from_rpc(error: ErrorObject) -> Error {
        let data = error.data.as_ref();
        match error.code {
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION => {
                let requested = data
                    .and_then(|d| d.get("requested"))
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned();
                let supported = data
                    .and_then(|d| d.get("supported"))
                    .and_then(|v| v.as_array())
                    .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
                    .unwrap_or_default();
                Error::UnsupportedProtocolVersion { requested, supported }
            }
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY => {
                Error::MissingRequiredClientCapability {
                    required: data
                        .and_then(|d| d.get("requiredCapabilities"))
                        .cloned()
                        .unwrap_or_default(),
                }
            }
            ErrorCode::HEADER_MISMATCH => Error::HeaderMismatch { detail: error.message },
            _ => Error::Rpc(Box::new(error)),
        }
    }

    /// A transport error with context and a cause.
    pub fn transport(context: impl Into<String>, source: impl Into<BoxError>) -> Error {
        Error::Transport { context: context.into(), source: Some(source.into()) }
    }

    /// The error for an HTTP error status with `body` (kept up to [`HTTP_BODY_SNIPPET`]
    /// bytes, cut at a character boundary) and the `WWW-Authenticate` `challenge`, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::{Error, ErrorKind};
    ///
    /// let e = Error::http_status(503, &[b'x'; 4096], None);
    /// assert_eq!(e.kind(), ErrorKind::HttpStatus);
    /// let Error::HttpStatus { status, body, .. } = &e else { unreachable!() };
    /// assert_eq!((*status, body.len()), (503, mcpl_core::error::HTTP_BODY_SNIPPET));
    /// ```
    pub fn http_status(status: u16, body: &[u8], challenge: Option<&str>) -> Error {
        let mut text = String::from_utf8_lossy(&body[..body.len().min(HTTP_BODY_SNIPPET)]);
        let mut cut = text.len().min(HTTP_BODY_SNIPPET);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.to_mut().truncate(cut);
        Error::HttpStatus { status, body: text.into_owned(), challenge: challenge.map(Into::into) }
    }

    /// Whether the transport could not reach the peer or lost it: a [`ConnectionClosed`],
    /// [`Connect`], [`Tls`], [`TransportTimeout`] or other [`Transport`] failure (not an
    /// answer of the peer).
    ///
    /// [`ConnectionClosed`]: ErrorKind::ConnectionClosed
    /// [`Connect`]: ErrorKind::Connect
    /// [`Tls`]: ErrorKind::Tls
    /// [`TransportTimeout`]: ErrorKind::TransportTimeout
    /// [`Transport`]: ErrorKind::Transport
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::ConnectionClosed
                | ErrorKind::Connect
                | ErrorKind::Tls
                | ErrorKind::TransportTimeout
                | ErrorKind::Transport
        )
    }

    /// The JSON-RPC error object, when the peer answered with an error.
    pub fn rpc_error(&self) -> Option<&ErrorObject> {
        match self {
            Error::Rpc(e) => Some(e),
            _ => None,
        }
    }

    /// Whether this is [`ErrorKind::ConnectionClosed`].
    pub fn is_closed(&self) -> bool {
        self.kind() == ErrorKind::ConnectionClosed
    }

    /// Whether this is [`ErrorKind::RequestTimeout`].
    pub fn is_timeout(&self) -> bool {
        self.kind() == ErrorKind::RequestTimeout
    }

    /// Converts the error into the JSON-RPC error object a handler should answer with.
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            Error::Rpc(e) => (**e).clone(),
            Error::UnsupportedProtocolVersion { requested, supported } => ErrorObject::new(
                ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
            )
            .with_data(serde_json::json!({ "requested": requested, "supported": supported })),
            Error::MissingRequiredClientCapability { required } => ErrorObject::new(
                ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                "Missing required client capability",
            )
            .with_data(serde_json::json!({ "requiredCapabilities": required })),
            Error::HeaderMismatch { detail } => {
                ErrorObject::new(ErrorCode::HEADER_MISMATCH, format!("Header mismatch: {detail}"))
            }
            Error::InvalidMessage(e) => e.error_object().clone(),
            Error::Serialization { what, source } => {
                ErrorObject::invalid_params(format_args!("{what}: {source}"))
            }
            other => ErrorObject::internal(other),
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}

impl From<ErrorObject> for Error {
    fn from(e: ErrorObject) -> Self {
        Error::from_rpc(e)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn error_is_send_sync_and_small() {
        fn ok<T: Send + Sync + 'static>() {}
        ok::<Error>();
        assert!(std::mem::size_of::<Error>() <= 64, "{}", std::mem::size_of::<Error>());
    }

    #[test]
    fn typed_mcp_codes_lift_from_rpc_errors() {
        let e = Error::from_rpc(
            ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "no")
                .with_data(json!({"requested": "1999-01-01", "supported": ["2025-11-25"]})),
        );
        assert_eq!(e.kind(), ErrorKind::UnsupportedProtocolVersion);
        let Error::UnsupportedProtocolVersion { requested, supported } = &e else { panic!() };
        assert_eq!(requested, "1999-01-01");
        assert_eq!(supported, &["2025-11-25"]);
        // And back to the wire unchanged in substance.
        let obj = e.to_error_object();
        assert_eq!(obj.code, ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(obj.data.unwrap()["supported"], json!(["2025-11-25"]));

        let e = Error::from_rpc(
            ErrorObject::new(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY, "x")
                .with_data(json!({"requiredCapabilities": {"sampling": {}}})),
        );
        assert_eq!(e.kind(), ErrorKind::MissingRequiredClientCapability);
        assert_eq!(
            Error::from_rpc(ErrorObject::new(ErrorCode::HEADER_MISMATCH, "h")).kind(),
            ErrorKind::HeaderMismatch
        );
        assert_eq!(Error::from_rpc(ErrorObject::method_not_found("x")).kind(), ErrorKind::Rpc);
    }

    #[test]
    fn transport_failures_have_their_own_kinds_and_keep_their_cause() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let e =
            Error::Connect { endpoint: "http://127.0.0.1:1/mcp".into(), source: refused.into() };
        assert_eq!(e.kind(), ErrorKind::Connect);
        assert_eq!(e.to_string(), "could not connect to http://127.0.0.1:1/mcp");
        assert!(std::error::Error::source(&e).is_some());
        assert!(e.is_unreachable());
        // The body is cut to a bounded snippet, escaped in the text, and not the server's word.
        let e = Error::http_status(500, "db \"down\"\n".repeat(200).as_bytes(), None);
        assert_eq!(e.kind(), ErrorKind::HttpStatus);
        let Error::HttpStatus { body, .. } = &e else { panic!() };
        assert_eq!(body.len(), HTTP_BODY_SNIPPET);
        assert!(e.to_string().starts_with("the server answered HTTP 500: \"db \\\"down"), "{e}");
        assert!(!e.to_string().contains('\n'));
        assert!(!e.is_unreachable());
        assert_eq!(Error::http_status(404, b"", None).to_string(), "the server answered HTTP 404");
        // A multi-byte character across the cut is not split.
        let e = Error::http_status(502, format!("a{}", "é".repeat(600)).as_bytes(), None);
        let Error::HttpStatus { body, .. } = &e else { panic!() };
        assert!(body.len() <= HTTP_BODY_SNIPPET && !body.contains('\u{FFFD}'), "{body}");
    }

    #[test]
    fn display_is_lowercase_without_cause() {
        let io = Error::Io(std::io::Error::other("disk on fire"));
        assert_eq!(io.to_string(), "transport i/o failed");
        assert!(std::error::Error::source(&io).is_some());
        assert_eq!(
            Error::Cancelled { reason: Some("user".into()) }.to_string(),
            "request cancelled: user"
        );
    }
}
