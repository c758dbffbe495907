//! A request's `_meta` read only when a handler asks for it.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde_json::{Map, Value};

/// The `_meta` object of a request, read the first time a handler asks for it
/// ([`RequestContext::meta`](super::RequestContext::meta)).
///
/// For transports that read what they need of `_meta` themselves (the stateless HTTP era reads
/// the protocol version and client capabilities while it decodes the request) and hand the
/// request to [`embed::serve_request_with`](super::embed::serve_request_with): a handler
/// that never reads `_meta` costs no map. Clones share the map, which is read at most once.
///
/// # Examples
///
/// ```
/// use mcpl_core::engine::embed::LazyMeta;
/// use serde_json::json;
///
/// let body = br#"{"progressToken": 7}"#.to_vec();
/// let meta = LazyMeta::new(move || serde_json::from_slice(&body).ok());
/// assert_eq!(meta.map().and_then(|m| m.get("progressToken")), Some(&json!(7)));
/// ```
#[derive(Clone)]
pub struct LazyMeta(Arc<dyn Source>);

/// The read and its result, in one allocation with the closure (no box of its own).
struct Inner<F> {
    read: Mutex<Option<F>>,
    map: OnceLock<Option<Map<String, Value>>>,
}

/// An [`Inner`] of any closure.
trait Source: Send + Sync {
    /// The object, read on first use.
    fn map(&self) -> Option<&Map<String, Value>>;
    /// The object if it was read (`None` before).
    fn read_already(&self) -> Option<&Option<Map<String, Value>>>;
}

impl<F> Source for Inner<F>
where
    F: FnOnce() -> Option<Map<String, Value>> + Send,
{
    fn map(&self) -> Option<&Map<String, Value>> {
        self.map
            .get_or_init(|| {
                let read = self.read.lock().unwrap_or_else(PoisonError::into_inner).take();
                read.and_then(|read| read())
            })
            .as_ref()
    }

    fn read_already(&self) -> Option<&Option<Map<String, Value>>> {
        self.map.get()
    }
}

impl std::fmt::Debug for LazyMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("LazyMeta").field(&self.0.read_already()).finish()
    }
}

impl LazyMeta {
    /// The `_meta` object that `read` returns (`None`: the request had none), called at most
    /// once, when the object is first asked for.
    pub fn new(read: impl FnOnce() -> Option<Map<String, Value>> + Send + 'static) -> LazyMeta {
        LazyMeta(Arc::new(Inner { read: Mutex::new(Some(read)), map: OnceLock::new() }))
    }

    /// The object, read on first use.
    pub fn map(&self) -> Option<&Map<String, Value>> {
        self.0.map()
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
    /// Read by the transport when first asked for.
    Lazy(LazyMeta),
}

impl MetaSlot {
    /// The `_meta` object of `params`, moved out of them (a `_meta` that is no object stays).
    pub(crate) fn take_from(params: &mut Option<Value>) -> MetaSlot {
        let Some(Value::Object(p)) = params else { return MetaSlot::Absent };
        match p.remove("_meta") {
            Some(Value::Object(meta)) => MetaSlot::Tree(Arc::new(meta)),
            Some(other) => {
                p.insert("_meta".to_owned(), other);
                MetaSlot::Absent
            }
            None => MetaSlot::Absent,
        }
    }

    pub(crate) fn get(&self) -> Option<&Map<String, Value>> {
        match self {
            MetaSlot::Absent => None,
            MetaSlot::Tree(map) => Some(map),
            MetaSlot::Lazy(meta) => meta.map(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn the_map_is_read_once_and_shared_by_clones() {
        let reads = Arc::new(AtomicUsize::new(0));
        let counted = reads.clone();
        let meta = LazyMeta::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            serde_json::from_str(r#"{"a": {"b": [1, 2]}}"#).ok()
        });
        let clone = meta.clone();
        assert_eq!(reads.load(Ordering::SeqCst), 0, "nothing is read before it is asked for");
        let first = meta.map().unwrap() as *const Map<String, Value>;
        assert_eq!(clone.map().unwrap() as *const Map<String, Value>, first);
        assert_eq!(MetaSlot::Lazy(clone).get().unwrap()["a"]["b"], serde_json::json!([1, 2]));
        assert_eq!(reads.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_read_that_finds_nothing_is_no_meta() {
        assert!(LazyMeta::new(|| None).map().is_none());
        assert!(MetaSlot::Absent.get().is_none());
    }
}
