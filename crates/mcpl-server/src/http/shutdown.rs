//! The shutdown signal as connections and requests read it: without a lock.
//!
//! A [`CancellationToken`] takes a lock for every look ([`is_cancelled`]) and for every poll
//! of its [`cancelled`] future, and an endpoint's one token is looked at for every request
//! and polled whenever a connection's task is: with a multi-threaded runtime, every worker
//! takes the same two locks for every request it serves, and the lock's cache line moves
//! between them each time. [`Shutdown`] reads the token once: it waits on it with a waker of
//! its own, which the token wakes from [`cancel`] itself, and keeps a flag and the wakers of
//! what waits for it. A look is then one atomic load, and a poll of [`Fired`] one load and a
//! comparison of wakers; the lock is taken once per waiter, when it first waits and when it
//! is dropped. Nothing here is a maintained crate's: what it wraps is tokio-util's token,
//! which users hand in ([`ConnectionConfig::shutdown_on`]).
//!
//! [`is_cancelled`]: CancellationToken::is_cancelled
//! [`cancelled`]: CancellationToken::cancelled
//! [`cancel`]: CancellationToken::cancel
//! [`ConnectionConfig::shutdown_on`]: super::ConnectionConfig::shutdown_on

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Wake, Waker};

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// What a shutdown token told: clones share it.
#[derive(Clone)]
pub(crate) struct Shutdown {
    inner: Arc<Inner>,
}

struct Inner {
    /// Whether the token was cancelled (set before any waiter is woken).
    fired: AtomicBool,
    /// The wakers of what waits, and the wait on the token.
    waiting: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    wakers: HashMap<u64, Waker>,
    next: u64,
    /// The wait on the token, registered with it (its waker sets `fired`) until this is
    /// dropped.
    _on_cancel: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
}

impl Shutdown {
    /// Follows `token`.
    pub(crate) fn new(token: CancellationToken) -> Shutdown {
        let shutdown = Shutdown::default();
        let inner = &shutdown.inner;
        let mut wait = Box::pin(token.cancelled_owned());
        // Registered with a waker that sets the flag: `cancel` calls it on its own thread.
        let waker = Waker::from(Arc::new(OnCancel(Arc::downgrade(inner))));
        match wait.as_mut().poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(()) => inner.fired.store(true, Ordering::Release),
            Poll::Pending => inner.lock()._on_cancel = Some(wait),
        }
        shutdown
    }

    /// Whether the token was cancelled.
    pub(crate) fn is_fired(&self) -> bool {
        self.inner.fired.load(Ordering::Acquire)
    }

    /// Ready once the token is cancelled.
    pub(crate) fn fired(&self) -> Fired {
        Fired { inner: self.inner.clone(), registered: None }
    }
}

impl fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shutdown").field("fired", &self.is_fired()).finish()
    }
}

/// A signal that never fires (a token nobody holds): no wait on a token to keep.
impl Default for Shutdown {
    fn default() -> Self {
        let inner = Inner { fired: AtomicBool::new(false), waiting: Mutex::default() };
        Shutdown { inner: Arc::new(inner) }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets the flag and wakes every waiter.
    fn fire(&self) {
        self.fired.store(true, Ordering::Release);
        // The token's wait stays until this is dropped: `cancel` is waking it.
        let wakers = std::mem::take(&mut self.lock().wakers);
        // Outside the lock: a woken waiter may poll at once, on this thread.
        for waker in wakers.into_values() {
            waker.wake();
        }
    }
}

/// The waker of the token's wait.
struct OnCancel(Weak<Inner>);

impl Wake for OnCancel {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(inner) = self.0.upgrade() {
            inner.fire();
        }
    }
}

/// The future of [`Shutdown::fired`].
pub(crate) struct Fired {
    inner: Arc<Inner>,
    /// Its key among the waiters, and the waker left there.
    registered: Option<(u64, Waker)>,
}

impl Future for Fired {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.inner.fired.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        if let Some((_, waker)) = &self.registered
            && waker.will_wake(cx.waker())
        {
            return Poll::Pending;
        }
        let this = &mut *self;
        let mut waiting = this.inner.lock();
        // Set before the wakers are taken: seen here if they were taken already.
        if this.inner.fired.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        let key = match &this.registered {
            Some((key, _)) => *key,
            None => {
                waiting.next += 1;
                waiting.next
            }
        };
        waiting.wakers.insert(key, cx.waker().clone());
        drop(waiting);
        this.registered = Some((key, cx.waker().clone()));
        Poll::Pending
    }
}

impl Drop for Fired {
    fn drop(&mut self) {
        if let Some((key, _)) = self.registered.take() {
            self.inner.lock().wakers.remove(&key);
        }
    }
}

impl fmt::Debug for Fired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fired").field("waiting", &self.registered.is_some()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancel_is_seen_at_once_on_the_cancelling_thread() {
        let token = CancellationToken::new();
        let shutdown = Shutdown::new(token.clone());
        assert!(!shutdown.is_fired());
        token.cancel();
        assert!(shutdown.is_fired());
    }

    #[test]
    fn a_token_cancelled_before_is_fired_from_the_start() {
        let token = CancellationToken::new();
        token.cancel();
        assert!(Shutdown::new(token).is_fired());
    }

    #[test]
    fn a_parent_token_cancels_a_child_it_follows() {
        let parent = CancellationToken::new();
        let shutdown = Shutdown::new(parent.child_token());
        parent.cancel();
        assert!(shutdown.is_fired());
    }

    #[tokio::test]
    async fn waiters_are_woken_by_the_cancel_and_deregistered_when_dropped() {
        let token = CancellationToken::new();
        let shutdown = Shutdown::new(token.clone());
        let waiters: Vec<_> = (0..3).map(|_| tokio::spawn(shutdown.fired())).collect();
        let mut dropped = Box::pin(shutdown.fired());
        let mut cx = Context::from_waker(Waker::noop());
        assert!(dropped.as_mut().poll(&mut cx).is_pending());
        tokio::task::yield_now().await;
        // Three spawned, one here: then the one here goes.
        assert_eq!(shutdown.inner.lock().wakers.len(), 4);
        drop(dropped);
        assert_eq!(shutdown.inner.lock().wakers.len(), 3);
        token.cancel();
        for waiter in waiters {
            tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
                .await
                .expect("woken by the cancel")
                .unwrap();
        }
        assert!(shutdown.inner.lock().wakers.is_empty());
        // Once fired, a new waiter is ready at once.
        assert!(Box::pin(shutdown.fired()).as_mut().poll(&mut cx).is_ready());
    }

    #[test]
    fn a_waiter_polled_again_with_another_waker_keeps_one_entry() {
        let shutdown = Shutdown::default();
        let mut fired = Box::pin(shutdown.fired());
        for _ in 0..3 {
            let waker = Waker::from(Arc::new(OnCancel(Weak::new())));
            assert!(fired.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
        }
        assert_eq!(shutdown.inner.lock().wakers.len(), 1);
    }

    #[test]
    fn dropping_every_handle_leaves_the_token_waiting_on_nothing() {
        let token = CancellationToken::new();
        let weak = Arc::downgrade(&Shutdown::new(token.clone()).inner);
        assert!(weak.upgrade().is_none(), "the token's waiter does not keep the signal alive");
        token.cancel();
    }
}
