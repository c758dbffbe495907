//! [`MemoryStore`]: the default in-memory LRU [`CacheStore`].

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use futures::future::BoxFuture;
use mcpl_core::Result;

use super::store::{CacheEntry, CacheKey, CacheStore, Invalidation};

/// The default number of entries a [`MemoryStore`] holds.
pub const DEFAULT_MAX_ENTRIES: usize = 1024;
/// The default number of bytes (of JSON text) a [`MemoryStore`] holds: 16 MiB.
pub const DEFAULT_MAX_BYTES: usize = 16 * 1024 * 1024;

/// An in-memory [`CacheStore`] that evicts the least recently used entries once it holds more
/// than its entry or byte bound. An entry larger than the byte bound is not stored.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use mcpl_client::cache::{MemoryStore, ResponseCache};
///
/// let store = Arc::new(MemoryStore::new().max_entries(500).max_bytes(4 << 20));
/// let cache = ResponseCache::new(store).principal("alice");
/// # drop(cache);
/// ```
#[derive(Debug)]
pub struct MemoryStore {
    max_entries: usize,
    max_bytes: usize,
    inner: Mutex<Lru>,
}

#[derive(Debug, Default)]
struct Lru {
    entries: HashMap<CacheKey, (CacheEntry, u64)>,
    /// Use ticks, oldest first.
    order: BTreeMap<u64, CacheKey>,
    tick: u64,
    bytes: usize,
}

impl Lru {
    fn touch(&mut self, key: &CacheKey) {
        self.tick += 1;
        let tick = self.tick;
        if let Some((_, used)) = self.entries.get_mut(key) {
            self.order.remove(used);
            *used = tick;
            self.order.insert(tick, key.clone());
        }
    }

    fn remove(&mut self, key: &CacheKey) {
        if let Some((entry, used)) = self.entries.remove(key) {
            self.order.remove(&used);
            self.bytes -= entry.bytes;
        }
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl MemoryStore {
    /// A store bounded by [`DEFAULT_MAX_ENTRIES`] and [`DEFAULT_MAX_BYTES`].
    pub fn new() -> MemoryStore {
        MemoryStore {
            max_entries: DEFAULT_MAX_ENTRIES,
            max_bytes: DEFAULT_MAX_BYTES,
            inner: Mutex::new(Lru::default()),
        }
    }

    /// The most entries held.
    pub fn max_entries(mut self, entries: usize) -> MemoryStore {
        self.max_entries = entries;
        self
    }

    /// The most bytes (of the entries' JSON text) held.
    pub fn max_bytes(mut self, bytes: usize) -> MemoryStore {
        self.max_bytes = bytes;
        self
    }

    /// How many entries the store holds.
    pub fn len(&self) -> usize {
        self.lru().entries.len()
    }

    /// Whether the store holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lru(&self) -> MutexGuard<'_, Lru> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get_now(&self, key: &CacheKey) -> Option<CacheEntry> {
        let mut lru = self.lru();
        let entry = lru.entries.get(key).map(|(e, _)| e.clone())?;
        lru.touch(key);
        Some(entry)
    }

    fn put_now(&self, key: CacheKey, entry: CacheEntry) {
        let mut lru = self.lru();
        lru.remove(&key);
        if entry.bytes > self.max_bytes || self.max_entries == 0 {
            return;
        }
        while lru.entries.len() >= self.max_entries || lru.bytes + entry.bytes > self.max_bytes {
            let Some((_, oldest)) = lru.order.pop_first() else { break };
            lru.remove(&oldest);
        }
        lru.tick += 1;
        let tick = lru.tick;
        lru.bytes += entry.bytes;
        lru.order.insert(tick, key.clone());
        lru.entries.insert(key, (entry, tick));
    }

    fn invalidate_now(&self, what: &Invalidation) -> usize {
        let mut lru = self.lru();
        let doomed: Vec<CacheKey> =
            lru.entries.keys().filter(|k| what.matches(k)).cloned().collect();
        for key in &doomed {
            lru.remove(key);
        }
        doomed.len()
    }
}

impl CacheStore for MemoryStore {
    fn get<'a>(&'a self, key: &'a CacheKey) -> BoxFuture<'a, Result<Option<CacheEntry>>> {
        let entry = self.get_now(key);
        Box::pin(async move { Ok(entry) })
    }

    fn put(&self, key: CacheKey, entry: CacheEntry) -> BoxFuture<'_, Result<()>> {
        self.put_now(key, entry);
        Box::pin(async { Ok(()) })
    }

    fn invalidate<'a>(&'a self, what: &'a Invalidation) -> BoxFuture<'a, Result<usize>> {
        let n = self.invalidate_now(what);
        Box::pin(async move { Ok(n) })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::cache::Audience;

    fn key(server: &str, n: u32) -> CacheKey {
        CacheKey {
            server: server.into(),
            audience: Audience::Public,
            method: "tools/list".into(),
            params: format!("{{\"cursor\":\"{n}\"}}"),
            uri: None,
        }
    }

    fn entry(text: &str) -> CacheEntry {
        CacheEntry::new(json!({ "t": text }), Duration::from_secs(60))
    }

    #[test]
    fn least_recently_used_goes_first_when_full() {
        let store = MemoryStore::new().max_entries(2);
        store.put_now(key("a", 1), entry("1"));
        store.put_now(key("a", 2), entry("2"));
        assert!(store.get_now(&key("a", 1)).is_some()); // 1 is now the most recent
        store.put_now(key("a", 3), entry("3"));
        assert_eq!(store.len(), 2);
        assert!(store.get_now(&key("a", 2)).is_none());
        assert!(store.get_now(&key("a", 1)).is_some());
        assert!(store.get_now(&key("a", 3)).is_some());
    }

    #[test]
    fn byte_bound_evicts_and_refuses_oversized_entries() {
        let one = entry("x").bytes;
        let store = MemoryStore::new().max_bytes(one * 2);
        store.put_now(key("a", 1), entry("x"));
        store.put_now(key("a", 2), entry("y"));
        store.put_now(key("a", 3), entry("z"));
        assert_eq!(store.len(), 2);
        assert!(store.get_now(&key("a", 1)).is_none());
        store.put_now(key("a", 4), entry(&"w".repeat(one * 2)));
        assert!(store.get_now(&key("a", 4)).is_none());
        assert_eq!(store.len(), 2);
        // Replacing an entry does not count it twice.
        store.put_now(key("a", 3), entry("q"));
        assert_eq!(store.len(), 2);
        assert_eq!(store.lru().bytes, one * 2);
    }

    #[test]
    fn invalidation_is_per_server_method_and_uri() {
        let store = MemoryStore::new();
        store.put_now(key("a", 1), entry("1"));
        store.put_now(key("b", 1), entry("1"));
        let read = |uri: &str| CacheKey {
            method: "resources/read".into(),
            uri: Some(uri.into()),
            params: uri.into(),
            ..key("a", 0)
        };
        store.put_now(read("file:///x"), entry("x"));
        store.put_now(read("file:///y"), entry("y"));
        assert_eq!(store.invalidate_now(&Invalidation::method("a", "tools/list")), 1);
        assert!(store.get_now(&key("b", 1)).is_some());
        let x = Invalidation::method("a", "resources/read").uri("file:///x");
        assert_eq!(store.invalidate_now(&x), 1);
        assert!(store.get_now(&read("file:///y")).is_some());
    }
}
