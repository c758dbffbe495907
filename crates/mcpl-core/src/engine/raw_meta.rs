//! A request's `_meta` kept as its JSON text and parsed only when a handler reads it.

use std::sync::{Arc, OnceLock};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The `_meta` object of a request as its JSON text, parsed into a map the first time a handler
/// reads it ([`RequestContext::meta`](super::RequestContext::meta)).
///
/// For transports that read what they need of `_meta` themselves (the stateless HTTP era reads
/// the protocol version and client capabilities from the text) and hand the request to
/// [`Engine::serve_request_with`](super::Engine::serve_request_with): a handler that never
/// reads `_meta` costs no map. Clones share the text and the parsed map.
///
/// # Examples
///
/// ```
/// use mcpl_core::engine::RawMeta;
/// use serde_json::value::RawValue;
///
/// let text = RawValue::from_string(r#"{"progressToken": 7}"#.to_owned())?;
/// let meta = RawMeta::new(&text).expect("an object");
/// assert_eq!(meta.json(), r#"{"progressToken": 7}"#);
/// assert_eq!(meta.map().and_then(|m| m.get("progressToken")), Some(&serde_json::json!(7)));
/// // Only an object is a `_meta`.
/// assert!(RawMeta::new(&RawValue::from_string("[1]".to_owned())?).is_none());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct RawMeta(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    text: Box<RawValue>,
    map: OnceLock<Option<Map<String, Value>>>,
}

impl RawMeta {
    /// The `_meta` object whose JSON text is `json`; `None` unless `json` is an object.
    pub fn new(json: &RawValue) -> Option<RawMeta> {
        json.get()
            .trim_start()
            .starts_with('{')
            .then(|| RawMeta(Arc::new(Inner { text: json.to_owned(), map: OnceLock::new() })))
    }

    /// The JSON text.
    pub fn json(&self) -> &str {
        self.0.text.get()
    }

    /// The object, parsed on first use. `None` only if the text is nested deeper than the JSON
    /// parser allows.
    pub fn map(&self) -> Option<&Map<String, Value>> {
        self.0.map.get_or_init(|| serde_json::from_str(self.0.text.get()).ok()).as_ref()
    }
}

/// Where a request context's `_meta` comes from.
#[derive(Debug, Clone, Default)]
pub(crate) enum MetaSlot {
    /// The request had no `_meta` object.
    #[default]
    Absent,
    /// Parsed with the request.
    Tree(Arc<Map<String, Value>>),
    /// Kept as text by the transport.
    Raw(RawMeta),
}

impl MetaSlot {
    pub(crate) fn get(&self) -> Option<&Map<String, Value>> {
        match self {
            MetaSlot::Absent => None,
            MetaSlot::Tree(map) => Some(map),
            MetaSlot::Raw(raw) => raw.map(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_map_is_parsed_once_and_shared_by_clones() {
        let text = RawValue::from_string(r#" {"a": {"b": [1, 2]}}"#.to_owned()).unwrap();
        let meta = RawMeta::new(&text).unwrap();
        let clone = meta.clone();
        let first = meta.map().unwrap() as *const Map<String, Value>;
        assert_eq!(clone.map().unwrap() as *const Map<String, Value>, first);
        assert_eq!(MetaSlot::Raw(clone).get().unwrap()["a"]["b"], serde_json::json!([1, 2]));
    }

    #[test]
    fn only_an_object_is_a_meta() {
        for text in ["null", "1", "\"x\"", "[]"] {
            assert!(RawMeta::new(&RawValue::from_string(text.to_owned()).unwrap()).is_none());
        }
        assert!(MetaSlot::Absent.get().is_none());
    }
}
