//! The `_meta` object every MCP message may carry, its reserved keys, and progress tokens.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::capabilities::{ClientCapabilities, Implementation};
use super::logging::LoggingLevel;
use super::serde_util::to_value_lossless;
use super::tasks::RelatedTaskMetadata;
use crate::era::ProtocolVersion;
use crate::jsonrpc::RequestId;

/// The reserved `_meta` keys MCP defines, in one place.
pub mod meta_keys {
    /// The protocol revision a 2026-07-28 request is sent under (required on every request).
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// The client's [`Implementation`](crate::types::Implementation) (2026-07-28 requests).
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// The client's [`ClientCapabilities`](crate::types::ClientCapabilities) (2026-07-28
    /// requests, required).
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// The log level the client wants for this request (2026-07-28 requests).
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// The server's [`Implementation`](crate::types::Implementation) (2026-07-28 results).
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// The id of the `subscriptions/listen` stream a notification belongs to (2026-07-28).
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// Associates a message with a task (2025-11-25).
    pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
    /// The token progress notifications for a request refer to (every revision).
    pub const PROGRESS_TOKEN: &str = "progressToken";
}

use meta_keys as keys;

/// The `_meta` member of a message: an open JSON object whose every key is preserved.
///
/// Typed getters and setters cover the keys MCP reserves (see [`meta_keys`]); any other key is
/// reached through [`Meta::get`] and [`Meta::insert`] or the public map.
///
/// Typed getters return `Ok(None)` when the key is absent and an error when it is present but
/// malformed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Meta(pub Map<String, Value>);

impl Meta {
    /// Creates an empty `_meta` object.
    pub fn new() -> Self {
        Meta(Map::new())
    }

    /// Creates the `_meta` a 2026-07-28 request must carry: the protocol version and the client's
    /// capabilities.
    pub fn for_request(version: ProtocolVersion, capabilities: &ClientCapabilities) -> Self {
        let mut meta = Meta::new();
        meta.set_protocol_version(version.as_str());
        meta.set_client_capabilities(capabilities);
        meta
    }

    /// Whether the object has no keys.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The raw value under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// Sets the raw value under `key`, returning the previous one.
    pub fn insert(&mut self, key: impl Into<String>, value: Value) -> Option<Value> {
        self.0.insert(key.into(), value)
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.0.remove(key)
    }

    /// Decodes the value under `key` as `T`.
    pub fn get_typed<T: DeserializeOwned>(
        &self,
        key: &str,
    ) -> Result<Option<T>, serde_json::Error> {
        self.0.get(key).map(|v| T::deserialize(v)).transpose()
    }

    /// Encodes `value` under `key`.
    pub fn set_typed<T: Serialize>(&mut self, key: &str, value: &T) {
        self.0.insert(key.to_owned(), to_value_lossless(value));
    }

    /// The `io.modelcontextprotocol/protocolVersion` value, as sent (it may name a revision this
    /// SDK does not know).
    pub fn protocol_version(&self) -> Option<&str> {
        self.0.get(keys::PROTOCOL_VERSION).and_then(Value::as_str)
    }

    /// Sets `io.modelcontextprotocol/protocolVersion`.
    pub fn set_protocol_version(&mut self, version: impl Into<String>) {
        self.0.insert(keys::PROTOCOL_VERSION.to_owned(), Value::String(version.into()));
    }

    /// The `io.modelcontextprotocol/clientInfo` value.
    pub fn client_info(&self) -> Result<Option<Implementation>, serde_json::Error> {
        self.get_typed(keys::CLIENT_INFO)
    }

    /// Sets `io.modelcontextprotocol/clientInfo`.
    pub fn set_client_info(&mut self, info: &Implementation) {
        self.set_typed(keys::CLIENT_INFO, info);
    }

    /// The `io.modelcontextprotocol/clientCapabilities` value.
    pub fn client_capabilities(&self) -> Result<Option<ClientCapabilities>, serde_json::Error> {
        self.get_typed(keys::CLIENT_CAPABILITIES)
    }

    /// Sets `io.modelcontextprotocol/clientCapabilities`.
    pub fn set_client_capabilities(&mut self, capabilities: &ClientCapabilities) {
        self.set_typed(keys::CLIENT_CAPABILITIES, capabilities);
    }

    /// The `io.modelcontextprotocol/logLevel` value.
    pub fn log_level(&self) -> Result<Option<LoggingLevel>, serde_json::Error> {
        self.get_typed(keys::LOG_LEVEL)
    }

    /// Sets `io.modelcontextprotocol/logLevel`.
    pub fn set_log_level(&mut self, level: LoggingLevel) {
        self.set_typed(keys::LOG_LEVEL, &level);
    }

    /// The `io.modelcontextprotocol/serverInfo` value.
    pub fn server_info(&self) -> Result<Option<Implementation>, serde_json::Error> {
        self.get_typed(keys::SERVER_INFO)
    }

    /// Sets `io.modelcontextprotocol/serverInfo`.
    pub fn set_server_info(&mut self, info: &Implementation) {
        self.set_typed(keys::SERVER_INFO, info);
    }

    /// The `io.modelcontextprotocol/subscriptionId` value.
    pub fn subscription_id(&self) -> Result<Option<RequestId>, serde_json::Error> {
        self.get_typed(keys::SUBSCRIPTION_ID)
    }

    /// Sets `io.modelcontextprotocol/subscriptionId`.
    pub fn set_subscription_id(&mut self, id: &RequestId) {
        self.set_typed(keys::SUBSCRIPTION_ID, id);
    }

    /// The `io.modelcontextprotocol/related-task` value (2025-11-25).
    pub fn related_task(&self) -> Result<Option<RelatedTaskMetadata>, serde_json::Error> {
        self.get_typed(keys::RELATED_TASK)
    }

    /// Sets `io.modelcontextprotocol/related-task` (2025-11-25).
    pub fn set_related_task(&mut self, task: &RelatedTaskMetadata) {
        self.set_typed(keys::RELATED_TASK, task);
    }

    /// The `progressToken` value.
    pub fn progress_token(&self) -> Result<Option<ProgressToken>, serde_json::Error> {
        self.get_typed(keys::PROGRESS_TOKEN)
    }

    /// Sets `progressToken`.
    pub fn set_progress_token(&mut self, token: &ProgressToken) {
        self.set_typed(keys::PROGRESS_TOKEN, token);
    }
}

impl From<Map<String, Value>> for Meta {
    fn from(map: Map<String, Value>) -> Self {
        Meta(map)
    }
}

/// A token tying progress notifications to the request that asked for them: a string or an
/// integer.
///
/// Like [`RequestId`], tokens round-trip exactly: `0` and `"0"` are different tokens.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProgressToken {
    /// An integer token.
    Number(i64),
    /// A string token.
    String(String),
}

impl fmt::Display for ProgressToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProgressToken::Number(n) => write!(f, "{n}"),
            ProgressToken::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for ProgressToken {
    fn from(n: i64) -> Self {
        ProgressToken::Number(n)
    }
}

impl From<&str> for ProgressToken {
    fn from(s: &str) -> Self {
        ProgressToken::String(s.to_owned())
    }
}

impl From<String> for ProgressToken {
    fn from(s: String) -> Self {
        ProgressToken::String(s)
    }
}

impl From<RequestId> for ProgressToken {
    fn from(id: RequestId) -> Self {
        match id {
            RequestId::Number(n) => ProgressToken::Number(n),
            RequestId::String(s) => ProgressToken::String(s),
        }
    }
}

impl From<ProgressToken> for RequestId {
    fn from(token: ProgressToken) -> Self {
        match token {
            ProgressToken::Number(n) => RequestId::Number(n),
            ProgressToken::String(s) => RequestId::String(s),
        }
    }
}

impl Serialize for ProgressToken {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ProgressToken::Number(n) => serializer.serialize_i64(*n),
            ProgressToken::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for ProgressToken {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Same wire rules as a request id: a string or an integer.
        RequestId::deserialize(deserializer).map(ProgressToken::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn progress_token_zero_differs_from_string_zero() {
        let n: ProgressToken = serde_json::from_value(json!(0)).unwrap();
        let s: ProgressToken = serde_json::from_value(json!("0")).unwrap();
        assert_eq!(n, ProgressToken::Number(0));
        assert_eq!(s, ProgressToken::String("0".into()));
        assert_ne!(n, s);
        assert_eq!(serde_json::to_value(&n).unwrap(), json!(0));
        assert_eq!(serde_json::to_value(&s).unwrap(), json!("0"));
        assert!(serde_json::from_value::<ProgressToken>(json!(null)).is_err());
        assert!(serde_json::from_value::<ProgressToken>(json!(1.5)).is_err());
    }

    #[test]
    fn unknown_meta_keys_survive() {
        let v = json!({
            "progressToken": 7,
            "com.example/trace": {"id": [1, 2, 3]},
            "io.modelcontextprotocol/protocolVersion": "2026-07-28"
        });
        let meta: Meta = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(meta.progress_token().unwrap(), Some(ProgressToken::Number(7)));
        assert_eq!(meta.protocol_version(), Some("2026-07-28"));
        assert_eq!(serde_json::to_value(&meta).unwrap(), v);
    }

    #[test]
    fn typed_setters_and_getters() {
        let caps = ClientCapabilities::default();
        let mut meta = Meta::for_request(ProtocolVersion::V2026_07_28, &caps);
        meta.set_client_info(&Implementation::new("c", "1"));
        meta.set_log_level(LoggingLevel::Debug);
        assert_eq!(meta.client_capabilities().unwrap(), Some(caps));
        assert_eq!(meta.client_info().unwrap().unwrap().name, "c");
        assert_eq!(meta.log_level().unwrap(), Some(LoggingLevel::Debug));
        assert_eq!(meta.server_info().unwrap(), None);
        meta.insert(keys::SERVER_INFO, json!(5));
        assert!(meta.server_info().is_err());
    }
}
