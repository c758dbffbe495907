//! Roots: the directories or files a client exposes to servers (`roots/list`).

use derive_setters::Setters;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::meta::Meta;
use super::params::RequestParams;
use super::result::{ResultType, impl_result_type};

/// A root: a `file://` URI the server may work within.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct Root {
    /// The root's URI.
    pub uri: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Root {
    /// Creates a root.
    pub fn new(uri: impl Into<String>) -> Self {
        Root { uri: uri.into(), name: None, meta: None }
    }
}

/// Params of `roots/list`: only `_meta`.
pub type ListRootsRequestParams = RequestParams;

/// The client's answer to `roots/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ListRootsResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Not sent by any revision; kept for uniformity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The roots.
    pub roots: Vec<Root>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl_result_type!(ListRootsResult);
