//! The pluggable store behind a [`ResponseCache`](super::ResponseCache): keys, entries and the
//! [`CacheStore`] trait.

use std::fmt;
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use mcpl_core::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who may be served an entry.
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
    pub fn new(value: Value, ttl: Duration) -> CacheEntry {
        let bytes = value.to_string().len();
        CacheEntry { value, stored_at: SystemTime::now(), ttl, bytes }
    }

    /// Whether the entry is still fresh: younger than its ttl. A clock that went backwards
    /// makes an entry stale.
    pub fn is_fresh(&self) -> bool {
        SystemTime::now().duration_since(self.stored_at).is_ok_and(|age| age < self.ttl)
    }
}

/// Which entries to drop: every entry of one server's `method`, or with a `uri`, only those
/// for that resource.
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
    pub fn method(server: impl Into<String>, method: impl Into<String>) -> Invalidation {
        Invalidation { server: server.into(), method: method.into(), uri: None }
    }

    /// Narrows to the entries for the resource `uri`.
    pub fn uri(mut self, uri: impl Into<String>) -> Invalidation {
        self.uri = Some(uri.into());
        self
    }

    /// Whether `key` is one of the entries to drop (whatever its audience).
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
