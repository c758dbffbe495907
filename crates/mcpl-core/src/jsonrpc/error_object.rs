//! The JSON-RPC error object and the error codes MCP uses.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A JSON-RPC error code.
///
/// The associated constants name every code JSON-RPC 2.0 and MCP define. Any other integer is
/// a valid code too; the constants are not exhaustive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i64);

impl ErrorCode {
    /// Invalid JSON was received (`-32700`).
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// The JSON sent is not a valid request object (`-32600`).
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// The method does not exist or is not available (`-32601`).
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// Invalid method parameters (`-32602`).
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// Internal JSON-RPC error (`-32603`).
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// A requested resource does not exist (`-32002`, MCP 2025 revisions).
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    /// HTTP headers do not match the request body (`-32020`, MCP 2026-07-28).
    pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
    /// The request needs a client capability the request did not declare (`-32021`, MCP
    /// 2026-07-28).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: ErrorCode = ErrorCode(-32021);
    /// The requested protocol version is not supported (`-32022`, MCP 2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);
    /// The request needs a URL-mode elicitation first (`-32042`, MCP 2025-11-25).
    pub const URL_ELICITATION_REQUIRED: ErrorCode = ErrorCode(-32042);

    /// Returns the standard name of a known code, or `None`.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Self::PARSE_ERROR => "parse error",
            Self::INVALID_REQUEST => "invalid request",
            Self::METHOD_NOT_FOUND => "method not found",
            Self::INVALID_PARAMS => "invalid params",
            Self::INTERNAL_ERROR => "internal error",
            Self::RESOURCE_NOT_FOUND => "resource not found",
            Self::HEADER_MISMATCH => "header mismatch",
            Self::MISSING_REQUIRED_CLIENT_CAPABILITY => "missing required client capability",
            Self::UNSUPPORTED_PROTOCOL_VERSION => "unsupported protocol version",
            Self::URL_ELICITATION_REQUIRED => "url elicitation required",
            _ => return None,
        })
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} ({name})", self.0),
            None => write!(f, "{}", self.0),
        }
    }
}

impl From<i64> for ErrorCode {
    fn from(code: i64) -> Self {
        ErrorCode(code)
    }
}

/// The `error` member of a JSON-RPC error response.
///
/// # Examples
///
/// ```
/// use mcpl_core::jsonrpc::{ErrorCode, ErrorObject};
///
/// let e = ErrorObject::method_not_found("tools/frobnicate");
/// assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: ErrorCode,
    /// A short description of the error.
    pub message: String,
    /// Additional information about the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// Creates an error object without data.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorObject { code, message: message.into(), data: None }
    }

    /// Attaches `data` to the error.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// A `-32700` parse error.
    pub fn parse_error(detail: impl fmt::Display) -> Self {
        Self::new(ErrorCode::PARSE_ERROR, format!("Parse error: {detail}"))
    }

    /// A `-32600` invalid request error.
    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        Self::new(ErrorCode::INVALID_REQUEST, format!("Invalid request: {detail}"))
    }

    /// A `-32601` method not found error naming the method.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(ErrorCode::METHOD_NOT_FOUND, format!("Method not found: {method}"))
    }

    /// A `-32602` invalid params error.
    pub fn invalid_params(detail: impl fmt::Display) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, format!("Invalid params: {detail}"))
    }

    /// A `-32603` internal error.
    pub fn internal(detail: impl fmt::Display) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, format!("Internal error: {detail}"))
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.0, self.message)
    }
}

impl std::error::Error for ErrorObject {}
