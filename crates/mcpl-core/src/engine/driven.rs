//! Connections driven by their owner: no reader, writer or notifier task of their own.
//!
//! A transport that already has a task for each incoming message (an HTTP server answering a
//! POST, say) hands the message to [`Driven::deliver`] on that task. Outgoing messages go out
//! as every connection's do (see [`super::outgoing`]). An idle driven connection is its tables
//! and nothing else: no task, no channel.

use std::any::Any;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Poll, ready};

use super::connection::{Connection, Received};
use super::outgoing::Queue;
use super::{CloseReason, Peer};
use crate::engine::BoxFuture;
use crate::error::{Error, Result};
use crate::jsonrpc::{Message, Request};
use crate::transport::TransportSender;

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
        Driven { conn: Connection::queued(generation, shared, Queue::new(sender), data) }
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
            Received::Request(serve) => {
                tokio::spawn(serve);
                Ok(())
            }
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
        let serve: BoxFuture<'static, ()> = match conn.admit_request(request) {
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

    /// Runs `handler` for the incoming `request` on the caller's task, and gives what it
    /// returned: unlike [`serve`](Self::serve), the caller answers, so a result can go to the
    /// wire without becoming a [`Message`] first (a session's request answered with one JSON
    /// body, say).
    ///
    /// The request counts as in flight on the connection until the handler returns:
    /// `notifications/cancelled` from the peer, or closing, cancels it (the returned future
    /// then gives `None`, and nothing should answer it). The request's `params._meta` (an
    /// object) moves into the context; `handler` gets the params without it. What the handler
    /// sends meanwhile goes through the connection's queue, as with [`deliver`](Self::deliver);
    /// callbacks it registers with
    /// [`RequestContext::after_answer`](super::RequestContext::after_answer) run once it
    /// returned, as the caller gets its output.
    ///
    /// Dropping the future before it is done does not cancel the request (as with
    /// [`serve`](Self::serve)): the handler goes on in a task of its own, and its output is
    /// dropped.
    ///
    /// # Errors
    ///
    /// [`NotRun`]: the connection has closed, a request with the same id is in flight, or too
    /// many are (the last two with the answer to send in the request's place).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::engine::{Engine, embed};
    /// use mcpl_core::jsonrpc::{Message, Request, RequestId, Response};
    /// use mcpl_core::transport::{Transport, memory};
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcpl_core::Result<()> {
    /// let engine = Engine::new();
    /// let (ours, _theirs) = memory::pair();
    /// let (sender, _unused) = ours.start().await?;
    /// let driven = embed::drive(&engine, sender);
    /// let request = Request::new(RequestId::from(1), "add", Some(json!({"a": 2, "b": 3})));
    /// let running = driven
    ///     .run_request(request, |_ctx, params| async move {
    ///         let p = params.unwrap_or_default();
    ///         p["a"].as_i64().unwrap_or(0) + p["b"].as_i64().unwrap_or(0)
    ///     })
    ///     .unwrap();
    /// // The caller answers.
    /// assert_eq!(running.await, Some(5));
    /// # Ok(()) }
    /// ```
    pub fn run_request<F, Fut>(
        &self,
        request: Request,
        handler: F,
    ) -> std::result::Result<Running<Fut::Output>, NotRun>
    where
        F: FnOnce(super::RequestContext, Option<serde_json::Value>) -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        self.conn.run_for_caller(request, handler)
    }

    /// A handle for sending requests and notifications to the peer.
    pub fn peer(&self) -> Peer {
        Peer { conn: self.conn.clone(), related: None, served: None }
    }

    /// The data attached with [`embed::drive_with`](super::embed::drive_with), if it is a `T`.
    pub fn data<T: Any>(&self) -> Option<&T> {
        self.conn.data()
    }

    /// The data attached with [`embed::drive_with`](super::embed::drive_with) or
    /// [`embed::drive_with_shared`](super::embed::drive_with_shared), if it is a `T`, as a
    /// shared handle.
    pub fn shared_data<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.conn.shared_data()
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

/// Why [`Driven::run_request`] did not run a request.
#[derive(Debug)]
#[non_exhaustive]
pub enum NotRun {
    /// The connection has closed.
    Closed,
    /// A request with the same id is in flight on the connection: the answer to send in this
    /// one's place (`-32600`).
    Duplicate(Message),
    /// Too many requests are in flight on the connection
    /// ([`EngineConfig::max_inflight_requests`](super::EngineConfig::max_inflight_requests)):
    /// the answer to send in this one's place (`-32000`).
    Busy(Message),
}

/// A request run for its caller: see [`Driven::run_request`]. Gives the handler's output, or
/// `None` if the request was cancelled. Dropped before it is done, it goes on in a task of its
/// own.
#[must_use = "the request runs as the future is polled (or once it is dropped)"]
pub struct Running<T: 'static> {
    run: Option<BoxFuture<'static, Option<T>>>,
}

impl<T: 'static> Running<T> {
    pub(crate) fn new(run: BoxFuture<'static, Option<T>>) -> Self {
        Running { run: Some(run) }
    }
}

impl<T: 'static> fmt::Debug for Running<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Running").field("done", &self.run.is_none()).finish()
    }
}

impl<T: 'static> Future for Running<T> {
    type Output = Option<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Option<T>> {
        let Some(run) = self.run.as_mut() else { return Poll::Ready(None) };
        let output = ready!(run.as_mut().poll(cx));
        self.run = None;
        Poll::Ready(output)
    }
}

impl<T: 'static> Drop for Running<T> {
    fn drop(&mut self) {
        // The caller stopped waiting (its HTTP client went away, say): that is no cancel.
        if let Some(run) = self.run.take()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            handle.spawn(async move {
                run.await;
            });
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
