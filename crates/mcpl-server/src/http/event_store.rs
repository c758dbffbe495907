//! [`EventStore`]: where SSE events are kept so a client can resume a stream with
//! `Last-Event-ID`.
//!
//! Every event a session sends on an SSE stream gets an id `<stream>-<sequence>`. A client that
//! lost the connection reconnects with a GET carrying `Last-Event-ID`; the server replays the
//! events of that stream after that id, then continues the stream live if it is still open.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

/// The store's tables are keyed by session ids and stream numbers this process made; a fast
/// hasher with a random seed per table (`foldhash`) serves them.
type Hasher = foldhash::fast::RandomState;

use mcpl_core::engine::BoxFuture;
use mcpl_core::jsonrpc::Message;

/// How many events of one stream the in-memory store keeps by default.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::http::event_store::DEFAULT_EVENTS_PER_STREAM, 1024);
/// ```
pub const DEFAULT_EVENTS_PER_STREAM: usize = 1024;

/// The position of an event: the stream it belongs to and its sequence number there.
///
/// # Examples
///
/// ```
/// use mcpl_server::http::event_store::EventPosition;
///
/// let position = EventPosition { stream: 3, seq: 17 };
/// assert_eq!(position.to_event_id(), "3-17");
/// assert_eq!(EventPosition::parse("3-17"), Some(position));
/// assert_eq!(EventPosition::parse("nonsense"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventPosition {
    /// The stream, unique within its session.
    pub stream: u64,
    /// The sequence number within the stream, starting at 1 (0 is the priming event).
    pub seq: u64,
}

impl EventPosition {
    /// The SSE event id: `<stream>-<seq>`.
    ///
    /// # Examples
    ///
    /// ```
    /// let id = mcpl_server::http::event_store::EventPosition { stream: 1, seq: 0 }.to_event_id();
    /// assert_eq!(id, "1-0");
    /// ```
    pub fn to_event_id(self) -> String {
        format!("{}-{}", self.stream, self.seq)
    }

    /// Parses an SSE event id made by [`to_event_id`](Self::to_event_id).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::event_store::EventPosition;
    ///
    /// assert_eq!(EventPosition::parse("2-5"), Some(EventPosition { stream: 2, seq: 5 }));
    /// assert_eq!(EventPosition::parse("2-"), None);
    /// ```
    pub fn parse(id: &str) -> Option<EventPosition> {
        let (stream, seq) = id.split_once('-')?;
        Some(EventPosition { stream: stream.parse().ok()?, seq: seq.parse().ok()? })
    }
}

/// Stores SSE events for resumption. Implement it to keep events outside this process.
///
/// # Examples
///
/// A store wrapping the in-memory one (a real one would write to a shared cache such as Redis),
/// given to the endpoint with [`StreamableHttp::with_event_store`](crate::http::StreamableHttp::with_event_store):
///
/// ```
/// use mcpl_core::engine::BoxFuture;
/// use mcpl_core::jsonrpc::Message;
/// use mcpl_server::Server;
/// use mcpl_server::http::event_store::{EventPosition, EventStore, InMemoryEventStore};
/// use mcpl_server::http::{HttpConfig, StreamableHttp};
///
/// #[derive(Default)]
/// struct Counted(InMemoryEventStore, std::sync::atomic::AtomicUsize);
///
/// impl EventStore for Counted {
///     fn append<'a>(&'a self, session: &'a str, at: EventPosition, message: &'a Message) -> BoxFuture<'a, ()> {
///         self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
///         self.0.append(session, at, message)
///     }
///     fn replay_after<'a>(
///         &'a self,
///         session: &'a str,
///         after: EventPosition,
///     ) -> BoxFuture<'a, Option<Vec<(EventPosition, Message)>>> {
///         self.0.replay_after(session, after)
///     }
///     fn remove_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, ()> {
///         self.0.remove_session(session)
///     }
/// }
///
/// let server = Server::builder("s", "1").build();
/// let endpoint = StreamableHttp::with_event_store(server, HttpConfig::new(), Counted::default());
/// # drop(endpoint);
/// ```
pub trait EventStore: Send + Sync + 'static {
    /// Stores `message` as the event at `position` of `session`.
    fn append<'a>(
        &'a self,
        session: &'a str,
        position: EventPosition,
        message: &'a Message,
    ) -> BoxFuture<'a, ()>;

    /// Stores `message` as the event at `position` of `session`, given also as the JSON the
    /// endpoint made of it once for its stream (`encoded`, shared, not copied). The default
    /// stores `message` with [`append`](Self::append); a store that keeps JSON keeps `encoded`
    /// rather than encoding `message` again.
    fn append_encoded<'a>(
        &'a self,
        session: &'a str,
        position: EventPosition,
        message: &'a Message,
        encoded: &'a Bytes,
    ) -> BoxFuture<'a, ()> {
        let _ = encoded;
        self.append(session, position, message)
    }

    /// The events of `after`'s stream that follow it, oldest first; `None` if that stream is
    /// unknown (or its events after `after` were evicted).
    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        after: EventPosition,
    ) -> BoxFuture<'a, Option<Vec<(EventPosition, Message)>>>;

    /// Forgets every event of `session`.
    fn remove_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, ()>;

    /// Forgets the events of one stream of `session`: called once a request stream's
    /// response was written out on a live connection, so nothing is left to resume. The
    /// default keeps them (until [`remove_session`](Self::remove_session)).
    fn discard_stream<'a>(&'a self, session: &'a str, stream: u64) -> BoxFuture<'a, ()> {
        let _ = (session, stream);
        Box::pin(std::future::ready(()))
    }

    /// Whether this store relays messages between the instances of a fleet sharing it
    /// ([`relay`](Self::relay), [`relayed`](Self::relayed)). The default: no, one process.
    ///
    /// A relaying store lets a session be served at several instances at once: what the
    /// server sends the client outside any request stream of this instance (a notification
    /// or request for the standalone `GET` stream) goes to the instance where the client's
    /// standalone stream is connected, and the client's answer to a request sent by another
    /// instance goes to that instance. The endpoint then numbers the requests it sends from a
    /// random point, so that an answer names one instance's request only.
    fn relays(&self) -> bool {
        false
    }

    /// Hands `relayed` to the other instances of the fleet (see [`relays`](Self::relays));
    /// each delivers it if it is theirs to deliver, the others ignore it. The default drops it.
    fn relay<'a>(&'a self, relayed: &'a Relayed) -> BoxFuture<'a, ()> {
        let _ = relayed;
        Box::pin(std::future::ready(()))
    }

    /// What the other instances relay (see [`relays`](Self::relays)): called once by the
    /// endpoint when it serves its first session; it delivers each message to its session if
    /// it holds it (a message for the client only on a standalone stream connected here, an
    /// answer only to a request this instance sent). The default: nothing.
    fn relayed(&self) -> Option<futures::stream::BoxStream<'static, Relayed>> {
        None
    }
}

/// A message relayed between the instances of a fleet (see [`EventStore::relays`]).
///
/// # Examples
///
/// ```
/// use mcpl_core::jsonrpc::{Message, Notification};
/// use mcpl_server::http::event_store::Relayed;
///
/// let log = Notification::new("notifications/message", Some(serde_json::json!({"level": "info", "data": "hi"})));
/// let relayed = Relayed::ToClient { session: "s1".into(), message: Message::Notification(log) };
/// assert_eq!(relayed.session(), "s1");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Relayed {
    /// For the client of `session`, on its standalone stream (open at another instance).
    ToClient {
        /// The session (`Mcp-Session-Id`).
        session: String,
        /// A notification or request from the server.
        message: Message,
    },
    /// The client's answer (a response or error) to a request another instance sent.
    ToServer {
        /// The session (`Mcp-Session-Id`).
        session: String,
        /// The client's response or error.
        message: Message,
    },
}

impl Relayed {
    /// The session the message belongs to.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::jsonrpc::{Message, RequestId, Response};
    /// use mcpl_server::http::event_store::Relayed;
    ///
    /// let answer = Message::Response(Response::new(RequestId::from(7), serde_json::json!({})));
    /// assert_eq!(Relayed::ToServer { session: "s2".into(), message: answer }.session(), "s2");
    /// ```
    pub fn session(&self) -> &str {
        match self {
            Relayed::ToClient { session, .. } | Relayed::ToServer { session, .. } => session,
        }
    }

    /// The message relayed.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::jsonrpc::{Message, RequestId, Response};
    /// use mcpl_server::http::event_store::Relayed;
    ///
    /// let answer = Message::Response(Response::new(RequestId::from(7), serde_json::json!({})));
    /// let relayed = Relayed::ToServer { session: "s2".into(), message: answer.clone() };
    /// assert_eq!(relayed.message(), &answer);
    /// ```
    pub fn message(&self) -> &Message {
        match self {
            Relayed::ToClient { message, .. } | Relayed::ToServer { message, .. } => message,
        }
    }
}

/// How many bytes of events the in-memory store keeps per session by default: 4 MiB.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::http::event_store::DEFAULT_BYTES_PER_SESSION, 4 * 1024 * 1024);
/// ```
pub const DEFAULT_BYTES_PER_SESSION: usize = 4 * 1024 * 1024;

/// How many bytes of events the in-memory store keeps in all by default: 256 MiB.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::http::event_store::DEFAULT_TOTAL_BYTES, 256 * 1024 * 1024);
/// ```
pub const DEFAULT_TOTAL_BYTES: usize = 256 * 1024 * 1024;

/// How long the in-memory store keeps an event by default: 5 minutes.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// assert_eq!(mcpl_server::http::event_store::DEFAULT_EVENT_AGE, Duration::from_secs(300));
/// ```
pub const DEFAULT_EVENT_AGE: Duration = Duration::from_secs(5 * 60);

/// One stored event: its message as JSON (what the stream wrote; decoded again only for a
/// replay).
#[derive(Debug)]
struct Stored {
    seq: u64,
    data: Bytes,
    bytes: usize,
    at: Instant,
}

#[derive(Debug, Default)]
struct SessionEvents {
    streams: HashMap<u64, VecDeque<Stored>, Hasher>,
    bytes: usize,
}

impl SessionEvents {
    /// The stream whose oldest event is the session's oldest.
    fn oldest_stream(&self) -> Option<u64> {
        self.streams
            .iter()
            .filter_map(|(id, e)| e.front().map(|f| (f.at, *id)))
            .min()
            .map(|(_, id)| id)
    }
}

#[derive(Debug, Default)]
struct Events {
    sessions: HashMap<Arc<str>, SessionEvents, Hasher>,
    bytes: usize,
    /// How many events are kept.
    live: usize,
    /// Every event appended, oldest first, for evicting across sessions; entries of events
    /// already removed are skipped (and compacted away when they pile up).
    order: VecDeque<(Arc<str>, u64, u64)>,
}

impl Events {
    /// Removes the oldest event of `stream` of `session`, keeping the byte counts.
    fn pop_front(&mut self, session: &str, stream: u64) {
        let Some(events) = self.sessions.get_mut(session) else { return };
        let Some(queue) = events.streams.get_mut(&stream) else { return };
        if let Some(old) = queue.pop_front() {
            events.bytes -= old.bytes;
            self.bytes -= old.bytes;
            self.live -= 1;
        }
        if queue.is_empty() {
            events.streams.remove(&stream);
        }
    }

    fn is_live(&self, (session, stream, seq): &(Arc<str>, u64, u64)) -> bool {
        self.sessions
            .get(session)
            .and_then(|s| s.streams.get(stream))
            .is_some_and(|q| q.binary_search_by_key(seq, |e| e.seq).is_ok())
    }

    /// Drops what the limits no longer allow: events older than `max_age`, the oldest events
    /// of `session` past its byte limit, and the oldest of all past the total.
    fn enforce(&mut self, session: &str, limits: &Limits, now: Instant) {
        // The session's own: too old, or too many bytes.
        while let Some(events) = self.sessions.get(session) {
            let Some(stream) = events.oldest_stream() else { break };
            let front_at = events.streams.get(&stream).and_then(|q| q.front()).map(|e| e.at);
            let too_old = front_at.is_some_and(|at| now.duration_since(at) > limits.max_age);
            if !too_old && events.bytes <= limits.per_session_bytes {
                break;
            }
            self.pop_front(session, stream);
        }
        // Across sessions: oldest first, until under the total and nothing too old is left
        // at the front.
        while let Some(entry) = self.order.front().cloned() {
            if !self.is_live(&entry) {
                self.order.pop_front();
                continue;
            }
            let (s, stream, _) = &entry;
            let at = self
                .sessions
                .get(s)
                .and_then(|e| e.streams.get(stream))
                .and_then(|q| q.front())
                .map(|e| e.at);
            let too_old = at.is_some_and(|at| now.duration_since(at) > limits.max_age);
            if !too_old && self.bytes <= limits.total_bytes {
                break;
            }
            self.order.pop_front();
            self.pop_front(s, *stream);
            if self.sessions.get(s).is_some_and(|e| e.streams.is_empty()) {
                self.sessions.remove(s);
            }
        }
        // Entries of removed events: dropped once they outnumber the live ones (counted as
        // they come and go: a recount here would walk every session on every append).
        if self.order.len() > 2 * self.live + 1024 {
            let order = std::mem::take(&mut self.order);
            self.order = order.into_iter().filter(|e| self.is_live(e)).collect();
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Limits {
    per_stream: usize,
    per_session_bytes: usize,
    total_bytes: usize,
    max_age: Duration,
}

/// An [`EventStore`] in this process's memory, bounded four ways: the newest `per_stream`
/// events of each stream ([`DEFAULT_EVENTS_PER_STREAM`]), at most
/// [`DEFAULT_BYTES_PER_SESSION`] of events per session and [`DEFAULT_TOTAL_BYTES`] in all
/// (the oldest go first), and none older than [`DEFAULT_EVENT_AGE`]. A stream whose events
/// were dropped cannot be resumed from before them. Sizes are those of the events' JSON.
///
/// # Examples
///
/// ```
/// use mcpl_core::jsonrpc::{Message, Notification};
/// use mcpl_server::http::event_store::{EventPosition, EventStore, InMemoryEventStore};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store = InMemoryEventStore::new(2);
/// let ping: Message = Notification::new("notifications/message", None).into();
/// for seq in 1..=3 {
///     store.append("session", EventPosition { stream: 1, seq }, &ping).await;
/// }
/// // Events after 1-1 were evicted (2 kept per stream): the stream cannot be resumed there.
/// assert!(store.replay_after("session", EventPosition { stream: 1, seq: 1 }).await.is_some());
/// assert!(store.replay_after("session", EventPosition { stream: 1, seq: 0 }).await.is_none());
/// let replay = store.replay_after("session", EventPosition { stream: 1, seq: 2 }).await.unwrap();
/// assert_eq!(replay.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct InMemoryEventStore {
    limits: Limits,
    events: Mutex<Events>,
}

impl Default for InMemoryEventStore {
    fn default() -> Self {
        InMemoryEventStore::new(DEFAULT_EVENTS_PER_STREAM)
    }
}

impl InMemoryEventStore {
    /// A store keeping the newest `per_stream` events of each stream (and the default byte
    /// and age limits).
    ///
    /// # Examples
    ///
    /// ```
    /// let store = mcpl_server::http::event_store::InMemoryEventStore::new(256);
    /// # drop(store);
    /// ```
    pub fn new(per_stream: usize) -> Self {
        InMemoryEventStore {
            limits: Limits {
                per_stream: per_stream.max(1),
                per_session_bytes: DEFAULT_BYTES_PER_SESSION,
                total_bytes: DEFAULT_TOTAL_BYTES,
                max_age: DEFAULT_EVENT_AGE,
            },
            events: Mutex::new(Events::default()),
        }
    }

    /// Keeps at most `bytes` of events per session (the oldest go first). Default:
    /// [`DEFAULT_BYTES_PER_SESSION`].
    ///
    /// # Examples
    ///
    /// ```
    /// let store = mcpl_server::http::event_store::InMemoryEventStore::default().max_session_bytes(1 << 20);
    /// # drop(store);
    /// ```
    #[must_use]
    pub fn max_session_bytes(mut self, bytes: usize) -> Self {
        self.limits.per_session_bytes = bytes;
        self
    }

    /// Keeps at most `bytes` of events in all (the oldest go first). Default:
    /// [`DEFAULT_TOTAL_BYTES`].
    ///
    /// # Examples
    ///
    /// ```
    /// let store = mcpl_server::http::event_store::InMemoryEventStore::default().max_total_bytes(64 << 20);
    /// # drop(store);
    /// ```
    #[must_use]
    pub fn max_total_bytes(mut self, bytes: usize) -> Self {
        self.limits.total_bytes = bytes;
        self
    }

    /// Keeps no event longer than `age`. Default: [`DEFAULT_EVENT_AGE`].
    ///
    /// # Examples
    ///
    /// ```
    /// let store = mcpl_server::http::event_store::InMemoryEventStore::default()
    ///     .max_age(std::time::Duration::from_secs(60));
    /// # drop(store);
    /// ```
    #[must_use]
    pub fn max_age(mut self, age: Duration) -> Self {
        self.limits.max_age = age;
        self
    }

    /// How many bytes of events are kept now, in all.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(mcpl_server::http::event_store::InMemoryEventStore::default().stored_bytes(), 0);
    /// ```
    pub fn stored_bytes(&self) -> usize {
        self.events().bytes
    }

    fn events(&self) -> std::sync::MutexGuard<'_, Events> {
        self.events.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn append_now(&self, session: &str, position: EventPosition, data: Bytes) {
        let bytes = data.len();
        let now = Instant::now();
        let mut events = self.events();
        let key: Arc<str> = match events.sessions.get_key_value(session) {
            Some((key, _)) => key.clone(),
            None => Arc::from(session),
        };
        let state = &mut *events;
        let own = state.sessions.entry(key.clone()).or_default();
        let queue = own.streams.entry(position.stream).or_default();
        let evicted = if queue.len() >= self.limits.per_stream { queue.pop_front() } else { None };
        queue.push_back(Stored { seq: position.seq, data, bytes, at: now });
        own.bytes += bytes;
        state.bytes += bytes;
        state.live += 1;
        if let Some(old) = evicted {
            own.bytes -= old.bytes;
            state.bytes -= old.bytes;
            state.live -= 1;
        }
        state.order.push_back((key, position.stream, position.seq));
        state.enforce(session, &self.limits, now);
    }

    fn replay_now(
        &self,
        session: &str,
        after: EventPosition,
    ) -> Option<Vec<(EventPosition, Message)>> {
        let mut events = self.events();
        events.enforce(session, &self.limits, Instant::now());
        let Some(queue) = events.sessions.get(session).and_then(|s| s.streams.get(&after.stream))
        else {
            // A stream with no events yet is only known if it was primed (seq 0).
            return (after.seq == 0).then(Vec::new);
        };
        // Events after `after` were evicted if the oldest kept one is beyond the next.
        if queue.front().is_some_and(|first| first.seq > after.seq + 1) {
            return None;
        }
        Some(
            queue
                .iter()
                .filter(|e| e.seq > after.seq)
                .filter_map(|e| {
                    // What was stored is JSON this store encoded, or the endpoint did: it reads
                    // back (a store wrapping this one with its own `append_encoded` is trusted
                    // the same way; an event that does not read back is left out).
                    let message = Message::decode(&e.data).ok()?;
                    Some((EventPosition { stream: after.stream, seq: e.seq }, message))
                })
                .collect(),
        )
    }
}

impl EventStore for InMemoryEventStore {
    fn append<'a>(
        &'a self,
        session: &'a str,
        position: EventPosition,
        message: &'a Message,
    ) -> BoxFuture<'a, ()> {
        let data = message.encode();
        self.append_now(session, position, Bytes::from(data));
        Box::pin(std::future::ready(()))
    }

    fn append_encoded<'a>(
        &'a self,
        session: &'a str,
        position: EventPosition,
        _message: &'a Message,
        encoded: &'a Bytes,
    ) -> BoxFuture<'a, ()> {
        self.append_now(session, position, encoded.clone());
        Box::pin(std::future::ready(()))
    }

    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        after: EventPosition,
    ) -> BoxFuture<'a, Option<Vec<(EventPosition, Message)>>> {
        Box::pin(std::future::ready(self.replay_now(session, after)))
    }

    fn remove_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, ()> {
        let mut events = self.events();
        if let Some(gone) = events.sessions.remove(session) {
            events.bytes -= gone.bytes;
            events.live -= gone.streams.values().map(VecDeque::len).sum::<usize>();
        }
        Box::pin(std::future::ready(()))
    }

    fn discard_stream<'a>(&'a self, session: &'a str, stream: u64) -> BoxFuture<'a, ()> {
        let mut events = self.events();
        let state = &mut *events;
        if let Some(own) = state.sessions.get_mut(session) {
            if let Some(queue) = own.streams.remove(&stream) {
                let bytes: usize = queue.iter().map(|e| e.bytes).sum();
                own.bytes -= bytes;
                state.bytes -= bytes;
                state.live -= queue.len();
            }
            if own.streams.is_empty() {
                state.sessions.remove(session);
            }
        }
        Box::pin(std::future::ready(()))
    }
}

#[cfg(test)]
mod tests {
    use mcpl_core::jsonrpc::Notification;

    use super::*;

    fn msg(n: u64) -> Message {
        Notification::new(format!("n{n}"), None).into()
    }

    #[tokio::test]
    async fn replays_after_a_position_and_evicts_oldest() {
        let store = InMemoryEventStore::new(3);
        for seq in 1..=5 {
            store.append("s", EventPosition { stream: 7, seq }, &msg(seq)).await;
        }
        let replay = store.replay_after("s", EventPosition { stream: 7, seq: 3 }).await.unwrap();
        assert_eq!(replay.iter().map(|(p, _)| p.seq).collect::<Vec<_>>(), [4, 5]);
        // Events 2 and 3 were evicted: resuming after 1 cannot be honoured.
        assert!(store.replay_after("s", EventPosition { stream: 7, seq: 1 }).await.is_none());
        assert!(store.replay_after("other", EventPosition { stream: 7, seq: 3 }).await.is_none());
        store.remove_session("s").await;
        assert!(store.replay_after("s", EventPosition { stream: 7, seq: 3 }).await.is_none());
    }

    #[tokio::test]
    async fn an_event_given_encoded_is_kept_as_given_and_replays_as_its_message() {
        let store = InMemoryEventStore::new(8);
        let message = msg(1);
        let encoded = Bytes::from(serde_json::to_vec(&message).unwrap());
        let at = EventPosition { stream: 2, seq: 1 };
        store.append_encoded("s", at, &message, &encoded).await;
        // Counted by the JSON given, shared with the caller rather than copied.
        assert_eq!(store.stored_bytes(), encoded.len());
        assert_eq!(store.events().sessions["s"].streams[&2][0].data.as_ptr(), encoded.as_ptr());
        let replay = store.replay_after("s", EventPosition { stream: 2, seq: 0 }).await.unwrap();
        assert_eq!(replay, vec![(at, message)]);
        // Appending the message itself keeps the same JSON.
        store.append("s", EventPosition { stream: 2, seq: 2 }, &msg(2)).await;
        assert_eq!(store.stored_bytes(), encoded.len() * 2);
    }

    /// The kept events, counted the slow way.
    fn recount(store: &InMemoryEventStore) -> usize {
        let events = store.events();
        events.sessions.values().map(|s| s.streams.values().map(VecDeque::len).sum::<usize>()).sum()
    }

    #[tokio::test]
    async fn the_live_count_follows_every_way_events_go() {
        let store = InMemoryEventStore::new(3);
        for seq in 1..=5 {
            for stream in 1..=3 {
                store.append("a", EventPosition { stream, seq }, &msg(seq)).await;
                store.append("b", EventPosition { stream, seq }, &msg(seq)).await;
            }
        }
        let live = store.events().live;
        assert_eq!(live, recount(&store));
        store.discard_stream("a", 2).await;
        let live = store.events().live;
        assert_eq!(live, recount(&store));
        store.remove_session("b").await;
        let live = store.events().live;
        assert_eq!(live, recount(&store));
        assert_eq!(recount(&store), 6);
    }

    #[tokio::test]
    async fn discarding_a_stream_keeps_the_others() {
        let store = InMemoryEventStore::new(8);
        store.append("s", EventPosition { stream: 1, seq: 1 }, &msg(1)).await;
        store.append("s", EventPosition { stream: 2, seq: 1 }, &msg(2)).await;
        store.discard_stream("s", 1).await;
        assert!(
            store.replay_after("s", EventPosition { stream: 1, seq: 0 }).await.unwrap().is_empty()
        );
        assert!(store.replay_after("s", EventPosition { stream: 1, seq: 1 }).await.is_none());
        assert_eq!(
            store.replay_after("s", EventPosition { stream: 2, seq: 0 }).await.unwrap().len(),
            1
        );
    }

    #[tokio::test]
    async fn bytes_per_session_and_in_all_are_bounded_oldest_first() {
        let big = |n: u64| -> Message {
            Notification::new(format!("n{n}"), Some(serde_json::json!({"pad": "x".repeat(1000)})))
                .into()
        };
        let store = InMemoryEventStore::new(1000).max_session_bytes(5_000).max_total_bytes(8_000);
        // Many abandoned streams of one session: only the newest ~5 KB stay.
        for stream in 1..=20 {
            store.append("a", EventPosition { stream, seq: 1 }, &big(stream)).await;
        }
        assert!(store.stored_bytes() <= 5_000, "{}", store.stored_bytes());
        assert!(
            store.replay_after("a", EventPosition { stream: 1, seq: 0 }).await.unwrap().is_empty()
        );
        assert_eq!(
            store.replay_after("a", EventPosition { stream: 20, seq: 0 }).await.unwrap().len(),
            1
        );
        // Another session pushes the total over: the oldest of all go.
        for stream in 1..=5 {
            store.append("b", EventPosition { stream, seq: 1 }, &big(stream)).await;
        }
        assert!(store.stored_bytes() <= 8_000, "{}", store.stored_bytes());
        assert_eq!(
            store.replay_after("b", EventPosition { stream: 5, seq: 0 }).await.unwrap().len(),
            1
        );
        store.remove_session("a").await;
        store.remove_session("b").await;
        assert_eq!(store.stored_bytes(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn events_older_than_the_age_limit_are_dropped() {
        let store = InMemoryEventStore::default().max_age(Duration::from_secs(60));
        store.append("s", EventPosition { stream: 1, seq: 1 }, &msg(1)).await;
        tokio::time::advance(Duration::from_secs(61)).await;
        store.append("s", EventPosition { stream: 2, seq: 1 }, &msg(2)).await;
        assert!(
            store.replay_after("s", EventPosition { stream: 1, seq: 0 }).await.unwrap().is_empty()
        );
        assert_eq!(
            store.replay_after("s", EventPosition { stream: 2, seq: 0 }).await.unwrap().len(),
            1
        );
    }

    #[tokio::test]
    async fn discarded_streams_leave_no_bookkeeping_behind() {
        let store = InMemoryEventStore::default();
        for stream in 1..=5_000 {
            store.append("s", EventPosition { stream, seq: 1 }, &msg(stream)).await;
            store.discard_stream("s", stream).await;
        }
        assert_eq!(store.stored_bytes(), 0);
        assert!(store.events().order.len() <= 1024 + 2, "{}", store.events().order.len());
    }

    #[test]
    fn event_ids_round_trip() {
        let p = EventPosition { stream: 12, seq: 0 };
        assert_eq!(EventPosition::parse(&p.to_event_id()), Some(p));
        assert_eq!(EventPosition::parse("x-1"), None);
        assert_eq!(EventPosition::parse("1"), None);
    }
}
