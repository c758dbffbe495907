//! [`EventStore`]: where SSE events are kept so a client can resume a stream with
//! `Last-Event-ID`.
//!
//! Every event a session sends on an SSE stream gets an id `<stream>-<sequence>`. A client that
//! lost the connection reconnects with a GET carrying `Last-Event-ID`; the server replays the
//! events of that stream after that id, then continues the stream live if it is still open.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

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
}

/// Events by (session, stream): (sequence, message), oldest first.
type StreamMap = HashMap<(String, u64), VecDeque<(u64, Message)>>;

/// An [`EventStore`] in this process's memory, keeping the newest events of each stream.
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
    per_stream: usize,
    streams: Mutex<StreamMap>,
}

impl Default for InMemoryEventStore {
    fn default() -> Self {
        InMemoryEventStore::new(DEFAULT_EVENTS_PER_STREAM)
    }
}

impl InMemoryEventStore {
    /// A store keeping the newest `per_stream` events of each stream.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = mcpl_server::http::event_store::InMemoryEventStore::new(256);
    /// # drop(store);
    /// ```
    pub fn new(per_stream: usize) -> Self {
        InMemoryEventStore { per_stream: per_stream.max(1), streams: Mutex::new(HashMap::new()) }
    }

    fn streams(&self) -> std::sync::MutexGuard<'_, StreamMap> {
        self.streams.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl InMemoryEventStore {
    fn append_now(&self, session: &str, position: EventPosition, message: &Message) {
        let mut streams = self.streams();
        let events = streams.entry((session.to_owned(), position.stream)).or_default();
        if events.len() == self.per_stream {
            events.pop_front();
        }
        events.push_back((position.seq, message.clone()));
    }

    fn replay_now(
        &self,
        session: &str,
        after: EventPosition,
    ) -> Option<Vec<(EventPosition, Message)>> {
        let streams = self.streams();
        let Some(events) = streams.get(&(session.to_owned(), after.stream)) else {
            // A stream with no events yet is only known if it was primed (seq 0).
            return (after.seq == 0).then(Vec::new);
        };
        // Events after `after` were evicted if the oldest kept one is beyond the next.
        if events.front().is_some_and(|(first, _)| *first > after.seq + 1) {
            return None;
        }
        Some(
            events
                .iter()
                .filter(|(seq, _)| *seq > after.seq)
                .map(|(seq, m)| (EventPosition { stream: after.stream, seq: *seq }, m.clone()))
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
        self.append_now(session, position, message);
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
        self.streams().retain(|(s, _), _| s != session);
        Box::pin(std::future::ready(()))
    }

    fn discard_stream<'a>(&'a self, session: &'a str, stream: u64) -> BoxFuture<'a, ()> {
        self.streams().remove(&(session.to_owned(), stream));
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

    #[test]
    fn event_ids_round_trip() {
        let p = EventPosition { stream: 12, seq: 0 };
        assert_eq!(EventPosition::parse(&p.to_event_id()), Some(p));
        assert_eq!(EventPosition::parse("x-1"), None);
        assert_eq!(EventPosition::parse("1"), None);
    }
}
