//! Connections driven by their owner: no reader, writer or notifier task of their own.
//!
//! A transport that already has a task for each incoming message (an HTTP server answering a
//! POST, say) hands the message to [`Driven::deliver`] on that task. Outgoing messages go into
//! a queue that a short-lived task drains, in order, only while there is something to send. An
//! idle driven connection is its tables and nothing else: no task, no channel.

use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use tokio::task::JoinHandle;

use super::connection::{Connection, Outbound, Received, write_within};
use super::{CloseReason, Peer, lock};
use crate::engine::BoxFuture;
use crate::error::{Error, Result};
use crate::jsonrpc::{Message, RequestId};
use crate::transport::TransportSender;

/// A [`TransportSender`] behind a pointer, so a connection can hold any sender.
trait DynSender: Send {
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
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => {
                    let timeout = conn.write_timeout();
                    handle.spawn(drain(self.state.clone(), Arc::downgrade(conn), timeout));
                }
                Err(_) => {
                    tracing::warn!(
                        "driven connection used outside a Tokio runtime; message dropped"
                    );
                    let mut state = lock(&self.state);
                    state.items.clear();
                    state.draining = false;
                }
            }
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
    let Some(mut sender) = lock(&state).sender.take() else {
        lock(&state).draining = false;
        return;
    };
    loop {
        let next = {
            let mut s = lock(&state);
            match s.items.pop_front() {
                Some(item) => Some(item),
                None => {
                    s.draining = false;
                    // An idle connection holds no queue memory.
                    s.items = VecDeque::new();
                    if !s.closing {
                        s.sender = Some(sender);
                        return;
                    }
                    None
                }
            }
        };
        let Some(item) = next else {
            // Closed while draining: this task closes the sender.
            if let Err(e) = sender.close().await {
                tracing::debug!(error = %e, "closing a driven connection's sender failed");
            }
            return;
        };
        if let Some(conn) = conn.upgrade() {
            conn.taken(&item);
        }
        let send = sender.send_related(item.message, item.related);
        if let Err(e) = write_within(send, timeout, &conn).await {
            tracing::debug!(error = %e, "transport send failed");
            {
                let mut s = lock(&state);
                s.items.clear();
                s.draining = false;
                s.closing = true;
            }
            if let Some(conn) = conn.upgrade() {
                conn.lost(CloseReason::Failed(Arc::new(e)));
            }
            let _ = sender.close().await;
            return;
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
