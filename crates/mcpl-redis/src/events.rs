//! [`RedisEventStore`]: SSE events kept where every instance of a fleet can replay them.

use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use mcpl_core::engine::BoxFuture;
use mcpl_core::jsonrpc::Message;
use mcpl_server::http::event_store::{
    DEFAULT_EVENT_AGE, DEFAULT_EVENTS_PER_STREAM, EventPosition, EventStore, Relayed,
};
use redis::Script;
use serde::{Deserialize, Serialize};

use crate::{Error, Redis, codec};

/// The largest event stored by default: 1 MiB of JSON. A larger one still reaches a connected
/// client, but cannot be replayed.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_redis::DEFAULT_MAX_EVENT_BYTES, 1 << 20);
/// ```
pub const DEFAULT_MAX_EVENT_BYTES: usize = 1 << 20;

/// Adds an event to its stream, keeps the newest `ARGV[3]`, and lets the stream (and the
/// session's list of streams) expire once no event was added for the age limit.
const APPEND: &str = r"
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
local keep = tonumber(ARGV[3])
local n = redis.call('ZCARD', KEYS[1])
if n > keep then redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - keep - 1) end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('SADD', KEYS[2], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1
";

/// Deletes every stream of a session: `ARGV[1]` is the streams' key prefix.
const REMOVE_SESSION: &str = r"
local streams = redis.call('SMEMBERS', KEYS[1])
for _, s in ipairs(streams) do redis.call('DEL', ARGV[1] .. s) end
redis.call('DEL', KEYS[1])
return #streams
";

/// One stored event.
#[derive(Serialize, Deserialize)]
struct Stored {
    seq: u64,
    /// When it was stored, in milliseconds since the epoch.
    at: u64,
    message: Message,
}

/// An [`EventStore`] on Redis: a stream cut at one instance resumes at any other with
/// `Last-Event-ID`, replaying exactly the events after that id. Bounded per stream: the newest
/// [`per_stream`](Self::per_stream) events, none older than [`max_age`](Self::max_age), none
/// larger than [`max_event_bytes`](Self::max_event_bytes); a stream no event was added to for
/// the age limit is gone from Redis. A resumption from before an evicted event is refused
/// (the endpoint answers `404`), as with the in-memory store.
///
/// It also relays a session's messages between the instances of the fleet
/// ([`EventStore::relays`]) over Redis pub/sub: what one instance sends outside its request
/// streams reaches the client's standalone stream at another, and the client's answer
/// reaches the instance that asked. A message larger than
/// [`max_event_bytes`](Self::max_event_bytes) is not relayed.
///
/// The trait reports no failures; the `try_` methods return them as [`Error`]s. Through the
/// trait, a failed append loses the event for a replay (a connected client still gets it),
/// a failed replay is "cannot resume" (`404`), a failed relay loses the message; an outage
/// is logged once as it begins and once as it ends.
///
/// # Examples
///
/// ```no_run
/// # async fn run() -> Result<(), mcpl_redis::Error> {
/// let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
/// let events = mcpl_redis::RedisEventStore::new(redis)
///     .per_stream(256)
///     .max_age(std::time::Duration::from_secs(120));
/// # drop(events);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RedisEventStore {
    redis: Redis,
    per_stream: usize,
    max_age: Duration,
    max_event_bytes: usize,
    append: std::sync::Arc<Script>,
    remove: std::sync::Arc<Script>,
}

impl RedisEventStore {
    /// The events of the fleet on `redis`, bounded as the in-memory store is by default
    /// ([`DEFAULT_EVENTS_PER_STREAM`], [`DEFAULT_EVENT_AGE`]) and by [`DEFAULT_MAX_EVENT_BYTES`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), mcpl_redis::Error> {
    /// let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
    /// let events = mcpl_redis::RedisEventStore::new(redis);
    /// # drop(events);
    /// # Ok(()) }
    /// ```
    pub fn new(redis: Redis) -> Self {
        RedisEventStore {
            redis,
            per_stream: DEFAULT_EVENTS_PER_STREAM,
            max_age: DEFAULT_EVENT_AGE,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            append: std::sync::Arc::new(Script::new(APPEND)),
            remove: std::sync::Arc::new(Script::new(REMOVE_SESSION)),
        }
    }

    /// Keeps the newest `count` events of each stream (default [`DEFAULT_EVENTS_PER_STREAM`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), mcpl_redis::Error> {
    /// # let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
    /// let events = mcpl_redis::RedisEventStore::new(redis).per_stream(64);
    /// # drop(events);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn per_stream(mut self, count: usize) -> Self {
        self.per_stream = count.max(1);
        self
    }

    /// Keeps no event longer than `age` (default [`DEFAULT_EVENT_AGE`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), mcpl_redis::Error> {
    /// # let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
    /// let events = mcpl_redis::RedisEventStore::new(redis).max_age(std::time::Duration::from_secs(60));
    /// # drop(events);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = age.max(Duration::from_millis(1));
        self
    }

    /// Stores no event larger than `bytes` of JSON (default [`DEFAULT_MAX_EVENT_BYTES`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), mcpl_redis::Error> {
    /// # let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
    /// let events = mcpl_redis::RedisEventStore::new(redis).max_event_bytes(64 << 10);
    /// # drop(events);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn max_event_bytes(mut self, bytes: usize) -> Self {
        self.max_event_bytes = bytes;
        self
    }

    fn streams_key(&self, session: &str) -> String {
        self.redis.key(&["streams", session])
    }

    fn stream_prefix(&self, session: &str) -> String {
        self.redis.key(&["events", session, ""])
    }

    fn stream_key(&self, session: &str, stream: u64) -> String {
        format!("{}{stream}", self.stream_prefix(session))
    }

    fn age_ms(&self) -> u64 {
        u64::try_from(self.max_age.as_millis()).unwrap_or(u64::MAX)
    }

    /// Stores `message` as the event at `position` of `session` (see [`EventStore::append`]).
    ///
    /// # Errors
    ///
    /// Redis's failure.
    pub async fn try_append(
        &self,
        session: &str,
        position: EventPosition,
        message: &Message,
    ) -> Result<(), Error> {
        let stored = Stored { seq: position.seq, at: now_ms(), message: message.clone() };
        let member = codec::encode(&stored)?;
        if member.len() > self.max_event_bytes {
            tracing::debug!(session, bytes = member.len(), "event too large to store for replay");
            return Ok(());
        }
        let _: i64 = self
            .append
            .key(self.stream_key(session, position.stream))
            .key(self.streams_key(session))
            .arg(position.seq)
            .arg(member)
            .arg(self.per_stream)
            .arg(self.age_ms())
            .arg(position.stream)
            .invoke_async(&mut self.redis.connection())
            .await?;
        Ok(())
    }

    /// The events of `after`'s stream that follow it (see [`EventStore::replay_after`]).
    ///
    /// # Errors
    ///
    /// Redis's failure, or [`ErrorKind::Format`](crate::ErrorKind::Format) for an unreadable event.
    pub async fn try_replay_after(
        &self,
        session: &str,
        after: EventPosition,
    ) -> Result<Option<Vec<(EventPosition, Message)>>, Error> {
        let members: Vec<String> = redis::cmd("ZRANGE")
            .arg(self.stream_key(session, after.stream))
            .arg(0)
            .arg(-1)
            .query_async(&mut self.redis.connection())
            .await?;
        let oldest = now_ms().saturating_sub(self.age_ms());
        let mut kept = Vec::with_capacity(members.len());
        for member in &members {
            let stored: Stored = codec::decode(member)?;
            // Older than the age limit: as good as evicted (always the oldest first).
            if stored.at >= oldest {
                kept.push(stored);
            }
        }
        let Some(first) = kept.first() else {
            // A stream with no events (left) is only known if it was primed (seq 0).
            return Ok((after.seq == 0).then(Vec::new));
        };
        if first.seq > after.seq + 1 {
            return Ok(None);
        }
        Ok(Some(
            kept.into_iter()
                .filter(|e| e.seq > after.seq)
                .map(|e| (EventPosition { stream: after.stream, seq: e.seq }, e.message))
                .collect(),
        ))
    }

    /// Forgets every event of `session` (see [`EventStore::remove_session`]).
    ///
    /// # Errors
    ///
    /// Redis's failure.
    pub async fn try_remove_session(&self, session: &str) -> Result<(), Error> {
        let _: i64 = self
            .remove
            .key(self.streams_key(session))
            .arg(self.stream_prefix(session))
            .invoke_async(&mut self.redis.connection())
            .await?;
        Ok(())
    }

    /// Forgets the events of one stream (see [`EventStore::discard_stream`]).
    ///
    /// # Errors
    ///
    /// Redis's failure.
    pub async fn try_discard_stream(&self, session: &str, stream: u64) -> Result<(), Error> {
        let () = redis::pipe()
            .atomic()
            .del(self.stream_key(session, stream))
            .ignore()
            .srem(self.streams_key(session), stream)
            .ignore()
            .query_async(&mut self.redis.connection())
            .await?;
        Ok(())
    }
}

/// Milliseconds since the epoch by this machine's clock.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

impl EventStore for RedisEventStore {
    fn append<'a>(
        &'a self,
        session: &'a str,
        position: EventPosition,
        message: &'a Message,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let stored = self.try_append(session, position, message).await;
            let _ = self.redis.noted("storing an SSE event (it cannot be replayed)", stored);
        })
    }

    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        after: EventPosition,
    ) -> BoxFuture<'a, Option<Vec<(EventPosition, Message)>>> {
        Box::pin(async move {
            let replayed = self.try_replay_after(session, after).await;
            self.redis.noted("replaying SSE events (the resumption is refused)", replayed).ok()?
        })
    }

    fn remove_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let removed = self.try_remove_session(session).await;
            let _ =
                self.redis.noted("removing a session's SSE events (they expire by age)", removed);
        })
    }

    fn discard_stream<'a>(&'a self, session: &'a str, stream: u64) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let discarded = self.try_discard_stream(session, stream).await;
            let _ = self.redis.noted("discarding an SSE stream (it expires by age)", discarded);
        })
    }

    fn relays(&self) -> bool {
        true
    }

    fn relay<'a>(&'a self, relayed: &'a Relayed) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let published = self.try_relay(relayed).await;
            let _ = self.redis.noted("relaying a message to the fleet (it is lost)", published);
        })
    }

    fn relayed(&self) -> Option<BoxStream<'static, Relayed>> {
        let wires = crate::pubsub::subscribe::<Wire>(
            &self.redis,
            self.relay_channel(),
            self.max_event_bytes,
            "the fleet's relayed messages",
        );
        Some(Box::pin(wires.map(Wire::into_relayed)))
    }
}

/// A [`Relayed`] as published: `{"to": "client" | "server", "session": ..., "message": ...}`.
///
/// A struct rather than an enum tagged by `to`: a tagged enum buffers its fields, and a
/// message's result ([`RawJson`](mcpl_core::jsonrpc::RawJson)) is read from the text itself.
#[derive(Serialize, Deserialize)]
struct Wire {
    to: To,
    session: String,
    message: Message,
}

/// Which side of the session a relayed message is for.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum To {
    Client,
    Server,
}

impl Wire {
    fn from_relayed(relayed: &Relayed) -> Option<Wire> {
        let (to, session, message) = match relayed {
            Relayed::ToClient { session, message } => (To::Client, session, message),
            Relayed::ToServer { session, message } => (To::Server, session, message),
            _ => return None,
        };
        Some(Wire { to, session: session.clone(), message: message.clone() })
    }

    fn into_relayed(self) -> Relayed {
        let Wire { to, session, message } = self;
        match to {
            To::Client => Relayed::ToClient { session, message },
            To::Server => Relayed::ToServer { session, message },
        }
    }
}

impl RedisEventStore {
    fn relay_channel(&self) -> String {
        self.redis.key(&["relay"])
    }

    /// Publishes `relayed` to the fleet (see [`EventStore::relay`]); a message larger than
    /// [`max_event_bytes`](Self::max_event_bytes) is not relayed.
    ///
    /// # Errors
    ///
    /// Redis's failure.
    pub async fn try_relay(&self, relayed: &Relayed) -> Result<(), Error> {
        let Some(wire) = Wire::from_relayed(relayed) else { return Ok(()) };
        let message = codec::encode(&wire)?;
        if message.len() > self.max_event_bytes {
            tracing::debug!(
                session = relayed.session(),
                bytes = message.len(),
                "message too large to relay"
            );
            return Ok(());
        }
        let _receivers: i64 = redis::cmd("PUBLISH")
            .arg(self.relay_channel())
            .arg(message)
            .query_async(&mut self.redis.connection())
            .await?;
        Ok(())
    }
}
