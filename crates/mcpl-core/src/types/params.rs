//! The base params objects shared by many requests and notifications.

use derive_setters::Setters;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::meta::Meta;

/// An opaque pagination position a server hands out as `nextCursor`.
pub type Cursor = String;

/// A JSON object (`JSONObject` in the 2026-07-28 schema).
pub type JsonObject = Map<String, Value>;

/// Params carrying only `_meta`: `ping`, `server/discover`, `roots/list`.
///
/// In 2026-07-28 every request's `_meta` is required and must hold the protocol version and the
/// client capabilities (see [`Meta::for_request`]); earlier revisions make params optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct RequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    #[setters(skip)]
    pub meta: Option<Meta>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RequestParams {
    /// Params with the given `_meta`.
    pub fn with_meta(meta: Meta) -> Self {
        RequestParams { meta: Some(meta), extra: Map::new() }
    }
}

/// Params of a list request: an optional cursor.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct PaginatedRequestParams {
    /// Request metadata (required in 2026-07-28).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Where to continue listing; absent for the first page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PaginatedRequestParams {
    /// Params with the given `_meta` and cursor.
    pub fn new(meta: Option<Meta>, cursor: Option<Cursor>) -> Self {
        PaginatedRequestParams { meta, cursor, extra: Map::new() }
    }
}

/// Params carrying only `_meta`, for notifications such as `notifications/initialized` and the
/// `list_changed` notifications.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct NotificationParams {
    /// Notification metadata; in 2026-07-28 it may carry
    /// `io.modelcontextprotocol/subscriptionId`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
