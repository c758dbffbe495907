//! What a request served inline sends while its handler runs (progress, log messages), held
//! in its connection for the caller to forward: a queue and a waker, not a channel, so that
//! the usual such request, which sends nothing but its answer, allocates nothing for it.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::task::{Context, Poll};

use futures::task::AtomicWaker;

use super::super::lock;
use super::Outbound;

/// Messages waiting for the caller of an inline-served request to forward them. Unbounded by
/// itself: what goes in was weighed against the connection's room first (see
/// [`super::Connection::send_now`]).
#[derive(Default)]
pub(crate) struct Outbox {
    queue: Mutex<VecDeque<Outbound>>,
    /// The caller's task, woken when something arrives from another task (a sub-task the
    /// handler spawned).
    waker: AtomicWaker,
}

impl Outbox {
    /// Queues `item` and wakes the caller.
    pub(crate) fn push(&self, item: Outbound) {
        lock(&self.queue).push_back(item);
        self.waker.wake();
    }

    /// The oldest item, if any.
    pub(crate) fn try_pop(&self) -> Option<Outbound> {
        lock(&self.queue).pop_front()
    }

    /// The oldest item, once there is one.
    pub(crate) fn poll_pop(&self, cx: &mut Context<'_>) -> Poll<Outbound> {
        if let Some(item) = self.try_pop() {
            return Poll::Ready(item);
        }
        self.waker.register(cx.waker());
        // Pushed between the first look and the registration: seen now.
        match self.try_pop() {
            Some(item) => Poll::Ready(item),
            None => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Wake, Waker};

    use super::*;
    use crate::jsonrpc::{Message, Notification};

    struct Counted(AtomicUsize);

    impl Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn item(method: &str) -> Outbound {
        Outbound {
            message: Message::Notification(Notification::new(method, None)),
            related: None,
            held: Default::default(),
        }
    }

    fn method(item: &Outbound) -> &str {
        match &item.message {
            Message::Notification(n) => &n.method,
            _ => "",
        }
    }

    #[test]
    fn items_come_out_in_order_and_a_waiting_caller_is_woken() {
        let outbox = Outbox::default();
        let wakes = Arc::new(Counted(AtomicUsize::new(0)));
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(outbox.poll_pop(&mut cx).is_pending());
        outbox.push(item("a"));
        outbox.push(item("b"));
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1, "woken once: the waker is taken");
        let Poll::Ready(first) = outbox.poll_pop(&mut cx) else { panic!("an item") };
        assert_eq!(method(&first), "a");
        assert_eq!(outbox.try_pop().as_ref().map(method), Some("b"));
        assert!(outbox.try_pop().is_none());
    }
}
