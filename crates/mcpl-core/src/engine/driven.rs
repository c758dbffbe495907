//! Connections driven by their owner: no reader, writer or notifier task of their own.
//!
//! A transport that already has a task for each incoming message (an HTTP server answering a
//! POST, say) hands the message to [`Driven::deliver`] on that task. Outgoing messages go into
//! a queue that a short-lived task drains, in order, only while there is something to send. An
//! idle driven connection is its tables and nothing else: no task, no channel.

use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Poll, ready};

use tokio::task::JoinHandle;

use super::connection::{AnswerVia, Connection, Outbound, Received, write_within};
use super::{CloseReason, Peer, lock};
use crate::engine::BoxFuture;
use crate::error::{Error, Result};
use crate::jsonrpc::{Message, Request, RequestId};
use crate::transport::TransportSender;

/// A [`TransportSender`] behind a pointer, so a connection can hold any sender.
pub(crate) trait DynSender: Send {
    fn send_related(
        &mut self,
        message: Message,
        related: Option<RequestId>,
    ) -> BoxFuture<'_, Result<()>>;
    fn close(self: Box<Self>) -> BoxFuture<'static, Result<()>>;
}

impl<S: TransportSender> DynSender for S {
    fn send_related(
        &mut self,
        message: Message,
        related: Option<RequestId>,
    ) -> BoxFuture<'_, Result<()>> {
        Box::pin(TransportSender::send_related(self, message, related))
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, Result<()>> {
        Box::pin(TransportSender::close(*self))
    }
}

#[derive(Default)]
struct QueueState {
    items: VecDeque<Outbound>,
    /// The sender, while no drain task holds it.
    sender: Option<Box<dyn DynSender>>,
    /// Whether a drain task is running.
    draining: bool,
    /// Whether the connection closed: the sender is closed once the queue is empty.
    closing: bool,
}

/// The outgoing queue of a driven connection.
pub(crate) struct Queue {
    state: Arc<Mutex<QueueState>>,
}

impl Queue {
    fn new<S: TransportSender>(sender: S) -> Queue {
        let state = QueueState { sender: Some(Box::new(sender)), ..QueueState::default() };
        Queue { state: Arc::new(Mutex::new(state)) }
    }

    /// Queues a message; starts a drain task unless one runs.
    pub(crate) fn push(&self, conn: &Arc<Connection>, item: Outbound) {
        let start = {
            let mut state = lock(&self.state);
            state.items.push_back(item);
            !std::mem::replace(&mut state.draining, true)
        };
        if start {
            self.spawn_drain(conn);
        }
    }

    /// Starts a drain task (`draining` is set): what is queued goes out in order.
    fn spawn_drain(&self, conn: &Arc<Connection>) {
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let timeout = conn.write_timeout();
                handle.spawn(drain(self.state.clone(), Arc::downgrade(conn), timeout));
            }
            Err(_) => {
                tracing::warn!("driven connection used outside a Tokio runtime; message dropped");
                let mut state = lock(&self.state);
                state.items.clear();
                state.draining = false;
            }
        }
    }

    /// The sender, if nothing waits in the queue and no drain task runs: the caller sends
    /// with it ([`send_taken`](Self::send_taken)); meanwhile what others queue waits.
    pub(crate) fn take_idle(&self) -> Option<Box<dyn DynSender>> {
        let mut state = lock(&self.state);
        if state.draining || state.closing || !state.items.is_empty() {
            return None;
        }
        let sender = state.sender.take();
        state.draining = sender.is_some();
        sender
    }

    /// Sends `item` on the caller's task with the `sender` [`take_idle`](Self::take_idle)
    /// gave, then hands the sender back; what others queued meanwhile is drained by a task of
    /// its own, so the caller waits for its own message only.
    pub(crate) async fn send_taken(
        &self,
        conn: &Arc<Connection>,
        sender: Box<dyn DynSender>,
        item: Outbound,
    ) {
        let (timeout, weak) = (conn.write_timeout(), Arc::downgrade(conn));
        if let Drained::HandOff = drain_with(&self.state, &weak, timeout, sender, Some(item)).await
        {
            self.spawn_drain(conn);
        }
    }

    /// Marks the queue closed. Returns a task closing the sender after what is queued was
    /// sent, unless a drain task is running (which then closes it when done).
    pub(crate) fn close(&self) -> Option<JoinHandle<Result<()>>> {
        let mut state = lock(&self.state);
        state.closing = true;
        if state.draining {
            return None;
        }
        let sender = state.sender.take()?;
        let items = std::mem::take(&mut state.items);
        drop(state);
        Some(tokio::spawn(async move {
            let mut sender = sender;
            for item in items {
                if sender.send_related(item.message, item.related).await.is_err() {
                    break;
                }
            }
            sender.close().await
        }))
    }
}

/// Sends what is queued, in order, each write within `timeout` (if any), then ends (handing
/// the sender back).
async fn drain(
    state: Arc<Mutex<QueueState>>,
    conn: Weak<Connection>,
    timeout: Option<std::time::Duration>,
) {
    let Some(sender) = lock(&state).sender.take() else {
        lock(&state).draining = false;
        return;
    };
    drain_with(&state, &conn, timeout, sender, None).await;
}

/// How [`drain_with`] ended.
enum Drained {
    /// Nothing left, or the sender closed.
    Done,
    /// `first` was sent and more is queued: the caller starts a [`drain`] task for it (the
    /// sender is back in the state, `draining` still set).
    HandOff,
}

/// [`drain`] with the sender taken (and `draining` set): `first` first, then what is queued.
/// Given a `first`, it sends that one only and leaves the rest to a task of its own.
async fn drain_with(
    state: &Mutex<QueueState>,
    conn: &Weak<Connection>,
    timeout: Option<std::time::Duration>,
    mut sender: Box<dyn DynSender>,
    mut first: Option<Outbound>,
) -> Drained {
    // Past `first` (sent on the first turn), the rest is left to a task of its own.
    let hand_off = first.is_some();
    loop {
        let next = match first.take() {
            Some(item) => Some(item),
            None => {
                let mut s = lock(state);
                if hand_off && !s.items.is_empty() {
                    // The caller's own message is out; others' go on a task of their own
                    // (which takes the sender back; `draining` stays set meanwhile).
                    s.sender = Some(sender);
                    return Drained::HandOff;
                }
                match s.items.pop_front() {
                    Some(item) => Some(item),
                    None => {
                        s.draining = false;
                        // An idle connection holds no queue memory.
                        s.items = VecDeque::new();
                        if !s.closing {
                            s.sender = Some(sender);
                            return Drained::Done;
                        }
                        None
                    }
                }
            }
        };
        let Some(item) = next else {
            // Closed while draining: this task closes the sender.
            if let Err(e) = sender.close().await {
                tracing::debug!(error = %e, "closing a driven connection's sender failed");
            }
            return Drained::Done;
        };
        if let Some(conn) = conn.upgrade() {
            conn.taken(&item);
        }
        let send = sender.send_related(item.message, item.related);
        if let Err(e) = write_within(send, timeout, conn).await {
            tracing::debug!(error = %e, "transport send failed");
            {
                let mut s = lock(state);
                s.items.clear();
                s.draining = false;
                s.closing = true;
            }
            if let Some(conn) = conn.upgrade() {
                conn.lost(CloseReason::Failed(Arc::new(e)));
            }
            let _ = sender.close().await;
            return Drained::Done;
        }
    }
}

/// A connection driven by its owner: no reader, writer or notifier task of its own.
///
/// A transport that already has a task for each incoming message (an HTTP server answering a
/// POST, say) hands the message to [`Driven::deliver`] on that task. Outgoing messages go into
/// a queue that a short-lived task drains, in order, only while there is something to send. An
/// idle driven connection is its tables and nothing else: no task, no channel.
///
/// Made by [`embed::drive`](super::embed::drive); handlers are the engine's. Closing (or
/// dropping) it ends the connection: in-flight handlers are cancelled, pending requests settle
/// with `ConnectionClosed`, and the sender is closed once what was queued is sent.
pub struct Driven {
    conn: Arc<Connection>,
}

impl fmt::Debug for Driven {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driven")
            .field("generation", &self.conn.generation)
            .field("closed", &self.conn.is_closed())
            .finish()
    }
}

impl Driven {
    pub(crate) fn new<S: TransportSender>(
        generation: u64,
        shared: &Arc<super::Shared>,
        sender: S,
        data: Option<Arc<dyn Any + Send + Sync>>,
    ) -> Driven {
        Driven { conn: Connection::driven(generation, shared, Queue::new(sender), data) }
    }

    /// Handles one incoming message, on the caller's task.
    ///
    /// A request starts its handler (in a task of its own) and returns at once; a response
    /// settles the request it answers; `notifications/cancelled` and `notifications/progress`
    /// are acted on; any other notification runs its handler to completion before this
    /// returns, so notifications delivered one after another are handled in order. A request
    /// answered at once (no handler, a duplicate id, over the in-flight limit) waits for room
    /// in the outgoing queue for its answer.
    ///
    /// # Errors
    ///
    /// `ConnectionClosed` if the connection has closed.
    pub async fn deliver(&self, message: Message) -> Result<()> {
        let conn = &self.conn;
        if conn.is_closed() {
            return Err(Error::ConnectionClosed);
        }
        match conn.receive(message) {
            Received::Done => Ok(()),
            Received::Notification(notification) => {
                conn.notified(notification).await;
                Ok(())
            }
            Received::Answer(answer) => conn.answer_now(answer).await,
        }
    }

    /// Serves the incoming `request` on the caller's task: the returned future runs its
    /// handler and sends its answer through the connection's sender (when nothing waits in
    /// the outgoing queue before it; else the answer is queued behind), with no task spawned
    /// and no hop to another task. A request that cannot run (no handler, a duplicate id, over
    /// the in-flight limit) gets its refusal the same way, once there is room for it.
    ///
    /// What the handler sends meanwhile (progress, requests of the peer) goes through the
    /// queue as with [`deliver`](Self::deliver). Dropping the future before it is done does
    /// not cancel the request: the handler goes on in a task of its own and its answer is
    /// queued (cancelling is the peer's `notifications/cancelled`, or closing).
    ///
    /// # Errors
    ///
    /// `ConnectionClosed` if the connection has closed.
    pub fn serve(&self, request: Request) -> Result<Serving> {
        let conn = &self.conn;
        if conn.is_closed() {
            return Err(Error::ConnectionClosed);
        }
        let serve: BoxFuture<'static, ()> = match conn.admit_request(request, AnswerVia::Here) {
            Ok(serve) => Box::pin(serve),
            Err(refusal) => {
                let conn = conn.clone();
                Box::pin(async move {
                    if let Err(e) = conn.answer_now(refusal).await {
                        tracing::debug!(error = %e, "refusal not sent: the connection closed");
                    }
                })
            }
        };
        Ok(Serving { serve: Some(serve) })
    }

    /// A handle for sending requests and notifications to the peer.
    pub fn peer(&self) -> Peer {
        Peer { conn: self.conn.clone(), related: None, served: None }
    }

    /// The data attached with [`embed::drive_with`](super::embed::drive_with), if it is a `T`.
    pub fn data<T: Any>(&self) -> Option<&T> {
        self.conn.data()
    }

    /// Whether the connection has closed.
    pub fn is_closed(&self) -> bool {
        self.conn.is_closed()
    }

    /// Ends the connection (see the type's documentation).
    ///
    /// # Errors
    ///
    /// The sender's close error (bounded by the engine's close timeout).
    pub async fn close(&self) -> Result<()> {
        self.conn.teardown(CloseReason::Local).await
    }
}

/// A request being served on its caller's task: see [`Driven::serve`]. Dropped before it is
/// done, it goes on in a task of its own.
#[must_use = "the request is served as the future is polled (or once it is dropped)"]
pub struct Serving {
    serve: Option<BoxFuture<'static, ()>>,
}

impl fmt::Debug for Serving {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Serving").field("done", &self.serve.is_none()).finish()
    }
}

impl Future for Serving {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        let Some(serve) = self.serve.as_mut() else { return Poll::Ready(()) };
        ready!(serve.as_mut().poll(cx));
        self.serve = None;
        Poll::Ready(())
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        // The caller stopped waiting (its HTTP client went away, say): that is no cancel.
        if let Some(serve) = self.serve.take()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            handle.spawn(serve);
        }
    }
}

impl Drop for Driven {
    fn drop(&mut self) {
        if self.conn.is_closed() {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let conn = self.conn.clone();
            handle.spawn(async move {
                let _ = conn.teardown(CloseReason::Local).await;
            });
        }
    }
}
