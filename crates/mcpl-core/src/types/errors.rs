//! Typed `data` of the MCP-specific JSON-RPC errors.

use derive_setters::Setters;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::capabilities::ClientCapabilities;
use super::elicitation::ElicitRequestURLParams;
use super::serde_util::to_value_lossless;
use crate::jsonrpc::{ErrorCode, ErrorObject};

/// Why an [`ErrorObject`] could not be read as a typed MCP error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorDataError {
    /// The error has another code.
    #[error("expected error code {expected}, found {found}")]
    WrongCode {
        /// The code the typed error has.
        expected: ErrorCode,
        /// The code the error object has.
        found: ErrorCode,
    },
    /// The error has no `data`.
    #[error("the error has no data")]
    MissingData,
    /// The `data` does not have the expected shape.
    #[error("malformed error data: {0}")]
    Malformed(#[from] serde_json::Error),
}

/// The typed `data` of an MCP error with a fixed code.
pub trait McpErrorData: Serialize + DeserializeOwned {
    /// The error code this data belongs to.
    const CODE: ErrorCode;

    /// Builds the error object carrying this data.
    fn into_error(self, message: impl Into<String>) -> ErrorObject {
        ErrorObject::new(Self::CODE, message).with_data(to_value_lossless(&self))
    }

    /// Reads this data from an error object, checking the code.
    fn from_error(error: &ErrorObject) -> Result<Self, ErrorDataError> {
        if error.code != Self::CODE {
            return Err(ErrorDataError::WrongCode { expected: Self::CODE, found: error.code });
        }
        let data = error.data.as_ref().ok_or(ErrorDataError::MissingData)?;
        Ok(Self::deserialize(data)?)
    }
}

/// `data` of an unsupported-protocol-version error (`-32022`, 2026-07-28).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct UnsupportedProtocolVersionData {
    /// The revision the request asked for.
    pub requested: String,
    /// The revisions the server supports.
    pub supported: Vec<String>,
}

impl UnsupportedProtocolVersionData {
    /// An `UnsupportedProtocolVersionData` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(requested: impl Into<String>, supported: Vec<String>) -> Self {
        Self { requested: requested.into(), supported }
    }
}

impl McpErrorData for UnsupportedProtocolVersionData {
    const CODE: ErrorCode = ErrorCode::UNSUPPORTED_PROTOCOL_VERSION;
}

/// `data` of a missing-required-client-capability error (`-32021`, 2026-07-28).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct MissingRequiredClientCapabilityData {
    /// The capabilities the request needs.
    pub required_capabilities: ClientCapabilities,
}

impl MissingRequiredClientCapabilityData {
    /// A `MissingRequiredClientCapabilityData` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(required_capabilities: ClientCapabilities) -> Self {
        Self { required_capabilities }
    }
}

impl McpErrorData for MissingRequiredClientCapabilityData {
    const CODE: ErrorCode = ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY;
}

/// `data` of a URL-elicitation-required error (`-32042`, 2025-11-25): the elicitations the
/// user must complete before the request can be retried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct UrlElicitationRequiredData {
    /// The URL-mode elicitations.
    pub elicitations: Vec<ElicitRequestURLParams>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl UrlElicitationRequiredData {
    /// An `UrlElicitationRequiredData` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(elicitations: Vec<ElicitRequestURLParams>) -> Self {
        Self { elicitations, extra: Default::default() }
    }
}

impl McpErrorData for UrlElicitationRequiredData {
    const CODE: ErrorCode = ErrorCode::URL_ELICITATION_REQUIRED;
}

/// Builds a header-mismatch error (`-32020`, 2026-07-28): the HTTP headers contradict the
/// body. It has no typed data.
pub fn header_mismatch(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(ErrorCode::HEADER_MISMATCH, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_error_data_round_trips() {
        let data = UnsupportedProtocolVersionData {
            requested: "1900-01-01".into(),
            supported: vec!["2026-07-28".into()],
        };
        let e = data.clone().into_error("Unsupported protocol version");
        assert_eq!(e.code, ErrorCode(-32022));
        assert_eq!(e.data, Some(json!({"requested": "1900-01-01", "supported": ["2026-07-28"]})));
        assert_eq!(UnsupportedProtocolVersionData::from_error(&e).unwrap(), data);
        assert!(matches!(
            MissingRequiredClientCapabilityData::from_error(&e),
            Err(ErrorDataError::WrongCode { .. })
        ));
        let bare = ErrorObject::new(ErrorCode(-32022), "x");
        assert!(matches!(
            UnsupportedProtocolVersionData::from_error(&bare),
            Err(ErrorDataError::MissingData)
        ));
    }
}
