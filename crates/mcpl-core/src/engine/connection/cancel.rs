//! [`RequestCancel`]: the cancellation of one incoming request.
//!
//! A [`CancellationToken`] per request (a child of the connection's) cost about 1.5k
//! instructions per request: the child is linked into its parent under the parent's lock and
//! unlinked again, and every clone and drop of a token (the in-flight table, the handler's
//! context, its peer handle, the request's own future) takes the token's lock, as does every
//! poll of `cancelled()`. A request is cancelled by the peer's `notifications/cancelled` or
//! when its connection closes, both of which find it in the connection's in-flight table; so
//! a flag it shares with that table is enough, with a token made only for a handler that asks
//! for one to hand to sub-tasks (see [`RequestContext::cancellation_token`]).
//!
//! [`RequestContext::cancellation_token`]: super::super::RequestContext::cancellation_token

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use futures::task::AtomicWaker;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::engine::handler::AfterAnswer;

/// The cancellation of one incoming request, shared by the connection's in-flight table,
/// the request's future, its handler's context and peer handles. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct RequestCancel(Option<Arc<Signal>>);

impl std::fmt::Debug for RequestCancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestCancel").field("cancelled", &self.is_cancelled()).finish()
    }
}

#[derive(Default)]
struct Signal {
    /// Set once cancelled; its token is the one handed to the handler's sub-tasks.
    flag: CancelFlag,
    /// The request's own future (see [`RequestCancel::poll_cancelled`]).
    waker: AtomicWaker,
    /// Whoever else waits (a handler's `cancelled()`, a request sent from the handler).
    waiters: Notify,
    /// What runs once the request's response was queued (see
    /// [`RequestContext::after_answer`](crate::engine::RequestContext::after_answer)): here,
    /// not in an allocation of its own per request.
    after_answer: AfterAnswer,
}

/// A flag set once, and a [`CancellationToken`] made only when first asked for, cancelled
/// with the flag whichever comes first (a request's cancel, a connection's close).
#[derive(Default)]
pub(crate) struct CancelFlag {
    set: AtomicBool,
    token: OnceLock<CancellationToken>,
}

impl CancelFlag {
    /// Sets the flag and cancels the token, if one was made; `false` if it was set already.
    pub(crate) fn cancel(&self) -> bool {
        if self.set.swap(true, Ordering::SeqCst) {
            return false;
        }
        if let Some(token) = self.token.get() {
            token.cancel();
        }
        true
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.set.load(Ordering::SeqCst)
    }

    /// The token, made by `make` when first asked for; cancelled if the flag is set.
    pub(crate) fn token(&self, make: impl FnOnce() -> CancellationToken) -> CancellationToken {
        let token = self.token.get_or_init(make).clone();
        // A cancel that ran before the token was stored did not see it.
        if self.is_cancelled() {
            token.cancel();
        }
        token
    }
}

impl RequestCancel {
    /// A request that can be cancelled on its own.
    pub(crate) fn new() -> Self {
        Self(Some(Arc::default()))
    }

    /// A request cancelled only with its connection (one served inline, whose connection
    /// lives for it alone): [`cancel`](Self::cancel) does nothing.
    pub(crate) fn with_connection() -> Self {
        Self(None)
    }

    /// Cancels the request: its future and whoever waits are woken, its token (if one was
    /// made) cancelled. Later calls do nothing.
    pub(crate) fn cancel(&self) {
        let Some(signal) = &self.0 else { return };
        if signal.flag.cancel() {
            signal.waker.wake();
            signal.waiters.notify_waiters();
        }
    }

    /// Whether [`cancel`](Self::cancel) was called (the connection's close is not counted:
    /// see [`Connection::is_closed`](super::Connection::is_closed)).
    pub(crate) fn is_cancelled(&self) -> bool {
        self.0.as_ref().is_some_and(|s| s.flag.is_cancelled())
    }

    /// Ready once cancelled. For the request's own future only: it keeps one waker (the last
    /// one polled with); others wait with [`cancelled`](Self::cancelled).
    pub(crate) fn poll_cancelled(&self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(signal) = &self.0 else { return Poll::Pending };
        if signal.flag.is_cancelled() {
            return Poll::Ready(());
        }
        signal.waker.register(cx.waker());
        // A cancel between the check and the registration woke nobody: look again.
        if signal.flag.is_cancelled() { Poll::Ready(()) } else { Poll::Pending }
    }

    /// Registers `f` to run once the request's response was queued; `false` (dropping `f`)
    /// for a request cancelled only with its connection, which has nowhere to keep it.
    pub(crate) fn after_answer(&self, f: Box<dyn FnOnce() + Send>) -> bool {
        let Some(signal) = &self.0 else { return false };
        signal.after_answer.push(f);
        true
    }

    /// Runs (and drops) what [`after_answer`](Self::after_answer) registered so far: once the
    /// request's response was queued.
    pub(crate) fn answered(&self) {
        if let Some(signal) = &self.0 {
            signal.after_answer.run();
        }
    }

    /// Resolves once cancelled (never, for [`with_connection`](Self::with_connection)).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub(crate) async fn cancelled(&self) {
        let Some(signal) = &self.0 else { return std::future::pending().await };
        let notified = signal.waiters.notified();
        tokio::pin!(notified);
        // Registered before the flag is read: a cancel after the read wakes it.
        notified.as_mut().enable();
        if signal.flag.is_cancelled() {
            return;
        }
        notified.await;
    }

    /// The token cancelled with this request, made (as a child of `closed`, the connection's)
    /// when first asked for; `closed` itself for a request cancelled only with its
    /// connection.
    pub(crate) fn token(&self, closed: &CancellationToken) -> CancellationToken {
        let Some(signal) = &self.0 else { return closed.clone() };
        signal.flag.token(|| closed.child_token())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_runs_after_the_answer_is_kept_with_the_cancel_and_runs_once() {
        let cancel = RequestCancel::new();
        let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        for _ in 0..2 {
            let ran = ran.clone();
            // Registered through a clone: every clone shares one list.
            assert!(cancel.clone().after_answer(Box::new(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })));
        }
        cancel.answered();
        cancel.answered();
        assert_eq!(ran.load(Ordering::SeqCst), 2, "each callback ran once");
        // A request cancelled only with its connection has nowhere to keep one.
        assert!(!RequestCancel::with_connection().after_answer(Box::new(|| {})));
    }

    #[tokio::test]
    async fn a_cancel_wakes_the_request_every_waiter_and_its_token() {
        let cancel = RequestCancel::new();
        let closed = CancellationToken::new();
        let token = cancel.token(&closed);
        let waiter = tokio::spawn({
            let cancel = cancel.clone();
            async move { cancel.cancelled().await }
        });
        let own = tokio::spawn({
            let cancel = cancel.clone();
            async move { std::future::poll_fn(|cx| cancel.poll_cancelled(cx)).await }
        });
        tokio::task::yield_now().await;
        assert!(!cancel.is_cancelled() && !token.is_cancelled());
        cancel.cancel();
        waiter.await.unwrap();
        own.await.unwrap();
        assert!(cancel.is_cancelled() && token.is_cancelled());
        // Asked for after the cancel: born cancelled. The connection's token is untouched.
        assert!(cancel.token(&closed).is_cancelled());
        assert!(!closed.is_cancelled());
    }

    #[tokio::test]
    async fn the_token_is_a_child_of_the_connections() {
        let closed = CancellationToken::new();
        let cancel = RequestCancel::new();
        let token = cancel.token(&closed);
        closed.cancel();
        assert!(token.is_cancelled());
        // The flag is the request's own: the connection's close is read from the connection.
        assert!(!cancel.is_cancelled());
    }

    #[tokio::test]
    async fn one_cancelled_with_its_connection_ignores_cancel_and_lends_the_connections_token() {
        let closed = CancellationToken::new();
        let cancel = RequestCancel::with_connection();
        cancel.cancel();
        assert!(!cancel.is_cancelled());
        let pending =
            tokio::time::timeout(std::time::Duration::from_millis(20), cancel.cancelled());
        assert!(pending.await.is_err());
        let token = cancel.token(&closed);
        closed.cancel();
        assert!(token.is_cancelled());
    }
}
