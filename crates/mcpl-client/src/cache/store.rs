//! The pluggable store behind a [`ResponseCache`](super::ResponseCache): keys, entries and the
//! [`CacheStore`] trait.

use std::fmt;
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use mcpl_core::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who may be served an entry.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
///
/// use mcpl_client::Client;
/// use mcpl_client::cache::{Audience, ResponseCache};
/// use mcpl_client::transport::HttpTransport;
/// # use mcpl_test_kit::http::serve_cached;
/// # /// A store that remembers the keys it was given.
/// # #[derive(Debug, Default)]
/// # struct Recording {
/// #     inner: mcpl_client::cache::MemoryStore,
/// #     keys: std::sync::Mutex<Vec<mcpl_client::cache::CacheKey>>,
/// # }
/// # impl mcpl_client::cache::CacheStore for Recording {
/// #     fn get<'a>(&'a self, key: &'a mcpl_client::cache::CacheKey) -> futures::future::BoxFuture<'a, mcpl_core::Result<Option<mcpl_client::cache::CacheEntry>>> {
/// #         self.inner.get(key)
/// #     }
/// #     fn put(&self, key: mcpl_client::cache::CacheKey, entry: mcpl_client::cache::CacheEntry) -> futures::future::BoxFuture<'_, mcpl_core::Result<()>> {
/// #         self.keys.lock().unwrap().push(key.clone());
/// #         self.inner.put(key, entry)
/// #     }
/// #     fn invalidate<'a>(&'a self, what: &'a mcpl_client::cache::Invalidation) -> futures::future::BoxFuture<'a, mcpl_core::Result<usize>> {
/// #         self.inner.invalidate(what)
/// #     }
/// # }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // This server marks its tool list public and its reads private.
/// let (url, _server) = serve_cached().await?;
/// let store = Arc::new(Recording::default()); // a store that keeps the keys it is given
/// let client = Client::builder("my-app", "1.0.0")
///     .with_cache(ResponseCache::new(store.clone()).principal("alice"))
///     .build();
/// client.connect(HttpTransport::new(url)).await?;
/// client.list_tools().await?;
/// client.read_resource("notes://1").await?;
///
/// let keys = store.keys.lock().unwrap();
/// assert_eq!(keys[0].audience, Audience::Public);
/// assert_eq!(keys[1].audience, Audience::Private("alice".into()));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Audience {
    /// Every principal of the server (`cacheScope: "public"`).
    Public,
    /// Only this principal (`cacheScope: "private"`, or no scope given).
    Private(String),
}

/// What an entry answers: one request to one server, for one audience.
///
/// The server is identified by the transport's [`endpoint`](mcpl_core::Transport::endpoint)
/// (the URL, the command line), never by what the server says about itself, so two servers can
/// never read or overwrite each other's entries.
///
/// # Examples
///
/// A store that writes through to another and logs what it stores:
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// use futures::future::BoxFuture;
/// use mcpl_client::Client;
/// use mcpl_client::cache::{CacheEntry, CacheKey, CacheStore, Invalidation, MemoryStore, ResponseCache};
/// use mcpl_client::transport::HttpTransport;
/// # use mcpl_test_kit::http::serve_cached;
///
/// #[derive(Debug, Default)]
/// struct Logged {
///     inner: MemoryStore,
///     log: Mutex<Vec<String>>,
/// }
///
/// impl CacheStore for Logged {
///     fn get<'a>(&'a self, key: &'a CacheKey) -> BoxFuture<'a, mcpl_core::Result<Option<CacheEntry>>> {
///         self.inner.get(key)
///     }
///     fn put(&self, key: CacheKey, entry: CacheEntry) -> BoxFuture<'_, mcpl_core::Result<()>> {
///         let line = format!("{} {} {}", key.method, key.uri.as_deref().unwrap_or("-"), key.params);
///         self.log.lock().unwrap().push(line);
///         self.inner.put(key, entry)
///     }
///     fn invalidate<'a>(&'a self, what: &'a Invalidation) -> BoxFuture<'a, mcpl_core::Result<usize>> {
///         self.inner.invalidate(what)
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (url, _server) = serve_cached().await?;
/// let store = Arc::new(Logged::default());
/// let client = Client::builder("my-app", "1.0.0")
///     .with_cache(ResponseCache::new(store.clone()).principal("alice"))
///     .build();
/// client.connect(HttpTransport::new(url)).await?;
/// client.read_resource("notes://7").await?;
///
/// // The key names the request without its `_meta`; `uri` is what invalidation matches on.
/// let log = store.log.lock().unwrap();
/// assert_eq!(log[0], r#"resources/read notes://7 {"uri":"notes://7"}"#);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CacheKey {
    /// The server's endpoint identity.
    pub server: String,
    /// Who may be served the entry.
    pub audience: Audience,
    /// The request's method (`tools/list`, `resources/read`...).
    pub method: String,
    /// The request's params as JSON, without `_meta`.
    pub params: String,
    /// The resource URI, for `resources/read` (what `notifications/resources/updated` names).
    pub uri: Option<String>,
}

/// A stored result with its freshness.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use mcpl_client::Client;
/// use mcpl_client::cache::{CacheStore, ResponseCache};
/// use mcpl_client::transport::HttpTransport;
/// # use mcpl_test_kit::http::serve_cached;
/// # /// A store that remembers the keys it was given.
/// # #[derive(Debug, Default)]
/// # struct Recording {
/// #     inner: mcpl_client::cache::MemoryStore,
/// #     keys: std::sync::Mutex<Vec<mcpl_client::cache::CacheKey>>,
/// # }
/// # impl mcpl_client::cache::CacheStore for Recording {
/// #     fn get<'a>(&'a self, key: &'a mcpl_client::cache::CacheKey) -> futures::future::BoxFuture<'a, mcpl_core::Result<Option<mcpl_client::cache::CacheEntry>>> {
/// #         self.inner.get(key)
/// #     }
/// #     fn put(&self, key: mcpl_client::cache::CacheKey, entry: mcpl_client::cache::CacheEntry) -> futures::future::BoxFuture<'_, mcpl_core::Result<()>> {
/// #         self.keys.lock().unwrap().push(key.clone());
/// #         self.inner.put(key, entry)
/// #     }
/// #     fn invalidate<'a>(&'a self, what: &'a mcpl_client::cache::Invalidation) -> futures::future::BoxFuture<'a, mcpl_core::Result<usize>> {
/// #         self.inner.invalidate(what)
/// #     }
/// # }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (url, _server) = serve_cached().await?; // results reusable for 10 minutes
/// let store = Arc::new(Recording::default());
/// let client = Client::builder("my-app", "1.0.0")
///     .with_cache(ResponseCache::new(store.clone()).principal("alice"))
///     .build();
/// client.connect(HttpTransport::new(url)).await?;
/// let read = client.read_resource("notes://1").await?;
///
/// let key = store.keys.lock().unwrap()[0].clone();
/// let entry = store.get(&key).await?.expect("stored");
/// assert_eq!(entry.ttl, Duration::from_secs(600));
/// assert!(entry.is_fresh());
/// assert_eq!(entry.value["contents"], serde_json::to_value(&read.contents)?);
/// assert_eq!(entry.bytes, entry.value.to_string().len());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CacheEntry {
    /// The result, as the server sent it.
    pub value: Value,
    /// When it was stored.
    pub stored_at: SystemTime,
    /// How long it stays fresh (the result's `ttlMs`).
    pub ttl: Duration,
    /// Its size in bytes (of its JSON text), for stores bounded by size.
    pub bytes: usize,
}

impl CacheEntry {
    /// An entry for `value`, fresh for `ttl` from now.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use mcpl_client::cache::CacheEntry;
    /// use serde_json::json;
    ///
    /// let entry = CacheEntry::new(json!({"tools": []}), Duration::from_secs(60));
    /// assert!(entry.is_fresh());
    /// assert_eq!(entry.bytes, r#"{"tools":[]}"#.len());
    /// ```
    pub fn new(value: Value, ttl: Duration) -> CacheEntry {
        let bytes = value.to_string().len();
        CacheEntry { value, stored_at: SystemTime::now(), ttl, bytes }
    }

    /// Whether the entry is still fresh: younger than its ttl. A clock that went backwards
    /// makes an entry stale.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    ///
    /// use mcpl_client::cache::CacheEntry;
    /// use serde_json::json;
    ///
    /// let mut entry = CacheEntry::new(json!({"tools": []}), Duration::from_secs(60));
    /// assert!(entry.is_fresh());
    /// // Stored two minutes ago: stale (still served with `serve_stale_on_error`).
    /// entry.stored_at = SystemTime::now() - Duration::from_secs(120);
    /// assert!(!entry.is_fresh());
    /// // A zero ttl is never fresh.
    /// assert!(!CacheEntry::new(json!({}), Duration::ZERO).is_fresh());
    /// ```
    pub fn is_fresh(&self) -> bool {
        SystemTime::now().duration_since(self.stored_at).is_ok_and(|age| age < self.ttl)
    }
}

/// Which entries to drop: every entry of one server's `method`, or with a `uri`, only those
/// for that resource.
///
/// # Examples
///
/// ```
/// use mcpl_client::cache::{CacheKey, Invalidation};
/// use serde_json::json;
///
/// let read = |uri: &str| -> CacheKey {
///     serde_json::from_value(json!({
///         "server": "http://127.0.0.1:3000/mcp", "audience": {"private": "alice"},
///         "method": "resources/read", "params": json!({"uri": uri}).to_string(), "uri": uri,
///     }))
///     .expect("a key")
/// };
/// let every_read = Invalidation::method("http://127.0.0.1:3000/mcp", "resources/read");
/// assert!(every_read.matches(&read("notes://1")) && every_read.matches(&read("notes://2")));
/// let one = every_read.clone().uri("notes://1");
/// assert!(one.matches(&read("notes://1")));
/// assert!(!one.matches(&read("notes://2")));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Invalidation {
    /// The server's endpoint identity.
    pub server: String,
    /// The method whose results are dropped.
    pub method: String,
    /// Only the entries for this resource URI, if set.
    pub uri: Option<String>,
}

impl Invalidation {
    /// Every entry of `server` for `method`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::cache::{CacheStore, Invalidation, MemoryStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// let store = MemoryStore::new();
    /// // What `notifications/tools/list_changed` from this server drops.
    /// let what = Invalidation::method("http://127.0.0.1:3000/mcp", "tools/list");
    /// assert_eq!(what.uri, None);
    /// assert_eq!(store.invalidate(&what).await?, 0);
    /// # Ok(()) }
    /// ```
    pub fn method(server: impl Into<String>, method: impl Into<String>) -> Invalidation {
        Invalidation { server: server.into(), method: method.into(), uri: None }
    }

    /// Narrows to the entries for the resource `uri`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::cache::Invalidation;
    ///
    /// // What `notifications/resources/updated` for one URI drops: the reads of that resource only.
    /// let what = Invalidation::method("stdio:[\"notes-server\"]", "resources/read").uri("notes://1");
    /// assert_eq!(what.uri.as_deref(), Some("notes://1"));
    /// ```
    pub fn uri(mut self, uri: impl Into<String>) -> Invalidation {
        self.uri = Some(uri.into());
        self
    }

    /// Whether `key` is one of the entries to drop (whatever its audience).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::cache::{CacheKey, Invalidation};
    /// use serde_json::json;
    ///
    /// let key: CacheKey = serde_json::from_value(json!({
    ///     "server": "http://a.example/mcp", "audience": "public",
    ///     "method": "tools/list", "params": "{}", "uri": null,
    /// }))
    /// .expect("a key");
    /// assert!(Invalidation::method("http://a.example/mcp", "tools/list").matches(&key));
    /// // Another server's entries, or another method's, are left alone.
    /// assert!(!Invalidation::method("http://b.example/mcp", "tools/list").matches(&key));
    /// assert!(!Invalidation::method("http://a.example/mcp", "prompts/list").matches(&key));
    /// ```
    pub fn matches(&self, key: &CacheKey) -> bool {
        key.server == self.server
            && key.method == self.method
            && self.uri.as_ref().is_none_or(|uri| key.uri.as_ref() == Some(uri))
    }
}

/// Where a [`ResponseCache`](super::ResponseCache) keeps its entries: in memory
/// ([`MemoryStore`](super::MemoryStore), the default), or anywhere else (a file, Redis...).
///
/// A store may be shared by many clients talking to many servers: keys carry the server and
/// the audience. A store may drop any entry at any time (it is a cache); the client treats a
/// store error as a miss.
///
/// # Examples
///
/// A store that keeps nothing:
///
/// ```
/// use futures::future::BoxFuture;
/// use mcpl_client::cache::{CacheEntry, CacheKey, CacheStore, Invalidation};
///
/// #[derive(Debug)]
/// struct Nothing;
///
/// impl CacheStore for Nothing {
///     fn get<'a>(&'a self, _key: &'a CacheKey) -> BoxFuture<'a, mcpl_core::Result<Option<CacheEntry>>> {
///         Box::pin(async { Ok(None) })
///     }
///     fn put(&self, _key: CacheKey, _entry: CacheEntry) -> BoxFuture<'_, mcpl_core::Result<()>> {
///         Box::pin(async { Ok(()) })
///     }
///     fn invalidate<'a>(&'a self, _what: &'a Invalidation) -> BoxFuture<'a, mcpl_core::Result<usize>> {
///         Box::pin(async { Ok(0) })
///     }
/// }
/// ```
pub trait CacheStore: Send + Sync + fmt::Debug + 'static {
    /// The entry for `key`, fresh or not.
    ///
    /// # Errors
    ///
    /// The store's failure (read as a miss).
    fn get<'a>(&'a self, key: &'a CacheKey) -> BoxFuture<'a, Result<Option<CacheEntry>>>;

    /// Stores `entry` under `key`, replacing any entry there.
    ///
    /// # Errors
    ///
    /// The store's failure (the result is simply not cached).
    fn put(&self, key: CacheKey, entry: CacheEntry) -> BoxFuture<'_, Result<()>>;

    /// Drops every entry `what` matches; returns how many.
    ///
    /// # Errors
    ///
    /// The store's failure.
    fn invalidate<'a>(&'a self, what: &'a Invalidation) -> BoxFuture<'a, Result<usize>>;
}
