//! [`Redis`]: one shared, self-healing connection to Redis, and the [`RedisConfig`] it is made
//! from.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::Error;

/// How long a command may wait for its answer by default: 1 second.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_redis::DEFAULT_RESPONSE_TIMEOUT.as_secs(), 1);
/// ```
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);

/// How long connecting may take by default: 1 second.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_redis::DEFAULT_CONNECT_TIMEOUT.as_secs(), 1);
/// ```
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// The key prefix unless configured otherwise.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_redis::DEFAULT_PREFIX, "mcpl");
/// ```
pub const DEFAULT_PREFIX: &str = "mcpl";

/// The format version of every key and value this crate writes. Keys carry it
/// (`<prefix>:v1:...`) and so does every value; a value of another version is an
/// [`ErrorKind::Format`](crate::ErrorKind::Format) error, never misread.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_redis::FORMAT_VERSION, 1);
/// ```
pub const FORMAT_VERSION: u32 = 1;

/// Where Redis is and how to talk to it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let config = mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379/0")
///     .prefix("notes-fleet")
///     .response_timeout(Duration::from_millis(500));
/// assert_eq!(config.url(), "redis://127.0.0.1:6379/0");
/// ```
#[derive(Debug, Clone)]
pub struct RedisConfig {
    url: String,
    prefix: String,
    response_timeout: Duration,
    connect_timeout: Duration,
    retries: usize,
}

impl RedisConfig {
    /// Redis at `url` (`redis://[user:password@]host:port[/db]`), with the default prefix and
    /// timeouts.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379");
    /// # drop(config);
    /// ```
    pub fn new(url: impl Into<String>) -> Self {
        RedisConfig {
            url: url.into(),
            prefix: DEFAULT_PREFIX.to_owned(),
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            retries: 2,
        }
    }

    /// The URL.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(mcpl_redis::RedisConfig::new("redis://h:1").url(), "redis://h:1");
    /// ```
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Prefixes every key with `prefix` (default [`DEFAULT_PREFIX`]): fleets (or tests)
    /// sharing one Redis keep apart.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379").prefix("staging");
    /// # drop(config);
    /// ```
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long a command may wait for its answer (default [`DEFAULT_RESPONSE_TIMEOUT`]); a
    /// slower one fails with [`ErrorKind::Timeout`](crate::ErrorKind::Timeout).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379")
    ///     .response_timeout(std::time::Duration::from_millis(250));
    /// # drop(config);
    /// ```
    #[must_use]
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// How long connecting (and each reconnection attempt) may take (default
    /// [`DEFAULT_CONNECT_TIMEOUT`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379")
    ///     .connect_timeout(std::time::Duration::from_secs(2));
    /// # drop(config);
    /// ```
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How many times a lost connection is retried (with a growing pause, from 50 ms) before
    /// a command fails with [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable); the next
    /// command tries again. Default 2: a request fails fast while Redis is down.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379").reconnect_retries(5);
    /// # drop(config);
    /// ```
    #[must_use]
    pub fn reconnect_retries(mut self, retries: usize) -> Self {
        self.retries = retries;
        self
    }
}

/// A connection to Redis shared by every store made from it: one multiplexed connection that
/// pipelines concurrent commands, reconnects by itself after a failure, and bounds every
/// command by the response timeout. Cheap to clone.
///
/// # Examples
///
/// ```no_run
/// # async fn run() -> Result<(), mcpl_redis::Error> {
/// let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
/// redis.ping().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Redis {
    client: redis::Client,
    manager: ConnectionManager,
    prefix: std::sync::Arc<str>,
    connect_timeout: Duration,
    /// Whether the last command failed: an outage is logged once when it begins (`warn`),
    /// once when it ends (`info`), and its other failures at `debug`.
    down: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis").field("prefix", &self.prefix).finish_non_exhaustive()
    }
}

impl Redis {
    /// A connection to the Redis `config` names, made on first use (an instance starts even
    /// while Redis is down, and its stores fail with typed errors until it is back).
    ///
    /// Must be called within a Tokio runtime.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Command`](crate::ErrorKind::Command) for a malformed URL.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let bad = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("not a url"));
    /// assert_eq!(bad.unwrap_err().kind(), mcpl_redis::ErrorKind::Command);
    /// # }
    /// ```
    pub fn open(config: RedisConfig) -> Result<Redis, Error> {
        let client = redis::Client::open(config.url.as_str())?;
        let manager_config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(config.response_timeout))
            .set_connection_timeout(Some(config.connect_timeout))
            .set_number_of_retries(config.retries)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_millis(500));
        let manager = ConnectionManager::new_lazy_with_config(client.clone(), manager_config)?;
        Ok(Redis {
            client,
            manager,
            prefix: config.prefix.into(),
            connect_timeout: config.connect_timeout,
            down: std::sync::Arc::default(),
        })
    }

    /// Logs `error`, the failure of `what`: at `warn` when it is the first of an outage
    /// (or not a failure of the connection), at `debug` while the outage lasts.
    pub(crate) fn failed(&self, what: &str, error: &Error) {
        use std::sync::atomic::Ordering;
        let cause = std::error::Error::source(error).map(ToString::to_string);
        let connection =
            matches!(error.kind(), crate::ErrorKind::Unavailable | crate::ErrorKind::Timeout);
        if connection && self.down.swap(true, Ordering::Relaxed) {
            tracing::debug!(error = %error, cause, "{what} failed (Redis still unavailable)");
        } else {
            tracing::warn!(error = %error, cause, "{what} failed");
        }
    }

    /// Notes a command that succeeded: ends an outage (logged once).
    pub(crate) fn succeeded(&self) {
        use std::sync::atomic::Ordering;
        if self.down.load(Ordering::Relaxed) && self.down.swap(false, Ordering::Relaxed) {
            tracing::info!("Redis is available again");
        }
    }

    /// `result`, noted: a failure logged (see [`failed`](Self::failed)), a success ending an
    /// outage.
    pub(crate) fn noted<T>(&self, what: &str, result: Result<T, Error>) -> Result<T, Error> {
        match &result {
            Ok(_) => self.succeeded(),
            Err(e) => self.failed(what, e),
        }
        result
    }

    /// Checks that Redis answers.
    ///
    /// # Errors
    ///
    /// Why it does not.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run(redis: mcpl_redis::Redis) -> Result<(), mcpl_redis::Error> {
    /// redis.ping().await?;
    /// # Ok(()) }
    /// ```
    pub async fn ping(&self) -> Result<(), Error> {
        let _: String = redis::cmd("PING").query_async(&mut self.connection()).await?;
        Ok(())
    }

    /// A connection of its own for subscribing (pub/sub), made within the connect timeout.
    pub(crate) async fn pubsub(&self) -> Result<redis::aio::PubSub, Error> {
        match tokio::time::timeout(self.connect_timeout, self.client.get_async_pubsub()).await {
            Ok(pubsub) => Ok(pubsub?),
            Err(elapsed) => Err(Error::new(crate::ErrorKind::Timeout, elapsed)),
        }
    }

    /// The connection, for one command (clones share it).
    pub(crate) fn connection(&self) -> ConnectionManager {
        self.manager.clone()
    }

    /// The key for `parts` under this connection's prefix and the format version:
    /// `<prefix>:v1:<parts joined by ':'>`.
    pub(crate) fn key(&self, parts: &[&str]) -> String {
        let mut key = format!("{}:v{FORMAT_VERSION}", self.prefix);
        for part in parts {
            key.push(':');
            key.push_str(part);
        }
        key
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn keys_carry_the_prefix_and_the_format_version() {
        let redis = Redis::open(RedisConfig::new("redis://127.0.0.1:1").prefix("p")).unwrap();
        assert_eq!(redis.key(&["session", "abc"]), "p:v1:session:abc");
    }
}
