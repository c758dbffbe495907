//! A JSON value kept as its encoded text, the form a response's result travels in.
//!
//! An answer is made once (serialized straight from its type) and read once (decoded straight
//! into its type): holding it as text between the two, instead of as a [`Value`] tree, saves
//! building, walking and dropping that tree on both ends.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON value kept as its encoded text: a response's [`result`](super::Response::result).
///
/// Made from a serializable value with [`RawJson::encode`] (or from a [`Value`] with `From`),
/// read with [`RawJson::decode`] into any type, or [`RawJson::to_value`]. Its text is always
/// one valid JSON value: it is written by `serde_json` or checked when read from a peer.
///
/// Like `serde_json`'s [`RawValue`] it is read from JSON text or a [`Value`], not from inside
/// what serde buffers first (a `#[serde(flatten)]` field, an internally tagged or untagged
/// enum): a message embedded in a type of one's own goes in a plain field.
///
/// Two `RawJson`s are equal when they hold the same JSON value (the same text, or texts that
/// decode to equal values: whitespace and key order aside); one also compares with a [`Value`].
///
/// # Examples
///
/// ```
/// use mcpl_core::jsonrpc::RawJson;
/// use serde_json::json;
///
/// let result = RawJson::encode(&json!({ "tools": [] })).unwrap();
/// assert_eq!(result.as_str(), r#"{"tools":[]}"#);
/// assert_eq!(result, json!({ "tools": [] }));
/// let back: serde_json::Map<String, serde_json::Value> = result.decode().unwrap();
/// assert!(back["tools"].is_array());
/// ```
#[derive(Clone)]
pub struct RawJson(Box<RawValue>);

impl RawJson {
    /// Encodes `value` as JSON text.
    ///
    /// # Errors
    ///
    /// `serde_json`'s error when `value`'s `Serialize` fails (a map with non-string keys, or
    /// a custom implementation that refuses).
    pub fn encode<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<RawJson> {
        serde_json::value::to_raw_value(value).map(RawJson)
    }

    /// Checks that `text` is one JSON value and keeps it as it is.
    ///
    /// # Errors
    ///
    /// `serde_json`'s error when `text` is not exactly one JSON value.
    pub fn from_text(text: impl Into<String>) -> serde_json::Result<RawJson> {
        RawValue::from_string(text.into()).map(RawJson)
    }

    /// Decodes the value into `T`.
    ///
    /// # Errors
    ///
    /// `serde_json`'s error when the value does not decode as `T`.
    pub fn decode<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_str(self.0.get())
    }

    /// The value as a [`Value`] tree; a text nested deeper than `serde_json`'s recursion limit
    /// (128) reads as `null`.
    pub fn to_value(&self) -> Value {
        self.decode().unwrap_or(Value::Null)
    }

    /// The encoded text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// The length of the encoded text in bytes.
    pub fn len(&self) -> usize {
        self.0.get().len()
    }

    /// Whether the encoded text is empty: never, as it is always one JSON value.
    pub fn is_empty(&self) -> bool {
        self.0.get().is_empty()
    }

    /// Whether the value is a JSON object.
    pub fn is_object(&self) -> bool {
        self.0.get().trim_start().starts_with('{')
    }
}

impl From<Value> for RawJson {
    fn from(value: Value) -> Self {
        RawJson::from(&value)
    }
}

impl From<&Value> for RawJson {
    fn from(value: &Value) -> Self {
        // A `Value` always serializes: its map keys are strings and its numbers finite.
        RawJson::encode(value).unwrap_or_else(|_| RawJson::null())
    }
}

impl RawJson {
    /// `null`.
    pub fn null() -> RawJson {
        RawJson(RawValue::NULL.to_owned())
    }
}

impl Default for RawJson {
    /// `null`.
    fn default() -> Self {
        RawJson::null()
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.get())
    }
}

impl fmt::Display for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.get())
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        // Texts that differ are compared as trees; one too deep to be a tree equals nothing
        // but its own text.
        self.as_str() == other.as_str()
            || matches!((self.decode::<Value>(), other.decode::<Value>()), (Ok(a), Ok(b)) if a == b)
    }
}

impl PartialEq<Value> for RawJson {
    fn eq(&self, other: &Value) -> bool {
        self.decode::<Value>().is_ok_and(|value| value == *other)
    }
}

impl PartialEq<RawJson> for Value {
    fn eq(&self, other: &RawJson) -> bool {
        *other == *self
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(RawJson)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn encodes_decodes_and_compares_by_value() {
        let a = RawJson::encode(&json!({"a": 1, "b": [true, null]})).unwrap();
        assert_eq!(a.as_str(), r#"{"a":1,"b":[true,null]}"#);
        assert!(a.is_object() && !a.is_empty());
        let b = RawJson::from_text(r#"{ "b": [true, null], "a": 1 }"#).unwrap();
        assert_eq!(a, b, "same value, other text");
        assert_ne!(a, RawJson::from(json!({"a": 2})));
        assert_eq!(a, json!({"a": 1, "b": [true, null]}));
        assert_eq!(a.to_value(), b.to_value());
        assert_eq!(RawJson::default(), Value::Null);
    }

    #[test]
    fn refuses_text_that_is_not_one_value() {
        for bad in ["", "{", "1 2", "{} trailing", "nul"] {
            assert!(RawJson::from_text(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn travels_verbatim_inside_a_message() {
        let raw = RawJson::from_text(r#"{"x":"\u00e9"}"#).unwrap();
        let wire = serde_json::to_string(&json!({"result": raw})).unwrap_or_default();
        // Inside `json!` it went through a `Value`; written directly it stays verbatim.
        assert_eq!(wire, r#"{"result":{"x":"é"}}"#);
        let direct = serde_json::to_string(&raw).unwrap();
        assert_eq!(direct, r#"{"x":"\u00e9"}"#);
        let back: RawJson = serde_json::from_str(r#" {"x": [1, 2]} "#).unwrap();
        assert_eq!(back.as_str(), r#"{"x": [1, 2]}"#);
    }

    #[test]
    fn a_hostile_deep_result_is_read_without_recursion_and_refused_when_decoded() {
        // 100,000 levels: read as text with an explicit stack (one byte per level, bounded by
        // the message size limit), never on the call stack.
        let depth = 100_000;
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{}{}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let message = crate::jsonrpc::Message::decode(text.as_bytes()).unwrap();
        let crate::jsonrpc::Message::Response(response) = message else { panic!("{message:?}") };
        assert_eq!(response.result.len(), 2 * depth);
        assert!(response.result.decode::<Vec<Value>>().is_err());
    }

    #[test]
    fn a_message_reads_from_a_value_tree_too() {
        let tree = json!({"jsonrpc": "2.0", "id": 1, "result": {"ok": true}});
        let message: crate::jsonrpc::Message = serde_json::from_value(tree).unwrap();
        let crate::jsonrpc::Message::Response(response) = message else { panic!("{message:?}") };
        assert_eq!(response.result.as_str(), r#"{"ok":true}"#);
    }

    #[test]
    fn deep_text_is_kept_but_never_becomes_a_deep_tree() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        // Read as text, nesting is walked without recursion (the message size bounds it) ...
        let raw: RawJson = serde_json::from_str(&deep).unwrap();
        assert_eq!(raw.len(), 400);
        // ... and decoding it meets serde_json's recursion limit, as a tree read would.
        assert!(raw.decode::<Value>().unwrap_err().to_string().contains("recursion limit"));
        assert_eq!(raw.to_value(), Value::Null);
        // Compared, it equals its own text only: not `null`, not another deep text.
        assert_ne!(raw, Value::Null);
        let other: RawJson = serde_json::from_str(&format!("[{deep}]")).unwrap();
        assert_ne!(raw, other);
        assert_eq!(raw, raw.clone());
    }
}
