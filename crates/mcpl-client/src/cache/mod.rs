//! The response cache: reuse cacheable results (`tools/list`, `resources/list`,
//! `resources/templates/list`, `resources/read`, `prompts/list`, `skills/list`, `skills/get`)
//! while they are fresh.
//!
//! - **Partitioned** by (server, principal). The server is the transport's
//!   [`endpoint`](mcpl_core::Transport::endpoint) (the URL, the command line), never what the
//!   server says about itself; a connection whose transport names no endpoint is not cached.
//!   Results marked `cacheScope: "public"` are shared by every principal of that server; private
//!   ones (or unmarked ones) are served only to the principal that fetched them, and only
//!   cached when the cache has a [principal](ResponseCache::principal).
//! - **Fresh** for the result's `ttlMs`; results without one (every result before the 2026
//!   era) are cached only with a [default ttl](ResponseCache::default_ttl), as private.
//! - **Never** stores an `input_required` result, nor the result of a request that carries
//!   `inputResponses` or `requestState` (a retried input-required request).
//! - **Invalidated** by `notifications/tools/list_changed`, `…/prompts/list_changed`,
//!   `…/resources/list_changed` (lists and templates, and skill entries: skill files are
//!   resources) and `notifications/resources/updated` (reads of that URI, and skill entries).
//! - **Per call**, [`CacheMode`] picks use, refresh or bypass (see
//!   [`Client::with_cache_mode`](crate::Client::with_cache_mode)).
//! - Optionally **serves a stale entry** when the server cannot be reached
//!   ([`ResponseCache::serve_stale_on_error`]).
//!
//! ```
//! use std::sync::Arc;
//! use mcpl_client::Client;
//! use mcpl_client::cache::{CacheMode, MemoryStore, ResponseCache};
//!
//! let store = Arc::new(MemoryStore::new());
//! let alice = Client::builder("app", "1")
//!     .with_cache(ResponseCache::new(store.clone()).principal("alice"))
//!     .build();
//! let bob = Client::builder("app", "1")
//!     .with_cache(ResponseCache::new(store).principal("bob").serve_stale_on_error(true))
//!     .build();
//! // One call that skips the cache:
//! let fresh = alice.with_cache_mode(CacheMode::Bypass);
//! # drop((bob, fresh));
//! ```

mod memory;
mod store;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcpl_core::jsonrpc::{ErrorCode, RawJson};
use mcpl_core::types::names;
use mcpl_core::{Error, ErrorKind, Result};
use serde_json::Value;

use crate::Client;

pub use self::memory::{DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES, MemoryStore};
pub use self::store::{Audience, CacheEntry, CacheKey, CacheStore, Invalidation};

/// How one call uses the response cache.
///
/// # Examples
///
/// ```
/// use mcpl_client::cache::{CacheMode, ResponseCache};
/// use mcpl_client::Client;
/// use mcpl_client::transport::HttpTransport;
/// # use mcpl_test_kit::http::serve_cached;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (url, server) = serve_cached().await?;
/// let client = Client::builder("my-app", "1.0.0").with_cache(ResponseCache::in_memory().principal("alice")).build();
/// client.connect(HttpTransport::new(url)).await?;
///
/// client.list_tools().await?; // CacheMode::Use: fetched and stored
/// client.list_tools().await?; // answered from the cache
/// assert_eq!(server.count("tools/list"), 1);
/// client.with_cache_mode(CacheMode::Refresh).list_tools().await?; // fetched, stored again
/// client.with_cache_mode(CacheMode::Bypass).list_tools().await?; // fetched, cache untouched
/// assert_eq!(server.count("tools/list"), 3);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CacheMode {
    /// Answer from a fresh entry if there is one; otherwise fetch and store.
    #[default]
    Use,
    /// Always fetch, and store the result.
    Refresh,
    /// Neither read nor write the cache.
    Bypass,
}

/// A response cache for a [`Client`]: a [`CacheStore`] plus who the client acts
/// for. Cheap to clone; clones share the store (give each clone its own principal).
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::cache::ResponseCache;
/// use mcpl_client::transport::HttpTransport;
/// # use mcpl_test_kit::http::serve_cached;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (url, server) = serve_cached().await?;
/// let cache = ResponseCache::in_memory().principal("alice");
/// let client = Client::builder("my-app", "1.0.0").with_cache(cache).build();
/// client.connect(HttpTransport::new(url)).await?;
///
/// // The server said its results may be reused: only the first read reaches it.
/// for _ in 0..3 {
///     client.read_resource("notes://1").await?;
/// }
/// assert_eq!(server.count("resources/read"), 1);
/// // Other resources are other entries.
/// client.read_resource("notes://2").await?;
/// assert_eq!(server.count("resources/read"), 2);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ResponseCache {
    store: Arc<dyn CacheStore>,
    principal: Option<String>,
    serve_stale_on_error: bool,
    default_ttl: Option<Duration>,
}

impl ResponseCache {
    /// A cache over `store`, without a principal (only public results are cached) and without
    /// serving stale entries.
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
    /// // One store shared by the clients of a process.
    /// let store = Arc::new(MemoryStore::new());
    /// let first = Client::builder("my-app", "1.0.0").with_cache(ResponseCache::new(store.clone())).build();
    /// let second = Client::builder("my-app", "1.0.0").with_cache(ResponseCache::new(store.clone())).build();
    /// first.connect(HttpTransport::new(url.clone())).await?;
    /// second.connect(HttpTransport::new(url)).await?;
    ///
    /// // This server marks its tool list public: fetched once, then shared.
    /// first.list_tools().await?;
    /// second.list_tools().await?;
    /// assert_eq!(server.count("tools/list"), 1);
    /// // Without a principal, private results (this server's reads) are not cached.
    /// first.read_resource("notes://1").await?;
    /// second.read_resource("notes://1").await?;
    /// assert_eq!(server.count("resources/read"), 2);
    /// assert_eq!(store.len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn new(store: Arc<dyn CacheStore>) -> ResponseCache {
        ResponseCache { store, principal: None, serve_stale_on_error: false, default_ttl: None }
    }

    /// A cache over a fresh [`MemoryStore`] with its default bounds.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::cache::ResponseCache;
    /// use mcpl_client::transport::HttpTransport;
    /// # use mcpl_test_kit::http::serve_cached;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, server) = serve_cached().await?;
    /// let client = Client::builder("my-app", "1.0.0").with_cache(ResponseCache::in_memory()).build();
    /// client.connect(HttpTransport::new(url)).await?;
    /// client.list_tools().await?;
    /// client.list_tools().await?;
    /// assert_eq!(server.count("tools/list"), 1);
    /// # Ok(()) }
    /// ```
    pub fn in_memory() -> ResponseCache {
        ResponseCache::new(Arc::new(MemoryStore::new()))
    }

    /// Who the client acts for (a user id, a token's subject). Private results are cached for,
    /// and served to, this principal only.
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
    /// let store = Arc::new(MemoryStore::new());
    /// let alice = Client::builder("my-app", "1.0.0")
    ///     .with_cache(ResponseCache::new(store.clone()).principal("alice"))
    ///     .build();
    /// let bob = Client::builder("my-app", "1.0.0").with_cache(ResponseCache::new(store).principal("bob")).build();
    /// alice.connect(HttpTransport::new(url.clone())).await?;
    /// bob.connect(HttpTransport::new(url)).await?;
    ///
    /// // Reads are private on this server: each principal has its own entries.
    /// alice.read_resource("notes://1").await?;
    /// alice.read_resource("notes://1").await?;
    /// assert_eq!(server.count("resources/read"), 1);
    /// bob.read_resource("notes://1").await?;
    /// assert_eq!(server.count("resources/read"), 2);
    /// # Ok(()) }
    /// ```
    pub fn principal(mut self, principal: impl Into<String>) -> ResponseCache {
        self.principal = Some(principal.into());
        self
    }

    /// When fetching fails because the server cannot be reached (a transport failure, a
    /// timeout, a closed connection, an internal error or an HTTP `5xx`), answer with the stored entry even if
    /// it is stale. Default: `false`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::cache::{CacheMode, ResponseCache};
    /// use mcpl_client::transport::HttpTransport;
    /// # use mcpl_test_kit::http::serve_cached;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, server) = serve_cached().await?;
    /// let cache = ResponseCache::in_memory().principal("alice").serve_stale_on_error(true);
    /// let client = Client::builder("my-app", "1.0.0").with_cache(cache).build();
    /// client.connect(HttpTransport::new(url)).await?;
    /// let before = client.read_resource("notes://1").await?;
    ///
    /// // The server goes down (every request answered 503); a refresh falls back to the entry.
    /// server.fail(true);
    /// let during = client.with_cache_mode(CacheMode::Refresh).read_resource("notes://1").await?;
    /// assert_eq!(during, before);
    /// // Nothing stored for this one: the error comes through.
    /// assert!(client.read_resource("notes://2").await.is_err());
    /// # Ok(()) }
    /// ```
    pub fn serve_stale_on_error(mut self, serve: bool) -> ResponseCache {
        self.serve_stale_on_error = serve;
        self
    }

    /// How long results that carry no `ttlMs` stay fresh (results of servers before the 2026
    /// era, which send no cache hints; the list-changed notifications still invalidate them).
    /// Such results are private (cached for the principal only). Default: none (not cached).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// use mcpl_client::cache::{MemoryStore, ResponseCache};
    /// use mcpl_client::transport::HttpTransport;
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_core::ProtocolVersion;
    /// # use mcpl_test_kit::http::serve_cached;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, _server) = serve_cached().await?;
    /// // 2025-era results carry no `ttlMs`: by default they are not cached...
    /// let store = Arc::new(MemoryStore::new());
    /// let client = Client::builder("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
    ///     .with_cache(ResponseCache::new(store.clone()).principal("alice"))
    ///     .build();
    /// client.connect(HttpTransport::new(url.clone())).await?;
    /// client.list_tools().await?;
    /// assert!(store.is_empty());
    ///
    /// // ...unless the cache gives them a lifetime.
    /// let store = Arc::new(MemoryStore::new());
    /// let cache = ResponseCache::new(store.clone()).principal("alice").default_ttl(Duration::from_secs(30));
    /// let client = Client::builder("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
    ///     .with_cache(cache)
    ///     .build();
    /// client.connect(HttpTransport::new(url)).await?;
    /// client.list_tools().await?;
    /// assert_eq!(store.len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn default_ttl(mut self, ttl: Duration) -> ResponseCache {
        self.default_ttl = Some(ttl);
        self
    }

    /// The store.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::cache::{Invalidation, ResponseCache};
    /// use mcpl_client::transport::HttpTransport;
    /// # use mcpl_test_kit::http::serve_cached;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, server) = serve_cached().await?;
    /// let cache = ResponseCache::in_memory().principal("alice");
    /// let client = Client::builder("my-app", "1.0.0").with_cache(cache.clone()).build();
    /// client.connect(HttpTransport::new(url.clone())).await?;
    /// client.read_resource("notes://1").await?;
    ///
    /// // Drop the entries of one resource by hand (the server is keyed by its URL).
    /// let dropped = cache.store().invalidate(&Invalidation::method(&url, "resources/read").uri("notes://1")).await?;
    /// assert_eq!(dropped, 1);
    /// client.read_resource("notes://1").await?;
    /// assert_eq!(server.count("resources/read"), 2);
    /// # Ok(()) }
    /// ```
    pub fn store(&self) -> &Arc<dyn CacheStore> {
        &self.store
    }

    /// The keys a request may be answered from, in lookup order: this principal's, then the
    /// public one.
    fn keys(&self, server: &str, method: &str, params: &Value) -> Vec<CacheKey> {
        let mut params = params.clone();
        if let Some(object) = params.as_object_mut() {
            object.remove("_meta");
        }
        let uri = (method == names::RESOURCES_READ)
            .then(|| params.get("uri").and_then(Value::as_str).map(str::to_owned))
            .flatten();
        let key = |audience| CacheKey {
            server: server.to_owned(),
            audience,
            method: method.to_owned(),
            params: params.to_string(),
            uri: uri.clone(),
        };
        let mut keys = Vec::with_capacity(2);
        if let Some(principal) = &self.principal {
            keys.push(key(Audience::Private(principal.clone())));
        }
        keys.push(key(Audience::Public));
        keys
    }

    /// Runs one request through the cache: `fetch` sends it.
    pub(crate) async fn exchange<F, Fut>(
        &self,
        server: Option<&str>,
        mode: CacheMode,
        method: &str,
        params: &Value,
        fetch: F,
    ) -> Result<RawJson>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<RawJson>>,
    {
        let server = server.filter(|_| mode != CacheMode::Bypass && cacheable(method, params));
        let Some(server) = server else { return fetch().await };
        let keys = self.keys(server, method, params);
        let mut stale = None;
        if mode == CacheMode::Use || self.serve_stale_on_error {
            for key in &keys {
                match self.store.get(key).await {
                    Ok(Some(entry)) if mode == CacheMode::Use && entry.is_fresh() => {
                        tracing::trace!(method, "answered from the response cache");
                        return Ok(RawJson::from(&entry.value));
                    }
                    Ok(Some(entry)) => {
                        stale.get_or_insert(entry);
                    }
                    Ok(None) => {}
                    Err(e) => tracing::debug!(error = %e, "response cache read failed"),
                }
            }
        }
        match fetch().await {
            Ok(result) => {
                // Kept as a tree (what the stores hold); a result that does not read as one
                // is not kept.
                if let Ok(value) = result.decode::<Value>() {
                    self.keep(keys, value).await;
                }
                Ok(result)
            }
            Err(e) if self.serve_stale_on_error && unreachable(&e) => match stale {
                Some(entry) => {
                    tracing::debug!(method, error = %e, "serving a stale cached result");
                    Ok(RawJson::from(&entry.value))
                }
                None => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    /// Stores a fetched result under the key its `cacheScope` picks, if it may be cached.
    async fn keep(&self, keys: Vec<CacheKey>, value: Value) {
        let complete = value.get("resultType").is_none_or(|t| t == "complete");
        let ttl = match value.get("ttlMs").and_then(Value::as_u64) {
            Some(ms) => Duration::from_millis(ms),
            None => match self.default_ttl {
                Some(ttl) => ttl,
                None => return,
            },
        };
        if !complete {
            return;
        }
        let public = value.get("cacheScope").and_then(Value::as_str) == Some("public");
        let key = keys.into_iter().find(|k| (k.audience == Audience::Public) == public);
        if let Some(key) = key {
            let entry = CacheEntry::new(value, ttl);
            if let Err(e) = self.store.put(key, entry).await {
                tracing::debug!(error = %e, "response cache write failed");
            }
        }
    }

    /// Drops what a server notification makes out of date.
    pub(crate) async fn notified(&self, server: &str, method: &str, params: Option<&Value>) {
        let what: Vec<Invalidation> = match method {
            names::NOTIFICATIONS_TOOLS_LIST_CHANGED => {
                vec![Invalidation::method(server, names::TOOLS_LIST)]
            }
            names::NOTIFICATIONS_PROMPTS_LIST_CHANGED => {
                vec![Invalidation::method(server, names::PROMPTS_LIST)]
            }
            // Skill files are resources: a change to them changes skill entries too.
            names::NOTIFICATIONS_RESOURCES_LIST_CHANGED => vec![
                Invalidation::method(server, names::RESOURCES_LIST),
                Invalidation::method(server, names::RESOURCES_TEMPLATES_LIST),
                Invalidation::method(server, names::SKILLS_LIST),
                Invalidation::method(server, names::SKILLS_GET),
            ],
            names::NOTIFICATIONS_RESOURCES_UPDATED => {
                let read = match params.and_then(|p| p.get("uri")).and_then(Value::as_str) {
                    Some(uri) => Invalidation::method(server, names::RESOURCES_READ).uri(uri),
                    None => Invalidation::method(server, names::RESOURCES_READ),
                };
                vec![
                    read,
                    Invalidation::method(server, names::SKILLS_LIST),
                    Invalidation::method(server, names::SKILLS_GET),
                ]
            }
            _ => return,
        };
        for what in &what {
            match self.store.invalidate(what).await {
                Ok(n) => tracing::debug!(method, dropped = n, "response cache invalidated"),
                Err(e) => tracing::debug!(error = %e, "response cache invalidation failed"),
            }
        }
    }
}

impl Client {
    /// Deprecated: configure the client before it exists, with
    /// [`ClientBuilder::with_cache`](crate::ClientBuilder::with_cache). This returns a new,
    /// unconnected client with this one's configuration plus the change; the client it is
    /// called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `Client::builder(name, version).with_cache(..)` then `build()`"
    )]
    pub fn with_cache(self, cache: ResponseCache) -> Client {
        self.to_builder().with_cache(cache).build()
    }

    /// A handle on the same connection whose calls use the cache as `mode` says: for one call,
    /// `client.with_cache_mode(CacheMode::Refresh).list_tools().await`. Default:
    /// [`CacheMode::Use`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::cache::{CacheMode, ResponseCache};
    /// use mcpl_client::transport::HttpTransport;
    /// # use mcpl_test_kit::http::serve_cached;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, server) = serve_cached().await?;
    /// let client = Client::builder("my-app", "1.0.0").with_cache(ResponseCache::in_memory().principal("alice")).build();
    /// client.connect(HttpTransport::new(url)).await?;
    /// client.read_resource("notes://1").await?;
    ///
    /// // The user pressed "reload": one call past the cache, which stores the new result.
    /// client.with_cache_mode(CacheMode::Refresh).read_resource("notes://1").await?;
    /// assert_eq!(server.count("resources/read"), 2);
    /// // The client itself still uses the cache.
    /// client.read_resource("notes://1").await?;
    /// assert_eq!(server.count("resources/read"), 2);
    /// # Ok(()) }
    /// ```
    pub fn with_cache_mode(&self, mode: CacheMode) -> Client {
        let mut client = self.clone();
        client.cache_mode = mode;
        client
    }

    /// The response cache, if one is set.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::cache::{MemoryStore, ResponseCache};
    ///
    /// assert!(Client::new("my-app", "1.0.0").cache().is_none());
    ///
    /// let store = Arc::new(MemoryStore::new());
    /// let client = Client::builder("my-app", "1.0.0").with_cache(ResponseCache::new(store)).build();
    /// let cache = client.cache().expect("set");
    /// // The same store, for a second client of another user.
    /// let bob = Client::builder("my-app", "1.0.0")
    ///     .with_cache(ResponseCache::new(cache.store().clone()).principal("bob"))
    ///     .build();
    /// # drop(bob);
    /// ```
    pub fn cache(&self) -> Option<&ResponseCache> {
        self.cache.as_ref()
    }
}

/// Whether a request's result may be cached: a cacheable method, and not a retried
/// input-required request.
fn cacheable(method: &str, params: &Value) -> bool {
    let method = matches!(
        method,
        names::TOOLS_LIST
            | names::RESOURCES_LIST
            | names::RESOURCES_TEMPLATES_LIST
            | names::RESOURCES_READ
            | names::PROMPTS_LIST
            | names::SKILLS_LIST
            | names::SKILLS_GET
    );
    let retried = params.get("inputResponses").is_some() || params.get("requestState").is_some();
    method && !retried
}

/// Whether an error means the server could not be reached (rather than a refusal).
fn unreachable(error: &Error) -> bool {
    if let Error::HttpStatus { status, .. } = error {
        return *status >= 500;
    }
    match error.kind() {
        ErrorKind::RequestTimeout => true,
        ErrorKind::Rpc => error.rpc_error().is_some_and(|e| e.code == ErrorCode::INTERNAL_ERROR),
        _ => error.is_unreachable(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn retried_and_uncacheable_requests_are_not_cached() {
        assert!(cacheable("tools/list", &json!({})));
        assert!(cacheable("resources/read", &json!({"uri": "a"})));
        assert!(!cacheable("tools/call", &json!({"name": "x"})));
        assert!(!cacheable("resources/read", &json!({"uri": "a", "requestState": "s"})));
        assert!(!cacheable("resources/read", &json!({"uri": "a", "inputResponses": {}})));
    }

    #[tokio::test]
    async fn skill_entries_are_cached_and_dropped_when_resources_change() {
        assert!(cacheable("skills/list", &json!({})));
        assert!(cacheable("skills/get", &json!({"uri": "skill://a/SKILL.md"})));
        let store = Arc::new(MemoryStore::new());
        let cache = ResponseCache::new(store.clone()).principal("p");
        let hit = json!({"ttlMs": 60_000, "cacheScope": "public"});
        let fill = || async {
            for (method, params) in [
                ("skills/list", json!({})),
                ("skills/get", json!({"uri": "skill://a/SKILL.md"})),
                ("tools/list", json!({})),
            ] {
                let value = hit.clone();
                let fetch = || async move { Ok(RawJson::from(value)) };
                cache.exchange(Some("s"), CacheMode::Use, method, &params, fetch).await.unwrap();
            }
        };
        fill().await;
        assert_eq!(store.len(), 3);
        cache.notified("s", "notifications/resources/list_changed", None).await;
        assert_eq!(store.len(), 1, "only tools/list is left");
        fill().await;
        let updated = json!({"uri": "skill://a/references/GUIDE.md"});
        cache.notified("s", "notifications/resources/updated", Some(&updated)).await;
        assert_eq!(store.len(), 1, "a skill file changed: its entries are out of date");
    }

    #[tokio::test]
    async fn input_required_and_ttl_less_results_are_not_stored() {
        let store = Arc::new(MemoryStore::new());
        let cache = ResponseCache::new(store.clone()).principal("p");
        for result in [
            json!({"resultType": "input_required", "ttlMs": 1000, "cacheScope": "public"}),
            json!({"resultType": "complete", "cacheScope": "public"}),
        ] {
            let got = cache
                .exchange(Some("s"), CacheMode::Use, "resources/read", &json!({"uri": "u"}), || {
                    let result = RawJson::from(&result);
                    async move { Ok(result) }
                })
                .await
                .unwrap();
            assert_eq!(got, result);
        }
        assert!(store.is_empty());
    }

    #[tokio::test]
    async fn notifications_drop_the_matching_entries_of_their_server_only() {
        let store = Arc::new(MemoryStore::new());
        let cache = ResponseCache::new(store.clone()).principal("p");
        let hit = json!({"ttlMs": 60_000, "cacheScope": "public"});
        for (server, method, params) in [
            ("a", "tools/list", json!({})),
            ("b", "tools/list", json!({})),
            ("a", "resources/read", json!({"uri": "x"})),
            ("a", "resources/read", json!({"uri": "y"})),
            ("a", "resources/templates/list", json!({})),
        ] {
            let value = hit.clone();
            cache
                .exchange(Some(server), CacheMode::Use, method, &params, || async move {
                    Ok(RawJson::from(value))
                })
                .await
                .unwrap();
        }
        assert_eq!(store.len(), 5);
        cache.notified("a", "notifications/tools/list_changed", None).await;
        assert_eq!(store.len(), 4);
        let updated = json!({"uri": "x"});
        cache.notified("a", "notifications/resources/updated", Some(&updated)).await;
        assert_eq!(store.len(), 3);
        cache.notified("a", "notifications/resources/list_changed", None).await;
        assert_eq!(store.len(), 2);
        cache.notified("a", "notifications/message", None).await;
        assert_eq!(store.len(), 2);
    }
}
