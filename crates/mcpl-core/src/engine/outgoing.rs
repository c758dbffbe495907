//! A connection's outgoing queue: what it has to write goes out in order, sent on the task of
//! whoever sends it when nothing waits before it, else by a short-lived drain task.
//!
//! A connection has no writer task of its own. A sender that finds the queue idle takes the
//! transport's sender and writes on its own task ([`Queue::take_idle`], [`Queue::sending`]):
//! a client's request or a handler's answer reaches the transport with no hop to another task.
//! What others queue meanwhile waits and is drained, in order, by a task spawned while there
//! is something to send. An idle connection holds the sender and nothing else.
//!
//! A write once started is finished: a sending future dropped halfway ([`Sending`]) goes on
//! in a task of its own, so a byte stream (stdio, a socket) never carries half a message. The
//! reader task never writes this way (it queues): a reader blocked on a peer that does not
//! read would stop reading that peer, and two such peers would wait for each other.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Poll, ready};

use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::connection::{Connection, Outbound, write_within};
use super::room::Held;
use super::{CloseReason, lock};
use crate::engine::BoxFuture;
use crate::error::{Error, Result};
use crate::jsonrpc::{Message, RequestId};
use crate::transport::{ApartSender, SendApart, TransportSender, WriteNow};

/// A [`TransportSender`] behind a pointer, so a connection can hold any sender.
pub(crate) trait DynSender: Send {
    fn send_related(
        &mut self,
        message: Message,
        related: Option<RequestId>,
    ) -> BoxFuture<'_, Result<()>>;
    fn send_apart(
        &mut self,
        message: Message,
        related: Option<RequestId>,
    ) -> std::result::Result<SendApart, (Message, Option<RequestId>)>;
    fn write_now(&mut self, message: &Message, related: Option<&RequestId>) -> WriteNow;
    fn finish(&mut self) -> BoxFuture<'_, Result<()>>;
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

    fn send_apart(
        &mut self,
        message: Message,
        related: Option<RequestId>,
    ) -> std::result::Result<SendApart, (Message, Option<RequestId>)> {
        TransportSender::send_apart(self, message, related)
    }

    fn write_now(&mut self, message: &Message, related: Option<&RequestId>) -> WriteNow {
        TransportSender::write_now(self, message, related)
    }

    fn finish(&mut self) -> BoxFuture<'_, Result<()>> {
        Box::pin(TransportSender::finish(self))
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, Result<()>> {
        Box::pin(TransportSender::close(*self))
    }
}

#[derive(Default)]
struct QueueState {
    items: VecDeque<Outbound>,
    /// The sender, while nobody sends with it.
    sender: Option<Box<dyn DynSender>>,
    /// Whether someone (a drain task, or a caller with [`Queue::take_idle`]) holds the sender.
    draining: bool,
    /// Whether the connection closed: the sender is closed once the queue is empty.
    closing: bool,
    /// Told how closing the sender went, by whoever holds it when the connection closes.
    closed: Option<oneshot::Sender<Result<()>>>,
}

/// The outgoing queue of a connection.
pub(crate) struct Queue {
    state: Arc<Mutex<QueueState>>,
    /// What starts sends apart with no turn at the sender, if the transport has it. Boxed, a
    /// thin pointer: every connection holds a queue (see `an_outlet_is_two_words`).
    apart: Option<Box<Arc<dyn ApartSender>>>,
}

impl Queue {
    pub(crate) fn new<S: TransportSender>(sender: S) -> Queue {
        let apart = sender.apart_sender().map(Box::new);
        let state = QueueState { sender: Some(Box::new(sender)), ..QueueState::default() };
        Queue { state: Arc::new(Mutex::new(state)), apart }
    }

    /// Whether the transport starts sends apart with no turn at the sender (see
    /// [`send_apart_now`](Self::send_apart_now)).
    pub(crate) fn sends_apart(&self) -> bool {
        self.apart.is_some()
    }

    /// Starts `message` apart on the caller's task with no turn at the sender (see
    /// [`ApartSender`]), when the transport can and nothing waits to go out before it (nothing
    /// queued, nobody sending: what is sent in order keeps its order); else gives it back.
    pub(crate) fn send_apart_now(
        &self,
        conn: &Arc<Connection>,
        message: Message,
        related: Option<RequestId>,
    ) -> std::result::Result<Sending, (Message, Option<RequestId>)> {
        let Some(apart) = &self.apart else { return Err((message, related)) };
        {
            let state = lock(&self.state);
            if state.draining || state.closing || !state.items.is_empty() {
                return Err((message, related));
            }
        }
        let send = apart.send_apart(message, related)?;
        Ok(Sending(Some(Transfer::Apart(send, Arc::downgrade(conn)))))
    }

    /// Queues a message; starts a drain task unless the sender is in use.
    pub(crate) fn push(&self, conn: &Arc<Connection>, item: Outbound) {
        let start = {
            let mut state = lock(&self.state);
            state.items.push_back(item);
            !std::mem::replace(&mut state.draining, true)
        };
        if start {
            spawn_drain(&self.state, conn);
        }
    }

    /// The sender, if nothing waits in the queue and nobody sends: the caller sends with it
    /// ([`sending`](Self::sending)); meanwhile what others queue waits.
    pub(crate) fn take_idle(&self) -> Option<Box<dyn DynSender>> {
        let mut state = lock(&self.state);
        if state.draining || state.closing || !state.items.is_empty() {
            return None;
        }
        let sender = state.sender.take();
        state.draining = sender.is_some();
        sender
    }

    /// Sends `item` with the `sender` [`take_idle`](Self::take_idle) gave, on the task that
    /// polls the returned future, then hands the sender back; what others queued meanwhile is
    /// drained by a task of its own, so the caller waits for its own message only. A message
    /// the transport sends apart ([`TransportSender::send_apart`]) hands the sender back at
    /// once and is then sent on this task while others send; an answer it ends with settles
    /// its request here. Dropped before it is done, the send goes on in a task of its own.
    pub(crate) fn sending(
        &self,
        conn: &Arc<Connection>,
        mut sender: Box<dyn DynSender>,
        item: Outbound,
    ) -> Sending {
        conn.taken(&item);
        let Outbound { message, related, .. } = item;
        let item = match sender.send_apart(message, related) {
            Ok(apart) => {
                hand_back(&self.state, &Arc::downgrade(conn), conn.write_timeout(), sender);
                return Sending(Some(Transfer::Apart(apart, Arc::downgrade(conn))));
            }
            Err((message, related)) => Outbound { message, related, held: Held::default() },
        };
        // Written when first polled, not here: what the caller does before it awaits the
        // send (a request's entry in the pending table, an answered request leaving the
        // in-flight table) happens before the peer can see the message.
        Sending(Some(Transfer::Unstarted(Unstarted {
            state: self.state.clone(),
            conn: Arc::downgrade(conn),
            timeout: conn.write_timeout(),
            sender,
            item,
        })))
    }

    /// Marks the queue closed: the sender is closed once what is queued was sent (each write
    /// within `timeout`, if any), by a task of its own or by whoever sends with it now. `None`
    /// if it was closed already.
    pub(crate) fn close(&self, timeout: Option<Duration>) -> Option<Closing> {
        let mut state = lock(&self.state);
        state.closing = true;
        if state.draining {
            let (tx, rx) = oneshot::channel();
            state.closed = Some(tx);
            return Some(Closing::Told(rx));
        }
        let sender = state.sender.take()?;
        let items = std::mem::take(&mut state.items);
        drop(state);
        Some(Closing::Task(tokio::spawn(async move {
            let mut sender = sender;
            for item in items {
                let send = sender.send_related(item.message, item.related);
                let sent = match timeout {
                    Some(timeout) => tokio::time::timeout(timeout, send)
                        .await
                        .unwrap_or(Err(Error::ConnectionClosed)),
                    None => send.await,
                };
                if sent.is_err() {
                    break;
                }
            }
            sender.close().await
        })))
    }
}

/// The sender of a closed connection closing: see [`Queue::close`].
pub(crate) enum Closing {
    /// A task of its own sends what was queued and closes the sender.
    Task(JoinHandle<Result<()>>),
    /// Whoever held the sender closes it when done, and says how it went.
    Told(oneshot::Receiver<Result<()>>),
}

impl Closing {
    /// Waits for the sender to be closed, at most `bound` (then it is abandoned).
    pub(crate) async fn within(self, bound: Duration) -> Result<()> {
        let late = || Error::Transport {
            context: format!("transport close did not finish within {bound:?}"),
            source: None,
        };
        match self {
            Closing::Task(task) => {
                let abort = task.abort_handle();
                match tokio::time::timeout(bound, task).await {
                    Ok(Ok(result)) => result,
                    Ok(Err(join)) => Err(Error::transport("transport close task failed", join)),
                    Err(_) => {
                        abort.abort();
                        Err(late())
                    }
                }
            }
            Closing::Told(told) => match tokio::time::timeout(bound, told).await {
                Ok(Ok(result)) => result,
                // The holder is gone without a word (its task was dropped with the runtime).
                Ok(Err(_)) => Ok(()),
                Err(_) => Err(late()),
            },
        }
    }
}

/// Gives the sender back after a message went apart or out at once: others' messages queued
/// meanwhile are drained by a task of their own; a connection that closed meanwhile has it
/// closed there.
fn hand_back(
    state: &Arc<Mutex<QueueState>>,
    conn: &Weak<Connection>,
    timeout: Option<Duration>,
    sender: Box<dyn DynSender>,
) {
    let mut s = lock(state);
    s.sender = Some(sender);
    if s.items.is_empty() && !s.closing {
        s.draining = false;
        return;
    }
    drop(s);
    // `draining` stays set: the drain task sends what waits (and closes the sender if the
    // connection closed).
    spawn_drain_for(state, conn, timeout);
}

/// Starts a drain task (`draining` is set): what is queued goes out in order.
fn spawn_drain(state: &Arc<Mutex<QueueState>>, conn: &Arc<Connection>) {
    spawn_drain_for(state, &Arc::downgrade(conn), conn.write_timeout());
}

/// [`spawn_drain`], each write within `timeout` (if any).
fn spawn_drain_for(
    state: &Arc<Mutex<QueueState>>,
    conn: &Weak<Connection>,
    timeout: Option<Duration>,
) {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn(drain(state.clone(), conn.clone(), timeout));
        }
        Err(_) => {
            tracing::warn!("connection used outside a Tokio runtime; message dropped");
            let mut state = lock(state);
            state.items.clear();
            state.draining = false;
        }
    }
}

/// A message being sent on its caller's task: see [`Queue::sending`]. Dropped before it is
/// done, the send goes on in a task of its own.
#[must_use = "the message is sent as the future is polled (or once it is dropped)"]
pub(crate) struct Sending(Option<Transfer>);

/// What a [`Sending`] runs.
enum Transfer {
    /// A write with the connection's sender not yet started.
    Unstarted(Unstarted),
    /// A write with the connection's sender (then what others queued meanwhile).
    Written(BoxFuture<'static, ()>),
    /// A send apart from the sender, whose answer (if it ends with one) settles its request
    /// on the connection.
    Apart(SendApart, Weak<Connection>),
}

/// A message to write with the sender a [`Queue::take_idle`] gave.
struct Unstarted {
    state: Arc<Mutex<QueueState>>,
    conn: Weak<Connection>,
    timeout: Option<Duration>,
    sender: Box<dyn DynSender>,
    item: Outbound,
}

impl Unstarted {
    /// Writes the message at once if the transport can ([`TransportSender::write_now`]),
    /// handing the sender back; else the write (or the rest of it) as a future of its own.
    fn start(self) -> Option<BoxFuture<'static, ()>> {
        let Unstarted { state, conn, timeout, mut sender, item } = self;
        let first = match sender.write_now(&item.message, item.related.as_ref()) {
            WriteNow::Written => {
                hand_back(&state, &conn, timeout, sender);
                return None;
            }
            WriteNow::Started => First::Finish,
            WriteNow::NotWritten => First::Send(item),
        };
        Some(self::write(state, conn, timeout, sender, first))
    }

    /// The write as a future of its own, started with nothing written.
    fn into_write(self) -> BoxFuture<'static, ()> {
        let Unstarted { state, conn, timeout, sender, item } = self;
        write(state, conn, timeout, sender, First::Send(item))
    }
}

/// [`drain_with`] for the caller's own message, boxed as it is made (an `async` block around
/// it would hold the message and the sender twice: as what it captured and again in what it
/// awaits).
fn write(
    state: Arc<Mutex<QueueState>>,
    conn: Weak<Connection>,
    timeout: Option<Duration>,
    sender: Box<dyn DynSender>,
    first: First,
) -> BoxFuture<'static, ()> {
    Box::pin(drain_with(state, conn, timeout, sender, Some(first)))
}

/// Settles the request `answer` answers, if the connection is still there.
fn settle_apart(answer: Option<Message>, conn: &Weak<Connection>) {
    if let (Some(answer), Some(conn)) = (answer, conn.upgrade()) {
        conn.answered(answer);
    }
}

impl Sending {
    /// A send that is over (nothing to send).
    pub(crate) fn done() -> Sending {
        Sending(None)
    }

    /// Whether the message went out (or there was none).
    pub(crate) fn is_done(&self) -> bool {
        self.0.is_none()
    }
}

impl fmt::Debug for Sending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sending").field("done", &self.0.is_none()).finish()
    }
}

/// Resolves once the message is out, with the answer a send apart ended with (see
/// [`SendApart`]), for the caller to settle ([`Connection::answered`]): a request's own
/// caller takes its answer where it waits, with no wake-up through the pending table.
impl Future for Sending {
    type Output = Option<Message>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Option<Message>> {
        if let Some(Transfer::Unstarted(_)) = &self.0
            && let Some(Transfer::Unstarted(unstarted)) = self.0.take()
        {
            // Most messages go out whole here: no future is made for them.
            self.0 = unstarted.start().map(Transfer::Written);
        }
        let answer = match self.0.as_mut() {
            // (Never unstarted here: started above.)
            None | Some(Transfer::Unstarted(_)) => return Poll::Ready(None),
            Some(Transfer::Written(send)) => {
                ready!(send.as_mut().poll(cx));
                None
            }
            Some(Transfer::Apart(send, _)) => ready!(send.as_mut().poll(cx)),
        };
        self.0 = None;
        Poll::Ready(answer)
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        // A write once started is finished: half a message would break the stream.
        let Some(send) = self.0.take() else { return };
        let Ok(handle) = tokio::runtime::Handle::try_current() else { return };
        match send {
            Transfer::Unstarted(unstarted) => {
                handle.spawn(unstarted.into_write());
            }
            Transfer::Written(send) => {
                handle.spawn(send);
            }
            Transfer::Apart(send, conn) => {
                handle.spawn(async move { settle_apart(send.await, &conn) });
            }
        }
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
    drain_with(state, conn, timeout, sender, None).await;
}

/// The caller's own message a [`drain_with`] sends first.
enum First {
    /// To be sent.
    Send(Outbound),
    /// Started by [`TransportSender::write_now`]: its rest is to be finished.
    Finish,
}

/// [`drain`] with the sender taken (and `draining` set): `first` first, then what is queued.
/// Given a `first`, it sends that one only and leaves the rest to a [`drain`] task of its own
/// (the sender back in the state, `draining` still set).
async fn drain_with(
    state: Arc<Mutex<QueueState>>,
    conn: Weak<Connection>,
    timeout: Option<std::time::Duration>,
    mut sender: Box<dyn DynSender>,
    mut first: Option<First>,
) {
    // Past `first` (sent on the first turn), the rest is left to a task of its own.
    let hand_off = first.is_some();
    loop {
        let next = match first.take() {
            Some(First::Send(item)) => Some(item),
            Some(First::Finish) => {
                if let Err(e) = write_within(sender.finish(), timeout, &conn).await {
                    failed(&state, &conn, sender, e).await;
                    return;
                }
                continue;
            }
            None => {
                let mut s = lock(&state);
                if hand_off && !s.items.is_empty() {
                    // The caller's own message is out; others' go on a task of their own
                    // (which takes the sender back; `draining` stays set meanwhile).
                    s.sender = Some(sender);
                    drop(s);
                    if let Some(conn) = conn.upgrade() {
                        spawn_drain(&state, &conn);
                    }
                    return;
                }
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
            }
        };
        let Some(item) = next else {
            // Closed while sending: this task closes the sender.
            let closed = sender.close().await;
            if let Err(e) = &closed {
                tracing::debug!(error = %e, "closing a connection's sender failed");
            }
            tell_closed(&state, closed);
            return;
        };
        if let Some(conn) = conn.upgrade() {
            conn.taken(&item);
        }
        let sent = match sender.write_now(&item.message, item.related.as_ref()) {
            WriteNow::Written => Ok(()),
            WriteNow::Started => write_within(sender.finish(), timeout, &conn).await,
            WriteNow::NotWritten => {
                let send = sender.send_related(item.message, item.related);
                write_within(send, timeout, &conn).await
            }
        };
        if let Err(e) = sent {
            failed(&state, &conn, sender, e).await;
            return;
        }
    }
}

/// A write failed: the connection is lost, what it queued dropped, its sender closed.
async fn failed(
    state: &Arc<Mutex<QueueState>>,
    conn: &Weak<Connection>,
    sender: Box<dyn DynSender>,
    error: Error,
) {
    tracing::debug!(error = %error, "transport send failed");
    {
        let mut s = lock(state);
        s.items.clear();
        s.draining = false;
        s.closing = true;
    }
    if let Some(conn) = conn.upgrade() {
        conn.lost(CloseReason::Failed(Arc::new(error)));
    }
    let closed = sender.close().await;
    tell_closed(state, closed);
}

/// Tells a waiting [`Closing::Told`] how closing the sender went.
fn tell_closed(state: &Mutex<QueueState>, closed: Result<()>) {
    if let Some(tx) = lock(state).closed.take() {
        let _ = tx.send(closed);
    }
}
