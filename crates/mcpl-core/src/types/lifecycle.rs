//! Connection lifecycle: the 2025 `initialize` handshake, `ping`, and the 2026-07-28
//! `server/discover`.

use derive_setters::Setters;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::capabilities::{ClientCapabilities, Implementation, ServerCapabilities};
use super::meta::Meta;
use super::params::RequestParams;
use super::result::{CacheScope, ResultType, impl_result_type};

/// Params of `initialize` (up to 2025-11-25): the client's version, capabilities and identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct InitializeRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The newest revision the client supports.
    pub protocol_version: String,
    /// What the client supports.
    pub capabilities: ClientCapabilities,
    /// Who the client is.
    pub client_info: Implementation,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl InitializeRequestParams {
    /// Creates `initialize` params.
    pub fn new(
        protocol_version: impl Into<String>,
        capabilities: ClientCapabilities,
        client_info: Implementation,
    ) -> Self {
        InitializeRequestParams {
            meta: None,
            protocol_version: protocol_version.into(),
            capabilities,
            client_info,
            extra: Map::new(),
        }
    }
}

/// The server's answer to `initialize` (up to 2025-11-25).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct InitializeResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Never sent by the revisions that have `initialize`; kept for uniformity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The revision the server chose.
    pub protocol_version: String,
    /// What the server supports.
    pub capabilities: ServerCapabilities,
    /// Who the server is.
    pub server_info: Implementation,
    /// How to use the server, e.g. as a hint for the model's system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl InitializeResult {
    /// Creates an `initialize` result.
    pub fn new(
        protocol_version: impl Into<String>,
        capabilities: ServerCapabilities,
        server_info: Implementation,
    ) -> Self {
        InitializeResult {
            meta: None,
            result_type: None,
            protocol_version: protocol_version.into(),
            capabilities,
            server_info,
            instructions: None,
            extra: Map::new(),
        }
    }
}

/// Params of `ping`: only `_meta`.
pub type PingRequestParams = RequestParams;

/// Params of `server/discover` (2026-07-28): only the required `_meta`.
pub type DiscoverRequestParams = RequestParams;

/// The server's answer to `server/discover` (2026-07-28): the revisions it speaks, its
/// capabilities, and for how long the answer may be cached. The server's identity travels in
/// `_meta` under `io.modelcontextprotocol/serverInfo`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct DiscoverResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The revisions the server supports.
    pub supported_versions: Vec<String>,
    /// What the server supports.
    pub capabilities: ServerCapabilities,
    /// How to use the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long the result may be reused, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may reuse the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DiscoverResult {
    /// Creates a complete discover result without cache hints.
    pub fn new(supported_versions: Vec<String>, capabilities: ServerCapabilities) -> Self {
        DiscoverResult {
            meta: None,
            result_type: Some(ResultType::Complete),
            supported_versions,
            capabilities,
            instructions: None,
            ttl_ms: None,
            cache_scope: None,
            extra: Map::new(),
        }
    }
}

impl_result_type!(InitializeResult, DiscoverResult);
