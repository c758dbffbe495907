//! [`MemoryStore`]: the default in-memory [`CacheStore`], on [`quick_cache`].
//!
//! `quick_cache` (CLOCK-Pro, one shard) holds the entries; this module only maps the two bounds
//! onto its single weight: an entry weighs the larger of its bytes and `max_bytes / max_entries`
//! (rounded up), and the capacity is `max_bytes`, so the weights fitting means both the byte
//! bound and the entry bound hold. One shard keeps the bounds exact (a sharded cache bounds
//! each shard by its share).

use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use mcpl_core::Result;
use quick_cache::sync::Cache;
use quick_cache::{OptionsBuilder, Weighter};

use super::store::{CacheEntry, CacheKey, CacheStore, Invalidation};

/// The default number of entries a [`MemoryStore`] holds.
///
/// # Examples
///
/// ```
/// use mcpl_client::cache::{DEFAULT_MAX_ENTRIES, MemoryStore};
///
/// assert_eq!(DEFAULT_MAX_ENTRIES, 1024);
/// // A process with many users: room for more entries.
/// let store = MemoryStore::new().max_entries(16 * DEFAULT_MAX_ENTRIES);
/// # drop(store);
/// ```
pub const DEFAULT_MAX_ENTRIES: usize = 1024;
/// The default number of bytes (of JSON text) a [`MemoryStore`] holds: 16 MiB.
///
/// # Examples
///
/// ```
/// use mcpl_client::cache::{DEFAULT_MAX_BYTES, MemoryStore};
///
/// assert_eq!(DEFAULT_MAX_BYTES, 16 * 1024 * 1024);
/// // A small device: a quarter of the default.
/// let store = MemoryStore::new().max_bytes(DEFAULT_MAX_BYTES / 4);
/// # drop(store);
/// ```
pub const DEFAULT_MAX_BYTES: usize = 16 * 1024 * 1024;

/// An in-memory [`CacheStore`] bounded by entries and by bytes (of the entries' JSON text).
///
/// Once a bound is reached, a new entry makes room by evicting entries not read since they
/// were stored, oldest first, before those read again (CLOCK-Pro, as `quick_cache` does it):
/// a burst of one-off results does not push out the results that are reused. An entry larger
/// than the byte bound is not stored.
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
    entries: Cache<CacheKey, CacheEntry, Weight>,
}

/// An entry's weight: its bytes, and at least `floor`, the share of the byte bound one entry
/// takes when the store is full of entries (`max_bytes / max_entries`, rounded up).
#[derive(Debug, Clone, Copy)]
struct Weight {
    floor: u64,
}

impl Weighter<CacheKey, CacheEntry> for Weight {
    fn weight(&self, _key: &CacheKey, entry: &CacheEntry) -> u64 {
        u64::try_from(entry.bytes).unwrap_or(u64::MAX).max(self.floor)
    }
}

/// A cache within both bounds: `max_bytes` of weight, where no entry weighs less than
/// `max_bytes / max_entries`, so at most `max_entries` fit.
fn bounded(max_entries: usize, max_bytes: usize) -> Cache<CacheKey, CacheEntry, Weight> {
    let capacity = u64::try_from(max_bytes).unwrap_or(u64::MAX);
    let entries = u64::try_from(max_entries).unwrap_or(u64::MAX);
    // No entries: no capacity (every entry is then too heavy, so none is stored).
    let (capacity, floor) = match capacity.checked_div(entries) {
        Some(share) => (capacity, share + u64::from(capacity % entries != 0)),
        None => (0, 1),
    };
    let weight = Weight { floor: floor.max(1) };
    let estimated = max_entries.min(max_bytes).clamp(1, DEFAULT_MAX_ENTRIES * 64);
    // All of the capacity is for entries read again ("hot"): an entry is refused only if it is
    // heavier than the whole capacity, and a full store evicts as CLOCK-Pro does.
    let options = OptionsBuilder::new()
        .shards(1)
        .hot_allocation(1.0)
        .estimated_items_capacity(estimated)
        .weight_capacity(capacity)
        .build();
    match options {
        Ok(options) => Cache::with_options(options, weight, Default::default(), Default::default()),
        // Unreachable (both required options are set); a sharded cache still keeps the bounds
        // per shard.
        Err(_) => Cache::with_weighter(estimated, capacity, weight),
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl MemoryStore {
    /// A store bounded by [`DEFAULT_MAX_ENTRIES`] and [`DEFAULT_MAX_BYTES`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcpl_client::cache::{MemoryStore, ResponseCache};
    ///
    /// let store = Arc::new(MemoryStore::new());
    /// assert!(store.is_empty());
    /// let cache = ResponseCache::new(store).principal("alice");
    /// # drop(cache);
    /// ```
    pub fn new() -> MemoryStore {
        MemoryStore {
            max_entries: DEFAULT_MAX_ENTRIES,
            max_bytes: DEFAULT_MAX_BYTES,
            entries: bounded(DEFAULT_MAX_ENTRIES, DEFAULT_MAX_BYTES),
        }
    }

    /// The most entries held (entries already stored are kept within the new bound).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::cache::{MemoryStore, ResponseCache};
    /// use mcpl_client::transport::HttpTransport;
    /// # use mcpl_test_kit::http::serve_cached;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, server) = serve_cached().await?;
    /// let store = Arc::new(MemoryStore::new().max_entries(2));
    /// let client = Client::builder("my-app", "1.0.0")
    ///     .with_cache(ResponseCache::new(store.clone()).principal("alice"))
    ///     .build();
    /// client.connect(HttpTransport::new(url)).await?;
    /// for id in 1..=3 {
    ///     client.read_resource(&format!("notes://{id}")).await?;
    /// }
    /// // The least recently used entry (notes://1) made room for notes://3.
    /// assert_eq!(store.len(), 2);
    /// client.read_resource("notes://3").await?;
    /// assert_eq!(server.count("resources/read"), 3);
    /// client.read_resource("notes://1").await?;
    /// assert_eq!(server.count("resources/read"), 4);
    /// # Ok(()) }
    /// ```
    pub fn max_entries(self, entries: usize) -> MemoryStore {
        let bytes = self.max_bytes;
        self.rebound(entries, bytes)
    }

    /// The most bytes (of the entries' JSON text) held (entries already stored are kept within
    /// the new bound).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::cache::{MemoryStore, ResponseCache};
    /// use mcpl_client::transport::HttpTransport;
    /// # use mcpl_test_kit::http::serve_cached;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, _server) = serve_cached().await?;
    /// // Too small for any result: an entry larger than the bound is not stored.
    /// let store = Arc::new(MemoryStore::new().max_bytes(16));
    /// let client = Client::builder("my-app", "1.0.0")
    ///     .with_cache(ResponseCache::new(store.clone()).principal("alice"))
    ///     .build();
    /// client.connect(HttpTransport::new(url)).await?;
    /// client.read_resource("notes://1").await?;
    /// assert!(store.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn max_bytes(self, bytes: usize) -> MemoryStore {
        let entries = self.max_entries;
        self.rebound(entries, bytes)
    }

    /// How many entries the store holds.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::cache::{MemoryStore, ResponseCache};
    /// use mcpl_client::transport::HttpTransport;
    /// # use mcpl_test_kit::http::serve_cached;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, _server) = serve_cached().await?;
    /// let store = Arc::new(MemoryStore::new());
    /// let client = Client::builder("my-app", "1.0.0")
    ///     .with_cache(ResponseCache::new(store.clone()).principal("alice"))
    ///     .build();
    /// client.connect(HttpTransport::new(url)).await?;
    /// client.list_tools().await?;
    /// client.read_resource("notes://1").await?;
    /// assert_eq!(store.len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the store holds no entry.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::cache::{CacheEntry, CacheKey, CacheStore, Invalidation, MemoryStore};
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// let store = MemoryStore::new();
    /// assert!(store.is_empty());
    /// let key: CacheKey = serde_json::from_value(json!({
    ///     "server": "http://127.0.0.1:3000/mcp", "audience": "public",
    ///     "method": "tools/list", "params": "{}", "uri": null,
    /// })).expect("a key");
    /// store.put(key, CacheEntry::new(json!({"tools": []}), std::time::Duration::from_secs(60))).await?;
    /// assert!(!store.is_empty());
    /// store.invalidate(&Invalidation::method("http://127.0.0.1:3000/mcp", "tools/list")).await?;
    /// assert!(store.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The same entries (as many as fit) in a store with new bounds.
    fn rebound(self, max_entries: usize, max_bytes: usize) -> MemoryStore {
        let entries = bounded(max_entries, max_bytes);
        for (key, entry) in self.entries.drain() {
            entries.insert(key, entry);
        }
        MemoryStore { max_entries, max_bytes, entries }
    }

    fn get_now(&self, key: &CacheKey) -> Option<CacheEntry> {
        self.entries.get(key)
    }

    fn put_now(&self, key: CacheKey, entry: CacheEntry) {
        // A new value is a new entry: replacing in place could evict the value just stored to
        // make room for its own growth. An entry heavier than the capacity is not stored.
        self.entries.remove(&key);
        self.entries.insert(key, entry);
    }

    fn invalidate_now(&self, what: &Invalidation) -> usize {
        let removed = AtomicUsize::new(0);
        self.entries.retain(|key, _| {
            let doomed = what.matches(key);
            if doomed {
                removed.fetch_add(1, Ordering::Relaxed);
            }
            !doomed
        });
        removed.into_inner()
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

    use proptest::prelude::*;
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

    fn bytes(store: &MemoryStore) -> usize {
        store.entries.iter().map(|(_, e)| e.bytes).sum()
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
        assert_eq!(bytes(&store), one * 2);
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

    #[test]
    fn an_oversized_entry_removes_the_one_it_would_replace() {
        let one = entry("x").bytes;
        let store = MemoryStore::new().max_bytes(one * 2);
        store.put_now(key("a", 1), entry("x"));
        store.put_now(key("a", 1), entry(&"w".repeat(one * 2)));
        assert!(store.get_now(&key("a", 1)).is_none());
        assert!(MemoryStore::new().max_entries(0).max_bytes(0).is_empty());
        let none = MemoryStore::new().max_entries(0);
        none.put_now(key("a", 1), entry("x"));
        assert!(none.is_empty());
    }

    #[test]
    fn new_bounds_keep_what_fits() {
        let store = MemoryStore::new();
        for n in 0..10 {
            store.put_now(key("a", n), entry("x"));
        }
        let store = store.max_entries(4);
        assert_eq!(store.len(), 4);
        assert_eq!(store.max_bytes(entry("x").bytes).len(), 1);
    }

    proptest! {
        /// Whatever is stored, in any sizes and order, both bounds hold after every put, and
        /// an entry that fits the byte bound is there right after it is put.
        #[test]
        fn both_bounds_always_hold(
            max_entries in 0usize..12,
            max_bytes in 0usize..400,
            puts in prop::collection::vec((0u32..20, 0usize..120, any::<bool>()), 0..80),
        ) {
            let store = MemoryStore::new().max_entries(max_entries).max_bytes(max_bytes);
            for (n, size, read) in puts {
                let e = entry(&"x".repeat(size));
                let fits = e.bytes <= max_bytes && max_entries > 0;
                store.put_now(key("a", n), e);
                prop_assert!(store.len() <= max_entries, "{} entries", store.len());
                prop_assert!(bytes(&store) <= max_bytes, "{} bytes", bytes(&store));
                prop_assert_eq!(store.get_now(&key("a", n)).is_some(), fits);
                if read {
                    let _ = store.get_now(&key("a", n.wrapping_sub(1)));
                }
            }
        }
    }
}
