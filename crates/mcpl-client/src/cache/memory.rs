//! [`MemoryStore`]: the default in-memory LRU [`CacheStore`].

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use futures::future::BoxFuture;
use mcpl_core::Result;

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
            inner: Mutex::new(Lru::default()),
        }
    }

    /// The most entries held.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::cache::{MemoryStore, ResponseCache};
    /// use mcpl_client::transport::HttpTransport;
    /// # #[derive(Clone, Default)]
    /// # struct Probe {
    /// #     methods: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// #     down: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// # }
    /// # impl Probe {
    /// #     /// How many requests of this 2026 method reached the server.
    /// #     fn count(&self, method: &str) -> usize {
    /// #         self.methods.lock().unwrap().iter().filter(|m| *m == method).count()
    /// #     }
    /// #     /// Makes the server answer every request with `503` (or serve again).
    /// #     fn fail(&self, down: bool) {
    /// #         self.down.store(down, std::sync::atomic::Ordering::SeqCst);
    /// #     }
    /// # }
    /// # /// A server over Streamable HTTP whose results may be reused for 10 minutes: `tools/list`
    /// # /// by anyone (public), resource reads by their reader only (private).
    /// # async fn serve_cached() -> std::io::Result<(String, Probe)> {
    /// #     use axum::response::IntoResponse;
    /// #     use mcpl_core::types::{ResourceTemplate, Tool, ToolSchema};
    /// #     use mcpl_server::cache::{CacheHint, CachedResult};
    /// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// #     use mcpl_server::resource::ResourceOutput;
    /// #     let ten_minutes = std::time::Duration::from_secs(600);
    /// #     let server = mcpl_server::Server::builder("notes", "1.0.0")
    /// #         .tool(Tool::new("search", ToolSchema::object()), |_ctx, _args| async move {
    /// #             Ok(mcpl_server::ToolOutput::text("found"))
    /// #         })
    /// #         .resource_template(ResourceTemplate::new("notes://{id}", "note"), |_ctx, req| async move {
    /// #             let id = req.var("id").unwrap_or_default().to_owned();
    /// #             Ok(vec![ResourceOutput::text(req.uri, format!("note {id}"))])
    /// #         })
    /// #         .cache_hint(CachedResult::ToolsList, CacheHint::public(ten_minutes))
    /// #         .build();
    /// #     let probe = Probe::default();
    /// #     let seen = probe.clone();
    /// #     let app = StreamableHttp::new(server, HttpConfig::new().cache_ttl(ten_minutes))
    /// #         .into_router("/mcp")
    /// #         .layer(axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
    /// #             let probe = seen.clone();
    /// #             async move {
    /// #                 if let Some(method) = request.headers().get("mcp-method").and_then(|v| v.to_str().ok()) {
    /// #                     probe.methods.lock().unwrap().push(method.to_owned());
    /// #                 }
    /// #                 if probe.down.load(std::sync::atomic::Ordering::SeqCst) {
    /// #                     return axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response();
    /// #                 }
    /// #                 next.run(request).await
    /// #             }
    /// #         }));
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let url = format!("http://{}/mcp", listener.local_addr()?);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((url, probe))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, server) = serve_cached().await?;
    /// let store = Arc::new(MemoryStore::new().max_entries(2));
    /// let client = Client::new("my-app", "1.0.0")
    ///     .with_cache(ResponseCache::new(store.clone()).principal("alice"));
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
    pub fn max_entries(mut self, entries: usize) -> MemoryStore {
        self.max_entries = entries;
        self
    }

    /// The most bytes (of the entries' JSON text) held.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::cache::{MemoryStore, ResponseCache};
    /// use mcpl_client::transport::HttpTransport;
    /// # #[derive(Clone, Default)]
    /// # struct Probe {
    /// #     methods: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// #     down: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// # }
    /// # impl Probe {
    /// #     /// How many requests of this 2026 method reached the server.
    /// #     fn count(&self, method: &str) -> usize {
    /// #         self.methods.lock().unwrap().iter().filter(|m| *m == method).count()
    /// #     }
    /// #     /// Makes the server answer every request with `503` (or serve again).
    /// #     fn fail(&self, down: bool) {
    /// #         self.down.store(down, std::sync::atomic::Ordering::SeqCst);
    /// #     }
    /// # }
    /// # /// A server over Streamable HTTP whose results may be reused for 10 minutes: `tools/list`
    /// # /// by anyone (public), resource reads by their reader only (private).
    /// # async fn serve_cached() -> std::io::Result<(String, Probe)> {
    /// #     use axum::response::IntoResponse;
    /// #     use mcpl_core::types::{ResourceTemplate, Tool, ToolSchema};
    /// #     use mcpl_server::cache::{CacheHint, CachedResult};
    /// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// #     use mcpl_server::resource::ResourceOutput;
    /// #     let ten_minutes = std::time::Duration::from_secs(600);
    /// #     let server = mcpl_server::Server::builder("notes", "1.0.0")
    /// #         .tool(Tool::new("search", ToolSchema::object()), |_ctx, _args| async move {
    /// #             Ok(mcpl_server::ToolOutput::text("found"))
    /// #         })
    /// #         .resource_template(ResourceTemplate::new("notes://{id}", "note"), |_ctx, req| async move {
    /// #             let id = req.var("id").unwrap_or_default().to_owned();
    /// #             Ok(vec![ResourceOutput::text(req.uri, format!("note {id}"))])
    /// #         })
    /// #         .cache_hint(CachedResult::ToolsList, CacheHint::public(ten_minutes))
    /// #         .build();
    /// #     let probe = Probe::default();
    /// #     let seen = probe.clone();
    /// #     let app = StreamableHttp::new(server, HttpConfig::new().cache_ttl(ten_minutes))
    /// #         .into_router("/mcp")
    /// #         .layer(axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
    /// #             let probe = seen.clone();
    /// #             async move {
    /// #                 if let Some(method) = request.headers().get("mcp-method").and_then(|v| v.to_str().ok()) {
    /// #                     probe.methods.lock().unwrap().push(method.to_owned());
    /// #                 }
    /// #                 if probe.down.load(std::sync::atomic::Ordering::SeqCst) {
    /// #                     return axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response();
    /// #                 }
    /// #                 next.run(request).await
    /// #             }
    /// #         }));
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let url = format!("http://{}/mcp", listener.local_addr()?);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((url, probe))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, _server) = serve_cached().await?;
    /// // Too small for any result: an entry larger than the bound is not stored.
    /// let store = Arc::new(MemoryStore::new().max_bytes(16));
    /// let client = Client::new("my-app", "1.0.0")
    ///     .with_cache(ResponseCache::new(store.clone()).principal("alice"));
    /// client.connect(HttpTransport::new(url)).await?;
    /// client.read_resource("notes://1").await?;
    /// assert!(store.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn max_bytes(mut self, bytes: usize) -> MemoryStore {
        self.max_bytes = bytes;
        self
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
    /// # #[derive(Clone, Default)]
    /// # struct Probe {
    /// #     methods: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// #     down: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// # }
    /// # impl Probe {
    /// #     /// How many requests of this 2026 method reached the server.
    /// #     fn count(&self, method: &str) -> usize {
    /// #         self.methods.lock().unwrap().iter().filter(|m| *m == method).count()
    /// #     }
    /// #     /// Makes the server answer every request with `503` (or serve again).
    /// #     fn fail(&self, down: bool) {
    /// #         self.down.store(down, std::sync::atomic::Ordering::SeqCst);
    /// #     }
    /// # }
    /// # /// A server over Streamable HTTP whose results may be reused for 10 minutes: `tools/list`
    /// # /// by anyone (public), resource reads by their reader only (private).
    /// # async fn serve_cached() -> std::io::Result<(String, Probe)> {
    /// #     use axum::response::IntoResponse;
    /// #     use mcpl_core::types::{ResourceTemplate, Tool, ToolSchema};
    /// #     use mcpl_server::cache::{CacheHint, CachedResult};
    /// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// #     use mcpl_server::resource::ResourceOutput;
    /// #     let ten_minutes = std::time::Duration::from_secs(600);
    /// #     let server = mcpl_server::Server::builder("notes", "1.0.0")
    /// #         .tool(Tool::new("search", ToolSchema::object()), |_ctx, _args| async move {
    /// #             Ok(mcpl_server::ToolOutput::text("found"))
    /// #         })
    /// #         .resource_template(ResourceTemplate::new("notes://{id}", "note"), |_ctx, req| async move {
    /// #             let id = req.var("id").unwrap_or_default().to_owned();
    /// #             Ok(vec![ResourceOutput::text(req.uri, format!("note {id}"))])
    /// #         })
    /// #         .cache_hint(CachedResult::ToolsList, CacheHint::public(ten_minutes))
    /// #         .build();
    /// #     let probe = Probe::default();
    /// #     let seen = probe.clone();
    /// #     let app = StreamableHttp::new(server, HttpConfig::new().cache_ttl(ten_minutes))
    /// #         .into_router("/mcp")
    /// #         .layer(axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
    /// #             let probe = seen.clone();
    /// #             async move {
    /// #                 if let Some(method) = request.headers().get("mcp-method").and_then(|v| v.to_str().ok()) {
    /// #                     probe.methods.lock().unwrap().push(method.to_owned());
    /// #                 }
    /// #                 if probe.down.load(std::sync::atomic::Ordering::SeqCst) {
    /// #                     return axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response();
    /// #                 }
    /// #                 next.run(request).await
    /// #             }
    /// #         }));
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let url = format!("http://{}/mcp", listener.local_addr()?);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok((url, probe))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, _server) = serve_cached().await?;
    /// let store = Arc::new(MemoryStore::new());
    /// let client = Client::new("my-app", "1.0.0")
    ///     .with_cache(ResponseCache::new(store.clone()).principal("alice"));
    /// client.connect(HttpTransport::new(url)).await?;
    /// client.list_tools().await?;
    /// client.read_resource("notes://1").await?;
    /// assert_eq!(store.len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn len(&self) -> usize {
        self.lru().entries.len()
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
