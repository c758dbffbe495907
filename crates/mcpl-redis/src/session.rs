//! [`RedisSessionStore`]: the fleet's record of its 2025-era sessions.

use std::time::Duration;

use mcpl_core::engine::BoxFuture;
use mcpl_server::http::session_store::{SessionRecord, SessionStore, StoreError};
use redis::Script;

use crate::{Error, ErrorKind, Redis, codec};

/// How long a session may stay idle, fleet-wide, by default: 30 minutes (as
/// `HttpConfig::session_idle_timeout`).
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_redis::DEFAULT_SESSION_IDLE.as_secs(), 30 * 60);
/// ```
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);

/// How many sessions the fleet holds at once by default (as `HttpConfig::max_sessions`).
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_redis::DEFAULT_FLEET_SESSIONS, 10_000);
/// ```
pub const DEFAULT_FLEET_SESSIONS: usize = 10_000;

/// How long a new session is kept before its first request after `initialize` by default:
/// 10 seconds (as `HttpConfig::handshake_timeout`).
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_redis::DEFAULT_SESSION_HANDSHAKE.as_secs(), 10);
/// ```
pub const DEFAULT_SESSION_HANDSHAKE: Duration = Duration::from_secs(10);

/// The longest session id looked up; a longer one (only a hostile client sends it) is unknown
/// without asking Redis.
const MAX_ID_LEN: usize = 128;

/// Records a new session unless the fleet is at its cap, for the handshake's time only (its
/// next request, at any instance, extends it). Expired sessions leave the index first.
const SAVE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('ZADD', KEYS[2], now + ttl, ARGV[4])
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
";

/// Reads a recorded session and pushes its expiry back (it is in use at another instance).
const LOAD: &str = r"
local value = redis.call('GET', KEYS[1])
if not value then return false end
local ttl = tonumber(ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], now + ttl, ARGV[2])
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
return value
";

/// Pushes a recorded session's expiry back; 0 when it is no longer recorded.
const TOUCH: &str = r"
local ttl = tonumber(ARGV[1])
if redis.call('PEXPIRE', KEYS[1], ttl) == 0 then
  redis.call('ZREM', KEYS[2], ARGV[2])
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], now + ttl, ARGV[2])
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
";

/// A [`SessionStore`] on Redis, shared by every instance of a fleet: a session initialized at
/// one instance is continued at any other, a `DELETE` at one ends it at all (the others find it
/// gone at their next request and answer `404`), a session idle for
/// [`idle_timeout`](Self::idle_timeout) anywhere expires everywhere, and the fleet holds at most
/// [`max_sessions`](Self::max_sessions) (one more is refused with `503` and `Retry-After`). A
/// session whose client never sends a second request is forgotten after
/// [`handshake_timeout`](Self::handshake_timeout), so abandoned handshakes do not hold the
/// fleet's cap. At the cap no session is evicted (an instance cannot tell whether another is
/// busy with it): new ones are refused until some end or expire.
///
/// Give every instance's endpoint the same settings: `HttpConfig::session_idle_timeout` bounds
/// how long an instance keeps its own copy of an idle session; this store's idle timeout, how
/// long the fleet remembers it.
///
/// # Examples
///
/// ```no_run
/// use mcpl_redis::{Redis, RedisConfig, RedisEventStore, RedisSessionStore};
/// use mcpl_server::Server;
/// use mcpl_server::http::{HttpConfig, StreamableHttp};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let redis = Redis::open(RedisConfig::new("redis://127.0.0.1:6379"))?;
/// let endpoint = StreamableHttp::with_stores(
///     Server::builder("notes", "1.0.0").build(),
///     HttpConfig::new(),
///     RedisEventStore::new(redis.clone()),
///     RedisSessionStore::new(redis).max_sessions(50_000),
/// );
/// # drop(endpoint);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RedisSessionStore {
    redis: Redis,
    idle: Duration,
    handshake: Duration,
    max_sessions: usize,
    save: std::sync::Arc<Script>,
    load: std::sync::Arc<Script>,
    touch: std::sync::Arc<Script>,
}

impl RedisSessionStore {
    /// The sessions of the fleet on `redis`, with [`DEFAULT_SESSION_IDLE`] and
    /// [`DEFAULT_FLEET_SESSIONS`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), mcpl_redis::Error> {
    /// let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
    /// let sessions = mcpl_redis::RedisSessionStore::new(redis);
    /// # drop(sessions);
    /// # Ok(()) }
    /// ```
    pub fn new(redis: Redis) -> Self {
        RedisSessionStore {
            redis,
            idle: DEFAULT_SESSION_IDLE,
            handshake: DEFAULT_SESSION_HANDSHAKE,
            max_sessions: DEFAULT_FLEET_SESSIONS,
            save: std::sync::Arc::new(Script::new(SAVE)),
            load: std::sync::Arc::new(Script::new(LOAD)),
            touch: std::sync::Arc::new(Script::new(TOUCH)),
        }
    }

    /// Forgets a session no instance has served for `idle` (default [`DEFAULT_SESSION_IDLE`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), mcpl_redis::Error> {
    /// # let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
    /// let sessions = mcpl_redis::RedisSessionStore::new(redis)
    ///     .idle_timeout(std::time::Duration::from_secs(600));
    /// # drop(sessions);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.idle = idle.max(Duration::from_millis(1));
        self
    }

    /// Forgets a new session whose client sent nothing after `initialize` within `timeout`
    /// (default [`DEFAULT_SESSION_HANDSHAKE`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), mcpl_redis::Error> {
    /// # let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
    /// let sessions = mcpl_redis::RedisSessionStore::new(redis)
    ///     .handshake_timeout(std::time::Duration::from_secs(30));
    /// # drop(sessions);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake = timeout.max(Duration::from_millis(1));
        self
    }

    /// Holds at most `max` sessions in the whole fleet (default [`DEFAULT_FLEET_SESSIONS`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), mcpl_redis::Error> {
    /// # let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
    /// let sessions = mcpl_redis::RedisSessionStore::new(redis).max_sessions(100_000);
    /// # drop(sessions);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max;
        self
    }

    fn ttl_ms(&self) -> u64 {
        millis(self.idle)
    }

    fn record_key(&self, id: &str) -> String {
        self.redis.key(&["session", id])
    }

    fn index_key(&self) -> String {
        self.redis.key(&["sessions"])
    }

    /// Records a new session (see [`SessionStore::save`]).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Full`] at the fleet's cap; Redis's failure otherwise.
    pub async fn save_record(&self, record: &SessionRecord) -> Result<(), Error> {
        let value = codec::encode(record)?;
        let saved: i64 = self
            .save
            .key(self.record_key(&record.id))
            .key(self.index_key())
            .arg(value)
            .arg(millis(self.handshake.min(self.idle)))
            .arg(self.max_sessions)
            .arg(&record.id)
            .invoke_async(&mut self.redis.connection())
            .await?;
        if saved == 0 {
            return Err(Error::new(
                ErrorKind::Full,
                format!("the fleet holds {} sessions", self.max_sessions),
            ));
        }
        Ok(())
    }

    /// The session `id`, if recorded (see [`SessionStore::load`]); its expiry is pushed back
    /// (an instance is about to serve it).
    ///
    /// # Errors
    ///
    /// Redis's failure, or [`ErrorKind::Format`] for an unreadable record.
    pub async fn load_record(&self, id: &str) -> Result<Option<SessionRecord>, Error> {
        if !plausible_id(id) {
            return Ok(None);
        }
        let text: Option<String> = self
            .load
            .key(self.record_key(id))
            .key(self.index_key())
            .arg(self.ttl_ms())
            .arg(id)
            .invoke_async(&mut self.redis.connection())
            .await?;
        text.map(|t| codec::decode(&t)).transpose()
    }

    /// Forgets session `id` fleet-wide (see [`SessionStore::remove`]).
    ///
    /// # Errors
    ///
    /// Redis's failure.
    pub async fn remove_record(&self, id: &str) -> Result<(), Error> {
        if !plausible_id(id) {
            return Ok(());
        }
        let () = redis::pipe()
            .atomic()
            .del(self.record_key(id))
            .ignore()
            .zrem(self.index_key(), id)
            .ignore()
            .query_async(&mut self.redis.connection())
            .await?;
        Ok(())
    }

    /// Pushes session `id`'s expiry back; `false` when it is no longer recorded.
    ///
    /// # Errors
    ///
    /// Redis's failure.
    pub async fn touch_record(&self, id: &str) -> Result<bool, Error> {
        if !plausible_id(id) {
            return Ok(false);
        }
        let alive: i64 = self
            .touch
            .key(self.record_key(id))
            .key(self.index_key())
            .arg(self.ttl_ms())
            .arg(id)
            .invoke_async(&mut self.redis.connection())
            .await?;
        Ok(alive == 1)
    }

    /// How many sessions the fleet holds now (expired ones not counted).
    ///
    /// # Errors
    ///
    /// Redis's failure.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(sessions: mcpl_redis::RedisSessionStore) -> Result<(), mcpl_redis::Error> {
    /// println!("{} sessions in the fleet", sessions.count().await?);
    /// # Ok(()) }
    /// ```
    pub async fn count(&self) -> Result<usize, Error> {
        let (_, count): (i64, usize) = redis::pipe()
            .atomic()
            .cmd("ZREMRANGEBYSCORE")
            .arg(self.index_key())
            .arg("-inf")
            .arg(now_ms())
            .zcard(self.index_key())
            .query_async(&mut self.redis.connection())
            .await?;
        Ok(count)
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Milliseconds since the epoch by this machine's clock.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

/// Whether `id` could be a session id at all (the endpoint makes 32 hex digits).
fn plausible_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_ID_LEN && id.bytes().all(|b| b.is_ascii_graphic())
}

impl SessionStore for RedisSessionStore {
    fn save(&self, record: SessionRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move { Ok(self.save_record(&record).await?) })
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        Box::pin(async move { Ok(self.load_record(id).await?) })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { Ok(self.remove_record(id).await?) })
    }

    fn touch<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { Ok(self.touch_record(id).await?) })
    }

    fn expires_idle(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plausible_ids_are_looked_up() {
        assert!(plausible_id("0123456789abcdef0123456789abcdef"));
        assert!(!plausible_id(""));
        assert!(!plausible_id(&"a".repeat(MAX_ID_LEN + 1)));
        assert!(!plausible_id("has space"));
    }
}
