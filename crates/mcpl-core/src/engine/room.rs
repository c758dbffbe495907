//! [`Room`]: the bound on a connection's outgoing queue, in messages and in bytes (see
//! [`EngineConfig::max_queued_messages`](super::EngineConfig::max_queued_messages) and
//! [`EngineConfig::max_queued_bytes`](super::EngineConfig::max_queued_bytes)).

use tokio::sync::{Semaphore, SemaphorePermit};

use crate::jsonrpc::{Message, RequestId, encoded_len};

/// Room for messages waiting to be written: a message takes one place and its size in bytes
/// until the writer takes it off the queue.
pub(crate) struct Room {
    places: Semaphore,
    bytes: Semaphore,
    /// The byte budget: a message larger than it takes all of it (it waits for an empty queue).
    max_bytes: u32,
}

/// Room held for one message, until it is queued (then it is [`Held`]) or dropped.
pub(crate) struct Reservation<'a> {
    place: SemaphorePermit<'a>,
    bytes: SemaphorePermit<'a>,
}

/// What a queued message holds of its connection's room, given back when it is taken off.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Held {
    places: u32,
    bytes: u32,
}

impl Room {
    pub(crate) fn new(max_messages: usize, max_bytes: usize) -> Room {
        let max_bytes =
            u32::try_from(max_bytes.clamp(1, Semaphore::MAX_PERMITS)).unwrap_or(u32::MAX);
        Room {
            places: Semaphore::new(max_messages.clamp(1, Semaphore::MAX_PERMITS)),
            bytes: Semaphore::new(max_bytes as usize),
            max_bytes,
        }
    }

    /// The share of the byte budget a message of `size` bytes takes.
    fn weight(&self, size: usize) -> u32 {
        u32::try_from(size).unwrap_or(u32::MAX).min(self.max_bytes)
    }

    /// Waits for room for a message of `size` bytes. `None` once the room is closed.
    ///
    /// Cancel safe: dropped before it resolves, it holds nothing.
    pub(crate) async fn reserve(&self, size: usize) -> Option<Reservation<'_>> {
        let place = self.places.acquire().await.ok()?;
        let bytes = self.bytes.acquire_many(self.weight(size)).await.ok()?;
        Some(Reservation { place, bytes })
    }

    /// Room for a message of `size` bytes if there is some now.
    pub(crate) fn try_reserve(&self, size: usize) -> Option<Reservation<'_>> {
        let place = self.places.try_acquire().ok()?;
        let bytes = self.bytes.try_acquire_many(self.weight(size)).ok()?;
        Some(Reservation { place, bytes })
    }

    /// Gives back what a message taken off the queue held.
    pub(crate) fn give_back(&self, held: Held) {
        self.places.add_permits(held.places as usize);
        self.bytes.add_permits(held.bytes as usize);
    }

    /// No more room: waiting senders get `None` (the connection closed).
    pub(crate) fn close(&self) {
        self.places.close();
        self.bytes.close();
    }
}

impl Reservation<'_> {
    /// The room, now held by a queued message (given back with [`Room::give_back`]).
    pub(crate) fn hold(self) -> Held {
        let held = Held {
            places: self.place.num_permits() as u32,
            bytes: self.bytes.num_permits() as u32,
        };
        self.place.forget();
        self.bytes.forget();
        held
    }
}

/// How many bytes `message` takes on the wire, about (its payload, id and method; not the
/// few bytes of JSON-RPC framing): what it weighs in the queue's byte budget.
pub(crate) fn weigh(message: &Message) -> usize {
    fn id_len(id: &RequestId) -> usize {
        match id {
            RequestId::Number(_) => 20,
            RequestId::String(s) => s.len(),
        }
    }
    let payload = |value: Option<&serde_json::Value>| value.map_or(0, encoded_len);
    match message {
        Message::Request(r) => id_len(&r.id) + r.method.len() + payload(r.params.as_ref()),
        Message::Notification(n) => n.method.len() + payload(n.params.as_ref()),
        Message::Response(r) => id_len(&r.id) + r.result.len(),
        Message::Error(e) => {
            e.id.as_ref().map_or(0, id_len) + e.error.message.len() + payload(e.error.data.as_ref())
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::jsonrpc::{ErrorObject, ErrorResponse, Notification, Response};

    #[tokio::test]
    async fn a_message_takes_a_place_and_its_size_until_given_back() {
        let room = Room::new(2, 100);
        let first = room.try_reserve(60).expect("room for the first").hold();
        assert!(room.try_reserve(60).is_none(), "over the byte budget");
        let second = room.try_reserve(40).expect("room for the second").hold();
        assert!(room.try_reserve(0).is_none(), "over the message bound");
        room.give_back(first);
        room.give_back(second);
        assert!(room.try_reserve(100).is_some());
    }

    #[tokio::test]
    async fn a_message_larger_than_the_budget_waits_for_an_empty_queue() {
        let room = Room::new(8, 100);
        let small = room.try_reserve(1).expect("room").hold();
        assert!(room.try_reserve(10_000).is_none());
        room.give_back(small);
        let big = room.reserve(10_000).await.expect("room once empty").hold();
        assert!(room.try_reserve(1).is_none(), "the big one holds the whole budget");
        room.give_back(big);
    }

    #[tokio::test]
    async fn closing_wakes_the_waiting() {
        let room = Room::new(1, 100);
        let _held = room.try_reserve(1).expect("room").hold();
        let (waiting, ()) = tokio::join!(room.reserve(1), async { room.close() });
        assert!(waiting.is_none());
    }

    #[test]
    fn weight_counts_payload_id_and_method() {
        let n: Message = Notification::new("m", Some(json!({"data": "x".repeat(100)}))).into();
        assert!(weigh(&n) > 100);
        let id = RequestId::String("i".repeat(1000));
        let r: Message = Response::new(id.clone(), json!({})).into();
        assert!(weigh(&r) >= 1000);
        let e: Message = ErrorResponse::new(Some(id), ErrorObject::internal("boom")).into();
        assert!(weigh(&e) >= 1004);
    }
}
