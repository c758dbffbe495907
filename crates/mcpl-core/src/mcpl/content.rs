//! MCPL content blocks (spec App. B.1). They are **not** MCP's: an MCPL
//! `{"type": "resource", "uri": ...}` is a reference, where MCP's embedded resource is
//! `{"type": "resource", "resource": {...}}`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One MCPL content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum McplContent {
    /// `{type: "text", text}`.
    Text {
        /// The text.
        text: String,
    },
    /// `{type: "image", data, mimeType}` or `{type: "image", uri}`.
    Image(Media),
    /// `{type: "audio", data, mimeType}` or `{type: "audio", uri}`.
    Audio(Media),
    /// `{type: "resource", uri}`: a reference to a resource.
    Resource {
        /// The resource URI.
        uri: String,
    },
}

impl McplContent {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        McplContent::Text { text: text.into() }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            McplContent::Text { text } => Some(text),
            _ => None,
        }
    }
}

/// The media of an image or audio block: exactly one of inline base64 data with its MIME type,
/// or a URI (the schema's `oneOf`: both, or `data` without `mimeType`, is invalid).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, try_from = "RawMedia")]
pub enum Media {
    /// Inline data.
    Inline {
        /// Base64-encoded bytes.
        data: String,
        /// The MIME type.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A reference.
    Uri {
        /// Where the media is.
        uri: String,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMedia {
    data: Option<String>,
    mime_type: Option<String>,
    uri: Option<String>,
    #[serde(flatten)]
    _rest: Map<String, Value>,
}

impl TryFrom<RawMedia> for Media {
    type Error = String;

    fn try_from(raw: RawMedia) -> Result<Self, String> {
        match (raw.data, raw.mime_type, raw.uri) {
            (Some(data), Some(mime_type), None) => Ok(Media::Inline { data, mime_type }),
            (None, None, Some(uri)) => Ok(Media::Uri { uri }),
            (Some(_), None, None) => Err("media `data` without `mimeType`".to_owned()),
            (None, None, None) => Err("media needs `data` + `mimeType` or `uri`".to_owned()),
            _ => Err("media must have exactly one of `data` + `mimeType` or `uri`".to_owned()),
        }
    }
}

/// Content that is either a string (one text block) or a list of blocks, as in injections and
/// inference messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TextOrBlocks {
    /// A string, equivalent to one text block.
    Text(String),
    /// Content blocks.
    Blocks(Vec<McplContent>),
}

impl TextOrBlocks {
    /// The content as blocks (a string becomes one text block).
    pub fn into_blocks(self) -> Vec<McplContent> {
        match self {
            TextOrBlocks::Text(text) => vec![McplContent::Text { text }],
            TextOrBlocks::Blocks(blocks) => blocks,
        }
    }
}

impl From<&str> for TextOrBlocks {
    fn from(s: &str) -> Self {
        TextOrBlocks::Text(s.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_round_trip() {
        for v in [
            json!({"type": "text", "text": "hi"}),
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
            json!({"type": "audio", "uri": "https://x/a.ogg"}),
            json!({"type": "resource", "uri": "file:///a"}),
        ] {
            let c: McplContent = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(serde_json::to_value(&c).unwrap(), v);
        }
    }

    #[test]
    fn media_is_one_of() {
        for bad in [
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png", "uri": "x"}),
            json!({"type": "image", "data": "AAAA"}),
            json!({"type": "image"}),
            json!({"type": "audio", "mimeType": "audio/ogg", "uri": "x"}),
            // MCP's embedded resource is not an MCPL resource block.
            json!({"type": "resource", "resource": {"uri": "x", "text": "t"}}),
            json!({"type": "video", "uri": "x"}),
        ] {
            assert!(serde_json::from_value::<McplContent>(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn text_or_blocks() {
        let t: TextOrBlocks = serde_json::from_value(json!("hello")).unwrap();
        assert_eq!(t.clone().into_blocks(), vec![McplContent::text("hello")]);
        let b: TextOrBlocks =
            serde_json::from_value(json!([{"type": "text", "text": "a"}])).unwrap();
        assert_eq!(serde_json::to_value(&b).unwrap(), json!([{"type": "text", "text": "a"}]));
        assert_eq!(serde_json::to_value(&t).unwrap(), json!("hello"));
    }
}
