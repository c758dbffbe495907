//! The response cache: reuse cacheable results (`tools/list`, `resources/list`,
//! `resources/templates/list`, `resources/read`, `prompts/list`) while they are fresh.
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
//!   `…/resources/list_changed` (lists and templates) and `notifications/resources/updated`
//!   (reads of that URI).
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
//! let alice = Client::new("app", "1")
//!     .with_cache(ResponseCache::new(store.clone()).principal("alice"));
//! let bob = Client::new("app", "1")
//!     .with_cache(ResponseCache::new(store).principal("bob").serve_stale_on_error(true));
//! // One call that skips the cache:
//! let fresh = alice.with_cache_mode(CacheMode::Bypass);
//! # drop((bob, fresh));
//! ```

mod memory;
mod store;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcpl_core::jsonrpc::ErrorCode;
use mcpl_core::types::names;
use mcpl_core::{Error, ErrorKind, Result};
use serde_json::Value;

use crate::Client;

pub use self::memory::{DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES, MemoryStore};
pub use self::store::{Audience, CacheEntry, CacheKey, CacheStore, Invalidation};

/// How one call uses the response cache.
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
    pub fn new(store: Arc<dyn CacheStore>) -> ResponseCache {
        ResponseCache { store, principal: None, serve_stale_on_error: false, default_ttl: None }
    }

    /// A cache over a fresh [`MemoryStore`] with its default bounds.
    pub fn in_memory() -> ResponseCache {
        ResponseCache::new(Arc::new(MemoryStore::new()))
    }

    /// Who the client acts for (a user id, a token's subject). Private results are cached for,
    /// and served to, this principal only.
    pub fn principal(mut self, principal: impl Into<String>) -> ResponseCache {
        self.principal = Some(principal.into());
        self
    }

    /// When fetching fails because the server cannot be reached (a transport failure, a
    /// timeout, a closed connection, an internal error), answer with the stored entry even if
    /// it is stale. Default: `false`.
    pub fn serve_stale_on_error(mut self, serve: bool) -> ResponseCache {
        self.serve_stale_on_error = serve;
        self
    }

    /// How long results that carry no `ttlMs` stay fresh (results of servers before the 2026
    /// era, which send no cache hints; the list-changed notifications still invalidate them).
    /// Such results are private (cached for the principal only). Default: none (not cached).
    pub fn default_ttl(mut self, ttl: Duration) -> ResponseCache {
        self.default_ttl = Some(ttl);
        self
    }

    /// The store.
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
    ) -> Result<Value>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Value>>,
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
                        return Ok(entry.value);
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
            Ok(value) => {
                self.keep(keys, &value).await;
                Ok(value)
            }
            Err(e) if self.serve_stale_on_error && unreachable(&e) => match stale {
                Some(entry) => {
                    tracing::debug!(method, error = %e, "serving a stale cached result");
                    Ok(entry.value)
                }
                None => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    /// Stores a fetched result under the key its `cacheScope` picks, if it may be cached.
    async fn keep(&self, keys: Vec<CacheKey>, value: &Value) {
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
            let entry = CacheEntry::new(value.clone(), ttl);
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
            names::NOTIFICATIONS_RESOURCES_LIST_CHANGED => vec![
                Invalidation::method(server, names::RESOURCES_LIST),
                Invalidation::method(server, names::RESOURCES_TEMPLATES_LIST),
            ],
            names::NOTIFICATIONS_RESOURCES_UPDATED => {
                match params.and_then(|p| p.get("uri")).and_then(Value::as_str) {
                    Some(uri) => vec![Invalidation::method(server, names::RESOURCES_READ).uri(uri)],
                    None => vec![Invalidation::method(server, names::RESOURCES_READ)],
                }
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
    /// Caches cacheable results in `cache` (see the [module documentation](self)). The
    /// invalidating notifications keep it current from then on, alongside any notification
    /// handlers (see [`crate::notify`]).
    pub fn with_cache(mut self, cache: ResponseCache) -> Client {
        self.notify.invalidate(cache.clone());
        self.cache = Some(cache);
        self
    }

    /// A handle on the same connection whose calls use the cache as `mode` says: for one call,
    /// `client.with_cache_mode(CacheMode::Refresh).list_tools().await`. Default:
    /// [`CacheMode::Use`].
    pub fn with_cache_mode(&self, mode: CacheMode) -> Client {
        let mut client = self.clone();
        client.cache_mode = mode;
        client
    }

    /// The response cache, if one is set.
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
    );
    let retried = params.get("inputResponses").is_some() || params.get("requestState").is_some();
    method && !retried
}

/// Whether an error means the server could not be reached (rather than a refusal).
fn unreachable(error: &Error) -> bool {
    match error.kind() {
        ErrorKind::Transport | ErrorKind::ConnectionClosed | ErrorKind::RequestTimeout => true,
        ErrorKind::Rpc => error.rpc_error().is_some_and(|e| {
            e.code == ErrorCode::INTERNAL_ERROR
                || e.data.as_ref().and_then(|d| d.get("transport")).is_some()
        }),
        _ => false,
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
    async fn input_required_and_ttl_less_results_are_not_stored() {
        let store = Arc::new(MemoryStore::new());
        let cache = ResponseCache::new(store.clone()).principal("p");
        for result in [
            json!({"resultType": "input_required", "ttlMs": 1000, "cacheScope": "public"}),
            json!({"resultType": "complete", "cacheScope": "public"}),
        ] {
            let got = cache
                .exchange(Some("s"), CacheMode::Use, "resources/read", &json!({"uri": "u"}), || {
                    let result = result.clone();
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
                .exchange(
                    Some(server),
                    CacheMode::Use,
                    method,
                    &params,
                    || async move { Ok(value) },
                )
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
