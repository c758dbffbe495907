//! The queue of [`HostEvent`]s the embedder reads: bounded, so that a server that floods the
//! host (pushes, diagnostics, reconnects) while the application reads slowly, or not at all,
//! costs a fixed amount of memory.
//!
//! What does not fit is never dropped unseen. A push event is declined (the server keeps it
//! and may send it again later); any other event, which reports state the host can be asked
//! for again ([`Host::servers`](super::Host::servers), its tools), is counted, and the count
//! is queued as one [`HostEvent::Missed`] where those events would have been, as soon as
//! there is room.

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc::{self, error::TrySendError};

use super::{HostEvent, lock};

/// How many events wait for the application by default
/// ([`HostBuilder::event_capacity`](super::HostBuilder::event_capacity)).
pub(crate) const DEFAULT_EVENT_CAPACITY: usize = 1024;

/// The host's end of the events queue (cloned into every connection's handlers).
#[derive(Clone)]
pub(crate) struct EventSender {
    tx: mpsc::Sender<HostEvent>,
    /// What the queue turned away since it last took an event; sends happen under this lock,
    /// so that a `Missed` lands between the events it stands between.
    overflow: Arc<Mutex<Overflow>>,
}

/// What a full queue turned away.
#[derive(Default)]
struct Overflow {
    /// Events dropped since the last one queued.
    missed: u64,
    /// The queue turned an event away (dropped or declined) since it last took one: told
    /// once, when it starts.
    full: bool,
}

impl Overflow {
    /// Notes that an event was turned away: `true` if it is the first since the queue last
    /// took one (the time to say so).
    fn start_turning_away(&mut self) -> bool {
        !std::mem::replace(&mut self.full, true)
    }
}

impl EventSender {
    /// A queue of `capacity` events (at least 2: room for a `Missed` and the next event).
    pub(crate) fn channel(capacity: usize) -> (EventSender, mpsc::Receiver<HostEvent>) {
        let (tx, rx) = mpsc::channel(capacity.max(2));
        (EventSender { tx, overflow: Arc::default() }, rx)
    }

    /// Queues `event`; when the queue is full, counts it as missed (see the module docs).
    pub(crate) fn send(&self, event: HostEvent) {
        let mut overflow = lock(&self.overflow);
        if Self::flush(&self.tx, &mut overflow.missed) {
            match self.tx.try_send(event) {
                Ok(()) | Err(TrySendError::Closed(_)) => {
                    overflow.full = false;
                    return;
                }
                Err(TrySendError::Full(event)) => self.turned_away(&mut overflow, &event),
            }
        } else {
            self.turned_away(&mut overflow, &event);
        }
        overflow.missed += 1;
    }

    /// Queues `event` if there is room; `false` when the queue is full (nothing counted: the
    /// caller turns the event away, as a declined push).
    pub(crate) fn offer(&self, event: HostEvent) -> bool {
        let mut overflow = lock(&self.overflow);
        let event = if Self::flush(&self.tx, &mut overflow.missed) {
            match self.tx.try_send(event) {
                Ok(()) | Err(TrySendError::Closed(_)) => {
                    overflow.full = false;
                    return true;
                }
                Err(TrySendError::Full(event)) => event,
            }
        } else {
            event
        };
        self.turned_away(&mut overflow, &event);
        false
    }

    /// Says once, when the queue starts turning events away, that it does and whose event
    /// was the first.
    fn turned_away(&self, overflow: &mut Overflow, event: &HostEvent) {
        if overflow.start_turning_away() {
            tracing::warn!(
                capacity = self.tx.max_capacity(),
                server = event.server().unwrap_or("-"),
                "host events queue full: push events are declined, other events dropped and \
                 counted, until the application reads"
            );
        }
    }

    /// Queues the `Missed` of the events dropped so far, if any; `false` when there was no
    /// room for it.
    fn flush(tx: &mpsc::Sender<HostEvent>, missed: &mut u64) -> bool {
        if *missed == 0 {
            return true;
        }
        match tx.try_send(HostEvent::Missed { count: *missed }) {
            Ok(()) | Err(TrySendError::Closed(_)) => {
                *missed = 0;
                true
            }
            Err(TrySendError::Full(_)) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn connected(n: usize) -> HostEvent {
        HostEvent::Connected { server: format!("s{n}") }
    }

    fn names(rx: &mut mpsc::Receiver<HostEvent>) -> Vec<String> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|event| match event {
                HostEvent::Connected { server } => server,
                HostEvent::Missed { count } => format!("missed {count}"),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn what_does_not_fit_is_counted_and_told_in_its_place() {
        let (tx, mut rx) = EventSender::channel(3);
        for n in 0..10 {
            tx.send(connected(n));
        }
        assert_eq!(names(&mut rx), ["s0", "s1", "s2"]);
        tx.send(connected(10));
        tx.send(connected(11));
        assert_eq!(names(&mut rx), ["missed 7", "s10", "s11"]);
        tx.send(connected(12));
        assert_eq!(names(&mut rx), ["s12"], "counted once");
    }

    #[test]
    fn a_missed_count_waits_for_room_of_its_own() {
        let (tx, mut rx) = EventSender::channel(2);
        for n in 0..4 {
            tx.send(connected(n));
        }
        assert_eq!(rx.try_recv().ok().map(|_| ()), Some(()));
        // One slot free: the count goes in, the event does not (and is counted anew).
        tx.send(connected(4));
        assert_eq!(names(&mut rx), ["s1", "missed 2"]);
        tx.send(connected(5));
        assert_eq!(names(&mut rx), ["missed 1", "s5"]);
    }

    #[test]
    fn an_offer_is_turned_away_when_full_and_counts_nothing() {
        let (tx, mut rx) = EventSender::channel(2);
        assert!(tx.offer(connected(0)));
        assert!(tx.offer(connected(1)));
        assert!(!tx.offer(connected(2)));
        tx.send(connected(3));
        assert_eq!(names(&mut rx), ["s0", "s1"]);
        assert!(tx.offer(connected(4)), "the count first, then the offer");
        assert_eq!(names(&mut rx), ["missed 1", "s4"]);
    }

    #[test]
    fn a_full_queue_is_told_once_until_it_takes_an_event_again() {
        let (tx, mut rx) = EventSender::channel(2);
        let full = |tx: &EventSender| lock(&tx.overflow).full;
        tx.send(connected(0));
        tx.send(connected(1));
        assert!(!full(&tx));
        // Dropped, then declined: one burst, told when it starts.
        tx.send(connected(2));
        assert!(full(&tx));
        assert!(!lock(&tx.overflow).start_turning_away(), "already told");
        assert!(!tx.offer(connected(3)));
        assert!(full(&tx));
        // Taken again: the next burst is told anew.
        assert_eq!(names(&mut rx), ["s0", "s1"]);
        assert!(tx.offer(connected(4)));
        assert!(!full(&tx));
        assert!(lock(&tx.overflow).start_turning_away());
    }

    #[test]
    fn nobody_reading_is_no_error() {
        let (tx, rx) = EventSender::channel(2);
        drop(rx);
        tx.send(connected(0));
        assert!(tx.offer(connected(1)));
    }
}
