//! Resources: definitions, templates, contents, and the `resources/*` requests.

use derive_setters::Setters;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::content::{Annotations, Icon};
use super::meta::Meta;
use super::result::{CacheScope, InputResponses, ResultType, impl_result_type};
use super::serde_util::from_value;

/// A resource a server can read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct Resource {
    /// The resource's URI.
    pub uri: String,
    /// The programmatic name.
    pub name: String,
    /// A human-readable name (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The raw size in bytes, if known (2025-03-26 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons for the resource (2025-11-25 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Resource {
    /// Creates a resource from a URI and a name.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Resource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            icons: None,
            annotations: None,
            meta: None,
        }
    }
}

/// A family of resources described by an RFC 6570 URI template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// The programmatic name.
    pub name: String,
    /// A human-readable name (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resources are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type all matching resources share, if they do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Icons for the template (2025-11-25 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ResourceTemplate {
    /// Creates a template from a URI template and a name.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            icons: None,
            annotations: None,
            meta: None,
        }
    }
}

/// The contents of a text resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct TextResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// The MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl TextResourceContents {
    /// Creates text contents.
    pub fn new(uri: impl Into<String>, text: impl Into<String>) -> Self {
        TextResourceContents { uri: uri.into(), mime_type: None, text: text.into(), meta: None }
    }
}

/// The contents of a binary resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct BlobResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// The MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The base64-encoded bytes.
    pub blob: String,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl BlobResourceContents {
    /// Creates binary contents from base64 data.
    pub fn new(uri: impl Into<String>, blob: impl Into<String>) -> Self {
        BlobResourceContents { uri: uri.into(), mime_type: None, blob: blob.into(), meta: None }
    }
}

/// The contents of a resource: text or binary, told apart by the `text` or `blob` member.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text contents.
    Text(TextResourceContents),
    /// Binary contents.
    Blob(BlobResourceContents),
}

impl ResourceContents {
    /// The resource's URI.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text(t) => &t.uri,
            ResourceContents::Blob(b) => &b.uri,
        }
    }
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        if map.contains_key("blob") && !map.contains_key("text") {
            from_value::<_, D>(Value::Object(map)).map(ResourceContents::Blob)
        } else if map.contains_key("text") {
            from_value::<_, D>(Value::Object(map)).map(ResourceContents::Text)
        } else {
            Err(serde::de::Error::custom("resource contents need a `text` or a `blob` member"))
        }
    }
}

impl From<TextResourceContents> for ResourceContents {
    fn from(t: TextResourceContents) -> Self {
        ResourceContents::Text(t)
    }
}

impl From<BlobResourceContents> for ResourceContents {
    fn from(b: BlobResourceContents) -> Self {
        ResourceContents::Blob(b)
    }
}

/// The answer to `resources/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ListResourcesResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `complete` (required in 2026-07-28, absent before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The resources.
    pub resources: Vec<Resource>,
    /// The cursor of the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How long the result may be reused, in milliseconds (2026-07-28, required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may reuse the result (2026-07-28, required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The answer to `resources/templates/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ListResourceTemplatesResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `complete` (required in 2026-07-28, absent before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The templates.
    pub resource_templates: Vec<ResourceTemplate>,
    /// The cursor of the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How long the result may be reused, in milliseconds (2026-07-28, required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may reuse the result (2026-07-28, required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params naming one resource: `resources/subscribe`, `resources/unsubscribe` (the schema's
/// `ResourceRequestParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ResourceRequestParams {
    /// Request metadata (required in 2026-07-28).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The resource's URI.
    pub uri: String,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResourceRequestParams {
    /// Params naming the resource at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ResourceRequestParams { meta: None, uri: uri.into(), extra: Map::new() }
    }
}

/// Params of `resources/subscribe` (up to 2025-11-25).
pub type SubscribeRequestParams = ResourceRequestParams;

/// Params of `resources/unsubscribe` (up to 2025-11-25).
pub type UnsubscribeRequestParams = ResourceRequestParams;

/// Params of `resources/read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ReadResourceRequestParams {
    /// Request metadata (required in 2026-07-28).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The resource's URI.
    pub uri: String,
    /// Answers to the input requests of an earlier `input_required` result (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The `requestState` of an earlier `input_required` result, echoed (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ReadResourceRequestParams {
    /// Params reading the resource at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ReadResourceRequestParams {
            meta: None,
            uri: uri.into(),
            input_responses: None,
            request_state: None,
            extra: Map::new(),
        }
    }
}

/// The answer to `resources/read`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ReadResourceResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `complete` (required in 2026-07-28, absent before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The contents (a template or a directory may yield several).
    pub contents: Vec<ResourceContents>,
    /// How long the result may be reused, in milliseconds (2026-07-28, required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may reuse the result (2026-07-28, required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl_result_type!(ListResourcesResult, ListResourceTemplatesResult, ReadResourceResult);
