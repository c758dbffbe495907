//! [`RedisCacheStore`]: a client [`CacheStore`] several client processes share.

use std::time::Duration;

use futures::future::BoxFuture;
use mcpl_client::cache::{CacheEntry, CacheKey, CacheStore, Invalidation};
use redis::Script;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Error, Redis, codec};

/// How long a stale entry stays (for `serve_stale_on_error`) by default: 1 hour past its
/// freshness.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_redis::DEFAULT_STALE_FOR.as_secs(), 3600);
/// ```
pub const DEFAULT_STALE_FOR: Duration = Duration::from_secs(3600);

/// The largest entry stored by default: 1 MiB of JSON (as big as a client's default response).
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_redis::DEFAULT_MAX_ENTRY_BYTES, 1 << 20);
/// ```
pub const DEFAULT_MAX_ENTRY_BYTES: usize = 1 << 20;

/// Stores an entry and lists it in its server and method's index, whose expiry only grows.
const PUT: &str = r"
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('SADD', KEYS[2], ARGV[3])
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
";

#[derive(Serialize, Deserialize)]
struct Stored {
    key: CacheKey,
    entry: CacheEntry,
}

/// A [`CacheStore`] on Redis: client processes sharing it reuse each other's cached lists and
/// reads. Partitioned exactly as the in-memory store is, since the partition is in the
/// [`CacheKey`]: by server identity and audience, so a principal's private entries are only
/// ever served to that principal and public ones to every principal of the same server. Each
/// entry is stored whole with its key and served only for an identical key.
///
/// Bounded per entry ([`max_entry_bytes`](Self::max_entry_bytes)) and in time: an entry is gone
/// from Redis [`stale_for`](Self::stale_for) after it went stale. Bound the total with Redis's
/// own `maxmemory` and an `allkeys-lru` policy (a cache may lose any entry).
///
/// # Examples
///
/// ```no_run
/// use std::sync::Arc;
///
/// # async fn run() -> Result<(), mcpl_redis::Error> {
/// let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
/// let store = Arc::new(mcpl_redis::RedisCacheStore::new(redis));
/// let client = mcpl_client::Client::builder("my-app", "1.0.0")
///     .with_cache(mcpl_client::cache::ResponseCache::new(store).principal("alice"))
///     .build();
/// # drop(client);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RedisCacheStore {
    redis: Redis,
    stale_for: Duration,
    max_entry_bytes: usize,
    put: std::sync::Arc<Script>,
}

impl RedisCacheStore {
    /// A cache on `redis`, with [`DEFAULT_STALE_FOR`] and [`DEFAULT_MAX_ENTRY_BYTES`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), mcpl_redis::Error> {
    /// let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
    /// let store = mcpl_redis::RedisCacheStore::new(redis);
    /// # drop(store);
    /// # Ok(()) }
    /// ```
    pub fn new(redis: Redis) -> Self {
        RedisCacheStore {
            redis,
            stale_for: DEFAULT_STALE_FOR,
            max_entry_bytes: DEFAULT_MAX_ENTRY_BYTES,
            put: std::sync::Arc::new(Script::new(PUT)),
        }
    }

    /// Keeps an entry `stale_for` past its freshness (default [`DEFAULT_STALE_FOR`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), mcpl_redis::Error> {
    /// # let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
    /// let store = mcpl_redis::RedisCacheStore::new(redis).stale_for(std::time::Duration::ZERO);
    /// # drop(store);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn stale_for(mut self, stale_for: Duration) -> Self {
        self.stale_for = stale_for;
        self
    }

    /// Stores no entry larger than `bytes` of JSON (default [`DEFAULT_MAX_ENTRY_BYTES`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), mcpl_redis::Error> {
    /// # let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
    /// let store = mcpl_redis::RedisCacheStore::new(redis).max_entry_bytes(256 << 10);
    /// # drop(store);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn max_entry_bytes(mut self, bytes: usize) -> Self {
        self.max_entry_bytes = bytes;
        self
    }

    fn entry_key(&self, digest: &str) -> String {
        self.redis.key(&["cache", digest])
    }

    fn index_key(&self, server: &str, method: &str) -> String {
        self.redis.key(&["cache-index", &hex_digest(&[server, method])])
    }

    /// The entry for `key` (see [`CacheStore::get`]).
    ///
    /// # Errors
    ///
    /// Redis's failure, or [`ErrorKind::Format`](crate::ErrorKind::Format) for an unreadable entry.
    pub async fn try_get(&self, key: &CacheKey) -> Result<Option<CacheEntry>, Error> {
        let text: Option<String> = redis::cmd("GET")
            .arg(self.entry_key(&key_digest(key)?))
            .query_async(&mut self.redis.connection())
            .await?;
        let Some(text) = text else { return Ok(None) };
        let stored: Stored = codec::decode(&text)?;
        // Only for the very key it was stored under (never another audience's entry).
        Ok((stored.key == *key).then_some(stored.entry))
    }

    /// Stores `entry` under `key` (see [`CacheStore::put`]); an oversized entry is not stored.
    ///
    /// # Errors
    ///
    /// Redis's failure.
    pub async fn try_put(&self, key: CacheKey, entry: CacheEntry) -> Result<(), Error> {
        if entry.bytes > self.max_entry_bytes {
            return Ok(());
        }
        let digest = key_digest(&key)?;
        let index = self.index_key(&key.server, &key.method);
        let lifetime = entry.ttl.saturating_add(self.stale_for).max(Duration::from_millis(1));
        let value = codec::encode(&Stored { key, entry })?;
        let _: i64 = self
            .put
            .key(self.entry_key(&digest))
            .key(index)
            .arg(value)
            .arg(u64::try_from(lifetime.as_millis()).unwrap_or(u64::MAX))
            .arg(&digest)
            .invoke_async(&mut self.redis.connection())
            .await?;
        Ok(())
    }

    /// Drops every entry `what` matches, for every client sharing the store (see
    /// [`CacheStore::invalidate`]).
    ///
    /// # Errors
    ///
    /// Redis's failure.
    pub async fn try_invalidate(&self, what: &Invalidation) -> Result<usize, Error> {
        let index = self.index_key(&what.server, &what.method);
        let mut connection = self.redis.connection();
        let digests: Vec<String> =
            redis::cmd("SMEMBERS").arg(&index).query_async(&mut connection).await?;
        if digests.is_empty() {
            return Ok(0);
        }
        let keys: Vec<String> = digests.iter().map(|d| self.entry_key(d)).collect();
        let values: Vec<Option<String>> =
            redis::cmd("MGET").arg(&keys).query_async(&mut connection).await?;
        let mut doomed = Vec::new();
        let mut gone = Vec::new();
        for ((digest, key), value) in digests.iter().zip(&keys).zip(values) {
            match value.map(|v| codec::decode::<Stored>(&v)) {
                Some(Ok(stored)) if what.matches(&stored.key) => {
                    doomed.push(key.clone());
                    gone.push(digest.clone());
                }
                Some(Ok(_)) => {}
                // Expired, or unreadable: out of the index either way.
                None | Some(Err(_)) => {
                    doomed.push(key.clone());
                    gone.push(digest.clone());
                }
            }
        }
        if gone.is_empty() {
            return Ok(0);
        }
        let (removed,): (usize,) = redis::pipe()
            .atomic()
            .del(&doomed)
            .srem(&index, &gone)
            .ignore()
            .query_async(&mut connection)
            .await?;
        Ok(removed)
    }
}

fn hex_digest(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.len().to_le_bytes());
        hasher.update(part.as_bytes());
    }
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn key_digest(key: &CacheKey) -> Result<String, Error> {
    Ok(hex_digest(&[&serde_json::to_string(key)?]))
}

impl CacheStore for RedisCacheStore {
    fn get<'a>(
        &'a self,
        key: &'a CacheKey,
    ) -> BoxFuture<'a, mcpl_core::Result<Option<CacheEntry>>> {
        Box::pin(async move { Ok(self.try_get(key).await?) })
    }

    fn put(&self, key: CacheKey, entry: CacheEntry) -> BoxFuture<'_, mcpl_core::Result<()>> {
        Box::pin(async move { Ok(self.try_put(key, entry).await?) })
    }

    fn invalidate<'a>(&'a self, what: &'a Invalidation) -> BoxFuture<'a, mcpl_core::Result<usize>> {
        Box::pin(async move { Ok(self.try_invalidate(what).await?) })
    }
}
