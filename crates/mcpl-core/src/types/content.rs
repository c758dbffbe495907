//! Content blocks (text, image, audio, resource links, embedded resources, tool use and tool
//! results), annotations, roles and icons.

use derive_setters::Setters;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::meta::Meta;
use super::resources::ResourceContents;
use super::serde_util::{opt_num, strict_tag, tagged_union};

/// The sender or recipient of a message in a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant (the model).
    Assistant,
}

/// Optional hints telling a client how to use or display an object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct Annotations {
    /// Who the object is meant for: the user, the assistant, or both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// How important the object is, from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_num")]
    pub priority: Option<f64>,
    /// When the object was last modified, as an ISO 8601 timestamp (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// The theme an icon is designed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IconTheme {
    /// For light backgrounds.
    Light,
    /// For dark backgrounds.
    Dark,
}

/// An icon a client may show for an implementation, tool, prompt or resource (2025-11-25 and
/// later).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct Icon {
    /// The icon's URI: an `https:` URL or a `data:` URI.
    pub src: String,
    /// The icon's MIME type, when `src` does not make it clear.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The sizes the icon is available in, e.g. `"48x48"` or `"any"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// The theme the icon is designed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
}

impl Icon {
    /// Creates an icon from its source URI.
    pub fn new(src: impl Into<String>) -> Self {
        Icon { src: src.into(), mime_type: None, sizes: None, theme: None }
    }
}

/// Text content (`"type": "text"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "text", rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl TextContent {
    /// Creates text content.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent { text: text.into(), annotations: None, meta: None }
    }
}

/// An image (`"type": "image"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "image", rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ImageContent {
    /// The base64-encoded image data.
    pub data: String,
    /// The image's MIME type.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ImageContent {
    /// Creates an image from base64 data and a MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ImageContent {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        }
    }
}

/// Audio (`"type": "audio"`, 2025-03-26 and later).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "audio", rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct AudioContent {
    /// The base64-encoded audio data.
    pub data: String,
    /// The audio's MIME type.
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl AudioContent {
    /// Creates audio from base64 data and a MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        AudioContent {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        }
    }
}

/// A link to a resource the server can read (`"type": "resource_link"`, 2025-06-18 and later).
///
/// It has the fields of a [`Resource`](crate::types::Resource); it need not appear in
/// `resources/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "resource_link", rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// The resource's programmatic name.
    pub name: String,
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The resource's MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The raw size in bytes, if known.
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

impl ResourceLink {
    /// Creates a link from a URI and a name.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceLink {
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

/// The contents of a resource, embedded in a message (`"type": "resource"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "resource", rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct EmbeddedResource {
    /// The resource's contents.
    pub resource: ResourceContents,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl EmbeddedResource {
    /// Embeds resource contents.
    pub fn new(resource: impl Into<ResourceContents>) -> Self {
        EmbeddedResource { resource: resource.into(), annotations: None, meta: None }
    }
}

/// A model's request to call a tool, in sampling (`"type": "tool_use"`, 2025-11-25 and later).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "tool_use", rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ToolUseContent {
    /// The id of this tool use; the matching [`ToolResultContent`] refers to it.
    pub id: String,
    /// The name of the tool to call.
    pub name: String,
    /// The tool's arguments.
    pub input: Map<String, Value>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ToolUseContent {
    /// Creates a tool use.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Map<String, Value>) -> Self {
        ToolUseContent { id: id.into(), name: name.into(), input, meta: None }
    }
}

/// The result of a tool use, in sampling (`"type": "tool_result"`, 2025-11-25 and later).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "tool_result", rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ToolResultContent {
    /// The id of the [`ToolUseContent`] this answers.
    pub tool_use_id: String,
    /// The unstructured result.
    pub content: Vec<ContentBlock>,
    /// The structured result: an object in 2025-11-25, any JSON value in 2026-07-28.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool use failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ToolResultContent {
    /// Creates a tool result.
    pub fn new(tool_use_id: impl Into<String>, content: Vec<ContentBlock>) -> Self {
        ToolResultContent {
            tool_use_id: tool_use_id.into(),
            content,
            structured_content: None,
            is_error: None,
            meta: None,
        }
    }
}

/// Content in prompts and tool results, tagged by `type`.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// `text`.
    Text(TextContent),
    /// `image`.
    Image(ImageContent),
    /// `audio` (2025-03-26 and later).
    Audio(AudioContent),
    /// `resource_link` (2025-06-18 and later).
    ResourceLink(ResourceLink),
    /// `resource`.
    Resource(EmbeddedResource),
}

tagged_union!(ContentBlock, "type", {
    Text(TextContent) = "text",
    Image(ImageContent) = "image",
    Audio(AudioContent) = "audio",
    ResourceLink(ResourceLink) = "resource_link",
    Resource(EmbeddedResource) = "resource",
});

impl ContentBlock {
    /// Text content.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }

    /// The text of a `text` block; `None` for the other kinds.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::ContentBlock;
    ///
    /// assert_eq!(ContentBlock::text("hi").as_text(), Some("hi"));
    /// ```
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

/// Content in sampling messages, tagged by `type`.
#[derive(Debug, Clone, PartialEq)]
pub enum SamplingMessageContentBlock {
    /// `text`.
    Text(TextContent),
    /// `image`.
    Image(ImageContent),
    /// `audio`.
    Audio(AudioContent),
    /// `tool_use` (2025-11-25 and later).
    ToolUse(ToolUseContent),
    /// `tool_result` (2025-11-25 and later).
    ToolResult(ToolResultContent),
}

tagged_union!(SamplingMessageContentBlock, "type", {
    Text(TextContent) = "text",
    Image(ImageContent) = "image",
    Audio(AudioContent) = "audio",
    ToolUse(ToolUseContent) = "tool_use",
    ToolResult(ToolResultContent) = "tool_result",
});

strict_tag! {
    TextContent: "type" = "text",
    ImageContent: "type" = "image",
    AudioContent: "type" = "audio",
    ResourceLink: "type" = "resource_link",
    EmbeddedResource: "type" = "resource",
    ToolUseContent: "type" = "tool_use",
    ToolResultContent: "type" = "tool_result",
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every order of `0..n`.
    fn orders(n: usize) -> Vec<Vec<usize>> {
        if n == 0 {
            return vec![vec![]];
        }
        let mut all = Vec::new();
        for shorter in orders(n - 1) {
            for at in 0..=shorter.len() {
                let mut order = shorter.clone();
                order.insert(at, n - 1);
                all.push(order);
            }
        }
        all
    }

    /// `value`'s members written in every order.
    fn texts_in_every_order(value: &Value) -> Vec<String> {
        let members: Vec<(String, String)> = value
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (json!(k).to_string(), v.to_string()))
            .collect();
        orders(members.len())
            .into_iter()
            .map(|order| {
                let inner: Vec<String> =
                    order.iter().map(|&i| format!("{}:{}", members[i].0, members[i].1)).collect();
                format!("{{{}}}", inner.join(","))
            })
            .collect()
    }

    #[test]
    fn a_block_reads_the_same_whatever_the_order_of_its_members() {
        let mut meta = Meta::new();
        meta.insert("k", json!({"type": "image"}));
        let annotations = Annotations { audience: None, priority: Some(0.5), last_modified: None };
        let blocks: Vec<ContentBlock> = vec![
            TextContent::new("hi").with_annotations(annotations.clone()).with_meta(meta).into(),
            ImageContent::new("AA==", "image/png").with_annotations(annotations).into(),
            ResourceLink::new("file:///a", "a").with_mime_type("text/plain").into(),
            EmbeddedResource::new(crate::types::TextResourceContents::new("file:///b", "b")).into(),
        ];
        for block in blocks {
            let value = serde_json::to_value(&block).unwrap();
            for text in texts_in_every_order(&value) {
                // The tag first (read as it comes) or not (read whole): the same block.
                let read: ContentBlock = serde_json::from_str(&text).unwrap();
                assert_eq!(read, block, "{text}");
                if let ContentBlock::Text(inner) = &block {
                    let alone: TextContent = serde_json::from_str(&text).unwrap();
                    assert_eq!(&alone, inner, "{text}");
                }
            }
            assert_eq!(serde_json::from_value::<ContentBlock>(value).unwrap(), block);
        }
    }

    #[test]
    fn a_bad_tag_is_refused_wherever_it_is() {
        for (text, says) in [
            (r#"{"type":1,"text":"x"}"#, "missing field `type`"),
            (r#"{"text":"x","type":[1,{"a":2}]}"#, "missing field `type`"),
            (r#"{"type":"nope","text":"x"}"#, "unknown type `nope`"),
            (r#"{"text":"x","type":"nope"}"#, "unknown type `nope`"),
            (r#"{"text":"x"}"#, "missing field `type`"),
            (r#"{}"#, "missing field `type`"),
            (r#"{"type":"text"}"#, "missing field `text`"),
            (r#"{"type":"text","text":1}"#, "invalid type"),
            (r#"[1]"#, "expected a map"),
            (r#"{"type":"text","text":"a","text":"b"}"#, "duplicate field `text`"),
            (r#"{"text":"a","text":"b","type":"text"}"#, "duplicate field `text`"),
            (r#"{"text":"a","type":"text","type":"text"}"#, "duplicate field `type`"),
            (r#"{"type":"text","text":"a","type":"text"}"#, "duplicate field `type`"),
            (r#"{"x":1,"type":"text","text":"a","x":2}"#, "duplicate field `x`"),
        ] {
            let error = serde_json::from_str::<ContentBlock>(text).unwrap_err().to_string();
            assert!(error.contains(says), "{text}: {error}");
        }
        // A tag nested past the decoder's depth limit, first or not: refused, the stack intact.
        let deep = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
        for text in [format!(r#"{{"type":{deep}}}"#), format!(r#"{{"text":"x","type":{deep}}}"#)] {
            let error = serde_json::from_str::<ContentBlock>(&text).unwrap_err().to_string();
            assert!(error.contains("recursion limit exceeded"), "{error}");
        }
        for text in [r#"{"type":"image","text":"x"}"#, r#"{"text":"x","type":"image"}"#] {
            let error = serde_json::from_str::<TextContent>(text).unwrap_err().to_string();
            assert!(error.contains("expected type `text` for TextContent"), "{text}: {error}");
        }
    }

    #[test]
    fn content_block_dispatches_on_type() {
        let v = json!({"type": "image", "data": "AA==", "mimeType": "image/png",
            "annotations": {"priority": 1, "audience": ["user"]}});
        let block: ContentBlock = serde_json::from_value(v.clone()).unwrap();
        assert!(matches!(block, ContentBlock::Image(_)));
        assert_eq!(serde_json::to_value(&block).unwrap(), v);
        assert!(serde_json::from_value::<ContentBlock>(json!({"type": "video"})).is_err());
        assert!(serde_json::from_value::<ContentBlock>(json!({"text": "x"})).is_err());
    }

    /// A union checks the tag and hands the map to the variant's decoder, which does not check
    /// it again: each union's tag values must be its variants' own. A block written by a
    /// variant (with that variant's tag) decodes through the union as that variant.
    #[test]
    fn every_union_variant_carries_its_own_tag() {
        let resource = json!({"uri": "file:///a", "text": "x"});
        let blocks = [
            json!({"type": "text", "text": "x"}),
            json!({"type": "image", "data": "AA==", "mimeType": "image/png"}),
            json!({"type": "audio", "data": "AA==", "mimeType": "audio/wav"}),
            json!({"type": "resource_link", "uri": "file:///a", "name": "a"}),
            json!({"type": "resource", "resource": resource}),
        ];
        for block in blocks {
            let decoded: ContentBlock = serde_json::from_value(block.clone()).unwrap();
            assert_eq!(serde_json::to_value(&decoded).unwrap(), block);
        }
        let sampling = [
            json!({"type": "text", "text": "x"}),
            json!({"type": "image", "data": "AA==", "mimeType": "image/png"}),
            json!({"type": "audio", "data": "AA==", "mimeType": "audio/wav"}),
            json!({"type": "tool_use", "id": "1", "name": "t", "input": {}}),
            json!({"type": "tool_result", "toolUseId": "1", "content": []}),
        ];
        for block in sampling {
            let decoded: SamplingMessageContentBlock =
                serde_json::from_value(block.clone()).unwrap();
            assert_eq!(serde_json::to_value(&decoded).unwrap(), block);
        }
        // Each variant's own tag check still holds on its own.
        let image = json!({"type": "text", "data": "AA==", "mimeType": "image/png"});
        assert!(serde_json::from_value::<ImageContent>(image).is_err());
    }

    #[test]
    fn standalone_structs_check_their_tag() {
        assert!(
            serde_json::from_value::<TextContent>(json!({"type": "text", "text": "x"})).is_ok()
        );
        assert!(serde_json::from_value::<TextContent>(json!({"text": "x"})).is_err());
        assert!(
            serde_json::from_value::<TextContent>(json!({"type": "image", "text": "x"})).is_err()
        );
        let t = TextContent::new("x");
        assert_eq!(serde_json::to_value(&t).unwrap(), json!({"type": "text", "text": "x"}));
    }
}
